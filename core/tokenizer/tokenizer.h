/* tokenizer.h - a Hugging Face tokenizer.json, in C: text to token ids,
 * offsets and special tokens as Hugging Face's tokenizers library gives
 * them (normalizer, pre-tokenizer, WordPiece / BPE / Unigram, post-processor,
 * added tokens, pairs, right and left truncation).
 *
 *     enc_error err = {0};
 *     tok_tokenizer *t = tok_load("dir/tokenizer.json", &err);
 *     tok_encoding e = {0};
 *     if (tok_encode(t, text, len, NULL, 0, true, 0, &e, NULL, &err) == 0)
 *         for (size_t i = 0; i < e.n; i++)
 *             printf("%d %s [%u, %u)\n", e.ids[i], tok_token_text(t, e.ids[i]),
 *                    e.start[i], e.stop[i]);
 *     tok_encoding_free(&e);
 *     tok_free(t);
 *
 * A component or option not implemented is refused by tok_load, naming it
 * (but the decoder, which only tok_decode refuses).  A loaded tokenizer is
 * read-only: any number of threads may encode and decode with it at once. */
#ifndef ATTND_TOKENIZER_H
#define ATTND_TOKENIZER_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tok_tokenizer tok_tokenizer;

/* One encoded sequence (or pair), every array (n). */
typedef struct tok_encoding {
    int32_t *ids;
    uint8_t *type_ids; /* 0 for the first text and its specials, 1 for the second */
    uint8_t *special;  /* 1: added by the post-processor (tokenizers' special_tokens_mask) */
    uint8_t *seq;      /* which text the token came from: 0, 1, or 255 for a post-processor's */
    uint32_t *start, *stop; /* offsets in the token's text, in Unicode code points
                             * ([0, 0) for a post-processor's tokens) */
    size_t n, cap;
} tok_encoding;

/* Loads tokenizer.json.  NULL with err set: ENC_EIO (the file), ENC_EFORMAT
 * (its JSON), ENC_EINVAL (a component or option not supported, named). */
tok_tokenizer *tok_load(const char *path, enc_error *err);
/* The same from the file's text (len bytes). */
tok_tokenizer *tok_load_json(const char *text, size_t len, enc_error *err);
void tok_free(tok_tokenizer *t);

/* Checks that text is valid UTF-8: -1, or the byte offset of the first
 * invalid byte. */
long tok_utf8_invalid_at(const char *text, size_t len);

/* Encodes text a (and, when b is not NULL, the pair a, b) into *out (its
 * arrays reused and grown).  add_special: run the post-processor's special
 * tokens in.  max_tokens > 0 cuts the texts' tokens so that the whole
 * encoding, specials included, has at most max_tokens, as tokenizers' right
 * truncation (longest_first, stride 0) does; 0 keeps them all.  A text must
 * be valid UTF-8 (ENC_EINVAL naming the byte offset otherwise).  Sets
 * *untruncated (when not NULL) to the number of tokens the encoding has
 * before any cut.  0 or a negative enc_status with err set. */
int tok_encode(const tok_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
               bool add_special, size_t max_tokens, tok_encoding *out, size_t *untruncated,
               enc_error *err);

/* Which end of each text a cut takes tokens from (tokenizers'
 * TruncationDirection): right keeps the first tokens, left the last. */
typedef enum tok_direction { TOK_TRUNCATE_RIGHT, TOK_TRUNCATE_LEFT } tok_direction;

/* tok_encode, cutting from the end dir says: the same number of tokens of
 * each text kept as right truncation keeps (longest_first for a pair,
 * stride 0), and with TOK_TRUNCATE_LEFT they are the last ones of each
 * text; the specials stay, offsets count in the whole text as uncut. */
int tok_encode_dir(const tok_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                   bool add_special, size_t max_tokens, tok_direction dir, tok_encoding *out,
                   size_t *untruncated, enc_error *err);

/* The number of tokens the post-processor adds to one text (pair: true, to
 * a pair). */
size_t tok_added_special(const tok_tokenizer *t, bool pair);

/* ids (n) as an encoding, as given: type 0, none special, all of the first
 * text, no offsets ([0, 0)); *out's arrays reused and grown.  0, or
 * ENC_ENOMEM. */
int tok_encoding_set_ids(tok_encoding *out, const int32_t *ids, size_t n);

/* Appends more's tokens to *out (its arrays grown), their offsets moved on
 * by shift code points (a text that follows out's in one string).  0, or
 * ENC_ENOMEM. */
int tok_encoding_append(tok_encoding *out, const tok_encoding *more, uint32_t shift);

/* Removes e's tokens from .. from + count (count at most e->n - from), those
 * after them moved down, their offsets as they were. */
void tok_encoding_remove(tok_encoding *e, size_t from, size_t count);

void tok_encoding_free(tok_encoding *e);

/* ids (n) as text, as tokenizers' Tokenizer.decode(ids, skip_special_tokens):
 * each id's token (added tokens included; an id out of range is an error
 * naming its index), special added tokens left out when skip_special, then
 * the tokenizer.json "decoder" chain.  *out owned, NUL-terminated, *len bytes
 * (a byte-level token may decode to a NUL byte).  0 or a negative enc_status with err set: ENC_EINVAL for an id with no
 * token, and for a decoder of a type not supported ("the tokenizer's
 * decoder 'X' is not supported"); ENC_EFORMAT for one tokenizers would not
 * load (its option named).  Hugging Face leaves out an id with no token. */
int tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, bool skip_special,
               char **out, size_t *len, enc_error *err);

/* tokens (n) as text, as tokenizers' Decoder.decode(tokens) (transformers'
 * convert_tokens_to_string): the decoder chain over the tokens as given, no
 * id looked up, nothing skipped; joined by spaces without a decoder.  *out
 * and the return as tok_decode's. */
int tok_decode_tokens(const tok_tokenizer *t, const char *const *tokens, size_t n, char **out,
                      size_t *len, enc_error *err);

/* ---- what transformers adds: tokenizer_config.json (roles.c) ------------ */

/* The special tokens' roles, as transformers' tokenizer names them. */
typedef enum tok_role { TOK_ROLE_UNK, TOK_ROLE_PAD, TOK_ROLE_MASK, TOK_ROLES } tok_role;

/* Reads tokenizer_config.json's text (len bytes) into t's roles: unk_token,
 * pad_token, mask_token (a string or an AddedToken's content; null: none),
 * clean_up_tokenization_spaces, model_max_length (a positive integer;
 * transformers' "no length" of 1e30, or anything from 1e18 up, or null:
 * none).  A key it lacks keeps what tokenizer.json gave (its model's unk
 * token, padding's pad_id, special tokens spelled [UNK] <unk>, [PAD] <pad>,
 * [MASK] <mask>; no clean-up; no length).  Call before t is shared.  0, or
 * ENC_EFORMAT / ENC_EINVAL (a token tokenizer.json lacks) with err naming
 * the key; t's roles are then as they were. */
int tok_read_config(tok_tokenizer *t, const char *text, size_t len, enc_error *err);
/* A role's id, -1 when the tokenizer has none. */
int32_t tok_role_id(const tok_tokenizer *t, tok_role r);
/* tokenizer_config.json's model_max_length: the most tokens the tokenizer
 * was made for, specials included; 0: it says none. */
size_t tok_model_max_length(const tok_tokenizer *t);
/* transformers' decode cleans up spaces (clean_up_tokenization_spaces). */
bool tok_clean_up_spaces(const tok_tokenizer *t);
/* transformers' clean_up_tokenization on s (len bytes), in place: " ." ->
 * ".", " ?", " !", " ,", " ' " -> "'", " n't", " 'm", " 's", " 've", " 're";
 * returns the new length (s NUL-ended). */
size_t tok_clean_up(char *s, size_t len);

/* The vocabulary: the number of token ids (one more than the largest). */
size_t tok_id_count(const tok_tokenizer *t);
/* The token of an id (borrowed until tok_free), NULL when none. */
const char *tok_token_text(const tok_tokenizer *t, int32_t id);
/* The id of a token, -1 when none. */
int32_t tok_token_id(const tok_tokenizer *t, const char *token);

/* How the model shows a token to a reader (for the page): "##" continuation
 * prefixes, byte-level "Ġ" and Metaspace "▁" as the characters they stand
 * for.  Writes at most cap bytes (NUL-ended); returns the length needed. */
size_t tok_token_display(const tok_tokenizer *t, int32_t id, char *out, size_t cap);

#endif
