/* mask.h - the mask rule (mask.c): which keys one sequence's queries may
 * see and what their scores get added; BigBird's random blocks and a
 * band's pairs.  Private to core/. */
#ifndef ATTND_KERNELS_MASK_H
#define ATTND_KERNELS_MASK_H

#include "encoder.h"

#include <stdbool.h>
#include <stdint.h>

/* Which keys one sequence's queries may see: enc_mask's rule for one
 * sequence (blockmask_seq_mask). */
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
    /* MPNet's relative position bias by distance (mask_rel_dist;
     * enc_model.rel_dist), d = j - i in indices, not pos; NULL: none */
    const float *rel_dist;
    /* DeBERTa's c2p and p2c terms (enc_model.dis_*): for head h at h * 2 *
     * len * dis_n, c2p (len, dis_n) then p2c (len, dis_n), column c being
     * the table's row dis_r0 + c (forward.c's phase_dis); query i and key j
     * read the row dis_row[dis_far + clamp(i - j)]: NULL: none */
    const float *dis;
    int dis_n, dis_r0, dis_far;
    const int32_t *dis_row;
} seq_mask;

/* Whether query i may see key j (both < len): the definition the tiles,
 * the CSR lists and partially masked tiles follow. */
bool mask_allowed(const seq_mask *sm, int i, int j);
/* Whether a restriction (causal, padding, an attn mask, a band) can refuse
 * a pair the pattern holds: gathered columns and global rows must then be
 * masked key by key. */
bool mask_restricted(const seq_mask *sm);

/* Floats a head's row of MPNet's bias by distance holds: one for each d
 * in -ENC_REL_MAX_DISTANCE .. ENC_REL_MAX_DISTANCE (d clamped to them). */
#define MASK_REL_ROW (2 * ENC_REL_MAX_DISTANCE + 1)
/* Fills rel_dist (H rows of MASK_REL_ROW) from MPNet's table (rows, H):
 * head h's entry for d is table[enc_rel_bucket(d)][h].  A row of scores
 * then adds a stretch of its head's row (mask_position_bias). */
void mask_rel_dist(float *rel_dist, const float *table, int H);

/* Whether sm adds a bias by position to the scores (ALiBi's, MPNet's,
 * DeBERTa's). */
bool mask_has_position_bias(const seq_mask *sm);
/* Adds head h's bias by position to n scores of query i, s[k] being key
 * cols[k]'s (cols NULL: key j0 + k * step's): ALiBi's -slope_h * |p_i - p_j|,
 * MPNet's table entry for the bucket of j - i, DeBERTa's c2p and p2c
 * entries.  Nothing when sm has none. */
void mask_position_bias(const seq_mask *sm, int h, int i, int j0, int step, const int *cols, int n,
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

/* The random key blocks of BigBird's pattern for query block qb of a
 * sequence of n_blocks blocks: the candidates are the key blocks kb with
 * |qb - kb| > window and kb >= global, in ascending order; min(random,
 * candidates) of them are drawn by a partial Fisher-Yates shuffle on
 * splitmix64 seeded with seed ^ (0x9E3779B97F4A7C15 * (qb + 1)) (docs/model.md
 * gives the exact steps).  Writes them, ascending, to out (room for
 * p->random) and returns how many; query blocks below p->global get none.
 * cand is scratch for n_blocks ints. */
int mask_blocks_random(const enc_blocks_pattern *p, int n_blocks, int qb, int *cand, int *out);

/* The pairs (i, j) of a sequence of len tokens with |i - j| <= w. */
uint64_t mask_band_pairs(int len, int w);

/* One block's parameters, PyTorch layout (a Linear's weight is (out, in)).
 * Biases and norms are in enc_model.params, NULL when hp.bias is off.  The
 * four Linear weights are read-only here: in params too (a seeded model's,
 * or a file's tensors widened or copied), or in a weights file's mapping
 * (enc_model.maps: float32 tensors read where the file has them, so the
 * stack is not held twice, as floats and packed); model_own gives a seeded
 * model's writable storage. */

#endif
