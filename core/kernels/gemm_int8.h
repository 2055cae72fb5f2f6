/* gemm_int8.h - the int8 Linears' weights and kernels, private to gemm.c
 * (which wraps them in a gemm_packed: gemm_pack_int8, gemm_packed_cols).
 *
 *     gemm_i8 *q = gemm_i8_pack(w, cut, n, N, K);  // NULL: memory short, K too big
 *     gemm_i8_cols(out, ldc, in, lda, q, b, M, p0, p1, act, scratch);
 *     gemm_i8_free(q);
 *
 * The weights are quantised once, per output channel: scale_w[n] =
 * max_k |w[n][k]| / 127, w_q = w x (1 / scale_w) rounded to nearest even
 * (fbgemm's multiply, not a divide), in [-127, 127].  Each call quantises
 * the activations per row the same way (scale_a[m] = max_k |x[m][k]| /
 * 127), sums x_q . w_q in int32 (exact, so
 * every kernel gives the same sums) and writes scale_a[m] * scale_w[n] *
 * sum + b[n], then act: PyTorch's and ONNX Runtime's dynamic quantisation,
 * with a scale per row of the activations rather than per tensor.
 *
 * Outliers (LLM.int8()'s decomposition, per row): the columns k of a row
 * with |x[k]| > GEMM_I8_OUTLIER_RATIO x the row's mean |x| (the
 * GEMM_I8_MAX_OUTLIERS largest of them) are left out of its int8 product
 * (x_q 0 there, scale_a the max over the other columns) and added in
 * float32: out = scale_a * scale_w[n] * sum + scale_w[n] * sum over the
 * outliers of x[k] * w_q[n][k] + b[n].  Trained BERTs carry a few hidden
 * dimensions tens of times the rest, and one of them alone would set the
 * row's scale and leave every other column a few levels. */
#ifndef ATTND_GEMM_INT8_H
#define ATTND_GEMM_INT8_H

#include "encoder.h"

#include <stdbool.h>
#include <stddef.h>

/* int32 sums cannot overflow while K <= 2^31 / 127^2 (133,143); the
 * scratch holds at least one row of activations up to here. */
#define GEMM_I8_MAX_K 65536

/* A row's outlier columns: above this many times its mean |x| (6.4 sigma
 * for a Gaussian row), at most this many. */
#define GEMM_I8_OUTLIER_RATIO 8.0
#define GEMM_I8_MAX_OUTLIERS  8

typedef struct gemm_i8 gemm_i8;

/* Rows of w in n blocks as gemm_pack_parts takes them (block i ends before
 * row cut[i]), N rows of K, into panels of GEMM_NR columns.  Returns an
 * owned weight, or NULL when memory is short or K > GEMM_I8_MAX_K. */
gemm_i8 *gemm_i8_pack(const float *const *w, const int *cut, int n, int N, int K);
void gemm_i8_free(gemm_i8 *q);
size_t gemm_i8_bytes(const gemm_i8 *q);

/* gemm_packed_cols on int8 weights (gemm.h's contract): panels [p0, p1);
 * scratch gemm_scratch_bytes(), 64-byte aligned.  Quantises the rows
 * itself, a chunk at a time into the scratch. */
void gemm_i8_cols(float *out, int ldc, const float *in, int lda, const gemm_i8 *q, const float *b,
                  int M, int p0, int p1, const enc_activation *act, void *scratch);

/* The same split in two (gemm.h's gemm_int8_quantise, gemm_int8_cols):
 * rows [r0, r1) of in (K each) quantised into rows (gemm_i8_rows_bytes(M,
 * K), 64-byte aligned), in the format of the kernel that runs now; then
 * panels [p0, p1) of the product on the kernel that format is for. */
size_t gemm_i8_rows_bytes(int M, int K);
void gemm_i8_quantise(void *rows, const float *in, int lda, int K, int r0, int r1);
const void *gemm_i8_rows_at(const void *rows, int K, int r);
void gemm_i8_cols_rows(float *out, int ldc, const void *rows, const gemm_i8 *q, const float *b,
                       int M, int p0, int p1, const enc_activation *act, void *scratch);

/* For tests: row x (K) quantised as a call on kernel (gemm_int8_kernel's
 * names) does it, in AVX2 (vec, where this CPU has it) or scalar
 * code: its x_q into xq ((K + 3) / 4 * 4 values, 0 past K and at the
 * outliers), its outlier columns ascending into outliers (n_outliers of
 * them, at most GEMM_I8_MAX_OUTLIERS); returns its scale_a (NaN when memory
 * is short). */
float gemm_i8_quantise_test(const char *kernel, bool vec, const float *x, int K, int *xq,
                            int *outliers, int *n_outliers);

/* Which kernel int8 weights run on now, fastest first: "amx_int8"
 * (AMX-INT8, the tiles granted by the OS) or "avx512_vnni" (AVX512_VNNI),
 * both while simd_enabled(); "avx_vnni" (256-bit AVX-VNNI), "avx2" or
 * "portable".  gemm_int8_limit(name) makes calls run no faster kernel than
 * that one: the fastest this CPU has at or below it (tests run each);
 * returns whether this CPU has that one itself. */
const char *gemm_int8_kernel(void);
bool gemm_int8_limit(const char *kernel);

#endif
