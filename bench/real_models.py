#!/usr/bin/python3
"""grist vs ONNX Runtime vs PyTorch: warm forward medians on the real-model set (issue 14), side by side.

    /usr/bin/python3 bench/real_models.py [--build build] [--rounds 3] [--iters 10] [--threads 1] [--only a,b]

Needs `ninja -C build model_bench e2e_models` (the models and inputs of tests/e2e/export_real_models.py in
build/e2e-models) and ONNX Runtime in tests/oracle/node_modules. Every round runs, model by model, grist
(build/bench/model_bench), ONNX Runtime (bench/ort_time.js, graph optimisations on: its fusions are part of its
speed) and PyTorch (rebuilt in this process from the export script's seeds, so the same weights), each on the
model's recorded input with THREADS intra-op threads, so that load from other work on the machine falls on all
three alike. The table gives the medians (--statistic min: the minima) over all rounds' warm samples, of CPU time
with one thread (the time other work held the core is left out; wall-clock beside it), of wall-clock with more.
ONNX Runtime's Node binding costs a fixed amount per call, measured on a one-Identity model with the same input:
"ORT − id" subtracts it, and the ratio uses that figure for the small graphs (the Transformer and the RNNs; "—"
where it is under a tenth of ORT's figure, below what the subtraction can resolve), the raw one for the CNNs.
--baseline times a second grist build (main's, say) in the same rounds, for before/after figures under the same
load. --forward-only times grist's forward as `grist run` makes it (model_bench --forward-only: dead values freed,
elementwise tails in place and fused); --baseline-forward-only asks the same of the baseline (a build whose
model_bench has the flag).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import export_real_models as erm  # noqa: E402

CNNS = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5")


def identity_model(folder):
    """One Identity on a float input of any shape: the binding's per-call cost."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(folder, "identity.onnx")
    onnx.save(model, path)
    return path


def torch_model(name):
    """The module export_real_models.py exported, with the same weights (same seed, same preparation)."""
    build, shape, seed = erm.MODELS[name]
    torch.manual_seed(seed)
    model = build()
    erm.distinct_constant_parameters(model)
    erm.calibrate_batch_norms(model, shape)
    return model.eval()


def torch_samples(model, x, iters, warmup):
    """Wall-clock and this thread's CPU time per forward, in ms."""
    wall, cpu = [], []
    with torch.inference_mode():
        for i in range(warmup + iters):
            t0, c0 = time.perf_counter(), time.thread_time()
            model(x)
            if i >= warmup:
                wall.append((time.perf_counter() - t0) * 1e3)
                cpu.append((time.thread_time() - c0) * 1e3)
    return wall, cpu


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"real_models: {' '.join(cmd)} failed: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10, help="timed forwards per tool, model and round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--ort-opt", default="all", choices=["all", "extended", "basic", "disabled"])
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--json", help="also write every sample to this file")
    parser.add_argument("--baseline", help="another build's model_bench (say, main's), timed in the same rounds")
    parser.add_argument("--forward-only", action="store_true", help="grist's forward as `grist run` makes it")
    parser.add_argument("--baseline-forward-only", action="store_true", help="the same for the baseline")
    parser.add_argument("--statistic", default="median", choices=["median", "min"],
                        help="min: each tool's fastest warm sample, which other tenants of a shared machine can only "
                             "lengthen (where they make the medians swing)")
    args = parser.parse_args()
    models_dir = os.path.join(args.build, "e2e-models")
    grist = os.path.join(args.build, "bench", "model_bench")
    names = args.only.split(",") if args.only else list(erm.MODELS)
    torch.set_num_threads(args.threads)
    env_threads = {"OMP_NUM_THREADS": str(args.threads)}
    os.environ.update(env_threads)
    tools = ("grist", "ort", "identity", "torch", "baseline")
    samples = {n: {c: {t: [] for t in tools} for c in ("wall", "cpu")} for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        identity = identity_model(tmp)
        prepared = {}
        for n in names:
            case = os.path.join(models_dir, f"{n}_op{args.opset}")
            x = np.load(case + ".input.x.npy")
            prepared[n] = (case, torch_model(n), torch.from_numpy(x))
        for r in range(args.rounds):
            for n in names:
                case, module, x = prepared[n]
                grist_args = ["--iters", str(args.iters), "--warmup", str(args.warmup),
                              f"{case}.onnx={case}.input.x.npy"]
                forward_only = ["--forward-only"] * args.forward_only
                g = run_json([grist, "--threads", str(args.threads)] + forward_only + grist_args)
                base = (run_json([args.baseline] + ["--forward-only"] * args.baseline_forward_only + grist_args)
                        if args.baseline else {"samples_ms": [0], "cpu_ms": [0]})
                o = run_json(["node", os.path.join(ROOT, "bench", "ort_time.js"), str(args.iters), str(args.warmup),
                              args.ort_opt, str(args.threads), case + ".onnx", case + ".input.x.npy", identity])
                wall, cpu = torch_samples(module, x, args.iters, args.warmup)
                got = {"wall": {"grist": g["samples_ms"], "ort": o["samples_ms"], "identity": o["identity_ms"],
                                "torch": wall, "baseline": base["samples_ms"]},
                       "cpu": {"grist": g["cpu_ms"], "ort": o["cpu_ms"], "identity": o["identity_cpu_ms"],
                               "torch": cpu, "baseline": base["cpu_ms"]}}
                for clock in got:
                    for t in tools:
                        samples[n][clock][t] += got[clock][t]
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    # One thread: CPU time, which leaves out the time other work held the core. More threads: wall-clock
    # (CPU time would add the threads up).
    clock = "cpu" if args.threads == 1 else "wall"
    other = "wall" if clock == "cpu" else "cpu"
    print(f"threads {args.threads}, opset {args.opset}, ORT graph optimisation '{args.ort_opt}', "
          f"{args.rounds} rounds x {args.iters} warm forwards; {args.statistic}s in ms of {clock} time "
          f"({other} time in brackets)")
    head = "| model | grist | ORT | ORT − id | PyTorch | grist / ORT | grist / PyTorch |"
    print(head + (" baseline | baseline / ORT |" if args.baseline else ""))
    print("|---" * (7 + 2 * bool(args.baseline)) + "|")
    for n in names:
        stat = min if args.statistic == "min" else statistics.median
        s = {k: stat(v) for k, v in samples[n][clock].items()}
        w = {k: stat(v) for k, v in samples[n][other].items()}
        ort_net = s["ort"] - s["identity"]
        ort_ref = s["ort"] if n in CNNS else ort_net

        def ratio(t):  # "—" where the binding's cost is the whole of ORT's figure (the net is below resolution)
            return f"{t / ort_ref:.2f}×" if ort_ref > 0.1 * s["ort"] else "—"

        row = (f"| {n} | {s['grist']:.3f} ({w['grist']:.3f}) | {s['ort']:.3f} ({w['ort']:.3f}) | {ort_net:.3f} | "
               f"{s['torch']:.3f} ({w['torch']:.3f}) | {ratio(s['grist'])} | {s['grist'] / s['torch']:.2f}× |")
        if args.baseline:
            row += f" {s['baseline']:.3f} ({w['baseline']:.3f}) | {ratio(s['baseline'])} |"
        print(row)
    if args.json:
        with open(args.json, "x") as f:
            json.dump(samples, f)


if __name__ == "__main__":
    main()
