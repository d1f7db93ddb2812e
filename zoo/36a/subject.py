"""Bug 36a — deep_learning_Nikolenko_and_Co ch10_04_03_Pic_10_05 (TF): the book's Fig. 10.5 VAE on MNIST, n_z = 2.

Facts (SUBJECTS.md):
- data: TF-MNIST x [N,784] in [0,1], N = 100, clip [0,1] (first batch), switching on (k = 5). Fed eps [N,2] ~
  numpy N(0,1), drawn once per loop and shared by that loop's monitored and training runs. An unused module-level
  mnist.test.next_batch(5000) is left out.
- model: encoder 784→500 softplus →500 softplus → z_mean [2], z_log_sigma_sq (zlss) [2]; zlss is clipped to
  [−87, 87] and REASSIGNED, so every later use sees the clipped value; z = z_mean + sqrt(exp(zlss))·eps; decoder
  2→500 softplus →500 softplus →784 sigmoid = x_rec. Xavier-uniform weights, zero biases.
- loss: cost = mean_N[−Σ(x·LOG(x_rec + 1e-10) + (1−x)·log(1e-10 + 1 − x_rec)) − 0.5·Σ_2(1 + zlss − z_mean² −
  exp(zlss))] with the clipped zlss. In float32 the Python constant 1e-10 + 1 is exactly 1.0: the second log is
  log(1 − x_rec).
- training: Adam lr 1e-3 (TF defaults), one step per loop on the pre-update batch, no pre-training.
- hazard as instrumented by the study: log(x_rec + 1e-10), objective min|x_rec|, x [100,784] mutated in [0,1].
  Trigger (analysis, as 35a): that log cannot fail; the realistic path is x_rec rounding to 1.0, so log(1 − x_rec) =
  −inf, when the decoder over-fits the persistent batch. With n_z = 2 the latent sum cannot overflow. The original
  program (fresh batches) ran 105,394 iterations in 30 minutes without a NaN. No GRIST number.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_glorot_uniform_

N_INPUT, N_HIDDEN, N_Z = 784, 500, 2


def _dense(n_in, n_out):
    """A TF-style layer: W [n_in, n_out] Xavier-uniform, b zeros."""
    return nn.Parameter(tf_glorot_uniform_(torch.empty(n_in, n_out))), nn.Parameter(torch.zeros(n_out))


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(36)
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
        z_log_sigma_sq = torch.clamp(z_log_sigma_sq, -87.0, 87.0)
        z = z_mean + torch.sqrt(torch.exp(z_log_sigma_sq)) * eps
        g = F.softplus(z.matmul(self.dec_h1_w) + self.dec_h1_b)
        g = F.softplus(g.matmul(self.dec_h2_w) + self.dec_h2_b)
        x_reconstr_mean = torch.sigmoid(g.matmul(self.dec_out_w) + self.dec_out_b)
        reconstr_loss = -torch.sum(x * torch.log(x_reconstr_mean + 1e-10)
                                   + (1 - x) * torch.log(1e-10 + 1 - x_reconstr_mean), dim=1)
        latent_loss = -0.5 * torch.sum(1 + z_log_sigma_sq - torch.square(z_mean) - torch.exp(z_log_sigma_sq), dim=1)
        cost = torch.mean(reconstr_loss + latent_loss)
        return x_reconstr_mean, cost


def build():
    g = torch.Generator().manual_seed(1036)
    x = torch.rand(4, N_INPUT, generator=g)
    eps = torch.randn(4, N_Z, generator=g)
    # training=True: in eval mode torch.onnx merges initializers of equal value (the zero biases of equal shape)
    # into one, which would tie them; the model has no dropout or batch norm, so the graph is otherwise the same.
    return Subject(model=VAE(), inputs={"x": x, "eps": eps}, outputs=["x_reconstr_mean", "cost"], opset=13,
                   training=True)
