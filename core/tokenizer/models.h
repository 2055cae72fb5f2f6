/* models.h - a model (tokenizer.json's "model"): WordPiece, BPE or Unigram,
 * each on a vocabulary, behind one set of calls. */
#ifndef ATTND_TOK_MODELS_H
#define ATTND_TOK_MODELS_H

#include "base/error.h"
#include "tokenizer/str.h"
#include "tokenizer/toks.h"
#include "tokenizer/vocab.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tok_model tok_model;
/* By the model's "type" (or, without one, the fields it has). */
tok_model *tok_model_new(const json_t *j, const char *path, enc_error *err);
void tok_model_free(tok_model *m);
/* The word's tokens appended to out, spans from the word's code points.
 * 0 or a negative enc_status. */
int tok_model_tokenize(const tok_model *m, const tok_str *word, tok_toks *out);
/* The vocabulary: id -> token (borrowed, NULL when out of range), token -> id
 * (-1 when absent). */
size_t tok_model_vocab_size(const tok_model *m);
/* The tokens the vocabulary holds (Hugging Face's Model::get_vocab_size). */
size_t tok_model_vocab_count(const tok_model *m);
const char *tok_model_id_to_token(const tok_model *m, int32_t id);
int32_t tok_model_token_to_id(const tok_model *m, const char *token, size_t len);

/* What each model file fills: its calls, and the vocabulary first in its
 * struct. */
typedef struct tok_model_ops {
    void (*free)(tok_model *m);
    int (*tokenize)(const tok_model *m, const tok_str *word, tok_toks *out);
} tok_model_ops;

struct tok_model {
    const tok_model_ops *ops;
    tok_vocab vocab;
};

#endif
