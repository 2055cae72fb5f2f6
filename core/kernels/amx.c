/* amx.c - Intel AMX's tiles: whether they run here, and their shape
 * (amx.h). */
#include "kernels/amx.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The CPU's AMX features (CPUID 7.0 EDX: bit 22 AMX-BF16, 24 AMX-TILE, 25
 * AMX-INT8) once the OS has granted the tiles, else 0. */
static unsigned granted_features(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1))
        return 0;
    const unsigned features = d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c >> 27 & 1)) /* OSXSAVE: xgetbv */
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if ((lo >> 17 & 3) != 3 || syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA))
        return 0;
    return features;
}

bool amx_usable(amx_kind kind)
{
    static atomic_int features = -1; /* granted_features(), asked once */
    int f = atomic_load_explicit(&features, memory_order_relaxed);
    if (f < 0) {
        f = (int)(granted_features() & (1u << 22 | 1u << 24 | 1u << 25));
        atomic_store_explicit(&features, f, memory_order_relaxed);
    }
    return f >> (kind == AMX_INT8 ? 25 : 22) & 1;
}

/* The 64 bytes ldtilecfg reads. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

__attribute__((target("amx-tile"))) void amx_configure(void)
{
    tile_config c = {.palette = 1};
    for (int i = 0; i < 8; i++) {
        c.colsb[i] = 64;
        c.rows[i] = 16;
    }
    /* not _tile_loadconfig: GCC 12's names 8 bytes of c as its operand, so
     * the stores to the rest may go */
    __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

__attribute__((target("amx-tile"))) void amx_release(void)
{
    _tile_release();
}

#else /* no AMX off x86-64 */

bool amx_usable(amx_kind kind)
{
    (void)kind;
    return false;
}

void amx_configure(void) {}

void amx_release(void) {}

#endif
