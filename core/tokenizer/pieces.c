/* pieces.c - tok_pieces_*: the pieces of a pre-tokenized string. */
#include "tokenizer/pieces.h"

#include <stdlib.h>
#include <string.h>

void tok_pieces_free(tok_pieces *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        tok_str_free(&p->v[i].s);
    free(p->v);
    memset(p, 0, sizeof *p);
}

int tok_pieces_take(tok_pieces *p, tok_str *s, bool done, tok_tok token)
{
    if (p->n == p->cap) {
        size_t c = p->cap ? 2 * p->cap : 8;
        tok_piece *v = realloc(p->v, c * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        p->v = v;
        p->cap = c;
    }
    p->v[p->n++] = (tok_piece){.s = *s, .done = done, .token = token};
    memset(s, 0, sizeof *s);
    return 0;
}
