"""Bug 32 — PyTorchDeepLearningStart 0504_softmax_regression (PyTorch).

Facts (SUBJECTS.md): a hand-typed toy set x_train [8,4] = [1,2,1,1], [2,1,3,2], [3,1,3,4], [4,1,5,5], [1,7,5,5],
[1,2,5,6], [1,6,6,6], [1,7,7,7] (the searched tensor, the whole set, unclipped, no switching) with classes
[2,2,2,1,1,1,0,0] as a one-hot float [8,3] built once. Model: h = softmax(x·W + b, dim=1) with W [4,3] zeros and b of
shape [1] (one scalar bias shared by all classes) zero. Loss: cost = Σ_{all 8×3} y_onehot·(−LOG(h)); the program
writes .sum().mean(), a total sum. Training: SGD lr 0.1 on W and b, one step per loop on the pre-update x. Hazard:
log(h) at a softmax entry that underflowed to exactly 0 (objective min|h| over all 24 entries). Loop 1 is a no-op
(W = 0); afterwards the arg-min row moves ±0.15 per loop. The study measured @46@ in 0.029 s, and a re-run of the
original script reproduced @46@ (only rows 3 and 7 moved; |W| ≈ 4.8 at the trigger).
"""
import torch
import torch.nn as nn

from zoo_common import Subject

X_TRAIN = [[1, 2, 1, 1], [2, 1, 3, 2], [3, 1, 3, 4], [4, 1, 5, 5],
           [1, 7, 5, 5], [1, 2, 5, 6], [1, 6, 6, 6], [1, 7, 7, 7]]
Y_CLASSES = [2, 2, 2, 1, 1, 1, 0, 0]


class SoftmaxRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(4, 3))
        self.b = nn.Parameter(torch.zeros(1))

    def forward(self, x, y_one_hot):
        h = torch.softmax(x.matmul(self.W) + self.b, dim=1)
        cost = (y_one_hot * -torch.log(h)).sum().mean()
        return h, cost


def build():
    x = torch.tensor(X_TRAIN, dtype=torch.float32)
    y = torch.eye(3)[torch.tensor(Y_CLASSES)]
    return Subject(model=SoftmaxRegression(), inputs={"x": x, "y_one_hot": y}, outputs=["h", "cost"], opset=13)
