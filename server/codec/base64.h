/* base64.h - RFC 4648 base64 (standard alphabet, with padding), with
 * AVX-512 VBMI loops for the bulk on CPUs that have them.
 *
 *     char *s = base64_encode(bytes, n, &len);       // owned
 *     unsigned char *b = base64_decode(s, len, &n);  // owned; NULL: invalid
 */
#ifndef ATTND_CODEC_BASE64_H
#define ATTND_CODEC_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* base64_decode returns an owned buffer and its length, or NULL for invalid
 * input (bad characters, bad padding, length not a multiple of 4;
 * whitespace is not allowed).  base64_encode returns an owned NUL-terminated
 * string, or NULL when out of memory. */
char *base64_encode(const void *data, size_t len, size_t *out_len);
unsigned char *base64_decode(const char *text, size_t len, size_t *out_len);

/* Base64 of n bytes at src into dst (4 characters per 3 bytes, the last
 * group padded); returns the characters written (not NUL-terminated). */
size_t base64_encode_block(const unsigned char *src, size_t n, char *dst);

/* Bytes that len characters of base64 decode to (len a multiple of 4),
 * assuming the padding is well placed (decoding checks it). */
size_t base64_decoded_size(const char *s, size_t len);

/* Decodes s[0..len) (len a multiple of 4) into out (base64_decoded_size
 * bytes).  Returns 0, or -1 with *bad the offset of the first character at
 * fault. */
int base64_decode_into(const char *s, size_t len, unsigned char *out, size_t *bad);

/* The AVX-512 VBMI loops are used when the CPU has them; base64_set_vbmi(false)
 * turns them off (tests run both paths), true back on.  base64_vbmi_enabled:
 * whether they are in use now. */
void base64_set_vbmi(bool on);
bool base64_vbmi_enabled(void);

#endif
