/* api.c - the contract's error kinds: status codes and type strings. */
#include "protocol/api.h"

#include <stdarg.h>
#include <stdio.h>

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
