"""Bug 13 — Pytorch_Geometric (PyTorch): the unit test test/utils/test_softmax.py against a mutated group softmax.

Facts (SUBJECTS.md): src = edge_attr = [0, 1, 2, 0, 1, 2] (float32 [6]); index = [0, 0, 0, 1, 1, 1], 2 groups
(num_nodes = 2); no switching, no clip. Model (as shipped): out = LOG(src); out = out / (scatter_add of out over its
group)[index]. Upstream PyG at the time computed exp(src) / group-sum(exp(src)) without subtracting the max (the
known overflow bug). The monitored "loss" is out itself. No training. The study's objective was written for the
upstream exp overflow (−max edge_attr, +0.15 per step, ≈ 579 iterations), but the shipped op gives log(0) = −inf
and then −inf/−inf = NaN on the initial data: the study measured @1@ in 0.07 s (the original test with random ints
in {0,1,2}: @1@ in 0.10 s).

scatter_add is written with fixed ops (Where + ReduceSum over a one-hot group mask, then Gather), so that no
0·(−inf) of a matrix product adds NaNs the shipped code did not have.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class MutatedGroupSoftmax(nn.Module):
    def __init__(self, num_nodes=2):
        super().__init__()
        self.num_nodes = num_nodes

    def forward(self, src, index):
        out = torch.log(src)
        groups = torch.arange(self.num_nodes, dtype=index.dtype)
        member = index.unsqueeze(1) == groups.unsqueeze(0)                         # [E, num_nodes]
        summed = torch.where(member, out.unsqueeze(1), torch.zeros_like(out).unsqueeze(1)).sum(dim=0)
        out = out / summed.index_select(0, index)
        return out


def build():
    src = torch.tensor([0, 1, 2, 0, 1, 2], dtype=torch.float32)
    index = torch.tensor([0, 0, 0, 1, 1, 1], dtype=torch.int64)
    return Subject(model=MutatedGroupSoftmax(), inputs={"src": src, "index": index}, outputs=["out"], opset=13,
                   batch_dim=False)
