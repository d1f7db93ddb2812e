#!/usr/bin/python3
"""Exports torchvision's vgg11 (random weights, fixed seed, never downloaded) at 1x3x224x224 with a dynamic
batch, and one input image, for the load-peak measurements of docs/PERFORMANCE.md (its 531 MB file is not
committed). Exported as tests/e2e/export_real_models.py exports its models (opset 17, eval mode,
TrainingMode.PRESERVE, no constant folding), but at 224x224: at 64x64 its 2x2 features do not export.

    /usr/bin/python3 bench/export_vgg11.py OUT_DIR     # writes OUT_DIR/vgg11.onnx, OUT_DIR/vgg11.x.npy
"""
import os
import sys
import warnings

import numpy as np
import torch
import torchvision

warnings.filterwarnings("ignore", category=UserWarning)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(18)
    model = torchvision.models.vgg11(weights=None).eval()
    x = torch.rand(1, 3, 224, 224)
    torch.onnx.export(model, (x,), os.path.join(out, "vgg11.onnx"), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=17,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    np.save(os.path.join(out, "vgg11.x.npy"), x.numpy())
    print("exported", os.path.join(out, "vgg11.onnx"))


if __name__ == "__main__":
    main()
