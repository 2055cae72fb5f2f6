/* toks.c - tok_toks_*: a list of tokens with their spans. */
#include "tokenizer/toks.h"

#include <stdlib.h>

int tok_toks_push(tok_toks *t, int32_t id, uint32_t os, uint32_t oe)
{
    if (t->n == t->cap) {
        size_t c = t->cap ? 2 * t->cap : 16;
        tok_tok *v = realloc(t->v, c * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        t->v = v;
        t->cap = c;
    }
    t->v[t->n++] = (tok_tok){.id = id, .os = os, .oe = oe};
    return 0;
}
