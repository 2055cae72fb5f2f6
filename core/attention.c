/* attention.c - masks and multi-head scaled dot-product attention for one
 * sequence; grouped-query heads share key/value heads. */
#include "internal.h"
#include "simd.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void mask_apply_row(const seq_mask *sm, int i, float *s)
{
    mask_apply_keys(sm, i, 0, sm->len, s);
}

void mask_apply_keys(const seq_mask *sm, int i, int j0, int j1, float *s)
{
    const int wl = sm->window_left, wr = sm->window_right;
    s -= j0; /* s[j] is key j's score */
    const bool windowed = wl != ENC_WINDOW_NONE || wr != ENC_WINDOW_NONE;
    const bool i_global = sm->is_global && sm->is_global[i];
    const uint8_t *kp = sm->key_padding;
    const uint8_t *ab = sm->attn_bool ? sm->attn_bool + (size_t)i * sm->L : NULL;
    const float *aa = sm->attn_add ? sm->attn_add + (size_t)i * sm->L : NULL;

    /* The common cases without a per-key test: no mask, or causal alone. */
    if (!windowed && !kp && !ab && !aa) {
        for (int j = sm->causal && i + 1 > j0 ? i + 1 : j0; sm->causal && j < j1; j++)
            s[j] = -INFINITY;
        return;
    }

    for (int j = j0; j < j1; j++) {
        bool allowed = !(kp && kp[j]) && !(sm->causal && j > i) && !(ab && ab[j]);
        if (allowed && windowed && !i_global && !(sm->is_global && sm->is_global[j])) {
            if (wl != ENC_WINDOW_NONE && j < i - wl)
                allowed = false;
            if (wr != ENC_WINDOW_NONE && j > i + wr)
                allowed = false;
        }
        if (!allowed)
            s[j] = -INFINITY;
        else if (aa)
            s[j] += aa[j];
    }
}

size_t attention_scratch_floats(int rows, int len)
{
    return (size_t)rows * ((size_t)len + 16) + 2 * (size_t)rows;
}

size_t attention_keys_floats(int len, int E)
{
    return ((size_t)len + GEMM_NR - 1) / GEMM_NR * GEMM_NR * (size_t)E;
}

void attention_pack_keys(float *kt, const float *qkv, int qkv_stride, int len, int H, int g, int E)
{
    gemm_pack_t(kt, qkv + (size_t)(H + g) * E, qkv_stride, len, E, 1.0f / sqrtf((float)E));
}

/* Key j0's panel (j0 a multiple of GEMM_NR) of key/value head g in a
 * sequence's packed keys (keys = attention_keys_floats per head), or NULL
 * when there are none. */
static const float *packed_keys(const float *kt, size_t keys, int g, int j0, int E)
{
    return kt ? kt + (size_t)g * keys + (size_t)j0 * (size_t)E : NULL;
}

/* The two products, on the packed kernel when kt holds the head's keys from
 * attention_pack_keys (offset to the first key of the block: a multiple of
 * GEMM_NR keys), or on cblas_sgemm (kt NULL).  qs is Q's, K's and V's row
 * stride (qkv's). */

/* s (rows, n; rows lds apart) = scale * q (rows, E) . k (n, E)^T */
static void scores_mul(float *s, int lds, const float *q, const float *k, int qs, int rows, int n,
                       int E, float scale, const float *kt)
{
    if (kt) {
        gemm_mul(s, lds, q, qs, kt, GEMM_NR, (size_t)E * GEMM_NR, rows, n, E, false);
    } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, E, scale, q, qs, k, qs, 0.0f,
                    s, lds);
    }
}

/* z (rows, E; rows zs apart) = [z +] p (rows, n; rows lds apart) . v (n, E) */
static void values_mul(float *z, int zs, const float *p, int lds, const float *v, int qs, int rows,
                       int n, int E, bool accumulate, bool fast)
{
    if (fast)
        gemm_mul(z, zs, p, lds, v, (size_t)qs, GEMM_NR, rows, E, n, accumulate);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, E, n, 1.0f, p, lds, v, qs,
                    accumulate ? 1.0f : 0.0f, z, zs);
}

/* attention_rows without weights for a long sequence: keys in blocks of
 * KEY_BLOCK with an online softmax, so the scores in use are (rows,
 * KEY_BLOCK) whatever len is, and each head's output is summed block by
 * block in z: z = sum over blocks of exp(s - max) v, rescaled whenever the
 * running max grows, divided by the sum of the weights at the end. */
static void attention_rows_online(float *z, int z_stride, const float *qkv, int qkv_stride, int len,
                                  int i0, int i1, int H, int G, int E, const seq_mask *sm,
                                  const float *kt, float *scores, float *row_max, float *row_sum)
{
    const int rows = i1 - i0;
    const float scale = 1.0f / sqrtf((float)E);
    const int group = H / G;
    const float *k_base = qkv + (size_t)H * E;
    const float *v_base = k_base + (size_t)G * E;
    const size_t keys = attention_keys_floats(len, E); /* one head's packed keys */

    for (int h = 0; h < H; h++) {
        const int g = h / group;
        const float *q = qkv + (size_t)i0 * qkv_stride + (size_t)h * E; /* (rows, E) */
        float *zh = z + (size_t)i0 * z_stride + (size_t)h * E;          /* (rows, E) */
        for (int r = 0; r < rows; r++) {
            row_max[r] = -INFINITY;
            row_sum[r] = 0.0f;
        }
        for (int j0 = 0; j0 < len; j0 += KEY_BLOCK) {
            const int n = len - j0 < KEY_BLOCK ? len - j0 : KEY_BLOCK;
            const float *k = k_base + (size_t)j0 * qkv_stride + (size_t)g * E; /* (n, E) */
            const float *v = v_base + (size_t)j0 * qkv_stride + (size_t)g * E; /* (n, E) */
            /* scores (rows, n) = q . k^T / sqrt(E), masked, then exp(s - max) */
            scores_mul(scores, KEY_BLOCK, q, k, qkv_stride, rows, n, E, scale,
                       packed_keys(kt, keys, g, j0, E));
            for (int r = 0; r < rows; r++) {
                float *row = scores + (size_t)r * KEY_BLOCK;
                mask_apply_keys(sm, i0 + r, j0, j0 + n, row);
                const float alpha = softmax_block(row, n, &row_max[r], &row_sum[r]);
                if (j0 > 0 && alpha != 1.0f)
                    for (int e = 0; e < E; e++)
                        zh[(size_t)r * z_stride + e] *= alpha;
            }
            /* z_h (rows, E) (+)= exp weights (rows, n) . v (n, E) */
            values_mul(zh, z_stride, scores, KEY_BLOCK, v, qkv_stride, rows, n, E, j0 > 0,
                       kt != NULL);
        }
        for (int r = 0; r < rows; r++) {
            /* no allowed key: sum 0 and z 0; overflow: NaN stays NaN */
            const float inv = row_sum[r] > 0.0f    ? 1.0f / row_sum[r]
                              : row_sum[r] == 0.0f ? 0.0f
                                                   : NAN;
            for (int e = 0; e < E; e++)
                zh[(size_t)r * z_stride + e] *= inv;
        }
    }
}

void attention_rows(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int i0,
                    int i1, int H, int G, int E, const seq_mask *sm, const float *kt,
                    float *scratch, float *attn, enc_attn_mode mode, int L)
{
    const int rows = i1 - i0;
    if (rows <= 0)
        return;
    /* scratch: scores (rows, lds), then the online softmax's running max and
     * sum (rows each) */
    const int lds = gemm_padded_ld(len);
    float *scores = scratch;
    float *row_max = scores + (size_t)rows * ((size_t)len + 16);
    float *row_sum = row_max + rows;
    if (!attn && len >= KEY_BLOCK + 2) {
        attention_rows_online(z, z_stride, qkv, qkv_stride, len, i0, i1, H, G, E, sm, kt, scores,
                              row_max, row_sum);
        return;
    }
    const size_t keys = attention_keys_floats(len, E);
    const float scale = 1.0f / sqrtf((float)E);
    const int group = H / G; /* query heads per key/value head */
    const float *k_base = qkv + (size_t)H * E;
    const float *v_base = k_base + (size_t)G * E;

    for (int h = 0; h < H; h++) {
        const int g = h / group;
        const float *q = qkv + (size_t)i0 * qkv_stride + (size_t)h * E; /* (rows, E) */
        const float *k = k_base + (size_t)g * E;                        /* (len, E) */
        const float *v = v_base + (size_t)g * E;                        /* (len, E) */

        /* scores (rows, len) = q . k^T / sqrt(E), a block of keys at a time,
         * then mask and softmax */
        for (int j0 = 0; j0 < len; j0 += KEY_BLOCK)
            scores_mul(scores + j0, lds, q, k + (size_t)j0 * qkv_stride, qkv_stride, rows,
                       len - j0 < KEY_BLOCK ? len - j0 : KEY_BLOCK, E, scale,
                       packed_keys(kt, keys, g, j0, E));
        float *heads = attn && mode == ENC_ATTN_HEADS ? attn + ((size_t)h * L + i0) * L : NULL;
        for (int r = 0; r < rows; r++) {
            float *row = scores + (size_t)r * lds;
            mask_apply_row(sm, i0 + r, row);
            softmax_row(row, len, heads ? heads + (size_t)r * L : NULL);
        }

        if (attn && mode == ENC_ATTN_MEAN) {
            for (int r = 0; r < rows; r++) {
                float *dst = attn + (size_t)(i0 + r) * L;
                const float *src = scores + (size_t)r * lds;
                for (int j = 0; j < len; j++)
                    dst[j] = h ? dst[j] + src[j] : src[j];
            }
        }

        /* z_h (rows, E) = weights (rows, len) . v (len, E) */
        values_mul(z + (size_t)i0 * z_stride + (size_t)h * E, z_stride, scores, lds, v, qkv_stride,
                   rows, len, E, false, kt != NULL);
    }

    if (attn && mode == ENC_ATTN_MEAN) {
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < len; j++)
                attn[(size_t)(i0 + r) * L + j] /= (float)H;
    }
}

size_t attention_forward_floats(int len, int G, int E)
{
    return attention_scratch_floats(len, len) + (size_t)G * attention_keys_floats(len, E);
}

void attention_forward(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int H,
                       int G, int E, const seq_mask *sm, float *scratch, float *attn,
                       enc_attn_mode mode, int L)
{
    float *kt = NULL;
    if (simd_enabled()) {
        kt = scratch + attention_scratch_floats(len, len);
        for (int g = 0; g < G; g++)
            attention_pack_keys(kt + (size_t)g * attention_keys_floats(len, E), qkv, qkv_stride,
                                len, H, g, E);
    }
    attention_rows(z, z_stride, qkv, qkv_stride, len, 0, len, H, G, E, sm, kt, scratch, attn, mode,
                   L);
}
