/* panel.h - what the float32/bfloat16 GEMM (gemm.c) and the int8 one
 * (gemm_int8.c) share, below both: the width of a packed weight's panel
 * and the size of the scratch each thread hands the kernels
 * (gemm_scratch_bytes).  gemm.c sizes its blocks to fit the scratch;
 * gemm_int8.c its chunks of quantised rows. */
#ifndef ATTND_KERNELS_PANEL_H
#define ATTND_KERNELS_PANEL_H

#include <stddef.h>

/* Output columns per packed panel: two AVX-512 vectors. */
#define GEMM_NR 32

/* Rows of activations gemm.c prepares at once (bfloat16's rounding, a
 * copy where the stride crowds L1): its MC. */
#define GEMM_MC 192

/* A thread's scratch, bytes: GEMM_MC rows of 784 floats (a KC-deep block,
 * padded), 588 KiB. */
#define GEMM_SCRATCH_BYTES ((size_t)GEMM_MC * 784 * sizeof(float))

#endif
