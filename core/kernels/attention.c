/* attention.c - multi-head scaled dot-product attention for one sequence,
 * under the mask rule of mask.c; grouped-query heads share key/value heads. */
#include "kernels/attention.h"

#include "kernels/blockmask.h"
#include "kernels/gemm.h"
#include "kernels/mask.h"
#include "kernels/ops.h"
#include "kernels/simd.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* Scores per row attention_tiles may hold: every key, and as many gathered
 * columns again. */
static size_t scores_width(int len)
{
    return 2 * (size_t)(len > ATTN_KEY_BLOCK ? len : ATTN_KEY_BLOCK) + 16;
}

/* The scratch's floats before the rows the bfloat16 products round: scores,
 * the item's mask (partial tiles and gathered columns: 2 len a row at
 * most), q, z, max, sum, and the gathered columns' skip flags. */
static size_t scratch_body_floats(int rows, int len, int E)
{
    return (size_t)rows * (scores_width(len) + 2 * (size_t)len + 2 * (size_t)E + 2) + (size_t)len;
}

size_t attention_scratch_floats(int rows, int len, int E)
{
    return scratch_body_floats(rows, len, E) + gemm_mul_bf16_scratch_bytes() / sizeof(float);
}

/* Where gemm_mul_bf16's scratch lies in scratch for rows query rows of a
 * sequence of len tokens (every caller's layout ends before it). */
static uint32_t *pairs_scratch(float *scratch, int rows, int len, int E)
{
    return (uint32_t *)(scratch + scratch_body_floats(rows, len, E));
}

bool attention_bf16_ok(int E)
{
    return E % GEMM_NR == 0;
}

size_t attention_gather_floats(int n_gcols, int E)
{
    return 2 * (size_t)n_gcols * (size_t)E + attention_keys_floats(n_gcols, E);
}

/* n keys and values (rows stride apart) packed into dst as prod says. */
static void pack_kv(float *dst, const float *k, const float *v, int stride, int n, int E,
                    attn_products prod)
{
    const float scale = 1.0f / sqrtf((float)E);
    if (prod == ATTN_F32) {
        gemm_pack_t(dst, k, stride, n, E, scale);
    } else if (prod == ATTN_BF16) {
        uint32_t *kb = (uint32_t *)dst;
        gemm_pack_t_bf16(kb, k, stride, n, E, scale);
        gemm_pack_pairs_bf16(kb + gemm_pairs_words(n, E), v, stride, n, E);
    }
}

void attention_gather(float *dst, const float *qkv, int qkv_stride, const int *cols, int first,
                      int step, int n, int H, int G, int g, int E, attn_products prod)
{
    float *k = dst, *v = dst + (size_t)n * E;
    for (int c = 0; c < n; c++) {
        const int j = cols ? cols[c] : first + c * step;
        const float *row = qkv + (size_t)j * qkv_stride;
        memcpy(k + (size_t)c * E, row + (size_t)(H + g) * E, (size_t)E * sizeof(float));
        memcpy(v + (size_t)c * E, row + (size_t)(H + G + g) * E, (size_t)E * sizeof(float));
    }
    pack_kv(v + (size_t)n * E, k, v, E, n, E, prod);
}

size_t attention_keys_floats(int len, int E)
{
    return ((size_t)len + GEMM_NR - 1) / GEMM_NR * GEMM_NR * (size_t)E;
}

void attention_pack_keys(float *kt, const float *qkv, int qkv_stride, int len, int H, int G, int g,
                         int E, attn_products prod)
{
    pack_kv(kt, qkv + (size_t)(H + g) * E, qkv + (size_t)(H + G + g) * E, qkv_stride, len, E, prod);
}

/* What the two products read of one key/value head's n keys and values,
 * packed by pack_kv (a sequence's by attention_pack_keys, the gathered
 * columns' and a residue class's by attention_gather), or not. */
typedef struct packed_kv {
    attn_products prod;
    const float *kt;         /* ATTN_F32: K^T / sqrt(E) panels */
    const uint32_t *kb, *vb; /* ATTN_BF16: K / sqrt(E) and V as pairs */
    size_t k_panel, v_panel; /* ATTN_BF16: words between kb's panels, vb's */
    uint32_t *pairs;         /* ATTN_BF16: the thread's gemm_mul_bf16 scratch */
} packed_kv;

/* The operands packed at pack (NULL: none, cblas_sgemm) as prod says. */
static packed_kv packed_at(attn_products prod, const float *pack, int n, int E, uint32_t *pairs)
{
    packed_kv p = {.prod = pack ? prod : ATTN_BLAS};
    if (p.prod == ATTN_F32) {
        p.kt = pack;
    } else if (p.prod == ATTN_BF16) {
        p.kb = (const uint32_t *)pack;
        p.vb = p.kb + gemm_pairs_words(n, E);
        p.k_panel = gemm_pairs_words(GEMM_NR, E);
        p.v_panel = gemm_pairs_words(GEMM_NR, n);
        p.pairs = pairs;
    }
    return p;
}

/* The two products over keys [j0, j0 + n) of pk's: on cblas_sgemm, the
 * float32 packed kernel, or bfloat16's.  j0 is a multiple of GEMM_NR (of
 * BM_TILE_K or ATTN_KEY_BLOCK: a panel's start) or, for the values alone, 0;
 * k and v point at key j0's row in place, ks and vs their strides. */

/* s (rows, n; rows lds apart) = scale * q (rows, E; rows qs apart) . k (n, E;
 * rows ks apart)^T */
static void scores_mul(float *s, int lds, const float *q, int qs, const float *k, int ks, int rows,
                       int j0, int n, int E, float scale, const packed_kv *pk)
{
    if (pk->prod == ATTN_BF16)
        gemm_mul_bf16(s, lds, q, qs, pk->kb + (size_t)(j0 / GEMM_NR) * pk->k_panel, pk->k_panel,
                      rows, n, E, false, pk->pairs);
    else if (pk->prod == ATTN_F32)
        gemm_mul(s, lds, q, qs, pk->kt + (size_t)j0 * E, GEMM_NR, (size_t)E * GEMM_NR, rows, n, E,
                 false);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, E, scale, q, qs, k, ks, 0.0f,
                    s, lds);
}

/* z (rows, E; rows zs apart) = [z +] p (rows, n; rows lds apart) . v (n, E;
 * rows vs apart) */
static void values_mul(float *z, int zs, const float *p, int lds, const float *v, int vs, int rows,
                       int j0, int n, int E, bool accumulate, const packed_kv *pk)
{
    if (pk->prod == ATTN_BF16)
        gemm_mul_bf16(z, zs, p, lds, pk->vb + (size_t)(j0 / 2) * GEMM_NR, pk->v_panel, rows, E, n,
                      accumulate, pk->pairs);
    else if (pk->prod == ATTN_F32)
        gemm_mul(z, zs, p, lds, v, (size_t)vs, GEMM_NR, rows, E, n, accumulate);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, E, n, 1.0f, p, lds, v, vs,
                    accumulate ? 1.0f : 0.0f, z, zs);
}

/* attention_rows without weights for a long sequence: keys in blocks of
 * ATTN_KEY_BLOCK with an online softmax, so the scores in use are (rows,
 * ATTN_KEY_BLOCK) whatever len is, and each head's output is summed block by
 * block in z: z = sum over blocks of exp(s - max) v, rescaled whenever the
 * running max grows, divided by the sum of the weights at the end. */
static void attention_rows_online(float *z, int z_stride, const float *qkv, int qkv_stride, int len,
                                  int i0, int i1, int H, int G, int E, const seq_mask *sm,
                                  const float *kt, attn_products prod, float *scores,
                                  float *row_max, float *row_sum, uint32_t *pairs)
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
        const packed_kv pk = packed_at(prod, kt ? kt + (size_t)g * keys : NULL, len, E, pairs);
        for (int r = 0; r < rows; r++) {
            row_max[r] = -INFINITY;
            row_sum[r] = 0.0f;
        }
        for (int j0 = 0; j0 < len; j0 += ATTN_KEY_BLOCK) {
            const int n = len - j0 < ATTN_KEY_BLOCK ? len - j0 : ATTN_KEY_BLOCK;
            const float *k = k_base + (size_t)j0 * qkv_stride + (size_t)g * E; /* (n, E) */
            const float *v = v_base + (size_t)j0 * qkv_stride + (size_t)g * E; /* (n, E) */
            /* scores (rows, n) = q . k^T / sqrt(E), masked, then exp(s - max) */
            scores_mul(scores, ATTN_KEY_BLOCK, q, qkv_stride, k, qkv_stride, rows, j0, n, E, scale,
                       &pk);
            for (int r = 0; r < rows; r++) {
                float *row = scores + (size_t)r * ATTN_KEY_BLOCK;
                mask_apply_keys(sm, i0 + r, j0, j0 + n, row);
                mask_position_bias(sm, h, i0 + r, j0, 1, NULL, n, row);
                const float alpha = ops_softmax_block(row, n, &row_max[r], &row_sum[r]);
                if (j0 > 0 && alpha != 1.0f)
                    for (int e = 0; e < E; e++)
                        zh[(size_t)r * z_stride + e] *= alpha;
            }
            /* z_h (rows, E) (+)= exp weights (rows, n) . v (n, E) */
            values_mul(zh, z_stride, scores, ATTN_KEY_BLOCK, v, qkv_stride, rows, j0, n, E, j0 > 0,
                       &pk);
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
                    attn_products prod, float *scratch, float *attn, enc_attn_mode mode, int L)
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
    uint32_t *pairs = pairs_scratch(scratch, rows, len, E);
    if (!attn && len >= ATTN_KEY_BLOCK + 2) {
        attention_rows_online(z, z_stride, qkv, qkv_stride, len, i0, i1, H, G, E, sm, kt, prod,
                              scores, row_max, row_sum, pairs);
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
        const packed_kv pk = packed_at(prod, kt ? kt + (size_t)g * keys : NULL, len, E, pairs);

        /* scores (rows, len) = q . k^T / sqrt(E), a block of keys at a time,
         * then mask and softmax */
        for (int j0 = 0; j0 < len; j0 += ATTN_KEY_BLOCK)
            scores_mul(scores + j0, lds, q, qkv_stride, k + (size_t)j0 * qkv_stride, qkv_stride,
                       rows, j0, len - j0 < ATTN_KEY_BLOCK ? len - j0 : ATTN_KEY_BLOCK, E, scale,
                       &pk);
        float *heads = attn && mode == ENC_ATTN_HEADS ? attn + ((size_t)h * L + i0) * L : NULL;
        for (int r = 0; r < rows; r++) {
            float *row = scores + (size_t)r * lds;
            mask_apply_row(sm, i0 + r, row);
            mask_position_bias(sm, h, i0 + r, 0, 1, NULL, len, row);
            ops_softmax_row(row, len, heads ? heads + (size_t)r * L : NULL);
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
                   rows, 0, len, E, false, &pk);
    }

    if (attn && mode == ENC_ATTN_MEAN) {
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < len; j++)
                attn[(size_t)(i0 + r) * L + j] /= (float)H;
    }
}

size_t attention_forward_floats(int len, int G, int E)
{
    return attention_scratch_floats(len, len, E) + (size_t)G * attention_keys_floats(len, E);
}

void attention_forward(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int H,
                       int G, int E, const seq_mask *sm, float *scratch, float *attn,
                       enc_attn_mode mode, int L)
{
    float *kt = NULL;
    if (simd_enabled()) {
        kt = scratch + attention_scratch_floats(len, len, E);
        for (int g = 0; g < G; g++)
            attention_pack_keys(kt + (size_t)g * attention_keys_floats(len, E), qkv, qkv_stride,
                                len, H, G, g, E, ATTN_F32);
    }
    attention_rows(z, z_stride, qkv, qkv_stride, len, 0, len, H, G, E, sm, kt, ATTN_F32, scratch,
                   attn, mode, L);
}

size_t attention_residue_floats(int len, int stride, int r, int E)
{
    const int rem = len % stride, big = rem ? rem : stride; /* classes of m_hi keys */
    const int m_hi = (len + stride - 1) / stride, m_lo = len / stride;
    const int n_hi = r < big ? r : big, n_lo = r - n_hi;
    return (size_t)n_hi * attention_gather_floats(m_hi, E) +
           (size_t)n_lo * attention_gather_floats(m_lo, E);
}

uint64_t attention_residue(const attn_seq *s, const bm_seq *bs, int r, int k0, int k1,
                           float *scratch)
{
    const int H = s->H, E = s->E, qs = s->qkv_stride, group = H / s->G, st = bs->stride;
    const int n_rows = k1 - k0, m = (s->len - r + st - 1) / st; /* the class's keys */
    const float scale = 1.0f / sqrtf((float)E);
    const seq_mask *sm = s->sm;
    /* scratch: scores (n_rows, ATTN_KEY_BLOCK), the pairs' additive mask (n_rows, m),
     * running max and sum */
    float *scores = scratch, *mask = scores + (size_t)n_rows * ATTN_KEY_BLOCK;
    float *row_max = mask + (size_t)n_rows * m, *row_sum = row_max + n_rows;
    uint32_t *pairs = pairs_scratch(scratch, n_rows, s->len, E);

    /* The mask, once for every head: pairs a listed tile or the gathered
     * block holds are theirs (-inf here), then the mask's own rule. */
    const bool restricted = mask_restricted(sm);
    for (int rr = 0; rr < n_rows; rr++) {
        const int i = r + (k0 + rr) * st, qt = i / BM_TILE_Q;
        const float *aa = sm->attn_add ? sm->attn_add + (size_t)i * sm->L : NULL;
        uint32_t t = bs->qptr[qt];
        int g = 0;
        for (int c = 0; c < m; c++) {
            const int j = r + c * st, kt = j / BM_TILE_K;
            while (t < bs->qptr[qt + 1] && (int)(bs->tiles[t] & ~BM_FULL) < kt)
                t++;
            while (g < bs->n_gcols && bs->gcols[g] < j)
                g++;
            const bool theirs = (t < bs->qptr[qt + 1] && (int)(bs->tiles[t] & ~BM_FULL) == kt) ||
                                (g < bs->n_gcols && bs->gcols[g] == j);
            /* the pair is in the pattern (a diagonal): only the restrictions
             * can refuse it */
            float v = theirs || (restricted && !mask_allowed(sm, i, j)) ? -INFINITY : 0.0f;
            if (v == 0.0f && aa)
                v = aa[j];
            mask[(size_t)rr * m + c] = v;
        }
    }

    const size_t per_g = s->gather_floats;
    const size_t cls =
        attention_gather_floats(bs->n_gcols, E) + attention_residue_floats(s->len, st, r, E);
    for (int h = 0; h < H; h++) {
        const int g = h / group;
        const float *kg = s->gather + (size_t)g * per_g + cls; /* K (m, E), V (m, E), packed */
        const float *vg = kg + (size_t)m * E;
        const packed_kv pk = packed_at(s->prod, s->kt ? vg + (size_t)m * E : NULL, m, E, pairs);
        const int i0 = r + k0 * st;
        const float *q = s->qkv + (size_t)i0 * qs + (size_t)h * E; /* rows st apart */
        float *zh = s->res_z + (size_t)i0 * s->z_stride + (size_t)h * E;
        const int zs = st * s->z_stride;
        for (int rr = 0; rr < n_rows; rr++) {
            row_max[rr] = -INFINITY;
            row_sum[rr] = 0.0f;
        }
        for (int c0 = 0; c0 < m; c0 += ATTN_KEY_BLOCK) {
            const int n = m - c0 < ATTN_KEY_BLOCK ? m - c0 : ATTN_KEY_BLOCK;
            scores_mul(scores, ATTN_KEY_BLOCK, q, st * qs, kg + (size_t)c0 * E, E, n_rows, c0, n, E,
                       scale, &pk);
            for (int rr = 0; rr < n_rows; rr++) {
                float *row = scores + (size_t)rr * ATTN_KEY_BLOCK;
                const float *mk = mask + (size_t)rr * m + c0;
                for (int c = 0; c < n; c++)
                    row[c] += mk[c];
                mask_position_bias(sm, h, i0 + rr * st, r + c0 * st, st, NULL, n, row);
                const float alpha = ops_softmax_block(row, n, &row_max[rr], &row_sum[rr]);
                if (c0 > 0 && alpha != 1.0f)
                    for (int e = 0; e < E; e++)
                        zh[(size_t)rr * zs + e] *= alpha;
            }
            values_mul(zh, zs, scores, ATTN_KEY_BLOCK, vg + (size_t)c0 * E, E, n_rows, c0, n, E,
                       c0 > 0, &pk);
        }
        for (int rr = 0; rr < n_rows; rr++) {
            const size_t at = (size_t)(i0 + rr * st) * H + (size_t)h;
            s->res_m[at] = row_max[rr];
            s->res_s[at] = row_sum[rr];
        }
    }
    return (uint64_t)n_rows * (uint64_t)m * (uint64_t)H;
}

/* ---- attention over a block mask's tiles ------------------------------------ */

/* Consecutive listed key tiles scored together: keys [j0, j0 + n), at most
 * ATTN_KEY_BLOCK of them; bit t of partial is set when the chunk's t-th tile
 * needs the mask. */
typedef struct key_chunk {
    int j0, n;
    unsigned partial;
} key_chunk;

/* The gathered columns of an item: n of them (pieces of ATTN_KEY_BLOCK), skip[c]
 * set for those a listed tile scores itself. */
typedef struct gathered_cols {
    const int *cols;
    int n;
    const uint8_t *skip;
} gathered_cols;

/* An item's key tiles: tiles[0 .. n_tiles), or (tiles NULL) every tile of
 * the sequence, each flagged `all`. */
typedef struct tile_list {
    const uint32_t *tiles;
    int n_tiles;
    uint32_t all;
    int len;
} tile_list;

static uint32_t tile_at(const tile_list *tl, int pos)
{
    return tl->tiles ? tl->tiles[pos] : (uint32_t)pos | tl->all;
}

/* The chunk that starts at tile position *pos; advances *pos past it.
 * Returns false when no tile is left. */
static bool chunk_next(const tile_list *tl, int *pos, key_chunk *c)
{
    const int end = tl->tiles ? tl->n_tiles : (tl->len + BM_TILE_K - 1) / BM_TILE_K;
    if (*pos >= end)
        return false;
    const int kt = (int)(tile_at(tl, *pos) & ~BM_FULL);
    c->j0 = kt * BM_TILE_K;
    c->n = 0;
    c->partial = 0;
    for (int t = 0; *pos < end && t < ATTN_KEY_BLOCK / BM_TILE_K; t++, (*pos)++) {
        const uint32_t e = tile_at(tl, *pos);
        if ((int)(e & ~BM_FULL) != kt + t)
            break;
        if (!(e & BM_FULL))
            c->partial |= 1u << t;
        const int k0 = (kt + t) * BM_TILE_K;
        c->n += tl->len - k0 < BM_TILE_K ? tl->len - k0 : BM_TILE_K;
    }
    return true;
}

/* Keys [*k0, *k1) of a chunk's t-th tile. */
static void chunk_tile(const key_chunk *c, int t, int *k0, int *k1)
{
    *k0 = c->j0 + t * BM_TILE_K;
    *k1 = *k0 + BM_TILE_K < c->j0 + c->n ? *k0 + BM_TILE_K : c->j0 + c->n;
}

/* Adds a chunk's partial tiles' mask (from mask, where *off says; advanced
 * past them) to one row of its scores. */
static void chunk_mask(const key_chunk *c, const float *mask, int *off, float *row)
{
    for (unsigned bits = c->partial; bits; bits &= bits - 1) {
        const int t = __builtin_ctz(bits);
        int k0, k1;
        chunk_tile(c, t, &k0, &k1);
        float *dst = row + t * BM_TILE_K;
        const float *src = mask + *off;
        for (int k = 0; k < k1 - k0; k++)
            dst[k] += src[k];
        *off += k1 - k0;
    }
}

/* One head's weights of query i (compact: the chunks' scores side by side,
 * then the gathered columns' at goff) to where the result wants them.
 * Dense: the row of L floats, zero outside the chunks; CSR: the row's
 * allowed pairs.  add: accumulate (the mean). */
static void weights_out(const attn_seq *s, const tile_list *tl, const gathered_cols *gc, int goff,
                        int i, const float *w, float *dst, bool add)
{
    key_chunk c;
    int pos = 0, off = 0;
    if (!s->indptr) {
        int j = 0;
        while (chunk_next(tl, &pos, &c)) {
            for (; !add && j < c.j0; j++)
                dst[j] = 0.0f;
            for (int k = 0; k < c.n; k++)
                dst[c.j0 + k] = add ? dst[c.j0 + k] + w[off + k] : w[off + k];
            off += c.n;
            j = c.j0 + c.n;
        }
        for (; !add && j < s->len; j++)
            dst[j] = 0.0f;
        for (int g = 0; g < gc->n; g++)
            if (!gc->skip[g])
                dst[gc->cols[g]] = add ? dst[gc->cols[g]] + w[goff + g] : w[goff + g];
        return;
    }
    const int32_t *idx = s->indices + s->indptr[i], n = s->indptr[i + 1] - s->indptr[i];
    bool more = chunk_next(tl, &pos, &c);
    int g = 0;
    for (int32_t k = 0; k < n; k++) {
        const int j = idx[k];
        while (more && j >= c.j0 + c.n) {
            off += c.n;
            more = chunk_next(tl, &pos, &c);
        }
        float v;
        if (more && j >= c.j0) {
            v = w[off + j - c.j0];
        } else {
            while (g < gc->n && gc->cols[g] < j)
                g++;
            if (g < gc->n && gc->cols[g] == j && !gc->skip[g])
                v = w[goff + g];
            else /* a pair of the batch's mask this layer's does not hold: a local
                    layer's outside its band */
                v = 0.0f;
        }
        dst[k] = add ? dst[k] + v : v;
    }
}

/* The additive mask of query i over the gathered columns (gc->n): -inf for
 * those a listed tile scores and those the mask does not allow, the attn
 * mask's value (or 0) for the rest.  Made once per item, added per head.
 * The columns are in every row's pattern: only the restrictions can refuse
 * them. */
static void gathered_mask(const seq_mask *sm, const gathered_cols *gc, int i, float *out)
{
    const float *aa = sm->attn_add ? sm->attn_add + (size_t)i * sm->L : NULL;
    const bool restricted = mask_restricted(sm);
    for (int c = 0; c < gc->n; c++) {
        const int j = gc->cols[c];
        if (gc->skip[c] || (restricted && !mask_allowed(sm, i, j)))
            out[c] = -INFINITY;
        else
            out[c] = aa ? aa[j] : 0.0f;
    }
}

/* Where query i's weights of head h go (mode HEADS; MEAN: h ignored). */
static float *weights_row(const attn_seq *s, int h, int i)
{
    const int heads_at = s->mode == ENC_ATTN_HEADS ? h : 0;
    if (s->indptr)
        return s->attn + (size_t)heads_at * s->nnz + (size_t)s->indptr[i];
    return s->attn + ((size_t)heads_at * s->L + i) * s->L;
}

/* One call of attention_tiles: its rows, its keys and the scratch its
 * steps share. */
typedef struct tile_item {
    const attn_seq *s;
    int i0, n_rows;
    const int *rows;    /* the rows, or NULL: i0 + r */
    tile_list tl;       /* the listed key tiles */
    gathered_cols gc;   /* the gathered columns (none for global rows) */
    int total, goff;    /* keys scored: the chunks', then the gathered columns' from goff */
    const float *imask; /* (n_rows, mw): each row's partial tiles' additive mask side by
                           side (pw floats), then the gathered columns' */
    size_t mw;
    int pw;
    bool resume; /* the residue classes went first: start from their state */
    float *scores, *row_max, *row_sum, *qbuf, *zbuf;
    uint32_t *pairs; /* gemm_mul_bf16's scratch */
} tile_item;

static int item_row(const tile_item *t, int r)
{
    return t->rows ? t->rows[r] : t->i0 + r;
}

/* Sizes the item's keys and makes its mask once for every head: which
 * gathered columns a listed tile holds (those are the tile's), and each
 * row's additive mask over its partial tiles and gathered columns. */
static void item_plan(tile_item *t, float *imask, uint8_t *skip)
{
    const attn_seq *s = t->s;
    const uint32_t *tiles = t->tl.tiles;
    key_chunk c;
    t->total = 0;
    for (int pos = 0; chunk_next(&t->tl, &pos, &c);)
        t->total += c.n;
    for (int g = 0, k = 0; g < t->gc.n; g++) {
        const uint32_t kt = (uint32_t)(t->gc.cols[g] / BM_TILE_K);
        while (k < t->tl.n_tiles && (tiles[k] & ~BM_FULL) < kt)
            k++;
        skip[g] = k < t->tl.n_tiles && (tiles[k] & ~BM_FULL) == kt;
    }
    t->goff = t->total;
    t->total += t->gc.n;
    t->pw = 0;
    for (int pos = 0; chunk_next(&t->tl, &pos, &c);)
        for (unsigned bits = c.partial; bits; bits &= bits - 1) {
            int k0, k1;
            chunk_tile(&c, __builtin_ctz(bits), &k0, &k1);
            t->pw += k1 - k0;
        }
    t->mw = (size_t)t->pw + (size_t)t->gc.n;
    for (int r = 0; r < t->n_rows && t->mw; r++) {
        const int i = item_row(t, r);
        float *mrow = imask + (size_t)r * t->mw;
        memset(mrow, 0, (size_t)t->pw * sizeof *mrow);
        for (int pos = 0; chunk_next(&t->tl, &pos, &c);)
            for (unsigned bits = c.partial; bits; bits &= bits - 1) {
                int k0, k1;
                chunk_tile(&c, __builtin_ctz(bits), &k0, &k1);
                mask_apply_keys(s->sm, i, k0, k1, mrow);
                mrow += k1 - k0;
            }
        if (t->gc.n)
            gathered_mask(s->sm, &t->gc, i, imask + (size_t)r * t->mw + t->pw);
    }
    t->imask = imask;
}

/* Adds row r's gathered columns' mask (n of them from column c0) to its
 * scores. */
static void add_gathered_mask(const tile_item *t, int r, int c0, int n, float *row)
{
    const float *mk = t->imask + (size_t)r * t->mw + (size_t)t->pw + (size_t)c0;
    for (int k = 0; k < n; k++)
        row[k] += mk[k];
}

/* One online-softmax step over n scores a row of scores (lds apart) for
 * every row: z (rows z_stride apart) rescaled when a row's max grows. */
static void online_step(const tile_item *t, float *scores, int lds, int n, float *z, int z_stride,
                        bool first)
{
    const int E = t->s->E;
    for (int r = 0; r < t->n_rows; r++) {
        const float alpha =
            ops_softmax_block(scores + (size_t)r * lds, n, &t->row_max[r], &t->row_sum[r]);
        if (!first && alpha != 1.0f)
            for (int e = 0; e < E; e++)
                z[(size_t)r * z_stride + e] *= alpha;
    }
}

/* What a head's products read: its key/value head's keys and values in
 * qkv and packed, the gathered columns' (n_gc of them: gk NULL when none),
 * and the scores' scale. */
typedef struct head_operands {
    const float *k, *v;   /* its K and V columns in qkv (rows qkv_stride apart) */
    packed_kv pk;         /* the sequence's, packed */
    const float *gk, *gv; /* the gathered columns' K and V (n_gc rows of E) */
    packed_kv gpk;        /* theirs, packed */
    float scale;          /* 1 / sqrt(E) */
} head_operands;

static head_operands operands_of(const tile_item *t, int h)
{
    const attn_seq *s = t->s;
    const int g = h / (s->H / s->G), E = s->E, n_gc = t->gc.n;
    head_operands op = {.k = s->qkv + (size_t)s->H * E + (size_t)g * E,
                        .scale = 1.0f / sqrtf((float)E)};
    op.v = op.k + (size_t)s->G * E;
    op.pk = packed_at(s->prod, s->kt ? s->kt + (size_t)g * attention_keys_floats(s->len, E) : NULL,
                      s->len, E, t->pairs);
    if (n_gc) {
        op.gk = s->gather + (size_t)g * s->gather_floats;
        op.gv = op.gk + (size_t)n_gc * E;
        op.gpk = packed_at(s->prod, s->kt ? op.gv + (size_t)n_gc * E : NULL, n_gc, E, t->pairs);
    }
    return op;
}

/* Head h without weights: an online softmax chunk by chunk, then the
 * gathered columns ATTN_KEY_BLOCK at a time, z summed in place (from the residue
 * classes' running state when they went first). */
static void head_online(const tile_item *t, int h, const float *q, int q_stride, float *zh,
                        int z_stride)
{
    const attn_seq *s = t->s;
    const head_operands op = operands_of(t, h);
    const int E = s->E, qs = s->qkv_stride, lds = ATTN_KEY_BLOCK;
    const float scale = op.scale, *k_base = op.k, *v_base = op.v;
    for (int r = 0; r < t->n_rows; r++) {
        const size_t at = (size_t)(t->i0 + r) * s->H + (size_t)h;
        t->row_max[r] = t->resume ? s->res_m[at] : -INFINITY;
        t->row_sum[r] = t->resume ? s->res_s[at] : 0.0f;
        if (t->resume) /* tile items: contiguous rows */
            memcpy(zh + (size_t)r * z_stride,
                   s->res_z + (size_t)(t->i0 + r) * s->z_stride + (size_t)h * E,
                   (size_t)E * sizeof(float));
    }
    bool first = !t->resume;
    int moff = 0; /* the next partial tile's mask in each row of imask */
    key_chunk c;
    for (int pos = 0; chunk_next(&t->tl, &pos, &c); first = false) {
        scores_mul(t->scores, lds, q, q_stride, k_base + (size_t)c.j0 * qs, qs, t->n_rows, c.j0,
                   c.n, E, scale, &op.pk);
        const int moff0 = moff;
        for (int r = 0; c.partial && r < t->n_rows; r++) {
            moff = moff0;
            chunk_mask(&c, t->imask + (size_t)r * t->mw, &moff, t->scores + (size_t)r * lds);
        }
        for (int r = 0; mask_has_position_bias(s->sm) && r < t->n_rows; r++)
            mask_position_bias(s->sm, h, item_row(t, r), c.j0, 1, NULL, c.n,
                               t->scores + (size_t)r * lds);
        online_step(t, t->scores, lds, c.n, zh, z_stride, first);
        values_mul(zh, z_stride, t->scores, lds, v_base + (size_t)c.j0 * qs, qs, t->n_rows, c.j0,
                   c.n, E, !first, &op.pk);
    }
    const int n_gc = t->gc.n;
    for (int c0 = 0; c0 < n_gc; c0 += ATTN_KEY_BLOCK, first = false) {
        const int n = n_gc - c0 < ATTN_KEY_BLOCK ? n_gc - c0 : ATTN_KEY_BLOCK;
        scores_mul(t->scores, lds, q, q_stride, op.gk + (size_t)c0 * E, E, t->n_rows, c0, n, E,
                   scale, &op.gpk);
        for (int r = 0; r < t->n_rows; r++) {
            add_gathered_mask(t, r, c0, n, t->scores + (size_t)r * lds);
            mask_position_bias(s->sm, h, item_row(t, r), 0, 1, t->gc.cols + c0, n,
                               t->scores + (size_t)r * lds);
        }
        online_step(t, t->scores, lds, n, zh, z_stride, first);
        values_mul(zh, z_stride, t->scores, lds, op.gv + (size_t)c0 * E, E, t->n_rows, c0, n, E,
                   !first, &op.gpk);
    }
    for (int r = 0; r < t->n_rows; r++) {
        /* no allowed key: sum 0 and z 0; overflow: NaN stays NaN */
        const float inv = t->row_sum[r] > 0.0f    ? 1.0f / t->row_sum[r]
                          : t->row_sum[r] == 0.0f ? 0.0f
                                                  : NAN;
        for (int e = 0; e < E; e++)
            zh[(size_t)r * z_stride + e] *= inv;
    }
}

/* Head h with weights: every chunk's scores and the gathered columns' side
 * by side, masked, one softmax per row, the weights out, then z. */
static void head_weights(const tile_item *t, int h, const float *q, int q_stride, float *zh,
                         int z_stride)
{
    const attn_seq *s = t->s;
    const head_operands op = operands_of(t, h);
    const int E = s->E, qs = s->qkv_stride;
    const int lds = gemm_padded_ld(t->total), n_gc = t->gc.n;
    const float scale = op.scale, *k_base = op.k, *v_base = op.v;
    key_chunk c;
    int off = 0, moff = 0;
    for (int pos = 0; chunk_next(&t->tl, &pos, &c); off += c.n) {
        scores_mul(t->scores + off, lds, q, q_stride, k_base + (size_t)c.j0 * qs, qs, t->n_rows,
                   c.j0, c.n, E, scale, &op.pk);
        const int moff0 = moff;
        for (int r = 0; c.partial && r < t->n_rows; r++) {
            moff = moff0;
            chunk_mask(&c, t->imask + (size_t)r * t->mw, &moff, t->scores + (size_t)r * lds + off);
        }
        for (int r = 0; mask_has_position_bias(s->sm) && r < t->n_rows; r++)
            mask_position_bias(s->sm, h, item_row(t, r), c.j0, 1, NULL, c.n,
                               t->scores + (size_t)r * lds + off);
    }
    if (n_gc) {
        scores_mul(t->scores + t->goff, lds, q, q_stride, op.gk, E, t->n_rows, 0, n_gc, E, scale,
                   &op.gpk);
        for (int r = 0; r < t->n_rows; r++) {
            add_gathered_mask(t, r, 0, n_gc, t->scores + (size_t)r * lds + t->goff);
            mask_position_bias(s->sm, h, item_row(t, r), 0, 1, t->gc.cols, n_gc,
                               t->scores + (size_t)r * lds + t->goff);
        }
    }
    for (int r = 0; r < t->n_rows; r++) {
        const int i = item_row(t, r);
        float *row = t->scores + (size_t)r * lds;
        ops_softmax_row(row, t->total, NULL);
        weights_out(s, &t->tl, &t->gc, t->goff, i, row, weights_row(s, h, i),
                    s->mode == ENC_ATTN_MEAN && h > 0);
    }
    off = 0;
    bool first = true;
    for (int pos = 0; chunk_next(&t->tl, &pos, &c); off += c.n, first = false)
        values_mul(zh, z_stride, t->scores + off, lds, v_base + (size_t)c.j0 * qs, qs, t->n_rows,
                   c.j0, c.n, E, !first, &op.pk);
    if (n_gc)
        values_mul(zh, z_stride, t->scores + t->goff, lds, op.gv, E, t->n_rows, 0, n_gc, E, !first,
                   &op.gpk);
}

uint64_t attention_tiles(const attn_seq *s, int i0, const int *rows, int n_rows,
                         const uint32_t *tiles, int n_tiles, uint32_t all, bool gathered,
                         float *scratch)
{
    const int H = s->H, E = s->E, qs = s->qkv_stride;
    const bool weights = s->mode != ENC_ATTN_NONE && s->attn;
    /* scratch: scores (n_rows, width), running max and sum (n_rows each), the
     * gathered rows' q and z (n_rows, E), the item's mask (n_rows, 2 len at
     * most), the gathered columns' skip flags */
    float *scores = scratch;
    float *row_max = scores + (size_t)n_rows * scores_width(s->len), *row_sum = row_max + n_rows;
    float *qbuf = row_sum + n_rows, *zbuf = qbuf + (size_t)n_rows * E;
    float *imask = zbuf + (size_t)n_rows * E;
    uint8_t *skip = (uint8_t *)(imask + 2 * (size_t)n_rows * (size_t)s->len);
    tile_item t = {.s = s,
                   .i0 = i0,
                   .n_rows = n_rows,
                   .rows = rows,
                   .tl = {tiles, n_tiles, all, s->len},
                   .gc = {s->gcols, gathered ? s->n_gcols : 0, skip},
                   .resume = s->res_m && tiles,
                   .scores = scores,
                   .row_max = row_max,
                   .row_sum = row_sum,
                   .qbuf = qbuf,
                   .zbuf = zbuf,
                   .pairs = pairs_scratch(scratch, n_rows, s->len, E)};
    item_plan(&t, imask, skip);

    if (t.total == 0 && !t.resume) { /* no key at all: zero outputs (and weights) */
        for (int r = 0; r < n_rows; r++) {
            const int i = item_row(&t, r);
            memset(s->z + (size_t)i * s->z_stride, 0, (size_t)H * E * sizeof(float));
            for (int h = 0; weights && h < enc_attn_heads(s->mode, H); h++) {
                const size_t nw =
                    s->indptr ? (size_t)(s->indptr[i + 1] - s->indptr[i]) : (size_t)s->len;
                memset(weights_row(s, h, i), 0, nw * sizeof(float));
            }
        }
        return 0;
    }
    for (int h = 0; h < H; h++) {
        const float *q = s->qkv + (size_t)i0 * qs + (size_t)h * E; /* (n_rows, E) */
        int q_stride = qs;
        if (rows) { /* gather the rows' queries */
            for (int r = 0; r < n_rows; r++)
                memcpy(qbuf + (size_t)r * E, s->qkv + (size_t)rows[r] * qs + (size_t)h * E,
                       (size_t)E * sizeof(float));
            q = qbuf;
            q_stride = E;
        }
        float *zh = rows ? zbuf : s->z + (size_t)i0 * s->z_stride + (size_t)h * E;
        const int z_stride = rows ? E : s->z_stride;
        if (weights)
            head_weights(&t, h, q, q_stride, zh, z_stride);
        else
            head_online(&t, h, q, q_stride, zh, z_stride);
        for (int r = 0; rows && r < n_rows; r++) /* scatter the gathered rows' z */
            memcpy(s->z + (size_t)rows[r] * s->z_stride + (size_t)h * E, zbuf + (size_t)r * E,
                   (size_t)E * sizeof(float));
    }
    if (weights && s->mode == ENC_ATTN_MEAN) {
        for (int r = 0; r < n_rows; r++) {
            const int i = item_row(&t, r);
            float *dst = weights_row(s, 0, i);
            const int nw = s->indptr ? s->indptr[i + 1] - s->indptr[i] : s->len;
            for (int j = 0; j < nw; j++)
                dst[j] /= (float)H;
        }
    }
    return (uint64_t)t.total * (uint64_t)n_rows * (uint64_t)H;
}
