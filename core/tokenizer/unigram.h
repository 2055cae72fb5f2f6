/* unigram.h - the Unigram model (tokenizer.json's model of "type" "Unigram"). */
#ifndef ATTND_TOK_UNIGRAM_H
#define ATTND_TOK_UNIGRAM_H

#include "tokenizer/models.h"

/* Parses j (path names it in messages); NULL with err set. */
tok_model *tok_unigram_new(const json_t *j, const char *path, enc_error *err);

#endif
