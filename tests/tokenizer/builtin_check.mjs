// builtin_check.mjs - the built-in model takes text (make builtin-check, run
// by make test):
//
//   node tests/tokenizer/builtin_check.mjs ATTND_BIN BUILTIN_TOKENIZER_JSON
//
// BUILTIN_TOKENIZER_JSON is the tokenizer.json the build made from the word
// list (config/builtin_tokenizer.sh) and built into ATTND_BIN.  The reference
// is Hugging Face's own tokenizers (the Rust crate through its official Node
// binding, npm `tokenizers`, pinned in package.json) loading that file.
// Starts ATTND_BIN with no model settings (the built-in model) and checks:
//
//   - /v1/model: the tokenizer is "built-in", the embedding module's
//     vocab_size is the file's vocabulary, its positions max_seq_len's;
//   - /v1/tokenize, with and without special tokens: every text of
//     tests/fixtures/tokenizers/texts.json (hostile ones included) and a
//     few of the word list's words, ids, tokens, offsets (code points) and
//     specials equal to the library's; every pair, with sequence ids; a text
//     longer than the model takes, with "truncate": true, equal to the
//     library's right truncation at max_seq_len tokens;
//   - that the word list made the vocabulary: plain English words are one
//     token each, not [UNK] or pieces;
//   - /v1/encode with "text" gives the outputs of /v1/encode with the
//     library's ids as "input_ids" (the seeded embedding module itself is
//     checked against an independent implementation by the C suite).
//
// Prints one summary line; exits 1 on any failure.  Bounded: TIME_LIMIT_MS,
// and the daemon is always stopped (it must exit 0 on SIGTERM).
import { createRequire } from "module";
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const { startDaemon, stopDaemons, daemonProblems } = require("../node/daemon.js");

const [attndArg, jsonArg] = process.argv.slice(2);
if (!attndArg || !jsonArg) {
  console.error("usage: node tests/tokenizer/builtin_check.mjs ATTND_BIN BUILTIN_TOKENIZER_JSON");
  process.exit(2);
}
const attndBin = path.resolve(attndArg);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TIME_LIMIT_MS = 120000;
const daemons = [];
const problems = [];
let compared = 0; // encodings compared with the library's

function check(cond, what) {
  if (!cond) problems.push("FAILED: " + what);
  return cond;
}

async function post(base, route, body) {
  const r = await fetch(base + route, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

// The library's encoding of a (and b) as /v1/tokenize lists it.
async function reference(tok, a, b, addSpecialTokens) {
  const e = await tok.encode(a, b, { addSpecialTokens });
  const ids = e.getIds(), tokens = e.getTokens(), offs = e.getOffsets();
  const special = e.getSpecialTokensMask(), seq = e.getSequenceIds();
  return ids.map((id, i) => ({
    id,
    text: tokens[i],
    start: offs[i][0],
    stop: offs[i][1],
    special: special[i] === 1,
    sequence: seq[i] === undefined || seq[i] === null ? null : seq[i],
  }));
}

// The first difference between two token lists, or null.
function firstDifference(got, want) {
  if (!Array.isArray(got)) return "no token list";
  for (let i = 0; i < Math.max(got.length, want.length); i++) {
    const g = got[i], w = want[i];
    if (!g || !w) return `${got.length} tokens, the library ${want.length}`;
    for (const k of ["id", "text", "start", "stop", "special", "sequence"])
      if (g[k] !== w[k]) return `token ${i}: ${k} ${JSON.stringify(g[k])}, the library ${JSON.stringify(w[k])}`;
  }
  return null;
}

// /v1/tokenize on inputs, in requests of at most batch (limits.max_batch).
async function compareTokenize(base, tok, inputs, addSpecial, label, batch) {
  for (let at = 0; at < inputs.length; at += batch) {
    const part = inputs.slice(at, at + batch);
    const r = await post(base, "/v1/tokenize", { text: part, add_special_tokens: addSpecial });
    if (!check(r.status === 200, `${label}: /v1/tokenize answered ${r.status} ${JSON.stringify(r.body)}`)) return;
    for (let i = 0; i < part.length; i++) {
      const [a, b] = Array.isArray(part[i]) ? part[i] : [part[i], null];
      const diff = firstDifference(r.body.tokens[i], await reference(tok, a, b, addSpecial));
      check(diff === null, `${label} ${at + i} ${JSON.stringify(part[i]).slice(0, 60)}: ${diff}`);
      compared++;
    }
  }
}

async function run() {
  const tok = Tokenizer.fromFile(path.resolve(jsonArg));
  tok.disableTruncation();
  tok.disablePadding();
  const d = await startDaemon(attndBin, [], {}, daemons);
  const model = await (await fetch(d.base + "/v1/model")).json();
  const vocab = tok.getVocabSize(true);
  check(model.tokenizer && model.tokenizer.source === "built-in", `/v1/model tokenizer ${JSON.stringify(model.tokenizer)}`);
  check(model.tokenizer && model.tokenizer.vocab_size === vocab, `tokenizer vocab_size, the file has ${vocab}`);
  check(model.embedding && model.embedding.vocab_size === vocab, `embedding vocab_size ${model.embedding?.vocab_size}, the file has ${vocab}`);
  const maxLen = model.limits.max_seq_len;
  check(model.embedding && model.embedding.max_positions === maxLen, `embedding max_positions, max_seq_len is ${maxLen}`);

  const { texts, pairs } = JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/tokenizers/texts.json"), "utf8"));
  const words = ["The café's crème brûlée was unbelievably good.", "Attention weights you can see!",
                 "encoders tokenizers 12345 don't co-operate", "naïve résumé Ångström"];
  const batch = model.limits.max_batch;
  await compareTokenize(d.base, tok, [...texts, ...words], true, "text", batch);
  await compareTokenize(d.base, tok, [...texts, ...words], false, "text without specials", batch);
  await compareTokenize(d.base, tok, pairs, true, "pair", batch);

  // The vocabulary is the word list's: plain words are whole tokens.
  const plain = "the quick brown fox jumps over the lazy dog while encoders attend to every word";
  const e = await tok.encode(plain, null, { addSpecialTokens: false });
  check(e.getTokens().join(" ") === plain, `plain words split: ${e.getTokens().join(" ")}`);

  // Right truncation at the model's length.
  const long = Array(maxLen).fill("tokens and pieces").join(" ");
  const cut = await post(d.base, "/v1/tokenize", { text: long, truncate: true });
  tok.setTruncation(maxLen);
  const want = await reference(tok, long, null, true);
  tok.disableTruncation();
  check(cut.status === 200 && want.length === maxLen, `truncation: ${cut.status}, the library gives ${want.length}`);
  const diff = firstDifference(cut.body.tokens?.[0], want);
  check(diff === null, `truncated text: ${diff}`);
  compared++;

  // Text in gives what the library's ids give.
  for (const text of words) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const byText = await post(d.base, "/v1/encode", { text: [text], attention: "none" });
    const byIds = await post(d.base, "/v1/encode", { input_ids: [ids], attention: "none" });
    if (!check(byText.status === 200 && byIds.status === 200, `/v1/encode: ${byText.status} ${byIds.status}`)) continue;
    check(JSON.stringify(byText.body.input_ids) === JSON.stringify([ids]), `input_ids of ${text}: ${JSON.stringify(byText.body.input_ids)}`);
    const a = byText.body.outputs.flat(2), b = byIds.body.outputs.flat(2);
    let worst = a.length === b.length && a.length > 0 ? 0 : Infinity;
    for (let i = 0; i < a.length && i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
    check(worst === 0, `outputs of ${text}: text against ids differ by ${worst}`);
  }
}

const timer = setTimeout(() => {
  problems.push(`FAILED: did not finish within ${TIME_LIMIT_MS} ms`);
  finish();
}, TIME_LIMIT_MS);

async function finish() {
  clearTimeout(timer);
  await stopDaemons(daemons);
  problems.push(...daemonProblems(daemons));
  for (const p of problems) console.error(p);
  console.log(`builtin check: ${compared} tokenizations compared with Hugging Face's tokenizers, ${problems.length} problems`);
  process.exit(problems.length ? 1 : 0);
}

run().catch((e) => problems.push("FAILED: " + (e && e.stack ? e.stack : e))).finally(finish);
