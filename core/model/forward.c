/* forward.c - the encoder forward: batch checks, and the block as a short
 * sequence of ops over the batch's real tokens packed into (T, D), in the
 * buffers of a workspace (workspace.c). */
#include "kernels/attention.h"
#include "kernels/blockmask.h"
#include "kernels/gemm.h"
#include "kernels/mask.h"
#include "kernels/ops.h"
#include "kernels/simd.h"
#include "model/embed.h"
#include "model/head.h"
#include "model/model.h"
#include "model/team.h"
#include "model/workspace.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int enc_batch_validate(const enc_model *m, const enc_batch *in, enc_error *err)
{
    if (!m || !in || (!in->x && (!in->ids || !in->ids->input_ids)))
        return enc_error_set(err, ENC_EINVAL, "no input");
    if (in->x && in->ids)
        return enc_error_set(err, ENC_EINVAL,
                             "give embeddings or input_ids, not both: the batch has both");
    if (in->ids && !m->embed)
        return enc_error_set(err, ENC_EINVAL,
                             "this model takes embeddings, not input_ids: it has no embedding "
                             "module (serve a model.dir)");
    const int B = in->B, L = in->L, D = m->hp.d_model;
    if (B < 1 || L < 1)
        return enc_error_set(err, ENC_EINVAL, "batch shape [%d, %d] must be at least [1, 1]", B, L);
    for (int b = 0; in->lengths && b < B; b++)
        if (in->lengths[b] < 1 || in->lengths[b] > L)
            return enc_error_set(err, ENC_EINVAL, "lengths[%d] = %d is outside 1..%d", b,
                                 in->lengths[b], L);
    for (size_t t = 0; in->positions && t < (size_t)B * L; t++)
        if (in->positions[t] < 0 || in->positions[t] >= ENC_MAX_POSITION)
            return enc_error_set(err, ENC_EINVAL, "positions[%zu][%zu] = %d is outside 0..%d",
                                 t / (size_t)L, t % (size_t)L, (int)in->positions[t],
                                 ENC_MAX_POSITION - 1);
    for (int b = 0; in->x && b < B; b++) {
        int len = in->lengths ? in->lengths[b] : L;
        const size_t n = (size_t)len * D, k = enc_floats_nonfinite(in->x + (size_t)b * L * D, n);
        if (k < n)
            return enc_error_set(err, ENC_EINVAL, "embeddings[%d][%zu][%zu] is not finite", b,
                                 k / (size_t)D, k % (size_t)D);
    }
    int rc;
    if (in->ids && (rc = embed_validate(m->embed, in, err)) < 0)
        return rc;
    if (m->hp.causal && !in->mask.causal)
        return enc_error_set(err, ENC_EINVAL,
                             "mask.causal is false, but this model attends causally (a "
                             "decoder's attention: key j <= query i); it must be true");

    return mask_validate(in, err);
}

/* ---- the block, as team phases ---------------------------------------- */

/* What every phase of one block needs. */
/* Rows per linear phase while a pause hook is set (enc_workspace_on_pause):
 * a BERT-base Linear over 256 rows is a few milliseconds on a few cores,
 * and its weights are still read once per 256 rows. */
#define PAUSE_ROWS 256
/* Rows a norm phase takes at a time: 8 rows of 768 floats are 24 KiB, in L1
 * for the int8 quantisation after (phase_norm). */
#define NORM_ROWS 8
/* Scores per head an attention phase computes at most while a pause hook is
 * set (256 query rows against 512 keys), an item at least. */
#define PAUSE_SCORES (256 * 512)

typedef struct block_ctx {
    const enc_model *m;
    const enc_layer *ly;
    enc_workspace *ws;
    const enc_job *jobs;             /* the batches run together */
    const enc_blockmask *const *bms; /* (jobs) each job's own block mask (its CSR layout) */
    const attn_plan *plan;           /* this layer's attention: global or local */
    const rope_table *rope;          /* this layer's RoPE angles */
    uint64_t *scores;                /* (jobs) the scores each job's attention computed */
    int layer;
    int T;
    const float *kt;    /* ws->kt when the keys are packed, or NULL (cblas_sgemm) */
    attn_products prod; /* how they are packed and multiplied */
    /* the Linear of a linear phase */
    float *lin_out;
    const float *lin_in, *lin_b;
    /* the weight (N, K) in up to three row blocks: rows [0, lin_cut[0]) at
     * lin_w[0], [lin_cut[0], lin_cut[1]) at lin_w[1], the rest at lin_w[2]
     * (the in-projection's q, k and v, a gated feed-forward's two halves,
     * apart in a mapped file) */
    const float *lin_w[3];
    int lin_cut[2];
    const gemm_packed *lin_pk; /* lin_w packed, or NULL */
    const gemm_packed *lin_bf; /* lin_w in bfloat16 run by OpenBLAS (no AVX-512), or NULL */
    int lin_K, lin_N;
    int lin_ldo, lin_ldi; /* lin_out's and lin_in's row strides */
    bool lin_act;
    bool lin_glu;  /* a gated first Linear whose gating the packed GEMM does (gemm_packed_glu) */
    bool lin_rope; /* the in-projection with RoPE in the packed GEMM (gemm_packed_rope) */
    int items_first, items_count; /* the plan's tiles an attention phase runs */
    int lin_rows;  /* the rows of lin_in a linear phase multiplies */
    team_deal lin_quant;    /* an int8 Linear's rows to quantise, dealt */
    team_deal lin_deal;     /* the items of lin_grid, dealt */
    gemm_grid lin_grid;     /* a packed Linear's items (gemm_grid_of) */
    const int32_t *lin_pos; /* their positions (ws->tokpos from their first row), for lin_rope */
    /* the rows of a norm phase */
    const float *ln_w, *ln_b;
    bool add_o;    /* x += o first */
    const float *so_w, *so_b; /* with add_o: o through this norm first (hp.sublayer_norm) */
    const float *dr_w, *dr_b; /* with add_o: o = norm(x + o) first (hp.double_residual) */
    float *ln_out; /* NULL: no LayerNorm */
    bool ln_quant; /* ln_out's rows also quantised into ws->i8rows, for the int8 Linear
                      that reads it next (run_norm) */
} block_ctx;

/* A Linear, split by output columns (weight rows): each thread multiplies
 * only its share of the weights (prepacked panels, or rows cblas_sgemm
 * packs), and applies the bias and activation to its columns.  Packed
 * weights' work is dealt (team_deal) rather than split, so a slower core
 * does not hold the Linear up (gemm_grid_of's items: int8's panels, on its
 * rows phase_quantise did for the team; float32's and bfloat16's rows by
 * panels). */
static void phase_linear(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_activation *act = c->lin_act ? &c->m->hp.activation : NULL;
    int n0, n1;
    if (c->lin_pk) {
        float *scratch = workspace_gemm_scratch(c->ws, tid);
        if (c->lin_rope) { /* a share of the q and k heads, rotated; then of v's panels */
            const int heads = c->m->hp.n_heads + c->m->hp.n_kv_heads, v0 = 2 * heads;
            team_split(heads, tid, n, &n0, &n1);
            if (n1 > n0)
                gemm_packed_rope(c->lin_out, c->lin_ldo, c->lin_in, c->lin_ldi, c->lin_pk, c->lin_b,
                                 c->lin_rows, n0, n1, c->rope->t, c->lin_pos, scratch);
            team_split(gemm_panels(c->lin_pk) - v0, tid, n, &n0, &n1);
            if (n1 > n0)
                gemm_packed_cols(c->lin_out, c->lin_ldo, c->lin_in, c->lin_ldi, c->lin_pk, c->lin_b,
                                 c->lin_rows, v0 + n0, v0 + n1, NULL, scratch);
            return;
        }
        if (c->lin_glu) { /* a share of the input's panels, each with its gate's */
            team_split(gemm_panels(c->lin_pk) / 2, tid, n, &n0, &n1);
            if (n1 > n0)
                gemm_packed_glu(c->lin_out, c->lin_ldo, c->lin_in, c->lin_ldi, c->lin_pk, c->lin_b,
                                c->lin_rows, n0, n1, c->m->hp.ffn, c->m->hp.activation, scratch);
            return;
        }
        while (team_deal_take(&c->lin_deal, &n0, &n1)) /* items of lin_grid */
            gemm_packed_items(c->lin_out, c->lin_ldo, c->lin_in, c->lin_ldi, c->lin_pk, c->lin_b,
                              c->lin_grid, n0, n1, act, scratch);
        return;
    }
    if (c->lin_bf) { /* bfloat16 without AVX-512: a share of the panels, widened */
        float *scratch = workspace_gemm_scratch(c->ws, tid);
        team_split(gemm_panels(c->lin_bf), tid, n, &n0, &n1);
        if (n1 > n0)
            gemm_bf16_blas_cols(c->lin_out, c->lin_ldo, c->lin_in, c->lin_ldi, c->lin_bf, c->lin_b,
                                c->lin_rows, n0, n1, act, scratch);
        return;
    }
    /* Slices in multiples of 16 columns keep BLAS on its full-width kernels. */
    const int blocks = (c->lin_N + 15) / 16;
    team_split(blocks, tid, n, &n0, &n1);
    n0 *= 16;
    n1 = n1 * 16 < c->lin_N ? n1 * 16 : c->lin_N;
    for (int s = 0; s < 3; s++) { /* the columns of each row block of the weight */
        const int lo = s ? c->lin_cut[s - 1] : 0, hi = s < 2 ? c->lin_cut[s] : c->lin_N;
        const int a = n0 > lo ? n0 : lo, b = n1 < hi ? n1 : hi;
        if (a < b)
            ops_linear_cols(c->lin_out + lo, c->lin_ldo, c->lin_in, c->lin_ldi, c->lin_w[s],
                            c->lin_b ? c->lin_b + lo : NULL, c->lin_rows, c->lin_K, a - lo, b - lo,
                            act);
    }
}

/* An int8 Linear's input quantised once for the team (gemm_int8_quantise),
 * its rows dealt (lin_quant), before phase_linear reads it. */
static void phase_quantise(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    int r0, r1;
    (void)tid, (void)n;
    while (team_deal_take(&c->lin_quant, &r0, &r1))
        gemm_int8_quantise(c->ws->i8rows, c->lin_in, c->lin_ldi, c->lin_K, r0, r1);
}

/* Residual add and LayerNorm, split by rows: x += o (if add_o; o normed
 * first with so_w), then
 * ln_out = LN(x) (if ln_out), and with ln_quant ln_out's rows quantised for
 * the int8 Linear after (as its phase_quantise would), a few rows at a time
 * while they are in L1: no pass over them from another core's cache. */
static void phase_norm(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const int D = c->m->hp.d_model;
    int r0, r1;
    team_split(c->T, tid, n, &r0, &r1);
    const int step = c->ln_quant ? NORM_ROWS : r1 - r0; /* without it: one call */
    for (int a = r0; a < r1; a += step) {
        const int b = r1 - a < step ? r1 : a + step;
        float *x = c->ws->x + (size_t)a * D;
        if (c->add_o && c->so_w) {
            float *o = c->ws->o + (size_t)a * D;
            ops_norm(c->m->hp.norm, o, o, c->so_w, c->so_b, b - a, D, c->m->hp.layer_norm_eps);
        }
        if (c->add_o && c->dr_w) {
            float *o = c->ws->o + (size_t)a * D;
            ops_residual(o, x, (size_t)(b - a) * D);
            ops_norm(c->m->hp.norm, o, o, c->dr_w, c->dr_b, b - a, D, c->m->hp.layer_norm_eps);
        }
        if (c->add_o)
            ops_residual(x, c->ws->o + (size_t)a * D, (size_t)(b - a) * D);
        if (!c->ln_out)
            continue;
        ops_norm(c->m->hp.norm, c->ln_out + (size_t)a * D, x, c->ln_w, c->ln_b, b - a, D,
                 c->m->hp.layer_norm_eps);
        if (c->ln_quant)
            gemm_int8_quantise(c->ws->i8rows, c->ln_out, D, D, a, b);
    }
}

/* The embedding module on the rows of the ids batches, split by rows: each
 * thread looks up and normalises its rows (embed_rows), then projects them
 * (ELECTRA's embeddings_project) while they are in cache. */
static void phase_embed(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_model *m = c->m;
    const embed_module *e = m->embed;
    enc_workspace *ws = c->ws;
    const int D = m->hp.d_model, E = e->cfg.embedding_size;
    const bool proj = e->proj_w != NULL;
    const gemm_packed *pk = proj && m->packed && simd_enabled() ? e->pk_proj : NULL;
    float *scratch = pk ? workspace_gemm_scratch(ws, tid) : NULL;
    int r0, r1;
    team_split(c->T, tid, n, &r0, &r1);
    for (int s = 0; s < ws->n_seqs && r0 < r1; s++) {
        const seq_info *sq = &ws->seqs[s];
        const int lo = r0 > sq->row ? r0 : sq->row;
        const int hi = r1 < sq->row + sq->len ? r1 : sq->row + sq->len;
        const enc_batch *in = c->jobs[sq->job].in;
        if (lo >= hi || !in->ids)
            continue;
        float *rows = proj ? ws->emb + (size_t)lo * E : ws->x + (size_t)lo * D;
        embed_rows(e, in, sq->b, lo - sq->row, hi - sq->row, rows, E);
        if (pk)
            gemm_packed_cols(ws->x + (size_t)lo * D, D, rows, E, pk, e->proj_b, hi - lo, 0,
                             gemm_panels(pk), NULL, scratch);
        else if (proj)
            ops_linear_cols(ws->x + (size_t)lo * D, D, rows, E, e->proj_w, e->proj_b, hi - lo, E, 0,
                            D, NULL);
    }
}

/* Items [k0, k1) of n (costs cost[k]): thread tid's share of the total
 * cost, in one contiguous range. */
static void split_cost(const attn_item *items, int n, int tid, int nth, int *k0, int *k1)
{
    uint64_t total = 0;
    for (int k = 0; k < n; k++)
        total += items[k].cost;
    *k0 = *k1 = 0;
    uint64_t before = 0;
    bool started = false;
    for (int k = 0; k < n; k++) {
        /* the thread an item goes to: where its middle falls */
        const uint64_t mid = before + items[k].cost / 2;
        const int owner = total ? (int)((double)mid * nth / (double)total) : k * nth / n;
        before += items[k].cost;
        if (owner == tid && !started) {
            *k0 = k;
            started = true;
        }
        if (owner <= tid)
            *k1 = k + 1;
    }
    if (!started)
        *k0 = *k1;
}

/* Items [first, first + count) of the plan, split by cost. */
static void run_items(block_ctx *c, int first, int count, int tid, int n)
{
    const enc_model *m = c->m;
    enc_workspace *ws = c->ws;
    const int Z = m->q_dim, H = m->hp.n_heads, Q = m->qkv_dim;
    float *scratch = ws->scores + (size_t)tid * ws->attn_floats;
    int k0, k1;
    const attn_plan *pl = c->plan;
    split_cost(pl->items + first, count, tid, n, &k0, &k1);
    for (int k = first + k0; k < first + k1; k++) {
        const attn_item *it = &pl->items[k];
        const seq_info *sq = &ws->seqs[it->seq];
        const enc_job *job = &c->jobs[sq->job];
        const enc_batch *in = job->in;
        const enc_result *res = job->res;
        const enc_blockmask *bm = pl->bms[sq->job];
        const bm_seq *bs = &bm->seqs[sq->b];
        const bm_seq *own = &c->bms[sq->job]->seqs[sq->b]; /* CSR weights' layout */
        const int L = in->L;
        seq_mask sm = blockmask_seq_mask(in, bm, sq->b);
        sm.alibi = m->alibi;
        sm.rel_dist = m->rel_dist;
        if (m->dis_row) {
            sm.dis = ws->dis + sq->dis;
            sm.dis_n = workspace_dis_rows(m, sq->len, &sm.dis_r0);
            sm.dis_far = m->dis_far;
            sm.dis_row = m->dis_row;
        }
        sm.pos = in->positions ? in->positions + (size_t)sq->b * L : NULL;
        const bool csr = res->attn_format == ENC_FORMAT_CSR;
        const int heads = enc_attn_heads(res->attn_mode, H);
        float *seq_attn = NULL;
        if (res->attn_mode != ENC_ATTN_NONE && res->attn && res->attn[c->layer])
            seq_attn = res->attn[c->layer] + (csr ? sq->csr : (size_t)sq->b * heads * L * L);
        uint64_t done;
        if (bs->dense && !csr) {
            attention_rows(ws->z + (size_t)sq->row * Z, Z, ws->qkv + (size_t)sq->row * Q, Q,
                           sq->len, it->i0, it->i1, H, m->hp.n_kv_heads, m->head_dim, &sm,
                           c->kt ? c->kt + sq->kt : NULL, c->prod, scratch, seq_attn,
                           res->attn_mode, L);
            done = (uint64_t)(it->i1 - it->i0) * (uint64_t)sq->len * (uint64_t)H;
        } else {
            attn_seq as = {.z = ws->z + (size_t)sq->row * Z,
                           .z_stride = Z,
                           .qkv = ws->qkv + (size_t)sq->row * Q,
                           .qkv_stride = Q,
                           .len = sq->len,
                           .H = H,
                           .G = m->hp.n_kv_heads,
                           .E = m->head_dim,
                           .sm = &sm,
                           .kt = c->kt ? c->kt + sq->kt : NULL,
                           .prod = c->prod,
                           .mode = seq_attn ? res->attn_mode : ENC_ATTN_NONE,
                           .attn = seq_attn,
                           .L = L,
                           .indptr = csr ? own->indptr : NULL,
                           .indices = csr ? own->indices : NULL,
                           .nnz = own->nnz,
                           .gcols = bs->gcols,
                           .n_gcols = bs->n_gcols,
                           .gather = ws->gather ? ws->gather + sq->gather : NULL,
                           .gather_floats = workspace_seq_gather_floats(bs, m->head_dim)};
            if (bs->stride) {
                const size_t T = ws->cap_T;
                as.res_m = ws->resid + (size_t)sq->row * H;
                as.res_s = ws->resid + T * H + (size_t)sq->row * H;
                as.res_z = ws->resid + 2 * T * H + (size_t)sq->row * Z;
            }
            if (it->kind == ITEM_RESIDUE) {
                done = attention_residue(&as, bs, it->cls, it->i0, it->i1, scratch);
            } else if (it->kind == ITEM_GROWS) {
                done = attention_tiles(&as, 0, bs->grows + it->i0, it->i1 - it->i0, NULL, 0,
                                       mask_restricted(&sm) ? 0 : BM_FULL, false, scratch);
            } else if (bs->dense) {
                done = attention_tiles(&as, it->i0, NULL, it->i1 - it->i0, NULL, 0, BM_FULL, false,
                                       scratch);
            } else {
                const int qt = it->i0 / BM_TILE_Q;
                done = attention_tiles(&as, it->i0, NULL, it->i1 - it->i0, bs->tiles + bs->qptr[qt],
                                       (int)(bs->qptr[qt + 1] - bs->qptr[qt]), 0, true, scratch);
            }
        }
        __atomic_fetch_add(&c->scores[sq->job], done, __ATOMIC_RELAXED);
    }
}

/* The strided residue classes, before the tiles. */
static void phase_attention_residue(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    run_items(c, 0, c->plan->n_res, tid, n);
}

/* Attention, split by (sequence, tile of query rows) items. */
static void phase_attention(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    run_items(c, c->items_first, c->items_count, tid, n);
}

/* The plan's tiles: one phase, or with a pause hook phases of at most
 * PAUSE_SCORES scores per head (an item at least). */
static void run_attention(block_ctx *c)
{
    const attn_plan *pl = c->plan;
    for (int k = pl->n_res, end; k < pl->n_tiles; k = end) {
        end = pl->n_tiles;
        if (c->ws->pause) {
            uint64_t cost = pl->items[k].cost;
            for (end = k + 1; end < pl->n_tiles && cost + pl->items[end].cost <= PAUSE_SCORES;
                 end++)
                cost += pl->items[end].cost;
        }
        c->items_first = k;
        c->items_count = end - k;
        workspace_run(c->ws, phase_attention, c);
    }
}

/* The global positions' rows, after the tiles (which computed them too, over
 * their tiles only): every key. */
static void phase_attention_globals(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    run_items(c, c->plan->n_tiles, c->plan->n_items - c->plan->n_tiles, tid, n);
}

/* Every sequence's keys packed for attention, split by (sequence, key/value
 * head). */
/* A gated feed-forward's act(input) * gate, split by rows. */
static void phase_glu(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_hparams *hp = &c->m->hp;
    int r0, r1;
    team_split(c->T, tid, n, &r0, &r1);
    if (r1 > r0)
        ops_glu(c->ws->h + (size_t)r0 * c->ws->ldh, c->ws->ldh, r1 - r0, hp->d_ff, hp->ffn,
                hp->activation);
}

/* Whether some layer is local. */
static bool has_local_layers(const enc_hparams *hp)
{
    for (int l = 0; l < hp->n_layers && hp->global_every > 1; l++)
        if (enc_layer_local(hp, l))
            return true;
    return false;
}

/* Whether the local layers' RoPE base is not the global layers'. */
static bool has_local_rope(const enc_hparams *hp)
{
    return has_local_layers(hp) && hp->rope_theta_local > 0.0 &&
           hp->rope_theta_local != hp->rope_theta;
}

/* RoPE's rotated dimensions of a head. */
static int rope_dim_of(const enc_model *m)
{
    return m->hp.rope_dim ? m->hp.rope_dim : m->head_dim;
}

/* rt's cosines and sines of positions [0, need) for base theta: inv_freq_k
 * = theta^(-2k / rope_dim) (enc_rope_inv_freq: NTK-scaled where rope_ntk
 * says) and pos * inv_freq_k in double, each rounded to float once. */
static int rope_fill(const enc_model *m, rope_table *rt, double theta, int need, enc_error *err)
{
    if (need <= rt->cap)
        return ENC_OK;
    const int dim = rope_dim_of(m), half = dim / 2;
    float *t = realloc(rt->t, (size_t)need * (size_t)dim * sizeof *t);
    if (!t)
        return enc_error_set(err, ENC_ENOMEM, "out of memory for RoPE's angles");
    rt->t = t;
    for (int k = 0; k < half; k++) { /* a frequency, then its column of positions */
        const double f = enc_rope_inv_freq(&m->hp, theta, k, dim);
        for (int p = rt->cap; p < need; p++) {
            const double a = (double)p * f;
            t[(size_t)p * dim + k] = (float)cos(a);
            t[(size_t)p * dim + half + k] = (float)sin(a);
        }
    }
    rt->cap = need;
    return ENC_OK;
}

/* The global layers' table, and the local layers' when their base differs. */
static int rope_tables(enc_workspace *ws, int need, enc_error *err)
{
    const enc_hparams *hp = &ws->m->hp;
    int rc = rope_fill(ws->m, &ws->ropes[0], hp->rope_theta, need, err);
    if (rc == 0 && has_local_rope(hp))
        rc = rope_fill(ws->m, &ws->ropes[1], hp->rope_theta_local, need, err);
    return rc;
}

/* Every token's query heads and key heads (contiguous in qkv) through
 * their norms (hp.qk_norm), then RoPE (hp.position rope), split by
 * tokens. */
static void phase_qk(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_model *m = c->m;
    const enc_workspace *ws = c->ws;
    const int E = m->head_dim, H = m->hp.n_heads, heads = H + m->hp.n_kv_heads, Q = m->qkv_dim;
    const int dim = rope_dim_of(m), half = dim / 2;
    const bool rope = m->hp.position == ENC_POS_ROPE;
    int t0, t1;
    team_split(c->T, tid, n, &t0, &t1);
    for (int t = t0; t < t1; t++) {
        float *q = ws->qkv + (size_t)t * Q;
        if (m->hp.qk_norm) { /* each head's, or q's and k's whole (qk_norm_whole) */
            const float eps = m->hp.layer_norm_eps;
            const bool whole = m->hp.qk_norm_whole;
            const enc_layer *ly = c->ly;
            ops_norm(m->hp.norm, q, q, ly->qn_w, ly->qn_b, whole ? 1 : H, whole ? m->q_dim : E,
                     eps);
            ops_norm(m->hp.norm, q + m->q_dim, q + m->q_dim, ly->kn_w, ly->kn_b,
                     whole ? 1 : heads - H, whole ? m->kv_dim : E, eps);
        }
        if (rope) {
            const float *cs = c->rope->t + (size_t)ws->tokpos[t] * dim;
            ops_rope(q, heads, E, cs, cs + half, half, m->hp.rope_style);
        }
    }
}

/* DeBERTa's terms of every (sequence, head), split by them: c2p = q K_r
 * and p2c = k Q_r for the rows r the sequence reads (workspace_dis_rows),
 * K and Q the table's rows through this layer's Linears (enc_model.dis_pos),
 * scaled as the scores are (the query side holds the rest of the scale). */
static void phase_dis(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_model *m = c->m;
    enc_workspace *ws = c->ws;
    const int H = m->hp.n_heads, E = m->head_dim, D = m->hp.d_model, Q = m->qkv_dim;
    const size_t R = 2 * (size_t)m->hp.dis.span;
    const float *pk = m->dis_pos + (size_t)c->layer * 2 * R * (size_t)D, *pq = pk + R * D;
    const float scale = 1.0f / sqrtf((float)E);
    int k0, k1;
    team_split(ws->n_seqs * H, tid, n, &k0, &k1);
    for (int k = k0; k < k1; k++) {
        const seq_info *sq = &ws->seqs[k / H];
        const int h = k % H, len = sq->len;
        int r0;
        const int N = workspace_dis_rows(m, len, &r0);
        float *c2p = ws->dis + sq->dis + (size_t)h * 2 * (size_t)len * (size_t)N;
        const float *q = ws->qkv + (size_t)sq->row * Q + (size_t)h * E;
        const float *kk = q + D; /* n_kv_heads = n_heads */
        const size_t off = (size_t)r0 * D + (size_t)h * E;
        const struct {
            bool on;
            const float *a, *b;
        } term[2] = {{m->hp.dis.c2p, q, pk + off}, {m->hp.dis.p2c, kk, pq + off}};
        for (int t = 0; t < 2; t++) { /* a term the model does not have stays 0 */
            float *out = c2p + (size_t)t * len * N;
            if (term[t].on)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, N, E, scale, term[t].a, Q,
                            term[t].b, D, 0.0f, out, N);
            else
                memset(out, 0, (size_t)len * N * sizeof *out);
        }
    }
}

static void phase_keys(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_model *m = c->m;
    enc_workspace *ws = c->ws;
    const int G = m->hp.n_kv_heads, E = m->head_dim, Q = m->qkv_dim;
    int k0, k1;
    team_split(ws->n_seqs * G, tid, n, &k0, &k1);
    for (int k = k0; k < k1; k++) {
        const seq_info *sq = &ws->seqs[k / G];
        const int g = k % G;
        attention_pack_keys(ws->kt + sq->kt + (size_t)g * attention_keys_floats(sq->len, E),
                            ws->qkv + (size_t)sq->row * Q, Q, sq->len, m->hp.n_heads, G, g, E,
                            c->prod);
    }
}

/* Every sequence's gathered columns' keys and values (and packed keys),
 * split by (sequence, key/value head). */
static void phase_gather(void *arg, int tid, int n)
{
    block_ctx *c = arg;
    const enc_model *m = c->m;
    enc_workspace *ws = c->ws;
    const int G = m->hp.n_kv_heads, E = m->head_dim, Q = m->qkv_dim;
    int k0, k1;
    team_split(ws->n_seqs * G, tid, n, &k0, &k1);
    for (int k = k0; k < k1; k++) {
        const seq_info *sq = &ws->seqs[k / G];
        const bm_seq *bs = &c->plan->bms[sq->job]->seqs[sq->b];
        const int g = k % G;
        float *dst = ws->gather + sq->gather + (size_t)g * workspace_seq_gather_floats(bs, E);
        const float *qkv = ws->qkv + (size_t)sq->row * Q;
        if (bs->n_gcols)
            attention_gather(dst, qkv, Q, bs->gcols, 0, 0, bs->n_gcols, m->hp.n_heads, G, g, E,
                             c->prod);
        dst += attention_gather_floats(bs->n_gcols, E);
        for (int r = 0; r < bs->stride; r++) { /* the residue classes, one after another */
            const int n_keys = (sq->len - r + bs->stride - 1) / bs->stride;
            attention_gather(dst, qkv, Q, NULL, r, bs->stride, n_keys, m->hp.n_heads, G, g, E,
                             c->prod);
            dst += attention_gather_floats(n_keys, E);
        }
    }
}

/* The attention work items.  A sequence without a mask is cut into tiles
 * of at most ATTN_TILE query rows; a masked one into its block mask's query
 * tiles (BM_TILE_Q rows).  Either way into at least as many items as the
 * team has threads when the sequence is long enough (16 rows at least), so
 * one sequence uses every core.  Then the global positions' rows, 64 to an
 * item. */
static void plan_attention(enc_workspace *ws, attn_plan *pl, const enc_blockmask *const *bms)
{
    const int nth = team_size(ws->team);
    pl->bms = bms;
    pl->n_items = 0;
    for (int s = 0; s < ws->n_seqs; s++) {
        const seq_info *sq = &ws->seqs[s];
        const bm_seq *bs = &bms[sq->job]->seqs[sq->b];
        for (int r = 0; r < bs->stride; r++) {
            const int m = (sq->len - r + bs->stride - 1) / bs->stride;
            for (int k0 = 0; k0 < m; k0 += BM_TILE_Q) {
                const int k1 = k0 + BM_TILE_Q < m ? k0 + BM_TILE_Q : m;
                pl->items[pl->n_items++] =
                    (attn_item){s, k0, k1, ITEM_RESIDUE, r, (uint64_t)m * (uint64_t)(k1 - k0) + 1};
            }
        }
    }
    pl->n_res = pl->n_items;
    for (int s = 0; s < ws->n_seqs; s++) {
        const seq_info *sq = &ws->seqs[s];
        const bm_seq *bs = &bms[sq->job]->seqs[sq->b];
        const int len = sq->len;
        int tile = (len + nth - 1) / nth;
        tile = tile > ATTN_TILE ? ATTN_TILE : tile < 16 ? 16 : tile;
        if (!bs->dense && tile > BM_TILE_Q)
            tile = BM_TILE_Q;
        for (int i0 = 0, i1; i0 < len; i0 = i1) {
            i1 = i0 + tile < len ? i0 + tile : len;
            uint64_t keys = (uint64_t)len;
            if (!bs->dense) { /* an item stays inside one query tile */
                const int qt = i0 / BM_TILE_Q, q1 = (qt + 1) * BM_TILE_Q;
                i1 = i1 < q1 ? i1 : q1;
                keys =
                    (uint64_t)(bs->qptr[qt + 1] - bs->qptr[qt]) * BM_TILE_K + (uint64_t)bs->n_gcols;
            }
            pl->items[pl->n_items++] =
                (attn_item){s, i0, i1, ITEM_TILE, 0, keys * (uint64_t)(i1 - i0) + 1};
        }
    }
    pl->n_tiles = pl->n_items;
    for (int s = 0; s < ws->n_seqs; s++) {
        const seq_info *sq = &ws->seqs[s];
        const bm_seq *bs = &bms[sq->job]->seqs[sq->b];
        for (int g0 = 0; g0 < bs->n_grows; g0 += BM_TILE_Q) {
            const int g1 = g0 + BM_TILE_Q < bs->n_grows ? g0 + BM_TILE_Q : bs->n_grows;
            pl->items[pl->n_items++] =
                (attn_item){s, g0, g1, ITEM_GROWS, 0, (uint64_t)sq->len * (uint64_t)(g1 - g0) + 1};
        }
    }
}

/* out (T rows ldo apart, N) = act(in (T rows ldi apart, K) . w^T + b) */
static void run_linear(block_ctx *c, float *out, int ldo, const float *in, int ldi, const float *w,
                       const gemm_packed *pk, const float *b, int K, int N, bool act)
{
    /* a pk means m->packed: ws->gemm is there; int8 panels run on any CPU */
    c->lin_pk = pk && (simd_enabled() || gemm_packed_int8(pk)) ? pk : NULL;
    c->lin_bf = pk && !simd_enabled() && gemm_packed_bf16(pk) ? pk : NULL;
    c->lin_out = out;
    c->lin_in = in;
    if (!c->lin_w[0]) { /* one block, unless run_linear_parts set more */
        c->lin_w[0] = w;
        c->lin_cut[0] = c->lin_cut[1] = N;
    }
    c->lin_b = b;
    c->lin_K = K;
    c->lin_N = N;
    c->lin_ldo = ldo;
    c->lin_ldi = ldi;
    c->lin_act = act;
    /* With a pause hook, in blocks of rows: a phase each, so that what runs
     * at the pauses never waits for a whole Linear of a large batch. */
    const int rows = c->ws->pause ? PAUSE_ROWS : c->T;
    for (int r0 = 0; r0 < c->T; r0 += rows) {
        c->lin_rows = c->T - r0 < rows ? c->T - r0 : rows;
        c->lin_in = in + (size_t)r0 * ldi;
        c->lin_out = out + (size_t)r0 * ldo;
        c->lin_pos = c->ws->tokpos ? c->ws->tokpos + r0 : NULL;
        const int nth = team_size(c->ws->team);
        if (c->lin_pk && !c->lin_glu && !c->lin_rope) {
            const bool i8 = gemm_packed_int8(c->lin_pk);
            const void *recs = NULL;
            if (i8 && c->ws->i8rows_of == in) { /* every row quantised by the norm before */
                recs = gemm_int8_rows_at(c->ws->i8rows, K, r0);
            } else if (i8) { /* its rows quantised first, for every item */
                team_deal_init(&c->lin_quant, c->lin_rows, nth);
                workspace_run(c->ws, phase_quantise, c);
                recs = c->ws->i8rows;
            }
            c->lin_grid = gemm_grid_of(c->lin_pk, c->lin_rows, nth, recs);
            team_deal_init(&c->lin_deal, gemm_grid_items(c->lin_grid), nth);
        }
        workspace_run(c->ws, phase_linear, c);
    }
    c->lin_w[0] = NULL;
    c->ws->i8rows_of = NULL; /* read, or overwritten by phase_quantise */
}

/* run_linear on a weight of n row blocks (n <= 3), block i w[i] (rows[i],
 * K): one block when each follows the one before (params), n when apart
 * (a file's tensors). */
static void run_linear_parts(block_ctx *c, float *out, int ldo, const float *in, int ldi,
                             const float *const *w, const int *rows, int n, const gemm_packed *pk,
                             const float *b, int K)
{
    int N = 0;
    bool adjacent = true;
    for (int i = 0; i < n; i++) {
        adjacent = adjacent && (i == 0 || w[i] == w[i - 1] + (size_t)rows[i - 1] * K);
        c->lin_w[i] = w[i];
        N += rows[i];
    }
    c->lin_cut[0] = adjacent ? N : rows[0];
    c->lin_cut[1] = adjacent || n < 3 ? N : rows[0] + rows[1];
    run_linear(c, out, ldo, in, ldi, w[0], pk, b, K, N, false);
}

/* phase_norm on the team; next: the packed weights of the Linear that
 * reads ln_out next, or NULL.  When they are int8 the norm also quantises
 * ln_out's rows, and that Linear (run_linear) finds them in ws->i8rows. */
static void run_norm(block_ctx *c, bool add_o, float *ln_out, const float *w, const float *b,
                     const gemm_packed *next)
{
    c->add_o = add_o;
    c->ln_out = ln_out;
    c->ln_w = w;
    c->ln_b = b;
    c->ln_quant = ln_out && next && gemm_packed_int8(next);
    workspace_run(c->ws, phase_norm, c);
    c->ws->i8rows_of = c->ln_quant ? ln_out : NULL;
    c->ln_quant = false;
}

/* Block l over the T packed tokens in ws->x, in place, writing each job's
 * attention weights for layer l where it asked for them.  Pre-norm, the
 * residual add that ends a block and the norm that starts the next are one
 * pass (y_ready: ws->y holds this block's normed input already, written by
 * the block before), and the last block's add and the final norm too.
 * Returns whether ws->y holds the next block's normed input. */
static bool block_forward(const enc_model *m, int l, enc_workspace *ws, const enc_job *jobs,
                          const enc_blockmask *const *bms, uint64_t *scores, int T, bool y_ready)
{
    const enc_hparams *hp = &m->hp;
    const enc_layer *ly = &m->layers[l];
    const int D = hp->d_model, F = hp->d_ff;
    const bool local = enc_layer_local(hp, l);
    const attn_plan *pl = &ws->plans[local];
    block_ctx c = {.m = m,
                   .ly = ly,
                   .ws = ws,
                   .jobs = jobs,
                   .bms = bms,
                   .plan = pl,
                   .rope = &ws->ropes[local && has_local_rope(hp)],
                   .scores = scores,
                   .layer = l,
                   .T = T,
                   .kt = m->packed && simd_enabled() ? ws->kt : NULL};
    /* bfloat16 models run attention's products in bfloat16; int8 models
     * too where the CPU multiplies bfloat16 itself (widened, they would be
     * slower than float32's) */
    const enc_dtype dt = enc_model_dtype(m);
    c.prod = !c.kt ? ATTN_BLAS
             : attention_bf16_ok(m->head_dim) &&
                     (dt == ENC_DTYPE_BFLOAT16 || (dt == ENC_DTYPE_INT8 && gemm_bf16_native()))
                 ? ATTN_BF16
                 : ATTN_F32;

    /* x = LN1(x + MHA(x))   or   x = x + MHA(LN1(x)), LN1 on layer 0 maybe
     * the identity */
    const float *a_in = ws->x;
    if (hp->norm_first && ly->ln1_w) {
        if (!y_ready)
            run_norm(&c, false, ws->y, ly->ln1_w, ly->ln1_b, ly->pk_qkv);
        a_in = ws->y;
    }
    /* RoPE inside the in-projection's GEMM, on each block of rows while in
     * cache, for neox heads of 64 dims turning whole (ModernBERT's); else a
     * pass of its own */
    c.lin_rope = hp->position == ENC_POS_ROPE && hp->rope_style == ENC_ROPE_NEOX &&
                 m->head_dim == 2 * GEMM_NR && rope_dim_of(m) == m->head_dim && ly->pk_qkv &&
                 !gemm_packed_int8(ly->pk_qkv) && simd_enabled() && !hp->qk_norm;
    const float *qkv[3] = {ly->w_q, ly->w_k, ly->w_v};
    const int qkv_rows[3] = {m->q_dim, m->kv_dim, m->kv_dim};
    run_linear_parts(&c, ws->qkv, m->qkv_dim, a_in, D, qkv, qkv_rows, 3, ly->pk_qkv, ly->b_qkv, D);
    if ((hp->position == ENC_POS_ROPE && !c.lin_rope) || hp->qk_norm)
        workspace_run(ws, phase_qk, &c);
    c.lin_rope = false;
    if (m->dis_row)
        workspace_run(ws, phase_dis, &c);
    if (c.kt)
        workspace_run(ws, phase_keys, &c);
    if (ws->gathering)
        workspace_run(ws, phase_gather, &c);
    if (pl->n_res)
        workspace_run(ws, phase_attention_residue, &c);
    run_attention(&c);
    if (pl->n_items > pl->n_tiles)
        workspace_run(ws, phase_attention_globals, &c);
    run_linear(&c, ws->o, D, ws->z, m->q_dim, ly->w_o, ly->pk_o, ly->b_o, m->q_dim, D, false);

    /* x = LN2(x + FFN(x))   or   x = x + FFN(LN2(x)), or with
     * sublayer_norm x = x + SO2(FFN(LN2(x))) (x + SO1(MHA(..)) before) */
    const float *f_in = ws->x;
    if (hp->norm_first) {
        const bool so = hp->sublayer_norm;
        c.so_w = so ? ly->so1_w : NULL;
        c.so_b = so ? ly->so1_b : NULL;
        run_norm(&c, true, ws->y, ly->ln2_w, ly->ln2_b, ly->pk_1);
        c.so_w = so ? ly->so2_w : NULL; /* for the add after the feed-forward */
        c.so_b = so ? ly->so2_b : NULL;
        f_in = ws->y;
    } else { /* with double_residual x = LN1(x + SO1(x + MHA(x))) */
        c.dr_w = hp->double_residual ? ly->so1_w : NULL;
        c.dr_b = hp->double_residual ? ly->so1_b : NULL;
        run_norm(&c, true, ws->x, ly->ln1_w, ly->ln1_b, ly->pk_1);
        c.dr_w = c.dr_b = NULL;
    }
    if (hp->ffn == ENC_FFN_MLP) {
        run_linear(&c, ws->h, ws->ldh, f_in, D, ly->w_1, ly->pk_1, ly->b_1, D, F, true);
    } else {
        /* Input and gate side by side, then act(input) * gate in place of
         * the input: by the packed GEMM on each block of rows it has just
         * written, while in cache, when d_ff is a whole number of panels;
         * else in a pass of its own. */
        c.lin_glu = ly->pk_1 && simd_enabled() && gemm_glu_ok(ly->pk_1);
        const float *halves[2] = {ly->w_1, ly->w_g};
        const int rows[2] = {F, F};
        run_linear_parts(&c, ws->h, ws->ldh, f_in, D, halves, rows, 2, ly->pk_1, ly->b_1, D);
        if (!c.lin_glu)
            workspace_run(ws, phase_glu, &c);
        c.lin_glu = false;
    }
    run_linear(&c, ws->o, D, ws->h, ws->ldh, ly->w_2, ly->pk_2, ly->b_2, F, D, false);
    const enc_layer *next = l + 1 < hp->n_layers ? &m->layers[l + 1] : NULL;
    if (!hp->norm_first) {
        run_norm(&c, true, ws->x, ly->ln2_w, ly->ln2_b, next ? next->pk_qkv : NULL);
        return false;
    }
    /* x += o, and the next block's first norm into y, or the final norm */
    if (next && next->ln1_w) {
        run_norm(&c, true, ws->y, next->ln1_w, next->ln1_b, next->pk_qkv);
        return true;
    }
    run_norm(&c, true, next ? NULL : m->final_w ? ws->x : NULL, m->final_w, m->final_b, NULL);
    return false;
}

/* Zeroes the entries of n (L, L) matrices whose row or column is len or
 * more. */
static void zero_padding(float *a, int n, int L, int len)
{
    for (int h = 0; h < n && len < L; h++, a += (size_t)L * L) {
        for (int r = 0; r < len; r++)
            memset(a + (size_t)r * L + len, 0, (size_t)(L - len) * sizeof *a);
        memset(a + (size_t)len * L, 0, (size_t)(L - len) * L * sizeof *a);
    }
}

/* job_check's checks and the job's own block mask. */
static int job_check_own(const enc_model *m, enc_job *job, const enc_blockmask **bm,
                         enc_blockmask **own)
{
    enc_error_clear(&job->err);
    *own = NULL;
    job->rc = enc_batch_validate(m, job->in, &job->err);
    if (job->rc == 0 && (!job->res || !job->res->out))
        job->rc = enc_error_set(&job->err, ENC_EINVAL, "forward needs an output");
    if (job->rc == 0)
        job->rc = head_check(m, job->in, job->res, &job->err);
    if (job->rc < 0)
        return job->rc;
    job->res->scores = 0;
    const bool csr =
        job->res->attn_format == ENC_FORMAT_CSR && job->res->attn_mode != ENC_ATTN_NONE;
    if (job->in->blockmask) {
        *bm = job->in->blockmask;
        if (csr && !(*bm)->csr)
            job->rc = enc_error_set(&job->err, ENC_EINVAL,
                                    "CSR weights need the batch's block mask compiled with csr");
        return job->rc;
    }
    if (csr)
        return job->rc = enc_error_set(&job->err, ENC_EINVAL,
                                       "CSR weights need the batch's block mask (enc_batch."
                                       "blockmask)");
    /* The strided diagonals by residue class when no layer returns weights. */
    bool weights = false;
    for (int l = 0; job->res->attn_mode != ENC_ATTN_NONE && job->res->attn && l < m->hp.n_layers;
         l++)
        weights |= job->res->attn[l] != NULL;
    *bm = *own = blockmask_new(job->in, false, !weights, -1, &job->err);
    if (!*bm)
        job->rc = job->err.status != ENC_OK ? (int)job->err.status : ENC_ENOMEM;
    return job->rc;
}

/* Checks a job and its result buffers, and finds its block mask (the
 * batch's, or *own, compiled here), and with local layers compiles *local,
 * the local layers' (the batch's mask and the band, residue classes
 * never); sets job->rc and job->err. */
static int job_check(const enc_model *m, enc_job *job, const enc_blockmask **bm,
                     enc_blockmask **own, enc_blockmask **local)
{
    *local = NULL;
    if (job_check_own(m, job, bm, own) < 0 || !has_local_layers(&m->hp))
        return job->rc;
    if (!(*local = blockmask_new(job->in, false, false, m->hp.local_window, &job->err)))
        job->rc = job->err.status != ENC_OK ? (int)job->err.status : ENC_ENOMEM;
    return job->rc;
}

/* Fails every job still alive with rc and err; returns how many. */
static int fail_live_jobs(enc_job *jobs, int n, int rc, const enc_error *err)
{
    int k = 0;
    for (int j = 0; j < n; j++)
        if (jobs[j].rc == 0) {
            jobs[j].rc = rc;
            jobs[j].err = *err;
            k++;
        }
    return k;
}

/* What enc_forward_many works out before it computes: each job's block
 * masks and the packed batch's size. */
typedef struct forward_plan {
    const enc_blockmask **bms;         /* (n) each job's block mask */
    enc_blockmask **own;               /* (n) those compiled here, to free */
    enc_blockmask **lbms;              /* (n) the local layers' (with the band) */
    const enc_blockmask *const *local; /* lbms, or NULL: no local layers */
    uint64_t *scores;                  /* (n) the scores each job's attention computed */
    size_t T, S, Lmax;                 /* real tokens, sequences, longest L of the live jobs */
} forward_plan;

/* Checks each job and compiles its block masks into p; a job that fails
 * its checks fails alone.  Returns how many jobs failed. */
static int plan_jobs(const enc_model *m, enc_job *jobs, int n, forward_plan *p)
{
    const bool has_local = has_local_layers(&m->hp);
    p->bms = calloc((size_t)n, sizeof *p->bms);
    p->own = calloc((size_t)n, sizeof *p->own);
    p->lbms = calloc((size_t)n, sizeof *p->lbms);
    p->scores = calloc((size_t)n, sizeof *p->scores);
    p->local = has_local ? (const enc_blockmask *const *)p->lbms : NULL;
    p->Lmax = 1;
    if (!p->bms || !p->own || !p->lbms || !p->scores) {
        for (int j = 0; j < n; j++)
            jobs[j].rc = enc_error_set(&jobs[j].err, ENC_ENOMEM, "out of memory planning a batch");
        return n;
    }
    int failed = 0;
    for (int j = 0; j < n; j++) {
        if (job_check(m, &jobs[j], &p->bms[j], &p->own[j], &p->lbms[j]) < 0) {
            failed++;
            continue;
        }
        const enc_batch *in = jobs[j].in;
        for (int b = 0; b < in->B; b++)
            p->T += (size_t)(in->lengths ? in->lengths[b] : in->L);
        p->S += (size_t)in->B;
        p->Lmax = (size_t)in->L > p->Lmax ? (size_t)in->L : p->Lmax;
    }
    return failed;
}

static void plan_free(forward_plan *p, int n)
{
    for (int j = 0; p->own && p->lbms && j < n; j++) {
        enc_blockmask_free(p->own[j]);
        enc_blockmask_free(p->lbms[j]);
    }
    free(p->own);
    free(p->lbms);
    free((void *)p->bms);
    free(p->scores);
}

/* RoPE: every packed token's position in ws->tokpos, and the angles up to
 * the largest.  Returns 0 or ENC_ENOMEM. */
static int rope_positions(enc_workspace *ws, const enc_job *jobs, int n, size_t T, enc_error *err)
{
    int32_t *tp = T > ws->cap_tokpos ? realloc(ws->tokpos, T * sizeof *tp) : ws->tokpos;
    if (!tp)
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the positions");
    if (T > ws->cap_tokpos) {
        ws->tokpos = tp;
        ws->cap_tokpos = T;
    }
    int need = 0;
    size_t t = 0;
    for (int j = 0; j < n; j++) {
        if (jobs[j].rc < 0)
            continue;
        const enc_batch *in = jobs[j].in;
        for (int b = 0; b < in->B; b++) {
            const int len = in->lengths ? in->lengths[b] : in->L;
            const int32_t *pos = in->positions ? in->positions + (size_t)b * in->L : NULL;
            for (int i = 0; i < len; i++, t++) {
                tp[t] = pos ? pos[i] : i;
                need = tp[t] + 1 > need ? tp[t] + 1 : need;
            }
        }
    }
    return rope_tables(ws, need, err);
}

/* Room in ws for the plan's batch: its shape, its masks' gathered areas,
 * RoPE's positions.  On failure every live job fails with the reason;
 * returns how many did. */
static int reserve_batch(const enc_model *m, enc_workspace *ws, enc_job *jobs, int n,
                         const forward_plan *p)
{
    enc_error err = {0};
    int rc = ENC_OK;
    if (p->T > INT32_MAX)
        rc = enc_error_set(&err, ENC_ELIMIT, "batch has %zu tokens; at most %d", p->T, INT32_MAX);
    if (rc == 0)
        rc = workspace_reserve(ws, p->T, p->Lmax, p->S, &err);
    if (rc == 0)
        rc = workspace_reserve_masks(ws, jobs, n, p->bms, p->local, &err);
    if (rc == 0 && m->hp.position == ENC_POS_ROPE)
        rc = rope_positions(ws, jobs, n, p->T, &err);
    if (rc == 0 && m->dis_row)
        rc = workspace_reserve_dis(ws, jobs, n, &err);
    return rc < 0 ? fail_live_jobs(jobs, n, rc, &err) : 0;
}

/* Packs the real tokens of every sequence of every live job into x (T, D)
 * (the embedding module's rows for token ids), each sequence's offsets
 * into the workspace's areas, dense weights' padding entries zeroed, and
 * plans the attention work. */
static void pack_batch(const enc_model *m, enc_workspace *ws, const enc_job *jobs, int n,
                       const forward_plan *p)
{
    const int D = m->hp.d_model, H = m->hp.n_heads;
    int row = 0;
    size_t kt = 0, goff = 0, doff = 0;
    bool ids = false; /* some batch gives token ids: the embedding module runs */
    ws->n_seqs = 0;
    for (int j = 0; j < n; j++) {
        if (jobs[j].rc < 0)
            continue;
        const enc_batch *in = jobs[j].in;
        const enc_result *res = jobs[j].res;
        const int L = in->L;
        const int heads = enc_attn_heads(res->attn_mode, H);
        size_t csr = 0;
        for (int b = 0; b < in->B; b++) {
            const int len = in->lengths ? in->lengths[b] : L;
            ws->seqs[ws->n_seqs++] = (seq_info){j, b, row, len, kt, csr, goff, doff};
            doff += workspace_dis_floats(m, len);
            goff += workspace_job_gather_floats(m, p->bms, p->local, j, b);
            csr += (size_t)heads * p->bms[j]->seqs[b].nnz;
            kt += (size_t)m->hp.n_kv_heads * attention_keys_floats(len, m->head_dim);
            if (in->x)
                memcpy(ws->x + (size_t)row * D, in->x + (size_t)b * L * D,
                       (size_t)len * D * sizeof(float));
            row += len;
        }
        /* Dense attention entries whose query or key is padding are 0;
         * attention writes every other one. */
        for (int l = 0; l < m->hp.n_layers && res->attn_mode != ENC_ATTN_NONE && res->attn &&
                        res->attn_format == ENC_FORMAT_DENSE;
             l++)
            for (int b = 0; res->attn[l] && b < in->B; b++)
                zero_padding(res->attn[l] + (size_t)b * heads * L * L, heads, L,
                             in->lengths ? in->lengths[b] : L);
        ids |= in->ids != NULL;
    }
    if (ids) { /* the ids batches' rows of x, from the embedding module */
        block_ctx c = {.m = m, .ws = ws, .jobs = jobs, .T = (int)p->T};
        workspace_run(ws, phase_embed, &c);
    }
    plan_attention(ws, &ws->plans[0], p->bms);
    if (p->local)
        plan_attention(ws, &ws->plans[1], p->local);
}

/* Every layer over the packed batch, then post-norm's final norm. */
static void run_layers(const enc_model *m, enc_workspace *ws, const enc_job *jobs,
                       const forward_plan *p)
{
    bool y_ready = false;
    ws->i8rows_of = NULL; /* none from a forward that stopped part way */
    for (int l = 0; l < m->hp.n_layers; l++)
        y_ready = block_forward(m, l, ws, jobs, p->bms, p->scores, (int)p->T, y_ready);
    if (m->final_w && !m->hp.norm_first) { /* post-norm's final norm, in place (pre-norm's
                                              came with the last residual add) */
        block_ctx c = {.m = m, .ws = ws, .T = (int)p->T};
        run_norm(&c, false, ws->x, m->final_w, m->final_b, NULL);
    }
}

/* Each live job's outputs and scores from the packed batch, padding rows
 * zero; a job whose outputs are not finite fails alone.  Returns how many
 * failed. */
static int unpack_batch(const enc_model *m, enc_workspace *ws, enc_job *jobs, int n,
                        const forward_plan *p)
{
    const int D = m->hp.d_model;
    int failed = 0;
    for (int j = 0; j < n; j++)
        if (jobs[j].rc == 0)
            jobs[j].res->scores = p->scores[j];
    for (int s = 0; s < ws->n_seqs; s++) {
        const seq_info *sq = &ws->seqs[s];
        enc_job *job = &jobs[sq->job];
        const int L = job->in->L;
        float *dst = job->res->out + (size_t)sq->b * L * D;
        const float *src = ws->x + (size_t)sq->row * D;
        memcpy(dst, src, (size_t)sq->len * D * sizeof(float));
        memset(dst + (size_t)sq->len * D, 0, (size_t)(L - sq->len) * D * sizeof(float));
        const size_t count = (size_t)sq->len * D, k = enc_floats_nonfinite(src, count);
        if (k < count && job->rc == 0) {
            job->rc = enc_error_set(&job->err, ENC_ENUMERIC,
                                    "the input drives the model out of float32 range (a "
                                    "non-finite value in sequence %d, token %zu)%s",
                                    sq->b, k / (size_t)D,
                                    job->in->x ? "; scale the embeddings down" : "");
            failed++;
        }
    }
    return failed;
}

int enc_forward_many(const enc_model *m, enc_workspace *ws, enc_job *jobs, int n)
{
    if (!ws || ws->m != m || n < 1) {
        for (int j = 0; j < n; j++)
            jobs[j].rc =
                enc_error_set(&jobs[j].err, ENC_EINVAL, "forward needs the model's workspace");
        return n;
    }
    forward_plan p = {0};
    int failed = plan_jobs(m, jobs, n, &p);
    if (failed < n)
        failed += reserve_batch(m, ws, jobs, n, &p);
    if (failed < n) {
        pack_batch(m, ws, jobs, n, &p);
        run_layers(m, ws, jobs, &p);
        failed += head_run(m, ws, jobs, n);
        team_rest(ws->team); /* the rest is this thread's: free the helpers' CPUs */
        failed += unpack_batch(m, ws, jobs, n, &p);
    }
    plan_free(&p, n);
    return failed;
}

int enc_forward(const enc_model *m, enc_workspace *ws, const enc_batch *in, enc_result *res,
                enc_error *err)
{
    enc_job job = {.in = in, .res = res};
    if (!m || !in)
        return enc_error_set(err, ENC_EINVAL, "no input");
    enc_forward_many(m, ws, &job, 1);
    if (job.rc < 0 && err && err->status == ENC_OK)
        *err = job.err;
    return job.rc;
}

double enc_forward_flops(const enc_hparams *hp, int B, int L)
{
    const double T = (double)B * L, D = hp->d_model, F = hp->d_ff, E = enc_head_dim(hp);
    const double Z = hp->n_heads * E, Q = Z + 2.0 * hp->n_kv_heads * E;
    const double linears = 2.0 * T * D * Q                  /* in-projection */
                           + 2.0 * T * D * Z                /* out-projection */
                           + 2.0 * T * D * enc_ffn_rows(hp) /* feed-forward in */
                           + 2.0 * T * D * F;               /* feed-forward out */
    double flops = 0.0;
    if (hp->dis.span > 0 && L > 0) { /* DeBERTa's c2p and p2c: each (L, E) by (E, rows) */
        const int far = L - 1;
        const double rows = enc_dis_row(&hp->dis, far) - enc_dis_row(&hp->dis, -far) + 1;
        flops += hp->n_layers * (hp->dis.c2p + hp->dis.p2c) * 2.0 * B * hp->n_heads * L * rows * E;
    }
    for (int l = 0; l < hp->n_layers; l++) { /* QK^T and AV over each layer's pairs */
        /* a causal layer's pairs: the diagonal and half the rest */
        const double all =
            enc_layer_local(hp, l) ? (double)mask_band_pairs(L, hp->local_window) : (double)L * L;
        const double pairs = hp->causal ? (all + L) / 2 : all;
        flops += linears + 4.0 * B * hp->n_heads * pairs * E;
    }
    return flops;
}
