"""Bug 33 — TodayILearned logistic_classification (PyTorch): "pass/fail from hours" with a hand-written BCE.

Facts (SUBJECTS.md): x_train [6,2] = [[1,2],[2,3],[3,1],[4,3],[5,3],[6,2]] float32 (the searched tensor, unclipped,
no switching), y_train [6,1] = [0,0,0,1,1,1]; h = sigmoid(x·W + b) with W [2,1] and b [1] zero-initialised; cost =
−mean_6(y·LOG(h) + (1−y)·log(1−h)), no epsilon; SGD lr 1 on W and b, one step per loop on the pre-update x. Hazard:
log(h) when h underflows to exactly 0 (logit < −88.72); the pushed rows have y = 0, so 0·(−inf) = NaN (objective
min|h|). Loop 1 is a no-op (W = 0). The study measured @236@ in 0.155 s; a re-run of the original script reproduced
@236@ (rows 0, 1 and 4 moved; row 0 ended at (−33.65, −18.25) with W = [1.962, 0.790], b = −8.37). Identical in
substance to bugs 26 and 56.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class LogisticClassification(nn.Module):
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
    return Subject(model=LogisticClassification(), inputs={"x": x, "y": y}, outputs=["h", "cost"], opset=13)
