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
 *     gemm_packed_cols(out, in, pw, b, M, p0, p1, act, scratch);
 *
 * Row i of the result depends on row i of the input only, summed in the
 * same order whatever M is, so a sequence gives the same bits alone or in a
 * batch.  Machines without AVX-512 (and valgrind, which hides it) get NULL
 * from gemm_pack and stay on cblas_sgemm; tests run both paths against the
 * same PyTorch fixtures (gemm_set_enabled). */
#ifndef ATTND_GEMM_H
#define ATTND_GEMM_H

#include "encoder.h"

#include <stdbool.h>
#include <stddef.h>

/* Output columns per packed panel: two AVX-512 vectors. */
#define GEMM_NR 32

typedef struct gemm_packed gemm_packed;

/* Whether this CPU runs the packed kernel (AVX-512F). */
bool gemm_supported(void);

/* Turns the packed path off (false) or back on for every later forward; on
 * by default.  For tests and comparisons: both paths compute the same Linear. */
void gemm_set_enabled(bool on);
bool gemm_enabled(void);

/* w (N, K), PyTorch layout, packed into panels.  Returns an owned packed
 * weight, or NULL when the CPU has no AVX-512 or memory is short (the
 * caller then uses cblas_sgemm on w). */
gemm_packed *gemm_pack(const float *w, int N, int K);
void gemm_packed_free(gemm_packed *pw);

/* Bytes of one packed weight (0 for NULL). */
size_t gemm_packed_bytes(const gemm_packed *pw);

/* Panels of a packed weight: ceil(N / GEMM_NR). */
int gemm_panels(const gemm_packed *pw);

/* Bytes of the scratch one thread's gemm_packed_cols needs (its copy of an
 * activation block). */
size_t gemm_scratch_bytes(void);

/* out[:, p0*NR : min(p1*NR, N)] (M, N) = in (M, K) . w^T + b, then act on
 * those columns when act is not NULL: panels [p0, p1) of one Linear, one
 * thread's share.  b may be NULL; scratch is gemm_scratch_bytes(), 64-byte
 * aligned, the thread's own. */
void gemm_packed_cols(float *out, const float *in, const gemm_packed *pw, const float *b, int M,
                      int p0, int p1, const enc_activation *act, float *scratch);

#endif
