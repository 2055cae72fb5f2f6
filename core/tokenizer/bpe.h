/* bpe.h - the BPE model (tokenizer.json's model of "type" "BPE"). */
#ifndef ATTND_TOK_BPE_H
#define ATTND_TOK_BPE_H

#include "tokenizer/models.h"

/* Parses j (path names it in messages); NULL with err set. */
tok_model *tok_bpe_new(const json_t *j, const char *path, enc_error *err);

#endif
