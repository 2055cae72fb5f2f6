/* toks.h - a list of tokens, each with the original span it covers. */
#ifndef ATTND_TOK_TOKS_H
#define ATTND_TOK_TOKS_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* A token: its id and the original span it covers (bytes). */
typedef struct tok_tok {
    int32_t id;
    uint32_t os, oe;
} tok_tok;

typedef struct tok_toks {
    tok_tok *v;
    size_t n, cap;
} tok_toks;

/* 0 or ENC_ENOMEM. */
int tok_toks_push(tok_toks *t, int32_t id, uint32_t os, uint32_t oe);

#endif
