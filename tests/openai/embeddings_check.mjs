// embeddings_check.mjs - POST /v1/embeddings through OpenAI's own client (make
// openai-check, run by make test):
//
//   node tests/openai/embeddings_check.mjs ATTND_BIN
//
// Starts build/attnd on tests/fixtures/hf/bert_text (mean pooling, then
// Normalize), on tests/fixtures/hf/roberta_text (CLS pooling, no
// Normalize) and on tests/fixtures/hf/dense_text (CLS pooling, two Dense
// modules, Normalize: 16-wide embeddings), and with the official `openai` npm package (package.json's
// pin) calls embeddings.create on each with text.json's texts: the default
// request (the client asks for base64 and decodes it), encoding_format
// "float", dimensions 8 (a Matryoshka cut: renormalized where the model
// normalizes), and token ids (text.safetensors' input_ids rows, each up to
// its attention_mask's length).  Each embedding is checked against
// text.safetensors, the sentence-transformers math (tools/fixtures/make_text_fixtures.py made it):
// bert_text's mean_normalized, roberta_text's cls_pooled, dense_text's
// sentence_embedding, within TOL; and
// usage against the sum of the attention masks; 2,048 inputs in one call.
// Also: models.list and models.retrieve give the served model as OpenAI's
// model object; errors come in OpenAI's shape, the APIError's status, type,
// code and param checked: a model name other than the served one is the
// client's NotFoundError (404, model_not_found, param model) naming the
// served model; dimensions above the embeddings' width (/v1/model's
// pooling.dimensions: d_model, or the last Dense module's), its BadRequestError (400, param
// dimensions); a missing or wrong key (a daemon with --api-key), its
// AuthenticationError (401, invalid_api_key).
// Prints one summary line; exits 1 on any failure.  Bounded: TIME_LIMIT_MS,
// and the daemons are always stopped (each must exit 0 on SIGTERM).
import { createRequire } from "module";
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";
import OpenAI from "openai";
import { VERSION } from "openai/version";

const { startDaemon, stopDaemons, daemonProblems } = createRequire(import.meta.url)("../node/daemon.js");

const attndBin = process.argv[2] && path.resolve(process.argv[2]);
if (!attndBin) {
  console.error("usage: node tests/openai/embeddings_check.mjs ATTND_BIN");
  process.exit(2);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TIME_LIMIT_MS = 120000;
const TOL = 1e-4;
const DIMS = 8;
const daemons = [];
const problems = [];
let compared = 0; // embeddings compared with the fixture
let calls = 0; // embeddings.create calls

function check(cond, what) {
  if (!cond) problems.push("FAILED: " + what);
  return cond;
}

// ---- text.safetensors ----------------------------------------------------------

// A safetensors file: an 8-byte little-endian header length, the JSON
// header ({name: {dtype, shape, data_offsets}}, __metadata__), then the raw
// little-endian data.  Returns {name: {shape, rows}}: rows, the tensor as
// nested arrays over its first dimension (numbers; I64 as Number).
function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8"));
  const data = buf.subarray(8 + n);
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const [begin, end] = t.data_offsets;
    const bytes = data.subarray(begin, end);
    const size = { F32: 4, I64: 8 }[t.dtype];
    if (!size) continue; // a dtype this check does not read
    const flat = [];
    for (let off = 0; off < bytes.length; off += size)
      flat.push(t.dtype === "F32" ? bytes.readFloatLE(off) : Number(bytes.readBigInt64LE(off)));
    const inner = t.shape.slice(1).reduce((a, b) => a * b, 1);
    const rows = [];
    for (let r = 0; r < (t.shape[0] ?? 1); r++) rows.push(flat.slice(r * inner, (r + 1) * inner));
    out[name] = { shape: t.shape, rows };
  }
  return out;
}

const norm = (v) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));

// The largest |a[i] - b[i]|, or Infinity when the lengths differ.
function maxDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// ---- the checks ---------------------------------------------------------------

// The request bodies the client sent and the response bodies it got, as the
// daemon saw them: the wire, under what the client hands back.
function recordingFetch(wire) {
  return async (url, init) => {
    const res = await fetch(url, init);
    const text = await res.clone().text();
    wire.push({ request: init && typeof init.body === "string" ? JSON.parse(init.body) : null, status: res.status, text });
    return res;
  };
}

// One model directory: every form of embeddings.create against its fixture.
async function checkModel(dirName, expected, mode, normalizes) {
  const dir = path.join(ROOT, "tests/fixtures/hf", dirName);
  const texts = JSON.parse(fs.readFileSync(path.join(dir, "text.json"), "utf8")).texts;
  const st = readSafetensors(path.join(dir, "text.safetensors"));
  const want = st[expected].rows;
  const masks = st.attention_mask.rows;
  const lengths = masks.map((m) => m.reduce((a, b) => a + b, 0));
  // each mask a run of ones then zeros: the row's tokens come first
  masks.forEach((m, b) => check(m.every((x, i) => x === (i < lengths[b] ? 1 : 0)),
                                `${dirName}: text.safetensors' attention_mask row ${b} is not ones then zeros`));
  const ids = st.input_ids.rows.map((r, b) => r.slice(0, lengths[b]));
  const tokens = lengths.reduce((a, b) => a + b, 0);
  check(want.length === texts.length, `${dirName}: ${expected} has ${want.length} rows for ${texts.length} texts`);

  const d = await startDaemon(attndBin, ["--model-dir", dir], {}, daemons);
  const info = await (await fetch(d.base + "/v1/model")).json();
  const served = info.name;
  const D = info.pooling && info.pooling.dimensions;
  check(D === want[0].length, `${dirName}: /v1/model's pooling.dimensions is ${D}, the fixture's ${want[0].length}`);
  check(info.pooling && info.pooling.mode === mode &&
        info.pooling.normalize === normalizes && info.pooling.from === "modules.json",
        `${dirName}: /v1/model's pooling is ${JSON.stringify(info.pooling)}`);
  const wire = [];
  const client = new OpenAI({ baseURL: d.base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 30000,
                              fetch: recordingFetch(wire) });

  // Checks one response: its shape, usage, model, and each embedding
  // against rows (the fixture's, or their cut).
  const verify = (label, res, rows, nTokens) => {
    calls++;
    const what = `${dirName} ${label}`;
    check(res.object === "list", `${what}: object ${JSON.stringify(res.object)}`);
    check(res.model === served, `${what}: model ${JSON.stringify(res.model)}, expected ${JSON.stringify(served)}`);
    check(res.usage && res.usage.prompt_tokens === nTokens && res.usage.total_tokens === nTokens,
          `${what}: usage ${JSON.stringify(res.usage)}, expected ${nTokens} tokens`);
    if (!check(Array.isArray(res.data) && res.data.length === rows.length,
               `${what}: ${res.data && res.data.length} embeddings for ${rows.length} inputs`)) return;
    res.data.forEach((e, i) => {
      check(e.object === "embedding" && e.index === i, `${what}: data[${i}] is ${JSON.stringify({ object: e.object, index: e.index })}`);
      const got = Array.from(e.embedding);
      const diff = maxDiff(got, rows[i]);
      compared++;
      check(diff <= TOL, `${what}: data[${i}] is ${diff} from the fixture (tolerance ${TOL}); ` +
                         `got [${got.slice(0, 4).join(", ")}, ...], expected [${rows[i].slice(0, 4).join(", ")}, ...]`);
    });
  };

  // (a) the client's default: base64 on the wire, decoded by the client
  let from = wire.length;
  verify("default (base64)", await client.embeddings.create({ model: served, input: texts }), want, tokens);
  const sent = wire[from];
  check(sent && sent.request.encoding_format === "base64", `${dirName}: the default request asked for ${sent && sent.request.encoding_format}`);
  check(sent && /"embedding":"[A-Za-z0-9+/=]+"/.test(sent.text), `${dirName}: the default response's embeddings are not base64 strings`);
  // (b) floats, and without a model name (optional here)
  from = wire.length;
  verify("float", await client.embeddings.create({ model: served, input: texts, encoding_format: "float" }), want, tokens);
  check(/"embedding":\[/.test(wire[from].text), `${dirName}: the float response's embeddings are not JSON arrays`);
  verify("float, no model", await client.embeddings.create({ input: texts, encoding_format: "float" }), want, tokens);
  verify("one string", await client.embeddings.create({ model: served, input: texts[0], encoding_format: "float" }),
         want.slice(0, 1), lengths[0]);
  // (c) dimensions: the first DIMS, renormalized when the model normalizes
  const cut = want.map((r) => {
    const c = r.slice(0, DIMS);
    const n = normalizes ? norm(c) : 1;
    return c.map((x) => x / n);
  });
  verify(`dimensions ${DIMS}`, await client.embeddings.create({ model: served, input: texts, dimensions: DIMS }), cut, tokens);
  verify(`dimensions ${DIMS} float`,
         await client.embeddings.create({ model: served, input: texts, dimensions: DIMS, encoding_format: "float" }), cut, tokens);
  verify(`dimensions ${D}`, await client.embeddings.create({ model: served, input: texts, dimensions: D }), want, tokens);
  // (d) token ids: each row up to its attention mask's length, and one row alone
  verify("token ids", await client.embeddings.create({ model: served, input: ids }), want, tokens);
  verify("token ids float", await client.embeddings.create({ model: served, input: ids, encoding_format: "float" }), want, tokens);
  verify("one id list", await client.embeddings.create({ model: served, input: ids[3] }), want.slice(3), lengths[3]);
  // (e) 2,048 inputs, OpenAI's most, in one call: each the first text's embedding
  verify("2048 inputs", await client.embeddings.create({ model: served, input: Array(2048).fill(texts[0]) }),
         Array(2048).fill(want[0]), 2048 * lengths[0]);

  // The model, as OpenAI's model list and model object.
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  calls++;
  check(models.length === 1 && isModel(models[0], served), `${dirName}: models.list gave ${JSON.stringify(models)}`);
  const one = await client.models.retrieve(served);
  calls++;
  check(isModel(one, served), `${dirName}: models.retrieve gave ${JSON.stringify(one)}`);

  // Errors, as the client raises them.
  const fails = (label, body, Class, status, text, shape) =>
    raises(`${dirName} ${label}`, () => client.embeddings.create(body), Class, status, text, shape);
  await fails("another model", { model: "text-embedding-3-small", input: texts }, OpenAI.NotFoundError, 404, `'${served}'`,
              { type: INVALID, code: "model_not_found", param: "model" });
  await fails(`dimensions ${D + 1}`, { model: served, input: texts, dimensions: D + 1 }, OpenAI.BadRequestError, 400, String(D),
              { type: INVALID, code: null, param: "dimensions" });
  await fails("dimensions 0", { model: served, input: texts, dimensions: 0 }, OpenAI.BadRequestError, 400, "dimensions",
              { type: INVALID, code: null, param: "dimensions" });
  await fails("an empty list", { model: served, input: [] }, OpenAI.BadRequestError, 400, "input",
              { type: INVALID, code: null, param: "input" });
  await fails("2,049 inputs", { model: served, input: Array(2049).fill(texts[0]) }, OpenAI.APIError, 413, "2049",
              { type: INVALID, code: null, param: "input" });
  await raises(`${dirName} models.retrieve of another model`, () => client.models.retrieve("text-embedding-3-small"),
               OpenAI.NotFoundError, 404, `'${served}'`, { type: INVALID, code: "model_not_found", param: "model" });
}

const INVALID = "invalid_request_error";

// Whether m is OpenAI's model object for the served model.
function isModel(m, served) {
  return m && m.id === served && m.object === "model" && m.owned_by === "attnd" && Number.isInteger(m.created) &&
         m.created > 0 && m.created <= Date.now() / 1000 + 1;
}

// Calls fn, which must throw Class with status, its message naming text,
// and the error body's type, code and param as shape says (OpenAI's).
async function raises(label, fn, Class, status, text, shape) {
  calls++;
  try {
    await fn();
    check(false, `${label}: no error`);
  } catch (e) {
    check(e instanceof Class && e.status === status,
          `${label}: ${e && e.constructor && e.constructor.name} ${e && e.status}, expected ${Class.name} ${status}: ${e && e.message}`);
    check(!text || String(e.message).includes(text), `${label}: the message '${e && e.message}' does not name ${text}`);
    for (const [k, v] of Object.entries(shape || {}))
      check(e && e[k] === v, `${label}: ${k} is ${JSON.stringify(e && e[k])}, expected ${JSON.stringify(v)}`);
  }
}

// A daemon with an API key: the client's key is the Bearer key; a missing
// or wrong one is its AuthenticationError in OpenAI's shape.
async function checkKey() {
  const dir = path.join(ROOT, "tests/fixtures/hf/bert_text");
  const d = await startDaemon(attndBin, ["--model-dir", dir, "--api-key", "s3cret"], {}, daemons);
  const client = (apiKey) => new OpenAI({ baseURL: d.base + "/v1", apiKey, maxRetries: 0, timeout: 30000 });
  const shape = { type: INVALID, code: "invalid_api_key", param: null };
  await raises("a wrong key: embeddings.create", () => client("wrong").embeddings.create({ input: "a" }),
               OpenAI.AuthenticationError, 401, "API key", shape);
  await raises("a wrong key: models.list", () => client("wrong").models.list(), OpenAI.AuthenticationError, 401,
               "API key", shape);
  // no key at all (the client always sends one): the same body
  const none = await fetch(d.base + "/v1/models");
  const body = await none.json();
  check(none.status === 401 && body.error && Object.entries(shape).every(([k, v]) => body.error[k] === v),
        `no key: ${none.status} ${JSON.stringify(body)}`);
  const res = await client("s3cret").embeddings.create({ input: "a", encoding_format: "float" });
  calls++;
  check(res.data && res.data.length === 1, "the right key: no embedding");
  const one = await client("s3cret").models.retrieve("encoder");
  calls++;
  check(isModel(one, "encoder"), `the right key: models.retrieve gave ${JSON.stringify(one)}`);
}

async function main() {
  await checkModel("bert_text", "mean_normalized", "mean", true);
  await checkModel("roberta_text", "cls_pooled", "cls", false);
  await checkModel("dense_text", "sentence_embedding", "cls", true);
  await checkKey();
  for (const p of problems.slice(0, 40)) console.log(p);
  console.log(`openai check: ${calls} calls with openai ${VERSION}, ` +
              `${compared} embeddings compared with text.safetensors (tolerance ${TOL}); ${problems.length} problems`);
  return problems.length ? 1 : 0;
}

const timer = setTimeout(() => {
  console.log(`openai check: gave up after ${TIME_LIMIT_MS} ms`);
  stop(1);
}, TIME_LIMIT_MS);

// Stops the daemons; each must exit 0 with no sanitizer report.
async function stop(code) {
  clearTimeout(timer);
  await stopDaemons(daemons);
  const bad = daemonProblems(daemons);
  for (const p of bad) console.log("FAILED: " + p);
  process.exit(bad.length ? 1 : code);
}

main().then(stop, (e) => {
  console.log("openai check: " + (e && e.stack ? e.stack : e));
  stop(1);
});
