#!/usr/bin/env node
// Times ONNX Runtime's forward for bench/real_models.py:
//
//   node bench/ort_time.js ITERS WARMUP OPT THREADS MODEL.onnx INPUT.npy [IDENTITY.onnx]
//
// One session on the CPU, THREADS intra-op threads (1: ORT's single-threaded figure), graph optimisations OPT
// ('all', ORT's default with its Conv+BN+activation fusions, or 'disabled'). Prints one JSON line:
// {"samples_ms", "cpu_ms"}: wall-clock and process CPU time (user + system, every thread: with one intra-op
// thread ORT computes on the calling one) of ITERS warm session.run calls after WARMUP untimed ones; with
// IDENTITY.onnx (one Identity node on an input of any shape) "identity_ms" and "identity_cpu_ms": the same
// calls on it with the same input, the Node binding's own per-call cost that small graphs must not be charged.
'use strict';
const path = require('path');
const { ort, readNpy } = require(path.join(__dirname, '..', 'tests', 'oracle', 'ort_run.js'));

async function samples(file, x, iters, warmup, options) {
  const session = await ort.InferenceSession.create(file, options);
  const feeds = { [session.inputNames[0]]: x };
  const wall = [], cpu = [];
  for (let i = 0; i < warmup + iters; ++i) {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    await session.run(feeds);
    const c = process.cpuUsage(c0);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (i >= warmup) {
      wall.push(ms);
      cpu.push((c.user + c.system) / 1e3);
    }
  }
  if (session.release) await session.release();
  return { wall, cpu };
}

async function main() {
  const [iters, warmup, opt, threads, model, input, identity] = process.argv.slice(2);
  if (!input) throw new Error('usage: ort_time.js ITERS WARMUP OPT THREADS MODEL.onnx INPUT.npy [IDENTITY.onnx]');
  const options = { executionProviders: ['cpu'], graphOptimizationLevel: opt, intraOpNumThreads: Number(threads),
                    interOpNumThreads: 1, executionMode: 'sequential' };
  const x = readNpy(input);
  const m = await samples(model, x, Number(iters), Number(warmup), options);
  const result = { samples_ms: m.wall, cpu_ms: m.cpu, onnxruntime: ort.env.versions };
  if (identity) {
    const id = await samples(identity, x, Number(iters), Number(warmup), options);
    result.identity_ms = id.wall;
    result.identity_cpu_ms = id.cpu;
  }
  console.log(JSON.stringify(result));
}

main().catch(e => { console.error(`ort_time: ${e.message || e}`); process.exit(1); });
