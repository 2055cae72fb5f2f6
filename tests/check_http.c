/* check_http.c - the real build/attnd on an ephemeral 127.0.0.1 port,
 * spoken to over HTTP: its routes (health, model, OpenAPI, metrics),
 * /v1/encode against the PyTorch fixtures and the Hugging Face fixtures'
 * ids, dynamic batching, and the errors (statuses, the invalid-request
 * directory, the API key, CORS, the access log).  Numeric results are
 * checked against the PyTorch fixtures, never against the core's own output.
 * The daemon's start-up and shutdown: check_lifecycle.c. */
#include "daemon.h"
#include "hf_util.h"
#include "codec/base64.h"
#include "protocol/api.h"
#include "protocol/v1.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"
#include "v1_util.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INVALID_DIR TESTS_DIR "/fixtures/requests/invalid"

/* ---- the routes ---------------------------------------------------------- */

START_TEST(test_health_and_request_id)
{
    start_or_fail(small_model, NULL);
    http_resp r;
    char buf[256];
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"status\":\"ok\"}");
    ck_assert_ptr_nonnull(http_header(&r, "X-Request-Id", buf, sizeof buf));
    ck_assert_uint_ge(strlen(buf), 8);
    http_resp_free(&r);
    static const char *const given[] = {"X-Request-Id: my-trace.42", NULL};
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, given, &r), 0);
    ck_assert_str_eq(http_header(&r, "X-Request-Id", buf, sizeof buf), "my-trace.42");
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_model_route)
{
    start_or_fail(small_model, (const char *const[]){"ATTND_MAX_BATCH=7", NULL});
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = http_json_body(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "encoder");
    json_t *hp = json_object_get(j, "hyperparameters");
    ck_assert_int_eq(json_integer_value(json_object_get(hp, "d_model")), 16);
    ck_assert_int_eq(json_integer_value(json_object_get(hp, "n_heads")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(hp, "n_kv_heads")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(hp, "d_ff")), 32);
    ck_assert_str_eq(json_string_value(json_object_get(hp, "activation")), "relu");
    /* D=16, F=32, bias: in_proj 48*16+48, out 256+16, ff 512+32+512+16, norms 64 */
    ck_assert_int_eq(json_integer_value(json_object_get(j, "parameters")),
                     768 + 48 + 256 + 16 + 512 + 32 + 512 + 16 + 64);
    json_t *w = json_object_get(j, "weights");
    ck_assert_str_eq(json_string_value(json_object_get(w, "source")), "seed:3");
    ck_assert(json_is_null(json_object_get(w, "sha256")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "limits"), "max_batch")),
                     7);
    json_decref(j);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* The value under a NULL-terminated list of object keys, or NULL. */
static json_t *json_at(json_t *j, ...)
{
    va_list ap;
    va_start(ap, j);
    for (const char *key; j && (key = va_arg(ap, const char *));)
        j = json_object_get(j, key);
    va_end(ap);
    return j;
}

START_TEST(test_openapi_and_version)
{
    start_or_fail(small_model, NULL);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/openapi.json", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = http_json_body(&r);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "openapi")), "3."));
    json_t *paths = json_object_get(j, "paths");
    const char *routes[] = {"/v1/encode", "/health", "/v1/model", "/metrics", "/openapi.json"};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(json_object_get(paths, routes[i]), "openapi lacks %s", routes[i]);
    ck_assert(json_object_get(json_object_get(paths, "/v1/encode"), "post"));
    char *out = NULL;
    ck_assert_int_eq(run_attnd((const char *const[]){"--version", NULL}, NULL, &out), 0);
    const char *v = json_string_value(json_object_get(json_object_get(j, "info"), "version"));
    ck_assert_msg(strstr(out, v), "--version '%s' differs from openapi's '%s'", out, v);
    free(out);
    /* The error types it lists are api.h's table, in its order. */
    json_t *types = json_at(j, "components", "schemas", "Error", "properties", "error",
                            "properties", "type", "enum", NULL);
    static const api_error_kind kinds[] = {
#define KIND(name, status, type) API_##name,
        API_ERROR_MAP(KIND)
#undef KIND
    };
    const size_t n_kinds = sizeof kinds / sizeof kinds[0];
    ck_assert_uint_eq(json_array_size(types), n_kinds);
    for (size_t k = 0; k < n_kinds; k++)
        ck_assert_str_eq(json_string_value(json_array_get(types, k)), api_error_type(kinds[k]));
    json_decref(j);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_metrics_count_requests)
{
    start_or_fail(small_model, NULL);
    http_resp r;
    const char *body = "{\"embeddings\": [[0.5,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"
                       "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]]}";
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
        ck_assert_int_eq(r.status, 200);
        http_resp_free(&r);
    }
    http_do(dp.port, "GET", "/nope", NULL, 0, NULL, &r);
    http_resp_free(&r);
    /* Every route is counted by its path (the route table's), whatever its
     * answer: these refuse (no tokenizer, no head) or answer. */
    static const char *const posts[] = {"/v1/tokenize", "/v1/embeddings", "/v1/predict"};
    for (size_t i = 0; i < sizeof posts / sizeof *posts; i++) {
        ck_assert_int_eq(http_post_json(dp.port, posts[i], "{\"input\": 1}", &r), 0);
        ck_assert_int_eq(r.status, 400);
        http_resp_free(&r);
    }
    static const char *const gets[] = {"/", "/v1/models", "/v1/models/encoder"};
    for (size_t i = 0; i < sizeof gets / sizeof *gets; i++) {
        ck_assert_int_eq(http_do(dp.port, "GET", gets[i], NULL, 0, NULL, &r), 0);
        ck_assert_int_eq(r.status, 200);
        http_resp_free(&r);
    }
    const char *want[] = {"attnd_requests_total{route=\"/v1/encode\",status=\"200\"} 3\n",
                          "attnd_requests_total{route=\"other\",status=\"404\"} 1\n",
                          "attnd_requests_total{route=\"/v1/tokenize\",status=\"400\"} 1\n",
                          "attnd_requests_total{route=\"/v1/embeddings\",status=\"400\"} 1\n",
                          "attnd_requests_total{route=\"/v1/predict\",status=\"400\"} 1\n",
                          "attnd_requests_total{route=\"/\",status=\"200\"} 1\n",
                          "attnd_requests_total{route=\"/v1/models\",status=\"200\"} 1\n",
                          "attnd_requests_total{route=\"/v1/models/{model}\",status=\"200\"} 1\n",
                          "attnd_tokens_total 6\n",
                          "attnd_sequences_total 3\n",
                          "attnd_batch_sequences_count 3\n",
                          "attnd_compute_duration_seconds_count 3\n",
                          "attnd_queue_duration_seconds_bucket{le=\"+Inf\"} 3\n",
                          "# TYPE attnd_request_duration_seconds histogram\n",
                          "attnd_forwards_ahead_total 0\n", /* one at a time */
                          "attnd_requests_in_flight 1\n",   /* this request */
                          "attnd_queue_depth 0\n"};
    const size_t n_want = sizeof want / sizeof *want;
    /* A request is counted when libmicrohttpd reports it completed, just
     * after its response went out: the client can ask /metrics first.  So
     * ask again (for at most 5 s) until the counts settle. */
    size_t missing = 0;
    for (int attempt = 0; attempt < 250; attempt++) {
        if (attempt > 0) {
            http_resp_free(&r);
            usleep(20000);
        }
        ck_assert_int_eq(http_do(dp.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
        ck_assert_int_eq(r.status, 200);
        for (missing = 0; missing < n_want && strstr(r.body, want[missing]); missing++)
            ;
        if (missing == n_want)
            break;
    }
    char ct[128];
    ck_assert_ptr_nonnull(strstr(http_header(&r, "Content-Type", ct, sizeof ct), "text/plain"));
    ck_assert_msg(missing == n_want, "metrics lack '%s':\n%.2000s",
                  want[missing < n_want ? missing : 0], r.body);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* ---- /v1/encode against PyTorch ----------------------------------------- */

/* A fixture case: the daemon's flags for its model, and a request body. */
typedef struct http_case {
    st_file f;
    char *args[64];
    int n_args;
    int B, L, D, H, n_layers;
    int *lengths;
} http_case;

/* Reads a case and makes the daemon flags that serve its model. */
static void http_case_load(http_case *c, const char *name)
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

static void http_case_free(http_case *c)
{
    for (int i = 0; i < c->n_args; i++)
        free(c->args[i]);
    free(c->lengths);
    st_close(&c->f);
}

/* A nested JSON array of the float tensor (dims dims, bool when as_bool). */
static json_t *nested(const float *v, const int64_t *dims, int ndim, int as_bool)
{
    json_t *a = json_array();
    size_t stride = 1;
    for (int k = 1; k < ndim; k++)
        stride *= (size_t)dims[k];
    for (int64_t i = 0; i < dims[0]; i++) {
        if (ndim == 1)
            json_array_append_new(a, as_bool ? json_boolean(v[i] != 0) : json_real(v[i]));
        else
            json_array_append_new(a, nested(v + (size_t)i * stride, dims + 1, ndim - 1, as_bool));
    }
    return a;
}

/* The /v1/encode body for a case: embeddings (or embeddings_b64) and its mask. */
static char *http_case_body(http_case *c, const char *extra_json)
{
    json_t *body = extra_json ? json_loads(extra_json, 0, NULL) : json_object();
    const st_tensor *tx = st_find(&c->f, "x");
    float *x = torch_floats(&c->f, "x", NULL);
    json_object_set_new(body, "embeddings", nested(x, tx->shape, 3, 0));
    free(x);
    size_t n;
    float *v = torch_floats(&c->f, "lengths", &n);
    if (v) {
        json_t *a = json_array();
        c->lengths = xcalloc(n, sizeof *c->lengths);
        for (size_t i = 0; i < n; i++) {
            c->lengths[i] = (int)v[i];
            json_array_append_new(a, json_integer((json_int_t)v[i]));
        }
        json_object_set_new(body, "lengths", a);
        free(v);
    }
    json_t *mask = json_loads(st_metadata(&c->f, "mask"), 0, NULL);
    if (json_is_null(json_object_get(mask, "window")))
        json_object_del(mask, "window");
    const char *names[] = {"key_padding", "attn_bool", "attn_add"};
    for (int k = 0; k < 3; k++) {
        const st_tensor *t = st_find(&c->f, names[k]);
        if (!t)
            continue;
        float *m = torch_floats(&c->f, names[k], NULL);
        json_object_set_new(mask, k == 0 ? "key_padding" : "attn",
                            nested(m, t->shape, t->ndim, k < 2));
        free(m);
    }
    json_object_set_new(body, "mask", mask);
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return s;
}

/* Compares a response array (ragged per sequence with lengths) with the
 * fixture's padded tensor want (B, [H,] L, ...). */
static void compare_seq(json_t *got, const float *want, const http_case *c, int per_head,
                        int last_is_L, const char *what)
{
    ck_assert_msg(json_array_size(got) == (size_t)c->B, "%s: %zu sequences", what,
                  json_array_size(got));
    const int H = per_head ? c->H : 1, L = c->L, W = last_is_L ? c->L : c->D;
    double worst = 0;
    for (int b = 0; b < c->B; b++) {
        const int len = c->lengths ? c->lengths[b] : L;
        json_t *seq = json_array_get(got, (size_t)b);
        for (int h = 0; h < H; h++) {
            json_t *mat = per_head ? json_array_get(seq, (size_t)h) : seq;
            ck_assert_msg(json_array_size(mat) == (size_t)len, "%s: seq %d has %zu rows", what, b,
                          json_array_size(mat));
            for (int i = 0; i < len; i++) {
                json_t *row = json_array_get(mat, (size_t)i);
                int wlen = last_is_L ? len : W;
                ck_assert_msg(json_array_size(row) == (size_t)wlen, "%s: row width %zu", what,
                              json_array_size(row));
                for (int k = 0; k < wlen; k++) {
                    double g = json_number_value(json_array_get(row, (size_t)k));
                    double w = want[(((size_t)b * H + h) * L + i) * W + k];
                    if (fabs(g - w) > worst)
                        worst = fabs(g - w);
                }
            }
        }
    }
    ck_assert_msg(worst <= 1e-4, "%s differs from PyTorch by %g", what, worst);
}

static const char *const http_cases[] = {"layer_post_relu",    "mask_combined",   "mask_lengths",
                                         "stack3_post_gelu",   "gqa_kv2",         "weights_bf16",
                                         "mask_window_global", "mask_attn_add_3d"};

START_TEST(test_encode_matches_torch)
{
    http_case c;
    http_case_load(&c, http_cases[_i]);
    c.args[c.n_args] = NULL;
    start_or_fail((const char *const *)c.args, NULL);
    for (int mode = 0; mode < 2; mode++) {
        const char *extra = mode == 0 ? "{\"attention\": \"heads\", \"attention_layers\": \"all\"}"
                                      : "{\"attention\": \"mean\"}";
        char *body = http_case_body(&c, extra);
        http_resp r;
        ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
        ck_assert_msg(r.status == 200, "%s: %ld %.300s", http_cases[_i], r.status, r.body);
        json_t *j = http_json_body(&r);
        float *want = torch_floats(&c.f, "out", NULL);
        compare_seq(json_object_get(j, "outputs"), want, &c, 0, 0, "outputs");
        free(want);
        char key[32];
        snprintf(key, sizeof key, mode == 0 ? "attn.%d" : "attn_mean.%d", c.n_layers - 1);
        want = torch_floats(&c.f, key, NULL);
        compare_seq(json_object_get(j, "attention"), want, &c, mode == 0, 1, "attention");
        free(want);
        if (mode == 0) {
            json_t *layers = json_object_get(j, "attention_layers");
            ck_assert_uint_eq(json_array_size(layers), (size_t)c.n_layers);
            for (int l = 0; l < c.n_layers; l++) {
                json_t *e = json_array_get(layers, (size_t)l);
                ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), l);
                snprintf(key, sizeof key, "attn.%d", l);
                want = torch_floats(&c.f, key, NULL);
                compare_seq(json_object_get(e, "attention"), want, &c, 1, 1, key);
                free(want);
            }
        }
        json_t *usage = json_object_get(j, "usage");
        ck_assert_int_eq(json_integer_value(json_object_get(usage, "sequences")), c.B);
        long real = 0;
        for (int b = 0; b < c.B; b++)
            real += c.lengths ? c.lengths[b] : c.L;
        ck_assert_int_eq(json_integer_value(json_object_get(usage, "tokens")), real);
        ck_assert(json_is_number(json_object_get(usage, "compute_ms")));
        char hv[64];
        ck_assert_ptr_nonnull(http_header(&r, "X-Compute-Ms", hv, sizeof hv));
        ck_assert_ptr_nonnull(http_header(&r, "X-Queue-Ms", hv, sizeof hv));
        json_decref(j);
        http_resp_free(&r);
        free(body);
        free(c.lengths);
        c.lengths = NULL;
    }
    ck_assert_int_eq(daemon_stop(&dp), 0);
    http_case_free(&c);
}
END_TEST

/* A Hugging Face directory served with --model-dir, run from token ids over
 * HTTP: /v1/model's embedding against the fixture's own account of the
 * module (its tensors, what is ignored), ragged ids, attention_mask with
 * base64 out, each within 1e-4 of the references; bad ids named. */
START_TEST(test_encode_ids_hf)
{
    ids_fx c;
    ids_fx_load(&c, ids_fx_dir(_i));
    start_or_fail((const char *const[]){"--model-dir", c.dir, NULL}, NULL);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = http_json_body(&r);
    json_t *e = json_object_get(j, "embedding");
    ck_assert_msg(json_is_object(e), "%s: /v1/model has no embedding: %.400s", c.name, r.body);
    const int V = (int)json_integer_value(json_object_get(e, "vocab_size"));
    const json_t *pmax = json_object_get(e, "max_positions");
    const int P = json_is_integer(pmax) ? (int)json_integer_value(pmax) : 0;
    ck_assert_int_gt(V, 0);
    if (c.embedding) { /* the fixture script's account, written without attnd */
        const char *pos = json_string_value(json_object_get(c.embedding, "position"));
        if (pos)
            ck_assert_str_eq(json_string_value(json_object_get(e, "position")), pos);
        json_t *want = json_object_get(c.embedding, "tensors"),
               *got = json_object_get(e, "tensors");
        ck_assert_msg(json_array_size(got) == json_array_size(want), "%s: tensors %zu, want %zu",
                      c.name, json_array_size(got), json_array_size(want));
        for (size_t i = 0; i < json_array_size(want); i++) {
            bool found = false;
            for (size_t k = 0; k < json_array_size(got); k++)
                found = found || json_equal(json_array_get(got, k), json_array_get(want, i));
            ck_assert_msg(found, "%s: embedding.tensors lacks %s", c.name,
                          json_string_value(json_array_get(want, i)));
        }
        /* the fixture's "ignored": every tensor outside the stack and the
         * module, which attnd lists as ignored or as its head's */
        json_t *ign = json_object_get(c.embedding, "ignored"), *gign = hf_outside_json(j);
        if (ign) {
            ck_assert_msg(json_array_size(gign) == json_array_size(ign),
                          "%s: %zu ignored and head tensors, want %zu", c.name,
                          json_array_size(gign), json_array_size(ign));
            for (size_t i = 0; i < json_array_size(ign); i++) {
                bool found = false;
                for (size_t k = 0; k < json_array_size(gign) && !found; k++)
                    found = json_equal(json_array_get(gign, k), json_array_get(ign, i));
                ck_assert_msg(found, "%s: %s is neither ignored nor the head's", c.name,
                              json_string_value(json_array_get(ign, i)));
            }
        }
        json_decref(gign);
    }
    json_decref(j);
    http_resp_free(&r);

    float *out = ids_fx_want(&c, -1), *last = ids_fx_want(&c, c.n_layers - 1);
    for (int form = 0; form < 2; form++) {
        char *body = ids_body(&c, form == 0 ? IDS_RAGGED : IDS_MASK, 0,
                              form == 0 ? NULL : "\"encoding\": \"base64\"");
        ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
        ck_assert_msg(r.status == 200, "%s: %ld %.300s", c.name, r.status, r.body);
        j = http_json_body(&r);
        char what[96];
        snprintf(what, sizeof what, "%s %s: outputs", c.name, form == 0 ? "ragged" : "mask");
        if (form == 0)
            check_json(json_object_get(j, "outputs"), &c.y, out, T_OUT, -1, &TORCH_TOL, what);
        else
            check_b64(json_object_get(j, "outputs"), json_object_get(j, "outputs_shape"), &c.y, out,
                      T_OUT, -1, &TORCH_TOL, what);
        snprintf(what, sizeof what, "%s %s: attention", c.name, form == 0 ? "ragged" : "mask");
        if (form == 0)
            check_json(json_object_get(j, "attention"), &c.y, last, T_HEADS, -1, &TORCH_TOL, what);
        else
            check_b64(json_object_get(j, "attention"), json_object_get(j, "attention_shape"), &c.y,
                      last, T_HEADS, -1, &TORCH_TOL, what);
        long real = 0;
        for (int b = 0; b < c.B; b++)
            real += c.lengths[b];
        ck_assert_int_eq(json_integer_value(json_at(j, "usage", "tokens", NULL)), real);
        json_decref(j);
        http_resp_free(&r);
        free(body);
    }
    free(out);
    free(last);

    /* An id outside the vocabulary, a sequence longer than the position
     * table (when the limits let it through), ids as floats: 400 naming them. */
    char body[256], want[128];
    snprintf(body, sizeof body, "{\"input_ids\": [[1, %d]]}", V);
    snprintf(want, sizeof want, "input_ids[0][1] = %d is outside 0..%d", V, V - 1);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
    http_assert_error(&r, 400, "invalid_request", want);
    http_resp_free(&r);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", "{\"input_ids\": [1.5]}", &r), 0);
    http_assert_error(&r, 400, "invalid_request", "input_ids[0] is 1.5, not an integer");
    http_resp_free(&r);
    if (P > 0) { /* P + 1 ids of 1 (none the RoBERTa family's padding_idx 1: ids of 3) */
        char *big = xcalloc((size_t)P * 8 + 64, 1);
        size_t n = (size_t)sprintf(big, "{\"input_ids\": [3");
        for (int i = 0; i < P; i++)
            n += (size_t)sprintf(big + n, ", 3");
        sprintf(big + n, "]}");
        ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", big, &r), 0);
        ck_assert_msg(r.status == 400 && strstr(r.body, "max_position_embeddings"),
                      "%s: %d ids: %ld %.300s", c.name, P + 1, r.status, r.body);
        http_resp_free(&r);
        free(big);
    }
    ck_assert_int_eq(daemon_stop(&dp), 0);
    ids_fx_free(&c);
}
END_TEST

/* A model without an embedding module (a weights file of the stack alone)
 * takes embeddings only; its /v1/model says so, ids and text are refused
 * naming what is missing, and a tokenizer for it is refused at start-up. */
START_TEST(test_encode_ids_refused_without_module)
{
    const char *const weights_only[] = {
        "--d-model", "4", "--n-heads", "2", "--d-ff", "8",
        "--weights", TESTS_DIR "/fixtures/safetensors/model/valid.safetensors", NULL};
    start_or_fail(weights_only, NULL);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *j = http_json_body(&r);
    ck_assert(json_is_null(json_object_get(j, "embedding")));
    ck_assert(json_is_null(json_object_get(j, "tokenizer")));
    json_decref(j);
    http_resp_free(&r);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", "{\"input_ids\": [[1, 2]]}", &r), 0);
    http_assert_error(&r, 400, "invalid_request",
                      "input_ids: this model takes embeddings, not input_ids: it has no embedding "
                      "module");
    http_resp_free(&r);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/tokenize", "{\"text\": \"hello\"}", &r), 0);
    http_assert_error(&r, 400, "invalid_request",
                      "text needs a tokenizer, and the served model has none");
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);

    char *out = NULL;
    const char *with_tok[] = {"--check-config", "--d-model", "4", "--n-heads", "2", "--d-ff", "8",
                              "--weights", weights_only[7], "--tokenizer",
                              TESTS_DIR "/fixtures/tokenizers/bert-uncased/tokenizer.json", NULL};
    ck_assert_int_ne(run_attnd(with_tok, NULL, &out), 0);
    ck_assert_msg(strstr(out, "model.tokenizer: text needs a model that takes token ids"), "%s",
                  out);
    free(out);
}
END_TEST

/* The same case with base64 both ways, and the unbatched [L][D] form. */
START_TEST(test_encode_base64_and_forms)
{
    http_case c;
    http_case_load(&c, "mask_lengths");
    c.args[c.n_args] = NULL;
    start_or_fail((const char *const *)c.args, NULL);
    size_t nx;
    float *x = torch_floats(&c.f, "x", &nx);
    size_t b64_len;
    char *b64 = base64_encode(x, nx * sizeof(float), &b64_len);
    char *plain = http_case_body(&c, NULL); /* for lengths and mask */
    json_t *body = json_loads(plain, 0, NULL);
    json_object_del(body, "embeddings");
    json_object_set_new(body, "embeddings_b64", json_string(b64));
    json_object_set_new(body, "shape", json_pack("[i,i,i]", c.B, c.L, c.D));
    json_object_set_new(body, "encoding", json_string("base64"));
    char *text = json_dumps(body, JSON_COMPACT);
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", text, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    json_t *j = http_json_body(&r);
    /* Ragged with lengths: one base64 string and one shape per sequence. */
    json_t *outs = json_object_get(j, "outputs"), *shapes = json_object_get(j, "outputs_shape");
    json_t *atts = json_object_get(j, "attention"),
           *ashapes = json_object_get(j, "attention_shape");
    ck_assert_uint_eq(json_array_size(outs), (size_t)c.B);
    float *want = torch_floats(&c.f, "out", NULL), *want_a = torch_floats(&c.f, "attn.0", NULL);
    for (int b = 0; b < c.B; b++) {
        const int len = c.lengths[b];
        json_t *shp = json_array_get(shapes, (size_t)b);
        ck_assert_int_eq(json_integer_value(json_array_get(shp, 0)), len);
        ck_assert_int_eq(json_integer_value(json_array_get(shp, 1)), c.D);
        const char *s64 = json_string_value(json_array_get(outs, (size_t)b));
        size_t n = 0;
        unsigned char *raw = base64_decode(s64, strlen(s64), &n);
        ck_assert_uint_eq(n, (size_t)len * c.D * sizeof(float));
        double d = max_abs_diff((const float *)(void *)raw, want + (size_t)b * c.L * c.D,
                                (size_t)len * c.D);
        ck_assert_msg(d <= 1e-4, "base64 outputs of sequence %d differ by %g", b, d);
        free(raw);
        shp = json_array_get(ashapes, (size_t)b);
        ck_assert_int_eq(json_integer_value(json_array_get(shp, 0)), c.H);
        ck_assert_int_eq(json_integer_value(json_array_get(shp, 1)), len);
        s64 = json_string_value(json_array_get(atts, (size_t)b));
        raw = base64_decode(s64, strlen(s64), &n);
        ck_assert_uint_eq(n, (size_t)c.H * len * len * sizeof(float));
        const float *got = (const float *)(void *)raw;
        for (int h = 0; h < c.H; h++)
            for (int i = 0; i < len; i++)
                for (int k = 0; k < len; k++) {
                    float w = want_a[(((size_t)b * c.H + h) * c.L + i) * c.L + k];
                    float g = got[((size_t)h * len + i) * len + k];
                    ck_assert_msg(fabsf(g - w) <= 1e-4f, "attention b%d h%d [%d][%d]", b, h, i, k);
                }
        free(raw);
    }
    json_decref(j);
    http_resp_free(&r);

    /* One sequence as [L][D], attention none: outputs [L][D], no attention. */
    const st_tensor *tx = st_find(&c.f, "x");
    int64_t dims[2] = {tx->shape[1], tx->shape[2]};
    json_t *one = json_pack("{s:o,s:s}", "embeddings", nested(x, dims, 2, 0), "attention", "none");
    char *one_text = json_dumps(one, JSON_COMPACT);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", one_text, &r), 0);
    ck_assert_int_eq(r.status, 200);
    j = http_json_body(&r);
    ck_assert_ptr_null(json_object_get(j, "attention"));
    json_t *shape = json_object_get(j, "shape");
    ck_assert_uint_eq(json_array_size(shape), 2);
    json_t *o = json_object_get(j, "outputs");
    ck_assert_uint_eq(json_array_size(o), (size_t)c.L);
    /* Sequence 0 of the fixture has the full length: its rows are the answer. */
    ck_assert_int_eq(c.lengths[0], c.L);
    double worst = 0;
    for (int i = 0; i < c.L; i++)
        for (int k = 0; k < c.D; k++) {
            double g = json_number_value(json_array_get(json_array_get(o, (size_t)i), (size_t)k));
            worst = fmax(worst, fabs(g - want[(size_t)i * c.D + k]));
        }
    ck_assert_msg(worst <= 1e-4, "unbatched outputs differ by %g", worst);
    json_decref(j);
    http_resp_free(&r);
    free(one_text);
    json_decref(one);
    free(want);
    free(want_a);
    free(text);
    json_decref(body);
    free(plain);
    free(b64);
    free(x);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    http_case_free(&c);
}
END_TEST

/* Dynamic batching: concurrent requests of different shapes and options run
 * in one shared forward, and each gets exactly its own result (PyTorch's).
 * The forward waits for them all: compute.batch_tokens is the tokens of
 * the N requests together, and the batch delay (far longer than sending
 * them takes) ends as soon as they are queued.  With a short delay, clients
 * slower than it (under valgrind) would each get a forward of their own. */
typedef struct batched_req {
    int port;
    char *body;
    http_resp resp;
    int ok;
} batched_req;

static void *send_batched(void *arg)
{
    batched_req *q = arg;
    q->ok = http_post_json(q->port, "/v1/encode", q->body, &q->resp) == 0;
    return NULL;
}

START_TEST(test_dynamic_batching)
{
    http_case c;
    enum { KINDS = 3, REPEAT = 4, N = KINDS * REPEAT };
    http_case_load(&c, "layer_post_relu");
    /* sequence 0 alone, sequence 1 alone, the whole batch: L, L and B x L
     * tokens (no lengths) */
    char batch_tokens[32];
    snprintf(batch_tokens, sizeof batch_tokens, "%d", REPEAT * (2 * c.L + c.B * c.L));
    c.args[c.n_args++] = strdup("--batch-tokens");
    c.args[c.n_args++] = strdup(batch_tokens);
    c.args[c.n_args++] = strdup("--batch-delay-ms");
    c.args[c.n_args++] = strdup("10000");
    c.args[c.n_args] = NULL;
    start_or_fail((const char *const *)c.args, NULL);
    size_t nx;
    float *x = torch_floats(&c.f, "x", &nx);
    float *want = torch_floats(&c.f, "out", NULL), *want_a = torch_floats(&c.f, "attn.0", NULL);
    const st_tensor *tx = st_find(&c.f, "x");
    batched_req reqs[N];
    pthread_t tids[N];
    for (int k = 0; k < N; k++) {
        json_t *body;
        if (k % KINDS == 2) { /* the whole batch */
            body = json_pack("{s:o}", "embeddings", nested(x, tx->shape, 3, 0));
        } else { /* sequence 0 or 1 alone, as [L][D] */
            const int b = k % KINDS;
            body = json_pack("{s:o}", "embeddings",
                             nested(x + (size_t)b * c.L * c.D, tx->shape + 1, 2, 0));
        }
        reqs[k] = (batched_req){.port = dp.port, .body = json_dumps(body, JSON_COMPACT)};
        json_decref(body);
    }
    for (int k = 0; k < N; k++)
        pthread_create(&tids[k], NULL, send_batched, &reqs[k]);
    for (int k = 0; k < N; k++)
        pthread_join(tids[k], NULL);
    for (int k = 0; k < N; k++) {
        ck_assert_msg(reqs[k].ok && reqs[k].resp.status == 200, "request %d: %ld %.200s", k,
                      reqs[k].resp.status, reqs[k].resp.body);
        json_t *j = http_json_body(&reqs[k].resp);
        json_t *outs = json_object_get(j, "outputs"), *att = json_object_get(j, "attention");
        if (k % KINDS == 2) {
            compare_seq(outs, want, &c, 0, 0, "batch outputs");
            compare_seq(att, want_a, &c, 1, 1, "batch attention");
        } else {
            const int b = k % KINDS;
            json_t *wrapped = json_pack("[O]", outs), *wrapped_a = json_pack("[O]", att);
            http_case one = c;
            one.B = 1;
            compare_seq(wrapped, want + (size_t)b * c.L * c.D, &one, 0, 0, "alone outputs");
            compare_seq(wrapped_a, want_a + (size_t)b * c.H * c.L * c.L, &one, 1, 1,
                        "alone attention");
            json_decref(wrapped);
            json_decref(wrapped_a);
        }
        json_decref(j);
        http_resp_free(&reqs[k].resp);
        free(reqs[k].body);
    }
    /* They shared a forward: one for the N requests. */
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
    const char *f = strstr(r.body, "\nattnd_forwards_total ");
    ck_assert_ptr_nonnull(f);
    long forwards = atol(f + strlen("\nattnd_forwards_total "));
    ck_assert_msg(forwards == 1, "%ld forwards for %d requests", forwards, N);
    char one[64];
    snprintf(one, sizeof one, "\nattnd_batch_requests_sum %d\n", N);
    ck_assert_msg(strstr(r.body, "\nattnd_batch_requests_count 1\n") && strstr(r.body, one),
                  "not one forward of %d requests:\n%.2000s", N, r.body);
    http_resp_free(&r);
    free(x);
    free(want);
    free(want_a);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    http_case_free(&c);
}
END_TEST

/* ---- errors ------------------------------------------------------------- */

START_TEST(test_error_statuses)
{
    start_or_fail((const char *const[]){"--d-model", "16", "--n-heads", "4", "--d-ff", "32",
                                        "--max-body-bytes", "2048", "--max-batch", "2", NULL},
                  NULL);
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", "{\"embeddings\": [[1,2", &r), 0);
    http_assert_error(&r, 400, "invalid_request", "JSON");
    http_resp_free(&r);

    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", "{\"embeddings\": [[1,2,3]]}", &r), 0);
    http_assert_error(&r, 400, "invalid_request", "d_model");
    http_resp_free(&r);

    /* (Under /v2 the Open Inference Protocol's {"error": "..."} applies: check_v2.c.) */
    ck_assert_int_eq(http_do(dp.port, "GET", "/v3/nothing", NULL, 0, NULL, &r), 0);
    http_assert_error(&r, 404, "not_found", "/v3/nothing");
    http_resp_free(&r);
    /* An escaped newline and invalid UTF-8 in the path: still a JSON 404. */
    ck_assert_int_eq(http_do(dp.port, "GET", "/a%0Ab%FF%C3", NULL, 0, NULL, &r), 0);
    http_assert_error(&r, 404, "not_found", "/a?b");
    http_resp_free(&r);

    char allow[64];
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/encode", NULL, 0, NULL, &r), 0);
    http_assert_error(&r, 405, "method_not_allowed", "POST");
    ck_assert_ptr_nonnull(strstr(http_header(&r, "Allow", allow, sizeof allow), "POST"));
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "DELETE", "/health", NULL, 0, NULL, &r), 0);
    http_assert_error(&r, 405, "method_not_allowed", "GET");
    http_resp_free(&r);

    char big[4096];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", big, &r), 0);
    http_assert_error(&r, 413, "too_large", "max_body_bytes");
    http_resp_free(&r);

    const char *three = "{\"embeddings\": [[[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]],"
                        "[[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]],[[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]]]}";
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", three, &r), 0);
    http_assert_error(&r, 413, "too_large", "max_batch");
    http_resp_free(&r);

    static const char *const text[] = {"Content-Type: text/plain", NULL};
    ck_assert_int_eq(http_do(dp.port, "POST", "/v1/encode", "{}", 2, text, &r), 0);
    http_assert_error(&r, 415, "unsupported_media_type", "application/json");
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* The request directory shared with the codec's unit tests: each body with
 * the status and message it must receive from the daemon. */
START_TEST(test_invalid_request_directory)
{
    json_error_t e;
    json_t *expect = json_load_file(INVALID_DIR "/expected.json", 0, &e);
    ck_assert_msg(expect != NULL, "%s", e.text);
    json_t *cfg = json_object_get(expect, "_config");
    ck_assert_ptr_nonnull(cfg);
    char *args[32];
    int n = 0;
    const char *key;
    json_t *v;
    json_object_foreach(cfg, key, v)
    {
        char flag[64], val[64];
        snprintf(flag, sizeof flag, "--%s", key);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        if (!json_is_integer(v))
            continue;
        snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        args[n++] = strdup(flag);
        args[n++] = strdup(val);
    }
    args[n] = NULL;
    start_or_fail((const char *const *)args, NULL);
    int checked = 0;
    json_object_foreach(expect, key, v)
    {
        if (key[0] == '_')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, key);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "%s", path);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *body = xcalloc((size_t)size + 1, 1);
        ck_assert_int_eq(fread(body, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        static const char *const json_ct[] = {"Content-Type: application/json", NULL};
        http_resp r;
        ck_assert_int_eq(http_do(dp.port, "POST", "/v1/encode", body, (size_t)size, json_ct, &r),
                         0);
        long want = (long)json_integer_value(json_object_get(v, "status"));
        const char *msg = json_string_value(json_object_get(v, "message"));
        http_assert_error(&r, want, want == 413 ? "too_large" : "invalid_request", msg);
        http_resp_free(&r);
        free(body);
        checked++;
    }
    ck_assert_int_ge(checked, 25);
    /* Nothing broke: the daemon still serves. */
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    for (int i = 0; i < n; i++)
        free(args[i]);
    json_decref(expect);
}
END_TEST

START_TEST(test_api_key)
{
    start_or_fail(small_model, (const char *const[]){"ATTND_API_KEY=s3cret", NULL});
    http_resp r;
    char hv[64];
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200); /* exempt */
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    http_assert_error(&r, 401, "unauthorized", "API key");
    ck_assert_str_eq(http_header(&r, "WWW-Authenticate", hv, sizeof hv), "Bearer");
    http_resp_free(&r);
    static const char *const wrong[] = {"Authorization: Bearer s3cres", NULL};
    ck_assert_int_eq(http_do(dp.port, "GET", "/metrics", NULL, 0, wrong, &r), 0);
    ck_assert_int_eq(r.status, 401);
    http_resp_free(&r);
    static const char *const right[] = {"Authorization: Bearer s3cret",
                                        "Content-Type: application/json", NULL};
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, right, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    const char *body = "{\"embeddings\": [[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]]}";
    ck_assert_int_eq(http_do(dp.port, "POST", "/v1/encode", body, strlen(body), right, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
    ck_assert_int_eq(r.status, 401);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_cors)
{
    const char *args[] = {"--d-model", "16", "--n-heads",     "4",
                          "--d-ff",    "32", "--cors-origin", "https://app.example",
                          NULL};
    start_or_fail(args, NULL);
    http_resp r;
    char hv[128];
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_str_eq(http_header(&r, "Access-Control-Allow-Origin", hv, sizeof hv),
                     "https://app.example");
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "OPTIONS", "/v1/encode", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 204);
    ck_assert_ptr_nonnull(
        strstr(http_header(&r, "Access-Control-Allow-Methods", hv, sizeof hv), "POST"));
    ck_assert_ptr_nonnull(
        strstr(http_header(&r, "Access-Control-Allow-Headers", hv, sizeof hv), "Authorization"));
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    /* Without cors_origin: no CORS header. */
    start_or_fail(small_model, NULL);
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_ptr_null(http_header(&r, "Access-Control-Allow-Origin", hv, sizeof hv));
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_access_log)
{
    start_or_fail(small_model, NULL);
    static const char *const id[] = {"X-Request-Id: log-check-7", NULL};
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, id, &r), 0);
    http_resp_free(&r);
    char *log = NULL;
    for (int i = 0; i < 100; i++) { /* the line is written as the request completes */
        free(log);
        log = daemon_log(&dp);
        if (strstr(log, "log-check-7"))
            break;
        usleep(10000);
    }
    const char *line = strstr(log, "GET /v1/model 200 ");
    ck_assert_msg(line != NULL, "no access log line in:\n%s", log);
    const char *eol = strchr(line, '\n');
    ck_assert_ptr_nonnull(eol);
    ck_assert_msg(strstr(line, "ms log-check-7") && strstr(line, "ms log-check-7") < eol,
                  "line lacks duration and id: %.*s", (int)(eol - line), line);
    free(log);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Every operation /openapi.json documents answers with a status it documents. */
/* The body of a POST to a TEI route (server/protocol/tei.h) on the
 * built-in model (a tokenizer, no head), and the status it answers when
 * not 200 (its head routes: 424); other paths keep theirs. */
static void tei_body(const char *path, const char **body, int *status)
{
    static const struct {
        const char *path, *body;
        int status;
    } tei[] = {
        {"/", "{\"inputs\": \"hello\"}", 0},
        {"/embed", "{\"inputs\": \"hello\"}", 0},
        {"/embed_all", "{\"inputs\": [\"hello\"]}", 0},
        {"/embed_sparse", "{\"inputs\": \"hello\"}", 424},
        {"/predict", "{\"inputs\": \"hello\"}", 424},
        {"/rerank", "{\"query\": \"a\", \"texts\": [\"b\"]}", 424},
        {"/similarity", "{\"inputs\": {\"source_sentence\": \"a\", \"sentences\": [\"b\"]}}", 0},
        {"/tokenize", "{\"inputs\": \"hello\"}", 0},
        {"/decode", "{\"ids\": [2, 3]}", 0},
    };
    for (size_t i = 0; i < sizeof tei / sizeof *tei; i++)
        if (strcmp(path, tei[i].path) == 0) {
            *body = tei[i].body;
            *status = tei[i].status;
        }
}

START_TEST(test_openapi_matches_daemon)
{
    start_or_fail(small_model, NULL);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/openapi.json", NULL, 0, NULL, &r), 0);
    json_t *spec = http_json_body(&r);
    http_resp_free(&r);
    const char *path;
    json_t *ops;
    int checked = 0;
    json_object_foreach(json_object_get(spec, "paths"), path, ops)
    {
        const char *method;
        json_t *op;
        json_object_foreach(ops, method, op)
        {
            if (!json_object_get(op, "responses")) /* a path's parameters, not a method */
                continue;
            char upper[16];
            size_t k = 0;
            for (; method[k] && k < sizeof upper - 1; k++)
                upper[k] = (char)(method[k] - 32 * (method[k] >= 'a' && method[k] <= 'z'));
            upper[k] = '\0';
            const char *body = "{\"embeddings\": [[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]]}";
            /* {name}, {model} and {version} filled in; /v2 paths, a v2 request body. */
            char url[256];
            size_t n = 0;
            for (const char *p = path; *p && n < sizeof url - 16;) {
                if (strncmp(p, "{name}", 6) == 0)
                    n += (size_t)snprintf(url + n, sizeof url - n, "encoder"), p += 6;
                else if (strncmp(p, "{model}", 7) == 0)
                    n += (size_t)snprintf(url + n, sizeof url - n, "encoder"), p += 7;
                else if (strncmp(p, "{version}", 9) == 0)
                    n += (size_t)snprintf(url + n, sizeof url - n, "1"), p += 9;
                else
                    url[n++] = *p++;
            }
            url[n] = '\0';
            /* the text routes: the built-in model's tokenizer */
            const bool text = (strcmp(path, "/v1/tokenize") == 0 ||
                               strcmp(path, "/v1/embeddings") == 0) &&
                              strcmp(upper, "POST") == 0;
            if (text)
                body = path[4] == 't' ? "{\"text\": \"hello\"}" : "{\"input\": \"hello\"}";
            if (strncmp(path, "/v2/", 4) == 0)
                body = "{\"inputs\": [{\"name\": \"embeddings\", \"datatype\": \"FP32\", "
                       "\"shape\": [1, 1, 16], \"data\": [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]}]}";
            /* /v1/predict: the built-in model has no head, a documented 400;
             * TEI's routes (tei_body) their bodies, its head routes a
             * documented 424 */
            const bool headless = strcmp(path, "/v1/predict") == 0 && strcmp(upper, "POST") == 0;
            if (headless)
                body = "{\"inputs\": \"hello\"}";
            int want = 0;
            if (strcmp(upper, "POST") == 0)
                tei_body(path, &body, &want);
            static const char *const ct[] = {"Content-Type: application/json", NULL};
            bool post = strcmp(upper, "POST") == 0;
            ck_assert_int_eq(
                http_do(dp.port, upper, url, post ? body : NULL, post ? strlen(body) : 0, ct, &r),
                0);
            char status[8];
            snprintf(status, sizeof status, "%ld", r.status);
            ck_assert_msg(json_object_get(json_object_get(op, "responses"), status),
                          "%s %s answered %s, which /openapi.json does not document", upper, path,
                          status);
            ck_assert_msg(r.status == (strcmp(upper, "OPTIONS") == 0 ? 204
                                       : want                        ? want
                                       : headless                    ? 400
                                                                     : 200),
                          "%s %s: %ld", upper, path, r.status);
            http_resp_free(&r);
            checked++;
        }
    }
    ck_assert_int_ge(checked, 5);
    json_decref(spec);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST
Suite *http_suite(void)
{
    Suite *s = timed_suite("http");
    TCase *tc = timed_case(s, "daemon", 120);
    tcase_add_test(tc, test_health_and_request_id);
    tcase_add_test(tc, test_model_route);
    tcase_add_test(tc, test_openapi_and_version);
    tcase_add_test(tc, test_openapi_matches_daemon);
    tcase_add_test(tc, test_metrics_count_requests);
    tcase_add_loop_test(tc, test_encode_matches_torch, 0,
                        (int)(sizeof http_cases / sizeof *http_cases));
    tcase_add_test(tc, test_encode_base64_and_forms);
    tcase_add_loop_test(tc, test_encode_ids_hf, 0, ids_fx_count());
    tcase_add_test(tc, test_encode_ids_refused_without_module);
    tcase_add_test(tc, test_dynamic_batching);
    tcase_add_test(tc, test_error_statuses);
    tcase_add_test(tc, test_invalid_request_directory);
    tcase_add_test(tc, test_api_key);
    tcase_add_test(tc, test_cors);
    tcase_add_test(tc, test_access_log);
    return s;
}
