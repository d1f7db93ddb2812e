#!/usr/bin/env bash
# The grist command as a user meets it: exit statuses (0 clean, 1 NaN/Inf found, 2 error), one clear error
# line for bad input, witnesses never overwritten, replay. Usage: cli_test.sh GRIST_BINARY SOURCE_DIR
set -u
GRIST=$1
SRC=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

M=$SRC/tests/models
expect "help explains the commands" 0 "hunt" -- "$GRIST" --help
expect "no subcommand is a usage error" 2 "subcommand" -- "$GRIST"
expect "run help lists --input" 0 "--input" -- "$GRIST" run --help
expect "missing model file" 2 "error: .*nonexistent.onnx: cannot open" -- "$GRIST" run "$TMP/nonexistent.onnx"
# A name or path holding a newline stays inside its one error line (written \n), so it cannot forge a second one.
NL_MODEL="$TMP/bad
grist: error: name.onnx"
expect "a newline in a path is escaped in the error" 2 "^grist: error: .*bad\\\\ngrist: error: name.onnx: cannot open" -- "$GRIST" run "$NL_MODEL"
expect "that error is one line" 0 "^1$" -- bash -c '"$1" run "$2" 2>&1 | wc -l' _ "$GRIST" "$NL_MODEL"
expect "a folder given as the model" 2 "is a folder, not an ONNX file" -- "$GRIST" scan "$TMP"
mkfifo "$TMP/pipe.onnx"
expect "a pipe given as the model (no hang)" 2 "not a regular file" -- timeout 10 "$GRIST" run "$TMP/pipe.onnx"
echo "not a model" >"$TMP/notes.onnx"
expect "not an ONNX file" 2 "notes.onnx: not an ONNX model" -- "$GRIST" run "$TMP/notes.onnx"
expect "unsupported ops listed at once with node names" 2 "NonMaxSuppression \(nms_a, nms_b\).*Det \(det_1\)|Det \(det_1\).*NonMaxSuppression \(nms_a, nms_b\)" -- "$GRIST" run "$M/unsupported_ops.onnx"
expect "a dimension too large for memory" 2 "would exceed|too large" -- "$GRIST" run "$M/mlp.onnx" --dim batch=100000000000
expect "data of the wrong dtype" 2 "expects float32 data, got int64" -- "$GRIST" run "$M/mlp.onnx" --input "x=$SRC/tests/data/fixtures/int64_scalar.npy"
expect "data of the wrong shape" 2 "expects dimension 1 to be 20" -- "$GRIST" run "$M/mlp.onnx" --input "x=$SRC/tests/data/fixtures/float32_2x3.npy"
expect "an input the model does not have" 2 "no input named 'nope'" -- "$GRIST" run "$M/mlp.onnx" --input "nope=$SRC/tests/data/fixtures/float32_2x3.npy"
expect "a finite run exits 0" 0 "every value finite" -- "$GRIST" run "$M/mlp.onnx" --batch 3
expect "log(softmax) on wide logits names Log" 1 "node '/Log' \(Log\)" -- "$GRIST" run "$SRC/examples/log_softmax.onnx" --range=-300,300 --batch 8 --seed 3
expect "JSON output" 0 '"forward": \{' -- "$GRIST" run "$M/mlp.onnx" --json
expect "backward scan" 0 "backward from 'y': every value finite" -- "$GRIST" run "$M/mlp.onnx" --backward y
# run --output: the outputs (and with --dump every value) in an .npz numpy reads, never over a file.
expect "run --output writes the outputs" 0 "wrote .*run.npz: 1 arrays \(outputs\)" -- "$GRIST" run "$M/mlp.onnx" --batch 3 --output "$TMP/run.npz"
expect "numpy reads the outputs back" 0 "^y \(3, 5\) float32$" -- /usr/bin/python3 -c "import numpy as np; d = np.load('$TMP/run.npz'); [print(k, d[k].shape, d[k].dtype) for k in d.files]"
expect "run --output never overwrites a file" 2 "run.npz: already exists; refusing to overwrite it" -- "$GRIST" run "$M/mlp.onnx" --output "$TMP/run.npz"
expect "the refused file is left as it was" 0 "^y$" -- /usr/bin/python3 -c "import numpy as np; print(*np.load('$TMP/run.npz').files)"
expect "run --dump needs --output" 2 "--dump needs --output" -- "$GRIST" run "$M/mlp.onnx" --dump
expect "run --output into a missing folder" 2 "--output .*nofolder/r.npz: .*nofolder is not a folder" -- "$GRIST" run "$M/mlp.onnx" --output "$TMP/nofolder/r.npz"
expect "run --dump escapes '/' in value names" 0 "wrote .*dump.npz: 4 arrays \(inputs, every node output\), 2 names with %XX escapes" -- "$GRIST" run "$M/mlp.onnx" --batch 3 --dump --output "$TMP/dump.npz"
expect "numpy reads the dump, unquote gives the ONNX names" 0 "^x /fc1/Gemm_output_0 /Relu_output_0 y$" -- /usr/bin/python3 -c "import numpy as np, urllib.parse as u; print(*[u.unquote(k) for k in np.load('$TMP/dump.npz').files])"
expect "run --output of a NaN still writes it, exit 1" 1 "wrote .*nan.npz" -- "$GRIST" run "$SRC/examples/log_softmax.onnx" --range=-300,300 --batch 8 --seed 3 --output "$TMP/nan.npz"
expect "run --output --json names the file" 0 '"output_file": \{' -- "$GRIST" run "$M/mlp.onnx" --json --output "$TMP/run-json.npz"
expect "no temporary file is left beside the outputs" 0 "^0$" -- bash -c "ls '$TMP' | grep -c '\.tmp-'; true"

# Half precision: a float16 model runs as is; a float32 model under --precision fp16 overflows where it must.
expect "a float16 model runs, its outputs written as float16" 0 "wrote .*half.npz" -- "$GRIST" run "$M/half_mlp.onnx" --batch 2 --output "$TMP/half.npz"
expect "numpy reads them as float16" 0 "^float16$" -- /usr/bin/python3 -c "import numpy as np; print(np.load('$TMP/half.npz')['y'].dtype)"
expect "exp(12x) is finite in float32" 0 "every value finite" -- "$GRIST" run "$M/fp16_exp_overflow.onnx" --range 1,1.05
expect "exp(12x) overflows under --precision fp16" 1 "node 'exp' \(Exp\)" -- "$GRIST" run "$M/fp16_exp_overflow.onnx" --range 1,1.05 --precision fp16
expect "exp(12x) is finite under --precision bf16" 0 "every value finite" -- "$GRIST" run "$M/fp16_exp_overflow.onnx" --range 1,1.05 --precision bf16
expect "a norm's sum of squares is finite in float32" 0 "every value finite" -- "$GRIST" run "$M/fp16_norm_overflow.onnx" --range 1,1.05 --precision fp32
expect "... and overflows under --precision fp16" 1 "node 'sum_of_squares' \(ReduceSumSquare\)" -- "$GRIST" run "$M/fp16_norm_overflow.onnx" --range 1,1.05 --precision fp16
expect "autocast runs MatMul in float16: it overflows under amp-fp16" 1 "node 'matmul' \(MatMul\)" -- "$GRIST" run "$M/amp_matmul_overflow.onnx" --range 1,1.05 --precision amp-fp16
expect "... not in float32" 0 "every value finite" -- "$GRIST" run "$M/amp_matmul_overflow.onnx" --range 1,1.05
expect "... nor under amp-bf16" 0 "every value finite" -- "$GRIST" run "$M/amp_matmul_overflow.onnx" --range 1,1.05 --precision amp-bf16
expect "exp after a matmul overflows under fp16" 1 "node 'exp' \(Exp\)" -- "$GRIST" run "$M/amp_exp_in_float32.onnx" --range 1,1.05 --precision fp16
expect "... but autocast keeps Exp in float32" 0 "every value finite" -- "$GRIST" run "$M/amp_exp_in_float32.onnx" --range 1,1.05 --precision amp-fp16
expect "an unknown precision is a usage error" 2 "precision" -- "$GRIST" run "$M/mlp.onnx" --precision fp8
printf 'model = "%s"\n[numerics]\nprecision = "fp16"\n' "$M/fp16_exp_overflow.onnx" >"$TMP/fp16.toml"
expect "[numerics] precision in a manifest" 1 "node 'exp' \(Exp\)" -- "$GRIST" run "$TMP/fp16.toml" --range 1,1.05
expect "--precision overrides the manifest's" 0 "every value finite" -- "$GRIST" run "$TMP/fp16.toml" --range 1,1.05 --precision fp32
printf 'model = "%s"\n[numerics]\nprecision = "fp12"\n' "$M/fp16_exp_overflow.onnx" >"$TMP/fp12.toml"
expect "a manifest's unknown precision is named" 2 "numerics.precision.*fp12" -- "$GRIST" run "$TMP/fp12.toml"
expect "hunt --precision fp16: exp overflows past 11.09" 1 "TRIGGERED \(input-reached\) at iteration 1 after" -- "$GRIST" hunt "$M/fp16_exp_overflow.onnx" --precision fp16 -q --max-iterations 10 --no-witness
expect "... in float32 those iterations do not reach 88.7" 0 "not triggered: 10 iterations" -- "$GRIST" hunt "$M/fp16_exp_overflow.onnx" -q --max-iterations 10 --no-witness
expect "hunt --precision fp16 names the rounding that made the inf" 1 "rounding: finite in float32: the rounding of its result to float16 made it" -- "$GRIST" hunt "$M/fp16_exp_overflow.onnx" --precision fp16 -q --max-iterations 10 --no-witness
expect "scan --precision fp16: a norm's sum of squares may overflow float16 only" 1 "safe in float32, may fail in float16" -- "$GRIST" scan "$M/fp16_norm_overflow.onnx" --precision fp16
expect "... with float16's exp danger zone" 1 "≥ 11.09 = ln 65504 \(float16\)" -- "$GRIST" scan "$M/fp16_exp_overflow.onnx" --precision fp16
expect "scan: an unknown precision is a usage error" 2 "precision" -- "$GRIST" scan "$M/mlp.onnx" --precision fp8

# ONNX external data (weights beside the model), read from the model's folder and never from outside it.
X=$TMP/external
expect "external-data models are made" 0 "" -- /usr/bin/python3 "$SRC/tests/models/make_external_data.py" "$X"
expect "run a model with external weights" 0 "wrote .*ext.npz" -- "$GRIST" run "$X/ok/model.onnx" --input "$X/ok/input.npz" --output "$TMP/ext.npz" --dump
expect "its outputs match numpy's" 0 "^match$" -- /usr/bin/python3 -c "import numpy as np; a = np.load('$TMP/ext.npz'); e = np.load('$X/ok/expected.npz'); print('match' if np.allclose(a['y'], e['y'], rtol=1e-6, atol=1e-6) and '%2Ffc%2FMatMul_output_0' in a.files else a.files)"
expect "a location through a symlink inside the folder" 0 "every value finite" -- "$GRIST" run "$X/ok/linked.onnx"
expect "from another working directory" 0 "every value finite" -- bash -c "cd / && '$(realpath "$GRIST")' run '$X/ok/model.onnx'"
expect "external data: an absolute location" 2 "absolute/model.onnx: tensor 'W' external data '/.*weights.bin': an absolute path" -- "$GRIST" run "$X/absolute/model.onnx"
expect "external data: a location leaving the folder" 2 "tensor 'W' external data '../../ok/weights.bin': '..' leads out of the model's folder" -- "$GRIST" run "$X/dotdot/sub/model.onnx"
expect "external data: a symlink leading outside" 2 "tensor 'W' external data 'weights.bin': resolves to .*ok/weights.bin, outside the model's folder" -- "$GRIST" scan "$X/symlink/model.onnx"
expect "external data: a missing file" 2 "missing/model.onnx: tensor 'W' external data 'weights.bin' \(.*missing/weights.bin\): cannot open file: No such file" -- "$GRIST" hunt "$X/missing/model.onnx" -q
expect "external data: past the end of the file" 2 "tensor 'scale' external data 'weights.bin': bytes 60 to 68 lie beyond the end of the file \(64 bytes\)" -- "$GRIST" run "$X/short/model.onnx"
expect "external data: a length the shape does not need" 2 "tensor 'W' external data 'weights.bin': length 44 bytes, but its shape \[4, 3\] of float32 needs 48" -- "$GRIST" run "$X/length/model.onnx"

expect "scan under the default ranges: exp may fail" 1 "may fail .*Exp" -- "$GRIST" scan "$M/vae_head.onnx"
expect "scan with the user's ranges proves it safe" 0 "x +\[0, 1\] \(your statement: --assume\)" -- "$GRIST" scan "$M/vae_head.onnx" --assume x=0,1 --assume fc.weight=-0.01,0.01 --ranum-weights
expect "scan --sarif writes the report" 1 "may fail" -- "$GRIST" scan "$M/vae_head.onnx" --sarif "$TMP/scan.sarif"
expect "scan --sarif never overwrites a file" 2 "scan.sarif: exists already; not overwriting it" -- "$GRIST" scan "$M/vae_head.onnx" --sarif "$TMP/scan.sarif"
expect "--assume of a value the model lacks" 2 "--assume y: the model has no input or weight of that name \(its inputs: x\)" -- "$GRIST" scan "$M/vae_head.onnx" --assume y=0,1
expect "--assume without a range" 2 "--assume x=1: expected NAME=LO,HI" -- "$GRIST" scan "$M/vae_head.onnx" --assume x=1
expect "--assume with LO > HI" 2 "the range \[2, 1\] is empty" -- "$GRIST" scan "$M/vae_head.onnx" --assume x=2,1

expect "a model without hazards: nothing to hunt" 0 "nothing to hunt" -- "$GRIST" hunt "$M/mlp.onnx" -q
expect "hunt of a model with unsupported ops is an error" 2 "unsupported_ops.onnx: unsupported ops: Det \(det_1\); NonMaxSuppression \(nms_a, nms_b\)" -- "$GRIST" hunt "$M/unsupported_ops.onnx" -q
expect "hunt the bug-26 toy" 1 "TRIGGERED \(input-reached\) at iteration 235" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --out "$TMP/w"
expect "hunt --timings: the start-up's breakdown on stderr" 1 "^timings: import [0-9.]+ s, data [0-9.]+ s, interval scan [0-9.]+ s, other set-up [0-9.]+ s, searches [0-9.]+ s; [0-9.]+ s since the process started" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --no-witness --timings
expect "hunt again: a new witness, the first kept" 1 "witness-logreg_toy-h1-2.npz" -- "$GRIST" hunt "$M/logreg_toy.toml" -q --out "$TMP/w"
expect "replay reproduces the producer" 1 "^reproduced: Log" -- "$GRIST" replay "$TMP/w/witness-logreg_toy-h1.json"
expect "replay of a missing witness" 2 "cannot open" -- "$GRIST" replay "$TMP/w/none.json"
cat >"$TMP/bad_input.toml" <<TOML
model = "$M/logreg_toy.onnx"
[inputs.nope]
role = "data"
TOML
expect "manifest naming an input the model lacks" 2 "inputs.nope. names no input of the model" -- "$GRIST" hunt "$TMP/bad_input.toml" -q
cat >"$TMP/bad_key.toml" <<TOML
model = "$M/logreg_toy.onnx"
[search]
chnage = 0.2
TOML
expect "a misspelt key is named" 2 "chnage" -- "$GRIST" hunt "$TMP/bad_key.toml" -q
cat >"$TMP/bad_shape.toml" <<TOML
model = "$M/logreg_toy.onnx"
loss = "cost"
[inputs.x]
role = "data"
values = [[1.0, 2.0, 3.0]]
TOML
expect "data whose rows do not fit the input" 2 "a row of its source has 3 values" -- "$GRIST" hunt "$TMP/bad_shape.toml" -q
cat >"$TMP/vector_loss.toml" <<TOML
model = "$M/classifier_loss.onnx"
loss = "probs"
[inputs.y]
role = "label"
values = [0, 1]
[batch]
size = 2
[train]
optimizer = "sgd"
TOML
expect "a loss that is not a scalar" 2 "must be a float scalar" -- "$GRIST" hunt "$TMP/vector_loss.toml" -q
printf '[parameter]\nchange=abc\n' >"$TMP/experiments.conf"
expect "experiments.conf with a bad value names file, line and key" 2 "experiments.conf:2: key 'change'" -- "$GRIST" hunt "$M/logreg_toy.toml" --conf "$TMP/experiments.conf" -q

# Exit 2 with one line for every kind of bad command line or file, per subcommand.
F=$SRC/tests/data/fixtures
expect "run: no model" 2 "model is required" -- "$GRIST" run
expect "run: --range LO >= HI" 2 "--range expects LO,HI with LO < HI" -- "$GRIST" run "$M/mlp.onnx" --range=1,0
expect "run: --int-range LO >= HI" 2 "--int-range expects LO,HI with LO < HI" -- "$GRIST" run "$M/mlp.onnx" --int-range=5,5
expect "run: --dim without a size" 2 "--dim batch=x: the size must be a non-negative integer" -- "$GRIST" run "$M/mlp.onnx" --dim batch=x
expect "run: --dim without a name" 2 "--dim expects NAME=SIZE, got '=3'" -- "$GRIST" run "$M/mlp.onnx" --dim =3
expect "run: --dim negative" 2 "--dim batch=-2: the size must be a non-negative integer" -- "$GRIST" run "$M/mlp.onnx" --dim batch=-2
expect "run: --backward from a value the model lacks" 2 "--backward: the model has no value named 'nope'" -- "$GRIST" run "$M/mlp.onnx" --backward nope
expect "run: a file of named tensors the model lacks" 2 "savez.npz: holds '.*', but the model has no input of that name" -- "$GRIST" run "$M/mlp.onnx" --input "$F/savez.npz"
expect "run: NAME= a file of several tensors, none so named" 2 "savez.npz: holds 3 tensors and none is named 'x'" -- "$GRIST" run "$M/mlp.onnx" --input "x=$F/savez.npz"
expect "run: a missing data file" 2 "nonexistent.npy: cannot open file" -- "$GRIST" run "$M/mlp.onnx" --input "x=$TMP/nonexistent.npy"
expect "run: an unknown data file type" 2 "inputs.csv: unknown tensor file type" -- "$GRIST" run "$M/mlp.onnx" --input "x=$TMP/inputs.csv"
expect "run: an unknown --dropout" 2 "--dropout: maybe not in" -- "$GRIST" run "$M/mlp.onnx" --dropout maybe
expect "scan: neither model nor manifest" 2 "scan needs MODEL.onnx or --manifest" -- "$GRIST" scan
expect "scan: a missing manifest" 2 "nonexistent.toml: cannot open file" -- "$GRIST" scan --manifest "$TMP/nonexistent.toml"
expect "scan: a missing model" 2 "nonexistent.onnx: cannot open" -- "$GRIST" scan "$TMP/nonexistent.onnx"
expect "scan: --assume with words for numbers" 2 "--assume x=a,b: LO and HI must be numbers" -- "$GRIST" scan "$M/mlp.onnx" --assume x=a,b
expect "scan: the manifest's model" 1 "grist scan .*logreg_toy.onnx: 2 hazards" -- "$GRIST" scan --manifest "$M/logreg_toy.toml"
expect "scan: a model with ops grist lacks is an error" 2 "unsupported_ops.onnx: unsupported ops: Det \(det_1\); NonMaxSuppression \(nms_a, nms_b\)" -- "$GRIST" scan "$M/unsupported_ops.onnx"
expect "hunt: a missing model" 2 "nonexistent.onnx: cannot open file" -- "$GRIST" hunt "$TMP/nonexistent.onnx"
expect "hunt: --time-limit 0" 2 "--time-limit 0: expected a positive time" -- "$GRIST" hunt "$M/logreg_toy.toml" --time-limit 0
expect "hunt: --target names no hazard" 2 "--target '/Nope' names no hazard of the model \(hazards: #1 Log '/Log'" -- "$GRIST" hunt "$M/logreg_toy.toml" --target /Nope -q
expect "hunt: a missing experiments.conf" 2 "nonexistent.conf: cannot open file" -- "$GRIST" hunt "$M/logreg_toy.toml" --conf "$TMP/nonexistent.conf"
expect "hunt: a missing --manifest" 2 "nonexistent.toml: cannot open file" -- "$GRIST" hunt "$M/mlp.onnx" --manifest "$TMP/nonexistent.toml"
# train.checkpoint: scan and run resume from its weights, a bad one is an error, fix refuses it (not yet).
sed -e "s|^model = .*|model = \"$M/logreg_toy.onnx\"|" -e 's|^batch = "monitored"|&\ncheckpoint = "ckpt.npz"|' "$M/logreg_toy.toml" >"$TMP/ckpt.toml"
/usr/bin/python3 -c "import numpy as np; np.savez('$TMP/ckpt.npz', **{'weight:W': np.zeros((2, 1), np.float32), 'optimizer.steps': np.int64(0)})"
expect "scan resumes from the manifest's checkpoint" 1 "2 hazards" -- "$GRIST" scan "$TMP/ckpt.toml"
expect "run resumes from the manifest's checkpoint" 0 "every value finite" -- "$GRIST" run "$TMP/ckpt.toml"
expect "fix refuses a checkpoint for now" 2 "train.checkpoint is not supported by grist fix yet" -- "$GRIST" fix "$TMP/ckpt.toml"
/usr/bin/python3 -c "import numpy as np; np.savez('$TMP/ckpt.npz', **{'weight:W': np.zeros((2,), np.float32)})"
expect "a checkpoint that does not fit is an error" 2 "ckpt.npz: weight:W is float32 \[2\], but the model's is float32 \[2, 1\]" -- "$GRIST" hunt "$TMP/ckpt.toml" -q --no-witness
expect "hunt: --weights-after beyond 1" 2 "--weights-after" -- "$GRIST" hunt "$M/logreg_toy.toml" --weights-after 2
expect "replay: no witness" 2 "witness is required" -- "$GRIST" replay
echo '{"a": 1}' >"$TMP/other.json"
expect "replay: JSON that is not a witness" 2 "other.json: not a grist witness" -- "$GRIST" replay "$TMP/other.json"
echo 'garbage' >"$TMP/garbage.json"
expect "replay: not JSON" 2 "garbage.json: not a grist witness \(invalid JSON" -- "$GRIST" replay "$TMP/garbage.json"
# Replay against the model it was found on, then against a changed model, then with the model gone.
mkdir -p "$TMP/moved"
cp "$M/logreg_toy.onnx" "$TMP/moved/toy.onnx"
sed "s|^model = .*|model = \"$TMP/moved/toy.onnx\"|" "$M/logreg_toy.toml" >"$TMP/moved/toy.toml"
expect "hunt a copy of the toy" 1 "witness-toy-h1.npz" -- "$GRIST" hunt "$TMP/moved/toy.toml" -q --out "$TMP/moved/w"
expect "replay on the same model" 1 "^reproduced: Log '/Log'" -- "$GRIST" replay "$TMP/moved/w/witness-toy-h1.json"
sed 's/"pass": "monitored forward"/"pass": "sideways"/' "$TMP/moved/w/witness-toy-h1.json" >"$TMP/moved/w/bad-pass.json"
expect "replay: an unknown pass" 2 "bad-pass.json: unknown pass 'sideways'" -- "$GRIST" replay "$TMP/moved/w/bad-pass.json"
grep -v '"rng_state"' "$TMP/moved/w/witness-toy-h1.json" >"$TMP/moved/w/no-rng.json"
expect "replay: a field missing" 2 "no-rng.json: a field is missing or of the wrong type: .*rng_state" -- "$GRIST" replay "$TMP/moved/w/no-rng.json"
sed 's/"npz": "witness-toy-h1.npz"/"npz": "gone.npz"/' "$TMP/moved/w/witness-toy-h1.json" >"$TMP/moved/w/no-npz.json"
expect "replay: its arrays gone" 2 "gone.npz: cannot open" -- "$GRIST" replay "$TMP/moved/w/no-npz.json"
printf 'x' >>"$TMP/moved/toy.onnx"
expect "replay on a changed model is refused" 2 "toy.onnx has changed since the witness was saved \(SHA-256 differs\)" -- "$GRIST" replay "$TMP/moved/w/witness-toy-h1.json"
rm "$TMP/moved/toy.onnx"
expect "replay with the model gone" 2 "the model it was found on is gone: .*toy.onnx: cannot open file" -- "$GRIST" replay "$TMP/moved/w/witness-toy-h1.json"

# grist bench on a zoo of one subject (the logistic-regression toy), by iteration budget.
mkdir -p "$TMP/zoo/toy"
sed "s|^model = .*|model = \"$M/logreg_toy.onnx\"|" "$M/logreg_toy.toml" >"$TMP/zoo/toy/manifest.toml"
cp "$TMP/zoo/toy/manifest.toml" "$TMP/toy_manifest.toml"
printf 'op = "Log"\n' >>"$TMP/zoo/toy/manifest.toml"
expect "bench: every run triggers on the expected op" 0 "toy +Log +2/2 .* Log '/Log' \(monitored forward\)" -- "$GRIST" bench "$TMP/zoo" --runs 2 --max-iterations 1000 -q --out "$TMP/bench"
expect "bench: the same second gets new result files" 0 "results: .*bench-[0-9-]+\.\{csv" -- "$GRIST" bench "$TMP/zoo" --runs 1 --max-iterations 1000 -q --out "$TMP/bench"
expect "bench: result files never overwritten (one set per run)" 0 "^2$" -- bash -c "ls '$TMP/bench'/*.csv | wc -l"
# A campaign in shards (docs/CAMPAIGNS.md): two shards merged give the unsharded run's table and files.
B="--runs 3 --max-iterations 1000 -q"
expect "bench --shard: a shard writes its file" 0 "^shard: .*bench-shard-1-of-2.json" -- "$GRIST" bench "$TMP/zoo" $B --shard 1/2 --out "$TMP/campaign/shards"
expect "bench --shard: never replaces a shard file" 2 "bench-shard-1-of-2.json: exists already; not overwriting it" -- "$GRIST" bench "$TMP/zoo" $B --shard 1/2 --out "$TMP/campaign/shards"
expect "bench merge: a missing shard" 2 "missing runs \(1\): toy run 2 \(of shard 2/2: not given, or it did not finish\)" -- "$GRIST" bench merge "$TMP/campaign/shards" --out "$TMP/campaign"
expect "bench --shard: another campaign's shard" 0 "shard 2/2: 1 of the 2 runs" -- "$GRIST" bench "$TMP/zoo" --runs 2 --max-iterations 1000 -q --shard 2/2 --out "$TMP/campaign/other"
expect "bench merge: shards of different options" 2 "are not shards of one campaign: runs 3 against 2" -- "$GRIST" bench merge "$TMP/campaign/shards" "$TMP/campaign/other" --out "$TMP/campaign"
expect "bench --shard: the second shard" 0 "shard 2/2: 1 of the 3 runs" -- "$GRIST" bench "$TMP/zoo" $B --shard 2/2 --out "$TMP/campaign/shards"
expect "bench merge: the shards joined" 0 "toy +Log +3/3 .* Log '/Log' \(monitored forward\)" -- "$GRIST" bench merge "$TMP/campaign/shards" --out "$TMP/campaign"
expect "bench merge: the merged files" 0 "" -- test -s "$TMP/campaign/bench-merged.md" -a -s "$TMP/campaign/bench-merged.csv"
expect "bench merge: never replaces the merged files" 2 "bench-merged.csv: exists already" -- "$GRIST" bench merge "$TMP/campaign/shards" --out "$TMP/campaign"
expect "bench: the unsharded run of the same campaign" 0 "toy +Log +3/3" -- "$GRIST" bench "$TMP/zoo" $B --out "$TMP/campaign/whole"
# Everything but the seconds: the mean and median columns of the table, the JSON's seconds.
cat >"$TMP/same_but_seconds.sh" <<'EOS'
strip_md() { sed -E 's/\| [0-9]+\.[0-9]{4} \| [0-9]+\.[0-9]{4} \|/| - | - |/; s/grist [0-9.]+ s/grist - s/g' "$1"; }
strip_json() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [r.pop("seconds") for r in d]; print(json.dumps(d))' "$1"; }
diff <(strip_md "$1.md") <(strip_md "$2".md) && diff <(strip_json "$1.json") <(strip_json "$2".json)
EOS
expect "bench merge: the unsharded run's table and JSON but for the seconds" 0 "" -- bash "$TMP/same_but_seconds.sh" "$TMP/campaign/bench-merged" "$(ls "$TMP"/campaign/whole/bench-*.md | sed 's/\.md$//')"
expect "hunt --stall-rule with a clock" 2 "--stall-rule and --weights-after/--step-weights: a clock or the stall rule, not both" -- "$GRIST" hunt "$M/logreg_toy.toml" --stall-rule --weights-after 0.5
expect "bench --shard 0/2" 2 "--shard 0/2: shards count from 1 to 2" -- "$GRIST" bench "$TMP/zoo" --shard 0/2
expect "bench --shard 3" 2 "--shard 3: expected I/N" -- "$GRIST" bench "$TMP/zoo" --shard 3
expect "bench --shard with --fix" 2 "--shard does not combine with --fix" -- "$GRIST" bench "$TMP/zoo" --shard 1/2 --fix
expect "bench merge: not a shard file" 2 "not a (readable )?shard file" -- "$GRIST" bench merge "$TMP/toy_manifest.toml"
expect "bench merge: nothing given" 2 "shards is required" -- "$GRIST" bench merge
cp "$TMP/toy_manifest.toml" "$TMP/zoo/toy/manifest.toml"
printf 'op = "Div"\n' >>"$TMP/zoo/toy/manifest.toml"
expect "bench: a trigger on another op than expected fails" 1 "toy +Div +1/1 .* Log '/Log'" -- "$GRIST" bench "$TMP/zoo" --runs 1 --max-iterations 1000 -q --out "$TMP/bench"
cp "$TMP/toy_manifest.toml" "$TMP/zoo/toy/manifest.toml"
sed -i 's/^\[search\]$/[search]\nvariant = "original"/' "$TMP/zoo/toy/manifest.toml"
printf 'op = "Log"\n' >>"$TMP/zoo/toy/manifest.toml"
expect "bench: a subject that does not trigger fails" 1 "toy +Log +0/1" -- "$GRIST" bench "$TMP/zoo" --runs 1 --max-iterations 300 -q --out "$TMP/bench"
mkdir -p "$TMP/zoo/broken" && echo 'model = "gone.onnx"' >"$TMP/zoo/broken/manifest.toml"
expect "bench: a subject whose model is missing is a failing row" 1 "broken .*gone.onnx is missing" -- "$GRIST" bench "$TMP/zoo" --only broken --runs 1 -q --out "$TMP/bench"
expect "bench: --runs 0" 2 "--runs must be at least 1" -- "$GRIST" bench "$TMP/zoo" --runs 0
expect "bench: --time-limit 0" 2 "--time-limit 0: expected a positive time such as 90s" -- "$GRIST" bench "$TMP/zoo" --time-limit 0
expect "bench: --max-iterations -1" 2 "--max-iterations must not be negative" -- "$GRIST" bench "$TMP/zoo" --max-iterations -1
expect "bench: --only names no subject" 2 "--only nope: no subject 'nope'" -- "$GRIST" bench "$TMP/zoo" --only toy,nope
expect "bench: the zoo is not a folder" 2 "nozoo: not a folder" -- "$GRIST" bench "$TMP/nozoo"
expect "bench: an unknown variant" 2 "--variant: bad not in" -- "$GRIST" bench "$TMP/zoo" --variant bad
touch "$TMP/a_file"
expect "bench: --out is a file" 2 "a_file: cannot create" -- "$GRIST" bench "$TMP/zoo" --only toy --runs 1 --max-iterations 10 -q --out "$TMP/a_file"
F="--max-iterations 50 --train-steps 5 --data-batches 1"
expect "fix the bug-26 toy: both logs repaired and verified" 0 "2 fixed, 0 not" -- "$GRIST" fix "$M/logreg_toy.toml" --out "$TMP/fix" $F
expect "the repaired model is written beside the others, checked" 0 "" -- test -s "$TMP/fix/logreg_toy.fixed.onnx"
expect "fix again: a new file, the first kept" 0 "logreg_toy.fixed-2.onnx" -- "$GRIST" fix "$M/logreg_toy.toml" --out "$TMP/fix" $F --no-preconditions
expect "the repaired model scans clean" 0 "0 may fail" -- "$GRIST" scan "$TMP/fix/logreg_toy.fixed.onnx" --manifest "$M/logreg_toy.toml"
expect "the repaired model hunts clean" 0 "0 of .* triggered|nothing to hunt" -- "$GRIST" hunt "$TMP/fix/logreg_toy.fixed.onnx" --manifest "$M/logreg_toy.toml" --max-iterations 300 -q --no-witness
expect "fix as JSON" 0 '"fixed": true' -- "$GRIST" fix "$M/logreg_toy.toml" --out "$TMP/fix" $F --json --no-preconditions
expect "fix with SARIF fixes" 0 "" -- "$GRIST" fix "$M/logreg_toy.toml" --out "$TMP/fix" $F --no-preconditions --sarif "$TMP/fix.sarif"
expect "the SARIF holds a fix per repaired result" 0 '"artifactChanges"' -- cat "$TMP/fix.sarif"
expect "SARIF is never written over a file" 2 "fix.sarif: exists already; not overwriting it" -- "$GRIST" fix "$M/logreg_toy.toml" --out "$TMP/fix" $F --no-preconditions --sarif "$TMP/fix.sarif"
expect "fix a hazard the model lacks" 2 "--hazard '/Nope' names no hazard" -- "$GRIST" fix "$M/logreg_toy.toml" --hazard /Nope --out "$TMP/fix"
expect "fix a model without hazards: nothing written" 0 "no repair was applied" -- "$GRIST" fix "$M/mlp.onnx" --out "$TMP/fix" $F
expect "fix the witness's hazard" 0 "witness: .*passed" -- "$GRIST" fix "$M/logreg_toy.toml" --witness "$TMP/w/witness-logreg_toy-h1.json" --out "$TMP/fix" $F --no-preconditions
# fix --precision (issue 16): the norm whose sum of squares overflows float16 is safe in float32, repaired in fp16.
expect "fix --precision fp32: the norm is safe in float32" 0 "no repair was applied" -- "$GRIST" fix "$M/fp16_fix_norm.toml" --precision fp32 --out "$TMP/fixh" $F --no-preconditions
expect "fix --precision fp16: kept in float32 and verified" 0 "in fp16: 1 hazard to repair .* 1 fixed, 0 not" -- "$GRIST" fix "$M/fp16_fix_norm.toml" --precision fp16 --out "$TMP/fixh" $F --no-preconditions
expect "the repaired model lists its float32 nodes" 0 "sum_of_squares" -- grep -a "grist.keep_float32" "$TMP/fixh/fp16_fix_norm.fixed.onnx"
expect "the repaired model scans clean in fp16" 0 "0 may fail" -- "$GRIST" scan "$TMP/fixh/fp16_fix_norm.fixed.onnx" --manifest "$M/fp16_fix_norm.toml" --precision fp16
expect "the original does not (exit 1: may fail)" 1 "1 may fail, 4 proved safe" -- "$GRIST" scan "$M/fp16_fix_norm.onnx" --manifest "$M/fp16_fix_norm.toml" --precision fp16
expect "the manifest's [numerics] precision is fix's default" 0 "in fp16: 1 hazard" -- bash -c "sed 's/^\[batch\]/[numerics]\nprecision = \"fp16\"\n\n[batch]/; s|model = \"|model = \"$M/|' '$M/fp16_fix_norm.toml' > '$TMP/fixh_fp16.toml' && '$GRIST' fix '$TMP/fixh_fp16.toml' --out '$TMP/fixh' $F --no-preconditions"
expect "fix --precision: an unknown one" 2 "--precision: precision 'fp8' is not one of" -- "$GRIST" fix "$M/fp16_fix_norm.toml" --precision fp8 --out "$TMP/fixh"

# Every case above ran: as many results as `expect` lines in this file.
cases=$(grep -c '^expect ' "$0")
echo "$passed passed, $failed failed, of $cases cases"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -eq "$cases" ]
