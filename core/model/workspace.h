/* workspace.h - the forward's workspace (workspace.c) as forward.c sees
 * it: its buffers, the packed batch's sequences and the attention plans. */
#ifndef ATTND_WORKSPACE_H
#define ATTND_WORKSPACE_H

#include "kernels/blockmask.h"
#include "kernels/gemm.h"
#include "model/team.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Query rows per attention tile: a thread's scores are (ATTN_TILE, L), never
 * (L, L), and tiles spread one sequence's attention over the team. */
#define ATTN_TILE 64

/* One sequence of the packed batch: sequence b of job j, at rows
 * [row, row + len) of the packed matrices, its packed keys at kt floats
 * into the workspace's kt. */
typedef struct seq_info {
    int job, b, row, len;
    size_t kt;
    size_t csr;    /* CSR weights: where its values start in a layer's (floats) */
    size_t gather; /* its gathered columns' keys and values in the workspace's gather */
    size_t dis;    /* its DeBERTa terms in the workspace's dis (workspace_dis_floats) */
} seq_info;

/* One unit of attention work on packed sequence seq: query rows [i0, i1)
 * (ITEM_TILE); its global positions' rows grows[i0 .. i1) of the block mask
 * (ITEM_GROWS); or the rows cls + k * stride, k in [i0, i1), of a strided
 * residue class (ITEM_RESIDUE).  cost: its scores per head, for sharing the
 * items out. */
enum { ITEM_TILE, ITEM_GROWS, ITEM_RESIDUE };
typedef struct attn_item {
    int seq, i0, i1;
    int kind, cls;
    uint64_t cost;
} attn_item;

/* The attention work of one kind of layer over the packed batch: items
 * [0, n_res) residue classes, [n_res, n_tiles) tiles, then global rows;
 * each job's block mask (its own on global layers; with the local band on
 * local layers). */
typedef struct attn_plan {
    attn_item *items;
    int n_res, n_tiles, n_items;
    const enc_blockmask *const *bms; /* (jobs) */
} attn_plan;

/* RoPE's cosines and sines for one base: positions [0, cap), rope_dim
 * floats each (rope_dim / 2 cosines, then as many sines), computed in
 * double once. */
typedef struct rope_table {
    float *t;
    int cap;
} rope_table;

struct enc_workspace {
    const enc_model *m;
    team *team;                 /* the threads this workspace's forwards use */
    bool team_borrowed;         /* team is another workspace's (enc_workspace_new_beside) */
    void (*pause)(void *arg);   /* enc_workspace_on_pause's, or NULL */
    void *pause_arg;
    size_t cap_T, cap_L, cap_S; /* tokens, longest L, sequences */
    void *mem;                  /* one allocation the buffers are carved from */
    size_t bytes;
    float *x;      /* (T, D) the residual stream */
    float *y;      /* (T, D) a sublayer's normed input (pre-norm) */
    float *qkv;    /* (T, D + 2*G*E) */
    float *z;      /* (T, H E) attention output, heads concatenated */
    float *o;      /* (T, D) a sublayer's output */
    float *h;      /* (T, ldh) feed-forward hidden layer, F used of each row */
    float *emb;    /* (T, E) the embedding module's rows before its projection (ELECTRA's
                      embeddings_project), or none */
    float *kt;     /* every sequence's keys packed for the scores (attention_pack_keys),
                      or none (!m->packed, or no AVX-512 on this CPU) */
    float *scores; /* (threads, attn_floats) each thread's attention scratch */
    size_t attn_floats;
    seq_info *seqs;   /* (S) the packed sequences */
    attn_item *items; /* (2 (3T + 3S)) attention work, two plans' (global and local layers):
                         each the residue classes' items (at most len / 64 + stride <
                         2 len + 1 a sequence), then the tiles (at most a tile per 16
                         rows, plus one), then the global rows' (64 rows each) */
    float *gemm;      /* (threads, gemm_scratch_bytes) the packed GEMM's scratch, or none */
    void *i8rows;     /* an int8 model's: a Linear's input rows quantised once
                         (gemm_int8_rows_bytes(T, max(D, F))), or none */
    const float *i8rows_of; /* the input whose every row i8rows holds, quantised
                               by a norm phase for the int8 Linear after it; or NULL */
    float *gather;    /* every sequence's gathered columns (attention_gather), its own
                         allocation: sized by the masks, not the batch shape */
    size_t cap_gather;
    float *dis; /* every sequence's DeBERTa terms (phase_dis), its own allocation */
    size_t cap_dis;
    bool gathering; /* this batch has gathered columns or residue classes */
    int ldh;        /* h's row stride: F, padded for the GEMM (gemm_padded_ld) */
    int n_seqs;
    attn_plan plans[2]; /* global layers', local layers' (hp.global_every > 1) */
    float *resid;       /* (T, 2H + D) the residue classes' state: max and sum (T, H) each,
                           z (T, D); its own allocation, grown when a batch needs it */
    size_t cap_resid;
    /* RoPE: each packed token's position, and the tables of the global
     * layers' base and the local layers' */
    int32_t *tokpos;
    size_t cap_tokpos;
    rope_table ropes[2];
    /* The task head's buffers (head.c): its own allocation, grown when a
     * batch needs more */
    float *head;
    size_t cap_head;
};

/* Makes room for T packed tokens, sequences up to L long, S sequences.
 * Grows only; contents are not kept.  Returns 0 or ENC_ENOMEM. */
int workspace_reserve(enc_workspace *ws, size_t T, size_t L, size_t S, enc_error *err);

/* Room for what the live jobs' block masks need besides the batch shape:
 * every sequence's gathered columns and residue classes (every key/value
 * head; lbms: the local layers' masks, or NULL), and the residue classes'
 * running state.  Returns 0 or ENC_ENOMEM. */
int workspace_reserve_masks(enc_workspace *ws, const enc_job *jobs, int n,
                            const enc_blockmask *const *bms, const enc_blockmask *const *lbms,
                            enc_error *err);
/* Room for every live job's sequences' DeBERTa terms.  0 or ENC_ENOMEM. */
int workspace_reserve_dis(enc_workspace *ws, const enc_job *jobs, int n, enc_error *err);

/* DeBERTa's table rows a sequence of len tokens reads (enc_model.dis_*):
 * returns how many, the first in *r0. */
int workspace_dis_rows(const enc_model *m, int len, int *r0);
/* Floats of a sequence's c2p and p2c terms, every head; 0 without them. */
size_t workspace_dis_floats(const enc_model *m, int len);

/* Floats of one key/value head's gathered area of a sequence: its gathered
 * columns, then its residue classes. */
size_t workspace_seq_gather_floats(const bm_seq *bs, int E);
/* Floats of sequence b of job j's gathered area, every key/value head: the
 * larger of its global and local layers' (lbms NULL: no local layers). */
size_t workspace_job_gather_floats(const enc_model *m, const enc_blockmask *const *bms,
                                   const enc_blockmask *const *lbms, int j, int b);

/* Runs fn on ws's team (team_run), then ws's pause hook: every phase of a
 * forward runs through here. */
void workspace_run(enc_workspace *ws, team_fn fn, void *arg);
/* Thread tid's packed-GEMM scratch (gemm_scratch_bytes, 64-byte aligned). */
float *workspace_gemm_scratch(enc_workspace *ws, int tid);

#endif
