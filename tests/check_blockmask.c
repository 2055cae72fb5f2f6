/* check_blockmask.c - the block mask: the scores a forward computes against
 * the tile arithmetic of each pattern, the CSR lists against a predicate
 * written here from the definitions, and the tiled attention against the
 * naive reference on sequences long enough to have many tiles. */
#include "kernels/blockmask.h"
#include "kernels/mask.h"
#include "model/model.h"
#include "kernels/simd.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN2(a, b) ((a) < (b) ? (a) : (b))
#define MAX2(a, b) ((a) > (b) ? (a) : (b))

/* A small model: D 16, 4 heads, 2 key/value heads, 2 layers. */
static enc_model *small_model(void)
{
    const enc_hparams hp = {HP_BASE(16, 4, 2, 24, 2, ENC_ACT_GELU, false, 1e-5f, true)};
    enc_model *m = enc_model_random(&hp, 11, NULL);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* Runs one forward without weights; returns the scores it computed. */
static uint64_t forward_scores(const enc_model *m, const enc_batch *in)
{
    const size_t n = (size_t)in->B * in->L * m->hp.d_model;
    float *out = xcalloc(n, sizeof *out);
    enc_workspace *ws = enc_workspace_new(m);
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_NONE};
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
    free(out);
    return res.scores;
}

/* Keys of the key tiles (BM_TILE_K wide, cut at len) that meet [lo, hi]. */
static uint64_t tile_keys(int lo, int hi, int len)
{
    lo = MAX2(lo, 0);
    hi = MIN2(hi, len - 1);
    if (lo > hi)
        return 0;
    const int k0 = lo / BM_TILE_K * BM_TILE_K;
    const int k1 = MIN2((hi / BM_TILE_K + 1) * BM_TILE_K, len);
    return (uint64_t)(k1 - k0);
}

START_TEST(test_scores_no_mask)
{
    enc_model *m = small_model();
    const int L = 150, lengths[3] = {150, 7, 100};
    float *x = xcalloc((size_t)3 * L * 16, sizeof *x);
    uint64_t st = 3;
    fill_random(x, (size_t)3 * L * 16, &st, 1.0f);
    enc_batch in = batch_plain(x, 3, L, lengths);
    const uint64_t want = 4ull * 2 * (150 * 150 + 7 * 7 + 100 * 100); /* H L^2 per layer */
    ck_assert_uint_eq(forward_scores(m, &in), want);
    free(x);
    enc_model_free(m);
}
END_TEST

START_TEST(test_scores_window_causal_blocks)
{
    enc_model *m = small_model();
    const int len = 333;
    float *x = xcalloc((size_t)len * 16, sizeof *x);
    uint64_t st = 5;
    fill_random(x, (size_t)len * 16, &st, 1.0f);
    for (int w = 0; w <= 70; w += 7) {
        /* window w: query tile [q0, q1) scores the key tiles meeting
         * [q0 - w, q1 - 1 + w] */
        enc_batch in = batch_plain(x, 1, len, NULL);
        in.mask.window_left = in.mask.window_right = w;
        uint64_t want = 0;
        for (int q0 = 0; q0 < len; q0 += BM_TILE_Q) {
            const int q1 = MIN2(q0 + BM_TILE_Q, len);
            want += (uint64_t)(q1 - q0) * tile_keys(q0 - w, q1 - 1 + w, len);
        }
        const uint64_t got = forward_scores(m, &in);
        ck_assert_uint_eq(got, want * 4 * 2);
        /* the bound: H L (2w + 1 + 2T) per layer, T = BM_TILE_Q */
        ck_assert_uint_le(got, 4ull * 2 * len * (2 * w + 1 + 2 * BM_TILE_Q));
    }
    {
        enc_batch in = batch_plain(x, 1, len, NULL);
        in.mask.causal = true;
        uint64_t want = 0;
        for (int q0 = 0; q0 < len; q0 += BM_TILE_Q) {
            const int q1 = MIN2(q0 + BM_TILE_Q, len);
            want += (uint64_t)(q1 - q0) * tile_keys(0, q1 - 1, len);
        }
        ck_assert_uint_eq(forward_scores(m, &in), want * 4 * 2);
    }
    {
        /* BigBird, blocks of 64 (one query tile each), window 1, global 1, no
         * random blocks: query block 0 sees all; the others their
         * neighbours and block 0. */
        enc_batch in = batch_plain(x, 1, len, NULL);
        in.mask.blocks = (enc_blocks_pattern){.size = 64, .window = 1, .global = 1};
        const int nb = (len + 63) / 64;
        uint64_t want = 0;
        for (int qb = 0; qb < nb; qb++) {
            const int rows = MIN2(64, len - qb * 64);
            uint64_t keys = 0;
            for (int kb = 0; kb < nb; kb++)
                if (qb == 0 || kb == 0 || abs(qb - kb) <= 1)
                    keys += (uint64_t)MIN2(64, len - kb * 64);
            want += keys * (uint64_t)rows;
        }
        ck_assert_uint_eq(forward_scores(m, &in), want * 4 * 2);
    }
    free(x);
    enc_model_free(m);
}
END_TEST

/* Window w over sequence lengths: each sequence's query tiles over its own
 * keys only, so a batch costs the sum of its sequences alone. */
static uint64_t window_keys(int len, int w)
{
    uint64_t want = 0;
    for (int q0 = 0; q0 < len; q0 += BM_TILE_Q) {
        const int q1 = MIN2(q0 + BM_TILE_Q, len);
        want += (uint64_t)(q1 - q0) * tile_keys(q0 - w, q1 - 1 + w, len);
    }
    return want;
}

START_TEST(test_scores_batch_pays_no_padding)
{
    enc_model *m = small_model();
    const int L = 300, lengths[3] = {300, 45, 129};
    float *x = xcalloc((size_t)3 * L * 16, sizeof *x);
    uint64_t st = 8;
    fill_random(x, (size_t)3 * L * 16, &st, 1.0f);
    enc_batch in = batch_plain(x, 3, L, lengths);
    in.mask.window_left = in.mask.window_right = 20;
    const uint64_t want = window_keys(300, 20) + window_keys(45, 20) + window_keys(129, 20);
    ck_assert_uint_eq(forward_scores(m, &in), want * 4 * 2);
    free(x);
    enc_model_free(m);
}
END_TEST

/* ---- the allowed pairs, from the definitions ------------------------------ */

typedef struct pattern_case {
    int len, L;
    bool causal;
    int wl, wr; /* -1 unbounded */
    int stride, fixed_l, fixed_c;
    enc_blocks_pattern blocks;
    int global[3], n_global;
    bool padding; /* every 5th key is padding */
} pattern_case;

static bool def_allowed(const pattern_case *pc, const int *rnd, int rnd_k, int i, int j)
{
    if (pc->padding && j % 5 == 4)
        return false;
    if (pc->causal && j > i)
        return false;
    const bool window = pc->wl >= 0 || pc->wr >= 0;
    if (!window && !pc->stride && !pc->fixed_l && !pc->blocks.size)
        return true;
    for (int g = 0; g < pc->n_global; g++)
        if (pc->global[g] == i || pc->global[g] == j)
            return true;
    if (window && (pc->wl < 0 || i - j <= pc->wl) && (pc->wr < 0 || j - i <= pc->wr))
        return true;
    if (pc->stride && (abs(i - j) < pc->stride || (i - j) % pc->stride == 0))
        return true;
    if (pc->fixed_l &&
        (i / pc->fixed_l == j / pc->fixed_l || j % pc->fixed_l >= pc->fixed_l - pc->fixed_c))
        return true;
    if (pc->blocks.size) {
        const int b = pc->blocks.size, qb = i / b, kb = j / b;
        if (abs(qb - kb) <= pc->blocks.window || qb < pc->blocks.global || kb < pc->blocks.global)
            return true;
        for (int r = 0; r < rnd_k; r++)
            if (rnd[(size_t)qb * rnd_k + r] == kb)
                return true;
    }
    return false;
}

static const pattern_case cases[] = {
    {.len = 200, .L = 200, .wl = 9, .wr = 30},
    {.len = 161, .L = 170, .wl = 64, .wr = 64, .causal = true, .padding = true},
    {.len = 257, .L = 257, .wl = -1, .wr = -1, .stride = 40},
    {.len = 257, .L = 260, .wl = -1, .wr = -1, .stride = 16, .causal = true},
    {.len = 300, .L = 300, .wl = -1, .wr = -1, .fixed_l = 50, .fixed_c = 7},
    {.len = 300,
     .L = 300,
     .wl = 3,
     .wr = 3,
     .fixed_l = 64,
     .fixed_c = 0,
     .global = {5, 250},
     .n_global = 2},
    {.len = 333,
     .L = 333,
     .wl = -1,
     .wr = -1,
     .blocks = {.size = 20, .window = 1, .global = 1, .random = 3, .seed = 42}},
    {.len = 129,
     .L = 140,
     .wl = 2,
     .wr = 0,
     .stride = 33,
     .blocks = {.size = 7, .window = 0, .global = 0, .random = 2, .seed = 7},
     .global = {100},
     .n_global = 1,
     .padding = true},
    {.len = 200,
     .L = 210,
     .wl = 5,
     .wr = 5,
     .global = {3, 100, 180},
     .n_global = 3,
     .padding = true},
    {.len = 190, .L = 190, .wl = 40, .wr = 0, .global = {150}, .n_global = 1, .causal = true},
};

/* A case's random blocks, from the public generator: (blocks, *rk), -1 =
 * none; owned. */
static int *case_random(const pattern_case *pc, int *rk)
{
    const int b = pc->blocks.size, nb = b ? (pc->len + b - 1) / b : 0;
    *rk = b ? MIN2(pc->blocks.random, nb) : 0;
    int *rnd = xcalloc((size_t)nb * *rk + 1, sizeof *rnd);
    int *cand = xcalloc((size_t)nb + 1, sizeof *cand);
    for (int qb = 0; qb < nb; qb++) {
        const int k = mask_blocks_random(&pc->blocks, nb, qb, cand, rnd + (size_t)qb * *rk);
        for (int r = k; r < *rk; r++)
            rnd[(size_t)qb * *rk + r] = -1;
    }
    free(cand);
    return rnd;
}

/* Builds a batch of one sequence for a case (x random), its key padding in kp. */
static enc_batch case_batch(const pattern_case *pc, const float *x, const int *len, uint8_t *kp)
{
    enc_batch in = batch_plain(x, 1, pc->L, len);
    enc_mask *mk = &in.mask;
    mk->causal = pc->causal;
    mk->window_left = pc->wl < 0 ? ENC_WINDOW_NONE : pc->wl;
    mk->window_right = pc->wr < 0 ? ENC_WINDOW_NONE : pc->wr;
    mk->stride = pc->stride;
    mk->fixed_block = pc->fixed_l;
    mk->fixed_summary = pc->fixed_c;
    mk->blocks = pc->blocks;
    mk->global = pc->global;
    mk->n_global = (size_t)pc->n_global;
    if (pc->padding) {
        for (int j = 0; j < pc->L; j++)
            kp[j] = j % 5 == 4;
        mk->key_padding = kp;
    }
    return in;
}

START_TEST(test_csr_lists_allowed_pairs)
{
    const pattern_case *pc = &cases[_i];
    float *x = xcalloc((size_t)pc->L * 16, sizeof *x);
    uint8_t *kp = xcalloc((size_t)pc->L, 1);
    enc_batch in = case_batch(pc, x, &pc->len, kp);
    enc_error err = {0};
    enc_blockmask *bm = enc_blockmask_new(&in, true, &err);
    ck_assert_msg(bm != NULL, "%s", err.message);
    int rk;
    int *rnd = case_random(pc, &rk);
    const int32_t *indptr = enc_blockmask_indptr(bm, 0), *indices = enc_blockmask_indices(bm, 0);
    size_t nnz = 0;
    for (int i = 0; i < pc->len; i++) {
        EXPECT(indptr[i] == (int32_t)nnz, "case %d row %d: indptr %d, want %zu", _i, i, indptr[i],
               nnz);
        for (int j = 0; j < pc->len; j++)
            if (def_allowed(pc, rnd, rk, i, j)) {
                EXPECT(indices[nnz] == j, "case %d row %d: index %zu is %d, want %d", _i, i, nnz,
                       indices[nnz], j);
                nnz++;
            }
    }
    ck_assert_int_eq(indptr[pc->len], (int32_t)nnz);
    ck_assert_uint_eq(enc_blockmask_nnz(bm, 0), nnz);
    /* the tiles cover every allowed pair: scores >= allowed pairs */
    ck_assert_uint_ge(enc_blockmask_scores(bm, 0), nnz);
    enc_blockmask_free(bm);
    free(rnd);
    free(kp);
    free(x);
}
END_TEST

/* The tiled forward against the naive one, and dense weights against CSR. */
START_TEST(test_tiles_match_naive)
{
    const pattern_case *pc = &cases[_i];
    enc_model *m = small_model();
    const int D = 16, H = 4, L = pc->L, NL = 2;
    float *x = xcalloc((size_t)L * D, sizeof *x);
    uint64_t st = 17 + (uint64_t)_i;
    fill_random(x, (size_t)L * D, &st, 1.0f);
    uint8_t *kp = xcalloc((size_t)L, 1);
    enc_batch in = case_batch(pc, x, &pc->len, kp);
    enc_error err = {0};
    enc_blockmask *bm = enc_blockmask_new(&in, true, &err);
    ck_assert_ptr_nonnull(bm);
    const size_t nnz = enc_blockmask_nnz(bm, 0);
    const int32_t *indptr = enc_blockmask_indptr(bm, 0), *indices = enc_blockmask_indices(bm, 0);

    float *want = xcalloc((size_t)L * D, sizeof *want), *got = xcalloc((size_t)L * D, sizeof *got);
    float *wa[2] = {xcalloc((size_t)H * L * L, sizeof(float)),
                    xcalloc((size_t)H * L * L, sizeof(float))};
    float *da[2] = {xcalloc((size_t)H * L * L, sizeof(float)),
                    xcalloc((size_t)H * L * L, sizeof(float))};
    float *ca[2] = {xcalloc((size_t)H * nnz + 1, sizeof(float)),
                    xcalloc((size_t)H * nnz + 1, sizeof(float))};
    enc_result rn = {.out = want, .attn_mode = ENC_ATTN_HEADS, .attn = wa};
    ck_assert_int_eq(enc_forward_naive(m, &in, &rn, &err), 0);
    for (int simd = 0; simd < 2; simd++) {
        simd_set_enabled(simd);
        enc_workspace *ws = enc_workspace_new(m);
        enc_result rd = {.out = got, .attn_mode = ENC_ATTN_HEADS, .attn = da};
        ck_assert_int_eq(enc_forward(m, ws, &in, &rd, &err), 0);
        ck_assert_double_le(max_abs_diff(got, want, (size_t)L * D), 1e-4);
        for (int l = 0; l < NL; l++)
            ck_assert_double_le(max_abs_diff(da[l], wa[l], (size_t)H * L * L), 1e-5);
        enc_batch inc = in;
        inc.blockmask = bm;
        enc_result rc = {
            .out = got, .attn_mode = ENC_ATTN_HEADS, .attn_format = ENC_FORMAT_CSR, .attn = ca};
        ck_assert_int_eq(enc_forward(m, ws, &inc, &rc, &err), 0);
        ck_assert_double_le(max_abs_diff(got, want, (size_t)L * D), 1e-4);
        ck_assert_uint_eq(rc.scores, rd.scores);
        for (int l = 0; l < NL; l++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < pc->len; i++)
                    for (int32_t k = indptr[i]; k < indptr[i + 1]; k++) {
                        const float g = ca[l][(size_t)h * nnz + k];
                        const float w = wa[l][((size_t)h * L + i) * L + indices[k]];
                        EXPECT(fabsf(g - w) < 1e-5f,
                               "case %d layer %d head %d (%d, %d): %.9g, want %.9g", _i, l, h, i,
                               indices[k], (double)g, (double)w);
                    }
        /* without weights: the online softmax over the same tiles */
        enc_result r0 = {.out = got, .attn_mode = ENC_ATTN_NONE};
        ck_assert_int_eq(enc_forward(m, ws, &in, &r0, &err), 0);
        ck_assert_double_le(max_abs_diff(got, want, (size_t)L * D), 1e-4);
        enc_workspace_free(ws);
    }
    simd_set_enabled(true);
    for (int l = 0; l < NL; l++) {
        free(wa[l]);
        free(da[l]);
        free(ca[l]);
    }
    free(want);
    free(got);
    free(kp);
    free(x);
    enc_blockmask_free(bm);
    enc_model_free(m);
}
END_TEST

/* Every case against the same pairs given as an explicit boolean attn mask
 * built from the definitions here: with and without weights (without them
 * the strided diagonals run by residue class, the fixed summary keys and
 * global columns gathered), on both kernels. */
START_TEST(test_patterns_match_explicit_mask)
{
    const pattern_case *pc = &cases[_i];
    enc_model *m = small_model();
    const int D = 16, H = 4, L = pc->L, NL = 2;
    float *x = xcalloc((size_t)L * D, sizeof *x);
    uint64_t st = 99 + (uint64_t)_i;
    fill_random(x, (size_t)L * D, &st, 1.0f);
    uint8_t *kp = xcalloc((size_t)L, 1), *ab = xcalloc((size_t)L * L, 1);
    enc_batch in = case_batch(pc, x, &pc->len, kp);
    int rk;
    int *rnd = case_random(pc, &rk);
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++)
            ab[(size_t)i * L + j] = !(i < pc->len && j < pc->len && def_allowed(pc, rnd, rk, i, j));
    enc_batch ex = batch_plain(x, 1, L, &pc->len);
    ex.mask.attn_kind = ENC_MASK_BOOL;
    ex.mask.attn_bool = ab;

    float *want = xcalloc((size_t)L * D, sizeof *want), *got = xcalloc((size_t)L * D, sizeof *got);
    float *wa[2] = {xcalloc((size_t)H * L * L, sizeof(float)),
                    xcalloc((size_t)H * L * L, sizeof(float))};
    float *ga[2] = {xcalloc((size_t)H * L * L, sizeof(float)),
                    xcalloc((size_t)H * L * L, sizeof(float))};
    enc_error err = {0};
    for (int simd = 0; simd < 2; simd++) {
        simd_set_enabled(simd);
        enc_workspace *ws = enc_workspace_new(m);
        for (int weights = 0; weights < 2; weights++) {
            const enc_attn_mode mode = weights ? ENC_ATTN_HEADS : ENC_ATTN_NONE;
            enc_result rw = {.out = want, .attn_mode = mode, .attn = wa};
            enc_result rg = {.out = got, .attn_mode = mode, .attn = ga};
            ck_assert_int_eq(enc_forward(m, ws, &ex, &rw, &err), 0);
            ck_assert_int_eq(enc_forward(m, ws, &in, &rg, &err), 0);
            ck_assert_msg(max_abs_diff(got, want, (size_t)L * D) <= 1e-5,
                          "case %d simd %d weights %d: outputs differ by %g", _i, simd, weights,
                          max_abs_diff(got, want, (size_t)L * D));
            for (int l = 0; weights && l < NL; l++)
                ck_assert_double_le(max_abs_diff(ga[l], wa[l], (size_t)H * L * L), 1e-6);
        }
        enc_workspace_free(ws);
    }
    simd_set_enabled(true);
    for (int l = 0; l < NL; l++) {
        free(wa[l]);
        free(ga[l]);
    }
    free(want);
    free(got);
    free(rnd);
    free(ab);
    free(kp);
    free(x);
    enc_model_free(m);
}
END_TEST

/* Pattern sizes up to INT_MAX (what the API lets through) compile and
 * mean what they say: a window or a block that covers the sequence allows
 * every pair, so the forward equals the unmasked one. */
START_TEST(test_huge_pattern_sizes)
{
    enc_model *m = small_model();
    const int L = 70;
    float *x = xcalloc((size_t)L * 16, sizeof *x), *want = xcalloc((size_t)L * 16, sizeof *want);
    float *got = xcalloc((size_t)L * 16, sizeof *got);
    uint64_t st = 21;
    fill_random(x, (size_t)L * 16, &st, 1.0f);
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    enc_batch plain = batch_plain(x, 1, L, NULL);
    enc_result r = {.out = want, .attn_mode = ENC_ATTN_NONE};
    ck_assert_int_eq(enc_forward(m, ws, &plain, &r, &err), 0);
    for (int k = 0; k < 4; k++) {
        enc_batch in = batch_plain(x, 1, L, NULL);
        if (k == 0)
            in.mask.blocks = (enc_blocks_pattern){.size = INT_MAX, .random = INT_MAX};
        else if (k == 1)
            in.mask.window_left = in.mask.window_right = INT_MAX;
        else if (k == 2)
            in.mask.stride = INT_MAX;
        else
            in.mask.fixed_block = INT_MAX, in.mask.fixed_summary = INT_MAX - 1;
        enc_result rg = {.out = got, .attn_mode = ENC_ATTN_NONE};
        ck_assert_msg(enc_forward(m, ws, &in, &rg, &err) == 0, "%d: %s", k, err.message);
        ck_assert_double_le(max_abs_diff(got, want, (size_t)L * 16), 1e-5);
    }
    enc_workspace_free(ws);
    free(x);
    free(want);
    free(got);
    enc_model_free(m);
}
END_TEST

/* Random pattern options, lengths, causal and key padding on sequences of
 * up to 300 tokens: the fast forward (no weights, dense and CSR weights)
 * against the naive reference. */
START_TEST(test_random_patterns_match_naive)
{
    enc_model *m = small_model();
    uint64_t st = 1000 + (uint64_t)_i;
    const int B = rand_int(&st, 1, 3), L = rand_int(&st, 1, 300), D = 16, H = 4;
    float *x = xcalloc((size_t)B * L * D, sizeof *x);
    fill_random(x, (size_t)B * L * D, &st, 1.0f);
    int *lengths = xcalloc((size_t)B, sizeof *lengths), global[3];
    for (int b = 0; b < B; b++)
        lengths[b] = rand_int(&st, 1, L);
    uint8_t *kp = xcalloc((size_t)B * L, 1);
    enc_batch in = batch_plain(x, B, L, lengths);
    enc_mask *mk = &in.mask;
    mk->causal = rand_int(&st, 0, 3) == 0;
    if (rand_int(&st, 0, 1))
        mk->window_left = rand_int(&st, 0, 40), mk->window_right = rand_int(&st, -1, 40);
    if (rand_int(&st, 0, 2) == 0)
        mk->stride = rand_int(&st, 1, 50);
    if (rand_int(&st, 0, 2) == 0) {
        mk->fixed_block = rand_int(&st, 1, 70);
        mk->fixed_summary = rand_int(&st, 0, mk->fixed_block - 1);
    }
    if (rand_int(&st, 0, 2) == 0)
        mk->blocks =
            (enc_blocks_pattern){rand_int(&st, 1, 40), rand_int(&st, 0, 2), rand_int(&st, 0, 2),
                                 rand_int(&st, 0, 4), (uint64_t)rand_int(&st, 0, 1 << 20)};
    mk->n_global = (size_t)rand_int(&st, 0, 3);
    for (size_t k = 0; k < mk->n_global; k++)
        global[k] = rand_int(&st, 0, L - 1);
    mk->global = global;
    if (rand_int(&st, 0, 3) == 0) {
        for (int k = 0; k < B * L; k++)
            kp[k] = rand_int(&st, 0, 5) == 0;
        mk->key_padding = kp;
    }
    const size_t n_out = (size_t)B * L * D, n_attn = (size_t)B * H * L * L;
    float *want = xcalloc(n_out, sizeof *want), *got = xcalloc(n_out, sizeof *got);
    float *wa[2] = {xcalloc(n_attn, sizeof(float)), xcalloc(n_attn, sizeof(float))};
    float *ga[2] = {xcalloc(n_attn, sizeof(float)), xcalloc(n_attn, sizeof(float))};
    enc_error err = {0};
    enc_result rn = {.out = want, .attn_mode = ENC_ATTN_HEADS, .attn = wa};
    ck_assert_int_eq(enc_forward_naive(m, &in, &rn, &err), 0);
    enc_blockmask *bm = enc_blockmask_new(&in, true, &err);
    ck_assert_msg(bm != NULL, "%s", err.message);
    size_t nnz = 0;
    for (int b = 0; b < B; b++)
        nnz += enc_blockmask_nnz(bm, b);
    float *ca[2] = {xcalloc((size_t)H * nnz + 1, sizeof(float)),
                    xcalloc((size_t)H * nnz + 1, sizeof(float))};
    enc_workspace *ws = enc_workspace_new(m);
    for (int mode = 0; mode < 3; mode++) {
        enc_batch run = in;
        enc_result r = {.out = got,
                        .attn_mode = mode ? ENC_ATTN_HEADS : ENC_ATTN_NONE,
                        .attn = mode == 2 ? ca : ga};
        if (mode == 2) {
            run.blockmask = bm;
            r.attn_format = ENC_FORMAT_CSR;
        }
        ck_assert_msg(enc_forward(m, ws, &run, &r, &err) == 0, "%s", err.message);
        ck_assert_msg(max_abs_diff(got, want, n_out) <= 1e-4, "case %d mode %d: outputs off by %g",
                      _i, mode, max_abs_diff(got, want, n_out));
        /* a pattern never costs more than full attention */
        uint64_t dense = 0;
        for (int b = 0; b < B; b++)
            dense += (uint64_t)H * 2 * (uint64_t)lengths[b] * (uint64_t)lengths[b];
        ck_assert_uint_le(r.scores, dense);
        for (int l = 0; mode == 1 && l < 2; l++)
            ck_assert_double_le(max_abs_diff(ga[l], wa[l], n_attn), 1e-5);
        for (int l = 0; mode == 2 && l < 2; l++) {
            size_t off = 0;
            for (int b = 0; b < B; b++) {
                const int32_t *ip = enc_blockmask_indptr(bm, b), *ix = enc_blockmask_indices(bm, b);
                const size_t n = enc_blockmask_nnz(bm, b);
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < lengths[b]; i++)
                        for (int32_t k = ip[i]; k < ip[i + 1]; k++) {
                            const float g = ca[l][off + (size_t)h * n + (size_t)k];
                            const float w = wa[l][(((size_t)b * H + h) * L + i) * L + ix[k]];
                            EXPECT(fabsf(g - w) < 1e-5f,
                                   "layer %d sequence %d head %d (%d, %d): %.9g, want %.9g", l, b,
                                   h, i, ix[k], (double)g, (double)w);
                        }
                off += (size_t)H * n;
            }
        }
    }
    enc_workspace_free(ws);
    enc_blockmask_free(bm);
    for (int l = 0; l < 2; l++) {
        free(wa[l]);
        free(ga[l]);
        free(ca[l]);
    }
    free(want);
    free(got);
    free(kp);
    free(lengths);
    free(x);
    enc_model_free(m);
}
END_TEST

/* BigBird's random blocks: the same seed gives the same blocks, another
 * seed others; every query block past the global ones gets min(r,
 * candidates) distinct blocks, each outside its window and the global
 * blocks, in ascending order. */
START_TEST(test_random_blocks_draw)
{
    const int nb = 40;
    int cand[40], a[8], b[8];
    for (int r = 0; r <= 8; r += 4) {
        enc_blocks_pattern p = {.size = 16, .window = 2, .global = 2, .random = r, .seed = 7};
        int differ = 0;
        for (int qb = 0; qb < nb; qb++) {
            const int ka = mask_blocks_random(&p, nb, qb, cand, a);
            int candidates = 0;
            for (int kb = p.global; kb < nb; kb++)
                candidates += abs(qb - kb) > p.window;
            ck_assert_int_eq(ka, qb < p.global ? 0 : MIN2(r, candidates));
            for (int k = 0; k < ka; k++) {
                ck_assert_int_ge(a[k], p.global);
                ck_assert_int_gt(abs(qb - a[k]), p.window);
                ck_assert(k == 0 || a[k] > a[k - 1]); /* distinct, ascending */
            }
            const int again = mask_blocks_random(&p, nb, qb, cand, b);
            ck_assert_int_eq(again, ka);
            ck_assert_mem_eq(a, b, (size_t)ka * sizeof *a);
            p.seed = 8;
            ck_assert_int_eq(mask_blocks_random(&p, nb, qb, cand, b), ka);
            differ += ka > 0 && memcmp(a, b, (size_t)ka * sizeof *a) != 0;
            p.seed = 7;
        }
        if (r)
            ck_assert_int_gt(differ, nb / 2); /* another seed, other blocks */
    }
    /* fewer candidates than asked: all of them */
    enc_blocks_pattern p = {.size = 1, .window = 1, .global = 0, .random = 5, .seed = 1};
    ck_assert_int_eq(mask_blocks_random(&p, 4, 0, cand, a), 2); /* blocks 2 and 3 */
    ck_assert_int_eq(a[0], 2);
    ck_assert_int_eq(a[1], 3);
}
END_TEST

START_TEST(test_bad_patterns_refused)
{
    float x[16 * 4] = {0};
    enc_batch in = batch_plain(x, 1, 4, NULL);
    enc_error err = {0};
    in.mask.fixed_block = 8;
    in.mask.fixed_summary = 9;
    ck_assert_ptr_null(enc_blockmask_new(&in, false, &err));
    ck_assert_str_eq(err.message,
                     "mask.fixed.summary = 9 must be in 0..7 (below mask.fixed.block = 8)");
    in.mask.fixed_block = 0;
    in.mask.stride = -2;
    enc_error_clear(&err);
    ck_assert_ptr_null(enc_blockmask_new(&in, false, &err));
    ck_assert_str_eq(err.message, "mask.strided.stride = -2 must be at least 1");
    in.mask.stride = 0;
    in.mask.blocks = (enc_blocks_pattern){.size = 1, .random = -1};
    enc_error_clear(&err);
    ck_assert_ptr_null(enc_blockmask_new(&in, false, &err));
    ck_assert_str_eq(err.message, "mask.blocks.random = -1 must not be negative");
}
END_TEST

Suite *blockmask_suite(void)
{
    Suite *s = timed_suite("blockmask");
    TCase *tc = timed_case(s, "blockmask", 120);
    tcase_add_test(tc, test_scores_no_mask);
    tcase_add_test(tc, test_scores_window_causal_blocks);
    tcase_add_test(tc, test_scores_batch_pays_no_padding);
    tcase_add_loop_test(tc, test_csr_lists_allowed_pairs, 0, (int)(sizeof cases / sizeof *cases));
    tcase_add_loop_test(tc, test_tiles_match_naive, 0, (int)(sizeof cases / sizeof *cases));
    tcase_add_loop_test(tc, test_patterns_match_explicit_mask, 0,
                        (int)(sizeof cases / sizeof *cases));
    tcase_add_loop_test(tc, test_random_patterns_match_naive, 0, 40);
    tcase_add_test(tc, test_random_blocks_draw);
    tcase_add_test(tc, test_huge_pattern_sizes);
    tcase_add_test(tc, test_bad_patterns_refused);
    return s;
}
