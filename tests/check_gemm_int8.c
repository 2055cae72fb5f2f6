/* check_gemm_int8.c - the int8 Linears (gemm_pack_int8, gemm_packed_cols on
 * int8 weights) against a reference written here from the rule, not from
 * the code: the weights quantised per output channel and the rows per row
 * (symmetric, max |x| / 127, rounded to nearest even), the products summed
 * in int64, the sum scaled back in double; a row's outlier columns (above
 * 8 x its mean |x|, the 8 largest) out of its int8 product and added in
 * double against the quantised weights.  On every kernel this CPU runs
 * (gemm_int8_limit), with awkward shapes: N off the panel width, K off a
 * quad, one row and 37, a zero row, bias or not, an activation, rows apart
 * by strides, and enough rows for several of the scratch's chunks.  Every
 * kernel must write the same bits. */
#include "kernels/gemm.h"
#include "kernels/gemm_int8.h"
#include "kernels/ops.h"
#include "kernels/simd.h"
#include "model/team.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static const char *const kernels[] = {"portable", "avx2", "avx_vnni", "avx512_vnni", "amx_int8"};
#define N_KERNELS ((int)(sizeof kernels / sizeof *kernels))

/* The symmetric int8 scale of n values: max |x| / 127. */
static float ref_scale(const float *x, int n)
{
    float m = 0.0f;
    for (int k = 0; k < n; k++)
        if (fabsf(x[k]) > m)
            m = fabsf(x[k]);
    return m / 127.0f;
}

/* x times 1 / s (in float32, as fbgemm quantises for PyTorch) to nearest
 * even, in [-127, 127]; 0 when s is 0. */
static int ref_q(float x, float s)
{
    if (s == 0.0f)
        return 0;
    const float v = nearbyintf(x * (1.0f / s));
    return v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v;
}

/* out[k] = 1 for row x's outlier columns: |x[k]| > 8 mean |x|, and of
 * those the 8 largest (the lower k first among equals). */
static void ref_outliers(char *out, const float *x, int K)
{
    double mean = 0.0;
    for (int k = 0; k < K; k++)
        mean += fabs((double)x[k]);
    mean /= K;
    memset(out, 0, (size_t)K);
    for (int taken = 0; taken < 8; taken++) {
        int best = -1;
        for (int k = 0; k < K; k++)
            if (!out[k] && fabs((double)x[k]) > 8.0 * mean &&
                (best < 0 || fabsf(x[k]) > fabsf(x[best])))
                best = k;
        if (best < 0)
            break;
        out[best] = 1;
    }
}

/* want (M, N) = act(scale_a[m] scale_w[n] sum_k x_q w_q + scale_w[n]
 * sum_outliers x w_q + b), and mag (M, N) the size of the terms before act
 * (|scaled sum| + scale_w sum |x w_q| + |b|), for the tolerance.  in (M rows
 * lda apart, K), w (N, K). */
static void reference(double *want, double *mag, const float *in, int lda, const float *w,
                      const float *b, int M, int K, int N, const enc_activation *act)
{
    int *wq = xcalloc((size_t)N * K, sizeof *wq), *xq = xcalloc((size_t)K, sizeof *xq);
    float *sw = xcalloc((size_t)N, sizeof *sw), *inl = xcalloc((size_t)K, sizeof *inl);
    char *outl = xcalloc((size_t)K, 1);
    for (int n = 0; n < N; n++) {
        sw[n] = ref_scale(w + (size_t)n * K, K);
        for (int k = 0; k < K; k++)
            wq[(size_t)n * K + k] = ref_q(w[(size_t)n * K + k], sw[n]);
    }
    for (int m = 0; m < M; m++) {
        const float *x = in + (size_t)m * lda;
        ref_outliers(outl, x, K);
        for (int k = 0; k < K; k++)
            inl[k] = outl[k] ? 0.0f : x[k];
        const float sa = ref_scale(inl, K);
        for (int k = 0; k < K; k++)
            xq[k] = ref_q(inl[k], sa);
        for (int n = 0; n < N; n++) {
            int64_t sum = 0;
            double corr = 0.0, corr_mag = 0.0;
            for (int k = 0; k < K; k++) {
                sum += (int64_t)xq[k] * wq[(size_t)n * K + k];
                if (outl[k]) {
                    corr += (double)x[k] * wq[(size_t)n * K + k];
                    corr_mag += fabs((double)x[k] * wq[(size_t)n * K + k]);
                }
            }
            const double scaled = (double)sa * (double)sw[n] * (double)sum + sw[n] * corr;
            const double v = scaled + (b ? b[n] : 0.0);
            want[(size_t)m * N + n] = act ? ops_activation_value((float)v, *act) : v;
            mag[(size_t)m * N + n] = fabs((double)sa * (double)sw[n] * (double)sum) +
                                     sw[n] * corr_mag + (b ? fabs(b[n]) : 0.0);
        }
    }
    free(wq);
    free(xq);
    free(sw);
    free(inl);
    free(outl);
}

/* got (M rows ldc apart) = the packed product as two shares of the
 * panels, every entry NaN first so each must be written. */
static void two_shares(float *got, int ldc, const float *in, int lda, const gemm_packed *pw,
                       const float *b, int M, int N, const enc_activation *act, float *scratch)
{
    for (size_t k = 0; k < (size_t)M * ldc; k++)
        got[k] = NAN;
    const int P = gemm_panels(pw), p = P / 2;
    ck_assert_int_eq(P, (N + GEMM_NR - 1) / GEMM_NR);
    gemm_packed_cols(got, ldc, in, lda, pw, b, M, 0, p, act, scratch);
    gemm_packed_cols(got, ldc, in, lda, pw, b, M, p, P, act, scratch);
}

/* M, K, N, bias, activation (-1: none), zero row (-1: none) */
static const int shapes[][6] = {
    {1, 1, 1, 1, -1, -1},
    {1, 768, 768, 1, -1, -1},
    {37, 65, 33, 1, 0, 5},
    {37, 3, 200, 0, 2, -1},
    {1, 7, 31, 0, -1, 0},
    {13, 769, 31, 1, -1, 12},
    {37, 2305, 96, 1, 1, 36},
    {200, 17, 15, 0, -1, 100},
    {12, 32, 64, 1, -1, -1},
    {9, 1026, 130, 0, 1, -1},
    /* rows of 3072 as int16 are 6 KiB: ~97 a chunk of the scratch, so
     * several chunks, the last one short */
    {300, 3072, 40, 1, -1, 250},
    /* AMX: a block of 32 rows, then one of 16 and 2 rows on AVX512_VNNI */
    {50, 200, 64, 1, 1, 20},
    /* 22 panels of 3072 (96 KiB each): each half's 11 more than a 1 MiB
     * group's 10 (gemm_int8.c's PANELS_BLOCK_BYTES) */
    {40, 3072, 700, 1, 1, -1},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof *shapes))

/* Runs shape s on kernel kern (when this CPU has it) into got (M, N + 3),
 * the rows lda = K + 5 apart; returns false when the kernel is not here. */
static bool run_shape(int s, const char *kern, float **got_out, float **in_out, float **w_out,
                      float **b_out)
{
    const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2], lda = K + 5, ldc = N + 3;
    const enc_activation act = (enc_activation)shapes[s][4];
    if (!gemm_int8_limit(kern)) {
        gemm_int8_limit("amx_int8");
        return false;
    }
    ck_assert_str_eq(gemm_int8_kernel(), kern);
    uint64_t st = 977 + (uint64_t)s;
    float *in = xcalloc((size_t)M * lda, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *b = xcalloc((size_t)N, sizeof *b), *got = xcalloc((size_t)M * ldc, sizeof *got);
    fill_random(in, (size_t)M * lda, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    fill_random(b, (size_t)N, &st, 0.5f);
    if (K > 8) { /* an outlier column, as LLM-style activations have */
        for (int m = 0; m < M; m++)
            in[(size_t)m * lda + 3] *= 20.0f;
    }
    if (K > 40) /* and on some rows more columns past the cap of 8, some equal */
        for (int m = 0; m < M; m += 3)
            for (int k = 10; k < 40; k += 3)
                in[(size_t)m * lda + k] = (k % 2 ? 30.0f : -30.0f) + (float)(k % 4);
    if (shapes[s][5] >= 0)
        memset(in + (size_t)shapes[s][5] * lda, 0, (size_t)K * sizeof *in);
    gemm_packed *pw = gemm_pack_int8(w, N, K);
    ck_assert(pw != NULL);
    ck_assert(gemm_packed_int8(pw));
    ck_assert(!gemm_packed_bf16(pw));
    ck_assert(!gemm_glu_ok(pw));
    float *scratch = aligned_alloc(64, gemm_scratch_bytes());
    ck_assert(scratch);
    two_shares(got, ldc, in, lda, pw, shapes[s][3] ? b : NULL, M, N,
               shapes[s][4] >= 0 ? &act : NULL, scratch);
    /* the same in two steps, as a team runs it: the rows quantised in two
     * shares, then the panels in two */
    void *rows = aligned_alloc(64, gemm_int8_rows_bytes(M, K));
    float *two = xcalloc((size_t)M * ldc, sizeof *two);
    ck_assert(rows);
    for (size_t k = 0; k < (size_t)M * ldc; k++)
        two[k] = NAN;
    gemm_int8_quantise(rows, in, lda, K, M / 2, M);
    gemm_int8_quantise(rows, in, lda, K, 0, M / 2);
    const int P = gemm_panels(pw);
    gemm_int8_cols(two, ldc, rows, pw, shapes[s][3] ? b : NULL, M, P / 2, P,
                   shapes[s][4] >= 0 ? &act : NULL, scratch);
    gemm_int8_cols(two, ldc, rows, pw, shapes[s][3] ? b : NULL, M, 0, P / 2,
                   shapes[s][4] >= 0 ? &act : NULL, scratch);
    ck_assert_msg(memcmp(two, got, (size_t)M * ldc * sizeof *got) == 0,
                  "%s M %d K %d N %d: gemm_int8_quantise + gemm_int8_cols differ from "
                  "gemm_packed_cols",
                  kern, M, K, N);
    /* and as the forward deals it, on 3 threads and on 16: gemm_grid_of's
     * items, every panel one, the rows in blocks of whole AMX tiles when
     * the panels are fewer than GEMM_ITEMS_PER_THREAD a thread */
    for (int nth = 3; nth <= 16; nth += 13) {
        const gemm_grid g = gemm_grid_of(pw, M, nth, rows);
        ck_assert_int_eq(g.groups, P);
        if (P >= GEMM_ITEMS_PER_THREAD * nth || M <= GEMM_I8_MR)
            ck_assert_int_eq(g.blocks, 1);
        else
            ck_assert_msg(g.blocks > 1 && g.mb % GEMM_I8_MR == 0 && (g.blocks - 1) * g.mb < M,
                          "M %d, %d panels on %d threads: %d blocks of %d rows", M, P, nth,
                          g.blocks, g.mb);
        for (size_t k = 0; k < (size_t)M * ldc; k++)
            two[k] = NAN;
        team_deal d;
        team_deal_init(&d, gemm_grid_items(g), nth);
        int lo, hi;
        while (team_deal_take(&d, &lo, &hi))
            gemm_packed_items(two, ldc, NULL, 0, pw, shapes[s][3] ? b : NULL, g, lo, hi,
                              shapes[s][4] >= 0 ? &act : NULL, scratch);
        ck_assert_msg(memcmp(two, got, (size_t)M * ldc * sizeof *got) == 0,
                      "%s M %d K %d N %d: gemm_packed_items on %d threads' items differ from "
                      "gemm_packed_cols",
                      kern, M, K, N, nth);
    }
    free(two);
    free(rows);
    free(scratch);
    gemm_packed_free(pw);
    gemm_int8_limit("amx_int8");
    *got_out = got;
    *in_out = in;
    *w_out = w;
    *b_out = b;
    return true;
}

START_TEST(test_int8_matches_reference)
{
    const int s = _i / N_KERNELS;
    const char *kern = kernels[_i % N_KERNELS];
    const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2], ldc = N + 3;
    const enc_activation act = (enc_activation)shapes[s][4];
    float *got, *in, *w, *b;
    if (!run_shape(s, kern, &got, &in, &w, &b)) {
        if (s == 0)
            printf("gemm_int8: no %s on this CPU: not run\n", kern);
        return;
    }
    double *want = xcalloc((size_t)M * N, sizeof *want), *mag = xcalloc((size_t)M * N, 8);
    reference(want, mag, in, K + 5, w, shapes[s][3] ? b : NULL, M, K, N,
              shapes[s][4] >= 0 ? &act : NULL);
    double worst = 0.0;
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            const double g = got[(size_t)m * ldc + n], r = want[(size_t)m * N + n];
            /* the float32 epilogue: a few roundings of the terms (relative
             * 1e-6 of their size), and the activation's own */
            const double tol = 1e-6 * mag[(size_t)m * N + n] + (shapes[s][4] >= 0 ? 1e-6 : 0.0);
            ck_assert_msg(fabs(g - r) <= tol, "%s M %d K %d N %d: (%d, %d) %.9g, want %.9g", kern,
                          M, K, N, m, n, g, r);
            worst = fmax(worst, fabs(g - r) / (mag[(size_t)m * N + n] + 1e-30));
        }
        for (int n = N; n < ldc; n++) /* past N: never written */
            ck_assert(isnan(got[(size_t)m * ldc + n]));
    }
    if (shapes[s][5] >= 0 && shapes[s][4] < 0) /* a zero row: the bias alone */
        for (int n = 0; n < N; n++)
            ck_assert(got[(size_t)shapes[s][5] * ldc + n] == (shapes[s][3] ? b[n] : 0.0f));
    if (s == N_SHAPES - 1)
        printf("gemm_int8 %s: M %d K %d N %d: worst relative difference %.3g\n", kern, M, K, N,
               worst);
    free(want);
    free(mag);
    free(got);
    free(in);
    free(w);
    free(b);
}
END_TEST

/* Each kernel this CPU has writes the portable kernel's bits. */
START_TEST(test_int8_kernels_agree)
{
    const int M = shapes[_i][0], N = shapes[_i][2], ldc = N + 3;
    float *ref, *in, *w, *b;
    ck_assert(run_shape(_i, "portable", &ref, &in, &w, &b));
    free(in);
    free(w);
    free(b);
    for (int k = 1; k < N_KERNELS; k++) {
        float *got;
        if (!run_shape(_i, kernels[k], &got, &in, &w, &b))
            continue;
        for (size_t j = 0; j < (size_t)M * ldc; j++) /* NaN past N in both */
            ck_assert_msg(memcmp(&got[j], &ref[j], sizeof *got) == 0,
                          "%s and portable differ at %zu: %.9g, %.9g", kernels[k], j, got[j],
                          ref[j]);
        free(got);
        free(in);
        free(w);
        free(b);
    }
    free(ref);
}
END_TEST

/* A row's outputs do not depend on the other rows of the batch (each row
 * has its own scale): row i alone gives the bits it gives among 37. */
START_TEST(test_int8_rows_independent)
{
    const int M = 37, K = 300, N = 70;
    uint64_t st = 4242;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *b = xcalloc((size_t)N, sizeof *b), *all = xcalloc((size_t)M * N, sizeof *all);
    float *one = xcalloc((size_t)N, sizeof *one);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    for (int m = 0; m < M; m++) /* rows of very different sizes */
        for (int k = 0; k < K; k++)
            in[(size_t)m * K + k] *= (float)(1 + m * m);
    fill_random(w, (size_t)N * K, &st, 0.05f);
    fill_random(b, (size_t)N, &st, 0.5f);
    gemm_packed *pw = gemm_pack_int8(w, N, K);
    ck_assert(pw);
    float *scratch = aligned_alloc(64, gemm_scratch_bytes());
    ck_assert(scratch);
    gemm_packed_cols(all, N, in, K, pw, b, M, 0, gemm_panels(pw), NULL, scratch);
    for (int m = 0; m < M; m++) {
        gemm_packed_cols(one, N, in + (size_t)m * K, K, pw, b, 1, 0, gemm_panels(pw), NULL,
                         scratch);
        ck_assert_msg(memcmp(one, all + (size_t)m * N, (size_t)N * sizeof *one) == 0,
                      "row %d alone differs", m);
    }
    free(scratch);
    gemm_packed_free(pw);
    free(in);
    free(w);
    free(b);
    free(all);
    free(one);
}
END_TEST

/* A weight packed from three row blocks apart (a file's q, k and v) is
 * the weight packed whole, and a byte a weight or so (K padded to 64, the
 * step AMX reads) with a scale and a sum per column. */
START_TEST(test_int8_parts)
{
    const int rows[3] = {40, 7, 30}, N = 77, K = 101;
    uint64_t st = 99;
    float *w = xcalloc((size_t)N * K, sizeof *w), *in = xcalloc((size_t)5 * K, sizeof *in);
    float *a = xcalloc((size_t)5 * N, sizeof *a), *c = xcalloc((size_t)5 * N, sizeof *c);
    fill_random(w, (size_t)N * K, &st, 0.1f);
    fill_random(in, (size_t)5 * K, &st, 1.0f);
    const float *parts[3] = {w, w + (size_t)rows[0] * K, w + (size_t)(rows[0] + rows[1]) * K};
    gemm_packed *whole = gemm_pack_int8(w, N, K), *split = gemm_pack_parts_int8(parts, rows, 3, K);
    ck_assert(whole && split);
    const size_t panels = (size_t)gemm_panels(whole) * GEMM_NR;
    ck_assert_uint_le(gemm_packed_bytes(whole), panels * ((K + 63) / 64 * 64 + 8) + 512);
    float *scratch = aligned_alloc(64, gemm_scratch_bytes());
    ck_assert(scratch);
    gemm_packed_cols(a, N, in, K, whole, NULL, 5, 0, gemm_panels(whole), NULL, scratch);
    gemm_packed_cols(c, N, in, K, split, NULL, 5, 0, gemm_panels(split), NULL, scratch);
    ck_assert(memcmp(a, c, (size_t)5 * N * sizeof *a) == 0);
    free(scratch);
    gemm_packed_free(whole);
    gemm_packed_free(split);
    free(w);
    free(in);
    free(a);
    free(c);
}
END_TEST

/* Outliers: two input columns of a row 50 and 80 times the rest (trained
 * BERTs' few huge hidden dimensions) would set the row's scale, leaving the
 * other columns a few levels; taken out of the int8 product, the result
 * stays within 1.5% (RMS) of the float32 product (the weights' rounding
 * mostly), where the row's scale alone gives ~6%. */
START_TEST(test_int8_outliers)
{
    const int M = 16, K = 768, N = 64;
    uint64_t st = 31337;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *got = xcalloc((size_t)M * N, sizeof *got);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    for (int m = 0; m < M; m++) {
        in[(size_t)m * K + 308] = 50.0f * (m % 2 ? 1.0f : -1.0f);
        in[(size_t)m * K + 581] = 80.0f;
    }
    gemm_packed *pw = gemm_pack_int8(w, N, K);
    ck_assert(pw);
    float *scratch = aligned_alloc(64, gemm_scratch_bytes());
    ck_assert(scratch);
    gemm_packed_cols(got, N, in, K, pw, NULL, M, 0, gemm_panels(pw), NULL, scratch);
    double err = 0.0, ref = 0.0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double exact = 0.0;
            for (int k = 0; k < K; k++)
                exact += (double)in[(size_t)m * K + k] * w[(size_t)n * K + k];
            err += (got[(size_t)m * N + n] - exact) * (got[(size_t)m * N + n] - exact);
            ref += exact * exact;
        }
    printf("gemm_int8: two outlier columns (50x, 80x): RMS error %.3g of the product's\n",
           sqrt(err / ref));
    ck_assert_msg(sqrt(err / ref) <= 0.015, "relative RMS error %.3g", sqrt(err / ref));
    free(scratch);
    gemm_packed_free(pw);
    free(in);
    free(w);
    free(got);
}
END_TEST

/* Rows for the quantisation test: n of them, K each, in rows (n, K). */
static const int q_lengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 768, 3071};
#define N_Q_LENGTHS ((int)(sizeof q_lengths / sizeof *q_lengths))
#define Q_ROWS      9

/* Row kind r of length K: 0 Gaussian, 1 one outlier, 2 more outliers than
 * the cap (some equal, some tied in |x| with opposite signs), 3 all zero,
 * 4 zero but the outliers, 5 values on the rounding's halves (x_q .5 away),
 * 6 a huge range (1e30 and tiny), 7 NaN and inf among them (both forms
 * alone), 8 all equal. */
static void q_row(float *x, int r, int K, uint64_t *st)
{
    fill_random(x, (size_t)K, st, 1.0f);
    switch (r) {
    case 1:
        x[K / 2] = 40.0f;
        break;
    case 2:
        for (int k = 0; k < K; k += 2)
            x[k] = (k % 4 ? 30.0f : -30.0f) + (float)(k % 3);
        for (int k = 1; k < K; k += 2)
            x[k] *= 0.01f;
        break;
    case 3:
        memset(x, 0, (size_t)K * sizeof *x);
        break;
    case 4:
        memset(x, 0, (size_t)K * sizeof *x);
        x[K - 1] = 5.0f;
        break;
    case 5:
        for (int k = 0; k < K; k++)
            x[k] = ((float)(k % 255) - 127.0f + 0.5f) / 127.0f;
        if (K > 1)
            x[0] = 1.0f;
        break;
    case 6:
        for (int k = 0; k < K; k += 3)
            x[k] *= 1e30f;
        for (int k = 1; k < K; k += 3)
            x[k] *= 1e-30f;
        break;
    case 7:
        x[0] = NAN;
        if (K > 5)
            x[5] = INFINITY;
        if (K > 9)
            x[K - 2] = -NAN;
        break;
    case 8:
        for (int k = 0; k < K; k++)
            x[k] = -0.75f;
        break;
    default:
        break;
    }
}

/* The rows' quantisation (outliers, scale, values) in AVX2 and in scalar
 * code give the same bits, in each kernel's format, whatever the row
 * length (the vector loops' tails); and both are the rule (the reference
 * above) on every row without NaN or inf. */
START_TEST(test_int8_quantise_rows)
{
    const int K = q_lengths[_i];
    const int KQ = (K + 3) / 4 * 4;
    int *xq = xcalloc((size_t)KQ, sizeof *xq), *vq = xcalloc((size_t)KQ, sizeof *vq);
    int *want = xcalloc((size_t)K, sizeof *want);
    float *x = xcalloc((size_t)K, sizeof *x), *inl = xcalloc((size_t)K, sizeof *inl);
    char *outl = xcalloc((size_t)K, 1);
    uint64_t st = 5150 + (uint64_t)K;
    for (int r = 0; r < Q_ROWS; r++) {
        q_row(x, r, K, &st);
        for (int f = 0; f < N_KERNELS; f++) {
            int ko[GEMM_I8_MAX_OUTLIERS], vo[GEMM_I8_MAX_OUTLIERS], kn, vn;
            const float ks = gemm_i8_quantise_test(kernels[f], false, x, K, xq, ko, &kn);
            const float vs = gemm_i8_quantise_test(kernels[f], true, x, K, vq, vo, &vn);
            ck_assert_msg(memcmp(&ks, &vs, sizeof ks) == 0, "K %d row %d %s: scale %.9g, %.9g", K,
                          r, kernels[f], ks, vs);
            ck_assert_int_eq(kn, vn);
            ck_assert(memcmp(ko, vo, (size_t)kn * sizeof *ko) == 0);
            ck_assert_msg(memcmp(xq, vq, (size_t)KQ * sizeof *xq) == 0, "K %d row %d %s", K, r,
                          kernels[f]);
            for (int k = K; k < KQ; k++)
                ck_assert_int_eq(xq[k], 0);
            if (r == 7)
                continue;
            /* the rule */
            ref_outliers(outl, x, K);
            int n = 0;
            for (int k = 0; k < K; k++)
                if (outl[k]) {
                    ck_assert_int_lt(n, kn);
                    ck_assert_int_eq(ko[n++], k);
                }
            ck_assert_int_eq(n, kn);
            for (int k = 0; k < K; k++)
                inl[k] = outl[k] ? 0.0f : x[k];
            const float sa = ref_scale(inl, K);
            ck_assert_msg(ks == sa, "K %d row %d: scale %.9g, want %.9g", K, r, ks, sa);
            for (int k = 0; k < K; k++)
                ck_assert_msg(xq[k] == ref_q(inl[k], sa), "K %d row %d k %d: %d, want %d", K, r, k,
                              xq[k], ref_q(inl[k], sa));
        }
    }
    free(xq);
    free(vq);
    free(want);
    free(x);
    free(inl);
    free(outl);
}
END_TEST

#if defined(__x86_64__) && defined(__GNUC__)
/* CPUID leaf 7's subleaf sub, register reg (0 EAX ... 3 EDX), bit. */
static bool cpuid7_bit(unsigned sub, int reg, int bit)
{
    unsigned r[4];
    return __get_cpuid_count(7, sub, &r[0], &r[1], &r[2], &r[3]) && (r[reg] >> bit & 1);
}

/* gemm_int8_limit says a kernel is here exactly when the CPU has its
 * instructions, each asked on its own: AVX512_VNNI (leaf 7 ECX bit 11) does
 * not imply AVX-VNNI (leaf 7.1 EAX bit 4), Zen 4 and Ice Lake have the one
 * only; and a limit to a kernel this CPU lacks runs the fastest it has
 * below it, never the missing one (which would be SIGILL). */
START_TEST(test_int8_kernels_here)
{
    const bool avx2 = cpuid7_bit(0, 1, 5), vnni512 = cpuid7_bit(0, 2, 11),
               avx_vnni = cpuid7_bit(1, 0, 4);
    const bool want[N_KERNELS] = {true, avx2, avx2 && avx_vnni, simd_enabled() && vnni512, false};
    for (int k = 0; k < N_KERNELS; k++) {
        const bool here = gemm_int8_limit(kernels[k]);
        if (k == N_KERNELS - 1) /* AMX-INT8 also needs the OS's grant */
            ck_assert(!here || want[k - 1]);
        else
            ck_assert_msg(here == want[k], "%s: gemm_int8_limit says %d, CPUID %d", kernels[k],
                          here, want[k]);
        int ran = -1;
        for (int j = 0; j < N_KERNELS; j++)
            if (!strcmp(gemm_int8_kernel(), kernels[j]))
                ran = j;
        ck_assert_msg(here ? ran == k : ran < k, "limited to %s, runs %s", kernels[k],
                      gemm_int8_kernel());
        ck_assert(ran >= 0 && (ran == N_KERNELS - 1 || want[ran]));
    }
    gemm_int8_limit("amx_int8");
}
END_TEST
#endif

Suite *gemm_int8_suite(void)
{
    Suite *s = timed_suite("gemm_int8");
    TCase *tc = timed_case(s, "int8", 60);
    tcase_add_loop_test(tc, test_int8_matches_reference, 0, N_SHAPES * N_KERNELS);
    tcase_add_loop_test(tc, test_int8_kernels_agree, 0, N_SHAPES);
    tcase_add_test(tc, test_int8_rows_independent);
    tcase_add_test(tc, test_int8_parts);
    tcase_add_test(tc, test_int8_outliers);
    tcase_add_loop_test(tc, test_int8_quantise_rows, 0, N_Q_LENGTHS);
#if defined(__x86_64__) && defined(__GNUC__)
    tcase_add_test(tc, test_int8_kernels_here);
#endif
    return s;
}
