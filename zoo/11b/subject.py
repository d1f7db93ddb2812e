"""Bug 11b — TensorFuzz (TF): the edited TensorFuzz NaN model, exp variant (nan_model_exp_grist.py).

Facts (SUBJECTS.md): MNIST train, 60,000 images scaled to [−1,1], tf.data shuffle buffer 50,000, batch 100, repeat;
x [N,28,28,1], y_ [N,10] one-hot; N = 100, k = 5; x clipped to [−1,1]. Model: flatten 784 → 200 ReLU → 100 ReLU →
10 linear logits; kernels U(±0.25), biases 0. Loss: p = exp(clip(logits, −87, 87)) / Σ_class EXP(logits);
loss = mean_batch(−Σ_class y_·log(clip(p, 1e-6, 1))). Training: plain gradient descent lr 0.01, one step per
iteration on the updated batch. Hazard: exp overflow in the (unclipped) denominator once any logit exceeds 88.72;
objective −max(logits). The forward stays finite (p = finite/inf = 0, clipped to 1e-6), but exp's gradient is
0·inf = NaN, so training writes NaN into the weights and the study's loss check fires one iteration later.
Input search alone can plausibly reach a logit of 88.7 (compare 16a, @16@). No recorded result; no TF seed.

Deviation: the manifest format has no offset for data, so the model input is the pixel / 127.5 in [0,2] and the
model's first op subtracts 1. A shift commutes with the sign step and the clip, so the search is the study's.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class TensorFuzzNanModel(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.W1 = nn.Parameter(torch.empty(784, 200).uniform_(-0.25, 0.25))
        self.b1 = nn.Parameter(torch.zeros(200))
        self.W2 = nn.Parameter(torch.empty(200, 100).uniform_(-0.25, 0.25))
        self.b2 = nn.Parameter(torch.zeros(100))
        self.W3 = nn.Parameter(torch.empty(100, 10).uniform_(-0.25, 0.25))
        self.b3 = nn.Parameter(torch.zeros(10))

    def forward(self, x, y_):
        h = (x - 1.0).reshape(-1, 784)                  # [0,2] → the study's [−1,1] images
        h = torch.relu(h.matmul(self.W1) + self.b1)
        h = torch.relu(h.matmul(self.W2) + self.b2)
        logits = h.matmul(self.W3) + self.b3
        numerator = torch.exp(torch.clamp(logits, -87.0, 87.0))
        denominator = torch.exp(logits).sum(dim=1, keepdim=True)
        p = numerator / denominator
        loss = (-(y_ * torch.log(torch.clamp(p, 1e-6, 1.0))).sum(dim=1)).mean()
        return logits, loss


def build():
    g = torch.Generator().manual_seed(11)
    x = torch.rand(3, 28, 28, 1, generator=g) * 2.0
    y_ = torch.nn.functional.one_hot(torch.tensor([4, 1, 8]), 10).float()
    return Subject(model=TensorFuzzNanModel(), inputs={"x": x, "y_": y_}, outputs=["logits", "loss"], opset=13)
