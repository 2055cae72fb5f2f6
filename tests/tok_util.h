/* tok_util.h - what the tokenizer suites share (tok_util.c): the test
 * tokenizers of tests/fixtures/tokenizers by name, each loaded from its
 * tokenizer.json, and their JSON files (reference.json, texts.json, ...). */
#ifndef ATTND_TESTS_TOK_UTIL_H
#define ATTND_TESTS_TOK_UTIL_H

#include "tokenizer/tokenizer.h"

#include <jansson.h>

#define FIXTURES TESTS_DIR "/fixtures/tokenizers"

/* The test tokenizers: their directories under FIXTURES. */
static const char *const NAMES[] = {
    "bert-uncased",
    "bert-cased",
    "mpnet",
    "roberta",
    "roberta-merges-str",
    "modernbert",
    "qwen3",
    "xlmr",
    "deberta-v3",
    "unigram-fallback",
    "llama-bpe",
    "llama-bpe-metaspace",
    "gemma3",
    "misc",
    "misc-renumbered",
    "misc-split-removed",
    "misc-split-isolated",
    "misc-split-merged-with-previous",
    "misc-split-merged-with-next",
    "misc-split-contiguous",
    "misc-split-invert",
};
enum { N_NAMES = sizeof NAMES / sizeof NAMES[0] };

/* The test tokenizer name (its tokenizer.json), or the test fails. */
tok_tokenizer *tokenizer_fixture(const char *name);

/* The test tokenizer name's file (JSON, NUL allowed; owned), or the test
 * fails. */
json_t *tokenizer_fixture_json(const char *name, const char *file);

/* A WordPiece model in tokenizer.json's form, for tokenizers written by
 * hand around it. */
#define WORDPIECE                                                                                  \
    "{\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0}, \"unk_token\": \"[UNK]\", "              \
    "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100}"

#endif
