// examples.mjs - the examples of docs/api.md and README.md, each run against
// the daemon (make docs-examples, run by make test):
//
//   node tests/docs/examples.mjs ATTND_BIN NODE_MODULES_DIR WORK_DIR docs/api.md [README.md ...]
//
// The first document is the reference: every route of ROUTES needs a sh
// example there, and a python and a ts example in one of the documents (the
// clients' guide has them).  In every document, a sh block that calls
// curl on localhost:8080 must be an example, so no curl a reader copies goes
// unchecked.
//
// An example is a fenced code block whose info string is sh, python or ts,
// on the line right after a marker
//
//   <!-- example: ROUTE-ID -->                          on the default daemon
//   <!-- example: ROUTE-ID args="--api-key s3cret" -->  on a daemon of its own
//
// (a block without a marker is an illustration and is not run).  Examples
// are written for a reader, against http://localhost:8080, the daemon's
// default; here that text (and localhost:8080) becomes the test daemon's
// address.  sh runs with bash -euo pipefail, python with Debian's
// /usr/bin/python3 (requests), ts is compiled with tsc --strict (every ts
// example in one program; it may import the packages of package.json, such
// as openai) and run with node.  Each runs in a directory of its
// own under WORK_DIR (where its code and output stay), one at a time.
//
// An example passes when it exits 0 within its time, printed (on stdout)
// each text its "# => TEXT" lines (sh, python) or "// => TEXT" lines (ts)
// name, at least one, and the daemon's access log shows that it called its
// route.  The run fails when an example fails, a marker is malformed or
// names no known route, a route of ROUTES lacks its sh example in the
// reference or its python or ts example in the documents, or a curl block is not an example.  Bounded: TIME_LIMIT_MS in all, EXAMPLE_MS per example; the
// daemons are always stopped.
import { createRequire } from "module";
import { spawn } from "child_process";
import fs from "fs";
import path from "path";

const { startDaemon, stopDaemons, daemonProblems } = createRequire(import.meta.url)("../node/daemon.js");

const [attndBin, modulesDir, workDir] = process.argv.slice(2, 5).map((a) => a && path.resolve(a));
const docPaths = process.argv.slice(5);
if (!docPaths.length) {
  console.error("usage: node tests/docs/examples.mjs ATTND_BIN NODE_MODULES_DIR WORK_DIR docs/api.md [README.md ...]");
  process.exit(2);
}
const TIME_LIMIT_MS = 240000;
const EXAMPLE_MS = 30000;
const PYTHON = "/usr/bin/python3";
const LANGS = ["sh", "python", "ts"];
const DOC_BASE = "http://localhost:8080";

// The routes every one of which needs a sh, a python and a ts example: the
// marker's ROUTE-ID, the route, and the path of the access-log line
// (METHOD PATH STATUS ...) that shows an example called it.
const NAME = "[^/ ]+";
const VERSION = `(/versions/${NAME})?`;
const ROUTES = {
  "encode": ["POST /v1/encode", "/v1/encode"],
  "tokenize": ["POST /v1/tokenize", "/v1/tokenize"],
  "embeddings": ["POST /v1/embeddings", "/v1/embeddings"],
  "models": ["GET /v1/models", `/v1/models(/${NAME})?`],
  "predict": ["POST /v1/predict", "/v1/predict"],
  "tei": ["TEI's routes", "/(?:embed|embed_all|embed_sparse|predict|rerank|similarity|tokenize|decode|info)?"],
  "health": ["GET /health", "/health"],
  "model": ["GET /v1/model", "/v1/model"],
  "metrics": ["GET /metrics", "/metrics"],
  "openapi": ["GET /openapi.json", "/openapi\\.json"],
  "page": ["GET /", "/"],
  "v2-server": ["GET /v2", "/v2"],
  "v2-live": ["GET /v2/health/live", "/v2/health/live"],
  "v2-ready": ["GET /v2/health/ready", "/v2/health/ready"],
  "v2-model": ["GET /v2/models/{name}", `/v2/models/${NAME}${VERSION}`],
  "v2-model-ready": ["GET /v2/models/{name}/ready", `/v2/models/${NAME}${VERSION}/ready`],
  "v2-infer": ["POST /v2/models/{name}/infer", `/v2/models/${NAME}${VERSION}/infer`],
};
const routeLog = Object.fromEntries(Object.entries(ROUTES).map(([id, [, p]]) =>
  [id, new RegExp(`^[A-Z]+ ${p} \\d{3} `, "m")]));

const started = Date.now();
const daemons = [];
const running = new Set(); // the examples' processes running now
const problems = []; // what is wrong with the document itself

// ---- the examples of the document -------------------------------------------

// Every marked block of the document at docPath: {route, lang, args, code,
// line, doc}.
function parseExamples(docPath) {
  const text = fs.readFileSync(docPath, "utf8");
  const lines = text.split("\n");
  const found = [];
  let fence = null; // the open fence's backticks, inside a code block
  let marker = null; // {route, args, line}: a marker waiting for its block
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (fence) {
      if (line.trim() === fence) fence = null;
      continue;
    }
    const open = /^(```+)\s*([A-Za-z0-9_+-]*)\s*$/.exec(line);
    const m = /^<!--\s*example:(.*?)-->\s*$/.exec(line);
    if (marker && !open) {
      problems.push(`${docPath}:${marker.line}: the marker is not followed by a code block`);
      marker = null;
    }
    if (m) {
      marker = parseMarker(docPath, m[1], i + 1);
      continue;
    }
    if (!open) {
      if (/^\s*<!--\s*example/.test(line)) problems.push(`${docPath}:${i + 1}: malformed example marker`);
      continue;
    }
    fence = open[1];
    const lang = open[2];
    let end = i + 1;
    while (end < lines.length && lines[end].trim() !== fence) end++;
    if (marker) {
      if (!LANGS.includes(lang))
        problems.push(`${docPath}:${i + 1}: an example's block is '${lang}', not one of ${LANGS.join(", ")}`);
      else
        found.push({ ...marker, lang, code: lines.slice(i + 1, end).join("\n") + "\n", line: i + 1,
                     doc: docPath });
      marker = null;
    } else if (lang === "sh" && /\bcurl\b[^\n]*localhost:8080/.test(lines.slice(i + 1, end).join("\n"))) {
      problems.push(`${docPath}:${i + 1}: a sh block calls curl on localhost:8080 but is no example ` +
                    "(mark it <!-- example: ROUTE-ID -->, with its # => lines)");
    }
  }
  if (marker) problems.push(`${docPath}:${marker.line}: the marker is not followed by a code block`);
  return found;
}

// " ROUTE-ID" or ' ROUTE-ID args="..."' (a marker's text after "example:").
function parseMarker(docPath, text, line) {
  const m = /^\s*([a-z0-9-]+)((?:\s+[a-z]+="[^"]*")*)\s*$/.exec(text);
  if (!m) {
    problems.push(`${docPath}:${line}: malformed example marker '${text.trim()}'`);
    return null;
  }
  const attrs = Object.fromEntries([...m[2].matchAll(/([a-z]+)="([^"]*)"/g)].map((a) => [a[1], a[2]]));
  for (const k of Object.keys(attrs))
    if (k !== "args") problems.push(`${docPath}:${line}: unknown marker attribute '${k}'`);
  if (!(m[1] in ROUTES)) {
    problems.push(`${docPath}:${line}: unknown route '${m[1]}'; the routes are ${Object.keys(ROUTES).join(", ")}`);
    return null;
  }
  return { route: m[1], args: (attrs.args || "").trim(), line };
}

// The texts an example's "# =>" / "// =>" lines say its output holds.
function expectations(ex) {
  const re = ex.lang === "ts" ? /^\s*\/\/ => (.*)$/ : /^\s*# => (.*)$/;
  return ex.code.split("\n").map((l) => re.exec(l)).filter(Boolean).map((m) => m[1].trim()).filter((t) => t);
}

// ---- running them ------------------------------------------------------------

// Runs cmd; resolves {code, stdout, stderr, timedOut}.
function run(cmd, args, { cwd, timeoutMs = EXAMPLE_MS } = {}) {
  return new Promise((resolve) => {
    const env = { ...process.env, NO_PROXY: "127.0.0.1,localhost", no_proxy: "127.0.0.1,localhost",
                  PYTHONDONTWRITEBYTECODE: "1", LC_ALL: "C.UTF-8" };
    const proc = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    running.add(proc);
    let stdout = "", stderr = "", timedOut = false;
    proc.stdout.on("data", (c) => (stdout += c));
    proc.stderr.on("data", (c) => (stderr += c));
    const left = Math.max(1000, Math.min(timeoutMs, TIME_LIMIT_MS - (Date.now() - started)));
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-proc.pid, "SIGKILL"); } catch { /* gone */ }
    }, left);
    proc.on("error", (e) => { stderr += String(e); });
    proc.on("close", (code, signal) => {
      running.delete(proc);
      clearTimeout(timer);
      resolve({ code: code === null ? signal : code, stdout, stderr, timedOut });
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The example's code with the reader's address replaced by the daemon's.
function localize(code, base) {
  return code.split(DOC_BASE).join(base).split("localhost:8080").join(base.replace(/^http:\/\//, ""));
}

// Compiles every ts example (dir/NAME.mts) in one tsc --strict program; an
// example that does not compile is set aside (its errors in ex.compileError)
// and the rest compiled again without it.  The examples are checked, not the
// packages' declaration files (--skipLibCheck): openai's reach for undici's
// when it is installed (another package brings it), and those want
// @types/node, which the examples do not use.
async function compileTs(exs, dir) {
  const tsc = path.join(modulesDir, ".bin", "tsc");
  let todo = exs.slice();
  while (todo.length) {
    const r = await run(tsc, ["--strict", "--target", "es2022", "--module", "nodenext",
                              "--moduleResolution", "nodenext", "--lib", "es2022,dom",
                              "--skipLibCheck", "--noEmitOnError", "--pretty", "false",
                              ...todo.map((ex) => ex.file)], { cwd: dir, timeoutMs: 120000 });
    if (r.code === 0) return;
    const out = r.stdout + r.stderr;
    const bad = todo.filter((ex) => out.includes(path.basename(ex.file) + "("));
    if (!bad.length) {
      for (const ex of todo) ex.compileError = "tsc failed:\n" + out;
      return;
    }
    for (const ex of bad)
      ex.compileError = out.split("\n").filter((l) => l.includes(path.basename(ex.file))).join("\n");
    todo = todo.filter((ex) => !bad.includes(ex));
  }
}

// Runs one example (its files already written); returns null or what failed.
async function runExample(ex, daemon) {
  if (ex.compileError) return "does not compile:\n" + ex.compileError;
  const want = expectations(ex);
  if (!want.length) return `no "${ex.lang === "ts" ? "//" : "#"} => TEXT" line says what it prints`;
  const logFrom = daemon.text.length;
  const cmd = ex.lang === "sh" ? ["bash", ["-euo", "pipefail", ex.file]]
            : ex.lang === "python" ? [PYTHON, [ex.file]]
            : [process.execPath, [ex.file.replace(/\.mts$/, ".mjs")]];
  const r = await run(cmd[0], cmd[1], { cwd: ex.dir });
  ex.result = r;
  fs.writeFileSync(path.join(ex.dir, "stdout"), r.stdout);
  fs.writeFileSync(path.join(ex.dir, "stderr"), r.stderr);
  const tail = (s) => s.trimEnd().split("\n").slice(-15).join("\n");
  const said = `\n--- stdout:\n${tail(r.stdout)}\n--- stderr:\n${tail(r.stderr)}`;
  if (r.timedOut) return `timed out${said}`;
  if (r.code !== 0) return `exited ${r.code}${said}`;
  if (!r.stdout.trim()) return `printed nothing${said}`;
  const missing = want.filter((t) => !r.stdout.includes(t));
  if (missing.length) return `its output lacks ${missing.map((t) => JSON.stringify(t)).join(", ")}${said}`;
  // The access log line of its route (written as the response completes).
  for (let i = 0; i < 40 && !routeLog[ex.route].test(daemon.text.slice(logFrom)); i++) await sleep(25);
  if (!routeLog[ex.route].test(daemon.text.slice(logFrom)))
    return `the daemon's log shows no request to ${ROUTES[ex.route][0]}${said}`;
  return null;
}

async function main() {
  const examples = docPaths.flatMap(parseExamples);
  for (const id of Object.keys(ROUTES))
    for (const lang of LANGS)
      if (!examples.some((ex) => (lang !== "sh" || ex.doc === docPaths[0]) && ex.route === id && ex.lang === lang))
        problems.push(lang === "sh" ? `${docPaths[0]}: route ${id} (${ROUTES[id][0]}) has no sh example`
                                    : `route ${id} (${ROUTES[id][0]}) has no ${lang} example in ${docPaths.join(", ")}`);

  // A daemon per distinct args: the default model, and those examples ask for.
  const byArgs = new Map();
  try {
    for (const ex of examples) {
      if (!byArgs.has(ex.args)) {
        const args = ex.args ? ex.args.split(/\s+/) : [];
        byArgs.set(ex.args, await startDaemon(attndBin, args, {}, daemons));
      }
    }
    // Each example's directory and file: WORK_DIR/NN-route-lang/.
    const tsDir = path.join(workDir, "ts");
    fs.mkdirSync(tsDir, { recursive: true });
    examples.forEach((ex, i) => {
      const name = `${String(i + 1).padStart(2, "0")}-${ex.route}-${ex.lang}`;
      ex.name = name;
      ex.dir = path.join(workDir, name);
      fs.mkdirSync(ex.dir, { recursive: true });
      const code = localize(ex.code, byArgs.get(ex.args).base);
      ex.code = code;
      const ext = { sh: ".sh", python: ".py", ts: ".mts" }[ex.lang];
      ex.file = path.join(ex.lang === "ts" ? tsDir : ex.dir, "example-" + name + ext);
      fs.writeFileSync(ex.file, code);
    });
    await compileTs(examples.filter((ex) => ex.lang === "ts"), tsDir);

    let failed = 0;
    for (const ex of examples) {
      const where = `${ex.doc}:${ex.line}`;
      const label = `${ex.route.padEnd(15)} ${ex.lang.padEnd(7)}`;
      const error = Date.now() - started > TIME_LIMIT_MS
        ? `not run: the time limit (${TIME_LIMIT_MS / 1000} s) is spent`
        : await runExample(ex, byArgs.get(ex.args));
      if (error) failed++;
      console.log(`${error ? "FAILED" : "ok    "} ${label} ${where}${ex.args ? ` (attnd ${ex.args})` : ""}`);
      if (error) console.log("  " + error.split("\n").join("\n  "));
    }
    for (const p of problems) console.log("FAILED " + p);
    console.log(`docs examples: ${examples.length} run, ${failed} failed` +
                (problems.length ? `; ${problems.length} problem(s) with the document` : ""));
    return failed || problems.length ? 1 : 0;
  } finally {
    await stopDaemons(daemons);
  }
}

// Whatever ends the run, the example running and the daemons are stopped first.
async function finish(code, message) {
  if (message) console.log(message);
  for (const proc of running) {
    try { process.kill(-proc.pid, "SIGKILL"); } catch { /* gone */ }
  }
  await stopDaemons(daemons);
  const bad = daemonProblems(daemons); // each exits 0, with no sanitizer report
  for (const p of bad) console.log("FAILED " + p);
  process.exit(bad.length ? 1 : code);
}
const overall = setTimeout(() => finish(1, `docs examples: over the time limit (${TIME_LIMIT_MS / 1000} s)`),
                           TIME_LIMIT_MS + 30000);
for (const sig of ["SIGINT", "SIGTERM"])
  process.on(sig, () => finish(1, `docs examples: stopped by ${sig}`));
main().then(
  (code) => { clearTimeout(overall); return finish(code); },
  (e) => { clearTimeout(overall); return finish(1, "docs examples: " + (e.stack || e)); },
);
