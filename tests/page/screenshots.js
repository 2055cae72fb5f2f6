// screenshots.js - docs/img's pictures of the page (make page-screenshots):
// the model view, the lines (head) view and the rollout of a sentence pair on
// tests/fixtures/hf/bert_text (2 layers x 4 heads, WordPiece), each opened
// from a URL fragment in headless Chromium at 1000 x 700 (the lines view
// with the pointer on a token) and saved as OUT_DIR/page-model.png,
// page-head.png, page-rollout.png.
//   node tests/page/screenshots.js ATTND NODE_MODULES OUT_DIR
"use strict";

const path = require("path");
const { launch } = require("./model_view.js");
const { startDaemon, stopDaemons } = require("../node/daemon.js");

const TEXT = "The cat sat on the mat.";
const PAIR = "It was there.";
const VIEWS = [
  { file: "page-model.png", view: "model", sel: "#model-view" },
  { file: "page-head.png", view: "lines", sel: "#lines-view", hover: '#lines-svg text.lt[data-side="left"][data-k="2"]' },
  { file: "page-rollout.png", view: "rollout", sel: "#rollout" },
];

async function main() {
  const [attndBin, modulesDir, outDir] = process.argv.slice(2);
  if (!attndBin || !modulesDir || !outDir) throw new Error("usage: node tests/page/screenshots.js ATTND NODE_MODULES OUT_DIR");
  const daemons = [];
  const d = await startDaemon(attndBin, ["--model-dir", path.join(__dirname, "../fixtures/hf/bert_text")], {}, daemons);
  const { page, close } = await launch(modulesDir, { width: 1000, height: 700 });
  try {
    for (const v of VIEWS) {
      const frag = new URLSearchParams({ text: TEXT, pair: PAIR, view: v.view, layer: "1", head: "all" }).toString();
      await page.goto("about:blank");
      await page.goto(d.base + "/#" + frag);
      await page.waitForFunction(() => document.getElementById("results").dataset.state === "done");
      if (v.hover) await page.hover(v.hover); // one token's lines, so that the heads' colours show
      await page.waitForTimeout(300); // the fonts settle
      const out = path.join(outDir, v.file);
      await (await page.$(v.sel)).screenshot({ path: out });
      console.log("wrote " + out);
    }
  } finally {
    await close();
    await stopDaemons(daemons);
  }
}

main().catch((e) => { console.error("screenshots: " + (e && e.stack || e)); process.exit(1); });
