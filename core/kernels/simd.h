/* simd.h - whether attnd's AVX-512 code runs, and its elementwise kernels.
 *
 * The hot loops have two forms: portable C that the compiler vectorizes
 * (ops.c, with cblas_sgemm for the products) and AVX-512 intrinsics
 * (gemm.c, simd.c).  The compiler's strict-IEEE vectorization of exp, erf
 * and the softmax reductions runs 3-4x slower than the intrinsics, and
 * cblas_sgemm repacks the weights on every call.  The AVX-512 forms run
 * when the CPU has AVX-512F (valgrind hides it) and simd_set_enabled has
 * not turned them off; the tests run both forms against the same PyTorch
 * fixtures.  The activations have a third form, AVX2 with FMA (vec256.h),
 * for CPUs without AVX-512F. */
#ifndef ATTND_SIMD_H
#define ATTND_SIMD_H

#include "encoder.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether this CPU runs the AVX-512 code (AVX-512F). */
bool simd_supported(void);

/* Turns the AVX-512 code and the AVX2 activations off (false) or back on for every later call; on
 * by default.  For tests and comparisons: both forms compute the same. */
void simd_set_enabled(bool on);

/* simd_supported() and not turned off: the AVX-512 forms run. */
bool simd_enabled(void);

/* Whether this CPU runs the AVX2 activations (AVX2 and FMA); and that,
 * not turned off by simd_set_enabled.  ops_activation runs them where the
 * AVX-512 ones cannot run: the compiler's AVX2 clone of its loop stays
 * scalar for erf and exp (strict IEEE keeps their selects as branches). */
bool simd_avx2_supported(void);
bool simd_avx2_enabled(void);

/* ops_softmax_block and ops_activation (ops.h), same contracts; call only
 * when simd_enabled(), simd_activation_avx2 when simd_avx2_enabled(). */
float simd_softmax_block(float *s, int n, float *max, float *sum);
void simd_activation(float *x, size_t n, enc_activation act);
void simd_activation_avx2(float *x, size_t n, enc_activation act);
/* ops_rope's neox pairs (ops.h), the same products; call only when
 * simd_enabled(). */
void simd_rope_neox(float *x, int n, int E, const float *cs, const float *sn, int half);

/* ops_softmax_block's rows without a finite max m, for both its forms: nan
 * (a NaN among the scores or in *max) or m +inf make everything NaN, m -inf
 * (no allowed key yet) zeros.  Returns true, with ops_softmax_block's
 * return value in *ret, when the row was one of those and is done. */
bool simd_softmax_special(float *s, int n, bool nan, float m, float *max, float *sum, float *ret);

#endif
