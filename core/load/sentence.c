/* sentence.c - a sentence-transformers directory's text settings:
 * sentence_bert_config.json's max_seq_length (its Transformer module's:
 * what sentence-transformers' encode cuts a text to), and
 * config_sentence_transformers.json's prompts and default_prompt_name
 * (SentenceTransformer.__init__ reads them; encode prepends the prompt). */
#include "load/sentence.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dir/name parsed (*root NULL when the file is absent).  0 or ENC_EFORMAT. */
static int load(const char *dir, const char *name, json_t **root, enc_error *err)
{
    char path[4200];
    *root = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return enc_error_set(err, ENC_EINVAL, "model.dir: the path is too long");
    if (access(path, F_OK) != 0)
        return ENC_OK;
    json_error_t jerr;
    if (!(*root = json_load_file(path, 0, &jerr)))
        return enc_error_set(err, ENC_EFORMAT, "%s: line %d, column %d: %s", name, jerr.line,
                             jerr.column, jerr.text);
    if (!json_is_object(*root)) {
        json_decref(*root);
        *root = NULL;
        return enc_error_set(err, ENC_EFORMAT, "%s: the top level is not an object", name);
    }
    return ENC_OK;
}

static int read_max_seq_length(const char *dir, enc_st_text *t, enc_error *err)
{
    static const char NAME[] = "sentence_bert_config.json";
    json_t *root;
    int rc = load(dir, NAME, &root, err);
    const json_t *v = root ? json_object_get(root, "max_seq_length") : NULL;
    if (rc == ENC_OK && v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX)
            rc = enc_error_set(err, ENC_EFORMAT, "%s: max_seq_length must be a positive integer",
                               NAME);
        else
            t->max_seq_length = (int)json_integer_value(v);
    }
    json_decref(root);
    return rc;
}

static int read_prompts(const char *dir, enc_st_text *t, enc_error *err)
{
    static const char NAME[] = "config_sentence_transformers.json";
    json_t *root;
    int rc = load(dir, NAME, &root, err);
    if (rc != ENC_OK || !root)
        return rc;
    const json_t *type = json_object_get(root, "model_type");
    t->cross_encoder = json_is_string(type) && strcmp(json_string_value(type), "CrossEncoder") == 0;
    json_t *prompts = json_object_get(root, "prompts");
    const json_t *def = json_object_get(root, "default_prompt_name");
    if (prompts && !json_is_null(prompts) && !json_is_object(prompts)) {
        rc = enc_error_set(err, ENC_EFORMAT, "%s: prompts must be an object of names and texts",
                           NAME);
        goto done;
    }
    const size_t n = json_is_object(prompts) ? json_object_size(prompts) : 0;
    if (n && !(t->prompts = calloc(n, sizeof *t->prompts))) {
        rc = enc_error_set(err, ENC_ENOMEM, "out of memory");
        goto done;
    }
    const char *key;
    json_t *text;
    json_object_foreach(prompts, key, text)
    {
        if (!json_is_string(text)) {
            rc = enc_error_set(err, ENC_EFORMAT, "%s: prompts.%.64s must be a string", NAME, key);
            goto done;
        }
        enc_st_prompt *p = &t->prompts[t->n_prompts];
        if (!(p->name = strdup(key)) || !(p->text = strdup(json_string_value(text)))) {
            free(p->name);
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory");
            goto done;
        }
        t->n_prompts++;
    }
    if (def && !json_is_null(def)) {
        if (!json_is_string(def)) {
            rc = enc_error_set(err, ENC_EFORMAT, "%s: default_prompt_name must be a string or null",
                               NAME);
        } else if (!enc_st_text_prompt(t, json_string_value(def))) {
            rc = enc_error_set(err, ENC_EINVAL,
                               "%s: default_prompt_name '%.64s' is not one of its prompts", NAME,
                               json_string_value(def));
        } else if (!(t->default_prompt_name = strdup(json_string_value(def)))) {
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory");
        }
    }
done:
    json_decref(root);
    return rc;
}

int enc_st_text_read(const char *dir, enc_st_text *t, enc_error *err)
{
    memset(t, 0, sizeof *t);
    int rc = read_max_seq_length(dir, t, err);
    if (rc == ENC_OK)
        rc = read_prompts(dir, t, err);
    if (rc != ENC_OK)
        enc_st_text_free(t);
    return rc;
}

const char *enc_st_text_prompt(const enc_st_text *t, const char *name)
{
    for (size_t i = 0; t && name && i < t->n_prompts; i++)
        if (strcmp(t->prompts[i].name, name) == 0)
            return t->prompts[i].text;
    return NULL;
}

void enc_st_text_free(enc_st_text *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_prompts; i++) {
        free(t->prompts[i].name);
        free(t->prompts[i].text);
    }
    free(t->prompts);
    free(t->default_prompt_name);
    memset(t, 0, sizeof *t);
}
