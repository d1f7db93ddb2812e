#!/usr/bin/env bash
# `grist init` as a user meets it: the skeleton it writes for a model validates and a hunt with it starts
# (exit 0 or 1), a file already there is never replaced (exit 2), --out places it, the model is named relative
# to the manifest. Usage: init_test.sh GRIST_BINARY SOURCE_DIR
set -u
GRIST=$1
SRC=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

M=$SRC/tests/models
cp "$M/logreg_toy.onnx" "$TMP/toy.onnx"
expect "init writes the skeleton beside the model" 0 "wrote .*toy.toml: inputs .*; loss " -- "$GRIST" init "$TMP/toy.onnx"
expect "the skeleton names the model relative to itself" 0 '^model = "toy.onnx"$' -- cat "$TMP/toy.toml"
expect "it says what it guessed" 0 "# guess: " -- cat "$TMP/toy.toml"
cp "$TMP/toy.toml" "$TMP/toy.before"
expect "init never replaces a file" 2 "toy.toml: already exists; refusing to overwrite it" -- "$GRIST" init "$TMP/toy.onnx"
expect "the refused file is left as it was" 0 "" -- cmp "$TMP/toy.toml" "$TMP/toy.before"
mkdir "$TMP/sub"
expect "init --out elsewhere" 0 "wrote .*sub/m.toml" -- "$GRIST" init "$TMP/toy.onnx" --out "$TMP/sub/m.toml"
expect "the model path is relative from there" 0 '^model = "../toy.onnx"$' -- cat "$TMP/sub/m.toml"
expect "init of a missing model" 2 "nonexistent.onnx: cannot open" -- "$GRIST" init "$TMP/nonexistent.onnx"

# A hunt starts from each skeleton: a few iterations of every hazard, exit 0 (clean) or 1 (found).
hunt_starts() {
  local model=$1 name=$2
  local out="$TMP/$name.toml"
  if ! "$GRIST" init "$model" --out "$out" >"$TMP/init.log" 2>&1; then
    fail_with "init $model: $(cat "$TMP/init.log")"
    return
  fi
  timeout 120 "$GRIST" hunt "$out" -q --no-witness --no-scan --max-iterations 2 --time-limit 5s >"$TMP/hunt.log" 2>&1
  local rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then pass; else fail_with "hunt with the skeleton of $model: exit $rc: $(head -3 "$TMP/hunt.log")"; fi
}
for m in mlp cnn logreg_toy classifier_loss cross_entropy vae_head crafted_training_toy; do
  hunt_starts "$M/$m.onnx" "tests-$m"
done
# The zoo's models where they are exported (zoo/zoo_export.py): a spread of kinds here (MLP, CNN, RNN, RBM, VAE,
# TF loops), every one with GRIST_INIT_ALL_ZOO=1. (tests/config/manifest_skeleton_test.cpp reads back and
# batches every zoo skeleton.)
zoo_ids="1 2a 10 15 20 35a 40 44 50 63"
[ "${GRIST_INIT_ALL_ZOO:-0}" = 1 ] && zoo_ids=$(ls "$SRC/zoo")
for id in $zoo_ids; do
  model=$SRC/zoo/$id/model.onnx
  [ -f "$model" ] || continue
  hunt_starts "$model" "zoo-$id"
done

echo "init_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
