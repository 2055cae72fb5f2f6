/* check_gemm.c - the prepacked Linear GEMM (core/gemm.c) against a plain
 * double-precision loop: odd sizes on every edge of its blocking (rows not a
 * multiple of 12, columns not a multiple of 32, K over one 768 block, K
 * with and without the copy into strips), bias
 * and activation, thread shares of panels, and rows that do not depend on
 * the rest of the batch. */
#include "internal.h"
#include "suites.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* out (M, N) = act(in (M, K) . w (N, K)^T + b), summed in double. */
static void reference(float *out, const float *in, const float *w, const float *b, int M, int K,
                      int N, const enc_activation *act)
{
    for (int i = 0; i < M; i++)
        for (int n = 0; n < N; n++) {
            double s = b ? b[n] : 0.0;
            for (int k = 0; k < K; k++)
                s += (double)in[(size_t)i * K + k] * w[(size_t)n * K + k];
            out[(size_t)i * N + n] = act ? activation_value((float)s, *act) : (float)s;
        }
}

static float *scratch_new(void)
{
    float *s = aligned_alloc(64, gemm_scratch_bytes());
    ck_assert(s);
    return s;
}

/* M, K, N, bias, activation (-1: none) */
static const int shapes[][5] = {
    {1, 1, 1, 1, -1},
    {1, 768, 768, 1, -1},
    {12, 64, 32, 0, -1},
    {13, 65, 33, 1, 0},
    {25, 100, 77, 1, 1},
    {7, 3, 200, 0, 2},
    {193, 40, 48, 1, -1},
    {5, 769, 31, 1, -1},
    {30, 1600, 70, 1, 1},
    {200, 17, 15, 0, -1},
    {37, 2304, 96, 1, -1},
    {11, 5, 1, 1, 0},
    /* K a multiple of 512: rows copied into strips first (K = 3072 as in
     * BERT-base's second Linear, 2048 over two blocks) */
    {14, 2048, 40, 1, 1},
    {3, 512, 33, 0, -1},
    {25, 3072, 64, 1, 2},
};

START_TEST(test_packed_matches_reference)
{
    const int M = shapes[_i][0], K = shapes[_i][1], N = shapes[_i][2];
    const bool has_bias = shapes[_i][3];
    const enc_activation act = (enc_activation)shapes[_i][4];
    uint64_t st = 1234 + (uint64_t)_i;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *b = xcalloc((size_t)N, sizeof *b);
    float *want = xcalloc((size_t)M * N, sizeof *want), *got = xcalloc((size_t)M * N, 4);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    fill_random(b, (size_t)N, &st, 0.5f);
    const enc_activation *a = shapes[_i][4] >= 0 ? &act : NULL;
    reference(want, in, w, has_bias ? b : NULL, M, K, N, a);

    gemm_packed *pw = gemm_pack(w, N, K);
    if (!gemm_supported()) {
        ck_assert_msg(pw == NULL, "gemm_pack must refuse on a CPU without AVX-512");
    } else {
        ck_assert(pw != NULL);
        ck_assert_int_eq(gemm_panels(pw), (N + GEMM_NR - 1) / GEMM_NR);
        float *scratch = scratch_new();
        for (size_t k = 0; k < (size_t)M * N; k++)
            got[k] = NAN; /* every entry must be written */
        /* Two threads' shares: panels [0, p) and [p, P), any split. */
        const int P = gemm_panels(pw), p = P / 2;
        gemm_packed_cols(got, in, pw, has_bias ? b : NULL, M, 0, p, a, scratch);
        gemm_packed_cols(got, in, pw, has_bias ? b : NULL, M, p, P, a, scratch);
        const double d = max_abs_diff(got, want, (size_t)M * N);
        ck_assert_msg(d <= 1e-5 * sqrt((double)K), "M %d K %d N %d: differs by %g", M, K, N, d);
        free(scratch);
    }
    gemm_packed_free(pw);
    free(in);
    free(w);
    free(b);
    free(want);
    free(got);
}
END_TEST

/* Each row comes out with the same bits whatever rows surround it: a
 * sequence gives what it gives alone. */
START_TEST(test_rows_independent)
{
    if (!gemm_supported())
        return;
    const int M = 29, K = 1000, N = 45;
    uint64_t st = 99;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *all = xcalloc((size_t)M * N, sizeof *all), *one = xcalloc((size_t)N, sizeof *one);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 0.05f);
    gemm_packed *pw = gemm_pack(w, N, K);
    float *scratch = scratch_new();
    gemm_packed_cols(all, in, pw, NULL, M, 0, gemm_panels(pw), NULL, scratch);
    for (int i = 0; i < M; i++) {
        gemm_packed_cols(one, in + (size_t)i * K, pw, NULL, 1, 0, gemm_panels(pw), NULL, scratch);
        ck_assert_msg(memcmp(one, all + (size_t)i * N, (size_t)N * sizeof *one) == 0,
                      "row %d alone differs from row %d of %d", i, i, M);
    }
    free(scratch);
    gemm_packed_free(pw);
    free(in);
    free(w);
    free(all);
    free(one);
}
END_TEST

/* The encoder's fast path with and without the packed GEMM agrees, on a
 * seeded model with sizes off every block edge. */
START_TEST(test_forward_both_paths)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 60;
    hp.n_heads = 6;
    hp.n_kv_heads = 6;
    hp.d_ff = 100;
    hp.n_layers = 2;
    enc_model *m = enc_model_random(&hp, 5, NULL);
    ck_assert(m);
    ck_assert_msg(!gemm_supported() || m->packed, "seeded model not packed on AVX-512");
    const int B = 2, L = 19, D = hp.d_model;
    int lengths[2] = {19, 4};
    uint64_t st = 3;
    float *x = xcalloc((size_t)B * L * D, sizeof *x);
    float *o1 = xcalloc((size_t)B * L * D, sizeof *o1), *o2 = xcalloc((size_t)B * L * D, 4);
    fill_random(x, (size_t)B * L * D, &st, 1.0f);
    enc_batch in = batch_plain(x, B, L, lengths);
    enc_workspace *ws = enc_workspace_new(m);
    enc_result r1 = {.out = o1, .attn_mode = ENC_ATTN_NONE};
    enc_result r2 = {.out = o2, .attn_mode = ENC_ATTN_NONE};
    ck_assert_int_eq(enc_forward(m, ws, &in, &r1, NULL), 0);
    gemm_set_enabled(false);
    ck_assert_int_eq(enc_forward(m, ws, &in, &r2, NULL), 0);
    gemm_set_enabled(true);
    const double d = max_abs_diff(o1, o2, (size_t)B * L * D);
    ck_assert_msg(d <= 1e-5, "packed and cblas paths differ by %g", d);
    enc_workspace_free(ws);
    enc_model_free(m);
    free(x);
    free(o1);
    free(o2);
}
END_TEST

Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("packed");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_packed_matches_reference, 0,
                        (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_test(tc, test_rows_independent);
    tcase_add_test(tc, test_forward_both_paths);
    suite_add_tcase(s, tc);
    return s;
}
