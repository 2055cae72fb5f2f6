// tok_hf.mjs - Hugging Face's tokenizers (the Rust crate through its Node
// binding, npm `tokenizers`, pinned in package.json) on one thread: the peer
// of bench/tok_bench.c's "throughput" mode, for bench/run.sh's text section
// (issue 32).
//
//   RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false UV_THREADPOOL_SIZE=1 \
//     node bench/tok_hf.mjs --tokenizer FILE --corpus FILE [--repeat R] [--warmup W]
//                           [--name KEY] [--batch]
//
// Every line of the corpus (UTF-8, one text a line, read as the same bytes
// tok_bench reads) encoded alone with the special tokens (encode(text, null,
// {addSpecialTokens: true}), awaited before the next: one encoding in flight,
// on one libuv worker), W untimed passes (1), then R timed ones (5); each
// encoding's ids read back (getIds), as a caller must.  Prints the tokens of
// one pass, the FNV-1a hash of their ids (tok_bench's), the best and median
// pass and tokens/s of the median pass.  With --batch (bench/run.sh passes
// it), also the corpus as one encodeBatch call per pass
// (TOKENIZERS_PARALLELISM=false: sequential inside the crate, no per-call hop
// from JavaScript), for reference.
//   RESULT KEY_tokens KEY_hash KEY_best_ms KEY_median_ms KEY_tok_per_s KEY_load_ms
//          [KEY_batch_median_ms KEY_batch_tok_per_s]
// KEY defaults to hf.  Exit 3 (cannot run here) when the package is missing.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const tokFile = opt("--tokenizer");
const corpus = opt("--corpus");
const repeat = Number(opt("--repeat", "5"));
const warmup = Number(opt("--warmup", "1"));
const name = opt("--name", "hf");
const withBatch = args.includes("--batch");
if (!tokFile || !corpus || !(repeat >= 1) || !(warmup >= 0)) {
  console.error("usage: node bench/tok_hf.mjs --tokenizer FILE --corpus FILE [--repeat R] [--warmup W] [--name KEY] [--batch]");
  process.exit(2);
}
for (const [k, want] of [["RAYON_NUM_THREADS", "1"], ["TOKENIZERS_PARALLELISM", "false"]]) {
  if (process.env[k] !== want) {
    console.error(`tok_hf: set ${k}=${want} (one thread)`);
    process.exit(2);
  }
}

// The repository's node_modules, wherever this is run from.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, "package.json"));
let Tokenizer, version;
try {
  ({ Tokenizer } = require("tokenizers"));
  version = JSON.parse(
    fs.readFileSync(path.join(path.dirname(require.resolve("tokenizers")), "package.json"), "utf8"),
  ).version;
} catch (e) {
  console.log(`SKIP: npm tokenizers is not installed (make deps-node): ${e.message.split("\n")[0]}`);
  process.exit(3);
}

const raw = fs.readFileSync(corpus);
const lines = raw.toString("utf8").split("\n").filter((l) => l.length > 0);
const textBytes = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
let t0 = performance.now();
const tok = Tokenizer.fromFile(tokFile);
const loadMs = performance.now() - t0;

// One pass, each text alone: [tokens, hash, ms].
async function pass(hash) {
  let count = 0;
  let h = 2166136261;
  const start = performance.now();
  for (const l of lines) {
    const ids = (await tok.encode(l, null, { addSpecialTokens: true })).getIds();
    count += ids.length;
    if (hash) for (const id of ids) h = Math.imul(h ^ id, 16777619) >>> 0;
  }
  return [count, h >>> 0, performance.now() - start];
}

async function batchPass() {
  const start = performance.now();
  const encs = await tok.encodeBatch(lines, { addSpecialTokens: true });
  let count = 0;
  for (const e of encs) count += e.getIds().length;
  return [count, performance.now() - start];
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

const [tokens, hash] = await pass(true); // untimed: the count and the hash
const ms = [];
for (let r = -warmup; r < repeat; r++) {
  const [c, , dt] = await pass(false);
  if (c !== tokens) throw new Error(`a pass gave ${c} tokens, the first ${tokens}`);
  if (r >= 0) ms.push(dt);
}
const med = median(ms);
const best = Math.min(...ms);
const tps = tokens / (med / 1e3);
const hex = hash.toString(16).padStart(8, "0");
console.log(
  `${tokFile}: tokenizers ${version} (node ${process.version}), ${lines.length} texts (${textBytes} bytes), ` +
    `${tokens} tokens a pass (special tokens included), ids hash ${hex}; ${repeat} passes of ` +
    `encode() one text at a time: best ${best.toFixed(2)} ms, median ${med.toFixed(2)} ms -> ` +
    `${tps.toFixed(0)} tokens/s (tokenizer.json loaded in ${loadMs.toFixed(1)} ms)`,
);
let extra = "";
if (withBatch) {
  const bms = [];
  for (let r = -warmup; r < repeat; r++) {
    const [c, dt] = await batchPass();
    if (c !== tokens) throw new Error(`encodeBatch gave ${c} tokens, encode ${tokens}`);
    if (r >= 0) bms.push(dt);
  }
  const bmed = median(bms);
  console.log(
    `  encodeBatch(all ${lines.length}) per pass, sequential (TOKENIZERS_PARALLELISM=false): ` +
      `best ${Math.min(...bms).toFixed(2)} ms, median ${bmed.toFixed(2)} ms -> ` +
      `${(tokens / (bmed / 1e3)).toFixed(0)} tokens/s`,
  );
  extra = ` ${name}_batch_median_ms=${bmed.toFixed(3)} ${name}_batch_tok_per_s=${(tokens / (bmed / 1e3)).toFixed(0)}`;
}
console.log(
  `RESULT ${name}_tokens=${tokens} ${name}_hash=${hex} ${name}_best_ms=${best.toFixed(3)} ` +
    `${name}_median_ms=${med.toFixed(3)} ${name}_tok_per_s=${tps.toFixed(0)} ${name}_load_ms=${loadMs.toFixed(2)}` +
    extra,
);
