/* jsonnum.h - JSON numbers, read from and written to text without jansson,
 * for the big numeric arrays of a request and a response.
 *
 * Reading: a number is what strtod makes of its text (the request's floats
 * are then (float)value), with an exact fast path for up to 19 digits.
 * Writing: a float with 1..9 significant digits, the same text as
 * snprintf's "%.{p}g" in the C locale, several times faster.
 *
 *     jsonnum_scanned t;
 *     if (jsonnum_scan(p, n, &t)) { double v; jsonnum_read(p, t.len, &v); }
 *     char buf[JSONNUM_CHARS];
 *     jsonnum_format(buf, 0.1f, 9);        // "0.100000001"
 */
#ifndef ATTND_CODEC_JSONNUM_H
#define ATTND_CODEC_JSONNUM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* |value| < 10^mag; JSONNUM_MAG_ZERO when every digit is 0. */
#define JSONNUM_MAG_ZERO LONG_MIN

/* What one pass over a JSON number token tells. */
typedef struct jsonnum_scanned {
    size_t len;    /* bytes */
    bool integer;  /* no fraction, no exponent */
    size_t digits; /* digits before any fraction */
    long mag;      /* |value| < 10^mag, or JSONNUM_MAG_ZERO */
} jsonnum_scanned;

/* Scans the JSON number (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
 * at the start of s[0..n).  Returns false if s does not start with one ("01"
 * is the number 0 followed by 1: the caller looks at what follows). */
bool jsonnum_scan(const char *s, size_t n, jsonnum_scanned *t);

/* The value strtod gives for the JSON number at the start of s[0..n) (its
 * syntax already checked), in *out.  Returns the token's length, or 0 when
 * out of memory (a long token is copied for strtod). */
size_t jsonnum_read(const char *s, size_t n, double *out);

/* strtod of the token s[0..n); *erange: strtod set ERANGE.  False when out
 * of memory. */
bool jsonnum_strtod(const char *s, size_t n, double *out, bool *erange);

/* Whether text[0..len) is exactly one JSON number (no "01", "+1", ".5",
 * "1.", NaN or Infinity), and if so its value in *value, bit for bit what
 * strtod returns for that text (-0 is -0.0; overflow is +-HUGE_VAL). */
bool jsonnum_parse(const char *text, size_t len, double *value);

/* The JSON number at the start of text[0..len): its length, with its value
 * as jsonnum_parse gives it; 0 when text does not start with a number, when
 * a real overflows a double (jansson's "real number overflow"), or when
 * memory is short.  Integers of any size are numbers (JavaScript writes
 * 1e20 as 100000000000000000000).  What follows the number is the caller's
 * to check ("1x" is the number 1, length 1). */
size_t jsonnum_token(const char *text, size_t len, double *value);

/* Rewrites in place every integer of text[0..len) beyond int64 (outside
 * strings) as a real of the same length and value to at least 14
 * significant digits, so the same float32 (the request's numbers are
 * float32): "100000000000000000000" -> "1.00000000000000e+20".  jansson
 * refuses such integers ("too big integer"); after this it reads them as
 * the numbers JavaScript meant, and an error elsewhere keeps its line and
 * column.  Returns how many were rewritten. */
size_t jsonnum_widen(char *text, size_t len);

/* f with precision (1..9; others clamped) significant digits, the same
 * text snprintf's "%.*g" writes in the C locale ("-0" for negative zero),
 * or "null" when f is not finite.  buf needs JSONNUM_CHARS bytes; it is
 * NUL-terminated; returns the length. */
#define JSONNUM_CHARS 16
size_t jsonnum_format(char *buf, float f, int precision);

/* The same into out with room for JSONNUM_ROOM bytes, not NUL-terminated,
 * of which it may scribble past the number's end (the fast form, for
 * writers that go on writing there); precision 1..9. */
#define JSONNUM_ROOM 31
size_t jsonnum_write(char *out, float f, int precision);

#endif
