"""Bug 35a — deep_learning_Nikolenko_and_Co ch10_04_01 (TF): the book's variational autoencoder on MNIST, n_z = 20.

Facts (SUBJECTS.md):
- data: TF-MNIST x [N,784] in [0,1], N = 100, clip [0,1] (first batch), switching on (k = 5); the labels are drawn
  but never enter the model. Extra fed input eps [N,20] ~ N(0,1), drawn by numpy once per loop and shared by that
  loop's monitored and training runs.
- model: encoder 784→500 softplus →500 softplus → two linear heads 500→20, z_mean and z_log_sigma_sq (zlss);
  z = z_mean + sqrt(exp(clip(zlss, −87, 87)))·eps; decoder 20→500 softplus →500 softplus →784 sigmoid = x_rec.
  Every weight Xavier-uniform U(±√(6/(fan_in+fan_out))), every bias zero. (An unused out_log_sigma weight and bias
  of the program are left out: nothing reads them.)
- loss: cost = mean_N[reconstr + latent], reconstr = −Σ_784(x·LOG(x_rec + 1e-10) + (1−x)·log(1e-10 + 1 − x_rec)),
  latent = −0.5·Σ_20(1 + zlss − z_mean² − exp(clip(zlss, −87, 87))); the clip is inline, so `1 + zlss` uses the
  unclipped zlss. In float32 the Python constant 1e-10 + 1 is exactly 1.0: the second log is log(1 − x_rec).
- training: Adam lr 1e-3 (TF defaults), one step per loop on the pre-update batch with the same eps; no dropout,
  no pre-training.
- hazard as instrumented by the study: log(x_rec + 1e-10), objective min|x_rec| over [100,784], x mutated in [0,1].
  That log is ≥ −23 and cannot fail; the realistic non-finite path is the OTHER log, log(1 − x_rec) = −inf once a
  decoder logit passes ≈ 16 and x_rec rounds to 1 (the decoder over-fitting GRIST's persistent batch), or
  Σ_20 exp(clip(zlss, ·, 87)) overflowing once ≈ 6 entries sit near 87. No GRIST number is known.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_glorot_uniform_

N_INPUT, N_HIDDEN, N_Z = 784, 500, 20


def _dense(n_in, n_out):
    """A TF-style layer: W [n_in, n_out] Xavier-uniform, b zeros."""
    return nn.Parameter(tf_glorot_uniform_(torch.empty(n_in, n_out))), nn.Parameter(torch.zeros(n_out))


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(35)
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
        z = z_mean + torch.sqrt(torch.exp(torch.clamp(z_log_sigma_sq, -87.0, 87.0))) * eps
        g = F.softplus(z.matmul(self.dec_h1_w) + self.dec_h1_b)
        g = F.softplus(g.matmul(self.dec_h2_w) + self.dec_h2_b)
        x_reconstr_mean = torch.sigmoid(g.matmul(self.dec_out_w) + self.dec_out_b)
        reconstr_loss = -torch.sum(x * torch.log(x_reconstr_mean + 1e-10)
                                   + (1 - x) * torch.log(1e-10 + 1 - x_reconstr_mean), dim=1)
        latent_loss = -0.5 * torch.sum(1 + z_log_sigma_sq - torch.square(z_mean)
                                       - torch.exp(torch.clamp(z_log_sigma_sq, -87.0, 87.0)), dim=1)
        cost = torch.mean(reconstr_loss + latent_loss)
        return x_reconstr_mean, cost


def build():
    g = torch.Generator().manual_seed(1035)
    x = torch.rand(4, N_INPUT, generator=g)
    eps = torch.randn(4, N_Z, generator=g)
    # training=True: in eval mode torch.onnx merges initializers of equal value (the zero biases of equal shape)
    # into one, which would tie them; the model has no dropout or batch norm, so the graph is otherwise the same.
    return Subject(model=VAE(), inputs={"x": x, "eps": eps}, outputs=["x_reconstr_mean", "cost"], opset=13,
                   training=True)
