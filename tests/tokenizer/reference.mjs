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
// Decoding: each text and pair also records "decoded" and "decoded_skip",
// decode(ids, false) and decode(ids, true) of its with_special ids.  "decodes"
// adds id lists that reach the decoders' edges (decodeLists): every id of the
// tokenizer, 64 a list; every prefix of texts whose characters a byte-level or
// byte-fallback model takes apart into bytes; ids reversed, continuation
// pieces first; the added tokens around a text; no ids.  "decoders" (for the
// tokenizers DECODERS names) decodes id lists with the file's "decoder"
// replaced by another: { decoder, decodes }, or { decoder, refused: message }
// where the library refuses to load it.  In "decodes" and "decoders", an id
// list's decoded_skip is left out where it equals its decoded.
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

// ---- decoding --------------------------------------------------------------

async function decode(tok, ids) {
  return { ids, decoded: await tok.decode(ids, false), decoded_skip: await tok.decode(ids, true) };
}

// decode's, decoded_skip left out where it is decoded (in "decodes" and
// "decoders", to keep the files small).
async function decodeShort(tok, ids) {
  const d = await decode(tok, ids);
  if (d.decoded_skip === d.decoded) delete d.decoded_skip;
  return d;
}

// Every id that has a token (added tokens included), ascending.
function allIds(tok) {
  const max = Math.max(...Object.values(tok.getVocab(true)));
  const ids = [];
  for (let id = 0; id <= max; id++) if (tok.idToToken(id) !== null) ids.push(id);
  return ids;
}

// The added tokens' ids, as the library numbers them.
function addedIds(tok, json) {
  return (json.added_tokens ?? []).map((a) => tok.tokenToId(a.content)).filter((id) => id !== null);
}

const idsOf = async (tok, text, special) =>
  (await tok.encode(text, null, { addSpecialTokens: special })).getIds();

// Texts whose every prefix is decoded: characters a byte-level model
// (roberta) or a byte-fallback one (llama) takes apart into bytes.
const PREFIX_TEXTS = ["emoji 😀 😂👍 🎉", "我们在中国学习中文。", "crème brûlée à la française", "<0x41> <unk> <0xFF>"];
// Texts decoded reversed (continuation pieces and their marks first), and
// between the added tokens.
const REVERSED_TEXTS = [
  "Unbelievably, the reorganization was overwhelmingly successful.",
  "I don't think it's right; we'll see, they've gone, I'm here, you'd know.",
];

// Every id is decoded once for each model, added tokens, normalizer and
// decoder (the misc-split-* tokenizers differ in their pre-tokenizers alone).
const everyIdDone = new Set();

async function decodeLists(tok, json) {
  const lists = [];
  const key = JSON.stringify([json.model, json.added_tokens, json.normalizer, json.decoder]);
  if (!everyIdDone.has(key)) {
    everyIdDone.add(key);
    const all = allIds(tok);
    for (let i = 0; i < all.length; i += 64) lists.push(all.slice(i, i + 64));
  }
  for (const text of PREFIX_TEXTS) {
    const ids = await idsOf(tok, text, false);
    for (let k = 1; k <= ids.length; k++) lists.push(ids.slice(0, k));
  }
  for (const text of REVERSED_TEXTS) lists.push((await idsOf(tok, text, true)).reverse());
  const added = addedIds(tok, json);
  lists.push([...added, ...(await idsOf(tok, REVERSED_TEXTS[1], false)), ...[...added].reverse()]);
  lists.push([]);
  return lists;
}

// Decoders put in place of a tokenizer's own (each on the tokenizer named),
// to reach every type and option; "refused" ones the library will not load.
const WP = (prefix, cleanup) => ({ type: "WordPiece", prefix, cleanup });
const BL = { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true };
const REPLACE = (pattern, content) => ({ type: "Replace", pattern, content });
const STRIP = (content, start, stop) => ({ type: "Strip", content, start, stop });
const SEQ = (...decoders) => ({ type: "Sequence", decoders });
const META = (o) => ({ type: "Metaspace", replacement: "▁", ...o });
const DECODERS = {
  "bert-uncased": {
    decoders: [
      WP("##", false),
      WP("", true),
      WP("#", true),
      { type: "BPEDecoder", suffix: "##" },
      { type: "BPEDecoder", suffix: "" },
      { type: "CTC", pad_token: "[PAD]", word_delimiter_token: "|", cleanup: true },
      { type: "CTC", pad_token: "[PAD]", word_delimiter_token: "|", cleanup: false },
      { type: "CTC", pad_token: "", word_delimiter_token: "", cleanup: true },
      REPLACE({ String: "##" }, ""),
      REPLACE({ Regex: "[aeiou]+" }, "*"),
      REPLACE({ Regex: "x*" }, "."),
      REPLACE({ String: "" }, "-"),
      STRIP("#", 2, 0),
      STRIP("s", 0, 1),
      STRIP("s", 1, 2),
      STRIP("t", 3, 3),
      SEQ(WP("##", true), { type: "Fuse" }, WP("##", true)),
      SEQ(WP("##", false), { type: "Fuse" }, REPLACE({ Regex: " (?=[.,!?;:])" }, ""), STRIP(" ", 1, 0)),
      SEQ(),
      null,
      { type: "Metaspace", replacement: "#", prepend_scheme: "always" },
      { type: "ByteFallback" },
      { type: "Fuse" },
      // a type the library does not know: the first of BPEDecoder,
      // WordPiece, CTC, Replace and Strip whose fields it has (its legacy,
      // untagged form)
      { type: "BPE", suffix: "##" },
      { prefix: "##", cleanup: false },
      { type: "Nope", suffix: "</w>", prefix: "##", cleanup: true },
      { type: "Nope", pad_token: "[PAD]", word_delimiter_token: "|", cleanup: true },
      { type: "Nope", pattern: { String: "a" }, content: "b" },
      { type: 7, content: "#", start: 1, stop: 0 },
      SEQ({ prefix: "##", cleanup: true }, { type: "Fuse" }),
    ],
    refused: [
      { type: "Nope" },
      {},
      SEQ({ type: "Fuse" }, { type: "Nope" }),
      { type: "Nope", decoders: [] },
      { type: "Nope", replacement: "#" },
      { type: "Nope", add_prefix_space: true, trim_offsets: true },
      { type: "Nope", pattern: { Regex: "(" }, content: "" },
      { type: "Nope", content: "ab", start: 1, stop: 0 },
      "WordPiece",
      { type: "WordPiece", prefix: "##" },
      { type: "WordPiece", prefix: "##", cleanup: "yes" },
      { type: "WordPiece", prefix: "##", cleanup: null },
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: null },
      { type: "BPEDecoder" },
      { type: "CTC", pad_token: "<pad>", word_delimiter_token: "|" },
      STRIP("ab", 1, 0),
      STRIP(" ", -1, 0),
      { type: "Metaspace", prepend_scheme: "always" },
      META({ add_prefix_space: false }),
      META({ prepend_scheme: "sometimes" }),
      META({ prepend_scheme: null }),
      { type: "Metaspace", replacement: "▁", split: 1 },
      STRIP(" ", 1.5, 0),
      REPLACE({ Regex: "(" }, ""),
      REPLACE({ String: "a" }, 1),
      { type: "Sequence" },
    ],
  },
  "bert-cased": { decoders: [BL, SEQ(WP("##", true), BL)] },
  xlmr: {
    decoders: [
      META({ prepend_scheme: "first" }),
      META({ prepend_scheme: "never" }),
      META({ prepend_scheme: "always", split: false }),
      META({ add_prefix_space: true }),
      META({ add_prefix_space: false, prepend_scheme: "never" }),
      META({ prepend_scheme: "first", add_prefix_space: null, split: null }),
      SEQ(REPLACE({ String: "▁" }, " "), { type: "Fuse" }, STRIP(" ", 1, 0)),
      STRIP("▁", 1, 1),
    ],
  },
  "llama-bpe": {
    decoders: [
      SEQ(REPLACE({ String: "▁" }, " "), { type: "ByteFallback" }),
      { type: "ByteFallback" },
      SEQ(META({ prepend_scheme: "always" }), { type: "ByteFallback" }, { type: "Fuse" }),
      SEQ({ type: "ByteFallback" }, BL),
      SEQ(REPLACE({ String: "▁" }, " "), { type: "ByteFallback" }, { type: "Fuse" }, STRIP(" ", 2, 0)),
      SEQ({ type: "ByteFallback" }, REPLACE({ String: "�" }, "?")),
    ],
  },
  roberta: {
    decoders: [
      null,
      REPLACE({ Regex: "Ġ" }, " "),
      SEQ(BL, REPLACE({ String: " " }, "_")),
      SEQ(BL, WP("##", true)),
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
      SEQ(BL, BL),
      SEQ(REPLACE({ String: "Ġ" }, ""), BL),
    ],
  },
};

// The texts each replaced decoder decodes (with specials), besides the
// edges: reversed, a continuation piece first, the added tokens around a
// text, no ids, and ids twice over with the padding token and "|" between
// (what CTC takes).
const DECODER_TEXTS = [
  "I don't think it's right; we'll see, they've gone, I'm here, you'd know.",
  "Punctuation!!! Really??? Yes... (maybe) [brackets] {braces} <angles> \"quotes\" 'single'",
  "Café naïve résumé façade São Paulo Zürich Ångström",
  "emoji 😀 😂👍 🎉",
];

// Strip panics (and the process aborts) where its stop runs past a token's
// start, or its start and stop cross (decoders/strip.rs): such lists are
// left out.
function stripPanics(tok, decoder, ids) {
  if (decoder?.type !== "Strip") return false;
  return ids.some((id) => {
    const chars = [...tok.idToToken(id)];
    let start = 0;
    for (let i = 0; i < Math.min(decoder.start, chars.length) && chars[i] === decoder.content; i++) start = i + 1;
    let stop = chars.length;
    for (let i = 0; i < decoder.stop; i++) {
      if (i >= chars.length) return true;
      if (chars[chars.length - i - 1] !== decoder.content) break;
      stop = chars.length - i - 1;
    }
    return stop < start;
  });
}

async function replacedDecoders(name, json) {
  const out = [];
  const spec = DECODERS[name];
  if (!spec) return undefined;
  for (const decoder of spec.refused ?? []) {
    try {
      Tokenizer.fromString(JSON.stringify({ ...json, decoder }));
      throw new Error(`${name}: ${JSON.stringify(decoder)} loaded, expected a refusal`);
    } catch (e) {
      if (String(e.message).includes("expected a refusal")) throw e;
      out.push({ decoder, refused: String(e && e.message ? e.message : e) });
    }
  }
  for (const decoder of spec.decoders) {
    const tok = Tokenizer.fromString(JSON.stringify({ ...json, decoder }));
    const lists = [];
    for (const text of DECODER_TEXTS) lists.push(await idsOf(tok, text, true));
    const ids = await idsOf(tok, DECODER_TEXTS[0], true);
    lists.push([...ids].reverse());
    // a continuation piece first ("un ##bel ...": "##bel ...")
    lists.push((await idsOf(tok, REVERSED_TEXTS[0], false)).slice(1));
    const pad = tok.tokenToId("[PAD]") ?? tok.tokenToId("<pad>");
    const delimiter = tok.tokenToId("|");
    const gap = [pad, delimiter, delimiter].filter((id) => id !== null);
    lists.push(ids.flatMap((id, i) => (i % 3 == 2 ? [id, id, ...gap] : [id, id])));
    const added = addedIds(tok, json);
    lists.push([...added, ...ids, ...added]);
    lists.push([]);
    const decodes = [];
    for (const l of lists) if (!stripPanics(tok, decoder, l)) decodes.push(await decodeShort(tok, l));
    out.push({ decoder, decodes });
  }
  return out;
}

const names = fs
  .readdirSync(DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory() && fs.existsSync(path.join(DIR, d.name, "tokenizer.json")))
  .map((d) => d.name)
  .sort();

let checked = false;
for (const name of names) {
  const json = JSON.parse(fs.readFileSync(path.join(DIR, name, "tokenizer.json"), "utf8"));
  const tok = Tokenizer.fromFile(path.join(DIR, name, "tokenizer.json"));
  tok.disableTruncation();
  tok.disablePadding();
  if (!checked && name === "roberta") {
    await checkOffsetUnit(tok);
    checked = true;
  }

  // decoded, decoded_skip: decode(ids, false) and decode(ids, true) of the
  // with_special ids
  const decoded = async (x) => {
    if (x.with_special.error) return x;
    const d = await decode(tok, x.with_special.ids);
    return { ...x, decoded: d.decoded, decoded_skip: d.decoded_skip };
  };
  const items = [];
  for (const text of texts) {
    items.push(
      await decoded({
        text,
        with_special: await encode(tok, text, null, true),
        without_special: await encode(tok, text, null, false),
      }),
    );
  }
  const pairItems = [];
  for (const [a, b] of pairs) {
    pairItems.push(
      await decoded({
        text: a,
        text_pair: b,
        with_special: await encode(tok, a, b, true),
        without_special: await encode(tok, a, b, false),
      }),
    );
  }
  const decodes = [];
  for (const ids of await decodeLists(tok, json)) decodes.push(await decodeShort(tok, ids));
  const decoders = await replacedDecoders(name, json);

  const header = {
    source: `tokenizers ${LIB_VERSION} (Hugging Face's Rust tokenizers, Node binding; tests/tokenizer/reference.mjs)`,
    library: { name: "tokenizers", version: LIB_VERSION },
    offsets: "code points of the input sequence (Python encode_char_offsets); specials [0,0)",
  };
  let out = "{\n";
  for (const [k, v] of Object.entries(header)) out += `${JSON.stringify(k)}: ${JSON.stringify(v)},\n`;
  out += '"items": [\n' + items.map((x) => JSON.stringify(x)).join(",\n") + "\n],\n";
  out += '"pairs": [\n' + pairItems.map((x) => JSON.stringify(x)).join(",\n") + "\n],\n";
  out += '"decodes": [\n' + decodes.map((x) => JSON.stringify(x)).join(",\n") + "\n]";
  if (decoders) out += ',\n"decoders": [\n' + decoders.map((x) => JSON.stringify(x)).join(",\n") + "\n]";
  out += "\n}\n";
  fs.writeFileSync(path.join(DIR, name, "reference.json"), out);
  const errors = [...items, ...pairItems].filter((x) => x.with_special.error || x.without_special.error).length;
  console.log(
    `${name}: ${items.length} texts, ${pairItems.length} pairs, ${errors} errors, ` +
      `${decodes.length} id lists decoded` + (decoders ? `, ${decoders.length} decoders in place of its own` : ""),
  );
}
if (!checked) console.warn("warning: no roberta fixture, offset unit not re-checked");
