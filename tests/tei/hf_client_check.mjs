// hf_client_check.mjs - Hugging Face's own client, @huggingface/inference
// (package.json's pin), pointed at attnd as an endpoint URL (make hf-check,
// run by make test):
//
//   node tests/tei/hf_client_check.mjs ATTND_BIN
//
// The client sends every task to the endpoint's URL itself, POST /, as
// {"inputs", "parameters"} (server/protocol/tei.c answers by the model's
// kind), and refuses a response whose shape its task does not expect.  On
// an embedding model (tests/fixtures/hf/bert_text) featureExtraction and
// sentenceSimilarity; on heads (tests/fixtures/pipelines) textClassification,
// tokenClassification and fillMask.  Each answer must be the one attnd's own
// routes give for the same input (/embed, /similarity, /v1/predict), and
// for the heads the pipelines' outputs in the fixture's pipeline.json
// (transformers' postprocess written out), scores within TOL.  Prints one
// summary line; exits 1 on any failure.  Bounded: TIME_LIMIT_MS, and the
// daemons are always stopped (each must exit 0 on SIGTERM).
import { createRequire } from "module";
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";
import { InferenceClient } from "@huggingface/inference";

const require = createRequire(import.meta.url);
const { startDaemon, stopDaemons, daemonProblems } = require("../node/daemon.js");
const CLIENT_VERSION = JSON.parse(
  fs.readFileSync(path.join(path.dirname(require.resolve("@huggingface/inference")), "..", "..", "package.json"), "utf8"),
).version;

const attndBin = process.argv[2] && path.resolve(process.argv[2]);
if (!attndBin) {
  console.error("usage: node tests/tei/hf_client_check.mjs ATTND_BIN");
  process.exit(2);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TIME_LIMIT_MS = 120000;
const TOL = 1e-5;
const daemons = [];
const problems = [];
let calls = 0;

function check(cond, what) {
  if (!cond) problems.push("FAILED: " + what);
  return cond;
}

// got against want: numbers within TOL, everything else equal.
function near(got, want, where) {
  if (typeof want === "number")
    return check(typeof got === "number" && Math.abs(got - want) <= TOL * Math.max(1, Math.abs(want)),
                 `${where}: ${got} is not ${want}`);
  if (Array.isArray(want)) {
    if (!check(Array.isArray(got) && got.length === want.length, `${where}: length ${got?.length}, want ${want.length}`))
      return false;
    return want.every((w, i) => near(got[i], w, `${where}[${i}]`));
  }
  if (want && typeof want === "object") {
    if (!check(got && typeof got === "object", `${where}: not an object`)) return false;
    return Object.keys(want).every((k) => near(got[k], want[k], `${where}.${k}`));
  }
  return check(got === want, `${where}: ${JSON.stringify(got)} is not ${JSON.stringify(want)}`);
}

async function daemon(dir) {
  const d = await startDaemon(attndBin, ["--model-dir", path.join(ROOT, dir)], {}, daemons);
  const client = new InferenceClient(undefined, { endpointUrl: d.base });
  const post = async (route, body) => {
    const r = await fetch(d.base + route, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    check(r.status === 200, `${dir} ${route}: ${r.status}`);
    return r.json();
  };
  return { client, post };
}

const pipeline = (name) =>
  JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/pipelines", name, "pipeline.json"), "utf8"));

async function embedding() {
  const { client, post } = await daemon("tests/fixtures/hf/bert_text");
  const texts = JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/hf/bert_text/text.json"), "utf8")).texts;
  const got = await client.featureExtraction({ inputs: texts.slice(0, 2) });
  calls++;
  near(got, await post("/embed", { inputs: texts.slice(0, 2) }), "featureExtraction");
  const one = await client.featureExtraction({ inputs: texts[0] });
  calls++;
  near(one, await post("/embed", { inputs: texts[0] }), "featureExtraction (one text)");
  const sim = await client.sentenceSimilarity({
    inputs: { source_sentence: texts[0], sentences: texts.slice(1, 3) },
  });
  calls++;
  near(sim, await post("/similarity", { inputs: { source_sentence: texts[0], sentences: texts.slice(1, 3) } }),
       "sentenceSimilarity");
  check(sim.length === 2 && sim.every((x) => x > -1 && x < 1), "sentenceSimilarity: two cosines");
}

async function heads() {
  // textClassification: the client keeps the first list of [[labels]]
  {
    const { client, post } = await daemon("tests/fixtures/pipelines/bert_text_cls");
    for (const c of pipeline("bert_text_cls").cases.filter((c) => !c.text_pair)) {
      const got = await client.textClassification({ inputs: c.text });
      calls++;
      near(got, c.output, `textClassification ${JSON.stringify(c.text)}`);
      near(got, (await post("/v1/predict", { inputs: c.text })).predictions, "textClassification vs /v1/predict");
    }
  }
  // tokenClassification: entity groups ("simple", the client's requirement)
  {
    const { client, post } = await daemon("tests/fixtures/pipelines/bert_ner");
    for (const c of pipeline("bert_ner").cases.filter((c) => c.aggregation_strategy === "simple")) {
      const got = await client.tokenClassification({ inputs: c.text, parameters: { aggregation_strategy: "simple" } });
      calls++;
      near(got, c.output, `tokenClassification ${JSON.stringify(c.text)}`);
      near(got, (await post("/v1/predict", { inputs: c.text })).predictions, "tokenClassification vs /v1/predict");
    }
  }
  // fillMask: one mask per text (the client's shape), top_k as asked
  {
    const { client, post } = await daemon("tests/fixtures/pipelines/roberta_fill_mask");
    for (const c of pipeline("roberta_fill_mask").cases.filter((c) => !Array.isArray(c.output[0]))) {
      const got = await client.fillMask({ inputs: c.text, parameters: { top_k: c.top_k } });
      calls++;
      near(got, c.output, `fillMask ${JSON.stringify(c.text)}`);
      near(got, (await post("/v1/predict", { inputs: c.text, top_k: c.top_k })).predictions, "fillMask vs /v1/predict");
    }
  }
}

async function main() {
  await embedding();
  await heads();
  for (const p of problems.slice(0, 40)) console.log(p);
  console.log(`hf client check: ${calls} calls with @huggingface/inference ${CLIENT_VERSION} ` +
              `against POST /, each compared with attnd's own route and the fixture; ${problems.length} problems`);
  return problems.length ? 1 : 0;
}

const timer = setTimeout(() => {
  console.log(`hf client check: gave up after ${TIME_LIMIT_MS} ms`);
  stop(1);
}, TIME_LIMIT_MS);

async function stop(code) {
  clearTimeout(timer);
  await stopDaemons(daemons);
  const bad = daemonProblems(daemons);
  for (const p of bad) console.log("FAILED: " + p);
  process.exit(bad.length ? 1 : code);
}

main().then(stop, (e) => {
  console.log("hf client check: " + (e && e.stack ? e.stack : e));
  stop(1);
});
