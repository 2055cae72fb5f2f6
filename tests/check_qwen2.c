/* check_qwen2.c - Qwen2 directories (config.json model_type qwen2:
 * Alibaba-NLP/gte-Qwen2-1.5B-instruct and -7B, served as an encoder): the
 * fields read and refused (is_causal false: attention both ways, as
 * gte-Qwen2's own code computes it; absent: causal), the tensors bound
 * (biases on q_proj, k_proj and v_proj, none on o_proj or the MLP; the
 * Linears read in place), the fast and the naive forward, and text end to
 * end against tests/fixtures/hf/qwen2_text (tools/fixtures/
 * make_text_fixtures.py: the ids from Hugging Face's tokenizers on the
 * qwen3 tokenizer fixture, Qwen2's own, which appends <|endoftext|>; the
 * outputs from tools/fixtures/qwen2_reference.py's forward written after
 * transformers' modeling_qwen2.py with gte-Qwen2's is_causal false, checked
 * against its float64 formulation; last-token pooling, then Normalize, as
 * sentence-transformers). */
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

#define QWEN2 TESTS_DIR "/fixtures/hf/qwen2_text"
#define TOL   1e-4

/* gte-Qwen2-1.5B-instruct's config.json (shrunk, transformers 4.41's
 * form): hidden 32, 4 heads of 8 (no head_dim: hidden / heads), 2
 * key/value heads, SwiGLU, RMSNorm eps 1e-6, rope_theta 1000000, biases,
 * is_causal false; without is_causal, causal (transformers' Qwen2Model). */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(QWEN2, &c, &err) == 0, "%s", err.message);
    const enc_hparams *hp = &c.hp;
    ck_assert_str_eq(c.model_type, "qwen2");
    ck_assert(hp->norm_first && hp->bias && hp->final_norm && !hp->qk_norm && !hp->causal);
    ck_assert_int_eq(hp->norm, ENC_NORM_RMS);
    ck_assert_int_eq(hp->ffn, ENC_FFN_SWIGLU);
    ck_assert_int_eq(hp->position, ENC_POS_ROPE);
    ck_assert_int_eq(hp->rope_style, ENC_ROPE_NEOX);
    ck_assert(hp->rope_theta == 1000000.0);
    ck_assert_int_eq(hp->d_model, 32);
    ck_assert_int_eq(hp->n_heads, 4);
    ck_assert_int_eq(hp->n_kv_heads, 2);
    ck_assert_int_eq(enc_head_dim(hp), 8);
    ck_assert_int_eq(hp->d_ff, 48);
    ck_assert_int_eq(hp->n_layers, 2);
    ck_assert_float_eq(hp->layer_norm_eps, 1e-6f);
    enc_model *m = hf_load(QWEN2);
    ck_assert_str_eq(enc_model_architecture(m), "qwen2");
    const enc_embedding_info *e = enc_model_embedding(m);
    ck_assert_int_eq(e->type_vocab_size, 0);
    ck_assert_uint_eq(e->n_tensors, 1); /* embed_tokens alone */
    /* the stack's parameters: every tensor of the file but embed_tokens */
    ck_assert_uint_eq(enc_model_param_count(m),
                      file_params_but(QWEN2 "/model.safetensors", "embed_tokens.weight"));
    ck_assert_ptr_null(enc_model_head(m)); /* Qwen2ForCausalLM's lm_head: not computed */
    enc_model_free(m);

    scratch s;
    scratch_make(&s, QWEN2, "{\"is_causal\": null}", NULL, NULL);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.causal);
    scratch_free(&s);
}
END_TEST

/* Bound against the file itself: the q, k and v biases in b_qkv (o_proj
 * and the MLP have none: zeros); gate_proj and up_proj, every Linear, read
 * in place in the file's mapping. */
START_TEST(test_tensors_bound)
{
    enc_model *m = hf_load(QWEN2);
    const enc_layer *ly = &m->layers[1];
    const bound_tensor parts[] = {
        {"layers.1.self_attn.q_proj.weight", ly->w_q, 32, 32},
        {"layers.1.self_attn.k_proj.weight", ly->w_k, 16, 32},
        {"layers.1.self_attn.v_proj.weight", ly->w_v, 16, 32},
        {"layers.1.self_attn.o_proj.weight", ly->w_o, 32, 32},
        {"layers.1.mlp.gate_proj.weight", ly->w_1, 48, 32},
        {"layers.1.mlp.up_proj.weight", ly->w_g, 48, 32},
        {"layers.1.mlp.down_proj.weight", ly->w_2, 32, 48},
        {"layers.1.self_attn.q_proj.bias", ly->b_qkv, 32, 0},
        {"layers.1.self_attn.k_proj.bias", ly->b_qkv + 32, 16, 0},
        {"layers.1.self_attn.v_proj.bias", ly->b_qkv + 48, 16, 0},
        {"layers.1.input_layernorm.weight", ly->ln1_w, 32, 0},
        {"layers.1.post_attention_layernorm.weight", ly->ln2_w, 32, 0},
        {"norm.weight", m->final_w, 32, 0},
    };
    expect_bound(m, QWEN2 "/model.safetensors", parts, sizeof parts / sizeof *parts);
    for (int i = 0; i < 32; i++)
        ck_assert(ly->b_o[i] == 0.0f && ly->b_2[i] == 0.0f);
    for (int i = 0; i < 96; i++)
        ck_assert(ly->b_1[i] == 0.0f);
    ck_assert_ptr_null(ly->qn_w);
    ck_assert_ptr_null(ly->ln1_b);
    enc_model_free(m);
}
END_TEST

/* The fast forward and the naive one on the fixture's ids give the
 * reference's last hidden state; attending causally, or without the q, k
 * and v biases, both miss it by far. */
START_TEST(test_forward_and_naive_match)
{
    hf_case k;
    hf_case_load(&k, QWEN2);
    for (int variant = 0; variant < 3; variant++) { /* as is, causal, no q/k/v biases */
        enc_model *m = hf_load(QWEN2);
        m->hp.causal = variant == 1;
        for (int l = 0; variant == 2 && l < m->hp.n_layers; l++)
            memset(m->layers[l].b_qkv, 0, (size_t)m->qkv_dim * sizeof(float));
        k.in.mask.causal = m->hp.causal;
        static const char *const CHANGED[] = {NULL, "causal", "without the q/k/v biases"};
        hf_case_expect(&k, m, CHANGED[variant], TOL, 1e-1);
        enc_model_free(m);
    }
    hf_case_free(&k);
}
END_TEST

/* use_bidirectional_attention true (TEI's reading, the field of the Qwen3
 * embedders that attend both ways) in place of is_causal false: the same
 * bidirectional model, the fixture's outputs again; false (or absent) with
 * is_causal absent: causal. */
START_TEST(test_bidirectional_flag)
{
    hf_case k;
    hf_case_load(&k, QWEN2);
    static const char *const files[] = {"model.safetensors", NULL};
    scratch s;
    scratch_make(&s, QWEN2, "{\"is_causal\": null, \"use_bidirectional_attention\": true}", NULL,
                 files);
    enc_model *m = hf_load(s.dir);
    ck_assert(!m->hp.causal);
    k.in.mask.causal = false;
    hf_case_expect(&k, m, NULL, TOL, 0.0);
    enc_model_free(m);
    scratch_free(&s);
    scratch_make(&s, QWEN2, "{\"is_causal\": null, \"use_bidirectional_attention\": false}", NULL,
                 NULL);
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.causal);
    scratch_free(&s);
    hf_case_free(&k);
}
END_TEST

/* What transformers (or gte-Qwen2's code) computes otherwise is refused
 * naming the field; attnd itself refuses such a directory at start-up in
 * one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"is_causal\": \"no\"}", "config.json: 'is_causal'"},
        {"{\"use_bidirectional_attention\": 1}",
         "config.json: 'use_bidirectional_attention' is not true or false"},
        {"{\"use_sliding_window\": true}", "config.json: use_sliding_window true is not supported"},
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
         "config.json: layer_types[1] is not supported unless full_attention"},
        {"{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}",
         "config.json: rope_scaling is not supported"},
        {"{\"rope_parameters\": {\"rope_theta\": 1000000, \"partial_rotary_factor\": 0.5}}",
         "config.json: rope_parameters.partial_rotary_factor 0.5 is not supported (Qwen2"},
        {"{\"hidden_act\": \"relu\"}", "config.json: hidden_act 'relu' is not supported"},
        {"{\"head_dim\": 16}",
         "tensor 'layers.0.self_attn.q_proj.weight' has shape [32, 32], expected [64, 32]"},
        {"{\"num_hidden_layers\": 1}", "unexpected tensor 'layers.1."},
    };
    refused_edits(QWEN2, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(QWEN2, "{\"use_sliding_window\": true}",
                         "config.json: use_sliding_window true is not supported");
}
END_TEST

/* gte-Qwen2's path, text in: Hugging Face's ids (<|endoftext|> appended),
 * the reference's last_hidden_state of them (both ways), the last token's
 * state normalized as sentence-transformers' lasttoken Pooling and
 * Normalize give it; /v1/model says what was read; a request may still ask
 * for the causal mask. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", QWEN2, NULL}, NULL), 0);
    text_matches_fixture(d.port, QWEN2, "sentence_embedding", TOL);
    expect_hyperparameters(d.port,
                           "{\"n_kv_heads\": 2, \"norm\": \"rmsnorm\", \"ffn\": \"swiglu\", "
                           "\"causal\": false, \"qk_norm\": false, \"bias\": true}");
    http_resp r;
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode",
                                    "{\"text\": \"a b\", \"mask\": {\"causal\": true}}", &r),
                     0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *qwen2_suite(void)
{
    Suite *s = timed_suite("qwen2");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_tensors_bound);
    tcase_add_test(tc, test_forward_and_naive_match);
    tcase_add_test(tc, test_bidirectional_flag);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
