/* check_mistral.c - Mistral directories (config.json model_type mistral:
 * intfloat/e5-mistral-7b-instruct, Salesforce/SFR-Embedding-Mistral,
 * Linq-AI-Research/Linq-Embed-Mistral, served as an encoder): the fields
 * read, defaulted and refused (sliding_window: causal attention within the
 * last W keys on every layer), the tensors bound (no bias anywhere), the
 * fast and the naive forward, and text end to end against
 * tests/fixtures/hf/mistral_text (tools/fixtures/make_text_fixtures.py: the
 * ids from Hugging Face's tokenizers on the llama-bpe tokenizer fixture
 * with </s> placed as add_eos_token places it; the outputs from
 * tools/fixtures/mistral_reference.py's forward written after
 * transformers' modeling_mistral.py with a window of 6 keys, checked
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

#define MISTRAL TESTS_DIR "/fixtures/hf/mistral_text"
#define TOL     1e-4
#define WINDOW  6 /* the fixture's sliding_window */

/* Mistral-7B's config.json (shrunk, transformers 4.34's form): hidden 32,
 * 4 heads of 8 (no head_dim), 2 key/value heads, SwiGLU, RMSNorm eps 1e-5,
 * rope_theta 10000, no bias, sliding_window 6: both layers local, each
 * query seeing its own key and the 5 before it. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(MISTRAL, &c, &err) == 0, "%s", err.message);
    const enc_hparams *hp = &c.hp;
    ck_assert_str_eq(c.model_type, "mistral");
    ck_assert(hp->norm_first && !hp->bias && hp->final_norm && !hp->qk_norm && hp->causal);
    ck_assert_int_eq(hp->norm, ENC_NORM_RMS);
    ck_assert_int_eq(hp->ffn, ENC_FFN_SWIGLU);
    ck_assert_int_eq(hp->position, ENC_POS_ROPE);
    ck_assert_int_eq(hp->rope_style, ENC_ROPE_NEOX);
    ck_assert(hp->rope_theta == 10000.0);
    ck_assert_int_eq(hp->d_model, 32);
    ck_assert_int_eq(hp->n_heads, 4);
    ck_assert_int_eq(hp->n_kv_heads, 2);
    ck_assert_int_eq(enc_head_dim(hp), 8);
    ck_assert_int_eq(hp->d_ff, 48);
    ck_assert_int_eq(hp->n_layers, 2);
    ck_assert_float_eq(hp->layer_norm_eps, 1e-5f);
    ck_assert_int_eq(hp->local_window, WINDOW - 1);
    ck_assert(enc_layer_local(hp, 0) && enc_layer_local(hp, 1));
    ck_assert_str_eq(c.key_local_window, "sliding_window - 1");
    enc_model *m = hf_load(MISTRAL);
    ck_assert_str_eq(enc_model_architecture(m), "mistral");
    const enc_embedding_info *e = enc_model_embedding(m);
    ck_assert_int_eq(e->type_vocab_size, 0);
    ck_assert_uint_eq(e->n_tensors, 1); /* embed_tokens alone */
    ck_assert_uint_eq(enc_model_param_count(m),
                      file_params_but(MISTRAL "/model.safetensors", "embed_tokens.weight"));
    ck_assert_ptr_null(enc_model_head(m)); /* MistralModel: no head */
    enc_model_free(m);
}
END_TEST

/* MistralConfig's defaults where fields are absent (sliding_window 4096,
 * num_key_value_heads 8) or null (no window; the heads), transformers 5's
 * rope_parameters, and the fields MistralModel does not read (is_causal,
 * layer_types) changing nothing; use_bidirectional_attention (TEI's) without
 * a window. */
START_TEST(test_defaults_and_5x_form)
{
    static const char *const no_window[] = {"sliding_window", NULL};
    static const char *const no_kv[] = {"num_key_value_heads", NULL};
    static const struct {
        const char *edit;
        const char *const *remove;
        int every, window, kv; /* window -1: none */
        double theta;
        bool causal;
    } cases[] = {
        {"{}", no_window, 3, 4095, 2, 10000.0, true},
        {"{\"sliding_window\": null}", NULL, 1, -1, 2, 10000.0, true},
        {"{\"sliding_window\": 1}", NULL, 3, 0, 2, 10000.0, true},
        {"{\"sliding_window\": 2000000}", NULL, 1, -1, 2, 10000.0, true}, /* beyond any sequence */
        {"{}", no_kv, 3, WINDOW - 1, 8, 10000.0, true},
        {"{\"num_key_value_heads\": null}", NULL, 3, WINDOW - 1, 4, 10000.0, true},
        {"{\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}, "
         "\"rope_theta\": null, \"dtype\": \"float32\", \"torch_dtype\": null}",
         NULL, 3, WINDOW - 1, 2, 1000000.0, true},
        {"{\"is_causal\": false, \"layer_types\": [\"full_attention\", \"full_attention\"]}", NULL,
         3, WINDOW - 1, 2, 10000.0, true},
        /* TEI's reading of the field, without a window */
        {"{\"use_bidirectional_attention\": true, \"sliding_window\": null}", NULL, 1, -1, 2,
         10000.0, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, MISTRAL, cases[i].edit, cases[i].remove, NULL);
        enc_hf_config c;
        enc_error err = {0};
        ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%zu: %s", i, err.message);
        ck_assert_msg(c.hp.global_every == cases[i].every, "%zu: global_every %d", i,
                      c.hp.global_every);
        if (cases[i].window >= 0)
            ck_assert_int_eq(c.hp.local_window, cases[i].window);
        ck_assert(enc_layer_local(&c.hp, 1) == (cases[i].window >= 0));
        ck_assert_int_eq(c.hp.n_kv_heads, cases[i].kv);
        ck_assert(c.hp.rope_theta == cases[i].theta && c.hp.causal == cases[i].causal);
        scratch_free(&s);
    }
}
END_TEST

/* Bound against the file itself: every Linear read in place, no bias
 * anywhere, no q / k norm. */
START_TEST(test_tensors_bound)
{
    enc_model *m = hf_load(MISTRAL);
    const enc_layer *ly = &m->layers[1];
    const bound_tensor parts[] = {
        {"layers.1.self_attn.q_proj.weight", ly->w_q, 32, 32},
        {"layers.1.self_attn.k_proj.weight", ly->w_k, 16, 32},
        {"layers.1.self_attn.v_proj.weight", ly->w_v, 16, 32},
        {"layers.1.self_attn.o_proj.weight", ly->w_o, 32, 32},
        {"layers.1.mlp.gate_proj.weight", ly->w_1, 48, 32},
        {"layers.1.mlp.up_proj.weight", ly->w_g, 48, 32},
        {"layers.1.mlp.down_proj.weight", ly->w_2, 32, 48},
        {"layers.1.input_layernorm.weight", ly->ln1_w, 32, 0},
        {"layers.1.post_attention_layernorm.weight", ly->ln2_w, 32, 0},
        {"norm.weight", m->final_w, 32, 0},
    };
    expect_bound(m, MISTRAL "/model.safetensors", parts, sizeof parts / sizeof *parts);
    ck_assert_ptr_null(ly->b_qkv);
    ck_assert_ptr_null(ly->b_1);
    ck_assert_ptr_null(ly->qn_w);
    ck_assert_ptr_null(ly->ln1_b);
    enc_model_free(m);
}
END_TEST

/* The fast forward and the naive one on the fixture's ids give the
 * reference's last hidden state; without the window, or attending both
 * ways within it, both miss it by far. */
START_TEST(test_forward_and_naive_match)
{
    hf_case k;
    hf_case_load(&k, MISTRAL);
    ck_assert_msg(k.longest > WINDOW + 2, "the window must bite: longest text %d", k.longest);
    for (int variant = 0; variant < 3; variant++) { /* as is, no window, not causal */
        enc_model *m = hf_load(MISTRAL);
        if (variant == 1)
            m->hp.global_every = 1;
        m->hp.causal = variant != 2;
        k.in.mask.causal = m->hp.causal;
        static const char *const CHANGED[] = {NULL, "without the window", "not causal"};
        hf_case_expect(&k, m, CHANGED[variant], TOL, 1e-1);
        enc_model_free(m);
    }
    hf_case_free(&k);
}
END_TEST

/* What transformers computes otherwise is refused naming the field; attnd
 * itself refuses such a directory at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"sliding_window\": 0}", "config.json: 'sliding_window' is not a positive integer"},
        {"{\"use_bidirectional_attention\": true}",
         "config.json: use_bidirectional_attention true with sliding_window 6 is not supported"},
        {"{\"sliding_window\": \"4096\"}",
         "config.json: 'sliding_window' is not a positive integer"},
        {"{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}",
         "config.json: rope_scaling is not supported"},
        {"{\"rope_parameters\": {\"rope_theta\": 10000, \"partial_rotary_factor\": 0.5}}",
         "config.json: rope_parameters.partial_rotary_factor 0.5 is not supported (Mistral"},
        {"{\"hidden_act\": \"relu\"}", "config.json: hidden_act 'relu' is not supported"},
        {"{\"num_key_value_heads\": 3}", "n_kv_heads (3) must divide n_heads (4)"},
        {"{\"head_dim\": 16}",
         "tensor 'layers.0.self_attn.q_proj.weight' has shape [32, 32], expected [64, 32]"},
        {"{\"num_hidden_layers\": 1}", "unexpected tensor 'layers.1."},
        {"{\"num_hidden_layers\": 256}",
         "config.json: a sliding_window over num_hidden_layers 256 is not supported (at most "
         "255)"},
    };
    refused_edits(MISTRAL, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(MISTRAL, "{\"sliding_window\": 0}",
                         "config.json: 'sliding_window' is not a positive integer");
    /* a causal LM's score tokens are Qwen's alone (no Mistral reranker of
     * that form is checked) */
    static const char *const files[] = {"model.safetensors", "tokenizer.json",
                                        "tokenizer_config.json", NULL};
    scratch s;
    scratch_make(&s, MISTRAL, "{\"architectures\": [\"MistralForCausalLM\"]}", NULL, files);
    startup_refused((const char *const[]){"--model-dir", s.dir, "--score-tokens", "5,6", NULL},
                    "MistralForCausalLM read as a reranker: attnd computes a causal LM's score "
                    "tokens for Qwen2 and Qwen3 (model_type 'mistral')",
                    1);
    scratch_free(&s);
}
END_TEST

/* model.* settings against the directory: its window named as
 * sliding_window - 1; the same values given again load. */
START_TEST(test_settings_against_directory)
{
    static const settings_refusal cases[] = {
        {{"--model-dir", MISTRAL, "--local-window", "6"},
         "model.local_window: --local-window gives 6, but " MISTRAL
         "/config.json: sliding_window - 1 is 5"},
        {{"--model-dir", MISTRAL, "--global-every", "1"},
         "config.json: a mistral model has global_every 3"},
    };
    settings_refused(cases, sizeof cases / sizeof *cases);
    attnd_config cfg;
    char msg[1024];
    config_try(&cfg,
               (const char *const[]){"--model-dir", MISTRAL, "--local-window", "5",
                                     "--global-every", "3", NULL},
               NULL, msg, sizeof msg);
    ck_assert_msg(msg[0] == '\0', "%s", msg);
    ck_assert_int_eq(cfg.model.hp.local_window, 5);
    config_free(&cfg);
}
END_TEST

/* The last layer's per-head weights for one text over HTTP: query i's row
 * sums to 1 over keys i - 5 .. i and is 0 elsewhere (transformers'
 * sliding-window causal mask). */
static void window_in_weights(int port)
{
    http_resp r;
    ck_assert_int_eq(http_post_json(port, "/v1/encode",
                                    "{\"text\": \"The quick brown fox jumps over the lazy dog.\"}",
                                    &r),
                     0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    json_t *root = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(root);
    const json_t *heads = json_object_get(root, "attention");
    ck_assert_uint_eq(json_array_size(heads), 4);
    size_t rows = 0;
    for (size_t h = 0; h < json_array_size(heads); h++) {
        const json_t *a = json_array_get(heads, h);
        const size_t L = json_array_size(a);
        ck_assert_uint_gt(L, WINDOW + 2);
        for (size_t i = 0; i < L; i++, rows++) {
            const json_t *row = json_array_get(a, i);
            double sum = 0.0;
            for (size_t j = 0; j < L; j++) {
                const double w = json_number_value(json_array_get(row, j));
                const bool seen = j <= i && i - j < WINDOW;
                ck_assert_msg(seen ? w > 0.0 : w == 0.0, "head %zu (%zu, %zu): %g", h, i, j, w);
                sum += w;
            }
            ck_assert_msg(fabs(sum - 1.0) < 1e-5, "head %zu row %zu sums to %g", h, i, sum);
        }
    }
    ck_assert_uint_gt(rows, 4 * (WINDOW + 2));
    json_decref(root);
    http_resp_free(&r);
}

/* e5-mistral's path, text in: Hugging Face's ids (</s> appended by
 * add_eos_token), the reference's last_hidden_state of them, the last
 * token's state normalized as sentence-transformers' lasttoken Pooling and
 * Normalize give it; /v1/model says what was read, layer by layer; the
 * weights keep to the window. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", MISTRAL, NULL}, NULL),
                     0);
    text_matches_fixture(d.port, MISTRAL, "sentence_embedding", TOL);
    static const char LOCAL[] = "{\"attention\": \"local\", \"window\": 5, \"rope_theta\": 10000}";
    char want[1024];
    snprintf(want, sizeof want,
             "{\"n_kv_heads\": 2, \"norm\": \"rmsnorm\", \"ffn\": \"swiglu\", \"causal\": true, "
             "\"qk_norm\": false, \"bias\": false, \"global_every\": 3, \"global_offset\": 2, "
             "\"local_window\": 5, \"layers\": [%s, %s]}",
             LOCAL, LOCAL);
    expect_hyperparameters(d.port, want);
    window_in_weights(d.port);
    char *log = daemon_log(&d); /* the start-up lines say what was read */
    ck_assert_msg(strstr(log, "attnd: positions: rope, neox, theta 10000, 8 of 8 dimensions a "
                              "head\n") &&
                      strstr(log, "attnd: layers: 2 of 2 local (each query seeing itself and the "
                                  "5 keys before it)\n"),
                  "%s", log);
    free(log);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *mistral_suite(void)
{
    Suite *s = timed_suite("mistral");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_defaults_and_5x_form);
    tcase_add_test(tc, test_tensors_bound);
    tcase_add_test(tc, test_forward_and_naive_match);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_settings_against_directory);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
