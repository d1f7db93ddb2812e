"""Shared pieces of the benchmark subjects: the Subject record, TensorFlow-style initialisers, export."""
import dataclasses
import math
import warnings
from typing import Dict, List

import numpy as np
import torch


@dataclasses.dataclass
class Subject:
    """What a subject's build() returns."""
    model: torch.nn.Module           # forward(*inputs in `inputs` order) → tuple in `outputs` order
    inputs: Dict[str, torch.Tensor]  # fixed example data, one entry per model input, in forward's order
    outputs: List[str]               # names of forward's results; the loss among them when it trains
    opset: int = 13
    training: bool = False           # export in training mode: Dropout / BatchNorm nodes as they train
    batch_dim: bool = True           # dimension 0 of every input and output is the symbolic "batch"


def tf_truncated_normal_(t, std, mean=0.0, generator=None):
    """TensorFlow's truncated_normal: normal(mean, std), values beyond 2·std redrawn."""
    with torch.no_grad():
        flat = torch.empty(t.numel())
        filled = 0
        while filled < flat.numel():
            draw = torch.randn(flat.numel(), generator=generator) * std + mean
            keep = draw[(draw - mean).abs() <= 2 * std]
            take = min(keep.numel(), flat.numel() - filled)
            flat[filled:filled + take] = keep[:take]
            filled += take
        t.copy_(flat.view_as(t))
    return t


def tf_glorot_uniform_(t):
    """Keras' default kernel initialiser (fan_in/fan_out of a [in, out] or [out, in] matrix alike)."""
    fan_in, fan_out = t.shape[-1], t.shape[0]
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        return t.uniform_(-limit, limit)


def _undo_initializer_dedup(onnx_path):
    """torch.onnx (eval mode) merges parameters with equal values into one initializer read through Identity
    nodes, which would tie weights that train separately (equal zero biases, say). Give each its own copy."""
    import onnx
    model = onnx.load(onnx_path)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    keep = []
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            graph.initializer.append(copy)
        else:
            keep.append(node)
    if len(keep) != len(graph.node):
        del graph.node[:]
        graph.node.extend(keep)
        onnx.save(model, onnx_path)


def export(subject: Subject, onnx_path: str, reference_path: str):
    model = subject.model
    names = list(subject.inputs.keys())
    args = tuple(subject.inputs[n] for n in names)
    dynamic = {}
    if subject.batch_dim:
        for n in names + subject.outputs:
            dynamic[n] = {0: "batch"}
        # A scalar output has no batch dimension.
        model.eval()
        with torch.no_grad():
            outs = model(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for n, o in zip(subject.outputs, outs):
            if o.dim() == 0:
                dynamic.pop(n, None)
    mode = torch.onnx.TrainingMode.TRAINING if subject.training else torch.onnx.TrainingMode.EVAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, onnx_path, input_names=names, output_names=subject.outputs,
                          dynamic_axes=dynamic or None, opset_version=subject.opset,
                          do_constant_folding=False, training=mode)
    _undo_initializer_dedup(onnx_path)
    # PyTorch's own forward on the example data in the exported mode (BatchNorm on batch statistics when
    # training), dropout off: what grist's monitored pass computes.
    model.train(subject.training)
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, torch.nn.Dropout2d, torch.nn.Dropout3d, torch.nn.AlphaDropout)):
            m.eval()
    with torch.no_grad():
        outs = model(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    record = {"input:" + n: a.numpy() for n, a in zip(names, args)}
    record.update({"output:" + n: o.numpy() for n, o in zip(subject.outputs, outs)})
    if not _same_reference(reference_path, record):
        np.savez(reference_path, **record)


def _same_reference(path, record):
    """True when the committed reference holds the same inputs and, within the run-to-run noise of PyTorch's
    threaded sums (well inside the 1e-4 the zoo test allows grist), the same outputs: it is kept, so an export
    on a fresh checkout leaves the committed files as they are."""
    import os
    if not os.path.exists(path):
        return False
    with np.load(path) as old:
        if sorted(old.keys()) != sorted(record.keys()):
            return False
        for k, v in record.items():
            if old[k].shape != v.shape or old[k].dtype != v.dtype:
                return False
            if k.startswith("input:") and not np.array_equal(old[k], v, equal_nan=True):
                return False
            if not np.allclose(old[k], v, rtol=1e-5, atol=1e-5, equal_nan=True):
                return False
    return True
