/* check_encode.c - the /v1/encode codec (server/protocol/encode.c) against independent
 * references:
 *   - the PyTorch fixtures (tests/fixtures/torch/): request bodies written
 *     here from a case's x and mask (nested JSON, base64, the unbatched form),
 *     run through parse -> enc_forward -> encode_response, and the RESPONSE
 *     parsed back with jansson and compared with PyTorch's out / attn.{l} /
 *     attn_mean.{l};
 *   - RFC 4648's base64 test vectors;
 *   - tests/fixtures/requests/invalid/ (tools/make_invalid_requests.py): each
 *     invalid body with the status and message it must get;
 *   - on random shapes, the core's own output arrays, element by element:
 *     that checks the writer and the nesting, not the math.
 * Element loops record the first mismatch and assert once per tensor: a
 * Check assertion per number would make the forked runner crawl. */
#include "protocol/v1.h"
#include "codec/base64.h"
#include "codec/jsonnum.h"
#include "safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "torch_fixture.h"

#include <check.h>
#include <dirent.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID_DIR TESTS_DIR "/fixtures/requests/invalid"
#define TOL         1e-4

/* How a received number is held to an expected float: exact (the float the
 * printed text rounds to, or the decoded float, equals it) or within
 * abs + rel * |want|. */
typedef struct tol {
    bool exact;
    double abs, rel;
} tol;

static const tol TORCH_TOL = {false, TOL, 0.0};
static const tol EXACT = {true, 0.0, 0.0};

static bool value_ok(double got, float want, const tol *t)
{
    if (t->exact)
        return (float)got == want;
    return fabs(got - (double)want) <= t->abs + t->rel * fabs((double)want);
}

/* ---- layouts: what a response's arrays are compared with --------------------- */

enum { T_OUT, T_HEADS, T_MEAN };

/* The batch the expected arrays describe: out (B, L, D), attention heads
 * (B, H, L, L), mean (B, L, L); sequence b has len(b) real rows. */
typedef struct layout {
    int B, L, D, H;
    const int *lengths;
} layout;

static size_t lay_len(const layout *y, int b)
{
    return y->lengths ? (size_t)y->lengths[b] : (size_t)y->L;
}

static float want_at(const layout *y, const float *want, int kind, int b, size_t h, size_t i,
                     size_t j)
{
    const size_t L = (size_t)y->L, D = (size_t)y->D, H = (size_t)y->H;
    switch (kind) {
    case T_OUT:
        return want[((size_t)b * L + i) * D + j];
    case T_HEADS:
        return want[(((size_t)b * H + h) * L + i) * L + j];
    default:
        return want[((size_t)b * L + i) * L + j];
    }
}

/* Sequence b of a nested JSON response value: [len][D], [H][len][len] or
 * [len][len], exactly (ragged: no padding rows). */
static int cmp_json_seq(chk *k, const json_t *node, const layout *y, const float *want, int kind,
                        int b, const tol *t, const char *what)
{
    const size_t len = lay_len(y, b), cols = kind == T_OUT ? (size_t)y->D : len;
    const size_t nh = kind == T_HEADS ? (size_t)y->H : 1;
    if (kind == T_HEADS && !(json_is_array(node) && json_array_size(node) == nh))
        return chk_fail(k, "%s[%d]: expected %zu heads, got %zu", what, b, nh,
                        json_array_size(node));
    for (size_t h = 0; h < nh; h++) {
        const json_t *mat = kind == T_HEADS ? json_array_get(node, h) : node;
        if (!json_is_array(mat) || json_array_size(mat) != len)
            return chk_fail(k, "%s[%d]: expected %zu rows, got %zu", what, b, len,
                            json_array_size(mat));
        for (size_t i = 0; i < len; i++) {
            const json_t *row = json_array_get(mat, i);
            if (!json_is_array(row) || json_array_size(row) != cols)
                return chk_fail(k, "%s[%d] row %zu: expected %zu numbers, got %zu", what, b, i,
                                cols, json_array_size(row));
            for (size_t j = 0; j < cols; j++) {
                const json_t *v = json_array_get(row, j);
                const float w = want_at(y, want, kind, b, h, i, j);
                if (!json_is_number(v))
                    return chk_fail(k, "%s[%d] (%zu, %zu, %zu) is not a number", what, b, h, i, j);
                if (!value_ok(json_number_value(v), w, t))
                    return chk_fail(k, "%s[%d] (h %zu, %zu, %zu): got %.9g, want %.9g", what, b, h,
                                    i, j, json_number_value(v), (double)w);
            }
        }
    }
    return 0;
}

/* A nested JSON response value: [B]... (seq < 0) or sequence seq alone. */
static void check_json(const json_t *node, const layout *y, const float *want, int kind, int seq,
                       const tol *t, const char *what)
{
    chk k = {0};
    if (seq >= 0) {
        cmp_json_seq(&k, node, y, want, kind, seq, t, what);
    } else if (!json_is_array(node) || json_array_size(node) != (size_t)y->B) {
        chk_fail(&k, "%s: expected %d sequences, got %zu", what, y->B, json_array_size(node));
    } else {
        for (int b = 0; b < y->B; b++)
            cmp_json_seq(&k, json_array_get(node, (size_t)b), y, want, kind, b, t, what);
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
}

/* The floats of a base64 string (owned), decoded here from little-endian. */
static float *b64_floats(const json_t *s, size_t *n)
{
    ck_assert_msg(json_is_string(s), "expected a base64 string");
    size_t nbytes;
    unsigned char *bytes = base64_decode(json_string_value(s), json_string_length(s), &nbytes);
    ck_assert_msg(bytes != NULL, "not valid base64");
    ck_assert_uint_eq(nbytes % 4, 0);
    *n = nbytes / 4;
    float *f = xcalloc(*n, sizeof *f);
    for (size_t k = 0; k < *n; k++) {
        const unsigned char *p = bytes + 4 * k;
        uint32_t u =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(&f[k], &u, sizeof u);
    }
    free(bytes);
    return f;
}

static int check_dims(chk *k, const json_t *shape, const size_t *dims, size_t nd, const char *what)
{
    if (!json_is_array(shape) || json_array_size(shape) != nd)
        return chk_fail(k, "%s: shape has %zu dims, want %zu", what, json_array_size(shape), nd);
    for (size_t d = 0; d < nd; d++)
        if (json_integer_value(json_array_get(shape, d)) != (json_int_t)dims[d])
            return chk_fail(k, "%s: shape[%zu] = %lld, want %zu", what, d,
                            (long long)json_integer_value(json_array_get(shape, d)), dims[d]);
    return 0;
}

/* A base64 response value and its shape: one string for the batch (no
 * lengths) or the single sequence seq; with lengths and seq < 0, one string
 * and one shape per sequence. */
static void check_b64(const json_t *node, const json_t *shape, const layout *y, const float *want,
                      int kind, int seq, const tol *t, const char *what)
{
    chk k = {0};
    const bool ragged = y->lengths && seq < 0;
    const int b0 = seq < 0 ? 0 : seq, nb = seq < 0 ? y->B : 1;
    if (ragged)
        ck_assert_msg(json_array_size(node) == (size_t)y->B &&
                          json_array_size(shape) == (size_t)y->B,
                      "%s: ragged base64 needs %d strings and shapes", what, y->B);
    float *got = NULL;
    size_t n_got = 0, at = 0;
    for (int s = 0; s < nb && !k.failed; s++) {
        const int b = b0 + s;
        const size_t len = lay_len(y, b);
        if (ragged || s == 0) {
            free(got);
            got = b64_floats(ragged ? json_array_get(node, (size_t)s) : node, &n_got);
            at = 0;
            size_t dims[4], nd = 0;
            if (!ragged && seq < 0)
                dims[nd++] = (size_t)y->B;
            if (kind == T_HEADS)
                dims[nd++] = (size_t)y->H;
            dims[nd++] = len;
            dims[nd++] = kind == T_OUT ? (size_t)y->D : len;
            check_dims(&k, ragged ? json_array_get(shape, (size_t)s) : shape, dims, nd, what);
        }
        const size_t nh = kind == T_HEADS ? (size_t)y->H : 1;
        const size_t cols = kind == T_OUT ? (size_t)y->D : len;
        for (size_t h = 0; h < nh; h++)
            for (size_t i = 0; i < len; i++)
                for (size_t j = 0; j < cols; j++) {
                    const float w = want_at(y, want, kind, b, h, i, j);
                    if (at >= n_got) {
                        chk_fail(&k, "%s: base64 holds only %zu floats", what, n_got);
                        break;
                    }
                    if (!value_ok((double)got[at], w, t))
                        chk_fail(&k, "%s[%d] (h %zu, %zu, %zu): got %.9g, want %.9g", what, b, h, i,
                                 j, (double)got[at], (double)w);
                    at++;
                }
        if ((ragged || s == nb - 1) && at != n_got)
            chk_fail(&k, "%s: base64 holds %zu floats, expected %zu", what, n_got, at);
    }
    free(got);
    ck_assert_msg(!k.failed, "%s", k.msg);
}

/* ---- the printed number tokens ------------------------------------------------ */

typedef struct tokens {
    const char **start;
    size_t *len;
    size_t n;
} tokens;

/* The number tokens of the array that follows "key": in text, in order. */
static tokens scan_numbers(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    ck_assert_msg(p != NULL, "response lacks %s", pat);
    p += strlen(pat);
    tokens t = {0};
    size_t cap = 0;
    int depth = 0;
    do {
        if (*p == '[') {
            depth++;
            p++;
        } else if (*p == ']') {
            depth--;
            p++;
        } else if (*p == ',' || *p == ' ' || *p == '\n') {
            p++;
        } else {
            ck_assert_msg(*p != '\0' && depth > 0, "unterminated array after %s", pat);
            size_t n = strcspn(p, ",]");
            if (t.n == cap) {
                cap = cap ? 2 * cap : 256;
                t.start = realloc(t.start, cap * sizeof *t.start);
                t.len = realloc(t.len, cap * sizeof *t.len);
                ck_assert(t.start && t.len);
            }
            t.start[t.n] = p;
            t.len[t.n++] = n;
            p += n;
        }
    } while (depth > 0);
    return t;
}

static void tokens_free(tokens *t)
{
    free(t->start);
    free(t->len);
}

/* Significant digits of a printed number: mantissa digits after leading zeros. */
static int sig_digits(const char *s, size_t n)
{
    int count = 0;
    bool started = false;
    for (size_t i = 0; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] < '0' || s[i] > '9' || (s[i] == '0' && !started))
            continue;
        started = true;
        count++;
    }
    return count;
}

/* Every token of the outputs (kind T_OUT) or attention array, in order, is
 * the float want holds there when read with strtof. */
static void check_tokens_exact(const tokens *t, const layout *y, const float *want, int kind,
                               const char *what)
{
    chk k = {0};
    size_t at = 0;
    for (int b = 0; b < y->B && !k.failed; b++) {
        const size_t len = lay_len(y, b), cols = kind == T_OUT ? (size_t)y->D : len;
        const size_t nh = kind == T_HEADS ? (size_t)y->H : 1;
        for (size_t h = 0; h < nh; h++)
            for (size_t i = 0; i < len; i++)
                for (size_t j = 0; j < cols && at < t->n; j++, at++) {
                    char buf[64];
                    snprintf(buf, sizeof buf, "%.*s", (int)t->len[at], t->start[at]);
                    const float w = want_at(y, want, kind, b, h, i, j);
                    char *end;
                    const float got = strtof(buf, &end);
                    if (*end != '\0' || got != w)
                        chk_fail(&k, "%s token %zu '%s' is not %.9g", what, at, buf, (double)w);
                }
    }
    if (!k.failed && at != t->n)
        chk_fail(&k, "%s: %zu tokens, expected %zu", what, t->n, at);
    ck_assert_msg(!k.failed, "%s", k.msg);
}

/* ---- PyTorch fixture cases -------------------------------------------------- */

typedef struct fx {
    char name[256];
    enc_hparams hp;
    enc_model *model;
    st_file file;
    layout y;
    float *x;             /* (B, L, D) */
    int *lengths;         /* (B) or NULL */
    uint8_t *key_padding; /* (B, L) or NULL */
    float *attn;          /* (B or 1, L, L) or NULL: values of attn_bool or attn_add */
    bool attn_is_bool, attn_per_seq;
    bool causal;
    int win_left, win_right; /* -1: unbounded */
    int global[16];
    size_t n_global;
    char patterns[512]; /* the sparse pattern options, as JSON members ", \"strided\": {...}" */
} fx;

/* A fixture tensor as floats (owned), or NULL if absent. */
static float *fx_floats(const fx *c, const char *name, size_t *numel)
{
    return torch_floats(&c->file, name, numel);
}

/* Fixture tensor "name" (layer < 0) or "name.layer"; must exist. */
static float *fx_want(const fx *c, const char *name, int layer)
{
    char key[64];
    if (layer < 0)
        snprintf(key, sizeof key, "%s", name);
    else
        snprintf(key, sizeof key, "%s.%d", name, layer);
    float *v = fx_floats(c, key, NULL);
    ck_assert_msg(v != NULL, "%s: fixture lacks %s", c->name, key);
    return v;
}

/* An integer of a metadata object, or -1 (an unbounded window side) if absent. */
static int meta_int(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

static void fx_load(fx *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    torch_case_open(&c->file, name);
    torch_hparams(&c->file, &c->hp);
    c->model = torch_model(name, &c->hp);
    json_error_t jerr;
    json_t *mask = json_loads(st_metadata(&c->file, "mask"), 0, &jerr);
    ck_assert_msg(mask != NULL, "%s: metadata: %s", name, jerr.text);

    const st_tensor *tx = st_find(&c->file, "x");
    ck_assert_msg(tx && tx->ndim == 3, "%s: x must be [B, L, D]", name);
    c->y = (layout){(int)tx->shape[0], (int)tx->shape[1], (int)tx->shape[2], c->hp.n_heads, NULL};
    const size_t B = (size_t)c->y.B, L = (size_t)c->y.L;
    c->x = fx_floats(c, "x", NULL);

    size_t n;
    float *v;
    if ((v = fx_floats(c, "lengths", &n))) {
        c->lengths = xcalloc(B, sizeof *c->lengths);
        for (size_t i = 0; i < n && i < B; i++)
            c->lengths[i] = (int)v[i];
        c->y.lengths = c->lengths;
        free(v);
    }
    if ((v = fx_floats(c, "key_padding", &n))) {
        ck_assert_uint_eq(n, B * L);
        c->key_padding = xcalloc(n, 1);
        for (size_t i = 0; i < n; i++)
            c->key_padding[i] = v[i] != 0.0f;
        free(v);
    }
    if ((c->attn = fx_floats(c, "attn_bool", &n)))
        c->attn_is_bool = true;
    else
        c->attn = fx_floats(c, "attn_add", &n);
    if (c->attn)
        c->attn_per_seq = n == B * L * L && n != L * L;
    c->causal = json_is_true(json_object_get(mask, "causal"));
    json_t *win = json_object_get(mask, "window");
    c->win_left = meta_int(win, "left");
    c->win_right = meta_int(win, "right");
    json_t *glob = json_object_get(mask, "global");
    for (size_t k = 0; k < json_array_size(glob) && k < 16; k++)
        c->global[c->n_global++] = (int)json_integer_value(json_array_get(glob, k));
    static const char *const patterns[] = {"strided", "fixed", "blocks"};
    for (int k = 0; k < 3; k++) {
        json_t *o = json_object_get(mask, patterns[k]);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (text) {
            const size_t used = strlen(c->patterns);
            snprintf(c->patterns + used, sizeof c->patterns - used, ", \"%s\": %s", patterns[k],
                     text);
        }
        free(text);
    }
    json_decref(mask);
}

static void fx_free(fx *c)
{
    enc_model_free(c->model);
    st_close(&c->file);
    free(c->x);
    free(c->lengths);
    free(c->key_padding);
    free(c->attn);
}

/* ---- request bodies, written here (not by the code under test) ---------------- */

static void put_float(FILE *f, float v)
{
    if (isinf(v))
        fputs(v < 0 ? "-1e39" : "1e39", f); /* JSON has no infinity */
    else
        fprintf(f, "%.9g", (double)v);
}

static void put_matrix(FILE *f, const float *m, size_t rows, size_t cols)
{
    fputc('[', f);
    for (size_t i = 0; i < rows; i++) {
        fputs(i ? ", [" : "[", f);
        for (size_t j = 0; j < cols; j++) {
            if (j)
                fputs(", ", f);
            put_float(f, m[i * cols + j]);
        }
        fputc(']', f);
    }
    fputc(']', f);
}

/* "embeddings": x[b0 .. b0+nb) nested ([B][L][D], or [L][D] when unbatched),
 * or "embeddings_b64" + "shape" with base64_encode of little-endian bytes. */
static void put_embeddings(FILE *f, const float *x, int nb, int L, int D, bool batched, bool b64)
{
    const size_t n = (size_t)nb * L * D;
    if (b64) {
        unsigned char *bytes = xcalloc(n, 4);
        for (size_t k = 0; k < n; k++) {
            uint32_t u;
            memcpy(&u, &x[k], sizeof u);
            for (int s = 0; s < 4; s++)
                bytes[4 * k + (size_t)s] = (unsigned char)(u >> (8 * s));
        }
        char *t = base64_encode(bytes, 4 * n, NULL);
        ck_assert_ptr_nonnull(t);
        fprintf(f, "\"embeddings_b64\": \"%s\", \"shape\": ", t);
        if (batched)
            fprintf(f, "[%d, %d, %d]", nb, L, D);
        else
            fprintf(f, "[%d, %d]", L, D);
        free(t);
        free(bytes);
        return;
    }
    fputs("\"embeddings\": ", f);
    if (batched)
        fputc('[', f);
    for (int b = 0; b < nb; b++) {
        if (b)
            fputs(", ", f);
        put_matrix(f, x + (size_t)b * L * D, (size_t)L, (size_t)D);
    }
    if (batched)
        fputc(']', f);
}

/* The body for fixture c: the whole batch (seq < 0) or sequence seq alone in
 * the unbatched [L][D] form; extra: more top-level fields, or NULL. */
static char *fx_body(const fx *c, int seq, bool b64, const char *extra)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ck_assert_ptr_nonnull(f);
    const int B = c->y.B, L = c->y.L, D = c->y.D, b0 = seq < 0 ? 0 : seq, nb = seq < 0 ? B : 1;
    fputc('{', f);
    put_embeddings(f, c->x + (size_t)b0 * L * D, nb, L, D, seq < 0, b64);
    if (c->lengths) {
        fputs(", \"lengths\": [", f);
        for (int b = b0; b < b0 + nb; b++)
            fprintf(f, b > b0 ? ", %d" : "%d", c->lengths[b]);
        fputc(']', f);
    }
    fprintf(f, ", \"mask\": {\"causal\": %s", c->causal ? "true" : "false");
    if (c->win_left >= 0 && c->win_left == c->win_right) {
        fprintf(f, ", \"window\": %d", c->win_left); /* the integer form */
    } else if (c->win_left >= 0 || c->win_right >= 0) {
        fputs(", \"window\": {", f);
        if (c->win_left >= 0)
            fprintf(f, "\"left\": %d%s", c->win_left, c->win_right >= 0 ? ", " : "");
        if (c->win_right >= 0)
            fprintf(f, "\"right\": %d", c->win_right);
        fputc('}', f);
    }
    if (c->n_global) {
        fputs(", \"global\": [", f);
        for (size_t k = 0; k < c->n_global; k++)
            fprintf(f, k ? ", %d" : "%d", c->global[k]);
        fputc(']', f);
    }
    fputs(c->patterns, f);
    if (c->key_padding) {
        /* The unbatched form takes bool[L] (even seq) or bool[1][L] (odd). */
        const bool flat = seq >= 0 && seq % 2 == 0;
        fputs(", \"key_padding\": ", f);
        if (!flat)
            fputc('[', f);
        for (int b = b0; b < b0 + nb; b++) {
            fputs(b > b0 ? ", [" : "[", f);
            for (int j = 0; j < L; j++)
                fprintf(f, "%s%s", j ? ", " : "",
                        c->key_padding[(size_t)b * L + (size_t)j] ? "true" : "false");
            fputc(']', f);
        }
        if (!flat)
            fputc(']', f);
    }
    if (c->attn) {
        const size_t LL = (size_t)L * L;
        const int m0 = c->attn_per_seq ? b0 : 0, nm = c->attn_per_seq ? nb : 1;
        const bool nest = c->attn_per_seq && seq < 0;
        fputs(", \"attn\": ", f);
        if (nest)
            fputc('[', f);
        for (int m = m0; m < m0 + nm; m++) {
            if (m > m0)
                fputs(", ", f);
            if (!c->attn_is_bool) {
                put_matrix(f, c->attn + (size_t)m * LL, (size_t)L, (size_t)L);
                continue;
            }
            fputc('[', f);
            for (int i = 0; i < L; i++) {
                fputs(i ? ", [" : "[", f);
                for (int j = 0; j < L; j++)
                    fprintf(f, "%s%s", j ? ", " : "",
                            c->attn[(size_t)m * LL + (size_t)i * L + (size_t)j] != 0.0f ? "true"
                                                                                        : "false");
                fputc(']', f);
            }
            fputc(']', f);
        }
        if (nest)
            fputc(']', f);
    }
    fputc('}', f);
    if (extra)
        fprintf(f, ", %s", extra);
    fputc('}', f);
    fclose(f);
    return buf;
}

/* ---- one request, end to end -------------------------------------------------- */

typedef struct run {
    encode_request req;
    char *text; /* the response body */
    size_t len;
    json_t *resp; /* parsed with jansson */
} run;

static const api_limits ROOMY = {64, 4096, 65536, (size_t)1 << 28, NULL};

/* parse -> alloc outputs -> enc_forward -> encode_response -> json_loads. */
static void run_body(run *r, const enc_model *m, const enc_hparams *hp, const char *body,
                     const char *what)
{
    memset(r, 0, sizeof *r);
    api_error err = {0};
    ck_assert_msg(encode_request_parse(&r->req, body, strlen(body), hp, &ROOMY, &err) == 0,
                  "%s: %s", what, err.message);
    ck_assert_int_eq(encode_request_alloc_outputs(&r->req, hp, &err), 0);
    enc_result res = encode_request_result(&r->req);
    enc_workspace *ws = enc_workspace_new(m);
    enc_error e = {0};
    ck_assert_msg(enc_forward(m, ws, &r->req.batch, &res, &e) == 0, "%s: %s", what, e.message);
    enc_workspace_free(ws);
    long n_tokens = 0;
    for (int b = 0; b < r->req.batch.B; b++)
        n_tokens += r->req.lengths ? r->req.lengths[b] : r->req.batch.L;
    encode_usage u = {
        .sequences = r->req.batch.B, .tokens = n_tokens, .queue_ms = 0.25, .compute_ms = 1.5};
    r->text = encode_response(&r->req, "encoder", hp, &u, &r->len);
    ck_assert_ptr_nonnull(r->text);
    ck_assert_uint_eq(strlen(r->text), r->len);
    json_error_t je;
    r->resp = json_loads(r->text, 0, &je);
    ck_assert_msg(r->resp != NULL, "%s: response is not JSON (%s): %.200s", what, je.text, r->text);
    /* Numbers as text (base64 strings may hold any letters): none is nan or
     * inf, which would also have made the body invalid JSON above. */
    ck_assert_msg(r->req.base64_out ||
                      (strstr(r->text, "nan") == NULL && strstr(r->text, "inf") == NULL),
                  "%s: response has nan or inf", what);
}

static void run_free(run *r)
{
    encode_request_free(&r->req);
    free(r->text);
    json_decref(r->resp);
}

static void check_shape(const json_t *shape, const size_t *dims, size_t nd)
{
    chk k = {0};
    check_dims(&k, shape, dims, nd, "shape");
    ck_assert_msg(!k.failed, "%s", k.msg);
}

static void check_usage(const json_t *resp, const layout *y, int seq)
{
    const json_t *u = json_object_get(resp, "usage");
    long n_tokens = 0;
    for (int b = seq < 0 ? 0 : seq; b < (seq < 0 ? y->B : seq + 1); b++)
        n_tokens += (long)lay_len(y, b);
    ck_assert_int_eq(json_integer_value(json_object_get(u, "sequences")), seq < 0 ? y->B : 1);
    ck_assert_int_eq(json_integer_value(json_object_get(u, "tokens")), n_tokens);
    ck_assert(fabs(json_number_value(json_object_get(u, "queue_ms")) - 0.25) < 1e-9);
    ck_assert(fabs(json_number_value(json_object_get(u, "compute_ms")) - 1.5) < 1e-9);
}

/* ---- fixture tests ---------------------------------------------------------------- */

static const char *const REQUIRED_CASES[] = {
    "layer_post_relu",  "mask_lengths",     "mask_combined", "mask_window_global",
    "mask_attn_add_3d", "mask_key_padding", "gqa_kv2",       "stack3_post_gelu"};

START_TEST(test_required_cases_present)
{
    for (size_t i = 0; i < sizeof REQUIRED_CASES / sizeof *REQUIRED_CASES; i++) {
        bool found = false;
        for (int k = 0; k < torch_case_count(); k++)
            found = found || strcmp(torch_case_name(k), REQUIRED_CASES[i]) == 0;
        ck_assert_msg(found, "fixture case %s is missing under %s", REQUIRED_CASES[i], TORCH_DIR);
    }
}
END_TEST

/* Nested JSON in and out, attention "heads", attention_layers "all". */
START_TEST(test_fixture_nested)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    char *body = fx_body(&c, -1, false, "\"attention_layers\": \"all\"");
    run r;
    run_body(&r, c.model, &c.hp, body, c.name);
    const int n_layers = c.hp.n_layers;

    ck_assert_str_eq(json_string_value(json_object_get(r.resp, "model")), "encoder");
    check_shape(json_object_get(r.resp, "shape"),
                (size_t[]){(size_t)c.y.B, (size_t)c.y.L, (size_t)c.y.D}, 3);
    float *want = fx_want(&c, "out", -1);
    check_json(json_object_get(r.resp, "outputs"), &c.y, want, T_OUT, -1, &TORCH_TOL, "outputs");
    free(want);
    want = fx_want(&c, "attn", n_layers - 1);
    check_json(json_object_get(r.resp, "attention"), &c.y, want, T_HEADS, -1, &TORCH_TOL,
               "attention");
    free(want);
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    ck_assert_uint_eq(json_array_size(layers), (size_t)n_layers);
    for (int l = 0; l < n_layers; l++) {
        const json_t *e = json_array_get(layers, (size_t)l);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), l);
        want = fx_want(&c, "attn", l);
        check_json(json_object_get(e, "attention"), &c.y, want, T_HEADS, -1, &TORCH_TOL,
                   "attention_layers");
        free(want);
    }
    ck_assert_ptr_null(json_object_get(r.resp, "outputs_shape"));
    ck_assert_ptr_null(json_object_get(r.resp, "attention_shape"));
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);
    fx_free(&c);
}
END_TEST

/* embeddings_b64 in, "encoding": "base64" out, attention "mean"; layer 0
 * listed for stacks. */
START_TEST(test_fixture_base64)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    const int n_layers = c.hp.n_layers;
    char *body = fx_body(&c, -1, true,
                         n_layers > 1 ? "\"attention\": \"mean\", \"encoding\": \"base64\", "
                                        "\"attention_layers\": [0]"
                                      : "\"attention\": \"mean\", \"encoding\": \"base64\"");
    run r;
    run_body(&r, c.model, &c.hp, body, c.name);
    check_shape(json_object_get(r.resp, "shape"),
                (size_t[]){(size_t)c.y.B, (size_t)c.y.L, (size_t)c.y.D}, 3);
    float *want = fx_want(&c, "out", -1);
    check_b64(json_object_get(r.resp, "outputs"), json_object_get(r.resp, "outputs_shape"), &c.y,
              want, T_OUT, -1, &TORCH_TOL, "outputs");
    free(want);
    const json_t *ashape = json_object_get(r.resp, "attention_shape");
    want = fx_want(&c, "attn_mean", n_layers - 1);
    check_b64(json_object_get(r.resp, "attention"), ashape, &c.y, want, T_MEAN, -1, &TORCH_TOL,
              "attention");
    free(want);
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    if (n_layers > 1) {
        ck_assert_uint_eq(json_array_size(layers), 1);
        const json_t *e = json_array_get(layers, 0);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), 0);
        want = fx_want(&c, "attn_mean", 0);
        check_b64(json_object_get(e, "attention"), ashape, &c.y, want, T_MEAN, -1, &TORCH_TOL,
                  "attention_layers[0]");
        free(want);
    } else {
        ck_assert_ptr_null(layers);
    }
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);
    fx_free(&c);
}
END_TEST

/* Each sequence alone in the unbatched form [L][D] (with its lengths,
 * key_padding and attn slice): the fixture's sequence b, [len][D] out and
 * [H][len][len] attention.  Even b nested JSON; odd b base64 both ways. */
START_TEST(test_fixture_unbatched)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    const int n_layers = c.hp.n_layers;
    for (int b = 0; b < c.y.B; b++) {
        const bool b64 = b % 2 == 1;
        char extra[128];
        snprintf(extra, sizeof extra, "\"encoding\": \"%s\"%s", b64 ? "base64" : "json",
                 n_layers > 1 ? ", \"attention_layers\": [0]" : "");
        char *body = fx_body(&c, b, b64, extra);
        run r;
        run_body(&r, c.model, &c.hp, body, c.name);
        check_shape(json_object_get(r.resp, "shape"), (size_t[]){(size_t)c.y.L, (size_t)c.y.D}, 2);
        float *out = fx_want(&c, "out", -1), *last = fx_want(&c, "attn", n_layers - 1);
        const json_t *e = json_array_get(json_object_get(r.resp, "attention_layers"), 0);
        float *first = n_layers > 1 ? fx_want(&c, "attn", 0) : NULL;
        if (b64) {
            const json_t *ashape = json_object_get(r.resp, "attention_shape");
            check_b64(json_object_get(r.resp, "outputs"), json_object_get(r.resp, "outputs_shape"),
                      &c.y, out, T_OUT, b, &TORCH_TOL, "outputs");
            check_b64(json_object_get(r.resp, "attention"), ashape, &c.y, last, T_HEADS, b,
                      &TORCH_TOL, "attention");
            if (first)
                check_b64(json_object_get(e, "attention"), ashape, &c.y, first, T_HEADS, b,
                          &TORCH_TOL, "attention_layers[0]");
        } else {
            check_json(json_object_get(r.resp, "outputs"), &c.y, out, T_OUT, b, &TORCH_TOL,
                       "outputs");
            check_json(json_object_get(r.resp, "attention"), &c.y, last, T_HEADS, b, &TORCH_TOL,
                       "attention");
            if (first)
                check_json(json_object_get(e, "attention"), &c.y, first, T_HEADS, b, &TORCH_TOL,
                           "attention_layers[0]");
        }
        if (first)
            ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), 0);
        else
            ck_assert_ptr_null(json_object_get(r.resp, "attention_layers"));
        check_usage(r.resp, &c.y, b);
        free(out);
        free(last);
        free(first);
        run_free(&r);
        free(body);
    }
    fx_free(&c);
}
END_TEST

/* precision 3: values rounded (1e-2 relative of PyTorch's), at most 3
 * significant digits printed; precision 9: each printed number is, by
 * strtof, exactly the float the core returned; attention "none": no
 * attention in the response. */
START_TEST(test_fixture_precision)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    const int last = c.hp.n_layers - 1;
    const tol rounded = {false, TOL, 1e-2};

    char *body = fx_body(&c, -1, false, "\"precision\": 3, \"attention\": \"mean\"");
    run r;
    run_body(&r, c.model, &c.hp, body, c.name);
    float *want = fx_want(&c, "out", -1);
    check_json(json_object_get(r.resp, "outputs"), &c.y, want, T_OUT, -1, &rounded, "outputs");
    free(want);
    want = fx_want(&c, "attn_mean", last);
    check_json(json_object_get(r.resp, "attention"), &c.y, want, T_MEAN, -1, &rounded, "attention");
    free(want);
    const char *keys[] = {"outputs", "attention"};
    for (int k = 0; k < 2; k++) {
        tokens t = scan_numbers(r.text, keys[k]);
        ck_assert_uint_gt(t.n, 0);
        size_t worst = 0;
        for (size_t i = 0; i < t.n; i++)
            if (sig_digits(t.start[i], t.len[i]) > 3)
                worst = i + 1;
        ck_assert_msg(worst == 0, "%s: '%.*s' has more than 3 significant digits", keys[k],
                      worst ? (int)t.len[worst - 1] : 0, worst ? t.start[worst - 1] : "");
        tokens_free(&t);
    }
    run_free(&r);
    free(body);

    body = fx_body(&c, -1, false, "\"precision\": 9, \"attention\": \"heads\"");
    run_body(&r, c.model, &c.hp, body, c.name);
    tokens t = scan_numbers(r.text, "outputs");
    check_tokens_exact(&t, &c.y, r.req.out, T_OUT, "outputs");
    tokens_free(&t);
    t = scan_numbers(r.text, "attention");
    check_tokens_exact(&t, &c.y, r.req.attn[last], T_HEADS, "attention");
    tokens_free(&t);
    run_free(&r);
    free(body);

    body = fx_body(&c, -1, false, "\"attention\": \"none\", \"attention_layers\": \"all\"");
    run_body(&r, c.model, &c.hp, body, c.name);
    want = fx_want(&c, "out", -1);
    check_json(json_object_get(r.resp, "outputs"), &c.y, want, T_OUT, -1, &TORCH_TOL, "outputs");
    free(want);
    ck_assert_ptr_null(json_object_get(r.resp, "attention"));
    ck_assert_ptr_null(json_object_get(r.resp, "attention_layers"));
    run_free(&r);
    free(body);
    fx_free(&c);
}
END_TEST

/* embeddings_b64 in a body: plain text is decoded from the body, text with
 * JSON escapes goes through jansson; both give the same floats, and a bad
 * character deep in the text is named with its offset. */
START_TEST(test_base64_body_paths)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 4;
    hp.n_heads = hp.n_kv_heads = 1;
    hp.d_ff = 8;
    const api_limits lim = {64, 4096, 65536, (size_t)1 << 20, NULL};
    /* 8 floats; 0x3fffffff (1.99999988) encodes as "////" */
    static const uint32_t bits[8] = {0x3fffffffu, 0x3f800000u, 0xc0490fdbu, 0x00000001u,
                                     0x7f7fffffu, 0x80000000u, 0x3eaaaaabu, 0x42280000u};
    unsigned char le[32];
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 4; j++)
            le[4 * k + j] = (unsigned char)(bits[k] >> (8 * j));
    size_t n;
    char *b64 = base64_encode(le, sizeof le, &n);
    ck_assert_ptr_nonnull(strstr(b64, "////"));
    /* The same text with every '/' written "\/" and the first 'A' as \u0041. */
    char esc[128] = "", *e = esc;
    for (const char *c = b64; *c; c++)
        e += *c == '/' ? sprintf(e, "\\/") : sprintf(e, "%c", *c);
    char *a = strchr(esc, 'A');
    ck_assert_ptr_nonnull(a);
    char esc2[160];
    snprintf(esc2, sizeof esc2, "%.*s\\u0041%s", (int)(a - esc), esc, a + 1);
    const char *texts[] = {b64, esc, esc2};
    for (int t = 0; t < 3; t++) {
        char body[256];
        snprintf(body, sizeof body, "{\"shape\": [2, 4], \"embeddings_b64\": \"%s\"}", texts[t]);
        encode_request req;
        api_error err = {0};
        ck_assert_msg(encode_request_parse(&req, body, strlen(body), &hp, &lim, &err) == 0,
                      "%s: %s", body, err.message);
        ck_assert_int_eq(req.batch.B, 1);
        ck_assert_int_eq(req.batch.L, 2);
        ck_assert(!req.batched);
        for (int k = 0; k < 8; k++) {
            uint32_t u;
            memcpy(&u, &req.x[k], 4);
            ck_assert_msg(u == bits[k], "%s: float %d is %08x, want %08x", body, k, u, bits[k]);
        }
        encode_request_free(&req);
    }
    /* A bad character past the first groups, in both paths. */
    for (int t = 0; t < 2; t++) {
        char bad[64], body[256];
        snprintf(bad, sizeof bad, "%s", b64);
        bad[21] = t ? '\x01' : '.';
        snprintf(body, sizeof body, "{\"shape\": [2, 4], \"embeddings_b64\": \"%s\"}", bad);
        encode_request req;
        api_error err = {0};
        ck_assert_int_eq(encode_request_parse(&req, body, strlen(body), &hp, &lim, &err), -1);
        encode_request_free(&req);
        const char *want = t ? "invalid JSON at line 1, column" : "'.' at offset 21";
        ck_assert_msg(strstr(err.message, want), "'%s' lacks '%s'", err.message, want);
    }
    free(b64);
}
END_TEST

/* ---- the invalid request directory ------------------------------------------------- */

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xcalloc((size_t)n + 1, 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The model and limits of expected.json's "_config". */
static void invalid_config(const json_t *cfg, enc_hparams *hp, api_limits *lim)
{
    ck_assert_msg(json_is_object(cfg), "expected.json lacks _config");
    enc_hparams_default(hp);
    hp->d_model = meta_int(cfg, "d_model");
    hp->n_heads = meta_int(cfg, "n_heads");
    hp->n_kv_heads = hp->n_heads;
    hp->n_layers = meta_int(cfg, "n_layers");
    hp->d_ff = meta_int(cfg, "d_ff");
    enc_error e = {0};
    ck_assert_msg(enc_hparams_validate(hp, &e) == 0, "_config: %s", e.message);
    *lim = (api_limits){.pool = NULL}; /* malloc'd buffers */
    lim->max_batch = meta_int(cfg, "max_batch");
    lim->max_seq_len = meta_int(cfg, "max_seq_len");
    lim->max_batch_tokens = meta_int(cfg, "max_batch_tokens");
    lim->max_attention_bytes = (size_t)meta_int(cfg, "max_attention_bytes");
    ck_assert(lim->max_batch > 0 && lim->max_seq_len > 0 && lim->max_batch_tokens > 0 &&
              lim->max_attention_bytes > 0);
}

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

START_TEST(test_invalid_requests)
{
    json_error_t je;
    json_t *expect = json_load_file(INVALID_DIR "/expected.json", 0, &je);
    ck_assert_msg(expect != NULL, "expected.json: %s", je.text);
    enc_hparams hp;
    api_limits lim = {0};
    invalid_config(json_object_get(expect, "_config"), &hp, &lim);

    DIR *d = opendir(INVALID_DIR);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int checked = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "expected.json") == 0)
            continue;
        const json_t *want = json_object_get(expect, e->d_name);
        ck_assert_msg(json_is_object(want), "%s has no entry in expected.json", e->d_name);
        const int status = (int)json_integer_value(json_object_get(want, "status"));
        const char *msg = json_string_value(json_object_get(want, "message"));
        ck_assert_msg((status == 400 || status == 413) && msg && *msg,
                      "expected.json: bad entry for %s", e->d_name);
        char path[1024];
        size_t size;
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, e->d_name);
        char *body = read_file(path, &size);
        encode_request req;
        api_error err = {0};
        const int rc = encode_request_parse(&req, body, size, &hp, &lim, &err);
        encode_request_free(&req);
        free(body);
        ck_assert_msg(rc < 0, "%s was accepted", e->d_name);
        ck_assert_msg(api_error_status(err.kind) == status, "%s: status %d, want %d (%s)",
                      e->d_name, api_error_status(err.kind), status, err.message);
        ck_assert_msg(strstr(err.message, msg) != NULL, "%s: message '%s' lacks '%s'", e->d_name,
                      err.message, msg);
        ck_assert_msg(printable(err.message), "%s: message is not printable ASCII", e->d_name);
        checked++;
    }
    closedir(d);
    /* ... and every expectation has its file. */
    const char *key;
    json_t *v;
    int entries = 0;
    json_object_foreach(expect, key, v)
    {
        if (key[0] == '_')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, key);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "expected.json names %s, which does not exist", key);
        fclose(f);
        entries++;
    }
    ck_assert_int_eq(entries, checked);
    ck_assert_int_ge(checked, 25);
    json_decref(expect);
}
END_TEST

/* ---- options and choices where the contract is silent ------------------------- */

/* The small model of the invalid directory, built from a seed. */
typedef struct small {
    enc_hparams hp;
    api_limits lim;
    enc_model *model;
} small;

static void small_load(small *s)
{
    json_error_t je;
    json_t *expect = json_load_file(INVALID_DIR "/expected.json", 0, &je);
    ck_assert_msg(expect != NULL, "expected.json: %s", je.text);
    invalid_config(json_object_get(expect, "_config"), &s->hp, &s->lim);
    json_decref(expect);
    enc_error e = {0};
    s->model = enc_model_random(&s->hp, 7, &e);
    ck_assert_msg(s->model != NULL, "%s", e.message);
}

static int parse_small(const small *s, const char *body, encode_request *req, api_error *err)
{
    memset(err, 0, sizeof *err);
    return encode_request_parse(req, body, strlen(body), &s->hp, &s->lim, err);
}

START_TEST(test_defaults_and_nulls)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    ck_assert_int_eq(parse_small(&s, "{\"embeddings\": [[1, 2, 3, 4], [5, 6, 7, 8]]}", &req, &err),
                     0);
    ck_assert(!req.batched);
    ck_assert_int_eq(req.batch.B, 1);
    ck_assert_int_eq(req.batch.L, 2);
    ck_assert_int_eq(req.attn_mode, ENC_ATTN_HEADS);
    ck_assert_int_eq(req.precision, 9);
    ck_assert(!req.base64_out && !req.layers_listed);
    ck_assert(!req.want_layer[0] && req.want_layer[1]);
    ck_assert_ptr_null(req.batch.lengths);
    ck_assert_int_eq(req.batch.mask.window_left, ENC_WINDOW_NONE);
    ck_assert_int_eq(req.batch.mask.window_right, ENC_WINDOW_NONE);
    ck_assert_float_eq(req.x[7], 8.0f);
    encode_request_free(&req);
    encode_request_free(&req); /* twice is harmless */

    /* null is absent for every optional field */
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[[1, 2, 3, 4]]], \"embeddings_b64\": null, "
                                 "\"shape\": null, \"lengths\": null, \"mask\": null, "
                                 "\"attention\": null, \"attention_layers\": null, "
                                 "\"precision\": null, \"encoding\": null}",
                                 &req, &err),
                     0);
    ck_assert(req.batched && req.attn_mode == ENC_ATTN_HEADS && req.precision == 9);
    encode_request_free(&req);
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[1, 2, 3, 4]], \"mask\": {\"causal\": null, "
                                 "\"window\": {\"left\": null, \"right\": 2}, \"attn\": null}}",
                                 &req, &err),
                     0);
    ck_assert_int_eq(req.batch.mask.window_left, ENC_WINDOW_NONE);
    ck_assert_int_eq(req.batch.mask.window_right, 1); /* clamped to L */
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

START_TEST(test_mask_forms)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    const char *x = "\"embeddings\": [[[1, 2, 3, 4], [4, 3, 2, 1], [0, 1, 0, 1]], "
                    "[[1, 1, 1, 1], [2, 0, 2, 0], [-1, 0, 1, 0]]]";
    char body[1024];

    snprintf(body, sizeof body, "{%s, \"mask\": {\"window\": 1, \"global\": [2, 0, 2]}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.window_left, 1);
    ck_assert_int_eq(req.batch.mask.window_right, 1);
    ck_assert_uint_eq(req.batch.mask.n_global, 3);
    ck_assert_int_eq(req.batch.mask.global[1], 0);
    encode_request_free(&req);

    snprintf(body, sizeof body, "{%s, \"mask\": {\"window\": {\"right\": 0}}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.window_left, ENC_WINDOW_NONE);
    ck_assert_int_eq(req.batch.mask.window_right, 0);
    encode_request_free(&req);

    snprintf(body, sizeof body, "{%s, \"mask\": {\"window\": 9223372036854775807}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.window_left, 3); /* clamped to L: same meaning */
    encode_request_free(&req);

    /* key_padding [B][L] and attn [B][L][L] booleans */
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"causal\": true, \"key_padding\": [[false, true, false], [true, "
             "false, false]], \"attn\": [[[false, true, false], [false, false, false], [true, "
             "false, false]], [[false, false, false], [false, false, false], [false, false, "
             "true]]]}}",
             x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert(req.batch.mask.causal);
    ck_assert_int_eq(req.batch.mask.key_padding[1], 1);
    ck_assert_int_eq(req.batch.mask.key_padding[3], 1);
    ck_assert_int_eq(req.batch.mask.attn_kind, ENC_MASK_BOOL);
    ck_assert(req.batch.mask.attn_per_sequence);
    ck_assert_int_eq(req.batch.mask.attn_bool[1], 1);
    ck_assert_int_eq(req.batch.mask.attn_bool[6], 1);
    ck_assert_int_eq(req.batch.mask.attn_bool[17], 1);
    ck_assert_int_eq(req.batch.mask.attn_bool[16], 0);
    encode_request_free(&req);

    /* -1e39 (below float32) is -inf: not allowed, the same as true */
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"attn\": [[0, -1e39, 0.5], [0, 0, 0], [0, 0, 0]]}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.attn_kind, ENC_MASK_ADD);
    ck_assert(!req.batch.mask.attn_per_sequence);
    ck_assert(isinf(req.attn_add[1]) && req.attn_add[1] < 0);
    ck_assert_float_eq(req.attn_add[2], 0.5f);
    encode_request_free(&req);
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"attn\": [[0, -1e39, 0], [0, 0, 0], [-1e39, -1e39, 0]]}}", x);
    run r1, r2;
    run_body(&r1, s.model, &s.hp, body, "additive mask");
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"attn\": [[false, true, false], [false, false, false], [true, "
             "true, false]]}}",
             x);
    run_body(&r2, s.model, &s.hp, body, "boolean mask");
    const layout y = {2, 3, 4, 2, NULL};
    const tol close = {false, 1e-6, 0.0};
    check_json(json_object_get(r1.resp, "outputs"), &y, r2.req.out, T_OUT, -1, &close, "outputs");
    check_json(json_object_get(r1.resp, "attention"), &y, r2.req.attn[1], T_HEADS, -1, &close,
               "attention");
    /* Disallowed keys get weight 0; a lone allowed key weight 1. */
    const json_t *a0 = json_array_get(json_array_get(json_object_get(r1.resp, "attention"), 0), 0);
    ck_assert(json_number_value(json_array_get(json_array_get(a0, 0), 1)) == 0.0);
    ck_assert(json_number_value(json_array_get(json_array_get(a0, 2), 0)) == 0.0);
    ck_assert(json_number_value(json_array_get(json_array_get(a0, 2), 2)) == 1.0);
    run_free(&r1);
    run_free(&r2);

    /* The unbatched form: key_padding bool[L] and bool[1][L] */
    const char *one = "\"embeddings\": [[1, 2, 3, 4], [4, 3, 2, 1]]";
    snprintf(body, sizeof body, "{%s, \"mask\": {\"key_padding\": [false, true]}}", one);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.key_padding[1], 1);
    encode_request_free(&req);
    snprintf(body, sizeof body, "{%s, \"mask\": {\"key_padding\": [[true, false]]}}", one);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.key_padding[0], 1);
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

START_TEST(test_attention_layers_and_limits)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    /* Listed layers keep the request's order; "attention" is the last layer. */
    run r;
    run_body(&r, s.model, &s.hp,
             "{\"embeddings\": [[1, 2, 3, 4], [4, 3, 2, 1]], \"attention_layers\": [1, 0]}",
             "layers [1, 0]");
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    ck_assert_uint_eq(json_array_size(layers), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(layers, 0), "layer")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(layers, 1), "layer")), 0);
    ck_assert(json_equal(json_object_get(json_array_get(layers, 0), "attention"),
                         json_object_get(r.resp, "attention")));
    ck_assert(!json_equal(json_object_get(json_array_get(layers, 1), "attention"),
                          json_object_get(r.resp, "attention")));
    run_free(&r);

    /* [0] alone: layer 0 listed, the last still computed for "attention". */
    ck_assert_int_eq(
        parse_small(&s, "{\"embeddings\": [[1, 2, 3, 4]], \"attention_layers\": [0]}", &req, &err),
        0);
    ck_assert(req.want_layer[0] && req.want_layer[1] && req.layers_listed);
    encode_request_free(&req);
    /* "none": attention_layers is validated but has no effect. */
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[1, 2, 3, 4]], \"attention\": \"none\", "
                                 "\"attention_layers\": \"all\"}",
                                 &req, &err),
                     0);
    ck_assert(!req.want_layer[0] && !req.want_layer[1] && !req.layers_listed);
    encode_request_free(&req);

    /* max_attention_bytes 1024: 2 x 2 heads x 8 x 8 x 4 bytes = 1024 is at the
     * limit, not over; "all" doubles it. */
    char body[4096];
    FILE *f = fmemopen(body, sizeof body, "w");
    fputs("{\"embeddings\": [", f);
    for (int b = 0; b < 2; b++) {
        fputs(b ? ", [" : "[", f);
        for (int i = 0; i < 8; i++)
            fprintf(f, "%s[%d, 0.5, -1, 2]", i ? ", " : "", i);
        fputc(']', f);
    }
    fputs("]", f);
    long at = ftell(f);
    fputs("}", f);
    fclose(f);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    encode_request_free(&req);
    snprintf(body + at, sizeof body - (size_t)at, ", \"attention_layers\": \"all\"}");
    ck_assert_int_eq(parse_small(&s, body, &req, &err), -1);
    ck_assert_int_eq(err.kind, API_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(err.message, "2048 bytes"));
    encode_request_free(&req);
    snprintf(body + at, sizeof body - (size_t)at,
             ", \"attention_layers\": \"all\", \"attention\": \"mean\"}");
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    encode_request_free(&req);

    /* No limits at all: still no overflow, just too large. */
    memset(&err, 0, sizeof err);
    const char *huge = "{\"embeddings_b64\": \"AAAA\", \"shape\": [2147483647, 2147483647, 4]}";
    ck_assert_int_eq(encode_request_parse(&req, huge, strlen(huge), &s.hp, NULL, &err), -1);
    ck_assert_int_eq(err.kind, API_TOO_LARGE);
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

/* Zeroes a parsed request's outputs, as a forward would write them: the
 * codec leaves them unset, the forward writes every entry. */
static void zero_outputs(encode_request *req, const enc_hparams *hp)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
    memset(req->out, 0, B * L * (size_t)hp->d_model * sizeof *req->out);
    for (int l = 0; l < req->n_layers; l++)
        if (req->attn[l])
            memset(req->attn[l], 0, B * heads * L * L * sizeof(float));
}

START_TEST(test_response_details)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    const char *body = "{\"embeddings\": [[1, 2, 3, 4], [-4, 3, 2, 1e-30]], \"lengths\": [1], "
                       "\"encoding\": \"base64\", \"precision\": 2}";
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(encode_request_alloc_outputs(&req, &s.hp, &err), 0);
    zero_outputs(&req, &s.hp); /* as the forward would leave them */
    /* Values set by hand: the writer, not the model, is under test here. */
    const float vals[] = {-0.0f, 1.5f, -0.3125f, 3e30f};
    memcpy(req.out, vals, sizeof vals);
    req.out[4] = 99.0f; /* padding row: never written */
    req.attn[1][0] = 1.0f;
    encode_usage u = {.sequences = 1, .tokens = 1};
    size_t len;
    char *text = encode_response(&req, "my \"model\" \xc3\xa9", &s.hp, &u, &len);
    ck_assert_ptr_nonnull(text);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", je.text, text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "my \"model\" \xc3\xa9");
    check_shape(json_object_get(j, "shape"), (size_t[]){2, 4}, 2);
    check_shape(json_object_get(j, "outputs_shape"), (size_t[]){1, 4}, 2);
    check_shape(json_object_get(j, "attention_shape"), (size_t[]){2, 1, 1}, 3);
    size_t n;
    float *got = b64_floats(json_object_get(j, "outputs"), &n);
    ck_assert_uint_eq(n, 4);
    ck_assert(memcmp(got, vals, sizeof vals) == 0); /* base64 is exact, -0 included */
    free(got);
    got = b64_floats(json_object_get(j, "attention"), &n);
    ck_assert_uint_eq(n, 2);
    ck_assert(got[0] == 1.0f && got[1] == 0.0f);
    free(got);
    json_decref(j);
    free(text);

    /* The same in JSON with 2 digits. */
    req.base64_out = false;
    text = encode_response(&req, "m", &s.hp, &u, &len);
    ck_assert_ptr_nonnull(strstr(text, "\"outputs\":[[-0,1.5,-0.31,3e+30]]"));
    ck_assert_ptr_nonnull(strstr(text, "\"attention\":[[[1]],[[0]]]"));
    ck_assert_ptr_nonnull(strstr(text, "\"usage\":{\"sequences\":1,\"tokens\":1,"));
    free(text);

    /* A non-finite value (the core never returns one) still gives valid JSON. */
    req.out[1] = NAN;
    req.out[2] = -INFINITY;
    text = encode_response(&req, "m", &s.hp, &u, &len);
    j = json_loads(text, 0, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    json_decref(j);
    free(text);
    encode_request_free(&req);

    /* Unparsed or never-allocated requests: no response, no crash. */
    encode_request zero;
    memset(&zero, 0, sizeof zero);
    ck_assert_ptr_null(encode_response(&zero, "m", &s.hp, &u, &len));
    encode_request_free(&zero);
    enc_model_free(s.model);
}
END_TEST

/* ---- random shapes: the writer against the core's arrays ---------------------- */

START_TEST(test_random_shapes)
{
    uint64_t st = 0x5EED0000u + (uint64_t)_i;
    for (int iter = 0; iter < 12; iter++) {
        enc_hparams hp;
        enc_hparams_default(&hp);
        hp.n_heads = rand_int(&st, 1, 4);
        hp.d_model = hp.n_heads * rand_int(&st, 1, 4);
        hp.n_kv_heads = hp.n_heads % 2 == 0 && rand_int(&st, 0, 1) ? hp.n_heads / 2 : hp.n_heads;
        hp.d_ff = rand_int(&st, 1, 9);
        hp.n_layers = rand_int(&st, 1, 3);
        hp.activation = (enc_activation)rand_int(&st, 0, 2);
        hp.norm_first = rand_int(&st, 0, 1);
        enc_error e = {0};
        enc_model *m = enc_model_random(&hp, st, &e);
        ck_assert_msg(m != NULL, "%s", e.message);

        const int B = rand_int(&st, 1, 4), L = rand_int(&st, 1, 7), D = hp.d_model;
        const bool batched = B > 1 || rand_int(&st, 0, 1), b64_in = rand_int(&st, 0, 1);
        const bool b64_out = rand_int(&st, 0, 1);
        int lengths[4];
        const bool use_lengths = rand_int(&st, 0, 1);
        for (int b = 0; b < B; b++)
            lengths[b] = rand_int(&st, 1, L);
        const int mode = rand_int(&st, 0, 2); /* heads, mean, none */
        const int layer_choice = rand_int(&st, 0, 2);
        float *x = xcalloc((size_t)B * L * D, sizeof *x);
        fill_random(x, (size_t)B * L * D, &st, 2.0f);

        char *body = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&body, &size);
        fputc('{', f);
        put_embeddings(f, x, B, L, D, batched, b64_in);
        if (use_lengths) {
            fputs(", \"lengths\": [", f);
            for (int b = 0; b < B; b++)
                fprintf(f, b ? ", %d" : "%d", lengths[b]);
            fputc(']', f);
        }
        fprintf(f, ", \"attention\": \"%s\", \"encoding\": \"%s\"",
                mode == 0   ? "heads"
                : mode == 1 ? "mean"
                            : "none",
                b64_out ? "base64" : "json");
        if (layer_choice == 1)
            fputs(", \"attention_layers\": \"all\"", f);
        else if (layer_choice == 2)
            fprintf(f, ", \"attention_layers\": [%d]", rand_int(&st, 0, hp.n_layers - 1));
        if (rand_int(&st, 0, 1))
            fputs(", \"mask\": {\"causal\": true}", f);
        fputc('}', f);
        fclose(f);

        run r;
        run_body(&r, m, &hp, body, "random");
        const layout y = {B, L, D, hp.n_heads, use_lengths ? lengths : NULL};
        const int kind = mode == 0 ? T_HEADS : T_MEAN;
        const json_t *j = r.resp;
        if (batched)
            check_shape(json_object_get(j, "shape"), (size_t[]){(size_t)B, (size_t)L, (size_t)D},
                        3);
        else
            check_shape(json_object_get(j, "shape"), (size_t[]){(size_t)L, (size_t)D}, 2);
        const int seq = batched ? -1 : 0;
        const json_t *ashape = json_object_get(j, "attention_shape");
        if (b64_out)
            check_b64(json_object_get(j, "outputs"), json_object_get(j, "outputs_shape"), &y,
                      r.req.out, T_OUT, seq, &EXACT, "outputs");
        else
            check_json(json_object_get(j, "outputs"), &y, r.req.out, T_OUT, seq, &EXACT, "outputs");
        if (mode == 2) {
            ck_assert_ptr_null(json_object_get(j, "attention"));
            ck_assert_ptr_null(json_object_get(j, "attention_layers"));
        } else {
            const float *last = r.req.attn[hp.n_layers - 1];
            if (b64_out)
                check_b64(json_object_get(j, "attention"), ashape, &y, last, kind, seq, &EXACT,
                          "attention");
            else
                check_json(json_object_get(j, "attention"), &y, last, kind, seq, &EXACT,
                           "attention");
            const json_t *layers = json_object_get(j, "attention_layers");
            ck_assert_uint_eq(json_array_size(layers), layer_choice == 0   ? 0
                                                       : layer_choice == 1 ? (size_t)hp.n_layers
                                                                           : 1);
            for (size_t k = 0; k < json_array_size(layers); k++) {
                const json_t *le = json_array_get(layers, k);
                const int l = (int)json_integer_value(json_object_get(le, "layer"));
                ck_assert(l >= 0 && l < hp.n_layers && r.req.attn[l]);
                if (b64_out)
                    check_b64(json_object_get(le, "attention"), ashape, &y, r.req.attn[l], kind,
                              seq, &EXACT, "attention_layers");
                else
                    check_json(json_object_get(le, "attention"), &y, r.req.attn[l], kind, seq,
                               &EXACT, "attention_layers");
            }
        }
        run_free(&r);
        free(body);
        free(x);
        enc_model_free(m);
    }
}
END_TEST

/* ---- robustness: every truncation and many byte changes of valid bodies ------ */

static void parse_any(const small *s, const char *body, size_t len)
{
    encode_request req;
    api_error err = {0};
    if (encode_request_parse(&req, body, len, &s->hp, &s->lim, &err) == 0) {
        ck_assert_int_eq(err.kind, API_OK);
        if (encode_request_alloc_outputs(&req, &s->hp, &err) == 0) {
            size_t n;
            encode_usage u = {0};
            zero_outputs(&req, &s->hp);
            free(encode_response(&req, "m", &s->hp, &u, &n));
        }
    } else {
        ck_assert(err.kind == API_BAD_REQUEST || err.kind == API_TOO_LARGE);
        ck_assert(err.message[0] != '\0' && printable(err.message));
    }
    encode_request_free(&req);
}

START_TEST(test_mutations)
{
    small s;
    small_load(&s);
    char b64[64];
    {
        const float v[8] = {1, -2, 0.5f, 3, 0, 0, 1e-3f, 7};
        char *t = base64_encode(v, sizeof v, NULL); /* little-endian host */
        snprintf(b64, sizeof b64, "%s", t);
        free(t);
    }
    char b64_body[256];
    snprintf(b64_body, sizeof b64_body,
             "{\"embeddings_b64\": \"%s\", \"shape\": [1, 2, 4], \"lengths\": [2], \"encoding\": "
             "\"base64\"}",
             b64);
    const char *bodies[] = {
        "{\"embeddings\": [[[1, 2, 3, 4], [5, 6, 7, 8]], [[0, 1, 0, 1], [2, 2, 2, 2]]], "
        "\"lengths\": [2, 1], \"mask\": {\"causal\": true, \"window\": {\"left\": 1, \"right\": "
        "0}, \"global\": [1], \"key_padding\": [[false, true], [false, false]], \"attn\": [[0, "
        "-1], [0.5, 0]]}, \"attention\": \"mean\", \"attention_layers\": [0], \"precision\": 4}",
        b64_body,
    };
    static const char repl[] = {'[', ']', '{', '}', '"', ',',  '0',
                                '-', 'e', ':', ' ', 'x', '\0', (char)0xff};
    for (size_t k = 0; k < sizeof bodies / sizeof *bodies; k++) {
        const size_t n = strlen(bodies[k]);
        char *buf = xcalloc(n + 1, 1);
        for (size_t cut = 0; cut <= n; cut++)
            parse_any(&s, bodies[k], cut);
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < sizeof repl; c++) {
                memcpy(buf, bodies[k], n + 1);
                buf[i] = repl[c];
                parse_any(&s, buf, n);
            }
        free(buf);
    }
    /* Deep nesting stops at jansson's depth limit, not the stack. */
    const size_t deep = 100000;
    char *nest = xcalloc(2 * deep + 32, 1);
    strcpy(nest, "{\"embeddings\": ");
    memset(nest + strlen(nest), '[', deep);
    parse_any(&s, nest, strlen(nest));
    free(nest);
    enc_model_free(s.model);
}
END_TEST

/* ---- the embeddings scanner: the jansson-based walk's messages and order ------ */

typedef struct want_msg {
    const char *body;
    int status; /* 0: accepted */
    const char *message;
} want_msg;

START_TEST(test_scanner_messages)
{
    small s;
    small_load(&s); /* d_model 4, max_batch 4, max_seq_len 8, max_batch_tokens 16 */
    static const want_msg cases[] = {
        /* the walk's order: a sequence's rows before the next sequence's count */
        {"{\"embeddings\": [[[1,2,3,4],[1,2,\"x\",4]],[[1,2,3,4]]]}", 400,
         "embeddings[0][1][2] is not a number (it is a string)"},
        /* ... a sequence's count before its rows, a row's length before its numbers */
        {"{\"embeddings\": [[[1,2,3,4]],[[1,\"x\",3,4],[1,2,3,4]]]}", 400,
         "embeddings[1] has 2 rows; embeddings[0] has 1 (sequences must have the same length: "
         "pad them and send lengths)"},
        {"{\"embeddings\": [[[1,2,3,4],[1,\"x\",3]]]}", 400,
         "embeddings[0][1] has 3 numbers; d_model is 4"},
        {"{\"embeddings\": [[1,2,3,4],[5,6,7,{\"a\": [1]}]]}", 400,
         "embeddings[1][3] is not a number (it is an object)"},
        {"{\"embeddings\": [[1,2,3,4],[5,6,7,[8]]]}", 400,
         "embeddings[1][3] is not a number (it is an array)"},
        {"{\"embeddings\": [[[1,2,3,4]], 5]}", 400,
         "embeddings[1] is a number; expected an array of rows"},
        {"{\"embeddings\": [[1,2,3,4], true]}", 400,
         "embeddings[1] is a boolean; expected an array of d_model (4) numbers"},
        {"{\"embeddings\": [[[1,2,3,4]], [null]]}", 400,
         "embeddings[1][0] is null; expected an array of d_model (4) numbers"},
        {"{\"embeddings\": [[1,2,3,4],[5,6,7,1e39]]}", 400,
         "embeddings[1][3] = 1e+39 is outside the float32 range"},
        {"{\"embeddings\": [[1,2,3,-3.4028236e38]]}", 400,
         "embeddings[0][3] = -3.40282e+38 is outside the float32 range"},
        {"{\"embeddings\": [[1,2,3,\"\\u00e9\"]]}", 400,
         "embeddings[0][3] is not a number (it is a string)"},
        /* the shape: before the limits */
        {"{\"embeddings\": []}", 400, "embeddings is empty; expected number[B][L][d_model]"},
        {"{\"embeddings\": [[]]}", 400, "embeddings[0] is empty; embeddings must be"},
        {"{\"embeddings\": [null, [1]]}", 400, "embeddings[0] is null; embeddings must be"},
        {"{\"embeddings\": [[\"a\"]]}", 400, "embeddings[0][0] is a string; embeddings must be"},
        {"{\"embeddings\": [[{}]]}", 400, "embeddings[0][0] is an object; embeddings must be"},
        {"{\"embeddings\": \"abc\"}", 400,
         "embeddings must be number[B][L][d_model] or number[L][d_model], not a string"},
        {"{\"embeddings\": null, \"embeddings_b64\": null}", 400, "embeddings is required"},
        /* the limits: before the walk's errors */
        {"{\"embeddings\": [[[1,2,3,4]],[[1,2,3,4]],[[1,2,3,4]],[[1,2,3,4]],[[\"x\"]]]}", 413,
         "batch of 5 sequences is over limits.max_batch (4)"},
        {"{\"embeddings\": [[1,2,3,4],[1],[1],[1],[1],[1],[1],[1],[1]]}", 413,
         "sequence length 9 is over limits.max_seq_len (8)"},
        /* the other fields: before embeddings (jansson's order of the fields) */
        {"{\"embeddings\": [[1,\"x\",3,4]], \"precision\": 12}", 400,
         "precision = 12 is outside 1..9"},
        {"{\"embeddings\": [[1,\"x\",3,4]], \"embedings\": 1}", 400, "unknown field 'embedings'"},
        {"{\"embeddings\": [[1,2,3,4]], \"shape\": [1, 4]}", 400,
         "shape is only used with embeddings_b64"},
        /* accepted */
        {"{\"embedd\\u0069ngs\": [[1,2,3,4]]}", 0, NULL},
        {"{\"attention\": \"mean\", \"embeddings\":\n[[1,2,3,4]\n,[5,6,7,8]\t]\r\n}", 0, NULL},
        {"{\"embeddings\": [[[-0, 1E+2, 1e-45, 3.4028234663852886e38]]]}", 0, NULL},
        /* FLT_MAX printed with 8 or 9 digits is above it as a double: refused, as before */
        {"{\"embeddings\": [[1, 2, 3, 3.4028235e38]]}", 400,
         "embeddings[0][3] = 3.40282e+38 is outside the float32 range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        encode_request req;
        api_error err;
        const int rc = parse_small(&s, cases[i].body, &req, &err);
        if (cases[i].status == 0) {
            ck_assert_msg(rc == 0, "%s: %s", cases[i].body, err.message);
        } else {
            ck_assert_msg(rc < 0 && api_error_status(err.kind) == cases[i].status,
                          "%s: status %d (%s), want %d", cases[i].body, api_error_status(err.kind),
                          err.message, cases[i].status);
            ck_assert_msg(strstr(err.message, cases[i].message) != NULL,
                          "%s: message '%s' lacks '%s'", cases[i].body, err.message,
                          cases[i].message);
        }
        encode_request_free(&req);
    }
    /* The numbers are (float)strtod of the text: -0 stays negative. */
    encode_request req;
    api_error err;
    ck_assert_int_eq(
        parse_small(&s, "{\"embeddings\": [[-0, 1E+2, 1e-45, 3.4028234663852886e38]]}", &req, &err),
        0);
    ck_assert(req.x[0] == 0.0f && signbit(req.x[0]));
    ck_assert(req.x[1] == 100.0f && req.x[2] == FLT_TRUE_MIN && req.x[3] == FLT_MAX);
    encode_request_free(&req);
    /* A NUL byte is not JSON, though jansson 2.14 drops one after a number:
     * the scan refuses it and says where. */
    static const char nul_body[] = "{\"embeddings\": [[1\0, 2, 3, 4]]}";
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(encode_request_parse(&req, nul_body, sizeof nul_body - 1, &s.hp, &s.lim, &err),
                     -1);
    ck_assert_str_eq(err.message, "invalid JSON at line 1, column 19: expected ',' or ']'");
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

/* Invalid JSON anywhere gets jansson's own message for the body, line and
 * column included, whether the fault is inside the embeddings array (read
 * by the scanner) or outside it (read by jansson from a copy). */
/* Integers of any size are numbers, as JavaScript writes them
 * (JSON.stringify(1e20) is 100000000000000000000), rounded to float32
 * like any other: jansson alone refused them as "too big integer". */
START_TEST(test_big_integers_are_numbers)
{
    small s;
    small_load(&s);
    static const struct {
        const char *text;
        float want;
    } c[] = {{"100000000000000000000", 1e20f},
             {"-9223372036854775809", -9223372036854775809.0f},
             {"123456789012345678901234567890", 1.2345678901234568e29f}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"embeddings\": [[1, 2, 3, %s]]}", c[i].text);
        encode_request req;
        api_error err = {0};
        ck_assert_msg(parse_small(&s, body, &req, &err) == 0, "%s: %s", c[i].text, err.message);
        ck_assert_msg(req.x[3] == c[i].want && req.x[3] == (float)strtod(c[i].text, NULL),
                      "%s read as %.9g", c[i].text, (double)req.x[3]);
        encode_request_free(&req);
    }
    /* Beyond int64 where an integer is wanted: refused, naming the field
     * (jansson alone said "too big integer" and named none). */
    encode_request req;
    api_error err = {0};
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[1, 2, 3, 4]], \"lengths\": "
                                 "[100000000000000000000]}",
                                 &req, &err),
                     -1);
    encode_request_free(&req);
    ck_assert_msg(strstr(err.message, "lengths[0]") && !strstr(err.message, "too big"), "%s",
                  err.message);
    enc_model_free(s.model);
}
END_TEST

/* A body past 1 MB is read on two threads, split at a row's end: every
 * number lands where it belongs, whitespace before the brackets or not. */
START_TEST(test_large_body_split)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 256;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 64;
    enum { B = 2, L = 300, D = 256 };
    char *body = xcalloc((size_t)B * L * D * 24 + 64, 1);
    float *want = xcalloc((size_t)B * L * D, sizeof *want);
    size_t n = (size_t)sprintf(body, "{\"embeddings\": [");
    uint64_t s = 77;
    for (int b = 0; b < B; b++) {
        n += (size_t)sprintf(body + n, b ? ", [" : "[");
        for (int i = 0; i < L; i++) {
            n += (size_t)sprintf(body + n, i ? ",\n  [" : "[");
            for (int k = 0; k < D; k++) {
                char num[32];
                snprintf(num, sizeof num, "%.6g",
                         (double)((int)(splitmix(&s) % 2000001) - 1000000) * 1e-4);
                want[((size_t)b * L + (size_t)i) * D + (size_t)k] = (float)strtod(num, NULL);
                n += (size_t)sprintf(body + n, "%s%s", k ? (k % 7 ? "," : " , ") : "", num);
            }
            n += (size_t)sprintf(body + n, i % 3 ? "]" : " \n ]");
        }
        n += (size_t)sprintf(body + n, "]");
    }
    sprintf(body + n, "]}");
    ck_assert_uint_gt(strlen(body), 1u << 20);
    encode_request req;
    api_error err = {0};
    const api_limits lim = {64, 4096, 65536, (size_t)1 << 30, NULL};
    ck_assert_msg(encode_request_parse(&req, body, strlen(body), &hp, &lim, &err) == 0, "%s",
                  err.message);
    for (size_t k = 0; k < (size_t)B * L * D; k++)
        ck_assert_msg(req.x[k] == want[k], "x[%zu] = %.9g, want %.9g", k, (double)req.x[k],
                      (double)want[k]);
    encode_request_free(&req);
    free(want);
    free(body);
}
END_TEST

START_TEST(test_scanner_syntax)
{
    small s;
    small_load(&s);
    static const char *const bodies[] = {
        "{\"embeddings\": [[01, 2, 3, 4]]}",
        "{\"embeddings\": [[1., 2, 3, 4]]}",
        "{\"embeddings\": [[+1, 2, 3, 4]]}",
        "{\"embeddings\": [[.5, 2, 3, 4]]}",
        "{\"embeddings\": [[NaN, 2, 3, 4]]}",
        "{\"embeddings\": [[1, Infinity, 3, 4]]}",
        "{\"embeddings\": [[1, -Infinity, 3, 4]]}",
        "{\"embeddings\": [[1, 2, 3, 4],]}",
        "{\"embeddings\": [[1 2, 3, 4]]}",
        "{\"embeddings\": [[1, 2, 3, 4]}",
        "{\"embeddings\": [[1, 2, 3, 4]",
        "{\"embeddings\": [[1, 2, tru, 4]]}",
        "{\"embeddings\": [[1, 2, truex, 4]]}",
        "{\"embeddings\": [[1, 2, \"\xff\", 4]]}",
        "{\"embeddings\": [[1, 2, \"a\nb\", 4]]}",
        "{\"embeddings\": [[1, 2, 3, 4]]\n, \"precision\": 4,\n \"mask\": {\"causal\": tru}}",
        "{\"embeddings\":\n  [[1, 2, 3, 4],\n   [5, 6, 7, 8]], \"x\" 1}",
        "{\"embeddings\": [[1, 2, \"\xc3\xa9\xc3\xa9\", 4]], \"precision\": 4 \"x\"}",
        "{\"embeddings\": [[1, 2, 3, 4]], \"embeddings\": [[1, 2, 3, 4]]}",
        "{\"a\": [1, \"embeddings\"], \"embeddings\": [[1, 2, 3, 4]] \"b\"}",
        "{\"embeddings\": [[1, 2, 3, 4]]} []",
        "{\"embeddings\": [[1, 2, 3, 4]]}\n\n  x",
        "[[1, 2, 3, 4]] x",
        "{\"embeddings\" [[1, 2, 3, 4]]}",
        "{\"precision\": 4 \"embeddings\": [[1, 2, 3, 4]]}",
        /* embeddings_b64's characters are read from the body too */
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"shape\": [1, 4],}",
        "{\"embeddings_b64\": \"AAAA\nAAAA\", \"shape\": [1, 4]}",
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"embeddings_b64\": \"AAAA\"}",
        "{\"embeddings_b64\":\n \"AAAAAAAAAAAAAAAAAAAAAA==\"\n \"shape\": [1, 4]}",
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"shape\": [1, 4]} x",
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==, \"shape\": [1, 4]}",
        "{\"embeddings_b64\": \"\xc3\xa9"
        "AAAAAAAAAAAAAAAAAAAAA==\", \"shape\": [1 4]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        const char *body = bodies[i];
        json_error_t je;
        json_t *j = json_loadb(body, strlen(body), JSON_REJECT_DUPLICATES, &je);
        ck_assert_msg(j == NULL, "%s: jansson takes it", body);
        char want[512];
        snprintf(want, sizeof want, "invalid JSON at line %d, column %d: ", je.line, je.column);
        encode_request req;
        api_error err;
        ck_assert_int_eq(parse_small(&s, body, &req, &err), -1);
        encode_request_free(&req);
        ck_assert_msg(err.kind == API_BAD_REQUEST && strncmp(err.message, want, strlen(want)) == 0,
                      "%s: '%s', want '%s...'", body, err.message, want);
        /* jansson's text, as printable ASCII */
        for (const char *a = je.text, *b = err.message + strlen(want); *a; a++, b++)
            ck_assert_msg(*b == ((unsigned char)*a >= 0x20 && (unsigned char)*a < 0x7f ? *a : '?'),
                          "%s: '%s' is not jansson's '%s'", body, err.message, je.text);
    }
    /* Valid JSON that jansson would refuse inside a value that is refused
     * anyway (a lone surrogate, a duplicate key, a real past double), and
     * nesting past the array's: the entry is named. */
    static const struct {
        const char *body, *message;
    } named[] = {
        {"{\"embeddings\": [[1, 2, 3, 1e400]]}",
         "embeddings[0][3] = inf is outside the float32 range"},
        {"{\"embeddings\": [[1, 2, \"\\ud800\", 4]]}",
         "embeddings[0][2] is not a number (it is a string)"},
        {"{\"embeddings\": [[1, 2, {\"a\": 1, \"a\": 2}, 4]]}",
         "embeddings[0][2] is not a number (it is an object)"},
        {"{\"embeddings\": [[[[[[[[[[1]]]]]]]]]]}", "embeddings[0][0] has 1 number; d_model is 4"},
        {"{\"embeddings\": [[1, 2, 3, [[[[[[[[[]]]]]]]]]]]}",
         "embeddings[0][3] is not a number (it is an array)"},
    };
    for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
        encode_request req;
        api_error err;
        ck_assert_int_eq(parse_small(&s, named[i].body, &req, &err), -1);
        ck_assert_msg(strcmp(err.message, named[i].message) == 0, "%s: '%s', want '%s'",
                      named[i].body, err.message, named[i].message);
        encode_request_free(&req);
    }
    /* Nesting: 2047 arrays are valid JSON (a d_model error); 5000 are not,
     * and jansson words it for the body. */
    char *nest = xcalloc(2 * 5000 + 64, 1);
    for (int n = 2047; n <= 5000; n += 5000 - 2047) {
        memset(nest, 0, 2 * 5000 + 64);
        strcpy(nest, "{\"embeddings\": ");
        memset(nest + strlen(nest), '[', (size_t)n);
        memset(nest + strlen(nest), ']', (size_t)n);
        strcat(nest, "}");
        encode_request req;
        api_error err;
        ck_assert_int_eq(parse_small(&s, nest, &req, &err), -1);
        ck_assert_msg(strstr(err.message, n == 5000
                                              ? "invalid JSON at line 1"
                                              : "embeddings[0][0] has 1 number; d_model is 4"),
                      "%d arrays: %s", n, err.message);
        encode_request_free(&req);
    }
    free(nest);
    enc_model_free(s.model);
}
END_TEST

Suite *encode_suite(void)
{
    Suite *s = suite_create("encode");
    TCase *tc = tcase_create("codec");
    tcase_set_timeout(tc, 300);
    const int n_cases = torch_case_count();
    tcase_add_test(tc, test_required_cases_present);
    tcase_add_loop_test(tc, test_fixture_nested, 0, n_cases);
    tcase_add_loop_test(tc, test_fixture_base64, 0, n_cases);
    tcase_add_loop_test(tc, test_fixture_unbatched, 0, n_cases);
    tcase_add_loop_test(tc, test_fixture_precision, 0, n_cases);
    tcase_add_test(tc, test_invalid_requests);
    tcase_add_test(tc, test_defaults_and_nulls);
    tcase_add_test(tc, test_mask_forms);
    tcase_add_test(tc, test_attention_layers_and_limits);
    tcase_add_test(tc, test_response_details);
    tcase_add_loop_test(tc, test_random_shapes, 0, 4);
    tcase_add_test(tc, test_mutations);
    tcase_add_test(tc, test_base64_body_paths);
    tcase_add_test(tc, test_scanner_messages);
    tcase_add_test(tc, test_scanner_syntax);
    tcase_add_test(tc, test_big_integers_are_numbers);
    tcase_add_test(tc, test_large_body_split);
    suite_add_tcase(s, tc);
    return s;
}
