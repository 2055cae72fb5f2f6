/* stream.c - a response body produced chunk by chunk (stream.h). */
#include "codec/stream.h"
#include "codec/base64.h"
#include "codec/jsonnum.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "stream.c writes the words' bytes as they lie in memory: a little-endian host"
#endif

typedef enum piece_kind { PIECE_TEXT, PIECE_JSON, PIECE_BASE64, PIECE_RAW } piece_kind;

typedef struct piece {
    piece_kind kind;
    size_t off, len; /* PIECE_TEXT: the bytes in st->text */
    stream_view v;   /* the others */
    int precision;   /* PIECE_JSON floats */
} piece;

/* Room one JSON number may take with what surrounds it: up to 7 bytes of
 * brackets and comma before it, JSONNUM_ROOM for the number, and the
 * up to 3 closing brackets after the last one. */
#define JSON_ROOM (JSONNUM_ROOM + 16)

struct stream {
    piece *pieces;
    size_t n, cap;
    char *text;   /* every text piece's bytes */
    void **owned; /* stream_own's */
    size_t n_owned;
    size_t text_len, text_cap;
    bool failed;

    /* The cursor: piece k; within a view, the row (idx[0], idx[1] over the
     * dims but the last) and the offset in it (words for JSON, bytes for
     * base64 and raw; bytes for text). */
    size_t k;
    size_t idx[2];
    size_t off;
    /* Where this cursor ends inside a JSON piece (the helper's part starts
     * there): piece stop_k's row stop_row (rows counted over the dims but
     * the last), before that row; stop_k == SIZE_MAX: at the end. */
    size_t stop_k, stop_row;
    unsigned char carry[3]; /* base64 bytes not yet encoded (fewer than 3) */
    int n_carry;
    char stage[2 * JSON_ROOM]; /* for a caller's buffer too small to write into */
    size_t stage_pos, stage_len;

    /* stream_parallel: the body cut into spans at rows of its JSON pieces
     * (or at text pieces); this stream's cursor produces the even spans,
     * a helper thread the odd ones, ahead, in chunks. */
    size_t ahead_min; /* numbers a body needs for the helper; 0: never */
    bool ahead_tried;
    struct ahead *ahead;
    struct span_at *spans; /* where span j starts; owned by the stream */
    size_t n_spans, n_all; /* and the pieces in all */
    size_t span;           /* the span this cursor is in */
    bool in_helper;        /* reading the helper's span after it */
};

/* A place in the body: piece k's row (rows counted over the dims but the
 * last; 0: the piece's start). */
typedef struct span_at {
    size_t k, row;
} span_at;

/* The helper's side: its own cursor (a shallow copy of the stream, sharing
 * pieces, text and spans), and a bounded ring of chunks it has produced,
 * at most AHEAD_CHUNKS x AHEAD_CHUNK bytes ahead; an empty chunk ends a
 * span.  A span holds about SPAN_NUMBERS numbers (some 700 KB of text),
 * so the two threads take turns with the ring never full for long. */
#define AHEAD_CHUNK  (256u << 10)
#define AHEAD_CHUNKS 8
#define SPAN_NUMBERS (64u << 10)

typedef struct ahead {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    stream sub;
    char *chunk[AHEAD_CHUNKS];
    size_t len[AHEAD_CHUNKS];
    size_t head, count; /* chunks ready, from head */
    size_t pos;         /* bytes of chunk[head] already read */
    bool done, cancel, failed;
} ahead;

static void ahead_stop(stream *st);

stream *stream_new(void)
{
    stream *st = calloc(1, sizeof(stream));
    if (st)
        st->stop_k = SIZE_MAX;
    return st;
}

void stream_free(stream *st)
{
    if (!st)
        return;
    ahead_stop(st);
    free(st->spans);
    for (size_t i = 0; i < st->n_owned; i++)
        free(st->owned[i]);
    free(st->owned);
    free(st->pieces);
    free(st->text);
    free(st);
}

void stream_fail(stream *st)
{
    st->failed = true;
}

void stream_own(stream *st, void *p)
{
    if (!p)
        return;
    void **o = realloc(st->owned, (st->n_owned + 1) * sizeof *o);
    if (!o) {
        free(p);
        st->failed = true;
        return;
    }
    st->owned = o;
    st->owned[st->n_owned++] = p;
}

bool stream_failed(const stream *st)
{
    return st->failed;
}

static piece *push(stream *st, piece_kind kind)
{
    if (st->failed)
        return NULL;
    if (st->n == st->cap) {
        const size_t cap = st->cap ? 2 * st->cap : 16;
        piece *p = realloc(st->pieces, cap * sizeof *p);
        if (!p) {
            st->failed = true;
            return NULL;
        }
        st->pieces = p;
        st->cap = cap;
    }
    piece *p = &st->pieces[st->n++];
    *p = (piece){.kind = kind};
    return p;
}

void stream_text(stream *st, const char *s, size_t n)
{
    if (st->failed || n == 0)
        return;
    if (st->text_len + n > st->text_cap) {
        size_t cap = st->text_cap ? st->text_cap : 1024;
        while (cap < st->text_len + n)
            cap *= 2;
        char *t = realloc(st->text, cap);
        if (!t) {
            st->failed = true;
            return;
        }
        st->text = t;
        st->text_cap = cap;
    }
    memcpy(st->text + st->text_len, s, n);
    /* Text after text extends the same piece. */
    piece *last = st->n ? &st->pieces[st->n - 1] : NULL;
    if (!last || last->kind != PIECE_TEXT) {
        last = push(st, PIECE_TEXT);
        if (!last)
            return;
        last->off = st->text_len;
    }
    last->len += n;
    st->text_len += n;
}

void stream_puts(stream *st, const char *s)
{
    stream_text(st, s, strlen(s));
}

void stream_printf(stream *st, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) {
        st->failed = true; /* callers print short things: numbers and names */
        return;
    }
    stream_text(st, buf, (size_t)n);
}

static size_t numel_of(const stream_view *v)
{
    size_t n = 1;
    for (int d = 0; d < v->rank; d++)
        n *= v->dims[d];
    return n;
}

/* The view with its leading dimensions padded to rank 3 ([1][1][n] for a
 * vector), so that a row is always dims[2] words at (idx[0], idx[1]). */
static stream_view as_rank3(const stream_view *v)
{
    stream_view w = {
        .base = v->base, .word = v->word, .rank = 3, .dims = {1, 1, 1}, .strides = {0, 0, 1}};
    const int rank = v->rank < 1 ? 1 : v->rank > 3 ? 3 : v->rank;
    for (int d = 0; d < rank; d++) {
        w.dims[3 - rank + d] = v->dims[d];
        w.strides[3 - rank + d] = v->strides[d];
    }
    return w;
}

/* The empty arrays of a view with no elements, as text ("[]", "[[],[]]"). */
static void empty_json(stream *st, const stream_view *v, int d)
{
    stream_text(st, "[", 1);
    for (size_t i = 0; d + 1 < v->rank && d < 2 && i < v->dims[d]; i++) {
        if (i)
            stream_text(st, ",", 1);
        empty_json(st, v, d + 1);
    }
    stream_text(st, "]", 1);
}

void stream_json(stream *st, const stream_view *v, int precision)
{
    if (numel_of(v) == 0) {
        empty_json(st, v, 0);
        return;
    }
    piece *p = push(st, PIECE_JSON);
    if (p) {
        p->v = *v;
        p->precision = precision < 1 ? 1 : precision > 9 ? 9 : precision;
    }
}

/* Base64 and raw bytes read rows: a view whose rows lie back to back is
 * one row. */
static stream_view as_rows(const stream_view *v)
{
    stream_view w = as_rank3(v);
    if (w.strides[1] == w.dims[2] && (w.dims[0] == 1 || w.strides[0] == w.dims[1] * w.dims[2])) {
        w.dims[2] *= w.dims[0] * w.dims[1];
        w.dims[0] = w.dims[1] = 1;
    }
    return w;
}

static void push_bytes(stream *st, piece_kind kind, const stream_view *v)
{
    if (numel_of(v) == 0)
        return;
    piece *p = push(st, kind);
    if (p)
        p->v = as_rows(v);
}

void stream_base64(stream *st, const stream_view *v)
{
    push_bytes(st, PIECE_BASE64, v);
}

void stream_raw(stream *st, const stream_view *v)
{
    push_bytes(st, PIECE_RAW, v);
}

size_t stream_size(const stream *st)
{
    size_t total = 0, b64 = 0;
    for (size_t k = 0; k < st->n; k++) {
        const piece *p = &st->pieces[k];
        if (p->kind == PIECE_BASE64) {
            b64 += 4 * numel_of(&p->v);
            continue;
        }
        total += (b64 + 2) / 3 * 4;
        b64 = 0;
        if (p->kind == PIECE_JSON)
            return (size_t)-1;
        total += p->kind == PIECE_TEXT ? p->len : 4 * numel_of(&p->v);
    }
    return total + (b64 + 2) / 3 * 4;
}

size_t stream_size_max(const stream *st)
{
    const size_t known = stream_size(st);
    if (known != (size_t)-1)
        return known;
    size_t total = 0;
    for (size_t k = 0; k < st->n; k++) {
        const piece *p = &st->pieces[k];
        total += p->kind == PIECE_TEXT     ? p->len
                 : p->kind == PIECE_JSON   ? STREAM_JSON_NUMBER_MAX * numel_of(&p->v)
                 : p->kind == PIECE_BASE64 ? (4 * numel_of(&p->v) + 2) / 3 * 4 + 4
                                           : 4 * numel_of(&p->v);
    }
    return total;
}

/* ---- producing ------------------------------------------------------------ */

static const unsigned char *row_of(const stream *st, const stream_view *v)
{
    return (const unsigned char *)v->base +
           4 * (st->idx[0] * v->strides[0] + st->idx[1] * v->strides[1]);
}

/* Moves the cursor to the next row of v; false past the last. */
static bool next_row(stream *st, const stream_view *v)
{
    st->off = 0;
    if (++st->idx[1] < v->dims[1])
        return true;
    st->idx[1] = 0;
    return ++st->idx[0] < v->dims[0];
}

static void next_piece(stream *st)
{
    st->k++;
    st->idx[0] = st->idx[1] = 0;
    st->off = 0;
}

/* JSON numbers of piece p from the cursor into o (room bytes); returns the
 * bytes written.  Writes while a number with its brackets surely fits. */
static size_t produce_json(stream *st, const piece *p, char *o, size_t room)
{
    const stream_view v = as_rank3(&p->v);
    const int rank = p->v.rank;
    char *const start = o, *const end = o + room;
    for (;;) {
        const unsigned char *row = row_of(st, &v);
        size_t j = st->off;
        while (j < v.dims[2] && (size_t)(end - o) >= JSON_ROOM) {
            if (j) {
                *o++ = ',';
            } else if (!st->idx[0] && !st->idx[1]) { /* the first row opens every array */
                for (int i = 0; i < rank; i++)
                    *o++ = '[';
            } else { /* a row begins: the row, and with a new head the head, end */
                const int levels = st->idx[1] ? 1 : 2;
                for (int i = 0; i < levels; i++)
                    *o++ = ']';
                *o++ = ',';
                for (int i = 0; i < levels; i++)
                    *o++ = '[';
            }
            if (v.word == STREAM_FLOAT32) {
                float f;
                memcpy(&f, row + 4 * j, 4);
                o += jsonnum_write(o, f, p->precision);
            } else {
                int32_t i32;
                memcpy(&i32, row + 4 * j, 4);
                o += snprintf(o, 12, "%" PRId32, i32);
            }
            j++;
        }
        st->off = j;
        if (j < v.dims[2])
            return (size_t)(o - start); /* out of room mid-row */
        if (!next_row(st, &v))
            break;
        if (st->k == st->stop_k && st->idx[0] * v.dims[1] + st->idx[1] == st->stop_row) {
            st->k = st->n; /* the helper writes the rest, brackets and all */
            return (size_t)(o - start);
        }
    }
    /* The last number was written with JSON_ROOM to spare: the closing
     * brackets fit. */
    for (int i = 0; i < rank; i++)
        *o++ = ']';
    next_piece(st);
    return (size_t)(o - start);
}

/* The base64 text of the carried bytes (1 or 2) with its padding. */
static size_t flush_carry(stream *st, char *o)
{
    const size_t n = base64_encode_block(st->carry, (size_t)st->n_carry, o);
    st->n_carry = 0;
    return n;
}

/* Base64 of piece p's bytes from the cursor; returns the bytes written. */
static size_t produce_base64(stream *st, const piece *p, char *o, size_t room)
{
    const stream_view *v = &p->v;
    const size_t row_bytes = 4 * v->dims[2];
    char *const start = o;
    while ((size_t)(o + 4 - start) <= room) {
        const unsigned char *row = row_of(st, v);
        if (st->n_carry) { /* complete the carried group first */
            while (st->n_carry < 3 && st->off < row_bytes)
                st->carry[st->n_carry++] = row[st->off++];
            if (st->n_carry == 3)
                o += flush_carry(st, o);
        }
        const size_t fit = (room - (size_t)(o - start)) / 4 * 3;
        size_t m = row_bytes - st->off;
        m = (m < fit ? m : fit) / 3 * 3;
        o += base64_encode_block(row + st->off, m, o);
        st->off += m;
        if (row_bytes - st->off < 3) { /* the row's last 0..2 bytes are carried */
            while (st->off < row_bytes)
                st->carry[st->n_carry++] = row[st->off++];
            if (!next_row(st, v)) {
                next_piece(st);
                break;
            }
        } else if (m == 0) {
            break; /* no room for a group */
        }
    }
    return (size_t)(o - start); /* a carry left at the end: produce() pads it */
}

static size_t produce_raw(stream *st, const piece *p, char *o, size_t room)
{
    const stream_view *v = &p->v;
    const size_t row_bytes = 4 * v->dims[2];
    size_t n = 0;
    while (n < room) {
        const size_t m = row_bytes - st->off < room - n ? row_bytes - st->off : room - n;
        memcpy(o + n, row_of(st, v) + st->off, m);
        n += m;
        st->off += m;
        if (st->off == row_bytes && !next_row(st, v)) {
            next_piece(st);
            break;
        }
    }
    return n;
}

/* Writes into o (room >= JSON_ROOM) what comes next; 0 only at the end. */
static size_t produce(stream *st, char *o, size_t room)
{
    size_t n = 0;
    while (st->k <= st->n && room - n >= JSON_ROOM) {
        /* base64 carried past its last piece: its padded group */
        const bool in_b64 = st->k < st->n && st->pieces[st->k].kind == PIECE_BASE64;
        if (st->n_carry && !in_b64) {
            n += flush_carry(st, o + n);
            continue;
        }
        if (st->k == st->n)
            break;
        const piece *p = &st->pieces[st->k];
        switch (p->kind) {
        case PIECE_TEXT: {
            const size_t m = p->len - st->off < room - n ? p->len - st->off : room - n;
            memcpy(o + n, st->text + p->off + st->off, m);
            n += m;
            st->off += m;
            if (st->off == p->len)
                next_piece(st);
            break;
        }
        case PIECE_JSON:
            n += produce_json(st, p, o + n, room - n);
            break;
        case PIECE_BASE64:
            n += produce_base64(st, p, o + n, room - n);
            break;
        case PIECE_RAW:
            n += produce_raw(st, p, o + n, room - n);
            break;
        }
    }
    return n;
}

/* ---- the helper thread ------------------------------------------------------ */

/* Puts st's cursor at the start of span j, to stop at the start of j + 1. */
static void cursor_to_span(stream *st, size_t j)
{
    const span_at from = st->spans[j];
    st->k = from.k;
    st->off = 0;
    st->n_carry = 0; /* a span starts at a text piece or a JSON row: none */
    st->idx[0] = st->idx[1] = 0;
    if (from.row) { /* its cursor at that row writes "],[" first */
        const stream_view v = as_rank3(&st->pieces[from.k].v);
        st->idx[0] = from.row / v.dims[1];
        st->idx[1] = from.row % v.dims[1];
    }
    st->stop_k = SIZE_MAX;
    if (j + 1 == st->n_spans) {
        st->n = st->n_all;
    } else if (st->spans[j + 1].row) {
        st->n = st->spans[j + 1].k + 1;
        st->stop_k = st->spans[j + 1].k;
        st->stop_row = st->spans[j + 1].row;
    } else {
        st->n = st->spans[j + 1].k;
    }
}

static void *ahead_main(void *arg)
{
    ahead *a = arg;
    stream *sub = &a->sub;
    pthread_mutex_lock(&a->lock);
    for (size_t j = 1; j < sub->n_spans && !a->cancel && !a->failed; j += 2) {
        pthread_mutex_unlock(&a->lock);
        cursor_to_span(sub, j);
        pthread_mutex_lock(&a->lock);
        for (;;) { /* the span's chunks, then an empty one */
            while (a->count == AHEAD_CHUNKS && !a->cancel)
                pthread_cond_wait(&a->cond, &a->lock);
            if (a->cancel)
                break;
            const size_t slot = (a->head + a->count) % AHEAD_CHUNKS;
            pthread_mutex_unlock(&a->lock);
            if (!a->chunk[slot])
                a->chunk[slot] = malloc(AHEAD_CHUNK);
            const size_t n = a->chunk[slot] ? produce(sub, a->chunk[slot], AHEAD_CHUNK) : 0;
            pthread_mutex_lock(&a->lock);
            if (!a->chunk[slot]) {
                a->failed = true; /* the reader sees the body end early */
                break;
            }
            a->len[slot] = n;
            a->count++;
            pthread_cond_signal(&a->cond);
            if (n == 0)
                break;
        }
    }
    a->done = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* Cuts the body into spans of about SPAN_NUMBERS numbers each (an eighth
 * of a smaller body's), at rows of its JSON pieces or at the text pieces
 * after them; false when there is no room or only one span. */
static bool cut_spans(stream *st, size_t total)
{
    const size_t each = total / 8 > SPAN_NUMBERS ? SPAN_NUMBERS : total / 8 ? total / 8 : 1;
    const size_t cap = 2 + 2 * (total / each + st->n);
    st->spans = malloc(cap * sizeof *st->spans);
    if (!st->spans)
        return false;
    size_t m = 0, seen = 0, next = each;
    st->spans[m++] = (span_at){0, 0};
    for (size_t k = 0; k < st->n && m + 1 < cap; k++) {
        const piece *p = &st->pieces[k];
        if (p->kind == PIECE_TEXT && seen >= next && k > 0) {
            st->spans[m++] = (span_at){k, 0};
            next = seen + each;
        }
        if (p->kind != PIECE_JSON)
            continue;
        const stream_view v = as_rank3(&p->v);
        const size_t rows = v.dims[0] * v.dims[1], numel = numel_of(&p->v);
        while (seen + numel > next && m + 1 < cap) { /* a cut inside this piece */
            const size_t r = (next - seen + v.dims[2] - 1) / v.dims[2];
            if (r > 0 && r < rows && (st->spans[m - 1].k != k || st->spans[m - 1].row < r))
                st->spans[m++] = (span_at){k, r};
            next += each;
        }
        seen += numel;
    }
    st->n_spans = m;
    st->n_all = st->n;
    return m > 1;
}

/* Cuts the body into spans and starts the helper on the odd ones.
 * Nothing when the body is small, has one span, or a thread cannot be
 * had. */
static void ahead_start(stream *st)
{
    st->ahead_tried = true;
    size_t total = 0;
    for (size_t k = 0; k < st->n; k++)
        if (st->pieces[k].kind == PIECE_JSON)
            total += numel_of(&st->pieces[k].v);
    if (!st->ahead_min || total < st->ahead_min || st->k || st->off || st->idx[0] || st->idx[1])
        return;
    ahead *a = cut_spans(st, total) ? calloc(1, sizeof *a) : NULL;
    if (!a) {
        free(st->spans);
        st->spans = NULL;
        return;
    }
    a->sub = *st; /* its cursor; it owns nothing */
    a->sub.ahead = NULL;
    a->sub.ahead_min = 0;
    a->sub.stage_pos = a->sub.stage_len = 0;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
        pthread_mutex_destroy(&a->lock);
        pthread_cond_destroy(&a->cond);
        free(a);
        free(st->spans);
        st->spans = NULL;
        return;
    }
    st->ahead = a;
    st->span = 0;
    cursor_to_span(st, 0);
}

/* The helper's next bytes of its current span into buf; 0 at the span's
 * end; 0 with *failed when the helper stopped before it (out of memory). */
static size_t ahead_read(ahead *a, char *buf, size_t max, bool *failed)
{
    pthread_mutex_lock(&a->lock);
    while (a->count == 0 && !a->done)
        pthread_cond_wait(&a->cond, &a->lock);
    size_t n = 0;
    *failed = a->count == 0; /* done, and this span not ended: it failed */
    if (a->count) {
        const size_t h = a->head;
        n = a->len[h] - a->pos < max ? a->len[h] - a->pos : max;
        memcpy(buf, a->chunk[h] + a->pos, n);
        a->pos += n;
        if (a->pos == a->len[h]) { /* an empty chunk goes at once: the span's end */
            a->head = (h + 1) % AHEAD_CHUNKS;
            a->count--;
            a->pos = 0;
            pthread_cond_signal(&a->cond);
        }
    }
    pthread_mutex_unlock(&a->lock);
    return n;
}

static void ahead_stop(stream *st)
{
    ahead *a = st->ahead;
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->cancel = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    for (size_t i = 0; i < AHEAD_CHUNKS; i++)
        free(a->chunk[i]);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->cond);
    free(a);
    st->ahead = NULL;
}

/* The next bytes of the body (max >= JSON_ROOM): this cursor's span, then
 * the helper's, then this cursor's next, ... */
static size_t next_bytes(stream *st, char *buf, size_t max)
{
    ahead *a = st->ahead;
    if (!a)
        return produce(st, buf, max);
    for (;;) {
        if (!st->in_helper) {
            const size_t n = produce(st, buf, max);
            if (n || st->span + 1 >= st->n_spans)
                return n;
            st->in_helper = true;
        }
        bool failed;
        const size_t n = ahead_read(a, buf, max, &failed);
        if (n)
            return n;
        if (failed) {
            st->failed = true;
            return 0;
        }
        st->in_helper = false;
        if (st->span + 2 >= st->n_spans)
            return 0;
        st->span += 2;
        cursor_to_span(st, st->span);
    }
}

void stream_parallel(stream *st, size_t min_numbers)
{
    st->ahead_min = min_numbers ? min_numbers : 1;
}

size_t stream_read(stream *st, char *buf, size_t max)
{
    if (st->failed)
        return 0;
    if (!st->ahead_tried && st->ahead_min)
        ahead_start(st);
    size_t n = 0;
    if (st->stage_pos == st->stage_len && max < sizeof st->stage) {
        st->stage_len = next_bytes(st, st->stage, sizeof st->stage);
        st->stage_pos = 0;
    }
    if (st->stage_pos < st->stage_len) { /* what a small buffer left over */
        n = st->stage_len - st->stage_pos < max ? st->stage_len - st->stage_pos : max;
        memcpy(buf, st->stage + st->stage_pos, n);
        st->stage_pos += n;
        return n;
    }
    return next_bytes(st, buf, max);
}

char *stream_collect(stream *st, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    while (out && !st->failed) {
        if (cap - n < 1 + sizeof st->stage) {
            char *grown = realloc(out, cap *= 2);
            if (!grown)
                break;
            out = grown;
        }
        const size_t k = stream_read(st, out + n, cap - n - 1);
        if (k == 0) {
            out[n] = '\0';
            *len = n;
            return out;
        }
        n += k;
    }
    free(out);
    return NULL;
}
