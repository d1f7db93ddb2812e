"""Bug 45a — DataStructure, MNIST_Digit_classification_using_CNN_grist.py (TF).

Facts (SUBJECTS.md): despite the file name, a one-layer softmax-regression MNIST classifier (a tutorial's "simple
ANN"). Data: TF-MNIST, x [50,784] in [0,1] (searched, clipped to the first batch's range [0,1]) and y_ [50,10] one-hot;
N = 50, so k = 2 rows are switched every 100 iterations. Model y = softmax(x·W + b), W [784,10] and b [10] zeros.
Loss cross_entropy = mean_N(-Σ_10 y_·LOG(y)). Training: GradientDescent lr 0.5, one step per loop on the pre-update
(monitored) batch. Hazard: log(softmax) underflow; objective min|y|. At loop 1 W = 0, so nothing moves; afterwards the
pixel moves are boxed in [0,1] and the gap grows only as W grows on the overfitted persistent batch.
[emulated, t10k stand-in]: NaN at ≈ 19,300 iterations. No GRIST number.
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
    g = torch.Generator().manual_seed(45)
    x = torch.rand(4, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([3, 1, 7, 0]), 10).float()
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "cross_entropy"], opset=13)
