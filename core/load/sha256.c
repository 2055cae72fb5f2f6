/* sha256.c - SHA-256 hex digests through nettle (sha256.h). */
#include "load/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <unistd.h>

static void hex_of(struct sha256_ctx *c, char hex[SHA256_HEX_SIZE])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char d[SHA256_DIGEST_SIZE];
    sha256_digest(c, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * SHA256_DIGEST_SIZE] = '\0';
}

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_SIZE])
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, len, data);
    hex_of(&c, hex);
}

int sha256_file_hex(const char *path, char hex[SHA256_HEX_SIZE])
{
    enum { BLOCK = 1 << 20 };
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char *buf = fd < 0 ? NULL : malloc(BLOCK);
    if (!buf) {
        const int saved = fd < 0 ? errno : ENOMEM;
        if (fd >= 0)
            close(fd);
        errno = saved;
        return -1;
    }
    struct sha256_ctx c;
    sha256_init(&c);
    ssize_t n;
    while ((n = read(fd, buf, BLOCK)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        sha256_update(&c, (size_t)n, buf);
    }
    const int saved = errno;
    free(buf);
    close(fd);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    hex_of(&c, hex);
    return 0;
}
