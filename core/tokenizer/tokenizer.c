/* tokenizer.c - a loaded tokenizer's vocabulary: ids and tokens both ways,
 * added tokens first, and a token shown as text.  load.c reads
 * tokenizer.json into it, encode.c runs the pipeline, decode.c turns ids
 * back into text. */
#include "tokenizer/tokenizer_def.h"

#include "tokenizer/chars.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t tok_id_count(const tok_tokenizer *t)
{
    size_t n = tok_model_vocab_size(t->model);
    return t->n_added_ids > n ? t->n_added_ids : n;
}

const char *tok_token_text(const tok_tokenizer *t, int32_t id)
{
    if (id >= 0 && (size_t)id < t->n_added_ids && t->added_by_id[id] >= 0)
        return t->added[t->added_by_id[id]].content;
    return tok_model_id_to_token(t->model, id);
}

const added_token *tok_added_named(const tok_tokenizer *t, const char *content)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (strcmp(t->added[i].content, content) == 0)
            return &t->added[i];
    return NULL;
}

int32_t tok_token_id(const tok_tokenizer *t, const char *token)
{
    const added_token *a = tok_added_named(t, token);
    return a ? a->id : tok_model_token_to_id(t->model, token, strlen(token));
}

size_t tok_added_special(const tok_tokenizer *t, bool pair)
{
    return pair ? t->added_pair : t->added_single;
}

/* ---- display ------------------------------------------------------------------- */

size_t tok_token_display(const tok_tokenizer *t, int32_t id, char *out, size_t cap)
{
    const char *v = tok_token_text(t, id);
    if (!v)
        v = "";
    const bool added = id >= 0 && (size_t)id < t->n_added_ids && t->added_by_id[id] >= 0;
    char *tmp = NULL;
    size_t len = strlen(v);
    if (!added && t->display == DISPLAY_BYTE_LEVEL) {
        tok_str s = {0};
        if (tok_str_from_utf8(&s, v, len, 0) == 0 && (tmp = malloc(s.n + 1))) {
            size_t k = 0;
            bool all = true;
            for (size_t i = 0; i < s.n; i++) {
                int byte = tok_char_byte_of(s.cp[i]);
                all = all && byte >= 0;
                tmp[k++] = (char)(byte >= 0 ? byte : '?');
            }
            tmp[k] = '\0';
            if (all && tok_utf8_invalid_at(tmp, k) < 0) {
                v = tmp;
                len = k;
            }
        }
        tok_str_free(&s);
    } else if (!added && t->display == DISPLAY_METASPACE && t->display_prefix) {
        const size_t pl = strlen(t->display_prefix);
        if ((tmp = malloc(len + 1))) {
            size_t k = 0;
            for (size_t i = 0; i < len;) {
                if (pl && strncmp(v + i, t->display_prefix, pl) == 0) {
                    tmp[k++] = ' ';
                    i += pl;
                } else {
                    tmp[k++] = v[i++];
                }
            }
            tmp[k] = '\0';
            v = tmp;
            len = k;
        }
    }
    if (cap > 0) {
        size_t c = len < cap - 1 ? len : cap - 1;
        memcpy(out, v, c);
        out[c] = '\0';
    }
    free(tmp);
    return len;
}
