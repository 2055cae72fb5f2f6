/* check_attention.c - attention against worked examples: the textbook's
 * "the ring fell", hand-written mask patterns and softmax rows. */
#include "kernels/attention.h"
#include "kernels/mask.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "kernels/simd.h"
#include "kernels/vecmath.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The textbook example: one head, d_k = 4, three tokens. */
static const float ring_Q[3][4] = {{1, 0, 0, 0}, {0, 1, 1, 0}, {0, 1, 0, 0}};
static const float ring_K[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 1, 1, 0}};
static const float ring_V[3][4] = {{1, 1, 0, 0}, {0, 0, 2, 2}, {3, 0, 0, 3}};
static const float ring_A[3][3] = {
    {0.452f, 0.274f, 0.274f}, {0.186f, 0.307f, 0.507f}, {0.233f, 0.384f, 0.384f}};
static const float ring_Z1[4] = {1.706f, 0.186f, 0.614f, 2.134f}; /* "ring" now carries "fell" */

static seq_mask no_mask(int len)
{
    return (seq_mask){.len = len, .L = len, .window_left = ENC_WINDOW_NONE,
                      .window_right = ENC_WINDOW_NONE};
}

START_TEST(test_ring_fell_kernel)
{
    float qkv[3][12], z[3][4], attn[9];
    float *scratch = xcalloc(attention_forward_floats(3, 1, 4), sizeof *scratch);
    for (int i = 0; i < 3; i++) {
        memcpy(qkv[i], ring_Q[i], sizeof ring_Q[i]);
        memcpy(qkv[i] + 4, ring_K[i], sizeof ring_K[i]);
        memcpy(qkv[i] + 8, ring_V[i], sizeof ring_V[i]);
    }
    seq_mask sm = no_mask(3);
    attention_forward(&z[0][0], 4, &qkv[0][0], 12, 3, 1, 1, 4, &sm, scratch, attn, ENC_ATTN_HEADS,
                      3);
    free(scratch);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            ck_assert_msg(fabsf(attn[i * 3 + j] - ring_A[i][j]) < 1e-3f, "A[%d][%d] = %f", i, j,
                          (double)attn[i * 3 + j]);
    for (int e = 0; e < 4; e++)
        ck_assert_msg(fabsf(z[1][e] - ring_Z1[e]) < 1.5e-3f, "Z[1][%d] = %f", e, (double)z[1][e]);
    /* Row 0 exactly: softmax([1, 0, 0] / 2). */
    double e0 = exp(0.5), expect0 = e0 / (e0 + 2.0);
    ck_assert_double_eq_tol(attn[0], expect0, 1e-6);
}
END_TEST

/* The same example through the public API: a one-head block whose
 * projections turn one-hot embeddings into the example's Q, K and V. */
START_TEST(test_ring_fell_public)
{
    enc_hparams hp = {.d_model = 4, .n_heads = 1, .n_kv_heads = 1, .d_ff = 4, .n_layers = 1,
                      .activation = ENC_ACT_RELU, .layer_norm_eps = 1e-5f, .bias = false};
    enc_model *m = model_alloc(&hp, NULL);
    ck_assert_ptr_nonnull(m);
    enc_layer *ly = &m->layers[0];
    float *w_qkv = model_own(m, ly->w_q); /* q, k and v rows one after the other */
    /* Q = X Wq^T with X one-hot rows e_0, e_1, e_2: Wq[o][i] = Q[i][o]. */
    for (int i = 0; i < 3; i++)
        for (int o = 0; o < 4; o++) {
            w_qkv[o * 4 + i] = ring_Q[i][o];
            w_qkv[(4 + o) * 4 + i] = ring_K[i][o];
            w_qkv[(8 + o) * 4 + i] = ring_V[i][o];
        }
    for (int k = 0; k < 4; k++)
        ly->ln1_w[k] = ly->ln2_w[k] = 1.0f;

    float x[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, out[12], attn[9];
    float *attn_layers[1] = {attn};
    enc_batch in = batch_plain(&x[0][0], 1, 3, NULL);
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = attn_layers};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            ck_assert_msg(fabsf(attn[i * 3 + j] - ring_A[i][j]) < 1e-3f, "A[%d][%d] = %f", i, j,
                          (double)attn[i * 3 + j]);
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

/* Allowed-key patterns written out by hand for L = 6: row i, column j, '1' =
 * allowed.  Each checks mask_apply_row on a row of zeros. */
static void expect_pattern(const seq_mask *sm, const char *rows[6])
{
    for (int i = 0; i < 6; i++) {
        float s[6] = {0};
        mask_apply_row(sm, i, s);
        for (int j = 0; j < 6; j++) {
            bool allowed = s[j] != -INFINITY;
            ck_assert_msg(allowed == (rows[i][j] == '1'), "row %d col %d: got %d, want %c", i, j,
                          allowed, rows[i][j]);
        }
    }
}

START_TEST(test_mask_causal)
{
    seq_mask sm = no_mask(6);
    sm.causal = true;
    const char *rows[6] = {"100000", "110000", "111000", "111100", "111110", "111111"};
    expect_pattern(&sm, rows);
}
END_TEST

START_TEST(test_mask_window_global)
{
    /* window {left 1, right 2}, global position 4: row 4 sees all, all see 4. */
    seq_mask sm = no_mask(6);
    sm.window_left = 1;
    sm.window_right = 2;
    sm.pattern = true; /* what blockmask_seq_mask sets for a window */
    uint8_t g[6] = {0, 0, 0, 0, 1, 0};
    sm.is_global = g;
    const char *rows[6] = {"111010", "111110", "011110", "001111", "111111", "000011"};
    expect_pattern(&sm, rows);
}
END_TEST

START_TEST(test_mask_causal_window_padding)
{
    /* causal + window left 2 (right unbounded) + key 1 padding + length 5. */
    seq_mask sm = no_mask(6);
    sm.len = 5;
    sm.causal = true;
    sm.window_left = 2;
    sm.pattern = true;
    uint8_t kp[6] = {0, 1, 0, 0, 0, 0};
    sm.key_padding = kp;
    const char *rows[6] = {"100000", "100000", "101000", "001100", "001110", "000000"};
    for (int i = 0; i < 5; i++) { /* rows >= len are never computed */
        float s[6] = {0};
        mask_apply_row(&sm, i, s);
        for (int j = 0; j < 5; j++)
            ck_assert_int_eq(s[j] != -INFINITY, rows[i][j] == '1');
    }
}
END_TEST

START_TEST(test_mask_bool_and_additive)
{
    uint8_t ab[36] = {0};
    float aa[36] = {0};
    ab[2 * 6 + 3] = 1;
    aa[1 * 6 + 0] = -2.5f;
    aa[1 * 6 + 1] = -INFINITY;
    seq_mask sm = no_mask(6);
    sm.attn_bool = ab;
    float s[6] = {0};
    mask_apply_row(&sm, 2, s);
    ck_assert(s[3] == -INFINITY && s[2] == 0.0f);
    seq_mask sa = no_mask(6);
    sa.attn_add = aa;
    float t[6] = {1, 1, 1, 1, 1, 1};
    mask_apply_row(&sa, 1, t);
    ck_assert_float_eq(t[0], -1.5f);
    ck_assert(t[1] == -INFINITY);
    ck_assert_float_eq(t[2], 1.0f);
}
END_TEST

/* Loop tests over _i: 0 the AVX-512 softmax (where the CPU has it), 1 the
 * portable one. */
static void use_simd(int i)
{
    static bool said;
    simd_set_enabled(i == 0);
    if (i == 0 && !simd_enabled() && !said) {
        said = true;
        printf("attention: no AVX-512F here: the AVX-512 softmax is not run here (the portable "
               "form is, twice)\n");
        fflush(stdout);
    }
}

START_TEST(test_softmax_rows)
{
    use_simd(_i);
    float s[3] = {0.0f, -INFINITY, logf(3.0f)};
    ops_softmax_row(s, 3, NULL);
    ck_assert_float_eq_tol(s[0], 0.25f, 1e-7f);
    ck_assert_float_eq(s[1], 0.0f);
    ck_assert_float_eq_tol(s[2], 0.75f, 1e-7f);

    float none[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    ops_softmax_row(none, 4, NULL);
    for (int j = 0; j < 4; j++)
        ck_assert(none[j] == 0.0f); /* zeros, never NaN */

    /* Max subtraction: huge scores do not overflow. */
    float big[2] = {1e30f, 1e30f};
    ops_softmax_row(big, 2, NULL);
    ck_assert_float_eq(big[0], 0.5f);
    simd_set_enabled(true);
}
END_TEST

/* Softmax rows of many lengths (either side of the 16-float vectors), with
 * excluded keys, against softmax in double, and the weights' copy (written
 * over NaN) against the same; an online softmax over two blocks against the
 * same; rows with no allowed key, NaN, +inf. */
START_TEST(test_softmax_against_double)
{
    use_simd(_i);
    static const int lens[] = {1, 5, 15, 16, 17, 31, 100, 128, 130, 513};
    uint64_t st = 4242;
    for (size_t t = 0; t < sizeof lens / sizeof *lens; t++) {
        const int n = lens[t];
        float *s = xcalloc((size_t)n, sizeof *s), *o = xcalloc((size_t)n, sizeof *o);
        float *c = xcalloc((size_t)n, sizeof *c);
        double *want = xcalloc((size_t)n, sizeof *want);
        fill_random(s, (size_t)n, &st, 8.0f);
        for (int j = 0; j < n; j++)
            if (j % 7 == 3 || (n > 1 && j == n - 1))
                s[j] = -INFINITY;
        memcpy(o, s, (size_t)n * sizeof *s);
        double max = -INFINITY, sum = 0.0;
        for (int j = 0; j < n; j++)
            max = s[j] > max ? s[j] : max;
        for (int j = 0; j < n; j++)
            sum += want[j] = s[j] == -INFINITY ? 0.0 : exp((double)s[j] - max);
        for (int j = 0; j < n; j++)
            c[j] = NAN;
        ops_softmax_row(s, n, c);
        /* online: keys [0, h) then [h, n) */
        const int h = n / 3;
        float m = -INFINITY, z = 0.0f;
        ops_softmax_block(o, h, &m, &z);
        const float alpha = ops_softmax_block(o + h, n - h, &m, &z);
        for (int j = 0; j < h; j++)
            o[j] *= alpha;
        for (int j = 0; j < n; j++) {
            const double w = want[j] / sum;
            ck_assert_msg(fabs(s[j] - w) <= 4e-6 * w + 1e-9, "n %d key %d: %g, want %g", n, j,
                          (double)s[j], w);
            ck_assert_msg(fabs(c[j] - w) <= 4e-6 * w + 1e-9, "copy n %d key %d: %g, want %g", n,
                          j, (double)c[j], w);
            ck_assert_msg(fabs(o[j] / z - w) <= 4e-6 * w + 1e-9, "online n %d key %d: %g, want %g",
                          n, j, (double)(o[j] / z), w);
            if (want[j] == 0.0)
                ck_assert(s[j] == 0.0f && o[j] == 0.0f);
        }
        /* NaN anywhere, or +inf: the whole row NaN; no key allowed: zeros */
        for (int j = 0; j < n; j++)
            s[j] = j == n / 2 ? NAN : 1.0f;
        ops_softmax_row(s, n, NULL);
        for (int j = 0; j < n; j++)
            ck_assert_msg(isnan(s[j]), "n %d: NaN row key %d is %g", n, j, (double)s[j]);
        for (int j = 0; j < n; j++)
            s[j] = j == n / 2 ? NAN : 1.0f;
        ops_softmax_row(s, n, c);
        for (int j = 0; j < n; j++)
            ck_assert_msg(isnan(c[j]), "n %d: NaN row's copy key %d is %g", n, j, (double)c[j]);
        for (int j = 0; j < n; j++)
            s[j] = j == n - 1 ? INFINITY : -INFINITY;
        ops_softmax_row(s, n, NULL);
        ck_assert(isnan(s[0]));
        for (int j = 0; j < n; j++) {
            s[j] = -INFINITY;
            c[j] = NAN;
        }
        ops_softmax_row(s, n, c);
        for (int j = 0; j < n; j++)
            ck_assert(s[j] == 0.0f && c[j] == 0.0f);
        free(c);
        free(s);
        free(o);
        free(want);
    }
    simd_set_enabled(true);
}
END_TEST

/* The activation forms, the loop index of test_activations_against_double:
 * 0 AVX-512, 1 AVX2 with FMA, 2 portable.  Returns false, saying so once,
 * where the CPU cannot run the form. */
static const char *const act_form[] = {"AVX-512", "AVX2", "portable"};

static bool act_form_runs(int form)
{
    static bool said[3];
    const bool runs = form == 0 ? simd_supported() : form == 1 ? simd_avx2_supported() : true;
    if (!runs && !said[form]) {
        said[form] = true;
        printf("attention: no %s here: its activations are not run here\n", act_form[form]);
        fflush(stdout);
    }
    return runs;
}

static void act_form_apply(int form, float *x, size_t n, enc_activation act)
{
    if (form == 0)
        simd_activation(x, n, act);
    else if (form == 1)
        simd_activation_avx2(x, n, act);
    else {
        simd_set_enabled(false);
        ops_activation(x, n, act);
        simd_set_enabled(true);
    }
}

/* Every activation over a whole range against its definition in double, in
 * arrays of lengths either side of a vector, in each form the CPU runs:
 * within vecmath.h's bounds. */
START_TEST(test_activations_against_double)
{
    if (!act_form_runs(_i))
        return;
    const int n = 180001; /* x from -9 to 9 in steps of 1e-4 */
    float *x = xcalloc((size_t)n, sizeof *x);
    for (int a = ENC_ACT_RELU; a <= ENC_ACT_GELU_TANH; a++) {
        for (int i = 0; i < n; i++)
            x[i] = -9.0f + 1e-4f * (float)i;
        act_form_apply(_i, x, (size_t)n, (enc_activation)a);
        act_form_apply(_i, x, 0, (enc_activation)a); /* nothing to do */
        double worst = 0.0;
        for (int i = 0; i < n; i++) {
            const double v = -9.0f + 1e-4f * (float)i;
            double want = v > 0 ? v : 0.0;
            if (a == ENC_ACT_GELU)
                want = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
            else if (a == ENC_ACT_GELU_TANH)
                want = 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
            const double err = fabs(x[i] - want) / (fabs(v) > 1.0 ? fabs(v) : 1.0);
            worst = err > worst ? err : worst;
        }
        printf("attention: %s activation %d: worst error %.3g\n", act_form[_i], a, worst);
        ck_assert_msg(worst < 4e-7, "%s activation %d: error %g (relative to max(|x|, 1))",
                      act_form[_i], a, worst);
    }
    /* A tail of each length 1..7 past whole vectors: the floats past n are
     * left as they were. */
    for (size_t len = 1; len <= 23; len++) {
        float y[24];
        for (size_t i = 0; i < 24; i++)
            y[i] = -1.0f;
        act_form_apply(_i, y, len, ENC_ACT_RELU);
        for (size_t i = 0; i < 24; i++)
            ck_assert_msg(y[i] == (i < len ? 0.0f : -1.0f), "%s len %zu [%zu] %g", act_form[_i],
                          len, i, y[i]);
    }
    free(x);
}
END_TEST

START_TEST(test_layernorm_extremes)
{
    /* No finite input overflows: +-3e38 normalise to +-1. */
    float x[4] = {3e38f, -3e38f, 3e38f, -3e38f}, w[4] = {1, 1, 1, 1}, y[4];
    ops_layernorm(y, x, w, NULL, 1, 4, 1e-5f);
    for (int j = 0; j < 4; j++)
        ck_assert_float_eq_tol(y[j], (j % 2) ? -1.0f : 1.0f, 1e-6f);
    /* Identical values: zero variance gives zeros (then the bias). */
    float c[3] = {7, 7, 7}, b[3] = {0.5f, 0.5f, 0.5f}, yc[3];
    ops_layernorm(yc, c, w, b, 1, 3, 1e-5f);
    for (int j = 0; j < 3; j++)
        ck_assert_float_eq(yc[j], 0.5f);
}
END_TEST

START_TEST(test_activations_worked)
{
    /* Values from the definitions: gelu(1) = Phi(1) = 0.8413447, gelu_tanh(1) =
     * 0.5 (1 + tanh(0.7978846 * 1.044715)) = 0.8411920. */
    ck_assert_float_eq_tol(ops_activation_value(1.0f, ENC_ACT_GELU), 0.8413447f, 1e-6f);
    ck_assert_float_eq_tol(ops_activation_value(1.0f, ENC_ACT_GELU_TANH), 0.8411920f, 1e-6f);
    ck_assert_float_eq_tol(ops_activation_value(-1.0f, ENC_ACT_GELU), -0.1586553f, 1e-6f);
    ck_assert_float_eq(ops_activation_value(-2.0f, ENC_ACT_RELU), 0.0f);
    ck_assert_float_eq(ops_activation_value(2.5f, ENC_ACT_RELU), 2.5f);
}
END_TEST

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/vec256.h"

/* v256_erf_abs, the erf of the AVX2 GELU, on |x| (the sign put back as
 * the GELU does), 8 floats from x. */
__attribute__((target("avx2,fma"))) static void erf_avx2(const float *x, float *out)
{
    const __m256 v = _mm256_loadu_ps(x);
    const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 e = v256_erf_abs(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v));
    _mm256_storeu_ps(out, _mm256_or_ps(e, sign));
}

/* The AVX2 form's erf against double erf: vecmath.h's bound. */
START_TEST(test_vec256_erf_accuracy)
{
    if (!act_form_runs(1))
        return;
    double worst = 0;
    float x[8], e[8];
    for (float x0 = -9.0f; x0 <= 9.0f; x0 += 8e-4f) {
        for (int k = 0; k < 8; k++)
            x[k] = x0 + 1e-4f * (float)k;
        erf_avx2(x, e);
        for (int k = 0; k < 8; k++) {
            const double err = fabs((double)e[k] - erf((double)x[k]));
            worst = err > worst ? err : worst;
        }
    }
    printf("attention: AVX2 erf: worst absolute error %.3g\n", worst);
    ck_assert_msg(worst < 4e-7, "AVX2 erf absolute error %g", worst);
}
END_TEST
#endif

/* The vectorizable exp and erf against double-precision libm, over their
 * whole useful range: the bounds vecmath.h promises. */
START_TEST(test_vecmath_accuracy)
{
    double worst_exp = 0, worst_erf = 0;
    for (float x = -87.0f; x <= 0.0f; x += 3e-4f) {
        double want = exp((double)x);
        double rel = fabs((double)exp_approx(x) - want) / want;
        worst_exp = rel > worst_exp ? rel : worst_exp;
    }
    for (float x = -9.0f; x <= 9.0f; x += 1e-4f) {
        double err = fabs((double)erf_approx(x) - erf((double)x));
        worst_erf = err > worst_erf ? err : worst_erf;
    }
    ck_assert_msg(worst_exp < 2.5e-7, "exp_approx relative error %g", worst_exp);
    ck_assert_msg(worst_erf < 4e-7, "erf_approx absolute error %g", worst_erf);
    ck_assert(exp_approx(0.0f) == 1.0f);
    ck_assert(erf_approx(0.0f) == 0.0f);
    ck_assert_float_eq_tol(erf_approx(-20.0f), -1.0f, 1e-7f);
}
END_TEST

Suite *attention_suite(void)
{
    Suite *s = timed_suite("attention");
    TCase *tc = timed_case(s, "worked", 60);
    tcase_add_test(tc, test_ring_fell_kernel);
    tcase_add_test(tc, test_ring_fell_public);
    tcase_add_test(tc, test_mask_causal);
    tcase_add_test(tc, test_mask_window_global);
    tcase_add_test(tc, test_mask_causal_window_padding);
    tcase_add_test(tc, test_mask_bool_and_additive);
    tcase_add_loop_test(tc, test_softmax_rows, 0, 2);
    tcase_add_loop_test(tc, test_softmax_against_double, 0, 2);
    tcase_add_loop_test(tc, test_activations_against_double, 0, 3);
    tcase_add_test(tc, test_layernorm_extremes);
    tcase_add_test(tc, test_activations_worked);
    tcase_add_test(tc, test_vecmath_accuracy);
#if defined(__x86_64__) && defined(__GNUC__)
    tcase_add_test(tc, test_vec256_erf_accuracy);
#endif
    return s;
}
