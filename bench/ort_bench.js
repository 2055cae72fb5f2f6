// ort_bench.js - times the ONNX export of the encoder block (bench/torch_bench.py
// export) in ONNX Runtime through onnxruntime-node, for `make bench`.
//
//   NODE_PATH=build/bench/node_modules node bench/ort_bench.js MODEL.onnx
//       [--threads 2] [--shapes 1x128,8x128,1x512] [--repeat N] [--warmup W] [--check-dir DIR]
//       [--int8]
//
// The session runs on the CPU execution provider with intra_op threads = --threads,
// inter_op 1, sequential execution and every graph optimisation.  Each run
// returns both outputs ("out" (B, L, 768) and "attn" (B, 12, L, L)).  With
// --check-dir, PyTorch's outputs for one B=1 L=128 input (x.f32, out.f32,
// attn.f32) are compared first, so the timed graph is known to compute the same
// thing.  --int8: MODEL is the block in ONNX Runtime's dynamic int8
// (bench/ort_quant.py); the check then allows int8's error (outputs within
// 0.05 of PyTorch's float32 ones, attention within 0.01; ONNX Runtime's own
// int8 of the block: 0.014 and 0.0009; one weight left untransposed: 0.24),
// and the RESULT keys begin ort_i8_.  Prints a readable line
// and a "RESULT key=value" line per shape; exit status 3 means "cannot do
// this here" (reason on stdout).
'use strict';

const fs = require('fs');
const path = require('path');

function skip(reason) {
  console.log(`SKIP: ${reason}`);
  process.exit(3);
}

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  skip(`cannot load onnxruntime-node (${e.message.split('\n')[0]})`);
}

function parseArgs(argv) {
  const o = { model: null, threads: 2, shapes: '1x128,8x128,1x512', repeat: 20, warmup: 3,
              checkDir: null, int8: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--threads') o.threads = parseInt(argv[++i], 10);
    else if (a === '--shapes') o.shapes = argv[++i];
    else if (a === '--repeat') o.repeat = parseInt(argv[++i], 10);
    else if (a === '--warmup') o.warmup = parseInt(argv[++i], 10);
    else if (a === '--check-dir') o.checkDir = argv[++i];
    else if (a === '--int8') o.int8 = true;
    else if (!o.model) o.model = a;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model || !(o.threads > 0) || !(o.repeat > 0) || !(o.warmup >= 0))
    throw new Error('usage: ort_bench.js MODEL.onnx [--threads T] [--shapes BxL,...] ' +
                    '[--repeat N] [--warmup W] [--check-dir DIR] [--int8]');
  return o;
}

// A little-endian float32 file as a Float32Array.
function readF32(file) {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// Seeded N(0, 1) floats (a small LCG and Box-Muller): the same input every run.
function normalInput(n, seed) {
  const x = new Float32Array(n);
  let s = seed >>> 0;
  const unit = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 1) / 4294967297;
  };
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(unit())), t = 2 * Math.PI * unit();
    x[i] = r * Math.cos(t);
    if (i + 1 < n) x[i + 1] = r * Math.sin(t);
  }
  return x;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(o.model, {
    executionProviders: ['cpu'], intraOpNumThreads: o.threads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const version = ort.env.versions ? ort.env.versions.node : '?';
  let line = `onnxruntime-node ${version}, intra_op threads ${o.threads}`;
  if (o.checkDir) {
    const x = readF32(path.join(o.checkDir, 'x.f32'));
    const r = await session.run({ x: new ort.Tensor('float32', x, [1, 128, 768]) });
    const dOut = maxAbsDiff(r.out.data, readF32(path.join(o.checkDir, 'out.f32')));
    const dAttn = maxAbsDiff(r.attn.data, readF32(path.join(o.checkDir, 'attn.f32')));
    line += `; vs PyTorch (float32) at B=1 L=128: outputs within ${dOut.toExponential(1)}, ` +
            `attention within ${dAttn.toExponential(1)}`;
    const [outTol, attnTol] = o.int8 ? [0.05, 0.01] : [1e-3, 1e-4];
    if (!(dOut < outTol && dAttn < attnTol)) {
      console.log(line);
      console.error('ort_bench: ONNX Runtime and PyTorch disagree');
      process.exit(1);
    }
  }
  console.log(line);
  for (const shape of o.shapes.split(',')) {
    const [B, L] = shape.split('x').map((v) => parseInt(v, 10));
    const x = new ort.Tensor('float32', normalInput(B * L * 768, 4), [B, L, 768]);
    const ms = [];
    for (let i = 0; i < o.warmup + o.repeat; i++) {
      const t0 = process.hrtime.bigint();
      const r = await session.run({ x });
      const t = Number(process.hrtime.bigint() - t0) / 1e6;
      if (i >= o.warmup) ms.push(t);
      if (i === 0 && r.attn.dims.join() !== [B, 12, L, L].join())
        throw new Error(`attn has shape [${r.attn.dims}]`);
    }
    ms.sort((a, b) => a - b);
    const best = ms[0], median = ms[Math.floor(ms.length / 2)];
    const key = `${o.int8 ? 'ort_i8' : 'ort'}_${B}x${L}`;
    console.log(`ONNX Runtime${o.int8 ? ' int8' : ''} B=${B} L=${L}, ${o.threads} intra_op ` +
                `threads, best of ${o.repeat}: ${best.toFixed(3)} ms, median ${median.toFixed(3)} ms`);
    console.log(`RESULT ${key}_best_ms=${best.toFixed(3)} ${key}_median_ms=${median.toFixed(3)}`);
  }
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message}`);
  process.exit(1);
});
