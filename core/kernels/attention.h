/* attention.h - dense and tiled multi-head attention (attention.c).
 * Private to core/. */
#ifndef ATTND_KERNELS_ATTENTION_H
#define ATTND_KERNELS_ATTENTION_H

#include "encoder.h"
#include "kernels/blockmask.h"
#include "kernels/mask.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keys per block: of the score products, and of attention's online
 * softmax (without weights to return, sequences of at least ATTN_KEY_BLOCK + 2
 * tokens). */
#define ATTN_KEY_BLOCK 128

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
 * Without attn, a sequence of ATTN_KEY_BLOCK + 2 or more tokens goes through keys
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
 * no listed tile).  Consecutive tiles are scored together, ATTN_KEY_BLOCK
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
