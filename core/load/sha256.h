/* sha256.h - the SHA-256 fingerprint (FIPS 180-4) of a weights file, from
 * nettle (the library GnuTLS, and so libmicrohttpd, already links).
 *
 *     char hex[SHA256_HEX_SIZE];
 *     sha256_hex(bytes, n, hex);   // 64 lower-case hex digits + NUL
 */
#ifndef ATTND_SHA256_H
#define ATTND_SHA256_H

#include <stddef.h>

#define SHA256_HEX_SIZE 65

/* The lower-case hex digest of len bytes at data, into hex. */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_SIZE]);

/* The same of the file at path, read a block at a time (so hashing a
 * mapped weights file does not fault in the tensors nobody reads).
 * Returns 0, or -1 with errno set. */
int sha256_file_hex(const char *path, char hex[SHA256_HEX_SIZE]);

#endif
