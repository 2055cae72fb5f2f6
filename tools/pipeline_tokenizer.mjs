// pipeline_tokenizer.mjs - Hugging Face's tokenizers (the npm Node binding)
// answering tools/make_pipeline_fixtures.py.
//
//     node tools/pipeline_tokenizer.mjs < request.json > answer.json
//
// Reads one JSON request on stdin:
//
//     {"tokenizer": path to tokenizer.json,
//      "encode": [[text, pair or null], ...],        (special tokens added)
//      "decode": [[ids, skip_special], ...],
//      "decode_tokens": [[token strings], ...],
//      "id_to_token": [ids]}
//
// (every list optional) and writes on stdout
//
//     {"library": {"name": "tokenizers", "version": ...},
//      "encode": [{"ids", "tokens", "offsets", "special_tokens_mask", "type_ids"}, ...],
//      "decode": [string, ...],           tokenizer.decode(ids, skip_special)
//      "decode_tokens": [string, ...],    the tokenizer's decoder on the tokens:
//                                         transformers' PreTrainedTokenizerFast.
//                                         convert_tokens_to_string
//      "id_to_token": [string or null, ...]}
//
// Truncation and padding are off.  Offsets are code points of the text (the
// Node binding's getOffsets(), as tests/tokenizer/reference.mjs checks);
// special tokens added by the post-processor have [0, 0).  A tokenizer
// without a decoder joins the tokens with spaces, as transformers does.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const VERSION = JSON.parse(
  fs.readFileSync(path.join(path.dirname(require.resolve("tokenizers")), "package.json"), "utf8"),
).version;

const request = JSON.parse(fs.readFileSync(0, "utf8"));
const tok = Tokenizer.fromFile(request.tokenizer);
tok.disableTruncation();
tok.disablePadding();

const encode = [];
for (const [text, pair] of request.encode ?? []) {
  const e = await tok.encode(text, pair ?? null, { addSpecialTokens: true });
  encode.push({
    ids: e.getIds(),
    tokens: e.getTokens(),
    offsets: e.getOffsets().map(([s, t]) => [s, t]),
    special_tokens_mask: e.getSpecialTokensMask(),
    type_ids: e.getTypeIds(),
  });
}
const decode = [];
for (const [ids, skip] of request.decode ?? []) decode.push(await tok.decode(ids, skip));
const decoder = tok.getDecoder();
const decodeTokens = (request.decode_tokens ?? []).map((tokens) =>
  decoder ? decoder.decode(tokens) : tokens.join(" "),
);
const idToToken = (request.id_to_token ?? []).map((id) => tok.idToToken(id));

process.stdout.write(
  JSON.stringify({
    library: { name: "tokenizers", version: VERSION },
    encode,
    decode,
    decode_tokens: decodeTokens,
    id_to_token: idToToken,
  }) + "\n",
);
