// make_prompt_fixture.mjs - a sentence-transformers directory with prompts,
// and the ids Hugging Face's tokenizers gives for a prompt and a text.
//
//     node tools/make_prompt_fixture.mjs [HF_FIXTURES_DIR]    (default tests/fixtures/hf)
//
// Writes HF_FIXTURES_DIR/bert_prompts/: bert_text's files (config.json,
// model.safetensors, tokenizer.json, tokenizer_config.json, modules.json,
// sentence_bert_config.json, 1_Pooling/config.json, copied byte for byte:
// tools/make_text_fixtures.py makes them), and
//
//     config_sentence_transformers.json  as SentenceTransformer.save writes it
//                                        (json.dump(indent=2)): its versions,
//                                        "prompts" {"query": "query: ",
//                                        "document": ""}, "default_prompt_name"
//                                        "query", "similarity_fn_name" "cosine"
//     prompts.json                       for each prompt and text of TEXTS:
//                                        {"prompt_name", "text", "ids",
//                                        "offsets"}, the encoding (special
//                                        tokens added) of the prompt's text
//                                        followed by the text, as
//                                        sentence-transformers' encode
//                                        tokenizes it (prompt + sentence)
//
// The ids come from the npm package `tokenizers` (Hugging Face's Rust
// tokenizers, pinned in package.json), never from attnd's tokenizer.
// Offsets are code points of the prompted text; specials [0, 0).
// Deterministic: the same files from the same inputs.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const VERSION = JSON.parse(
  fs.readFileSync(path.join(path.dirname(require.resolve("tokenizers")), "package.json"), "utf8"),
).version;

const ROOT = process.argv[2] ?? "tests/fixtures/hf";
const FROM = path.join(ROOT, "bert_text");
const OUT = path.join(ROOT, "bert_prompts");
const COPIED = [
  "config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
  "modules.json",
  "sentence_bert_config.json",
  path.join("1_Pooling", "config.json"),
];
const PROMPTS = { query: "query: ", document: "" };
const DEFAULT_PROMPT = "query";
// bert_text's texts (text.json), so that the empty prompt's embeddings are
// text.safetensors' own
const TEXTS = JSON.parse(fs.readFileSync(path.join(FROM, "text.json"), "utf8")).texts;

fs.mkdirSync(path.join(OUT, "1_Pooling"), { recursive: true });
for (const f of COPIED) fs.copyFileSync(path.join(FROM, f), path.join(OUT, f));

// json.dump(indent=2) of sentence-transformers' config (no trailing newline)
const config = {
  __version__: { sentence_transformers: "3.4.1", transformers: "4.48.0", pytorch: "2.5.1" },
  prompts: PROMPTS,
  default_prompt_name: DEFAULT_PROMPT,
  similarity_fn_name: "cosine",
};
fs.writeFileSync(path.join(OUT, "config_sentence_transformers.json"), JSON.stringify(config, null, 2));

const tok = Tokenizer.fromFile(path.join(OUT, "tokenizer.json"));
tok.disableTruncation();
tok.disablePadding();
const cases = [];
for (const [name, prompt] of Object.entries(PROMPTS)) {
  for (const text of TEXTS) {
    const e = await tok.encode(prompt + text, null, { addSpecialTokens: true });
    cases.push({
      prompt_name: name,
      text,
      ids: e.getIds(),
      offsets: e.getOffsets().map(([s, t]) => [s, t]),
    });
  }
}
const header = {
  source: `tokenizers ${VERSION} (Hugging Face's Rust tokenizers, Node binding; tools/make_prompt_fixture.mjs)`,
  library: { name: "tokenizers", version: VERSION },
  prompts: PROMPTS,
  default_prompt_name: DEFAULT_PROMPT,
};
let out = "{\n";
for (const [k, v] of Object.entries(header)) out += `${JSON.stringify(k)}: ${JSON.stringify(v)},\n`;
out += '"cases": [\n' + cases.map((c) => JSON.stringify(c)).join(",\n") + "\n]\n}\n";
fs.writeFileSync(path.join(OUT, "prompts.json"), out);
console.log(`${OUT}: ${COPIED.length} files of bert_text, ${cases.length} prompted texts`);
