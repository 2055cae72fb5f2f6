/* gemm.c - Linear layers on weights packed once (see gemm.h).
 *
 * The kernel keeps a GEMM_MR x GEMM_NR tile of the output in 24 AVX-512
 * registers and runs down k: per step it loads one packed weight row (two
 * vectors) and broadcasts MR activations.  Blocking, sized for a 32-48 KiB
 * L1 and a 1-2 MiB L2 per core:
 *   - k in blocks of KC, so the activation block (MC x KC) stays in L2 and a
 *     panel's slice (KC x NR, 96 KiB) streams through L1/L2 once per block;
 *   - rows in chunks of MC, read in place, except when they are a multiple
 *     of 2 KiB apart: 12 such rows fall in a few L1 sets (all in one when
 *     the stride is a multiple of 4 KiB), so each chunk is first copied to
 *     the thread's scratch, SCRATCH_LD floats a row.  The workspace pads its
 *     buffers' rows (gemm_stride_ok) so the forward's Linears need no copy.
 * A panel's slice comes from L3 or memory for the first tile of each chunk
 * and from L2 for the rest; that first tile prefetches the slice PREFETCH_K
 * k-steps ahead of its loads (the hardware's own prefetch runs too close
 * behind when the weights are in memory).
 * Partial tiles: fewer rows by an instance of the kernel per row count,
 * fewer columns by masked loads and stores. */
#include "kernels/gemm.h"

#include "base/mem.h"
#include "kernels/amx.h"
#include "kernels/gemm_int8.h"
#include "kernels/ops.h"
#include "kernels/simd.h"

#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_MR 12
#define KC      768
#define MC      GEMM_MC
/* Row stride of the scratch copy: KC + 16 floats, 3136 bytes, so 12 rows
 * fall in different L1 sets. */
#define SCRATCH_LD (KC + 16)
/* How far ahead (k-steps, of GEMM_NR floats each: 4 KiB) the first tile of a
 * chunk prefetches its panel slice.  B=8 L=128 forward, paired against no
 * prefetch: 1.9 ms faster (median of 16 rounds, 14 faster) while the machine
 * was slow (the weights evicted to memory), unchanged (-0.08 ms, 8 of 14)
 * while it was fast; B=1 L=128 and B=1 L=512 unchanged.  Distances of 16
 * and 64 rows, or into L2 only, gained less on the Linears alone. */
#define PREFETCH_K 32
/* The bfloat16 kernels' activation block in the scratch: rows of KC / 2
 * pairs, SCRATCH_LD_BF apart (KC / 2 + 16 words, 1,600 bytes: 12 rows in
 * different L1 sets). */
#define SCRATCH_LD_BF (KC / 2 + 16)

struct gemm_packed {
    float *data;  /* (P, K, NR): panel p, row k, column j = w[p*NR + j][k]; NULL in bfloat16 */
    uint32_t *bf; /* bfloat16: (P, KP, NR) pairs, KP = ceil(K / 2): panel p, pair q, column j =
                     w[p*NR + j][2q] in the low half, w[p*NR + j][2q + 1] in the high; or NULL */
    gemm_i8 *i8;  /* int8: the quantised weights (gemm_int8.h), data and bf NULL; or NULL */
    int N, K, P;
};

/* Bytes of pw's panels. */
static size_t panel_bytes(const gemm_packed *pw)
{
    return pw->bf ? (size_t)pw->P * (size_t)((pw->K + 1) / 2) * GEMM_NR * sizeof(uint32_t)
                  : (size_t)pw->P * (size_t)pw->K * GEMM_NR * sizeof(float);
}

void gemm_packed_free(gemm_packed *pw)
{
    if (!pw)
        return;
    gemm_i8_free(pw->i8);
    if (!pw->i8)
        mem_zfree(pw->bf ? (void *)pw->bf : (void *)pw->data, panel_bytes(pw));
    free(pw);
}

size_t gemm_packed_bytes(const gemm_packed *pw)
{
    return !pw ? 0 : pw->i8 ? sizeof *pw + gemm_i8_bytes(pw->i8) : sizeof *pw + panel_bytes(pw);
}

bool gemm_packed_bf16(const gemm_packed *pw)
{
    return pw && pw->bf;
}

bool gemm_packed_int8(const gemm_packed *pw)
{
    return pw && pw->i8;
}

int gemm_panels(const gemm_packed *pw)
{
    return pw ? pw->P : 0;
}

_Static_assert((size_t)MC * SCRATCH_LD * sizeof(float) <= GEMM_SCRATCH_BYTES,
               "a block of MC rows fits the scratch (kernels/panel.h)");

size_t gemm_scratch_bytes(void)
{
    return GEMM_SCRATCH_BYTES;
}

bool gemm_stride_ok(int ld)
{
    return ((size_t)ld * sizeof(float)) % 2048 != 0;
}

int gemm_padded_ld(int n)
{
    return gemm_stride_ok(n) ? n : n + 16;
}

/* The bfloat16 bits of x rounded to nearest even (x finite). */
static uint32_t bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

/* Rows of the source (in blocks, as pack_rows) into bfloat16 pair panels;
 * dst is zeroed, so past N and K it stays 0. */
static void pack_rows_bf16(uint32_t *dst, const float *const *src, const int *cut, int n_src,
                           int N, int K)
{
    const int KP = (K + 1) / 2;
    int part = 0;
    for (int row = 0; row < N; row++) {
        while (part < n_src - 1 && row >= cut[part])
            part++;
        const float *w = src[part] + (size_t)(row - (part ? cut[part - 1] : 0)) * (size_t)K;
        uint32_t *d = dst + (size_t)(row / GEMM_NR) * (size_t)KP * GEMM_NR + row % GEMM_NR;
        for (int q = 0; q < KP; q++)
            d[(size_t)q * GEMM_NR] =
                bf16_bits(w[2 * q]) | (2 * q + 1 < K ? bf16_bits(w[2 * q + 1]) << 16 : 0u);
    }
}

static void pack_rows(float *dst, uint32_t *bf, const float *const *src, const int *cut, int n_src,
                      int lds, int N, int K, float scale);

/* gemm_pack_parts, in float32 (AVX-512F only: its kernels are the only
 * readers) or bfloat16 (on any CPU: gemm_bf16_blas_cols reads it too). */
static gemm_packed *pack_parts(const float *const *w, const int *rows, int n, int K, bool bf16)
{
    enum { MAX_PARTS = 4 };
    int cut[MAX_PARTS], N = 0; /* block i ends before row cut[i] */
    for (int i = 0; i < n && i < MAX_PARTS; i++)
        cut[i] = N += rows[i];
    if ((!bf16 && !simd_supported()) || n < 1 || n > MAX_PARTS || N < 1 || K < 1)
        return NULL;
    gemm_packed *pw = calloc(1, sizeof *pw);
    if (!pw)
        return NULL;
    pw->N = N;
    pw->K = K;
    pw->P = (N + GEMM_NR - 1) / GEMM_NR;
    void *panels = mem_zalloc(bf16 ? (size_t)pw->P * (size_t)((K + 1) / 2) * GEMM_NR * 4
                                     : (size_t)pw->P * (size_t)K * GEMM_NR * sizeof(float));
    if (!panels) {
        free(pw);
        return NULL;
    }
    if (bf16)
        pack_rows_bf16(pw->bf = panels, w, cut, n, N, K);
    else
        pack_rows(pw->data = panels, NULL, w, cut, n, K, N, K, 1.0f);
    return pw;
}

gemm_packed *gemm_pack(const float *w, int N, int K)
{
    return pack_parts(&w, &N, 1, K, false);
}

gemm_packed *gemm_pack_parts(const float *const *w, const int *rows, int n, int K)
{
    return pack_parts(w, rows, n, K, false);
}

gemm_packed *gemm_pack_bf16(const float *w, int N, int K)
{
    return pack_parts(&w, &N, 1, K, true);
}

gemm_packed *gemm_pack_parts_bf16(const float *const *w, const int *rows, int n, int K)
{
    return pack_parts(w, rows, n, K, true);
}

/* gemm_pack_parts_int8: the quantised weights in a gemm_packed. */
static gemm_packed *pack_parts_int8(const float *const *w, const int *rows, int n, int K)
{
    enum { MAX_PARTS = 4 };
    int cut[MAX_PARTS], N = 0; /* block i ends before row cut[i] */
    for (int i = 0; i < n && i < MAX_PARTS; i++)
        cut[i] = N += rows[i];
    if (n < 1 || n > MAX_PARTS || N < 1)
        return NULL;
    gemm_packed *pw = calloc(1, sizeof *pw);
    if (!pw || !(pw->i8 = gemm_i8_pack(w, cut, n, N, K))) {
        free(pw);
        return NULL;
    }
    pw->N = N;
    pw->K = K;
    pw->P = (N + GEMM_NR - 1) / GEMM_NR;
    return pw;
}

size_t gemm_int8_rows_bytes(int M, int K)
{
    return gemm_i8_rows_bytes(M, K);
}

void gemm_int8_quantise(void *rows, const float *in, int lda, int K, int r0, int r1)
{
    gemm_i8_quantise(rows, in, lda, K, r0, r1);
}

const void *gemm_int8_rows_at(const void *rows, int K, int r)
{
    return gemm_i8_rows_at(rows, K, r);
}

void gemm_int8_cols(float *out, int ldc, const void *rows, const gemm_packed *pw, const float *b,
                    int M, int p0, int p1, const enc_activation *act, float *scratch)
{
    gemm_i8_cols_rows(out, ldc, rows, pw->i8, b, M, p0, p1, act, scratch);
}

gemm_packed *gemm_pack_int8(const float *w, int N, int K)
{
    return pack_parts_int8(&w, &N, 1, K);
}

gemm_packed *gemm_pack_parts_int8(const float *const *w, const int *rows, int n, int K)
{
    return pack_parts_int8(w, rows, n, K);
}

gemm_grid gemm_grid_of(const gemm_packed *pw, int M, int nth, const void *rows)
{
    const int want = GEMM_ITEMS_PER_THREAD * nth;
    if (pw->i8) { /* every panel an item; rows in blocks only when short of items */
        const int split = (want + pw->P - 1) / pw->P;
        int mb = (M + split - 1) / split;
        mb = (mb + GEMM_I8_MR - 1) / GEMM_I8_MR * GEMM_I8_MR;
        mb = mb < M ? mb : M > 0 ? M : 1;
        return (gemm_grid){.M = M,
                           .P = pw->P,
                           .blocks = (M + mb - 1) / mb,
                           .groups = pw->P,
                           .mb = mb,
                           .rows = rows};
    }
    const int blocks = (M + GEMM_MC - 1) / GEMM_MC;
    int groups = (want + blocks - 1) / blocks;
    groups = groups > pw->P ? pw->P : groups < 1 ? 1 : groups;
    return (gemm_grid){.M = M, .P = pw->P, .blocks = blocks, .groups = groups, .mb = GEMM_MC};
}

int gemm_grid_items(gemm_grid g)
{
    return g.blocks * g.groups;
}

void gemm_packed_items(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                       const float *b, gemm_grid g, int i0, int i1, const enc_activation *act,
                       float *scratch)
{
    for (int i = i0; i < i1;) {
        const int block = i / g.groups, g0 = i % g.groups;
        const int g1 = g0 + (i1 - i) < g.groups ? g0 + (i1 - i) : g.groups;
        const int r0 = block * g.mb, r1 = r0 + g.mb < g.M ? r0 + g.mb : g.M;
        const int p0 = (int)((long long)g.P * g0 / g.groups);
        const int p1 = (int)((long long)g.P * g1 / g.groups);
        float *o = out + (size_t)r0 * (size_t)ldc;
        if (p1 > p0 && pw->i8)
            gemm_int8_cols(o, ldc, gemm_int8_rows_at(g.rows, pw->K, r0), pw, b, r1 - r0, p0, p1,
                           act, scratch);
        else if (p1 > p0)
            gemm_packed_cols(o, ldc, in + (size_t)r0 * (size_t)lda, lda, pw, b, r1 - r0, p0, p1,
                             act, scratch);
        i += g1 - g0;
    }
}

size_t gemm_pairs_words(int N, int K)
{
    return (size_t)((N + GEMM_NR - 1) / GEMM_NR) * (size_t)((K + 1) / 2) * GEMM_NR;
}

/* The portable bfloat16 Linear's blocks: k in blocks of BLAS_KC (even: whole
 * pairs), rows of BLAS_MC, columns of BLAS_NC (whole panels).  The widened
 * weights (BLAS_KC x BLAS_NC) and the rounded rows (BLAS_MC x BLAS_KC) fit
 * the scratch together: 384 KiB of gemm_scratch_bytes()'s 588. */
enum { BLAS_KC = 256, BLAS_MC = 128, BLAS_NC = 8 * GEMM_NR };
_Static_assert(BLAS_KC * BLAS_NC + BLAS_MC * BLAS_KC <= MC * SCRATCH_LD,
               "gemm_bf16_blas_cols's blocks fit gemm_scratch_bytes()");

void gemm_bf16_blas_cols(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                         const float *b, int M, int p0, int p1, const enc_activation *act,
                         float *scratch)
{
    const int K = pw->K, KP = (K + 1) / 2, N = pw->N;
    float *wide = scratch, *rows = scratch + (size_t)BLAS_KC * BLAS_NC;
    for (int g0 = p0; g0 < p1; g0 += BLAS_NC / GEMM_NR) { /* a group of panels */
        const int g1 = g0 + BLAS_NC / GEMM_NR < p1 ? g0 + BLAS_NC / GEMM_NR : p1;
        const int n0 = g0 * GEMM_NR, n1 = g1 * GEMM_NR < N ? g1 * GEMM_NR : N, nc = n1 - n0;
        for (int k0 = 0; k0 < K; k0 += BLAS_KC) {
            const int kc = K - k0 < BLAS_KC ? K - k0 : BLAS_KC;
            /* the group's weights for k0..k0+kc, widened: (kc, nc), row-major */
            for (int p = g0; p < g1; p++) {
                const uint32_t *panel = pw->bf + (size_t)p * KP * GEMM_NR;
                const int j0 = (p - g0) * GEMM_NR, nj = n1 - p * GEMM_NR < GEMM_NR
                                                             ? n1 - p * GEMM_NR
                                                             : GEMM_NR;
                for (int k = 0; k < kc; k++) {
                    const uint32_t *pair = panel + (size_t)((k0 + k) / 2) * GEMM_NR;
                    float *dst = wide + (size_t)k * nc + j0;
                    for (int j = 0; j < nj; j++) {
                        const uint32_t bits =
                            (k0 + k) % 2 ? pair[j] & 0xFFFF0000u : pair[j] << 16;
                        memcpy(&dst[j], &bits, sizeof bits);
                    }
                }
            }
            for (int i0 = 0; i0 < M; i0 += BLAS_MC) {
                const int mc = M - i0 < BLAS_MC ? M - i0 : BLAS_MC;
                for (int i = 0; i < mc; i++) { /* the rows, rounded to bfloat16 */
                    const float *src = in + (size_t)(i0 + i) * lda + k0;
                    float *dst = rows + (size_t)i * kc;
                    for (int k = 0; k < kc; k++) {
                        const uint32_t bits = bf16_bits(src[k]) << 16;
                        memcpy(&dst[k], &bits, sizeof bits);
                    }
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mc, nc, kc, 1.0f, rows, kc,
                            wide, nc, k0 ? 1.0f : 0.0f, out + (size_t)i0 * ldc + n0, ldc);
            }
        }
        ops_bias_act_cols(out, ldc, b, M, n0, n1, act);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)

#include "kernels/vec512.h"

#include <immintrin.h>

/* Whether the bfloat16 kernels may use vdpbf16ps (gemm_bf16_use_dpbf16). */
static _Atomic bool dpbf16_allowed = true;

static bool cpu_dpbf16(void)
{
    return simd_supported() && __builtin_cpu_supports("avx512bf16");
}

/* Whether the bfloat16 kernels may use AMX-BF16 (gemm_bf16_use_amx). */
static _Atomic bool amx_allowed = true;

/* Whether a call with vdpbf16ps allowed runs on AMX-BF16 too. */
static bool bf16_amx(void)
{
    return amx_allowed && amx_usable(AMX_BF16);
}

bool gemm_bf16_native(void)
{
    return simd_enabled() && cpu_dpbf16() && dpbf16_allowed;
}

const char *gemm_bf16_kernel(void)
{
    return !simd_enabled()                    ? "openblas"
           : gemm_bf16_native() && bf16_amx() ? "amx_bf16"
           : gemm_bf16_native()               ? "avx512_bf16"
                                              : "avx512f";
}

void gemm_bf16_use_dpbf16(bool on)
{
    dpbf16_allowed = on;
}

void gemm_bf16_use_amx(bool on)
{
    amx_allowed = on;
}

/* 16 vectors transposed in place: r[i] lane j <- r[j] lane i. */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) { /* pairs of rows interleaved */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* then pairs of pairs */
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    /* each 128-bit block of r[i] is now 4 rows of one column; two rounds
     * of 128-bit block shuffles gather a column's four blocks */
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
    }
}

/* Each lane of v rounded to bfloat16 (nearest even), in its low 16 bits
 * (bf16_bits on 16 lanes). */
__attribute__((target("avx512f"), always_inline)) static inline __m512i round_bf16(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), odd)),
                             16);
}

/* Lane j: the pair (lo[j], hi[j]) rounded to bfloat16, lo in the low half. */
__attribute__((target("avx512f"), always_inline)) static inline __m512i pair_up(__m512 lo,
                                                                                __m512 hi)
{
    return _mm512_or_si512(round_bf16(lo), _mm512_slli_epi32(round_bf16(hi), 16));
}

void gemm_pack_t(float *dst, const float *src, int lds, int N, int K, float scale)
{
    pack_rows(dst, NULL, &src, &N, 1, lds, N, K, scale);
}

void gemm_pack_t_bf16(uint32_t *dst, const float *src, int lds, int N, int K, float scale)
{
    pack_rows(NULL, dst, &src, &N, 1, lds, N, K, scale);
}

/* gemm_pack_t over rows in blocks: row r of the source is row r - cut[i-1]
 * of src[i], block i being the one with cut[i - 1] <= r < cut[i]; into dst,
 * or with dst NULL into bf as gemm_pack_t_bf16's pairs. */
__attribute__((target("avx512f"))) static void pack_rows(float *dst, uint32_t *bf,
                                                         const float *const *src, const int *cut,
                                                         int n_src, int lds, int N, int K,
                                                         float scale)
{
    const int P = (N + GEMM_NR - 1) / GEMM_NR, KP = (K + 1) / 2;
    const __m512 vs = _mm512_set1_ps(scale);
    for (int p = 0; p < P; p++)
        for (int half = 0; half < 2; half++) {
            const int j0 = p * GEMM_NR + half * 16; /* source rows j0..j0+15 */
            const int nj = N - j0 < 16 ? (N - j0 > 0 ? N - j0 : 0) : 16;
            for (int k0 = 0; k0 < K; k0 += 16) {
                const int nk = K - k0 < 16 ? K - k0 : 16;
                const __mmask16 km = nk == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nk) - 1u);
                __m512 r[16];
                int part = 0;
                for (int j = 0; j < 16; j++) {
                    while (part < n_src - 1 && j0 + j >= cut[part])
                        part++;
                    const int base = part ? cut[part - 1] : 0;
                    const float *row = src[part] + (size_t)(j0 + j - base) * (size_t)lds + k0;
                    r[j] = j >= nj    ? _mm512_setzero_ps()
                           : nk == 16 ? _mm512_mul_ps(vs, _mm512_loadu_ps(row))
                                      : _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(km, row));
                }
                transpose16(r); /* r[k]: k0 + k of the 16 rows, 0 past K */
                for (int k = 0; k < nk; k += dst ? 1 : 2)
                    if (dst)
                        _mm512_storeu_ps(
                            dst + ((size_t)p * K + (size_t)(k0 + k)) * GEMM_NR + half * 16, r[k]);
                    else
                        _mm512_storeu_si512(bf + ((size_t)p * KP + (size_t)(k0 + k) / 2) * GEMM_NR +
                                                half * 16,
                                            pair_up(r[k], r[k + 1]));
            }
        }
}

/* What the kernel does with the tile it has summed. */
enum { ACCUMULATE = 1, ADD_BIAS = 2 };

/* The kernels' epilogue: the tile acc (mr rows) into c as mode says. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_tile(int mr, bool edge, __m512 acc[GEMM_MR][2], float *c, size_t ldc, unsigned mode,
           const float *bias, __mmask16 m0, __mmask16 m1)
{
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (mode & ADD_BIAS) {
        bias0 = edge ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_loadu_ps(bias);
        bias1 = edge ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_loadu_ps(bias + 16);
    }
    for (int r = 0; r < GEMM_MR; r++)
        if (r < mr) {
            float *cr = c + (size_t)r * ldc;
            __m512 v0 = acc[r][0], v1 = acc[r][1];
            if (mode & ACCUMULATE) {
                v0 = _mm512_add_ps(edge ? _mm512_maskz_loadu_ps(m0, cr) : _mm512_loadu_ps(cr), v0);
                v1 = _mm512_add_ps(
                    edge ? _mm512_maskz_loadu_ps(m1, cr + 16) : _mm512_loadu_ps(cr + 16), v1);
            }
            if (mode & ADD_BIAS) {
                v0 = _mm512_add_ps(v0, bias0);
                v1 = _mm512_add_ps(v1, bias1);
            }
            if (edge) {
                _mm512_mask_storeu_ps(cr, m0, v0);
                _mm512_mask_storeu_ps(cr + 16, m1, v1);
            } else {
                _mm512_storeu_ps(cr, v0);
                _mm512_storeu_ps(cr + 16, v1);
            }
        }
}

/* c (mr, ldc), columns masked by m0 | m1 (=, or += with ACCUMULATE)
 *   a (mr rows lda apart, kc) . b (kc rows ldb apart, NR) [+ bias (NR) with
 *   ADD_BIAS];
 * b's columns outside the masks are never read (prefetch, which loads
 * nothing and cannot fault, reads ahead of b when asked). */
__attribute__((target("avx512f"), always_inline)) static inline void
kernel(int mr, bool edge, bool prefetch, const float *a, size_t lda, const float *b, size_t ldb,
       int kc, float *c, size_t ldc, unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    __m512 acc[GEMM_MR][2];
    for (int r = 0; r < GEMM_MR; r++)
        if (r < mr)
            acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++, a++, b += ldb) {
        if (prefetch) { /* the two cache lines of row k + PREFETCH_K */
            _mm_prefetch((const char *)(b + PREFETCH_K * ldb), _MM_HINT_T0);
            _mm_prefetch((const char *)(b + PREFETCH_K * ldb + 16), _MM_HINT_T0);
        }
        /* masked loads only on a partial panel: on Zen 4 they are slow */
        const __m512 b0 = edge ? _mm512_maskz_loadu_ps(m0, b) : _mm512_loadu_ps(b);
        const __m512 b1 = edge ? _mm512_maskz_loadu_ps(m1, b + 16) : _mm512_loadu_ps(b + 16);
        for (int r = 0; r < GEMM_MR; r++)
            if (r < mr) {
                const __m512 ar = _mm512_set1_ps(a[(size_t)r * lda]);
                acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
            }
    }
    store_tile(mr, edge, acc, c, ldc, mode, bias, m0, m1);
}

/* The kernel for 1..MR rows, an instance per row count. */
__attribute__((target("avx512f"))) static void
kernel_rows(int mr, const float *a, size_t lda, const float *b, size_t ldb, int kc, float *c,
            size_t ldc, unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    /* clang-format off */
#define ROWS(n)                                                                                    \
    case n:                                                                                        \
        if (m1 != 0xFFFF)                                                                          \
            kernel(n, true, false, a, lda, b, ldb, kc, c, ldc, mode, bias, m0, m1);                \
        else                                                                                       \
            kernel(n, false, false, a, lda, b, ldb, kc, c, ldc, mode, bias, m0, m1);               \
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

/* The kernel for a chunk's first full tile of a whole panel, prefetching the
 * panel's slice for the tiles after it. */
__attribute__((target("avx512f"))) static void kernel_first(const float *a, size_t lda,
                                                            const float *b, int kc, float *c,
                                                            size_t ldc, unsigned mode,
                                                            const float *bias)
{
    kernel(GEMM_MR, false, true, a, lda, b, GEMM_NR, kc, c, ldc, mode, bias, 0xFFFF, 0xFFFF);
}

/* The bfloat16 kernels: c (mr, ldc) [+]= a (mr rows lda apart, kq pairs of
 * bfloat16) . b (kq pairs of NR columns) [+ bias], b read whole (its
 * panels are zero past N).  dp: vdpbf16ps; else each pair widened to two
 * float32 (a bfloat16 is a float32's top half) and multiplied by FMA, odd k
 * first as vdpbf16ps sums them; the products are exact in float32 either
 * way. */
#define BF16_HI _mm512_set1_epi32((int)0xFFFF0000u)
__attribute__((target("avx512f"), always_inline)) static inline void
kernel_wide(int mr, bool edge, const uint32_t *a, size_t lda, const uint32_t *b, int kq, float *c,
            size_t ldc, unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    __m512 acc[GEMM_MR][2];
    for (int r = 0; r < GEMM_MR; r++)
        if (r < mr)
            acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int q = 0; q < kq; q++, a++, b += GEMM_NR) {
        const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 16);
        const __m512 b0e = _mm512_castsi512_ps(_mm512_slli_epi32(b0, 16));
        const __m512 b0o = _mm512_castsi512_ps(_mm512_and_si512(b0, BF16_HI));
        const __m512 b1e = _mm512_castsi512_ps(_mm512_slli_epi32(b1, 16));
        const __m512 b1o = _mm512_castsi512_ps(_mm512_and_si512(b1, BF16_HI));
        for (int r = 0; r < GEMM_MR; r++)
            if (r < mr) {
                const __m512i ar = _mm512_set1_epi32((int)a[(size_t)r * lda]);
                const __m512 ae = _mm512_castsi512_ps(_mm512_slli_epi32(ar, 16));
                const __m512 ao = _mm512_castsi512_ps(_mm512_and_si512(ar, BF16_HI));
                acc[r][0] = _mm512_fmadd_ps(ae, b0e, _mm512_fmadd_ps(ao, b0o, acc[r][0]));
                acc[r][1] = _mm512_fmadd_ps(ae, b1e, _mm512_fmadd_ps(ao, b1o, acc[r][1]));
            }
    }
    store_tile(mr, edge, acc, c, ldc, mode, bias, m0, m1);
}

__attribute__((target("avx512f,avx512bf16"), always_inline)) static inline void
kernel_dp(int mr, bool edge, const uint32_t *a, size_t lda, const uint32_t *b, int kq, float *c,
          size_t ldc, unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    __m512 acc[GEMM_MR][2];
    for (int r = 0; r < GEMM_MR; r++)
        if (r < mr)
            acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int q = 0; q < kq; q++, a++, b += GEMM_NR) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 16);
        for (int r = 0; r < GEMM_MR; r++)
            if (r < mr) {
                const __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[(size_t)r * lda]);
                acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
                acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
            }
    }
    store_tile(mr, edge, acc, c, ldc, mode, bias, m0, m1);
}

/* The bfloat16 kernels for 1..MR rows, an instance per row count: NAME
 * runs KERNEL, compiled for TARGET. */
/* clang-format off */
#define BF16_ROWS(NAME, KERNEL, TARGET)                                                            \
    __attribute__((target(TARGET))) static void                                                    \
    NAME(int mr, const uint32_t *a, size_t lda, const uint32_t *b, int kq, float *c, size_t ldc,  \
         unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)                             \
    {                                                                                              \
        switch (mr) {                                                                              \
        BF16_ROW(KERNEL, 1) BF16_ROW(KERNEL, 2) BF16_ROW(KERNEL, 3) BF16_ROW(KERNEL, 4)            \
        BF16_ROW(KERNEL, 5) BF16_ROW(KERNEL, 6) BF16_ROW(KERNEL, 7) BF16_ROW(KERNEL, 8)            \
        BF16_ROW(KERNEL, 9) BF16_ROW(KERNEL, 10) BF16_ROW(KERNEL, 11) BF16_ROW(KERNEL, 12)         \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }
#define BF16_ROW(KERNEL, n)                                                                        \
    case n:                                                                                        \
        if (m1 != 0xFFFF)                                                                          \
            KERNEL(n, true, a, lda, b, kq, c, ldc, mode, bias, m0, m1);                            \
        else                                                                                       \
            KERNEL(n, false, a, lda, b, kq, c, ldc, mode, bias, m0, m1);                           \
        break;
BF16_ROWS(kernel_rows_wide, kernel_wide, "avx512f")
BF16_ROWS(kernel_rows_dp, kernel_dp, "avx512f,avx512bf16")
#undef BF16_ROW
#undef BF16_ROWS
/* clang-format on */

/* The bfloat16 kernel on AMX-BF16's tdpbf16ps for mr <= 32 rows, kq a
 * multiple of 16, the tiles configured (amx_configure: tiles 0-3 the sums,
 * 4-5 two blocks of 16 rows of 16 pairs, 6-7 the panel's halves, 16 pairs
 * of 16 columns each, 128 bytes apart): 32 rows x 32 columns a step of 32
 * k, each panel tile loaded serving both blocks of rows; the tile then
 * through store_tile as kernel_dp's, and the rows short of 16 on
 * kernel_rows_dp.  Each sum runs down k in the order kernel_dp's does, a
 * pair at a time; tdpbf16ps adds a pair's even product first where
 * vdpbf16ps adds its odd one first, so the two may differ in the last
 * bit. */
__attribute__((target("avx512f,avx512bf16,amx-tile,amx-bf16"))) static void
kernel_rows_amx(int mr, const uint32_t *a, size_t lda, const uint32_t *b, int kq, float *c,
                size_t ldc, unsigned mode, const float *bias, __mmask16 m0, __mmask16 m1)
{
    const int full = mr / 16;
    const size_t sa = lda * sizeof *a, sb = GEMM_NR * sizeof *b;
    float sums[32 * GEMM_NR] __attribute__((aligned(64)));
    if (full)
        AMX_PANEL_STEPS(_tile_dpbf16ps, NULL, full == 2, a, sa, 16 * sizeof *a, b, sb, 16 * sb,
                        kq / 16, AMX_EACH_NONE, sums, GEMM_NR * sizeof *sums);
    const bool edge = m1 != 0xFFFF;
    for (int r0 = 0; r0 < 16 * full; r0 += 8) { /* store_tile 8 rows at a time */
        __m512 acc[GEMM_MR][2];
        for (int r = 0; r < 8; r++) {
            acc[r][0] = _mm512_load_ps(sums + (size_t)(r0 + r) * GEMM_NR);
            acc[r][1] = _mm512_load_ps(sums + (size_t)(r0 + r) * GEMM_NR + 16);
        }
        store_tile(8, edge, acc, c + (size_t)r0 * ldc, ldc, mode, bias, m0, m1);
    }
    for (int r = 16 * full; r < mr; r += GEMM_MR)
        kernel_rows_dp(mr - r < GEMM_MR ? mr - r : GEMM_MR, a + (size_t)r * lda, lda, b, kq,
                       c + (size_t)r * ldc, ldc, mode, bias, m0, m1);
}

/* rows (lda floats apart) of kc floats into bfloat16 pairs (ldd words
 * apart; an odd kc's last pair 0 on top), each rounded to nearest even. */
__attribute__((target("avx512f"))) static void to_bf16_pairs(uint32_t *dst, size_t ldd,
                                                             const float *a, size_t lda, int rows,
                                                             int kc)
{
    for (int r = 0; r < rows; r++, a += lda, dst += ldd) {
        int k = 0;
        for (; k + 32 <= kc; k += 32)
            for (int h = 0; h < 2; h++)
                _mm256_storeu_si256(
                    (__m256i *)(dst + k / 2 + 8 * h),
                    _mm512_cvtepi32_epi16(round_bf16(_mm512_loadu_ps(a + k + 16 * h))));
        for (; k < kc; k += 2)
            dst[k / 2] = bf16_bits(a[k]) | (k + 1 < kc ? bf16_bits(a[k + 1]) << 16 : 0u);
    }
}

static __mmask16 lane_mask(int n)
{
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* A gated feed-forward's epilogue on rows of n <= NR columns: in =
 * act(in) * gate (GeGLU: the GELU of act; SwiGLU: SiLU, x / (1 + e^-x)). */
__attribute__((target("avx512f"))) static void glu_epilogue(float *in, const float *gate,
                                                            size_t ldc, int rows, int n,
                                                            enc_ffn ffn, enc_activation act)
{
    for (int r = 0; r < rows; r++, in += ldc, gate += ldc)
        for (int j = 0; j < n; j += 16) {
            const __mmask16 k = lane_mask(n - j);
            __m512 u = _mm512_maskz_loadu_ps(k, in + j);
            if (ffn == ENC_FFN_SWIGLU)
                u = _mm512_div_ps(u,
                                  _mm512_add_ps(_mm512_set1_ps(1.0f),
                                                v512_exp(_mm512_sub_ps(_mm512_setzero_ps(), u))));
            else
                u = v512_act(u, act);
            _mm512_mask_storeu_ps(in + j, k, _mm512_mul_ps(u, _mm512_maskz_loadu_ps(k, gate + j)));
        }
}

/* RoPE's epilogue on rows of one head (its first 32 dims in lo, the next
 * 32 in hi, rows ldc apart): pair k of row r turns by the angle whose
 * cosine and sine are table[pos[r] * 64 + k] and table[pos[r] * 64 + 32 +
 * k]: (a, b) -> (a cos - b sin, b cos + a sin). */
__attribute__((target("avx512f"))) static void rope_epilogue(float *lo, size_t ldc, int rows,
                                                             const float *table, const int32_t *pos)
{
    for (int r = 0; r < rows; r++, lo += ldc) {
        const float *cs = table + (size_t)pos[r] * 2 * GEMM_NR, *sn = cs + GEMM_NR;
        float *hi = lo + GEMM_NR;
        for (int j = 0; j < GEMM_NR; j += 16) {
            const __m512 c = _mm512_loadu_ps(cs + j), s = _mm512_loadu_ps(sn + j);
            const __m512 a = _mm512_loadu_ps(lo + j), b = _mm512_loadu_ps(hi + j);
            _mm512_storeu_ps(lo + j, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
            _mm512_storeu_ps(hi + j, _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
        }
    }
}

/* Pairs of panels computed together, then an epilogue over the m-block's
 * rows of both while they are in cache: pair q is panels q * stride and q
 * * stride + offset.  GLU: (input q, gate q), offset half the panels;
 * RoPE: a head's two halves, stride 2, offset 1. */
enum { PAIR_GLU, PAIR_ROPE };
typedef struct pair_mode {
    int kind, stride, offset;
    enc_ffn ffn; /* GLU */
    enc_activation act;
    const float *table; /* RoPE: cosines then sines of 32 pairs per position */
    const int32_t *pos; /* RoPE: each row's position */
} pair_mode;

/* gemm_packed_cols (pair NULL: panels [p0, p1)), or pairs [p0, p1). */
static void packed_cols(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                        const float *b, int M, int p0, int p1, const enc_activation *act,
                        const pair_mode *pair, float *scratch)
{
    const int N = pw->N, K = pw->K, KP = (K + 1) / 2;
    const bool copies = !gemm_stride_ok(lda);
    const bool dp = pw->bf && cpu_dpbf16() && dpbf16_allowed;
    const bool amx = dp && bf16_amx();
    p1 = p1 < pw->P ? p1 : pw->P;
    if (amx)
        amx_configure(); /* the tiles are this thread's: shaped for each call */
    for (int m0 = 0; m0 < M; m0 += MC) {
        const int mc = M - m0 < MC ? M - m0 : MC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            const bool last = k0 + kc == K;
            const unsigned mode = (k0 > 0 ? ACCUMULATE : 0u) | (last && b ? ADD_BIAS : 0u);
            const float *a = in + (size_t)m0 * (size_t)lda + k0;
            size_t ld = (size_t)lda;
            uint32_t *abf = (uint32_t *)scratch; /* bfloat16: the block as pairs */
            if (pw->bf)
                to_bf16_pairs(abf, SCRATCH_LD_BF, a, ld, mc, kc);
            else if (copies) {
                for (int r = 0; r < mc; r++)
                    memcpy(scratch + (size_t)r * SCRATCH_LD, a + (size_t)r * ld,
                           (size_t)kc * sizeof(float));
                a = scratch;
                ld = SCRATCH_LD;
            }
            for (int q = p0; q < p1; q++) {
                const int first = pair ? q * pair->stride : q;
                for (int twice = 0; twice < (pair ? 2 : 1); twice++) {
                    const int p = first + twice * (pair ? pair->offset : 0);
                    const int n0 = p * GEMM_NR, nn = N - n0 < GEMM_NR ? N - n0 : GEMM_NR;
                    const __mmask16 lo = lane_mask(nn), hi = lane_mask(nn - 16);
                    const float *panel =
                        pw->bf ? NULL : pw->data + ((size_t)p * K + (size_t)k0) * GEMM_NR;
                    const uint32_t *panel_bf =
                        pw->bf ? pw->bf + ((size_t)p * KP + (size_t)k0 / 2) * GEMM_NR : NULL;
                    /* AMX: 32 rows a call, the block's pairs a multiple of 16 */
                    const bool tiles = amx && kc % 32 == 0;
                    const int rows = tiles ? 32 : GEMM_MR;
                    for (int i = 0; i < mc; i += rows) {
                        const int mr = mc - i < rows ? mc - i : rows;
                        float *c = out + (size_t)(m0 + i) * (size_t)ldc + n0;
                        const float *bias = b ? b + n0 : NULL;
                        if (tiles)
                            kernel_rows_amx(mr, abf + (size_t)i * SCRATCH_LD_BF, SCRATCH_LD_BF,
                                            panel_bf, kc / 2, c, (size_t)ldc, mode, bias, lo, hi);
                        else if (pw->bf)
                            (dp ? kernel_rows_dp : kernel_rows_wide)(
                                mr, abf + (size_t)i * SCRATCH_LD_BF, SCRATCH_LD_BF, panel_bf,
                                (kc + 1) / 2, c, (size_t)ldc, mode, bias, lo, hi);
                        else if (i == 0 && mr == GEMM_MR && hi == 0xFFFF)
                            kernel_first(a, ld, panel, kc, c, (size_t)ldc, mode, bias);
                        else
                            kernel_rows(mr, a + (size_t)i * ld, ld, panel, GEMM_NR, kc, c,
                                        (size_t)ldc, mode, bias, lo, hi);
                        if (last && act)
                            for (int r = 0; r < mr; r++)
                                simd_activation(c + (size_t)r * (size_t)ldc, (size_t)nn, *act);
                    }
                }
                if (pair && last) {
                    float *c = out + (size_t)m0 * (size_t)ldc + (size_t)first * GEMM_NR;
                    if (pair->kind == PAIR_GLU)
                        glu_epilogue(c, c + (size_t)pair->offset * GEMM_NR, (size_t)ldc, mc,
                                     GEMM_NR, pair->ffn, pair->act);
                    else
                        rope_epilogue(c, (size_t)ldc, mc, pair->table, pair->pos + m0);
                }
            }
        }
    }
    if (amx)
        amx_release();
}

void gemm_packed_cols(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                      const float *b, int M, int p0, int p1, const enc_activation *act,
                      float *scratch)
{
    if (pw->i8) {
        gemm_i8_cols(out, ldc, in, lda, pw->i8, b, M, p0, p1, act, scratch);
        return;
    }
    packed_cols(out, ldc, in, lda, pw, b, M, p0, p1, act, NULL, scratch);
}

bool gemm_glu_ok(const gemm_packed *pw)
{
    return pw && !pw->i8 && pw->N % (2 * GEMM_NR) == 0;
}

void gemm_packed_glu(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                     const float *b, int M, int q0, int q1, enc_ffn ffn, enc_activation act,
                     float *scratch)
{
    const pair_mode glu = {
        .kind = PAIR_GLU, .stride = 1, .offset = pw->P / 2, .ffn = ffn, .act = act};
    packed_cols(out, ldc, in, lda, pw, b, M, q0, q1 < glu.offset ? q1 : glu.offset, NULL, &glu,
                scratch);
}

void gemm_packed_rope(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                      const float *b, int M, int h0, int h1, const float *table, const int32_t *pos,
                      float *scratch)
{
    const pair_mode rope = {
        .kind = PAIR_ROPE, .stride = 2, .offset = 1, .table = table, .pos = pos};
    packed_cols(out, ldc, in, lda, pw, b, M, h0, h1 < pw->P / 2 ? h1 : pw->P / 2, NULL, &rope,
                scratch);
}

void gemm_mul(float *c, int ldc, const float *a, int lda, const float *b, size_t ldb, size_t panel,
              int M, int N, int K, bool accumulate)
{
    const unsigned mode = accumulate ? ACCUMULATE : 0u;
    for (int n0 = 0, p = 0; n0 < N; n0 += GEMM_NR, p++) {
        const int nn = N - n0 < GEMM_NR ? N - n0 : GEMM_NR;
        const __mmask16 lo = lane_mask(nn), hi = lane_mask(nn - 16);
        for (int i = 0; i < M; i += GEMM_MR)
            kernel_rows(M - i < GEMM_MR ? M - i : GEMM_MR, a + (size_t)i * (size_t)lda, (size_t)lda,
                        b + (size_t)p * panel, ldb, K, c + (size_t)i * (size_t)ldc + n0,
                        (size_t)ldc, mode, NULL, lo, hi);
    }
}

/* The attention products in bfloat16: the operands in the layout of the
 * bfloat16 weights (pairs of k, GEMM_NR columns a panel). */

size_t gemm_mul_bf16_scratch_bytes(void)
{
    return (size_t)GEMM_MR * SCRATCH_LD_BF * sizeof(uint32_t);
}

__attribute__((target("avx512f"))) void gemm_pack_pairs_bf16(uint32_t *dst, const float *src,
                                                             int lds, int K, int N)
{
    const int P = (N + GEMM_NR - 1) / GEMM_NR, KP = (K + 1) / 2;
    for (int p = 0; p < P; p++)
        for (int q = 0; q < KP; q++) {
            const float *lo = src + (size_t)(2 * q) * lds, *hi = lo + lds;
            uint32_t *d = dst + ((size_t)p * KP + (size_t)q) * GEMM_NR;
            for (int half = 0; half < 2; half++) {
                const int j0 = p * GEMM_NR + half * 16;
                const __mmask16 m = lane_mask(N - j0);
                _mm512_storeu_si512(d + half * 16,
                                    pair_up(_mm512_maskz_loadu_ps(m, lo + j0),
                                            2 * q + 1 < K ? _mm512_maskz_loadu_ps(m, hi + j0)
                                                          : _mm512_setzero_ps()));
            }
        }
}

void gemm_mul_bf16(float *c, int ldc, const float *a, int lda, const uint32_t *b, size_t panel,
                   int M, int N, int K, bool accumulate, uint32_t *scratch)
{
    const bool dp = cpu_dpbf16() && dpbf16_allowed;
    for (int k0 = 0; k0 < K; k0 += KC) { /* KC even: whole pairs */
        const int kc = K - k0 < KC ? K - k0 : KC;
        const unsigned mode = accumulate || k0 > 0 ? ACCUMULATE : 0u;
        for (int i = 0; i < M; i += GEMM_MR) {
            const int mr = M - i < GEMM_MR ? M - i : GEMM_MR;
            to_bf16_pairs(scratch, SCRATCH_LD_BF, a + (size_t)i * (size_t)lda + k0, (size_t)lda, mr,
                          kc);
            for (int n0 = 0, p = 0; n0 < N; n0 += GEMM_NR, p++) {
                const int nn = N - n0 < GEMM_NR ? N - n0 : GEMM_NR;
                (dp ? kernel_rows_dp : kernel_rows_wide)(
                    mr, scratch, SCRATCH_LD_BF, b + (size_t)p * panel + (size_t)k0 / 2 * GEMM_NR,
                    (kc + 1) / 2, c + (size_t)i * (size_t)ldc + n0, (size_t)ldc, mode, NULL,
                    lane_mask(nn), lane_mask(nn - 16));
            }
        }
    }
}

#else /* no AVX-512 kernel on this architecture or compiler */

size_t gemm_mul_bf16_scratch_bytes(void)
{
    return 0;
}

void gemm_pack_t_bf16(uint32_t *dst, const float *src, int lds, int N, int K, float scale)
{
    (void)dst, (void)src, (void)lds, (void)N, (void)K, (void)scale;
}

void gemm_pack_pairs_bf16(uint32_t *dst, const float *src, int lds, int K, int N)
{
    (void)dst, (void)src, (void)lds, (void)K, (void)N;
}

void gemm_mul_bf16(float *c, int ldc, const float *a, int lda, const uint32_t *b, size_t panel,
                   int M, int N, int K, bool accumulate, uint32_t *scratch)
{
    (void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)panel, (void)M, (void)N, (void)K;
    (void)accumulate, (void)scratch;
}

static void pack_rows(float *dst, uint32_t *bf, const float *const *src, const int *cut, int n_src,
                      int lds, int N, int K, float scale)
{
    (void)dst, (void)bf, (void)src, (void)cut, (void)n_src, (void)lds, (void)N, (void)K;
    (void)scale;
}

bool gemm_bf16_native(void)
{
    return false;
}

const char *gemm_bf16_kernel(void)
{
    return "openblas";
}

void gemm_bf16_use_dpbf16(bool on)
{
    (void)on;
}

void gemm_bf16_use_amx(bool on)
{
    (void)on;
}

void gemm_pack_t(float *dst, const float *src, int lds, int N, int K, float scale)
{
    (void)dst, (void)src, (void)lds, (void)N, (void)K, (void)scale;
}

void gemm_mul(float *c, int ldc, const float *a, int lda, const float *b, size_t ldb, size_t panel,
              int M, int N, int K, bool accumulate)
{
    (void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)ldb, (void)panel, (void)M, (void)N;
    (void)K, (void)accumulate;
}

void gemm_packed_cols(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                      const float *b, int M, int p0, int p1, const enc_activation *act,
                      float *scratch)
{
    if (pw->i8) /* int8 runs on any CPU */
        gemm_i8_cols(out, ldc, in, lda, pw->i8, b, M, p0, p1, act, scratch);
}

bool gemm_glu_ok(const gemm_packed *pw)
{
    (void)pw;
    return false;
}

void gemm_packed_glu(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                     const float *b, int M, int q0, int q1, enc_ffn ffn, enc_activation act,
                     float *scratch)
{
    (void)out, (void)ldc, (void)in, (void)lda, (void)pw, (void)b, (void)M, (void)q0, (void)q1;
    (void)ffn, (void)act, (void)scratch;
}

void gemm_packed_rope(float *out, int ldc, const float *in, int lda, const gemm_packed *pw,
                      const float *b, int M, int h0, int h1, const float *table, const int32_t *pos,
                      float *scratch)
{
    (void)out, (void)ldc, (void)in, (void)lda, (void)pw, (void)b, (void)M, (void)h0, (void)h1;
    (void)table, (void)pos, (void)scratch;
}

#endif
