#!/usr/bin/env node
// ONNX Runtime as an independent oracle for grist's forward pass.
//
//   node tests/oracle/ort_run.js DIR
//
// Reads DIR/cases.json (written by tests/e2e/export_real_models.py: per case a model file, its inputs as
// .npy files and its output names), runs every model in ONNX Runtime on the CPU, one thread, graph
// optimisations off (the model's own ops, not ORT's fusions of them), and writes each output as
// DIR/<case>.ort.<output>.npy, then DIR/ort.json with ORT's version and the cases run.
// A model that ORT refuses fails the script: the oracle must cover the whole set.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = { '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
                 '<i4': ['int32', Int32Array] };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12);
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter(s => s.trim()).map(Number);
  const kind = DTYPES[descr];
  if (!kind) throw new Error(`${file}: dtype ${descr}`);
  const offset = start + headerLen;
  const bytes = buf.subarray(offset);
  const copy = new Uint8Array(bytes.length);  // aligned copy for the typed array
  copy.set(bytes);
  return new ort.Tensor(kind[0], new kind[1](copy.buffer), shape);
}

function writeNpy(file, tensor) {
  const descr = { float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4' }[tensor.type];
  if (!descr) throw new Error(`${file}: output type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: ort_run.js DIR');
  const cases = JSON.parse(fs.readFileSync(path.join(dir, 'cases.json'), 'utf8'));
  const options = { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
                    interOpNumThreads: 1 };
  const ran = [];
  for (const c of cases) {
    const session = await ort.InferenceSession.create(path.join(dir, c.model), options);
    const feeds = {};
    for (const [name, file] of Object.entries(c.inputs)) feeds[name] = readNpy(path.join(dir, file));
    const results = await session.run(feeds, c.outputs);
    for (const name of c.outputs) writeNpy(path.join(dir, `${c.case}.ort.${name}.npy`), results[name]);
    if (session.release) await session.release();
    ran.push(c.case);
    console.log(`ort: ${c.case}`);
  }
  fs.writeFileSync(path.join(dir, 'ort.json'), JSON.stringify({ onnxruntime: ort.env.versions, cases: ran }, null, 1) + '\n');
}

// bench/ort_time.js reuses the reader and the module; run as a script, this file is the oracle.
module.exports = { ort, readNpy };
if (require.main === module) main().catch(e => { console.error(`ort_run: ${e.message || e}`); process.exit(1); });
