/* vocab.c - tok_vocab_*: the vocabulary every model has (tokens by id, and an
 * open-addressing FNV-1a hash from token to id). */
#include "tokenizer/vocab.h"

#include "tokenizer/json.h"

#include <stdlib.h>
#include <string.h>

/* ---- the vocabulary --------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3u;
    }
    return h ^ h >> 29;
}

int tok_vocab_init(tok_vocab *v, size_t n)
{
    memset(v, 0, sizeof *v);
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    v->tokens = calloc(n ? n : 1, sizeof *v->tokens);
    v->lens = calloc(n ? n : 1, sizeof *v->lens);
    v->slots = malloc(cap * sizeof *v->slots);
    if (!v->tokens || !v->lens || !v->slots) {
        tok_vocab_free(v);
        return ENC_ENOMEM;
    }
    memset(v->slots, 0xff, cap * sizeof *v->slots); /* every slot -1 */
    v->n = n;
    v->cap = cap;
    return 0;
}

void tok_vocab_free(tok_vocab *v)
{
    if (!v)
        return;
    if (v->tokens)
        for (size_t i = 0; i < v->n; i++)
            free(v->tokens[i]);
    free(v->tokens);
    free(v->lens);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

int32_t tok_vocab_find(const tok_vocab *v, const char *token, size_t len)
{
    if (!v->slots)
        return -1;
    const size_t mask = v->cap - 1;
    for (size_t i = (size_t)fnv1a(token, len) & mask;; i = (i + 1) & mask) {
        const int32_t id = v->slots[i];
        if (id < 0)
            return -1;
        if (v->lens[id] == len && memcmp(v->tokens[id], token, len) == 0)
            return id;
    }
}

int tok_vocab_set(tok_vocab *v, int32_t id, const char *token, size_t len)
{
    if (id < 0 || (size_t)id >= v->n || v->tokens[id] || len > UINT32_MAX)
        return ENC_EFORMAT;
    const size_t mask = v->cap - 1;
    size_t i = (size_t)fnv1a(token, len) & mask;
    for (; v->slots[i] >= 0; i = (i + 1) & mask) {
        const int32_t o = v->slots[i];
        if (v->lens[o] == len && memcmp(v->tokens[o], token, len) == 0)
            return ENC_EFORMAT;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return ENC_ENOMEM;
    memcpy(copy, token, len);
    copy[len] = '\0';
    v->tokens[id] = copy;
    v->count++;
    v->lens[id] = (uint32_t)len;
    v->slots[i] = id;
    return 0;
}

/* A vocabulary map may leave ids unused (tokenizers only warns when it writes
 * one), but not so many that its table is mostly holes: a stray huge id is a
 * broken file, not a vocabulary. */
#define VOCAB_MAX_HOLES(count) (2 * (count) + 1024)

int tok_vocab_from_map(tok_vocab *v, const json_t *map, const char *what, enc_error *err)
{
    memset(v, 0, sizeof *v);
    if (!json_is_object(map))
        return enc_error_set(err, ENC_EFORMAT, "%s must be an object of token: id", what);
    size_t count = 0, n = 0;
    const char *key;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach(tok_json_unconst(map), key, klen, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= INT32_MAX)
            return enc_error_set(err, ENC_EFORMAT,
                                 "%s[\"%.40s\"]: the id must be an integer from 0 to %d", what, key,
                                 INT32_MAX - 1);
        const size_t id = (size_t)json_integer_value(val);
        if (id + 1 > n)
            n = id + 1;
        count++;
    }
    if (n > VOCAB_MAX_HOLES(count))
        return enc_error_set(err, ENC_EFORMAT,
                             "%s: ids run to %zu for %zu tokens (more holes than tokens)", what,
                             n - 1, count);
    if (tok_vocab_init(v, n) < 0)
        return enc_error_set(err, ENC_ENOMEM, "%s: out of memory for %zu tokens", what, n);
    json_object_keylen_foreach(tok_json_unconst(map), key, klen, val)
    {
        const int32_t id = (int32_t)json_integer_value(val);
        int rc = tok_vocab_set(v, id, key, klen);
        if (rc == ENC_EFORMAT)
            rc = enc_error_set(err, ENC_EFORMAT,
                               "%s: tokens \"%.40s\" and \"%.40s\" both have id %d", what,
                               v->tokens[id] ? v->tokens[id] : "", key, id);
        else if (rc < 0)
            rc = enc_error_set(err, rc, "%s: out of memory", what);
        if (rc < 0) {
            tok_vocab_free(v);
            return rc;
        }
    }
    return 0;
}
