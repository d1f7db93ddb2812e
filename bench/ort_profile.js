#!/usr/bin/env node
// ONNX Runtime's own per-node profile of a model's forward, for bench/compare_nodes.py:
//
//   node bench/ort_profile.js MODEL.onnx INPUT.npy RUNS OUT_PREFIX
//
// One session on the CPU, one intra-op thread, graph optimisations on (its fusions are what grist is compared
// with), RUNS session.run calls on INPUT.npy, its profiler on. Prints the path of the profile it wrote
// (OUT_PREFIX_<date>.json: Chrome trace events, one "<node>_kernel_time" a node and run, fused nodes named by
// their last output). The profiler's own cost per node is large on small nodes: only large groups compare.
'use strict';
const path = require('path');
const { ort, readNpy } = require(path.join(__dirname, '..', 'tests', 'oracle', 'ort_run.js'));

async function main() {
  const [model, input, runs, prefix] = process.argv.slice(2);
  if (!prefix) throw new Error('usage: ort_profile.js MODEL.onnx INPUT.npy RUNS OUT_PREFIX');
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
    executionMode: 'sequential', enableProfiling: true, profileFilePrefix: prefix });
  const feeds = { [session.inputNames[0]]: readNpy(input) };
  for (let i = 0; i < Number(runs); ++i) await session.run(feeds);
  const file = session.endProfiling();
  console.log(file ? path.resolve(file) : `${prefix}_*.json`);
}

main().catch(e => { console.error(`ort_profile: ${e.message || e}`); process.exit(1); });
