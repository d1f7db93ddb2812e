"""Bug 9b — StackOverFlow-7 (TF): two-layer sigmoid MLP on MNIST, the log(y_) variant (soips7_log2_grist.py).

Facts (SUBJECTS.md): TF-MNIST, N = 100 (k = 5), x [N,784] in [0,1], y [N,10] one-hot. Model: 784→512 sigmoid →
10 sigmoid (y_), both weight matrices zeros, no biases. Loss: mean over the batch of
Σ_class [ −y·LOG(y_) − (1−y)·log(1−y_) ]. Training: plain gradient descent lr 0.5, one step per iteration on the
updated batch. Hazard: log(y_) when y_ = 0 exactly, which needs an output logit below about −88.7 (the exact point
depends on the sigmoid kernel) — much harder than 9a's y_ → 1, and the log(1−y_) term of the same loss may fire
first. Objective min|y_|; x clipped to [0,1]. Zero init: a two-step warm-up (step 1 moves only the output layer,
step 2 the hidden one) before ∂O/∂x ≠ 0; the hidden units stay symmetric. No recorded result.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class SigmoidMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.W1 = nn.Parameter(torch.zeros(784, 512))
        self.W2 = nn.Parameter(torch.zeros(512, 10))

    def forward(self, x, y):
        h = torch.sigmoid(x.matmul(self.W1))
        y_ = torch.sigmoid(h.matmul(self.W2))
        cost = (-y * torch.log(y_) - (1 - y) * torch.log(1 - y_)).sum(dim=1).mean()
        return y_, cost


def build():
    g = torch.Generator().manual_seed(7)
    x = torch.rand(4, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.tensor([1, 9, 4, 0]), 10).float()
    return Subject(model=SigmoidMLP(), inputs={"x": x, "y": y}, outputs=["y_", "cost"], opset=13)
