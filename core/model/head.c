/* head.c - the task head over the encoder's last hidden state (head.h):
 * its description, its packing, and its run over a packed batch as team
 * phases (Linears split by chunks of output columns, norms by rows). */
#include "model/head.h"

#include "kernels/ops.h"
#include "kernels/simd.h"
#include "model/model.h"
#include "model/team.h"
#include "model/workspace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- description ---------------------------------------------------------- */

const char *enc_head_kind_name(enc_head_kind kind)
{
    switch (kind) {
    case ENC_HEAD_SEQUENCE:
        return "sequence";
    case ENC_HEAD_TOKEN:
        return "token";
    case ENC_HEAD_MASKED_LM:
        return "masked_lm";
    case ENC_HEAD_NONE:
        break;
    }
    return "none";
}

const char *enc_head_function_name(enc_head_function fn)
{
    return fn == ENC_HEAD_FN_SOFTMAX ? "softmax" : fn == ENC_HEAD_FN_SIGMOID ? "sigmoid" : "none";
}

bool head_act_parse(const char *name, head_act *act)
{
    static const struct {
        const char *name;
        head_act act;
    } names[] = {
        {"tanh", HEAD_ACT_TANH},           {"relu", HEAD_ACT_RELU},
        {"gelu", HEAD_ACT_GELU},           {"gelu_python", HEAD_ACT_GELU},
        {"gelu_new", HEAD_ACT_GELU_TANH},  {"gelu_pytorch_tanh", HEAD_ACT_GELU_TANH},
        {"gelu_fast", HEAD_ACT_GELU_TANH}, {"silu", HEAD_ACT_SILU},
        {"swish", HEAD_ACT_SILU},          {"linear", HEAD_ACT_NONE},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i].name) == 0) {
            *act = names[i].act;
            return true;
        }
    return false;
}

model_head *head_new(enc_head_kind kind, const char *architecture)
{
    model_head *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->info.kind = kind;
    h->info.function = ENC_HEAD_FN_SOFTMAX;
    h->eps = 1e-12f;
    pthread_mutex_init(&h->pack_lock, NULL);
    snprintf(h->architecture, sizeof h->architecture, "%s", architecture);
    return h;
}

static void linear_unpack(head_linear *l)
{
    for (int c = 0; l->pk && c < l->chunks; c++)
        gemm_packed_free(l->pk[c]);
    free(l->pk);
    l->pk = NULL;
}

void head_free(model_head *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n_labels; i++)
        free(h->labels[i]);
    for (size_t i = 0; i < h->n_tensors; i++)
        free(h->tensors[i]);
    free(h->labels);
    free(h->tensors);
    linear_unpack(&h->dense);
    linear_unpack(&h->out);
    pthread_mutex_destroy(&h->pack_lock);
    free(h->mem);
    free(h);
}

/* Appends a copy of s to the n strings at *list. */
static int push(char ***list, size_t n, const char *s)
{
    char **grown = realloc(*list, (n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    *list = grown;
    return (grown[n] = strdup(s)) ? 0 : -1;
}

int head_add_label(model_head *h, const char *label)
{
    if (push(&h->labels, (size_t)h->n_labels, label) < 0)
        return -1;
    h->n_labels++;
    return 0;
}

int head_add_tensor(model_head *h, const char *name)
{
    for (size_t i = 0; i < h->n_tensors; i++)
        if (strcmp(h->tensors[i], name) == 0)
            return 0;
    if (push(&h->tensors, h->n_tensors, name) < 0)
        return -1;
    h->n_tensors++;
    return 0;
}

int head_alloc(model_head *h, size_t n)
{
    if (h->mem || !(h->mem = calloc(n ? n : 1, sizeof *h->mem)))
        return -1;
    h->n_mem = n;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void head_finish(model_head *h)
{
    if (h->n_tensors) /* a tied score head lists none */
        qsort(h->tensors, h->n_tensors, sizeof *h->tensors, by_name);
    h->info.architecture = h->architecture;
    h->info.problem_type = h->problem_type;
    h->info.labels = h->info.kind == ENC_HEAD_MASKED_LM ? NULL : (const char *const *)h->labels;
    h->info.n_outputs = h->out.N;
    h->info.tensors = (const char *const *)h->tensors;
    h->info.n_tensors = h->n_tensors;
}

const enc_head_info *enc_model_head(const enc_model *m)
{
    return m && m->head ? &m->head->info : NULL;
}

const char *enc_model_head_unsupported(const enc_model *m)
{
    return m && m->head_unsupported ? m->klass : NULL;
}

const char *enc_model_head_note(const enc_model *m)
{
    return m ? m->head_note : "";
}

const char *enc_model_class(const enc_model *m)
{
    return m ? m->klass : "";
}

size_t enc_head_floats(const enc_model *m, enc_head_output what, int B, int L)
{
    const model_head *h = m ? m->head : NULL;
    if (!h || what == ENC_HEAD_OUT_NONE || B < 1 || L < 1)
        return 0;
    const size_t C = (size_t)h->out.N;
    if (what == ENC_HEAD_OUT_SPLADE)
        return h->info.kind == ENC_HEAD_MASKED_LM ? (size_t)B * C : 0;
    return h->info.kind == ENC_HEAD_SEQUENCE ? (size_t)B * C : (size_t)B * L * C;
}

/* ---- packing ---------------------------------------------------------------- */

/* In int8 (model.dtype) the chunks are quantised as the blocks' Linears
 * are (gemm_pack_int8), on any CPU; the float32 weights stay (a tied
 * decoder is the embeddings' word table too), a file's pages given back. */
static void linear_pack(const enc_model *m, head_linear *l)
{
    linear_unpack(l);
    l->chunks = (l->N + HEAD_CHUNK - 1) / HEAD_CHUNK;
    const bool i8 = m->hp.dtype == ENC_DTYPE_INT8;
    if (!l->w || !(i8 || simd_supported()) || !(l->pk = calloc((size_t)l->chunks, sizeof *l->pk)))
        return;
    for (int c = 0; c < l->chunks; c++) {
        const int n0 = c * HEAD_CHUNK, rows = l->N - n0 < HEAD_CHUNK ? l->N - n0 : HEAD_CHUNK;
        const float *w = l->w + (size_t)n0 * l->K;
        if (!(l->pk[c] = i8 ? gemm_pack_int8(w, rows, l->K) : gemm_pack(w, rows, l->K))) {
            linear_unpack(l);
            return;
        }
    }
    /* a decoder read in a file's mapping: the panels are read from now on */
    model_release(m, l->w, (size_t)l->N * l->K * sizeof *l->w);
}

static void pack_all(const enc_model *m, model_head *h)
{
    if (h->dense.N)
        linear_pack(m, &h->dense);
    linear_pack(m, &h->out);
}

void head_pack(enc_model *m)
{
    model_head *h = m->head;
    if (!h)
        return;
    if (m->hp.dtype == ENC_DTYPE_INT8) { /* quantised on first use: pack_once */
        linear_unpack(&h->dense);
        linear_unpack(&h->out);
        atomic_store_explicit(&h->ready, false, memory_order_release);
        return;
    }
    pack_all(m, h);
    atomic_store_explicit(&h->ready, true, memory_order_release);
}

bool head_ready(const model_head *h)
{
    return atomic_load_explicit(&h->ready, memory_order_acquire);
}

/* The int8 head's Linears quantised by the first run that needs them;
 * runs at once wait for it (pack_lock), then read the panels ready
 * published. */
static void pack_once(const enc_model *m, model_head *h)
{
    if (head_ready(h))
        return;
    pthread_mutex_lock(&h->pack_lock);
    if (!atomic_load_explicit(&h->ready, memory_order_relaxed)) {
        pack_all(m, h);
        atomic_store_explicit(&h->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&h->pack_lock);
}

/* ---- checks ------------------------------------------------------------------ */

/* ROWS: the head computes per token, and every row is a real token of the
 * batch, ascending. */
static int rows_check(const model_head *h, const enc_batch *in, const enc_result *res,
                      enc_error *err)
{
    if (h->info.kind == ENC_HEAD_SEQUENCE)
        return enc_error_set(err, ENC_EINVAL,
                             "chosen rows need a token head or masked LM; this model's is %s (%s)",
                             enc_head_kind_name(h->info.kind), h->architecture);
    if (res->n_head_rows < 0 || (res->n_head_rows > 0 && !res->head_rows))
        return enc_error_set(err, ENC_EINVAL, "head_rows: %d rows without a list",
                             res->n_head_rows);
    const long long L = in->L, total = (long long)in->B * in->L;
    for (int k = 0; k < res->n_head_rows; k++) {
        const long long r = res->head_rows[k];
        if (r < 0 || r >= total)
            return enc_error_set(err, ENC_EINVAL, "head_rows[%d] = %lld is outside 0..%lld", k, r,
                                 total - 1);
        if (k > 0 && r <= res->head_rows[k - 1])
            return enc_error_set(err, ENC_EINVAL,
                                 "head_rows[%d] = %lld is not above the one before", k, r);
        const int b = (int)(r / L), len = in->lengths ? in->lengths[b] : in->L;
        if (r % L >= len)
            return enc_error_set(err, ENC_EINVAL,
                                 "head_rows[%d] = %lld is padding (sequence %d has %d tokens)", k,
                                 r, b, len);
    }
    return ENC_OK;
}

int head_check(const enc_model *m, const enc_batch *in, const enc_result *res, enc_error *err)
{
    if (res->head == ENC_HEAD_OUT_NONE)
        return ENC_OK;
    const model_head *h = m->head;
    if (!h) {
        if (m->head_unsupported)
            return enc_error_set(err, ENC_EINVAL,
                                 "this model's head (%s) is not computed (%s): it serves the "
                                 "encoder alone",
                                 m->klass, m->head_note[0] ? m->head_note : "not one attnd has");
        return enc_error_set(err, ENC_EINVAL,
                             "this model has no head (%s): it serves the encoder "
                             "alone",
                             m->klass[0] ? m->klass : "no architectures in config.json");
    }
    if (res->head == ENC_HEAD_OUT_SPLADE && h->info.kind != ENC_HEAD_MASKED_LM)
        return enc_error_set(err, ENC_EINVAL,
                             "SPLADE needs a masked-LM head; this model's is %s (%s)",
                             enc_head_kind_name(h->info.kind), h->architecture);
    if (res->head != ENC_HEAD_OUT_LOGITS && res->head != ENC_HEAD_OUT_SPLADE &&
        res->head != ENC_HEAD_OUT_ROWS)
        return enc_error_set(err, ENC_EINVAL, "unknown head output %d", (int)res->head);
    if (!res->logits)
        return enc_error_set(err, ENC_EINVAL, "no buffer for the head's output");
    return res->head == ENC_HEAD_OUT_ROWS ? rows_check(h, in, res, err) : ENC_OK;
}

/* ---- the run ------------------------------------------------------------------ */

/* Rows of a SPLADE block: (HEAD_ROWS, HEAD_CHUNK) logits at a time per
 * thread, 128 KiB: one multiplication a chunk for a sequence of up to 256
 * tokens. */
#define HEAD_ROWS 256

/* One phase of the head: a Linear over M rows (split by chunks), SPLADE's
 * reduction over them, or the activation and norm (split by rows). */
typedef struct head_ctx {
    const enc_model *m;
    enc_workspace *ws;
    const head_linear *lin;
    const float *in;
    int lda, M;
    float *out; /* a Linear's (M rows ldc apart), or SPLADE's (N) */
    int ldc;
    bool splade;
    float *scratch; /* SPLADE: (threads, HEAD_ROWS * HEAD_CHUNK) */
} head_ctx;

/* out (M rows ldc apart, the chunk's columns) = in . w[chunk]^T + b[chunk]. */
static void linear_chunk(const head_ctx *c, int k, float *out, int ldc, const float *in, int M,
                         int tid)
{
    const head_linear *l = c->lin;
    const int n0 = k * HEAD_CHUNK, cols = l->N - n0 < HEAD_CHUNK ? l->N - n0 : HEAD_CHUNK;
    const float *b = l->b ? l->b + n0 : NULL;
    if (l->pk && c->m->packed && (simd_enabled() || gemm_packed_int8(l->pk[k])))
        gemm_packed_cols(out, ldc, in, c->lda, l->pk[k], b, M, 0, gemm_panels(l->pk[k]), NULL,
                         workspace_gemm_scratch(c->ws, tid));
    else
        ops_linear_cols(out, ldc, in, c->lda, l->w + (size_t)n0 * l->K, b, M, l->K, 0, cols, NULL);
}

static void phase_linear(void *arg, int tid, int nth)
{
    const head_ctx *c = arg;
    int k0, k1;
    team_split(c->lin->chunks, tid, nth, &k0, &k1);
    for (int k = k0; k < k1; k++) {
        if (!c->splade) {
            linear_chunk(c, k, c->out + (size_t)k * HEAD_CHUNK, c->ldc, c->in, c->M, tid);
            continue;
        }
        /* SPLADE: the chunk's columns of every row, a block of rows at a
         * time, reduced to max over rows of log(1 + relu(x)).  log1p and
         * relu never decrease, so that is log1p(relu(max x)): the block is
         * reduced by max alone, and log1p runs once a column. */
        float *blk = c->scratch + (size_t)tid * HEAD_ROWS * HEAD_CHUNK;
        const int n0 = k * HEAD_CHUNK;
        const int cols = c->lin->N - n0 < HEAD_CHUNK ? c->lin->N - n0 : HEAD_CHUNK;
        float *best = c->out + n0;
        for (int j = 0; j < cols; j++)
            best[j] = 0.0f; /* relu's floor */
        for (int r0 = 0; r0 < c->M; r0 += HEAD_ROWS) {
            const int rows = c->M - r0 < HEAD_ROWS ? c->M - r0 : HEAD_ROWS;
            linear_chunk(c, k, blk, HEAD_CHUNK, c->in + (size_t)r0 * c->lda, rows, tid);
            for (int i = 0; i < rows; i++) {
                const float *x = blk + (size_t)i * HEAD_CHUNK;
                for (int j = 0; j < cols; j++)
                    best[j] = x[j] > best[j] ? x[j] : best[j];
            }
        }
        for (int j = 0; j < cols; j++)
            best[j] = log1pf(best[j]);
    }
}

static float act_value(float x, head_act act)
{
    switch (act) {
    case HEAD_ACT_TANH:
        return tanhf(x);
    case HEAD_ACT_RELU:
        return ops_activation_value(x, ENC_ACT_RELU);
    case HEAD_ACT_GELU:
        return ops_activation_value(x, ENC_ACT_GELU);
    case HEAD_ACT_GELU_TANH:
        return ops_activation_value(x, ENC_ACT_GELU_TANH);
    case HEAD_ACT_SILU:
        return x / (1.0f + expf(-x));
    case HEAD_ACT_NONE:
        break;
    }
    return x;
}

/* act, then the norm, on rows of out (M rows ldc apart, N wide), split by
 * rows. */
static void phase_act_norm(void *arg, int tid, int nth)
{
    const head_ctx *c = arg;
    const model_head *h = c->m->head;
    const int N = c->lin->N;
    int r0, r1;
    team_split(c->M, tid, nth, &r0, &r1);
    for (int i = r0; i < r1; i++) {
        float *row = c->out + (size_t)i * c->ldc;
        for (int j = 0; h->act != HEAD_ACT_NONE && j < N; j++)
            row[j] = act_value(row[j], h->act);
        if (h->ln_w)
            ops_layernorm(row, row, h->ln_w, h->ln_b, 1, N, h->eps);
    }
}

/* out (M rows ldc apart) = lin(in (M rows lda apart)), then the head's act
 * and norm when lin is its dense; or with splade, out (N) = SPLADE's max. */
static void run_linear(head_ctx *c, const head_linear *lin, float *out, int ldc, const float *in,
                       int lda, int M, bool splade)
{
    c->lin = lin;
    c->out = out;
    c->ldc = ldc;
    c->in = in;
    c->lda = lda;
    c->M = M;
    c->splade = splade;
    workspace_run(c->ws, phase_linear, c);
    if (lin == &c->m->head->dense && !splade)
        workspace_run(c->ws, phase_act_norm, c);
}

/* The buffers: floats for the head's rows and, for SPLADE, every thread's
 * block.  Returns 0 or ENC_ENOMEM. */
static int reserve(enc_workspace *ws, size_t floats, enc_error *err)
{
    if (floats <= ws->cap_head)
        return ENC_OK;
    float *p = realloc(ws->head, floats * sizeof *p);
    if (!p)
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the head's %zu floats", floats);
    ws->head = p;
    ws->cap_head = floats;
    return ENC_OK;
}

static bool wants(const enc_job *job)
{
    return job->rc == 0 && job->res->head != ENC_HEAD_OUT_NONE;
}

/* The token a last_pooling head reads in sequence sq: the last whose id is
 * not the pad id, 0 when there is none (torch's argmax of (index * not
 * pad)), or the last without a pad id or ids. */
static int last_token(const model_head *h, const enc_job *job, const seq_info *sq)
{
    const enc_ids *ids = job->in->ids;
    if (h->info.pad_token_id < 0 || !ids || !ids->input_ids)
        return sq->len - 1;
    const int32_t *row = ids->input_ids + (size_t)sq->b * job->in->L;
    int i = sq->len - 1;
    while (i > 0 && row[i] == h->info.pad_token_id)
        i--;
    return i;
}

/* A sequence head: every wanted sequence's pooled row (first token, the
 * mean of its real tokens, or the last), through dense and out, into its
 * job's logits. */
static void run_sequences(head_ctx *c, enc_job *jobs, float *buf, int S)
{
    const model_head *h = c->m->head;
    const enc_workspace *ws = c->ws;
    const int D = c->m->hp.d_model, C = h->out.N, Nt = h->dense.N ? h->dense.N : D;
    float *pooled = buf, *t = pooled + (size_t)S * D, *logits = t + (size_t)S * Nt;
    int s = 0;
    for (int q = 0; q < ws->n_seqs; q++) {
        const seq_info *sq = &ws->seqs[q];
        if (!wants(&jobs[sq->job]))
            continue;
        float *row = pooled + (size_t)s++ * D;
        const float *x = ws->x + (size_t)sq->row * D;
        if (h->info.last_pooling) {
            memcpy(row, x + (size_t)last_token(h, &jobs[sq->job], sq) * D, (size_t)D * sizeof *row);
            continue;
        }
        if (!h->info.mean_pooling) {
            memcpy(row, x, (size_t)D * sizeof *row);
            continue;
        }
        for (int j = 0; j < D; j++) { /* (h * mask).sum(1) / mask.sum(1): in float32, in order */
            float sum = 0.0f;
            for (int i = 0; i < sq->len; i++)
                sum += x[(size_t)i * D + j];
            row[j] = sum / (float)sq->len;
        }
    }
    const float *in = pooled;
    if (h->dense.N) {
        run_linear(c, &h->dense, t, Nt, pooled, D, S, false);
        in = t;
    }
    run_linear(c, &h->out, logits, C, in, Nt, S, false);
    s = 0;
    for (int q = 0; q < ws->n_seqs; q++) {
        const seq_info *sq = &ws->seqs[q];
        if (wants(&jobs[sq->job]))
            memcpy(jobs[sq->job].res->logits + (size_t)sq->b * C, logits + (size_t)s++ * C,
                   (size_t)C * sizeof *logits);
    }
}

/* ROWS: sequence q's chosen rows, gathered into g (D wide); returns how
 * many, and in *first the index in head_rows of the first. */
static int gather_rows(const enc_workspace *ws, const seq_info *sq, const enc_job *job, int D,
                       float *g, int *first)
{
    const enc_result *res = job->res;
    const long long lo = (long long)sq->b * job->in->L, hi = lo + sq->len;
    int k = 0, n = 0;
    while (k < res->n_head_rows && res->head_rows[k] < lo)
        k++;
    *first = k;
    for (; k < res->n_head_rows && res->head_rows[k] < hi; k++, n++)
        memcpy(g + (size_t)n * D, ws->x + (size_t)(sq->row + (res->head_rows[k] - lo)) * D,
               (size_t)D * sizeof *g);
    return n;
}

/* A token head or masked LM: sequence by sequence, its rows (or, for ROWS,
 * its chosen rows, gathered into g) through dense (into t), then out into
 * the job's logits (padding rows zero) or SPLADE's vector. */
static void run_tokens(head_ctx *c, enc_job *jobs, float *t, float *g)
{
    const model_head *h = c->m->head;
    const enc_workspace *ws = c->ws;
    const int D = c->m->hp.d_model, N = h->out.N, Nt = h->dense.N ? h->dense.N : D;
    for (int q = 0; q < ws->n_seqs; q++) {
        const seq_info *sq = &ws->seqs[q];
        const enc_job *job = &jobs[sq->job];
        if (!wants(job))
            continue;
        const float *in = ws->x + (size_t)sq->row * D;
        int M = sq->len, first = 0;
        if (job->res->head == ENC_HEAD_OUT_ROWS) {
            if ((M = gather_rows(ws, sq, job, D, g, &first)) == 0)
                continue;
            in = g;
        }
        if (h->dense.N) {
            run_linear(c, &h->dense, t, Nt, in, D, M, false);
            in = t;
        }
        if (job->res->head == ENC_HEAD_OUT_SPLADE) {
            run_linear(c, &h->out, job->res->logits + (size_t)sq->b * N, 0, in, Nt, M, true);
            continue;
        }
        if (job->res->head == ENC_HEAD_OUT_ROWS) {
            run_linear(c, &h->out, job->res->logits + (size_t)first * N, N, in, Nt, M, false);
            continue;
        }
        const int L = job->in->L;
        float *dst = job->res->logits + (size_t)sq->b * L * N;
        run_linear(c, &h->out, dst, N, in, Nt, M, false);
        memset(dst + (size_t)sq->len * N, 0, (size_t)(L - sq->len) * N * sizeof *dst);
    }
}

int head_run(const enc_model *m, enc_workspace *ws, enc_job *jobs, int n)
{
    model_head *h = m->head;
    int S = 0, Lmax = 0, failed = 0;
    for (int q = 0; h && q < ws->n_seqs; q++)
        if (wants(&jobs[ws->seqs[q].job])) {
            S++;
            Lmax = ws->seqs[q].len > Lmax ? ws->seqs[q].len : Lmax;
        }
    if (S == 0)
        return 0;
    pack_once(m, h);
    const size_t D = (size_t)m->hp.d_model, C = (size_t)h->out.N;
    const size_t Nt = h->dense.N ? (size_t)h->dense.N : D;
    const size_t threads = (size_t)team_size(ws->team);
    /* a token head: t (Lmax, Nt), SPLADE's blocks, and ROWS' gathered rows
     * (Lmax, D) */
    const size_t floats = h->info.kind == ENC_HEAD_SEQUENCE
                              ? (size_t)S * (D + Nt + C)
                              : (size_t)Lmax * (Nt + D) + threads * HEAD_ROWS * HEAD_CHUNK;
    enc_error err = {0};
    if (reserve(ws, floats, &err) < 0) {
        for (int j = 0; j < n; j++)
            if (wants(&jobs[j])) {
                jobs[j].rc = err.status;
                jobs[j].err = err;
                failed++;
            }
        return failed;
    }
    head_ctx c = {.m = m, .ws = ws};
    if (h->info.kind == ENC_HEAD_SEQUENCE) {
        run_sequences(&c, jobs, ws->head, S);
    } else {
        c.scratch = ws->head + (size_t)Lmax * (Nt + D);
        run_tokens(&c, jobs, ws->head, ws->head + (size_t)Lmax * Nt);
    }
    for (int j = 0; j < n; j++) {
        if (!wants(&jobs[j]))
            continue;
        const enc_batch *in = jobs[j].in;
        const enc_result *res = jobs[j].res;
        const size_t count = res->head == ENC_HEAD_OUT_ROWS
                                 ? (size_t)res->n_head_rows * C
                                 : enc_head_floats(m, res->head, in->B, in->L);
        const size_t k = enc_floats_nonfinite(jobs[j].res->logits, count);
        if (k < count) {
            jobs[j].rc = enc_error_set(&jobs[j].err, ENC_ENUMERIC,
                                       "the head's output is not finite (at %zu of %zu)", k, count);
            failed++;
        }
    }
    return failed;
}
