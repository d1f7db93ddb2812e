"""Bug 16c — FuzzForTensorflow (TF): the TensorFuzz NaN model copy, truediv variant (nan_model_truediv_grist.py).

Facts (SUBJECTS.md): MNIST train, 60,000 images scaled to [−1,1], batch 100, shuffle buffer 50,000; x [N,28,28,1],
y_ [N,10] one-hot; N = 100, k = 5; x clipped to [−1,1]. Model: flatten 784 → 200 ReLU → 100 ReLU → 10 logits;
kernels U(±0.25), zero biases. Loss: l = clip(logits, min(logits), 87); p = exp(l) TRUEDIV Σ_class exp(l);
loss = mean_batch(−Σ_class y_·log(|p| + 1e-6)). Training: plain gradient descent lr 0.01, one step per iteration
on the updated batch. Hazard: numerator and denominator both underflow to 0 when all logits of a row are below
about −87.3 (TensorFlow's flush-to-zero; ≈ −104 otherwise): 0/0 = NaN in the forward, log(NaN) = NaN. Objective
max(logits) (minimise the batch's largest logit). Unlike 11a, the numerator is not clipped from below. The paper's
time is 4.43 s (quoted by RANUM; no results.txt entry); whether the search alone gets there is undetermined.

Deviation: the manifest format has no offset for data, so the model input is the pixel / 127.5 in [0,2] and the
model's first op subtracts 1. A shift commutes with the sign step and the clip, so the search is the study's.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class FuzzNanModel(nn.Module):
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
        l = torch.minimum(torch.maximum(logits, logits.min()), torch.tensor(87.0))
        e = torch.exp(l)
        p = e / e.sum(dim=1, keepdim=True)
        loss = (-(y_ * torch.log(torch.abs(p) + 1e-6)).sum(dim=1)).mean()
        return logits, loss


def build():
    g = torch.Generator().manual_seed(16)
    x = torch.rand(3, 28, 28, 1, generator=g) * 2.0
    y_ = torch.nn.functional.one_hot(torch.tensor([9, 0, 3]), 10).float()
    return Subject(model=FuzzNanModel(), inputs={"x": x, "y_": y_}, outputs=["logits", "loss"], opset=13)
