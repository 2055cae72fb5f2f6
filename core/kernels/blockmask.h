/* blockmask.h - a batch's mask compiled into tiles and CSR lists
 * (blockmask.c), behind encoder.h's enc_blockmask.  Private to core/. */
#ifndef ATTND_KERNELS_BLOCKMASK_H
#define ATTND_KERNELS_BLOCKMASK_H

#include "encoder.h"
#include "kernels/mask.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Query rows and keys per tile of the block mask. */
#define BM_TILE_Q 64
#define BM_TILE_K 32

/* A tile entry's flag: the tile is full (every pair allowed, no additive
 * mask); the low bits are the key tile's index. */
#define BM_FULL 0x80000000u

/* One sequence of a block mask. */
typedef struct bm_seq {
    int len;
    bool dense;      /* no mask beyond the length: every tile full, nothing listed */
    int nq, nk;      /* query tiles ceil(len / BM_TILE_Q), key tiles ceil(len / BM_TILE_K) */
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
/* Sequence b's mask view, over in's arrays and bm's tables. */
seq_mask blockmask_seq_mask(const enc_batch *in, const enc_blockmask *bm, int b);

#endif
