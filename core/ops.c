/* ops.c - the forward pass's elementwise and matrix ops, one function each. */
#include "internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void linear_forward(float *out, const float *in, const float *w, const float *b, int M, int K,
                    int N)
{
    /* out = in . w^T: row-major activations, PyTorch-layout (N, K) weights. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, in, K, w, K, 0.0f, out,
                N);
    if (b) {
        for (int i = 0; i < M; i++) {
            float *row = out + (size_t)i * N;
            for (int j = 0; j < N; j++)
                row[j] += b[j];
        }
    }
}

void layernorm_forward(float *out, const float *in, const float *w, const float *b, int M, int D,
                       float eps)
{
    for (int i = 0; i < M; i++) {
        const float *x = in + (size_t)i * D;
        float *y = out + (size_t)i * D;
        /* Double statistics: |x| < 3.5e38 squared is < 1.3e77, far from
         * double's range, so no finite float input overflows here. */
        double mean = 0.0;
        for (int j = 0; j < D; j++)
            mean += x[j];
        mean /= D;
        double var = 0.0;
        for (int j = 0; j < D; j++) {
            double c = x[j] - mean;
            var += c * c;
        }
        var /= D; /* biased, as PyTorch's LayerNorm */
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int j = 0; j < D; j++) {
            float v = (float)((x[j] - mean) * rstd) * w[j];
            y[j] = b ? v + b[j] : v;
        }
    }
}

void residual_forward(float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

float activation_value(float x, enc_activation act)
{
    switch (act) {
    case ENC_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case ENC_ACT_GELU:
        /* x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) */
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case ENC_ACT_GELU_TANH: {
        /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + tanhf(inner));
    }
    }
    return x;
}

void activation_forward(float *x, size_t n, enc_activation act)
{
    switch (act) {
    case ENC_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case ENC_ACT_GELU:
    case ENC_ACT_GELU_TANH:
        for (size_t i = 0; i < n; i++)
            x[i] = activation_value(x[i], act);
        break;
    }
}

void softmax_row(float *s, int n)
{
    float max = -INFINITY;
    bool nan = false;
    for (int j = 0; j < n; j++) {
        if (s[j] > max)
            max = s[j];
        nan |= isnan(s[j]);
    }
    if (nan) {
        /* Overflowed scores: let NaN reach the output, where enc_forward's
         * finiteness check reports it, rather than hide it as zeros. */
        for (int j = 0; j < n; j++)
            s[j] = NAN;
        return;
    }
    if (max == -INFINITY) {
        /* No allowed key: zero weights, so a zero attention output. */
        memset(s, 0, (size_t)n * sizeof *s);
        return;
    }
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        float e = s[j] == -INFINITY ? 0.0f : expf(s[j] - max);
        s[j] = e;
        sum += e;
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < n; j++)
        s[j] *= inv;
}
