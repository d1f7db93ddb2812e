"""Bug 26 — PyTorchDeepLearningStart 0401_logistic_regression (PyTorch).

Facts (SUBJECTS.md): x_train [6,2] = [[1,2],[2,3],[3,1],[4,3],[5,3],[6,2]] is the searched tensor, y_train [6,1] =
[0,0,0,1,1,1]; h = sigmoid(x·W + b) with W [2,1] and b [1] zero-initialised; cost = −mean(y·LOG(h) + (1−y)·log(1−h)),
a hand-written BCE with no epsilon; SGD lr 1 on W and b, one step per loop on the pre-update x; the search mutates x
without clipping. The study measured @236@ in 0.19 s.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class LogisticRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(2, 1))
        self.b = nn.Parameter(torch.zeros(1))

    def forward(self, x, y):
        h = torch.sigmoid(x.matmul(self.W) + self.b)
        cost = -(y * torch.log(h) + (1 - y) * torch.log(1 - h)).mean()
        return h, cost


def build():
    x = torch.tensor([[1, 2], [2, 3], [3, 1], [4, 3], [5, 3], [6, 2]], dtype=torch.float32)
    y = torch.tensor([[0], [0], [0], [1], [1], [1]], dtype=torch.float32)
    return Subject(model=LogisticRegression(), inputs={"x": x, "y": y}, outputs=["h", "cost"], opset=13)
