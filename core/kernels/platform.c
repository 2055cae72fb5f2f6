/* platform.c - what the forward runs on (enc_platform_get): the kernels
 * (simd.h, gemm.h), the CPU's vector extensions, OpenBLAS's core. */
#include "encoder.h"
#include "kernels/gemm.h"
#include "kernels/gemm_int8.h"
#include "kernels/simd.h"

#include <cblas.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) && defined(__GNUC__)

static const char *cpu_simd(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? "avx512f"
           : __builtin_cpu_supports("avx2")  ? "avx2"
           : __builtin_cpu_supports("avx")   ? "avx"
                                             : "sse2";
}

#else

static const char *cpu_simd(void)
{
    return "none";
}

#endif

/* OpenBLAS's x86 cores with AVX2 kernels (its driver/others/dynamic.c). */
static bool avx2_core(const char *core)
{
    static const char *const cores[] = {"Haswell",        "Zen",      "SkylakeX", "Cooperlake",
                                        "SapphireRapids", "Excavator"};
    for (size_t i = 0; i < sizeof cores / sizeof *cores; i++)
        if (strcasecmp(core, cores[i]) == 0)
            return true;
    return false;
}

void enc_platform_get(enc_platform *p)
{
    const char *core = openblas_get_corename();
    p->kernels = simd_enabled() ? "avx512" : "openblas";
    p->cpu_simd = cpu_simd();
    p->blas_core = core ? core : "unknown";
    p->blas_core_generic =
        (strcmp(p->cpu_simd, "avx2") == 0 || strcmp(p->cpu_simd, "avx512f") == 0) &&
        !avx2_core(p->blas_core);
    p->bf16_kernel = gemm_bf16_kernel();
    p->int8_kernel = gemm_int8_kernel();
}
