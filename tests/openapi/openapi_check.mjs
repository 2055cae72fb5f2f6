// openapi_check.mjs - the description against the daemon (make openapi-check,
// after the lint and the typed client's tsc --strict compile):
//
//   node tests/openapi/openapi_check.mjs ATTND_BIN OPENAPI.json NODE_MODULES CLIENT.mjs [RECORD_DIR]
//
// 1. runs the typed client (client.mts, compiled) against build/attnd on an
//    ephemeral 127.0.0.1 port: it sends only {embeddings} and reads typed
//    outputs, checked here against the request it sent;
// 2. sends every route every method the description names (and one it does
//    not), the encode options that change a response's form, errors of each
//    kind, /v2 JSON and binary, on a daemon with an API key and one without,
//    and token ids on one serving a Hugging Face directory, and validates
//    each response (validate.mjs);
// 3. validates every response the C test suite recorded in RECORD_DIR
//    (ATTND_TEST_RECORD, tests/daemon.c).
// Bounded: it gives up after TIME_LIMIT_MS and always stops the daemons.
import { createRequire } from "module";
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";
import { Validator, validateRecords } from "./validate.mjs";

const { startDaemon: startDaemonOf, stopDaemons, daemonProblems } =
  createRequire(import.meta.url)("../node/daemon.js");

const [attndBin, docPath, modulesDir, clientPath, recordDir] = process.argv.slice(2);
if (!clientPath) {
  console.error("usage: node openapi_check.mjs ATTND_BIN OPENAPI.json NODE_MODULES CLIENT.mjs [RECORD_DIR]");
  process.exit(2);
}
const TIME_LIMIT_MS = 120000;
const KEY = "s3cret-key";
const doc = JSON.parse(fs.readFileSync(docPath, "utf8"));
const validator = new Validator(doc, modulesDir);
const daemons = [];
const problems = [];
let sent = 0;

function check(cond, what) {
  if (!cond) problems.push("FAILED: " + what);
}

async function startDaemon(args) {
  return (await startDaemonOf(attndBin, args, {}, daemons)).base;
}

// One request; its response validated against the description.
async function send(base, method, target, { body, headers = {}, json = true } = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (json && !init.headers["Content-Type"]) init.headers["Content-Type"] = "application/json";
  }
  const r = await fetch(base + target, init);
  const res = {
    status: r.status,
    headers: Object.fromEntries([...r.headers].map(([k, v]) => [k.toLowerCase(), v])),
    body: Buffer.from(await r.arrayBuffer()),
  };
  sent++;
  const request = init.body === undefined ? null : Buffer.from(init.body);
  for (const p of validator.check(method, target, res, request)) problems.push(`${method} ${target}: ${p}`);
  return res;
}

const bodyJson = (res) => JSON.parse(res.body.toString("utf8"));

// Every path of the description, {name}, {model} and {version} filled in.
function concrete(template) {
  return template.replace("{name}", "encoder").replace("{model}", "encoder").replace("{version}", "1");
}

// A body for each of TEI's routes (server/protocol/tei.h) and POST /.
const TEI_BODIES = {
  "/": { inputs: "hello" },
  "/embed": { inputs: ["hello", "world"], normalize: false, dimensions: 4 },
  "/embed_all": { inputs: "hello" },
  "/embed_sparse": { inputs: "hello" },
  "/predict": { inputs: [["hello"], ["a", "b"]] },
  "/rerank": { query: "a", texts: ["b", "c"], return_text: true },
  "/similarity": { inputs: { source_sentence: "a", sentences: ["b"] } },
  "/tokenize": { inputs: "hello", add_special_tokens: false },
  "/decode": { ids: [[2, 3]], skip_special_tokens: false },
};

async function tour(base, key, D) {
  const auth = key ? { Authorization: "Bearer " + key } : {};
  const row = (s) => Array.from({ length: D }, (_, i) => Math.cos(i + s));
  const seq = [row(0), row(1), row(2)];
  const v2input = { name: "embeddings", datatype: "FP32", shape: [1, 3, D], data: seq.flat() };
  for (const [template, item] of Object.entries(doc.paths)) {
    const target = concrete(template);
    for (const method of ["get", "head", "options", "post", "put", "delete"]) {
      const op = item[method];
      let body;
      if (method === "post" || method === "put")
        body = template.startsWith("/v2") ? { inputs: [v2input] }
             : template === "/v1/tokenize" ? { text: "hello" }
             : template === "/v1/embeddings" ? { input: "hello" }
             : template === "/v1/predict" ? { inputs: "hello" }
             : TEI_BODIES[template] ?? { embeddings: seq };
      const res = await send(base, method.toUpperCase(), target, { body, headers: auth });
      // a seeded model has no tokenizer (nor head): /v1/tokenize, /v1/embeddings and /v1/predict
      // answer 400 (textTour has a tokenizer; the test suite's recorded /v1/predict answers a head)
      const noText = (["/v1/tokenize", "/v1/embeddings", "/v1/predict"].includes(template) &&
                      method === "post" && res.status === 400) ||
                     // TEI's routes: 422 without a tokenizer, 424 without the head they need
                     (TEI_BODIES[template] && method === "post" && [422, 424].includes(res.status));
      if (op) check(res.status < 300 || noText, `${method} ${template} answered ${res.status}`);
      else check(res.status === 405, `${method} ${template} (not described) answered ${res.status}`);
      if (key && op && !op.security) {
        const anon = await send(base, method.toUpperCase(), target, { body });
        check(anon.status === 401, `${method} ${template} without the key answered ${anon.status}`);
      }
    }
  }
  // /v1/encode's forms: every combination that changes the response's shape.
  const batch = [seq, [row(3), row(4), row(5)]];
  for (const embeddings of [seq, batch])
    for (const attention of ["heads", "mean", "none"])
      for (const encoding of ["json", "base64"])
        for (const attention_format of ["dense", "csr"])
          for (const extra of [{}, { attention_layers: "all" }, { lengths: Array.isArray(embeddings[0][0]) ? [3, 2] : [2] }]) {
            const res = await send(base, "POST", "/v1/encode", {
              headers: auth,
              body: { embeddings, attention, encoding, attention_format, precision: 4, ...extra },
            });
            check(res.status === 200, `encode ${attention} ${encoding} ${attention_format} ${JSON.stringify(extra)}: ${res.status}`);
          }
  const masked = await send(base, "POST", "/v1/encode", {
    headers: auth,
    body: { embeddings: seq, mask: { causal: true, window: { left: 1, right: null }, global: [0],
                                     key_padding: [false, false, true], strided: null,
                                     blocks: { size: 1, window: 1, random: 1, seed: 7 } } },
  });
  check(masked.status === 200, "masked encode: " + masked.status);
  // Errors of each kind the client can cause.
  const errorCases = [
    [400, "POST", "/v1/encode", { body: "{not json" }],
    [400, "POST", "/v1/encode", { body: { embeddings: seq, precision: 0 } }],
    [400, "POST", "/v1/encode", { body: { embedings: seq } }],
    [404, "GET", "/v1/nothing-here", {}],
    [404, "GET", "/v2/models/other", {}],
    [404, "GET", "/v2/models/encoder/versions/2/ready", {}],
    [414, "GET", "/v1/encode" + "a".repeat(300), {}], // a path over 255 bytes
    [414, "POST", "/v2/models/" + "a".repeat(300) + "/infer", { body: {} }],
    [405, "DELETE", "/v1/encode", {}],
    [413, "POST", "/v1/encode", { body: { embeddings: Array.from({ length: 70 }, () => seq) } }], // over max_batch (64, 4)
    [415, "POST", "/v1/encode", { body: { embeddings: seq }, json: false, headers: { "Content-Type": "text/plain" } }],
    [415, "POST", "/v1/encode", { body: { embeddings: seq }, headers: { "Content-Encoding": "gzip" } }],
    [400, "POST", "/v2/models/encoder/infer", { body: {} }],
    [400, "POST", "/v2/models/encoder/infer", { body: { inputs: [{ ...v2input, shape: [1, 2, D] }] } }],
    [415, "POST", "/v2/models/encoder/infer", { body: { inputs: [v2input] }, headers: { "Content-Encoding": "br" } }],
    // OpenAI's routes, in OpenAI's error shape
    [404, "GET", "/v1/models/text-embedding-3-small", {}],
    [404, "HEAD", "/v1/models/other", {}],
    [405, "POST", "/v1/models", { body: {} }],
    [414, "GET", "/v1/models/" + "a".repeat(300), {}],
    [400, "POST", "/v1/embeddings", { body: "{not json" }],
    [413, "POST", "/v1/embeddings", { body: { input: Array.from({ length: 2049 }, () => [1]) } }],
    [415, "POST", "/v1/embeddings", { body: { input: "a" }, json: false, headers: { "Content-Type": "text/plain" } }],
  ];
  for (const [status, method, target, opts] of errorCases) {
    const res = await send(base, method, target, { ...opts, headers: { ...auth, ...(opts.headers || {}) } });
    check(res.status === status, `${method} ${target}: ${res.status}, expected ${status}`);
  }
  // /v2 infer: JSON outputs, CSR, and binary tensors both ways.
  for (const parameters of [{}, { attention: "mean", causal: true }, { attention_format: "csr" },
                            { binary_data_output: true }, { window: "{\"left\": 1}" }]) {
    const res = await send(base, "POST", "/v2/models/encoder/versions/1/infer", {
      headers: auth, body: { id: "req-1", parameters, inputs: [v2input], outputs: [{ name: "outputs" }, { name: "attention" }] },
    });
    check(res.status === 200, `infer ${JSON.stringify(parameters)}: ${res.status}`);
  }
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: "embeddings", datatype: "FP32", shape: [1, 3, D], parameters: { binary_data_size: 12 * D } }],
  }));
  const tensor = Buffer.from(new Float32Array(seq.flat()).buffer);
  const bin = await send(base, "POST", "/v2/models/encoder/infer", {
    json: false, body: new Uint8Array(Buffer.concat([header, tensor])),
    headers: { ...auth, "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": String(header.length) },
  });
  check(bin.status === 200, "binary infer: " + bin.status);
}

// Token ids in, on a daemon serving a Hugging Face directory (its embedding
// module): /v1/model's embedding, /v1/encode's ids forms, /v2's metadata and
// ids as INT32 and INT64, JSON and binary, and their errors.
async function idsTour(base) {
  const model = await send(base, "GET", "/v1/model");
  check(model.status === 200 && bodyJson(model).embedding !== null, "ids: /v1/model has no embedding");
  await send(base, "GET", "/v2/models/encoder");
  const ids = [[2, 17, 31, 3], [2, 9, 3]];
  for (const body of [
    { input_ids: ids },
    { input_ids: ids, token_type_ids: [[0, 0, 1, 1], [0, 0, 0]], attention: "mean", encoding: "base64" },
    { input_ids: [[2, 17, 31, 3], [2, 9, 3, 0]], attention_mask: [[1, 0, 1, 1], [1, 1, 1, 0]], lengths: [4, 3] },
    { input_ids: [2, 17, 3], position_ids: [0, 1, 2], attention_format: "csr", attention_layers: "all" },
    { embeddings: [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]], attention_mask: [1] },
  ]) {
    const res = await send(base, "POST", "/v1/encode", { body });
    check(res.status === 200, `ids encode ${JSON.stringify(body).slice(0, 80)}: ${res.status}`);
  }
  for (const body of [{ input_ids: [[2, 50]] }, { input_ids: [[2, 1.5]] }, { input_ids: [[1, 0]], attention_mask: [[0, 0]] },
                      { input_ids: [[1]], embeddings: [[0]] }]) {
    const res = await send(base, "POST", "/v1/encode", { body });
    check(res.status === 400, `ids encode ${JSON.stringify(body)}: ${res.status}, expected 400`);
  }
  const flat = [2, 17, 31, 3, 2, 9, 3, 0];
  for (const datatype of ["INT32", "INT64"]) {
    const res = await send(base, "POST", "/v2/models/encoder/infer", { body: { inputs: [
      { name: "input_ids", datatype, shape: [2, 4], data: flat },
      { name: "token_type_ids", datatype, shape: [2, 4], data: [[0, 0, 1, 1], [0, 0, 0, 0]] },
      { name: "attention_mask", datatype, shape: [2, 4], data: [1, 1, 1, 1, 1, 1, 1, 0] }] } });
    check(res.status === 200, `ids infer ${datatype}: ${res.status}`);
  }
  const header = Buffer.from(JSON.stringify({ inputs: [
    { name: "input_ids", datatype: "INT64", shape: [2, 4], parameters: { binary_data_size: 64 } },
    { name: "lengths", datatype: "INT32", shape: [2], parameters: { binary_data_size: 8 } }],
    parameters: { binary_data_output: true } }));
  const tensor = Buffer.concat([Buffer.from(new BigInt64Array(flat.map(BigInt)).buffer),
                                Buffer.from(new Int32Array([4, 3]).buffer)]);
  const bin = await send(base, "POST", "/v2/models/encoder/infer", {
    json: false, body: new Uint8Array(Buffer.concat([header, tensor])),
    headers: { "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": String(header.length) },
  });
  check(bin.status === 200, "ids binary infer: " + bin.status);
  const bad = await send(base, "POST", "/v2/models/encoder/infer", { body: { inputs: [
    { name: "input_ids", datatype: "INT64", shape: [1, 2], data: [1, 4294967296] }] } });
  check(bad.status === 400, "ids infer outside int32: " + bad.status);
}

// Text in, on a directory with a tokenizer.json: /v1/model's tokenizer,
// /v1/tokenize's forms, /v1/encode with text (tokens and input_ids in the
// response), /v1/embeddings' forms (its sentence-transformers pooling), and
// their errors.
async function textTour(base) {
  const model = await send(base, "GET", "/v1/model");
  check(model.status === 200 && bodyJson(model).tokenizer !== null, "text: /v1/model has no tokenizer");
  const name = bodyJson(model).name;
  for (const body of [
    { text: "Hello, world!" },
    { text: ["Hello, world!", "the lazy dog"], add_special_tokens: false },
    { text: [["The quick brown fox.", "Jumps over the lazy dog!"]], truncate: true },
  ]) {
    const res = await send(base, "POST", "/v1/tokenize", { body });
    check(res.status === 200, `tokenize ${JSON.stringify(body).slice(0, 80)}: ${res.status}`);
  }
  for (const body of [
    { text: "Hello, world!" },
    { text: ["Hello, world!", "the lazy dog"], attention: "mean", encoding: "base64" },
    { text: [["The quick brown fox.", "Jumps over the lazy dog!"]], attention_format: "csr" },
    { text: "hello ".repeat(100), truncate: true, attention: "none" },
  ]) {
    const res = await send(base, "POST", "/v1/encode", { body });
    check(res.status === 200, `text encode ${JSON.stringify(body).slice(0, 80)}: ${res.status}`);
  }
  for (const body of [
    { input: "Hello, world!" },
    { input: ["Hello, world!", "the lazy dog"], model: name, encoding_format: "float", user: "u-1" },
    { input: [2, 775, 720, 10, 3] },
    { input: [[2, 775, 720, 10, 3], [2, 531, 3]], encoding_format: "base64" },
    { input: ["Hello, world!", "the lazy dog"], encoding_format: "base64", dimensions: 8 },
    { input: "Hello, world!", dimensions: 1 },
  ]) {
    const res = await send(base, "POST", "/v1/embeddings", { body });
    check(res.status === 200, `embeddings ${JSON.stringify(body).slice(0, 80)}: ${res.status}`);
  }
  for (const [status, path, body] of [[413, "/v1/encode", { text: "hello ".repeat(100) }],
                                      [400, "/v1/encode", { text: 5 }],
                                      [400, "/v1/tokenize", { text: "a", add_special_tokens: 1 }],
                                      [404, "/v1/embeddings", { input: "a", model: "text-embedding-3-small" }],
                                      [400, "/v1/embeddings", { input: "a", dimensions: 33 }],
                                      [400, "/v1/embeddings", { input: [] }],
                                      [400, "/v1/embeddings", { input: "a", encoding_format: "int8" }],
                                      [400, "/v1/embeddings", { input: "a", pooling: "cls" }],
                                      [413, "/v1/embeddings", { input: "hello ".repeat(100) }]]) {
    const res = await send(base, "POST", path, { body });
    check(res.status === status, `text ${path} ${JSON.stringify(body).slice(0, 60)}: ${res.status}, expected ${status}`);
  }
}

async function main() {
  // 1. The typed client, against a daemon that wants no key.
  const base = await startDaemon(["--n-layers", "2"]);
  const client = await import(pathToFileURL(path.resolve(clientPath)).href);
  const D = await client.modelDim(base);
  const out = await client.encodeOnce(base, D);
  check(D === 512, "the typed client read d_model " + D);
  check(JSON.stringify(out.shape) === JSON.stringify([2, D]), "client: shape " + JSON.stringify(out.shape));
  check(Array.isArray(out.outputs) && out.outputs.length === 2 && out.outputs.every((r) => r.length === D &&
        r.every(Number.isFinite)), "client: outputs are [2][d_model] finite numbers");
  // Post-norm: each output row has mean 0 and variance 1 (LayerNorm, weight 1, bias 0 when seeded).
  for (const r of out.outputs) {
    const mean = r.reduce((a, b) => a + b, 0) / D;
    const v = r.reduce((a, b) => a + (b - mean) ** 2, 0) / D;
    check(Math.abs(mean) < 1e-4 && Math.abs(v - 1) < 1e-3, `client: output row mean ${mean}, variance ${v}`);
  }
  check(out.usage.tokens === 2 && out.usage.sequences === 1, "client: usage " + JSON.stringify(out.usage));
  // 2. Every route, form and error, without a key and with one.
  await tour(base, null, D);
  const keyed = await startDaemon(["--n-layers", "2", "--d-model", "16", "--n-heads", "2", "--d-ff", "8",
                                   "--api-key", KEY, "--max-batch", "4", "--activation", "gelu_tanh"]);
  await tour(keyed, KEY, 16);
  // Token ids, on a Hugging Face directory.
  await idsTour(await startDaemon(["--model-dir", "tests/fixtures/hf/bert_mlm"]));
  // Text, on a Hugging Face directory with its tokenizer.json.
  await textTour(await startDaemon(["--model-dir", "tests/fixtures/hf/bert_text"]));
  const live = sent;
  // 3. What the C suite recorded.
  let recorded = 0;
  if (recordDir) {
    const r = validateRecords(validator, recordDir);
    recorded = r.n;
    problems.push(...r.problems);
    check(recorded >= 100, `only ${recorded} recorded responses in ${recordDir}`);
  }
  for (const p of problems.slice(0, 60)) console.log(p);
  const statuses = [...new Set([...validator.seen.keys()].map((k) => k.split(" ").pop()))].sort();
  console.log(`openapi check: ${live} live responses and ${recorded} recorded by the test suite validated ` +
    `(and ${validator.requests} requests the daemon took); ` +
    `statuses seen ${statuses.join(" ")}; ${problems.length} problems`);
  return problems.length ? 1 : 0;
}

const timer = setTimeout(() => {
  console.error(`openapi check: gave up after ${TIME_LIMIT_MS} ms`);
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
  console.error(e && e.stack ? e.stack : e);
  stop(1);
});
