/* ops.c - the forward pass's elementwise and matrix ops, one function each. */
#include "kernels/ops.h"

#include "kernels/simd.h"
#include "kernels/vecmath.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* The elementwise loops are compiled for AVX-512, AVX2 and plain x86-64; the
 * loader picks the best the CPU has (GCC function multi-versioning). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* Lanes of the partial sums and maxima below: enough for one AVX-512
 * register, so a strict-IEEE reduction still vectorizes. */
#define LANES 16
/* Independent double accumulators of a vectorized sum. */
#define DLANES 16

void ops_linear_cols(float *out, int ldc, const float *in, int lda, const float *w, const float *b,
                     int M, int K, int n0, int n1, const enc_activation *act)
{
    if (n1 <= n0 || M <= 0)
        return;
    const int cols = n1 - n0;
    /* out[:, n0:n1] = in . w[n0:n1]^T: row-major activations, PyTorch-layout
     * (N, K) weights, so a column slice of out is a row slice of w. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, cols, K, 1.0f, in, lda,
                w + (size_t)n0 * K, K, 0.0f, out + n0, ldc);
    ops_bias_act_cols(out, ldc, b, M, n0, n1, act);
}

void ops_bias_act_cols(float *out, int ldc, const float *b, int M, int n0, int n1,
                       const enc_activation *act)
{
    const int cols = n1 - n0;
    for (int i = 0; (b || act) && i < M; i++) {
        float *row = out + (size_t)i * ldc + n0;
        if (b)
            for (int j = 0; j < cols; j++)
                row[j] += b[n0 + j];
        if (act)
            ops_activation(row, (size_t)cols, *act);
    }
}

VECTOR_CLONES
void ops_layernorm(float *out, const float *in, const float *w, const float *b, int M, int D,
                   float eps)
{
    for (int i = 0; i < M; i++) {
        const float *x = in + (size_t)i * D;
        float *y = out + (size_t)i * D;
        /* Double statistics: |x| < 3.5e38 squared is < 1.3e77, far from
         * double's range, so no finite float input overflows here.  Sums in
         * DLANES independent lanes, which vectorize. */
        double lane[DLANES] = {0};
        int j = 0;
        for (; j + DLANES <= D; j += DLANES)
            for (int k = 0; k < DLANES; k++)
                lane[k] += x[j + k];
        double mean = 0.0;
        for (int k = 0; k < DLANES; k++)
            mean += lane[k];
        for (; j < D; j++)
            mean += x[j];
        mean /= D;
        for (int k = 0; k < DLANES; k++)
            lane[k] = 0.0;
        for (j = 0; j + DLANES <= D; j += DLANES)
            for (int k = 0; k < DLANES; k++) {
                const double c = x[j + k] - mean;
                lane[k] += c * c;
            }
        double var = 0.0;
        for (int k = 0; k < DLANES; k++)
            var += lane[k];
        for (; j < D; j++) {
            const double c = x[j] - mean;
            var += c * c;
        }
        var /= D; /* biased, as PyTorch's LayerNorm */
        const double rstd = 1.0 / sqrt(var + (double)eps);
        for (j = 0; j < D; j++) {
            const float v = (float)((x[j] - mean) * rstd) * w[j];
            y[j] = b ? v + b[j] : v;
        }
    }
}

void ops_rmsnorm(float *out, const float *in, const float *w, int M, int D, float eps)
{
    for (int i = 0; i < M; i++) {
        const float *x = in + (size_t)i * D;
        float *y = out + (size_t)i * D;
        double lane[DLANES] = {0}; /* double: see ops_layernorm */
        int j = 0;
        for (; j + DLANES <= D; j += DLANES)
            for (int k = 0; k < DLANES; k++)
                lane[k] += (double)x[j + k] * x[j + k];
        double ms = 0.0;
        for (int k = 0; k < DLANES; k++)
            ms += lane[k];
        for (; j < D; j++)
            ms += (double)x[j] * x[j];
        const double rstd = 1.0 / sqrt(ms / D + (double)eps);
        for (j = 0; j < D; j++)
            y[j] = (float)(x[j] * rstd) * w[j];
    }
}

void ops_norm(enc_norm kind, float *out, const float *in, const float *w, const float *b, int M,
              int D, float eps)
{
    if (kind == ENC_NORM_RMS)
        ops_rmsnorm(out, in, w, M, D, eps);
    else
        ops_layernorm(out, in, w, b, M, D, eps);
}

VECTOR_CLONES
static bool all_finite(const float *x, size_t n)
{
    /* NaN and infinities have every exponent bit set: one bit test per
     * float and no early exit, so the loop vectorizes */
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        bad |= (u & 0x7F800000u) == 0x7F800000u;
    }
    return !bad;
}

size_t enc_floats_nonfinite(const float *x, size_t n)
{
    if (all_finite(x, n))
        return n;
    size_t k = 0;
    while (k < n && isfinite(x[k]))
        k++;
    return k;
}

void ops_residual(float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

float ops_activation_value(float x, enc_activation act)
{
    switch (act) {
    case ENC_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case ENC_ACT_GELU:
        /* x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) */
        return 0.5f * x * (1.0f + erf_approx(x * 0.70710678118654752f));
    case ENC_ACT_GELU_TANH: {
        /* 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)),
         * u = sqrt(2/pi) (x + 0.044715 x^3) */
        const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return x / (1.0f + exp_approx(-2.0f * u));
    }
    }
    return x;
}

VECTOR_CLONES
void ops_activation(float *x, size_t n, enc_activation act)
{
    if (simd_enabled()) {
        simd_activation(x, n, act);
        return;
    }
    if (simd_avx2_enabled()) {
        simd_activation_avx2(x, n, act);
        return;
    }
    switch (act) {
    case ENC_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case ENC_ACT_GELU:
        for (size_t i = 0; i < n; i++)
            x[i] = 0.5f * x[i] * (1.0f + erf_approx(x[i] * 0.70710678118654752f));
        break;
    case ENC_ACT_GELU_TANH:
        for (size_t i = 0; i < n; i++) {
            const float u = 0.79788456080286536f * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
            x[i] = x[i] / (1.0f + exp_approx(-2.0f * u));
        }
        break;
    }
}

VECTOR_CLONES
static void silu_forward(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] / (1.0f + exp_approx(-x[i]));
}

/* u (n) *= g (n), apart. */
VECTOR_CLONES
static void gate_forward(float *restrict u, const float *restrict g, size_t n)
{
    for (size_t k = 0; k < n; k++)
        u[k] *= g[k];
}

void ops_glu(float *h, int ld, int rows, int F, enc_ffn ffn, enc_activation act)
{
    for (int r = 0; r < rows; r++) {
        float *x = h + (size_t)r * (size_t)ld;
        if (ffn == ENC_FFN_SWIGLU)
            silu_forward(x, (size_t)F);
        else
            ops_activation(x, (size_t)F, act);
        gate_forward(x, x + F, (size_t)F);
    }
}

VECTOR_CLONES
void ops_rope(float *x, int n, int E, const float *restrict cs, const float *restrict sn, int half,
              enc_rope_style style)
{
    if (style == ENC_ROPE_NEOX && simd_enabled()) {
        simd_rope_neox(x, n, E, cs, sn, half);
        return;
    }
    for (int v = 0; v < n; v++, x += E) {
        if (style == ENC_ROPE_NEOX) { /* pairs (k, k + half): two runs apart */
            float *restrict lo = x, *restrict hi = x + half;
            for (int k = 0; k < half; k++) {
                const float a = lo[k], b = hi[k];
                lo[k] = a * cs[k] - b * sn[k];
                hi[k] = b * cs[k] + a * sn[k];
            }
        } else { /* pairs (2k, 2k + 1) */
            for (int k = 0; k < half; k++) {
                const float a = x[2 * k], b = x[2 * k + 1];
                x[2 * k] = a * cs[k] - b * sn[k];
                x[2 * k + 1] = b * cs[k] + a * sn[k];
            }
        }
    }
}

VECTOR_CLONES
void ops_softmax_row(float *s, int n, float *copy)
{
    /* One block holding the whole row: s becomes exp(s - max) and sum their
     * total (0 when no key is allowed, s then all zeros; NaN on overflow, s
     * then all NaN: both stay as they are, times 1). */
    float max = -INFINITY, sum = 0.0f;
    ops_softmax_block(s, n, &max, &sum);
    const float inv = sum > 0.0f ? 1.0f / sum : 1.0f;
    if (copy)
        for (int j = 0; j < n; j++)
            copy[j] = s[j] *= inv;
    else
        for (int j = 0; j < n; j++)
            s[j] *= inv;
}

VECTOR_CLONES
float ops_softmax_block(float *s, int n, float *max, float *sum)
{
    if (simd_enabled())
        return simd_softmax_block(s, n, max, sum);
    /* The max, and the largest magnitude's bits: a NaN's are above +inf's. */
    float lane_max[LANES];
    uint32_t lane_abs[LANES];
    for (int k = 0; k < LANES; k++) {
        lane_max[k] = -INFINITY;
        lane_abs[k] = 0;
    }
    int j = 0;
    for (; j + LANES <= n; j += LANES) {
        uint32_t bits[LANES];
        memcpy(bits, s + j, sizeof bits);
        for (int k = 0; k < LANES; k++) {
            lane_max[k] = s[j + k] > lane_max[k] ? s[j + k] : lane_max[k];
            const uint32_t a = bits[k] & 0x7FFFFFFFu;
            lane_abs[k] = a > lane_abs[k] ? a : lane_abs[k];
        }
    }
    float m = *max;
    bool nan = m != m;
    for (int k = 0; k < LANES; k++) {
        m = lane_max[k] > m ? lane_max[k] : m;
        nan |= lane_abs[k] > 0x7F800000u;
    }
    for (; j < n; j++) {
        m = s[j] > m ? s[j] : m;
        nan |= s[j] != s[j];
    }
    float alpha;
    if (simd_softmax_special(s, n, nan, m, max, sum, &alpha))
        return alpha;
    alpha = *max == -INFINITY ? 0.0f : exp_approx(*max - m);
    float lane_sum[LANES] = {0};
    for (j = 0; j < n; j++)
        s[j] = s[j] == -INFINITY ? 0.0f : exp_approx(s[j] - m);
    j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++)
            lane_sum[k] += s[j + k];
    float total = 0.0f;
    for (int k = 0; k < LANES; k++)
        total += lane_sum[k];
    for (; j < n; j++)
        total += s[j];
    *sum = *sum * alpha + total;
    *max = m;
    return alpha;
}
