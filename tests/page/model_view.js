// model_view.js - what the page test, the page's bench part and the
// screenshots share: headless Chromium launched as the page test launches it,
// and the 12-layer x 12-head model view's drawing time.
//
// Run alone, it is the bench part's measurement (bench/parts/page.sh):
//   node tests/page/model_view.js ATTND NODE_MODULES [ROUNDS]
// starts ATTND with a 12 x 12 stack of random weights, opens the page's
// model view on 128 random embeddings ROUNDS times (5), and prints each
// time from the response to the thumbnails drawn, their median, and a
// RESULT line.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// The 12 x 12 stack's daemon arguments (random weights, D 192).
const STACK_12 = ["--d-model", "192", "--n-heads", "12", "--d-ff", "384", "--n-layers", "12", "--seed", "3"];

// Headless Chromium with a fresh profile (modulesDir: where playwright-core
// is): resolves with {browser, page, close}.
async function launch(modulesDir, viewport) {
  const { chromium } = require(require.resolve("playwright-core", { paths: [modulesDir] }));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "attnd-page-"));
  const browser = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: viewport || { width: 1280, height: 860 },
  });
  const page = browser.pages()[0] || (await browser.newPage());
  page.setDefaultTimeout(15000);
  const close = async () => {
    await browser.close().catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { browser, page, close };
}

// Opens base's model view on len random embeddings and waits for it:
// {state, thumbs (the canvases drawn), ms (the page's time from the response
// to the view drawn), error}.
async function timeModelView(page, base, len) {
  await page.goto("about:blank");
  await page.goto(base + "/#view=model");
  await page.waitForFunction(() => document.getElementById("results").dataset.state === "done");
  await page.selectOption("#source", "random");
  const before = Number(await page.getAttribute("#results", "data-runs"));
  await page.fill("#rand-len", String(len));
  await page.click("#run");
  await page.waitForFunction((b) => {
    const r = document.getElementById("results");
    return Number(r.dataset.runs) > b && r.dataset.state !== "loading";
  }, before);
  return {
    state: await page.getAttribute("#results", "data-state"),
    thumbs: (await page.$$("#model-view canvas.thumb")).length,
    ms: await page.evaluate(() => window.attnd.modelDrawMs),
    error: await page.textContent("#error"),
  };
}

async function benchMain() {
  const [attndBin, modulesDir, roundsArg] = process.argv.slice(2);
  const rounds = Number(roundsArg || 5);
  const { startDaemon, stopDaemons } = require("../node/daemon.js");
  const daemons = [];
  const d = await startDaemon(attndBin, STACK_12, {}, daemons);
  const { page, close } = await launch(modulesDir);
  const times = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const t = await timeModelView(page, d.base, 128);
      if (t.state !== "done" || t.thumbs !== 12 * 13) throw new Error("model view not drawn: " + t.thumbs + " thumbnails; " + t.error);
      times.push(t.ms);
      console.log(`round ${r + 1}: model view drawn ${t.ms.toFixed(1)} ms after the response`);
    }
  } finally {
    await close();
    await stopDaemons(daemons);
  }
  times.sort((a, b) => a - b);
  const med = times[Math.floor(times.length / 2)];
  console.log(`model view, 12 layers x 12 heads, L = 128 (156 thumbnails): median ${med.toFixed(1)} ms of ${rounds} from the response to drawn`);
  console.log(`RESULT page_model_ms=${med.toFixed(1)}`);
}

if (require.main === module) {
  benchMain().catch((e) => { console.error("bench: " + (e && e.stack || e)); process.exit(1); });
}

module.exports = { launch, timeModelView, STACK_12 };
