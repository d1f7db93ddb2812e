#!/usr/bin/python3
"""grist against ONNX Runtime node by node: where a model's forward is slower (issue 14).

    node bench/ort_profile.js M.onnx X.npy 300 /tmp/ort          # prints ORT's profile file
    build/bench/model_bench --forward-only --profile-in-order --iters 300 M.onnx=X.npy > grist.json
    /usr/bin/python3 bench/compare_nodes.py M.onnx ORT_PROFILE.json grist.json [--top 20]

ONNX Runtime fuses nodes (Conv + BatchNormalization + Relu, ...) and names a fused node by its last output; grist's
profile (each node's median time inside whole passes) has the model's own nodes. Both run the graph in its order,
so each ORT node takes the grist nodes from the one after the previous ORT node's output up to the one writing its
own. The groups are summed by kind (Conv kernel and output grid, or op type), largest difference first. ORT's
profiler costs microseconds a node, so small nodes read slow there: compare the large groups. Needs Debian's
python3-onnx (/usr/bin/python3).
"""
import argparse
import collections
import json
import statistics

import onnx


def ort_nodes(profile, skip):
    """[(name, op, median ms)] in execution order, the first `skip` runs of each node left out."""
    times, ops, order = collections.defaultdict(list), {}, []
    for e in json.load(open(profile)):
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        if name not in times:
            order.append(name)
        times[name].append(e["dur"])
        ops[name] = e["args"].get("op_name", "?")
    return [(n, ops[n], statistics.median(times[n][skip:] or times[n]) / 1000) for n in order]


def kind(node, inits, shape):
    if node.op_type != "Conv":
        return node.op_type
    w = inits.get(node.input[1])
    group = next((a.i for a in node.attribute if a.name == "group"), 1)
    k = "depthwise" if group > 1 else (f"{w.dims[2]}x{w.dims[3]}" if w is not None and len(w.dims) == 4 else "conv")
    return f"Conv {k} at {shape.split(',')[-1].strip(' ]')}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("ort_profile")
    ap.add_argument("grist_profile", help="model_bench --profile-in-order's JSON line")
    ap.add_argument("--top", type=int, default=0, help="also list the N groups that differ most")
    ap.add_argument("--skip", type=int, default=50, help="ORT runs left out as warm-up")
    args = ap.parse_args()
    m = onnx.load(args.model)
    nodes = {n.name: n for n in m.graph.node}
    inits = {i.name: i for i in m.graph.initializer}
    g = json.loads(open(args.grist_profile).read().strip().splitlines()[-1])
    gnodes = g["nodes"]
    at = {}
    for i, x in enumerate(gnodes):
        at[x["name"]] = i
        for out in nodes[x["name"]].output if x["name"] in nodes else []:
            at[out] = i
    ort = ort_nodes(args.ort_profile, args.skip)
    matched, unmatched = [], []
    for name, op, ms in ort:
        key = name[: -len("_nchwc")] if name.endswith("_nchwc") else name
        (matched if key in at else unmatched).append((at.get(key), name, op, ms))
    matched.sort()
    groups, rows, prev = collections.defaultdict(lambda: [0.0, 0.0, 0]), [], -1
    for end, name, op, ms in matched:
        part = gnodes[prev + 1 : end + 1]
        prev = end
        main_node = next((x for x in part if x["op"] in ("Conv", "Gemm", "MatMul")), part[-1])
        k = kind(nodes[main_node["name"]], inits, main_node["shape"]) if main_node["name"] in nodes else op
        ours = sum(x["median_ms"] for x in part)
        s = groups[k]
        s[0] += ms
        s[1] += ours
        s[2] += 1
        rows.append((ours - ms, name, k, ms, ours))
    print(f"ORT nodes {sum(ms for *_, ms in ort):.3f} ms (unmatched {sum(ms for *_, ms in unmatched):.3f}: "
          f"its layout reorders), grist nodes {sum(x['median_ms'] for x in gnodes):.3f} ms, grist pass "
          f"{g.get('pass_ms', float('nan')):.3f} ms")
    print(f"{'kind':28s} {'n':>4s} {'ORT ms':>8s} {'grist ms':>9s} {'diff':>8s}")
    for k, (o, ours, n) in sorted(groups.items(), key=lambda kv: kv[1][0] - kv[1][1]):
        print(f"{k:28s} {n:4d} {o:8.3f} {ours:9.3f} {ours - o:+8.3f}")
    for d, name, k, o, ours in sorted(rows, reverse=True)[: args.top]:
        print(f"  {name[-60:]:60s} {k:24s} ORT {o:.4f} grist {ours:.4f} {d:+.4f}")


if __name__ == "__main__":
    main()
