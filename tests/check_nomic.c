/* check_nomic.c - NomicBERT directories (config.json model_type nomic_bert:
 * nomic-embed-text-v1 and v1.5, whose repositories carry the modeling code):
 * the fields read and refused, the feed-forward's halves and the norms'
 * biases beside bias-free Linears, and text end to end against
 * tests/fixtures/hf/nomic_text (tools/fixtures/make_text_fixtures.py: the
 * ids from Hugging Face's tokenizers on the bert-uncased tokenizer fixture,
 * the outputs from tools/fixtures/nomic_reference.py's forward written after
 * that modeling code, checked against its float64 formulation). */
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOMIC TESTS_DIR "/fixtures/hf/nomic_text"
#define TOL   1e-4

/* nomic-embed-text-v1.5's config.json (shrunk): the post-norm block, RoPE on
 * the whole head with base 1000 (rotate_half), SwiGLU with n_inner 64 rounded
 * up to 256, Linears without biases beside LayerNorms with them, eps 1e-12,
 * two token types, n_positions as the position limit. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(NOMIC, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "nomic_bert");
    ck_assert(!c.hp.norm_first && !c.hp.bias);
    ck_assert_int_eq(c.hp.norm, ENC_NORM_LAYERNORM_BIAS);
    ck_assert(enc_norm_has_bias(&c.hp));
    ck_assert_int_eq(c.hp.ffn, ENC_FFN_SWIGLU);
    ck_assert_int_eq(c.hp.d_model, 32);
    ck_assert_int_eq(c.hp.n_heads, 4);
    ck_assert_int_eq(c.hp.d_ff, 256);
    ck_assert_int_eq(c.hp.n_layers, 2);
    ck_assert_int_eq(c.hp.position, ENC_POS_ROPE);
    ck_assert_int_eq(c.hp.rope_style, ENC_ROPE_NEOX);
    ck_assert_int_eq(c.hp.rope_dim, 0);
    ck_assert(c.hp.rope_theta == 1000.0);
    ck_assert_float_eq(c.hp.layer_norm_eps, 1e-12f);
    ck_assert_int_eq(c.type_vocab_size, 2);
    ck_assert_int_eq(c.max_position_embeddings, 64);
    ck_assert_int_eq(c.vocab_size, 3200);
    ck_assert_str_eq(c.key_d_ff, "n_inner");
    enc_model *m = hf_load(NOMIC);
    ck_assert_str_eq(enc_model_architecture(m), "nomic_bert");
    ck_assert_int_eq(enc_model_embedding(m)->type_vocab_size, 2);
    ck_assert_ptr_null(enc_model_head(m));
    enc_model_free(m);
}
END_TEST

/* A task class of NomicBERT's own code (its pooling and layout are its
 * code's, not transformers'): the encoder is served, the head left out
 * saying which class. */
START_TEST(test_task_class_left_out)
{
    static const char *const files[] = {"model.safetensors", NULL};
    scratch s;
    scratch_make(&s, NOMIC, "{\"architectures\": [\"NomicBertForSequenceClassification\"]}", NULL,
                 files);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "NomicBertForSequenceClassification");
    ck_assert_str_eq(enc_model_head_note(m), ""); /* not read at all, whatever the files hold */
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* The gated feed-forward's rows: fc12's (the activated ones) then fc11's,
 * each bound from its own tensor; the norms' biases bound though bias is
 * false.  Read against the file itself. */
START_TEST(test_halves_and_norm_biases)
{
    enc_model *m = hf_load(NOMIC);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, NOMIC "/model.safetensors", &err) == 0, "%s", err.message);
    const int D = 32;
    const enc_layer *ly = &m->layers[1];
    const struct {
        const char *name;
        const float *got;
        size_t n;
    } parts[] = {
        {"encoder.layers.1.mlp.fc12.weight", ly->w_1, 256 * 32},
        {"encoder.layers.1.mlp.fc11.weight", ly->w_g, 256 * 32},
    };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        const st_tensor *t = st_find(&f, parts[i].name);
        ck_assert_ptr_nonnull(t);
        ck_assert(memcmp(parts[i].got, t->data, parts[i].n * sizeof(float)) == 0);
    }
    ck_assert_ptr_null(ly->b_1);
    ck_assert_ptr_null(ly->b_qkv);
    ck_assert_ptr_nonnull(ly->ln1_b);
    ck_assert_ptr_nonnull(ly->ln2_b);
    const st_tensor *b = st_find(&f, "encoder.layers.1.norm2.bias");
    ck_assert(memcmp(ly->ln2_b, b->data, (size_t)D * sizeof(float)) == 0);
    st_close(&f);
    enc_model_free(m);
}
END_TEST

/* What the modeling code computes otherwise is refused naming the field;
 * attnd itself refuses such a directory at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"prenorm\": true}", "config.json: prenorm true is not supported (the pre-norm block)"},
        {"{\"parallel_block\": true}", "config.json: parallel_block true is not supported"},
        {"{\"causal\": true}", "config.json: causal true is not supported (a causal mask)"},
        {"{\"use_rms_norm\": true}", "config.json: use_rms_norm true is not supported (RMSNorm)"},
        {"{\"rotary_emb_interleaved\": true}",
         "config.json: rotary_emb_interleaved true is not supported (GPT-J's pairs, not "
         "rotate_half's)"},
        {"{\"norm_mlp\": true}", "config.json: norm_mlp true is not supported"},
        {"{\"rotary_scaling_factor\": 2}",
         "config.json: rotary_scaling_factor is not supported (dynamic NTK scaling past "
         "max_trained_positions"},
        {"{\"rotary_emb_scale_base\": 512}", "config.json: rotary_emb_scale_base is not supported"},
        {"{\"moe_every_n_layers\": 2}",
         "config.json: moe_every_n_layers is not supported (mixture-of-experts layers)"},
        {"{\"rotary_emb_fraction\": 0.5}",
         "config.json: rotary_emb_fraction 0.5 is not supported (1: RoPE on the whole head"},
        {"{\"rotary_emb_fraction\": 0}", "rotary_emb_fraction"},
        {"{\"mlp_fc1_bias\": true}",
         "config.json: qkv_proj_bias (false) and mlp_fc1_bias (true) differ; attnd's bias covers "
         "every Linear"},
        {"{\"activation_function\": \"gelu\"}",
         "config.json: activation_function 'gelu' is not supported (swiglu, geglu: the gated "
         "feed-forward)"},
        {"{\"activation_function\": \"glu\"}", "activation_function 'glu' is not supported"},
        /* every Linear with a bias: the file has none */
        {"{\"qkv_proj_bias\": true, \"mlp_fc1_bias\": true, \"mlp_fc2_bias\": true}",
         "missing tensor 'encoder.layers.0.attn.Wqkv.bias'"},
        {"{\"n_inner\": 512}",
         "tensor 'encoder.layers.0.mlp.fc12.weight' has shape [256, 32], expected [512, 32]"},
        {"{\"n_layer\": 1}", "unexpected tensor 'encoder.layers.1."},
    };
    refused_edits(NOMIC, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(NOMIC, "{\"rotary_scaling_factor\": 2.0}",
                         "config.json: rotary_scaling_factor is not supported");
}
END_TEST

/* nomic-embed-text's path, text in: Hugging Face's ids (a pair's second text
 * token type 1, which this model reads), the reference's last_hidden_state
 * of them, sentence-transformers' mean pooled, normalized embeddings;
 * /v1/model's hyperparameters say what was read. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", NOMIC, NULL}, NULL), 0);
    text_matches_fixture(d.port, NOMIC, "mean_normalized", TOL);
    json_t *info = model_info(d.port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "norm")), "layernorm_bias");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "ffn")), "swiglu");
    ck_assert(json_is_false(json_object_get(hp, "bias")));
    json_decref(info);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *nomic_suite(void)
{
    Suite *s = timed_suite("nomic");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_halves_and_norm_biases);
    tcase_add_test(tc, test_task_class_left_out);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
