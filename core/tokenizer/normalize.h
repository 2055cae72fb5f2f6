/* normalize.h - a normalizer (tokenizer.json's "normalizer"). */
#ifndef ATTND_TOK_NORMALIZE_H
#define ATTND_TOK_NORMALIZE_H

#include "base/error.h"
#include "tokenizer/str.h"

#include <jansson.h>

typedef struct tok_normalizer tok_normalizer;
/* Parses j; NULL with err naming the component or option not supported
 * ("normalizer.normalizers[1].type: \"Foo\" is not supported"). path is the
 * JSON path for messages. */
tok_normalizer *tok_normalizer_new(const json_t *j, const char *path, enc_error *err);
void tok_normalizer_free(tok_normalizer *n);
/* Normalizes s in place.  0 or a negative enc_status. */
int tok_normalize(const tok_normalizer *n, tok_str *s);

#endif
