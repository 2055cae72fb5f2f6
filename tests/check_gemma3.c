/* check_gemma3.c - Gemma 3 directories (config.json model_type gemma3_text
 * with use_bidirectional_attention: google/embeddinggemma-300m and its
 * fine-tunes): the fields read and refused, the tensors bound (the norms'
 * 1 + w, q_norm holding the scale of query_pre_attn_scalar, the four
 * norms of a layer), the fast and the naive forward with sublayer norms
 * and the sliding layers' window, and text end to end against
 * tests/fixtures/hf/gemma3_text (tools/fixtures/make_text_fixtures.py: the
 * ids from Hugging Face's tokenizers on the gemma3 tokenizer fixture; the
 * outputs from tools/fixtures/gemma3_reference.py's forward written after
 * transformers' modeling_gemma3.py, checked against its float64
 * formulation; mean pooling, two Dense modules, Normalize, as
 * sentence-transformers runs EmbeddingGemma). */
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

#define GEMMA3 TESTS_DIR "/fixtures/hf/gemma3_text"
#define TOL    1e-4

/* EmbeddingGemma-300m's config.json (shrunk, transformers 4.57's form):
 * hidden 32, 4 heads of 16 (64 wide), one key/value head, tanh GeGLU,
 * RMSNorm eps 1e-6, layers sliding, full, sliding, full (layer_types),
 * sliding_window 8 (a window of 4 each side), bases 1e6 and 10000, scores
 * over sqrt(24), no bias. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(GEMMA3, &c, &err) == 0, "%s", err.message);
    const enc_hparams *hp = &c.hp;
    ck_assert_str_eq(c.model_type, "gemma3_text");
    ck_assert(hp->norm_first && !hp->bias && hp->final_norm && hp->qk_norm && hp->sublayer_norm);
    ck_assert(!hp->causal && !hp->first_norm_identity);
    ck_assert_int_eq(hp->norm, ENC_NORM_RMS);
    ck_assert_int_eq(hp->ffn, ENC_FFN_GEGLU);
    ck_assert_int_eq(hp->activation, ENC_ACT_GELU_TANH);
    ck_assert_int_eq(hp->position, ENC_POS_ROPE);
    ck_assert_int_eq(hp->rope_style, ENC_ROPE_NEOX);
    ck_assert_int_eq(hp->rope_dim, 0);
    ck_assert(hp->rope_theta == 1000000.0 && hp->rope_theta_local == 10000.0);
    ck_assert_int_eq(hp->global_every, 2);
    ck_assert_int_eq(hp->global_offset, 1);
    ck_assert_int_eq(hp->local_window, 4);
    ck_assert(enc_layer_local(hp, 0) && !enc_layer_local(hp, 1) && enc_layer_local(hp, 2) &&
              !enc_layer_local(hp, 3));
    ck_assert_int_eq(hp->d_model, 32);
    ck_assert_int_eq(hp->n_heads, 4);
    ck_assert_int_eq(hp->n_kv_heads, 1);
    ck_assert_int_eq(enc_head_dim(hp), 16);
    ck_assert_int_eq(hp->d_ff, 48);
    ck_assert_int_eq(hp->n_layers, 4);
    ck_assert_float_eq(hp->layer_norm_eps, 1e-6f);
    ck_assert(c.query_pre_attn_scalar == 24.0);
    ck_assert_str_eq(c.key_rope_theta, "rope_theta");
    ck_assert_str_eq(c.key_rope_theta_local, "rope_local_base_freq");
    ck_assert_str_eq(c.key_global_every, "layer_types");
    enc_model *m = hf_load(GEMMA3);
    ck_assert_str_eq(enc_model_architecture(m), "gemma3_text");
    const enc_embedding_info *e = enc_model_embedding(m);
    ck_assert_int_eq(e->type_vocab_size, 0);
    ck_assert_str_eq(e->position, "rope");
    ck_assert_uint_eq(e->n_tensors, 1); /* embed_tokens alone */
    ck_assert_str_eq(e->tensors[0], "embed_tokens.weight");
    ck_assert_uint_eq(enc_model_param_count(m),
                      file_params_but(GEMMA3 "/model.safetensors", "embed_tokens.weight"));
    ck_assert_ptr_null(enc_model_head(m)); /* Gemma3TextModel: no head */
    enc_model_free(m);
}
END_TEST

/* Bound against the file itself: the Linears as they are (W1: gate_proj's
 * rows, the activated ones, then up_proj's); every norm's weight 1 + the
 * stored one (Gemma3RMSNorm), q_norm's times sqrt(16 / 24) besides (the
 * scores are over sqrt(query_pre_attn_scalar), attnd's over sqrt(E));
 * input_layernorm and pre_feedforward_layernorm before the sublayers,
 * post_attention_layernorm and post_feedforward_layernorm on their outputs. */
START_TEST(test_tensors_bound)
{
    enc_model *m = hf_load(GEMMA3);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, GEMMA3 "/model.safetensors", &err) == 0, "%s", err.message);
    ck_assert_int_eq(m->q_dim, 64);
    ck_assert_int_eq(m->qkv_dim, 96);
    const enc_layer *ly = &m->layers[2];
    const double q_scale = sqrt(16.0 / 24.0);
    const struct {
        const char *name;
        const float *got;
        int64_t rows, cols;
        double plus, times; /* got = (stored + plus) * times */
    } parts[] = {
        {"layers.2.self_attn.q_proj.weight", ly->w_q, 64, 32, 0, 1},
        {"layers.2.self_attn.k_proj.weight", ly->w_k, 16, 32, 0, 1},
        {"layers.2.self_attn.v_proj.weight", ly->w_v, 16, 32, 0, 1},
        {"layers.2.self_attn.o_proj.weight", ly->w_o, 32, 64, 0, 1},
        {"layers.2.mlp.gate_proj.weight", ly->w_1, 48, 32, 0, 1},
        {"layers.2.mlp.up_proj.weight", ly->w_g, 48, 32, 0, 1},
        {"layers.2.mlp.down_proj.weight", ly->w_2, 32, 48, 0, 1},
        {"layers.2.input_layernorm.weight", ly->ln1_w, 32, 0, 1, 1},
        {"layers.2.pre_feedforward_layernorm.weight", ly->ln2_w, 32, 0, 1, 1},
        {"layers.2.post_attention_layernorm.weight", ly->so1_w, 32, 0, 1, 1},
        {"layers.2.post_feedforward_layernorm.weight", ly->so2_w, 32, 0, 1, 1},
        {"layers.2.self_attn.q_norm.weight", ly->qn_w, 16, 0, 1, q_scale},
        {"layers.2.self_attn.k_norm.weight", ly->kn_w, 16, 0, 1, 1},
        {"norm.weight", m->final_w, 32, 0, 1, 1},
    };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        const st_tensor *t = st_find(&f, parts[i].name);
        ck_assert_msg(t != NULL, "%s", parts[i].name);
        ck_assert_int_eq(t->shape[0], parts[i].rows);
        if (parts[i].cols)
            ck_assert_int_eq(t->shape[1], parts[i].cols);
        for (size_t k = 0; k < t->numel; k++) {
            float stored;
            memcpy(&stored, t->data + k * sizeof stored, sizeof stored);
            const double want = ((double)stored + parts[i].plus) * parts[i].times;
            ck_assert_msg(fabs(parts[i].got[k] - want) <= 1e-6 * (1 + fabs(want)),
                          "%s[%zu]: %g, want %g", parts[i].name, k, (double)parts[i].got[k], want);
        }
    }
    ck_assert_ptr_null(ly->b_qkv); /* no bias anywhere */
    ck_assert_ptr_null(ly->b_1);
    ck_assert_ptr_null(ly->ln1_b);
    ck_assert_ptr_null(ly->so1_b);
    st_close(&f);
    enc_model_free(m);
}
END_TEST

/* The fast forward and the naive one on the fixture's ids give the
 * reference's last hidden state; without the sublayer norms, without the
 * sliding layers' window, or without q_norm and k_norm, both miss it by
 * far. */
START_TEST(test_forward_and_naive_match)
{
    hf_case k;
    hf_case_load(&k, GEMMA3);
    ck_assert_msg(k.longest > 2 * 4 + 1, "the window of 4 must bite: longest text %d", k.longest);
    for (int variant = 0; variant < 4; variant++) {
        enc_model *m = hf_load(GEMMA3);
        m->hp.sublayer_norm = variant != 1;
        if (variant == 2)
            m->hp.global_every = 1; /* every layer global */
        m->hp.qk_norm = variant != 3;
        static const char *const CHANGED[] = {NULL, "without the sublayer norms",
                                              "without the window", "without the q/k norms"};
        hf_case_expect(&k, m, CHANGED[variant], TOL, 1e-1);
        enc_model_free(m);
    }
    hf_case_free(&k);
}
END_TEST

/* transformers 5's form (rope_parameters per layer type, dtype) and the
 * fields' defaults: without layer_types, sliding_window_pattern (4.57's
 * _sliding_window_pattern; Gemma3TextConfig's 6) makes layer i full when
 * (i + 1) mod P = 0; without query_pre_attn_scalar, 256. */
START_TEST(test_5x_form_and_defaults)
{
    scratch s;
    scratch_make(&s, GEMMA3,
                 "{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", "
                 "\"rope_theta\": 5000.0}, \"sliding_attention\": {\"rope_type\": \"default\", "
                 "\"rope_theta\": 100.0}}, \"rope_theta\": null, \"rope_local_base_freq\": null, "
                 "\"dtype\": \"float32\", \"torch_dtype\": null}",
                 NULL, NULL);
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.rope_theta == 5000.0 && c.hp.rope_theta_local == 100.0);
    ck_assert_str_eq(c.key_rope_theta, "rope_parameters.full_attention.rope_theta");
    ck_assert_str_eq(c.key_rope_theta_local, "rope_parameters.sliding_attention.rope_theta");
    scratch_free(&s);
    static const struct {
        const char *edit;
        int every, offset;
    } patterns[] = {
        {"{\"layer_types\": null, \"_sliding_window_pattern\": null}", 6, 5}, /* all sliding */
        {"{\"layer_types\": null, \"_sliding_window_pattern\": 2}", 2, 1},
        {"{\"layer_types\": null, \"_sliding_window_pattern\": null, "
         "\"sliding_window_pattern\": 3}",
         3, 2},
        {"{\"layer_types\": null, \"_sliding_window_pattern\": 1}", 1, 0}, /* all full */
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"sliding_attention\"]}",
         4, 0},
    };
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
        scratch_make(&s, GEMMA3, patterns[i].edit, NULL, NULL);
        ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
        ck_assert_int_eq(c.hp.global_every, patterns[i].every);
        ck_assert_int_eq(c.hp.global_offset, patterns[i].offset);
        scratch_free(&s);
    }
    scratch_make(&s, GEMMA3, "{\"query_pre_attn_scalar\": null, \"sliding_window\": null}", NULL,
                 NULL);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.query_pre_attn_scalar == 256.0);
    ck_assert_int_eq(c.hp.local_window, 2048); /* sliding_window 4096 */
    scratch_free(&s);
}
END_TEST

/* What transformers computes otherwise is refused naming the field; attnd
 * itself refuses such a directory at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"use_bidirectional_attention\": false}",
         "config.json: use_bidirectional_attention is not true: a causal Gemma 3"},
        {"{\"use_bidirectional_attention\": null}",
         "config.json: use_bidirectional_attention is not true"},
        {"{\"attention_bias\": true}", "config.json: attention_bias true is not supported"},
        {"{\"attn_logit_softcapping\": 50.0}",
         "config.json: attn_logit_softcapping is not supported"},
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\", "
         "\"full_attention\"]}",
         "config.json: layer_types is not a pattern attnd computes (layer l full_attention "
         "exactly when l mod N = K, here N 2, K 0): layer 3 is full_attention"},
        {"{\"layer_types\": [\"full_attention\"]}",
         "config.json: 'layer_types' is not a list of num_hidden_layers (4) entries"},
        {"{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}}",
         "config.json: rope_scaling is not supported"},
        {"{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8.0, "
         "\"rope_theta\": 1000000}}}",
         "config.json: rope_parameters.full_attention.rope_type 'linear' is not supported"},
        {"{\"rope_parameters\": {\"rope_theta\": 1000000}}",
         "config.json: rope_parameters has 'rope_theta': Gemma3TextConfig reads one entry per "
         "layer type"},
        {"{\"hidden_activation\": \"relu\"}",
         "config.json: hidden_activation 'relu' is not supported"},
        {"{\"query_pre_attn_scalar\": 0}",
         "config.json: 'query_pre_attn_scalar' is not a positive number"},
        {"{\"num_key_value_heads\": 3}", "n_kv_heads (3) must divide n_heads (4)"},
        {"{\"rms_norm_eps\": 0}", "config.json: 'rms_norm_eps' is not a positive number"},
    };
    refused_edits(GEMMA3, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(GEMMA3, "{\"use_bidirectional_attention\": false}",
                         "config.json: use_bidirectional_attention is not true");
}
END_TEST

/* EmbeddingGemma's path, text in: Hugging Face's ids, the reference's
 * last_hidden_state of them, mean pooled, through the two Dense modules and
 * normalized as sentence-transformers gives it; /v1/model says what was
 * read, layer by layer. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", GEMMA3, NULL}, NULL), 0);
    text_matches_fixture(d.port, GEMMA3, "sentence_embedding", TOL);
    static const char LOCAL[] = "{\"attention\": \"local\", \"window\": 4, \"rope_theta\": 10000}";
    static const char FULL[] =
        "{\"attention\": \"global\", \"window\": null, \"rope_theta\": 1000000}";
    char want[1024];
    snprintf(want, sizeof want,
             "{\"head_dim\": 16, \"n_kv_heads\": 1, \"norm\": \"rmsnorm\", \"ffn\": \"geglu\", "
             "\"causal\": false, \"qk_norm\": true, \"sublayer_norm\": true, \"global_every\": 2, "
             "\"global_offset\": 1, \"layers\": [%s, %s, %s, %s]}",
             LOCAL, FULL, LOCAL, FULL);
    expect_hyperparameters(d.port, want);
    char *log = daemon_log(&d);
    ck_assert_msg(strstr(log, "attnd: positions: rope, neox, theta 1e+06, 16 of 16 dimensions") &&
                      strstr(log,
                             "attnd: layers: 2 of 4 local (each query seeing the keys within 4 "
                             "of it), rope theta 10000\n"),
                  "%s", log);
    free(log);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *gemma3_suite(void)
{
    Suite *s = timed_suite("gemma3");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_tensors_bound);
    tcase_add_test(tc, test_forward_and_naive_match);
    tcase_add_test(tc, test_5x_form_and_defaults);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
