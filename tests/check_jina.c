/* check_jina.c - JinaBERT directories (config.json model_type bert with
 * feed_forward_type geglu and position_embedding_type alibi:
 * jina-embeddings-v2, whose repositories' auto_map names the code of
 * jina-bert-implementation): the fields read and refused, the gated
 * feed-forward's one bias-free tensor and its slopes, and text end to end
 * against tests/fixtures/hf/jina_text (tools/fixtures/make_text_fixtures.py:
 * the ids from Hugging Face's tokenizers on the bert-uncased tokenizer
 * fixture, the outputs from tools/fixtures/jina_reference.py's forward
 * written after that modeling code, checked against its float64
 * formulation). */
#include "daemon.h"
#include "hf_util.h"
#include "load/safetensors.h"
#include "model/model.h"
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
#include <unistd.h>

#define JINA      TESTS_DIR "/fixtures/hf/jina_text"
#define JINA_CODE TESTS_DIR "/fixtures/hf/jina_code_text"
#define TOL       1e-4

/* jina-embeddings-v2-base-en's config.json (shrunk): BERT's post-norm block
 * with biases, the GEGLU feed-forward (feed_forward_type geglu: exact GELU
 * whatever hidden_act says), ALiBi in place of position embeddings, two
 * token types; JinaBertForMaskedLM, the published architectures entry, is
 * its code's class: not read. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(JINA, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "bert");
    ck_assert(!c.hp.norm_first && c.hp.bias);
    ck_assert_int_eq(c.hp.norm, ENC_NORM_LAYERNORM);
    ck_assert_int_eq(c.hp.ffn, ENC_FFN_GEGLU);
    ck_assert_int_eq(c.hp.activation, ENC_ACT_GELU);
    ck_assert_int_eq(c.hp.position, ENC_POS_ALIBI);
    ck_assert_int_eq(c.hp.d_model, 48);
    ck_assert_int_eq(c.hp.n_heads, 6);
    ck_assert_int_eq(c.hp.d_ff, 64);
    ck_assert_int_eq(c.hp.n_layers, 2);
    ck_assert_float_eq(c.hp.layer_norm_eps, 1e-12f);
    ck_assert_int_eq(c.type_vocab_size, 2);
    ck_assert_int_eq(c.vocab_size, 3200);
    ck_assert_str_eq(c.key_activation, "feed_forward_type");
    ck_assert_str_eq(c.activation, "geglu");
    enc_model *m = hf_load(JINA);
    ck_assert_str_eq(enc_model_architecture(m), "bert");
    ck_assert_int_eq(enc_model_embedding(m)->type_vocab_size, 2);
    /* the stack's parameters: the file's encoder.layer.* elements, no more */
    ck_assert_uint_eq(enc_model_param_count(m), hf_stack_params(JINA));
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "JinaBertForMaskedLM");
    ck_assert_str_eq(enc_model_head_note(m), "");
    enc_model_free(m);
}
END_TEST

/* Bound against the file itself: gated_layers' rows as W1 (the activated
 * ones first, as the modeling code slices them), no bias for it (zeros),
 * wo and mlp.layernorm as the second Linear and norm.  Six heads take the
 * paper's rule for a count that is not a power of two: the four of 4
 * (2^-2, 2^-4, 2^-6, 2^-8), then every other of 8's (2^-1, 2^-3). */
START_TEST(test_gate_and_slopes)
{
    enc_model *m = hf_load(JINA);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, JINA "/model.safetensors", &err) == 0, "%s", err.message);
    const int F = 64;
    const enc_layer *ly = &m->layers[1];
    static const struct {
        const char *name;
        int which, n;
    } parts[] = {
        {"encoder.layer.1.mlp.gated_layers.weight", 1, 2 * 64 * 48},
        {"encoder.layer.1.mlp.wo.weight", 2, 48 * 64},
        {"encoder.layer.1.mlp.wo.bias", 3, 48},
        {"encoder.layer.1.mlp.layernorm.weight", 4, 48},
        {"encoder.layer.1.mlp.layernorm.bias", 5, 48},
    };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        const float *got[] = {NULL, ly->w_1, ly->w_2, ly->b_2, ly->ln2_w, ly->ln2_b};
        const st_tensor *t = st_find(&f, parts[i].name);
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(memcmp(got[parts[i].which], t->data, (size_t)parts[i].n * sizeof(float)) == 0,
                      "%s", parts[i].name);
    }
    ck_assert_ptr_null(st_find(&f, "encoder.layer.1.mlp.gated_layers.bias"));
    ck_assert_ptr_nonnull(ly->b_1);
    for (int i = 0; i < 2 * F; i++)
        ck_assert(ly->b_1[i] == 0.0f);
    static const double want[] = {-2, -4, -6, -8, -1, -3};
    ck_assert_ptr_nonnull(m->alibi);
    for (int h = 0; h < 6; h++)
        ck_assert_msg(fabs(m->alibi[h] - pow(2.0, want[h])) < 1e-7, "head %d: %g", h,
                      (double)m->alibi[h]);
    st_close(&f);
    enc_model_free(m);
}
END_TEST

/* A task class of JinaBERT's own code other than the reranker's
 * (tests/fixtures/heads/jina_rerank): the encoder is served, the head left
 * out saying which class. */
START_TEST(test_task_class_left_out)
{
    static const char *const files[] = {"model.safetensors", NULL};
    scratch s;
    scratch_make(&s, JINA, "{\"architectures\": [\"JinaBertForTokenClassification\"]}", NULL,
                 files);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "JinaBertForTokenClassification");
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* A safetensors file of one F32 tensor of n zeros named name. */
static void write_one_tensor(const char *path, const char *name, int n)
{
    char header[256];
    int len = snprintf(header, sizeof header,
                       "{\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[0,%d]}}", name,
                       n, n * 4);
    while (len % 8)
        header[len++] = ' ';
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    uint8_t size[8] = {0};
    for (int i = 0; i < 8; i++)
        size[i] = (uint8_t)((uint64_t)len >> (8 * i));
    float *zeros = calloc((size_t)n, sizeof *zeros);
    ck_assert(fwrite(size, 1, 8, fp) == 8 && fwrite(header, 1, (size_t)len, fp) == (size_t)len &&
              fwrite(zeros, sizeof *zeros, (size_t)n, fp) == (size_t)n);
    free(zeros);
    ck_assert_int_eq(fclose(fp), 0);
}

/* What the modeling code computes otherwise is refused naming the field or
 * the tensor; attnd itself refuses such a directory at start-up in one
 * line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"feed_forward_type\": \"reglu\"}",
         "config.json: feed_forward_type 'reglu' is not supported (geglu, original): a ReLU gate"},
        {"{\"feed_forward_type\": \"swiglu\"}",
         "config.json: feed_forward_type 'swiglu' is not supported (geglu, original)"},
        {"{\"feed_forward_type\": 3}", "feed_forward_type '(not a string)' is not supported"},
        {"{\"model_type\": \"roberta\"}",
         "config.json: feed_forward_type is not supported for model_type roberta (JinaBERT's "
         "field: model_type bert)"},
        /* BERT's feed-forward, which this file has not */
        {"{\"feed_forward_type\": \"original\"}",
         "missing tensor 'encoder.layer.0.intermediate.dense.weight'"},
        {"{\"intermediate_size\": 32}",
         "tensor 'encoder.layer.0.mlp.gated_layers.weight' has 128 rows; ffn geglu needs 2 x "
         "d_ff = 64"},
        /* positions in the embeddings: the table this file has not */
        {"{\"position_embedding_type\": \"absolute\"}", "embeddings.position_embeddings.weight"},
        {"{\"num_hidden_layers\": 1}", "unexpected tensor 'encoder.layer.1."},
    };
    refused_edits(JINA, cases, sizeof cases / sizeof *cases);
    /* jina-embeddings-v2-base-code's layout (LayerNorms on queries and keys):
     * the file here in two shards, the second with layer 0's layer_norm_q */
    scratch s;
    scratch_make(&s, JINA, "{}", NULL, NULL);
    char path[256], target[256];
    snprintf(path, sizeof path, "%s/a.safetensors", s.dir);
    snprintf(target, sizeof target, "%s/model.safetensors", JINA);
    ck_assert_int_eq(symlink(target, path), 0);
    snprintf(path, sizeof path, "%s/b.safetensors", s.dir);
    write_one_tensor(path, "encoder.layer.0.attention.self.layer_norm_q.weight", 48);
    scratch_write(&s, "model.safetensors.index.json",
                  "{\"weight_map\": {\"embeddings.word_embeddings.weight\": \"a.safetensors\", "
                  "\"encoder.layer.0.attention.self.layer_norm_q.weight\": \"b.safetensors\"}}");
    refused(s.dir, "tensor 'encoder.layer.0.attention.self.layer_norm_q.weight': JinaBERT's "
                   "qk-post-norm layout (jina-embeddings-v2-base-code's) without config.json's "
                   "auto_map naming jinaai/jina-bert-v2-qk-post-norm is not supported");
    scratch_free(&s);
    edit_startup_refused(JINA, "{\"feed_forward_type\": \"reglu\"}",
                         "config.json: feed_forward_type 'reglu' is not supported");
}
END_TEST

/* jina-embeddings-v2's path, text in: Hugging Face's ids (a pair's second
 * text token type 1, which this model reads), the reference's
 * last_hidden_state of them, sentence-transformers' mean pooled, normalized
 * embeddings; /v1/model's hyperparameters say what was read. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", JINA, NULL}, NULL), 0);
    text_matches_fixture(d.port, JINA, "mean_normalized", TOL);
    json_t *info = model_info(d.port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "ffn")), "geglu");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "position")), "alibi");
    ck_assert(json_is_true(json_object_get(hp, "bias")));
    json_decref(info);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* jina-embeddings-v2-base-code's config.json (shrunk): jina-embeddings-v2's
 * fields, its auto_map naming jina-bert-v2-qk-post-norm's code, which makes
 * the block that code's (hfconfig.c, read_feed_forward). */
START_TEST(test_code_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(JINA_CODE, &c, &err) == 0, "%s", err.message);
    ck_assert(!c.hp.norm_first && c.hp.bias && c.hp.qk_norm && c.hp.qk_norm_whole &&
              c.hp.double_residual && !c.hp.sublayer_norm);
    ck_assert_int_eq(c.hp.ffn, ENC_FFN_GEGLU);
    ck_assert_int_eq(c.hp.activation, ENC_ACT_GELU);
    ck_assert_int_eq(c.hp.position, ENC_POS_ALIBI);
    ck_assert_int_eq(c.hp.norm, ENC_NORM_LAYERNORM);
    /* jina-embeddings-v2-base-en's: the qk-post-norm block left off */
    ck_assert_msg(enc_hf_config_read(JINA, &c, &err) == 0, "%s", err.message);
    ck_assert(!c.hp.qk_norm && !c.hp.qk_norm_whole && !c.hp.double_residual);
}
END_TEST

/* Each tensor of the file where the block reads it: layer_norm_q / _k as the
 * whole query's and key's norms with their biases, attention.output.LayerNorm
 * as SO1, layer_norm_1 and layer_norm_2 as LN1 and LN2, up_gated_layer's
 * second half as the activated rows (w_1), its first as w_g, no bias for
 * it; the stack's parameters are the file's encoder.layer.* elements. */
START_TEST(test_code_tensors_bound)
{
    enc_model *m = hf_load(JINA_CODE);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, JINA_CODE "/model.safetensors", &err) == 0, "%s", err.message);
    const int D = 48, F = 64;
    for (int l = 0; l < 2; l++) {
        const enc_layer *ly = &m->layers[l];
        const struct {
            const char *name;
            const float *got;
            size_t n, off;
        } parts[] = {
            {"attention.self.layer_norm_q.weight", ly->qn_w, D, 0},
            {"attention.self.layer_norm_q.bias", ly->qn_b, D, 0},
            {"attention.self.layer_norm_k.weight", ly->kn_w, D, 0},
            {"attention.self.layer_norm_k.bias", ly->kn_b, D, 0},
            {"attention.output.LayerNorm.weight", ly->so1_w, D, 0},
            {"attention.output.LayerNorm.bias", ly->so1_b, D, 0},
            {"layer_norm_1.weight", ly->ln1_w, D, 0},
            {"layer_norm_1.bias", ly->ln1_b, D, 0},
            {"layer_norm_2.weight", ly->ln2_w, D, 0},
            {"layer_norm_2.bias", ly->ln2_b, D, 0},
            {"mlp.up_gated_layer.weight", ly->w_1, (size_t)F * D, (size_t)F * D},
            {"mlp.up_gated_layer.weight", ly->w_g, (size_t)F * D, 0},
            {"mlp.down_layer.weight", ly->w_2, (size_t)D * F, 0},
            {"mlp.down_layer.bias", ly->b_2, D, 0},
        };
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
            char name[128];
            snprintf(name, sizeof name, "encoder.layer.%d.%s", l, parts[i].name);
            const st_tensor *t = st_find(&f, name);
            ck_assert_ptr_nonnull(t);
            ck_assert_ptr_nonnull(parts[i].got);
            ck_assert_msg(memcmp(parts[i].got, (const float *)t->data + parts[i].off,
                                 parts[i].n * sizeof(float)) == 0,
                          "%s", name);
        }
        for (int i = 0; i < 2 * F; i++)
            ck_assert(ly->b_1[i] == 0.0f);
        ck_assert_ptr_null(ly->so2_w);
    }
    ck_assert_uint_eq(enc_model_param_count(m), hf_stack_params(JINA_CODE));
    st_close(&f);
    enc_model_free(m);
}
END_TEST

/* The fast forward and the naive one on the fixture's ids give the
 * reference's last hidden state; without the q and k norms, or with the
 * residual added once, both miss it by far. */
START_TEST(test_code_forward_and_naive)
{
    hf_case k;
    hf_case_load(&k, JINA_CODE);
    for (int drop = 0; drop < 3; drop++) { /* none, q and k norms, the second residual */
        enc_model *m = hf_load(JINA_CODE);
        m->hp.qk_norm = drop != 1;
        m->hp.double_residual = drop != 2;
        static const char *const CHANGED[] = {NULL, "without the q and k norms",
                                              "without the second residual"};
        hf_case_expect(&k, m, CHANGED[drop], TOL, 1e-2);
        enc_model_free(m);
    }
    hf_case_free(&k);
}
END_TEST

/* jina-embeddings-v2-base-code's path, text in, as jina_text's (bfloat16
 * and int8: the dtype suite's fixture directories); /v1/model says what
 * was read. */
START_TEST(test_code_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", JINA_CODE, NULL}, NULL),
                     0);
    text_matches_fixture(d.port, JINA_CODE, "mean_normalized", TOL);
    json_t *info = model_info(d.port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert(json_is_true(json_object_get(hp, "qk_norm")));
    ck_assert(json_is_true(json_object_get(hp, "qk_norm_whole")));
    ck_assert(json_is_true(json_object_get(hp, "double_residual")));
    json_decref(info);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* The code named without its layout, or its layout without the code named:
 * refused naming the tensor. */
START_TEST(test_code_mismatch_refused)
{
    static const config_refusal on_base[] = {
        {"{\"auto_map\": {\"AutoModel\": "
         "\"jinaai/jina-bert-v2-qk-post-norm--modeling_bert.JinaBertModel\"}}",
         "missing tensor 'encoder.layer.0.mlp.up_gated_layer.weight'"},
    };
    refused_edits(JINA, on_base, 1);
    static const config_refusal on_code[] = {
        {"{\"auto_map\": null}", "without config.json's auto_map naming "
                                 "jinaai/jina-bert-v2-qk-post-norm is not supported"},
    };
    refused_edits(JINA_CODE, on_code, 1);
}
END_TEST

Suite *jina_suite(void)
{
    Suite *s = timed_suite("jina");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_gate_and_slopes);
    tcase_add_test(tc, test_task_class_left_out);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_text_end_to_end);
    tcase_add_test(tc, test_code_config_read);
    tcase_add_test(tc, test_code_tensors_bound);
    tcase_add_test(tc, test_code_forward_and_naive);
    tcase_add_test(tc, test_code_text_end_to_end);
    tcase_add_test(tc, test_code_mismatch_refused);
    return s;
}
