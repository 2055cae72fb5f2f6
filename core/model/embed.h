/* embed.h - a directory's embedding module (embed.c): token ids to the
 * stack's input.  Private to core/. */
#ifndef ATTND_MODEL_EMBED_H
#define ATTND_MODEL_EMBED_H

#include "encoder.h"
#include "kernels/gemm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct embed_module embed_module;

/* How positions enter the embedding module's sum. */
typedef enum embed_pos {
    EMBED_POS_ABSOLUTE,   /* a learned table, rows 0 .. L - 1 (BERT, ELECTRA, DistilBERT) */
    EMBED_POS_ROBERTA,    /* a learned table, rows counted from padding_idx + 1 over the
                             non-pad ids, pad_token_id's at padding_idx */
    EMBED_POS_SINUSOIDAL, /* DistilBERT's fixed table, indexed as absolute */
    EMBED_POS_NONE,       /* no table: RoPE or ALiBi inside attention */
} embed_pos;

/* The word table's element type, as the file stores it. */
typedef enum embed_dtype {
    EMBED_F32,
    EMBED_F16,
    EMBED_BF16,
} embed_dtype;

/* What the module computes, from config.json (hfconfig.c fills it). */
typedef struct embed_config {
    int vocab_size;      /* V: the word table's rows */
    int type_vocab_size; /* TV: the token type table's rows, 0: none */
    int max_positions;   /* P: the position table's rows (0 with EMBED_POS_NONE) */
    int pad_token_id;    /* EMBED_POS_ROBERTA's padding_idx */
    int embedding_size;  /* E: the tables' width; a Linear E -> D follows when E != D */
    embed_pos pos;
    float eps;      /* the module's LayerNorm's */
    bool norm_bias; /* the LayerNorm has a bias (ModernBERT: norm_bias) */
    bool no_norm;   /* no LayerNorm: the sum itself (Qwen3's embed_tokens) */
    float scale;    /* the word row times this first (Gemma 3's sqrt(D)); 0: none */
} embed_config;

/* x (T, D) = [Linear E -> D] LayerNorm(word[id] + type[tt] + pos[p]) (no
 * LayerNorm with cfg.no_norm).  The
 * word table stays as the file stores it, never copied: F16 and BF16 rows
 * are widened per lookup, F32 rows copied; the rest, small, is float32 in
 * params.  A loaded table is in the file's read-only mapping (which the
 * model keeps, enc_model.maps), whose pages are given back once the load
 * has checked them; a lookup then reads its row from the file (pread, from
 * the page cache) rather than through the mapping, because a fault maps a
 * whole folio of the page cache (2 MiB on ext4 since Linux 6.x's large
 * folios), so the 1024 ids of one request brought 670 MiB of XLM-R's
 * 768 MB table back into the process.  Without a file (word_fd -1) rows
 * are read at word. */
struct embed_module {
    embed_config cfg;
    int D;
    enc_embedding_info info;   /* what enc_model_embedding gives; info.tensors = names */
    char **names;              /* the module's tensors as the file names them (info.n_tensors) */
    const unsigned char *word; /* (V, E) in word_dtype, borrowed (a mapping of the model's);
                                  unaligned: read by memcpy */
    embed_dtype word_dtype;
    int word_fd;      /* the file holding word (borrowed: the model's), or -1 */
    bool word_seeded; /* no table: a row is drawn from word_seed when looked up
                         (enc_model_seed_embedding) */
    uint64_t word_seed;
    uint64_t word_off; /* word's offset in it */
    float *params;     /* one allocation (mem_zalloc) the tables below are carved from */
    size_t n_params;
    float *pos;             /* (P, E) or NULL (EMBED_POS_NONE) */
    float *type;            /* (TV, E) or NULL */
    float *ln_w, *ln_b;     /* (E), NULL with no_norm; ln_b NULL without norm_bias */
    float *proj_w, *proj_b; /* (D, E), (D): ELECTRA's embeddings_project, or NULL */
    gemm_packed *pk_proj;   /* proj_w packed (model_pack), or NULL: cblas_sgemm */
};

/* A module of cfg's shapes for a stack of width D, its tables zeroed, no
 * word table yet.  Returns an owned module or NULL (err set). */
embed_module *embed_new(const embed_config *cfg, int D, enc_error *err);
void embed_free(embed_module *e);
/* Records one of the module's tensors (as the file names it); -1 when out
 * of memory. */
int embed_add_name(embed_module *e, const char *name);
/* The word table: V x E elements of dtype at data (borrowed; whoever set
 * it keeps it alive, a loader by handing its mapping to the model).  Checks every value
 * finite, in one pass over the table: returns 0 or ENC_EFORMAT naming the
 * tensor and the index. */
int embed_set_word(embed_module *e, const void *data, embed_dtype dtype, const char *name,
                   enc_error *err);
/* embed_set_word in parts, for a loader that gives each part's pages back
 * once checked: rows [row0, row0 + rows) of the table at data checked (the
 * message's index counts from the table's start), then the table set
 * without a check. */
int embed_check_word(const embed_module *e, const void *data, embed_dtype dtype, size_t row0,
                     size_t rows, const char *name, enc_error *err);
void embed_use_word(embed_module *e, const void *data, embed_dtype dtype);
/* A seeded module's streams (enc_model_seed_embedding): layer -1 of
 * rng_init's numbering, below every layer's; its rows' bound sqrt(3),
 * a variance of 1.  Row id of the word table is numbers id * E .. id * E +
 * E - 1 of its stream. */
enum { EMBED_SEED_LAYER = -1, EMBED_SEED_WORD = 0, EMBED_SEED_TYPE = 1 };
#define EMBED_SEED_BOUND 1.7320508075688772 /* sqrt(3) */
/* Row id (E floats) of a seeded module's word table, drawn from seed. */
void embed_seeded_row(uint64_t seed, int32_t id, size_t E, float *y);
/* DistilBERT's sinusoidal table into e->pos, as transformers'
 * create_sinusoidal_embeddings writes it (for a file without the table). */
void embed_sinusoidal(embed_module *e);
/* Fills e->info (after every tensor is set); hp: the stack's, whose
 * attention takes the positions when the module has no table. */
void embed_finish(embed_module *e, const enc_hparams *hp);
/* Packs the projection for the packed GEMM, replacing any earlier packing
 * (model_pack calls it). */
void embed_pack(embed_module *e);

/* enc_batch_validate's checks of an ids batch: every real token's id below
 * vocab_size, type id below type_vocab_size (0 when the model has none),
 * position within the table. */
int embed_validate(const embed_module *e, const enc_batch *in, enc_error *err);

/* Rows [i0, i1) of sequence b of an ids batch, before the projection:
 * out (i1 - i0, E), rows ldo floats apart = LayerNorm(word + type + pos).
 * The batch must have passed embed_validate. */
void embed_rows(const embed_module *e, const enc_batch *in, int b, int i0, int i1, float *out,
                int ldo);

/* Whether n elements of dtype at p are all finite: one pass, no early exit. */
bool embed_finite(const void *p, size_t n, embed_dtype dtype);

/* F16 values widened exactly (the branch-free form the lookups use). */
void embed_widen_f16(float *dst, const void *src, size_t n);

#endif
