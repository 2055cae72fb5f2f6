/* pooling.h - sentence embeddings from the encoder's outputs, as
 * sentence-transformers' Pooling and Normalize modules compute them, and
 * those modules read from a directory's sentence-transformers files
 * (modules.json, 1_Pooling/config.json in its older and newer forms).
 *
 *     enc_st_config st;
 *     if (enc_st_config_read(dir, &st, &err) < 0) ... a module attnd lacks, named
 *     enc_pool(out, B, L, D, lengths, st.found ? st.pooling : ENC_POOL_MEAN, true, pooled);
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

/* Sentence-transformers' modules of a directory. */
typedef struct enc_st_config {
    bool found;          /* the directory has modules.json */
    enc_pooling pooling; /* from its Pooling module's config.json */
    bool normalize;      /* a Normalize module follows */
    bool include_prompt; /* the Pooling module pools a prompt's tokens too (its
                            include_prompt; absent: true) */
} enc_st_config;

/* Reads dir/modules.json and its Pooling module's config.json.  No
 * modules.json: 0 with c->found false.  0, or a negative enc_status with
 * err naming the file and field: a module attnd does not implement (Dense,
 * a second Transformer, ...), a pooling mode it lacks (weightedmean,
 * mean_sqrt_len_tokens, several modes at once). */
int enc_st_config_read(const char *dir, enc_st_config *c, enc_error *err);

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
