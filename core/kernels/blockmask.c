/* blockmask.c - a batch's mask compiled into tiles (FlexAttention's
 * BlockMask): for each tile of BM_TILE_Q query rows, the tiles of
 * BM_TILE_K keys it scores, full or partial; the empty ones are never
 * scored.  Also the allowed pairs in CSR form.  Which pairs a mask allows
 * is mask.c's rule; this file finds the tiles it fills.
 *
 * A tile's class comes from each mask component on its rectangle of
 * (query, key) pairs: NONE (no pair allowed), SOME, ALL.  The pattern
 * options are a union (the largest class wins), the restrictions an
 * intersection (the smallest wins).  Each component is arithmetic on the
 * rectangle's corners, except attn, which is scanned once. */
#include "kernels/blockmask.h"

#include "kernels/mask.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NONE, SOME, ALL };

#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define MIN2(a, b) ((a) < (b) ? (a) : (b))

/* The random-block table may hold at most this many entries. */
#define RANDOM_TABLE_MAX ((size_t)1 << 24)

/* ---- classifying a tile: queries [q0, q1) x keys [k0, k1) ---------------- */

/* floor(a / b) for b > 0 */
static long long floor_div(long long a, long long b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* j - i within [-left, right] */
static int class_window(const seq_mask *sm, int q0, int q1, int k0, int k1)
{
    const long long dmin = (long long)k0 - (q1 - 1), dmax = (long long)(k1 - 1) - q0;
    const long long lo = sm->window_left == ENC_WINDOW_NONE ? LLONG_MIN : -sm->window_left;
    const long long hi = sm->window_right == ENC_WINDOW_NONE ? LLONG_MAX : sm->window_right;
    if (dmin >= lo && dmax <= hi)
        return ALL;
    return dmax < lo || dmin > hi ? NONE : SOME;
}

/* |i - j| < s, or (i - j) mod s = 0 (the second part only when the
 * residue classes do not take it) */
static int class_strided(int s, bool diagonals, int q0, int q1, int k0, int k1)
{
    const long long dmin = (long long)q0 - (k1 - 1), dmax = (long long)(q1 - 1) - k0;
    if (s == 1 || (dmin > -s && dmax < s))
        return ALL;
    const bool band = dmax > -s && dmin < s;
    const bool diagonal = diagonals && floor_div(dmax, s) * s >= dmin;
    return band || diagonal ? SOME : NONE;
}

/* i / l = j / l (the summary columns, j mod l >= l - c, are gathered) */
static int class_fixed(int l, int q0, int q1, int k0, int k1)
{
    const int qa = q0 / l, qz = (q1 - 1) / l, ka = k0 / l, kz = (k1 - 1) / l;
    if (qa == qz && ka == kz && qa == ka)
        return ALL;
    return qz < ka || kz < qa ? NONE : SOME;
}

/* BigBird: |qb - kb| <= w, qb < g, kb < g, or kb random for qb */
static int class_blocks(const seq_mask *sm, int q0, int q1, int k0, int k1)
{
    const enc_blocks_pattern *p = &sm->blocks;
    const int b = p->size, g = p->global, w = p->window;
    const int qa = q0 / b, qz = (q1 - 1) / b, ka = k0 / b, kz = (k1 - 1) / b;
    if (qz < g || kz < g)
        return ALL;
    const long long dmin = (long long)ka - qz, dmax = (long long)kz - qa;
    if (dmin >= -w && dmax <= w)
        return ALL;
    if ((dmax >= -w && dmin <= w) || qa < g || ka < g)
        return SOME;
    for (int qb = qa; qb <= qz; qb++)
        for (int r = 0; r < sm->rnd_k; r++) {
            const int kb = sm->rnd[(size_t)qb * sm->rnd_k + r];
            if (kb >= ka && kb <= kz)
                return SOME;
        }
    return NONE;
}

/* |i - j| <= w */
static int class_band(int w, int q0, int q1, int k0, int k1)
{
    const long long dmin = (long long)k0 - (q1 - 1), dmax = (long long)(k1 - 1) - q0;
    if (dmin >= -w && dmax <= w)
        return ALL;
    return dmax < -w || dmin > w ? NONE : SOME;
}

static int class_attn(const seq_mask *sm, int q0, int q1, int k0, int k1)
{
    size_t allowed = 0, n = (size_t)(q1 - q0) * (size_t)(k1 - k0);
    bool add = false;
    for (int i = q0; i < q1; i++) {
        if (sm->attn_bool) {
            const uint8_t *r = sm->attn_bool + (size_t)i * sm->L;
            for (int j = k0; j < k1; j++)
                allowed += !r[j];
        } else {
            const float *r = sm->attn_add + (size_t)i * sm->L;
            for (int j = k0; j < k1; j++) {
                allowed += r[j] != -INFINITY;
                add |= r[j] != 0.0f;
            }
        }
    }
    return allowed == 0 ? NONE : allowed == n && !add ? ALL : SOME;
}

/* Scratch of one sequence's compile: prefix counts over its keys. */
typedef struct class_ctx {
    const seq_mask *sm;
    bool residue;              /* the strided diagonals go to residue classes */
    const uint32_t *pad_below; /* (len + 1) padding keys below each key, or NULL */
} class_ctx;

static int tile_class(const class_ctx *cx, int q0, int q1, int k0, int k1)
{
    const seq_mask *sm = cx->sm;
    int r = ALL;
    if (sm->pattern) {
        int p = NONE;
        if (sm->window_left != ENC_WINDOW_NONE || sm->window_right != ENC_WINDOW_NONE)
            p = MAX2(p, class_window(sm, q0, q1, k0, k1));
        if (p < ALL && sm->stride > 0)
            p = MAX2(p, class_strided(sm->stride, !cx->residue, q0, q1, k0, k1));
        if (p < ALL && sm->fixed_block > 0)
            p = MAX2(p, class_fixed(sm->fixed_block, q0, q1, k0, k1));
        if (p < ALL && sm->blocks.size > 0)
            p = MAX2(p, class_blocks(sm, q0, q1, k0, k1));
        r = p; /* the gathered columns come on top */
    }
    if (r > NONE && sm->causal)
        r = MIN2(r, k0 > q1 - 1 ? NONE : k1 - 1 <= q0 ? ALL : SOME);
    if (r > NONE && sm->banded)
        r = MIN2(r, class_band(sm->band, q0, q1, k0, k1));
    if (r > NONE && cx->pad_below) {
        const uint32_t n = cx->pad_below[k1] - cx->pad_below[k0];
        r = MIN2(r, n == (uint32_t)(k1 - k0) ? NONE : n ? SOME : ALL);
    }
    if (r > NONE && (sm->attn_bool || sm->attn_add))
        r = MIN2(r, class_attn(sm, q0, q1, k0, k1));
    return r;
}

/* ---- compiling ------------------------------------------------------------- */

static void seq_free(bm_seq *s)
{
    free(s->qptr);
    free(s->tiles);
    free(s->grows);
    free(s->gcols);
    free(s->rnd);
    free(s->indptr);
    free(s->indices);
}

void enc_blockmask_free(enc_blockmask *bm)
{
    if (!bm)
        return;
    for (int b = 0; bm->seqs && b < bm->B; b++)
        seq_free(&bm->seqs[b]);
    free(bm->seqs);
    free(bm->is_global);
    free(bm);
}

/* (n + 1) counts: out[k] = how many of flags[0..k) are set. */
static uint32_t *prefix_counts(const uint8_t *flags, int n)
{
    uint32_t *out = malloc(((size_t)n + 1) * sizeof *out);
    if (out) {
        out[0] = 0;
        for (int k = 0; k < n; k++)
            out[k + 1] = out[k] + (flags[k] != 0);
    }
    return out;
}

/* BigBird's random blocks of every query block of sequence s. */
static int compile_random(bm_seq *s, const enc_blocks_pattern *p, enc_error *err)
{
    const int nb = (int)(((long long)s->len + p->size - 1) / p->size);
    s->rnd_k = MIN2(p->random, nb);
    if (s->rnd_k == 0)
        return ENC_OK;
    if ((size_t)nb * (size_t)s->rnd_k > RANDOM_TABLE_MAX)
        return enc_error_set(err, ENC_ELIMIT,
                             "mask.blocks: %d random blocks for each of %d blocks is a table of "
                             "more than %zu entries; use larger blocks or fewer random ones",
                             s->rnd_k, nb, RANDOM_TABLE_MAX);
    int *cand = malloc((size_t)nb * sizeof *cand);
    s->rnd = malloc((size_t)nb * (size_t)s->rnd_k * sizeof *s->rnd);
    if (!cand || !s->rnd) {
        free(cand);
        return enc_error_set(err, ENC_ENOMEM, "out of memory compiling mask.blocks");
    }
    for (int qb = 0; qb < nb; qb++) {
        int *row = s->rnd + (size_t)qb * s->rnd_k;
        const int k = mask_blocks_random(p, nb, qb, cand, row);
        for (int r = k; r < s->rnd_k; r++)
            row[r] = -1;
    }
    free(cand);
    return ENC_OK;
}

/* Makes room in s->indices (*cap entries, nnz used) for need more. */
static int indices_room(bm_seq *s, size_t *cap, size_t nnz, size_t need, enc_error *err)
{
    if (need <= *cap - nnz)
        return ENC_OK;
    if (nnz + need > (size_t)INT32_MAX)
        return enc_error_set(err, ENC_ELIMIT, "the mask allows more than %d pairs in one sequence",
                             INT32_MAX);
    const size_t want = 2 * *cap > nnz + need ? 2 * *cap : nnz + need;
    int32_t *p = realloc(s->indices, want * sizeof *p);
    if (!p)
        return enc_error_set(err, ENC_ENOMEM, "out of memory listing the allowed pairs");
    s->indices = p;
    *cap = want;
    return ENC_OK;
}

/* The allowed pairs of sequence s in CSR form, row by row, keys ascending:
 * rows of global positions over every key, the others over their query
 * tile's listed tiles and the gathered columns outside them. */
static int compile_csr(bm_seq *s, const seq_mask *sm, enc_error *err)
{
    const int len = s->len;
    size_t cap = 0, nnz = 0;
    s->indptr = malloc(((size_t)len + 1) * sizeof *s->indptr);
    if (!s->indptr)
        return enc_error_set(err, ENC_ENOMEM, "out of memory listing the allowed pairs");
    for (int i = 0; i < len; i++) {
        s->indptr[i] = (int32_t)nnz;
        const bool grow = sm->is_global && sm->is_global[i];
        const bool all = s->dense || grow; /* every key tile */
        const int qt = i / BM_TILE_Q;
        const uint32_t t0 = all ? 0 : s->qptr[qt], t1 = all ? (uint32_t)s->nk : s->qptr[qt + 1];
        const int gather = grow ? 0 : s->n_gcols;
        int gc = 0; /* the next gathered column */
        int rc = indices_room(s, &cap, nnz, (size_t)gather, err);
        if (rc < 0)
            return rc;
        for (uint32_t t = t0; t < t1; t++) {
            const uint32_t e = all ? t | (s->dense ? BM_FULL : 0) : s->tiles[t];
            const int k0 = (int)(e & ~BM_FULL) * BM_TILE_K, k1 = MIN2(k0 + BM_TILE_K, len);
            if ((rc = indices_room(s, &cap, nnz, (size_t)(k1 - k0 + gather), err)) < 0)
                return rc;
            /* gathered columns before the tile; those inside it are the tile's */
            for (; gc < gather && s->gcols[gc] < k0; gc++)
                if (mask_allowed(sm, i, s->gcols[gc]))
                    s->indices[nnz++] = s->gcols[gc];
            while (gc < gather && s->gcols[gc] < k1)
                gc++;
            for (int j = k0; j < k1; j++)
                if ((e & BM_FULL) || mask_allowed(sm, i, j))
                    s->indices[nnz++] = j;
        }
        for (; gc < gather; gc++)
            if (mask_allowed(sm, i, s->gcols[gc]))
                s->indices[nnz++] = s->gcols[gc];
    }
    s->indptr[len] = (int32_t)nnz;
    s->nnz = nnz;
    return ENC_OK;
}

/* A short sequence whose pattern would cost as much as full attention
 * (its gathered columns and global rows on top of tiles that hold nearly
 * every key): every tile listed, partial, and the mask applied key by key:
 * exactly len^2 scores.  Returns 0 or ENC_ENOMEM. */
static int list_every_tile(bm_seq *s)
{
    const size_t n = (size_t)s->nq * (size_t)s->nk;
    uint32_t *tiles = realloc(s->tiles, (n ? n : 1) * sizeof *tiles);
    if (!tiles)
        return ENC_ENOMEM;
    s->tiles = tiles;
    for (int qt = 0; qt < s->nq; qt++) {
        s->qptr[qt] = (uint32_t)((size_t)qt * (size_t)s->nk);
        for (int kt = 0; kt < s->nk; kt++)
            tiles[(size_t)qt * (size_t)s->nk + (size_t)kt] = (uint32_t)kt;
    }
    s->qptr[s->nq] = (uint32_t)n;
    s->n_gcols = s->n_grows = s->stride = 0;
    s->scores = (uint64_t)s->len * (uint64_t)s->len;
    return ENC_OK;
}

/* Sequence b's tiles (and random blocks, and CSR when asked). */
static int compile_seq(enc_blockmask *bm, const enc_batch *in, int b, bool csr, bool residue,
                       enc_error *err)
{
    bm_seq *s = &bm->seqs[b];
    const enc_mask *mk = &in->mask;
    const int len = in->lengths ? in->lengths[b] : in->L;
    s->len = len;
    s->nq = (len + BM_TILE_Q - 1) / BM_TILE_Q;
    s->nk = (len + BM_TILE_K - 1) / BM_TILE_K;
    int rc = mk->blocks.size > 0 ? compile_random(s, &mk->blocks, err) : ENC_OK;
    if (rc < 0)
        return rc;
    const seq_mask sm = blockmask_seq_mask(in, bm, b);
    s->dense = !sm.pattern && !mask_restricted(&sm);
    /* the strided diagonals by residue class: without weights only (the
     * tiles' softmax then starts from the classes' running state) */
    s->stride = residue && !csr && sm.pattern && sm.stride > 1 && sm.stride < len ? sm.stride : 0;

    uint32_t *pad_below = NULL;
    if (sm.is_global || (sm.pattern && sm.fixed_block > 0 && sm.fixed_summary > 0)) {
        /* the columns every row's pattern holds: gathered, scored by every
         * query tile; the global positions' rows see every key */
        s->grows = malloc((size_t)len * sizeof *s->grows);
        s->gcols = malloc((size_t)len * sizeof *s->gcols);
        if (!s->grows || !s->gcols) {
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory compiling the mask");
            goto done;
        }
        const int l = sm.fixed_block, c = sm.fixed_summary;
        for (int i = 0; i < len; i++) {
            const bool g = sm.is_global && sm.is_global[i];
            if (g)
                s->grows[s->n_grows++] = i;
            if (g || (l > 0 && i % l >= l - c))
                s->gcols[s->n_gcols++] = i;
        }
    }
    if (s->dense) {
        s->scores = (uint64_t)len * (uint64_t)len;
    } else {
        if (sm.key_padding && !(pad_below = prefix_counts(sm.key_padding, len))) {
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory compiling the mask");
            goto done;
        }
        const class_ctx cx = {.sm = &sm, .residue = s->stride > 0, .pad_below = pad_below};
        size_t cap = (size_t)s->nq * 4 + 16, n = 0;
        s->qptr = malloc(((size_t)s->nq + 1) * sizeof *s->qptr);
        s->tiles = malloc(cap * sizeof *s->tiles);
        if (!s->qptr || !s->tiles) {
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory compiling the mask");
            goto done;
        }
        for (int qt = 0; qt < s->nq; qt++) {
            const int q0 = qt * BM_TILE_Q, q1 = MIN2(q0 + BM_TILE_Q, len);
            uint64_t keys = 0;
            s->qptr[qt] = (uint32_t)n;
            for (int kt = 0; kt < s->nk; kt++) {
                const int k0 = kt * BM_TILE_K, k1 = MIN2(k0 + BM_TILE_K, len);
                const int c = tile_class(&cx, q0, q1, k0, k1);
                if (c == NONE)
                    continue;
                if (n == cap) {
                    uint32_t *p = realloc(s->tiles, 2 * cap * sizeof *p);
                    if (!p) {
                        rc = enc_error_set(err, ENC_ENOMEM, "out of memory compiling the mask");
                        goto done;
                    }
                    s->tiles = p;
                    cap *= 2;
                }
                s->tiles[n++] = (uint32_t)kt | (c == ALL ? BM_FULL : 0);
                keys += (uint64_t)(k1 - k0);
            }
            s->scores += (keys + (uint64_t)s->n_gcols) * (uint64_t)(q1 - q0);
        }
        for (int r = 0; r < s->stride; r++) { /* each class: its rows x its keys */
            const uint64_t m = (uint64_t)((len - r + s->stride - 1) / s->stride);
            s->scores += m * m;
        }
        s->qptr[s->nq] = (uint32_t)n;
        s->scores += (uint64_t)s->n_grows * (uint64_t)len;
        if (s->scores >= (uint64_t)len * (uint64_t)len)
            rc = list_every_tile(s);
        if (rc < 0) {
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory compiling the mask");
            goto done;
        }
    }
    if (csr)
        rc = compile_csr(s, &sm, err);
done:
    free(pad_below);
    return rc;
}

enc_blockmask *enc_blockmask_new(const enc_batch *in, bool csr, enc_error *err)
{
    return blockmask_new(in, csr, false, -1, err);
}

enc_blockmask *blockmask_new(const enc_batch *in, bool csr, bool residue, int band, enc_error *err)
{
    if (!in || in->B < 1 || in->L < 1) {
        enc_error_set(err, ENC_EINVAL, "no batch to compile a mask for");
        return NULL;
    }
    for (int b = 0; in->lengths && b < in->B; b++)
        if (in->lengths[b] < 1 || in->lengths[b] > in->L) {
            enc_error_set(err, ENC_EINVAL, "lengths[%d] = %d is outside 1..%d", b, in->lengths[b],
                          in->L);
            return NULL;
        }
    if (mask_validate(in, err) < 0)
        return NULL;
    enc_blockmask *bm = calloc(1, sizeof *bm);
    if (!bm)
        goto oom;
    bm->B = in->B;
    bm->csr = csr;
    bm->band = band < 0 ? -1 : band;
    bm->seqs = calloc((size_t)in->B, sizeof *bm->seqs);
    bm->is_global = calloc((size_t)in->L, 1);
    if (!bm->seqs || !bm->is_global)
        goto oom;
    for (size_t k = 0; k < in->mask.n_global; k++)
        bm->is_global[in->mask.global[k]] = 1;
    for (int b = 0; b < in->B; b++)
        if (compile_seq(bm, in, b, csr, residue, err) < 0) {
            enc_blockmask_free(bm);
            return NULL;
        }
    return bm;
oom:
    enc_blockmask_free(bm);
    enc_error_set(err, ENC_ENOMEM, "out of memory compiling the mask");
    return NULL;
}

uint64_t enc_blockmask_scores(const enc_blockmask *bm, int b)
{
    return bm->seqs[b].scores;
}

size_t enc_blockmask_nnz(const enc_blockmask *bm, int b)
{
    return bm->seqs[b].nnz;
}

const int32_t *enc_blockmask_indptr(const enc_blockmask *bm, int b)
{
    return bm->seqs[b].indptr;
}

const int32_t *enc_blockmask_indices(const enc_blockmask *bm, int b)
{
    return bm->seqs[b].indices;
}

/* Whether keys i and j are at most band apart (band < 0: always). */
static bool in_band(int band, int i, int j)
{
    return band < 0 || (i - j <= band && j - i <= band);
}

size_t enc_blockmask_band(const enc_blockmask *bm, int b, int band, int32_t *indptr,
                          int32_t *indices, int heads, const float *src, float *dst,
                          size_t dst_stride)
{
    const bm_seq *sq = &bm->seqs[b];
    size_t n = 0;
    for (int i = 0; i < sq->len; i++) {
        if (indptr)
            indptr[i] = (int32_t)n;
        for (int32_t p = sq->indptr[i]; p < sq->indptr[i + 1]; p++)
            if (in_band(band, i, sq->indices[p])) {
                if (indices)
                    indices[n] = sq->indices[p];
                n++;
            }
    }
    if (indptr)
        indptr[sq->len] = (int32_t)n;
    if (!dst)
        return n;
    const size_t stride = dst_stride ? dst_stride : n;
    for (int h = 0; h < heads; h++) {
        const float *s = src + (size_t)h * sq->nnz;
        float *d = dst + (size_t)h * stride;
        for (int i = 0; i < sq->len; i++)
            for (int32_t p = sq->indptr[i]; p < sq->indptr[i + 1]; p++)
                if (in_band(band, i, sq->indices[p]))
                    *d++ = s[p];
    }
    return n;
}

seq_mask blockmask_seq_mask(const enc_batch *in, const enc_blockmask *bm, int b)
{
    const enc_mask *mk = &in->mask;
    const bm_seq *sq = &bm->seqs[b];
    const size_t L = (size_t)in->L;
    const size_t mask_off = mk->attn_per_sequence ? (size_t)b * L * L : 0;
    const bool pattern = mask_has_pattern(mk);
    return (seq_mask){
        .len = sq->len,
        .L = in->L,
        .causal = mk->causal,
        .window_left = mk->window_left,
        .window_right = mk->window_right,
        .pattern = pattern,
        .stride = mk->stride,
        .fixed_block = mk->fixed_block,
        .fixed_summary = mk->fixed_summary,
        .blocks = mk->blocks,
        .rnd = sq->rnd,
        .rnd_k = sq->rnd_k,
        .is_global = pattern && mk->n_global ? bm->is_global : NULL,
        .key_padding = mk->key_padding ? mk->key_padding + (size_t)b * L : NULL,
        .attn_bool = mk->attn_kind == ENC_MASK_BOOL ? mk->attn_bool + mask_off : NULL,
        .attn_add = mk->attn_kind == ENC_MASK_ADD ? mk->attn_add + mask_off : NULL,
        .banded = bm->band >= 0 && bm->band < sq->len - 1,
        .band = bm->band,
    };
}
