/* utf8.h - one code point in and out of UTF-8.  (tok_utf8_invalid_at, the
 * check that a text is UTF-8, is public: tokenizer.h.) */
#ifndef ATTND_TOK_UTF8_H
#define ATTND_TOK_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The code point at p (valid UTF-8) and its length in bytes. */
uint32_t tok_utf8_get(const unsigned char *p, size_t *len);
/* UTF-8 of one code point into out (4 bytes room); its length. */
int tok_utf8_put(uint32_t c, char *out);

#endif
