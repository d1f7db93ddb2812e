#!/usr/bin/env bash
# grist as a tool people leave running (issue 12): nothing hangs or reads without bound, bad values are one
# line and exit 2, findings are never lost, nothing of the user's is overwritten, output that cannot be
# written is an error. Usage: reliability_test.sh GRIST_BINARY SOURCE_DIR
set -u
GRIST=$1
SRC=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
M=$SRC/tests/models
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

# --- Values no search can run with ---
for bad in -1 0 nan inf 1.5x; do
  expect "hunt --time-limit $bad" 2 "--time-limit $bad: expected a positive time" -- "$GRIST" hunt "$M/logreg_toy.toml" --time-limit="$bad" -q
done
expect "hunt --time-limit with a unit" 0 "not triggered: 10 iterations" -- "$GRIST" hunt "$M/logreg_toy.toml" --time-limit 90s --max-iterations 10 -q --no-witness
expect "bench --time-limit nan" 2 "--time-limit nan: expected a positive time" -- "$GRIST" bench "$TMP" --time-limit nan
expect "hunt --batch 0" 2 "--batch 0: must be at least 1" -- "$GRIST" hunt "$M/logreg_toy.toml" --batch 0
expect "run --batch 0" 2 "--batch 0: must be at least 1" -- "$GRIST" run "$M/mlp.onnx" --batch 0
expect "hunt --max-iterations -2" 2 "--max-iterations -2: must not be negative" -- "$GRIST" hunt "$M/logreg_toy.toml" --max-iterations=-2
expect "hunt --change 0" 2 "--change 0: the step must be a positive number" -- "$GRIST" hunt "$M/logreg_toy.toml" --change 0
expect "hunt --change -0.1" 2 "--change -0.1: the step must be a positive number" -- "$GRIST" hunt "$M/logreg_toy.toml" --change=-0.1
expect "hunt --seed -3" 2 "--seed -3: must not be negative" -- "$GRIST" hunt "$M/logreg_toy.toml" --seed=-3
expect "bench --seed -1" 2 "--seed -1: must not be negative" -- "$GRIST" bench "$TMP" --seed=-1

expect "a misspelt command is named with the commands" 2 "unknown command 'hnut' \(the commands: run, hunt, replay, bench, scan, fix" -- "$GRIST" hnut "$M/logreg_toy.toml"
expect "a bad option value says grist: error" 2 "^grist: error: --variant: bad not in" -- "$GRIST" hunt "$M/logreg_toy.toml" --variant bad

# --- Only regular files, each within a size a real one never reaches ---
mkfifo "$TMP/fifo"
expect "a FIFO as the model" 2 "fifo: not a regular file" -- "$GRIST" run "$TMP/fifo"
expect "a FIFO as the manifest" 2 "fifo: not a regular file \(a pipe or device cannot be read as a manifest\)" -- "$GRIST" hunt "$TMP/fifo.toml" --manifest "$TMP/fifo"
expect "a FIFO as experiments.conf" 2 "fifo: not a regular file" -- "$GRIST" hunt "$M/logreg_toy.toml" --conf "$TMP/fifo"
expect "/dev/zero as experiments.conf" 2 "/dev/zero: not a regular file" -- "$GRIST" hunt "$M/logreg_toy.toml" --conf /dev/zero
expect "a FIFO as input data" 2 "fifo.npy: not a regular file" -- bash -c "mkfifo '$TMP/fifo.npy' && '$GRIST' run '$M/mlp.onnx' --input x='$TMP/fifo.npy'"
expect "a folder as the model" 2 "is a folder, not an ONNX file" -- "$GRIST" hunt "$TMP"
expect "a FIFO as fix's witness" 2 "wfifo.json: not a regular file" -- bash -c "mkfifo '$TMP/wfifo.json' && '$GRIST' fix '$M/mlp.onnx' --witness '$TMP/wfifo.json'"
expect "a folder as the witness" 2 "is a folder, not a witness sidecar" -- "$GRIST" replay "$TMP"

# --- Output that cannot be written is an error ---
expect "run --json > /dev/full" 2 "cannot write the output: No space left on device" -- bash -c "'$GRIST' run '$M/mlp.onnx' --json > /dev/full"
expect "scan > /dev/full" 2 "cannot write the output" -- bash -c "'$GRIST' scan '$M/mlp.onnx' > /dev/full"

# --- Models: what is unsupported or unknown is refused, every name listed; the model's own batch is taken ---
for cmd in run hunt scan fix; do
  expect "$cmd lists every unsupported op and node" 2 "unsupported ops: Det \(det_1\); NonMaxSuppression \(nms_a, nms_b\)" -- "$GRIST" $cmd "$M/unsupported_ops.onnx"
done
expect "an opset newer than grist knows" 2 "opset 99 of the default \(ai.onnx\) domain is newer than the newest grist knows \([0-9]+\)" -- "$GRIST" run "$M/future_opset.onnx"
expect "hunt takes the model's fixed batch of 3" 1 "producer: Log 'log' -> 'l' \[3, 4\]" -- "$GRIST" hunt "$M/fixed_batch.onnx" -q --no-witness --max-iterations 5
expect "an allocation beyond the memory names the node and the shape" 2 "node 'big_zeros' \(ConstantOfShape\): a float32 tensor \[1048576, 1048576\] needs 4.0 TiB, more than this machine's memory" -- "$GRIST" run "$M/huge_constant.onnx"
expect "run takes a manifest where the model goes" 0 "model .*logreg_toy.onnx" -- "$GRIST" run "$M/logreg_toy.toml"
expect "scan takes a manifest where the model goes" 1 "grist scan .*logreg_toy.onnx: 2 hazards" -- "$GRIST" scan "$M/logreg_toy.toml"

# --- Nothing of the user's is replaced unless --force says so ---
echo "mine" >"$TMP/report.sarif"
expect "scan --sarif keeps an existing file" 2 "report.sarif: exists already; not overwriting it \(--force replaces it\)" -- "$GRIST" scan "$M/vae_head.onnx" --sarif "$TMP/report.sarif"
grep -qx mine "$TMP/report.sarif" && pass || fail_with "scan --sarif changed an existing file"
expect "scan --sarif --force replaces it" 1 "may fail" -- "$GRIST" scan "$M/vae_head.onnx" --sarif "$TMP/report.sarif" --force
grep -q '"version": "2.1.0"' "$TMP/report.sarif" && pass || fail_with "--force did not write the report"
expect "fix --sarif keeps an existing file, before any work" 2 "report.sarif: exists already; not overwriting it" -- "$GRIST" fix "$M/vae_head.onnx" --sarif "$TMP/report.sarif"
mkdir -p "$TMP/fixout" && echo "mine" >"$TMP/fixout/logreg_toy.fixed.onnx"
expect "fix never replaces an earlier repaired model" 0 "logreg_toy.fixed-2.onnx" -- "$GRIST" fix "$M/logreg_toy.toml" --out "$TMP/fixout" --max-iterations 50 --no-preconditions
grep -qx mine "$TMP/fixout/logreg_toy.fixed.onnx" && pass || fail_with "fix replaced an earlier repaired model"

# --- Where witnesses go is checked before the search ---
touch "$TMP/a_file"
expect "--out is a file" 2 "a_file: exists and is not a folder" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --out "$TMP/a_file"
expect "--out under a file" 2 "cannot create the witness folder" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --out "$TMP/a_file/w"
if [ "$(id -u)" != 0 ]; then
  mkdir -p "$TMP/ro" && chmod 555 "$TMP/ro"
  expect "--out not writable" 2 "ro: cannot write witnesses there" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --out "$TMP/ro"
fi

# --- Findings are never lost: printed and saved the moment they happen; Ctrl-C and SIGTERM end cleanly ---
# vae_head with --all: its Exp triggers within milliseconds, then its Div is searched for the rest of 10 minutes.
for sig in INT TERM; do
  rm -rf "$TMP/w_$sig"
  "$GRIST" hunt "$M/vae_head.onnx" --all --time-limit 10m -q --out "$TMP/w_$sig" >"$TMP/out_$sig" 2>"$TMP/err_$sig" &
  pid=$!
  for _ in $(seq 1 200); do [ -n "$(ls "$TMP/w_$sig"/*.json 2>/dev/null)" ] && break; sleep 0.05; done
  sleep 0.3
  kill -$sig $pid
  waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 $pid 2>/dev/null; then
    kill -9 $pid; fail_with "SIG$sig: the hunt did not end within 10 s"
    continue
  fi
  wait $pid
  rc=$?
  [ $rc -eq 1 ] && pass || fail_with "SIG$sig: exit $rc, want 1 (a hazard triggered before the signal)"
  grep -q "TRIGGERED (input-reached)" "$TMP/out_$sig" && pass || fail_with "SIG$sig: the finding was not printed"
  grep -q "not triggered: .*; interrupted" "$TMP/out_$sig" && pass || fail_with "SIG$sig: the interrupted search is not reported"
  grep -q "^interrupted: the search stopped early" "$TMP/out_$sig" && pass || fail_with "SIG$sig: no summary saying so"
  json=$(ls "$TMP/w_$sig"/*.json 2>/dev/null | head -1)
  expect "SIG$sig: the witness saved before the signal replays" 1 "^reproduced: Exp" -- "$GRIST" replay "$json"
  [ -z "$(ls -A "$TMP/w_$sig" | grep -v '^witness-vae_head-h2\.\(json\|npz\)$')" ] && pass \
    || fail_with "SIG$sig: files left beside the witness: $(ls -A "$TMP/w_$sig")"
done
# JSON Lines as the hunt goes: the hazards, each outcome, the summary; every line parses on its own.
expect "--json writes one JSON object per line" 1 "" -- bash -c "'$GRIST' hunt '$M/logreg_toy.toml' --json -q --no-witness > '$TMP/lines'"
[ "$(wc -l <"$TMP/lines")" -eq 3 ] && pass || fail_with "--json: $(wc -l <"$TMP/lines") lines, want 3"
/usr/bin/python3 -c "
import json, sys
events = [json.loads(l)['event'] for l in open('$TMP/lines')]
sys.exit(0 if events == ['hazards', 'outcome', 'summary'] else 1)" && pass || fail_with "--json: the lines are not hazards, outcome, summary"
# Progress in a log (stderr not a terminal): a line per hazard started and per finding.
"$GRIST" hunt "$M/logreg_toy.toml" --all --no-witness >/dev/null 2>"$TMP/progress"
grep -q "^grist hunt: \[1/2\] hunting #1 Log '/Log'" "$TMP/progress" && pass || fail_with "no line for the hazard started: $(head -3 "$TMP/progress")"
grep -q "^grist hunt: #1 Log '/Log' (Log input <= 0) TRIGGERED (input-reached) at iteration 235" "$TMP/progress" && pass \
  || fail_with "no line for the finding: $(head -5 "$TMP/progress")"

# --- The witness loads in PyTorch exactly as the README says ---
json=$(ls "$TMP/w_INT"/*.json | head -1)
/usr/bin/python3 - "${json%.json}.npz" <<'PY' && pass || fail_with "the README's PyTorch command does not load the witness"
import sys, numpy, torch
with open(sys.argv[1], "rb") as f:
    tensors = {k: torch.from_numpy(v) for k, v in numpy.load(f).items()}
assert tensors and all(isinstance(t, torch.Tensor) for t in tensors.values()), tensors
assert "input:x" in tensors and tensors["input:x"].dtype == torch.float32, list(tensors)
PY

# --- A picture for people who would rather look: --dot on hunt, run and scan ---
expect "hunt --dot" 1 "" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --no-witness --dot "$TMP/hunt.dot"
expect "run --dot" 1 "" -- "$GRIST" run "$M/fixed_batch.onnx" --range=-1,1 --dot "$TMP/run.dot"
expect "scan --dot" 1 "" -- "$GRIST" scan "$M/vae_head.onnx" --dot "$TMP/scan.dot"
for d in hunt run scan; do
  head -1 "$TMP/$d.dot" | grep -qx "digraph grist {" && tail -1 "$TMP/$d.dot" | grep -qx "}" \
    && grep -q "color=red" "$TMP/$d.dot" && pass || fail_with "$d --dot: not a marked Graphviz digraph"
done
expect "--dot never replaces a file" 2 "hunt.dot: already exists" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --no-witness --dot "$TMP/hunt.dot"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
