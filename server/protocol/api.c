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
