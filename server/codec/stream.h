/* stream.h - a response body produced chunk by chunk: a list of pieces
 * (text, and arrays of 4-byte words written as nested JSON numbers, as
 * base64 or as raw little-endian bytes) encoded straight from the tensors
 * into whatever buffer the socket has room for.  No whole-response text is
 * ever built, so a slow reader costs a socket buffer, not the response.
 *
 *     stream *st = stream_new();
 *     stream_text(st, "{\"outputs\":", 11);
 *     stream_view v = {out, FLOAT32, 2, {L, D}, {D, 1}};
 *     stream_json(st, &v, 9);            // [[...],[...]] with 9 digits
 *     stream_text(st, "}", 1);
 *     if (stream_failed(st)) ... out of memory
 *     while ((n = stream_read(st, buf, sizeof buf)) > 0) send(buf, n);
 *     stream_free(st);
 *
 * The pieces borrow the arrays they name: they must outlive the stream.
 * Consecutive base64 pieces form one base64 text (the bytes run on across
 * them); a text piece or the end closes it with its padding. */
#ifndef ATTND_CODEC_STREAM_H
#define ATTND_CODEC_STREAM_H

#include <stdbool.h>
#include <stddef.h>

typedef struct stream stream;

typedef enum stream_word { STREAM_FLOAT32, STREAM_INT32 } stream_word;

/* A strided block of 4-byte words: rank 1..3 dims, row-major, strides in
 * words (the last dimension's stride is 1: rows are contiguous). */
typedef struct stream_view {
    const void *base;
    stream_word word;
    int rank;
    size_t dims[3];
    size_t strides[3];
} stream_view;

/* An empty stream.  Owned, or NULL when out of memory. */
stream *stream_new(void);
void stream_free(stream *st);

/* Appends n bytes of text (copied). */
void stream_text(stream *st, const char *s, size_t n);
void stream_puts(stream *st, const char *s);
void stream_printf(stream *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends v as nested JSON arrays, one level per dimension: floats with
 * precision (1..9) significant digits as "%.{p}g" writes them (null when
 * not finite), int32 in decimal. */
void stream_json(stream *st, const stream_view *v, int precision);

/* Appends v's words as base64 (RFC 4648, little-endian bytes). */
void stream_base64(stream *st, const stream_view *v);

/* Appends v's words as raw little-endian bytes. */
void stream_raw(stream *st, const stream_view *v);

/* Hands p (malloc'd, or NULL) to the stream: freed with it.  For arrays
 * made for the body alone. */
void stream_own(stream *st, void *p);

/* Marks the stream failed: its producer ran out of memory. */
void stream_fail(stream *st);

/* True when an append ran out of memory (the stream is then unusable). */
bool stream_failed(const stream *st);

/* The body's length in bytes when it is known before it is produced (no
 * JSON numbers in it), else (size_t)-1. */
size_t stream_size(const stream *st);

/* An upper bound of the body's length in bytes, known before it is produced
 * (a JSON number's text, separators and brackets counted as
 * STREAM_JSON_NUMBER_MAX bytes). */
#define STREAM_JSON_NUMBER_MAX 32
size_t stream_size_max(const stream *st);

/* Lets a helper thread produce half of a body with at least min_numbers
 * JSON numbers (0: any): the body is cut into spans of up to 64 Ki numbers
 * at rows of its JSON pieces (a B = 1 response is mostly one piece, the
 * weights) or at text pieces, and the helper produces every other span
 * ahead of the reader, in a bounded ring (2 MiB), while stream_read
 * produces the others: JSON numbers are the slow part of a body (about
 * 14 ns each), and the forward's CPUs are free once it has run.  Call
 * before the first stream_read. */
void stream_parallel(stream *st, size_t min_numbers);

/* Produces the next bytes of the body into buf (max bytes, any size >= 1).
 * Returns how many; 0 at the end. */
size_t stream_read(stream *st, char *buf, size_t max);

/* The whole body as one NUL-terminated text (owned; length in *len), for
 * tests and for callers that want it at once; NULL when out of memory. */
char *stream_collect(stream *st, size_t *len);

#endif
