"""Bug 38 — MachineLearning.lab09 (PyTorch).

Facts (SUBJECTS.md): "lab-09" XOR with a single logistic unit, which cannot learn XOR. X [4,2] = [[0,0],[0,1],[1,0],
[1,1]] is the searched tensor (unclipped, no switching), Y [4,1] = [0,1,1,0]; h = sigmoid(Linear(2,1)(x)) with torch's
default init under torch.manual_seed(777) (W = [-0.5913, -0.0125], b = -0.1368, the same start as bug 37);
cost = -mean(Y·LOG(h) + (1-Y)·log(1-h)); SGD lr 0.1, one step per loop on the pre-update X (PyTorch toy loop).
Hazard: log(h) with h → 0; objective min|h|. The study measured @276@ in 0.25 s (replayed @276@): only row 3
([1,1], Y = 0) moved, ending at (-17.3, -39.2) with W = [1.367, 1.667], b = -0.044, logit ≈ -89, 0·log 0 = NaN.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class Lab09(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(777)
        self.linear = nn.Linear(2, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x, y):
        h = self.sigmoid(self.linear(x))
        cost = -(y * torch.log(h) + (1 - y) * torch.log(1 - h)).mean()
        return h, cost


def build():
    x = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=torch.float32)
    y = torch.tensor([[0], [1], [1], [0]], dtype=torch.float32)
    return Subject(model=Lab09(), inputs={"x": x, "y": y}, outputs=["h", "cost"], opset=13)
