/* vocab.h - the vocabulary every model has: tokens by id, and a hash from
 * token to id. */
#ifndef ATTND_TOK_VOCAB_H
#define ATTND_TOK_VOCAB_H

#include "base/error.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
