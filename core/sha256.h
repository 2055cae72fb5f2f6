/* sha256.h - SHA-256 (FIPS 180-4), used to fingerprint weights files.
 *
 *     sha256_ctx c;
 *     unsigned char digest[SHA256_DIGEST_SIZE];
 *     char hex[SHA256_HEX_SIZE];
 *     sha256_init(&c);
 *     sha256_update(&c, data, len);
 *     sha256_final(&c, digest);
 *     sha256_hex(digest, hex);   // 64 lower-case hex digits + NUL
 */
#ifndef ATTND_SHA256_H
#define ATTND_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE 65

typedef struct sha256_ctx {
    uint32_t state[8];
    uint64_t length;         /* bytes hashed so far */
    unsigned char block[64];
    size_t used;             /* bytes waiting in block */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, unsigned char digest[SHA256_DIGEST_SIZE]);

/* One-shot digest of len bytes. */
void sha256(const void *data, size_t len, unsigned char digest[SHA256_DIGEST_SIZE]);

/* Lower-case hex of a digest into hex (65 bytes with the NUL). */
void sha256_hex(const unsigned char digest[SHA256_DIGEST_SIZE], char hex[SHA256_HEX_SIZE]);

#endif
