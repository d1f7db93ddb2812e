"""Bug 59 — tensorflow_book, get_loss1 (TF).

Facts (SUBJECTS.md): a book chapter's one-layer MNIST classifier with a hand-written gradient update.
Data: tf.keras mnist.load_data() — the 60,000 training images /255, flattened to [N,784] in [0,1] (float64 numpy),
labels one-hot [N,10] via an identity-matrix lookup; next_batch samples WITH replacement (np.random.choice, numpy seed
0). x [100,784] (searched, clipped to the first batch's range [0,1]) and y [100,10]; N = 100, k = 5.
Model pred = softmax(x·w + b), w [784,10] ~ U(-1,1) (tf.random_uniform, unseeded; seeded here for determinism),
b [10] zeros. Loss cross_entropy = mean_N(-Σ_10 y·LOG(pred)); a clip_by_value(pred, 1e-15, 1) is computed and
discarded by the program, so the intended guard is a no-op (not modelled: it feeds nothing).
Training: one manual update per loop on the pre-update batch: w ← w - 0.01·g_w with g_w = -xᵀ(y - pred) (the batch
SUM, 100× the mean-loss gradient, i.e. SGD lr 1.0 on this mean loss), and b ← b - 0.01·g_b with g_b = -(mean over the
784 pixel rows of xᵀ(y - pred)), a [10] vector that is not a gradient of the loss (a bug in the program).
Hazard: log(softmax) underflow; objective min|pred|. The weights start large, so moving the 784 pixels of one sample by
±0.15 changes its logit gap by tens per step: the study measured @3@ in 0.098 s ([emulated] @3@ also with training
switched off). The original program (no input mutation) stayed finite for 2,000 steps in an emulation.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class BookSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(59)
        self.w = nn.Parameter(torch.rand(784, 10, generator=g) * 2 - 1)
        self.b = nn.Parameter(torch.zeros(10))

    def forward(self, x, y):
        pred = torch.softmax(x.matmul(self.w) + self.b, dim=1)
        cross_entropy = torch.mean(-torch.sum(y * torch.log(pred), dim=1))
        return pred, cross_entropy


def build():
    g = torch.Generator().manual_seed(590)
    x = torch.rand(4, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.tensor([5, 0, 4, 1]), 10).float()
    return Subject(model=BookSoftmax(), inputs={"x": x, "y": y}, outputs=["pred", "cross_entropy"], opset=13)
