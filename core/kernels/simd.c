/* simd.c - the AVX-512 forms of the softmax and the activations and the
 * AVX2 form of the activations (simd.h), the switch every vector path
 * checks, and the scalar special cases both softmax forms share. */
#include "kernels/simd.h"

#include "kernels/vecmath.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static atomic_bool enabled = true;

void simd_set_enabled(bool on)
{
    atomic_store(&enabled, on);
}

bool simd_softmax_special(float *s, int n, bool nan, float m, float *max, float *sum, float *ret)
{
    if (nan || m == INFINITY) { /* overflow: NaN to the output, as ops_softmax_row */
        for (int j = 0; j < n; j++)
            s[j] = NAN;
        *max = *sum = NAN;
        *ret = NAN;
        return true;
    }
    if (m == -INFINITY) { /* no allowed key yet */
        memset(s, 0, (size_t)n * sizeof *s);
        *ret = 1.0f;
        return true;
    }
    return false;
}

#if defined(__x86_64__) && defined(__GNUC__)

#include "kernels/vec256.h"
#include "kernels/vec512.h"

bool simd_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

/* probe()'s answer, asked once into *supported (-1: not yet), and the
 * switch. */
static bool supported_and_enabled(atomic_int *supported, bool (*probe)(void))
{
    int s = atomic_load_explicit(supported, memory_order_relaxed);
    if (s < 0) {
        s = probe();
        atomic_store_explicit(supported, s, memory_order_relaxed);
    }
    return s && atomic_load_explicit(&enabled, memory_order_relaxed);
}

bool simd_enabled(void)
{
    static atomic_int supported = -1;
    return supported_and_enabled(&supported, simd_supported);
}

bool simd_avx2_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool simd_avx2_enabled(void)
{
    static atomic_int supported = -1;
    return supported_and_enabled(&supported, simd_avx2_supported);
}

/* Lanes [0, n) of a 16-lane mask, n in 0..16. */
static inline __mmask16 first_lanes(int n)
{
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

__attribute__((target("avx512f"))) float simd_softmax_block(float *s, int n, float *max, float *sum)
{
    /* The max, and whether a lane holds NaN (compared unordered with itself). */
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    __mmask16 nan = 0;
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = first_lanes(n - j);
        const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, s + j);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        vmax = _mm512_max_ps(v, vmax); /* a NaN v gives vmax: NaN is flagged above */
    }
    float m = _mm512_reduce_max_ps(vmax);
    m = *max > m ? *max : m;
    float alpha;
    if (simd_softmax_special(s, n, nan || *max != *max, m, max, sum, &alpha))
        return alpha;
    alpha = *max == -INFINITY ? 0.0f : exp_approx(*max - m);
    const __m512 vm = _mm512_set1_ps(m), ninf = _mm512_set1_ps(-INFINITY);
    __m512 vsum = _mm512_setzero_ps();
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = first_lanes(n - j);
        const __m512 v = _mm512_maskz_loadu_ps(k, s + j);
        /* masked keys (-inf) give exactly 0 */
        const __mmask16 live = _mm512_cmp_ps_mask(v, ninf, _CMP_NEQ_OQ) & k;
        const __m512 e = _mm512_maskz_mov_ps(live, v512_exp(_mm512_sub_ps(v, vm)));
        _mm512_mask_storeu_ps(s + j, k, e);
        vsum = _mm512_add_ps(vsum, e);
    }
    *sum = *sum * alpha + _mm512_reduce_add_ps(vsum);
    *max = m;
    return alpha;
}

__attribute__((target("avx512f"))) void simd_activation(float *x, size_t n, enc_activation act)
{
    for (size_t j = 0; j < n; j += 16) {
        const __mmask16 k = first_lanes(n - j < 16 ? (int)(n - j) : 16);
        _mm512_mask_storeu_ps(x + j, k, v512_act(_mm512_maskz_loadu_ps(k, x + j), act));
    }
}

__attribute__((target("avx2,fma"))) void simd_activation_avx2(float *x, size_t n,
                                                              enc_activation act)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(x + j, v256_act(_mm256_loadu_ps(x + j), act));
    if (j < n) { /* the last 1..7 floats, through a masked load and store */
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i k = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - j)), lane);
        _mm256_maskstore_ps(x + j, k, v256_act(_mm256_maskload_ps(x + j, k), act));
    }
}

__attribute__((target("avx512f"))) void simd_rope_neox(float *x, int n, int E, const float *cs,
                                                       const float *sn, int half)
{
    /* each block of 16 pairs' cosines and sines once, for all n vectors */
    for (int j = 0; j < half; j += 16) {
        const __mmask16 k = first_lanes(half - j);
        const __m512 c = _mm512_maskz_loadu_ps(k, cs + j), s = _mm512_maskz_loadu_ps(k, sn + j);
        for (int v = 0; v < n; v++) {
            float *lo = x + (size_t)v * (size_t)E + j, *hi = lo + half;
            const __m512 a = _mm512_maskz_loadu_ps(k, lo), b = _mm512_maskz_loadu_ps(k, hi);
            _mm512_mask_storeu_ps(lo, k, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
            _mm512_mask_storeu_ps(hi, k, _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
        }
    }
}

#else /* no AVX-512 code on this architecture or compiler */

bool simd_supported(void)
{
    return false;
}

bool simd_enabled(void)
{
    return false;
}

float simd_softmax_block(float *s, int n, float *max, float *sum)
{
    (void)s, (void)n, (void)max, (void)sum;
    return NAN;
}

bool simd_avx2_supported(void)
{
    return false;
}

bool simd_avx2_enabled(void)
{
    return false;
}

void simd_activation(float *x, size_t n, enc_activation act)
{
    (void)x, (void)n, (void)act;
}

void simd_activation_avx2(float *x, size_t n, enc_activation act)
{
    (void)x, (void)n, (void)act;
}

void simd_rope_neox(float *x, int n, int E, const float *cs, const float *sn, int half)
{
    (void)x, (void)n, (void)E, (void)cs, (void)sn, (void)half;
}

#endif
