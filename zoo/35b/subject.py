"""Bug 35b — deep_learning_Nikolenko_and_Co ch10_04_01, the `_sqrt` variant (TF): the book's VAE, n_z = 2.

Facts (SUBJECTS.md):
- data: TF-MNIST x [100,784] in [0,1], clip [0,1] (first batch), switching ON (k = 5; the only `_sqrt` variant that
  switches); the persistent batch is drawn before the pre-training. Fed eps [100,2] ~ numpy N(0,1), once per loop,
  shared by that loop's monitored and training runs.
- model: encoder 784→500 softplus →500 softplus → z_mean [2], z_log_sigma_sq (zlss) [2];
  z = z_mean + SQRT(exp(clip(zlss, −100, 87)))·eps; decoder 2→500 softplus →500 softplus →784 sigmoid = x_rec.
  Xavier-uniform weights, zero biases (the GRIST copy has n_z = 2; the original script has 20).
- loss: cost = mean_N[−Σ(x·log(clip(x_rec, 1e-6, 1)) + (1−x)·log(clip(1 − x_rec, 1e-6, 1)))
  − 0.5·Σ_2(1 + zlss − z_mean² − exp(clip(zlss, −100, 87)))]; the reconstruction logs are safe and `1 + zlss` is
  unclipped.
- training: 50 epochs × 550 = 27,500 Adam (lr 1e-3) pre-training steps on fresh batches with fresh eps (no checks,
  but inside the 30-minute budget); then one Adam step per GRIST loop on the pre-update persistent batch.
- hazard: sqrt(exp(clip(zlss, −100, 87))); the study's objective is min zlss (no abs) over [100,2], x mutated in
  [0,1]. Trigger (analysis): once a zlss lies in (−100, −87.3), TensorFlow's flush-to-zero makes exp return exactly
  0; the forward stays finite (sqrt(0) = 0), but the training step's backward computes sqrt′ = 0.5/0 = inf and
  exp′ gives inf·0 = NaN, which the clip's select mask lets through to the encoder weights; the next monitored loss
  is NaN. Below −100 the mask zeroes the gradient. Without FTZ exp(≥ −100) ≥ 3.7e-44 is never 0 and this path
  cannot fire. No GRIST number is known (the sibling 49b: 307 s, pre-training included).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_glorot_uniform_

N_INPUT, N_HIDDEN, N_Z = 784, 500, 2


def _dense(n_in, n_out):
    """A TF-style layer: W [n_in, n_out] Xavier-uniform, b zeros."""
    return nn.Parameter(tf_glorot_uniform_(torch.empty(n_in, n_out))), nn.Parameter(torch.zeros(n_out))


class VAESqrt(nn.Module):
    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.enc_h1_w, self.enc_h1_b = _dense(N_INPUT, N_HIDDEN)
        self.enc_h2_w, self.enc_h2_b = _dense(N_HIDDEN, N_HIDDEN)
        self.out_mean_w, self.out_mean_b = _dense(N_HIDDEN, N_Z)
        self.out_log_sigma_w, self.out_log_sigma_b = _dense(N_HIDDEN, N_Z)
        self.dec_h1_w, self.dec_h1_b = _dense(N_Z, N_HIDDEN)
        self.dec_h2_w, self.dec_h2_b = _dense(N_HIDDEN, N_HIDDEN)
        self.dec_out_w, self.dec_out_b = _dense(N_HIDDEN, N_INPUT)

    def forward(self, x, eps):
        h = F.softplus(x.matmul(self.enc_h1_w) + self.enc_h1_b)
        h = F.softplus(h.matmul(self.enc_h2_w) + self.enc_h2_b)
        z_mean = h.matmul(self.out_mean_w) + self.out_mean_b
        z_log_sigma_sq = h.matmul(self.out_log_sigma_w) + self.out_log_sigma_b
        z = z_mean + torch.sqrt(torch.exp(torch.clamp(z_log_sigma_sq, -100.0, 87.0))) * eps
        g = F.softplus(z.matmul(self.dec_h1_w) + self.dec_h1_b)
        g = F.softplus(g.matmul(self.dec_h2_w) + self.dec_h2_b)
        x_reconstr_mean = torch.sigmoid(g.matmul(self.dec_out_w) + self.dec_out_b)
        reconstr_loss = -torch.sum(x * torch.log(torch.clamp(x_reconstr_mean, 1e-6, 1.0))
                                   + (1 - x) * torch.log(torch.clamp(1 - x_reconstr_mean, 1e-6, 1.0)), dim=1)
        latent_loss = -0.5 * torch.sum(1 + z_log_sigma_sq - torch.square(z_mean)
                                       - torch.exp(torch.clamp(z_log_sigma_sq, -100.0, 87.0)), dim=1)
        cost = torch.mean(reconstr_loss + latent_loss)
        return x_reconstr_mean, z_log_sigma_sq, cost


def build():
    g = torch.Generator().manual_seed(10352)
    x = torch.rand(4, N_INPUT, generator=g)
    eps = torch.randn(4, N_Z, generator=g)
    # training=True: in eval mode torch.onnx merges initializers of equal value (the zero biases of equal shape)
    # into one, which would tie them; the model has no dropout or batch norm, so the graph is otherwise the same.
    return Subject(model=VAESqrt(seed=352), inputs={"x": x, "eps": eps},
                   outputs=["x_reconstr_mean", "z_log_sigma_sq", "cost"], opset=13, training=True)
