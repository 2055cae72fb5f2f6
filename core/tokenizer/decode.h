/* decode.h - tokenizer.json's "decoder", the chain that turns tokens back
 * into text, read at load; tok_decode (tokenizer.h) runs it. */
#ifndef ATTND_TOK_DECODE_H
#define ATTND_TOK_DECODE_H

#include "base/error.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdint.h>

typedef struct tok_decoder tok_decoder;

/* What tok_decode needs, made once t's added tokens are read: the special
 * tokens' contents, and the decoder j (NULL or null: none).  A decoder
 * tokenizers would refuse to load, or one of a type not implemented, does
 * not fail the load: it is kept as its error, which tok_decode returns.
 * 0, or ENC_ENOMEM with err set. */
int tok_decode_setup(tok_tokenizer *t, const json_t *j, enc_error *err);
void tok_decoder_free(tok_decoder *d);

#endif
