/* json.c - tok_json_*: the readers tokenizer.json's component parsers share;
 * messages name path.key. */
#include "tokenizer/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int tok_json_bool(const json_t *obj, const char *path, const char *key, bool dflt, bool *out,
                  enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

int tok_json_string(const json_t *obj, const char *path, const char *key, const char *dflt,
                    const char **out, enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a string", path, key);
    *out = json_string_value(v);
    return 0;
}

int tok_json_int(const json_t *obj, const char *path, const char *key, long dflt, long *out,
                 enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be an integer", path, key);
    *out = (long)json_integer_value(v);
    return 0;
}

int tok_json_need(const json_t *obj, const char *path, const char *key, enc_error *err)
{
    if (!json_object_get(obj, key))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
    return 0;
}

int tok_json_need_bool(const json_t *obj, const char *path, const char *key, bool *out,
                       enc_error *err)
{
    int rc = tok_json_need(obj, path, key, err);
    return rc < 0 ? rc : tok_json_bool(obj, path, key, false, out, err);
}

int tok_json_need_char(const json_t *obj, const char *path, const char *key, uint32_t *out,
                       enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a string", path, key);
    utf8proc_int32_t c = -1;
    size_t len = json_string_length(v);
    utf8proc_ssize_t l =
        utf8proc_iterate((const utf8proc_uint8_t *)json_string_value(v), (utf8proc_ssize_t)len, &c);
    if (l < 1 || (size_t)l != len)
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be one character", path, key);
    *out = (uint32_t)c;
    return 0;
}

int tok_json_unsupported(const char *path, const char *key, const json_t *value, enc_error *err)
{
    char *text = value ? json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    char shown[64] = "";
    if (text) {
        snprintf(shown, sizeof shown, "%s", text);
        if (strlen(text) >= sizeof shown)
            memcpy(shown + sizeof shown - 4, "...", 4);
    }
    free(text);
    return enc_error_set(err, ENC_EINVAL, "%s.%s: %s is not supported", path, key, shown);
}

int tok_json_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                        enc_error *err)
{
    const char *key;
    json_t *val;
    json_object_foreach(tok_json_unconst(obj), key, val)
    {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i])
            return enc_error_set(err, ENC_EINVAL,
                                 "%s.%.60s: unknown option (tokenizers does not read it)", path,
                                 key);
    }
    return 0;
}
