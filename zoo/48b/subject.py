"""Bug 48b — Dive_python, day01_2_grist.py, easy_NN() (TF).

Facts (SUBJECTS.md): the intended model of day01_2 is easy_NN(), a zero-initialised softmax regression on TF-MNIST
(RANUM's 48b model has only the inputs x and y_true, consistent with it). Data: x [100,784] in [0,1] (searched,
clipped to the first batch's range [0,1]), y_true [100,10] one-hot; N = 100, k = 5. Model y = softmax(x·W + b),
W [784,10] and b [10] zeros. Loss mean_N(-Σ_10 y_true·LOG(y)). Training: GradientDescent lr 0.5, one step per loop on
the pre-update batch. Hazard: log(softmax) underflow; objective min|y|. W = 0 at loop 1, so training must grow W
first. [emulated, t10k stand-in]: NaN at 11,179 iterations (the same as bug 52: mean loss with lr 0.5 at N = 100
equals sum loss with lr 0.005).
Discrepancy: as shipped, the GRIST script's __main__ calls deep_NN() (bug 48a's model, searcher "Dive_python_grist"),
so the study's reported 48 results (@106@ 1.44 s, @132@ 1.76 s) are runs of 48a's model; the instrumented easy_NN is
never executed. This subject builds the intended easy_NN.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class EasyNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(784, 10))
        self.b = nn.Parameter(torch.zeros(10))

    def forward(self, x, y_true):
        y = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        cross_entropy = torch.mean(-torch.sum(y_true * torch.log(y), dim=1))
        return y, cross_entropy


def build():
    g = torch.Generator().manual_seed(482)
    x = torch.rand(4, 784, generator=g)
    y_true = torch.nn.functional.one_hot(torch.tensor([5, 0, 4, 1]), 10).float()
    return Subject(model=EasyNN(), inputs={"x": x, "y_true": y_true}, outputs=["y", "cross_entropy"], opset=13)
