"""Bug 52 — karch (TF).

Facts (SUBJECTS.md): the TF "MNIST for beginners" softmax regression of karch's tutorial. Data: TF-MNIST,
x [100,784] in [0,1] (searched, clipped to the first batch's range [0,1]), y_ [100,10] one-hot; N = 100, k = 5.
Model y = softmax(x·W + b), W and b zeros. Loss cross_entropy = reduce_mean(-Σ_{batch,class} y_·LOG(y)): the inner
sum has no axis, so the mean is of a scalar and the loss is the TOTAL sum over the batch (written literally here).
Training: GradientDescent lr 0.005 (per sample = lr 0.5 on a mean loss), one step per loop on the pre-update batch.
Hazard: log(softmax) underflow; objective min|y|. W = 0 at loop 1; needs training.
[emulated, t10k stand-in]: NaN at ≈ 11,200 iterations. No GRIST number.
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
        cross_entropy = torch.mean(-torch.sum(y_ * torch.log(y)))
        return y, cross_entropy


def build():
    g = torch.Generator().manual_seed(52)
    x = torch.rand(4, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([7, 2, 1, 0]), 10).float()
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "cross_entropy"], opset=13)
