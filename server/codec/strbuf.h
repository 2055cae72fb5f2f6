/* strbuf.h - a growing text buffer for response bodies.  After a failed
 * allocation it stays failed and ignores writes, so a writer checks once at
 * the end.
 *
 *     strbuf b = {0};
 *     strbuf_puts(&b, "{\"n\":");
 *     strbuf_printf(&b, "%d}", 42);
 *     char *text = strbuf_detach(&b, &len);   // owned, NUL-terminated; NULL if failed
 */
#ifndef ATTND_STRBUF_H
#define ATTND_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct strbuf {
    char *s;       /* owned; not NUL-terminated until strbuf_detach */
    size_t len, cap;
    bool failed;   /* an allocation failed: the contents are incomplete */
} strbuf;

/* Makes room for extra more bytes.  Returns false (and marks b failed) when
 * memory runs out. */
bool strbuf_reserve(strbuf *b, size_t extra);
void strbuf_put(strbuf *b, const void *data, size_t n);
void strbuf_puts(strbuf *b, const char *s);
void strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text, NUL-terminated and owned by the caller, with its length in *len
 * (may be NULL); NULL if any write failed.  b is empty afterwards. */
char *strbuf_detach(strbuf *b, size_t *len);

/* Frees b's text; b is empty afterwards. */
void strbuf_free(strbuf *b);

#endif
