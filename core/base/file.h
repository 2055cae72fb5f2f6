/* file.h - the small files of a model directory (config.json,
 * tokenizer.json) read whole.  Private to core/. */
#ifndef ATTND_BASE_FILE_H
#define ATTND_BASE_FILE_H

#include "base/error.h"

#include <stddef.h>

/* The whole file at path (NUL-terminated, owned; at most 64 MiB) and its
 * length, or NULL with err set (ENC_EIO, ENC_EFORMAT when too large). */
char *file_read_whole(const char *path, size_t *len, enc_error *err);

#endif
