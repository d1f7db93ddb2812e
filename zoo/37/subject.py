"""Bug 37 — MachineLearning.lab05 (PyTorch).

Facts (SUBJECTS.md): "lab-05" logistic regression with nn.Linear(2,1) + sigmoid on the 6-sample pass/fail toy.
X [6,2] = [[1,2],[2,3],[3,1],[4,3],[5,3],[6,2]] is the searched tensor (unclipped, no switching), Y [6,1] =
[0,0,0,1,1,1]; h = sigmoid(Linear(x)) with torch's default Linear init under torch.manual_seed(777), i.e.
W = [-0.5913, -0.0125], b = -0.1368; cost = -mean(Y·LOG(h) + (1-Y)·log(1-h)), a hand-written BCE with no epsilon;
SGD lr 0.01 on the Linear's parameters, one step per loop on the pre-update X (PyTorch toy loop).
Hazard: log(h) with h → 0 (logit < -88.72 in float32 with denormals); the pushed row has Y = 0, so 0·(-inf) = NaN.
Objective min|h|. The study measured @898@ in 0.63 s (replayed @898@); rows 0 and 5 moved.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class Lab05(nn.Module):
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
    x = torch.tensor([[1, 2], [2, 3], [3, 1], [4, 3], [5, 3], [6, 2]], dtype=torch.float32)
    y = torch.tensor([[0], [0], [0], [1], [1], [1]], dtype=torch.float32)
    return Subject(model=Lab05(), inputs={"x": x, "y": y}, outputs=["h", "cost"], opset=13)
