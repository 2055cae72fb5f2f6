/* pieces.h - the splits of a pre-tokenized string: each a normalized string,
 * and once a model (or an added token) has produced them, its tokens. */
#ifndef ATTND_TOK_PIECES_H
#define ATTND_TOK_PIECES_H

#include "tokenizer/str.h"
#include "tokenizer/toks.h"

#include <stdbool.h>
#include <stddef.h>

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
/* Appends a piece that takes ownership of *s (zeroed).  0 or ENC_ENOMEM. */
int tok_pieces_take(tok_pieces *p, tok_str *s, bool done, tok_tok token);

#endif
