/* vecmath.h - exp and erf for the forward's elementwise loops, written so the
 * compiler can vectorize them (no calls, no branches).  Private to core/.
 *
 * exp_approx: Cephes' expf (range reduction by ln 2, degree-6 polynomial),
 *   within 2 ulp of expf for x in [-87.3, 88.7]; smaller x give 2^-126-ish,
 *   callers that need an exact 0 (masked keys) select it themselves; NaN
 *   gives NaN.
 * erf_approx: the Taylor series below 0.35, Abramowitz & Stegun 7.1.26 with
 *   exp_approx above; |error| < 4e-7 for every x (float rounding included;
 *   tests/check_attention.c measures it against double erf), so
 *   gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) is within 2e-7 |x| of exact. */
#ifndef ATTND_VECMATH_H
#define ATTND_VECMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float exp_approx(float x)
{
    x = x < -87.33654f ? -87.33654f : x;
    x = x > 88.72283f ? 88.72283f : x;
    /* x = n ln2 + r, |r| <= ln2 / 2, with ln2 split in two for exactness;
     * adding and taking away 1.5 * 2^23 rounds to the nearest integer. */
    const float fn = x * 1.44269504088896341f;
    const float nf = (fn + 12582912.0f) - 12582912.0f;
    float r = x - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    const float z = r * r;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    /* times 2^n: the float with exponent field n + 127, kept in 1..254.  A
     * NaN x converts as 0 (converting NaN to int is undefined) and stays NaN
     * through y. */
    int32_t e = (int32_t)(nf == nf ? nf : 0.0f) + 127;
    e = e < 1 ? 1 : e;
    e = e > 254 ? 254 : e;
    const uint32_t bits = (uint32_t)e << 23;
    float p;
    memcpy(&p, &bits, sizeof p);
    return y * p;
}

static inline float erf_approx(float x)
{
    const float ax = fabsf(x);
    const float t = 1.0f / (1.0f + 0.3275911f * ax);
    float poly = 1.061405429f;
    poly = poly * t - 1.453152027f;
    poly = poly * t + 1.421413741f;
    poly = poly * t - 0.284496736f;
    poly = poly * t + 0.254829592f;
    poly = poly * t;
    const float far = 1.0f - poly * exp_approx(-ax * ax);
    /* Near 0 the form above cancels; the Taylor series is exact there. */
    const float x2 = x * x;
    float near = -1.0f / 1320.0f;
    near = near * x2 + 1.0f / 216.0f;
    near = near * x2 - 1.0f / 42.0f;
    near = near * x2 + 1.0f / 10.0f;
    near = near * x2 - 1.0f / 3.0f;
    near = (near * x2 + 1.0f) * 1.12837916709551257f * ax;
    return copysignf(ax < 0.35f ? near : far, x);
}

#endif
