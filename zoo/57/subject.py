"""Bug 57 — start_beginner_kaggle.03_softmax_cost (PyTorch).

Facts (SUBJECTS.md): a softmax-cost demo on random logits; no model. The free logits z [3,5] = torch.rand under torch.manual_seed(1)
(row 0 = [0.7576, 0.2793, 0.4031, 0.7347, 0.0293]) are the searched tensor, unclipped; each loop the program draws
fresh labels randint(0,5,(3,)) and turns them into a one-hot [3,5]. h = softmax(z, dim=1);
loss = mean_3(Σ_5 onehot·(-LOG(h))). No training: only z changes.
Hazard: log(softmax) underflow; objective min|h|. The arg-min z[0,4] falls 0.15 per loop while the other 4 entries of
row 0 rise 0.15, so the gap grows 0.3 per loop up to PyTorch's ≈ 103 underflow gap (denormals kept). The study
measured @346@ in 0.137 s (replayed @346@), final row 0 ≈ [51.31, 50.53, 50.65, 51.28, -51.57].
Identical in substance to bugs 46, 23 and 27. A TF/FTZ re-implementation would fire at a gap of ≈ 87 (≈ 290 loops).
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class SoftmaxCost(nn.Module):
    def forward(self, z, y):
        h = torch.softmax(z, dim=1)
        loss = (y * -torch.log(h)).sum(dim=1).mean()
        return h, loss


def build():
    torch.manual_seed(1)
    z = torch.rand(3, 5)
    labels = torch.randint(0, 5, (3,))  # the first loop's labels
    y = torch.nn.functional.one_hot(labels, 5).float()
    return Subject(model=SoftmaxCost(), inputs={"z": z, "y": y}, outputs=["h", "loss"], opset=13)
