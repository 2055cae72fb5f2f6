// Reference truncations from Hugging Face's own tokenizers library (the npm
// package `tokenizers`, pinned in package.json: the Node binding of the Rust
// crate, as tests/tokenizer/reference.mjs uses it).
//
// usage: node tests/tokenizer/truncation.mjs [FIXTURES_DIR]
//
// Writes FIXTURES_DIR/truncation.json (default tests/fixtures/tokenizers):
// texts and pairs encoded by a few of the fixture tokenizers with
// setTruncation(max_length, {strategy: LongestFirst, direction, stride: 0})
// for direction Right and Left and a few max_length each (the special tokens
// plus 1, 3 and 7, and one that cuts nothing), with and without the special
// tokens.  Each case records what core/tokenizer's tok_encode_dir is checked
// against (tests/check_tokenizer.c): ids, type_ids, special_tokens_mask,
// offsets (code points of the input sequence, as reference.mjs explains) and
// for pairs sequence_ids, and "untruncated", the tokens of the same encoding
// without truncation.
//
// A pair case also records "lengths", each text's tokens uncut (no specials),
// and "early_exit": true where the library's kept lengths are not what its
// truncate_encodings (utils/truncation.rs) gives for those lengths: since
// 0.23 (commit f5fde3db, "add early exit for truncation") a text is only
// tokenized, word by word from the end the cut keeps, until it has
// max_length tokens, and longest_first then compares those partial counts,
// so the odd token of a cut shared between two long texts may go to the
// other text.  core/tokenizer keeps truncate_encodings' rule on the whole
// counts (tokenizers 0.22 and earlier, which TEI 1.9 runs), and is checked
// against it in those cases.
//
// "tokenizers" names the fixture tokenizers used; "edits" are tokenizers
// made from one of them with top-level keys of its tokenizer.json merged
// into the named objects (roberta with add_prefix_space: its ByteLevel
// offsets treat a text's first token apart, and a left cut changes which
// token is first).  A case's "tokenizer" is a name of either.
//
// Output is deterministic: a header, then one JSON case per line.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const LIB_VERSION = JSON.parse(
  fs.readFileSync(path.join(path.dirname(require.resolve("tokenizers")), "package.json"), "utf8"),
).version;

const DIR = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? "tests/fixtures/tokenizers";

const TOKENIZERS = ["bert-uncased", "roberta", "xlmr", "modernbert"];
const EDITS = {
  "roberta+prefix": {
    base: "roberta",
    merge: {
      pre_tokenizer: { add_prefix_space: true },
      post_processor: { add_prefix_space: true },
    },
  },
};

const TEXTS = [
  "The quick brown fox jumps over the lazy dog.",
  "Unbelievably, the reorganization was overwhelmingly successful.",
  "Café naïve résumé façade São Paulo Zürich Ångström",
  "emoji 😀 😂👍 🎉 and more words after them",
  "我们在中国学习中文。",
  "short",
];
const PAIRS = [
  ["Hello world", "How are you?"],
  ["The quick brown fox.", "Jumps over the lazy dog!"],
  ["Unbelievably, the reorganization was overwhelmingly successful.", "Yes."],
  ["a", "the quick brown fox jumps over the lazy dog again and again"],
];
const ROOM = [1, 3, 7, 1000];
const DIRECTIONS = ["right", "left"]; // the binding's spelling (it refuses "Right")

function tokenizerJson(name) {
  const edit = EDITS[name];
  const json = JSON.parse(fs.readFileSync(path.join(DIR, edit ? edit.base : name, "tokenizer.json"), "utf8"));
  if (!edit) return json;
  for (const [key, fields] of Object.entries(edit.merge)) json[key] = { ...json[key], ...fields };
  return json;
}

// truncate_encodings' LongestFirst lengths (stride 0) for texts of na and nb
// tokens and max tokens between them.
function longestFirst(na, nb, max) {
  if (na + nb <= max) return [na, nb];
  let [n1, n2] = [na, nb];
  const swap = n1 > n2;
  if (swap) [n1, n2] = [n2, n1];
  n2 = n1 > max ? n1 : Math.max(n1, max - n1);
  if (n1 + n2 > max) {
    n1 = Math.floor(max / 2);
    n2 = n1 + (max % 2);
  }
  if (swap) [n1, n2] = [n2, n1];
  return [Math.min(n1, na), Math.min(n2, nb)];
}

function record(e, pair) {
  const out = {
    ids: e.getIds(),
    type_ids: e.getTypeIds(),
    special_tokens_mask: e.getSpecialTokensMask(),
    offsets: e.getOffsets().map(([s, t]) => [s, t]),
  };
  if (pair) out.sequence_ids = e.getSequenceIds().map((x) => (x === undefined ? null : x));
  return out;
}

const cases = [];
for (const name of [...TOKENIZERS, ...Object.keys(EDITS)]) {
  const tok = Tokenizer.fromString(JSON.stringify(tokenizerJson(name)));
  tok.disablePadding();
  for (const special of [true, false]) {
    const inputs = [...TEXTS.map((t) => [t, null]), ...PAIRS];
    for (const [a, b] of inputs) {
      tok.disableTruncation();
      const whole = await tok.encode(a, b, { addSpecialTokens: special });
      const bare = await tok.encode(a, b, { addSpecialTokens: false });
      const added = whole.getIds().length - bare.getIds().length; // the post-processor's
      for (const room of ROOM) {
        const max = added + room;
        for (const direction of DIRECTIONS) {
          tok.setTruncation(max, { strategy: "LongestFirst", direction, stride: 0 });
          const e = await tok.encode(a, b, { addSpecialTokens: special });
          const n = e.getIds().length;
          const want = Math.min(max, whole.getIds().length);
          if (n !== want) throw new Error(`${name}: ${JSON.stringify([a, b])} at ${max}: ${n} tokens, expected ${want}`);
          if (room === 1000 && direction === "left") continue; // nothing cut: the same as Right
          const c = {
            tokenizer: name,
            text: a,
            text_pair: b,
            add_special_tokens: special,
            max_length: max,
            direction,
            untruncated: whole.getIds().length,
            encoding: record(e, b !== null),
          };
          if (b !== null) {
            const seqs = bare.getSequenceIds();
            c.lengths = [0, 1].map((k) => seqs.filter((x) => x === k).length);
            const kept = [0, 1].map((k) => e.getSequenceIds().filter((x) => x === k).length);
            const want = longestFirst(c.lengths[0], c.lengths[1], max - added);
            if (kept[0] !== want[0] || kept[1] !== want[1]) c.early_exit = true;
          }
          cases.push(c);
        }
      }
    }
  }
}

// A left cut must differ from a right one somewhere, or the option was not taken.
const differs = cases.some(
  (c) =>
    c.direction === "left" &&
    cases.some(
      (r) =>
        r.direction === "right" &&
        r.tokenizer === c.tokenizer &&
        r.text === c.text &&
        r.text_pair === c.text_pair &&
        r.max_length === c.max_length &&
        r.add_special_tokens === c.add_special_tokens &&
        JSON.stringify(r.encoding.ids) !== JSON.stringify(c.encoding.ids),
    ),
);
if (!differs) throw new Error("no left truncation differs from the right one: the direction was not taken");

const header = {
  source: `tokenizers ${LIB_VERSION} (Hugging Face's Rust tokenizers, Node binding; tests/tokenizer/truncation.mjs)`,
  library: { name: "tokenizers", version: LIB_VERSION },
  truncation: "setTruncation(max_length, {strategy: LongestFirst, direction, stride: 0})",
  offsets: "code points of the input sequence (Python encode_char_offsets); specials [0,0)",
  tokenizers: TOKENIZERS,
  edits: EDITS,
};
let out = "{\n";
for (const [k, v] of Object.entries(header)) out += `${JSON.stringify(k)}: ${JSON.stringify(v)},\n`;
out += '"cases": [\n' + cases.map((x) => JSON.stringify(x)).join(",\n") + "\n]\n}\n";
fs.writeFileSync(path.join(DIR, "truncation.json"), out);
console.log(`truncation.json: ${cases.length} cases (${cases.filter((c) => c.early_exit).length} early_exit) over ${TOKENIZERS.length + Object.keys(EDITS).length} tokenizers`);
