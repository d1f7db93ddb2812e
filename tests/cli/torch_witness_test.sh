#!/bin/bash
# Class-1 witnesses of a sample of zoo subjects, replayed by PyTorch on the subject's own module (zoo/ID/subject.py,
# bench/torch_witness_check.py): each must fail there too. The sample covers a monitored forward (4, 10, 13, 2b,
# 23), a loss backward (5) and a witness found under flush-to-zero (15, a TensorFlow program: PyTorch checks it
# with set_flush_denormal); the inputs alone, on iteration budgets, so the hunts do not depend on the machine's speed.
# Needs the zoo exported (/usr/bin/python3 zoo/zoo_export.py) and Debian's python3-torch.
# Usage: torch_witness_test.sh GRIST SOURCE_DIR
set -u
GRIST=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null || fail "/usr/bin/python3 cannot import torch (Debian's python3-torch)"
held=0
for id in 4 5 10 13 2b 23 15; do
  dir="$SRC/zoo/$id"
  model=$(sed -n 's/^model = "\(.*\)"/\1/p' "$dir/manifest.toml")
  [ -f "$dir/$model" ] || fail "$dir/$model is missing: run /usr/bin/python3 zoo/zoo_export.py"
  "$GRIST" hunt "$dir/manifest.toml" --reach inputs --max-iterations 2000 --time-limit 10m --out "$TMP/$id" -q \
    >"$TMP/$id.out" 2>&1
  [ $? -eq 1 ] || fail "subject $id: the hunt did not trigger within 2000 iterations: $(tail -3 "$TMP/$id.out")"
  for w in "$TMP/$id"/*.json; do
    grep -q '"class": *"input-reached"' "$w" || fail "subject $id: $w is not input-reached"
  done
  out=$(cd "$SRC" && /usr/bin/python3 bench/torch_witness_check.py "zoo/$id" "$TMP/$id"/*.json 2>&1)
  status=$?
  echo "$id: $(echo "$out" | head -1 | sed 's#^.*\.json: ##')"
  [ $status -eq 0 ] || fail "subject $id: PyTorch does not agree: $out"
  held=$((held + 1))
done
[ $held -eq 7 ] || fail "$held of 7 subjects checked"
echo "PASS: 7 of 7 subjects' witnesses fail in PyTorch too"
