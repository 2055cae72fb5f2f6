/* wordpiece.h - the WordPiece model (tokenizer.json's model of "type" "WordPiece"). */
#ifndef ATTND_TOK_WORDPIECE_H
#define ATTND_TOK_WORDPIECE_H

#include "tokenizer/models.h"

/* Parses j (path names it in messages); NULL with err set. */
tok_model *tok_wordpiece_new(const json_t *j, const char *path, enc_error *err);

#endif
