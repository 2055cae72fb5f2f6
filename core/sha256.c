/* sha256.c - SHA-256 hex digests through nettle (sha256.h). */
#include "sha256.h"

#include <nettle/sha2.h>

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_SIZE])
{
    static const char digits[] = "0123456789abcdef";
    struct sha256_ctx c;
    unsigned char d[SHA256_DIGEST_SIZE];
    sha256_init(&c);
    sha256_update(&c, len, data);
    sha256_digest(&c, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * SHA256_DIGEST_SIZE] = '\0';
}
