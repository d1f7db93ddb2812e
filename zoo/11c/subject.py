"""Bug 11c — TensorFuzz (TF): the upstream TensorFuzz NaN model, log variant (nan_model_log_grist.py).

Facts (SUBJECTS.md): MNIST train, 60,000 images scaled to [−1,1], batch 100 from a shuffle buffer of 50,000;
x [N,28,28,1], y_ [N,10] one-hot; N = 100, k = 5; x clipped to [−1,1]. Model: flatten 784 → 200 ReLU → 100 ReLU →
10 linear logits; kernels U(±0.25), zero biases. Loss: p = exp(logits) / Σ_class exp(logits) (no clip anywhere, the
"bad softmax"); loss = mean_batch(−Σ_class y_·LOG(p)). Training: plain gradient descent lr 0.01, one step per
iteration on the updated batch. Hazard: log(p) at p = 0 — the numerator exp underflows (a logit below about −87.3
with TensorFlow's flush-to-zero) or the logit gap is large; separately an exp overflow gives inf/inf = NaN.
Objective min|p|; it fires directly in the forward (0·(−inf) = NaN). No recorded result; no TF seed.

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
        p = torch.exp(logits) / torch.exp(logits).sum(dim=1, keepdim=True)
        loss = (-(y_ * torch.log(p)).sum(dim=1)).mean()
        return p, loss


def build():
    g = torch.Generator().manual_seed(11)
    x = torch.rand(3, 28, 28, 1, generator=g) * 2.0
    y_ = torch.nn.functional.one_hot(torch.tensor([4, 1, 8]), 10).float()
    return Subject(model=TensorFuzzNanModel(), inputs={"x": x, "y_": y_}, outputs=["p", "loss"], opset=13)
