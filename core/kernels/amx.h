/* amx.h - Intel AMX's tiles, for the int8 GEMM (tdpbusd, gemm_int8.c)
 * and the bfloat16 one (tdpbf16ps, gemm.c).
 *
 *     if (amx_usable(AMX_INT8)) {
 *         amx_configure();   // this thread's 8 tiles: 16 rows of 64 bytes
 *         ... _tile_loadd, _tile_dpbusd, _tile_stored ...
 *         amx_release();
 *     }
 *
 * A tile's state is the thread's, so each call that runs tiles shapes
 * them first and releases them after (the kernel then saves no tile state
 * when the thread is switched out). */
#ifndef ATTND_KERNELS_AMX_H
#define ATTND_KERNELS_AMX_H

#include <stdbool.h>

typedef enum { AMX_INT8, AMX_BF16 } amx_kind;

/* Whether this process may run AMX's kind: the CPU has AMX-TILE and the
 * kind (CPUID 7.0 EDX bits 24; 25 int8, 22 bf16), the OS saves the tiles
 * (XCR0 bits 17, 18) and grants the process their state (Linux 5.16's
 * ARCH_REQ_XCOMP_PERM for XTILEDATA, asked once).  False off x86-64, and
 * under valgrind (which shows no AMX). */
bool amx_usable(amx_kind kind);

/* Shapes this thread's tiles 0-7 as 16 rows of 64 bytes each (palette 1);
 * amx_release() lets them go.  Only where amx_usable(). */
void amx_configure(void);
void amx_release(void);

#endif
