/* check_gte.c - GTE directories (config.json model_type new:
 * gte-base-en-v1.5, gte-large-en-v1.5, gte-multilingual-base and its
 * reranker, whose repositories' auto_map names Alibaba-NLP/new-impl's
 * modeling code): the fields read and refused, the fused feed-forward's
 * halves swapped into attnd's order, RoPE's NTK scaling in the fast and the
 * naive forward, and text end to end against tests/fixtures/hf/gte_text
 * (tools/fixtures/make_text_fixtures.py: the ids from Hugging Face's
 * tokenizers on the bert-uncased tokenizer fixture, the outputs from
 * tools/fixtures/gte_reference.py's forward written after that modeling
 * code, checked against its float64 formulation). */
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

#define GTE TESTS_DIR "/fixtures/hf/gte_text"
#define TOL 1e-4

/* gte-base-en-v1.5's config.json (shrunk): BERT's post-norm block with
 * biases, GEGLU (hidden_act gelu: erf), RoPE on the whole head with
 * rope_theta 500000 and NTK scaling by 2, no token types (type_vocab_size
 * 0), eps 1e-12; NewModel, no head. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(GTE, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "new");
    ck_assert(!c.hp.norm_first && c.hp.bias);
    ck_assert_int_eq(c.hp.norm, ENC_NORM_LAYERNORM);
    ck_assert_int_eq(c.hp.ffn, ENC_FFN_GEGLU);
    ck_assert_int_eq(c.hp.activation, ENC_ACT_GELU);
    ck_assert_int_eq(c.hp.position, ENC_POS_ROPE);
    ck_assert_int_eq(c.hp.rope_style, ENC_ROPE_NEOX);
    ck_assert_int_eq(c.hp.rope_dim, 0);
    ck_assert(c.hp.rope_theta == 500000.0);
    ck_assert(c.hp.rope_ntk == 2.0);
    ck_assert_int_eq(c.hp.d_model, 48);
    ck_assert_int_eq(c.hp.n_heads, 4);
    ck_assert_int_eq(c.hp.d_ff, 64);
    ck_assert_int_eq(c.hp.n_layers, 2);
    ck_assert_float_eq(c.hp.layer_norm_eps, 1e-12f);
    ck_assert_int_eq(c.type_vocab_size, 0);
    ck_assert_int_eq(c.vocab_size, 3200);
    ck_assert_str_eq(c.key_rope_theta, "rope_theta");
    ck_assert_str_eq(c.key_rope_ntk, "rope_scaling.factor");
    enc_model *m = hf_load(GTE);
    ck_assert_str_eq(enc_model_architecture(m), "new");
    ck_assert_int_eq(enc_model_embedding(m)->type_vocab_size, 0);
    /* the stack's parameters: the file's encoder.layer.* elements, no more */
    ck_assert_uint_eq(enc_model_param_count(m), hf_stack_params(GTE));
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_ptr_null(enc_model_head_unsupported(m)); /* NewModel: no head, none left out */
    enc_model_free(m);
}
END_TEST

/* Bound against the file itself: up_gate_proj holds the up rows, then the
 * gate's (activated) ones; W1 is the activated rows, the second half, and
 * W_g the first; no bias for it (zeros); qkv_proj as one tensor,
 * down_proj and mlp_ln as the second Linear and norm. */
START_TEST(test_gate_halves_swapped)
{
    enc_model *m = hf_load(GTE);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, GTE "/model.safetensors", &err) == 0, "%s", err.message);
    const int D = 48, F = 64;
    const enc_layer *ly = &m->layers[1];
    const st_tensor *t = st_find(&f, "encoder.layer.1.mlp.up_gate_proj.weight");
    ck_assert(t && t->ndim == 2 && t->shape[0] == 2 * F && t->shape[1] == D);
    const float *file = (const float *)(const void *)t->data;
    const size_t half = (size_t)F * D * sizeof(float);
    ck_assert_msg(memcmp(ly->w_1, file + (size_t)F * D, half) == 0, "W1: the file's second half");
    ck_assert_msg(memcmp(ly->w_g, file, half) == 0, "W_g: the file's first half");
    ck_assert_ptr_null(st_find(&f, "encoder.layer.1.mlp.up_gate_proj.bias"));
    ck_assert_ptr_nonnull(ly->b_1);
    for (int i = 0; i < 2 * F; i++)
        ck_assert(ly->b_1[i] == 0.0f);
    static const struct {
        const char *name;
        int which, n;
    } parts[] = {
        {"encoder.layer.1.attention.qkv_proj.weight", 0, 3 * 48 * 48},
        {"encoder.layer.1.attention.qkv_proj.bias", 1, 3 * 48},
        {"encoder.layer.1.attention.o_proj.weight", 2, 48 * 48},
        {"encoder.layer.1.mlp.down_proj.weight", 3, 48 * 64},
        {"encoder.layer.1.mlp.down_proj.bias", 4, 48},
        {"encoder.layer.1.attn_ln.weight", 5, 48},
        {"encoder.layer.1.mlp_ln.bias", 6, 48},
    };
    const float *got[] = {ly->w_q, ly->b_qkv, ly->w_o, ly->w_2, ly->b_2, ly->ln1_w, ly->ln2_b};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        const st_tensor *p = st_find(&f, parts[i].name);
        ck_assert_ptr_nonnull(p);
        ck_assert_msg(memcmp(got[parts[i].which], p->data, (size_t)parts[i].n * sizeof(float)) == 0,
                      "%s", parts[i].name);
    }
    st_close(&f);
    enc_model_free(m);
}
END_TEST

/* The fast forward and the naive one (each its own way of writing NTK's
 * frequencies: (theta f)^(-2k/d) / f^(2/d), and theta^(-2k/d) f^(-(2k+2)/d))
 * on the fixture's ids give the reference's last hidden state; without the
 * scaling (rope_ntk 1) both miss it by far. */
START_TEST(test_forward_and_naive_match)
{
    hf_case k;
    hf_case_load(&k, GTE);
    for (int scaled = 1; scaled >= 0; scaled--) {
        enc_model *m = hf_load(GTE);
        if (!scaled)
            m->hp.rope_ntk = 1.0;
        hf_case_expect(&k, m, scaled ? NULL : "unscaled RoPE", TOL, 1e-2);
        enc_model_free(m);
    }
    hf_case_free(&k);
}
END_TEST

/* rope_scaling's factor as the modeling code takes it: it scales only past
 * 1 (its cache is rebuilt only for more positions than
 * max_position_embeddings), so 1 and below are no scaling. */
START_TEST(test_ntk_factor_read)
{
    static const struct {
        const char *edit;
        double ntk;
        const char *key;
    } cases[] = {
        {"{\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 8.0}}", 8.0, "rope_scaling.factor"},
        {"{\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 1.0}}", 1.0, "rope_scaling.factor"},
        {"{\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 0.5}}", 1.0, "rope_scaling.factor"},
        {"{\"rope_scaling\": null}", 1.0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, GTE, cases[i].edit, NULL, NULL);
        enc_hf_config c;
        enc_error err = {0};
        ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
        ck_assert_msg(c.hp.rope_ntk == cases[i].ntk, "%s: rope_ntk %g", cases[i].edit,
                      c.hp.rope_ntk);
        if (cases[i].key)
            ck_assert_str_eq(c.key_rope_ntk, cases[i].key);
        else
            ck_assert_ptr_null(c.key_rope_ntk);
        scratch_free(&s);
    }
    /* the setting against the directory's: the field named */
    attnd_config cfg;
    char msg[512];
    config_try(&cfg, (const char *const[]){"--model-dir", GTE, "--rope-ntk", "4", NULL}, NULL, msg,
               sizeof msg);
    ck_assert_msg(strstr(msg, "model.rope_ntk: --rope-ntk gives 4, but") &&
                      strstr(msg, "config.json: rope_scaling.factor is 2"),
                  "%s", msg);
    config_try(&cfg, (const char *const[]){"--rope-ntk", "0.5", NULL}, NULL, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "rope_ntk (0.5) must be 1 or more"), "%s", msg);
}
END_TEST

/* What the modeling code computes otherwise is refused naming the field;
 * attnd itself refuses such a directory at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"position_embedding_type\": \"absolute\"}",
         "config.json: position_embedding_type 'absolute' is not supported for model_type new "
         "(rope)"},
        {"{\"layer_norm_type\": \"rms_norm\"}",
         "config.json: layer_norm_type is not supported unless layer_norm (rms_norm: RMSNorm)"},
        {"{\"logn_attention_scale\": true}",
         "config.json: logn_attention_scale true is not supported (queries scaled by log_512 of "
         "each text's length)"},
        {"{\"pack_qkv\": false}", "config.json: pack_qkv false is not supported"},
        {"{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}",
         "config.json: rope_scaling is not supported unless its type is ntk"},
        {"{\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 2.0, \"mixed_b\": 0.5}}",
         "config.json: rope_scaling.mixed_b is not supported"},
        {"{\"rope_scaling\": {\"type\": \"ntk\"}}", "config.json: missing 'rope_scaling.factor'"},
        {"{\"rope_scaling\": {\"type\": \"ntk\", \"factor\": -1}}",
         "config.json: 'rope_scaling.factor' is not a positive number"},
        {"{\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000}}",
         "config.json: rope_parameters is not supported for model_type new"},
        {"{\"hidden_act\": \"relu\"}", "config.json: hidden_act 'relu' is not supported"},
        {"{\"intermediate_size\": 32}",
         "tensor 'encoder.layer.0.mlp.up_gate_proj.weight' has 128 rows; ffn geglu needs 2 x "
         "d_ff = 64"},
        /* token types this file has no table for */
        {"{\"type_vocab_size\": 2}", "embeddings.token_type_embeddings.weight"},
        {"{\"num_hidden_layers\": 1}", "unexpected tensor 'encoder.layer.1."},
    };
    refused_edits(GTE, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(GTE, "{\"logn_attention_scale\": true}",
                         "config.json: logn_attention_scale true is not supported");
}
END_TEST

/* gte-base-en-v1.5's path, text in: Hugging Face's ids (a pair's second
 * text token type 1, which this model has no table for: it changes
 * nothing), the reference's last_hidden_state of them, sentence-
 * transformers' CLS pooled, normalized embeddings; /v1/model's
 * hyperparameters say what was read. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", GTE, NULL}, NULL), 0);
    text_matches_fixture(d.port, GTE, "sentence_embedding", TOL);
    json_t *info = model_info(d.port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "ffn")), "geglu");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "position")), "rope");
    const json_t *rope = json_object_get(hp, "rope");
    ck_assert(json_real_value(json_object_get(rope, "theta")) == 500000.0);
    ck_assert(json_real_value(json_object_get(rope, "ntk")) == 2.0);
    ck_assert_int_eq(json_integer_value(json_object_get(rope, "dim")), 12);
    json_decref(info);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *gte_suite(void)
{
    Suite *s = timed_suite("gte");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_gate_halves_swapped);
    tcase_add_test(tc, test_forward_and_naive_match);
    tcase_add_test(tc, test_ntk_factor_read);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
