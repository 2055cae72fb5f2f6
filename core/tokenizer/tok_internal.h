/* tok_internal.h - what the tokenizer's files share: the normalized string
 * with its alignments, the pieces a pre-tokenizer splits it into, and each
 * component's parse (from tokenizer.json's object, jansson) and apply.  Not
 * for outside core/tokenizer/.
 *
 * The pipeline is Hugging Face tokenizers' (tokenizer/mod.rs encode_single_sequence):
 *
 *     text --added tokens (non-normalized) split--> pieces
 *          --normalizer, each piece--> --added tokens (normalized) split-->
 *          --pre-tokenizer, each piece without a token--> words
 *          --model, each word--> tokens --post-processor--> encoding
 *
 *     normalize.c    normalizers; the tok_str transform helper
 *     pretokenize.c  pre-tokenizers; the split helper
 *     wordpiece.c, bpe.c, unigram.c   the models
 *     tokenizer.c    loading tokenizer.json, added tokens, the pipeline,
 *                    post-processors, truncation, character offsets
 *
 * Offsets.  tokenizers keeps, for each byte of the normalized text, the span
 * of the original text it came from (NormalizedString's alignments), in bytes.
 * Every byte of one normalized character carries the same span, so here the
 * normalized text is an array of code points, each with its span [os, oe) in
 * the original text's bytes.  A token covering normalized code points
 * [a, b) has the original span [os[a], oe[b-1]), as tokenizers'
 * convert_offsets gives it.  The spans are absolute (bytes from the start of
 * the whole input sequence), so a piece cut out of a string keeps them. */
#ifndef ATTND_TOK_INTERNAL_H
#define ATTND_TOK_INTERNAL_H

#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the normalized string ---------------------------------------------- */

typedef struct tok_str {
    uint32_t *cp; /* (n) code points of the normalized text */
    uint32_t *os; /* (n) the original span's start of each, bytes */
    uint32_t *oe; /* (n) the original span's end of each, bytes */
    size_t n, cap;
} tok_str;

void tok_str_free(tok_str *s); /* frees the arrays; s may be zeroed or half built */
int tok_str_reserve(tok_str *s, size_t cap);
int tok_str_push(tok_str *s, uint32_t cp, uint32_t os, uint32_t oe);
/* s = text's code points, each spanning its own bytes shifted by base.
 * text must be valid UTF-8 (the caller checked). */
int tok_str_from_utf8(tok_str *s, const char *text, size_t len, uint32_t base);
/* out = s[a, b) (a copy with the same spans). */
int tok_str_slice(const tok_str *s, size_t a, size_t b, tok_str *out);
/* The UTF-8 of s[a, b) into *buf (grown with realloc as needed, NUL-ended);
 * returns its length or -1 when out of memory. */
long tok_str_utf8(const tok_str *s, size_t a, size_t b, char **buf, size_t *cap);

/* Rebuilding a string as tokenizers' NormalizedString::transform does, from
 * (code point, change) pairs walked over the source:
 *   change == 0: the char replaces the next source char and takes its span;
 *   change  < 0: it replaces the next source char and removes -change more
 *                after it (their spans are dropped; the char keeps only the
 *                replaced one's);
 *   change  > 0: the char is inserted, with the span of the source char
 *                consumed last (or [0, 0) when none was).
 * initial_removed source chars are dropped before the first pair.  Source
 * chars not consumed when tok_xform_end runs are dropped. */
typedef struct tok_xform {
    tok_str *src;
    tok_str out;
    size_t at; /* next source char */
    int failed;
} tok_xform;

void tok_xform_begin(tok_xform *x, tok_str *src, size_t initial_removed);
void tok_xform_push(tok_xform *x, uint32_t cp, long change);
/* Replaces *src with the result; 0, or ENC_ENOMEM (src unchanged, freed out). */
int tok_xform_end(tok_xform *x);

/* ---- Unicode classes, as Rust's char methods and tokenizers' helpers ---- */

bool tok_is_whitespace(uint32_t c);   /* char::is_whitespace (White_Space) */
bool tok_is_alphabetic(uint32_t c);   /* char::is_alphabetic (Alphabetic) */
bool tok_is_numeric(uint32_t c);      /* char::is_numeric (Nd, Nl, No) */
bool tok_is_punctuation(uint32_t c);  /* tokenizers' is_punc: P* categories or ASCII punctuation */
bool tok_is_control(uint32_t c);      /* tokenizers' BertNormalizer is_control */
bool tok_is_chinese(uint32_t c);      /* BertNormalizer is_chinese_char */
bool tok_is_mark_nonspacing(uint32_t c); /* Mn: what BertNormalizer's strip_accents removes */
bool tok_is_mark(uint32_t c);            /* M (Mn Mc Me): what StripAccents removes */
bool tok_is_word(uint32_t c);            /* Rust regex's \w: alphabetic, marks, Nd, Pc, joiners */

/* ---- regular expressions (Oniguruma, the engine tokenizers uses) ------- */

typedef struct tok_regex tok_regex;
void tok_regex_free(tok_regex *re);
/* tokenizer.json's {"String": s} or {"Regex": r} pattern (path names it),
 * compiled as tokenizers' Split and Replace do: a String is escaped
 * (regex::escape) and matched literally. */
tok_regex *tok_regex_pattern(const json_t *pattern, const char *path, enc_error *err);
/* Finds the matches of re in s's code points, left to right,
 * non-overlapping, as the onig crate's find_iter that tokenizers' find_matches
 * walks: calls fn(a, b, ctx) for each match [a, b) in code point indices.
 * Empty matches are reported too (tokenizers keeps them), except one at the
 * end of the previous match.  A negative return from fn stops the walk and
 * is returned.  0, or a negative enc_status. */
int tok_regex_each(const tok_regex *re, const tok_str *s, int (*fn)(size_t a, size_t b, void *ctx),
                   void *ctx);

/* GPT-2's bytes_to_unicode: the char ByteLevel shows byte b as. */
uint32_t tok_byte_char(uint8_t b);

/* ---- pieces ---------------------------------------------------------------- */

/* A token: its id and the original span it covers (bytes), plus, for the
 * model's tokens, the normalized code points [a, b) of its word. */
typedef struct tok_tok {
    int32_t id;
    uint32_t os, oe;
} tok_tok;

typedef struct tok_toks {
    tok_tok *v;
    size_t n, cap;
} tok_toks;

int tok_toks_push(tok_toks *t, int32_t id, uint32_t os, uint32_t oe);

/* The splits of a pre-tokenized string: each a normalized string, and once a
 * model (or an added token) has produced them, its tokens. */
typedef struct tok_piece {
    tok_str s;
    bool done;     /* has its tokens (an added token, or after the model) */
    tok_tok token; /* the added token, when done before the model */
} tok_piece;

typedef struct tok_pieces {
    tok_piece *v;
    size_t n, cap;
} tok_pieces;

void tok_pieces_free(tok_pieces *p);
/* Appends a piece that takes ownership of *s (zeroed). */
int tok_pieces_take(tok_pieces *p, tok_str *s, bool done, tok_tok token);

/* How a split keeps the delimiters it finds (tokenizers' SplitDelimiterBehavior). */
typedef enum tok_split_behavior {
    TOK_SPLIT_REMOVED,
    TOK_SPLIT_ISOLATED,
    TOK_SPLIT_MERGED_WITH_PREVIOUS,
    TOK_SPLIT_MERGED_WITH_NEXT,
    TOK_SPLIT_CONTIGUOUS,
} tok_split_behavior;

/* tokenizers' NormalizedString::split: the matches [a, b) of a pattern
 * (given as a sorted list of non-overlapping ranges of s) cut s into pieces
 * appended to out, empty ones dropped.  0 or ENC_ENOMEM. */
int tok_split(const tok_str *s, const size_t (*matches)[2], size_t n_matches,
              tok_split_behavior behavior, tok_pieces *out);

/* ---- components ------------------------------------------------------------ */

/* A normalizer (tokenizer.json's "normalizer"; NULL JSON: none). */
typedef struct tok_normalizer tok_normalizer;
/* Parses j; NULL with err naming the component or option not supported
 * ("normalizer.normalizers[1].type: \"Foo\" is not supported"). path is the
 * JSON path for messages. */
tok_normalizer *tok_normalizer_new(const json_t *j, const char *path, enc_error *err);
void tok_normalizer_free(tok_normalizer *n);
/* Normalizes s in place.  0 or a negative enc_status. */
int tok_normalize(const tok_normalizer *n, tok_str *s);

/* A pre-tokenizer ("pre_tokenizer"). */
typedef struct tok_pretok tok_pretok;
tok_pretok *tok_pretok_new(const json_t *j, const char *path, enc_error *err);
void tok_pretok_free(tok_pretok *p);
/* Splits every piece of *p that is not done; done pieces stay as they are,
 * in order.  0 or a negative enc_status. */
int tok_pretokenize(const tok_pretok *pt, tok_pieces *p);

/* A model ("model"): WordPiece, BPE or Unigram. */
typedef struct tok_model tok_model;
tok_model *tok_model_new(const json_t *j, const char *path, enc_error *err);
void tok_model_free(tok_model *m);
/* The word's tokens appended to out, spans from the word's code points.
 * 0 or a negative enc_status. */
int tok_model_tokenize(const tok_model *m, const tok_str *word, tok_toks *out);
/* The vocabulary: id -> token (borrowed, NULL when out of range), token -> id
 * (-1 when absent). */
size_t tok_model_vocab_size(const tok_model *m);
/* The tokens the vocabulary holds (Hugging Face's Model::get_vocab_size). */
size_t tok_model_vocab_count(const tok_model *m);
const char *tok_model_id_to_token(const tok_model *m, int32_t id);
int32_t tok_model_token_to_id(const tok_model *m, const char *token, size_t len);

/* Each model (called by tok_model_new, models.c, by "type"). */
tok_model *tok_wordpiece_new(const json_t *j, const char *path, enc_error *err);
tok_model *tok_bpe_new(const json_t *j, const char *path, enc_error *err);
tok_model *tok_unigram_new(const json_t *j, const char *path, enc_error *err);

/* A model's vtable: each model file fills one. */
typedef struct tok_model_ops {
    void (*free)(tok_model *m);
    int (*tokenize)(const tok_model *m, const tok_str *word, tok_toks *out);
} tok_model_ops;

/* The vocabulary every model has: tokens by id, and a hash from token to id. */
typedef struct tok_vocab {
    char **tokens;  /* (n) by id; NULL where no token has that id */
    uint32_t *lens; /* (n) */
    size_t n;
    size_t count;   /* the tokens set: Hugging Face's get_vocab_size (n less the holes) */
    int32_t *slots; /* (cap) open addressing: ids, -1 empty */
    size_t cap;
} tok_vocab;

int tok_vocab_init(tok_vocab *v, size_t n);
void tok_vocab_free(tok_vocab *v);
/* Sets token id (copying token); ENC_EFORMAT when id is out of range or
 * taken, or the token is already there. */
int tok_vocab_set(tok_vocab *v, int32_t id, const char *token, size_t len);
int32_t tok_vocab_find(const tok_vocab *v, const char *token, size_t len);
/* Fills v from a JSON object {token: id, ...} (WordPiece's and BPE's
 * "vocab"; what names it in messages).  Ids are integers from 0; holes are
 * left NULL.  0, or ENC_EFORMAT / ENC_ENOMEM with err set (v freed). */
int tok_vocab_from_map(tok_vocab *v, const json_t *map, const char *what, enc_error *err);
/* ENC_EINVAL naming path.key for the first key of obj not in allowed
 * (NULL-ended): an option tokenizers' component does not read. */
int tok_json_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                        enc_error *err);

struct tok_model {
    const tok_model_ops *ops;
    tok_vocab vocab;
};

/* JSON helpers for the parsers: the member or NULL; messages name path.key. */
int tok_json_bool(const json_t *obj, const char *path, const char *key, bool dflt, bool *out,
                  enc_error *err);
int tok_json_string(const json_t *obj, const char *path, const char *key, const char *dflt,
                    const char **out, enc_error *err);
int tok_json_int(const json_t *obj, const char *path, const char *key, long dflt, long *out,
                 enc_error *err);
/* ENC_EFORMAT naming path.key when obj lacks it (a field without a serde
 * default in tokenizers); the _bool form then reads it. */
int tok_json_need(const json_t *obj, const char *path, const char *key, enc_error *err);
int tok_json_need_bool(const json_t *obj, const char *path, const char *key, bool *out,
                       enc_error *err);
/* ENC_EINVAL naming path.key and its value as not supported. */
int tok_json_unsupported(const char *path, const char *key, const json_t *value, enc_error *err);

/* The code point at p (valid UTF-8) and its length in bytes. */
uint32_t tok_utf8_get(const unsigned char *p, size_t *len);
/* UTF-8 of one code point into out (4 bytes room); its length. */
int tok_utf8_put(uint32_t c, char *out);

#endif
