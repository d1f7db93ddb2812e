"""Bug 54 — DataScience.h03 (PyTorch).

Facts (SUBJECTS.md): homework softmax regression with Adam on the 8×4 toy. x_T [8,4] = the rows of bug 32
([1,2,1,1], [2,1,3,2], [3,1,3,4], [4,1,5,5], [1,7,5,5], [1,2,5,6], [1,6,6,6], [1,7,7,7]) is the searched tensor
(unclipped, no switching); y_T [8,3] one-hot float = [0,0,1]×3, [0,1,0]×3, [1,0,0]×2.
Model h = softmax(x·W + b) with W [4,3] zeros and b [1,3] zeros (one bias per class);
cost = -mean_8(Σ_3 y·LOG(h)); torch Adam lr 0.1 (default betas, eps), one step per loop on the pre-update x_T.
Hazard: log(softmax) underflow (an entry exactly 0: NaN at a non-label position). Objective min|h|.
The study measured @108@ in 0.081 s (replayed @108@); rows 3 and 7 moved, row 3 ending ≈ [19.3, -4.4, -10.3, 15.2].
The unreachable nn.Linear + F.cross_entropy section of the program is not modelled.
"""
import torch
import torch.nn as nn

from zoo_common import Subject

X_T = [[1, 2, 1, 1], [2, 1, 3, 2], [3, 1, 3, 4], [4, 1, 5, 5], [1, 7, 5, 5], [1, 2, 5, 6], [1, 6, 6, 6], [1, 7, 7, 7]]
Y_T = [[0, 0, 1]] * 3 + [[0, 1, 0]] * 3 + [[1, 0, 0]] * 2


class SoftmaxRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(4, 3))
        self.b = nn.Parameter(torch.zeros(1, 3))

    def forward(self, x, y):
        h = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        cost = -(y * torch.log(h)).sum(dim=1).mean()
        return h, cost


def build():
    x = torch.tensor(X_T, dtype=torch.float32)
    y = torch.tensor(Y_T, dtype=torch.float32)
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y": y}, outputs=["h", "cost"], opset=13)
