"""Bug 28b — SC_DNN, variant `sc_train_creg_div2` (TF): the SC-aware 784-128-10 network WITHOUT any +1e-7.

Facts (SUBJECTS.md), adamsolomou/SC-DNN `ID_28/sc_train_creg_div2_grist.py`:
- data: TF-MNIST; ONE fixed batch of 500 (features [500,784] in [0,1], one-hot labels [500,10]) reused for ever;
  the input is not mutated.
- model: the layers of 28a with every epsilon removed.
  sc_matmul(x, w, s_in, gain): m = max(s_in); x' = x·s_in/m; S = Σ_rows |w| per output unit; z = (x'·w)/S;
  curr = m·S; z_up = z·gain; new_scale = curr/gain; output clip(z_up, −1, 1), scale new_scale.
  sc_add(x, b, s_in): b' = b/s_in; output clip(x + b', −1, 1), scale s_in.
  Layer 1 = sc_matmul(X, w1 [784,128], ones[784], gain1 [128]) then sc_add(b1); layer 2 = sc_matmul(·, wout [128,10],
  layer-1 scales, gain2 [10]) then sc_add(bout); logits = layer-2 output × layer-2 scale.
  Init: w1 ~ N(0,1) (not zero in the div2 variants); wout, b1, bout ~ N(0,1); gain1 ~ U(0,16), non-trainable;
  gain2 ~ U(0,16), trainable.
- loss: mean softmax_cross_entropy_with_logits + 0.25·Σ_{w1,wout,b1,bout} Σ 2·(|a| − clip(|a|, −1, 1)), with the
  DIVs by S, by the gains and by s_in unprotected. The TF cross-entropy op is the stable −Σ y·log_softmax(logits).
- training: Adam lr 0.1 (TF defaults) on w1, wout, b1, bout, gain2, on the fixed batch, one step per loop.
- hazard: division by zero or near zero (S, a gain, a layer scale). The study's searched tensor is a NEW variable
  tf.Variable(s) copied from layer 1's Σ|w1| [128], read by nothing (Newton step without clip): the search cannot
  influence the loss. Any non-finite loss must come from Adam training on the fixed batch (plausibly the trainable
  gain2 crossing or approaching 0: logits scale like 1/gain2); undetermined. The only number is the paper's 176.02 s,
  quoted by RANUM. The detached copy is left out here (it has no effect on the model).

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


def creg(a):
    return torch.sum(2 * (torch.abs(a) - torch.clamp(torch.abs(a), -1.0, 1.0)))


class ScDnnDiv2(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(282)
        self.w1 = nn.Parameter(torch.randn(784, 128))
        self.wout = nn.Parameter(torch.randn(128, 10))
        self.b1 = nn.Parameter(torch.randn(128))
        self.bout = nn.Parameter(torch.randn(10))
        self.gain1 = nn.Parameter(torch.rand(128) * 16, requires_grad=False)
        self.gain2 = nn.Parameter(torch.rand(10) * 16)

    def forward(self, features, labels):
        s_in = torch.ones(784)
        h, scale1 = sc_matmul(features, self.w1, s_in, self.gain1)
        h, scale1 = sc_add(h, self.b1, scale1)
        h, scale2 = sc_matmul(h, self.wout, scale1, self.gain2)
        h, scale2 = sc_add(h, self.bout, scale2)
        logits = h * scale2
        cross_entropy = torch.mean(-torch.sum(labels * torch.log_softmax(logits, dim=1), dim=1))
        loss = cross_entropy + 0.25 * (creg(self.w1) + creg(self.wout) + creg(self.b1) + creg(self.bout))
        return logits, loss


def build():
    g = torch.Generator().manual_seed(10282)
    features = torch.rand(4, 784, generator=g)
    labels = torch.eye(10)[torch.tensor([0, 3, 7, 9])]
    return Subject(model=ScDnnDiv2(), inputs={"features": features, "labels": labels}, outputs=["logits", "loss"],
                   opset=13)
