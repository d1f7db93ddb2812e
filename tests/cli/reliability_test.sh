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
passed=0
failed=0

# expect NAME STATUS PATTERN -- COMMAND...: the command exits with STATUS and its output matches PATTERN.
# Every command runs under a 60 s timeout, so a hang fails the test instead of blocking it.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  local out rc
  out=$(timeout 60 "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$status" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $name (exit $rc, want $status; want output matching /$pattern/)"
    echo "$out" | head -20 | sed 's/^/    /'
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}
pass() { passed=$((passed + 1)); }
fail_with() { echo "FAIL: $1"; failed=$((failed + 1)); }

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

# --- Only regular files, each within a size a real one never reaches ---
mkfifo "$TMP/fifo"
expect "a FIFO as the model" 2 "fifo: not a regular file" -- "$GRIST" run "$TMP/fifo"
expect "a FIFO as the manifest" 2 "fifo: not a regular file \(a pipe or device cannot be read as a manifest\)" -- "$GRIST" hunt "$TMP/fifo.toml" --manifest "$TMP/fifo"
expect "a FIFO as experiments.conf" 2 "fifo: not a regular file" -- "$GRIST" hunt "$M/logreg_toy.toml" --conf "$TMP/fifo"
expect "/dev/zero as experiments.conf" 2 "/dev/zero: not a regular file" -- "$GRIST" hunt "$M/logreg_toy.toml" --conf /dev/zero
expect "a FIFO as input data" 2 "fifo.npy: not a regular file" -- bash -c "mkfifo '$TMP/fifo.npy' && '$GRIST' run '$M/mlp.onnx' --input x='$TMP/fifo.npy'"
expect "a folder as the model" 2 "is a folder, not an ONNX file" -- "$GRIST" hunt "$TMP"
expect "a folder as the witness" 2 "is a folder, not a witness sidecar" -- "$GRIST" replay "$TMP"

# --- Output that cannot be written is an error ---
expect "run --json > /dev/full" 2 "cannot write the output: No space left on device" -- bash -c "'$GRIST' run '$M/mlp.onnx' --json > /dev/full"
expect "scan > /dev/full" 2 "cannot write the output" -- bash -c "'$GRIST' scan '$M/mlp.onnx' > /dev/full"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
