/* check_stream.c - server/codec/stream.c against naive writers: nested
 * JSON numbers as "%.{p}g" prints them, base64 by RFC 4648's table, raw
 * bytes as memory holds them; and the same bytes whatever the size of the
 * buffers the body is read into (one byte at a time up). */
#include "codec/stream.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- naive references --------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

static const void *elem(const stream_view *v, const size_t *i)
{
    size_t off = 0;
    for (int d = 0; d < v->rank; d++)
        off += i[d] * v->strides[d];
    return (const char *)v->base + 4 * off;
}

static void naive_json(text *t, const stream_view *v, int p, int d, size_t *i)
{
    if (d > 2)
        return;
    puts_(t, "[");
    for (i[d] = 0; i[d] < v->dims[d]; i[d]++) {
        if (i[d])
            puts_(t, ",");
        if (d + 1 < v->rank) {
            naive_json(t, v, p, d + 1, i);
            continue;
        }
        char buf[64];
        if (v->word == STREAM_INT32) {
            int32_t x;
            memcpy(&x, elem(v, i), 4);
            snprintf(buf, sizeof buf, "%d", (int)x);
        } else {
            float f;
            memcpy(&f, elem(v, i), 4);
            if (isfinite(f))
                snprintf(buf, sizeof buf, "%.*g", p, (double)f);
            else
                strcpy(buf, "null");
        }
        puts_(t, buf);
    }
    puts_(t, "]");
}

/* The bytes of v's words in row-major order, appended to *bytes. */
static void naive_bytes(text *bytes, const stream_view *v)
{
    size_t i[3] = {0}, n = 1;
    for (int d = 0; d < v->rank; d++)
        n *= v->dims[d];
    for (size_t k = 0; k < n; k++) {
        size_t r = k;
        for (int d = v->rank - 1; d >= 0; d--) {
            i[d] = r % v->dims[d];
            r /= v->dims[d];
        }
        put(bytes, elem(v, i), 4);
    }
}

static void naive_base64(text *t, const text *bytes)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *b = (const unsigned char *)bytes->s;
    for (size_t k = 0; k < bytes->len; k += 3) {
        const size_t n = bytes->len - k < 3 ? bytes->len - k : 3;
        const unsigned v =
            (unsigned)b[k] << 16 | (n > 1 ? (unsigned)b[k + 1] << 8 : 0) | (n > 2 ? b[k + 2] : 0);
        char q[4] = {A[v >> 18 & 63], A[v >> 12 & 63], n > 1 ? A[v >> 6 & 63] : '=',
                     n > 2 ? A[v & 63] : '='};
        put(t, q, 4);
    }
}

/* ---- random views ---------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* A random view of rank 1..3 over a buffer with padding between rows and
 * heads (when padded), its words random floats (some not finite, some
 * subnormal) or ints.  The buffer is owned by *own. */
static stream_view random_view(float **own, bool padded, stream_word word)
{
    stream_view v = {.word = word, .rank = 1 + (int)(rnd() % 3)};
    for (int d = 0; d < v.rank; d++)
        v.dims[d] = 1 + rnd() % (d == v.rank - 1 ? 40 : 5);
    size_t stride = 1;
    for (int d = v.rank - 1; d >= 0; d--) {
        v.strides[d] = stride;
        stride *= v.dims[d] + (padded ? rnd() % 3 : 0);
    }
    v.strides[v.rank - 1] = 1;
    float *buf = xcalloc(stride + 64, sizeof *buf);
    for (size_t k = 0; k < stride + 64; k++) {
        const uint32_t r = rnd();
        if (word == STREAM_INT32) {
            int32_t x = (int32_t)(r % 5 == 0 ? r : r % 2001) - (r % 5 == 0 ? 0 : 1000);
            memcpy(&buf[k], &x, 4);
        } else if (r % 53 == 0) {
            buf[k] = r % 2 ? NAN : -INFINITY;
        } else if (r % 31 == 0) {
            uint32_t bits = r % 0x007fffffu; /* subnormal */
            memcpy(&buf[k], &bits, 4);
        } else {
            buf[k] = ((float)(r % 2000001) - 1e6f) * powf(10.0f, (float)(int)(r % 13) - 8);
        }
    }
    v.base = buf;
    *own = buf;
    return v;
}

/* Reads st in buffers of size chunk; the whole body (owned). */
static char *read_all(stream *st, size_t chunk, size_t *len)
{
    text t = {0};
    char *buf = xcalloc(chunk, 1);
    for (size_t n; (n = stream_read(st, buf, chunk)) > 0;) {
        EXPECT(n <= chunk, "stream_read gave %zu bytes into a buffer of %zu", n, chunk);
        put(&t, buf, n);
    }
    free(buf);
    *len = t.len;
    return t.s ? t.s : strdup("");
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_json_matches_printf)
{
    for (int trial = 0; trial < 200; trial++) {
        float *own;
        const stream_word word = trial % 4 == 3 ? STREAM_INT32 : STREAM_FLOAT32;
        const stream_view v = random_view(&own, trial % 2, word);
        const int p = 1 + trial % 9;
        stream *st = stream_new();
        stream_puts(st, "{\"x\":");
        stream_json(st, &v, p);
        stream_puts(st, "}");
        text want = {0};
        size_t i[3];
        puts_(&want, "{\"x\":");
        naive_json(&want, &v, p, 0, i);
        puts_(&want, "}");
        ck_assert_int_eq(stream_size(st), (size_t)-1); /* JSON numbers: not known ahead */
        const size_t bound = stream_size_max(st);
        size_t len;
        char *got = read_all(st, trial % 3 ? 4096 : 1 + (size_t)trial % 97, &len);
        ck_assert_msg(bound >= len, "trial %d: bound %zu below the body's %zu bytes", trial, bound,
                      len);
        ck_assert_msg(len == want.len && memcmp(got, want.s, len) == 0,
                      "trial %d (rank %d, p %d):\n got %.300s\nwant %.300s", trial, v.rank, p, got,
                      want.s);
        free(got);
        free(want.s);
        stream_free(st);
        free(own);
    }
}
END_TEST

/* Base64 runs on across consecutive pieces (one text), and is padded where
 * a text piece or the end comes; raw bytes are memory's. */
START_TEST(test_base64_and_raw_match_naive)
{
    for (int trial = 0; trial < 200; trial++) {
        stream *st = stream_new();
        text want = {0}, bytes = {0};
        float *own[4];
        const int pieces = 1 + trial % 4;
        const bool raw = trial % 5 == 4;
        stream_puts(st, "\"");
        puts_(&want, "\"");
        for (int k = 0; k < pieces; k++) {
            const stream_view v = random_view(&own[k], trial % 2, STREAM_FLOAT32);
            naive_bytes(&bytes, &v);
            raw ? stream_raw(st, &v) : stream_base64(st, &v);
            if (k == 1 && trial % 3 == 0) { /* a text piece in between ends a base64 text */
                raw ? put(&want, bytes.s, bytes.len) : naive_base64(&want, &bytes);
                bytes.len = 0;
                stream_puts(st, "\",\"");
                puts_(&want, "\",\"");
            }
        }
        raw ? put(&want, bytes.s ? bytes.s : "", bytes.len) : naive_base64(&want, &bytes);
        stream_puts(st, "\"");
        puts_(&want, "\"");
        ck_assert_int_eq(stream_size(st), want.len);
        size_t len;
        char *got = read_all(st, 1 + (size_t)(trial * 37) % 300, &len);
        ck_assert_msg(len == want.len && memcmp(got, want.s, len) == 0,
                      "trial %d: %zu bytes, want %zu:\n got %.200s\nwant %.200s", trial, len,
                      want.len, got, want.s);
        free(got);
        free(want.s);
        free(bytes.s);
        stream_free(st);
        for (int k = 0; k < pieces; k++)
            free(own[k]);
    }
}
END_TEST

/* v as JSON numbers and as base64, in one body. */
static stream *both_forms(const stream_view *v)
{
    stream *st = stream_new();
    stream_puts(st, "[");
    stream_json(st, v, 9);
    stream_puts(st, ",\"");
    stream_base64(st, v);
    stream_puts(st, "\"]");
    return st;
}

/* Every buffer size from 1 byte gives the same body. */
START_TEST(test_any_buffer_size)
{
    float *own;
    rng = 7;
    const stream_view v = random_view(&own, true, STREAM_FLOAT32);
    stream *ref = both_forms(&v);
    size_t want_len;
    char *want = stream_collect(ref, &want_len);
    ck_assert_ptr_nonnull(want);
    for (size_t chunk = 1; chunk <= 300; chunk++) {
        stream *st = both_forms(&v);
        size_t len;
        char *got = read_all(st, chunk, &len);
        ck_assert_msg(len == want_len && memcmp(got, want, len) == 0, "chunk %zu differs", chunk);
        free(got);
        stream_free(st);
    }
    free(want);
    stream_free(ref);
    free(own);
}
END_TEST

START_TEST(test_empty_views)
{
    stream *st = stream_new();
    const float none[1] = {0};
    const stream_view vec = {none, STREAM_FLOAT32, 1, {0}, {1}};
    const stream_view rows = {none, STREAM_FLOAT32, 2, {2, 0}, {0, 1}};
    stream_json(st, &vec, 9);
    stream_json(st, &rows, 9);
    stream_puts(st, "\"");
    stream_base64(st, &vec);
    stream_puts(st, "\"");
    size_t len;
    char *got = stream_collect(st, &len);
    ck_assert_str_eq(got, "[][[],[]]\"\"");
    ck_assert_int_eq(stream_read(st, got, len), 0); /* at the end it stays at the end */
    free(got);
    stream_free(st);
}
END_TEST

/* Pieces of JSON numbers, base64 and text, the body long enough for the
 * helper thread to have work (ROWS x 250 numbers a piece: the body is cut
 * into spans of an eighth of its numbers, so at rows inside the pieces):
 * with stream_parallel the same bytes come out, whatever the buffer size,
 * and freeing a stream part-read stops the helper (ASan and valgrind runs
 * check nothing leaks). */
enum { ROWS = 16 };
static stream *mixed_body(float **own, int pieces, bool parallel)
{
    stream *st = stream_new();
    if (parallel)
        stream_parallel(st, 0);
    stream_puts(st, "[");
    for (int k = 0; k < pieces; k++) {
        if (k)
            stream_puts(st, ",");
        const stream_view v = {own[k], STREAM_FLOAT32, 2, {ROWS, 250}, {250, 1}};
        if (k % 5 == 4) {
            stream_puts(st, "\"");
            stream_base64(st, &v);
            stream_puts(st, "\"");
        } else {
            stream_json(st, &v, 1 + k % 9);
        }
    }
    stream_puts(st, "]");
    return st;
}

START_TEST(test_parallel_same_bytes)
{
    enum { PIECES = 12 };
    float *own[PIECES];
    for (int k = 0; k < PIECES; k++) {
        own[k] = xcalloc(ROWS * 250, sizeof(float));
        for (int i = 0; i < ROWS * 250; i++)
            own[k][i] = (float)(rnd() % 2000001) * 1e-6f - 1.0f;
    }
    stream *ref = mixed_body(own, PIECES, false);
    size_t want_len;
    char *want = stream_collect(ref, &want_len);
    ck_assert_ptr_nonnull(want);
    static const size_t chunks[] = {1, 93, 4096, 1 << 17, 1 << 20};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        stream *st = mixed_body(own, PIECES, true);
        size_t len;
        char *got = read_all(st, chunks[c], &len);
        ck_assert_msg(len == want_len && memcmp(got, want, len) == 0,
                      "chunks of %zu: %zu bytes, want %zu", chunks[c], len, want_len);
        free(got);
        stream_free(st);
    }
    /* Freed after the first few bytes: the helper stops and is joined. */
    stream *st = mixed_body(own, PIECES, true);
    char head[100];
    ck_assert_uint_gt(stream_read(st, head, sizeof head), 0);
    stream_free(st);
    free(want);
    stream_free(ref);
    for (int k = 0; k < PIECES; k++)
        free(own[k]);
}
END_TEST

/* The shape of a B = 1 response with per-head weights: the body is cut
 * into spans (an eighth of its numbers each) at rows of its two JSON
 * pieces, between two heads or inside one, and the helper thread writes
 * every other span.  The body must be the naive "%.*g" text, brackets and
 * all, whatever the buffer size. */
START_TEST(test_parallel_splits_inside_a_piece)
{
    static const size_t shapes[][3] = {
        {2, 8, 8},    /* cuts between the heads: "]],[[" first */
        {3, 8, 7},    /* cuts inside the heads: "],[" first */
        {1, 8, 200},  /* cuts inside the outputs, one row a span */
        {4, 1, 1},    /* one row per head */
        {12, 16, 96}, /* many spans */
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const size_t H = shapes[s][0], L = shapes[s][1], D = shapes[s][2];
        float *out = xcalloc(L * D, sizeof *out), *att = xcalloc(H * L * L, sizeof *att);
        for (size_t k = 0; k < L * D; k++)
            out[k] = (float)(rnd() % 2000001) * 1e-6f - 1.0f;
        for (size_t k = 0; k < H * L * L; k++)
            att[k] = (float)(rnd() % 1000001) * 1e-6f;
        const stream_view vo = {out, STREAM_FLOAT32, 2, {L, D}, {D, 1}};
        const stream_view va = {att, STREAM_FLOAT32, 3, {H, L, L}, {L * L, L, 1}};
        text want = {0};
        size_t i[3];
        puts_(&want, "{\"outputs\":");
        naive_json(&want, &vo, 9, 0, i);
        puts_(&want, ",\"attention\":");
        naive_json(&want, &va, 9, 0, i);
        puts_(&want, "}");
        static const size_t chunks[] = {1, 61, 4096, 1 << 20};
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            stream *st = stream_new();
            stream_parallel(st, 0);
            stream_puts(st, "{\"outputs\":");
            stream_json(st, &vo, 9);
            stream_puts(st, ",\"attention\":");
            stream_json(st, &va, 9);
            stream_puts(st, "}");
            size_t len;
            char *got = read_all(st, chunks[c], &len);
            ck_assert_msg(len == want.len && memcmp(got, want.s, len) == 0,
                          "H %zu L %zu D %zu, chunks of %zu:\n got %.400s\nwant %.400s", H, L, D,
                          chunks[c], got, want.s);
            free(got);
            stream_free(st);
        }
        free(want.s);
        free(out);
        free(att);
    }
}
END_TEST

/* stream_size_max bounds the longest numbers' text: -FLT_MIN at 9 digits
 * and INT32_MIN, one per innermost row of a rank-3 view (the most brackets
 * per number); for bodies of known length it is that length. */
START_TEST(test_size_max_bounds_worst_case)
{
    const float worst_f[1] = {-1.17549435e-38f};
    const int32_t worst_i[1] = {INT32_MIN};
    for (int k = 0; k < 2; k++) {
        const stream_view v = {.base = k ? (const void *)worst_i : (const void *)worst_f,
                               .word = k ? STREAM_INT32 : STREAM_FLOAT32,
                               .rank = 3,
                               .dims = {1, 1, 1},
                               .strides = {1, 1, 1}};
        stream *st = stream_new();
        for (int i = 0; i < 5; i++)
            stream_json(st, &v, 9);
        const size_t bound = stream_size_max(st);
        size_t len;
        char *got = stream_collect(st, &len);
        ck_assert_uint_ge(bound, len);
        ck_assert_uint_eq(len,
                          5 * (k ? strlen("[[[-2147483648]]]") : strlen("[[[-1.17549435e-38]]]")));
        free(got);
        stream_free(st);
    }
    stream *st = stream_new();
    const stream_view v = {
        .base = worst_f, .word = STREAM_FLOAT32, .rank = 1, .dims = {1}, .strides = {1}};
    stream_puts(st, "{\"x\":\"");
    stream_base64(st, &v);
    stream_puts(st, "\"}");
    ck_assert_uint_eq(stream_size_max(st), stream_size(st));
    size_t len;
    char *got = stream_collect(st, &len);
    ck_assert_uint_eq(len, stream_size(st));
    free(got);
    stream_free(st);
}
END_TEST

Suite *stream_suite(void)
{
    Suite *s = timed_suite("stream");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_json_matches_printf);
    tcase_add_test(tc, test_base64_and_raw_match_naive);
    tcase_add_test(tc, test_any_buffer_size);
    tcase_add_test(tc, test_empty_views);
    tcase_add_test(tc, test_parallel_same_bytes);
    tcase_add_test(tc, test_parallel_splits_inside_a_piece);
    tcase_add_test(tc, test_size_max_bounds_worst_case);
    return s;
}
