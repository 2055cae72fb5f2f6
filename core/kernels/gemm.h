/* gemm.h - the Linear layers' GEMM on weights packed once, at load.
 *
 * cblas_sgemm packs both operands into its own panel layout on every call.
 * For the activations that is cheap, but the weights are the big operand
 * when a batch has few tokens: at B=1 L=128 repacking them was 15% of a
 * BERT-base block's time.  Here each Linear weight (N, K) is packed once,
 * when the model is built, into column panels of GEMM_NR outputs
 * (panel p holds w[p*NR .. p*NR+NR)[k] for every k, k-major, zero past N),
 * and an AVX-512 kernel multiplies the activations into them.
 *
 *     gemm_packed *pw = gemm_pack(w, N, K);   // NULL: use cblas_sgemm
 *     float *scratch = malloc(gemm_scratch_bytes());  // one per thread
 *     gemm_packed_cols(out, N, in, K, pw, b, M, p0, p1, act, scratch);
 *
 * Row i of the result depends on row i of the input only, summed in the
 * same order whatever M is, so a sequence gives the same bits alone or in a
 * batch.  Machines without AVX-512 (and valgrind, which hides it) get NULL
 * from gemm_pack and stay on cblas_sgemm, as does every forward while
 * simd_set_enabled(false) (simd.h); tests run both paths against the same
 * PyTorch fixtures. */
#ifndef ATTND_GEMM_H
#define ATTND_GEMM_H

#include "encoder.h"

#include "kernels/panel.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>


typedef struct gemm_packed gemm_packed;

/* w (N, K), PyTorch layout, packed into panels.  Returns an owned packed
 * weight, or NULL when the CPU has no AVX-512 or memory is short (the
 * caller then uses cblas_sgemm on w). */
gemm_packed *gemm_pack(const float *w, int N, int K);
/* The same for a weight whose rows lie in n blocks, not necessarily
 * adjacent: block i is w[i] (rows[i], K), its rows following block i - 1's
 * (the in-projection from a file's separate q, k and v tensors). */
gemm_packed *gemm_pack_parts(const float *const *w, const int *rows, int n, int K);
void gemm_packed_free(gemm_packed *pw);

/* The same weights in bfloat16 (each rounded to nearest even): half the
 * memory, and gemm_packed_cols (and _glu, _rope) on them rounds each
 * activation to bfloat16 too and sums the products in float32, as
 * torch.autocast(dtype=torch.bfloat16) computes a Linear on the CPU.
 * Panels hold pairs of k: panel p, pair q, column j = (w[p*NR + j][2q],
 * w[p*NR + j][2q + 1]), zero past N and K.  The product runs on
 * AVX512_BF16's vdpbf16ps where the CPU has it, else on AVX-512F with each
 * bfloat16 widened to float32 (the same products, exact in float32, summed
 * in the same order: odd k, then even k of each pair), and without
 * AVX-512F (or while simd_set_enabled(false)) on gemm_bf16_blas_cols.
 * Packed on any CPU; NULL only when memory is short. */
gemm_packed *gemm_pack_bf16(const float *w, int N, int K);
gemm_packed *gemm_pack_parts_bf16(const float *const *w, const int *rows, int n, int K);
/* Whether pw holds bfloat16 weights. */
bool gemm_packed_bf16(const gemm_packed *pw);
/* Which kernel bfloat16 weights run on now: "amx_bf16" (AMX's tdpbf16ps
 * where a block's k is a multiple of 32, vdpbf16ps for the rest),
 * "avx512_bf16" (vdpbf16ps), "avx512f" (widened in registers), or
 * "openblas" (no AVX-512F, or the AVX-512 forms turned off:
 * gemm_bf16_blas_cols).  gemm_bf16_use_dpbf16(false) makes a CPU with
 * AVX512_BF16 run the widened kernel, gemm_bf16_use_amx(false) one with
 * AMX-BF16 run vdpbf16ps (tests run each). */
const char *gemm_bf16_kernel(void);
/* Whether that kernel multiplies bfloat16 in the CPU's own instructions
 * ("amx_bf16" or "avx512_bf16"), not widened to float32. */
bool gemm_bf16_native(void);
void gemm_bf16_use_dpbf16(bool on);
void gemm_bf16_use_amx(bool on);

/* gemm_packed_cols on bfloat16 weights (gemm_packed_bf16(pw)) for any
 * CPU: blocks of the panels widened to float32 (a shift: exact), blocks of
 * the rows rounded to bfloat16, both in scratch, multiplied by
 * cblas_sgemm; then the bias and act.  The same products as the AVX-512
 * kernels, summed in OpenBLAS's order.  The weights stay in bfloat16:
 * half the memory on any CPU. */
void gemm_bf16_blas_cols(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                         const float *b, int M, int p0, int p1, const enc_activation *act,
                         float *scratch);

/* The same weights in int8 (model.dtype int8), PyTorch's and ONNX
 * Runtime's dynamic quantisation: each output channel n quantised once,
 * symmetric (scale_w[n] = max_k |w[n][k]| / 127, w / scale_w rounded to
 * nearest even), and gemm_packed_cols on them quantises each row of the
 * activations the same way on every call (scale_a[m] = max_k |x[m][k]| /
 * 127; a zero row gives the bias), sums the int8 products in int32 and
 * writes scale_a[m] * scale_w[n] * sum + b[n], then act.  The sums are
 * exact, so every kernel writes the same bits: AVX512_VNNI's vpdpbusd
 * (u8 x s8: the activations + 128, less 128 x each column's sum of w_q,
 * kept at packing), AVX2 (widened to int16, vpmaddwd), or portable C.
 * Packed on any CPU; NULL when memory is short or K > 65536.  No
 * gemm_packed_glu or gemm_packed_rope on them (gemm_glu_ok is false): the
 * forward runs the gating and RoPE in passes of their own. */
gemm_packed *gemm_pack_int8(const float *w, int N, int K);
gemm_packed *gemm_pack_parts_int8(const float *const *w, const int *rows, int n, int K);
/* Whether pw holds int8 weights. */
bool gemm_packed_int8(const gemm_packed *pw);
/* gemm_packed_cols on int8 weights in two steps, so that a team quantises
 * the activations once between them rather than once a thread: rows [r0,
 * r1) of in (M rows lda apart, K) quantised into rows (gemm_int8_rows_bytes(M,
 * K), 64-byte aligned; each thread a share of the rows), then, once every
 * row is done, gemm_int8_cols on panels [p0, p1) of pw (K columns) reads
 * them: the same bits as gemm_packed_cols. */
size_t gemm_int8_rows_bytes(int M, int K);
void gemm_int8_quantise(void *rows, const float *in, int lda, int K, int r0, int r1);
/* Row r of rows (quantised by gemm_int8_quantise, K each): the rows from r
 * on, for gemm_int8_cols on a block of them. */
const void *gemm_int8_rows_at(const void *rows, int K, int r);
void gemm_int8_cols(float *out, int ldc, const void *rows, const gemm_packed *pw, const float *b,
                    int M, int p0, int p1, const enc_activation *act, float *scratch);

/* Bytes of one packed weight (0 for NULL). */
size_t gemm_packed_bytes(const gemm_packed *pw);

/* Panels of a packed weight: ceil(N / GEMM_NR). */
int gemm_panels(const gemm_packed *pw);

/* Bytes of the scratch one thread's gemm_packed_cols needs (its copy of an
 * activation block). */
size_t gemm_scratch_bytes(void);

/* Whether rows ld floats apart are read in place (true), or copied first
 * because they would crowd a few L1 sets (ld * 4 a multiple of 2 KiB). */
bool gemm_stride_ok(int ld);

/* A row stride for n floats that gemm_stride_ok accepts: n, or n + 16. */
int gemm_padded_ld(int n);

/* out[:, p0*NR : min(p1*NR, N)] (M rows ldc apart, N) = in (M rows lda
 * apart, K) . w^T + b, then act on those columns when act is not NULL:
 * panels [p0, p1) of one Linear, one thread's share.  b may be NULL;
 * scratch is gemm_scratch_bytes(), 64-byte aligned, the thread's own. */
void gemm_packed_cols(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                      const float *b, int M, int p0, int p1, const enc_activation *act,
                      float *scratch);

/* A packed Linear of M rows as items for a team to deal (team_deal):
 * blocks of rows by groups of panels, numbered row block first.
 * Float32 and bfloat16: blocks of GEMM_MC rows, groups as few as give
 * GEMM_ITEMS_PER_THREAD items a thread (at most one a panel): each call
 * prepares its rows again (bfloat16's rounding), so a block's rows are
 * prepared once a group.  int8: every panel an item, on rows, the input
 * quantised once for the team (gemm_int8_quantise, every row done before
 * the first item), so a thread's next panels cost no more than its first;
 * its rows are one block, or, when the panels are fewer than
 * GEMM_ITEMS_PER_THREAD a thread (many threads, a narrow Linear), as few
 * blocks of GEMM_I8_MR rows apiece as give that many items: each block
 * streams the weights again.  rows is NULL for the others. */
#define GEMM_ITEMS_PER_THREAD 4
#define GEMM_I8_MR            32 /* int8's row blocks: whole AMX tiles */
typedef struct {
    int M, P;           /* rows, panels */
    int blocks, groups; /* row blocks, panel groups */
    int mb;             /* rows a block (the last one's may be fewer) */
    const void *rows;   /* int8: the quantised input */
} gemm_grid;

gemm_grid gemm_grid_of(const gemm_packed *pw, int M, int nth, const void *rows);
int gemm_grid_items(gemm_grid g);

/* gemm_packed_cols (int8: gemm_int8_cols on g.rows) on items [i0, i1) of
 * g, those of one row block in one call: the same outputs, whichever
 * thread runs which items.  in is not read for int8. */
void gemm_packed_items(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                       const float *b, gemm_grid g, int i0, int i1, const enc_activation *act,
                       float *scratch);

/* Whether pw (a gated feed-forward's first Linear, 2F rows: input then
 * gate) can run gemm_packed_glu: F a whole number of panels, and pw in
 * float32 or bfloat16. */
bool gemm_glu_ok(const gemm_packed *pw);

/* A gated feed-forward's first Linear with its gating: for q in [q0, q1)
 * (of the input's panels, P / 2), panels q and q + P / 2, then
 * out[:, q*NR .. q*NR + NR) = act(input) * gate on the rows just computed,
 * while in cache (GeGLU: the GELU of act; SwiGLU: SiLU).  The gate's
 * columns of out are left holding the gate.  Needs gemm_glu_ok(pw). */
void gemm_packed_glu(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                     const float *b, int M, int q0, int q1, enc_ffn ffn, enc_activation act,
                     float *scratch);

/* An in-projection with RoPE (neox, heads of 64 dims, every dim turning):
 * for heads h in [h0, h1) (of the first P / 2 panels' heads: the query and
 * key heads at the start of the output), panels 2h and 2h + 1, then each
 * row r of them rotated while in cache: pair k (dims k and 32 + k) by
 * table[pos[r] * 64 + k] (cosine) and table[pos[r] * 64 + 32 + k] (sine),
 * (a, b) -> (a cos - b sin, b cos + a sin).  pos: M positions.  Float32
 * or bfloat16 weights only (not gemm_packed_int8). */
void gemm_packed_rope(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                      const float *b, int M, int h0, int h1, const float *table, const int32_t *pos,
                      float *scratch);

/* The attention products, on the same kernel (AVX-512 only; without it the
 * caller uses cblas_sgemm).
 *
 * dst = scale * src^T in panels: src (N rows lds apart, K), dst
 * ceil(N / NR) panels of (K, NR), zero past N, as gemm_pack lays out a
 * weight.  dst holds ceil(N / NR) * K * NR floats. */
void gemm_pack_t(float *dst, const float *src, int lds, int N, int K, float scale);

/* c (M rows ldc apart, N) = [c +] a (M rows lda apart, K) . b (K, N), where
 * b's element (k, n) is b[(n / NR) * panel + k * ldb + n % NR]: panels from
 * gemm_pack_t (ldb NR, panel K * NR) or a row-major matrix read in place
 * (ldb its row stride, panel NR).  Columns of b past N are never read. */
void gemm_mul(float *c, int ldc, const float *a, int lda, const float *b, size_t ldb, size_t panel,
              int M, int N, int K, bool accumulate);

/* The same products in bfloat16 (model.dtype bfloat16: torch.autocast runs
 * attention's matmuls in bfloat16 too), AVX-512 only.  The b operand is
 * laid out as gemm_pack_bf16 lays out a weight: ceil(N / NR) panels, each
 * ceil(K / 2) pairs of k for NR columns, gemm_pairs_words(N, K) words.
 *
 * gemm_pack_t_bf16: dst = scale * src^T so, src (N rows lds apart, K), each
 * element scaled and rounded to bfloat16, zero past N and K (the keys).
 * gemm_pack_pairs_bf16: dst = src so, src (K rows lds apart, N), zero past
 * N and K (the values).
 * gemm_mul_bf16: c (M rows ldc apart, N) = [c +] a (M rows lda apart, K) .
 * b, a's rows rounded to bfloat16 on the way (in scratch,
 * gemm_mul_bf16_scratch_bytes(), the thread's own), the products summed in
 * float32 on the Linears' kernels (vdpbf16ps or widened); panel: words
 * between b's panels; b's pairs from k / 2 of an offset b may start at (k
 * even).  Columns of c past N are never written. */
size_t gemm_pairs_words(int N, int K);
size_t gemm_mul_bf16_scratch_bytes(void);
void gemm_pack_t_bf16(uint32_t *dst, const float *src, int lds, int N, int K, float scale);
void gemm_pack_pairs_bf16(uint32_t *dst, const float *src, int lds, int K, int N);
void gemm_mul_bf16(float *c, int ldc, const float *a, int lda, const uint32_t *b, size_t panel,
                   int M, int N, int K, bool accumulate, uint32_t *scratch);

#endif
