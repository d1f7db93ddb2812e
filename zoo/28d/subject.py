"""Bug 28d — SC_DNN, variant `sc_train_l2reg_div2` (TF): the SC-aware 784-128-10 network, L2 regulariser, no +1e-7.

Facts (SUBJECTS.md), adamsolomou/SC-DNN `ID_28/sc_train_l2reg_div2_grist.py` ("as 28c with no eps"; 28c itself is
not among the facts, so its structure is taken from 28a/28b with the differences stated for 28d):
- data: TF-MNIST; ONE fixed batch of 500 (features [500,784] in [0,1], one-hot labels [500,10]) reused for ever;
  the input is not mutated.
- model: the layers of 28a with every epsilon removed.
  sc_matmul(x, w, s_in, gain): m = max(s_in); x' = x·s_in/m; S = Σ_rows |w| per output unit; z = (x'·w)/S;
  curr = m·S; z_up = z·gain; new_scale = curr/gain; output clip(z_up, −1, 1), scale new_scale.
  sc_add(x, b, s_in): b' = b/s_in; output clip(x + b', −1, 1), scale s_in.
  Layer 1 = sc_matmul(X, w1 [784,128], ones[784], gain1) then sc_add(b1); layer 2 = sc_matmul(·, wout [128,10],
  layer-1 scales, gain2) then sc_add(bout); logits = layer-2 output × layer-2 scale.
  Init: w1, wout, b1, bout ~ N(0,1); gain1 and gain2 are TRAINABLE SCALARS ~ U(0,16).
- loss: mean softmax_cross_entropy_with_logits + Σ L2 with weight 0.0012 on w1, wout, b1 and bout (written here as
  TF's l2_loss, 0.0012·Σ a²/2 per tensor), with the DIVs by S, by the gains and by s_in unprotected. The TF
  cross-entropy op is the stable −Σ y·log_softmax(logits).
- training: Adam lr 0.1 (TF defaults) on every variable, on the fixed batch, one step per loop.
- hazard: division by a gain or scale near 0. The study's searched tensor is again a DETACHED tf.Variable(s) copy of
  layer 1's Σ|w1| [128] (Newton step without clip): the search cannot affect the loss. Any trigger must come from
  Adam training, e.g. a trainable scalar gain passing through or near 0; undetermined. The paper time is 176.02 s,
  quoted by RANUM (the same number as 28b). The 30-minute limit is present. The detached copy is left out here.

No seeds in the program; this file seeds torch for determinism.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


def sc_matmul(x, w, s_in, gain):
    m = torch.max(s_in)
    x_scaled = x * s_in / m
    S = torch.sum(torch.abs(w), dim=0)
    z = x_scaled.matmul(w) / S
    curr = m * S
    z_up = z * gain
    new_scale = curr / gain
    return torch.clamp(z_up, -1.0, 1.0), new_scale


def sc_add(x, b, s_in):
    b_scaled = b / s_in
    return torch.clamp(x + b_scaled, -1.0, 1.0), s_in


def l2_loss(a):
    """TensorFlow's tf.nn.l2_loss: Σ a² / 2."""
    return torch.sum(torch.square(a)) / 2


class ScDnnL2Div2(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(284)
        self.w1 = nn.Parameter(torch.randn(784, 128))
        self.wout = nn.Parameter(torch.randn(128, 10))
        self.b1 = nn.Parameter(torch.randn(128))
        self.bout = nn.Parameter(torch.randn(10))
        self.gain1 = nn.Parameter(torch.rand(()) * 16)
        self.gain2 = nn.Parameter(torch.rand(()) * 16)

    def forward(self, features, labels):
        s_in = torch.ones(784)
        h, scale1 = sc_matmul(features, self.w1, s_in, self.gain1)
        h, scale1 = sc_add(h, self.b1, scale1)
        h, scale2 = sc_matmul(h, self.wout, scale1, self.gain2)
        h, scale2 = sc_add(h, self.bout, scale2)
        logits = h * scale2
        cross_entropy = torch.mean(-torch.sum(labels * torch.log_softmax(logits, dim=1), dim=1))
        l2 = l2_loss(self.w1) + l2_loss(self.wout) + l2_loss(self.b1) + l2_loss(self.bout)
        loss = cross_entropy + 0.0012 * l2
        return logits, loss


def build():
    g = torch.Generator().manual_seed(10284)
    features = torch.rand(4, 784, generator=g)
    labels = torch.eye(10)[torch.tensor([0, 3, 7, 9])]
    return Subject(model=ScDnnL2Div2(), inputs={"features": features, "labels": labels}, outputs=["logits", "loss"],
                   opset=13)
