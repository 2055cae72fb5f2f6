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

/* A thread's scratch, bytes: 192 rows of 784 floats (gemm.c's MC rows of
 * a KC-deep block, padded), 588 KiB. */
#define GEMM_SCRATCH_BYTES ((size_t)192 * 784 * sizeof(float))

#endif
