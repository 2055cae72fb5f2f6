/* ops.h - the forward's elementwise and row ops (ops.c), one function per
 * op under ops_, shapes in the comment: the portable forms, which hand over
 * to simd.c's AVX-512 forms when simd_enabled().  Private to core/. */
#ifndef ATTND_KERNELS_OPS_H
#define ATTND_KERNELS_OPS_H

#include "encoder.h"

#include <stdbool.h>
#include <stddef.h>

/* out (M, N) = in (M, K) . w (N, K)^T + b (N) (b may be NULL), for
 * columns [n0, n1) of out only (rows n0..n1 of w), then
 * act on them when act is not NULL: one thread's share of a Linear; out's
 * rows are ldc floats apart, in's lda. */
void ops_linear_cols(float *out, int ldc, const float *in, int lda, const float *w, const float *b,
                     int M, int K, int n0, int n1, const enc_activation *act);
/* Columns [n0, n1) of out (M rows ldc apart) += b[n0..n1) (when b is not
 * NULL), then act on them (when act is not NULL). */
void ops_bias_act_cols(float *out, int ldc, const float *b, int M, int n0, int n1,
                       const enc_activation *act);
/* out (M, D) = LayerNorm(in (M, D)) * w + b; b may be NULL; out may be in.
 * Statistics in double, so no finite input overflows. */
void ops_layernorm(float *out, const float *in, const float *w, const float *b, int M, int D,
                   float eps);
/* out (M, D) = in / sqrt(mean(in^2) + eps) * w, by rows (RMSNorm); out
 * may be in.  Statistics in double. */
void ops_rmsnorm(float *out, const float *in, const float *w, int M, int D, float eps);
/* ops_rmsnorm when kind is ENC_NORM_RMS (b unused), else ops_layernorm. */
void ops_norm(enc_norm kind, float *out, const float *in, const float *w, const float *b, int M,
              int D, float eps);
/* x (n) += y (n) */
void ops_residual(float *x, const float *y, size_t n);
/* x (n) = act(x) in place */
void ops_activation(float *x, size_t n, enc_activation act);
/* A gated feed-forward's rows (rows of ld floats): the first F entries, the
 * input, become act(input) * gate, the gate being the next F (GeGLU: act
 * the GELU of activation; SwiGLU: SiLU). */
void ops_glu(float *h, int ld, int rows, int F, enc_ffn ffn, enc_activation act);
/* RoPE on n vectors of E floats (one token's heads, E apart): the first
 * 2 half dims of each turn, pair k by the angle whose cosine and sine are
 * cs[k] and sn[k]: pairs (k, k + half) for neox, (2k, 2k + 1) for gptj;
 * (a, b) becomes (a cos - b sin, b cos + a sin). */
void ops_rope(float *x, int n, int E, const float *cs, const float *sn, int half,
              enc_rope_style style);
/* One activation on one value: the definition the fast loop and the naive
 * reference share. */
float ops_activation_value(float x, enc_activation act);
/* Softmax of one row of n scores in place; -inf entries are excluded keys.
 * A row with no finite-or-larger score becomes all zeros.  The weights are
 * also written to copy (n) unless it is NULL: attention's weights go out
 * in the same pass. */
void ops_softmax_row(float *s, int n, float *copy);
/* One block of keys of an online softmax (FlashAttention's): given a row's
 * running *max and *sum of exp(score - *max) over the keys before, and the
 * next n scores s (-inf = excluded), sets s to exp(s - new max) (0 where
 * excluded), updates *max and *sum, and returns the factor exp(old max -
 * new max) that whatever was summed with the old max must be scaled by (1
 * while no key is allowed).  Start with *max = -inf, *sum = 0; the weights
 * are then s / *sum (no allowed key at all: *sum stays 0, weights 0).  NaN
 * or +inf scores make everything NaN, as in ops_softmax_row. */
float ops_softmax_block(float *s, int n, float *max, float *sum);

#endif
