"""Bug 48a — Dive_python, day01_grist.py, deep_NN() (TF).

Facts (SUBJECTS.md): a one-hidden-layer MNIST MLP with Gaussian input noise and dropout (a Chinese TF tutorial).
Data: TF-MNIST x [100,784] in [0,1] (searched, clipped to the first batch's range [0,1]), y_true [100,10] one-hot;
N = 100 (k = 5). Extra input: the scalar keep_prob, 0.75 in BOTH the monitored and the training run (shared feed).
Model: hidden = relu((x + 0.01·n)·W1 + b1), where n ~ N(0,1) has shape [784] — the same noise for every sample of a
run — drawn anew in every sess.run (the monitored and training runs see different noise); dropout(keep_prob); then
y = softmax(hidden_drop·W2 + b2). W1 [784,300] truncated-normal std 0.1, b1 zeros, W2 [300,10] ZEROS, b2 zeros.
Loss cross_entropy = mean_N(-Σ_10 y_true·LOG(y)). Training: Adagrad lr 0.3 (TF: accumulator 0.1), one step per loop
on the pre-update batch. Hazard: log(softmax) underflow; objective min|y|. At loop 1 W2 = 0, so y does not depend on x
(no move); Adagrad at 0.3 grows W2 fast. results.txt has two "Dive_python_grist" successes, @106@ 1.44 s and @132@
1.76 s (both runs of this model, see 48b); [emulated, t10k stand-in]: 264 and 296 iterations for two seeds.
The unused easy_NN() is bug 48b. No seeds in the program (seeded here).
Modelling: keep_prob dropout is nn.Dropout(0.25), exported in training mode. The noise is a model input n [N,784]
of which only row 0 is used (broadcast to every sample), so the manifest can redraw it every iteration and the export's
reference output stays deterministic; unlike the program, the monitored and training runs of one loop share the draw.
"""
import torch
import torch.nn as nn

from zoo_common import Subject, tf_truncated_normal_


class DeepNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(48)
        self.W1 = nn.Parameter(tf_truncated_normal_(torch.empty(784, 300), 0.1))
        self.b1 = nn.Parameter(torch.zeros(300))
        self.W2 = nn.Parameter(torch.zeros(300, 10))
        self.b2 = nn.Parameter(torch.zeros(10))
        self.dropout = nn.Dropout(1 - 0.75)  # keep_prob 0.75

    def forward(self, x, y_true, n):
        noise = n[0:1]                                         # one [784] draw shared by every sample
        hidden = torch.relu((x + 0.01 * noise).matmul(self.W1) + self.b1)
        hidden_drop = self.dropout(hidden)
        y = torch.softmax(hidden_drop.matmul(self.W2) + self.b2, dim=1)
        cross_entropy = torch.mean(-torch.sum(y_true * torch.log(y), dim=1))
        return y, cross_entropy


def build():
    g = torch.Generator().manual_seed(481)
    x = torch.rand(3, 784, generator=g)
    y_true = torch.nn.functional.one_hot(torch.tensor([5, 0, 4]), 10).float()
    n = torch.randn(3, 784, generator=g)
    return Subject(model=DeepNN(), inputs={"x": x, "y_true": y_true, "n": n}, outputs=["y", "cross_entropy"],
                   opset=13, training=True)
