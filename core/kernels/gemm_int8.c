/* gemm_int8.c - the Linears in int8 (gemm_int8.h): weights quantised at
 * load, activations per row on each call, int32 sums on one of five
 * kernels, one float32 epilogue.
 *
 * Panels as the float32 weights' (GEMM_NR output columns each, zero past
 * N), in quads of k: panel p, quad t, column j holds w_q[p*NR + j][4t ..
 * 4t + 3] in 4 bytes, zero past K (k_padded).  That is the layout
 * vpdpbusd reads (4 u8 x 4 s8 into each int32 lane: AVX512_VNNI 16
 * columns a register, AVX-VNNI 8), and 16 quads of 16 columns are one
 * tile of AMX's tdpbusd (16 rows of 64 bytes, 128 bytes apart); AVX2
 * widens 16 bytes (4 columns of a quad) to int16 and sums pairs with
 * vpmaddwd.
 *
 * Each row of activations is quantised (whole K: the row's max needs
 * every k) into a record in the format its kernel reads: once per call
 * into a buffer the team shares (gemm_i8_quantise, then gemm_i8_cols_rows),
 * or a chunk at a time into the thread's scratch (gemm_i8_cols).  Then each
 * tile of rows x NR columns is summed over all of K in int32 (exact:
 * |sum| <= 127^2 K < 2^31) and the tile goes through the same epilogue
 * whatever the kernel, so all kernels write the same bits.  A row's
 * outlier columns (gemm_int8.h) are zero in its int8 row and added in that
 * epilogue, in float32, against the quantised weights of the panel.  The
 * row's steps run in AVX2 beside the AVX2, VNNI and AMX kernels, in scalar
 * code beside the portable one; the epilogue in AVX-512 with the
 * activation in its registers beside the AVX512_VNNI and AMX kernels (10%
 * off the forward with GELU), in AVX2 beside AVX2 and AVX-VNNI, in scalar
 * code beside the portable one: the same bits. */
#include "kernels/gemm_int8.h"

#include "base/mem.h"
#include "kernels/amx.h"
#include "kernels/panel.h"
#include "kernels/ops.h"
#include "kernels/simd.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Rows per kernel call (the largest any kernel takes: AMX's two tiles of
 * 16); AVX512_VNNI's (tile_vnni). */
#define TILE_M  32
#define VNNI_MR 12
/* Rows per AVX2 kernel call: 12 accumulators; quads of k per block. */
#define AVX2_MR  6
#define AVX2_KCQ 64
/* Bytes of panels every tile of rows runs over before the next panels
 * (each tile's pass over them finds them in L2: half of a Sapphire
 * Rapids core's). */
#define PANELS_BLOCK_BYTES (1024 * 1024)

/* A row's outlier columns (gemm_int8.h): kept out of its int8 product. */
typedef struct {
    int n;                         /* how many, <= GEMM_I8_MAX_OUTLIERS */
    int k[GEMM_I8_MAX_OUTLIERS];   /* their columns, ascending */
    float x[GEMM_I8_MAX_OUTLIERS]; /* their values */
} row_outliers;

struct gemm_i8 {
    int8_t *q;       /* (P, KQ / 4, NR, 4) the quantised weights, 0 past N and K */
    float *scale;    /* (P * NR) scale_w, 0 past N */
    int32_t *offset; /* (P * NR) -128 x the sum over k of w_q[n][k]: the u8 kernels' correction
                        for their x_q + 128 */
    size_t bytes;    /* of the one allocation q, scale and offset share */
    int N, K, KQ, P; /* KQ: k_padded(K) */
};

/* K rounded up to 64, the k a panel and a row hold (zero past K): AMX
 * reads 64 of a row at a time (16 quads of a panel), and the others
 * whole quads. */
static int k_padded(int K)
{
    return (K + 63) / 64 * 64;
}

/* The kernels, slowest first. */
typedef enum { KERNEL_PORTABLE, KERNEL_AVX2, KERNEL_AVX_VNNI, KERNEL_VNNI, KERNEL_AMX } i8_kernel;

static const char *const kernel_names[] = {"portable", "avx2", "avx_vnni", "avx512_vnni",
                                           "amx_int8"};

/* How a row's quantised activations lie for a kernel (format_of). */
typedef enum { FMT_S8, FMT_S16, FMT_U8 } a_format;

/* A quantised row is a record: this head, then from HEAD_BYTES its
 * k_padded(K) values in its kernel's format (0 past K and at its outlier
 * columns; FMT_U8 holds x_q + 128), padded to 64 bytes. */
typedef struct {
    float scale;    /* scale_a: max |x| over the columns but the outliers / 127 */
    i8_kernel kern; /* the kernel that reads them: their format */
    row_outliers o; /* its outlier columns */
} row_head;

#define HEAD_BYTES 128
_Static_assert(sizeof(row_head) <= HEAD_BYTES, "a row's head fits its place");

/* The fastest kernel tests allow (gemm_int8_limit). */
static atomic_int kernel_cap = KERNEL_AMX;

/* max(m, |x|) for m >= 0, not NaN: m when x is NaN, as fmaxf(m, fabsf(x))
 * (which is a call into libm without -ffast-math). */
static float max_abs(float m, float x)
{
    const float a = fabsf(x);
    return a > m ? a : m;
}

/* x times inv (1 / scale, in float32) rounded to nearest even, in
 * [-127, 127]: a multiply, as fbgemm's quantisation (PyTorch's) computes
 * it, where a divide costs ten times as much in the rows' pass.  Clamped
 * as a float first: no float-to-int conversion out of range, NaN included
 * (-127, as fmaxf(NaN, -127) and vmaxps give).  Rounded by adding and
 * taking away 1.5 x 2^23, which leaves no fraction bits for |v| <= 2^22
 * (in the default rounding mode, nearbyintf's: the same integer), inline
 * where nearbyintf is a call into libm that saves and restores the
 * floating-point environment. */
static int quantise(float x, float inv)
{
    float v = x * inv;
    v = v > -127.0f ? v : -127.0f; /* NaN: -127 */
    v = v < 127.0f ? v : 127.0f;
    const float magic = 12582912.0f;
    return (int)((v + magic) - magic); /* no -ffast-math: not folded to v */
}

/* max_k |x[k]| / 127: the symmetric int8 scale of n values. */
static float scale_of(const float *x, int n)
{
    float max = 0.0f;
    for (int k = 0; k < n; k++)
        max = max_abs(max, x[k]);
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
    q->KQ = k_padded(K);
    q->P = (N + GEMM_NR - 1) / GEMM_NR;
    const size_t cols = (size_t)q->P * GEMM_NR, qbytes = cols * (size_t)q->KQ;
    q->bytes = qbytes + cols * (sizeof *q->scale + sizeof *q->offset);
    char *mem = mem_zalloc(q->bytes); /* 64-byte aligned, so the floats after qbytes are too */
    if (!mem) {
        free(q);
        return NULL;
    }
    q->q = (int8_t *)mem;
    q->scale = (float *)(mem + qbytes);
    q->offset = (int32_t *)(mem + qbytes + cols * sizeof *q->scale);
    int part = 0;
    for (int row = 0; row < N; row++) {
        while (part < n - 1 && row >= cut[part])
            part++;
        const float *wr = w[part] + (size_t)(row - (part ? cut[part - 1] : 0)) * (size_t)K;
        const float s = scale_of(wr, K);
        int8_t *d = q->q + (size_t)(row / GEMM_NR) * (size_t)q->KQ * GEMM_NR + 4 * (row % GEMM_NR);
        int32_t sum = 0;
        const float inv = s > 0.0f ? 1.0f / s : 0.0f;
        for (int k = 0; s > 0.0f && k < K; k++) {
            const int v = quantise(wr[k], inv);
            d[(size_t)(k / 4) * 4 * GEMM_NR + k % 4] = (int8_t)v;
            sum += v;
        }
        q->scale[row] = s;
        q->offset[row] = -128 * sum;
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

/* ---- a row of activations: outliers, scale, quantised values ------------
 *
 * Each step has a scalar form and an AVX2 one that compute the same bits:
 * the same operations on each element in the same order (the sum of |x|
 * in 16 lanes by k mod 16 in both, joined in one fixed order; max is exact
 * in any order), chosen with the kernel (row_vector). */

/* Adds column k (|x| above the limit) to o: the GEMM_I8_MAX_OUTLIERS
 * largest, by descending |x| while collecting (the smallest goes when o is
 * full; the lower k first among equals). */
static void outlier_add(row_outliers *o, int k, float x)
{
    const float a = fabsf(x);
    int at = o->n < GEMM_I8_MAX_OUTLIERS ? o->n++ : GEMM_I8_MAX_OUTLIERS;
    while (at > 0 && fabsf(o->x[at - 1]) < a) {
        if (at < GEMM_I8_MAX_OUTLIERS) {
            o->k[at] = o->k[at - 1];
            o->x[at] = o->x[at - 1];
        }
        at--;
    }
    if (at < GEMM_I8_MAX_OUTLIERS) {
        o->k[at] = k;
        o->x[at] = x;
    }
}

/* o's columns by ascending k. */
static void outliers_sort(row_outliers *o)
{
    for (int i = 1; i < o->n; i++)
        for (int j = i; j > 0 && o->k[j - 1] > o->k[j]; j--) {
            const int tk = o->k[j];
            const float tx = o->x[j];
            o->k[j] = o->k[j - 1];
            o->x[j] = o->x[j - 1];
            o->k[j - 1] = tk;
            o->x[j - 1] = tx;
        }
}

/* The outlier limit from the 16 lanes of sum |x| (lane j: k = j mod 16, in
 * order of k): GEMM_I8_OUTLIER_RATIO x the mean. */
static double outlier_limit(const double *lane, int K)
{
    double l[8];
    for (int j = 0; j < 8; j++)
        l[j] = lane[j] + lane[j + 8];
    const double sum = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    return GEMM_I8_OUTLIER_RATIO * (sum / K);
}

/* Value k of a row's values at dst, v (x_q) in fmt. */
static void store_value(void *dst, a_format fmt, int k, int v)
{
    if (fmt == FMT_S8)
        ((int8_t *)dst)[k] = (int8_t)v;
    else if (fmt == FMT_S16)
        ((int16_t *)dst)[k] = (int16_t)v;
    else
        ((uint8_t *)dst)[k] = (uint8_t)(v + 128);
}

/* Row x (K) into the record at rec in fmt (row_head), in scalar code: its
 * outlier columns (|x[k]| > GEMM_I8_OUTLIER_RATIO x the row's mean |x|,
 * the GEMM_I8_MAX_OUTLIERS largest, listed by ascending k), its scale over
 * the other columns (0 when they are all zero: every x_q 0) and its
 * values. */
static void quantise_row_scalar(char *rec, a_format fmt, const float *x, int K, int KQ)
{
    row_head *h = (row_head *)rec;
    row_outliers *o = &h->o;
    double lane[16] = {0};
    float all = 0.0f;
    for (int k = 0; k < K; k++) {
        lane[k % 16] += fabs((double)x[k]);
        all = max_abs(all, x[k]);
    }
    const double limit = outlier_limit(lane, K);
    o->n = 0;
    for (int k = 0; k < K && (double)all > limit; k++) /* none above: no pass */
        if (fabs((double)x[k]) > limit)
            outlier_add(o, k, x[k]);
    outliers_sort(o);
    float max = all;
    if (o->n) {
        max = 0.0f;
        for (int k = 0, i = 0; k < K; k++) {
            if (i < o->n && o->k[i] == k) {
                i++;
                continue;
            }
            max = max_abs(max, x[k]);
        }
    }
    const float s = max / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
    char *dst = rec + HEAD_BYTES;
    for (int k = 0, i = 0; k < KQ; k++) {
        int v = k < K && s > 0.0f ? quantise(x[k], inv) : 0;
        if (i < o->n && o->k[i] == k) {
            v = 0;
            i++;
        }
        store_value(dst, fmt, k, v);
    }
    h->scale = s;
}

/* Column j of panel's quantised weight at k. */
static int panel_weight(const int8_t *panel, int j, int k)
{
    return panel[(size_t)(k / 4) * 4 * GEMM_NR + 4 * j + k % 4];
}

/* out row r (ldc apart), columns [j0, nn) of panel = scale_a[r] *
 * scale_w[j] * acc[r][j] + scale_w[j] * corr[r][j] + b[j], corr[r][j] the
 * sum over row r's outliers (ascending k) of x[k] * w_q[j][k] in float32,
 * and no corr term for a row without outliers: the one epilogue every
 * kernel's sums go through (epilogue_avx2: the same, 8 columns at a time). */
static void epilogue_scalar(float *out, size_t ldc, const int32_t *acc, int mr, int j0, int nn,
                            const char *recs, size_t stride, const float *scale_w, const float *b,
                            const int8_t *panel)
{
    for (int r = 0; r < mr; r++) {
        const row_head *h = (const row_head *)(recs + (size_t)r * stride);
        float *c = out + (size_t)r * ldc;
        for (int j = j0; j < nn; j++) {
            float v = h->scale * scale_w[j] * (float)acc[(size_t)r * GEMM_NR + j];
            if (h->o.n) {
                float corr = 0.0f;
                for (int i = 0; i < h->o.n; i++)
                    corr += h->o.x[i] * (float)panel_weight(panel, j, h->o.k[i]);
                v += scale_w[j] * corr;
            }
            if (b)
                v += b[j];
            c[j] = v;
        }
    }
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

#include "kernels/vec512.h"

#include <cpuid.h>
#include <immintrin.h>

/* Whether the CPU has AVX-VNNI: CPUID 7.1 EAX bit 4 (clang 14's
 * __builtin_cpu_supports has no name for it), asked once (CPUID traps to
 * the hypervisor in a VM, and kernel_here runs on every call). */
static bool cpu_avx_vnni(void)
{
    static atomic_int has = -1;
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        unsigned a, b, c, d;
        h = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return h;
}

/* Whether this CPU runs kernel k: the AVX-512 ones while simd_enabled().
 * Not an order: AVX512_VNNI does not imply AVX-VNNI (Ice Lake, Zen 4 have
 * the one without the other). */
static bool kernel_here(i8_kernel k)
{
    __builtin_cpu_init();
    switch (k) {
    case KERNEL_AMX:
        return kernel_here(KERNEL_VNNI) && amx_usable(AMX_INT8);
    case KERNEL_VNNI:
        return simd_enabled() && __builtin_cpu_supports("avx512vnni");
    case KERNEL_AVX_VNNI:
        return __builtin_cpu_supports("avx2") && cpu_avx_vnni();
    case KERNEL_AVX2:
        return __builtin_cpu_supports("avx2");
    default:
        return true;
    }
}

/* tile_portable on AVX2, a in int16 (lda bytes apart), mr <= AVX2_MR rows:
 * per group of 8 columns, each quad of a row broadcast to every 64 bits
 * straight from memory against two registers of 4 columns' quads widened
 * to int16, so 12 accumulators share each widened weight (rows past mr
 * read row 0 again and are not stored; named variables, not an array:
 * GCC 12 spills an array of them); vpmaddwd sums pairs of k exactly (no
 * saturation: |x w| <= 127^2), so each column ends as two int32 halves
 * that vphaddd joins.  K in blocks of AVX2_KCQ quads, the 4 groups inside
 * each: a block's rows (3 KiB) stay in L1 for the 4 groups, and the sums
 * wait in memory between blocks (exact in any order). */
__attribute__((target("avx2"))) static void tile_avx2(int32_t *acc, int mr, const void *a,
                                                      size_t lda, const int8_t *panel, int KQ)
{
    const char *x[AVX2_MR];
    for (int r = 0; r < AVX2_MR; r++)
        x[r] = (const char *)a + (r < mr ? (size_t)r * lda : 0);
    __m256i raw[GEMM_NR / 8][2 * AVX2_MR]; /* each group's sums between blocks */
    const int T = KQ / 4;
    for (int t0 = 0; t0 < T; t0 += AVX2_KCQ) { /* T >= 1 */
        const int t1 = T - t0 < AVX2_KCQ ? T : t0 + AVX2_KCQ;
        for (int g = 0; g < GEMM_NR / 8; g++) {
            __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00, s20 = s00,
                    s21 = s00, s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
            if (t0) {
                const __m256i *v = raw[g];
                s00 = v[0], s01 = v[1], s10 = v[2], s11 = v[3], s20 = v[4], s21 = v[5];
                s30 = v[6], s31 = v[7], s40 = v[8], s41 = v[9], s50 = v[10], s51 = v[11];
            }
            const int8_t *w = panel + 32 * g + (size_t)t0 * 4 * GEMM_NR;
            const char *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
            for (int t = t0; t < t1; t++, w += 4 * GEMM_NR) {
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
            __m256i *v = raw[g];
            v[0] = s00, v[1] = s01, v[2] = s10, v[3] = s11, v[4] = s20, v[5] = s21;
            v[6] = s30, v[7] = s31, v[8] = s40, v[9] = s41, v[10] = s50, v[11] = s51;
        }
    }
    /* raw[g][2r]: columns 0-1 | 2-3 of group g as halves; [2r + 1]: 4-5 |
     * 6-7; the pairs added give (0 1 4 5 | 2 3 6 7), reordered by 64 bits */
    for (int g = 0; g < GEMM_NR / 8; g++)
        for (int r = 0; r < mr; r++)
            _mm256_storeu_si256((__m256i *)(acc + (size_t)r * GEMM_NR + 8 * g),
                                _mm256_permute4x64_epi64(
                                    _mm256_hadd_epi32(raw[g][2 * r], raw[g][2 * r + 1]), 0xD8));
}

/* tile_portable on AVX512_VNNI, a in u8 (x_q + 128), mr rows: vpdpbusd
 * sums 4 u8 x s8 products into each int32 lane (no saturation), and adding
 * the column's offset (-128 x its sum of w_q) leaves sum x_q w_q exactly.
 * Each quad of k: the panel's two registers of 16 columns, each row's quad
 * broadcast against both, 2 mr sums in registers (24 of the 32 at
 * VNNI_MR: 12 rows share each load of the panel).  Inlined with mr a
 * constant (tile_vnni), so the loops over rows unroll; vpdpbusd in asm
 * because GCC 12 copies each sum to another register and back around the
 * intrinsic, 62 instructions a quad for 8 rows where 30 do, and the
 * kernel was held by issuing them (the Linears 0.8x the time without). */
__attribute__((target("avx512f,avx512vnni"), always_inline)) static inline void
vnni_rows(int32_t *acc, const int mr, const char *rows, size_t lda, const int8_t *panel, int KQ,
          const int32_t *offset)
{
    __m512i s[VNNI_MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++)
        s[r][0] = s[r][1] = _mm512_setzero_si512();
    const int8_t *w = panel;
    for (int t = 0; t < KQ / 4; t++, w += 4 * GEMM_NR) {
        const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64);
#pragma GCC unroll 16
        for (int r = 0; r < mr; r++) {
            int quad;
            memcpy(&quad, rows + (size_t)r * lda + (size_t)t * 4, sizeof quad);
            const __m512i x = _mm512_set1_epi32(quad);
            __asm__("vpdpbusd %[w], %[x], %[s]" : [s] "+v"(s[r][0]) : [x] "v"(x), [w] "v"(w0));
            __asm__("vpdpbusd %[w], %[x], %[s]" : [s] "+v"(s[r][1]) : [x] "v"(x), [w] "v"(w1));
        }
    }
    const __m512i c0 = _mm512_loadu_si512(offset), c1 = _mm512_loadu_si512(offset + 16);
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++) {
        _mm512_storeu_si512(acc + (size_t)r * GEMM_NR, _mm512_add_epi32(s[r][0], c0));
        _mm512_storeu_si512(acc + (size_t)r * GEMM_NR + 16, _mm512_add_epi32(s[r][1], c1));
    }
}

/* vnni_rows for 1 <= mr <= VNNI_MR rows: a copy for each count. */
_Static_assert(VNNI_MR == 12, "tile_vnni has a case for each count of rows");
__attribute__((target("avx512f,avx512vnni"))) static void tile_vnni(int32_t *acc, int mr,
                                                                    const void *a, size_t lda,
                                                                    const int8_t *panel, int KQ,
                                                                    const int32_t *offset)
{
    switch (mr) {
#define VNNI_CASE(n)                                                                               \
    case n:                                                                                        \
        vnni_rows(acc, n, a, lda, panel, KQ, offset);                                              \
        return;
        VNNI_CASE(1)
        VNNI_CASE(2)
        VNNI_CASE(3)
        VNNI_CASE(4)
        VNNI_CASE(5)
        VNNI_CASE(6)
        VNNI_CASE(7)
        VNNI_CASE(8)
        VNNI_CASE(9)
        VNNI_CASE(10)
        VNNI_CASE(11)
        VNNI_CASE(12)
#undef VNNI_CASE
    default: /* no rows */
        return;
    }
}

/* tile_vnni on AVX-VNNI (256 bits: no AVX-512 needed), mr <= AVX2_MR rows:
 * per half of the panel (16 columns, two registers of 8 columns' quads),
 * each row's quad broadcast against both, 12 accumulators; K in blocks of
 * AVX2_KCQ quads with the sums in memory between them, as tile_avx2. */
__attribute__((target("avx2,avxvnni"))) static void tile_avx_vnni(int32_t *acc, int mr,
                                                                  const void *a, size_t lda,
                                                                  const int8_t *panel, int KQ,
                                                                  const int32_t *offset)
{
    const char *x[AVX2_MR];
    for (int r = 0; r < AVX2_MR; r++)
        x[r] = (const char *)a + (r < mr ? (size_t)r * lda : 0);
    __m256i raw[2][2 * AVX2_MR]; /* each half's sums between blocks */
    const int T = KQ / 4;
    for (int t0 = 0; t0 < T; t0 += AVX2_KCQ) {
        const int t1 = T - t0 < AVX2_KCQ ? T : t0 + AVX2_KCQ;
        for (int g = 0; g < 2; g++) {
            __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00, s20 = s00,
                    s21 = s00, s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
            if (t0) {
                const __m256i *v = raw[g];
                s00 = v[0], s01 = v[1], s10 = v[2], s11 = v[3], s20 = v[4], s21 = v[5];
                s30 = v[6], s31 = v[7], s40 = v[8], s41 = v[9], s50 = v[10], s51 = v[11];
            }
            const int8_t *w = panel + 64 * g + (size_t)t0 * 4 * GEMM_NR;
            const char *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
            for (int t = t0; t < t1; t++, w += 4 * GEMM_NR) {
                const __m256i w0 = _mm256_loadu_si256((const __m256i *)w);
                const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + 32));
                int q;
                __m256i b;
#define AVX_VNNI_ROW(r)                                                                            \
    memcpy(&q, x##r + (size_t)t * 4, sizeof q);                                                    \
    b = _mm256_set1_epi32(q);                                                                      \
    s##r##0 = _mm256_dpbusd_avx_epi32(s##r##0, b, w0);                                             \
    s##r##1 = _mm256_dpbusd_avx_epi32(s##r##1, b, w1)
                AVX_VNNI_ROW(0);
                AVX_VNNI_ROW(1);
                AVX_VNNI_ROW(2);
                AVX_VNNI_ROW(3);
                AVX_VNNI_ROW(4);
                AVX_VNNI_ROW(5);
#undef AVX_VNNI_ROW
            }
            __m256i *v = raw[g];
            v[0] = s00, v[1] = s01, v[2] = s10, v[3] = s11, v[4] = s20, v[5] = s21;
            v[6] = s30, v[7] = s31, v[8] = s40, v[9] = s41, v[10] = s50, v[11] = s51;
        }
    }
    for (int g = 0; g < 2; g++)
        for (int h = 0; h < 2; h++) {
            const int j = 16 * g + 8 * h;
            const __m256i c = _mm256_loadu_si256((const __m256i *)(offset + j));
            for (int r = 0; r < mr; r++)
                _mm256_storeu_si256((__m256i *)(acc + (size_t)r * GEMM_NR + j),
                                    _mm256_add_epi32(raw[g][2 * r + h], c));
        }
}

/* How a call's epilogue runs: in scalar code, in AVX2, or in AVX-512 with
 * the activation in its registers (epilogue_form_of). */
typedef enum { EPI_SCALAR, EPI_AVX2, EPI_AVX512 } epilogue_form;

/* What every tile of a call's epilogue shares (run_panels). */
typedef struct {
    size_t ldc;                /* out's rows apart */
    size_t stride;             /* the rows' records' bytes apart */
    const enc_activation *act; /* NULL: none */
    epilogue_form form;        /* epilogue_form_of */
} tile_call;

/* A tile's sums waiting for their epilogue (finish_rows): rows [done, mr)
 * of c are still to be written from acc. */
typedef struct {
    const tile_call *call;
    float *c;           /* the tile's first row and column of out */
    const int32_t *acc; /* (mr, NR) */
    int mr, nn, done;
    const char *recs;         /* the tile's first row's record */
    const float *scale_w, *b; /* at the tile's first column; b may be NULL */
    const int8_t *panel;
} pending_tile;

static void finish_rows(pending_tile *t, int upto);

/* tile_vnni on AMX-INT8, mr <= TILE_M rows, the tiles configured
 * (amx_configure: tiles 0-3 the sums, 4-5 the rows, 6-7 the panel's
 * halves): each 16 rows of a against the panel's two halves by
 * tdpbusd (16 x 16 sums of 64 u8 x s8 products a step, KQ a multiple of
 * 64), two blocks of rows at once so each panel tile loaded serves both;
 * the last rows short of 16 on tile_vnni.  The sums start from the
 * columns' offsets, which correct them for the + 128 as tile_vnni's.
 * prev (or NULL), the tile before, is finished a slice of rows after each
 * step: its epilogue runs on the vector units while the tiles compute. */
__attribute__((target("avx512f,avx512vnni,amx-tile,amx-int8"))) static void
tile_amx(int32_t *acc, int mr, const void *a, size_t lda, const int8_t *panel, int KQ,
         const int32_t *offset, pending_tile *prev)
{
    const char *x = a;
    const size_t ldw = 4 * GEMM_NR; /* bytes: a panel's quad */
    const int full = mr / 16, steps = KQ / 64, rows = prev ? prev->mr : 0;
#define FINISH_SLICE(s) finish_rows(prev, ((s) + 1) * rows / steps)
    if (full)
        AMX_PANEL_STEPS(_tile_dpbusd, offset, full == 2, x, lda, 64, panel, ldw, 16 * ldw, steps,
                        FINISH_SLICE, acc, GEMM_NR * sizeof *acc);
#undef FINISH_SLICE
    finish_rows(prev, rows);
    for (int r = 16 * full; r < mr; r += VNNI_MR)
        tile_vnni(acc + (size_t)r * GEMM_NR, mr - r < VNNI_MR ? mr - r : VNNI_MR,
                  x + (size_t)r * lda, lda, panel, KQ, offset);
}

/* quantise_row_scalar in AVX2: the same bits. */
__attribute__((target("avx2"))) static void quantise_row_avx2(char *rec, a_format fmt,
                                                              const float *x, int K, int KQ)
{
    row_head *h = (row_head *)rec;
    row_outliers *o = &h->o;
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    /* sum |x| in 16 lanes by k mod 16 (in double: four chains of adds),
     * max |x| of every column */
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    __m256 mx = _mm256_setzero_ps(), my = mx;
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + k), absmask);
        const __m256 b = _mm256_and_ps(_mm256_loadu_ps(x + k + 8), absmask);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(b)));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)));
        mx = _mm256_max_ps(a, mx); /* a NaN: mx */
        my = _mm256_max_ps(b, my);
    }
    double lane[16];
    float m8[8];
    _mm256_storeu_pd(lane, s0);
    _mm256_storeu_pd(lane + 4, s1);
    _mm256_storeu_pd(lane + 8, s2);
    _mm256_storeu_pd(lane + 12, s3);
    _mm256_storeu_ps(m8, _mm256_max_ps(mx, my));
    float all = 0.0f;
    for (int j = 0; j < 8; j++)
        all = max_abs(all, m8[j]);
    for (; k < K; k++) {
        lane[k % 16] += fabs((double)x[k]);
        all = max_abs(all, x[k]);
    }
    const int K8 = K / 8 * 8;
    const double limit = outlier_limit(lane, K);
    /* the columns above the limit, in order of k (none when the row's
     * largest is not: most rows, and then no pass) */
    o->n = 0;
    const __m256d lim = _mm256_set1_pd(limit);
    const bool any = (double)all > limit;
    const int K8o = any ? K8 : 0, Ko = any ? K : 0;
    for (k = 0; k < K8o; k += 8) {
        const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + k), absmask);
        const int lo = _mm256_movemask_pd(
            _mm256_cmp_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), lim, _CMP_GT_OQ));
        const int hi = _mm256_movemask_pd(
            _mm256_cmp_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)), lim, _CMP_GT_OQ));
        for (unsigned bits = (unsigned)(lo | hi << 4); bits; bits &= bits - 1) {
            const int kk = k + __builtin_ctz(bits);
            outlier_add(o, kk, x[kk]);
        }
    }
    for (; k < Ko; k++)
        if (fabs((double)x[k]) > limit)
            outlier_add(o, k, x[k]);
    outliers_sort(o);
    float max = all;
    if (o->n) { /* the max again, over the stretches between the outliers */
        max = 0.0f;
        for (int i = 0, a = 0; i <= o->n; i++) {
            const int e = i < o->n ? o->k[i] : K;
            __m256 m = _mm256_setzero_ps();
            for (k = a; k + 8 <= e; k += 8)
                m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), absmask), m);
            _mm256_storeu_ps(m8, m);
            for (int j = 0; j < 8; j++)
                max = max_abs(max, m8[j]);
            for (; k < e; k++)
                max = max_abs(max, x[k]);
            a = e + 1;
        }
    }
    const float s = max / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
    char *dst = rec + HEAD_BYTES;
    k = 0;
    if (s > 0.0f) { /* 16 values at a time as quantise() computes each */
        const __m256 vs = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.0f);
        const __m256 hi = _mm256_set1_ps(127.0f), magic = _mm256_set1_ps(12582912.0f);
        for (; k + 16 <= K; k += 16) {
            __m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + k), vs);
            __m256 b = _mm256_mul_ps(_mm256_loadu_ps(x + k + 8), vs);
            a = _mm256_min_ps(_mm256_max_ps(a, lo), hi); /* a NaN: -127 */
            b = _mm256_min_ps(_mm256_max_ps(b, lo), hi);
            a = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
            b = _mm256_sub_ps(_mm256_add_ps(b, magic), magic);
            /* 16 int16 in order of k (packs interleaves the 128-bit halves) */
            const __m256i w = _mm256_permute4x64_epi64(
                _mm256_packs_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b)), 0xD8);
            if (fmt == FMT_S16) {
                _mm256_storeu_si256((__m256i *)(dst + 2 * (size_t)k), w);
                continue;
            }
            const __m256i v = fmt == FMT_S8
                                  ? _mm256_packs_epi16(w, w)
                                  : _mm256_packus_epi16(_mm256_add_epi16(w, _mm256_set1_epi16(128)),
                                                        _mm256_setzero_si256());
            _mm_storeu_si128((__m128i *)(dst + k),
                             _mm256_castsi256_si128(_mm256_permute4x64_epi64(v, 0x08)));
        }
    }
    for (; k < KQ; k++)
        store_value(dst, fmt, k, k < K && s > 0.0f ? quantise(x[k], inv) : 0);
    for (int i = 0; i < o->n; i++)
        store_value(dst, fmt, o->k[i], 0);
    h->scale = s;
}

/* epilogue_scalar in AVX2, 8 columns at a time (the rest in scalar code):
 * the same operations in the same order on each column, so the same bits.
 * A column's weight at an outlier k is byte k % 4 of its 4 at quad k / 4. */
__attribute__((target("avx2"))) static void
epilogue_avx2(float *out, size_t ldc, const int32_t *acc, int mr, int nn, const char *recs,
              size_t stride, const float *scale_w, const float *b, const int8_t *panel)
{
    const int n8 = nn / 8 * 8;
    for (int r = 0; r < mr; r++) {
        const row_head *h = (const row_head *)(recs + (size_t)r * stride);
        const __m256 sa = _mm256_set1_ps(h->scale);
        float *c = out + (size_t)r * ldc;
        for (int j = 0; j < n8; j += 8) {
            const __m256 sw = _mm256_loadu_ps(scale_w + j);
            const __m256 sum = _mm256_cvtepi32_ps(
                _mm256_loadu_si256((const __m256i *)(acc + (size_t)r * GEMM_NR + j)));
            __m256 v = _mm256_mul_ps(_mm256_mul_ps(sa, sw), sum);
            if (h->o.n) {
                __m256 corr = _mm256_setzero_ps();
                for (int i = 0; i < h->o.n; i++) {
                    const int k = h->o.k[i];
                    const __m256i quads = _mm256_loadu_si256(
                        (const __m256i *)(panel + (size_t)(k / 4) * 4 * GEMM_NR + 4 * j));
                    const __m256i w = _mm256_sra_epi32(
                        _mm256_sll_epi32(quads, _mm_cvtsi32_si128(24 - 8 * (k % 4))),
                        _mm_cvtsi32_si128(24));
                    corr = _mm256_add_ps(
                        corr, _mm256_mul_ps(_mm256_set1_ps(h->o.x[i]), _mm256_cvtepi32_ps(w)));
                }
                v = _mm256_add_ps(v, _mm256_mul_ps(sw, corr));
            }
            if (b)
                v = _mm256_add_ps(v, _mm256_loadu_ps(b + j));
            _mm256_storeu_ps(c + j, v);
        }
    }
    if (n8 < nn)
        epilogue_scalar(out, ldc, acc, mr, n8, nn, recs, stride, scale_w, b, panel);
}

/* epilogue_scalar in AVX-512, 16 columns at a time (the last ones under a
 * mask), then act in the same registers: the same operations in the same
 * order on each column, and act as ops_activation runs it with AVX-512
 * (v512_act on each lane), so the same bits as the other kernels'
 * epilogue and activation, without a second pass over the outputs. */
__attribute__((target("avx512f"))) static void
epilogue_avx512(float *out, size_t ldc, const int32_t *acc, int mr, int nn, const char *recs,
                size_t stride, const float *scale_w, const float *b, const int8_t *panel,
                const enc_activation *act)
{
    for (int r = 0; r < mr; r++) {
        const row_head *h = (const row_head *)(recs + (size_t)r * stride);
        const __m512 sa = _mm512_set1_ps(h->scale);
        float *c = out + (size_t)r * ldc;
        for (int j = 0; j < nn; j += 16) {
            const __mmask16 m = nn - j >= 16 ? 0xFFFF : (__mmask16)((1u << (nn - j)) - 1);
            const __m512 sw = _mm512_maskz_loadu_ps(m, scale_w + j);
            const __m512 sum =
                _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, acc + (size_t)r * GEMM_NR + j));
            __m512 v = _mm512_mul_ps(_mm512_mul_ps(sa, sw), sum);
            if (h->o.n) {
                __m512 corr = _mm512_setzero_ps();
                for (int i = 0; i < h->o.n; i++) {
                    const int k = h->o.k[i];
                    const __m512i quads =
                        _mm512_maskz_loadu_epi32(m, panel + (size_t)(k / 4) * 4 * GEMM_NR + 4 * j);
                    const __m512i w = _mm512_sra_epi32(
                        _mm512_sll_epi32(quads, _mm_cvtsi32_si128(24 - 8 * (k % 4))),
                        _mm_cvtsi32_si128(24));
                    corr = _mm512_add_ps(
                        corr, _mm512_mul_ps(_mm512_set1_ps(h->o.x[i]), _mm512_cvtepi32_ps(w)));
                }
                v = _mm512_add_ps(v, _mm512_mul_ps(sw, corr));
            }
            if (b)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + j));
            if (act)
                v = v512_act(v, *act);
            _mm512_mask_storeu_ps(c + j, m, v);
        }
    }
}

#else /* the portable kernel only */

static bool kernel_here(i8_kernel k)
{
    return k == KERNEL_PORTABLE;
}

#endif

/* The kernel a call runs now: the CPU's best, no faster than the cap. */
static i8_kernel current_kernel(void)
{
    i8_kernel k = (i8_kernel)atomic_load(&kernel_cap);
    while (k > KERNEL_PORTABLE && !kernel_here(k))
        k--;
    return k;
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
            return kernel_here((i8_kernel)k);
        }
    return false;
}

static a_format format_of(i8_kernel k)
{
    return k == KERNEL_AVX2 ? FMT_S16 : k >= KERNEL_AVX_VNNI ? FMT_U8 : FMT_S8;
}

/* Whether the rows' steps run in AVX2 (every CPU with the AVX2 or the
 * AVX512_VNNI kernel has AVX2): with the portable kernel they run in
 * scalar code, so the tests that hold every kernel to the same bits hold
 * the two forms to them too. */
static bool row_vector(i8_kernel k)
{
    return k >= KERNEL_AVX2;
}

/* The epilogue's form for kernel k: AVX-512 beside the AVX-512 kernels
 * (their CPUs have it, and simd_enabled() holds: ops_activation's AVX-512
 * form, the one it fuses), AVX2 or scalar code as row_vector says. */
static epilogue_form epilogue_form_of(i8_kernel k)
{
    return k >= KERNEL_VNNI ? EPI_AVX512 : row_vector(k) ? EPI_AVX2 : EPI_SCALAR;
}

/* Bytes of one row's record in fmt. */
static size_t record_bytes(a_format fmt, int KQ)
{
    return HEAD_BYTES + ((size_t)KQ * (fmt == FMT_S16 ? 2 : 1) + 63) / 64 * 64;
}

/* Row x into the record at rec for kernel kern, in AVX2 (vec) or scalar
 * code. */
static void quantise_row(char *rec, i8_kernel kern, bool vec, const float *x, int K)
{
    const a_format fmt = format_of(kern);
#if defined(__x86_64__) && defined(__GNUC__)
    if (vec)
        quantise_row_avx2(rec, fmt, x, K, k_padded(K));
    else
#endif
        quantise_row_scalar(rec, fmt, x, K, k_padded(K));
    ((row_head *)rec)->kern = kern;
}

/* Rows a kernel takes a call. */
static int tile_rows(i8_kernel kern)
{
    return kern == KERNEL_AVX2 || kern == KERNEL_AVX_VNNI ? AVX2_MR
           : kern == KERNEL_VNNI                          ? VNNI_MR
                                                          : TILE_M;
}

/* acc (mr, NR) = the mr rows' values at a (lda bytes apart) . panel p of
 * q, in int32 on kernel kern; prev, the tile before, may be finished
 * meanwhile (AMX's) or not. */
static void run_tile(i8_kernel kern, int32_t *acc, int mr, const char *a, size_t lda,
                     const gemm_i8 *q, int p, pending_tile *prev)
{
    const int8_t *panel = q->q + (size_t)p * (size_t)q->KQ * GEMM_NR;
#if defined(__x86_64__) && defined(__GNUC__)
    const int32_t *offset = q->offset + (size_t)p * GEMM_NR;
    switch (kern) {
    case KERNEL_AMX:
        tile_amx(acc, mr, a, lda, panel, q->KQ, offset, prev);
        return;
    case KERNEL_VNNI:
        tile_vnni(acc, mr, a, lda, panel, q->KQ, offset);
        return;
    case KERNEL_AVX_VNNI:
        tile_avx_vnni(acc, mr, a, lda, panel, q->KQ, offset);
        return;
    case KERNEL_AVX2:
        tile_avx2(acc, mr, a, lda, panel, q->KQ);
        return;
    case KERNEL_PORTABLE:
        break;
    }
#endif
    (void)kern;
    (void)prev;
    tile_portable(acc, mr, a, lda, panel, q->KQ);
}

/* Rows [t->done, upto) of tile t through the epilogue, then act; NULL t:
 * nothing. */
static void finish_rows(pending_tile *t, int upto)
{
    if (!t || upto <= t->done)
        return;
    const tile_call *k = t->call;
    const int lo = t->done, n = upto - lo;
    float *c = t->c + (size_t)lo * k->ldc;
    const int32_t *acc = t->acc + (size_t)lo * GEMM_NR;
    const char *r = t->recs + (size_t)lo * k->stride;
#if defined(__x86_64__) && defined(__GNUC__)
    if (k->form == EPI_AVX512) /* the activation too */
        epilogue_avx512(c, k->ldc, acc, n, t->nn, r, k->stride, t->scale_w, t->b, t->panel, k->act);
    else if (k->form == EPI_AVX2)
        epilogue_avx2(c, k->ldc, acc, n, t->nn, r, k->stride, t->scale_w, t->b, t->panel);
    else
#endif
        epilogue_scalar(c, k->ldc, acc, n, 0, t->nn, r, k->stride, t->scale_w, t->b, t->panel);
    if (k->act && k->form != EPI_AVX512)
        ops_bias_act_cols(c, (int)k->ldc, NULL, n, 0, t->nn, k->act);
    t->done = upto;
}

/* out (M rows ldc apart), panels [p0, p1) = the rows' records (stride
 * bytes apart, every one for the same kernel) . the panels, then act.
 * acc: 2 x TILE_M x NR int32, the sums of a tile and of the one before,
 * whose epilogue waits until the next tile's products (run_tile). */
static void run_panels(float *out, int ldc, const char *recs, size_t stride, const gemm_i8 *q,
                       const float *b, int M, int p0, int p1, const enc_activation *act,
                       int32_t *acc)
{
    const i8_kernel kern = ((const row_head *)recs)->kern;
    const int tile = tile_rows(kern);
    p1 = p1 < q->P ? p1 : q->P;
    if (kern == KERNEL_AMX)
        amx_configure(); /* the tiles are this thread's: shaped for each call */
    /* panels in groups of about PANELS_BLOCK_BYTES, every tile of rows
     * over a group before the next: the group stays in L2, the tile's rows
     * in L1 while the group's panels go by, and each row of out is written
     * in one stretch of the group's columns */
    const size_t panel_bytes = (size_t)q->KQ * GEMM_NR;
    int group = (int)(PANELS_BLOCK_BYTES / panel_bytes);
    group = group < 1 ? 1 : group;
    const tile_call call = {
        .ldc = (size_t)ldc, .stride = stride, .act = act, .form = epilogue_form_of(kern)};
    pending_tile prev = {0};
    for (int g0 = p0, k = 0; g0 < p1; g0 += group) {
        const int g1 = p1 - g0 < group ? p1 : g0 + group;
        for (int i = 0; i < M; i += tile) {
            const int mr = M - i < tile ? M - i : tile;
            const char *r = recs + (size_t)i * stride;
            for (int p = g0; p < g1; p++, k ^= 1) {
                const int n0 = p * GEMM_NR, nn = q->N - n0 < GEMM_NR ? q->N - n0 : GEMM_NR;
                int32_t *sums = acc + (size_t)k * TILE_M * GEMM_NR;
                run_tile(kern, sums, mr, r + HEAD_BYTES, stride, q, p, &prev);
                finish_rows(&prev, prev.mr);
                prev = (pending_tile){.call = &call,
                                      .c = out + (size_t)i * (size_t)ldc + n0,
                                      .acc = sums,
                                      .mr = mr,
                                      .nn = nn,
                                      .recs = r,
                                      .scale_w = q->scale + n0,
                                      .b = b ? b + n0 : NULL,
                                      .panel = q->q + (size_t)p * panel_bytes};
            }
        }
    }
    finish_rows(&prev, prev.mr);
    if (kern == KERNEL_AMX)
        amx_release();
}

void gemm_i8_cols(float *out, int ldc, const float *in, int lda, const gemm_i8 *q, const float *b,
                  int M, int p0, int p1, const enc_activation *act, void *scratch)
{
    const i8_kernel kern = current_kernel();
    /* scratch: two tiles' sums, then a chunk of rows' records */
    const size_t stride = record_bytes(format_of(kern), q->KQ);
    const size_t head = 2 * TILE_M * GEMM_NR * sizeof(int32_t);
    int chunk = (int)((GEMM_SCRATCH_BYTES - head) / stride);
    chunk = chunk > M ? M : chunk;
    char *recs = (char *)scratch + head;
    for (int m0 = 0; m0 < M; m0 += chunk) {
        const int mc = M - m0 < chunk ? M - m0 : chunk;
        for (int r = 0; r < mc; r++)
            quantise_row(recs + (size_t)r * stride, kern, row_vector(kern),
                         in + (size_t)(m0 + r) * (size_t)lda, q->K);
        run_panels(out + (size_t)m0 * (size_t)ldc, ldc, recs, stride, q, b, mc, p0, p1, act,
                   scratch);
    }
}

size_t gemm_i8_rows_bytes(int M, int K)
{
    return (size_t)M * record_bytes(FMT_S16, k_padded(K));
}

void gemm_i8_quantise(void *rows, const float *in, int lda, int K, int r0, int r1)
{
    const i8_kernel kern = current_kernel();
    const size_t stride = record_bytes(format_of(kern), k_padded(K));
    for (int r = r0; r < r1; r++)
        quantise_row((char *)rows + (size_t)r * stride, kern, row_vector(kern),
                     in + (size_t)r * (size_t)lda, K);
}

const void *gemm_i8_rows_at(const void *rows, int K, int r)
{
    return (const char *)rows + (size_t)r * record_bytes(format_of(current_kernel()), k_padded(K));
}

void gemm_i8_cols_rows(float *out, int ldc, const void *rows, const gemm_i8 *q, const float *b,
                       int M, int p0, int p1, const enc_activation *act, void *scratch)
{
    if (M < 1)
        return;
    const a_format fmt = format_of(((const row_head *)rows)->kern);
    run_panels(out, ldc, rows, record_bytes(fmt, q->KQ), q, b, M, p0, p1, act, scratch);
}

float gemm_i8_quantise_test(const char *kernel, bool vec, const float *x, int K, int *xq,
                            int *outliers, int *n_outliers)
{
    i8_kernel kern = KERNEL_PORTABLE;
    for (int k = 0; k < (int)(sizeof kernel_names / sizeof *kernel_names); k++)
        if (!strcmp(kernel, kernel_names[k]))
            kern = (i8_kernel)k;
    const a_format fmt = format_of(kern);
#if !(defined(__x86_64__) && defined(__GNUC__))
    vec = false;
#else
    __builtin_cpu_init();
    vec = vec && __builtin_cpu_supports("avx2");
#endif
    const int KQ = (K + 3) / 4 * 4;
    char *rec = aligned_alloc(64, record_bytes(fmt, k_padded(K)));
    if (!rec)
        return NAN;
    quantise_row(rec, kern, vec, x, K);
    const row_head *h = (const row_head *)rec;
    const char *d = rec + HEAD_BYTES;
    for (int k = 0; k < KQ; k++)
        xq[k] = fmt == FMT_S8    ? ((const int8_t *)d)[k]
                : fmt == FMT_S16 ? ((const int16_t *)d)[k]
                                 : ((const uint8_t *)d)[k] - 128;
    *n_outliers = h->o.n;
    for (int i = 0; i < h->o.n; i++)
        outliers[i] = h->o.k[i];
    const float s = h->scale;
    free(rec);
    return s;
}
