/* check_edges.c - numbers at the edges of float32 (docs/contract.md
 * section 3: "a 200 response never contains NaN or infinity").  Finite inputs from 1e-38 to
 * 3e38, mixed signs, identical rows and single tokens, through several
 * model shapes: each forward either gives finite outputs and attention
 * weights or fails with ENC_ENUMERIC (the daemon's 400); inputs of ordinary
 * size must succeed.  Also the kernels' overflow cases on their own. */
#include "kernels/ops.h"
#include "model/model.h"
#include "kernels/simd.h"
#include "suites.h"
#include "test_util.h"
#include "kernels/vecmath.h"
#include "timing.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* exp_approx(NaN) is NaN (it once converted NaN to int: undefined). */
START_TEST(test_exp_nan)
{
    volatile float nan_in = NAN;
    ck_assert(isnan(exp_approx(nan_in)));
    ck_assert(isnan(erf_approx(nan_in)));
    ck_assert(exp_approx(-INFINITY) >= 0.0f && exp_approx(-INFINITY) < 1e-37f);
    ck_assert(isfinite(exp_approx(INFINITY)));
    /* the activations over arrays: NaN in, NaN out (relu: 0, as PyTorch's
     * max(x, 0) on the portable path), on both forms */
    for (int on = 0; on < 2; on++) {
        simd_set_enabled(on);
        for (int a = ENC_ACT_RELU; a <= ENC_ACT_GELU_TANH; a++) {
            float x[19];
            for (int i = 0; i < 19; i++)
                x[i] = i == 17 ? nan_in : 1.0f;
            ops_activation(x, 19, (enc_activation)a);
            ck_assert_msg(a == ENC_ACT_RELU ? x[17] == 0.0f : isnan(x[17]),
                          "activation %d of NaN gave %g (simd %d)", a, (double)x[17], on);
            ck_assert(isfinite(x[16]) && isfinite(x[18]));
        }
    }
    simd_set_enabled(true);
}
END_TEST

/* A +inf score is an overflow: the whole row becomes NaN, which the forward
 * reports, instead of inf - inf inside exp (found by fuzz_encode). */
START_TEST(test_softmax_inf_score)
{
    simd_set_enabled(_i == 0); /* the AVX-512 form, then the portable one */
    float a[3] = {INFINITY, 1.0f, -INFINITY};
    ops_softmax_row(a, 3, NULL);
    for (int j = 0; j < 3; j++)
        ck_assert_msg(isnan(a[j]), "a[%d] = %g", j, (double)a[j]);
    float b[2] = {INFINITY, INFINITY};
    ops_softmax_row(b, 2, NULL);
    ck_assert(isnan(b[0]) && isnan(b[1]));
    /* A finite row still works: -inf keys get exactly 0, a key 6e38 below the
     * maximum next to nothing (exp_approx floors at 2^-126). */
    float c[3] = {3e38f, -3e38f, -INFINITY};
    ops_softmax_row(c, 3, NULL);
    ck_assert_float_eq(c[0], 1.0f);
    ck_assert(c[1] >= 0.0f && c[1] < 1e-37f);
    ck_assert_float_eq(c[2], 0.0f);
    simd_set_enabled(true);
}
END_TEST

typedef struct edge_model {
    const char *name;
    int D, H, G, F, layers;
    enc_activation act;
    bool norm_first, bias;
} edge_model;

static const edge_model models[] = {
    {"post relu", 8, 2, 2, 16, 1, ENC_ACT_RELU, false, true},
    {"pre gelu", 8, 2, 2, 16, 1, ENC_ACT_GELU, true, true},
    {"post gelu_tanh stack", 8, 4, 2, 16, 2, ENC_ACT_GELU_TANH, false, false},
    {"pre relu stack of 3", 16, 4, 1, 32, 3, ENC_ACT_RELU, true, true},
};
#define N_MODELS ((int)(sizeof models / sizeof *models))

enum { EDGE_L = 4 };

/* Fills x (L, D) with input pattern p; returns whether ordinary-sized (such
 * an input must succeed). */
static bool fill_pattern(float *x, int L, int D, int p, const char **name)
{
    static const char *const names[] = {
        "all 1e-38",          "all 3e38",          "all -3e38",
        "mixed signs +-3e38", "1e-38 and -3e38",   "identical rows 3e38",
        "identical rows 0.5", "alternating 1e-38", "ordinary",
        "one huge column",    "max float",         "min subnormal"};
    *name = names[p];
    bool ordinary = false;
    for (int i = 0; i < L; i++)
        for (int k = 0; k < D; k++) {
            float v = 0;
            switch (p) {
            case 0:
                v = 1e-38f;
                break;
            case 1:
                v = 3e38f;
                break;
            case 2:
                v = -3e38f;
                break;
            case 3:
                v = ((i + k) % 2 ? 3e38f : -3e38f);
                break;
            case 4:
                v = (k % 3 ? 1e-38f : -3e38f);
                break;
            case 5:
                v = (k % 2 ? 3e38f : -1e30f);
                break;
            case 6:
                v = (k % 2 ? 0.5f : -0.25f), ordinary = true;
                break;
            case 7:
                v = ((i * D + k) % 2 ? 1e-38f : -1e-38f), ordinary = true;
                break;
            case 8:
                v = (float)((i * 7 + k * 3) % 11) / 5.0f - 1.0f, ordinary = true;
                break;
            case 9:
                v = k == 0 ? 3e38f : 1.0f;
                break;
            case 10:
                v = (k % 2 ? FLT_MAX : -FLT_MAX);
                break;
            default:
                v = (k % 2 ? 1e-45f : -1e-45f), ordinary = true;
                break;
            }
            x[(size_t)i * D + k] = v;
        }
    return ordinary;
}
#define N_PATTERNS 12

static bool finite_all(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

START_TEST(test_edges_finite_or_refused)
{
    const edge_model *em = &models[_i];
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = em->D;
    hp.n_heads = em->H;
    hp.n_kv_heads = em->G;
    hp.d_ff = em->F;
    hp.n_layers = em->layers;
    hp.activation = em->act;
    hp.norm_first = em->norm_first;
    hp.bias = em->bias;
    enc_error err = {0};
    enc_model *m = enc_model_random(&hp, 11, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    enc_workspace *ws = enc_workspace_new(m);
    const int D = em->D, H = em->H;
    int ok = 0, refused = 0;
    for (int p = 0; p < N_PATTERNS; p++) {
        for (int L = 1; L <= EDGE_L; L += EDGE_L - 1) { /* one token, and four */
            float *x = xcalloc((size_t)L * D, sizeof *x);
            float *out = xcalloc((size_t)L * D, sizeof *out);
            float **attn = xcalloc((size_t)em->layers, sizeof *attn);
            for (int l = 0; l < em->layers; l++)
                attn[l] = xcalloc((size_t)H * L * L, sizeof(float));
            const char *name;
            bool ordinary = fill_pattern(x, L, D, p, &name);
            enc_batch in = batch_plain(x, 1, L, NULL);
            enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = attn};
            enc_error ferr = {0};
            int rc = enc_forward(m, ws, &in, &res, &ferr);
            if (rc == 0) {
                ok++;
                ck_assert_msg(finite_all(out, (size_t)L * D), "%s, %s, L %d: non-finite output",
                              em->name, name, L);
                for (int l = 0; l < em->layers; l++)
                    ck_assert_msg(finite_all(attn[l], (size_t)H * L * L),
                                  "%s, %s, L %d: non-finite attention in layer %d", em->name, name,
                                  L, l);
            } else {
                refused++;
                ck_assert_msg(rc == ENC_ENUMERIC, "%s, %s, L %d: status %d (%s)", em->name, name, L,
                              rc, ferr.message);
                ck_assert_msg(!ordinary, "%s, %s, L %d: an ordinary input refused: %s", em->name,
                              name, L, ferr.message);
            }
            for (int l = 0; l < em->layers; l++)
                free(attn[l]);
            free(attn);
            free(out);
            free(x);
        }
    }
    ck_assert_int_gt(ok, 0);
    (void)refused;
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

Suite *edges_suite(void)
{
    Suite *s = timed_suite("edges");
    TCase *tc = timed_case(s, "float32", 60);
    tcase_add_test(tc, test_exp_nan);
    tcase_add_loop_test(tc, test_softmax_inf_score, 0, 2);
    tcase_add_loop_test(tc, test_edges_finite_or_refused, 0, N_MODELS);
    return s;
}
