/* gemm.c - Linear layers on weights packed once (see gemm.h).
 *
 * The kernel keeps a GEMM_MR x GEMM_NR tile of the output in 24 AVX-512
 * registers and runs down k: per step it loads one packed weight row (two
 * vectors) and broadcasts MR activations.  Blocking, sized for a 32-48 KiB
 * L1 and a 1-2 MiB L2 per core:
 *   - k in blocks of KC, so the activation block (MC x KC) stays in L2 and a
 *     panel's slice (KC x NR, 96 KiB) streams through L1/L2 once per block;
 *   - rows in chunks of MC; when K is a multiple of 512 floats, each chunk
 *     is copied to the thread's scratch as MR-row strips, k-major, because
 *     rows K floats apart would fall in the same few L1 sets (all of them in
 *     one set when K is a multiple of 1024); other K read rows in place.
 * Partial tiles: fewer rows by an instance of the kernel per row count,
 * fewer columns by masked loads and stores. */
#include "gemm.h"

#include "internal.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_MR 12
#define KC      768
#define MC      192

struct gemm_packed {
    float *data; /* (P, K, NR): panel p, row k, column j = w[p*NR + j][k] */
    int N, K, P;
};

static atomic_bool enabled = true;

void gemm_set_enabled(bool on)
{
    atomic_store(&enabled, on);
}

bool gemm_enabled(void)
{
    return atomic_load(&enabled);
}

void gemm_packed_free(gemm_packed *pw)
{
    if (!pw)
        return;
    free(pw->data);
    free(pw);
}

size_t gemm_packed_bytes(const gemm_packed *pw)
{
    return pw ? sizeof *pw + (size_t)pw->P * (size_t)pw->K * GEMM_NR * sizeof(float) : 0;
}

int gemm_panels(const gemm_packed *pw)
{
    return pw ? pw->P : 0;
}

size_t gemm_scratch_bytes(void)
{
    return (size_t)MC * KC * sizeof(float);
}

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

bool gemm_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

gemm_packed *gemm_pack(const float *w, int N, int K)
{
    if (!gemm_supported() || N < 1 || K < 1)
        return NULL;
    gemm_packed *pw = calloc(1, sizeof *pw);
    if (!pw)
        return NULL;
    pw->N = N;
    pw->K = K;
    pw->P = (N + GEMM_NR - 1) / GEMM_NR;
    const size_t bytes = (size_t)pw->P * (size_t)K * GEMM_NR * sizeof(float);
    if (!(pw->data = aligned_alloc(64, (bytes + 63) & ~(size_t)63))) {
        free(pw);
        return NULL;
    }
    for (int p = 0; p < pw->P; p++) {
        float *dst = pw->data + (size_t)p * K * GEMM_NR;
        for (int k = 0; k < K; k++)
            for (int j = 0; j < GEMM_NR; j++) {
                const int n = p * GEMM_NR + j;
                dst[(size_t)k * GEMM_NR + j] = n < N ? w[(size_t)n * K + k] : 0.0f;
            }
    }
    return pw;
}

/* What the kernel does with the tile it has summed. */
enum { ACCUMULATE = 1, ADD_BIAS = 2 };

/* c (mr, ldc), columns masked by m0 | m1 (=, or += with ACCUMULATE)
 *   a (mr, kc) . b (kc, NR) [+ bias (NR) with ADD_BIAS].
 * a's element (r, k) is a[r * rs + k * ks]: rs = 1, ks = MR for packed
 * strips, rs = K, ks = 1 for the activations in place; b is a panel's kc
 * rows, 64-byte aligned. */
__attribute__((target("avx512f"), always_inline)) static inline void
kernel(int mr, const float *a, size_t rs, size_t ks, const float *b, int kc, float *c, int ldc,
       unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    __m512 acc[GEMM_MR][2];
    for (int r = 0; r < GEMM_MR; r++)
        if (r < mr)
            acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++, a += ks, b += GEMM_NR) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        for (int r = 0; r < GEMM_MR; r++)
            if (r < mr) {
                const __m512 ar = _mm512_set1_ps(a[(size_t)r * rs]);
                acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
            }
    }
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (mode & ADD_BIAS) {
        bias0 = _mm512_maskz_loadu_ps(m0, bias);
        bias1 = _mm512_maskz_loadu_ps(m1, bias + 16);
    }
    for (int r = 0; r < GEMM_MR; r++)
        if (r < mr) {
            float *cr = c + (size_t)r * ldc;
            __m512 v0 = acc[r][0], v1 = acc[r][1];
            if (mode & ACCUMULATE) {
                v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), v0);
                v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), v1);
            }
            if (mode & ADD_BIAS) {
                v0 = _mm512_add_ps(v0, bias0);
                v1 = _mm512_add_ps(v1, bias1);
            }
            _mm512_mask_storeu_ps(cr, m0, v0);
            _mm512_mask_storeu_ps(cr + 16, m1, v1);
        }
}

/* The kernel for 1..MR rows, an instance per row count, on packed strips
 * (lda 0) or in place (lda = the activations' row stride). */
__attribute__((target("avx512f"))) static void
kernel_rows(int mr, const float *a, int lda, const float *b, int kc, float *c, int ldc,
            unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    /* clang-format off */
#define ROWS(n)                                                                                    \
    case n:                                                                                        \
        if (lda)                                                                                   \
            kernel(n, a, (size_t)lda, 1, b, kc, c, ldc, mode, bias, m0, m1);                       \
        else                                                                                       \
            kernel(n, a, 1, GEMM_MR, b, kc, c, ldc, mode, bias, m0, m1);                           \
        break;
    switch (mr) {
    ROWS(1) ROWS(2) ROWS(3) ROWS(4) ROWS(5) ROWS(6)
    ROWS(7) ROWS(8) ROWS(9) ROWS(10) ROWS(11) ROWS(12)
    default:
        break;
    }
#undef ROWS
    /* clang-format on */
}

/* Rows [0, mc) x columns [k0, k0 + kc) of in (.., K) into dst as MR-row
 * strips, k-major: strip s holds rows s*MR.., dst[s*MR*kc + k*MR + r]. */
static void pack_rows(float *dst, const float *in, int K, int mc, int k0, int kc)
{
    for (int i = 0; i < mc; i += GEMM_MR) {
        const int mr = mc - i < GEMM_MR ? mc - i : GEMM_MR;
        float *d = dst + (size_t)i * kc;
        for (int r = 0; r < mr; r++) {
            const float *src = in + (size_t)(i + r) * K + k0;
            for (int k = 0; k < kc; k++)
                d[(size_t)k * GEMM_MR + r] = src[k];
        }
    }
}

static __mmask16 lane_mask(int n)
{
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

void gemm_packed_cols(float *out, const float *in, const gemm_packed *pw, const float *b, int M,
                      int p0, int p1, const enc_activation *act, float *scratch)
{
    const int N = pw->N, K = pw->K;
    /* Rows 2 KiB apart or a multiple of it would crowd a few L1 sets (all
     * 12 in one set when K is a multiple of 1024): copy them into strips.
     * Otherwise the kernel reads them in place, which saves the copy. */
    const bool packs = ((size_t)K * sizeof(float)) % 2048 == 0;
    p1 = p1 < pw->P ? p1 : pw->P;
    for (int m0 = 0; m0 < M; m0 += MC) {
        const int mc = M - m0 < MC ? M - m0 : MC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            const bool last = k0 + kc == K;
            const unsigned mode = (k0 > 0 ? ACCUMULATE : 0u) | (last && b ? ADD_BIAS : 0u);
            if (packs)
                pack_rows(scratch, in + (size_t)m0 * K, K, mc, k0, kc);
            for (int p = p0; p < p1; p++) {
                const int n0 = p * GEMM_NR, nn = N - n0 < GEMM_NR ? N - n0 : GEMM_NR;
                const __mmask16 lo = lane_mask(nn), hi = lane_mask(nn - 16);
                const float *panel = pw->data + ((size_t)p * K + (size_t)k0) * GEMM_NR;
                for (int i = 0; i < mc; i += GEMM_MR) {
                    const int mr = mc - i < GEMM_MR ? mc - i : GEMM_MR;
                    float *c = out + (size_t)(m0 + i) * N + n0;
                    const float *a =
                        packs ? scratch + (size_t)i * kc : in + (size_t)(m0 + i) * K + k0;
                    kernel_rows(mr, a, packs ? 0 : K, panel, kc, c, N, mode, b ? b + n0 : NULL, lo,
                                hi);
                    if (last && act)
                        for (int r = 0; r < mr; r++)
                            activation_forward(c + (size_t)r * N, (size_t)nn, *act);
                }
            }
        }
    }
}

#else /* no AVX-512 kernel on this architecture or compiler */

bool gemm_supported(void)
{
    return false;
}

gemm_packed *gemm_pack(const float *w, int N, int K)
{
    (void)w, (void)N, (void)K;
    return NULL;
}

void gemm_packed_cols(float *out, const float *in, const gemm_packed *pw, const float *b, int M,
                      int p0, int p1, const enc_activation *act, float *scratch)
{
    (void)out, (void)in, (void)pw, (void)b, (void)M, (void)p0, (void)p1, (void)act, (void)scratch;
}

#endif
