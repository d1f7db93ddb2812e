"""Bug 2b — GitHub-IPS-6 (TF): yadlt LogisticRegression on MNIST, the log(1−p) variant (model_log2.py).

Facts (SUBJECTS.md): TF-MNIST (55,000 training pairs shuffled once, cut into batches of 10), x [N,784] in [0,1],
y [N,10] one-hot float; N = 10, so k = 0 and there is no data switching. Model: softmax regression
p = softmax(x·W + b), W [784,10] and b [10] zero-initialised. Loss: cost = −mean over all N·10 elements of
(y·log(p) + (1−y)·LOG(1−p)) — p is a softmax, not a sigmoid, and there is no epsilon. Training: Adam lr 0.01
(TF defaults β1 0.9, β2 0.999, ε 1e-8), one step per iteration on the updated batch. Hazard (this variant):
log(1−p) when some p_c rounds to exactly 1, i.e. the other nine entries sum below ≈ 6e-8 (a logit gap of ≈ 19):
1−p = 0, log = −inf, NaN where y_c = 1 and inf where y_c = 0; objective min|1−p|; x clipped to [0,1]. Zero init:
no input gradient at iteration 1. No recorded result. The log(p) term (bug 2a) is also present and can fire first.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class SoftmaxLogisticRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(784, 10))
        self.b = nn.Parameter(torch.zeros(10))

    def forward(self, x, y):
        p = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        cost = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
        return p, cost


def build():
    g = torch.Generator().manual_seed(20200530)
    x = torch.rand(4, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.tensor([3, 0, 7, 9]), 10).float()
    return Subject(model=SoftmaxLogisticRegression(), inputs={"x": x, "y": y}, outputs=["p", "cost"], opset=13)
