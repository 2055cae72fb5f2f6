/* model.h - struct enc_model behind encoder.h's handle: the stack's
 * layers and their parameters, the files they came from (model.c), and
 * what is built on them (build.c).
 * Private to core/. */
#ifndef ATTND_MODEL_MODEL_H
#define ATTND_MODEL_MODEL_H

#include "encoder.h"
#include "kernels/gemm.h"
#include "model/pooling.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One block's parameters, PyTorch layout (a Linear's weight is (out, in)).
 * Biases and norms are in enc_model.params, NULL when hp.bias is off.  The
 * four Linear weights are read-only here: in params too (a seeded model's,
 * or a file's tensors widened or copied), or in a weights file's mapping
 * (enc_model.maps: float32 tensors read where the file has them, so the
 * stack is not held twice, as floats and packed); model_own gives a seeded
 * model's writable storage. */
typedef struct enc_layer {
    /* the in-projection (H*E + 2*G*E, D) in three row blocks: q's (H*E, D),
     * k's and v's (G*E, D) each; one after the other in params (w_k == w_q +
     * H*E*D, w_v == w_k + G*E*D), anywhere in a mapping (a file's separate
     * tensors).  H*E is D unless hp.head_dim says otherwise. */
    const float *w_q, *w_k, *w_v;
    float *b_qkv;     /* (H*E + 2*G*E) */
    const float *w_o; /* (D, H*E) */
    float *b_o;       /* (D) */
    /* the feed-forward's first Linear (F, D); gated, its gate's rows (F, D)
     * too, w_g (NULL otherwise): act(x w_1^T) * (x w_g^T).  Adjacent in
     * params (w_g == w_1 + F*D), anywhere in a mapping (a file's two halves,
     * or one tensor's in either order). */
    const float *w_1, *w_g;
    float *b_1;       /* (F), or gated (2F): w_1's, then w_g's */
    const float *w_2; /* (D, F) */
    float *b_2;       /* (D) */
    float *ln1_w;     /* (D); NULL on layer 0 when its attention norm is the identity */
    float *ln1_b;     /* (D); NULL without norm biases (enc_norm_has_bias) */
    float *ln2_w;     /* (D) */
    float *ln2_b;     /* (D) or NULL */
    float *qn_w;      /* (E) q's norm of each head (hp.qk_norm), or NULL; (H*E) with
                         hp.qk_norm_whole */
    float *kn_w;      /* (E) k's, or NULL; (G*E) with hp.qk_norm_whole */
    float *qn_b, *kn_b; /* their biases: with hp.qk_norm_whole and norm biases, else NULL */
    /* (D) each the norm of attention's output (so1) and the feed-forward's
     * (so2) before the residual add (hp.sublayer_norm), or NULL; biases as
     * ln1_b's.  With hp.double_residual so1 alone: the norm of attention's
     * output plus the residual. */
    float *so1_w, *so1_b, *so2_w, *so2_b;
    /* The four Linear weights packed for gemm_packed_cols, owned; NULL when
     * the CPU has no AVX-512 (cblas_sgemm on the weights above instead).
     * Once a mapped weight is packed, its pages are given back (model_pack):
     * the forward reads the panels, and anything that reads the weight
     * itself (the naive reference, the forward with simd_set_enabled(false))
     * faults its pages back in from the page cache.  In bfloat16 an owned
     * weight's pages (a seeded model's, a widened F16/BF16 file's) are given
     * back too, and made unreadable (model_release_owned): every forward
     * reads the bfloat16 panels then, on any CPU. */
    gemm_packed *pk_qkv, *pk_o, *pk_1, *pk_2;
} enc_layer;

typedef struct embed_module embed_module;

struct enc_model {
    enc_hparams hp;
    int head_dim;      /* E (enc_head_dim) */
    int q_dim;         /* H * E: the queries' and attention's output width */
    int kv_dim;        /* G * E */
    int qkv_dim;       /* H * E + 2 * G * E */
    enc_layer *layers; /* (n_layers) */
    float *final_w;    /* (D) the norm after the last layer, or NULL (hp.final_norm off) */
    float *final_b;    /* (D) or NULL */
    float *params;     /* every parameter but mapped Linear weights, one allocation (mem_zalloc) */
    size_t n_owned;    /* floats in params */
    size_t n_params;   /* every parameter, owned or mapped (enc_model_param_count) */
    struct model_map {
        void *addr; /* a weights file's read-only mapping (munmap'ed with the model) */
        size_t size;
        int fd; /* the file, open (closed with the model) */
    } * maps;   /* the mappings the Linear weights and the word table are read in */
    size_t n_maps;
    bool packed;           /* some layer has a packed weight: workspaces need GEMM scratch */
    bool owned_released;   /* model_release_owned gave back some of params: model_pack no more */
    char sha256[65];       /* hex, or "" */
    char source[4096];     /* path or "seed:N" */
    float *alibi;          /* (H) ALiBi's slopes when hp.position is alibi, else NULL */
    /* MPNet's relative position bias (hp.rel_buckets): the table
     * (rel_buckets, H), else NULL; and the same by distance (H rows of
     * MASK_REL_ROW: mask_rel_dist, which model_pack runs). */
    float *rel_bias;
    float *rel_dist;
    /* DeBERTa's relative attention (hp.dis): the table (2 span, D) and its
     * LayerNorm's weight and bias (D each, when hp.dis.norm), else NULL;
     * built on them by model_pack, each layer's key rows and query rows
     * (the table, normed, through the layer's key and query Linears: (2
     * span, D) each, keys first, layer after layer; then the normed table); and the table's row
     * for each distance d in -dis_far .. dis_far at dis_row[dis_far + d]
     * (farther, the first row or the last). */
    float *dis_table;
    float *dis_ln_w, *dis_ln_b;
    float *dis_pos;
    int32_t *dis_row;
    int dis_far;
    char architecture[32]; /* config.json's model_type, or "" */
    struct model_file {
        char *name;      /* as in the directory */
        char sha256[65]; /* hex */
    } * files;           /* the files read (n_files), sorted by name */
    size_t n_files;
    char **ignored; /* tensors of the files that are not the stack's (n_ignored) */
    size_t n_ignored;
    embed_module *embed; /* a directory's embedding module (owned), or NULL: embeddings in */
    struct model_head *head; /* a directory's task head (owned, model/head.h), or NULL */
    char klass[80];          /* config.json's architectures[0], or "" */
    bool head_unsupported;   /* klass names a head attnd does not compute */
    char head_note[160];     /* why, when the files lack what it needs, or "" */
    /* The projection of the token states after the final norm
     * (enc_model_projection: weight owned, NULL when the model has none) */
    enc_dense project;
};

/* Allocates a model with hp's shapes and carves the layers out of one
 * zeroed allocation.  Returns an owned model or NULL (err set). */
enc_model *model_alloc(const enc_hparams *hp, enc_error *err);
/* model_alloc in two steps, for a loader that decides after opening its
 * files whether the Linear weights are copied: model_new gives a model
 * without parameters, model_carve its allocation, with room for the Linear
 * weights (linear true) or without (their pointers stay NULL for the loader
 * to point into a mapping it hands over with model_add_map).  -1 / NULL
 * when out of memory (err set). */
enc_model *model_new(const enc_hparams *hp, enc_error *err);
int model_carve(enc_model *m, bool linear, enc_error *err);
/* Keeps a file's read-only mapping and the file, open, for m's lifetime
 * (munmap'ed and closed with the model); -1 when out of memory (they are
 * then the caller's). */
int model_add_map(enc_model *m, void *addr, size_t size, int fd);
/* The writable storage of p, a pointer into m's own params (a seeded
 * model's weight, a copied tensor's slot). */
float *model_own(enc_model *m, const float *p);
/* Whether p lies in one of m's file mappings. */
bool model_mapped(const enc_model *m, const void *p);
/* bytes at p, in one of m's file mappings, will not be read soon: the
 * pages wholly inside them leave the process's memory (MADV_DONTNEED; a
 * later read faults them back in from the page cache).  Nothing for memory
 * that is not mapped from a file. */
void model_release(const enc_model *m, const void *p, size_t bytes);
/* bytes at p, in m's own params, will never be read again: the pages
 * wholly inside them leave the process's memory and become unreadable
 * (PROT_NONE, so that a stray read faults instead of reading zeros).
 * Nothing when params is not its own mapping (mem_zalloc under 4 MiB) or
 * the pages cannot be protected. */
void model_release_owned(enc_model *m, const void *p, size_t bytes);

/* Records a file the model was read from, and a tensor of it that is not
 * part of the encoder stack; -1 when out of memory. */
int model_add_file(enc_model *m, const char *name, const char *sha256);
int model_add_ignored(enc_model *m, const char *name);
/* Sorts the files by name. */
void model_sort_files(enc_model *m);
/* Frees what model.c allocated (the parameters, mappings, layers' array,
 * files' names) and m itself; the parts built on it (packed panels,
 * embeddings, head) are enc_model_free's (build.c).  NULL is fine. */
void model_storage_free(enc_model *m);

/* ---- build.c ---- */

/* Packs every layer's Linear weights for the packed GEMM (gemm.h), when the
 * CPU can run it, replacing any earlier packing: the constructors call it
 * once the weights are final, and whoever changes params afterwards (tests)
 * calls it again.  Best effort: a weight left unpacked runs on cblas_sgemm.
 * In bfloat16 it gives back the owned float32 weights it packed
 * (model_release_owned), after which it packs nothing: pack once.  It also
 * fills MPNet's bias by distance (rel_dist) from the table, every time. */
void model_pack(enc_model *m);

#endif
