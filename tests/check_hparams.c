/* check_hparams.c - hyperparameter defaults, names and every invalid combination. */
#include "encoder.h"
#include "suites.h"
#include "timing.h"

#include <math.h>
#include <string.h>

START_TEST(test_defaults_match_api)
{
    /* docs/contract.md section 1's example config. */
    enc_hparams hp;
    enc_hparams_default(&hp);
    ck_assert_int_eq(hp.d_model, 512);
    ck_assert_int_eq(hp.n_heads, 8);
    ck_assert_int_eq(hp.n_kv_heads, 8);
    ck_assert_int_eq(hp.d_ff, 2048);
    ck_assert_int_eq(hp.n_layers, 1);
    ck_assert_int_eq(hp.activation, ENC_ACT_RELU);
    ck_assert(!hp.norm_first);
    ck_assert(hp.bias);
    ck_assert_float_eq(hp.layer_norm_eps, 1e-5f);
    enc_error err = {0};
    ck_assert_int_eq(enc_hparams_validate(&hp, &err), ENC_OK);
    ck_assert_str_eq(err.message, "");
}
END_TEST

START_TEST(test_activation_names)
{
    enc_activation a;
    ck_assert_int_eq(enc_activation_parse("relu", &a), 0);
    ck_assert_int_eq(a, ENC_ACT_RELU);
    ck_assert_int_eq(enc_activation_parse("gelu", &a), 0);
    ck_assert_int_eq(a, ENC_ACT_GELU);
    ck_assert_int_eq(enc_activation_parse("gelu_tanh", &a), 0);
    ck_assert_int_eq(a, ENC_ACT_GELU_TANH);
    ck_assert_int_eq(enc_activation_parse("swish", &a), ENC_EINVAL);
    ck_assert_int_eq(enc_activation_parse(NULL, &a), ENC_EINVAL);
    ck_assert_str_eq(enc_activation_name(ENC_ACT_GELU_TANH), "gelu_tanh");
}
END_TEST

/* Each invalid setting, and the text its message must contain. */
static void set_d_model_zero(enc_hparams *hp) { hp->d_model = 0; }
static void set_heads_not_dividing(enc_hparams *hp) { hp->n_heads = 6; }
static void set_kv_not_dividing(enc_hparams *hp) { hp->n_kv_heads = 3; }
static void set_kv_above_heads(enc_hparams *hp) { hp->n_kv_heads = 16; }
static void set_d_ff_zero(enc_hparams *hp) { hp->d_ff = 0; }
static void set_layers_zero(enc_hparams *hp) { hp->n_layers = 0; }
static void set_layers_huge(enc_hparams *hp) { hp->n_layers = 100000; }
static void set_eps_zero(enc_hparams *hp) { hp->layer_norm_eps = 0.0f; }
static void set_eps_nan(enc_hparams *hp) { hp->layer_norm_eps = NAN; }
static void set_activation_bad(enc_hparams *hp) { hp->activation = (enc_activation)7; }
static void set_heads_zero(enc_hparams *hp) { hp->n_heads = 0; }
static void set_whole_without_qk_norm(enc_hparams *hp)
{
    hp->qk_norm_whole = true;
}
static void set_double_residual_pre_norm(enc_hparams *hp)
{
    hp->double_residual = hp->norm_first = true;
}

static const struct {
    void (*apply)(enc_hparams *);
    const char *expect;
} bad_settings[] = {
    {set_d_model_zero, "d_model (0)"},
    {set_heads_not_dividing, "n_heads (6) must divide d_model (512)"},
    {set_kv_not_dividing, "n_kv_heads (3) must divide n_heads (8)"},
    {set_kv_above_heads, "n_kv_heads (16)"},
    {set_d_ff_zero, "d_ff (0)"},
    {set_layers_zero, "n_layers (0)"},
    {set_layers_huge, "n_layers (100000)"},
    {set_eps_zero, "layer_norm_eps"},
    {set_eps_nan, "layer_norm_eps"},
    {set_activation_bad, "activation"},
    {set_heads_zero, "n_heads (0)"},
    {set_whole_without_qk_norm, "qk_norm_whole (one norm over all of q's and of k's heads) "
                                "needs qk_norm true"},
    {set_double_residual_pre_norm, "double_residual (attention's output and the residual "
                                   "normed, then the residual added again) needs a post-norm"},
};

START_TEST(test_invalid_setting_named)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    bad_settings[_i].apply(&hp);
    enc_error err = {0};
    ck_assert_int_eq(enc_hparams_validate(&hp, &err), ENC_EINVAL);
    ck_assert_int_eq(err.status, ENC_EINVAL);
    ck_assert_msg(strstr(err.message, bad_settings[_i].expect), "message '%s' lacks '%s'",
                  err.message, bad_settings[_i].expect);
}
END_TEST

START_TEST(test_gqa_and_mqa_valid)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.n_kv_heads = 2;
    ck_assert_int_eq(enc_hparams_validate(&hp, NULL), ENC_OK);
    hp.n_kv_heads = 1;
    ck_assert_int_eq(enc_hparams_validate(&hp, NULL), ENC_OK);
}
END_TEST

START_TEST(test_first_error_wins)
{
    enc_error err = {0};
    enc_error_set(&err, ENC_EINVAL, "first %d", 1);
    enc_error_set(&err, ENC_EIO, "second");
    ck_assert_int_eq(err.status, ENC_EINVAL);
    ck_assert_str_eq(err.message, "first 1");
    ck_assert_str_eq(enc_strerror(ENC_EFORMAT), "malformed file");
    enc_error_clear(&err);
    ck_assert_int_eq(err.status, ENC_OK);
}
END_TEST

Suite *hparams_suite(void)
{
    Suite *s = timed_suite("hparams");
    TCase *tc = timed_case(s, "validate", 60);
    tcase_add_test(tc, test_defaults_match_api);
    tcase_add_test(tc, test_activation_names);
    tcase_add_loop_test(tc, test_invalid_setting_named, 0,
                        (int)(sizeof bad_settings / sizeof *bad_settings));
    tcase_add_test(tc, test_gqa_and_mqa_valid);
    tcase_add_test(tc, test_first_error_wins);
    return s;
}
