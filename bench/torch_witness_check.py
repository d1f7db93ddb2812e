#!/usr/bin/python3
"""A witness checked by PyTorch, independently of grist's engine: the zoo subject's own module (zoo/ID/subject.py)
gets the witness's weights and inputs and runs forward and, where the loss is finite, its backward; the witness
holds if the loss (or, without one, any output) is NaN or Inf there too, or if the loss's gradient with respect
to a parameter is: the program's next optimizer step then writes NaN or Inf into the weights.

Usage: /usr/bin/python3 bench/torch_witness_check.py zoo/ID WITNESS.json [WITNESS.json ...]
Exit status: 0 every witness holds in PyTorch, 1 some does not, 2 a witness this check cannot take (a trigger
in the optimizer step, crafted training steps, dropout masks that only grist's generator can redraw, weights
whose ONNX names are not the module's). A witness found under flush-to-zero is checked with PyTorch's
set_flush_denormal.
"""
import importlib.util
import json
import os
import sys

import numpy
import torch


def load_subject(folder):
    sys.path.insert(0, os.path.dirname(os.path.abspath(folder)))  # zoo_common
    spec = importlib.util.spec_from_file_location("subject", os.path.join(folder, "subject.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def check(folder, witness_path):
    with open(witness_path) as f:
        w = json.load(f)
    checked = ("monitored forward", "training forward", "training backward", "loss backward")
    if w.get("pass") not in checked:
        return 2, f"the trigger is in the {w.get('pass')} pass; only forward and backward passes are checked"
    npz = os.path.join(os.path.dirname(witness_path), w["npz"])
    with open(npz, "rb") as f:
        arrays = {k: v for k, v in numpy.load(f).items()}
    if w.get("dropout"):
        return 2, "dropout was on in the pass: its masks come from grist's generator, not PyTorch's"
    if any(k.startswith("step.") for k in arrays):
        return 2, "the witness holds crafted training steps; replay them with grist replay"
    # The witness's numerics: flush-to-zero (a TensorFlow program's CPU kernels, the manifest's [numerics] ftz) is
    # PyTorch's set_flush_denormal on this CPU, for this witness only.
    if not torch.set_flush_denormal(bool(w.get("ftz"))) and w.get("ftz"):
        return 2, "the witness ran with flush-to-zero, which PyTorch cannot set on this CPU"
    subject = load_subject(folder)
    model = subject.model
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    with torch.no_grad():
        for key, value in arrays.items():
            kind, name = key.split(":", 1)
            if kind != "weight":
                continue
            target = params.get(name, buffers.get(name))
            if target is None or tuple(target.shape) != value.shape:
                return 2, f"weight '{name}' is not a parameter of the module with that shape"
            target.copy_(torch.from_numpy(value))
    inputs = []
    for name, example in subject.inputs.items():
        key = "input:" + name
        x = torch.from_numpy(arrays[key]).to(example.dtype) if key in arrays else example
        if w.get("pass") == "loss backward" and x.is_floating_point():
            x = x.clone().requires_grad_(True)  # a model that does not train: the input gradient is the one taken
        inputs.append(x)
    model.eval() if not subject.training else model.train()
    outs = model(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    named = dict(zip(subject.outputs, outs))
    loss = w.get("loss") or ""
    looked = {loss: named[loss]} if loss in named else named
    bad = [n for n, t in looked.items() if not torch.isfinite(t).all()]
    if bad:
        return 0, f"holds: PyTorch's {', '.join(bad)} is not finite"
    if loss in named and named[loss].requires_grad:
        named[loss].sum().backward()
        broken = [n for n, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
        if broken:
            return 0, (f"holds: PyTorch's {loss} is finite, its gradient with respect to {', '.join(broken)} is not "
                       "(the next optimizer step writes it into the weights)")
        broken = [name for name, x in zip(subject.inputs, inputs)
                  if x.requires_grad and x.grad is not None and not torch.isfinite(x.grad).all()]
        if broken:
            return 0, f"holds: PyTorch's {loss} is finite, its gradient with respect to {', '.join(broken)} is not"
    return 1, f"does not hold: PyTorch's {', '.join(looked)} and its gradients are finite on the witness"


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    counts = [0, 0, 0]  # hold, do not hold, cannot be checked
    for path in sys.argv[2:]:
        status, text = check(sys.argv[1], path)
        print(f"{path}: {text}")
        counts[status] += 1
    print(f"{counts[0]} hold in PyTorch, {counts[1]} do not, {counts[2]} cannot be checked this way")
    return 1 if counts[1] else (2 if counts[2] else 0)


if __name__ == "__main__":
    sys.exit(main())
