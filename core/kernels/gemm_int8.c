/* gemm_int8.c - the Linears in int8 (gemm_int8.h): weights quantised at
 * load, activations per row on each call, int32 sums on one of three
 * kernels, one float32 epilogue.
 *
 * Panels as the float32 weights' (GEMM_NR output columns each, zero past
 * N), in quads of k: panel p, quad t, column j holds w_q[p*NR + j][4t ..
 * 4t + 3] in 4 bytes, zero past K.  That is the layout AVX512_VNNI's
 * vpdpbusd reads (4 u8 x 4 s8 into each int32 lane); AVX2 widens 16 bytes
 * (4 columns of a quad) to int16 and sums pairs with vpmaddwd.
 *
 * A call quantises a chunk of rows (as many as the scratch holds, whole K:
 * the row's max needs every k) in the format its kernel reads, then each
 * tile of rows x NR columns is summed over all of K in int32 (exact:
 * |sum| <= 127^2 K < 2^31) and the tile goes through the same epilogue
 * whatever the kernel, so all kernels write the same bits.  A row's
 * outlier columns (gemm_int8.h) are zero in its int8 row and added in that
 * epilogue, in float32, against the quantised weights of the panel. */
#include "kernels/gemm_int8.h"

#include "base/mem.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/simd.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Rows per kernel call (the largest any kernel takes). */
#define TILE_M 8
/* Rows per AVX2 kernel call: 12 accumulators. */
#define AVX2_MR 6

/* A row's outlier columns (gemm_int8.h): kept out of its int8 product. */
typedef struct {
    int n;                         /* how many, <= GEMM_I8_MAX_OUTLIERS */
    int k[GEMM_I8_MAX_OUTLIERS];   /* their columns, ascending */
    float x[GEMM_I8_MAX_OUTLIERS]; /* their values */
} row_outliers;

struct gemm_i8 {
    int8_t *q;       /* (P, KQ / 4, NR, 4) the quantised weights, 0 past N and K */
    float *scale;    /* (P * NR) scale_w, 0 past N */
    int32_t *colsum; /* (P * NR) sum over k of w_q[n][k]: VNNI's correction for its + 128 */
    size_t bytes;    /* of the one allocation q, scale and colsum share */
    int N, K, KQ, P; /* KQ: K rounded up to a quad */
};

/* How the activations of a chunk lie in the scratch for a kernel. */
typedef enum { FMT_S8, FMT_S16, FMT_U8 } a_format;

typedef enum { KERNEL_PORTABLE, KERNEL_AVX2, KERNEL_VNNI } i8_kernel;

static const char *const kernel_names[] = {"portable", "avx2", "avx512_vnni"};

/* The fastest kernel tests allow (gemm_int8_limit). */
static atomic_int kernel_cap = KERNEL_VNNI;

/* x / scale rounded to nearest even, in [-127, 127] (scale > 0).  Clamped
 * as a float first: no float-to-int conversion out of range, NaN included
 * (fmaxf drops it).  Rounded by adding and taking away 1.5 x 2^23, which
 * leaves no fraction bits for |v| <= 2^22 (in the default rounding mode,
 * nearbyintf's: the same integer), inline where nearbyintf is a call into
 * libm that saves and restores the floating-point environment. */
static int quantise(float x, float scale)
{
    const float v = fminf(fmaxf(x / scale, -127.0f), 127.0f), magic = 12582912.0f;
    return (int)((v + magic) - magic); /* no -ffast-math: not folded to v */
}

/* max_k |x[k]| / 127: the symmetric int8 scale of n values. */
static float scale_of(const float *x, int n)
{
    float max = 0.0f;
    for (int k = 0; k < n; k++)
        max = fmaxf(max, fabsf(x[k]));
    return max / 127.0f;
}

gemm_i8 *gemm_i8_pack(const float *const *w, const int *cut, int n, int N, int K)
{
    if (n < 1 || N < 1 || K < 1 || K > GEMM_I8_MAX_K)
        return NULL;
    gemm_i8 *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->N = N;
    q->K = K;
    q->KQ = (K + 3) / 4 * 4;
    q->P = (N + GEMM_NR - 1) / GEMM_NR;
    const size_t cols = (size_t)q->P * GEMM_NR, qbytes = cols * (size_t)q->KQ;
    q->bytes = qbytes + cols * (sizeof *q->scale + sizeof *q->colsum);
    char *mem = mem_zalloc(q->bytes); /* 64-byte aligned, so the floats after qbytes are too */
    if (!mem) {
        free(q);
        return NULL;
    }
    q->q = (int8_t *)mem;
    q->scale = (float *)(mem + qbytes);
    q->colsum = (int32_t *)(mem + qbytes + cols * sizeof *q->scale);
    int part = 0;
    for (int row = 0; row < N; row++) {
        while (part < n - 1 && row >= cut[part])
            part++;
        const float *wr = w[part] + (size_t)(row - (part ? cut[part - 1] : 0)) * (size_t)K;
        const float s = scale_of(wr, K);
        int8_t *d = q->q + (size_t)(row / GEMM_NR) * (size_t)q->KQ * GEMM_NR + 4 * (row % GEMM_NR);
        int32_t sum = 0;
        for (int k = 0; s > 0.0f && k < K; k++) {
            const int v = quantise(wr[k], s);
            d[(size_t)(k / 4) * 4 * GEMM_NR + k % 4] = (int8_t)v;
            sum += v;
        }
        q->scale[row] = s;
        q->colsum[row] = sum;
    }
    return q;
}

void gemm_i8_free(gemm_i8 *q)
{
    if (!q)
        return;
    mem_zfree(q->q, q->bytes);
    free(q);
}

size_t gemm_i8_bytes(const gemm_i8 *q)
{
    return q ? sizeof *q + q->bytes : 0;
}

/* Row x's outlier columns into o: |x[k]| > GEMM_I8_OUTLIER_RATIO x the
 * row's mean |x|, the GEMM_I8_MAX_OUTLIERS largest of them (the lower k
 * first among equals), listed by ascending k. */
static void find_outliers(row_outliers *o, const float *x, int K)
{
    double sum = 0.0;
    for (int k = 0; k < K; k++)
        sum += fabs((double)x[k]);
    const double limit = GEMM_I8_OUTLIER_RATIO * (sum / K);
    o->n = 0;
    for (int k = 0; k < K; k++) {
        const double a = fabs((double)x[k]);
        if (!(a > limit))
            continue;
        /* o->k by descending |x| while collecting: the smallest goes when full */
        int at = o->n < GEMM_I8_MAX_OUTLIERS ? o->n++ : GEMM_I8_MAX_OUTLIERS;
        while (at > 0 && fabsf(o->x[at - 1]) < (float)a) {
            if (at < GEMM_I8_MAX_OUTLIERS) {
                o->k[at] = o->k[at - 1];
                o->x[at] = o->x[at - 1];
            }
            at--;
        }
        if (at < GEMM_I8_MAX_OUTLIERS) {
            o->k[at] = k;
            o->x[at] = x[k];
        }
    }
    for (int i = 1; i < o->n; i++) /* by ascending k */
        for (int j = i; j > 0 && o->k[j - 1] > o->k[j]; j--) {
            const int tk = o->k[j];
            const float tx = o->x[j];
            o->k[j] = o->k[j - 1];
            o->x[j] = o->x[j - 1];
            o->k[j - 1] = tk;
            o->x[j - 1] = tx;
        }
}

/* Row x (K) quantised into dst (KQ values as fmt says, 0 past K and at o's
 * columns; FMT_U8 holds x_q + 128); returns its scale_a, of the columns
 * but o's (0 when they are all zero: all x_q 0). */
static float quantise_row(void *dst, a_format fmt, const float *x, int K, int KQ,
                          const row_outliers *o)
{
    float max = 0.0f;
    for (int k = 0, i = 0; k < K; k++) {
        if (i < o->n && o->k[i] == k) {
            i++;
            continue;
        }
        max = fmaxf(max, fabsf(x[k]));
    }
    const float s = max / 127.0f;
    for (int k = 0, i = 0; k < KQ; k++) {
        int v = k < K && s > 0.0f ? quantise(x[k], s) : 0;
        if (i < o->n && o->k[i] == k) {
            v = 0;
            i++;
        }
        if (fmt == FMT_S8)
            ((int8_t *)dst)[k] = (int8_t)v;
        else if (fmt == FMT_S16)
            ((int16_t *)dst)[k] = (int16_t)v;
        else
            ((uint8_t *)dst)[k] = (uint8_t)(v + 128);
    }
    return s;
}

/* acc (mr, NR) = a (mr rows lda bytes apart, KQ int8) . panel, in int32. */
static void tile_portable(int32_t *acc, int mr, const void *a, size_t lda, const int8_t *panel,
                          int KQ)
{
    for (int r = 0; r < mr; r++) {
        const int8_t *x = (const int8_t *)a + (size_t)r * lda;
        int32_t *out = acc + (size_t)r * GEMM_NR;
        for (int j = 0; j < GEMM_NR; j++)
            out[j] = 0;
        for (int t = 0; t < KQ / 4; t++) {
            const int8_t *w = panel + (size_t)t * 4 * GEMM_NR;
            for (int j = 0; j < GEMM_NR; j++)
                for (int u = 0; u < 4; u++)
                    out[j] += (int32_t)x[4 * t + u] * w[4 * j + u];
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

static i8_kernel cpu_kernel(void)
{
    __builtin_cpu_init();
    if (simd_enabled() && __builtin_cpu_supports("avx512vnni"))
        return KERNEL_VNNI;
    return __builtin_cpu_supports("avx2") ? KERNEL_AVX2 : KERNEL_PORTABLE;
}

/* tile_portable on AVX2, a in int16 (lda bytes apart), mr <= AVX2_MR rows:
 * per group of 8 columns, each quad of a row broadcast to every 64 bits
 * straight from memory against two registers of 4 columns' quads widened
 * to int16, so 12 accumulators share each widened weight (rows past mr
 * read row 0 again and are not stored; named variables, not an array:
 * GCC 12 spills an array of them); vpmaddwd sums pairs of k exactly (no
 * saturation: |x w| <= 127^2), so each column ends as two int32 halves
 * that vphaddd joins. */
__attribute__((target("avx2"))) static void tile_avx2(int32_t *acc, int mr, const void *a,
                                                      size_t lda, const int8_t *panel, int KQ)
{
    const char *x[AVX2_MR];
    for (int r = 0; r < AVX2_MR; r++)
        x[r] = (const char *)a + (r < mr ? (size_t)r * lda : 0);
    for (int g = 0; g < GEMM_NR / 8; g++) {
        __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00,
                s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
        const int8_t *w = panel + 32 * g;
        const char *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
        for (int t = 0; t < KQ / 4; t++, w += 4 * GEMM_NR) {
            const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w));
            const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 16)));
            long long q;
            __m256i b;
#define AVX2_ROW(r)                                                                                \
    memcpy(&q, x##r + (size_t)t * 8, sizeof q);                                                    \
    b = _mm256_set1_epi64x(q);                                                                     \
    s##r##0 = _mm256_add_epi32(s##r##0, _mm256_madd_epi16(b, w0));                                 \
    s##r##1 = _mm256_add_epi32(s##r##1, _mm256_madd_epi16(b, w1));                                 \
    __asm__("" : "+x"(s##r##0), "+x"(s##r##1))
            AVX2_ROW(0);
            AVX2_ROW(1);
            AVX2_ROW(2);
            AVX2_ROW(3);
            AVX2_ROW(4);
            AVX2_ROW(5);
#undef AVX2_ROW
        }
        /* s[r]0: columns 0-1 | 2-3 as halves; s[r]1: 4-5 | 6-7; the pairs
         * added give (0 1 4 5 | 2 3 6 7), reordered by 64 bits */
        const __m256i sum[AVX2_MR] = {_mm256_hadd_epi32(s00, s01), _mm256_hadd_epi32(s10, s11),
                                      _mm256_hadd_epi32(s20, s21), _mm256_hadd_epi32(s30, s31),
                                      _mm256_hadd_epi32(s40, s41), _mm256_hadd_epi32(s50, s51)};
        for (int r = 0; r < mr; r++)
            _mm256_storeu_si256((__m256i *)(acc + (size_t)r * GEMM_NR + 8 * g),
                                _mm256_permute4x64_epi64(sum[r], 0xD8));
    }
}

/* tile_portable on AVX512_VNNI, a in u8 (x_q + 128), mr <= 8 rows: vpdpbusd
 * sums 4 u8 x s8 products into each int32 lane (no saturation), and
 * subtracting 128 x the column's sum of w_q leaves sum x_q w_q exactly.
 * Not run on the machine this was written on (no AVX512_VNNI there): only
 * compiled; the tests run it where the CPU has it. */
__attribute__((target("avx512f,avx512vnni"))) static void tile_vnni(int32_t *acc, int mr,
                                                                    const void *a, size_t lda,
                                                                    const int8_t *panel, int KQ,
                                                                    const int32_t *colsum)
{
    const char *rows = a;
    __m512i s[TILE_M][2];
    for (int r = 0; r < TILE_M; r++)
        s[r][0] = s[r][1] = _mm512_setzero_si512();
    const int8_t *w = panel;
    for (int t = 0; t < KQ / 4; t++, w += 4 * GEMM_NR) {
        const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64);
        for (int r = 0; r < TILE_M; r++)
            if (r < mr) {
                int quad;
                memcpy(&quad, rows + (size_t)r * lda + (size_t)t * 4, sizeof quad);
                const __m512i x = _mm512_set1_epi32(quad);
                s[r][0] = _mm512_dpbusd_epi32(s[r][0], x, w0);
                s[r][1] = _mm512_dpbusd_epi32(s[r][1], x, w1);
            }
    }
    const __m512i c0 = _mm512_slli_epi32(_mm512_loadu_si512(colsum), 7);
    const __m512i c1 = _mm512_slli_epi32(_mm512_loadu_si512(colsum + 16), 7);
    for (int r = 0; r < mr; r++) {
        _mm512_storeu_si512(acc + (size_t)r * GEMM_NR, _mm512_sub_epi32(s[r][0], c0));
        _mm512_storeu_si512(acc + (size_t)r * GEMM_NR + 16, _mm512_sub_epi32(s[r][1], c1));
    }
}

#else /* the portable kernel only */

static i8_kernel cpu_kernel(void)
{
    return KERNEL_PORTABLE;
}

#endif

/* The kernel a call runs now: the CPU's best, no faster than the cap. */
static i8_kernel current_kernel(void)
{
    const i8_kernel k = cpu_kernel(), cap = (i8_kernel)atomic_load(&kernel_cap);
    return k < cap ? k : cap;
}

const char *gemm_int8_kernel(void)
{
    return kernel_names[current_kernel()];
}

bool gemm_int8_limit(const char *kernel)
{
    for (int k = 0; k < (int)(sizeof kernel_names / sizeof *kernel_names); k++)
        if (!strcmp(kernel, kernel_names[k])) {
            atomic_store(&kernel_cap, k);
            return cpu_kernel() >= (i8_kernel)k;
        }
    return false;
}

/* out rows (ldc apart), columns [n0, n0 + nn) of panel = scale_a[r] *
 * scale_w[j] * acc[r][j] + scale_w[j] * corr[r][j] + b[j], corr[r][j] the
 * sum over row r's outliers (ascending k) of x[k] * w_q[j][k] in float32,
 * and no corr term for a row without outliers: the one epilogue every
 * kernel's sums go through. */
static void epilogue(float *out, size_t ldc, const int32_t *acc, int mr, int nn,
                     const float *scale_a, const float *scale_w, const float *b,
                     const row_outliers *o, const int8_t *panel)
{
    for (int r = 0; r < mr; r++) {
        float *c = out + (size_t)r * ldc;
        for (int j = 0; j < nn; j++) {
            float v = scale_a[r] * scale_w[j] * (float)acc[(size_t)r * GEMM_NR + j];
            if (o[r].n) {
                float corr = 0.0f;
                for (int i = 0; i < o[r].n; i++) {
                    const int k = o[r].k[i];
                    corr += o[r].x[i] * (float)panel[(size_t)(k / 4) * 4 * GEMM_NR + 4 * j + k % 4];
                }
                v += scale_w[j] * corr;
            }
            if (b)
                v += b[j];
            c[j] = v;
        }
    }
}

void gemm_i8_cols(float *out, int ldc, const float *in, int lda, const gemm_i8 *q, const float *b,
                  int M, int p0, int p1, const enc_activation *act, void *scratch)
{
    const i8_kernel kern = current_kernel();
    const a_format fmt = kern == KERNEL_AVX2 ? FMT_S16 : kern == KERNEL_VNNI ? FMT_U8 : FMT_S8;
    const int tile = kern == KERNEL_AVX2 ? AVX2_MR : TILE_M;
    /* scratch: the tile's sums, then the chunk's scales and outliers, then
     * its rows */
    const size_t row_bytes = ((size_t)q->KQ * (fmt == FMT_S16 ? 2 : 1) + 63) / 64 * 64;
    const size_t head = TILE_M * GEMM_NR * sizeof(int32_t);
    const size_t room = gemm_scratch_bytes() - head - 128; /* 128: two roundings to 64 */
    int chunk = (int)(room / (row_bytes + sizeof(float) + sizeof(row_outliers)));
    chunk = chunk > M ? M : chunk;
    int32_t *acc = scratch;
    float *scale_a = (float *)((char *)scratch + head);
    row_outliers *outl =
        (row_outliers *)((char *)scale_a + ((size_t)chunk * sizeof(float) + 63) / 64 * 64);
    char *rows = (char *)outl + ((size_t)chunk * sizeof(row_outliers) + 63) / 64 * 64;
    p1 = p1 < q->P ? p1 : q->P;
    for (int m0 = 0; m0 < M; m0 += chunk) {
        const int mc = M - m0 < chunk ? M - m0 : chunk;
        for (int r = 0; r < mc; r++) {
            const float *x = in + (size_t)(m0 + r) * (size_t)lda;
            find_outliers(&outl[r], x, q->K);
            scale_a[r] = quantise_row(rows + (size_t)r * row_bytes, fmt, x, q->K, q->KQ, &outl[r]);
        }
        for (int p = p0; p < p1; p++) {
            const int n0 = p * GEMM_NR, nn = q->N - n0 < GEMM_NR ? q->N - n0 : GEMM_NR;
            const int8_t *panel = q->q + (size_t)p * (size_t)q->KQ * GEMM_NR;
            for (int i = 0; i < mc; i += tile) {
                const int mr = mc - i < tile ? mc - i : tile;
                const char *a = rows + (size_t)i * row_bytes;
#if defined(__x86_64__) && defined(__GNUC__)
                if (kern == KERNEL_VNNI)
                    tile_vnni(acc, mr, a, row_bytes, panel, q->KQ, q->colsum + n0);
                else if (kern == KERNEL_AVX2)
                    tile_avx2(acc, mr, a, row_bytes, panel, q->KQ);
                else
#endif
                    tile_portable(acc, mr, a, row_bytes, panel, q->KQ);
                float *c = out + (size_t)(m0 + i) * (size_t)ldc + n0;
                epilogue(c, (size_t)ldc, acc, mr, nn, scale_a + i, q->scale + n0, b ? b + n0 : NULL,
                         outl + i, panel);
                if (act)
                    ops_bias_act_cols(c, ldc, NULL, mr, 0, nn, act);
            }
        }
    }
}
