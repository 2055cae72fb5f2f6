/* build.c - a whole model on model.c's storage: the Linears packed for
 * the GEMM kernels (model_pack), a model built from a seed with PyTorch's
 * initialisation scheme and its seeded embedding module, and the model
 * freed with every part (enc_model_free).  Above model.c, embed.c and
 * head.c: the storage knows nothing of the parts built on it. */
#include "model/model.h"

#include "base/rng.h"
#include "kernels/gemm.h"
#include "kernels/mask.h"
#include "kernels/ops.h"
#include "model/embed.h"
#include "model/head.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

/* Layer ly's float32 Linear weights that are packed will not be read: a
 * file's pages given back (model_release; a float32 forward with AVX-512
 * off faults them back in), and in bfloat16 or int8 attnd's own too
 * (model_release_owned: every forward reads the bfloat16 or int8 panels). */
static void release_packed(enc_model *m, const enc_layer *ly)
{
    const size_t D = (size_t)m->hp.d_model, KV = (size_t)m->kv_dim, Z = (size_t)m->q_dim;
    const size_t F = (size_t)m->hp.d_ff, f = sizeof(float);
    const struct {
        const float *w;
        size_t bytes;
        const gemm_packed *pk;
    } ws[] = {{ly->w_q, Z * D * f, ly->pk_qkv},  {ly->w_k, KV * D * f, ly->pk_qkv},
              {ly->w_v, KV * D * f, ly->pk_qkv}, {ly->w_o, D * Z * f, ly->pk_o},
              {ly->w_1, F * D * f, ly->pk_1},    {ly->w_g, ly->w_g ? F * D * f : 0, ly->pk_1},
              {ly->w_2, D * F * f, ly->pk_2}};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) {
        if (!ws[i].pk)
            continue;
        model_release(m, ws[i].w, ws[i].bytes);
        if (m->hp.dtype == ENC_DTYPE_BFLOAT16 || m->hp.dtype == ENC_DTYPE_INT8)
            model_release_owned(m, ws[i].w, ws[i].bytes);
    }
}

/* DeBERTa's rows of every layer (enc_model.dis_pos): the table through its
 * LayerNorm, then through the layer's key Linear and its query Linear
 * (which holds the scale: checkpoint.c), in float32 as transformers. */
static void dis_rows(enc_model *m)
{
    const int D = m->hp.d_model, R = 2 * m->hp.dis.span;
    const float *rel = m->dis_table;
    if (m->dis_ln_w) { /* into the room after the layers' rows */
        float *normed = m->dis_pos + (size_t)m->hp.n_layers * 2 * (size_t)R * (size_t)D;
        ops_layernorm(normed, rel, m->dis_ln_w, m->dis_ln_b, R, D, m->hp.layer_norm_eps);
        rel = normed;
    }
    for (int l = 0; l < m->hp.n_layers; l++) {
        const enc_layer *ly = &m->layers[l];
        float *k = m->dis_pos + (size_t)l * 2 * (size_t)R * (size_t)D, *q = k + (size_t)R * D;
        ops_linear_cols(k, D, rel, D, ly->w_k, ly->b_qkv ? ly->b_qkv + D : NULL, R, D, 0, D, NULL);
        ops_linear_cols(q, D, rel, D, ly->w_q, ly->b_qkv, R, D, 0, D, NULL);
    }
}

void model_pack(enc_model *m)
{
    if (m->rel_bias)
        mask_rel_dist(m->rel_dist, m->rel_bias, m->hp.n_heads);
    if (m->owned_released) /* the float32 weights are gone: the panels stay */
        return;
    if (m->dis_table)
        dis_rows(m);
    const int D = m->hp.d_model, F = m->hp.d_ff, KV = m->kv_dim, Z = m->q_dim;
    m->packed = false;
    for (int l = 0; l < m->hp.n_layers; l++) {
        enc_layer *ly = &m->layers[l];
        gemm_packed_free(ly->pk_qkv);
        gemm_packed_free(ly->pk_o);
        gemm_packed_free(ly->pk_1);
        gemm_packed_free(ly->pk_2);
        const float *qkv[3] = {ly->w_q, ly->w_k, ly->w_v}, *ffn[2] = {ly->w_1, ly->w_g};
        const int rows[3] = {Z, KV, KV}, ffn_rows[2] = {F, F}, n_ffn = ly->w_g ? 2 : 1;
        if (m->hp.dtype == ENC_DTYPE_BFLOAT16) {
            ly->pk_qkv = gemm_pack_parts_bf16(qkv, rows, 3, D);
            ly->pk_o = gemm_pack_bf16(ly->w_o, D, Z);
            ly->pk_1 = gemm_pack_parts_bf16(ffn, ffn_rows, n_ffn, D);
            ly->pk_2 = gemm_pack_bf16(ly->w_2, D, F);
        } else if (m->hp.dtype == ENC_DTYPE_INT8) { /* on any CPU, as bfloat16 */
            ly->pk_qkv = gemm_pack_parts_int8(qkv, rows, 3, D);
            ly->pk_o = gemm_pack_int8(ly->w_o, D, Z);
            ly->pk_1 = gemm_pack_parts_int8(ffn, ffn_rows, n_ffn, D);
            ly->pk_2 = gemm_pack_int8(ly->w_2, D, F);
        } else {
            ly->pk_qkv = gemm_pack_parts(qkv, rows, 3, D);
            ly->pk_o = gemm_pack(ly->w_o, D, Z);
            ly->pk_1 = gemm_pack_parts(ffn, ffn_rows, n_ffn, D);
            ly->pk_2 = gemm_pack(ly->w_2, D, F);
        }
        m->packed = m->packed || ly->pk_qkv || ly->pk_o || ly->pk_1 || ly->pk_2;
        release_packed(m, ly);
    }
    if (m->embed)
        embed_pack(m->embed);
    head_pack(m);
}

void enc_model_free(enc_model *m)
{
    if (!m)
        return;
    for (int l = 0; m->layers && l < m->hp.n_layers; l++) {
        gemm_packed_free(m->layers[l].pk_qkv);
        gemm_packed_free(m->layers[l].pk_o);
        gemm_packed_free(m->layers[l].pk_1);
        gemm_packed_free(m->layers[l].pk_2);
    }
    embed_free(m->embed);
    head_free(m->head);
    free(m->project.weight);
    model_storage_free(m);
}

/* Fills n floats from one stream, uniform in [-bound, bound). */
static void fill_uniform(float *dst, size_t n, uint64_t seed, int layer, int tensor, double bound)
{
    rng_stream r;
    rng_init(&r, seed, layer, tensor);
    for (size_t i = 0; i < n; i++)
        dst[i] = rng_uniform(&r, bound);
}

static void fill_value(float *dst, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = v;
}

/* Stream numbers of enc_model_random, one per tensor of a layer. */
enum {
    RNG_Q,
    RNG_K,
    RNG_V,
    RNG_OUT_W,
    RNG_FF1_W,
    RNG_FF1_B,
    RNG_FF2_W,
    RNG_FF2_B,
    RNG_REL,
    RNG_DIS
};

enc_model *enc_model_random(const enc_hparams *hp, uint64_t seed, enc_error *err)
{
    enc_model *m = model_alloc(hp, err);
    if (!m)
        return NULL;
    const size_t D = (size_t)hp->d_model, F = (size_t)hp->d_ff, KV = (size_t)m->kv_dim;
    const size_t F1 = (size_t)enc_ffn_rows(hp), Z = (size_t)m->q_dim;
    for (int l = 0; l < hp->n_layers; l++) {
        enc_layer *ly = &m->layers[l];
        float *w_qkv = model_own(m, ly->w_q); /* q, k and v rows one after the other */
        if (hp->n_kv_heads == hp->n_heads && Z == D) {
            /* nn.MultiheadAttention: xavier_uniform_ over the whole (3D, D). */
            fill_uniform(w_qkv, 3 * D * D, seed, l, RNG_Q, sqrt(6.0 / (double)(D + 3 * D)));
        } else {
            /* Separate q/k/v weights: xavier_uniform_ on each. */
            fill_uniform(w_qkv, Z * D, seed, l, RNG_Q, sqrt(6.0 / (double)(D + Z)));
            fill_uniform(w_qkv + Z * D, KV * D, seed, l, RNG_K, sqrt(6.0 / (double)(D + KV)));
            fill_uniform(w_qkv + Z * D + KV * D, KV * D, seed, l, RNG_V,
                         sqrt(6.0 / (double)(D + KV)));
        }
        /* nn.Linear: kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in),
         * and its bias the same bound; MHA zeroes its two biases. */
        fill_uniform(model_own(m, ly->w_o), D * Z, seed, l, RNG_OUT_W, 1.0 / sqrt((double)Z));
        fill_uniform(model_own(m, ly->w_1), F1 * D, seed, l, RNG_FF1_W, 1.0 / sqrt((double)D));
        fill_uniform(model_own(m, ly->w_2), D * F, seed, l, RNG_FF2_W, 1.0 / sqrt((double)F));
        if (hp->bias) {
            fill_uniform(ly->b_1, F1, seed, l, RNG_FF1_B, 1.0 / sqrt((double)D));
            fill_uniform(ly->b_2, D, seed, l, RNG_FF2_B, 1.0 / sqrt((double)F));
            /* b_qkv, b_o and the LayerNorm biases stay zero from calloc. */
        }
        if (ly->ln1_w) /* layer 0's may be the identity */
            fill_value(ly->ln1_w, D, 1.0f);
        fill_value(ly->ln2_w, D, 1.0f);
        if (ly->so1_w)
            fill_value(ly->so1_w, D, 1.0f);
        if (ly->so2_w)
            fill_value(ly->so2_w, D, 1.0f);
        if (ly->qn_w) { /* Qwen3RMSNorm's weight: ones (a whole q's or k's LayerNorm's too) */
            const bool whole = hp->qk_norm_whole;
            fill_value(ly->qn_w, whole ? (size_t)m->q_dim : (size_t)m->head_dim, 1.0f);
            fill_value(ly->kn_w, whole ? (size_t)m->kv_dim : (size_t)m->head_dim, 1.0f);
        }
    }
    if (m->final_w)
        fill_value(m->final_w, D, 1.0f);
    if (m->dis_table) /* nn.Embedding again, and a LayerNorm's weight 1 */
        fill_uniform(m->dis_table, 2 * (size_t)hp->dis.span * D, seed, 0, RNG_DIS, sqrt(3.0));
    if (m->dis_ln_w)
        fill_value(m->dis_ln_w, D, 1.0f);
    if (m->rel_bias) /* nn.Embedding: variance 1 (uniform in +-sqrt(3)), on layer 0's streams */
        fill_uniform(m->rel_bias, (size_t)hp->rel_buckets * (size_t)hp->n_heads, seed, 0, RNG_REL,
                     sqrt(3.0));
    snprintf(m->source, sizeof m->source, "seed:%llu", (unsigned long long)seed);
    model_pack(m);
    return m;
}

/* ---- the embedding module ---------------------------------------------- */

const enc_embedding_info *enc_model_embedding(const enc_model *m)
{
    return m && m->embed ? &m->embed->info : NULL;
}

int enc_model_seed_embedding(enc_model *m, int vocab_size, int max_positions, uint64_t seed,
                             enc_error *err)
{
    if (m->embed)
        return enc_error_set(err, ENC_EINVAL, "the model has an embedding module already");
    if (vocab_size < 1 || max_positions < 1)
        return enc_error_set(err, ENC_EINVAL,
                             "a seeded embedding module needs vocab_size and max_positions of at "
                             "least 1 (got %d and %d)",
                             vocab_size, max_positions);
    const int D = m->hp.d_model;
    const embed_config cfg = {.vocab_size = vocab_size,
                              .type_vocab_size = 2,
                              .max_positions = max_positions,
                              .embedding_size = D,
                              .pos = EMBED_POS_SINUSOIDAL,
                              .eps = m->hp.layer_norm_eps,
                              .norm_bias = true};
    embed_module *e = embed_new(&cfg, D, err);
    if (!e)
        return err->status;
    static const char *const names[] = {"embeddings.word_embeddings.weight",
                                        "embeddings.token_type_embeddings.weight",
                                        "embeddings.position_embeddings.weight",
                                        "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (embed_add_name(e, names[i]) < 0) {
            embed_free(e);
            return enc_error_set(err, ENC_ENOMEM, "out of memory for the embedding module");
        }
    rng_stream r;
    rng_init(&r, seed, EMBED_SEED_LAYER, EMBED_SEED_TYPE);
    for (size_t i = 0; i < 2 * (size_t)D; i++)
        e->type[i] = rng_uniform(&r, EMBED_SEED_BOUND);
    for (int j = 0; j < D; j++) /* the bias stays 0 from mem_zalloc */
        e->ln_w[j] = 1.0f;
    embed_sinusoidal(e);
    e->word_seeded = true;
    e->word_seed = seed;
    e->word_dtype = EMBED_F32;
    embed_finish(e, &m->hp);
    m->embed = e;
    return ENC_OK;
}
