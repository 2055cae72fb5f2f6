/* json.h - readers for tokenizer.json's components: the member or its
 * default; messages name path.key. */
#ifndef ATTND_TOK_JSON_H
#define ATTND_TOK_JSON_H

#include "base/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* jansson's iteration takes a non-const object; it does not change it. */
static inline json_t *tok_json_unconst(const json_t *j)
{
    return (json_t *)(uintptr_t)j;
}

int tok_json_bool(const json_t *obj, const char *path, const char *key, bool dflt, bool *out,
                  enc_error *err);
int tok_json_string(const json_t *obj, const char *path, const char *key, const char *dflt,
                    const char **out, enc_error *err);
int tok_json_int(const json_t *obj, const char *path, const char *key, long dflt, long *out,
                 enc_error *err);
/* ENC_EFORMAT naming path.key when obj lacks it (a field without a serde
 * default in tokenizers); the _bool form then reads it. */
int tok_json_need(const json_t *obj, const char *path, const char *key, enc_error *err);
int tok_json_need_bool(const json_t *obj, const char *path, const char *key, bool *out,
                       enc_error *err);
/* A serde char: ENC_EFORMAT naming path.key unless obj has it as a string
 * of exactly one character, which goes to *out. */
int tok_json_need_char(const json_t *obj, const char *path, const char *key, uint32_t *out,
                       enc_error *err);
/* ENC_EINVAL naming path.key and its value as not supported. */
int tok_json_unsupported(const char *path, const char *key, const json_t *value, enc_error *err);
/* ENC_EINVAL naming path.key for the first key of obj not in allowed
 * (NULL-ended): an option tokenizers' component does not read. */
int tok_json_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                        enc_error *err);

#endif
