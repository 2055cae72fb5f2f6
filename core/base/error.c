/* error.c - status strings and the first-error-wins error struct. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *enc_strerror(int status)
{
    switch (status) {
#define ENC_STATUS_CASE(name, value, desc)                                                         \
    case ENC_##name:                                                                               \
        return desc;
        ENC_STATUS_MAP(ENC_STATUS_CASE)
#undef ENC_STATUS_CASE
    }
    return "unknown status";
}

int enc_error_set(enc_error *err, enc_status status, const char *fmt, ...)
{
    if (err && err->status == ENC_OK) {
        va_list ap;
        err->status = status;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

void enc_error_clear(enc_error *err)
{
    if (err) {
        err->status = ENC_OK;
        err->message[0] = '\0';
    }
}
