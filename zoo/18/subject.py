"""Bug 18 — Hands-On TensorFlow `code-10-image.py` (TF): MNIST softmax regression with summaries.

Facts (SUBJECTS.md): TF-MNIST, x [N,784] in [0,1] with one-hot labels y_ [N,10], N = 100 (k = 5 rows switched every
100 iterations); y = softmax(x·W + b) with W [784,10] ~ TF truncated normal(std 0.1) and b = 0.1 (NOT zero init, so
the input gradient is non-zero from iteration 1); loss = mean_batch(−Σ_class y_·LOG(y)), no epsilon; plain gradient
descent lr 0.5 on the updated batch (TF subjects 1–31). Hazard: log(y) at an entry that underflowed to exactly 0
(objective min|y|), x clipped to the first batch's range [0,1]. The study recorded no result for this bug.
"""
import torch
import torch.nn as nn

from zoo_common import Subject, tf_truncated_normal_


class SoftmaxRegression(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(18)
        self.W = nn.Parameter(tf_truncated_normal_(torch.empty(784, 10), std=0.1))
        self.b = nn.Parameter(torch.full((10,), 0.1))

    def forward(self, x, y_):
        y = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        loss = torch.mean(-torch.sum(y_ * torch.log(y), dim=1))
        return y, loss


def build():
    g = torch.Generator().manual_seed(1018)
    x = torch.rand(4, 784, generator=g)
    y_ = torch.eye(10)[torch.tensor([0, 3, 7, 9])]
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_": y_}, outputs=["y", "loss"], opset=13)
