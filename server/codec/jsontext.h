/* jsontext.h - steps through JSON text in place.
 *
 * Two walks read a request body's text before jansson parses the rest: /v1's,
 * to the big numeric "embeddings" array (v1.c), and /v2's, to each input's
 * "data" array (v2.c), both through codec/extract.c.  These are the steps both
 * take.  None of them validates: on valid JSON each is exact; on anything
 * else it may return NULL or stop somewhere a parser would not, and the
 * caller then leaves the body to jansson, which says what is wrong.
 *
 *     p = jt_skip_ws(p, end);
 *     if (*p == '"' && (q = jt_skip_string(p, end)) &&
 *         jt_key_is(p + 1, (size_t)(q - 1 - (p + 1)), "inputs")) ...
 *     p = jt_skip_value(p, end);   // past any value, or NULL
 */
#ifndef ATTND_JSONTEXT_H
#define ATTND_JSONTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* JSON's four whitespace characters (RFC 8259). */
static inline bool jt_is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* p past any whitespace, at most end. */
static inline const char *jt_skip_ws(const char *p, const char *end)
{
    while (p < end && jt_is_ws(*p))
        p++;
    return p;
}

/* Past the string that starts at p ('"'), or NULL if it does not end
 * before end. */
const char *jt_skip_string(const char *p, const char *end);

/* Past the array or object that starts at p ('[' or '{'), counting brackets
 * outside strings, or NULL if it does not close before end. */
const char *jt_skip_nested(const char *p, const char *end);

/* Past the value that starts at p: a string, an array, an object, or a
 * number or word, which ends at whitespace, ',', '}' or ']'.  NULL when there
 * is none (p == end too). */
const char *jt_skip_value(const char *p, const char *end);

/* Whether the object key s[0..n), as written between its quotes (escapes
 * included: "d\u0061ta" is data), is want, an ASCII name without NUL. */
bool jt_key_is(const char *s, size_t n, const char *want);

#endif
