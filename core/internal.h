/* internal.h - what core/'s files share and tests may look at; not public API.
 *
 * Internal non-static functions carry no enc_ prefix: model_, ops' *_forward,
 * attention_, mask_.  Shape letters as in encoder.h. */
#ifndef ATTND_INTERNAL_H
#define ATTND_INTERNAL_H

#include "encoder.h"
#include "kernels/gemm.h"

#include <stdint.h>

/* ---- what the core shares with its tests and the naive reference ---------- */

/* Query rows and keys per tile of the block mask. */
#define ENC_TILE_Q 64
#define ENC_TILE_K 32

/* The random key blocks of BigBird's pattern for query block qb of a
 * sequence of n_blocks blocks: the candidates are the key blocks kb with
 * |qb - kb| > window and kb >= global, in ascending order; min(random,
 * candidates) of them are drawn by a partial Fisher-Yates shuffle on
 * splitmix64 seeded with seed ^ (0x9E3779B97F4A7C15 * (qb + 1)) (docs/model.md
 * gives the exact steps).  Writes them, ascending, to out (room for
 * p->random) and returns how many; query blocks below p->global get none.
 * cand is scratch for n_blocks ints. */
int blocks_random(const enc_blocks_pattern *p, int n_blocks, int qb, int *cand, int *out);

/* The pairs (i, j) of a sequence of len tokens with |i - j| <= w. */
uint64_t band_pairs(int len, int w);

/* One block's parameters, PyTorch layout (a Linear's weight is (out, in)).
 * Biases and norms are in enc_model.params, NULL when hp.bias is off.  The
 * four Linear weights are read-only here: in params too (a seeded model's,
 * or a file's tensors widened or copied), or in a weights file's mapping
 * (enc_model.maps: float32 tensors read where the file has them, so the
 * stack is not held twice, as floats and packed); model_own gives a seeded
 * model's writable storage. */
typedef struct enc_layer {
    /* the in-projection (D + 2*G*E, D) in three row blocks: q's (D, D), k's
     * and v's (G*E, D) each; one after the other in params (w_k == w_q + D*D,
     * w_v == w_k + G*E*D), anywhere in a mapping (a file's separate tensors) */
    const float *w_q, *w_k, *w_v;
    float *b_qkv;     /* (D + 2*G*E) */
    const float *w_o; /* (D, D) */
    float *b_o;       /* (D) */
    const float *w_1; /* (F, D), or gated (2F, D): the input's rows, then the gate's */
    float *b_1;       /* (F) or (2F) */
    const float *w_2; /* (D, F) */
    float *b_2;       /* (D) */
    float *ln1_w;     /* (D); NULL on layer 0 when its attention norm is the identity */
    float *ln1_b;     /* (D); NULL without norm biases (enc_norm_has_bias) */
    float *ln2_w;     /* (D) */
    float *ln2_b;     /* (D) or NULL */
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
    int head_dim;      /* E = D / H */
    int kv_dim;        /* G * E */
    int qkv_dim;       /* D + 2 * G * E */
    enc_layer *layers; /* (n_layers) */
    float *final_w;    /* (D) the norm after the last layer, or NULL (hp.final_norm off) */
    float *final_b;    /* (D) or NULL */
    float *params;   /* every parameter but mapped Linear weights, one allocation (mem_zalloc) */
    size_t n_owned;  /* floats in params */
    size_t n_params; /* every parameter, owned or mapped (enc_model_param_count) */
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
    char architecture[32]; /* config.json's model_type, or "" */
    struct model_file {
        char *name;      /* as in the directory */
        char sha256[65]; /* hex */
    } * files;           /* the files read (n_files), sorted by name */
    size_t n_files;
    char **ignored; /* tensors of the files that are not the stack's (n_ignored) */
    size_t n_ignored;
    embed_module *embed; /* a directory's embedding module (owned), or NULL: embeddings in */
};

/* ---- model.c ---- */

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
 * (munmap'ed and closed by enc_model_free); -1 when out of memory (they are
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

/* Packs every layer's Linear weights for the packed GEMM (gemm.h), when the
 * CPU can run it, replacing any earlier packing: the constructors call it
 * once the weights are final, and whoever changes params afterwards (tests)
 * calls it again.  Best effort: a weight left unpacked runs on cblas_sgemm.
 * In bfloat16 it gives back the owned float32 weights it packed
 * (model_release_owned), after which it does nothing: pack once. */
void model_pack(enc_model *m);

/* ---- embed.c: a directory's embedding module ---- */

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
} embed_config;

/* x (T, D) = [Linear E -> D] LayerNorm(word[id] + type[tt] + pos[p]).  The
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
    int word_fd;       /* the file holding word (borrowed: the model's), or -1 */
    bool word_seeded;  /* no table: a row is drawn from word_seed when looked up
                          (enc_model_seed_embedding) */
    uint64_t word_seed;
    uint64_t word_off; /* word's offset in it */
    float *params;     /* one allocation (mem_zalloc) the tables below are carved from */
    size_t n_params;
    float *pos;             /* (P, E) or NULL (EMBED_POS_NONE) */
    float *type;            /* (TV, E) or NULL */
    float *ln_w, *ln_b;     /* (E); ln_b NULL without norm_bias */
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

/* ---- ops.c: one function per op, shapes in the comment ---- */

/* out (M, N) = in (M, K) . w (N, K)^T + b (N); b may be NULL. */
void linear_forward(float *out, const float *in, const float *w, const float *b, int M, int K,
                    int N);
/* The same for columns [n0, n1) of out only (rows n0..n1 of w), then
 * act on them when act is not NULL: one thread's share of a Linear; out's
 * rows are ldc floats apart, in's lda. */
void linear_forward_cols(float *out, int ldc, const float *in, int lda, const float *w,
                         const float *b, int M, int K, int n0, int n1, const enc_activation *act);
/* Columns [n0, n1) of out (M rows ldc apart) += b[n0..n1) (when b is not
 * NULL), then act on them (when act is not NULL). */
void bias_act_cols(float *out, int ldc, const float *b, int M, int n0, int n1,
                   const enc_activation *act);
/* out (M, D) = LayerNorm(in (M, D)) * w + b; b may be NULL; out may be in.
 * Statistics in double, so no finite input overflows. */
void layernorm_forward(float *out, const float *in, const float *w, const float *b, int M, int D,
                       float eps);
/* x (n) += y (n) */
void residual_forward(float *x, const float *y, size_t n);
/* x (n) = act(x) in place */
void activation_forward(float *x, size_t n, enc_activation act);
/* A gated feed-forward's rows (rows of ld floats): the first F entries, the
 * input, become act(input) * gate, the gate being the next F (GeGLU: act
 * the GELU of activation; SwiGLU: SiLU). */
void glu_forward(float *h, int ld, int rows, int F, enc_ffn ffn, enc_activation act);
/* RoPE on n vectors of E floats (one token's heads, E apart): the first
 * 2 half dims of each turn, pair k by the angle whose cosine and sine are
 * cs[k] and sn[k]: pairs (k, k + half) for neox, (2k, 2k + 1) for gptj;
 * (a, b) becomes (a cos - b sin, b cos + a sin). */
void rope_forward(float *x, int n, int E, const float *cs, const float *sn, int half,
                  enc_rope_style style);
/* One activation on one value: the definition the fast loop and the naive
 * reference share. */
float activation_value(float x, enc_activation act);
/* Softmax of one row of n scores in place; -inf entries are excluded keys.
 * A row with no finite-or-larger score becomes all zeros.  The weights are
 * also written to copy (n) unless it is NULL: attention's weights go out
 * in the same pass. */
void softmax_row(float *s, int n, float *copy);
/* One block of keys of an online softmax (FlashAttention's): given a row's
 * running *max and *sum of exp(score - *max) over the keys before, and the
 * next n scores s (-inf = excluded), sets s to exp(s - new max) (0 where
 * excluded), updates *max and *sum, and returns the factor exp(old max -
 * new max) that whatever was summed with the old max must be scaled by (1
 * while no key is allowed).  Start with *max = -inf, *sum = 0; the weights
 * are then s / *sum (no allowed key at all: *sum stays 0, weights 0).  NaN
 * or +inf scores make everything NaN, as in softmax_row. */
float softmax_block(float *s, int n, float *max, float *sum);
/* softmax_block's rows without a finite max m: nan (a NaN among the scores
 * or in *max) or m +inf make everything NaN, m -inf (no allowed key yet)
 * zeros.  Returns true, with softmax_block's return value in *ret, when the
 * row was one of those and is done. */
bool softmax_block_special(float *s, int n, bool nan, float m, float *max, float *sum, float *ret);

/* ---- mask.c: the mask rule ---- */

/* Which keys one sequence's queries may see: enc_mask's rule for one
 * sequence (seq_mask_for). */
typedef struct seq_mask {
    int len; /* real tokens; keys >= len are padding */
    int L;   /* padded length: the row stride of the arrays below */
    bool causal;
    int window_left, window_right; /* ENC_WINDOW_NONE = unbounded */
    bool pattern;                  /* a pattern option is given: pairs outside it are not allowed */
    int stride;                    /* strided, or 0 */
    int fixed_block, fixed_summary; /* fixed, or block 0 */
    enc_blocks_pattern blocks;      /* BigBird, or size 0 */
    const int *rnd; /* (ceil(len / blocks.size), rnd_k) random key blocks, -1 = none */
    int rnd_k;
    const uint8_t *is_global;   /* (L) global positions, or NULL (none, or no pattern) */
    const uint8_t *key_padding; /* (L) or NULL */
    const uint8_t *attn_bool;   /* (L, L) or NULL */
    const float *attn_add;      /* (L, L) or NULL */
    bool banded; /* a local layer's window, narrower than the sequence: |i - j| <= band */
    int band;
    const float *alibi; /* (H) ALiBi's slopes (enc_model.alibi), or NULL */
    const int32_t *pos; /* (len) the tokens' positions, or NULL: 0 .. len - 1 */
} seq_mask;

/* Whether query i may see key j (both < len): the definition the tiles,
 * the CSR lists and partially masked tiles follow. */
bool mask_allowed(const seq_mask *sm, int i, int j);
/* Whether a restriction (causal, padding, an attn mask, a band) can refuse
 * a pair the pattern holds: gathered columns and global rows must then be
 * masked key by key. */
bool mask_restricted(const seq_mask *sm);

/* ALiBi: adds -slope_h * |p_i - p_j| to n scores of query i, s[k] being
 * key cols[k]'s (cols NULL: key j0 + k * step's).  Nothing when sm has no
 * slopes. */
void mask_alibi(const seq_mask *sm, int h, int i, int j0, int step, const int *cols, int n,
                float *s);

/* Adds the mask to query row i's scaled scores s (len): disallowed keys
 * become -inf, the additive mask is added to the rest. */
void mask_apply_row(const seq_mask *sm, int i, float *s);
/* The same for keys [j0, j1) only: s[0] is key j0's score. */
void mask_apply_keys(const seq_mask *sm, int i, int j0, int j1, float *s);

/* The mask checks of enc_batch_validate that need no model. */
int mask_validate(const enc_batch *in, enc_error *err);
/* Whether a pattern option (window, stride, fixed, blocks) is given. */
bool mask_has_pattern(const enc_mask *mk);
/* Sequence b's mask view, over in's arrays and bm's tables. */
seq_mask seq_mask_for(const enc_batch *in, const enc_blockmask *bm, int b);

/* ---- blockmask.c ---- */

/* A tile entry's flag: the tile is full (every pair allowed, no additive
 * mask); the low bits are the key tile's index. */
#define BM_FULL 0x80000000u

/* One sequence of a block mask. */
typedef struct bm_seq {
    int len;
    bool dense;      /* no mask beyond the length: every tile full, nothing listed */
    int nq, nk;      /* query tiles ceil(len / ENC_TILE_Q), key tiles ceil(len / ENC_TILE_K) */
    uint32_t *qptr;  /* (nq + 1) query tile t's entries are tiles[qptr[t] .. qptr[t+1]) */
    uint32_t *tiles; /* key tiles, ascending, BM_FULL when full; NULL when dense */
    int *grows;      /* (n_grows) rows of global positions: they see every key, so they
                        run as items of their own after the tiles (which skip them) */
    int n_grows;
    int *gcols; /* (n_gcols) ascending: the columns in every row's pattern (global
                   positions, fixed's summary keys), gathered and scored by every
                   query tile besides its listed tiles (a tile that lists one
                   scores it itself) */
    int n_gcols;
    int stride; /* > 0: the strided pattern's diagonals ((i - j) mod stride = 0)
                   run by residue class (rows and keys i mod stride = r), before
                   the tiles, which then score the band |i - j| < stride only;
                   their pairs inside a listed tile or a gathered column are the
                   tiles' and the gathered block's.  Only without weights. */
    int *rnd;   /* BigBird's random key blocks (seq_mask.rnd), or NULL */
    int rnd_k;
    uint64_t scores;  /* scores per head and layer */
    int32_t *indptr;  /* with csr: (len + 1) */
    int32_t *indices; /* with csr: (nnz) */
    size_t nnz;
} bm_seq;

struct enc_blockmask {
    int B;
    bool csr;
    int band; /* local layers' block mask: |i - j| <= band on top of the batch's mask; or -1 */
    uint8_t *is_global; /* (L) */
    bm_seq *seqs;       /* (B) */
};

/* enc_blockmask_new, and with residue the strided diagonals by residue
 * class (bm_seq.stride): for forwards that return no weights.  band >= 0:
 * a local layer's, every pair further apart than band refused besides. */
enc_blockmask *blockmask_new(const enc_batch *in, bool csr, bool residue, int band, enc_error *err);
/* Whether query tile qt lists key tile kt. */
bool blockmask_listed(const bm_seq *s, int qt, int kt);

/* ---- attention.c ---- */

/* Keys per block: of the score products, and of attention's online
 * softmax (without weights to return, sequences of at least KEY_BLOCK + 2
 * tokens). */
#define KEY_BLOCK 128

/* Floats of the scratch attention_rows and attention_tiles need for rows
 * query rows of a sequence of len tokens, head size E. */
size_t attention_scratch_floats(int rows, int len, int E);

/* How attention's two products run: cblas_sgemm on Q, K and V in place
 * (ATTN_BLAS); the AVX-512 kernel on keys packed as K^T / sqrt(E) panels
 * (ATTN_F32); or in bfloat16 (ATTN_BF16, model.dtype bfloat16 on AVX-512,
 * heads of a multiple of GEMM_NR dims: attention_bf16_ok): keys and values
 * packed as bfloat16 pairs, the queries and the softmax's weights rounded
 * to bfloat16 per product, the sums in float32, as torch.autocast runs
 * attention's matmuls. */
typedef enum { ATTN_BLAS, ATTN_F32, ATTN_BF16 } attn_products;
bool attention_bf16_ok(int E);

/* One key/value head's keys (and values) packed for the products, within
 * attention_keys_floats(len, E) floats: ATTN_F32, K^T / sqrt(E) in the
 * panels of gemm_pack_t; ATTN_BF16, K / sqrt(E) by gemm_pack_t_bf16, then V
 * by gemm_pack_pairs_bf16 (no more, for E a multiple of GEMM_NR).
 * attention_pack_keys writes head g's from qkv (len rows qkv_stride apart,
 * laid out as for attention_rows) to kt.  A sequence's keys are packed
 * once per block and read by every tile of its query rows; packed per tile,
 * as before 893651c, they were packed again for each tile (8 times at
 * L=512, 256 times at L=16384, whose forward without weights took 9.86 s
 * then and 7.92 s with them packed once). */
size_t attention_keys_floats(int len, int E);
void attention_pack_keys(float *kt, const float *qkv, int qkv_stride, int len, int H, int G, int g,
                         int E, attn_products prod);

/* Multi-head attention for query rows [i0, i1) of one sequence of len
 * tokens, every head; keys and values are the whole sequence.
 *   qkv     (len, qkv_stride): Q in columns [0, H*E), K in [H*E, H*E+G*E), V after
 *   z       (len, z_stride): heads' outputs concatenated; rows [i0, i1) written
 *   kt      G heads' packed keys, attention_keys_floats(len, E) floats apart
 *           (attention_pack_keys with prod), for the AVX-512 kernels; NULL:
 *           cblas_sgemm (prod ignored)
 *   scratch attention_scratch_floats(i1 - i0, len) floats
 *   attn    NULL, or (H, L, L) for ENC_ATTN_HEADS / (L, L) for ENC_ATTN_MEAN;
 *           rows [i0, i1), columns < len written
 * Without attn, a sequence of KEY_BLOCK + 2 or more tokens goes through keys
 * in blocks with an online softmax: the same result within float rounding. */
void attention_rows(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int i0,
                    int i1, int H, int G, int E, const seq_mask *sm, const float *kt,
                    attn_products prod, float *scratch, float *attn, enc_attn_mode mode, int L);

/* attention_rows over every query row at once, packing the keys itself when
 * simd_enabled(): scratch is attention_forward_floats(len, G, E) floats. */
size_t attention_forward_floats(int len, int G, int E);
void attention_forward(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int H,
                       int G, int E, const seq_mask *sm, float *scratch, float *attn,
                       enc_attn_mode mode, int L);

/* What attention_tiles needs of one sequence. */
typedef struct attn_seq {
    float *z; /* (len, z_stride): heads' outputs concatenated */
    int z_stride;
    const float *qkv; /* (len, qkv_stride), as for attention_rows */
    int qkv_stride;
    int len, H, G, E;
    const seq_mask *sm;
    const float *kt;    /* packed keys (attention_pack_keys), or NULL: cblas_sgemm */
    attn_products prod; /* how kt was packed */
    enc_attn_mode mode; /* ENC_ATTN_NONE (or attn NULL): no weights */
    float *attn;        /* dense: (H or 1, L, L); CSR: (H or 1, nnz) */
    int L;
    const int32_t *indptr; /* CSR: the sequence's allowed pairs; NULL: dense weights */
    const int32_t *indices;
    size_t nnz;
    /* the gathered columns (bm_seq.gcols) and their keys and values, per key/value head
     * g at g * gather_floats: K and V rows (n_gcols, E), then both packed as
     * by attention_pack_keys when kt is set */
    const int *gcols;
    int n_gcols;
    const float *gather;
    size_t gather_floats; /* one key/value head's: the gathered columns, then the
                             residue classes (attention_residue_floats) */
    /* the strided residue classes' running softmax state, (len, H) and (len, z_stride)
     * like z: written by attention_residue, read by the tiles; NULL when none */
    float *res_m, *res_s, *res_z;
} attn_seq;

/* Floats before residue class r of a sequence of len tokens (r = stride:
 * all of them) in one key/value head's gathered area. */
size_t attention_residue_floats(int len, int stride, int r, int E);

/* The strided diagonals of residue class r (bm_seq.stride), rows i = r +
 * k * stride for k in [k0, k1): per head an online softmax over the class's
 * keys (its keys and values gathered by attention_gather after the gathered
 * columns), for the pairs no listed tile and no gathered column holds.
 * Leaves each row's running max, sum and unnormalised z in s->res_*, where
 * attention_tiles takes them up.  scratch: attention_scratch_floats(k1 -
 * k0, len, E).  Returns the scores computed. */
uint64_t attention_residue(const attn_seq *s, const bm_seq *bs, int r, int k0, int k1,
                           float *scratch);

/* Floats of one key/value head's gathered columns in attn_seq.gather. */
size_t attention_gather_floats(int n_gcols, int E);
/* Gathers (and packs as prod says: not for ATTN_BLAS) head g's keys and
 * values of n columns, cols[c] or (cols NULL) first + c * step, from qkv
 * (laid out as for attention_rows) into dst. */
void attention_gather(float *dst, const float *qkv, int qkv_stride, const int *cols, int first,
                      int step, int n, int H, int G, int g, int E, attn_products prod);

/* Multi-head attention for n_rows query rows of one sequence, rows i0 + r
 * (rows NULL) or rows[r], over the key tiles of a block mask: tiles[0 ..
 * n_tiles) (key tile index | BM_FULL), or with tiles NULL every key tile,
 * each flagged `all`; with gathered, also s's gathered columns (those in
 * no listed tile).  Consecutive tiles are scored together, KEY_BLOCK
 * keys at most; only tiles without BM_FULL are masked key by key; keys in
 * no listed tile are never scored.  Without weights an online softmax sums
 * z chunk by chunk; with them, every chunk's scores sit side by side for one
 * softmax per row, then go to the dense row (zero elsewhere) or the CSR
 * row.  scratch: attention_scratch_floats(n_rows, len, E).  Returns the
 * scores computed (every head). */
uint64_t attention_tiles(const attn_seq *s, int i0, const int *rows, int n_rows,
                         const uint32_t *tiles, int n_tiles, uint32_t all, bool gathered,
                         float *scratch);

#endif
