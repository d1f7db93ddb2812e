"""Bug 51 — RBM (PyTorch).

Facts (SUBJECTS.md): a Bernoulli restricted Boltzmann machine on MNIST trained with CD-1 (a widely copied "RBM in
PyTorch" example). Data: torchvision MNIST train with ToTensor(), DataLoader batch 64 without shuffle (the first batch
is the first 64 training images); `data` [64,784] in [0,1] (the [64,1,28,28] batch viewed as [64,784]) is used as
real-valued visible units (the GRIST copy comments out data.bernoulli()); labels int64, unused. Clip [0,1]; switching
on (k = 3, every 50 loops).
Model: RBM n_vis 784, n_hid 500, k = 1. W [500,784] = N(0,1)·0.01 (torch RNG, unseeded; seeded here), v_bias [784] and
h_bias [500] zeros. forward(v): p_h = sigmoid(v·Wᵀ + h_bias); h = relu(sign(p_h - U(0,1))); p_v = sigmoid(h·W + v_bias);
v1 = relu(sign(p_v - U(0,1))); one more v1 → h pass whose result is unused (not modelled); returns (v, v1).
free_energy(v) = mean_B[ -Σ_500 LOG(1 + EXP(wx_b)) - v·v_bias ], wx_b = v·Wᵀ + h_bias. Loss = free_energy(v) -
free_energy(v1). Training: SGD lr 0.1 on W, v_bias, h_bias; one step per loop (on the monitored forward).
Hazard: exp(wx_b) overflows for wx_b > 88.72: exp = inf, log(inf) = inf, free energy -inf, loss -inf or NaN. The
study's objective (T+, -max wx_b) is the one stored by the LAST free_energy call, i.e. on v1, which depends on the input
only through sign(): ∂O/∂data is all zeros (checked in PyTorch) and the input never moves. Only training on the
persistent batch (plus 3 rows switched every 50 loops) can drive wx_b past 88.7. Paper: 3 of 10 runs succeed (RANUM).
A re-run of the unmodified script (t10k stand-in, ~1,550 loops): max wx_b(v1) rose only from ≈ 3 to ≈ 15, roughly
linearly (≳ 1e4 loops needed). The iteration counter advances 2 per loop.
Modelling: the Gibbs noise U(0,1) of the two samplings is two model inputs (u_h [N,500], u_v [N,784]) that the
manifest redraws every iteration, so the monitored pass and the training step share one draw (as the program's single
forward did) and the export's reference output is deterministic.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class RBM(nn.Module):
    def __init__(self, n_vis=784, n_hid=500):
        super().__init__()
        torch.manual_seed(51)
        self.W = nn.Parameter(torch.randn(n_hid, n_vis) * 0.01)
        self.v_bias = nn.Parameter(torch.zeros(n_vis))
        self.h_bias = nn.Parameter(torch.zeros(n_hid))

    def free_energy(self, v):
        vbias_term = v.matmul(self.v_bias)
        wx_b = v.matmul(self.W.t()) + self.h_bias
        hidden_term = torch.log(1 + torch.exp(wx_b)).sum(dim=1)
        return (-hidden_term - vbias_term).mean()

    def forward(self, data, u_h, u_v):
        v = data
        p_h = torch.sigmoid(v.matmul(self.W.t()) + self.h_bias)
        h = torch.relu(torch.sign(p_h - u_h))
        p_v = torch.sigmoid(h.matmul(self.W) + self.v_bias)
        v1 = torch.relu(torch.sign(p_v - u_v))
        loss = self.free_energy(v) - self.free_energy(v1)
        return v1, loss


def build():
    g = torch.Generator().manual_seed(510)
    data = torch.rand(4, 784, generator=g)
    u_h = torch.rand(4, 500, generator=g)
    u_v = torch.rand(4, 784, generator=g)
    return Subject(model=RBM(), inputs={"data": data, "u_h": u_h, "u_v": u_v}, outputs=["v1", "loss"], opset=13)
