"""Bug 20 — Tensorflow-Examples logistic_regression.py (aymericdamien) (TF).

Facts (SUBJECTS.md): TF-MNIST, x [N,784] in [0,1] with one-hot labels y_ [N,10], N = 100 (k = 5 rows switched every
100 iterations); y = softmax(x·W + b) with W [784,10] and b [10] zero-initialised; loss = mean_batch(−Σ_class
y_·LOG(y)), no epsilon; plain gradient descent lr 0.01 on the updated batch (TF subjects 1–31). Hazard: log at a
softmax entry that underflowed to exactly 0 (objective min|v| on the softmax output), x clipped to the first batch's
range [0,1]. Zero init: ∂y/∂x = 0 at iteration 1, so the first step only trains. No seeds in the program.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class SoftmaxRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(784, 10))
        self.b = nn.Parameter(torch.zeros(10))

    def forward(self, x, y_):
        y = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        loss = torch.mean(-torch.sum(y_ * torch.log(y), dim=1))
        return y, loss


def build():
    g = torch.Generator().manual_seed(1020)
    x = torch.rand(4, 784, generator=g)
    y_ = torch.eye(10)[torch.tensor([0, 3, 7, 9])]
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "loss"], opset=13)
