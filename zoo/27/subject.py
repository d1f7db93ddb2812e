"""Bug 27 — PyTorchDeepLearningStart 0503_softmax_regression_cost (PyTorch).

Facts (SUBJECTS.md): the searched tensor z [3,5] = torch.rand(3,5), the second rand(3,5) after torch.manual_seed(1)
(sequence: rand(3,5), randint(5,(3,)), rand(3,5)); labels y = randint(5, (3,)) made one-hot [3,5], re-drawn by the
program every loop (here fixed to the stream's next draw [3, 2, 3]: they do not matter, since a zero softmax entry
gives +inf at a label position and 0·inf = NaN elsewhere). Model: hypothesis = softmax(z, dim=1), no parameters; loss
= mean_rows(Σ_cols y_onehot·(−LOG(hypothesis))); no training. Hazard: log of a softmax entry that underflowed to
exactly 0 (objective min|hypothesis|), z unclipped, batch 1 (build(1)), no switching, no time limit. Each loop lowers
the arg-min logit by 0.15 and raises the other four by 0.15, so the gap grows 0.3 per loop and the entry underflows
(denormals kept) at a gap of ≈ 103.3. The study measured @345@ in 0.14 s (its counter is the loop index + 1).
"""
import torch
import torch.nn as nn

from zoo_common import Subject


def study_tensors():
    """z as the program draws it, and the next randint(5, (3,)) of the same stream as fixed one-hot labels."""
    torch.manual_seed(1)
    z = torch.rand(3, 5)
    torch.randint(5, (3,))
    z = torch.rand(3, 5)
    y = torch.randint(5, (3,))
    return z, torch.eye(5)[y]


class SoftmaxCost(nn.Module):
    def forward(self, z, y_one_hot):
        hypothesis = torch.softmax(z, dim=1)
        loss = (y_one_hot * -torch.log(hypothesis)).sum(dim=1).mean()
        return hypothesis, loss


def build():
    z, y = study_tensors()
    return Subject(model=SoftmaxCost(), inputs={"z": z, "y_one_hot": y}, outputs=["hypothesis", "loss"], opset=13)
