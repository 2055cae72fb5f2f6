/* file.c - a small file read whole (file.h). */
#include "base/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *file_read_whole(const char *path, size_t *len, enc_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        enc_error_set(err, ENC_EIO, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            char *grown = cap < (64u << 20) ? realloc(buf, cap = cap ? 2 * cap : 8192) : NULL;
            if (!grown) {
                free(buf);
                fclose(fp);
                enc_error_set(err, ENC_EFORMAT, "'%s' is over 64 MiB or memory is short", path);
                return NULL;
            }
            buf = grown;
        }
        const size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
    }
    const bool bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(buf);
        enc_error_set(err, ENC_EIO, "cannot read '%s'", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
