/* check_qwen3_embedders.c - the Qwen3 embedders that add a step to
 * Qwen3-Embedding's: voyageai/voyage-4-nano (model_type qwen3, attention
 * both ways, its token states through linear.weight, config.json's
 * num_labels rows, after the final norm) and perplexity-ai/pplx-embed-v1
 * (model_type bidirectional_pplx_qwen3, attention both ways, its mean
 * pooled rows through st_quantize.FlexibleQuantizer's int8: round(127
 * tanh(x))).  Against tests/fixtures/hf/voyage_text and pplx_text
 * (tools/fixtures/make_text_fixtures.py: the ids from Hugging Face's
 * tokenizers on the qwen3 tokenizer fixture; the outputs from
 * tools/fixtures/voyage_reference.py's and pplx_reference.py's forwards
 * written after transformers' modeling_qwen3.py, checked against their
 * float64 formulations; the projection and the quantizer as
 * text-embeddings-inference's qwen3.rs and pplx1.rs and the checkpoint's
 * st_quantize.py compute them). */
#include "daemon.h"
#include "hf_util.h"
#include "load/safetensors.h"
#include "model/model.h"
#include "model/pooling.h"
#include "suites.h"
#include "test_util.h"
#include "text_util.h"
#include "timing.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOYAGE TESTS_DIR "/fixtures/hf/voyage_text"
#define PPLX   TESTS_DIR "/fixtures/hf/pplx_text"
#define QWEN3  TESTS_DIR "/fixtures/hf/qwen3_text"
#define TOL    1e-4
#define P      40 /* voyage_text's num_labels: the projection's rows */
#define D      32

/* voyage_text's linear.weight as the file holds it (owned). */
static float *file_projection(void)
{
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, VOYAGE "/model.safetensors", &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, "linear.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert(t->ndim == 2 && t->shape[0] == P && t->shape[1] == D);
    float *w = xcalloc((size_t)P * D, sizeof *w);
    ck_assert_int_eq(st_tensor_read_f32(t, w, &err), 0);
    st_close(&f);
    return w;
}

/* voyage-4-nano's config.json is read as Qwen3's with num_labels; the model
 * binds linear.weight (40, 32) as its projection and counts it, and lists
 * no tensor as ignored. */
START_TEST(test_voyage_reads_the_projection)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(VOYAGE, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "qwen3");
    ck_assert_int_eq(c.num_labels, P);
    ck_assert(!c.hp.causal && c.hp.qk_norm);
    enc_model *m = hf_load(VOYAGE);
    const enc_dense *pr = enc_model_projection(m);
    ck_assert_ptr_nonnull(pr);
    ck_assert_int_eq(pr->in, D);
    ck_assert_int_eq(pr->out, P);
    ck_assert_ptr_null(pr->bias);
    ck_assert(!pr->tanh);
    float *w = file_projection();
    ck_assert_msg(memcmp(w, pr->weight, (size_t)P * D * sizeof *w) == 0,
                  "the projection is not the file's linear.weight");
    free(w);
    ck_assert_uint_eq(enc_model_ignored_count(m), 0);
    ck_assert_uint_eq(enc_model_param_count(m),
                      file_params_but(VOYAGE "/model.safetensors", "embed_tokens.weight"));
    ck_assert_ptr_null(enc_model_head(m));
    enc_model_free(m);
    /* Qwen3-Embedding has neither: no projection */
    m = hf_load(QWEN3);
    ck_assert_ptr_null(enc_model_projection(m));
    enc_model_free(m);
}
END_TEST

/* As text-embeddings-inference reads the directory: num_labels without
 * linear.weight is no projection (a classifier's field), linear.weight
 * without num_labels a tensor listed as ignored; num_labels other than
 * its rows is refused, naming the tensor. */
START_TEST(test_voyage_num_labels)
{
    scratch s;
    static const char *const files[] = {"model.safetensors", NULL};
    scratch_make(&s, VOYAGE, "{\"num_labels\": null}", NULL, files);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_projection(m));
    ck_assert_uint_eq(enc_model_ignored_count(m), 1);
    ck_assert_str_eq(enc_model_ignored(m, 0), "linear.weight");
    enc_model_free(m);
    scratch_free(&s);
    scratch_make(&s, QWEN3, "{\"num_labels\": 40}", NULL, files);
    m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_projection(m));
    enc_model_free(m);
    scratch_free(&s);
    static const config_refusal cases[] = {
        {"{\"num_labels\": 39}", "tensor 'linear.weight' has shape [40, 32], expected [39, 32]"},
        {"{\"num_labels\": 0}", "config.json: 'num_labels' is not a positive integer"},
        {"{\"num_labels\": \"40\"}", "config.json: 'num_labels' is not a positive integer"},
    };
    refused_edits(VOYAGE, cases, sizeof cases / sizeof *cases);
}
END_TEST

/* The first b rows of TEI's /embed_all response (a list of each text's
 * token rows) against want (B, L, w): the largest difference over each
 * text's lengths[b] tokens, which must be the rows it has. */
static double token_rows_diff(const json_t *r, const float *want, int B, int L, int w,
                              const float *lengths)
{
    double worst = 0.0;
    ck_assert_uint_eq(json_array_size(r), (size_t)B);
    for (int b = 0; b < B; b++) {
        const json_t *rows = json_array_get(r, (size_t)b);
        ck_assert_uint_eq(json_array_size(rows), (size_t)lengths[b]);
        for (int i = 0; i < (int)lengths[b]; i++) {
            const json_t *row = json_array_get(rows, (size_t)i);
            ck_assert_uint_eq(json_array_size(row), (size_t)w);
            for (int k = 0; k < w; k++) {
                const double d = fabs(json_number_value(json_array_get(row, (size_t)k)) -
                                      want[((size_t)b * L + i) * w + k]);
                worst = d > worst ? d : worst;
            }
        }
    }
    return worst;
}

/* voyage-4-nano end to end: /v1/encode's outputs the stack's (before the
 * projection), /v1/embeddings' the projected states' mean, normalized
 * (40 wide), TEI's /embed_all the projected states themselves, /embed the
 * embeddings; /v1/model says what makes them. */
START_TEST(test_voyage_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", VOYAGE, NULL}, NULL), 0);
    text_matches_fixture(d.port, VOYAGE, "sentence_embedding", TOL);
    json_t *info = model_info(d.port);
    const json_t *pooling = json_object_get(info, "pooling");
    const json_t *pr = json_object_get(pooling, "projection");
    ck_assert_int_eq(json_integer_value(json_object_get(pr, "in_features")), D);
    ck_assert_int_eq(json_integer_value(json_object_get(pr, "out_features")), P);
    ck_assert_int_eq(json_integer_value(json_object_get(pooling, "dimensions")), P);
    ck_assert_str_eq(json_string_value(json_object_get(pooling, "mode")), "mean");
    json_decref(info);

    json_t *tfx = json_load_file(VOYAGE "/text.json", 0, NULL);
    ck_assert_ptr_nonnull(tfx);
    hf_ids x = hf_text_ids(VOYAGE, "input_ids", "attention_mask");
    int dims[3];
    float *tokens = hf_text_tensor(VOYAGE, "token_embeddings", dims);
    ck_assert(dims[0] == x.B && dims[1] == x.L && dims[2] == P);
    long status;
    json_t *r = post_json_at(d.port, "/embed_all",
                             json_pack("{s:O}", "inputs", json_object_get(tfx, "texts")), &status);
    ck_assert_int_eq(status, 200);
    const double diff = token_rows_diff(r, tokens, x.B, x.L, P, x.lengths);
    ck_assert_msg(diff < TOL, "/embed_all differs from the projected states by %g", diff);
    json_decref(r);
    int B, W;
    float *want = pooled_fixture(VOYAGE, "sentence_embedding", &B, &W);
    ck_assert_int_eq(W, P);
    r = post_json_at(d.port, "/embed", json_pack("{s:O}", "inputs", json_object_get(tfx, "texts")),
                     &status);
    ck_assert_int_eq(status, 200);
    float got[P];
    for (int b = 0; b < B; b++) {
        ck_assert_uint_eq(json_array_size(json_array_get(r, (size_t)b)), P);
        floats_of(json_array_get(r, (size_t)b), got, P);
        const double dd = max_abs_diff(got, want + (size_t)b * P, P);
        ck_assert_msg(dd < TOL, "/embed text %d differs by %g", b, dd);
    }
    json_decref(r);
    free(want);
    free(tokens);
    hf_ids_free(&x);
    json_decref(tfx);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* pplx-embed-v1's config.json: Qwen3's fields in transformers 5's form
 * under model_type bidirectional_pplx_qwen3, attending both ways even
 * where use_bidirectional_attention says otherwise (its modelling code
 * does); its modules: mean pooling, then the int8 quantizer, no Normalize;
 * the quantizer anywhere but after the pooling and Dense modules is
 * refused, naming the order. */
START_TEST(test_pplx_reads)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(PPLX, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "bidirectional_pplx_qwen3");
    ck_assert(!c.hp.causal && c.hp.qk_norm && !c.hp.bias && c.hp.final_norm);
    ck_assert(c.hp.rope_theta == 1000000.0);
    ck_assert_str_eq(c.key_rope_theta, "rope_parameters.rope_theta");
    ck_assert_int_eq(enc_head_dim(&c.hp), 16);
    scratch s;
    scratch_make(&s, PPLX, "{\"use_bidirectional_attention\": false}", NULL, NULL);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(!c.hp.causal);
    scratch_free(&s);
    enc_model *m = hf_load(PPLX);
    ck_assert_str_eq(enc_model_architecture(m), "bidirectional_pplx_qwen3");
    ck_assert_uint_eq(enc_model_ignored_count(m), 0);
    ck_assert_ptr_null(enc_model_head(m)); /* PPLXQwen3Model: the encoder alone */
    enc_model_free(m);

    enc_st_config st;
    ck_assert_msg(enc_st_config_read(PPLX, D, &st, &err) == 0, "%s", err.message);
    ck_assert(st.found && st.int8_tanh && !st.normalize);
    ck_assert_int_eq(st.pooling, ENC_POOL_MEAN);
    enc_st_config_free(&st);
    static const char *const pooling[] = {"1_Pooling", NULL};
    scratch_make(&s, PPLX, NULL, NULL, pooling);
    scratch_write(&s, "modules.json",
                  "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
                  "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", "
                  "\"path\": \"\", \"type\": \"st_quantize.FlexibleQuantizer\"}, {\"idx\": 2, "
                  "\"name\": \"2\", \"path\": \"1_Pooling\", \"type\": "
                  "\"sentence_transformers.models.Pooling\"}]");
    ck_assert_int_eq(enc_st_config_read(s.dir, D, &st, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "module 1 (st_quantize.FlexibleQuantizer) is not supported: "
                                      "attnd runs Transformer, Pooling, Dense modules, "
                                      "st_quantize.FlexibleQuantizer, then Normalize, in that "
                                      "order"),
                  "%s", err.message);
    scratch_free(&s);
}
END_TEST

/* /v1/embeddings' values against the quantizer's: each value where the
 * reference's 127 tanh(x) lies clear of a rounding boundary (0.01 away:
 * all but a few) exactly the reference's integer, the rest within one of
 * it. */
static void int8_match(int port, json_t *texts, const float *want, const float *unrounded, int B,
                       int W)
{
    long status;
    json_t *r = post_json_at(port, "/v1/embeddings", json_pack("{s:O}", "input", texts), &status);
    ck_assert_int_eq(status, 200);
    float *got = xcalloc((size_t)W, sizeof *got);
    for (int b = 0; b < B; b++) {
        embedding_of(json_object_get(r, "data"), (size_t)b, got, (size_t)W);
        for (int k = 0; k < W; k++) {
            const size_t i = (size_t)b * W + k;
            const double u = unrounded[i], frac = u - floor(u);
            const bool clear = fabs(frac - 0.5) > 0.01;
            ck_assert_msg(got[k] == rintf(got[k]) && fabsf(got[k]) <= 127.0f,
                          "text %d [%d] = %g: not an int8 value", b, k, (double)got[k]);
            ck_assert_msg(clear ? got[k] == want[i] : fabsf(got[k] - want[i]) <= 1.0f,
                          "text %d [%d] = %g, the quantizer's %g (127 tanh %g)", b, k,
                          (double)got[k], (double)want[i], u);
        }
    }
    free(got);
    json_decref(r);
}

/* pplx-embed-v1 end to end: the outputs the reference's (attending both
 * ways), /v1/embeddings the int8 values sentence-transformers returns (no
 * Normalize), TEI's /embed those normalized (its normalize true). */
START_TEST(test_pplx_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", PPLX, NULL}, NULL), 0);
    /* the outputs; the embeddings within one of the quantizer's (checked
     * exactly below) */
    text_matches_fixture(d.port, PPLX, "int8_embedding", 1.0 + 1e-6);
    json_t *tfx = json_load_file(PPLX "/text.json", 0, NULL);
    ck_assert_ptr_nonnull(tfx);
    int B, W;
    float *want = pooled_fixture(PPLX, "int8_embedding", &B, &W);
    float *unrounded = pooled_fixture(PPLX, "int8_unrounded", &B, &W);
    ck_assert_int_eq(W, D);
    int8_match(d.port, json_object_get(tfx, "texts"), want, unrounded, B, W);
    json_t *info = model_info(d.port);
    const json_t *pooling = json_object_get(info, "pooling");
    ck_assert(json_is_true(json_object_get(pooling, "int8_tanh")));
    ck_assert(json_is_false(json_object_get(pooling, "normalize")));
    ck_assert(json_is_null(json_object_get(pooling, "projection")));
    json_decref(info);
    float *normed = pooled_fixture(PPLX, "sentence_embedding", &B, &W);
    long status;
    json_t *r = post_json_at(d.port, "/embed",
                             json_pack("{s:O}", "inputs", json_object_get(tfx, "texts")), &status);
    ck_assert_int_eq(status, 200);
    float got[D];
    for (int b = 0; b < B; b++) {
        floats_of(json_array_get(r, (size_t)b), got, D);
        /* one value one off moves a unit row by at most 1 / |row| */
        const double dd = max_abs_diff(got, normed + (size_t)b * D, D);
        ck_assert_msg(dd < 1e-2, "/embed text %d differs by %g", b, dd);
    }
    json_decref(r);
    free(normed);
    free(want);
    free(unrounded);
    json_decref(tfx);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *qwen3_embedders_suite(void)
{
    Suite *s = timed_suite("qwen3_embedders");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_voyage_reads_the_projection);
    tcase_add_test(tc, test_voyage_num_labels);
    tcase_add_test(tc, test_voyage_end_to_end);
    tcase_add_test(tc, test_pplx_reads);
    tcase_add_test(tc, test_pplx_end_to_end);
    return s;
}
