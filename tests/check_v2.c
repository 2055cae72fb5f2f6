/* check_v2.c - the Open Inference Protocol (KServe v2) with Triton's binary
 * tensor data extension, through the real daemon: its routes, the malformed
 * requests of v2_util.c's table (check_v2_codec.c sends them through the
 * codec), the PyTorch fixtures through JSON and through binary tensors, the
 * Hugging Face fixtures from token ids, a binary exchange written out byte by
 * byte, limits, authentication and metrics.
 *
 * The protocol documents this follows: KServe's "Open Inference Protocol"
 * (inference request / response JSON, $parameters, {"error": $string}) and
 * Triton's "Binary Tensor Data Extension" (Inference-Header-Content-Length,
 * binary_data_size, binary_data, binary_data_output; little-endian,
 * row-major, in input / output order after the JSON). */
#include "daemon.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"
#include "protocol/v2.h"
#include "v1_util.h"
#include "v2_util.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const small_v2[] = {"--d-model", "4", "--n-heads", "2", "--d-ff", "8", NULL};

/* ---- the daemon ------------------------------------------------------------------- */

static json_t *parse_json(const char *text, size_t len)
{
    json_error_t e;
    json_t *j = json_loadb(text, len, 0, &e);
    ck_assert_msg(j != NULL, "not JSON (%s): %.300s", e.text, text);
    return j;
}

/* A v2 error: the status and {"error": "<message containing want>"}. */
static void assert_v2_error(const http_resp *r, long status, const char *want)
{
    ck_assert_msg(r->status == status, "status %ld, want %ld: %.300s", r->status, status, r->body);
    json_t *j = parse_json(r->body, r->len);
    const char *msg = json_string_value(json_object_get(j, "error"));
    ck_assert_msg(msg && json_object_size(j) == 1, "not {\"error\": string}: %s", r->body);
    ck_assert_msg(strstr(msg, want), "message '%s' lacks '%s'", msg, want);
    json_decref(j);
}

static void get(const char *path, http_resp *r)
{
    ck_assert_int_eq(http_do(dp.port, "GET", path, NULL, 0, NULL, r), 0);
}

static int post_infer(const char *path, const bytes *b, const char *header_len, http_resp *r)
{
    char h[96];
    const char *hdr[] = {NULL, NULL};
    if (header_len) {
        snprintf(h, sizeof h, "Inference-Header-Content-Length: %s", header_len);
        hdr[0] = h;
    }
    return http_do(dp.port, "POST", path, (const char *)b->p, b->len, hdr, r);
}

START_TEST(test_routes)
{
    start_or_fail(small_v2, NULL);
    http_resp r;
    get("/v2", &r);
    ck_assert_int_eq(r.status, 200);
    json_t *j = parse_json(r.body, r.len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "attnd");
    ck_assert(json_is_string(json_object_get(j, "version")));
    json_t *ext = json_object_get(j, "extensions");
    bool binary = false;
    for (size_t i = 0; i < json_array_size(ext); i++)
        binary =
            binary || strcmp(json_string_value(json_array_get(ext, i)), "binary_tensor_data") == 0;
    ck_assert_msg(binary, "extensions lack binary_tensor_data: %s", r.body);
    json_decref(j);
    http_resp_free(&r);

    static const char *const ok_empty[] = {"/v2/health/live", "/v2/health/ready",
                                           "/v2/models/encoder/ready",
                                           "/v2/models/encoder/versions/1/ready"};
    for (int i = 0; i < 4; i++) {
        get(ok_empty[i], &r);
        ck_assert_msg(r.status == 200 && r.len == 0, "%s: %ld '%s'", ok_empty[i], r.status, r.body);
        http_resp_free(&r);
    }
    static const char *const meta[] = {"/v2/models/encoder", "/v2/models/encoder/versions/1"};
    for (int i = 0; i < 2; i++) {
        get(meta[i], &r);
        ck_assert_int_eq(r.status, 200);
        j = parse_json(r.body, r.len);
        ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "encoder");
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "versions"), 0)), "1");
        json_t *in = json_object_get(j, "inputs"), *out = json_object_get(j, "outputs");
        /* the built-in model takes embeddings, token ids and text (its tokenizer and
         * seeded embedding module) */
        static const char *const inputs[] = {
            "{\"datatype\":\"FP32\",\"name\":\"embeddings\",\"shape\":[-1,-1,4]}",
            "{\"datatype\":\"INT32\",\"name\":\"lengths\",\"shape\":[-1]}",
            "{\"datatype\":\"INT32\",\"name\":\"position_ids\",\"shape\":[-1,-1]}",
            "{\"datatype\":\"INT64\",\"name\":\"input_ids\",\"shape\":[-1,-1]}",
            "{\"datatype\":\"INT64\",\"name\":\"token_type_ids\",\"shape\":[-1,-1]}",
            "{\"datatype\":\"BYTES\",\"name\":\"text\",\"shape\":[-1]}",
            "{\"datatype\":\"INT64\",\"name\":\"attention_mask\",\"shape\":[-1,-1]}"};
        ck_assert_uint_eq(json_array_size(in), sizeof inputs / sizeof *inputs);
        char *s;
        for (size_t k = 0; k < sizeof inputs / sizeof *inputs; k++) {
            s = json_dumps(json_array_get(in, k), JSON_COMPACT | JSON_SORT_KEYS);
            ck_assert_str_eq(s, inputs[k]);
            free(s);
        }
        s = json_dumps(json_array_get(out, 0), JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(s, "{\"datatype\":\"FP32\",\"name\":\"outputs\",\"shape\":[-1,-1,4]}");
        free(s);
        s = json_dumps(json_array_get(out, 1), JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(s,
                         "{\"datatype\":\"FP32\",\"name\":\"attention\",\"shape\":[-1,2,-1,-1]}");
        free(s);
        json_decref(j);
        http_resp_free(&r);
    }
    get("/v2/models/bert", &r);
    assert_v2_error(&r, 404, "unknown model 'bert'; this server serves 'encoder'");
    http_resp_free(&r);
    get("/v2/models/bert/ready", &r);
    assert_v2_error(&r, 404, "unknown model 'bert'");
    http_resp_free(&r);
    get("/v2/models/encoder/versions/2", &r);
    assert_v2_error(&r, 404, "model 'encoder' has no version '2'; its only version is 1");
    http_resp_free(&r);
    get("/v2/models/encoder/explain", &r);
    assert_v2_error(&r, 404, "no route /v2/models/encoder/explain");
    http_resp_free(&r);
    bytes b = {0};
    put_str(&b, INFER(EMB_JSON));
    ck_assert_int_eq(post_infer("/v2/models/bert/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 404, "unknown model 'bert'");
    http_resp_free(&r);
    ck_assert_int_eq(post_infer("/v2/models/encoder/versions/3/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 404, "no version '3'");
    http_resp_free(&r);
    char hv[128];
    ck_assert_int_eq(http_do(dp.port, "GET", "/v2/models/encoder/infer", NULL, 0, NULL, &r), 0);
    assert_v2_error(&r, 405, "does not accept GET; use POST");
    ck_assert_str_eq(http_header(&r, "Allow", hv, sizeof hv), "POST, OPTIONS");
    http_resp_free(&r);
    ck_assert_int_eq(post_infer("/v2/health/ready", &b, NULL, &r), 0);
    assert_v2_error(&r, 405, "use GET");
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "HEAD", "/v2/models/encoder", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    /* /v1 keeps its own error form. */
    get("/v1/nothing", &r);
    ck_assert_int_eq(r.status, 404);
    ck_assert_ptr_nonnull(strstr(r.body, "\"type\":\"not_found\""));
    http_resp_free(&r);
    /* The versioned infer route answers too. */
    ck_assert_int_eq(post_infer("/v2/models/encoder/versions/1/infer", &b, NULL, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Every malformed case through the daemon: the status and {"error": ...}. */
START_TEST(test_malformed_over_http)
{
    start_or_fail(small_v2, NULL);
    bytes b = {0};
    for (int i = 0; i < N_BAD; i++) {
        const bad_case *c = &bad_cases[i];
        char hl[32];
        const char *h = bad_body(c, &b, hl);
        http_resp r;
        ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, h, &r), 0);
        ck_assert_msg(r.status == c->status, "case %d (%.200s): %ld %.300s", i, c->json, r.status,
                      r.body);
        assert_v2_error(&r, c->status, c->want);
        http_resp_free(&r);
    }
    /* The daemon is still there and right. */
    b.len = 0;
    put_str(&b, INFER(EMB_JSON));
    http_resp r;
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* ---- the PyTorch fixtures through v2 ------------------------------------------------ */

typedef struct v2_case {
    st_file f;
    char *args[64];
    int n_args;
    int B, L, D, H, n_layers;
} v2_case;

/* Reads a fixture case and makes the daemon flags that serve its model. */
static void v2_case_load(v2_case *c, const char *name)
{
    memset(c, 0, sizeof *c);
    torch_case_open(&c->f, name);
    torch_daemon_flags(&c->f, name, c->args, &c->n_args, (int)(sizeof c->args / sizeof *c->args));
    json_t *cfg = json_loads(st_metadata(&c->f, "config"), 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    c->D = (int)json_integer_value(json_object_get(cfg, "d_model"));
    c->H = (int)json_integer_value(json_object_get(cfg, "n_heads"));
    c->n_layers = (int)json_integer_value(json_object_get(cfg, "n_layers"));
    json_decref(cfg);
    const st_tensor *x = st_find(&c->f, "x");
    c->B = (int)x->shape[0];
    c->L = (int)x->shape[1];
}

static void v2_case_free(v2_case *c)
{
    for (int i = 0; i < c->n_args; i++)
        free(c->args[i]);
    st_close(&c->f);
}

/* A nested JSON array of a tensor (bool when as_bool). */
static json_t *nested(const float *v, const int64_t *dims, int ndim, bool as_bool)
{
    json_t *a = json_array();
    size_t stride = 1;
    for (int k = 1; k < ndim; k++)
        stride *= (size_t)dims[k];
    for (int64_t i = 0; i < dims[0]; i++)
        json_array_append_new(a, ndim == 1
                                     ? (as_bool ? json_boolean(v[i] != 0) : json_real(v[i]))
                                     : nested(v + (size_t)i * stride, dims + 1, ndim - 1, as_bool));
    return a;
}

/* How a request sends embeddings / lengths and asks for outputs. */
typedef enum { SEND_NESTED, SEND_FLAT, SEND_BINARY } send_mode;

/* An infer request for a fixture case, written from the protocol: the JSON
 * header (inputs, the case's mask as request parameters, attention mode,
 * requested outputs), then any binary tensors in input order.  Returns the
 * header length as text in hl when binary data follows (else NULL). */
static const char *case_request(const v2_case *c, send_mode emb, send_mode len, bool mean,
                                bool bin_out, bytes *b, char hl[32])
{
    json_t *root = json_object(), *inputs = json_array(), *params = json_object();
    const st_tensor *tx = st_find(&c->f, "x");
    size_t nx = 0, nl = 0;
    float *x = torch_floats(&c->f, "x", &nx);
    float *lengths = torch_floats(&c->f, "lengths", &nl);
    json_t *e = json_pack("{s:s, s:s, s:[i,i,i]}", "name", "embeddings", "datatype", "FP32",
                          "shape", c->B, c->L, c->D);
    if (emb == SEND_BINARY)
        json_object_set_new(e, "parameters",
                            json_pack("{s:I}", "binary_data_size", (json_int_t)(nx * 4)));
    else if (emb == SEND_NESTED)
        json_object_set_new(e, "data", nested(x, tx->shape, 3, false));
    else {
        int64_t flat = (int64_t)nx;
        json_object_set_new(e, "data", nested(x, &flat, 1, false));
    }
    json_array_append_new(inputs, e);
    if (lengths) {
        json_t *l =
            json_pack("{s:s, s:s, s:[i]}", "name", "lengths", "datatype", "INT32", "shape", c->B);
        if (len == SEND_BINARY)
            json_object_set_new(l, "parameters",
                                json_pack("{s:I}", "binary_data_size", (json_int_t)(nl * 4)));
        else {
            json_t *a = json_array();
            for (size_t i = 0; i < nl; i++)
                json_array_append_new(a, json_integer((json_int_t)lengths[i]));
            json_object_set_new(l, "data", a);
        }
        /* lengths first, so the binary data's order is the inputs' order */
        json_array_insert_new(inputs, 0, l);
    }
    json_object_set_new(root, "id", json_string("fixture"));
    json_object_set_new(root, "inputs", inputs);

    /* The case's mask: {"causal", "window": null | {"left", "right"}, "global"}. */
    json_t *mask = json_loads(st_metadata(&c->f, "mask"), 0, NULL);
    if (json_is_true(json_object_get(mask, "causal")))
        json_object_set_new(params, "causal", json_true());
    json_t *w = json_object_get(mask, "window");
    if (json_is_object(w)) { /* the scalar form */
        json_t *left = json_object_get(w, "left"), *right = json_object_get(w, "right");
        if (json_is_integer(left))
            json_object_set(params, "window_left", left);
        if (json_is_integer(right))
            json_object_set(params, "window_right", right);
    }
    json_t *g = json_object_get(mask, "global");
    if (json_array_size(g)) { /* as a string holding JSON, as scalar-only clients send it */
        char *s = json_dumps(g, JSON_COMPACT);
        json_object_set_new(params, "global", json_string(s));
        free(s);
    }
    static const char *const patterns[] = {"strided", "fixed", "blocks"};
    for (int k = 0; k < 3; k++) { /* objects, as they are */
        json_t *o = json_object_get(mask, patterns[k]);
        if (o)
            json_object_set(params, patterns[k], o);
    }
    json_decref(mask);
    static const char *const tensors[] = {"key_padding", "attn_bool", "attn_add"};
    for (int k = 0; k < 3; k++) {
        const st_tensor *t = st_find(&c->f, tensors[k]);
        if (!t)
            continue;
        float *m = torch_floats(&c->f, tensors[k], NULL);
        json_object_set_new(params, k == 0 ? "key_padding" : "attn",
                            nested(m, t->shape, t->ndim, k < 2));
        free(m);
    }
    json_object_set_new(params, "attention", json_string(mean ? "mean" : "heads"));
    json_object_set_new(root, "parameters", params);
    /* Ask for attention first and outputs second: the response keeps that order. */
    json_object_set_new(root, "outputs",
                        json_pack("[{s:s, s:{s:b}}, {s:s, s:{s:b}}]", "name", "attention",
                                  "parameters", "binary_data", bin_out, "name", "outputs",
                                  "parameters", "binary_data", bin_out));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    b->len = 0;
    put_str(b, text);
    size_t header = strlen(text);
    free(text);
    if (lengths && len == SEND_BINARY)
        for (size_t i = 0; i < nl; i++)
            put_le32(b, (uint32_t)(int32_t)lengths[i]);
    if (emb == SEND_BINARY)
        for (size_t i = 0; i < nx; i++)
            put_f32(b, x[i]);
    free(x);
    free(lengths);
    if (header == b->len)
        return NULL;
    snprintf(hl, 32, "%zu", header);
    return hl;
}

/* One output of a response, decoded from JSON data or from the binary data
 * after the header (owned floats, n of them). */
typedef struct got_output {
    float *v;
    size_t n;
    int64_t shape[4];
    int rank;
    bool binary;
} got_output;

/* Decodes a 200 response as the protocol lays it out; out[0] = attention,
 * out[1] = outputs (the order the requests ask for). */
static void decode_response(const http_resp *r, got_output out[2])
{
    char hv[32];
    size_t header = r->len;
    if (http_header(r, "Inference-Header-Content-Length", hv, sizeof hv)) {
        header = (size_t)strtoull(hv, NULL, 10);
        ck_assert_uint_le(header, r->len);
    }
    json_t *j = parse_json(r->body, header);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "fixture");
    ck_assert_str_eq(json_string_value(json_object_get(j, "model_version")), "1");
    json_t *outs = json_object_get(j, "outputs");
    ck_assert_uint_eq(json_array_size(outs), 2);
    static const char *const names[] = {"attention", "outputs"};
    size_t at = header;
    for (int k = 0; k < 2; k++) {
        json_t *o = json_array_get(outs, (size_t)k);
        got_output *g = &out[k];
        memset(g, 0, sizeof *g);
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), names[k]);
        ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
        json_t *shape = json_object_get(o, "shape");
        g->rank = (int)json_array_size(shape);
        g->n = 1;
        for (int d = 0; d < g->rank; d++) {
            g->shape[d] = json_integer_value(json_array_get(shape, (size_t)d));
            g->n *= (size_t)g->shape[d];
        }
        g->v = xcalloc(g->n, sizeof *g->v);
        json_t *size = json_object_get(json_object_get(o, "parameters"), "binary_data_size");
        if (size) {
            g->binary = true;
            ck_assert_int_eq(json_integer_value(size), (json_int_t)(g->n * 4));
            ck_assert_uint_le(at + g->n * 4, r->len);
            for (size_t i = 0; i < g->n; i++)
                g->v[i] = get_f32((const unsigned char *)r->body + at + 4 * i);
            at += g->n * 4;
        } else {
            json_t *data = json_object_get(o, "data");
            ck_assert_uint_eq(json_array_size(data), g->n);
            for (size_t i = 0; i < g->n; i++)
                g->v[i] = (float)json_number_value(json_array_get(data, i));
        }
    }
    ck_assert_uint_eq(at, r->len); /* every byte accounted for */
    json_decref(j);
}

static const char *const v2_cases[] = {
    "layer_post_relu",   "mask_combined",   "mask_lengths",       "stack3_post_gelu",
    "gqa_kv2",           "mask_window_lr",  "mask_window_global", "mask_attn_add_3d",
    "mask_attn_bool_2d", "mask_key_padding"};

/* A fixture case through v2: nested JSON, flat JSON, binary both ways, and
 * mixed; heads and mean; each result within 1e-4 of PyTorch's. */
START_TEST(test_torch_fixtures)
{
    v2_case c;
    v2_case_load(&c, v2_cases[_i]);
    start_or_fail((const char *const *)c.args, NULL);
    static const struct {
        send_mode emb, len;
        bool mean, bin_out;
    } forms[] = {
        {SEND_NESTED, SEND_FLAT, false, false},  {SEND_FLAT, SEND_FLAT, true, false},
        {SEND_BINARY, SEND_BINARY, false, true}, {SEND_BINARY, SEND_FLAT, true, true},
        {SEND_FLAT, SEND_BINARY, false, true},
    };
    bytes b = {0};
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        char hl[32];
        const char *h =
            case_request(&c, forms[f].emb, forms[f].len, forms[f].mean, forms[f].bin_out, &b, hl);
        http_resp r;
        ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, h, &r), 0);
        ck_assert_msg(r.status == 200, "%s form %zu: %ld %.300s", v2_cases[_i], f, r.status,
                      r.body);
        char ct[64];
        ck_assert_str_eq(http_header(&r, "Content-Type", ct, sizeof ct),
                         forms[f].bin_out ? "application/octet-stream" : "application/json");
        got_output g[2];
        decode_response(&r, g);
        ck_assert(g[0].binary == forms[f].bin_out && g[1].binary == forms[f].bin_out);

        size_t n = 0;
        float *want = torch_floats(&c.f, "out", &n);
        ck_assert_int_eq(g[1].rank, 3);
        ck_assert(g[1].shape[0] == c.B && g[1].shape[1] == c.L && g[1].shape[2] == c.D);
        ck_assert_uint_eq(g[1].n, n);
        double d = max_abs_diff(g[1].v, want, n);
        ck_assert_msg(d <= 1e-4, "%s form %zu: outputs differ from PyTorch by %g", v2_cases[_i], f,
                      d);
        free(want);

        char key[32];
        snprintf(key, sizeof key, forms[f].mean ? "attn_mean.%d" : "attn.%d", c.n_layers - 1);
        want = torch_floats(&c.f, key, &n);
        ck_assert_int_eq(g[0].rank, forms[f].mean ? 3 : 4);
        ck_assert(g[0].shape[0] == c.B && g[0].shape[g[0].rank - 1] == c.L);
        if (!forms[f].mean)
            ck_assert_int_eq(g[0].shape[1], c.H);
        ck_assert_uint_eq(g[0].n, n);
        d = max_abs_diff(g[0].v, want, n);
        ck_assert_msg(d <= 1e-4, "%s form %zu: attention differs from PyTorch by %g", v2_cases[_i],
                      f, d);
        free(want);
        free(g[0].v);
        free(g[1].v);
        http_resp_free(&r);
    }
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    v2_case_free(&c);
}
END_TEST

/* ---- token ids: the Hugging Face fixtures over HTTP ------------------------- */

typedef enum ids_send { IDS_JSON32, IDS_JSON64, IDS_BIN32, IDS_BIN64 } ids_send;

/* One integer input of the fixture's (B, L) (or [B] for lengths) values:
 * JSON (nested for INT32, flat for INT64) or binary, appended to bin. */
static void ids_input(json_t *inputs, bytes *bin, const char *name, const int32_t *v, size_t n,
                      json_t *shape, ids_send how, bool int64)
{
    json_t *in = json_pack("{s:s, s:s, s:o}", "name", name, "datatype", int64 ? "INT64" : "INT32",
                           "shape", shape);
    if (how == IDS_BIN32 || how == IDS_BIN64) {
        json_object_set_new(
            in, "parameters",
            json_pack("{s:I}", "binary_data_size", (json_int_t)(n * (int64 ? 8 : 4))));
        for (size_t k = 0; k < n; k++) {
            put_le32(bin, (uint32_t)v[k]);
            if (int64)
                put_le32(bin, v[k] < 0 ? 0xffffffffu : 0);
        }
    } else {
        json_t *data = json_array();
        const size_t cols =
            json_array_size(shape) == 2 ? (size_t)json_integer_value(json_array_get(shape, 1)) : n;
        json_t *row = NULL;
        for (size_t k = 0; k < n; k++) {
            if (how == IDS_JSON32 && cols < n && k % cols == 0) /* nested as the shape */
                json_array_append_new(data, row = json_array());
            json_array_append_new(how == IDS_JSON32 && cols < n ? row : data, json_integer(v[k]));
        }
        json_object_set_new(in, "data", data);
    }
    json_array_append_new(inputs, in);
}

/* The fixture through /v2 infer from ids, four ways: JSON INT32 with
 * lengths, JSON INT64 with attention_mask and binary outputs, binary INT32
 * with lengths, binary INT64 with attention_mask (and position_ids where
 * the fixture has them); outputs and the last layer's weights, dense with
 * zero padding, within 1e-4 of the references. */
START_TEST(test_infer_ids_hf)
{
    ids_fx c;
    ids_fx_load(&c, ids_fx_dir(_i));
    start_or_fail((const char *const[]){"--model-dir", c.dir, NULL}, NULL);
    http_resp r;
    get("/v2/models/encoder", &r);
    ck_assert_int_eq(r.status, 200);
    json_t *meta = parse_json(r.body, r.len);
    bool has_ids = false, has_types = false;
    json_t *mins = json_object_get(meta, "inputs");
    for (size_t k = 0; k < json_array_size(mins); k++) {
        const char *n = json_string_value(json_object_get(json_array_get(mins, k), "name"));
        has_ids |= strcmp(n, "input_ids") == 0;
        has_types |= strcmp(n, "token_type_ids") == 0;
    }
    ck_assert_msg(has_ids, "%s: metadata lacks input_ids: %s", c.name, r.body);
    if (c.token_type_ids)
        ck_assert_msg(has_types, "%s: metadata lacks token_type_ids: %s", c.name, r.body);
    json_decref(meta);
    http_resp_free(&r);

    const size_t BL = (size_t)c.B * (size_t)c.L;
    int32_t *mask = xcalloc(BL, sizeof *mask);
    for (int b = 0; b < c.B; b++)
        for (int i = 0; i < c.lengths[b]; i++)
            mask[(size_t)b * c.L + i] = 1;
    float *out = ids_fx_want(&c, -1), *last = ids_fx_want(&c, c.n_layers - 1);
    bytes b = {0}, bin = {0};
    for (int how = IDS_JSON32; how <= IDS_BIN64; how++) {
        const bool int64 = how == IDS_JSON64 || how == IDS_BIN64;
        const bool use_mask = how == IDS_JSON64 || how == IDS_BIN64;
        const bool bin_out = how == IDS_JSON64 || how == IDS_BIN32;
        json_t *root = json_pack("{s:s}", "id", "fixture");
        json_t *inputs = json_array();
        bin.len = 0;
        ids_input(inputs, &bin, "input_ids", c.input_ids, BL, json_pack("[i,i]", c.B, c.L),
                  (ids_send)how, int64);
        if (c.token_type_ids)
            ids_input(inputs, &bin, "token_type_ids", c.token_type_ids, BL,
                      json_pack("[i,i]", c.B, c.L), (ids_send)how, int64);
        if (use_mask)
            ids_input(inputs, &bin, "attention_mask", mask, BL, json_pack("[i,i]", c.B, c.L),
                      (ids_send)how, int64);
        else
            ids_input(inputs, &bin, "lengths", c.lengths, (size_t)c.B, json_pack("[i]", c.B),
                      how == IDS_BIN32 ? IDS_BIN32 : IDS_JSON64, false);
        if (c.position_ids)
            ids_input(inputs, &bin, "position_ids", c.position_ids, BL,
                      json_pack("[i,i]", c.B, c.L), how >= IDS_BIN32 ? IDS_BIN32 : IDS_JSON32,
                      false);
        json_object_set_new(root, "inputs", inputs);
        json_object_set_new(root, "outputs",
                            json_pack("[{s:s, s:{s:b}}, {s:s, s:{s:b}}]", "name", "attention",
                                      "parameters", "binary_data", bin_out, "name", "outputs",
                                      "parameters", "binary_data", bin_out));
        char *text = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        b.len = 0;
        put_str(&b, text);
        char hl[32];
        snprintf(hl, sizeof hl, "%zu", strlen(text));
        free(text);
        if (bin.len)
            put(&b, bin.p, bin.len);
        ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, bin.len ? hl : NULL, &r), 0);
        ck_assert_msg(r.status == 200, "%s way %d: %ld %.300s", c.name, how, r.status, r.body);
        got_output g[2];
        decode_response(&r, g);
        ck_assert(g[1].rank == 3 && g[1].shape[0] == c.B && g[1].shape[1] == c.L &&
                  g[1].shape[2] == c.D);
        double d = max_abs_diff(g[1].v, out, BL * (size_t)c.D);
        ck_assert_msg(d <= 1e-4, "%s way %d: outputs differ from the reference by %g", c.name, how,
                      d);
        ck_assert(g[0].rank == 4 && g[0].shape[1] == c.H);
        d = max_abs_diff(g[0].v, last, BL * (size_t)c.H * (size_t)c.L);
        ck_assert_msg(d <= 1e-4, "%s way %d: attention differs from the reference by %g", c.name,
                      how, d);
        free(g[0].v);
        free(g[1].v);
        http_resp_free(&r);
    }
    /* INT64 outside int32, and an id outside the vocabulary: 400 naming them */
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,2],"
                "\"data\":[1,4294967297]}]}");
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 400,
                    "inputs[0] (input_ids): data[1] = 4294967297 is outside the INT32 "
                    "range");
    http_resp_free(&r);
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT32\",\"shape\":[1,2],"
                "\"data\":[1,-1]}]}");
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 400, "inputs[0] (input_ids)[0][1] = -1 is outside 0..");
    http_resp_free(&r);
    free(b.p);
    free(bin.p);
    free(mask);
    free(out);
    free(last);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    ids_fx_free(&c);
}
END_TEST

/* A request written out literally, as in Triton's binary extension document:
 * binary input, one output asked for in binary, the other not asked for. */
START_TEST(test_literal_binary_exchange)
{
    v2_case c;
    v2_case_load(&c, "layer_post_relu");
    start_or_fail((const char *const *)c.args, NULL);
    size_t nx = 0;
    float *x = torch_floats(&c.f, "x", &nx);
    ck_assert_uint_eq(nx, 2 * 6 * 16);
    bytes b = {0};
    const char *json = "{\"model_name\":\"encoder\",\"inputs\":[{\"name\":\"embeddings\","
                       "\"shape\":[2,6,16],\"datatype\":\"FP32\",\"parameters\":{"
                       "\"binary_data_size\":768}}],\"outputs\":[{\"name\":\"outputs\","
                       "\"parameters\":{\"binary_data\":true}}]}";
    put_str(&b, json);
    for (size_t i = 0; i < nx; i++)
        put_f32(&b, x[i]);
    char hl[32];
    snprintf(hl, sizeof hl, "%zu", strlen(json));
    http_resp r;
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, hl, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    /* attention_scores: no mask, so B L^2 H per layer */
    char want_json[256];
    snprintf(want_json, sizeof want_json,
             "{\"model_name\":\"encoder\",\"model_version\":\"1\",\"parameters\":{"
             "\"attention_scores\":%d},\"outputs\":[{\"name\":\"outputs\",\"datatype\":\"FP32\","
             "\"shape\":[2,6,16],\"parameters\":{\"binary_data_size\":768}}]}",
             2 * 6 * 6 * c.H * c.n_layers);
    char hv[32];
    ck_assert_ptr_nonnull(http_header(&r, "Inference-Header-Content-Length", hv, sizeof hv));
    ck_assert_uint_eq(strtoull(hv, NULL, 10), strlen(want_json));
    ck_assert_uint_eq(r.len, strlen(want_json) + 768);
    ck_assert_msg(memcmp(r.body, want_json, strlen(want_json)) == 0, "%.*s", (int)strlen(want_json),
                  r.body);
    float *want = torch_floats(&c.f, "out", NULL);
    float got[192];
    for (int i = 0; i < 192; i++)
        got[i] = get_f32((const unsigned char *)r.body + strlen(want_json) + 4 * i);
    ck_assert_double_le(max_abs_diff(got, want, 192), 1e-4);
    free(want);
    free(x);
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    v2_case_free(&c);
}
END_TEST

/* Limits and the body size are 413 {"error"}; the API key guards infer but
 * not the health routes; /metrics counts the v2 routes. */
START_TEST(test_limits_auth_metrics)
{
    static const char *const args[] = {"--d-model",
                                       "4",
                                       "--n-heads",
                                       "2",
                                       "--d-ff",
                                       "8",
                                       "--max-batch",
                                       "2",
                                       "--max-attention-bytes",
                                       "64",
                                       "--max-body-bytes",
                                       "2048",
                                       "--api-key",
                                       "k3y",
                                       NULL};
    start_or_fail(args, NULL);
    static const char *const auth[] = {"Authorization: Bearer k3y", NULL};
    http_resp r;
    bytes b = {0};
    put_str(&b, INFER(EMB_JSON));
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 401, "missing or wrong API key");
    http_resp_free(&r);
    get("/v2/health/live", &r);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    get("/v2/health/ready", &r);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    get("/v2/models/encoder", &r);
    assert_v2_error(&r, 401, "API key");
    http_resp_free(&r);

    /* 1 x 2 x 2 x 2 heads x 4 bytes = 32 bytes of attention: allowed. */
    ck_assert_int_eq(
        http_do(dp.port, "POST", "/v2/models/encoder/infer", (const char *)b.p, b.len, auth, &r),
        0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    http_resp_free(&r);
    /* 1 x 2 heads x 3 x 3 x 4 = 72 bytes: over, unless only outputs are asked for. */
    const char *over = INFER(EMB_IN("FP32", "[1,3,4]", "[1,2,3,4,5,6,7,8,9,10,11,12]"));
    ck_assert_int_eq(
        http_do(dp.port, "POST", "/v2/models/encoder/infer", over, strlen(over), auth, &r), 0);
    assert_v2_error(&r, 413, "over limits.max_attention_bytes (64)");
    http_resp_free(&r);
    const char *outputs_only = "{\"inputs\":[" EMB_IN(
        "FP32", "[1,3,4]",
        "[1,2,3,4,5,6,7,8,9,10,11,12]") "],\"outputs\":[{\"name\":\"outputs\"}]}";
    ck_assert_int_eq(http_do(dp.port, "POST", "/v2/models/encoder/infer", outputs_only,
                             strlen(outputs_only), auth, &r),
                     0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    json_t *j = parse_json(r.body, r.len);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 1);
    json_decref(j);
    http_resp_free(&r);
    const char *batch3 = INFER(EMB_IN("FP32", "[3,1,4]", "[1,2,3,4,5,6,7,8,9,10,11,12]"));
    ck_assert_int_eq(
        http_do(dp.port, "POST", "/v2/models/encoder/infer", batch3, strlen(batch3), auth, &r), 0);
    assert_v2_error(&r, 413, "batch of 3 sequences is over limits.max_batch (2)");
    http_resp_free(&r);
    char *big = xcalloc(4096, 1);
    memset(big, ' ', 4095);
    ck_assert_int_eq(http_do(dp.port, "POST", "/v2/models/encoder/infer", big, 4095, auth, &r), 0);
    assert_v2_error(&r, 413, "over server.max_body_bytes (2048 bytes)");
    http_resp_free(&r);
    free(big);

    /* A request is counted when the daemon has finished it, which may be a
     * moment after its client has the whole response, and not in the order
     * they were sent (two HTTP threads): look until every count is there. */
    for (int tries = 0;; tries++) {
        ck_assert_int_eq(http_do(dp.port, "GET", "/metrics", NULL, 0, auth, &r), 0);
        if (tries == 250 ||
            (strstr(r.body,
                    "attnd_requests_total{route=\"/v2/models/{name}/infer\",status=\"413\"} 3") &&
             strstr(r.body,
                    "attnd_requests_total{route=\"/v2/models/{name}/infer\",status=\"200\"} 2") &&
             strstr(r.body, "attnd_requests_total{route=\"/v2/health/live\",status=\"200\"} 1")))
            break;
        http_resp_free(&r);
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    const char *line = strstr(r.body, "attnd_requests_total{route=\"/v2/models/{name}/infer\"");
    ck_assert_msg(strstr(r.body, "attnd_requests_total{route=\"/v2/models/{name}/infer\","
                                 "status=\"200\"} 2"),
                  "%.300s", line ? line : "no infer line");
    ck_assert(strstr(r.body, "attnd_requests_total{route=\"/v2/health/live\",status=\"200\"} 1"));
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *v2_suite(void)
{
    Suite *s = timed_suite("v2");
    TCase *tc = timed_case(s, "daemon", 120);
    tcase_add_test(tc, test_routes);
    tcase_add_test(tc, test_malformed_over_http);
    tcase_add_loop_test(tc, test_torch_fixtures, 0, (int)(sizeof v2_cases / sizeof *v2_cases));
    tcase_add_test(tc, test_literal_binary_exchange);
    tcase_add_loop_test(tc, test_infer_ids_hf, 0, ids_fx_count());
    tcase_add_test(tc, test_limits_auth_metrics);
    return s;
}
