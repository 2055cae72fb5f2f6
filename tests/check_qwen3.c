/* check_qwen3.c - Qwen3 directories (config.json model_type qwen3:
 * Qwen/Qwen3-Embedding-0.6B, -4B, -8B, served as an encoder): the fields
 * read and refused, the tensors bound (heads wider than hidden_size / H,
 * the per-head q_norm and k_norm, gate_proj's rows the activated ones), the
 * fast and the naive forward, causal on every layer, and text end to end
 * against tests/fixtures/hf/qwen3_text (tools/fixtures/make_text_fixtures.py:
 * the ids from Hugging Face's tokenizers on the qwen3 tokenizer fixture,
 * which appends <|endoftext|>; the outputs from
 * tools/fixtures/qwen3_reference.py's forward written after transformers'
 * modeling_qwen3.py, checked against its float64 formulation; last-token
 * pooling, then Normalize, as sentence-transformers). */
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

#define QWEN3 TESTS_DIR "/fixtures/hf/qwen3_text"
#define TOL   1e-4

/* Qwen3-Embedding-0.6B's config.json (shrunk, transformers 4.51's form):
 * hidden 32, 4 heads of 16 (64 wide), 2 key/value heads, SwiGLU, RMSNorm
 * eps 1e-6, rope_theta 1000000, no bias. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(QWEN3, &c, &err) == 0, "%s", err.message);
    const enc_hparams *hp = &c.hp;
    ck_assert_str_eq(c.model_type, "qwen3");
    ck_assert(hp->norm_first && !hp->bias && hp->final_norm && hp->qk_norm && hp->causal);
    ck_assert_int_eq(hp->norm, ENC_NORM_RMS);
    ck_assert_int_eq(hp->ffn, ENC_FFN_SWIGLU);
    ck_assert_int_eq(hp->position, ENC_POS_ROPE);
    ck_assert_int_eq(hp->rope_style, ENC_ROPE_NEOX);
    ck_assert_int_eq(hp->rope_dim, 0);
    ck_assert(hp->rope_theta == 1000000.0);
    ck_assert_int_eq(hp->d_model, 32);
    ck_assert_int_eq(hp->n_heads, 4);
    ck_assert_int_eq(hp->n_kv_heads, 2);
    ck_assert_int_eq(hp->head_dim, 16);
    ck_assert_int_eq(enc_head_dim(hp), 16);
    ck_assert_int_eq(hp->d_ff, 48);
    ck_assert_int_eq(hp->n_layers, 2);
    ck_assert_float_eq(hp->layer_norm_eps, 1e-6f);
    ck_assert_str_eq(c.key_eps, "rms_norm_eps");
    ck_assert_str_eq(c.key_rope_theta, "rope_theta");
    ck_assert_int_eq(c.vocab_size, 1003);
    enc_model *m = hf_load(QWEN3);
    ck_assert_str_eq(enc_model_architecture(m), "qwen3");
    const enc_embedding_info *e = enc_model_embedding(m);
    ck_assert_int_eq(e->type_vocab_size, 0);
    ck_assert_str_eq(e->position, "rope");
    ck_assert_uint_eq(e->n_tensors, 1); /* embed_tokens alone */
    ck_assert_str_eq(e->tensors[0], "embed_tokens.weight");
    /* the stack's parameters: every tensor of the file but embed_tokens */
    ck_assert_uint_eq(enc_model_param_count(m),
                      file_params_but(QWEN3 "/model.safetensors", "embed_tokens.weight"));
    ck_assert_ptr_null(enc_model_head(m)); /* Qwen3ForCausalLM's lm_head: not computed */
    enc_model_free(m);
    /* the work: q 64 wide, k and v 32 each, the out-projection 64 -> 32;
     * a causal layer scores L (L + 1) / 2 pairs */
    const double T = 2.0 * 10, D = 32, F = 48, Z = 64, KV = 32;
    const double linears =
        2 * T * D * (Z + 2 * KV) + 2 * T * Z * D + 2 * T * D * 2 * F + 2 * T * F * D;
    const double want = 2 * (linears + 4.0 * 2 * 4 * (10.0 * 11 / 2) * 16);
    ck_assert_msg(fabs(enc_forward_flops(hp, 2, 10) - want) < 1e-6 * want, "flops %g, want %g",
                  enc_forward_flops(hp, 2, 10), want);
}
END_TEST

/* Bound against the file itself: q_proj (64, 32) and o_proj (32, 64) as
 * they are; W1 holds gate_proj's rows (the activated ones) then up_proj's;
 * each layer's q_norm and k_norm (16 each); the final norm. */
START_TEST(test_tensors_bound)
{
    enc_model *m = hf_load(QWEN3);
    ck_assert_int_eq(m->q_dim, 64);
    ck_assert_int_eq(m->qkv_dim, 128);
    const enc_layer *ly = &m->layers[1];
    const bound_tensor parts[] = {
        {"layers.1.self_attn.q_proj.weight", ly->w_q, 64, 32},
        {"layers.1.self_attn.k_proj.weight", ly->w_k, 32, 32},
        {"layers.1.self_attn.v_proj.weight", ly->w_v, 32, 32},
        {"layers.1.self_attn.o_proj.weight", ly->w_o, 32, 64},
        {"layers.1.mlp.gate_proj.weight", ly->w_1, 48, 32},
        {"layers.1.mlp.up_proj.weight", ly->w_g, 48, 32},
        {"layers.1.mlp.down_proj.weight", ly->w_2, 32, 48},
        {"layers.1.input_layernorm.weight", ly->ln1_w, 32, 0},
        {"layers.1.post_attention_layernorm.weight", ly->ln2_w, 32, 0},
        {"layers.1.self_attn.q_norm.weight", ly->qn_w, 16, 0},
        {"layers.1.self_attn.k_norm.weight", ly->kn_w, 16, 0},
        {"norm.weight", m->final_w, 32, 0},
    };
    expect_bound(m, QWEN3 "/model.safetensors", parts, sizeof parts / sizeof *parts);
    ck_assert_ptr_null(ly->b_qkv); /* no bias anywhere */
    ck_assert_ptr_null(ly->b_1);
    ck_assert_ptr_null(ly->ln1_b);
    enc_model_free(m);
}
END_TEST

/* The fast forward and the naive one on the fixture's ids give the
 * reference's last hidden state; without q_norm and k_norm, or attending
 * both ways, both miss it by far. */
START_TEST(test_forward_and_naive_match)
{
    hf_case k;
    hf_case_load(&k, QWEN3);
    for (int variant = 0; variant < 3; variant++) { /* as is, no q/k norms, bidirectional */
        enc_model *m = hf_load(QWEN3);
        m->hp.qk_norm = variant != 1;
        m->hp.causal = variant != 2;
        k.in.mask.causal = m->hp.causal;
        static const char *const CHANGED[] = {NULL, "without the q/k norms", "bidirectional"};
        hf_case_expect(&k, m, CHANGED[variant], TOL, 1e-1);
        enc_model_free(m);
    }
    /* a batch that does not say causal is refused, naming the field */
    enc_model *m = hf_load(QWEN3);
    k.in.mask.causal = false;
    enc_workspace *ws = enc_workspace_new(m);
    enc_result res = {.out = k.out};
    enc_error err = {0};
    ck_assert_int_eq(enc_forward(m, ws, &k.in, &res, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "mask.causal is false, but this model attends causally"),
                  "%s", err.message);
    enc_workspace_free(ws);
    enc_model_free(m);
    hf_case_free(&k);
}
END_TEST

/* transformers 5's form: rope_parameters (its rope_theta read), layer_types
 * all full_attention, dtype; Qwen3Config's defaults where fields are
 * absent (num_key_value_heads: the heads; head_dim: hidden / heads, which
 * this file's q_proj then contradicts, naming the tensor). */
START_TEST(test_5x_form_and_defaults)
{
    scratch s;
    scratch_make(&s, QWEN3,
                 "{\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 5000.0}, "
                 "\"rope_theta\": null, \"layer_types\": [\"full_attention\", "
                 "\"full_attention\"], \"dtype\": \"float32\", \"torch_dtype\": null}",
                 NULL, NULL);
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.rope_theta == 5000.0);
    ck_assert_str_eq(c.key_rope_theta, "rope_parameters.rope_theta");
    scratch_free(&s);
    scratch_make(&s, QWEN3, "{\"rope_theta\": null}", NULL, NULL);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.rope_theta == 10000.0); /* Qwen3Config's default */
    ck_assert(c.hp.causal);
    scratch_free(&s);
    /* voyage-4-nano's and pplx-embed's field: attention both ways */
    scratch_make(&s, QWEN3, "{\"use_bidirectional_attention\": true}", NULL, NULL);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(!c.hp.causal);
    scratch_free(&s);
    static const char *const files[] = {"model.safetensors", NULL};
    scratch_make(&s, QWEN3, "{\"num_key_value_heads\": null, \"head_dim\": null}", NULL, files);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert_int_eq(c.hp.n_kv_heads, 4);
    ck_assert_int_eq(enc_head_dim(&c.hp), 8);
    refused(s.dir,
            "tensor 'layers.0.self_attn.q_proj.weight' has shape [64, 32], expected [32, 32]");
    scratch_free(&s);
}
END_TEST

/* What transformers computes otherwise is refused naming the field; attnd
 * itself refuses such a directory at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"attention_bias\": true}", "config.json: attention_bias true is not supported"},
        {"{\"use_sliding_window\": true}", "config.json: use_sliding_window true is not supported"},
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
         "config.json: layer_types[1] is not supported unless full_attention"},
        {"{\"layer_types\": [\"full_attention\"]}",
         "config.json: 'layer_types' is not a list of num_hidden_layers (2) entries"},
        {"{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}",
         "config.json: rope_scaling is not supported"},
        {"{\"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 1000000}}",
         "config.json: rope_parameters.rope_type 'yarn' is not supported"},
        {"{\"rope_parameters\": {\"rope_theta\": 1000000, \"partial_rotary_factor\": 0.5}}",
         "config.json: rope_parameters.partial_rotary_factor 0.5 is not supported"},
        {"{\"hidden_act\": \"relu\"}", "config.json: hidden_act 'relu' is not supported"},
        {"{\"num_key_value_heads\": 3}", "n_kv_heads (3) must divide n_heads (4)"},
        {"{\"head_dim\": 8}",
         "tensor 'layers.0.self_attn.q_proj.weight' has shape [64, 32], expected [32, 32]"},
        {"{\"rms_norm_eps\": 0}", "config.json: 'rms_norm_eps' is not a positive number"},
        {"{\"num_hidden_layers\": 1}", "unexpected tensor 'layers.1."},
    };
    refused_edits(QWEN3, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(QWEN3, "{\"use_sliding_window\": true}",
                         "config.json: use_sliding_window true is not supported");
}
END_TEST

/* Qwen3-Embedding's path, text in: Hugging Face's ids (<|endoftext|>
 * appended), the reference's last_hidden_state of them (causal), the last
 * token's state normalized as sentence-transformers' lasttoken Pooling and
 * Normalize give it; /v1/model says what was read; mask.causal false is
 * refused. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", QWEN3, NULL}, NULL), 0);
    text_matches_fixture(d.port, QWEN3, "sentence_embedding", TOL);
    expect_hyperparameters(d.port, "{\"head_dim\": 16, \"n_kv_heads\": 2, \"norm\": \"rmsnorm\", "
                                   "\"ffn\": \"swiglu\", \"causal\": true, \"qk_norm\": true}");
    json_t *info = model_info(d.port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(hp, "rope"), "dim")), 16);
    json_decref(info);
    expect_error_at(d.port, "/v1/encode", "{\"text\": \"a b\", \"mask\": {\"causal\": false}}", 400,
                    "mask.causal is false, but this model attends causally");
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *qwen3_suite(void)
{
    Suite *s = timed_suite("qwen3");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_tensors_bound);
    tcase_add_test(tc, test_forward_and_naive_match);
    tcase_add_test(tc, test_5x_form_and_defaults);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
