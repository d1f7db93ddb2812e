"""Bug 17 — TF_Unet (TF): jakeret/tf_unet's toy problem under TF 0.12, a 3-level U-Net with a pixel-wise softmax.

Facts (SUBJECTS.md), entry `ID_17/test_toy_grist.py` with tf_unet's unet/layers/image_gen/image_util/util modules:
- data: synthetic, GrayScaleDataProvider(572, 572, cnt=20): a background of 1; 20 filled discs with centres in [92,
  480), radius in [5, 50) and an integer intensity in [1, 255); Gaussian noise σ = 20; min–max normalised to [0,1],
  then normalised again by the provider (fabs, min–max). Label: the disc mask, one-hot [1,572,572,2] float, cropped to
  the network output 532×532. Batch 1 (N = 1, k = 0: no switching); x [1,572,572,1] (NHWC, as the program), y
  [1,532,532,2] (a 0/1 uint8 input here, cast to float inside the model); clip [0,1] (the first image's min and max).
  numpy is seeded 98765, then re-seeded to 0 by the GRIST utils import, so the images come from the seed-0 stream
  (here: our own generator on np.random.RandomState(0); only the first image is ever used).
- model: 3 levels, features_root 16, 3×3 VALID convs, 2×2 max-pool, 2×2 stride-2 transposed convs.
  Down: level 0 conv 1→16, ReLU, conv 16→16, ReLU (572→568) → pool 284; level 1 conv 16→32, conv 32→32 (→280) →
  pool 140; level 2 conv 32→64, conv 64→64 (→136).
  Up: deconv 64→32 (→272) + bias, ReLU; crop-and-concat with level 1 (64 ch); conv 64→32, conv 32→32 (→268);
  deconv 32→16 (→536) + bias, ReLU; concat with cropped level 0 (32 ch); conv 32→16, conv 16→16 (→532).
  Output: 1×1 conv 16→2 + bias, ReLU → logits (≥ 0), 532×532×2.
  Every 3×3 conv output passes through dropout(keep_prob) BEFORE its bias and ReLU; the deconvs and the final 1×1
  conv have no dropout. keep_prob = 0.75 in both the monitored run and training.
  Init: weights TF truncated normal, std sqrt(2/(9·F)): down levels F = 16, 32, 64 (std 0.118, 0.083, 0.059);
  up level 1 (with its deconv) F = 64, up level 0 (with its deconv) F = 32; final 1×1 conv std 0.083; biases 0.1.
- loss: dice. pred = EXP(logits) / tile(Σ_channels EXP(logits)); loss = −2·Σ(pred·y) / (1e-5 + Σ pred + Σ y).
- training: Momentum optimizer, momentum 0.2, lr = 0.2·0.95^floor(step/32) (staircase), one step per loop on the
  updated image.
- hazard: exp overflow once a logit exceeds 88.72 (inf/inf = NaN); objective −max(logits); x [1,572,572,1] mutated,
  clip [0,1].
- study: GRIST FAILS — results.txt `tf_unet_grist` Fail @280@ at 30 min (a checkpoint was saved every loop, so only
  280 loops fit); RANUM records 0/10.
"""
import io
import math
import os
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_truncated_normal_

NX = NY = 572
OUT = 532
FEATURES_ROOT = 16
KEEP_PROB = 0.75


def gray_scale_image(rng, nx=NX, ny=NY, cnt=20, border=92, r_min=5, r_max=50, sigma=20.0):
    """One toy image [nx,ny,1] in [0,1] and its disc mask [nx,ny] (bool), per the facts above."""
    image = np.ones((nx, ny, 1))
    mask = np.zeros((nx, ny), dtype=bool)
    rows, cols = np.ogrid[:nx, :ny]
    for _ in range(cnt):
        a = rng.randint(border, nx - border)
        b = rng.randint(border, ny - border)
        r = rng.randint(r_min, r_max)
        h = rng.randint(1, 255)
        disc = (rows - a) ** 2 + (cols - b) ** 2 <= r * r
        mask |= disc
        image[disc] = h
    image += rng.normal(scale=sigma, size=image.shape)
    image -= image.min()
    image /= image.max()
    # The data provider's own normalisation (a no-op on [0,1] data, kept for fidelity).
    image = np.fabs(image)
    image -= image.min()
    image /= image.max()
    return image, mask


def make_data():
    """x [1,572,572,1] float32 and the one-hot label y [1,532,532,2] (uint8), cropped to the network output."""
    image, mask = gray_scale_image(np.random.RandomState(0))
    off = (NX - OUT) // 2
    mask = mask[off:off + OUT, off:off + OUT]
    y = np.stack([~mask, mask], axis=-1).astype(np.uint8)
    return image[None].astype(np.float32), y[None]


def write_npz(path, **arrays):
    """A compressed .npz with fixed timestamps, so regenerating it gives the same bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, a in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, buf.getvalue())


def _tn(shape, std):
    return nn.Parameter(tf_truncated_normal_(torch.empty(*shape), std=std))


def _std(features):
    return math.sqrt(2.0 / (9 * features))


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(17)
        self.dropout = nn.Dropout(1 - KEEP_PROB)
        # Down path: level → (in, out) channels, std from the level's feature count.
        self.down = []
        c_in = 1
        for level in range(3):
            f = 2 ** level * FEATURES_ROOT
            std = _std(f)
            self._conv(f"down{level}_conv1", c_in, f, 3, std)
            self._conv(f"down{level}_conv2", f, f, 3, std)
            self.down.append(level)
            c_in = f
        # Up path, deepest first: deconv f→f/2, then two convs (f → f/2 → f/2), std from f = 2^(level+1)·root.
        for level in (1, 0):
            f = 2 ** (level + 1) * FEATURES_ROOT
            std = _std(f)
            setattr(self, f"up{level}_deconv_w", _tn((f, f // 2, 2, 2), std))   # ConvTranspose: [in, out, kh, kw]
            setattr(self, f"up{level}_deconv_b", nn.Parameter(torch.full((f // 2,), 0.1)))
            self._conv(f"up{level}_conv1", f, f // 2, 3, std)
            self._conv(f"up{level}_conv2", f // 2, f // 2, 3, std)
        self._conv("out", FEATURES_ROOT, 2, 1, 0.083)

    def _conv(self, name, c_in, c_out, k, std):
        setattr(self, name + "_w", _tn((c_out, c_in, k, k), std))
        setattr(self, name + "_b", nn.Parameter(torch.full((c_out,), 0.1)))

    def _conv_block(self, h, name):
        """3×3 VALID conv, dropout(keep_prob), + bias, ReLU."""
        h = self.dropout(F.conv2d(h, getattr(self, name + "_w")))
        return torch.relu(h + getattr(self, name + "_b").view(1, -1, 1, 1))

    @staticmethod
    def _crop_and_concat(down, up):
        off = (down.shape[2] - up.shape[2]) // 2
        size = up.shape[2]
        return torch.cat([down[:, :, off:off + size, off:off + size], up], dim=1)

    def forward(self, x, y_onehot):
        y = y_onehot.float()                                     # the label travels as uint8 (0/1) to keep files small
        h = x.permute(0, 3, 1, 2)                                # NHWC → NCHW
        skips = []
        for level in range(3):
            h = self._conv_block(h, f"down{level}_conv1")
            h = self._conv_block(h, f"down{level}_conv2")
            if level < 2:
                skips.append(h)
                h = F.max_pool2d(h, 2, 2)
        for level in (1, 0):
            h = F.conv_transpose2d(h, getattr(self, f"up{level}_deconv_w"), stride=2)
            h = torch.relu(h + getattr(self, f"up{level}_deconv_b").view(1, -1, 1, 1))
            h = self._crop_and_concat(skips[level], h)
            h = self._conv_block(h, f"up{level}_conv1")
            h = self._conv_block(h, f"up{level}_conv2")
        logits = torch.relu(F.conv2d(h, self.out_w) + self.out_b.view(1, -1, 1, 1))
        logits = logits.permute(0, 2, 3, 1)                      # NCHW → NHWC, as the program's [1,532,532,2]
        exp_map = torch.exp(logits)
        sum_exp = torch.sum(exp_map, dim=3, keepdim=True)
        tensor_sum_exp = sum_exp.repeat(1, 1, 1, 2)
        prediction = exp_map / tensor_sum_exp
        intersection = torch.sum(prediction * y)
        union = 1e-5 + torch.sum(prediction) + torch.sum(y)
        loss = -(2 * intersection / union)
        return loss


def build():
    x, y = make_data()
    write_npz(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data.npz"), x=x, y=y)
    return Subject(model=UNet(), inputs={"x": torch.from_numpy(x), "y": torch.from_numpy(y)},
                   outputs=["loss"], opset=13, training=True)
