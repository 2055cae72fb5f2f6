/* pooling.h - sentence embeddings from the encoder's outputs, as
 * sentence-transformers' modules after its Transformer compute them (Pooling,
 * Dense, Normalize), and those modules read from a directory's
 * sentence-transformers files (modules.json, 1_Pooling/config.json in its
 * older and newer forms, each Dense module's config.json and weights).
 *
 *     enc_st_config st;
 *     if (enc_st_config_read(dir, d_model, &st, &err) < 0) ... a module attnd lacks, named
 *     const enc_embedder e = {.mode = st.pooling, .normalize = st.normalize, .dense = st.dense,
 *                             .n_dense = st.n_dense, .int8_tanh = st.int8_tanh};
 *     float *emb = enc_embed(&e, out, B, L, D, lengths, 0); // (B, enc_embed_width(&e, D))
 *     ...
 *     free(emb);
 *     enc_st_config_free(&st);
 */
#ifndef ATTND_POOLING_H
#define ATTND_POOLING_H

#include "base/error.h"

#include <stdbool.h>

typedef enum enc_pooling {
    ENC_POOL_AUTO, /* a setting's value: the directory's sentence-transformers files, else mean */
    ENC_POOL_CLS,  /* the first token (pooling_mode_cls_token) */
    ENC_POOL_MEAN, /* the mean over the sequence's tokens (pooling_mode_mean_tokens) */
    ENC_POOL_MAX,  /* the largest value of each dimension over them (pooling_mode_max_tokens) */
    ENC_POOL_LAST, /* the last token (pooling_mode_lasttoken) */
} enc_pooling;

/* "auto", "cls", "mean", "max", "last". */
const char *enc_pooling_name(enc_pooling p);
/* 0, or -1 for a name that is none of them. */
int enc_pooling_parse(const char *s, enc_pooling *p);

/* A Dense module: y = act(weight . x + bias), sentence-transformers'
 * Dense.forward on each pooled row (LaBSE's 768 -> 768 with Tanh;
 * EmbeddingGemma's 768 -> 3072 -> 768, no bias, Identity).  Float32 whatever
 * the model's dtype. */
typedef struct enc_dense {
    int in, out;   /* in_features, out_features */
    float *weight; /* owned: (out, in), nn.Linear's layout */
    float *bias;   /* owned: (out), or NULL (bias false) */
    bool tanh;     /* activation_function Tanh; else Identity */
} enc_dense;

/* Sentence-transformers' modules of a directory. */
typedef struct enc_st_config {
    bool found; /* the directory has modules.json with a Pooling module */
    /* modules.json is a CrossEncoder's (sentence-transformers 5.4+): a
     * Transformer, then a LogitScore (a causal LM's, which the model's head
     * reads: hfhead.c) or nothing; found false, no pooling */
    bool cross_encoder;
    enc_pooling pooling; /* from its Pooling module's config.json */
    bool normalize;      /* a Normalize module follows */
    bool include_prompt; /* the Pooling module pools a prompt's tokens too (its
                            include_prompt; absent: true) */
    enc_dense *dense;    /* owned: the Dense modules after the Pooling, in order */
    int n_dense;
    /* a FlexibleQuantizer follows them (st_quantize.py, perplexity-ai's
     * pplx-embed-v1): each value round(127 tanh(x)), its int8 form */
    bool int8_tanh;
} enc_st_config;

/* Reads dir/modules.json, its Pooling module's config.json and each Dense
 * module's config.json and model.safetensors (linear.weight, linear.bias),
 * the first taking d_model features (the model's token states, after its
 * own projection where it has one).  No modules.json, or a CrossEncoder's
 * (c->cross_encoder): 0 with c->found false.  0, or a negative enc_status with err naming the file
 * and field (c then empty): a module attnd does not implement (a second Transformer, LayerNorm,
 * ...), a pooling mode it lacks (weightedmean, mean_sqrt_len_tokens, several modes at once), a
 * Dense activation other than Tanh and Identity, features that do not chain, weights missing or of
 * the wrong shape (a Dense saved as pytorch_model.bin only among them). */
int enc_st_config_read(const char *dir, int d_model, enc_st_config *c, enc_error *err);

/* Frees c's Dense modules and zeroes it; a zeroed c is fine. */
void enc_st_config_free(enc_st_config *c);

/* How sentence embeddings are made of the encoder's outputs: the pooling,
 * the Dense modules, and the division by the L2 norm. */
typedef struct enc_embedder {
    enc_pooling mode; /* not ENC_POOL_AUTO */
    bool normalize;
    /* borrowed: the model's own projection of each token state, D features
     * in, before the pooling (voyage-4-nano's linear: no bias, no
     * activation); NULL: none */
    const enc_dense *project;
    const enc_dense *dense; /* borrowed: n_dense modules, the first taking the tokens' width */
    int n_dense;
    bool int8_tanh; /* after the Dense modules: round(127 tanh(x)) (enc_st_config's) */
} enc_embedder;

/* The token states' width the pooling sees: e->project's out_features,
 * else D. */
int enc_token_width(const enc_embedder *e, int D);

/* The embeddings' width: the last Dense module's out_features, else
 * enc_token_width. */
int enc_embed_width(const enc_embedder *e, int D);

/* The embeddings (B, dims) of x (B, L, D; lengths as enc_pool's): each
 * sequence's tokens through e->project, pooled as e->mode, through the
 * Dense modules, round(127 tanh(x)) when e->int8_tanh, divided by its L2
 * norm when e->normalize, then cut to its first dims values, unit length
 * again when e->normalize (dims 0: all enc_embed_width).  The projection
 * is linear and has no bias, so it follows the pooling where the pooling
 * is a weighted sum of the tokens (cls, last, mean): the same values, up
 * to rounding, for a fraction of the work.  Owned; NULL when out of
 * memory. */
float *enc_embed(const enc_embedder *e, const float *x, int B, int L, int D, const int *lengths,
                 int dims);

/* Each sequence's first lengths[b] token states of x (B, L, D) through
 * e->project, packed one after another (sum of lengths, enc_token_width)
 * (TEI's /embed_all).  Owned; NULL when out of memory.  e->project must
 * not be NULL. */
float *enc_project_tokens(const enc_embedder *e, const float *x, int B, int L, int D,
                          const int *lengths);

/* out (B, D) = the pooling of each sequence b of x (B, L, D: row-major, the
 * sequence's first lengths[b] rows its tokens; lengths NULL: L), then, when
 * normalize, each row divided by its L2 norm (at least 1e-12), as
 * torch.nn.functional.normalize. */
void enc_pool(const float *x, int B, int L, int D, const int *lengths, enc_pooling p,
              bool normalize, float *out);

/* Keeps the first dims of each of the B rows of x (B, D) in place, packed
 * (B, dims), and renormalizes them when normalize (Matryoshka truncation). */
void enc_pool_truncate(float *x, int B, int D, int dims, bool normalize);

#endif
