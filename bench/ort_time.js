#!/usr/bin/env node
// Times ONNX Runtime's forward for bench/real_models.py:
//
//   node bench/ort_time.js ITERS WARMUP OPT THREADS MODEL.onnx INPUT.npy [IDENTITY.onnx]
//
// One session on the CPU, THREADS intra-op threads (1: ORT's single-threaded figure), graph optimisations OPT
// ('all', ORT's default with its Conv+BN+activation fusions, or 'disabled'). Prints one JSON line:
// {"samples_ms": [...]} of ITERS warm session.run calls after WARMUP untimed ones, and with IDENTITY.onnx (one
// Identity node on an input of any shape) "identity_ms": the same calls on it with the same input, the Node
// binding's own per-call cost that small graphs' figures must not be charged with.
'use strict';
const path = require('path');
const { ort, readNpy } = require(path.join(__dirname, '..', 'tests', 'oracle', 'ort_run.js'));

async function samples(file, x, iters, warmup, options) {
  const session = await ort.InferenceSession.create(file, options);
  const feeds = { [session.inputNames[0]]: x };
  const out = [];
  for (let i = 0; i < warmup + iters; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (i >= warmup) out.push(ms);
  }
  if (session.release) await session.release();
  return out;
}

async function main() {
  const [iters, warmup, opt, threads, model, input, identity] = process.argv.slice(2);
  if (!input) throw new Error('usage: ort_time.js ITERS WARMUP OPT THREADS MODEL.onnx INPUT.npy [IDENTITY.onnx]');
  const options = { executionProviders: ['cpu'], graphOptimizationLevel: opt, intraOpNumThreads: Number(threads),
                    interOpNumThreads: 1, executionMode: 'sequential' };
  const x = readNpy(input);
  const result = { samples_ms: await samples(model, x, Number(iters), Number(warmup), options),
                   onnxruntime: ort.env.versions };
  if (identity) result.identity_ms = await samples(identity, x, Number(iters), Number(warmup), options);
  console.log(JSON.stringify(result));
}

main().catch(e => { console.error(`ort_time: ${e.message || e}`); process.exit(1); });
