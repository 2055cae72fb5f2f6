// Reference tokenizations from Hugging Face's own tokenizers library: the npm
// package `tokenizers` (pinned in package.json) is the official Node binding of
// the Rust crate (huggingface/tokenizers, bindings/node, prebuilt napi binaries),
// i.e. the same code transformers runs through the Python binding.
//
// usage: node tests/tokenizer/reference.mjs [FIXTURES_DIR]
//
// For every FIXTURES_DIR/<name>/tokenizer.json (default tests/fixtures/tokenizers)
// it writes FIXTURES_DIR/<name>/reference.json: for each text of
// FIXTURES_DIR/texts.json ("texts") and each pair ("pairs", encoded as
// encode(a, b)), with add_special_tokens true ("with_special") and false
// ("without_special"): ids, tokens, type_ids, special_tokens_mask, offsets, and
// for pairs sequence_ids (null for special tokens added by the post-processor).
// An encoding the library throws on records { error: message } in place of its half.
// Truncation and padding are switched off (the fixtures have them null anyway).
//
// Offsets: [start, stop) in Unicode code points (chars) of the input sequence the
// token comes from (for pairs, of a or of b), exactly what Python's tokenizers
// gives (Tokenizer.encode -> encode_char_offsets).  The Node binding also calls
// encode_char_offsets, so its getOffsets() already counts code points -- not UTF-8
// bytes, not UTF-16 code units.  Checked with roberta (byte-level BPE):
//   "😀é world"  ->  ð Ł ĺ Ģ [0,1) x4, Ã © [1,2) x2, Ġworld [3,8)
// (UTF-16 would put Ġworld at [4,9), UTF-8 bytes at [7,12)).  No conversion is
// done; the script re-checks this on startup and stops if it ever changes.
// Special tokens added by the post-processor have offsets [0,0).
//
// Output is deterministic: a header, then one JSON item per line, in texts.json order.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const LIB_VERSION = JSON.parse(
  fs.readFileSync(path.join(path.dirname(require.resolve("tokenizers")), "package.json"), "utf8"),
).version;

const DIR = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? "tests/fixtures/tokenizers";
const { texts, pairs } = JSON.parse(fs.readFileSync(path.join(DIR, "texts.json"), "utf8"));

async function encode(tok, a, b, addSpecialTokens) {
  try {
    const e = await tok.encode(a, b, { addSpecialTokens });
    const out = {
      ids: e.getIds(),
      tokens: e.getTokens(),
      type_ids: e.getTypeIds(),
      special_tokens_mask: e.getSpecialTokensMask(),
      offsets: e.getOffsets().map(([s, t]) => [s, t]),
    };
    if (b !== null) out.sequence_ids = e.getSequenceIds().map((x) => (x === undefined ? null : x));
    return out;
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

// The offsets unit, checked rather than assumed (see the header comment).
async function checkOffsetUnit(tok) {
  const text = "😀é world"; // U+1F600 (4 UTF-8 bytes, 2 UTF-16 units), U+00E9 (2 bytes, 1 unit)
  const e = await tok.encode(text, null, { addSpecialTokens: false });
  const offs = e.getOffsets();
  const last = offs[offs.length - 1];
  const cps = Array.from(text);
  const want = [cps.length - 5, cps.length]; // "world" in code points: [3, 8)
  if (last[0] !== want[0] || last[1] !== want[1]) {
    throw new Error(`offsets are not code points: "world" of ${JSON.stringify(text)} at [${last}], want [${want}]`);
  }
}

const names = fs
  .readdirSync(DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory() && fs.existsSync(path.join(DIR, d.name, "tokenizer.json")))
  .map((d) => d.name)
  .sort();

let checked = false;
for (const name of names) {
  const tok = Tokenizer.fromFile(path.join(DIR, name, "tokenizer.json"));
  tok.disableTruncation();
  tok.disablePadding();
  if (!checked && name === "roberta") {
    await checkOffsetUnit(tok);
    checked = true;
  }

  const items = [];
  for (const text of texts) {
    items.push({
      text,
      with_special: await encode(tok, text, null, true),
      without_special: await encode(tok, text, null, false),
    });
  }
  const pairItems = [];
  for (const [a, b] of pairs) {
    pairItems.push({
      text: a,
      text_pair: b,
      with_special: await encode(tok, a, b, true),
      without_special: await encode(tok, a, b, false),
    });
  }

  const header = {
    source: `tokenizers ${LIB_VERSION} (Hugging Face's Rust tokenizers, Node binding; tests/tokenizer/reference.mjs)`,
    library: { name: "tokenizers", version: LIB_VERSION },
    offsets: "code points of the input sequence (Python encode_char_offsets); specials [0,0)",
  };
  let out = "{\n";
  for (const [k, v] of Object.entries(header)) out += `${JSON.stringify(k)}: ${JSON.stringify(v)},\n`;
  out += '"items": [\n' + items.map((x) => JSON.stringify(x)).join(",\n") + "\n],\n";
  out += '"pairs": [\n' + pairItems.map((x) => JSON.stringify(x)).join(",\n") + "\n]\n}\n";
  fs.writeFileSync(path.join(DIR, name, "reference.json"), out);
  const errors = [...items, ...pairItems].filter((x) => x.with_special.error || x.without_special.error).length;
  console.log(`${name}: ${items.length} texts, ${pairItems.length} pairs, ${errors} errors`);
}
if (!checked) console.warn("warning: no roberta fixture, offset unit not re-checked");
