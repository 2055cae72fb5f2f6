/* attention.c - masks and multi-head scaled dot-product attention for one
 * sequence; grouped-query heads share key/value heads. */
#include "internal.h"

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

/* attention_rows without weights for a long sequence: keys in blocks of
 * KEY_BLOCK with an online softmax, so the scores in use are (rows,
 * KEY_BLOCK) whatever len is, and each head's output is summed block by
 * block in z: z = sum over blocks of exp(s - max) v, rescaled whenever the
 * running max grows, divided by the sum of the weights at the end. */
static void attention_rows_online(float *z, int z_stride, const float *qkv, int qkv_stride, int len,
                                  int i0, int i1, int H, int G, int E, const seq_mask *sm,
                                  float *scores)
{
    const int rows = i1 - i0;
    const float scale = 1.0f / sqrtf((float)E);
    const int group = H / G;
    const float *k_base = qkv + (size_t)H * E;
    const float *v_base = k_base + (size_t)G * E;
    float *row_max = scores + (size_t)rows * KEY_BLOCK, *row_sum = row_max + rows;

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
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, E, scale, q, qkv_stride,
                        k, qkv_stride, 0.0f, scores, n);
            for (int r = 0; r < rows; r++) {
                float *row = scores + (size_t)r * n;
                mask_apply_keys(sm, i0 + r, j0, j0 + n, row);
                const float alpha = softmax_block(row, n, &row_max[r], &row_sum[r]);
                if (j0 > 0 && alpha != 1.0f)
                    for (int e = 0; e < E; e++)
                        zh[(size_t)r * z_stride + e] *= alpha;
            }
            /* z_h (rows, E) (+)= exp weights (rows, n) . v (n, E) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, E, n, 1.0f, scores, n, v,
                        qkv_stride, j0 > 0 ? 1.0f : 0.0f, zh, z_stride);
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
                    int i1, int H, int G, int E, const seq_mask *sm, float *scores, float *attn,
                    enc_attn_mode mode, int L)
{
    const int rows = i1 - i0;
    if (rows <= 0)
        return;
    if (!attn && len >= KEY_BLOCK + 2) {
        attention_rows_online(z, z_stride, qkv, qkv_stride, len, i0, i1, H, G, E, sm, scores);
        return;
    }
    const float scale = 1.0f / sqrtf((float)E);
    const int group = H / G; /* query heads per key/value head */
    const float *k_base = qkv + (size_t)H * E;
    const float *v_base = k_base + (size_t)G * E;

    for (int h = 0; h < H; h++) {
        const int g = h / group;
        const float *q = qkv + (size_t)i0 * qkv_stride + (size_t)h * E; /* (rows, E) */
        const float *k = k_base + (size_t)g * E;                        /* (len, E) */
        const float *v = v_base + (size_t)g * E;                        /* (len, E) */

        /* scores (rows, len) = q . k^T / sqrt(E), then mask and softmax */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, len, E, scale, q, qkv_stride, k,
                    qkv_stride, 0.0f, scores, len);
        for (int r = 0; r < rows; r++) {
            float *row = scores + (size_t)r * len;
            mask_apply_row(sm, i0 + r, row);
            softmax_row(row, len);
        }

        if (attn && mode == ENC_ATTN_HEADS) {
            float *dst = attn + ((size_t)h * L + i0) * L;
            for (int r = 0; r < rows; r++)
                memcpy(dst + (size_t)r * L, scores + (size_t)r * len, (size_t)len * sizeof *dst);
        } else if (attn && mode == ENC_ATTN_MEAN) {
            for (int r = 0; r < rows; r++) {
                float *dst = attn + (size_t)(i0 + r) * L;
                const float *src = scores + (size_t)r * len;
                for (int j = 0; j < len; j++)
                    dst[j] = h ? dst[j] + src[j] : src[j];
            }
        }

        /* z_h (rows, E) = weights (rows, len) . v (len, E) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, E, len, 1.0f, scores, len, v,
                    qkv_stride, 0.0f, z + (size_t)i0 * z_stride + (size_t)h * E, z_stride);
    }

    if (attn && mode == ENC_ATTN_MEAN) {
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < len; j++)
                attn[(size_t)(i0 + r) * L + j] /= (float)H;
    }
}

void attention_forward(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int H,
                       int G, int E, const seq_mask *sm, float *scores, float *attn,
                       enc_attn_mode mode, int L)
{
    attention_rows(z, z_stride, qkv, qkv_stride, len, 0, len, H, G, E, sm, scores, attn, mode, L);
}
