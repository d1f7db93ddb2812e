"""Bug 3 — GitHub-IPS-9 (TF): aymericdamien TensorFlow-Examples logistic regression on MNIST.

Facts (SUBJECTS.md): the legacy MNIST reader's training split (file rows 5000–59,999, float32 in [0,1], 784
features, one-hot labels), not shuffled in the first epoch, so the first batch is file rows 5000–5099; N = 100,
k = 5, switching from next_batch(100). Model: activation = softmax(x·W + b), W [784,10] and b [10] zero-initialised.
Loss: cost = −Σ_{batch,class} y·LOG(activation) (a sum). Training: Adam lr 0.005 (TF defaults otherwise), one step
per iteration on the updated batch. Hazard: log(activation) at an entry equal to 0; objective min|activation|;
x clipped to [0,1]. Zero init makes the iteration-1 search step a no-op. No recorded result.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class SoftmaxRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(784, 10))
        self.b = nn.Parameter(torch.zeros(10))

    def forward(self, x, y):
        activation = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        cost = -(y * torch.log(activation)).sum()
        return activation, cost


def build():
    g = torch.Generator().manual_seed(20180130)
    x = torch.rand(4, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.tensor([5, 0, 4, 1]), 10).float()
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y": y}, outputs=["activation", "cost"], opset=13)
