/* check_mpnet.c - MPNet directories (config.json model_type mpnet: what
 * sentence-transformers saves for all-mpnet-base-v2, and transformers'
 * MPNet* classes): the relative position buckets against torch's, the
 * fields read and refused, the relative position bias's tensor and what it
 * changes, the daemon serving a directory, and text end to end
 * (tests/fixtures/hf/mpnet_text: tools/fixtures/make_text_fixtures.py, its
 * ids from Hugging Face's tokenizers on the mpnet tokenizer fixture, not
 * from this code).  The directories' outputs
 * and weights from token ids are check_embed's, check_v1_fixtures' and
 * check_v2's (tests/fixtures/mpnet, tools/fixtures/make_mpnet_fixtures.py);
 * their heads check_heads'; the bias on random shapes and masks against
 * the naive reference check_naive's. */
#include "daemon.h"
#include "hf_util.h"
#include "load/safetensors.h"
#include "model/model.h"
#include "suites.h"
#include "test_util.h"
#include "text_util.h"
#include "timing.h"
#include "v1_util.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MP_DIR  TESTS_DIR "/fixtures/mpnet"
#define MP_BASE MP_DIR "/mpnet_base"
#define MP_TEXT TESTS_DIR "/fixtures/hf/mpnet_text"
#define TOL     1e-4

/* enc_rel_bucket gives torch's bucket for every relative position the
 * fixture holds (-300 .. 300: the exact ones, the logarithmic ones and past
 * the maximum distance on both sides). */
START_TEST(test_buckets_match_torch)
{
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, MP_DIR "/buckets.safetensors", &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, "relative_position");
    ck_assert(t && t->ndim == 1);
    const size_t n = (size_t)t->shape[0];
    int32_t *rel = hf_ints(&f, "relative_position", n), *bucket = hf_ints(&f, "bucket", n);
    ck_assert(rel && bucket);
    int lo = 0, hi = 0;
    for (size_t k = 0; k < n; k++) {
        ck_assert_msg(enc_rel_bucket(rel[k]) == bucket[k],
                      "relative position %d: bucket %d, torch %d", rel[k], enc_rel_bucket(rel[k]),
                      bucket[k]);
        lo = rel[k] < lo ? rel[k] : lo;
        hi = rel[k] > hi ? rel[k] : hi;
    }
    ck_assert_int_le(lo, -2 * ENC_REL_MAX_DISTANCE);
    ck_assert_int_ge(hi, 2 * ENC_REL_MAX_DISTANCE);
    free(rel);
    free(bucket);
    st_close(&f);
}
END_TEST

/* config.json as MPNetConfig has it: BERT's post-norm block with biases,
 * gelu, eps 1e-5, a 32-row bias table; the embedding module RoBERTa's
 * positions from padding_idx 1, no token types. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(MP_BASE, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "mpnet");
    ck_assert_int_eq(c.hp.rel_buckets, ENC_REL_BUCKETS);
    ck_assert(!c.hp.norm_first && c.hp.bias);
    ck_assert_int_eq(c.hp.activation, ENC_ACT_GELU);
    ck_assert_int_eq(c.hp.position, ENC_POS_NONE);
    ck_assert_float_eq(c.hp.layer_norm_eps, 1e-5f);
    ck_assert_int_eq(c.type_vocab_size, 0);
    enc_model *m = hf_load(MP_BASE);
    ck_assert_str_eq(enc_model_architecture(m), "mpnet");
    const enc_embedding_info *e = enc_model_embedding(m);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(e->position, "roberta");
    ck_assert_int_eq(e->padding_idx, 1);
    ck_assert_int_eq(e->type_vocab_size, 0);
    ck_assert_ptr_nonnull(m->rel_bias);
    enc_model_free(m);
}
END_TEST

/* One forward of dir's ids.safetensors on m: the largest difference from
 * its out. */
static double ids_diff(const char *dir, const enc_model *m)
{
    ids_fx c;
    ids_fx_load(&c, dir);
    enc_ids ids = {.input_ids = c.input_ids};
    enc_batch in = batch_plain(NULL, c.B, c.L, c.lengths);
    in.ids = &ids;
    const size_t n = (size_t)c.B * c.L * c.D;
    float *out = xcalloc(n, sizeof *out), *want = ids_fx_want(&c, -1);
    enc_result res = {.out = out};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    const double d = max_abs_diff(out, want, n);
    enc_workspace_free(ws);
    free(out);
    free(want);
    ids_fx_free(&c);
    return d;
}

/* The bias is what makes the outputs the reference's: without it (the
 * table zeroed) they move far past the tolerance.  config.json's
 * pad_token_id does not move the positions: MPNetEmbeddings counts them
 * from its own padding_idx, 1, whatever the file says. */
START_TEST(test_bias_and_padding_idx)
{
    enc_model *m = hf_load(MP_BASE);
    double d = ids_diff(MP_BASE, m);
    ck_assert_msg(d <= TOL, "outputs differ from the reference by %g", d);
    memset(m->rel_bias, 0, (size_t)m->hp.rel_buckets * m->hp.n_heads * sizeof *m->rel_bias);
    model_pack(m); /* the bias by distance follows the table */
    d = ids_diff(MP_BASE, m);
    ck_assert_msg(d > 1e-2, "without the relative position bias the outputs moved only %g", d);
    enc_model_free(m);

    static const char *const files[] = {"model.safetensors", "ids.safetensors", NULL};
    scratch s;
    scratch_make(&s, MP_BASE, "{\"pad_token_id\": 0}", NULL, files);
    m = hf_load(s.dir);
    ck_assert_int_eq(enc_model_embedding(m)->padding_idx, 1);
    d = ids_diff(s.dir, m);
    ck_assert_msg(d <= TOL, "pad_token_id 0: outputs differ from the reference by %g", d);
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* all-mpnet-base-v2's form: config.json says MPNetForMaskedLM (the class it
 * was trained as) over MPNetModel's tensors, no lm_head: the encoder is
 * served, its outputs the reference's, the head left out saying why. */
START_TEST(test_base_model_under_task_class)
{
    static const char *const files[] = {"model.safetensors", "ids.safetensors", NULL};
    scratch s;
    scratch_make(&s, MP_BASE, "{\"architectures\": [\"MPNetForMaskedLM\"]}", NULL, files);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "MPNetForMaskedLM");
    ck_assert_str_eq(enc_model_head_note(m),
                     "its tensors (lm_head.dense.weight, ...) are not in the files");
    const double d = ids_diff(s.dir, m);
    ck_assert_msg(d <= TOL, "outputs differ from the reference by %g", d);
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* A bad MPNet directory is refused naming the field or the tensor; attnd
 * itself refuses one at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"relative_attention_num_buckets\": 16}",
         "config.json: relative_attention_num_buckets (16) is below 32: MPNet buckets relative "
         "positions into 32 whatever it says"},
        {"{\"relative_attention_num_buckets\": \"32\"}",
         "config.json: 'relative_attention_num_buckets' is not a positive integer"},
        {"{\"relative_attention_num_buckets\": 0}",
         "config.json: 'relative_attention_num_buckets' is not a positive integer"},
        /* a table larger than the file's */
        {"{\"relative_attention_num_buckets\": 64}",
         "tensor 'encoder.relative_attention_bias.weight' has shape [32, 4], expected [64, 4]"},
        {"{\"hidden_act\": \"tanh\"}", "config.json: hidden_act 'tanh' is not supported"},
        {"{\"num_hidden_layers\": 3}", "missing tensor 'encoder.layer.2.attention.attn.q.weight'"},
        {"{\"num_hidden_layers\": 1}",
         "unexpected tensor 'encoder.layer.1.attention.LayerNorm.bias' (config.json: "
         "num_hidden_layers 1)"},
    };
    refused_edits(MP_BASE, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(MP_BASE, "{\"relative_attention_num_buckets\": 8}",
                         "config.json: relative_attention_num_buckets (8) is below 32");
}
END_TEST

/* The daemon serves a directory: /v1/model names the architecture and the
 * bias (its buckets, distance and rows); /v1/encode from token ids gives the
 * reference's outputs. */
START_TEST(test_daemon_serves_mpnet)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", MP_BASE, NULL}, NULL),
                     0);
    http_resp r;
    ck_assert_int_eq(http_do(d.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *info = json_loads(r.body, 0, NULL);
    http_resp_free(&r);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(info, "weights"), "architecture")),
        "mpnet");
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "position")), "none");
    const json_t *rb = json_object_get(hp, "relative_bias");
    ck_assert_msg(json_is_object(rb), "no relative_bias in /v1/model");
    ck_assert_int_eq(json_integer_value(json_object_get(rb, "buckets")), 32);
    ck_assert_int_eq(json_integer_value(json_object_get(rb, "max_distance")), 128);
    ck_assert_int_eq(json_integer_value(json_object_get(rb, "rows")), 32);
    json_decref(info);

    ids_fx c;
    ids_fx_load(&c, MP_BASE);
    char *body = ids_body(&c, IDS_PADDED, 0, NULL);
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", (long)r.status, r.body);
    json_t *resp = json_loads(r.body, 0, NULL);
    float *want = ids_fx_want(&c, -1), *lf = xcalloc((size_t)c.B, sizeof *lf);
    for (int b = 0; b < c.B; b++)
        lf[b] = (float)c.lengths[b];
    const double worst = outputs_diff(json_object_get(resp, "outputs"), want, c.B, c.L, c.D, lf);
    ck_assert_msg(worst <= TOL, "outputs differ from the reference by %g", worst);
    json_decref(resp);
    http_resp_free(&r);
    free(body);
    free(want);
    free(lf);
    ids_fx_free(&c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* all-mpnet-base-v2's path, text in: /v1/encode gives Hugging Face's ids
 * (<s> ... </s>; a pair <s> A </s> </s> B </s>) and PyTorch's
 * last_hidden_state of them; /v1/embeddings sentence-transformers' mean
 * pooled, normalized embeddings, as the directory's modules.json says. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", MP_TEXT, NULL}, NULL),
                     0);
    text_matches_fixture(d.port, MP_TEXT, "mean_normalized", TOL);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *mpnet_suite(void)
{
    Suite *s = timed_suite("mpnet");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_buckets_match_torch);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_bias_and_padding_idx);
    tcase_add_test(tc, test_base_model_under_task_class);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_daemon_serves_mpnet);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
