/* models.c - tok_model_*: the dispatch from tokenizer.json's model "type"
 * to WordPiece, BPE or Unigram (each on vocab.c's vocabulary), and the
 * calls every model answers. */
#include "tokenizer/models.h"
#include "tokenizer/bpe.h"
#include "tokenizer/json.h"
#include "tokenizer/unigram.h"
#include "tokenizer/wordpiece.h"

#include <string.h>

/* tokenizers' ModelWrapper reads a model without "type" (files before the
 * tag) as the first of BPE, WordPiece, WordLevel, Unigram whose fields it
 * has: BPE needs merges, WordPiece its four fields, Unigram a vocab list. */
static const char *legacy_type(const json_t *j)
{
    if (json_object_get(j, "merges"))
        return "BPE";
    if (json_object_get(j, "unk_token") && json_object_get(j, "continuing_subword_prefix") &&
        json_object_get(j, "max_input_chars_per_word") &&
        json_is_object(json_object_get(j, "vocab")))
        return "WordPiece";
    if (json_is_array(json_object_get(j, "vocab")))
        return "Unigram";
    return NULL;
}

tok_model *tok_model_new(const json_t *j, const char *path, enc_error *err)
{
    if (!json_is_object(j)) {
        enc_error_set(err, ENC_EFORMAT, "%s must be an object", path);
        return NULL;
    }
    const json_t *type = json_object_get(j, "type");
    const char *name;
    if (!type) {
        name = legacy_type(j);
        if (!name) {
            enc_error_set(err, ENC_EFORMAT, "%s.type is missing", path);
            return NULL;
        }
    } else if (!json_is_string(type)) {
        enc_error_set(err, ENC_EFORMAT, "%s.type must be a string", path);
        return NULL;
    } else {
        name = json_string_value(type);
    }
    if (strcmp(name, "WordPiece") == 0)
        return tok_wordpiece_new(j, path, err);
    if (strcmp(name, "BPE") == 0)
        return tok_bpe_new(j, path, err);
    if (strcmp(name, "Unigram") == 0)
        return tok_unigram_new(j, path, err);
    if (type)
        tok_json_unsupported(path, "type", type, err);
    return NULL;
}

void tok_model_free(tok_model *m)
{
    if (m)
        m->ops->free(m);
}

int tok_model_tokenize(const tok_model *m, const tok_str *word, tok_toks *out)
{
    if (word->n == 0)
        return 0;
    return m->ops->tokenize(m, word, out);
}

size_t tok_model_vocab_size(const tok_model *m)
{
    return m->vocab.n;
}

size_t tok_model_vocab_count(const tok_model *m)
{
    return m->vocab.count;
}

const char *tok_model_id_to_token(const tok_model *m, int32_t id)
{
    if (id < 0 || (size_t)id >= m->vocab.n)
        return NULL;
    return m->vocab.tokens[id];
}

int32_t tok_model_token_to_id(const tok_model *m, const char *token, size_t len)
{
    return tok_vocab_find(&m->vocab, token, len);
}
