#!/usr/bin/env bash
# The bad-input table of docs/RELIABILITY.md: each case run, its exit status and its first line on stderr.
# Usage: tests/cli/bad_inputs_table.sh > table.md   (GRIST=path/to/grist to use another build)
cd "$(dirname "$0")/../.." && G=${GRIST:-build/grist} M=tests/models T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
: >$T/empty.onnx; head -c 3000 /dev/urandom >$T/junk.onnx; mkfifo $T/fifo; touch $T/a_file
printf 'model = 3\n' >$T/bad.toml
printf '[inputs.x]\nsource = "values"\n' >$T/nomodel.toml
printf 'model = "%s/logreg_toy.onnx"\n[inputs.x]\nrole = "wizard"\n' "$PWD/$M" >$T/role.toml
printf 'model = "%s/logreg_toy.onnx"\n[train]\noptimizer = "adamw2"\n' "$PWD/$M" >$T/opt.toml
printf 'model = "%s/nope.onnx"\n' "$PWD/$M" >$T/missing_model.toml
printf '[Setting]\nchange = abc\n' >$T/bad.conf
echo mine >$T/report.sarif; echo mine >$T/taken.dot
row() { local name=$1; shift; local err; err=$( ( "$@" >/dev/null ) 2>&1 | grep -v '^grist hunt:' | head -1 | sed "s#$T#TMP#g"); local rc=$( ( "$@" >/dev/null 2>&1 ); echo $?); echo "| $name | $rc | \`${err//|/\\|}\` |"; }
echo "| bad input | exit | first line on stderr |"
echo "|---|---|---|"
row "the model file is missing" $G run nope.onnx
row "the model is a folder" $G hunt $T
row "the model is a FIFO" $G run $T/fifo
row "the model is random bytes" $G run $T/junk.onnx
row "the model is empty" $G scan $T/empty.onnx
row "unsupported ops (run, hunt, scan, fix alike)" $G hunt $M/unsupported_ops.onnx
row "opset 99" $G run $M/future_opset.onnx
row "an initializer of 4 TiB" $G run $M/huge_initializer.onnx
row "ConstantOfShape [2^20, 2^20]" $G run $M/huge_constant.onnx
row "a manifest that is a FIFO" $G hunt $T/fifo.toml --manifest $T/fifo
row "a manifest with a wrong type" $G hunt $T/bad.toml
row "a manifest without a model" $G hunt $T/nomodel.toml
row "a manifest with an unknown input role" $G hunt $T/role.toml
row "a manifest with an unknown optimizer" $G hunt $T/opt.toml
row "a manifest whose model is missing" $G scan $T/missing_model.toml
row "experiments.conf with a bad value" $G hunt $M/logreg_toy.toml --conf $T/bad.conf
row "experiments.conf is /dev/zero" $G hunt $M/logreg_toy.toml --conf /dev/zero
row "--time-limit -1" $G hunt $M/logreg_toy.toml --time-limit=-1
row "--time-limit nan" $G hunt $M/logreg_toy.toml --time-limit nan
row "--time-limit 0 (bench)" $G bench $T --time-limit 0
row "--time-limit 1.5x" $G hunt $M/logreg_toy.toml --time-limit 1.5x
row "--batch 0" $G hunt $M/logreg_toy.toml --batch 0
row "--max-iterations -2" $G hunt $M/logreg_toy.toml --max-iterations=-2
row "--change 0" $G hunt $M/logreg_toy.toml --change 0
row "--seed -3" $G hunt $M/logreg_toy.toml --seed=-3
row "--hunt-seconds 0 (fix)" $G fix $M/logreg_toy.toml --hunt-seconds 0
row "--out is a file" $G hunt $M/logreg_toy.toml -q --out $T/a_file
row "--out under a file" $G hunt $M/logreg_toy.toml -q --out $T/a_file/w
row "scan --sarif over an existing file" $G scan $M/vae_head.onnx --sarif $T/report.sarif
row "fix --sarif over an existing file" $G fix $M/vae_head.onnx --sarif $T/report.sarif
row "--dot over an existing file" $G scan $M/vae_head.onnx --dot $T/taken.dot
row "run --json to /dev/full" bash -c "$G run $M/mlp.onnx --json > /dev/full"
row "replay of a missing witness" $G replay nope.json
row "replay of a folder" $G replay $T
row "--input of a missing file" $G run $M/mlp.onnx --input x=nope.npy
row "--input of a FIFO" bash -c "mkfifo $T/fifo.npy; $G run $M/mlp.onnx --input x=$T/fifo.npy"
row "--input of a file with no known type" $G run $M/mlp.onnx --input x=$T/a_file
row "--input naming no input" $G run $M/mlp.onnx --input nope=$(ls tests/data/fixtures/*.npy | head -1)
row "--assume of an unknown name" $G scan $M/vae_head.onnx --assume y=0,1
row "--assume with LO > HI" $G scan $M/vae_head.onnx --assume x=2,1
row "--target naming no hazard" $G hunt $M/logreg_toy.toml --target /Nope
row "--hazard naming no hazard (fix)" $G fix $M/logreg_toy.toml --hazard /Nope
row "a missing witness (fix)" $G fix $M/mlp.onnx --witness nope.json
row "a FIFO as the witness (fix)" bash -c "mkfifo $T/w.json; $G fix $M/mlp.onnx --witness $T/w.json"
row "an unknown variant" $G hunt $M/logreg_toy.toml --variant bad
row "a misspelt command" $G hnut $M/logreg_toy.toml
