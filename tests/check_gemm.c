/* check_gemm.c - the prepacked Linear GEMM (core/kernels/gemm.c) against a plain
 * double-precision loop: odd sizes on every edge of its blocking (rows not a
 * multiple of 12, columns not a multiple of 32, K over one 768 block, K
 * with and without the copy into strips), bias
 * and activation, thread shares of panels, the items a team deals, and
 * rows that do not depend on the rest of the batch. */
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/simd.h"
#include "model/model.h"
#include "suites.h"
#include "model/team.h"
#include "test_util.h"
#include "timing.h"

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
            out[(size_t)i * N + n] = act ? ops_activation_value((float)s, *act) : (float)s;
        }
}

static float *scratch_new(void)
{
    float *s = aligned_alloc(64, gemm_scratch_bytes());
    ck_assert(s);
    return s;
}

/* got (M, N) = the packed product as two threads' shares, panels [0, p)
 * and [p, P), any split; every entry NaN first, so each must be written. */
typedef void cols_fn(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                     const float *b, int M, int p0, int p1, const enc_activation *act,
                     float *scratch);

/* two_shares on f (gemm_packed_cols or gemm_bf16_blas_cols). */
static void two_shares_on(cols_fn *f, float *got, int N, const float *in, int K,
                          const gemm_packed *pw, const float *b, int M, const enc_activation *a,
                          float *scratch)
{
    for (size_t k = 0; k < (size_t)M * N; k++)
        got[k] = NAN;
    const int P = gemm_panels(pw), p = P / 2;
    f(got, N, in, K, pw, b, M, 0, p, a, scratch);
    f(got, N, in, K, pw, b, M, p, P, a, scratch);
}

static void two_shares(float *got, int N, const float *in, int K, const gemm_packed *pw,
                       const float *b, int M, const enc_activation *a, float *scratch)
{
    two_shares_on(gemm_packed_cols, got, N, in, K, pw, b, M, a, scratch);
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
    /* K a multiple of 512: rows copied to the scratch first (K = 3072 as in
     * BERT-base's second Linear, 2048 over two blocks) */
    {14, 2048, 40, 1, 1},
    {3, 512, 33, 0, -1},
    {25, 3072, 64, 1, 2},
    /* AMX-BF16: two calls of 32 rows and 6 rows on vdpbf16ps, the columns
     * past 50 masked */
    {70, 96, 50, 1, 0},
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
    if (!simd_supported()) {
        ck_assert_msg(pw == NULL, "gemm_pack must refuse on a CPU without AVX-512");
    } else {
        ck_assert(pw != NULL);
        ck_assert_int_eq(gemm_panels(pw), (N + GEMM_NR - 1) / GEMM_NR);
        float *scratch = scratch_new();
        two_shares(got, N, in, K, pw, has_bias ? b : NULL, M, a, scratch);
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

/* A weight packed from row blocks that lie apart (a file's q, k and v
 * tensors) is the weight packed whole: the same bits out, blocks ending
 * inside a panel or on its edge. */
static const int parts_shapes[][4] = {
    /* rows of the three blocks, K */
    {5, 3, 3, 7}, {32, 16, 16, 64},     {40, 7, 30, 100},
    {1, 1, 1, 1}, {768, 768, 768, 768}, {64, 33, 31, 17},
};

START_TEST(test_packed_parts)
{
    const int *sh = parts_shapes[_i], K = sh[3], N = sh[0] + sh[1] + sh[2], M = 13;
    uint64_t st = 77 + (uint64_t)_i;
    float *whole = xcalloc((size_t)N * K, sizeof *whole), *in = xcalloc((size_t)M * K, sizeof *in);
    float *b = xcalloc((size_t)N, sizeof *b);
    fill_random(whole, (size_t)N * K, &st, 0.1f);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(b, (size_t)N, &st, 0.5f);
    const float *blocks[3];
    float *own[3];
    for (int i = 0, r = 0; i < 3; r += sh[i++]) { /* each block its own allocation */
        own[i] = xcalloc((size_t)sh[i] * K, sizeof(float));
        memcpy(own[i], whole + (size_t)r * K, (size_t)sh[i] * K * sizeof(float));
        blocks[i] = own[i];
    }
    gemm_packed *pw = gemm_pack(whole, N, K), *pp = gemm_pack_parts(blocks, sh, 3, K);
    if (!simd_supported()) {
        ck_assert_ptr_null(pp);
    } else {
        ck_assert(pw && pp);
        ck_assert_int_eq(gemm_panels(pp), gemm_panels(pw));
        float *scratch = scratch_new();
        float *a = xcalloc((size_t)M * N, sizeof *a), *c = xcalloc((size_t)M * N, sizeof *c);
        float *want = xcalloc((size_t)M * N, sizeof *want);
        gemm_packed_cols(a, N, in, K, pw, b, M, 0, gemm_panels(pw), NULL, scratch);
        gemm_packed_cols(c, N, in, K, pp, b, M, 0, gemm_panels(pp), NULL, scratch);
        ck_assert_msg(memcmp(a, c, (size_t)M * N * sizeof *a) == 0,
                      "blocks %d %d %d, K %d: packed from the blocks differs", sh[0], sh[1], sh[2],
                      K);
        reference(want, in, whole, b, M, K, N, NULL);
        ck_assert(max_abs_diff(c, want, (size_t)M * N) <= 1e-5 * sqrt((double)K));
        free(scratch);
        free(a);
        free(c);
        free(want);
    }
    gemm_packed_free(pw);
    gemm_packed_free(pp);
    for (int i = 0; i < 3; i++)
        free(own[i]);
    free(whole);
    free(in);
    free(b);
}
END_TEST

/* Each row comes out with the same bits whatever rows surround it: a
 * sequence gives what it gives alone. */
START_TEST(test_rows_independent)
{
    if (!simd_supported())
        return;
    const int M = 29, K = 1000, N = 45;
    uint64_t st = 99;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *all = xcalloc((size_t)M * N, sizeof *all), *one = xcalloc((size_t)N, sizeof *one);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 0.05f);
    gemm_packed *pw = gemm_pack(w, N, K);
    float *scratch = scratch_new();
    gemm_packed_cols(all, N, in, K, pw, NULL, M, 0, gemm_panels(pw), NULL, scratch);
    for (int i = 0; i < M; i++) {
        gemm_packed_cols(one, N, in + (size_t)i * K, K, pw, NULL, 1, 0, gemm_panels(pw), NULL,
                         scratch);
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

/* A Linear run as a team deals gemm_grid_of's items (team_deal, one
 * thread taking every take here) writes every output once and the same
 * bits as one gemm_packed_cols call, float32 and bfloat16; the grid has
 * GEMM_ITEMS_PER_THREAD items a thread where the panels allow. */
START_TEST(test_grid_items)
{
    if (!simd_supported())
        return;
    /* M, N, threads */
    static const int cases[][3] = {{1, 33, 2},   {7, 200, 16},  {192, 64, 2},
                                   {193, 96, 4}, {1024, 40, 2}, {450, 300, 3}};
    const int K = 70;
    for (int c = 0; c < (int)(sizeof cases / sizeof *cases); c++)
        for (int bf = 0; bf < 2; bf++) {
            const int M = cases[c][0], N = cases[c][1], nth = cases[c][2];
            uint64_t st = 300 + (uint64_t)c;
            float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
            float *b = xcalloc((size_t)N, sizeof *b), *one = xcalloc((size_t)M * N, sizeof *one);
            float *got = xcalloc((size_t)M * N, sizeof *got);
            fill_random(in, (size_t)M * K, &st, 1.0f);
            fill_random(w, (size_t)N * K, &st, 0.1f);
            fill_random(b, (size_t)N, &st, 0.5f);
            gemm_packed *pw = bf ? gemm_pack_bf16(w, N, K) : gemm_pack(w, N, K);
            float *scratch = scratch_new();
            const enc_activation act = ENC_ACT_GELU;
            const int P = gemm_panels(pw);
            gemm_packed_cols(one, N, in, K, pw, b, M, 0, P, &act, scratch);
            const gemm_grid g = gemm_grid_of(pw, M, nth, NULL);
            const int items = gemm_grid_items(g), blocks = (M + GEMM_MC - 1) / GEMM_MC;
            ck_assert_int_eq(g.blocks, blocks);
            ck_assert_int_le(g.groups, P);
            const int want =
                GEMM_ITEMS_PER_THREAD * nth < blocks * P ? GEMM_ITEMS_PER_THREAD * nth : blocks * P;
            ck_assert_msg(items >= want, "M %d N %d, %d threads: %d items", M, N, nth, items);
            for (size_t k = 0; k < (size_t)M * N; k++)
                got[k] = NAN;
            team_deal d;
            team_deal_init(&d, items, nth);
            int lo, hi;
            while (team_deal_take(&d, &lo, &hi))
                gemm_packed_items(got, N, in, K, pw, b, g, lo, hi, &act, scratch);
            ck_assert_msg(memcmp(got, one, (size_t)M * N * sizeof *got) == 0,
                          "M %d N %d, %d threads, %s: items differ from one call", M, N, nth,
                          bf ? "bfloat16" : "float32");
            free(scratch);
            gemm_packed_free(pw);
            free(in);
            free(w);
            free(b);
            free(one);
            free(got);
        }
}
END_TEST

/* Rows further apart than K (in) and N (out): the padding of in is never
 * read (NaN there would show), the padding of out never written; strides
 * copied to the scratch first (lda * 4 a multiple of 2 KiB) and read in
 * place (the workspace's padded hidden layer, 3072 + 16) both. */
static const int strided[][5] = {
    /* M, K, lda, N, ldc */
    {30, 3072, 3088, 50, 64},
    {30, 3000, 3072, 40, 40},
    {13, 700, 1024, 33, 35},
    {200, 768, 784, 96, 100},
};

START_TEST(test_strided_rows)
{
    if (!simd_supported())
        return;
    const int M = strided[_i][0], K = strided[_i][1], lda = strided[_i][2];
    const int N = strided[_i][3], ldc = strided[_i][4];
    ck_assert_int_eq(gemm_stride_ok(lda), ((size_t)lda * 4) % 2048 != 0);
    uint64_t st = 7 + (uint64_t)_i;
    float *dense = xcalloc((size_t)M * K, sizeof *dense), *in = xcalloc((size_t)M * lda, 4);
    float *w = xcalloc((size_t)N * K, sizeof *w), *b = xcalloc((size_t)N, sizeof *b);
    float *want = xcalloc((size_t)M * N, sizeof *want), *out = xcalloc((size_t)M * ldc, 4);
    fill_random(dense, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    fill_random(b, (size_t)N, &st, 0.5f);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < lda; k++)
            in[(size_t)i * lda + k] = k < K ? dense[(size_t)i * K + k] : NAN;
    for (size_t k = 0; k < (size_t)M * ldc; k++)
        out[k] = -7.0f;
    const enc_activation act = ENC_ACT_GELU;
    reference(want, dense, w, b, M, K, N, &act);

    gemm_packed *pw = gemm_pack(w, N, K);
    float *scratch = scratch_new();
    gemm_packed_cols(out, ldc, in, lda, pw, b, M, 0, gemm_panels(pw), &act, scratch);
    double d = 0.0;
    for (int i = 0; i < M; i++)
        for (int n = 0; n < ldc; n++) {
            const float got = out[(size_t)i * ldc + n];
            if (n >= N)
                ck_assert_msg(got == -7.0f, "row %d padding column %d was written: %g", i, n, got);
            else
                d = fmax(d, fabs((double)got - want[(size_t)i * N + n]));
        }
    ck_assert_msg(d <= 1e-5 * sqrt((double)K), "M %d K %d lda %d: differs by %g", M, K, lda, d);
    free(scratch);
    gemm_packed_free(pw);
    free(dense);
    free(in);
    free(w);
    free(b);
    free(want);
    free(out);
}
END_TEST

/* The attention products: c (+)= a . b with b read in place (values, rows
 * ldb apart) and b = scale * src^T packed by gemm_pack_t (keys), against
 * double sums; sizes off every edge of the kernel (12 rows, 32 columns). */
static const int mul_shapes[][3] = {
    /* M, N, K */
    {1, 1, 1}, {5, 7, 3}, {12, 32, 64}, {13, 33, 64}, {64, 128, 64}, {64, 64, 130}, {25, 100, 17},
};

START_TEST(test_attention_products)
{
    if (!simd_supported())
        return;
    const int M = mul_shapes[_i][0], N = mul_shapes[_i][1], K = mul_shapes[_i][2];
    const int lda = K + 3, ldb = N + 5, ldc = N + 2, lds = K + 9;
    const float scale = 0.125f;
    uint64_t st = 555 + (uint64_t)_i;
    float *a = xcalloc((size_t)M * lda, sizeof *a), *b = xcalloc((size_t)K * ldb, sizeof *b);
    float *src = xcalloc((size_t)N * lds, sizeof *src);
    const int P = (N + GEMM_NR - 1) / GEMM_NR;
    float *bp = xcalloc((size_t)P * K * GEMM_NR, sizeof *bp);
    float *c = xcalloc((size_t)M * ldc, sizeof *c), *c0 = xcalloc((size_t)M * ldc, sizeof *c0);
    fill_random(a, (size_t)M * lda, &st, 1.0f);
    fill_random(b, (size_t)K * ldb, &st, 1.0f);
    fill_random(src, (size_t)N * lds, &st, 1.0f);
    fill_random(c0, (size_t)M * ldc, &st, 1.0f);
    gemm_pack_t(bp, src, lds, N, K, scale);

    for (int packed = 0; packed < 2; packed++)
        for (int acc = 0; acc < 2; acc++) {
            memcpy(c, c0, (size_t)M * ldc * sizeof *c);
            if (packed)
                gemm_mul(c, ldc, a, lda, bp, GEMM_NR, (size_t)K * GEMM_NR, M, N, K, acc);
            else
                gemm_mul(c, ldc, a, lda, b, (size_t)ldb, GEMM_NR, M, N, K, acc);
            double worst = 0.0;
            for (int i = 0; i < M; i++)
                for (int n = 0; n < ldc; n++) {
                    const size_t at = (size_t)i * ldc + n;
                    if (n >= N) { /* past N: untouched */
                        ck_assert(c[at] == c0[at]);
                        continue;
                    }
                    double want = acc ? c0[at] : 0.0;
                    for (int k = 0; k < K; k++)
                        want += (double)a[(size_t)i * lda + k] *
                                (packed ? (double)scale * src[(size_t)n * lds + k]
                                        : (double)b[(size_t)k * ldb + n]);
                    worst = fmax(worst, fabs(c[at] - want));
                }
            ck_assert_msg(worst <= 1e-5 * sqrt((double)K), "M %d N %d K %d packed %d acc %d: %g", M,
                          N, K, packed, acc, worst);
        }
    free(a);
    free(b);
    free(src);
    free(bp);
    free(c);
    free(c0);
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
    ck_assert_msg(!simd_supported() || m->packed, "seeded model not packed on AVX-512");
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
    simd_set_enabled(false);
    ck_assert_int_eq(enc_forward(m, ws, &in, &r2, NULL), 0);
    simd_set_enabled(true);
    const double d = max_abs_diff(o1, o2, (size_t)B * L * D);
    ck_assert_msg(d <= 1e-5, "packed and cblas paths differ by %g", d);
    enc_workspace_free(ws);
    enc_model_free(m);
    free(x);
    free(o1);
    free(o2);
}
END_TEST

/* A gated first Linear with its gating in the packed GEMM: (M, F, K, ffn,
 * activation, threads): more rows than one block of 192, K over one block of
 * 768, shares of the input's panels split over threads. */
static const int glu_shapes[][6] = {
    {1, 32, 16, ENC_FFN_GEGLU, ENC_ACT_GELU, 1},
    {13, 64, 100, ENC_FFN_GEGLU, ENC_ACT_GELU_TANH, 2},
    {200, 96, 770, ENC_FFN_SWIGLU, ENC_ACT_GELU, 3},
    {37, 1152, 64, ENC_FFN_GEGLU, ENC_ACT_GELU, 2},
};

START_TEST(test_packed_glu)
{
    if (!simd_supported())
        return;
    const int M = glu_shapes[_i][0], F = glu_shapes[_i][1], K = glu_shapes[_i][2];
    const enc_ffn ffn = (enc_ffn)glu_shapes[_i][3];
    const enc_activation act = (enc_activation)glu_shapes[_i][4];
    const int threads = glu_shapes[_i][5], N = 2 * F;
    uint64_t st = 11 + (uint64_t)_i;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *b = xcalloc((size_t)N, sizeof *b), *h = xcalloc((size_t)M * N, sizeof *h);
    float *out = xcalloc((size_t)M * N, sizeof *out);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    fill_random(b, (size_t)N, &st, 0.5f);
    reference(h, in, w, b, M, K, N, NULL); /* the input's F columns, then the gate's */
    gemm_packed *pw = gemm_pack(w, N, K);
    ck_assert(gemm_glu_ok(pw));
    float *scratch = scratch_new();
    for (int t = 0; t < threads; t++) { /* each thread's share of the input's panels */
        int q0, q1;
        team_split(gemm_panels(pw) / 2, t, threads, &q0, &q1);
        gemm_packed_glu(out, N, in, K, pw, b, M, q0, q1, ffn, act, scratch);
    }
    double d = 0.0;
    for (int i = 0; i < M; i++)
        for (int n = 0; n < F; n++) {
            const double u = h[(size_t)i * N + n], g = h[(size_t)i * N + F + n];
            const double a =
                ffn == ENC_FFN_SWIGLU ? u / (1.0 + exp(-u)) : ops_activation_value((float)u, act);
            d = fmax(d, fabs(out[(size_t)i * N + n] - a * g));
            /* the gate's columns keep the gate */
            d = fmax(d, fabs(out[(size_t)i * N + F + n] - g));
        }
    ck_assert_msg(d <= 1e-5 * sqrt((double)K), "M %d F %d K %d: differs by %g", M, F, K, d);
    /* the height it needs: 2F a whole number of pairs of panels */
    gemm_packed *odd = gemm_pack(w, N - 32, K);
    ck_assert(!gemm_glu_ok(odd) || (N - 32) % 64 == 0);
    gemm_packed_free(odd);
    free(scratch);
    gemm_packed_free(pw);
    free(in);
    free(w);
    free(b);
    free(h);
    free(out);
}
END_TEST

/* The in-projection with RoPE in the GEMM: (M, heads, panels past them,
 * K, threads) against the double loop, then the rotation written out. */
static const int rope_shapes[][5] = {
    {1, 1, 0, 16, 1}, {13, 3, 2, 100, 2}, {200, 4, 4, 770, 3}, {37, 24, 24, 64, 2}};

START_TEST(test_packed_rope)
{
    if (!simd_supported())
        return;
    const int M = rope_shapes[_i][0], heads = rope_shapes[_i][1], K = rope_shapes[_i][3];
    const int threads = rope_shapes[_i][4], N = heads * 64 + rope_shapes[_i][2] * 32;
    uint64_t st = 21 + (uint64_t)_i;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *b = xcalloc((size_t)N, sizeof *b), *h = xcalloc((size_t)M * N, sizeof *h);
    float *out = xcalloc((size_t)M * N, sizeof *out), *table = xcalloc(50 * 64, sizeof *table);
    int32_t *pos = xcalloc((size_t)M, sizeof *pos);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    fill_random(b, (size_t)N, &st, 0.5f);
    for (int p = 0; p < 50; p++) /* angles p * 10000^(-k / 32) */
        for (int k = 0; k < 32; k++) {
            table[p * 64 + k] = (float)cos(p * pow(10000.0, -k / 32.0));
            table[p * 64 + 32 + k] = (float)sin(p * pow(10000.0, -k / 32.0));
        }
    for (int i = 0; i < M; i++)
        pos[i] = rand_int(&st, 0, 49);
    reference(h, in, w, b, M, K, N, NULL);
    gemm_packed *pw = gemm_pack(w, N, K);
    float *scratch = scratch_new();
    for (int t = 0; t < threads; t++) { /* the heads' shares, then the other panels' */
        int h0, h1;
        team_split(heads, t, threads, &h0, &h1);
        gemm_packed_rope(out, N, in, K, pw, b, M, h0, h1, table, pos, scratch);
        team_split(gemm_panels(pw) - 2 * heads, t, threads, &h0, &h1);
        gemm_packed_cols(out, N, in, K, pw, b, M, 2 * heads + h0, 2 * heads + h1, NULL, scratch);
    }
    double d = 0.0;
    for (int i = 0; i < M; i++)
        for (int n = 0; n < N; n++) {
            const float *row = h + (size_t)i * N;
            double want = row[n];
            if (n < heads * 64) { /* dims k and k + 32 of a head turn together */
                const int k = n % 64 % 32, lo = n - n % 64 + k;
                const double c = table[pos[i] * 64 + k], s = table[pos[i] * 64 + 32 + k];
                want =
                    n % 64 < 32 ? row[lo] * c - row[lo + 32] * s : row[lo + 32] * c + row[lo] * s;
            }
            d = fmax(d, fabs(out[(size_t)i * N + n] - want));
        }
    ck_assert_msg(d <= 1e-5 * sqrt((double)K), "M %d heads %d K %d: differs by %g", M, heads, K, d);
    free(scratch);
    gemm_packed_free(pw);
    free(in);
    free(w);
    free(b);
    free(h);
    free(out);
    free(table);
    free(pos);
}
END_TEST

/* x rounded to bfloat16 (8 significant bits), to nearest even, written
 * out with frexp: the test's own rounding, not the code's. */
static float bf16_reference(float x)
{
    int e;
    const double m = frexp((double)x, &e); /* x = m 2^e, 0.5 <= |m| < 1 */
    return (float)ldexp(nearbyint(ldexp(m, 8)), e - 8);
}

/* Selects the vdpbf16ps kernel (dp) or the widening one for a test of
 * what; false where this CPU cannot run it, with a line saying so when
 * first. */
static bool use_bf16_kernel(bool dp, bool first, const char *what)
{
    if (!simd_supported()) {
        ck_assert_str_eq(gemm_bf16_kernel(), "openblas");
        if (first)
            printf("%s: no AVX-512F here: the %s kernel is not run here\n", what,
                   dp ? "vdpbf16ps" : "widening");
        return false;
    }
    gemm_bf16_use_dpbf16(dp);
    const char *k = gemm_bf16_kernel();
    if (dp && strcmp(k, "avx512_bf16") != 0 && strcmp(k, "amx_bf16") != 0) {
        if (first)
            printf("%s: this CPU has no AVX512_BF16: the vdpbf16ps kernel is not run here (the "
                   "widening kernel is)\n",
                   what);
        gemm_bf16_use_dpbf16(true);
        return false;
    }
    return true;
}

/* bfloat16 weights (gemm_pack_bf16) on every shape of test_packed_matches_
 * reference, on each kernel: AMX-BF16's tdpbf16ps where the CPU and the OS
 * allow it, vdpbf16ps where the CPU has AVX512_BF16 (each said when not),
 * the widening one where it has AVX-512F (said when it has not), and
 * gemm_bf16_blas_cols (OpenBLAS) everywhere.  Against the double
 * loop on the inputs rounded to bfloat16 (the products are exact in
 * float32, so only float32 summing differs), and not the float32 result
 * (the rounding happened). */
START_TEST(test_bf16_matches_reference)
{
    enum { AMX, DPBF16, WIDENED, BLAS };
    const int shape = _i / 4, kernel = _i % 4;
    const bool dp = kernel == DPBF16 || kernel == AMX;
    gemm_bf16_use_amx(kernel == AMX);
    const int M = shapes[shape][0], K = shapes[shape][1], N = shapes[shape][2];
    const bool has_bias = shapes[shape][3];
    const enc_activation act = (enc_activation)shapes[shape][4];
    const enc_activation *a = shapes[shape][4] >= 0 ? &act : NULL;
    if (kernel == BLAS)
        gemm_bf16_use_dpbf16(false);
    else if (!use_bf16_kernel(dp, shape == 0, "gemm bf16"))
        return;
    if (kernel == AMX && strcmp(gemm_bf16_kernel(), "amx_bf16") != 0) {
        if (shape == 0)
            printf("gemm bf16: no AMX-BF16 here (or the OS grants no tiles): the AMX kernel is "
                   "not run here\n");
        gemm_bf16_use_amx(true);
        return;
    }
    if (kernel != BLAS)
        ck_assert_str_eq(gemm_bf16_kernel(), kernel == AMX ? "amx_bf16"
                                             : dp          ? "avx512_bf16"
                                                           : "avx512f");
    uint64_t st = 4321 + (uint64_t)shape;
    float *in = xcalloc((size_t)M * K, sizeof *in), *w = xcalloc((size_t)N * K, sizeof *w);
    float *inr = xcalloc((size_t)M * K, sizeof *in), *wr = xcalloc((size_t)N * K, sizeof *w);
    float *b = xcalloc((size_t)N, sizeof *b), *f32 = xcalloc((size_t)M * N, sizeof *f32);
    float *want = xcalloc((size_t)M * N, sizeof *want), *got = xcalloc((size_t)M * N, 4);
    fill_random(in, (size_t)M * K, &st, 1.0f);
    fill_random(w, (size_t)N * K, &st, 1.0f / sqrtf((float)K));
    fill_random(b, (size_t)N, &st, 0.5f);
    for (size_t k = 0; k < (size_t)M * K; k++)
        inr[k] = bf16_reference(in[k]);
    for (size_t k = 0; k < (size_t)N * K; k++)
        wr[k] = bf16_reference(w[k]);
    reference(want, inr, wr, has_bias ? b : NULL, M, K, N, a);
    reference(f32, in, w, has_bias ? b : NULL, M, K, N, a);

    gemm_packed *pw = gemm_pack_bf16(w, N, K);
    ck_assert(pw != NULL && gemm_packed_bf16(pw));
    ck_assert_int_eq(gemm_panels(pw), (N + GEMM_NR - 1) / GEMM_NR);
    /* half float32's bytes (an odd K: one pair more per panel; the
     * struct's own bytes, under 256) */
    const size_t f32_bytes = (size_t)gemm_panels(pw) * GEMM_NR * (size_t)K * sizeof(float);
    ck_assert_uint_le(2 * gemm_packed_bytes(pw),
                      f32_bytes + (size_t)gemm_panels(pw) * GEMM_NR * 4 + 2 * 256);
    float *scratch = scratch_new();
    two_shares_on(kernel == BLAS ? gemm_bf16_blas_cols : gemm_packed_cols, got, N, in, K, pw,
                  has_bias ? b : NULL, M, a, scratch);
    const double d = max_abs_diff(got, want, (size_t)M * N);
    ck_assert_msg(d <= 1e-5 * sqrt((double)K), "%s, M %d K %d N %d: differs by %g",
                  kernel == BLAS ? "openblas" : gemm_bf16_kernel(), M, K, N, d);
    if (K >= 64)
        ck_assert_msg(max_abs_diff(got, f32, (size_t)M * N) > 1e-4,
                      "M %d K %d N %d: the float32 result, not bfloat16's", M, K, N);
    free(scratch);
    gemm_packed_free(pw);
    gemm_bf16_use_dpbf16(true);
    gemm_bf16_use_amx(true);
    free(in);
    free(w);
    free(inr);
    free(wr);
    free(b);
    free(f32);
    free(want);
    free(got);
}
END_TEST

/* The attention products in bfloat16: values (gemm_pack_pairs_bf16, read
 * from an even k offset as attention reads a block of keys) and keys
 * (gemm_pack_t_bf16, from a panel's offset) by gemm_mul_bf16, on the
 * vdpbf16ps and the widening kernel, against the double loop on the inputs
 * rounded to bfloat16; sizes off every edge, and k past one block (768). */
static const int mul_bf16_shapes[][3] = {
    /* M, N, K */
    {1, 1, 1}, {5, 7, 3}, {12, 32, 64}, {13, 33, 64}, {64, 128, 64}, {25, 100, 17}, {20, 64, 1000},
};

START_TEST(test_attention_products_bf16)
{
    const int shape = _i / 2;
    const bool dp = _i % 2 == 0;
    if (!use_bf16_kernel(dp, shape == 0, "gemm bf16 attention products"))
        return;
    const int M = mul_bf16_shapes[shape][0], N = mul_bf16_shapes[shape][1];
    const int K = mul_bf16_shapes[shape][2];
    const int lda = K + 3, ldb = N + 5, ldc = N + 2, lds = K + 9;
    const float scale = 0.125f;
    uint64_t st = 777 + (uint64_t)shape;
    float *a = xcalloc((size_t)M * lda, sizeof *a), *b = xcalloc((size_t)K * ldb, sizeof *b);
    float *src = xcalloc((size_t)N * lds, sizeof *src);
    float *c = xcalloc((size_t)M * ldc, sizeof *c), *c0 = xcalloc((size_t)M * ldc, sizeof *c0);
    uint32_t *vb = xcalloc(gemm_pairs_words(N, K), sizeof *vb);
    uint32_t *kb = xcalloc(gemm_pairs_words(N, K), sizeof *kb);
    uint32_t *scratch = xcalloc(gemm_mul_bf16_scratch_bytes(), 1);
    fill_random(a, (size_t)M * lda, &st, 1.0f);
    fill_random(b, (size_t)K * ldb, &st, 1.0f);
    fill_random(src, (size_t)N * lds, &st, 1.0f);
    fill_random(c0, (size_t)M * ldc, &st, 1.0f);
    memset(vb, 0xFF, gemm_pairs_words(N, K) * sizeof *vb); /* padding must be written */
    memset(kb, 0xFF, gemm_pairs_words(N, K) * sizeof *kb);
    gemm_pack_pairs_bf16(vb, b, ldb, K, N);
    gemm_pack_t_bf16(kb, src, lds, N, K, scale);
    const size_t v_panel = gemm_pairs_words(GEMM_NR, K), k_panel = gemm_pairs_words(GEMM_NR, K);

    for (int keys = 0; keys < 2; keys++)
        for (int off = 0; off < 2; off++)
            for (int acc = 0; acc < 2; acc++) {
                /* values from k offset 2 (pair 1), keys from column offset NR
                 * (panel 1): the rest of the product */
                const int k0 = !keys && off ? (K > 2 ? 2 : 0) : 0;
                const int n0 = keys && off ? (N > GEMM_NR ? GEMM_NR : 0) : 0;
                const int KK = K - k0, NN = N - n0;
                memcpy(c, c0, (size_t)M * ldc * sizeof *c);
                if (keys)
                    gemm_mul_bf16(c, ldc, a, lda, kb + (size_t)(n0 / GEMM_NR) * k_panel, k_panel, M,
                                  NN, K, acc, scratch);
                else
                    gemm_mul_bf16(c, ldc, a + k0, lda, vb + (size_t)(k0 / 2) * GEMM_NR, v_panel, M,
                                  N, KK, acc, scratch);
                double worst = 0.0, off_f32 = 0.0;
                for (int i = 0; i < M; i++)
                    for (int n = 0; n < ldc; n++) {
                        const size_t at = (size_t)i * ldc + n;
                        if (n >= NN) { /* past N: untouched */
                            ck_assert(c[at] == c0[at]);
                            continue;
                        }
                        double want = acc ? c0[at] : 0.0, f32 = want;
                        for (int k = k0; k < K; k++) {
                            const float x = a[(size_t)i * lda + k];
                            const float y = keys ? scale * src[(size_t)(n0 + n) * lds + k]
                                                 : b[(size_t)k * ldb + n];
                            want += (double)bf16_reference(x) * bf16_reference(y);
                            f32 += (double)x * y;
                        }
                        worst = fmax(worst, fabs(c[at] - want));
                        off_f32 = fmax(off_f32, fabs(c[at] - f32));
                    }
                ck_assert_msg(worst <= 1e-5 * sqrt((double)KK),
                              "%s M %d N %d K %d keys %d "
                              "off %d acc %d: %g",
                              gemm_bf16_kernel(), M, NN, KK, keys, off, acc, worst);
                if (KK >= 64)
                    ck_assert_msg(off_f32 > 1e-4, "M %d N %d K %d: float32's product", M, NN, KK);
            }
    gemm_bf16_use_dpbf16(true);
    free(a);
    free(b);
    free(src);
    free(c);
    free(c0);
    free(vb);
    free(kb);
    free(scratch);
}
END_TEST

Suite *gemm_suite(void)
{
    Suite *s = timed_suite("gemm");
    TCase *tc = timed_case(s, "packed", 60);
    tcase_add_loop_test(tc, test_packed_matches_reference, 0,
                        (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_loop_test(tc, test_bf16_matches_reference, 0,
                        4 * (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_test(tc, test_rows_independent);
    tcase_add_test(tc, test_grid_items);
    tcase_add_loop_test(tc, test_packed_parts, 0,
                        (int)(sizeof parts_shapes / sizeof parts_shapes[0]));
    tcase_add_loop_test(tc, test_attention_products, 0,
                        (int)(sizeof mul_shapes / sizeof mul_shapes[0]));
    tcase_add_loop_test(tc, test_attention_products_bf16, 0,
                        2 * (int)(sizeof mul_bf16_shapes / sizeof mul_bf16_shapes[0]));
    tcase_add_loop_test(tc, test_strided_rows, 0, (int)(sizeof strided / sizeof strided[0]));
    tcase_add_test(tc, test_forward_both_paths);
    tcase_add_loop_test(tc, test_packed_rope, 0, (int)(sizeof rope_shapes / sizeof rope_shapes[0]));
    tcase_add_loop_test(tc, test_packed_glu, 0, (int)(sizeof glu_shapes / sizeof glu_shapes[0]));
    return s;
}
