/* attention.c - masks and multi-head scaled dot-product attention for one
 * sequence; grouped-query heads share key/value heads. */
#include "internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void mask_apply_row(const seq_mask *sm, int i, float *s)
{
    const int len = sm->len, wl = sm->window_left, wr = sm->window_right;
    const bool windowed = wl != ENC_WINDOW_NONE || wr != ENC_WINDOW_NONE;
    const bool i_global = sm->is_global && sm->is_global[i];
    const uint8_t *kp = sm->key_padding;
    const uint8_t *ab = sm->attn_bool ? sm->attn_bool + (size_t)i * sm->L : NULL;
    const float *aa = sm->attn_add ? sm->attn_add + (size_t)i * sm->L : NULL;

    /* The common cases without a per-key test: no mask, or causal alone. */
    if (!windowed && !kp && !ab && !aa) {
        for (int j = sm->causal ? i + 1 : len; j < len; j++)
            s[j] = -INFINITY;
        return;
    }

    for (int j = 0; j < len; j++) {
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

void attention_rows(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int i0,
                    int i1, int H, int G, int E, const seq_mask *sm, float *scores, float *attn,
                    enc_attn_mode mode, int L)
{
    const int rows = i1 - i0;
    if (rows <= 0)
        return;
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
