/* pretokenize.h - a pre-tokenizer (tokenizer.json's "pre_tokenizer"). */
#ifndef ATTND_TOK_PRETOKENIZE_H
#define ATTND_TOK_PRETOKENIZE_H

#include "base/error.h"
#include "tokenizer/pieces.h"

#include <jansson.h>

typedef struct tok_pretok tok_pretok;
/* Parses j as tok_normalizer_new does. */
tok_pretok *tok_pretok_new(const json_t *j, const char *path, enc_error *err);
void tok_pretok_free(tok_pretok *p);
/* Splits every piece of *p that is not done; done pieces stay as they are,
 * in order.  0 or a negative enc_status. */
int tok_pretokenize(const tok_pretok *pt, tok_pieces *p);

#endif
