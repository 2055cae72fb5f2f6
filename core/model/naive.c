/* naive.c - the encoder in plain loops and double precision, one sequence at
 * a time, no BLAS and no packing: the obviously correct reference the fast
 * path in forward.c is tested against.  It shares no code with it. */
#include "base/rng.h"
#include "kernels/mask.h"
#include "load/safetensors.h"
#include "model/embed.h"
#include "model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* y (n, out) = x (n, in) . w (out, in)^T + b (out) */
static void naive_linear(double *y, const double *x, const float *w, const float *b, int n, int in,
                         int out)
{
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double acc = b ? b[o] : 0.0;
            for (int k = 0; k < in; k++)
                acc += x[(size_t)i * in + k] * w[(size_t)o * in + k];
            y[(size_t)i * out + o] = acc;
        }
}

/* y (n, D) = (x - mean) / sqrt(var + eps) * w + b, row by row */
static void naive_layernorm(double *y, const double *x, const float *w, const float *b, int n,
                            int D, double eps)
{
    for (int i = 0; i < n; i++) {
        const double *r = x + (size_t)i * D;
        double mean = 0, var = 0;
        for (int k = 0; k < D; k++)
            mean += r[k];
        mean /= D;
        for (int k = 0; k < D; k++)
            var += (r[k] - mean) * (r[k] - mean);
        var /= D;
        for (int k = 0; k < D; k++)
            y[(size_t)i * D + k] = (r[k] - mean) / sqrt(var + eps) * w[k] + (b ? b[k] : 0.0);
    }
}

/* hp's norm of n rows of D: RMSNorm (x / sqrt(mean(x^2) + eps) * w) or
 * LayerNorm */
static void naive_norm(const enc_hparams *hp, double *y, const double *x, const float *w,
                       const float *b, int n, int D)
{
    if (hp->norm != ENC_NORM_RMS) {
        naive_layernorm(y, x, w, b, n, D, hp->layer_norm_eps);
        return;
    }
    for (int i = 0; i < n; i++) {
        const double *r = x + (size_t)i * D;
        double ms = 0;
        for (int k = 0; k < D; k++)
            ms += r[k] * r[k];
        const double s = 1.0 / sqrt(ms / D + hp->layer_norm_eps);
        for (int k = 0; k < D; k++)
            y[(size_t)i * D + k] = r[k] * s * w[k];
    }
}

static double naive_act(double x, enc_activation act)
{
    switch (act) {
    case ENC_ACT_RELU:
        return x > 0 ? x : 0;
    case ENC_ACT_GELU:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case ENC_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    }
    return x;
}

static bool naive_is_global(const enc_mask *mk, int p)
{
    for (size_t k = 0; k < mk->n_global; k++)
        if (mk->global[k] == p)
            return true;
    return false;
}

/* BigBird's blocks: is kb one of query block qb's random blocks?  The
 * generator is the definition (mask_blocks_random); the rest is written out
 * here. */
static bool naive_random_block(const enc_blocks_pattern *p, int len, int qb, int kb)
{
    const int nb = (int)(((long long)len + p->size - 1) / p->size);
    int *cand = malloc(((size_t)nb + 1) * sizeof *cand);
    int *out = malloc(((size_t)(p->random < nb ? p->random : nb) + 1) * sizeof *out);
    bool found = false;
    if (cand && out) {
        const int k = mask_blocks_random(p, nb, qb, cand, out);
        for (int r = 0; r < k; r++)
            found |= out[r] == kb;
    }
    free(cand);
    free(out);
    return found;
}

/* The pattern options, a union (docs/model.md): is (i, j) in the pattern? */
static bool naive_in_pattern(const enc_mask *mk, int len, int i, int j)
{
    const bool windowed = mk->window_left != ENC_WINDOW_NONE || mk->window_right != ENC_WINDOW_NONE;
    const bool any = windowed || mk->stride > 0 || mk->fixed_block > 0 || mk->blocks.size > 0;
    if (!any)
        return true; /* no pattern option: every pair */
    if (naive_is_global(mk, i) || naive_is_global(mk, j))
        return true;
    if (windowed && (mk->window_left == ENC_WINDOW_NONE || (long long)i - j <= mk->window_left) &&
        (mk->window_right == ENC_WINDOW_NONE || (long long)j - i <= mk->window_right))
        return true;
    if (mk->stride > 0 && (abs(i - j) < mk->stride || (i - j) % mk->stride == 0))
        return true;
    if (mk->fixed_block > 0 && (i / mk->fixed_block == j / mk->fixed_block ||
                                j % mk->fixed_block >= mk->fixed_block - mk->fixed_summary))
        return true;
    if (mk->blocks.size > 0) {
        const enc_blocks_pattern *p = &mk->blocks;
        const int qb = i / p->size, kb = j / p->size;
        if (abs(qb - kb) <= p->window || qb < p->global || kb < p->global ||
            naive_random_block(p, len, qb, kb))
            return true;
    }
    return false;
}

/* Condition by condition: may query i of sequence b see key j? */
static bool naive_allowed(const enc_batch *in, int b, int len, int i, int j)
{
    const enc_mask *mk = &in->mask;
    const size_t L = (size_t)in->L;
    if (j >= len)
        return false; /* padding by lengths */
    if (mk->key_padding && mk->key_padding[b * L + j])
        return false; /* padding by key_padding */
    if (mk->causal && j > i)
        return false;
    if (!naive_in_pattern(mk, len, i, j))
        return false;
    if (mk->attn_kind == ENC_MASK_BOOL) {
        size_t off = (mk->attn_per_sequence ? (size_t)b * L * L : 0) + (size_t)i * L + (size_t)j;
        if (mk->attn_bool[off])
            return false;
    }
    if (mk->attn_kind == ENC_MASK_ADD &&
        mk->attn_add[(mk->attn_per_sequence ? (size_t)b * L * L : 0) + (size_t)i * L + j] ==
            -INFINITY)
        return false;
    return true;
}

static double naive_additive(const enc_batch *in, int b, int i, int j)
{
    const enc_mask *mk = &in->mask;
    const size_t L = (size_t)in->L;
    if (mk->attn_kind != ENC_MASK_ADD)
        return 0.0;
    return mk->attn_add[(mk->attn_per_sequence ? (size_t)b * L * L : 0) + (size_t)i * L + j];
}

/* RoPE on n vectors of E doubles (stride E) of the token at position pos:
 * the first dim dims rotate, in pairs (k, k + dim/2) or (2k, 2k + 1), by
 * pos * theta^(-2k / dim), times f^(-(2k + 2) / dim) under NTK scaling by
 * f = rope_ntk > 1 (the same as (theta f)^(-2k / dim) / f^(2 / dim)). */
static void naive_rope(double *x, int n, int E, const enc_hparams *hp, double theta, int pos)
{
    const int dim = hp->rope_dim ? hp->rope_dim : E, half = dim / 2;
    const double f = hp->rope_ntk > 1.0 ? hp->rope_ntk : 1.0;
    for (int v = 0; v < n; v++, x += E)
        for (int k = 0; k < half; k++) {
            const double a =
                (double)pos * pow(theta, -2.0 * k / dim) * pow(f, -(2.0 * k + 2.0) / dim);
            const int i0 = hp->rope_style == ENC_ROPE_NEOX ? k : 2 * k;
            const int i1 = hp->rope_style == ENC_ROPE_NEOX ? k + half : 2 * k + 1;
            const double x0 = x[i0], x1 = x[i1];
            x[i0] = x0 * cos(a) - x1 * sin(a);
            x[i1] = x1 * cos(a) + x0 * sin(a);
        }
}

/* Row `row` of the word table, as the file stores it (or as a seeded module
 * draws it), into y (E). */
static void naive_word(const embed_module *e, int row, double *y)
{
    const int E = e->cfg.embedding_size;
    if (e->word_seeded) { /* drawn, not stored */
        rng_stream r;
        rng_init(&r, e->word_seed, EMBED_SEED_LAYER, EMBED_SEED_WORD);
        rng_skip(&r, (uint64_t)row * E);
        for (int k = 0; k < E; k++)
            y[k] = rng_uniform(&r, EMBED_SEED_BOUND);
        return;
    }
    for (int k = 0; k < E; k++) {
        const size_t at = (size_t)row * E + k;
        if (e->word_dtype == EMBED_F32) {
            float f;
            memcpy(&f, e->word + 4 * at, sizeof f);
            y[k] = f;
        } else {
            const uint16_t h = (uint16_t)(e->word[2 * at] | e->word[2 * at + 1] << 8);
            y[k] = e->word_dtype == EMBED_F16 ? st_f16_to_f32(h) : st_bf16_to_f32(h);
        }
    }
}

/* The embedding module on sequence b's first len ids, into x (len, D):
 * written out after transformers' modules.  e (len, E) and y (E) are
 * scratch. */
static void naive_embed(const enc_model *m, const enc_batch *in, int b, int len, double *x,
                        double *e_rows)
{
    const embed_module *e = m->embed;
    const embed_config *cfg = &e->cfg;
    const int L = in->L, E = cfg->embedding_size, D = m->hp.d_model;
    const int32_t *ids = in->ids->input_ids + (size_t)b * L;
    const int32_t *tt = in->ids->token_type_ids ? in->ids->token_type_ids + (size_t)b * L : NULL;
    for (int i = 0; i < len; i++) {
        double *y = e_rows + (size_t)i * E;
        naive_word(e, ids[i], y); /* word_embeddings(input_ids) */
        for (int k = 0; cfg->scale != 0.0f && k < E; k++)
            y[k] *= cfg->scale;   /* times Gemma 3's embed_scale, float32 as transformers' */
        if (e->type)              /* + token_type_embeddings(token_type_ids or zeros) */
            for (int k = 0; k < E; k++)
                y[k] += e->type[(size_t)(tt ? tt[i] : 0) * E + k];
        if (!e->pos)
            continue;
        /* + position_embeddings(position_ids): given; or arange(L); or
         * RoBERTa's create_position_ids_from_input_ids: mask = ids !=
         * padding_idx, cumsum(mask) * mask + padding_idx */
        int p = i;
        if (in->positions) {
            p = in->positions[(size_t)b * L + i];
        } else if (cfg->pos == EMBED_POS_ROBERTA) {
            int cum = 0;
            for (int j = 0; j <= i; j++)
                cum += ids[j] != cfg->pad_token_id;
            p = cum * (ids[i] != cfg->pad_token_id) + cfg->pad_token_id;
        }
        for (int k = 0; k < E; k++)
            y[k] += e->pos[(size_t)p * E + k];
    }
    /* LayerNorm; then ELECTRA's embeddings_project when E != D */
    if (e->ln_w)
        naive_layernorm(e_rows, e_rows, e->ln_w, e->ln_b, len, E, cfg->eps);
    if (e->proj_w)
        naive_linear(x, e_rows, e->proj_w, e->proj_b, len, E, D);
    else
        memcpy(x, e_rows, (size_t)len * D * sizeof *x);
}

int enc_forward_naive(const enc_model *m, const enc_batch *in, enc_result *res, enc_error *err)
{
    int rc = enc_batch_validate(m, in, err);
    if (rc < 0)
        return rc;
    const enc_hparams *hp = &m->hp;
    const int B = in->B, L = in->L, D = hp->d_model, F = hp->d_ff, H = hp->n_heads;
    const int G = hp->n_kv_heads, E = m->head_dim, KV = G * E, Z = m->q_dim;
    const size_t LD = (size_t)L * D, LZ = (size_t)L * Z;

    double *x = malloc(LD * sizeof *x), *a = malloc(LD * sizeof *a);
    double *q = malloc(LZ * sizeof *q), *z = malloc(LZ * sizeof *z), *o = malloc(LD * sizeof *o);
    double *k = malloc((size_t)L * KV * sizeof *k), *v = malloc((size_t)L * KV * sizeof *v);
    double *hid = malloc((size_t)L * F * sizeof *hid), *p = malloc((size_t)L * sizeof *p);
    double *gate = malloc((size_t)L * F * sizeof *gate);
    const size_t emb_E = m->embed ? (size_t)m->embed->cfg.embedding_size : 1;
    double *emb = malloc((size_t)L * emb_E * sizeof *emb);
    /* DeBERTa: the table (normed), and a layer's key and query rows of it */
    const size_t R = 2 * (size_t)hp->dis.span;
    double *rel = malloc((R ? R : 1) * D * sizeof *rel),
           *posk = malloc((R ? R : 1) * D * sizeof *posk);
    double *posq = malloc((R ? R : 1) * D * sizeof *posq);
    if (!x || !a || !q || !z || !o || !k || !v || !hid || !p || !gate || !emb || !rel || !posk ||
        !posq) {
        rc = enc_error_set(err, ENC_ENOMEM, "out of memory in the naive forward");
        goto done;
    }
    for (size_t t = 0; t < R * D; t++)
        rel[t] = m->dis_table[t];
    if (R && hp->dis.norm)
        naive_layernorm(rel, rel, m->dis_ln_w, m->dis_ln_b, (int)R, D, hp->layer_norm_eps);
    memset(res->out, 0, (size_t)B * LD * sizeof *res->out);
    const size_t attn_per_seq = (size_t)enc_attn_heads(res->attn_mode, H) * L * L;
    for (int l = 0; l < hp->n_layers && res->attn_mode != ENC_ATTN_NONE; l++)
        if (res->attn && res->attn[l])
            memset(res->attn[l], 0, (size_t)B * attn_per_seq * sizeof(float));

    for (int b = 0; b < B; b++) {
        const int len = in->lengths ? in->lengths[b] : L;
        if (in->ids)
            naive_embed(m, in, b, len, x, emb);
        else
            for (size_t t = 0; t < (size_t)len * D; t++)
                x[t] = in->x[(size_t)b * LD + t];

        for (int l = 0; l < hp->n_layers; l++) {
            const enc_layer *ly = &m->layers[l];
            /* A local layer (l mod global_every != global_offset) sees
             * |i - j| <= local_window besides; its RoPE turns by
             * rope_theta_local when that is set. */
            const bool local = hp->global_every > 1 && l % hp->global_every != hp->global_offset;
            const double theta =
                local && hp->rope_theta_local > 0.0 ? hp->rope_theta_local : hp->rope_theta;
            /* attention sublayer; layer 0's norm the identity when first_norm_identity */
            if (hp->norm_first && !(l == 0 && hp->first_norm_identity))
                naive_norm(hp, a, x, ly->ln1_w, ly->ln1_b, len, D);
            else
                memcpy(a, x, (size_t)len * D * sizeof *a);
            const float *wq = ly->w_q, *wk = ly->w_k, *wv = ly->w_v;
            const float *bq = ly->b_qkv, *bk = bq ? bq + Z : NULL, *bv = bq ? bq + Z + KV : NULL;
            naive_linear(q, a, wq, bq, len, D, Z);
            naive_linear(k, a, wk, bk, len, D, KV);
            naive_linear(v, a, wv, bv, len, D, KV);
            if (R) { /* the query Linear holds DeBERTa's scale (checkpoint.c) */
                naive_linear(posk, rel, wk, bk, (int)R, D, KV);
                naive_linear(posq, rel, wq, bq, (int)R, D, D);
            }
            if (hp->qk_norm && hp->qk_norm_whole) { /* each token's q and k (JinaBERT's) */
                naive_norm(hp, q, q, ly->qn_w, ly->qn_b, len, Z);
                naive_norm(hp, k, k, ly->kn_w, ly->kn_b, len, KV);
            } else if (hp->qk_norm) { /* each head's q and k (Qwen3's q_norm, k_norm) */
                naive_norm(hp, q, q, ly->qn_w, NULL, len * H, E);
                naive_norm(hp, k, k, ly->kn_w, NULL, len * G, E);
            }
            const int32_t *pos = in->positions ? in->positions + (size_t)b * L : NULL;
            for (int i = 0; hp->position == ENC_POS_ROPE && i < len; i++) {
                naive_rope(q + (size_t)i * Z, H, E, hp, theta, pos ? pos[i] : i);
                naive_rope(k + (size_t)i * KV, G, E, hp, theta, pos ? pos[i] : i);
            }

            float *attn = NULL;
            if (res->attn_mode != ENC_ATTN_NONE && res->attn && res->attn[l])
                attn = res->attn[l] + (size_t)b * attn_per_seq;
            for (int h = 0; h < H; h++) {
                const int g = h / (H / G);
                for (int i = 0; i < len; i++) {
                    double max = -INFINITY, sum = 0;
                    for (int j = 0; j < len; j++) {
                        p[j] = -INFINITY;
                        if (!naive_allowed(in, b, len, i, j) ||
                            (local && abs(i - j) > hp->local_window))
                            continue;
                        double s = 0;
                        for (int e = 0; e < E; e++)
                            s += q[(size_t)i * Z + h * E + e] * k[(size_t)j * KV + g * E + e];
                        p[j] = s / sqrt((double)E) + naive_additive(in, b, i, j);
                        if (hp->position == ENC_POS_ALIBI) { /* -m_h |p_i - p_j| */
                            const int pi = pos ? pos[i] : i, pj = pos ? pos[j] : j;
                            p[j] -= (double)m->alibi[h] * abs(pi - pj);
                        }
                        if (hp->rel_buckets) /* MPNet: table[bucket(j - i)][h], indices */
                            p[j] += m->rel_bias[(size_t)enc_rel_bucket(j - i) * H + h];
                        if (R) { /* DeBERTa: q_i . K_r + k_j . Q_r, r the row of i - j */
                            const size_t r = (size_t)enc_dis_row(&hp->dis, i - j) * D + h * E;
                            double c2p = 0, p2c = 0;
                            for (int e = 0; e < E; e++) {
                                c2p += q[(size_t)i * Z + h * E + e] * posk[r + e];
                                p2c += k[(size_t)j * KV + g * E + e] * posq[r + e];
                            }
                            p[j] += ((hp->dis.c2p ? c2p : 0) + (hp->dis.p2c ? p2c : 0)) /
                                    sqrt((double)E);
                        }
                        if (p[j] > max)
                            max = p[j];
                    }
                    for (int j = 0; j < len; j++) {
                        p[j] = (max == -INFINITY || p[j] == -INFINITY) ? 0.0 : exp(p[j] - max);
                        sum += p[j];
                    }
                    for (int j = 0; j < len; j++)
                        p[j] = sum > 0 ? p[j] / sum : 0.0;
                    for (int e = 0; e < E; e++) {
                        double acc = 0;
                        for (int j = 0; j < len; j++)
                            acc += p[j] * v[(size_t)j * KV + g * E + e];
                        z[(size_t)i * Z + h * E + e] = acc;
                    }
                    for (int j = 0; attn && j < len; j++) {
                        if (res->attn_mode == ENC_ATTN_HEADS)
                            attn[((size_t)h * L + i) * L + j] = (float)p[j];
                        else
                            attn[(size_t)i * L + j] += (float)(p[j] / H);
                    }
                }
            }
            naive_linear(o, z, ly->w_o, ly->b_o, len, Z, D);
            if (hp->sublayer_norm) /* Gemma 3's post_attention_layernorm */
                naive_norm(hp, o, o, ly->so1_w, ly->so1_b, len, D);
            if (hp->double_residual) { /* JinaBERT qk-post-norm's attention.output.LayerNorm */
                for (size_t t = 0; t < (size_t)len * D; t++)
                    o[t] += x[t];
                naive_norm(hp, o, o, ly->so1_w, ly->so1_b, len, D);
            }
            for (size_t t = 0; t < (size_t)len * D; t++)
                x[t] += o[t];
            if (!hp->norm_first)
                naive_norm(hp, x, x, ly->ln1_w, ly->ln1_b, len, D);

            /* feed-forward sublayer */
            if (hp->norm_first)
                naive_norm(hp, a, x, ly->ln2_w, ly->ln2_b, len, D);
            else
                memcpy(a, x, (size_t)len * D * sizeof *a);
            if (hp->ffn == ENC_FFN_MLP) {
                naive_linear(hid, a, ly->w_1, ly->b_1, len, D, F);
                for (size_t t = 0; t < (size_t)len * F; t++)
                    hid[t] = naive_act(hid[t], hp->activation);
            } else { /* input rows of w_1 then gate rows: act(x Wi) * (x Wg) */
                naive_linear(hid, a, ly->w_1, ly->b_1, len, D, F);
                naive_linear(gate, a, ly->w_g, ly->b_1 ? ly->b_1 + F : NULL, len, D, F);
                for (size_t t = 0; t < (size_t)len * F; t++) {
                    const double u = hid[t];
                    hid[t] = (hp->ffn == ENC_FFN_SWIGLU ? u / (1.0 + exp(-u))
                                                        : naive_act(u, hp->activation)) *
                             gate[t];
                }
            }
            naive_linear(o, hid, ly->w_2, ly->b_2, len, F, D);
            if (hp->sublayer_norm) /* its post_feedforward_layernorm */
                naive_norm(hp, o, o, ly->so2_w, ly->so2_b, len, D);
            for (size_t t = 0; t < (size_t)len * D; t++)
                x[t] += o[t];
            if (!hp->norm_first)
                naive_norm(hp, x, x, ly->ln2_w, ly->ln2_b, len, D);
        }
        if (hp->final_norm)
            naive_norm(hp, x, x, m->final_w, m->final_b, len, D);
        for (size_t t = 0; t < (size_t)len * D; t++)
            res->out[(size_t)b * LD + t] = (float)x[t];
    }
    rc = ENC_OK;
done:
    free(x);
    free(a);
    free(q);
    free(z);
    free(o);
    free(k);
    free(v);
    free(hid);
    free(p);
    free(gate);
    free(emb);
    free(rel);
    free(posk);
    free(posq);
    return rc;
}
