/* text_util.c - the text suites' daemon and requests (text_util.h). */
#include "text_util.h"

#include "hf_util.h"
#include "test_util.h"
#include "codec/base64.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

daemon_proc text_daemon;
bool text_up;

void text_start(void)
{
    static const char *const args[] = {"--model-dir", TEXT_DIR, "--workers", "1", NULL};
    text_up = daemon_start(&text_daemon, args, NULL) == 0;
}

void text_stop(void)
{
    if (text_up)
        daemon_stop(&text_daemon);
    text_up = false;
}

/* POSTs body (a JSON text) to path on port; the response parsed (owned),
 * its status in *status. */
json_t *post_at(int port, const char *path, const char *body, long *status)
{
    http_resp r = {0};
    ck_assert_int_eq(http_post_json(port, path, body, &r), 0);
    *status = r.status;
    json_error_t jerr;
    json_t *j = json_loads(r.body, 0, &jerr);
    ck_assert_msg(j != NULL, "%s: %s", path, r.body);
    http_resp_free(&r);
    return j;
}

/* The same to the suite's daemon (bert_text). */
json_t *post(const char *path, const char *body, long *status)
{
    ck_assert_msg(text_up, "attnd did not start on %s", TEXT_DIR);
    return post_at(text_daemon.port, path, body, status);
}

json_t *post_json_at(int port, const char *path, json_t *body, long *status)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *j = post_at(port, path, text, status);
    free(text);
    return j;
}

json_t *post_json(const char *path, json_t *body, long *status)
{
    ck_assert_msg(text_up, "attnd did not start on %s", TEXT_DIR);
    return post_json_at(text_daemon.port, path, body, status);
}

/* The error message of a refusal with the status expected. */
void expect_error_at(int port, const char *path, const char *body, long want_status,
                     const char *want)
{
    long status;
    json_t *j = post_at(port, path, body, &status);
    const json_t *e = json_object_get(j, "error"); /* /v2: {"error": "..."} */
    const char *msg =
        json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
    ck_assert_msg(status == want_status, "%s %s: %ld, expected %ld (%s)", path, body, status,
                  want_status, msg ? msg : "");
    ck_assert_msg(msg && strstr(msg, want), "%s %s: \"%s\" does not say \"%s\"", path, body,
                  msg ? msg : "", want);
    json_decref(j);
}

void expect_error(const char *path, const char *body, long want_status, const char *want)
{
    ck_assert_msg(text_up, "attnd did not start on %s", TEXT_DIR);
    expect_error_at(text_daemon.port, path, body, want_status, want);
}

/* /v1/tokenize's one list of tokens for body on port (owned), its status 200. */
json_t *tokens_of(int port, json_t *body)
{
    long status;
    json_t *r = post_json_at(port, "/v1/tokenize", body, &status);
    ck_assert_int_eq(status, 200);
    json_t *toks = json_incref(json_array_get(json_object_get(r, "tokens"), 0));
    json_decref(r);
    return toks;
}

/* GET /v1/model on port (owned), its status 200. */
json_t *model_info(int port)
{
    http_resp m = {0};
    ck_assert_int_eq(http_do(port, "GET", "/v1/model", NULL, 0, NULL, &m), 0);
    ck_assert_int_eq(m.status, 200);
    json_t *j = http_json_body(&m);
    http_resp_free(&m);
    return j;
}

/* json_equal with numbers compared by value (JSON writes 1e6 as an
 * integer or a real alike). */
static bool same_json(json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_json(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b) && json_object_size(a) == json_object_size(b)) {
        const char *key;
        json_t *v;
        json_object_foreach(a, key, v)
        {
            if (!same_json(v, json_object_get(b, key)))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

void expect_hyperparameters(int port, const char *want)
{
    json_error_t jerr;
    json_t *w = json_loads(want, 0, &jerr);
    ck_assert_msg(json_is_object(w), "expect_hyperparameters: %s", jerr.text);
    json_t *info = model_info(port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    const char *key;
    json_t *v;
    json_object_foreach(w, key, v)
    {
        char *got = json_dumps(json_object_get(hp, key), JSON_ENCODE_ANY | JSON_COMPACT);
        ck_assert_msg(same_json(v, json_object_get(hp, key)), "hyperparameters.%s is %s", key,
                      got ? got : "absent");
        free(got);
    }
    json_decref(info);
    json_decref(w);
}

/* GET /v1/model's tokenizer on port (owned). */
json_t *model_tokenizer(int port)
{
    json_t *j = model_info(port);
    json_t *tok = json_incref(json_object_get(j, "tokenizer"));
    json_decref(j);
    return tok;
}

/* The n numbers of a JSON array into out. */
void floats_of(const json_t *array, float *out, size_t n)
{
    ck_assert_uint_eq(json_array_size(array), n);
    for (size_t k = 0; k < n; k++)
        out[k] = (float)json_number_value(json_array_get(array, k));
}

/* The embedding of row b of data (float list or base64 of float32) into out (n). */
void embedding_of(const json_t *data, size_t b, float *out, size_t n)
{
    const json_t *e = json_object_get(json_array_get(data, b), "embedding");
    if (json_is_string(e)) {
        size_t len = 0;
        unsigned char *raw = base64_decode(json_string_value(e), json_string_length(e), &len);
        ck_assert_ptr_nonnull(raw);
        ck_assert_uint_eq(len, n * sizeof *out);
        memcpy(out, raw, len);
        free(raw);
        return;
    }
    floats_of(e, out, n);
}

/* The pooled tensor name of dir's text.safetensors, as B rows of D floats. */
float *pooled_fixture(const char *dir, const char *name, int *B, int *D)
{
    int dims[3];
    float *v = hf_text_tensor(dir, name, dims);
    *B = dims[0];
    *D = dims[1];
    return v;
}

int embeddings_match_fixture(int port, const char *dir, const char *tensor, double tol)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/text.json", dir);
    json_t *tfx = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(tfx);
    long status;
    json_t *r = post_json_at(port, "/v1/embeddings",
                             json_pack("{s:O}", "input", json_object_get(tfx, "texts")), &status);
    ck_assert_int_eq(status, 200);
    int B, D;
    float *pooled = pooled_fixture(dir, tensor, &B, &D);
    float *got = xcalloc((size_t)D, sizeof *got);
    for (int b = 0; b < B; b++) {
        embedding_of(json_object_get(r, "data"), (size_t)b, got, (size_t)D);
        const double diff = max_abs_diff(got, pooled + (size_t)b * D, (size_t)D);
        ck_assert_msg(diff < tol, "%s text %d: differs from sentence-transformers' by %g", dir, b,
                      diff);
    }
    json_decref(r);
    free(got);
    free(pooled);
    json_decref(tfx);
    return B;
}

void text_matches_fixture(int port, const char *dir, const char *tensor, double tol)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/text.json", dir);
    json_t *tfx = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(tfx);
    json_t *texts = json_object_get(tfx, "texts"), *pair = json_object_get(tfx, "pair");
    hf_ids x = hf_text_ids(dir, "input_ids", "attention_mask");
    hf_ids px = hf_text_ids(dir, "pair_input_ids", NULL);
    int dims[3];
    float *want = hf_text_tensor(dir, "last_hidden_state", dims);
    const int B = dims[0], L = dims[1], D = dims[2];
    float *pwant = hf_text_tensor(dir, "pair_last_hidden_state", dims);
    long status;
    for (int k = 0; k < 2; k++) {
        json_t *text = k ? json_pack("[[O, O]]", json_object_get(pair, "text"),
                                     json_object_get(pair, "text_pair"))
                         : json_incref(texts);
        json_t *r =
            post_json_at(port, "/v1/encode",
                         json_pack("{s:o, s:s}", "text", text, "attention", "none"), &status);
        ck_assert_int_eq(status, 200);
        const hf_ids *ids = k ? &px : &x;
        for (int b = 0; b < ids->B; b++) {
            json_t *row = hf_ids_row(ids, b);
            ck_assert_msg(
                json_equal(json_array_get(json_object_get(r, "input_ids"), (size_t)b), row),
                "%s %d: not Hugging Face's ids", k ? "pair" : "text", b);
            json_decref(row);
        }
        const double diff = outputs_diff(json_object_get(r, "outputs"), k ? pwant : want, ids->B,
                                         k ? px.L : L, D, ids->lengths);
        ck_assert_msg(diff < tol, "%s outputs differ from PyTorch's by %g", k ? "pair" : "text",
                      diff);
        json_decref(r);
    }
    ck_assert_int_eq(embeddings_match_fixture(port, dir, tensor, tol), B);
    free(want);
    free(pwant);
    hf_ids_free(&x);
    hf_ids_free(&px);
    json_decref(tfx);
}
