"""Bug 60 — tensorflow_test, save_model_variables() (TF).

Facts (SUBJECTS.md): the TF beginners' softmax regression with a Saver that never saves (not modelled). Data:
TF-MNIST, x [100,784] in [0,1] (searched, clipped to the first batch's range [0,1]), y_ [100,10] one-hot; N = 100,
k = 5. Model y = softmax(x·W + b), W [784,10] and b [10] zeros. Loss cross_entropy = -Σ_{batch,class} y_·LOG(y), a sum.
Training: GradientDescent lr 0.01 (per sample = lr 1.0 on a mean loss), one step per loop on the pre-update batch.
Hazard: log(softmax) underflow; objective min|y|. W = 0 at loop 1; needs training.
[emulated, t10k stand-in]: NaN at ≈ 4,000 iterations. No GRIST number.
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
        cross_entropy = -torch.sum(y_ * torch.log(y))
        return y, cross_entropy


def build():
    g = torch.Generator().manual_seed(60)
    x = torch.rand(4, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([4, 1, 8, 3]), 10).float()
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "cross_entropy"], opset=13)
