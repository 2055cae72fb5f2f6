/* workspace.c - what a forward computes in: the workspace's buffers, sized
 * by the batch and grown, never shrunk; its team of threads; and OpenBLAS's
 * buffer pool, mapped ahead for every thread that may call it. */
#include "model/workspace.h"

#include "kernels/attention.h"
#include "kernels/simd.h"
#include "model/embed.h"
#include "model/model.h"

#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Threads each new workspace's team has (enc_set_threads). */
static atomic_int default_threads = 1;

/* OpenBLAS's buffer pool.  Each BLAS call in progress holds one buffer of
 * the pool, and each of OpenBLAS's own threads holds one from the moment it
 * starts (at load, but it may run late) until the process ends; whoever
 * finds every mapped buffer taken maps a new one, and when that mapping
 * fails (an address-space limit, RLIMIT_AS) OpenBLAS retries for ever: a
 * forward would hang after a request had run the process out of memory.
 * So each new workspace has the pool map a buffer for every thread of the
 * workspaces alive plus every thread OpenBLAS may have (fewer than the CPUs
 * it counts): this thread takes them all together, then gives them back.
 * OpenBLAS 0.3.21's pool keeps a buffer mapped once given back and hands
 * it to any thread, so no later call maps.
 *
 * blas_memory_alloc and blas_memory_free are exported by libopenblas but
 * declared in no header of it; weak, so that another BLAS still links (and
 * gets no reservation).  The pool has 2 * MAX_THREADS buffers (MAX_THREADS
 * from openblas_get_config(), 64 in Debian's build); past that OpenBLAS
 * warns (and, past its overflow area, returns NULL), so the count is capped
 * there. */
extern void *blas_memory_alloc(int procpos) __attribute__((weak));
extern void blas_memory_free(void *area) __attribute__((weak));

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_threads; /* threads of the workspaces alive (under blas_lock) */

static int blas_pool_size(void)
{
    const char *cfg = openblas_get_config(), *mt = cfg ? strstr(cfg, "MAX_THREADS=") : NULL;
    const int n = mt ? atoi(mt + strlen("MAX_THREADS=")) : 0;
    return n > 0 ? 2 * n : 16;
}

/* Has the pool map want buffers: takes them all at once, gives them back. */
static void blas_map_buffers(int want)
{
    void **held = calloc((size_t)want, sizeof *held);
    int got = 0;
    while (held && got < want && (held[got] = blas_memory_alloc(0)) != NULL)
        got++;
    while (got > 0)
        blas_memory_free(held[--got]);
    free(held);
}

/* A workspace of n threads is made (n > 0) or freed (n < 0). */
static void blas_threads_add(int n)
{
    pthread_mutex_lock(&blas_lock);
    blas_threads += n;
    if (n > 0 && blas_memory_alloc && blas_memory_free) {
        const int cap = blas_pool_size(), all = blas_threads + openblas_get_num_procs() - 1;
        blas_map_buffers(all < cap ? all : cap);
    }
    pthread_mutex_unlock(&blas_lock);
}

/* Whether m's forwards call BLAS: some Linear left unpacked (attention
 * too when none is packed), or the AVX-512 kernel turned off (simd.h). */
static bool calls_blas(const enc_model *m)
{
    if (!m->packed || !simd_enabled())
        return true;
    if (m->embed && m->embed->proj_w && !m->embed->pk_proj)
        return true;
    for (int l = 0; l < m->hp.n_layers; l++) {
        const enc_layer *ly = &m->layers[l];
        if (!ly->pk_qkv || !ly->pk_o || !ly->pk_1 || !ly->pk_2)
            return true;
    }
    return false;
}

int enc_blas_threads_max(const enc_model *m)
{
    if (!calls_blas(m) || !blas_memory_alloc || !blas_memory_free)
        return INT_MAX;
    const int n = blas_pool_size() - (openblas_get_num_procs() - 1);
    return n > 1 ? n : 1;
}

int enc_threads(void)
{
    return atomic_load(&default_threads);
}

enc_workspace *enc_workspace_new(const enc_model *m)
{
    enc_workspace *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->m = m;
    if (!(ws->team = team_new(atomic_load(&default_threads)))) {
        free(ws);
        return NULL;
    }
    blas_threads_add(team_size(ws->team));
    return ws;
}

enc_workspace *enc_workspace_new_beside(const enc_model *m, enc_workspace *ws)
{
    if (!ws)
        return NULL;
    enc_workspace *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->m = m;
    b->team = ws->team; /* the same threads: no more BLAS buffers either */
    b->team_borrowed = true;
    return b;
}

void enc_workspace_on_pause(enc_workspace *ws, void (*fn)(void *arg), void *arg)
{
    ws->pause = fn;
    ws->pause_arg = arg;
}

void workspace_run(enc_workspace *ws, team_fn fn, void *arg)
{
    team_run(ws->team, fn, arg);
    if (ws->pause)
        ws->pause(ws->pause_arg);
}

void enc_workspace_free(enc_workspace *ws)
{
    if (!ws)
        return;
    if (!ws->team_borrowed) {
        blas_threads_add(-team_size(ws->team));
        team_free(ws->team);
    }
    free(ws->gather);
    free(ws->dis);
    free(ws->resid);
    free(ws->head);
    free(ws->tokpos);
    free(ws->ropes[0].t);
    free(ws->ropes[1].t);
    free(ws->mem);
    free(ws);
}

size_t enc_workspace_bytes(const enc_workspace *ws)
{
    return ws ? ws->bytes : 0;
}

/* a * b into *out, or false on size_t overflow. */
static bool mul_ok(size_t a, size_t b, size_t *out)
{
    if (b && a > SIZE_MAX / b)
        return false;
    *out = a * b;
    return true;
}

/* Rounds n bytes up to a 64-byte boundary (a cache line, an AVX-512 vector). */
static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

int workspace_reserve(enc_workspace *ws, size_t T, size_t L, size_t S, enc_error *err)
{
    if (ws->mem && T <= ws->cap_T && L <= ws->cap_L && S <= ws->cap_S)
        return ENC_OK;
    const enc_model *m = ws->m;
    T = T > ws->cap_T ? T : ws->cap_T;
    L = L > ws->cap_L ? L : ws->cap_L;
    S = S > ws->cap_S ? S : ws->cap_S;

    const size_t D = (size_t)m->hp.d_model, Q = (size_t)m->qkv_dim;
    const size_t nth = (size_t)team_size(ws->team), tile = L < ATTN_TILE ? L : ATTN_TILE;
    const size_t GE = (size_t)m->hp.n_kv_heads * (size_t)m->head_dim;
    const int ldh = gemm_padded_ld(enc_ffn_rows(&m->hp)); /* F, or input and gate */
    const size_t attn_floats =
        align64(attention_scratch_floats((int)tile, (int)L, m->head_dim) * sizeof(float)) /
        sizeof(float);
    size_t n_td, n_tz, n_tq, n_tf, n_ll, n_kt = 0, sizes[13];
    /* the packed keys: only the AVX-512 attention reads them (an int8 or
     * bfloat16 model is packed on any CPU) */
    const bool keys = m->packed && simd_supported();
    /* each sequence's keys padded to whole panels: fewer than GEMM_NR more
     * per sequence */
    bool ok = mul_ok(T, D, &n_td) && mul_ok(T, (size_t)m->q_dim, &n_tz) && mul_ok(T, Q, &n_tq) &&
              mul_ok(T, (size_t)ldh, &n_tf) && mul_ok(nth, attn_floats, &n_ll) &&
              n_td < SIZE_MAX / 8 && n_tq < SIZE_MAX / 8 && n_tz < SIZE_MAX / 8 &&
              n_tf < SIZE_MAX / 8 && n_ll < SIZE_MAX / 8 && T + S < SIZE_MAX / 16 &&
              S < SIZE_MAX / 32 && (!keys || mul_ok(T + S * (GEMM_NR - 1), GE, &n_kt)) &&
              n_kt < SIZE_MAX / 8;
    if (!ok)
        return enc_error_set(err, ENC_ENOMEM, "batch too large for this machine's address space");
    sizes[0] = sizes[1] = sizes[4] = align64(n_td * sizeof(float));
    sizes[3] = align64(n_tz * sizeof(float));
    sizes[2] = align64(n_tq * sizeof(float));
    sizes[5] = align64(n_tf * sizeof(float));
    sizes[6] = align64(n_ll * sizeof(float));
    sizes[7] = m->embed && m->embed->proj_w
                   ? align64(T * (size_t)m->embed->cfg.embedding_size * sizeof(float))
                   : 0; /* T < SIZE_MAX / 16 and E < 2^16 */
    sizes[8] = align64(S * sizeof(seq_info));
    sizes[9] = align64(2 * (3 * T + 3 * S) * sizeof(attn_item));
    sizes[10] = m->packed ? nth * align64(gemm_scratch_bytes()) : 0;
    sizes[11] = align64(n_kt * sizeof(float));
    /* int8: the Linears' inputs quantised once, D, H E or F wide (a row's
     * record is the same size in every row, gemm_int8_rows_bytes(1, K)) */
    int KI = m->hp.d_model > m->hp.d_ff ? m->hp.d_model : m->hp.d_ff;
    KI = KI > m->q_dim ? KI : m->q_dim;
    size_t n_i8 = 0;
    if (m->packed && m->hp.dtype == ENC_DTYPE_INT8 &&
        (!mul_ok(T, gemm_int8_rows_bytes(1, KI), &n_i8) || n_i8 > SIZE_MAX / 2))
        return enc_error_set(err, ENC_ENOMEM, "batch too large for this machine's address space");
    sizes[12] = align64(n_i8);
    size_t total = 0;
    for (int i = 0; i < 13; i++) {
        if (sizes[i] > SIZE_MAX - total)
            return enc_error_set(err, ENC_ENOMEM,
                                 "batch too large for this machine's address "
                                 "space");
        total += sizes[i];
    }

    void *mem = aligned_alloc(64, total);
    if (!mem)
        return enc_error_set(err, ENC_ENOMEM, "out of memory: the workspace needs %zu bytes",
                             total);
    free(ws->mem);
    ws->mem = mem;
    ws->bytes = total;
    ws->cap_T = T;
    ws->cap_L = L;
    ws->cap_S = S;
    ws->ldh = ldh;
    ws->attn_floats = attn_floats;
    char *p = mem;
    void **bufs[13] = {(void **)&ws->x,      (void **)&ws->y,    (void **)&ws->qkv,
                       (void **)&ws->z,      (void **)&ws->o,    (void **)&ws->h,
                       (void **)&ws->scores, (void **)&ws->emb,  (void **)&ws->seqs,
                       (void **)&ws->items,  (void **)&ws->gemm, (void **)&ws->kt,
                       &ws->i8rows};
    for (int i = 0; i < 13; i++) {
        if (bufs[i])
            *bufs[i] = p;
        p += sizes[i];
    }
    ws->plans[0].items = ws->items;
    ws->plans[1].items = ws->items + 3 * T + 3 * S;
    return ENC_OK;
}

float *workspace_gemm_scratch(enc_workspace *ws, int tid)
{
    return ws->gemm + (size_t)tid * (align64(gemm_scratch_bytes()) / sizeof(float));
}

size_t workspace_seq_gather_floats(const bm_seq *bs, int E)
{
    return attention_gather_floats(bs->n_gcols, E) +
           (bs->stride ? attention_residue_floats(bs->len, bs->stride, bs->stride, E) : 0);
}

/* Grows *buf (its own allocation, *cap floats) to need floats; contents
 * are not kept.  Returns false when out of memory. */
static bool grow_floats(float **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    float *p = aligned_alloc(64, align64(need * sizeof(float)));
    if (!p)
        return false;
    free(*buf);
    *buf = p;
    *cap = need;
    return true;
}

size_t workspace_job_gather_floats(const enc_model *m, const enc_blockmask *const *bms,
                                   const enc_blockmask *const *lbms, int j, int b)
{
    size_t f = workspace_seq_gather_floats(&bms[j]->seqs[b], m->head_dim);
    if (lbms) {
        const size_t lf = workspace_seq_gather_floats(&lbms[j]->seqs[b], m->head_dim);
        f = lf > f ? lf : f;
    }
    return (size_t)m->hp.n_kv_heads * f;
}

int workspace_reserve_masks(enc_workspace *ws, const enc_job *jobs, int n,
                            const enc_blockmask *const *bms, const enc_blockmask *const *lbms,
                            enc_error *err)
{
    const enc_model *m = ws->m;
    size_t gather = 0;
    bool residue = false;
    for (int j = 0; j < n; j++)
        for (int b = 0; jobs[j].rc == 0 && b < jobs[j].in->B; b++) {
            gather += workspace_job_gather_floats(m, bms, lbms, j, b);
            residue |= bms[j]->seqs[b].stride > 0;
        }
    ws->gathering = gather > 0;
    if (!grow_floats(&ws->gather, &ws->cap_gather, gather))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the mask's gathered columns");
    const size_t n_resid = ws->cap_T * (2 * (size_t)m->hp.n_heads + (size_t)m->q_dim);
    if (residue && !grow_floats(&ws->resid, &ws->cap_resid, n_resid))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the strided pattern's state");
    return ENC_OK;
}

int workspace_dis_rows(const enc_model *m, int len, int *r0)
{
    const int far = m->dis_far, d = len - 1 < far ? len - 1 : far;
    *r0 = m->dis_row[far - d];
    return m->dis_row[far + d] - *r0 + 1;
}

size_t workspace_dis_floats(const enc_model *m, int len)
{
    int r0;
    if (!m->dis_row || len <= 0)
        return 0;
    return 2 * (size_t)m->hp.n_heads * (size_t)len * (size_t)workspace_dis_rows(m, len, &r0);
}

int workspace_reserve_dis(enc_workspace *ws, const enc_job *jobs, int n, enc_error *err)
{
    size_t need = 0;
    for (int j = 0; j < n; j++)
        for (int b = 0; jobs[j].rc == 0 && b < jobs[j].in->B; b++)
            need += workspace_dis_floats(ws->m, jobs[j].in->lengths ? jobs[j].in->lengths[b]
                                                                    : jobs[j].in->L);
    if (!grow_floats(&ws->dis, &ws->cap_dis, need))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the relative attention's terms");
    return ENC_OK;
}

void enc_set_threads(int n)
{
    /* The team splits every op itself; BLAS calls are one thread each. */
    openblas_set_num_threads(1);
    atomic_store(&default_threads, n > 0 ? n : 1);
}
