"""Bug 50 — ImportantProjects (TF).

Facts (SUBJECTS.md): the TF "MNIST for beginners" one-layer softmax regression (searcher "Imprtant_Projects_grist").
Data: TF-MNIST, x [100,784] in [0,1] (searched, clipped to the first batch's range [0,1]), y_ [100,10] one-hot;
N = 100, k = 5. Model y = softmax(x·W + b), W [784,10] and b [10] zeros. Loss cross_entropy = mean_N(-Σ_10 y_·LOG(y)).
Training: GradientDescent lr 0.05, one step per loop on the pre-update batch. Hazard: log(softmax) underflow;
objective min|y|. W = 0 at loop 1; needs long training. [emulated, t10k stand-in]: no NaN within 20,000 iterations
(a 10× smaller effective step than bug 45a); at TF speed 30 minutes is ~1e5–1e6 iterations. No GRIST number.
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
        cross_entropy = torch.mean(-torch.sum(y_ * torch.log(y), dim=1))
        return y, cross_entropy


def build():
    g = torch.Generator().manual_seed(50)
    x = torch.rand(4, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([2, 9, 6, 1]), 10).float()
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "cross_entropy"], opset=13)
