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

void attention_forward(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int H,
                       int G, int E, const seq_mask *sm, float *scores, float *attn,
                       enc_attn_mode mode, int L)
{
    const float scale = 1.0f / sqrtf((float)E);
    const int group = H / G; /* query heads per key/value head */
    const float *k_base = qkv + (size_t)H * E;
    const float *v_base = k_base + (size_t)G * E;

    for (int h = 0; h < H; h++) {
        const int g = h / group;
        const float *q = qkv + (size_t)h * E; /* (len, E), row stride qkv_stride */
        const float *k = k_base + (size_t)g * E;
        const float *v = v_base + (size_t)g * E;

        /* scores (len, len) = q . k^T / sqrt(E) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, len, E, scale, q, qkv_stride, k,
                    qkv_stride, 0.0f, scores, len);
        for (int i = 0; i < len; i++) {
            float *row = scores + (size_t)i * len;
            mask_apply_row(sm, i, row);
            softmax_row(row, len);
        }

        if (attn && mode == ENC_ATTN_HEADS) {
            float *dst = attn + (size_t)h * L * L;
            for (int i = 0; i < len; i++)
                memcpy(dst + (size_t)i * L, scores + (size_t)i * len, (size_t)len * sizeof *dst);
        } else if (attn && mode == ENC_ATTN_MEAN) {
            for (int i = 0; i < len; i++) {
                float *dst = attn + (size_t)i * L;
                const float *src = scores + (size_t)i * len;
                for (int j = 0; j < len; j++)
                    dst[j] = h ? dst[j] + src[j] : src[j];
            }
        }

        /* z_h (len, E) = weights (len, len) . v (len, E) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, len, E, len, 1.0f, scores, len, v,
                    qkv_stride, 0.0f, z + (size_t)h * E, z_stride);
    }

    if (attn && mode == ENC_ATTN_MEAN) {
        for (int i = 0; i < len; i++)
            for (int j = 0; j < len; j++)
                attn[(size_t)i * L + j] /= (float)H;
    }
}
