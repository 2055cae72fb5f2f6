/* amx.h - Intel AMX's tiles, for the int8 GEMM (tdpbusd, gemm_int8.c)
 * and the bfloat16 one (tdpbf16ps, gemm.c).
 *
 *     if (amx_usable(AMX_INT8)) {
 *         amx_configure();   // this thread's 8 tiles: 16 rows of 64 bytes
 *         AMX_PANEL_STEPS(_tile_dpbusd, ...);   // 32 rows x 32 columns
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

/* The step both GEMMs run on the configured tiles: tiles 0-3 zeroed (or,
 * where init is not NULL, each row of tiles 0 and 2 the 16 int32 or float
 * at init and of tiles 1 and 3 the 16 after them), then
 * steps times DP (_tile_dpbusd or _tile_dpbf16ps) of 16 rows of a (tile 4;
 * and the next 16, tile 5, when two; lda bytes apart) against a panel's
 * two halves of 16 columns (tiles 6, 7: 64 bytes apart, rows ldb bytes
 * apart), a and b moving on astep and bstep bytes a step, each(s) after
 * step s's products (AMX_EACH_NONE: nothing; other work there runs while
 * the tiles compute); then the sums into out (tiles 0, 1 side by side, 2,
 * 3 under them; rows ldo bytes apart).  In a function compiled for AMX. */
#define AMX_EACH_NONE(s) ((void)(s))
#define AMX_PANEL_STEPS(DP, init, two, a, lda, astep, b, ldb, bstep, steps, each, out, ldo)        \
    do {                                                                                           \
        const char *a_ = (const char *)(a), *b_ = (const char *)(b);                               \
        char *o_ = (char *)(out);                                                                  \
        const char *i_ = (const char *)(init);                                                     \
        if (i_) { /* stride 0: the same 64 bytes in every row */                                   \
            _tile_loadd(0, i_, 0);                                                                 \
            _tile_loadd(1, i_ + 64, 0);                                                            \
            _tile_loadd(2, i_, 0);                                                                 \
            _tile_loadd(3, i_ + 64, 0);                                                            \
        } else {                                                                                   \
            _tile_zero(0);                                                                         \
            _tile_zero(1);                                                                         \
            _tile_zero(2);                                                                         \
            _tile_zero(3);                                                                         \
        }                                                                                          \
        for (int s_ = 0; s_ < (steps); s_++, a_ += (astep), b_ += (bstep)) {                       \
            _tile_loadd(4, a_, (long)(lda));                                                       \
            _tile_loadd(6, b_, (long)(ldb));                                                       \
            _tile_loadd(7, b_ + 64, (long)(ldb));                                                  \
            DP(0, 4, 6);                                                                           \
            DP(1, 4, 7);                                                                           \
            if (two) {                                                                             \
                _tile_loadd(5, a_ + 16 * (size_t)(lda), (long)(lda));                              \
                DP(2, 5, 6);                                                                       \
                DP(3, 5, 7);                                                                       \
            }                                                                                      \
            each(s_);                                                                              \
        }                                                                                          \
        _tile_stored(0, o_, (long)(ldo));                                                          \
        _tile_stored(1, o_ + 64, (long)(ldo));                                                     \
        if (two) {                                                                                 \
            _tile_stored(2, o_ + 16 * (size_t)(ldo), (long)(ldo));                                 \
            _tile_stored(3, o_ + 16 * (size_t)(ldo) + 64, (long)(ldo));                            \
        }                                                                                          \
    } while (0)

#endif
