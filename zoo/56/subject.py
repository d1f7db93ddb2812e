"""Bug 56 — start_beginner_kaggle.01_Logistic_Regression (PyTorch).

Facts (SUBJECTS.md): a beginner's low-level logistic regression, identical in substance to bugs 26 and 33.
x_train [6,2] = [[1,2],[2,3],[3,1],[4,3],[5,3],[6,2]] is the searched tensor (unclipped, no switching), y_train [6,1]
= [0,0,0,1,1,1]; h = sigmoid(x·W + b) with W [2,1] and b [1] zeros; cost = -mean(y·LOG(h) + (1-y)·log(1-h)), no
epsilon; SGD lr 1 on W and b, one step per loop on the pre-update x (PyTorch toy loop).
Hazard: log(h) with h → 0 (logit < -88.72), giving 0·(-inf) = NaN on a y = 0 row. Objective min|h|.
The study measured @236@ in 0.149 s (replayed @236@); rows 0, 1 and 4 moved, row 0 ending at (-33.65, -18.25),
W = [1.962, 0.790], b = -8.37. The numpy sigmoid demo and the code after the infinite loop are not modelled.
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
