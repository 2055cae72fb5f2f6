/* check_naive.c - the fast forward against the naive reference on random
 * shapes and masks; batching, workspace reuse, threads and numeric edges. */
#include "kernels/mask.h"
#include "model/model.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_OUT  1e-4
#define TOL_ATTN 1e-5

/* Model shapes the random tests draw from: odd sizes, GQA, MQA, stacks. */
static const enc_hparams shapes[] = {
    {HP_BASE(12, 3, 3, 20, 1, ENC_ACT_RELU, false, 1e-5f, true)},
    {HP_BASE(10, 5, 1, 7, 1, ENC_ACT_GELU, true, 1e-5f, true)},
    {HP_BASE(8, 4, 2, 16, 2, ENC_ACT_GELU_TANH, true, 1e-6f, true)},
    {HP_BASE(16, 4, 4, 32, 3, ENC_ACT_GELU, false, 1e-3f, false)},
    {HP_BASE(6, 2, 2, 5, 2, ENC_ACT_RELU, false, 1e-5f, true)},
    {HP_BASE(1, 1, 1, 1, 1, ENC_ACT_RELU, false, 1e-5f, true)},
    /* positions inside attention: RoPE both styles, partial, GQA; ALiBi with
     * 6 heads (not a power of two) and with 8 */
    {HP_BASE(16, 4, 2, 24, 2, ENC_ACT_GELU, false, 1e-5f, true), .position = ENC_POS_ROPE,
     .rope_theta = 10000.0},
    {HP_BASE(12, 2, 2, 20, 1, ENC_ACT_RELU, true, 1e-5f, true), .position = ENC_POS_ROPE,
     .rope_theta = 500.0, .rope_dim = 4, .rope_style = ENC_ROPE_GPTJ},
    {HP_BASE(12, 6, 3, 16, 2, ENC_ACT_GELU_TANH, false, 1e-5f, true), .position = ENC_POS_ALIBI},
    {HP_BASE(16, 8, 8, 16, 1, ENC_ACT_RELU, true, 1e-5f, true), .position = ENC_POS_ALIBI},
    /* MPNet's relative position bias: its 32 buckets; a larger table (its
     * extra rows unused) with GQA */
    {HP_BASE(12, 3, 3, 20, 2, ENC_ACT_GELU, false, 1e-5f, true), .rel_buckets = ENC_REL_BUCKETS},
    {HP_BASE(8, 2, 1, 12, 1, ENC_ACT_RELU, true, 1e-5f, true), .rel_buckets = 40},
    /* DeBERTa's relative attention: log buckets past 2 (the batches' distances
     * reach 8, past max_position's 6: the table's ends), with its norm; the
     * plain clamped distance, c2p alone */
    {HP_BASE(16, 4, 4, 24, 2, ENC_ACT_GELU, false, 1e-7f, true),
     .dis = {.span = 4, .buckets = 4, .max_position = 6, .c2p = true, .p2c = true, .norm = true}},
    {HP_BASE(12, 3, 3, 20, 1, ENC_ACT_GELU, false, 1e-7f, true), .dis = {.span = 3, .c2p = true}},
    /* gated feed-forwards: GeGLU (both GELUs), SwiGLU without biases, with RoPE */
    {HP_BASE(12, 3, 3, 20, 2, ENC_ACT_GELU, false, 1e-5f, true), .ffn = ENC_FFN_GEGLU},
    {HP_BASE(16, 4, 2, 24, 1, ENC_ACT_GELU_TANH, true, 1e-5f, true), .position = ENC_POS_ROPE,
     .rope_theta = 10000.0, .ffn = ENC_FFN_GEGLU},
    {HP_BASE(8, 2, 1, 12, 2, ENC_ACT_RELU, true, 1e-5f, false), .ffn = ENC_FFN_SWIGLU},
    /* gated feed-forwards of a whole number of panels: the gating in the GEMM */
    {HP_BASE(16, 4, 4, 64, 2, ENC_ACT_GELU, true, 1e-5f, true), .ffn = ENC_FFN_GEGLU},
    {HP_BASE(12, 3, 3, 32, 1, ENC_ACT_RELU, false, 1e-5f, false), .ffn = ENC_FFN_SWIGLU},
    /* RoPE on heads of 64 dims: the rotation inside the in-projection's GEMM
     * (GQA, two bases, with positions given in some variants) */
    {HP_BASE(128, 2, 2, 64, 2, ENC_ACT_GELU, true, 1e-5f, true), .position = ENC_POS_ROPE,
     .rope_theta = 10000.0},
    {HP_BASE(128, 2, 1, 48, 3, ENC_ACT_GELU, true, 1e-5f, false), .position = ENC_POS_ROPE,
     .rope_theta = 160000.0, .rope_theta_local = 10000.0, .global_every = 2, .local_window = 2,
     .ffn = ENC_FFN_GEGLU},
    /* norms: without a bias, a final one, layer 0's attention norm the identity */
    {HP_BASE(12, 3, 3, 20, 2, ENC_ACT_GELU, true, 1e-5f, true), .norm = ENC_NORM_LAYERNORM_NOBIAS,
     .final_norm = true},
    {HP_BASE(10, 2, 2, 16, 2, ENC_ACT_RELU, false, 1e-5f, true), .final_norm = true},
    {HP_BASE(8, 2, 2, 16, 3, ENC_ACT_RELU, true, 1e-5f, true), .first_norm_identity = true,
     .final_norm = true},
    /* per-layer attention: local windows of 1 and 0 (ALiBi, GQA); ModernBERT's
     * block (every option, RoPE bases per layer kind) */
    {HP_BASE(12, 3, 3, 20, 3, ENC_ACT_GELU, false, 1e-5f, true), .global_every = 2,
     .local_window = 1},
    {HP_BASE(8, 4, 2, 12, 2, ENC_ACT_RELU, true, 1e-5f, true), .position = ENC_POS_ALIBI,
     .global_every = 2, .local_window = 0},
    {HP_BASE(16, 4, 4, 24, 4, ENC_ACT_GELU, true, 1e-5f, false), .norm = ENC_NORM_LAYERNORM_NOBIAS,
     .final_norm = true, .first_norm_identity = true, .position = ENC_POS_ROPE,
     .rope_theta = 160000.0, .rope_theta_local = 10.0, .ffn = ENC_FFN_GEGLU, .global_every = 3,
     .local_window = 2},
    /* heads wider than D / H (H E = 18 over D 12); Qwen3's block: RMSNorm,
     * q and k normed per head, causal, GQA, heads of 8 over D 16, SwiGLU, no
     * bias; the same with whole panels (D 64, heads of 32, H E 128) */
    {HP_BASE(12, 3, 3, 20, 1, ENC_ACT_GELU, false, 1e-5f, true), .head_dim = 6},
    {HP_BASE(16, 4, 2, 24, 2, ENC_ACT_GELU, true, 1e-6f, false), .head_dim = 8,
     .norm = ENC_NORM_RMS, .final_norm = true, .qk_norm = true, .causal = true,
     .position = ENC_POS_ROPE, .rope_theta = 1000000.0, .ffn = ENC_FFN_SWIGLU},
    {HP_BASE(64, 4, 2, 96, 2, ENC_ACT_GELU, true, 1e-6f, false), .head_dim = 32,
     .norm = ENC_NORM_RMS, .final_norm = true, .qk_norm = true, .causal = true,
     .position = ENC_POS_ROPE, .rope_theta = 1000000.0, .ffn = ENC_FFN_SWIGLU},
    /* Gemma 3's block: each sublayer's output normed before the add, local
     * layers but every third from layer 2 (global_offset), q and k normed,
     * MQA, heads of 8 (H E 32 over D 16), tanh GeGLU; the same with whole
     * panels, layer 0 global and layer 1 local */
    {HP_BASE(16, 4, 1, 24, 4, ENC_ACT_GELU_TANH, true, 1e-6f, false), .head_dim = 8,
     .norm = ENC_NORM_RMS, .final_norm = true, .qk_norm = true, .sublayer_norm = true,
     .position = ENC_POS_ROPE, .rope_theta = 1000000.0, .rope_theta_local = 10000.0,
     .ffn = ENC_FFN_GEGLU, .global_every = 3, .global_offset = 2, .local_window = 2},
    {HP_BASE(64, 2, 1, 64, 2, ENC_ACT_GELU_TANH, true, 1e-6f, false), .head_dim = 64,
     .norm = ENC_NORM_RMS, .final_norm = true, .qk_norm = true, .sublayer_norm = true,
     .position = ENC_POS_ROPE, .rope_theta = 1000000.0, .rope_theta_local = 10000.0,
     .ffn = ENC_FFN_GEGLU, .global_every = 2, .global_offset = 0, .local_window = 3},
    /* JinaBERT qk-post-norm's block: q and k LayerNormed whole (with biases),
     * attention's output normed with the residual, then added to it again;
     * ALiBi, GeGLU; the same over whole panels */
    {HP_BASE(12, 3, 3, 20, 2, ENC_ACT_GELU, false, 1e-12f, true), .qk_norm = true,
     .qk_norm_whole = true, .double_residual = true, .position = ENC_POS_ALIBI,
     .ffn = ENC_FFN_GEGLU},
    {HP_BASE(64, 2, 2, 64, 2, ENC_ACT_GELU, false, 1e-12f, true), .qk_norm = true,
     .qk_norm_whole = true, .double_residual = true, .position = ENC_POS_ALIBI,
     .ffn = ENC_FFN_GEGLU},
    /* Mistral's block: Qwen3's without bias or q/k norms, causal, every layer
     * local (global_every past the last layer) within its sliding window; the
     * same over whole panels */
    {HP_BASE(16, 4, 2, 24, 2, ENC_ACT_GELU, true, 1e-5f, false), .norm = ENC_NORM_RMS,
     .final_norm = true, .causal = true, .position = ENC_POS_ROPE, .rope_theta = 10000.0,
     .ffn = ENC_FFN_SWIGLU, .global_every = 3, .global_offset = 2, .local_window = 2},
    {HP_BASE(64, 2, 1, 64, 3, ENC_ACT_GELU, true, 1e-5f, false), .norm = ENC_NORM_RMS,
     .final_norm = true, .causal = true, .position = ENC_POS_ROPE, .rope_theta = 10000.0,
     .ffn = ENC_FFN_SWIGLU, .global_every = 4, .global_offset = 3, .local_window = 5},
};
#define N_SHAPES (int)(sizeof shapes / sizeof *shapes)

/* A random model: seeded init, then every parameter perturbed so zero biases
 * and unit norms do not hide mistakes. */
static enc_model *random_model(const enc_hparams *hp, uint64_t seed)
{
    enc_model *m = enc_model_random(hp, seed, NULL);
    ck_assert_ptr_nonnull(m);
    uint64_t st = seed * 7 + 1;
    float *noise = xcalloc(m->n_owned, sizeof *noise); /* a seeded model owns them all */
    fill_random(noise, m->n_owned, &st, 0.1f);
    for (size_t i = 0; i < m->n_owned; i++)
        m->params[i] += noise[i];
    free(noise);
    model_pack(m); /* the Linears' packed copies follow the new weights */
    return m;
}

/* A batch with random shape, lengths and mask; owns its arrays. */
typedef struct rand_batch {
    enc_batch in;
    float *x;
    int *lengths;
    int *global;
    uint8_t *key_padding, *attn_bool;
    float *attn_add;
    int32_t *positions;
} rand_batch;

static void rand_batch_make(rand_batch *rb, const enc_model *m, uint64_t *st, int variant)
{
    memset(rb, 0, sizeof *rb);
    const int D = m->hp.d_model, B = rand_int(st, 1, 3), L = rand_int(st, 1, 9);
    rb->x = xcalloc((size_t)B * L * D, sizeof *rb->x);
    fill_random(rb->x, (size_t)B * L * D, st, 1.0f);
    rb->in = batch_plain(rb->x, B, L, NULL);
    enc_mask *mk = &rb->in.mask;
    if (variant & 1) {
        rb->lengths = xcalloc((size_t)B, sizeof *rb->lengths);
        for (int b = 0; b < B; b++)
            rb->lengths[b] = rand_int(st, 1, L);
        rb->in.lengths = rb->lengths;
    }
    mk->causal = (variant & 2) || m->hp.causal; /* a decoder's always */
    if (variant & 4) {
        mk->window_left = rand_int(st, -1, 3);
        mk->window_right = rand_int(st, -1, 3);
        rb->global = xcalloc(2, sizeof *rb->global);
        mk->n_global = (size_t)rand_int(st, 0, 2);
        for (size_t k = 0; k < mk->n_global; k++)
            rb->global[k] = rand_int(st, 0, L - 1);
        mk->global = rb->global;
    }
    if (variant & 8) {
        rb->key_padding = xcalloc((size_t)B * L, 1);
        for (int k = 0; k < B * L; k++)
            rb->key_padding[k] = rand_int(st, 0, 3) == 0;
        mk->key_padding = rb->key_padding;
    }
    if (variant % 7 == 3) { /* given positions: any, repeated, out of order */
        rb->positions = xcalloc((size_t)B * L, sizeof *rb->positions);
        for (int k = 0; k < B * L; k++)
            rb->positions[k] = rand_int(st, 0, 40);
        rb->in.positions = rb->positions;
    }
    mk->attn_per_sequence = variant & 32;
    size_t n = (size_t)(mk->attn_per_sequence ? B : 1) * L * L;
    if (variant & 16) {
        mk->attn_kind = ENC_MASK_BOOL;
        rb->attn_bool = xcalloc(n, 1);
        for (size_t k = 0; k < n; k++)
            rb->attn_bool[k] = rand_int(st, 0, 4) == 0;
        for (int j = 0; j < L; j++) /* a fully masked query row */
            rb->attn_bool[(size_t)(L - 1) * L + j] = 1;
        mk->attn_bool = rb->attn_bool;
    } else if (variant & 64) {
        mk->attn_kind = ENC_MASK_ADD;
        rb->attn_add = xcalloc(n, sizeof *rb->attn_add);
        fill_random(rb->attn_add, n, st, 1.0f);
        rb->attn_add[0] = -INFINITY;
        mk->attn_add = rb->attn_add;
    }
}

static void rand_batch_free(rand_batch *rb)
{
    free(rb->x);
    free(rb->lengths);
    free(rb->global);
    free(rb->key_padding);
    free(rb->attn_bool);
    free(rb->attn_add);
    free(rb->positions);
}

/* Runs fast and naive on one batch in one attention mode and compares. */
static void compare_fast_naive(const enc_model *m, enc_workspace *ws, const enc_batch *in,
                               enc_attn_mode mode, const char *label)
{
    const enc_hparams *hp = &m->hp;
    const size_t n_out = (size_t)in->B * in->L * hp->d_model;
    const size_t n_attn = (size_t)in->B * enc_attn_heads(mode, hp->n_heads) * in->L * in->L;
    float *out_f = xcalloc(n_out, sizeof(float)), *out_n = xcalloc(n_out, sizeof(float));
    for (size_t k = 0; k < n_out; k++)
        out_f[k] = 99.0f; /* every entry must be written, padding rows too */
    float *attn_f[ENC_MAX_LAYERS] = {0}, *attn_n[ENC_MAX_LAYERS] = {0};
    for (int l = 0; l < hp->n_layers; l++) {
        attn_f[l] = xcalloc(n_attn, sizeof(float));
        attn_n[l] = xcalloc(n_attn, sizeof(float));
        for (size_t k = 0; k < n_attn; k++)
            attn_f[l][k] = 99.0f; /* every entry must be written */
    }
    enc_result rf = {.out = out_f, .attn_mode = mode, .attn = attn_f};
    enc_result rn = {.out = out_n, .attn_mode = mode, .attn = attn_n};
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, in, &rf, &err) == 0, "%s: %s", label, err.message);
    ck_assert_msg(enc_forward_naive(m, in, &rn, &err) == 0, "%s: %s", label, err.message);
    double d = max_abs_diff(out_f, out_n, n_out);
    ck_assert_msg(d < TOL_OUT, "%s: outputs differ by %g", label, d);
    for (int l = 0; l < hp->n_layers && mode != ENC_ATTN_NONE; l++) {
        d = max_abs_diff(attn_f[l], attn_n[l], n_attn);
        ck_assert_msg(d < TOL_ATTN, "%s: layer %d attention differs by %g", label, l, d);
    }
    for (int l = 0; l < hp->n_layers; l++) {
        free(attn_f[l]);
        free(attn_n[l]);
    }
    free(out_f);
    free(out_n);
}

START_TEST(test_fast_matches_naive_random)
{
    const enc_hparams *hp = &shapes[_i];
    enc_model *m = random_model(hp, 1000 + (uint64_t)_i);
    enc_workspace *ws = enc_workspace_new(m); /* reused across shapes on purpose */
    uint64_t st = 42 + (uint64_t)_i;
    for (int variant = 0; variant < 128; variant++) {
        rand_batch rb;
        rand_batch_make(&rb, m, &st, variant);
        char label[96];
        snprintf(label, sizeof label, "shape %d variant %d B %d L %d", _i, variant, rb.in.B,
                 rb.in.L);
        compare_fast_naive(m, ws, &rb.in, (enc_attn_mode)(variant % 3), label);
        rand_batch_free(&rb);
    }
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

/* Long sequences: attention cut into several tiles of query rows, spread over
 * teams of 1, 2 and 3 threads, every mask kind, against the naive reference. */
START_TEST(test_tiled_attention_threads)
{
    const int threads = 1 + _i % 3;
    enc_set_threads(threads);
    /* RoPE (neox, partial) and ALiBi (4 heads) through the same tiles; from
     * 12 on, MPNet's relative position bias (distances past its 128); from
     * 16 on, DeBERTa's (256 buckets as deberta-v3's, distances past 128) */
    const enc_position pos = _i >= 16 ? ENC_POS_NONE : (enc_position)(_i / 4 % 3);
    /* odd _i: layer 1 local, its window inside a tile or across several;
     * with RoPE, its own base */
    enc_hparams hp = {
        HP_BASE(24, 4, _i >= 16 ? 4 : 2, 40, 2, ENC_ACT_GELU, _i % 2 == 0, 1e-5f, true),
        .position = pos,
        .rope_theta = 10000.0,
        .rope_dim = 4,
        .ffn = _i % 3 == 1 ? ENC_FFN_GEGLU : ENC_FFN_MLP,
        .global_every = _i % 2 ? 2 : 1,
        .local_window = _i % 2 ? _i * 7 : 0,
        .rope_theta_local = pos == ENC_POS_ROPE && _i % 2 ? 100.0 : 0.0,
        .rel_buckets = _i >= 12 && _i < 16 ? ENC_REL_BUCKETS : 0};
    hp.dis = _i >= 16 ? (enc_disentangled){.span = 256,
                                           .buckets = 256,
                                           .max_position = 512,
                                           .c2p = true,
                                           .p2c = _i % 2 == 0,
                                           .norm = true}
                      : (enc_disentangled){0};
    if (_i >= 20) /* Qwen3's block: causal, heads of 16 (H E 64 over D 24), q and k normed */
        hp = (enc_hparams){HP_BASE(24, 4, 2, 40, 2, ENC_ACT_GELU, true, 1e-6f, false),
                           .head_dim = 16,
                           .norm = ENC_NORM_RMS,
                           .final_norm = true,
                           .qk_norm = true,
                           .causal = true,
                           .position = ENC_POS_ROPE,
                           .rope_theta = 1000000.0,
                           .ffn = ENC_FFN_SWIGLU};
    if (_i >= 24) /* Gemma 3's block: sublayer norms; layers 0 and 2 local (offset 1) */
        hp = (enc_hparams){HP_BASE(24, 4, 1, 40, 3, ENC_ACT_GELU_TANH, true, 1e-6f, false),
                           .head_dim = 16,
                           .norm = ENC_NORM_RMS,
                           .final_norm = true,
                           .qk_norm = true,
                           .sublayer_norm = true,
                           .position = ENC_POS_ROPE,
                           .rope_theta = 1000000.0,
                           .rope_theta_local = 10000.0,
                           .ffn = ENC_FFN_GEGLU,
                           .global_every = 2,
                           .global_offset = 1,
                           .local_window = 5 + _i * 9};
    enc_model *m = random_model(&hp, 500 + (uint64_t)_i);
    enc_workspace *ws = enc_workspace_new(m);
    const int lens[] = {17, 65, 130, 200};
    const int L = lens[_i % 4], B = 2, D = hp.d_model;
    uint64_t st = 77 + (uint64_t)_i;
    float *x = xcalloc((size_t)B * L * D, sizeof *x);
    fill_random(x, (size_t)B * L * D, &st, 1.0f);
    int lengths[2] = {L, L / 2 + 1};
    uint8_t *kp = xcalloc((size_t)B * L, 1);
    for (int k = 0; k < B * L; k++)
        kp[k] = rand_int(&st, 0, 9) == 0;
    float *add = xcalloc((size_t)B * L * L, sizeof *add);
    fill_random(add, (size_t)B * L * L, &st, 0.5f);
    int global[2] = {0, L / 3};
    int32_t *given = xcalloc((size_t)B * L, sizeof *given); /* two documents each */
    for (int k = 0; k < B * L; k++)
        given[k] = k % L < L / 2 ? k % L : k % L - L / 2;
    for (int variant = 0; variant < 5; variant++) {
        enc_batch in = batch_plain(x, B, L, variant & 1 ? lengths : NULL);
        if (variant == 4) { /* strided: residue classes; given positions */
            in.mask.stride = 11;
            in.positions = given;
        }
        in.mask.causal = variant == 1 || hp.causal;
        if (variant == 2) {
            in.mask.window_left = 5;
            in.mask.window_right = 9;
            in.mask.global = global;
            in.mask.n_global = 2;
            in.mask.key_padding = kp;
        }
        if (variant == 3) {
            in.mask.attn_kind = ENC_MASK_ADD;
            in.mask.attn_add = add;
            in.mask.attn_per_sequence = true;
        }
        char label[64];
        snprintf(label, sizeof label, "threads %d L %d variant %d", threads, L, variant);
        compare_fast_naive(m, ws, &in, (enc_attn_mode)(variant % 3), label);
        compare_fast_naive(m, ws, &in, ENC_ATTN_MEAN, label);
    }
    free(x);
    free(kp);
    free(add);
    free(given);
    enc_workspace_free(ws);
    enc_model_free(m);
    enc_set_threads(2);
}
END_TEST

/* Several batches run as one (dynamic batching): each gets what it gets
 * alone, and a bad or overflowing batch fails without touching the others. */
START_TEST(test_forward_many)
{
    const enc_hparams *hp = &shapes[_i % N_SHAPES];
    enc_model *m = random_model(hp, 900 + (uint64_t)_i);
    enc_workspace *ws = enc_workspace_new(m);
    uint64_t st = 31 + (uint64_t)_i;
    enum { N = 6 };
    rand_batch rb[N];
    enc_job jobs[N];
    enc_result res[N];
    float *outs[N], *attn[N][ENC_MAX_LAYERS];
    const size_t H = (size_t)hp->n_heads, D = (size_t)hp->d_model;
    for (int j = 0; j < N; j++) {
        rand_batch_make(&rb[j], m, &st, (j * 37 + _i * 11) % 128);
        const size_t B = (size_t)rb[j].in.B, L = (size_t)rb[j].in.L;
        outs[j] = xcalloc(B * L * D, sizeof(float));
        for (int l = 0; l < hp->n_layers; l++)
            attn[j][l] = xcalloc(B * H * L * L, sizeof(float));
        res[j] = (enc_result){.out = outs[j], .attn_mode = (enc_attn_mode)(j % 3), .attn = attn[j]};
        jobs[j] = (enc_job){.in = &rb[j].in, .res = &res[j]};
    }
    /* Job 2 is invalid (a length past L); job 4's inputs sit at the edge of
     * float32 (it may overflow, and then fails alone). */
    int bad_len[3] = {0, 0, 0};
    bad_len[0] = rb[2].in.L + 1;
    bad_len[1] = bad_len[2] = 1;
    rb[2].in.lengths = bad_len;
    float *huge = xcalloc((size_t)rb[4].in.B * rb[4].in.L * D, sizeof(float));
    for (size_t k = 0; k < (size_t)rb[4].in.B * rb[4].in.L * D; k++)
        huge[k] = 3e38f;
    rb[4].in.x = huge;
    rb[4].in.lengths = NULL;
    const int failed = enc_forward_many(m, ws, jobs, N);
    ck_assert_int_eq(jobs[2].rc, ENC_EINVAL);
    ck_assert_ptr_nonnull(strstr(jobs[2].err.message, "lengths[0]"));
    ck_assert(jobs[4].rc == 0 || jobs[4].rc == ENC_ENUMERIC);
    ck_assert_int_eq(failed, 1 + (jobs[4].rc != 0));
    for (size_t k = 0; jobs[4].rc == 0 && k < (size_t)rb[4].in.B * rb[4].in.L * D; k++)
        ck_assert(isfinite(outs[4][k]));
    for (int j = 0; j < N; j++) {
        if (j == 2 || j == 4)
            continue;
        ck_assert_int_eq(jobs[j].rc, 0);
        /* alone, through the naive reference */
        const size_t B = (size_t)rb[j].in.B, L = (size_t)rb[j].in.L;
        float *out1 = xcalloc(B * L * D, sizeof(float)), *attn1[ENC_MAX_LAYERS];
        for (int l = 0; l < hp->n_layers; l++)
            attn1[l] = xcalloc(B * H * L * L, sizeof(float));
        enc_result r1 = {.out = out1, .attn_mode = res[j].attn_mode, .attn = attn1};
        ck_assert_int_eq(enc_forward_naive(m, &rb[j].in, &r1, NULL), 0);
        double d = max_abs_diff(out1, outs[j], B * L * D);
        ck_assert_msg(d < TOL_OUT, "job %d outputs differ from alone by %g", j, d);
        const size_t n_attn = B * enc_attn_heads(res[j].attn_mode, H) * L * L;
        for (int l = 0; l < hp->n_layers && res[j].attn_mode != ENC_ATTN_NONE; l++) {
            d = max_abs_diff(attn1[l], attn[j][l], n_attn);
            ck_assert_msg(d < TOL_ATTN, "job %d layer %d attention differs by %g", j, l, d);
        }
        for (int l = 0; l < hp->n_layers; l++)
            free(attn1[l]);
        free(out1);
    }
    for (int j = 0; j < N; j++) {
        if (j == 2)
            rb[j].in.lengths = rb[j].lengths;
        rand_batch_free(&rb[j]);
        free(outs[j]);
        for (int l = 0; l < hp->n_layers; l++)
            free(attn[j][l]);
    }
    free(huge);
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

START_TEST(test_fully_masked_row_is_zero)
{
    enc_model *m = random_model(&shapes[0], 7);
    const int L = 4, D = m->hp.d_model, H = m->hp.n_heads;
    float x[4 * 12], out[4 * 12], attn[3 * 4 * 4];
    uint64_t st = 3;
    fill_random(x, sizeof x / sizeof *x, &st, 1.0f);
    uint8_t ab[16] = {0};
    for (int j = 0; j < L; j++)
        ab[2 * L + j] = 1; /* query 2 may see nothing */
    enc_batch in = batch_plain(x, 1, L, NULL);
    in.mask.attn_kind = ENC_MASK_BOOL;
    in.mask.attn_bool = ab;
    float *layers[1] = {attn};
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = layers};
    enc_workspace *ws = enc_workspace_new(m);
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, NULL), 0);
    for (int h = 0; h < H; h++)
        for (int j = 0; j < L; j++)
            ck_assert(attn[(h * L + 2) * L + j] == 0.0f);
    for (int k = 0; k < L * D; k++)
        ck_assert(isfinite(out[k]));
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

/* A sequence in a padded batch gives what it gives alone: the same operations
 * on the same values.  Bit for bit where the BLAS kernel's result for a row
 * does not depend on the row's position in the GEMM (OpenBLAS's AVX-512 and
 * Sandy Bridge kernels); its Haswell and Zen kernels round differently by
 * position, so the bound is float32 rounding, far below any masking or
 * padding mistake (those show at 1e-2 and up). */
#define TOL_ALONE 1e-6
START_TEST(test_padded_equals_alone)
{
    const enc_hparams *hp = &shapes[_i];
    enc_model *m = random_model(hp, 77);
    const int B = 3, L = 7, D = hp->d_model, H = hp->n_heads, NL = hp->n_layers;
    /* that rounding grows with the sums' length and the layers it goes
     * through: 4e-6 and 9e-6 at D = 128 with 2 and 3 layers (valgrind) */
    const double tol = TOL_ALONE * sqrt((double)D) * NL;
    int lengths[3] = {7, 2, 5};
    float *x = xcalloc((size_t)B * L * D, sizeof *x), *out = xcalloc((size_t)B * L * D, 4);
    uint64_t st = 5;
    fill_random(x, (size_t)B * L * D, &st, 1.0f);
    float *attn[ENC_MAX_LAYERS];
    for (int l = 0; l < NL; l++)
        attn[l] = xcalloc((size_t)B * H * L * L, sizeof(float));
    enc_batch in = batch_plain(x, B, L, lengths);
    in.mask.causal = true;
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = attn};
    enc_workspace *ws = enc_workspace_new(m);
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, NULL), 0);

    for (int b = 0; b < B; b++) {
        const int len = lengths[b];
        float *out1 = xcalloc((size_t)len * D, sizeof(float)), *attn1[ENC_MAX_LAYERS];
        for (int l = 0; l < NL; l++)
            attn1[l] = xcalloc((size_t)H * len * len, sizeof(float));
        enc_batch one = batch_plain(x + (size_t)b * L * D, 1, len, NULL);
        one.mask.causal = true;
        enc_result r1 = {.out = out1, .attn_mode = ENC_ATTN_HEADS, .attn = attn1};
        enc_workspace *ws1 = enc_workspace_new(m);
        ck_assert_int_eq(enc_forward(m, ws1, &one, &r1, NULL), 0);
        double d = max_abs_diff(out1, out + (size_t)b * L * D, (size_t)len * D);
        ck_assert_msg(d <= tol, "sequence %d differs from itself alone by %g", b, d);
        for (int k = len * D; k < L * D; k++)
            EXPECT(out[(size_t)b * L * D + k] == 0.0f, "sequence %d: padding value %d is %g", b, k,
                   (double)out[(size_t)b * L * D + k]);
        for (int l = 0; l < NL; l++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < L; i++)
                    for (int j = 0; j < L; j++) {
                        float got = attn[l][(((size_t)b * H + h) * L + i) * L + j];
                        float want =
                            (i < len && j < len) ? attn1[l][((size_t)h * len + i) * len + j] : 0.0f;
                        EXPECT(fabsf(got - want) <= tol, "b %d l %d h %d [%d][%d]: %g vs %g", b, l,
                               h, i, j, (double)got, (double)want);
                    }
        enc_workspace_free(ws1);
        for (int l = 0; l < NL; l++)
            free(attn1[l]);
        free(out1);
    }
    enc_workspace_free(ws);
    for (int l = 0; l < NL; l++)
        free(attn[l]);
    free(x);
    free(out);
    enc_model_free(m);
}
END_TEST

/* A workspace grown for a large batch and reused for a small one (and back)
 * gives the same bits as a fresh one. */
START_TEST(test_workspace_reuse)
{
    enc_model *m = random_model(&shapes[2], 11);
    const int D = m->hp.d_model;
    enc_workspace *shared = enc_workspace_new(m);
    int sizes[][2] = {{3, 9}, {1, 2}, {2, 5}, {3, 9}};
    for (int k = 0; k < 4; k++) {
        int B = sizes[k][0], L = sizes[k][1];
        float *x = xcalloc((size_t)B * L * D, 4), *o1 = xcalloc((size_t)B * L * D, 4);
        float *o2 = xcalloc((size_t)B * L * D, 4);
        uint64_t st = (uint64_t)k + 100;
        fill_random(x, (size_t)B * L * D, &st, 1.0f);
        enc_batch in = batch_plain(x, B, L, NULL);
        enc_result r1 = {.out = o1}, r2 = {.out = o2};
        enc_workspace *fresh = enc_workspace_new(m);
        ck_assert_int_eq(enc_forward(m, shared, &in, &r1, NULL), 0);
        ck_assert_int_eq(enc_forward(m, fresh, &in, &r2, NULL), 0);
        ck_assert(memcmp(o1, o2, (size_t)B * L * D * sizeof(float)) == 0);
        enc_workspace_free(fresh);
        free(x);
        free(o1);
        free(o2);
    }
    ck_assert_uint_gt(enc_workspace_bytes(shared), 0);
    enc_workspace_free(shared);
    enc_model_free(m);
}
END_TEST

/* Concurrent forwards on one shared model, each with its own workspace. */
typedef struct {
    const enc_model *m;
    const float *x;
    int B, L;
    const float *expect;
    int mismatches;
} thread_job;

static void *run_job(void *arg)
{
    thread_job *j = arg;
    size_t n = (size_t)j->B * j->L * j->m->hp.d_model;
    float *out = malloc(n * sizeof *out);
    enc_workspace *ws = enc_workspace_new(j->m);
    for (int it = 0; it < 20 && out && ws; it++) {
        enc_batch in = batch_plain(j->x, j->B, j->L, NULL);
        enc_result res = {.out = out};
        if (enc_forward(j->m, ws, &in, &res, NULL) != 0 || memcmp(out, j->expect, n * 4) != 0)
            j->mismatches++;
    }
    enc_workspace_free(ws);
    free(out);
    return NULL;
}

START_TEST(test_concurrent_forwards)
{
    enc_model *m = random_model(&shapes[3], 13);
    const int B = 2, L = 8, D = m->hp.d_model;
    float *x = xcalloc((size_t)B * L * D, 4), *expect = xcalloc((size_t)B * L * D, 4);
    uint64_t st = 9;
    fill_random(x, (size_t)B * L * D, &st, 1.0f);
    enc_workspace *ws = enc_workspace_new(m);
    enc_batch in = batch_plain(x, B, L, NULL);
    enc_result res = {.out = expect};
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, NULL), 0);
    thread_job jobs[4];
    pthread_t tids[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (thread_job){.m = m, .x = x, .B = B, .L = L, .expect = expect};
        ck_assert_int_eq(pthread_create(&tids[t], NULL, run_job, &jobs[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(tids[t], NULL);
        ck_assert_int_eq(jobs[t].mismatches, 0);
    }
    enc_workspace_free(ws);
    free(x);
    free(expect);
    enc_model_free(m);
}
END_TEST

/* Any finite input gives finite outputs or ENC_ENUMERIC, never NaN with 0. */
START_TEST(test_extreme_inputs)
{
    enc_model *m = random_model(&shapes[_i % N_SHAPES], 21);
    const int L = 3, D = m->hp.d_model;
    const float values[] = {1e-38f, 3e38f, -3e38f, 1e30f, 1e-30f};
    float *x = xcalloc((size_t)L * D, 4), *out = xcalloc((size_t)L * D, 4);
    for (int k = 0; k < L * D; k++)
        x[k] = values[(_i + k) % 5] * ((k % 3) ? 1.0f : -1.0f);
    enc_workspace *ws = enc_workspace_new(m);
    enc_batch in = batch_plain(x, 1, L, NULL);
    enc_result res = {.out = out};
    enc_error err = {0};
    int rc = enc_forward(m, ws, &in, &res, &err);
    if (rc == 0) {
        for (int k = 0; k < L * D; k++)
            ck_assert_msg(isfinite(out[k]), "non-finite output %g at %d with rc 0", (double)out[k],
                          k);
    } else {
        ck_assert_int_eq(rc, ENC_ENUMERIC);
        ck_assert_ptr_nonnull(strstr(err.message, "float32 range"));
    }
    enc_workspace_free(ws);
    free(x);
    free(out);
    enc_model_free(m);
}
END_TEST

START_TEST(test_batch_validation_messages)
{
    enc_model *m = random_model(&shapes[0], 1);
    const int D = m->hp.d_model;
    float x[2 * 3 * 12] = {0}, out[2 * 3 * 12];
    enc_result res = {.out = out};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};

    int bad_len[2] = {3, 4};
    enc_batch in = batch_plain(x, 2, 3, bad_len);
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_str_eq(err.message, "lengths[1] = 4 is outside 1..3");

    enc_error_clear(&err);
    in = batch_plain(x, 2, 3, NULL);
    x[1 * 3 * D + 2 * D + 5] = NAN;
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_str_eq(err.message, "embeddings[1][2][5] is not finite");
    x[1 * 3 * D + 2 * D + 5] = 0;

    enc_error_clear(&err);
    int global[2] = {0, 3};
    in.mask.global = global;
    in.mask.n_global = 2;
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_str_eq(err.message, "mask.global[1] = 3 is outside 0..2");

    enc_error_clear(&err);
    in = batch_plain(x, 2, 3, NULL);
    float add[9] = {0};
    add[4] = NAN;
    in.mask.attn_kind = ENC_MASK_ADD;
    in.mask.attn_add = add;
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "mask.attn value at flat index 4 is NaN"));

    enc_error_clear(&err);
    in = batch_plain(x, 0, 3, NULL);
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "batch shape [0, 3]"));

    enc_error_clear(&err);
    in = batch_plain(x, 1, 3, NULL);
    in.mask.window_left = -5;
    ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "mask.window"));
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

START_TEST(test_flops_formula)
{
    /* BERT-base block at B=1, L=128: 1.86 GFLOP (issue 4's figure). */
    enc_hparams hp = {HP_BASE(768, 12, 12, 3072, 1, ENC_ACT_GELU, false, 1e-5f, true)};
    double f = enc_forward_flops(&hp, 1, 128);
    ck_assert_double_eq_tol(f / 1e9, 1.86, 0.01);
    /* deberta-v3-base's layer adds c2p and p2c: distances -127 .. 127 reach
     * rows 129 .. 383 of its 512, so 2 x 2 x 12 heads x 128 x 255 x 64 */
    hp.dis = (enc_disentangled){
        .span = 256, .buckets = 256, .max_position = 512, .c2p = true, .p2c = true};
    ck_assert_double_eq(enc_forward_flops(&hp, 1, 128) - f, 2.0 * 2 * 12 * 128 * 255 * 64);
}
END_TEST

/* ---- per-layer attention: what local layers compute ------------------------- */

/* usage's scores: global layers every allowed tile of the batch's own mask,
 * local layers the band's tiles; and the FLOP count with the band's pairs. */
START_TEST(test_local_layer_scores)
{
    const int W = 20, NL = 5; /* layers 0 and 3 global, 1 2 4 local */
    const enc_hparams hp = {HP_BASE(16, 4, 4, 24, NL, ENC_ACT_GELU, true, 1e-5f, true),
                            .global_every = 3, .local_window = W};
    enc_model *m = random_model(&hp, 77);
    enc_workspace *ws = enc_workspace_new(m);
    const int B = 3, L = 300, lengths[3] = {300, 150, 21};
    uint64_t st = 9;
    float *x = xcalloc((size_t)B * L * 16, sizeof *x), *out = xcalloc((size_t)B * L * 16, 4);
    fill_random(x, (size_t)B * L * 16, &st, 1.0f);
    for (int causal = 0; causal < 2; causal++) {
        enc_batch in = batch_plain(x, B, L, lengths);
        in.mask.causal = causal;
        enc_result res = {.out = out};
        enc_error err = {0};
        ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), 0);
        uint64_t want = 0;
        for (int b = 0; b < B; b++) {
            const uint64_t len = (uint64_t)lengths[b];
            uint64_t global = len * len; /* no mask: dense; causal: the tiles on or below */
            if (causal)
                global = band_tile_scores(lengths[b], lengths[b], true);
            want += 4 * (2 * global + 3 * band_tile_scores(lengths[b], W, causal));
        }
        ck_assert_msg(res.scores == want, "causal %d: scores %llu, want %llu", causal,
                      (unsigned long long)res.scores, (unsigned long long)want);
    }
    /* the FLOPs: each local layer's QK^T and AV over the band's pairs */
    const double linears = 2.0 * 300 * 16 * (48 + 16 + 24 + 24);
    const double band = 300.0 * 41 - 20.0 * 21; /* rows of 2W + 1 less the ends */
    ck_assert_uint_eq(mask_band_pairs(300, W), (uint64_t)band);
    ck_assert_uint_eq(mask_band_pairs(5, W), 25);
    const double want_flops = NL * linears + 4.0 * 4 * 4 * (2 * 300.0 * 300 + 3 * band);
    ck_assert_double_eq_tol(enc_forward_flops(&hp, 1, 300), want_flops, 1.0);
    /* a causal model's (Mistral's): each row's keys up to its own, the band's
     * W back at most on the local layers */
    enc_hparams causal_hp = hp;
    causal_hp.causal = true;
    double lower = 0.0, lower_band = 0.0;
    for (int i = 0; i < 300; i++) {
        lower += i + 1;
        lower_band += (i < W ? i : W) + 1;
    }
    ck_assert_double_eq_tol(enc_forward_flops(&causal_hp, 1, 300),
                            NL * linears + 4.0 * 4 * 4 * (2 * lower + 3 * lower_band), 1.0);
    free(x);
    free(out);
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

/* CSR weights of a model with local layers: the batch's CSR layout on every
 * layer, a local layer's entries outside its band 0, and the rest the dense
 * weights, which match the naive reference's. */
START_TEST(test_local_layer_csr)
{
    const enc_hparams hp = {HP_BASE(12, 3, 3, 20, 2, ENC_ACT_GELU, true, 1e-5f, true),
                            .global_every = 2, .local_window = 3 + _i * 40};
    enc_model *m = random_model(&hp, 12 + (uint64_t)_i);
    enc_workspace *ws = enc_workspace_new(m);
    const int B = 2, L = 150, D = 12, H = 3, lengths[2] = {150, 97};
    uint64_t st = 5;
    float *x = xcalloc((size_t)B * L * D, sizeof *x);
    fill_random(x, (size_t)B * L * D, &st, 1.0f);
    enc_batch in = batch_plain(x, B, L, lengths);
    in.mask.window_left = 70; /* wider than the band in one case, narrower in the other */
    in.mask.window_right = 10;
    enc_error err = {0};
    enc_blockmask *bm = enc_blockmask_new(&in, true, &err);
    ck_assert_ptr_nonnull(bm);
    in.blockmask = bm;
    size_t nnz = 0;
    for (int b = 0; b < B; b++)
        nnz += enc_blockmask_nnz(bm, b);
    float *dense[2], *csr[2], *out = xcalloc((size_t)B * L * D, sizeof *out);
    for (int l = 0; l < 2; l++) {
        dense[l] = xcalloc((size_t)B * H * L * L, sizeof(float));
        csr[l] = xcalloc((size_t)H * nnz, sizeof(float));
        for (size_t k = 0; k < (size_t)H * nnz; k++)
            csr[l][k] = 99.0f; /* every entry must be written */
    }
    enc_result rd = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = dense};
    enc_result rc = {
        .out = out, .attn_mode = ENC_ATTN_HEADS, .attn_format = ENC_FORMAT_CSR, .attn = csr};
    ck_assert_int_eq(enc_forward_naive(m, &in, &rd, &err), 0);
    ck_assert_msg(enc_forward(m, ws, &in, &rc, &err) == 0, "%s", err.message);
    size_t off = 0;
    int outside = 0;
    for (int b = 0; b < B; b++) {
        const int32_t *ip = enc_blockmask_indptr(bm, b), *ix = enc_blockmask_indices(bm, b);
        const size_t n = enc_blockmask_nnz(bm, b);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < lengths[b]; i++)
                    for (int32_t k = ip[i]; k < ip[i + 1]; k++) {
                        const int j = ix[k];
                        const float got = csr[l][off * H + (size_t)h * n + (size_t)k];
                        const float want = dense[l][(((size_t)b * H + h) * L + i) * L + j];
                        EXPECT(fabsf(got - want) < TOL_ATTN,
                               "layer %d seq %d head %d (%d, %d): %g, want %g", l, b, h, i, j, got,
                               want);
                        if (l == 1 && abs(i - j) > hp.local_window) {
                            EXPECT(got == 0.0f,
                                   "layer 1 seq %d head %d (%d, %d) outside the window: %g", b, h,
                                   i, j, got);
                            outside++;
                        }
                    }
        off += n;
    }
    ck_assert_int_gt(outside, 0); /* the local layer left pairs of the batch's mask out */
    for (int l = 0; l < 2; l++) {
        free(dense[l]);
        free(csr[l]);
    }
    free(out);
    free(x);
    enc_blockmask_free(bm);
    enc_workspace_free(ws);
    enc_model_free(m);
}
END_TEST

Suite *naive_suite(void)
{
    Suite *s = timed_suite("naive");
    TCase *tc = timed_case(s, "fast_vs_naive", 120);
    tcase_add_loop_test(tc, test_fast_matches_naive_random, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_tiled_attention_threads, 0, 28);
    tcase_add_loop_test(tc, test_forward_many, 0, 2 * N_SHAPES);
    tcase_add_test(tc, test_fully_masked_row_is_zero);
    tcase_add_loop_test(tc, test_padded_equals_alone, 0, N_SHAPES);
    tcase_add_test(tc, test_workspace_reuse);
    tcase_add_test(tc, test_concurrent_forwards);
    tcase_add_loop_test(tc, test_extreme_inputs, 0, 10);
    tcase_add_test(tc, test_batch_validation_messages);
    tcase_add_test(tc, test_flops_formula);
    tcase_add_test(tc, test_local_layer_scores);
    tcase_add_loop_test(tc, test_local_layer_csr, 0, 2);
    return s;
}
