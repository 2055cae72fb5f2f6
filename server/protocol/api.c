/* api.c - the contract's error kinds (status codes and type strings) and
 * the wording helpers every codec's messages use. */
#include "protocol/api.h"

#include "base/error.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int api_error_set(api_error *err, api_error_kind kind, const char *fmt, ...)
{
    if (err && err->kind == API_OK) {
        va_list ap;
        err->kind = kind;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

api_error_kind api_error_of_core(int status)
{
    switch (status) {
    case ENC_EINVAL:
    case ENC_ENUMERIC:
    case ENC_EFORMAT:
        return API_BAD_REQUEST;
    case ENC_ELIMIT:
        return API_TOO_LARGE;
    case ENC_ENOMEM:
        return API_UNAVAILABLE;
    default:
        return API_INTERNAL;
    }
}

char *api_error_body(api_error_kind kind, const char *message)
{
    json_t *body =
        json_pack("{s:{s:s,s:s}}", "error", "type", api_error_type(kind), "message", message);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

int api_error_status(api_error_kind kind)
{
    switch (kind) {
    case API_OK:
        return 200;
#define API_ERROR_STATUS(name, status, type)                                                       \
    case API_##name:                                                                               \
        return status;
        API_ERROR_MAP(API_ERROR_STATUS)
#undef API_ERROR_STATUS
    }
    return 500;
}

const char *api_error_type(api_error_kind kind)
{
    switch (kind) {
    case API_OK:
        return "ok";
#define API_ERROR_TYPE(name, status, type)                                                         \
    case API_##name:                                                                               \
        return type;
        API_ERROR_MAP(API_ERROR_TYPE)
#undef API_ERROR_TYPE
    }
    return "internal";
}

/* ---- wording ------------------------------------------------------------------ */

/* Client text made safe for an error message: printable ASCII only (other
 * bytes become '?'), cut after max characters with "...".  out has room for
 * max + 4.  Returns out. */
const char *api_safe_text_n(const char *s, char *out, size_t max)
{
    size_t n = 0;
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    for (; *u && n < max; u++)
        out[n++] = (*u >= 0x20 && *u < 0x7f) ? (char)*u : '?';
    if (*u) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

const char *api_safe_text(const char *s, char out[API_SAFE_MAX + 4])
{
    return api_safe_text_n(s, out, API_SAFE_MAX);
}

/* "a string", "an array", ... for messages. */
const char *api_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* obj[key], with JSON null taken as absent.  Borrowed. */
json_t *api_json_field(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* ---- request bodies ------------------------------------------------------------ */

int api_json_invalid(api_error *err, int line, int column, int byte, const char *why)
{
    char msg[JSON_ERROR_TEXT_LENGTH + 4], at[32] = "";
    if (byte >= 0)
        snprintf(at, sizeof at, " (byte %d)", byte);
    /* jansson's text may quote the offending bytes: keep it ASCII. */
    return api_error_set(err, API_BAD_REQUEST, "invalid JSON at line %d, column %d%s: %s", line,
                         column, at, api_safe_text_n(why, msg, JSON_ERROR_TEXT_LENGTH));
}

/* The first string under v (named name, len bytes of it used) that holds
 * U+0000: its name in name, and 1; 0 when there is none. */
static int nul_find(json_t *v, char *name, size_t len, size_t size)
{
    if (json_is_string(v))
        return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
    size_t i;
    const char *key;
    json_t *item;
    char q[API_SAFE_MAX + 4];
    if (json_is_array(v)) {
        json_array_foreach(v, i, item)
        {
            snprintf(name + len, size - len, "[%zu]", i);
            if (nul_find(item, name, strlen(name), size))
                return 1;
        }
    } else if (json_is_object(v)) {
        json_object_foreach(v, key, item)
        {
            snprintf(name + len, size - len, "%s%s", len ? "." : "", api_safe_text(key, q));
            if (nul_find(item, name, strlen(name), size))
                return 1;
        }
    }
    name[len] = '\0';
    return 0;
}

int api_json_refuse_nul(json_t *root, const char *text, api_error *err)
{
    char name[256] = "";
    const char *key;
    json_t *item;
    if (!json_is_object(root)) {
        if (nul_find(root, name, 0, sizeof name))
            return api_error_set(err, API_BAD_REQUEST,
                                 "the body's strings must not contain U+0000 (\\u0000)");
        return 0;
    }
    json_object_foreach(root, key, item)
    {
        if (text && strcmp(key, text) == 0)
            continue;
        snprintf(name, sizeof name, "%s", key);
        if (nul_find(item, name, strlen(name), sizeof name)) {
            char q[2 * API_SAFE_MAX + 8];
            return api_error_set(err, API_BAD_REQUEST, "%s must not contain U+0000 (\\u0000)%s%s%s",
                                 api_safe_text_n(name, q, 2 * API_SAFE_MAX), text ? ": only " : "",
                                 text ? text : "", text ? " may" : "");
        }
    }
    return 0;
}

json_t *api_json_load(const char *body, size_t len, const char *text, api_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(body ? body : "", body ? len : 0,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        api_json_invalid(err, jerr.line, jerr.column, jerr.position, jerr.text);
        return NULL;
    }
    if (api_json_refuse_nul(root, text, err) < 0) {
        json_decref(root);
        return NULL;
    }
    return root;
}
