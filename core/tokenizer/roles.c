/* roles.c - what transformers adds to a tokenizer.json: the special tokens'
 * roles (unk_token, pad_token, mask_token), decode's clean-up and the
 * model_max_length, read from tokenizer_config.json, with defaults from
 * tokenizer.json alone. */
#include "tokenizer/tokenizer_def.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* The first of names (NULL-ended) that is an added special token's content. */
static int32_t special_named(const tok_tokenizer *t, const char *const *names)
{
    for (; *names; names++)
        for (size_t i = 0; i < t->n_added; i++)
            if (t->added[i].special && strcmp(t->added[i].content, *names) == 0)
                return t->added[i].id;
    return -1;
}

void tok_roles_default(tok_tokenizer *t, const json_t *root)
{
    static const char *const UNK[] = {"[UNK]", "<unk>", NULL};
    static const char *const PAD[] = {"[PAD]", "<pad>", NULL};
    static const char *const MASK[] = {"[MASK]", "<mask>", NULL};
    const json_t *model = json_object_get(root, "model");
    const json_t *unk = json_object_get(model, "unk_token"),
                 *unk_id = json_object_get(model, "unk_id");
    t->role[TOK_ROLE_UNK] = json_is_string(unk)       ? tok_token_id(t, json_string_value(unk))
                            : json_is_integer(unk_id) ? (int32_t)json_integer_value(unk_id)
                                                      : special_named(t, UNK);
    const json_t *pad = json_object_get(json_object_get(root, "padding"), "pad_id");
    t->role[TOK_ROLE_PAD] =
        json_is_integer(pad) ? (int32_t)json_integer_value(pad) : special_named(t, PAD);
    t->role[TOK_ROLE_MASK] = special_named(t, MASK);
    t->clean_up = false;
    t->model_max_length = 0;
}

/* transformers writes VERY_LARGE_INTEGER (int(1e30)) where a tokenizer has
 * no length of its own; anything this large is that. */
#define NO_MAX_LENGTH 1e18

/* model_max_length: a positive integer, or one too large to be a length
 * (none: 0).  0, or ENC_EFORMAT with err set. */
static int read_max_length(const json_t *v, size_t *out, enc_error *err)
{
    const double x = json_number_value(v); /* read as a real: 1e30 is no int64 */
    if (json_is_number(v) && x >= NO_MAX_LENGTH) {
        *out = 0;
        return ENC_OK;
    }
    if (!json_is_number(v) || x < 1 || x != floor(x))
        return enc_error_set(err, ENC_EFORMAT,
                             "tokenizer_config.json: model_max_length must be a positive integer");
    *out = (size_t)x;
    return ENC_OK;
}

/* A role's entry: a string, or an AddedToken object's "content". */
static const char *role_content(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v)
                             : json_string_value(json_object_get(v, "content"));
}

/* transformers' LlamaTokenizerFast (the class AutoTokenizer makes of
 * LlamaTokenizer and CodeLlamaTokenizer with a tokenizer.json) and
 * GemmaTokenizerFast replace tokenizer.json's post-processor when they are
 * made (update_post_processor): [bos_token] $A [eos_token], then [bos_token]
 * $B [eos_token] for a pair's second text (type 1), each where add_bos_token
 * (default true) and add_eos_token (default false) say.  Mistral's and
 * Llama's embedders (e5-mistral's add_eos_token) rely on it.  Other classes
 * keep tokenizer.json's.  0, or a negative status with err set. */
static int bos_eos_template(tok_tokenizer *t, const json_t *root, enc_error *err)
{
    static const struct {
        const char *cls, *bos, *eos;
    } CLASSES[] = {
        {"LlamaTokenizer", "<s>", "</s>"},     {"LlamaTokenizerFast", "<s>", "</s>"},
        {"CodeLlamaTokenizer", "<s>", "</s>"}, {"CodeLlamaTokenizerFast", "<s>", "</s>"},
        {"GemmaTokenizer", "<bos>", "<eos>"},  {"GemmaTokenizerFast", "<bos>", "<eos>"},
    };
    const char *cls = json_string_value(json_object_get(root, "tokenizer_class"));
    size_t c = 0;
    while (cls && c < sizeof CLASSES / sizeof *CLASSES && strcmp(cls, CLASSES[c].cls) != 0)
        c++;
    if (!cls || c == sizeof CLASSES / sizeof *CLASSES)
        return ENC_OK;
    static const char *const ADD[2] = {"add_bos_token", "add_eos_token"};
    static const char *const TOKEN[2] = {"bos_token", "eos_token"};
    bool add[2] = {true, false};
    int32_t id[2] = {-1, -1};
    for (int k = 0; k < 2; k++) {
        const json_t *a = json_object_get(root, ADD[k]);
        if (a && !json_is_null(a) && !json_is_boolean(a))
            return enc_error_set(err, ENC_EFORMAT,
                                 "tokenizer_config.json: %s must be true or false", ADD[k]);
        if (a && json_is_boolean(a))
            add[k] = json_is_true(a);
        if (!add[k])
            continue;
        const json_t *v = json_object_get(root, TOKEN[k]);
        const char *s = !v ? (k ? CLASSES[c].eos : CLASSES[c].bos) : role_content(v);
        if (!s)
            return enc_error_set(err, ENC_EINVAL,
                                 "tokenizer_config.json: %s true needs %s (%s adds it to every "
                                 "text)",
                                 ADD[k], TOKEN[k], cls);
        if ((id[k] = tok_token_id(t, s)) < 0)
            return enc_error_set(err, ENC_EINVAL,
                                 "tokenizer_config.json: %s '%.64s' is not a token of "
                                 "tokenizer.json",
                                 TOKEN[k], s);
    }
    return tok_set_bos_eos(t, id[0], add[0], id[1], add[1], err);
}

int tok_read_config(tok_tokenizer *t, const char *text, size_t len, enc_error *err)
{
    static const char *const KEYS[TOK_ROLES] = {"unk_token", "pad_token", "mask_token"};
    json_error_t jerr;
    /* numbers as reals: model_max_length is often int(1e30), too large for
     * jansson's integers; no other key read here is a number */
    json_t *root = json_loadb(text, len, JSON_DECODE_INT_AS_REAL, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        return enc_error_set(err, ENC_EFORMAT, "tokenizer_config.json: %s",
                             root ? "must hold an object" : jerr.text);
    }
    int rc = ENC_OK;
    for (int r = 0; r < TOK_ROLES && rc == ENC_OK; r++) {
        const json_t *v = json_object_get(root, KEYS[r]);
        if (!v)
            continue;
        const char *s = role_content(v);
        const int32_t id = s ? tok_token_id(t, s) : -1;
        if (json_is_null(v)) {
            t->role[r] = -1;
        } else if (!s) {
            rc = enc_error_set(err, ENC_EFORMAT,
                               "tokenizer_config.json: %s must be a string or an AddedToken, "
                               "not %s",
                               KEYS[r], json_is_object(v) ? "an object without content" : "this");
        } else if (id < 0) {
            rc = enc_error_set(err, ENC_EINVAL,
                               "tokenizer_config.json: %s '%.64s' is not a token of tokenizer.json",
                               KEYS[r], s);
        } else {
            t->role[r] = id;
        }
    }
    const json_t *c = json_object_get(root, "clean_up_tokenization_spaces");
    if (rc == ENC_OK && c && !json_is_boolean(c))
        rc = enc_error_set(err, ENC_EFORMAT,
                           "tokenizer_config.json: clean_up_tokenization_spaces must be true or "
                           "false");
    if (rc == ENC_OK && c)
        t->clean_up = json_is_true(c);
    const json_t *m = json_object_get(root, "model_max_length");
    size_t max_length = 0;
    if (rc == ENC_OK && m && !json_is_null(m) &&
        (rc = read_max_length(m, &max_length, err)) == ENC_OK)
        t->model_max_length = max_length;
    if (rc == ENC_OK)
        rc = bos_eos_template(t, root, err);
    json_decref(root);
    return rc;
}

size_t tok_model_max_length(const tok_tokenizer *t)
{
    return t->model_max_length;
}

int32_t tok_role_id(const tok_tokenizer *t, tok_role r)
{
    return r >= 0 && r < TOK_ROLES ? t->role[r] : -1;
}

bool tok_clean_up_spaces(const tok_tokenizer *t)
{
    return t->clean_up;
}

size_t tok_clean_up(char *s, size_t len)
{
    /* transformers' clean_up_tokenization: each replacement over the whole
     * text, in this order */
    static const char *const FROM[] = {" .",   " ?",  " !",  " ,",   " ' ",
                                       " n't", " 'm", " 's", " 've", " 're"};
    static const char *const TO[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    for (size_t r = 0; r < sizeof FROM / sizeof *FROM; r++) {
        const size_t fl = strlen(FROM[r]), tl = strlen(TO[r]);
        size_t k = 0;
        for (size_t i = 0; i < len;) {
            if (i + fl <= len && memcmp(s + i, FROM[r], fl) == 0) {
                memmove(s + k, TO[r], tl);
                k += tl;
                i += fl;
            } else {
                s[k++] = s[i++];
            }
        }
        len = k;
    }
    s[len] = '\0';
    return len;
}
