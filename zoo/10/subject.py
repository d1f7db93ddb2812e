"""Bug 10 — StackOverFlow-14 (TF): "MNIST for beginners" softmax regression (SO 33641799).

Facts (SUBJECTS.md): TF-MNIST, N = 205 (k = 10), x [N,784] in [0,1], y_ [N,10] one-hot. Model: y = softmax(x·W + b),
W [784,10] and b [10] zero-initialised. Loss: −Σ_{batch,class} y_·LOG(y) (a sum). Training: plain gradient
descent lr 0.005, one step per iteration on the updated batch (the developers' fix only lowered the learning rate).
Hazard: log(y) at an entry equal to 0; objective min|y|; x clipped to [0,1]. Zero init makes the first search step
a no-op; then search and training interleave. No recorded result.
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
        cross_entropy = -(y_ * torch.log(y)).sum()
        return y, cross_entropy


def build():
    g = torch.Generator().manual_seed(20180130)
    x = torch.rand(5, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([2, 8, 0, 6, 1]), 10).float()
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "cross_entropy"], opset=13)
