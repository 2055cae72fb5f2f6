/* internal.h - what core/'s files share and tests may look at; not public API.
 *
 * Internal non-static functions carry no enc_ prefix: model_, ops' *_forward,
 * attention_, mask_.  Shape letters as in encoder.h. */
#ifndef ATTND_INTERNAL_H
#define ATTND_INTERNAL_H

#include "encoder.h"
#include "gemm.h"

#include <stdint.h>

/* One block's parameters, PyTorch layout (a Linear's weight is (out, in)).
 * Every pointer is into enc_model.params; biases are NULL when hp.bias is off. */
typedef struct enc_layer {
    float *w_qkv; /* (D + 2*G*E, D): q rows, then k rows, then v rows */
    float *b_qkv; /* (D + 2*G*E) */
    float *w_o;   /* (D, D) */
    float *b_o;   /* (D) */
    float *w_1;   /* (F, D), or gated (2F, D): the input's rows, then the gate's */
    float *b_1;   /* (F) or (2F) */
    float *w_2;   /* (D, F) */
    float *b_2;   /* (D) */
    float *ln1_w; /* (D); NULL on layer 0 when its attention norm is the identity */
    float *ln1_b; /* (D); NULL without norm biases (enc_norm_has_bias) */
    float *ln2_w; /* (D) */
    float *ln2_b; /* (D) or NULL */
    /* The four Linear weights packed for gemm_packed_cols, owned; NULL when
     * the CPU has no AVX-512 (cblas_sgemm on the weights above instead). */
    gemm_packed *pk_qkv, *pk_o, *pk_1, *pk_2;
} enc_layer;

struct enc_model {
    enc_hparams hp;
    int head_dim;      /* E = D / H */
    int kv_dim;        /* G * E */
    int qkv_dim;       /* D + 2 * G * E */
    enc_layer *layers; /* (n_layers) */
    float *final_w;    /* (D) the norm after the last layer, or NULL (hp.final_norm off) */
    float *final_b;    /* (D) or NULL */
    float *params;     /* every parameter, one allocation */
    size_t n_params;
    bool packed;           /* some layer has a packed weight: workspaces need GEMM scratch */
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
};

/* ---- model.c ---- */

/* Allocates a model with hp's shapes and carves the layers out of one
 * zeroed allocation.  Returns an owned model or NULL (err set). */
enc_model *model_alloc(const enc_hparams *hp, enc_error *err);

/* Zeroed memory for a model's large arrays: at 4 MiB and more its own
 * mapping, advised to use transparent huge pages (a BERT-base model is
 * 170k page faults in 4 KiB pages, a few hundred in 2 MiB ones); smaller,
 * from the heap.  64-byte aligned either way.  Freed with model_zfree and
 * the same size. */
void *model_zalloc(size_t bytes);
void model_zfree(void *p, size_t bytes);

/* Records a file the model was read from, and a tensor of it that is not
 * part of the encoder stack; -1 when out of memory. */
int model_add_file(enc_model *m, const char *name, const char *sha256);
int model_add_ignored(enc_model *m, const char *name);
/* Sorts the files by name. */
void model_sort_files(enc_model *m);

/* Packs every layer's Linear weights for the packed GEMM (gemm.h), when the
 * CPU can run it, replacing any earlier packing: the constructors call it
 * once the weights are final, and whoever changes params afterwards (tests)
 * calls it again.  Best effort: a weight left unpacked runs on cblas_sgemm. */
void model_pack(enc_model *m);

/* The seeded generator enc_model_random uses: splitmix64 streams, one per
 * (seed, layer, tensor), so each tensor's numbers depend on nothing else. */
typedef struct model_rng {
    uint64_t state;
} model_rng;

void model_rng_init(model_rng *r, uint64_t seed, int layer, int tensor);
uint64_t model_rng_next(model_rng *r);
/* A float32 uniform in [-bound, bound): (2u - 1) * bound in double, u having
 * 24 random bits, rounded once to float. */
float model_rng_uniform(model_rng *r, double bound);

/* ---- ops.c: one function per op, shapes in the comment ---- */

/* out (M, N) = in (M, K) . w (N, K)^T + b (N); b may be NULL. */
void linear_forward(float *out, const float *in, const float *w, const float *b, int M, int K,
                    int N);
/* The same for columns [n0, n1) of out only (rows n0..n1 of w), then
 * act on them when act is not NULL: one thread's share of a Linear; out's
 * rows are ldc floats apart, in's lda. */
void linear_forward_cols(float *out, int ldc, const float *in, int lda, const float *w,
                         const float *b, int M, int K, int n0, int n1, const enc_activation *act);
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

/* ---- attention.c ---- */

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

/* The mask checks of enc_batch_validate that need no model. */
int mask_validate(const enc_batch *in, enc_error *err);
/* Whether a pattern option (window, stride, fixed, blocks) is given. */
bool mask_has_pattern(const enc_mask *mk);
/* Sequence b's mask view, over in's arrays and bm's tables. */
seq_mask seq_mask_for(const enc_batch *in, const enc_blockmask *bm, int b);

/* Keys per block: of the score products, and of attention's online
 * softmax (without weights to return, sequences of at least KEY_BLOCK + 2
 * tokens). */
#define KEY_BLOCK 128

/* Floats of the scratch attention_rows and attention_tiles need for rows
 * query rows of a sequence of len tokens, head size E. */
size_t attention_scratch_floats(int rows, int len, int E);

/* One key/value head's keys packed for the scores product: K^T / sqrt(E) in
 * the panels of gemm_pack_t, attention_keys_floats(len, E) floats.
 * attention_pack_keys writes head g's from qkv (len rows qkv_stride apart,
 * laid out as for attention_rows) to kt.  A sequence's keys are packed
 * once per block and read by every tile of its query rows; packed per tile,
 * as before 893651c, they were packed again for each tile (8 times at
 * L=512, 256 times at L=16384, whose forward without weights took 9.86 s
 * then and 7.92 s with them packed once). */
size_t attention_keys_floats(int len, int E);
void attention_pack_keys(float *kt, const float *qkv, int qkv_stride, int len, int H, int g, int E);

/* Multi-head attention for query rows [i0, i1) of one sequence of len
 * tokens, every head; keys and values are the whole sequence.
 *   qkv     (len, qkv_stride): Q in columns [0, H*E), K in [H*E, H*E+G*E), V after
 *   z       (len, z_stride): heads' outputs concatenated; rows [i0, i1) written
 *   kt      G heads' packed keys, attention_keys_floats(len, E) floats apart
 *           (attention_pack_keys), for the AVX-512 kernel; NULL: cblas_sgemm
 *   scratch attention_scratch_floats(i1 - i0, len) floats
 *   attn    NULL, or (H, L, L) for ENC_ATTN_HEADS / (L, L) for ENC_ATTN_MEAN;
 *           rows [i0, i1), columns < len written
 * Without attn, a sequence of KEY_BLOCK + 2 or more tokens goes through keys
 * in blocks with an online softmax: the same result within float rounding. */
void attention_rows(float *z, int z_stride, const float *qkv, int qkv_stride, int len, int i0,
                    int i1, int H, int G, int E, const seq_mask *sm, const float *kt,
                    float *scratch, float *attn, enc_attn_mode mode, int L);

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
    enc_attn_mode mode; /* ENC_ATTN_NONE (or attn NULL): no weights */
    float *attn;        /* dense: (H or 1, L, L); CSR: (H or 1, nnz) */
    int L;
    const int32_t *indptr; /* CSR: the sequence's allowed pairs; NULL: dense weights */
    const int32_t *indices;
    size_t nnz;
    /* the gathered columns (bm_seq.gcols) and their keys and values, per key/value head
     * g at g * gather_floats: K and V rows (n_gcols, E), then K packed as by
     * attention_pack_keys when kt is set */
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
/* Gathers (and packs, when pack) head g's keys and values of n columns,
 * cols[c] or (cols NULL) first + c * step, from qkv (laid out as for
 * attention_rows) into dst. */
void attention_gather(float *dst, const float *qkv, int qkv_stride, const int *cols, int first,
                      int step, int n, int H, int G, int g, int E, bool pack);

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
