/* check_csr.c - the sparse patterns over HTTP: CSR weights against the same
 * request's dense weights and against the allowed pairs worked out here from
 * the definitions (docs/model.md), base64 CSR, usage.attention_scores and its
 * counter, the limits by allowed pairs, /v2's CSR tensors, and every new
 * option's bad values refused with the field named. */
#include "daemon.h"
#include "codec/base64.h"
#include "protocol/v1.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* D 16, 4 heads, 2 layers. */
static const char *const model_args[] = {"--d-model", "16", "--n-heads", "4",    "--d-ff",
                                         "32",        "--n-layers", "2", "--seed", "5", NULL};
#define D 16
#define H 4
#define NL 2

static json_t *post(const char *path, const char *body, long want_status)
{
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, path, body, &r), 0);
    ck_assert_msg(r.status == want_status, "status %ld, want %ld: %.400s", r.status, want_status,
                  r.body);
    json_error_t e;
    json_t *j = json_loads(r.body, 0, &e);
    ck_assert_msg(j != NULL, "not JSON (%s): %.300s", e.text, r.body);
    http_resp_free(&r);
    return j;
}

/* ---- the definitions, written out again ------------------------------------- */

typedef struct pattern {
    const char *json;   /* the mask object as sent */
    int wl, wr;         /* window, -1 = none */
    int stride, fl, fc; /* strided, fixed */
    int bs, bw, bg, br; /* blocks */
    unsigned long long seed;
    int global[2], n_global;
    bool causal;
    int band; /* a local layer's: |i - j| > band refused besides; 0 = none */
} pattern;

/* BigBird's random blocks of query block qb, drawn as core/kernels/mask.c's
 * mask_blocks_random draws them, written out again here. */
static bool random_block(const pattern *p, int n_blocks, int qb, int kb)
{
    if (qb < p->bg || p->br == 0)
        return false;
    int cand[512], m = 0;
    for (int k = p->bg; k < n_blocks; k++)
        if (abs(qb - k) > p->bw)
            cand[m++] = k;
    uint64_t x = (uint64_t)p->seed ^ (0x9E3779B97F4A7C15u * (uint64_t)(qb + 1));
    const int r = p->br < m ? p->br : m;
    for (int t = 0; t < r; t++) {
        const int u = t + (int)(splitmix(&x) % (uint64_t)(m - t));
        const int c = cand[t];
        cand[t] = cand[u];
        cand[u] = c;
    }
    for (int t = 0; t < r; t++)
        if (cand[t] == kb)
            return true;
    return false;
}

static bool allowed(const pattern *p, int len, int i, int j)
{
    if (p->causal && j > i)
        return false;
    if (p->band && abs(i - j) > p->band)
        return false;
    const bool any = p->wl >= 0 || p->stride || p->fl || p->bs;
    if (!any)
        return true;
    for (int g = 0; g < p->n_global; g++)
        if (p->global[g] == i || p->global[g] == j)
            return true;
    if (p->wl >= 0 && i - j <= p->wl && j - i <= p->wr)
        return true;
    if (p->stride && (abs(i - j) < p->stride || (i - j) % p->stride == 0))
        return true;
    if (p->fl && (i / p->fl == j / p->fl || j % p->fl >= p->fl - p->fc))
        return true;
    if (p->bs) {
        const int qb = i / p->bs, kb = j / p->bs;
        if (abs(qb - kb) <= p->bw || qb < p->bg || kb < p->bg ||
            random_block(p, (len + p->bs - 1) / p->bs, qb, kb))
            return true;
    }
    return false;
}

static const pattern patterns[] = {
    {.json = "{\"window\": 3}", .wl = 3, .wr = 3},
    {.json = "{\"window\": {\"left\": 5, \"right\": 0}, \"global\": [2, 40]}", .wl = 5, .wr = 0,
     .global = {2, 40}, .n_global = 2},
    {.json = "{\"strided\": {\"stride\": 7}}", .wl = -1, .wr = -1, .stride = 7},
    {.json = "{\"strided\": {\"stride\": 5}, \"causal\": true}", .wl = -1, .wr = -1, .stride = 5,
     .causal = true},
    {.json = "{\"fixed\": {\"block\": 8, \"summary\": 2}}", .wl = -1, .wr = -1, .fl = 8, .fc = 2},
    {.json = "{\"blocks\": {\"size\": 4, \"window\": 1, \"global\": 1, \"random\": 2, "
             "\"seed\": 99}}",
     .wl = -1, .wr = -1, .bs = 4, .bw = 1, .bg = 1, .br = 2, .seed = 99},
    {.json = "{\"window\": 2, \"blocks\": {\"size\": 6, \"random\": 1, \"seed\": 3}}", .wl = 2,
     .wr = 2, .bs = 6, .br = 1, .seed = 3},
};
#define N_PATTERNS (int)(sizeof patterns / sizeof *patterns)

/* A batch of two sequences, L = 45, lengths 45 and 29: embeddings as JSON. */
#define L 45
static const int lens[2] = {45, 29};

static char *embeddings_json_d(int d_model)
{
    size_t cap = 2 * L * (size_t)d_model * 24 + 64, n = 0;
    char *s = xcalloc(cap, 1);
    uint64_t st = 17;
    n += (size_t)snprintf(s + n, cap - n, "[");
    for (int b = 0; b < 2; b++) {
        n += (size_t)snprintf(s + n, cap - n, b ? ",[" : "[");
        for (int i = 0; i < L; i++) {
            n += (size_t)snprintf(s + n, cap - n, i ? ",[" : "[");
            for (int d = 0; d < d_model; d++) {
                float v;
                fill_random(&v, 1, &st, 1.0f);
                n += (size_t)snprintf(s + n, cap - n, d ? ",%.6g" : "%.6g", (double)v);
            }
            n += (size_t)snprintf(s + n, cap - n, "]");
        }
        n += (size_t)snprintf(s + n, cap - n, "]");
    }
    snprintf(s + n, cap - n, "]");
    return s;
}

static char *embeddings_json(void)
{
    return embeddings_json_d(D);
}

static char *request(const char *emb, const char *mask, const char *extra)
{
    size_t cap = strlen(emb) + strlen(mask) + strlen(extra) + 256;
    char *s = xcalloc(cap, 1);
    snprintf(s, cap, "{\"embeddings\": %s, \"lengths\": [45, 29], \"mask\": %s%s}", emb, mask,
             extra);
    return s;
}

/* One sequence's CSR object against the definitions and the dense weights
 * ([H][len][len], or [len][len] for the mean). */
static void check_csr_seq(const pattern *p, int len, const json_t *csr, const json_t *dense,
                          bool heads)
{
    const json_t *indptr = json_object_get(csr, "indptr"), *indices = json_object_get(csr, "indices");
    const json_t *values = json_object_get(csr, "values");
    ck_assert_int_eq((int)json_array_size(indptr), len + 1);
    size_t k = 0;
    for (int i = 0; i < len; i++) {
        EXPECT(json_integer_value(json_array_get(indptr, (size_t)i)) == (json_int_t)k,
               "%s: indptr[%d] is %d, want %zu", p->json, i,
               (int)json_integer_value(json_array_get(indptr, (size_t)i)), k);
        for (int j = 0; j < len; j++) {
            const bool ok = allowed(p, len, i, j);
            for (int h = 0; h < (heads ? H : 1); h++) {
                const json_t *drow = heads ? json_array_get(json_array_get(dense, (size_t)h), (size_t)i)
                                           : json_array_get(dense, (size_t)i);
                const double dv = json_number_value(json_array_get(drow, (size_t)j));
                if (!ok) {
                    EXPECT(dv == 0.0, "%s: pair (%d, %d) not allowed but weighs %g", p->json, i, j,
                           dv);
                    continue;
                }
                const json_t *vrow = heads ? json_array_get(values, (size_t)h) : values;
                const double cv = json_number_value(json_array_get(vrow, k));
                EXPECT(fabs(cv - dv) <= 1e-7, "%s: (%d, %d) head %d: csr %g, dense %g", p->json, i,
                       j, h, cv, dv);
            }
            if (ok) {
                EXPECT(json_integer_value(json_array_get(indices, k)) == j,
                       "%s: row %d index %zu is %d, want %d", p->json, i, k,
                       (int)json_integer_value(json_array_get(indices, k)), j);
                k++;
            }
        }
    }
    ck_assert_int_eq(json_integer_value(json_array_get(indptr, (size_t)len)), (json_int_t)k);
    ck_assert_uint_eq(json_array_size(indices), k);
}

START_TEST(test_csr_matches_dense_and_definitions)
{
    start_or_fail(model_args, NULL);
    char *emb = embeddings_json();
    for (int pi = 0; pi < N_PATTERNS; pi++) {
        const pattern *p = &patterns[pi];
        for (int heads = 0; heads < 2; heads++) {
            char extra[160];
            snprintf(extra, sizeof extra,
                     ", \"attention\": \"%s\", \"attention_layers\": \"all\"",
                     heads ? "heads" : "mean");
            char *dense_req = request(emb, p->json, extra);
            strncat(extra, ", \"attention_format\": \"csr\"", sizeof extra - strlen(extra) - 1);
            char *csr_req = request(emb, p->json, extra);
            json_t *dj = post("/v1/encode", dense_req, 200), *cj = post("/v1/encode", csr_req, 200);
            /* the same outputs, the same scores */
            ck_assert(json_equal(json_object_get(dj, "outputs"), json_object_get(cj, "outputs")));
            ck_assert(json_equal(json_object_get(dj, "usage") ? json_object_get(
                                                                    json_object_get(dj, "usage"),
                                                                    "attention_scores")
                                                              : NULL,
                                 json_object_get(json_object_get(cj, "usage"), "attention_scores")));
            for (int l = 0; l < NL; l++) {
                const json_t *da = json_object_get(
                    json_array_get(json_object_get(dj, "attention_layers"), (size_t)l), "attention");
                const json_t *ca = json_object_get(
                    json_array_get(json_object_get(cj, "attention_layers"), (size_t)l), "attention");
                for (int b = 0; b < 2; b++)
                    check_csr_seq(p, lens[b], json_array_get(ca, (size_t)b),
                                  json_array_get(da, (size_t)b), heads);
            }
            json_decref(dj);
            json_decref(cj);
            free(dense_req);
            free(csr_req);
        }
    }
    free(emb);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Little-endian int32 / float32 from a base64 string; owned, *n entries. */
static void *b64_words(const json_t *s, size_t *n)
{
    size_t bytes = 0;
    unsigned char *p = base64_decode(json_string_value(s), json_string_length(s), &bytes);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(bytes % 4, 0);
    *n = bytes / 4;
    return p;
}

START_TEST(test_csr_base64)
{
    start_or_fail(model_args, NULL);
    char *emb = embeddings_json();
    const pattern *p = &patterns[5];
    char *jreq = request(emb, p->json, ", \"attention_format\": \"csr\"");
    char *breq = request(emb, p->json, ", \"attention_format\": \"csr\", \"encoding\": \"base64\"");
    json_t *jj = post("/v1/encode", jreq, 200), *bj = post("/v1/encode", breq, 200);
    ck_assert_ptr_null(json_object_get(bj, "attention_shape"));
    for (int b = 0; b < 2; b++) {
        const json_t *jc = json_array_get(json_object_get(jj, "attention"), (size_t)b);
        const json_t *bc = json_array_get(json_object_get(bj, "attention"), (size_t)b);
        size_t n_ip, n_ix, n_v;
        int32_t *ip = b64_words(json_object_get(bc, "indptr"), &n_ip);
        int32_t *ix = b64_words(json_object_get(bc, "indices"), &n_ix);
        float *v = b64_words(json_object_get(bc, "values"), &n_v);
        const size_t nnz = json_array_size(json_object_get(jc, "indices"));
        ck_assert_uint_eq(n_ip, (size_t)lens[b] + 1);
        ck_assert_uint_eq(n_ix, nnz);
        ck_assert_uint_eq(n_v, H * nnz);
        ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(bc, "indptr_shape"), 0)),
                         lens[b] + 1);
        ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(bc, "indices_shape"), 0)),
                         (json_int_t)nnz);
        const json_t *vs = json_object_get(bc, "values_shape");
        ck_assert_int_eq(json_integer_value(json_array_get(vs, 0)), H);
        ck_assert_int_eq(json_integer_value(json_array_get(vs, 1)), (json_int_t)nnz);
        for (size_t i = 0; i < n_ip; i++)
            ck_assert_int_eq(ip[i], json_integer_value(json_array_get(json_object_get(jc, "indptr"), i)));
        for (size_t k = 0; k < nnz; k++)
            ck_assert_int_eq(ix[k], json_integer_value(json_array_get(json_object_get(jc, "indices"), k)));
        for (int h = 0; h < H; h++)
            for (size_t k = 0; k < nnz; k++) {
                const double want = json_number_value(
                    json_array_get(json_array_get(json_object_get(jc, "values"), (size_t)h), k));
                ck_assert_msg(fabs((double)v[(size_t)h * nnz + k] - want) <= 1e-8 * (1 + fabs(want)),
                              "head %d value %zu: %g vs %g", h, k, (double)v[(size_t)h * nnz + k],
                              want);
            }
        free(ip);
        free(ix);
        free(v);
    }
    json_decref(jj);
    json_decref(bj);
    free(jreq);
    free(breq);
    free(emb);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* The attnd_attention_scores_total counter's value. */
static long long scores_counter(void)
{
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
    const char *p = strstr(r.body, "\nattnd_attention_scores_total ");
    ck_assert_ptr_nonnull(p);
    long long v = atoll(p + strlen("\nattnd_attention_scores_total "));
    http_resp_free(&r);
    return v;
}

START_TEST(test_scores_usage_and_counter)
{
    start_or_fail(model_args, NULL);
    char *emb = embeddings_json();
    const long long before = scores_counter();
    /* no mask: H len^2 per layer and sequence */
    char *req = request(emb, "{}", ", \"attention\": \"none\"");
    json_t *j = post("/v1/encode", req, 200);
    const long long want = (long long)H * NL * (45 * 45 + 29 * 29);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "usage"), "attention_scores")),
                     want);
    json_decref(j);
    free(req);
    /* a window of 3 at these lengths stays within H len (2w + 1 + 2*64) per layer */
    req = request(emb, "{\"window\": 3}", ", \"attention\": \"none\"");
    j = post("/v1/encode", req, 200);
    const long long win = json_integer_value(json_object_get(json_object_get(j, "usage"), "attention_scores"));
    ck_assert_int_le(win, (long long)H * NL * (45 + 29) * (2 * 3 + 1 + 2 * 64));
    ck_assert_int_gt(win, 0);
    json_decref(j);
    free(req);
    ck_assert_int_eq(scores_counter() - before, want + win);
    free(emb);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_limits_count_allowed_pairs)
{
    /* 45 x 45 x 4 heads x 2 sequences x 4 bytes = 64,800 bytes of dense
     * weights; a window of 1 allows under 3 keys a row */
    start_or_fail(model_args, (const char *const[]){"ATTND_MAX_ATTENTION_BYTES=20000", NULL});
    char *emb = embeddings_json();
    char *dense = request(emb, "{\"window\": 1}", "");
    json_t *j = post("/v1/encode", dense, 413);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
                                 "limits.max_attention_bytes"));
    json_decref(j);
    char *csr = request(emb, "{\"window\": 1}", ", \"attention_format\": \"csr\"");
    json_decref(post("/v1/encode", csr, 200));
    char *big = request(emb, "{\"window\": 20}", ", \"attention_format\": \"csr\"");
    j = post("/v1/encode", big, 413);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    ck_assert_msg(strstr(msg, "csr") && strstr(msg, "limits.max_attention_bytes"), "%s", msg);
    json_decref(j);
    free(dense);
    free(csr);
    free(big);
    free(emb);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* /v2's CSR weights of the last layer (the mean) for the two sequences of
 * emb (d_model wide) under the mask parameter param (NULL: none). */
static json_t *v2_csr(const char *emb, int d_model, const char *param, const char *value)
{
    /* the same embeddings flat, padding rows included */
    json_t *nested = json_loads(emb, 0, NULL);
    json_t *flat = json_array();
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < L; i++)
            json_array_extend(flat, json_array_get(json_array_get(nested, b), i));
    json_t *body =
        json_pack("{s:[{s:s, s:s, s:[i,i,i], s:o}, {s:s, s:s, s:[i], s:[i,i]}], s:{s:s, s:s}}",
                  "inputs", "name", "embeddings", "datatype", "FP32", "shape", 2, L, d_model,
                  "data", flat, "name", "lengths", "datatype", "INT32", "shape", 2, "data", 45, 29,
                  "parameters", "attention", "mean", "attention_format", "csr");
    if (param)
        json_object_set_new(json_object_get(body, "parameters"), param, json_string(value));
    char *text = json_dumps(body, 0);
    json_t *j = post("/v2/models/encoder/infer", text, 200);
    free(text);
    json_decref(body);
    json_decref(nested);
    return j;
}

/* /v2's CSR tensors (j) against the pairs p allows and the dense weights of
 * /v1 (ref). */
static void check_v2_csr(const json_t *j, const json_t *ref, const pattern *p)
{
    const json_t *outs = json_object_get(j, "outputs");
    ck_assert_uint_eq(json_array_size(outs), 4);
    const json_t *ip = json_object_get(json_array_get(outs, 1), "data");
    const json_t *ix = json_object_get(json_array_get(outs, 2), "data");
    const json_t *vals = json_object_get(json_array_get(outs, 3), "data");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(outs, 1), "name")),
                     "attention_indptr");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(outs, 1), "datatype")), "INT32");
    ck_assert_uint_eq(json_array_size(ip), 2 * L + 1);
    for (int b = 0; b < 2; b++) {
        const json_t *da = json_array_get(json_object_get(ref, "attention"), (size_t)b);
        for (int i = 0; i < L; i++) {
            const json_int_t r0 = json_integer_value(json_array_get(ip, (size_t)(b * L + i)));
            const json_int_t r1 = json_integer_value(json_array_get(ip, (size_t)(b * L + i + 1)));
            if (i >= lens[b]) { /* padding rows are empty */
                ck_assert_int_eq(r0, r1);
                continue;
            }
            json_int_t k = r0;
            for (int jj = 0; jj < lens[b]; jj++) {
                if (!allowed(p, lens[b], i, jj))
                    continue;
                ck_assert_int_eq(json_integer_value(json_array_get(ix, (size_t)k)), jj);
                const double want = json_number_value(
                    json_array_get(json_array_get(da, (size_t)i), (size_t)jj));
                ck_assert(fabs(json_number_value(json_array_get(vals, (size_t)k)) - want) <= 1e-7);
                k++;
            }
            ck_assert_int_eq(k, r1);
        }
    }
    ck_assert_uint_eq(json_array_size(ix), (size_t)json_integer_value(json_array_get(ip, 2 * L)));
}

/* One request both ways, p's mask (mask as /v1 takes it, param and value
 * as /v2 does): /v2's CSR against /v1's dense weights (check_v2_csr).
 * Returns /v2's attention_scores. */
static json_int_t v2_matches_v1(const char *emb, int d_model, const char *mask, const char *param,
                                const char *value, const pattern *p)
{
    char *v1 = request(emb, mask, ", \"attention\": \"mean\"");
    json_t *ref = post("/v1/encode", v1, 200), *j = v2_csr(emb, d_model, param, value);
    check_v2_csr(j, ref, p);
    const json_int_t scores =
        json_integer_value(json_object_get(json_object_get(j, "parameters"), "attention_scores"));
    json_decref(j);
    json_decref(ref);
    free(v1);
    return scores;
}

START_TEST(test_v2_csr_tensors)
{
    start_or_fail(model_args, NULL);
    char *emb = embeddings_json();
    const pattern p = {.wl = -1, .wr = -1, .stride = 6};
    ck_assert_int_gt(
        v2_matches_v1(emb, D, "{\"strided\": {\"stride\": 6}}", "strided", "{\"stride\": 6}", &p),
        0);
    free(emb);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Every new option's bad values: 400 with the field named, over /v1 and /v2. */
static const struct {
    const char *mask, *v1, *v2;
} bad[] = {
    {"{\"strided\": {\"stride\": 0}}", "mask.strided.stride = 0 must be at least 1",
     "parameters.strided.stride = 0 must be at least 1"},
    {"{\"strided\": 4}", "mask.strided must be an object", "parameters.strided must be an object"},
    {"{\"strided\": {\"stride\": 2.5}}", "mask.strided.stride must be an integer, not a number",
     "parameters.strided.stride must be an integer"},
    {"{\"strided\": {}}", "mask.strided.stride is required",
     "parameters.strided.stride is required"},
    {"{\"strided\": {\"stride\": 2, \"s\": 1}}",
     "mask.strided: unknown option 's'; expected stride", "parameters.strided: unknown option 's'"},
    {"{\"fixed\": {\"block\": 8, \"summary\": 9}}",
     "mask.fixed.summary = 9 must be below mask.fixed.block = 8",
     "parameters.fixed.summary = 9 must be below parameters.fixed.block = 8"},
    {"{\"fixed\": {\"block\": 8}}", "mask.fixed.summary is required",
     "parameters.fixed.summary is required"},
    {"{\"fixed\": {\"block\": 0, \"summary\": 0}}", "mask.fixed.block = 0 must be at least 1",
     "parameters.fixed.block = 0 must be at least 1"},
    {"{\"fixed\": {\"block\": 4, \"summary\": -1}}", "mask.fixed.summary = -1 must not be negative",
     "parameters.fixed.summary = -1 must not be negative"},
    {"{\"blocks\": {\"window\": 1}}", "mask.blocks.size is required",
     "parameters.blocks.size is required"},
    {"{\"blocks\": {\"size\": 4, \"random\": -2}}", "mask.blocks.random = -2 must not be negative",
     "parameters.blocks.random = -2 must not be negative"},
    {"{\"blocks\": {\"size\": 4, \"seed\": -1}}", "mask.blocks.seed = -1 must not be negative",
     "parameters.blocks.seed = -1 must not be negative"},
    {"{\"blocks\": {\"size\": 4, \"seed\": \"x\"}}", "mask.blocks.seed must be an integer",
     "parameters.blocks.seed must be an integer"},
    {"{\"blocks\": {\"size\": 4294967296}}", "mask.blocks.size = 4294967296 is too large",
     "parameters.blocks.size = 4294967296 is too large"},
    {"{\"blocks\": {\"size\": 4, \"windw\": 1}}",
     "mask.blocks: unknown option 'windw'; expected size, window, global, random or seed",
     "parameters.blocks: unknown option 'windw'"},
};

START_TEST(test_bad_options_named)
{
    start_or_fail(model_args, NULL);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char body[512];
        snprintf(body, sizeof body, "{\"embeddings\": [[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]], "
                                    "\"mask\": %s}",
                 bad[k].mask);
        json_t *j = post("/v1/encode", body, 400);
        const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
        ck_assert_msg(msg && strstr(msg, bad[k].v1), "%s: '%s' lacks '%s'", bad[k].mask, msg,
                      bad[k].v1);
        json_decref(j);
        /* /v2: the option as a parameter (an object, here as its JSON string) */
        json_t *m = json_loads(bad[k].mask, 0, NULL);
        const char *key;
        json_t *v;
        json_object_foreach(m, key, v)
        {
            json_t *req = json_pack("{s:[{s:s, s:s, s:[i,i,i], s:[f,f,f,f,f,f,f,f,f,f,f,f,f,f,f,f]}], "
                                    "s:{s:O}}",
                                    "inputs", "name", "embeddings", "datatype", "FP32", "shape", 1, 1,
                                    16, "data", 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13.,
                                    14., 15., 16., "parameters", key, v);
            char *text = json_dumps(req, 0);
            http_resp r;
            ck_assert_int_eq(http_post_json(dp.port, "/v2/models/encoder/infer", text, &r), 0);
            ck_assert_msg(r.status == 400 && strstr(r.body, bad[k].v2), "%s: %ld %s lacks '%s'",
                          bad[k].mask, r.status, r.body, bad[k].v2);
            http_resp_free(&r);
            free(text);
            json_decref(req);
        }
        json_decref(m);
    }
    json_decref(post("/v1/encode",
                     "{\"embeddings\": [[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]], "
                     "\"attention_format\": \"coo\"}",
                     400));
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* A ModernBERT directory (6 layers, 4 heads, D 32; layers 0 and 3 global,
 * the others local: config.json's local_attention 32, so |i - j| <= 16):
 * each layer's CSR lists the pairs its mask allows, the local layers' within
 * the window alone, with the dense weights' values; /v2's last layer (local)
 * too. */
START_TEST(test_csr_local_layers)
{
    static const char *const args[] = {"--model-dir",
                                       TESTS_DIR "/fixtures/modernbert/modernbert_mlm", NULL};
    start_or_fail(args, NULL);
    char *emb = embeddings_json_d(32);
    static const pattern masks[] = {
        {.json = "{}", .wl = -1, .wr = -1},
        {.json = "{\"window\": {\"left\": 30, \"right\": 2}, \"global\": [2, 40]}",
         .wl = 30,
         .wr = 2,
         .global = {2, 40},
         .n_global = 2},
    };
    for (int pi = 0; pi < 2; pi++) {
        const char *extra = ", \"attention\": \"heads\", \"attention_layers\": \"all\"";
        char *dense_req = request(emb, masks[pi].json, extra);
        char csr_extra[200];
        snprintf(csr_extra, sizeof csr_extra, "%s, \"attention_format\": \"csr\"", extra);
        char *csr_req = request(emb, masks[pi].json, csr_extra);
        json_t *dj = post("/v1/encode", dense_req, 200), *cj = post("/v1/encode", csr_req, 200);
        for (int l = 0; l < 6; l++) {
            pattern p = masks[pi];
            p.band = l % 3 ? 16 : 0; /* global every 3rd layer */
            const json_t *da = json_object_get(
                json_array_get(json_object_get(dj, "attention_layers"), (size_t)l), "attention");
            const json_t *ca = json_object_get(
                json_array_get(json_object_get(cj, "attention_layers"), (size_t)l), "attention");
            for (int b = 0; b < 2; b++)
                check_csr_seq(&p, lens[b], json_array_get(ca, (size_t)b),
                              json_array_get(da, (size_t)b), true);
        }
        json_decref(dj);
        json_decref(cj);
        free(dense_req);
        free(csr_req);
    }
    /* /v2: the last layer (5, local), its mean */
    const pattern p = {.wl = -1, .wr = -1, .band = 16};
    v2_matches_v1(emb, 32, "{}", NULL, NULL, &p);
    free(emb);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *csr_suite(void)
{
    Suite *s = timed_suite("csr");
    TCase *tc = timed_case(s, "daemon", 300);
    tcase_add_test(tc, test_csr_matches_dense_and_definitions);
    tcase_add_test(tc, test_csr_base64);
    tcase_add_test(tc, test_scores_usage_and_counter);
    tcase_add_test(tc, test_limits_count_allowed_pairs);
    tcase_add_test(tc, test_v2_csr_tensors);
    tcase_add_test(tc, test_bad_options_named);
    tcase_add_test(tc, test_csr_local_layers);
    return s;
}
