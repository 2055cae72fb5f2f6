/* mask.c - the mask rule (docs/model.md, "Masks and sparse patterns"): a
 * batch's mask options checked, one sequence's view of them, whether query
 * i may see key j and what its score gets added (the restrictions, the
 * union of the patterns, BigBird's random blocks, the additive mask,
 * ALiBi's and MPNet's biases by position).  blockmask.c compiles the rule
 * into tiles; attention.c applies it to scores. */
#include "kernels/mask.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- BigBird's random blocks --------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static int cmp_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int mask_blocks_random(const enc_blocks_pattern *p, int n_blocks, int qb, int *cand, int *out)
{
    if (p->random <= 0 || qb < p->global)
        return 0;
    int n = 0;
    for (int kb = p->global > 0 ? p->global : 0; kb < n_blocks; kb++)
        if (kb - qb > p->window || qb - kb > p->window)
            cand[n++] = kb;
    const int k = p->random < n ? p->random : n;
    uint64_t x = p->seed ^ (0x9E3779B97F4A7C15u * (uint64_t)(qb + 1));
    for (int t = 0; t < k; t++) {
        const int u = t + (int)(splitmix64(&x) % (uint64_t)(n - t));
        const int c = cand[t];
        cand[t] = cand[u];
        cand[u] = c;
    }
    memcpy(out, cand, (size_t)k * sizeof *out);
    qsort(out, (size_t)k, sizeof *out, cmp_int);
    return k;
}

/* ---- checks ---------------------------------------------------------------- */

int mask_validate(const enc_batch *in, enc_error *err)
{
    const enc_mask *mk = &in->mask;
    const int B = in->B, L = in->L;
    if (mk->window_left < ENC_WINDOW_NONE || mk->window_right < ENC_WINDOW_NONE)
        return enc_error_set(err, ENC_EINVAL, "mask.window sides must not be negative");
    if (mk->n_global && !mk->global)
        return enc_error_set(err, ENC_EINVAL, "mask.global has no positions");
    for (size_t k = 0; k < mk->n_global; k++)
        if (mk->global[k] < 0 || mk->global[k] >= L)
            return enc_error_set(err, ENC_EINVAL, "mask.global[%zu] = %d is outside 0..%d", k,
                                 mk->global[k], L - 1);
    if (mk->stride < 0)
        return enc_error_set(err, ENC_EINVAL, "mask.strided.stride = %d must be at least 1",
                             mk->stride);
    if (mk->fixed_block < 0)
        return enc_error_set(err, ENC_EINVAL, "mask.fixed.block = %d must be at least 1",
                             mk->fixed_block);
    if (mk->fixed_block > 0 && (mk->fixed_summary < 0 || mk->fixed_summary >= mk->fixed_block))
        return enc_error_set(err, ENC_EINVAL,
                             "mask.fixed.summary = %d must be in 0..%d (below mask.fixed.block "
                             "= %d)",
                             mk->fixed_summary, mk->fixed_block - 1, mk->fixed_block);
    const enc_blocks_pattern *bp = &mk->blocks;
    if (bp->size < 0)
        return enc_error_set(err, ENC_EINVAL, "mask.blocks.size = %d must be at least 1", bp->size);
    if (bp->size > 0 && (bp->window < 0 || bp->global < 0 || bp->random < 0))
        return enc_error_set(err, ENC_EINVAL, "mask.blocks.%s = %d must not be negative",
                             bp->window < 0   ? "window"
                             : bp->global < 0 ? "global"
                                              : "random",
                             bp->window < 0   ? bp->window
                             : bp->global < 0 ? bp->global
                                              : bp->random);
    if (mk->attn_kind == ENC_MASK_BOOL && !mk->attn_bool)
        return enc_error_set(err, ENC_EINVAL, "mask.attn has no values");
    if (mk->attn_kind == ENC_MASK_ADD) {
        if (!mk->attn_add)
            return enc_error_set(err, ENC_EINVAL, "mask.attn has no values");
        size_t n = (size_t)(mk->attn_per_sequence ? B : 1) * L * L;
        for (size_t k = 0; k < n; k++) {
            float v = mk->attn_add[k];
            if (isnan(v) || v == INFINITY)
                return enc_error_set(err, ENC_EINVAL,
                                     "mask.attn value at flat index %zu is %s; numbers or -inf "
                                     "expected",
                                     k, isnan(v) ? "NaN" : "+inf");
        }
    }
    if ((unsigned)mk->attn_kind > ENC_MASK_ADD)
        return enc_error_set(err, ENC_EINVAL, "mask.attn has an unknown kind");
    return ENC_OK;
}

bool mask_has_pattern(const enc_mask *mk)
{
    return mk->window_left != ENC_WINDOW_NONE || mk->window_right != ENC_WINDOW_NONE ||
           mk->stride > 0 || mk->fixed_block > 0 || mk->blocks.size > 0;
}

/* ---- one sequence's mask, pair by pair ------------------------------------ */

void mask_apply_row(const seq_mask *sm, int i, float *s)
{
    mask_apply_keys(sm, i, 0, sm->len, s);
}

/* BigBird: query i may see key j by the blocks pattern */
static bool blocks_allowed(const seq_mask *sm, int i, int j)
{
    const enc_blocks_pattern *p = &sm->blocks;
    const int qb = i / p->size, kb = j / p->size;
    if (qb - kb <= p->window && kb - qb <= p->window)
        return true;
    if (qb < p->global || kb < p->global)
        return true;
    for (int r = 0; r < sm->rnd_k; r++)
        if (sm->rnd[(size_t)qb * sm->rnd_k + r] == kb)
            return true;
    return false;
}

/* Whether (i, j) is in the union of the pattern options (true when none is
 * given). */
static bool in_pattern(const seq_mask *sm, int i, int j)
{
    if (!sm->pattern)
        return true;
    if (sm->is_global && (sm->is_global[i] || sm->is_global[j]))
        return true;
    const int wl = sm->window_left, wr = sm->window_right;
    if ((wl != ENC_WINDOW_NONE || wr != ENC_WINDOW_NONE) &&
        (wl == ENC_WINDOW_NONE || i - j <= wl) && (wr == ENC_WINDOW_NONE || j - i <= wr))
        return true;
    if (sm->stride > 0) {
        const int d = i - j;
        if ((d < 0 ? -d : d) < sm->stride || d % sm->stride == 0)
            return true;
    }
    if (sm->fixed_block > 0 && (i / sm->fixed_block == j / sm->fixed_block ||
                                j % sm->fixed_block >= sm->fixed_block - sm->fixed_summary))
        return true;
    return sm->blocks.size > 0 && blocks_allowed(sm, i, j);
}

bool mask_restricted(const seq_mask *sm)
{
    return sm->causal || sm->key_padding || sm->attn_bool || sm->attn_add || sm->banded;
}

bool mask_allowed(const seq_mask *sm, int i, int j)
{
    if (sm->banded && (i - j > sm->band || j - i > sm->band))
        return false;
    if (sm->key_padding && sm->key_padding[j])
        return false;
    if (sm->causal && j > i)
        return false;
    if (sm->attn_bool && sm->attn_bool[(size_t)i * sm->L + j])
        return false;
    if (sm->attn_add && sm->attn_add[(size_t)i * sm->L + j] == -INFINITY)
        return false;
    return in_pattern(sm, i, j);
}

void mask_apply_keys(const seq_mask *sm, int i, int j0, int j1, float *s)
{
    s -= j0; /* s[j] is key j's score */
    const float *aa = sm->attn_add ? sm->attn_add + (size_t)i * sm->L : NULL;

    /* The common cases without a per-key test: no mask, causal, a band:
     * keys [lo, hi] allowed. */
    if (!sm->pattern && !sm->key_padding && !sm->attn_bool && !aa) {
        int lo = sm->banded ? i - sm->band : j0, hi = sm->causal ? i : j1 - 1;
        if (sm->banded && i + sm->band < hi)
            hi = i + sm->band;
        for (int j = j0; j < j1 && j < lo; j++)
            s[j] = -INFINITY;
        for (int j = hi + 1 > j0 ? hi + 1 : j0; j < j1; j++)
            s[j] = -INFINITY;
        return;
    }
    for (int j = j0; j < j1; j++) {
        if (!mask_allowed(sm, i, j))
            s[j] = -INFINITY;
        else if (aa)
            s[j] += aa[j];
    }
}

bool mask_has_position_bias(const seq_mask *sm)
{
    return sm->alibi || sm->rel_dist || sm->dis;
}

void mask_rel_dist(float *rel_dist, const float *table, int H)
{
    const int far = ENC_REL_MAX_DISTANCE;
    for (int d = -far; d <= far; d++) {
        const float *e = table + (size_t)enc_rel_bucket(d) * (size_t)H;
        for (int h = 0; h < H; h++)
            rel_dist[(size_t)h * MASK_REL_ROW + far + d] = e[h];
    }
}

/* MPNet's relative position bias on n scores of query i (mask_position_bias):
 * head h's row by distance.  Consecutive keys (the tiles' rows) add a
 * stretch of it, its ends past the clamp; other keys look each up. */
static void relative_bias(const seq_mask *sm, int h, int i, int j0, int step, const int *cols,
                          int n, float *restrict s)
{
    const int far = ENC_REL_MAX_DISTANCE;
    const float *restrict row = sm->rel_dist + (size_t)h * MASK_REL_ROW + far; /* row[d] */
    if (!cols && step == 1) {
        /* d = d0 + k: below the clamp for k < lo, past it from hi */
        const int d0 = j0 - i, below = -far - d0, above = far - d0 + 1;
        const int lo = below < 0 ? 0 : below < n ? below : n, hi = above < n ? above : n;
        int k = 0;
        for (; k < lo; k++)
            s[k] += row[-far];
        for (; k < hi; k++)
            s[k] += row[d0 + k];
        for (; k < n; k++)
            s[k] += row[far];
        return;
    }
    for (int k = 0; k < n; k++) {
        const int d = (cols ? cols[k] : j0 + k * step) - i;
        s[k] += row[d < -far ? -far : d > far ? far : d];
    }
}

/* DeBERTa's terms on n scores of query i (mask_position_bias): c2p[i][r]
 * + p2c[j][r], r the table's row for i - j (its column: r - dis_r0). */
static void disentangled_bias(const seq_mask *sm, int h, int i, int j0, int step, const int *cols,
                              int n, float *restrict s)
{
    const int N = sm->dis_n, far = sm->dis_far, len = sm->len;
    const float *c2p = sm->dis + (size_t)h * 2 * (size_t)len * (size_t)N;
    const float *p2c = c2p + (size_t)len * (size_t)N;
    const float *restrict qrow = c2p + (size_t)i * N;
    const int32_t *row = sm->dis_row + far;
    for (int k = 0; k < n; k++) {
        const int j = cols ? cols[k] : j0 + k * step, d = i - j;
        const int r = row[d < -far ? -far : d > far ? far : d] - sm->dis_r0;
        s[k] += qrow[r] + p2c[(size_t)j * N + r];
    }
}

void mask_position_bias(const seq_mask *sm, int h, int i, int j0, int step, const int *cols, int n,
                        float *s)
{
    if (sm->dis)
        disentangled_bias(sm, h, i, j0, step, cols, n, s);
    if (sm->rel_dist)
        relative_bias(sm, h, i, j0, step, cols, n, s);
    if (!sm->alibi)
        return;
    const float m = -sm->alibi[h];
    const int32_t *p = sm->pos;
    const int pi = p ? p[i] : i;
    if (!p && !cols) { /* the common case, in vectors: positions below 2^24 are exact floats */
        const float fi = (float)i;
        for (int k = 0; k < n; k++)
            s[k] += m * fabsf(fi - (float)(j0 + k * step));
        return;
    }
    for (int k = 0; k < n; k++) {
        const int j = cols ? cols[k] : j0 + k * step, pj = p ? p[j] : j;
        s[k] += m * (float)(pi > pj ? pi - pj : pj - pi);
    }
}

uint64_t mask_band_pairs(int len, int w)
{
    if (len <= 0 || w < 0)
        return 0;
    if (w >= len - 1)
        return (uint64_t)len * (uint64_t)len;
    /* every row 2w + 1 keys, less the w (w + 1) / 2 past each end */
    return (uint64_t)len * (uint64_t)(2 * w + 1) - (uint64_t)w * (uint64_t)(w + 1);
}
