/* vec512.h - vecmath.h's exp and erf, sixteen floats at a time in AVX-512
 * registers.  Private to core/; include only where __x86_64__ and GCC or
 * Clang, and call only from functions with target("avx512f") on a CPU that
 * has it (simd_enabled()).
 *
 * Same algorithms, constants and clamps as exp_approx and erf_approx, so the
 * same error bounds (tests/check_attention.c measures the softmax and the
 * activations built on them against double); only the rounding of fused
 * multiply-adds may differ in the last bit, v512_exp at the top of its range
 * (below), and erf, which only GELU uses here: erf_approx's A&S form without
 * its series near 0 (v512_erf_abs), fewer instructions, same bound on GELU. */
#ifndef ATTND_VEC512_H
#define ATTND_VEC512_H

#include "encoder.h"

#include <immintrin.h>

#define V512 __attribute__((target("avx512f"), always_inline)) static inline

V512 __m512 v512_set(float x)
{
    return _mm512_set1_ps(x);
}

/* exp_approx on each lane.  NaN stays NaN: the clamps take x last, and
 * vmaxps/vminps return their second operand when either is NaN.  Rounding to
 * the nearest integer (vrndscaleps) and the scaling by 2^n (vscalefps) are
 * one instruction each where exp_approx spends two and six on them; the
 * results are the same except at the very top, x within 4e-6 of 88.72283,
 * where n is 128: exp_approx's exponent field stops at 2^127 there, half the
 * value, while vscalefps gives it (below FLT_MAX). */
V512 __m512 v512_exp(__m512 x)
{
    x = _mm512_max_ps(v512_set(-87.33654f), x);
    x = _mm512_min_ps(v512_set(88.72283f), x);
    const __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(x, v512_set(1.44269504088896341f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(nf, v512_set(0.693359375f), x);
    r = _mm512_fnmadd_ps(nf, v512_set(-2.12194440e-4f), r);
    const __m512 z = _mm512_mul_ps(r, r);
    __m512 y = v512_set(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, r, v512_set(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, r, v512_set(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, r, v512_set(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, r, v512_set(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, r, v512_set(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, z, _mm512_add_ps(r, v512_set(1.0f)));
    return _mm512_scalef_ps(y, nf);
}

/* A&S 7.1.26 for |x|: 1 - t (a1 + t (a2 + ...)) exp(-x^2), t = 1 / (1 +
 * p |x|), |error| < 1.5e-7 (plus float rounding) for every x; near 0 that
 * is an absolute error only, as 1 - ... cancels. */
V512 __m512 v512_erf_abs(__m512 ax)
{
    /* t = 1 / d: the 14-bit reciprocal and a Newton step, 2^-28 relative,
     * below float's rounding and about 4x the throughput of a division */
    const __m512 d = _mm512_fmadd_ps(v512_set(0.3275911f), ax, v512_set(1.0f));
    __m512 t = _mm512_rcp14_ps(d);
    t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, v512_set(2.0f)));
    __m512 poly = v512_set(1.061405429f);
    poly = _mm512_fmadd_ps(poly, t, v512_set(-1.453152027f));
    poly = _mm512_fmadd_ps(poly, t, v512_set(1.421413741f));
    poly = _mm512_fmadd_ps(poly, t, v512_set(-0.284496736f));
    poly = _mm512_fmadd_ps(poly, t, v512_set(0.254829592f));
    poly = _mm512_mul_ps(poly, t);
    return _mm512_fnmadd_ps(poly, v512_exp(_mm512_mul_ps(ax, _mm512_sub_ps(_mm512_setzero_ps(), ax))),
                            v512_set(1.0f));
}

/* ops_activation_value on each lane. */
V512 __m512 v512_act(__m512 x, enc_activation act)
{
    switch (act) {
    case ENC_ACT_RELU: /* NaN -> 0, as ops_activation_value: vmaxps gives its second operand */
        return _mm512_max_ps(x, _mm512_setzero_ps());
    case ENC_ACT_GELU: {
        /* 0.5 x (1 + erf(x / sqrt 2)) needs erf to an absolute error only
         * (it is multiplied by x), so without erf's series near 0: with
         * u = |x| / sqrt 2, 1 + erf is 1 + erf_abs(u) for x >= 0 and
         * 1 - erf_abs(u) below.  NaN: u is NaN, and so the result. */
        const __m512 half_x = _mm512_mul_ps(v512_set(0.5f), x);
        const __m512 u = _mm512_mul_ps(_mm512_abs_ps(x), v512_set(0.70710678118654752f));
        const __m512 e = v512_erf_abs(u);
        const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mul_ps(half_x, _mm512_mask_sub_ps(_mm512_add_ps(v512_set(1.0f), e), neg,
                                                         v512_set(1.0f), e));
    }
    case ENC_ACT_GELU_TANH: {
        const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
        const __m512 u = _mm512_mul_ps(v512_set(0.79788456080286536f),
                                       _mm512_fmadd_ps(v512_set(0.044715f), x3, x));
        const __m512 d = _mm512_add_ps(v512_set(1.0f),
                                       v512_exp(_mm512_mul_ps(v512_set(-2.0f), u)));
        return _mm512_div_ps(x, d);
    }
    }
    return x;
}

#undef V512

#endif
