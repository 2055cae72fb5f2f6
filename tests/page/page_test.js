// page_test.js - the page at GET / in headless Chromium, against a real
// build/attnd on 127.0.0.1 (an ephemeral port).  Run by `make test-page`:
//
//   node tests/page/page_test.js ATTND_BIN NODE_MODULES_DIR SCREENSHOT.png
//
// NODE_MODULES_DIR holds playwright-core (installed by the Makefile into the
// build directory, never committed); the browser is Debian's /usr/bin/chromium
// (CHROMIUM overrides).  It checks that the examples draw one L x L grid per
// head plus the mean, that hovering a cell shows exactly what /v1/encode
// returns for the same request (fetched here too), that the layer and mask
// controls change what is drawn, that bad input and a missing API key show
// an error in words, and saves a screenshot.  Bounded: it gives up after
// TIME_LIMIT_MS and always stops the daemons and the browser.
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [attndBin, modulesDir, shotPath] = process.argv.slice(2);
if (!attndBin || !modulesDir || !shotPath) {
  console.error("usage: node page_test.js ATTND_BIN NODE_MODULES_DIR SCREENSHOT.png");
  process.exit(2);
}
const { chromium } = require(require.resolve("playwright-core", { paths: [modulesDir] }));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TIME_LIMIT_MS = 180000;

const daemons = [];
let browser = null;
let userDataDir = null;
let checks = 0;

function check(cond, what) {
  checks++;
  if (!cond) throw new Error("FAILED: " + what);
}

// Starts attnd on 127.0.0.1:0; resolves with {proc, base, log()} once the
// log names the port and /health answers 200.
function startDaemon(args, env) {
  return new Promise((resolve, reject) => {
    const proc = spawn(attndBin, ["--host", "127.0.0.1", "--port", "0", ...args], {
      env: { ...process.env, OPENBLAS_NUM_THREADS: "1", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const d = { proc, base: null, text: "" };
    daemons.push(d);
    const timer = setTimeout(() => reject(new Error("attnd did not start:\n" + d.text)), 20000);
    proc.stderr.on("data", async (chunk) => {
      d.text += chunk;
      const m = !d.base && /listening on http:\/\/[^:\s]+:(\d+)/.exec(d.text);
      if (!m) return;
      d.base = "http://127.0.0.1:" + m[1];
      for (let i = 0; i < 200; i++) {
        try {
          if ((await fetch(d.base + "/health")).status === 200) {
            clearTimeout(timer);
            return resolve(d);
          }
        } catch (e) { /* not yet */ }
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    proc.on("exit", (code) => reject(new Error("attnd exited (" + code + "):\n" + d.text)));
  });
}

// Stops the browser and the daemons (SIGTERM, then up to 10 s each to exit).
async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  browser = null;
  for (const d of daemons) {
    if (d.proc.exitCode !== null || d.proc.signalCode !== null) continue;
    const exited = new Promise((r) => d.proc.once("exit", r));
    d.proc.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10000))]);
    if (d.proc.exitCode === null) d.proc.kill("SIGKILL");
  }
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  userDataDir = null;
}

// Does action, then waits until the page has finished one more run.
async function runAndWait(page, action) {
  const before = Number(await page.getAttribute("#results", "data-runs"));
  await action();
  await page.waitForFunction((b) => {
    const r = document.getElementById("results");
    return Number(r.dataset.runs) > b && r.dataset.state !== "loading";
  }, before);
  return page.getAttribute("#results", "data-state");
}

// The weight the tooltip shows when the mouse is over cell (i, j) of grid id.
async function hoverValue(page, id, i, j) {
  await page.hover(`#${id} .cell[data-i="${i}"][data-j="${j}"]`);
  return (await page.textContent("#tip-value")).trim();
}

// POSTs the request the page sent, as a client would, and returns the JSON.
async function fetchSame(base, body, headers) {
  const r = await fetch(base + "/v1/encode", {
    method: "POST", body, headers: { "Content-Type": "application/json", ...headers },
  });
  check(r.status === 200, "the page's own request answers 200, got " + r.status);
  return r.json();
}

async function gridSizes(page) {
  return page.$$eval("#grids figure", (figs) => figs.map((f) => ({
    id: f.id, cells: f.querySelectorAll(".cell").length,
    pad: f.querySelectorAll(".cell.pad").length,
  })));
}

async function main() {
  // A stack of 2 layers with 4 heads: small, and it has layers to choose.
  const d = await startDaemon(["--d-model", "16", "--n-heads", "4", "--d-ff", "32",
                               "--n-layers", "2", "--seed", "5"]);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "attnd-page-"));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 860 },
  });
  const page = browser.pages()[0] || (await browser.newPage());
  page.setDefaultTimeout(15000);
  const outside = [];
  page.on("request", (req) => {
    if (!daemons.some((x) => x.base && req.url().startsWith(x.base + "/"))) outside.push(req.url());
  });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  // 1. The textbook example runs on load.  This daemon's model is not the
  //    textbook one, so the page computes it and says so; the numbers are
  //    the textbook's.
  await page.goto(d.base + "/");
  await page.waitForFunction(() => document.getElementById("results").dataset.state === "done");
  let grids = await gridSizes(page);
  check(grids.length === 1 && grids[0].cells === 9, "ring: one 3x3 grid, got " + JSON.stringify(grids));
  check((await page.textContent("#note")).includes("Computed in this page"), "ring: says where it was computed");
  const ring = [[0.452, 0.274, 0.274], [0.186, 0.307, 0.507], [0.233, 0.384, 0.384]];
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) {
      const v = Number(await hoverValue(page, "grid-h0", i, j));
      check(Math.abs(v - ring[i][j]) < 1e-3, `ring A[${i}][${j}] = ${v}, textbook ${ring[i][j]}`);
    }
  const labels = await page.$$eval("#grid-h0 .ql", (els) => els.map((e) => e.textContent));
  check(labels.join(" ") === "the ring fell", "ring: token labels, got " + labels);

  // 2. Random embeddings through /v1/encode: 4 heads + the mean, each L x L,
  //    every hovered weight exactly what the API returns for that request.
  const L = 6;
  await page.selectOption("#source", "random");
  await page.fill("#rand-len", String(L));
  await page.fill("#rand-seed", "3");
  let st = await runAndWait(page, () => page.click("#run"));
  check(st === "done", "random: ran, state " + st + ": " + (await page.textContent("#error")));
  grids = await gridSizes(page);
  check(grids.length === 5, "random: 4 heads + mean, got " + grids.length);
  for (const g of grids) check(g.cells === L * L && g.pad === 0, `random: ${g.id} has ${g.cells} cells, want ${L * L}`);
  const body = await page.evaluate(() => window.attnd.lastRequest);
  let api = await fetchSame(d.base, body);
  const last = api.attention; // [H][L][L], the last layer
  check(api.attention_layers.length === 2, "random: asked for every layer");
  for (let h = 0; h < 4; h++)
    for (let i = 0; i < L; i++)
      for (let j = 0; j < L; j++) {
        if (h > 0 && (i + j) % 3) continue; // every cell of head 0, a third of the others
        const shown = await hoverValue(page, "grid-h" + h, i, j);
        check(Number(shown) === last[h][i][j], `head ${h} [${i}][${j}]: hover ${shown}, API ${last[h][i][j]}`);
      }
  for (let i = 0; i < L; i++) {
    const j = (i * 5) % L;
    const mean = last.reduce((s, A) => s + A[i][j], 0) / 4;
    const shown = Number(await hoverValue(page, "grid-mean", i, j));
    check(Math.abs(shown - mean) < 1e-6, `mean [${i}][${j}]: hover ${shown}, API heads average ${mean}`);
  }

  // 3. The layer selector: layer 0 of the stack.
  await page.selectOption("#layer", "0");
  const l0 = api.attention_layers.find((x) => x.layer === 0).attention;
  for (let i = 0; i < L; i++) {
    const shown = await hoverValue(page, "grid-h2", i, L - 1 - i);
    check(Number(shown) === l0[2][i][L - 1 - i], `layer 0 head 2 [${i}][${L - 1 - i}]: hover ${shown}, API ${l0[2][i][L - 1 - i]}`);
  }
  await page.selectOption("#layer", "1");

  // 4. Mask controls: causal, then a length (padding keys hatched).
  st = await runAndWait(page, () => page.check("#causal"));
  check(st === "done", "causal: ran");
  api = await fetchSame(d.base, await page.evaluate(() => window.attnd.lastRequest));
  check(api.attention[0][0][1] === 0, "causal: the API masks the future");
  check((await page.evaluate(() => JSON.parse(window.attnd.lastRequest).mask.causal)) === true, "causal: sent");
  await page.hover('#grid-h1 .cell[data-i="1"][data-j="4"]');
  const tip = await page.textContent("#tip");
  check(/: 0 \(masked\)/.test(tip), "causal: the tooltip says masked: " + tip);
  check(Number(await hoverValue(page, "grid-h1", 4, 1)) === api.attention[1][4][1], "causal: hover = API");
  st = await runAndWait(page, () => page.fill("#length", "4"));
  check(st === "done", "length: ran");
  grids = await gridSizes(page);
  for (const g of grids) check(g.cells === L * L && g.pad === L * L - 16, `length 4: ${g.id} has ${g.pad} padding cells`);
  api = await fetchSame(d.base, await page.evaluate(() => window.attnd.lastRequest));
  check(Number(await hoverValue(page, "grid-h3", 3, 2)) === api.attention[3][3][2], "length: hover = API");
  await page.fill("#length", "");
  st = await runAndWait(page, () => page.uncheck("#causal"));

  // 5. The screenshot: a sentence, every head and the mean, one cell hovered.
  await page.selectOption("#source", "sentence");
  st = await runAndWait(page, () => page.click("#run"));
  check(st === "done", "sentence: ran");
  grids = await gridSizes(page);
  for (const g of grids) check(g.cells === 36, `sentence: ${g.id} has ${g.cells} cells`);
  await page.hover('#grid-h1 .cell[data-i="4"][data-j="0"]');
  await page.screenshot({ path: shotPath, fullPage: true });

  // 6. Bad input: the API's error, in words, instead of heatmaps.
  await page.selectOption("#source", "paste");
  await page.fill("#paste", "[[1, 2, 3]]");
  st = await runAndWait(page, () => page.click("#run"));
  let err = await page.textContent("#error");
  check(st === "error" && (await page.isVisible("#error")), "bad d_model: an error is shown");
  check(err.includes("400") && err.includes("d_model is 16"), "bad d_model: the API's message: " + err);
  check((await page.$$("#grids .cell")).length === 0, "bad d_model: no stale grids");
  await page.fill("#paste", "[[1, 2,");
  st = await runAndWait(page, () => page.click("#run"));
  err = await page.textContent("#error");
  check(st === "error" && err.includes("not valid JSON"), "bad JSON: says so: " + err);
  // Pasted embeddings with labels work.
  const rows = JSON.stringify([0, 1, 2].map((k) => Array.from({ length: 16 }, (_, e) => ((e * 7 + k * 3) % 11) / 10 - 0.5)));
  await page.fill("#paste", rows);
  await page.fill("#paste-tokens", "a b c");
  st = await runAndWait(page, () => page.click("#run"));
  check(st === "done" && !(await page.isVisible("#error")), "paste: the error goes away");
  const cols = await page.$$eval("#grid-h0 .kl", (els) => els.map((e) => e.textContent));
  check(cols.join(" ") === "a b c", "paste: key labels, got " + cols);

  // 7. A daemon with an API key: the page loads, says the key is missing in
  //    words, and works once it is typed.
  const dk = await startDaemon(["--d-model", "8", "--n-heads", "2", "--d-ff", "16"], { ATTND_API_KEY: "s3cret" });
  await page.goto(dk.base + "/");
  await page.waitForFunction(() => document.getElementById("results").dataset.state === "error");
  err = await page.textContent("#error");
  check(err.includes("401") && err.includes("API key"), "no key: 401 in words: " + err);
  st = await runAndWait(page, async () => {
    await page.fill("#api-key", "s3cret");
    await page.press("#api-key", "Enter");
  });
  check(st === "done", "with the key: ran: " + (await page.textContent("#error")));
  grids = await gridSizes(page);
  check(grids.length === 1 && grids[0].cells === 9, "with the key: the ring example");

  // 8. The textbook model (config/textbook.json): the example runs on attnd
  //    and gives the textbook's numbers.
  const repo = path.resolve(__dirname, "..", "..");
  const dt = await startDaemon(["--config", path.join(repo, "config/textbook.json"),
                                "--weights", path.join(repo, "config/textbook.safetensors")]);
  await page.goto(dt.base + "/");
  await page.waitForFunction(() => document.getElementById("results").dataset.state === "done");
  check((await page.textContent("#note")).includes("Computed by attnd"), "textbook model: computed by attnd");
  api = await fetchSame(dt.base, await page.evaluate(() => window.attnd.lastRequest));
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) {
      const v = Number(await hoverValue(page, "grid-h0", i, j));
      check(v === api.attention[0][i][j] && Math.abs(v - ring[i][j]) < 1e-3,
            `textbook model A[${i}][${j}] = ${v}, API ${api.attention[0][i][j]}, textbook ${ring[i][j]}`);
    }

  check(outside.length === 0, "the page requested nothing but the daemon: " + outside.join(", "));
  check(pageErrors.length === 0, "no script errors: " + pageErrors.join("; "));
}

const guard = setTimeout(async () => {
  console.error("page test: over " + TIME_LIMIT_MS / 1000 + " s; giving up");
  await cleanup();
  process.exit(1);
}, TIME_LIMIT_MS);

main().then(async () => {
  clearTimeout(guard);
  await cleanup();
  // Each daemon shut down cleanly (and, in a sanitizer build, reported nothing).
  for (const d of daemons) {
    check(d.proc.exitCode === 0, "attnd exited " + d.proc.exitCode + " on SIGTERM:\n" + d.text.slice(-3000));
    check(!/AddressSanitizer|LeakSanitizer|runtime error:/.test(d.text), "sanitizer report:\n" + d.text.slice(-3000));
  }
  console.log(`page test: ${checks} checks passed; screenshot ${shotPath}`);
}).catch(async (e) => {
  clearTimeout(guard);
  console.error("page test: " + (e && e.stack ? e.stack : e));
  for (const d of daemons) console.error("--- attnd log:\n" + d.text.slice(-3000));
  await cleanup();
  process.exit(1);
});
