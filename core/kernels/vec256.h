/* vec256.h - vecmath.h's exp and erf, eight floats at a time in AVX2
 * registers with FMA.  Private to core/; include only where __x86_64__ and
 * GCC or Clang, and call only from functions with target("avx2,fma") on a
 * CPU that has both (simd_avx2_enabled()).
 *
 * vec512.h's algorithms, constants and clamps in AVX2's instructions: the
 * rounding to an integer is vroundps, the scaling by 2^n builds the
 * exponent field as exp_approx does (kept in 1..254), and t = 1 / d is a
 * division (AVX2's reciprocal estimate has 12 bits), and erf keeps
 * erf_approx's series near 0 (v512_erf_abs leaves it out).  Same error bounds:
 * tests/check_attention.c measures v256_erf_abs and the activations against
 * double. */
#ifndef ATTND_VEC256_H
#define ATTND_VEC256_H

#include "encoder.h"

#include <immintrin.h>

#define V256 __attribute__((target("avx2,fma"), always_inline)) static inline

V256 __m256 v256_set(float x)
{
    return _mm256_set1_ps(x);
}

/* exp_approx on each lane; NaN stays NaN (the clamps take x last, and the
 * exponent field of a NaN's n is clamped like any other). */
V256 __m256 v256_exp(__m256 x)
{
    x = _mm256_max_ps(v256_set(-87.33654f), x);
    x = _mm256_min_ps(v256_set(88.72283f), x);
    const __m256 nf = _mm256_round_ps(_mm256_mul_ps(x, v256_set(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(nf, v256_set(0.693359375f), x);
    r = _mm256_fnmadd_ps(nf, v256_set(-2.12194440e-4f), r);
    const __m256 z = _mm256_mul_ps(r, r);
    __m256 y = v256_set(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, v256_set(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, v256_set(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, v256_set(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, v256_set(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, v256_set(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, z, _mm256_add_ps(r, v256_set(1.0f)));
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(nf), _mm256_set1_epi32(127));
    e = _mm256_min_epi32(_mm256_max_epi32(e, _mm256_set1_epi32(1)), _mm256_set1_epi32(254));
    return _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
}

/* erf_approx on |x| (ax >= 0): A&S 7.1.26, and its Taylor series below
 * 0.35, where the A&S form cancels; |error| < 4e-7 for every x. */
V256 __m256 v256_erf_abs(__m256 ax)
{
    const __m256 d = _mm256_fmadd_ps(v256_set(0.3275911f), ax, v256_set(1.0f));
    const __m256 t = _mm256_div_ps(v256_set(1.0f), d);
    __m256 poly = v256_set(1.061405429f);
    poly = _mm256_fmadd_ps(poly, t, v256_set(-1.453152027f));
    poly = _mm256_fmadd_ps(poly, t, v256_set(1.421413741f));
    poly = _mm256_fmadd_ps(poly, t, v256_set(-0.284496736f));
    poly = _mm256_fmadd_ps(poly, t, v256_set(0.254829592f));
    poly = _mm256_mul_ps(poly, t);
    const __m256 x2 = _mm256_mul_ps(ax, ax);
    const __m256 far =
        _mm256_fnmadd_ps(poly, v256_exp(_mm256_sub_ps(_mm256_setzero_ps(), x2)), v256_set(1.0f));
    __m256 near = v256_set(-1.0f / 1320.0f);
    near = _mm256_fmadd_ps(near, x2, v256_set(1.0f / 216.0f));
    near = _mm256_fmadd_ps(near, x2, v256_set(-1.0f / 42.0f));
    near = _mm256_fmadd_ps(near, x2, v256_set(1.0f / 10.0f));
    near = _mm256_fmadd_ps(near, x2, v256_set(-1.0f / 3.0f));
    near = _mm256_mul_ps(_mm256_fmadd_ps(near, x2, v256_set(1.0f)),
                         _mm256_mul_ps(v256_set(1.12837916709551257f), ax));
    return _mm256_blendv_ps(far, near, _mm256_cmp_ps(ax, v256_set(0.35f), _CMP_LT_OQ));
}

/* ops_activation_value on each lane, as v512_act. */
V256 __m256 v256_act(__m256 x, enc_activation act)
{
    switch (act) {
    case ENC_ACT_RELU: /* NaN -> 0: vmaxps gives its second operand */
        return _mm256_max_ps(x, _mm256_setzero_ps());
    case ENC_ACT_GELU: {
        /* 0.5 x (1 +- erf_abs(|x| / sqrt 2)), minus for x < 0 */
        const __m256 half_x = _mm256_mul_ps(v256_set(0.5f), x);
        const __m256 ax = _mm256_andnot_ps(v256_set(-0.0f), x);
        const __m256 e = v256_erf_abs(_mm256_mul_ps(ax, v256_set(0.70710678118654752f)));
        const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
        const __m256 one = v256_set(1.0f);
        return _mm256_mul_ps(half_x,
                             _mm256_blendv_ps(_mm256_add_ps(one, e), _mm256_sub_ps(one, e), neg));
    }
    case ENC_ACT_GELU_TANH: {
        const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        const __m256 u = _mm256_mul_ps(v256_set(0.79788456080286536f),
                                       _mm256_fmadd_ps(v256_set(0.044715f), x3, x));
        const __m256 d = _mm256_add_ps(v256_set(1.0f), v256_exp(_mm256_mul_ps(v256_set(-2.0f), u)));
        return _mm256_div_ps(x, d);
    }
    }
    return x;
}

#undef V256

#endif
