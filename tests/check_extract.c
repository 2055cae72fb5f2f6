/* check_extract.c - the numeric-array extractor (server/codec/extract.h)
 * against jansson as the reference: for generated arrays, well-formed and
 * spoiled, jx_scan's shape and first fault must be what a walk over
 * jansson's values finds, its syntax verdict jansson's, and the numbers
 * read those strtod gives for the text written. */
#include "codec/extract.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference: a walk over jansson's values ------------------------------------- */

typedef struct ref {
    int rank;
    size_t dims[JX_MAX_RANK];
    const char *leaf;
    size_t count;
    jx_fault fault;
    int depth;
    size_t at[JX_MAX_RANK];
    size_t entries;
    const char *is;
    double value;
} ref;

static const char *kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_ARRAY:
        return "an array";
    case JSON_OBJECT:
        return "an object";
    case JSON_STRING:
        return "a string";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    default:
        return "a number";
    }
}

static void ref_fault(ref *r, jx_fault f, const size_t *at, int depth)
{
    if (r->fault != JX_OK)
        return; /* the walk is in document order: the first one stays */
    r->fault = f;
    r->depth = depth;
    memcpy(r->at, at, (size_t)depth * sizeof *at);
}

/* Pre-order: an array's count is checked before its entries. */
static void ref_walk(ref *r, const json_t *v, int depth, size_t *at)
{
    if (depth < r->rank) {
        if (!json_is_array(v)) {
            if (r->fault == JX_OK) {
                ref_fault(r, JX_KIND, at, depth);
                r->is = kind(v);
            }
            return;
        }
        if (json_array_size(v) != r->dims[depth] && r->fault == JX_OK) {
            ref_fault(r, JX_COUNT, at, depth);
            r->entries = json_array_size(v);
        }
        for (size_t i = 0; i < json_array_size(v); i++) {
            at[depth] = i;
            ref_walk(r, json_array_get(v, i), depth + 1, at);
        }
        return;
    }
    if (!json_is_number(v)) {
        if (r->fault == JX_OK) {
            ref_fault(r, JX_KIND, at, depth);
            r->is = kind(v);
        }
        return;
    }
    r->count++;
    const double d = json_number_value(v);
    if (!(d <= FLT_MAX && d >= -FLT_MAX) && r->fault == JX_OK) {
        ref_fault(r, JX_RANGE, at, depth);
        r->value = d;
    }
}

static void ref_of(const json_t *root, ref *r)
{
    memset(r, 0, sizeof *r);
    const json_t *v = root;
    int d = 0;
    for (;;) {
        if (!json_is_array(v)) {
            r->rank = d;
            r->leaf = kind(v);
            break;
        }
        if (d == JX_MAX_RANK) {
            r->rank = d;
            r->leaf = "an array";
            r->fault = JX_DEEP;
            r->depth = d;
            r->is = "an array";
            break;
        }
        r->dims[d] = json_array_size(v);
        if (r->dims[d] == 0) {
            r->rank = d + 1;
            break;
        }
        v = json_array_get(v, 0);
        d++;
    }
    size_t at[JX_MAX_RANK + 1] = {0};
    ref_walk(r, root, 0, at);
}

/* Whether jx_scan's result is the reference's; the difference in msg. */
static bool same(const jx_array *a, const ref *r, char *msg, size_t size)
{
    if (a->rank != r->rank || a->fault != r->fault || a->depth != r->depth) {
        snprintf(msg, size, "rank %d fault %d depth %d, want %d %d %d", a->rank, (int)a->fault,
                 a->depth, r->rank, (int)r->fault, r->depth);
        return false;
    }
    if ((a->leaf == NULL) != (r->leaf == NULL) || (a->leaf && strcmp(a->leaf, r->leaf) != 0)) {
        snprintf(msg, size, "leaf %s, want %s", a->leaf ? a->leaf : "none",
                 r->leaf ? r->leaf : "none");
        return false;
    }
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != r->dims[i]) {
            snprintf(msg, size, "dims[%d] = %zu, want %zu", i, a->dims[i], r->dims[i]);
            return false;
        }
    for (int i = 0; i < a->depth; i++)
        if (a->at[i] != r->at[i]) {
            snprintf(msg, size, "at[%d] = %zu, want %zu", i, a->at[i], r->at[i]);
            return false;
        }
    if (a->fault == JX_COUNT && a->entries != r->entries) {
        snprintf(msg, size, "entries %zu, want %zu", a->entries, r->entries);
        return false;
    }
    if ((a->fault == JX_KIND || a->fault == JX_DEEP) && strcmp(a->is, r->is) != 0) {
        snprintf(msg, size, "is %s, want %s", a->is, r->is);
        return false;
    }
    if (a->fault == JX_RANGE && a->value != r->value) {
        snprintf(msg, size, "value %g, want %g", a->value, r->value);
        return false;
    }
    if (a->fault == JX_OK && a->count != r->count) {
        snprintf(msg, size, "count %zu, want %zu", a->count, r->count);
        return false;
    }
    return true;
}

/* ---- generated arrays ---------------------------------------------------------------- */

typedef struct gen {
    uint64_t seed;
    char *buf;
    size_t n, cap;
    int spoil; /* per mille: chance of a spoiled entry */
} gen;

static unsigned rnd(gen *g, unsigned n)
{
    return (unsigned)(splitmix(&g->seed) % n);
}

static void put(gen *g, const char *s)
{
    const size_t len = strlen(s);
    if (g->n + len + 1 > g->cap) {
        g->cap = 2 * (g->n + len + 1);
        g->buf = realloc(g->buf, g->cap);
        ck_assert_ptr_nonnull(g->buf);
    }
    memcpy(g->buf + g->n, s, len + 1);
    g->n += len;
}

static void ws(gen *g)
{
    static const char *const w[] = {"", "", "", " ", "\n", "\t ", "\r\n  "};
    put(g, w[rnd(g, 7)]);
}

static void number(gen *g)
{
    char s[64];
    const int i = (int)rnd(g, 100000), f = (int)rnd(g, 1000);
    switch (rnd(g, 8)) {
    case 0:
        snprintf(s, sizeof s, "%d", i);
        break;
    case 1:
        snprintf(s, sizeof s, "-%d", i);
        break;
    case 2:
        snprintf(s, sizeof s, "%d.%d", i, f);
        break;
    case 3:
        snprintf(s, sizeof s, "-%d.%de-3", i, f);
        break;
    case 4:
        snprintf(s, sizeof s, "%d.%dE+2", i, f);
        break;
    case 5:
        snprintf(s, sizeof s, "%de1", i);
        break;
    case 6:
        snprintf(s, sizeof s, "-0.%d", f);
        break;
    default:
        snprintf(s, sizeof s, "%d.%de-40", i, f);
    }
    put(g, s);
}

static void spoiled(gen *g, int depth)
{
    static const char *const other[] = {"\"x\"",  "true", "null",  "{\"a\": [1]}", "[]",
                                        "[1, 2]", "1e39", "-4e38", "false",        "\"\\u00e9\""};
    (void)depth;
    put(g, other[rnd(g, 10)]);
}

static void array(gen *g, const size_t *dims, int rank, int depth)
{
    put(g, "[");
    size_t n = dims[depth];
    if ((int)rnd(g, 1000) < g->spoil)
        n = n + rnd(g, 3) - (n > 0); /* one more, one fewer or the same */
    for (size_t i = 0; i < n; i++) {
        ws(g);
        if ((int)rnd(g, 1000) < g->spoil)
            spoiled(g, depth);
        else if (depth + 1 < rank)
            array(g, dims, rank, depth + 1);
        else
            number(g);
        ws(g);
        if (i + 1 < n)
            put(g, ",");
    }
    put(g, "]");
}

/* A random array: rank 1..4, small dims, spoiled with chance spoil/1000. */
static void generate(gen *g, int spoil)
{
    g->n = 0;
    put(g, "");
    g->spoil = spoil;
    size_t dims[JX_MAX_RANK];
    const int rank = 1 + (int)rnd(g, 4);
    for (int d = 0; d < rank; d++)
        dims[d] = rnd(g, 5);
    array(g, dims, rank, 0);
}

START_TEST(test_scan_matches_reference)
{
    gen g = {.seed = 0x5eed + (uint64_t)_i};
    chk k = {0};
    for (int round = 0; round < 4000 && !k.failed; round++) {
        generate(&g, round % 4 == 0 ? 0 : 30);
        json_error_t je;
        json_t *root = json_loadb(g.buf, g.n, JSON_DECODE_ANY, &je);
        if (!root) { /* 1e39 and the like are fine for jansson; nothing here is invalid */
            chk_fail(&k, "jansson refused %s: %s", g.buf, je.text);
            break;
        }
        jx_array a;
        const char *end = jx_scan(g.buf, g.buf + g.n, &a);
        ref r;
        ref_of(root, &r);
        char msg[256];
        if (end != g.buf + g.n)
            chk_fail(&k, "%s: scan stopped at %ld of %zu", g.buf, end ? (long)(end - g.buf) : -1L,
                     g.n);
        else if (!same(&a, &r, msg, sizeof msg))
            chk_fail(&k, "%s: %s", g.buf, msg);
        json_decref(root);
    }
    free(g.buf);
    ck_assert_msg(!k.failed, "%s", k.msg);
}
END_TEST

/* Spoiling the text itself: the scan's syntax verdict is jansson's. */
START_TEST(test_syntax_matches_jansson)
{
    gen g = {.seed = 0xbad5 + (uint64_t)_i};
    chk k = {0};
    static const char noise[] = ",[]{}:\"x0-.e+ \n1tfn";
    int refused = 0;
    for (int round = 0; round < 6000 && !k.failed; round++) {
        generate(&g, 10);
        if (g.n < 2)
            continue;
        /* drop, insert or replace one byte */
        const size_t at = rnd(&g, (unsigned)g.n);
        const char c = noise[rnd(&g, sizeof noise - 1)];
        switch (rnd(&g, 3)) {
        case 0:
            memmove(g.buf + at, g.buf + at + 1, g.n - at);
            g.n--;
            break;
        case 1:
            put(&g, " ");
            memmove(g.buf + at + 1, g.buf + at, g.n - at - 1);
            g.buf[at] = c;
            break;
        default:
            g.buf[at] = c;
        }
        if (g.n == 0 || g.buf[0] != '[')
            continue;
        json_error_t je;
        json_t *root = json_loadb(g.buf, g.n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
        if (!root && strstr(je.text, "overflow")) { /* a real past double: a number to the scan */
            round--;
            continue;
        }
        jx_array a;
        const char *end = jx_scan(g.buf, g.buf + g.n, &a);
        /* what follows the array is the caller's: blanks only, for jansson */
        const bool ok = end && strspn(end, " \n\r\t") == (size_t)(g.buf + g.n - end);
        if (ok != (root != NULL))
            chk_fail(&k, "'%s': scan %s (%s), jansson %s (%s)", g.buf, ok ? "took it" : "refused",
                     a.why ? a.why : "-", root ? "took it" : "refused", root ? "-" : je.text);
        refused += !ok;
        json_decref(root);
    }
    free(g.buf);
    ck_assert_msg(!k.failed, "%s", k.msg);
    ck_assert_int_gt(refused, 100); /* the spoiling did spoil */
}
END_TEST

/* ---- worked examples ----------------------------------------------------------------- */

static void scan_text(const char *text, jx_array *a)
{
    jx_scan(text, text + strlen(text), a);
}

START_TEST(test_worked_examples)
{
    jx_array a;
    scan_text("[[1, 2], [3, 4], [5, 6]]", &a);
    ck_assert_int_eq(a.fault, JX_OK);
    ck_assert_int_eq(a.rank, 2);
    ck_assert_uint_eq(a.dims[0], 3);
    ck_assert_uint_eq(a.dims[1], 2);
    ck_assert_uint_eq(a.count, 6);
    ck_assert_uint_eq(a.rows, 3);
    ck_assert_str_eq(a.leaf, "a number");

    /* the first fault in document order: an array's count at its '[' */
    scan_text("[[1, 2], [3, \"x\", 5]]", &a);
    ck_assert_int_eq(a.fault, JX_COUNT);
    ck_assert_int_eq(a.depth, 1);
    ck_assert_uint_eq(a.at[0], 1);
    ck_assert_uint_eq(a.entries, 3);
    scan_text("[[1, 2], [3, \"x\"], [1]]", &a);
    ck_assert_int_eq(a.fault, JX_KIND);
    ck_assert_str_eq(a.is, "a string");
    char idx[64];
    ck_assert_str_eq(jx_index_text(a.at, a.depth, idx, sizeof idx), "[1][1]");

    scan_text("[]", &a);
    ck_assert_int_eq(a.rank, 1);
    ck_assert_uint_eq(a.dims[0], 0);
    ck_assert_ptr_null(a.leaf);
    scan_text("[[], [1]]", &a);
    ck_assert_int_eq(a.rank, 2);
    ck_assert_int_eq(a.fault, JX_COUNT);
    scan_text("[1, [2]]", &a);
    ck_assert_int_eq(a.fault, JX_KIND);
    ck_assert_str_eq(a.is, "an array");
    scan_text("[[[[[[[[[1]]]]]]]]]", &a);
    ck_assert_int_eq(a.fault, JX_DEEP);
    ck_assert_int_eq(a.rank, JX_MAX_RANK);
    scan_text("[1e39]", &a);
    ck_assert_int_eq(a.fault, JX_RANGE);
    ck_assert(a.value == 1e39);
    scan_text("[1e400]", &a);
    ck_assert_int_eq(a.fault, JX_RANGE);
    ck_assert(isinf(a.value));

    /* syntax, worded by the scan with the text's line and column */
    const char *bad = "{\"x\":\n  [1, 2,, 3]}";
    jx_scan(bad + 8, bad + strlen(bad), &a);
    ck_assert_int_eq(a.fault, JX_SYNTAX);
    char msg[160];
    ck_assert_str_eq(jx_syntax_text(&a, bad, msg, sizeof msg),
                     "invalid JSON at line 2, column 9: expected a value");
    static const char nul[] = "[1\0]";
    jx_scan(nul, nul + 4, &a);
    ck_assert_int_eq(a.fault, JX_SYNTAX);
    const char *utf8 = "[\"\xc3\xa9\", \"\xc0\xaf\"]"; /* an overlong '/' */
    scan_text(utf8, &a);
    ck_assert_int_eq(a.fault, JX_SYNTAX);
    ck_assert_ptr_eq(a.bad, utf8 + 8);
}
END_TEST

START_TEST(test_read_numbers)
{
    /* every number as strtod reads its text, -0 kept */
    const char *text = "[[-0, 1E+2, 1e-45], [3.4028234663852886e38, 0.1, -7.5e-3]]";
    jx_array a;
    scan_text(text, &a);
    ck_assert_int_eq(a.fault, JX_OK);
    float x[6];
    ck_assert_int_eq(jx_read_f32(&a, x), 0);
    static const char *const toks[] = {"-0",  "1E+2",   "1e-45", "3.4028234663852886e38",
                                       "0.1", "-7.5e-3"};
    for (int i = 0; i < 6; i++) {
        const float want = (float)strtod(toks[i], NULL);
        ck_assert_msg(memcmp(&x[i], &want, sizeof want) == 0, "%s: %a, want %a", toks[i],
                      (double)x[i], (double)want);
    }

    /* int32: fractions and the range refused, naming the number */
    int v[4];
    jx_int_fault bad;
    scan_text("[7, -2147483648, 2147483647, 0]", &a);
    ck_assert_int_eq(jx_read_i32(&a, v, &bad), 0);
    ck_assert(v[0] == 7 && v[1] == INT32_MIN && v[2] == INT32_MAX && v[3] == 0);
    scan_text("[[1, 2], [3, 2.5]]", &a);
    ck_assert_int_eq(jx_read_i32(&a, v, &bad), 1);
    ck_assert(bad.k == 3 && bad.fraction);
    size_t at[JX_MAX_RANK];
    jx_number_at(&a, bad.k, at);
    ck_assert(at[0] == 1 && at[1] == 1);
    scan_text("[1, 2147483648]", &a);
    ck_assert_int_eq(jx_read_i32(&a, v, &bad), 1);
    ck_assert(bad.k == 1 && !bad.fraction && bad.tok_len == 10);
    scan_text("[1e3]", &a);
    ck_assert_int_eq(jx_read_i32(&a, v, &bad), 1);
    ck_assert(bad.fraction);
}
END_TEST

/* Ragged rows of integers (token ids): jx_scan_rows takes rows of any
 * length and notes the longest, every other fault as jx_scan does;
 * jx_read_i32_rows puts each row at its stride and counts it. */
START_TEST(test_ragged_rows)
{
    jx_array a;
    const char *text = "[[1, 2, 3], [4], [], [5, 6]]";
    jx_scan_rows(text, text + strlen(text), &a);
    ck_assert_int_eq(a.fault, JX_OK);
    ck_assert_int_eq(a.rank, 2);
    ck_assert_uint_eq(a.dims[0], 4);
    ck_assert_uint_eq(a.longest, 3);
    ck_assert_uint_eq(a.count, 6);
    int32_t x[12];
    for (int i = 0; i < 12; i++)
        x[i] = -7;
    size_t len[4];
    jx_int_fault bad;
    ck_assert_int_eq(jx_read_i32_rows(&a, x, 3, len, &bad), 0);
    static const int32_t want[12] = {1, 2, 3, 4, -7, -7, -7, -7, -7, 5, 6, -7};
    ck_assert_mem_eq(x, want, sizeof want);
    ck_assert(len[0] == 3 && len[1] == 1 && len[2] == 0 && len[3] == 2);
    /* jx_scan holds them to the first row's count */
    jx_scan(text, text + strlen(text), &a);
    ck_assert_int_eq(a.fault, JX_COUNT);
    ck_assert(a.depth == 1 && a.at[0] == 1 && a.entries == 1);
    /* a row longer than the stride is counted, not stored */
    text = "[[1], [2, 3, 4]]";
    jx_scan_rows(text, text + strlen(text), &a);
    int32_t y[2] = {0, 0};
    ck_assert_int_eq(jx_read_i32_rows(&a, y, 1, len, &bad), 0);
    ck_assert(y[0] == 1 && y[1] == 2 && len[0] == 1 && len[1] == 3);
    /* rank 1: one row */
    text = "[9, -2147483648]";
    jx_scan_rows(text, text + strlen(text), &a);
    ck_assert_int_eq(jx_read_i32_rows(&a, x, 2, len, &bad), 0);
    ck_assert(x[0] == 9 && x[1] == INT32_MIN && len[0] == 2);
    /* other faults are still noted: a kind in a later row, an outer count */
    text = "[[1, 2], [3], [4, \"5\"]]";
    jx_scan_rows(text, text + strlen(text), &a);
    ck_assert_int_eq(a.fault, JX_KIND);
    ck_assert(a.depth == 2 && a.at[0] == 2 && a.at[1] == 1);
    text = "[[[1], [2]], [[3]]]";
    jx_scan_rows(text, text + strlen(text), &a);
    ck_assert_int_eq(a.fault, JX_COUNT);
    ck_assert(a.depth == 1 && a.at[0] == 1);
    /* a fraction or a number outside int32: where it is, row and entry */
    text = "[[1, 2], [3, 4.5]]";
    jx_scan_rows(text, text + strlen(text), &a);
    ck_assert_int_eq(jx_read_i32_rows(&a, x, 2, len, &bad), 1);
    ck_assert(bad.fraction && bad.row == 1 && bad.entry == 1 && bad.tok_len == 3);
    text = "[[1], [3, 2147483648]]";
    jx_scan_rows(text, text + strlen(text), &a);
    ck_assert_int_eq(jx_read_i32_rows(&a, x, 2, len, &bad), 1);
    ck_assert(!bad.fraction && bad.row == 1 && bad.entry == 1 && bad.tok_len == 10);
}
END_TEST

/* A text over a megabyte is read on two threads: every number still lands
 * where it belongs. */
START_TEST(test_read_large_split)
{
    enum { B = 3, L = 200, D = 300 };
    gen g = {.seed = 42};
    put(&g, "[");
    float *want = xcalloc((size_t)B * L * D, sizeof *want);
    size_t k = 0;
    for (int b = 0; b < B; b++) {
        put(&g, b ? ",\n[" : "[");
        for (int i = 0; i < L; i++) {
            put(&g, i ? ", [" : "[");
            for (int d = 0; d < D; d++) {
                char s[48];
                snprintf(s, sizeof s, "%s%d.%03de%d", d ? ", " : "", (int)rnd(&g, 2000) - 1000,
                         (int)rnd(&g, 1000), (int)rnd(&g, 10) - 5);
                put(&g, s);
                want[k++] = (float)strtod(s + (d ? 2 : 0), NULL);
            }
            put(&g, "]");
        }
        put(&g, "]");
    }
    put(&g, "]");
    ck_assert_uint_gt(g.n, 1u << 20);
    jx_array a;
    jx_scan(g.buf, g.buf + g.n, &a);
    ck_assert_int_eq(a.fault, JX_OK);
    ck_assert_uint_eq(a.count, (size_t)B * L * D);
    float *x = xcalloc(a.count, sizeof *x);
    ck_assert_int_eq(jx_read_f32(&a, x), 0);
    ck_assert(memcmp(x, want, a.count * sizeof *x) == 0);
    free(x);
    free(want);
    free(g.buf);
}
END_TEST

static const char *count_member(void *ctx, const char *key, size_t key_len, const char *v,
                                const char *end)
{
    int *n = ctx;
    (void)key;
    (void)key_len;
    (*n)++;
    jx_array a;
    return *v == '[' ? jx_scan(v, end, &a) : NULL;
}

START_TEST(test_object_and_load)
{
    /* jx_object visits members until one stops it */
    const char *obj = "{\"a\": [1], \"b\": [2, 3]}";
    int n = 0;
    ck_assert_ptr_eq(jx_object(obj, obj + strlen(obj), count_member, &n), obj + strlen(obj));
    ck_assert_int_eq(n, 2);
    const char *stop = "{\"a\": [1], \"b\": 7, \"c\": [1]}";
    n = 0;
    ck_assert_ptr_null(jx_object(stop, stop + strlen(stop), count_member, &n));
    ck_assert_int_eq(n, 2);

    /* plain strings only */
    const char *e;
    const char *s = "\"QUJD\", 1";
    ck_assert_ptr_eq(jx_plain_string(s, s + strlen(s), &e), s + 1);
    ck_assert_ptr_eq(e, s + 5);
    s = "\"QU\\u004a\"";
    ck_assert_ptr_null(jx_plain_string(s, s + strlen(s), &e));

    /* cuts: jansson reads the rest; an error's line and column are the text's */
    const char *body = "{\"x\": [1,\n 2, 3], \"s\": \"abc\", \"y\": 4}";
    jx_cut cuts[2] = {{body + 6, body + 16}, {body + 23, body + 28}};
    json_error_t je;
    bool oom = false;
    json_t *root = jx_load(body, strlen(body), cuts, 2, &je, &oom);
    ck_assert_ptr_nonnull(root);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "x")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(root, "s")), "");
    ck_assert_int_eq(json_integer_value(json_object_get(root, "y")), 4);
    json_decref(root);
    const char *broken = "{\"x\": [1,\n \"\xc3\xa9\", 3], \"y\" 4}";
    json_error_t want;
    ck_assert_ptr_null(json_loadb(broken, strlen(broken), 0, &want));
    jx_cut cut = {broken + 6, broken + 21};
    ck_assert_ptr_null(jx_load(broken, strlen(broken), &cut, 1, &je, &oom));
    ck_assert_int_eq(je.line, want.line);
    ck_assert_int_eq(je.column, want.column);

    /* integers of any size are numbers */
    root = jx_loadb("{\"n\": 100000000000000000000}", 28, 0, &je);
    ck_assert_ptr_nonnull(root);
    ck_assert(json_number_value(json_object_get(root, "n")) == 1e20);
    json_decref(root);
}
END_TEST

Suite *extract_suite(void)
{
    Suite *s = timed_suite("extract");
    TCase *ref_tc = timed_case(s, "against jansson", 120);
    tcase_add_loop_test(ref_tc, test_scan_matches_reference, 0, 4);
    tcase_add_loop_test(ref_tc, test_syntax_matches_jansson, 0, 4);
    TCase *ex = timed_case(s, "worked examples", 60);
    tcase_add_test(ex, test_worked_examples);
    tcase_add_test(ex, test_read_numbers);
    tcase_add_test(ex, test_ragged_rows);
    tcase_add_test(ex, test_read_large_split);
    tcase_add_test(ex, test_object_and_load);
    return s;
}
