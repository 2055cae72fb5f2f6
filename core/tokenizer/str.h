/* str.h - the normalized string with its alignments, and the transform that
 * rebuilds one.
 *
 * Offsets.  tokenizers keeps, for each byte of the normalized text, the span
 * of the original text it came from (NormalizedString's alignments), in bytes.
 * Every byte of one normalized character carries the same span, so here the
 * normalized text is an array of code points, each with its span [os, oe) in
 * the original text's bytes.  A token covering normalized code points
 * [a, b) has the original span [os[a], oe[b-1]), as tokenizers'
 * convert_offsets gives it.  The spans are absolute (bytes from the start of
 * the whole input sequence), so a piece cut out of a string keeps them. */
#ifndef ATTND_TOK_STR_H
#define ATTND_TOK_STR_H

#include <stddef.h>
#include <stdint.h>

typedef struct tok_str {
    uint32_t *cp; /* (n) code points of the normalized text */
    uint32_t *os; /* (n) the original span's start of each, bytes */
    uint32_t *oe; /* (n) the original span's end of each, bytes */
    size_t n, cap;
} tok_str;

void tok_str_free(tok_str *s); /* frees the arrays; s may be zeroed or half built */
int tok_str_reserve(tok_str *s, size_t cap);
int tok_str_push(tok_str *s, uint32_t cp, uint32_t os, uint32_t oe);
/* s = text's code points, each spanning its own bytes shifted by base.
 * text must be valid UTF-8 (the caller checked). */
int tok_str_from_utf8(tok_str *s, const char *text, size_t len, uint32_t base);
/* out = s[a, b) (a copy with the same spans). */
int tok_str_slice(const tok_str *s, size_t a, size_t b, tok_str *out);
/* The UTF-8 of s[a, b) into *buf (grown with realloc as needed, NUL-ended);
 * returns its length or -1 when out of memory. */
long tok_str_utf8(const tok_str *s, size_t a, size_t b, char **buf, size_t *cap);

/* Rebuilding a string as tokenizers' NormalizedString::transform does, from
 * (code point, change) pairs walked over the source:
 *   change == 0: the char replaces the next source char and takes its span;
 *   change  < 0: it replaces the next source char and removes -change more
 *                after it (their spans are dropped; the char keeps only the
 *                replaced one's);
 *   change  > 0: the char is inserted, with the span of the source char
 *                consumed last (or [0, 0) when none was).
 * initial_removed source chars are dropped before the first pair.  Source
 * chars not consumed when tok_str_xform_end runs are dropped. */
typedef struct tok_str_xform {
    tok_str *src;
    tok_str out;
    size_t at; /* next source char */
    int failed;
} tok_str_xform;

void tok_str_xform_begin(tok_str_xform *x, tok_str *src, size_t initial_removed);
void tok_str_xform_push(tok_str_xform *x, uint32_t cp, long change);
/* Replaces *src with the result; 0, or ENC_ENOMEM (src unchanged, freed out). */
int tok_str_xform_end(tok_str_xform *x);

#endif
