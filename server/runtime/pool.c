/* pool.c - the bounded compute pool (see pool.h). */
#include "runtime/pool.h"

#include "base/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

/* Jobs one forward takes at most, whatever their tokens. */
#define MAX_BATCH_JOBS 256

struct pool {
    const enc_model *model;
    pool_options opt;
    pthread_mutex_t lock;
    pthread_cond_t wake;        /* a job arrived, or stopping */
    pthread_cond_t more;        /* a job arrived: for a worker gathering a batch */
    pool_job *head, *tail;      /* the queue */
    int depth, capacity;
    atomic_int shorts; /* queued jobs of at most opt.short_tokens tokens */
    int stopping;
    int n_workers;
    pthread_t *threads;
    struct worker *workers;
};

/* A worker thread's: its workspace, the one beside it that short jobs run
 * on between the phases of a long batch, and that batch's arrays. */
typedef struct worker {
    pool *p;
    enc_workspace *ws;       /* made by pool_new */
    enc_workspace *ahead_ws; /* on ws's threads; NULL when opt.short_tokens is 0 */
    bool long_batch;         /* the batch under way on ws may be paused for short jobs */
    pool_job *ahead[MAX_BATCH_JOBS];
    enc_job ahead_ej[MAX_BATCH_JOBS];
} worker;

static bool job_short(const pool *p, const pool_job *job)
{
    return job->tokens <= p->opt.short_tokens;
}

/* Takes job, whose predecessor in the queue is prev (NULL: the head), off
 * the queue (under p->lock). */
static void unlink_job(pool *p, pool_job *prev, pool_job *job)
{
    if (prev)
        prev->next = job->next;
    else
        p->head = job->next;
    if (p->tail == job)
        p->tail = prev;
    p->depth--;
    if (job_short(p, job))
        atomic_fetch_sub(&p->shorts, 1);
}

/* Takes a batch off the queue into jobs (under p->lock): the first job of
 * the kind asked for (short or not), then those of that kind behind it while
 * they fit in batch_tokens, the others left in their places.  Returns how
 * many. */
static int take_batch(pool *p, pool_job **jobs, long *tokens, bool shorts)
{
    int n = 0;
    *tokens = 0;
    pool_job *prev = NULL;
    for (pool_job *job = p->head, *next; job && n < MAX_BATCH_JOBS; job = next) {
        next = job->next;
        if (job_short(p, job) != shorts) {
            prev = job;
            continue;
        }
        if (n > 0 && *tokens + job->tokens > p->opt.batch_tokens)
            break;
        unlink_job(p, prev, job);
        jobs[n++] = job;
        *tokens += job->tokens;
    }
    return n;
}

/* Adds a deadline of ms milliseconds from now to ts (CLOCK_MONOTONIC). */
static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Runs the n jobs of batch (tokens real tokens) as one forward on ws and
 * hands each its results; ahead: between the phases of a longer forward. */
static void run_batch(pool *p, enc_workspace *ws, pool_job **batch, enc_job *ej, int n, long tokens,
                      bool ahead)
{
    const double start = clock_now();
    int sequences = 0;
    for (int k = 0; k < n; k++) {
        batch[k]->queue_ms = (start - batch[k]->submitted) * 1e3;
        ej[k] = (enc_job){.in = batch[k]->batch, .res = &batch[k]->result};
        sequences += batch[k]->batch->B;
    }
    enc_forward_many(p->model, ws, ej, n);
    const double compute_s = clock_now() - start;
    if (p->opt.on_forward)
        p->opt.on_forward(p->opt.on_forward_arg, &(pool_forward){.sequences = sequences,
                                                                 .tokens = tokens,
                                                                 .jobs = n,
                                                                 .compute_s = compute_s,
                                                                 .ahead = ahead});
    for (int k = 0; k < n; k++) {
        batch[k]->rc = ej[k].rc;
        batch[k]->err = ej[k].err;
        batch[k]->compute_ms = compute_s * 1e3;
        batch[k]->done(batch[k], batch[k]->arg);
    }
}

/* The pause hook of a worker's workspace (enc_workspace_on_pause), between
 * two phases of its forward: while that forward's batch is long, the short
 * jobs waiting run now, one batch of them, on the workspace beside. */
static void run_ahead(void *arg)
{
    worker *w = arg;
    pool *p = w->p;
    if (!w->long_batch || atomic_load_explicit(&p->shorts, memory_order_relaxed) == 0)
        return;
    long tokens = 0;
    pthread_mutex_lock(&p->lock);
    const int n = take_batch(p, w->ahead, &tokens, true);
    pthread_mutex_unlock(&p->lock);
    if (n > 0)
        run_batch(p, w->ahead_ws, w->ahead, w->ahead_ej, n, tokens, true);
}

/* Tokens of the queued jobs (under p->lock). */
static long queued_tokens(const pool *p)
{
    long queued = 0;
    for (const pool_job *j = p->head; j; j = j->next)
        queued += j->tokens;
    return queued;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pool *p = w->p;
    pool_job *batch[MAX_BATCH_JOBS];
    enc_job ej[MAX_BATCH_JOBS]; /* about 70 KB of the thread's stack */
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        if (!p->head) { /* stopping, and the queue is drained */
            pthread_mutex_unlock(&p->lock);
            break;
        }
        /* With a delay, let more jobs join while the batch has room. */
        if (p->opt.batch_delay_ms > 0 && !p->stopping) {
            struct timespec until;
            deadline_in(&until, p->opt.batch_delay_ms);
            while (queued_tokens(p) < p->opt.batch_tokens && p->depth < MAX_BATCH_JOBS &&
                   !p->stopping)
                if (pthread_cond_timedwait(&p->more, &p->lock, &until) != 0)
                    break;
        }
        /* The oldest job and others of its kind, so that none waits for
         * ever; short ones never join a long batch: they run at its
         * pauses. */
        const bool shorts = job_short(p, p->head);
        long tokens = 0;
        const int n = take_batch(p, batch, &tokens, shorts);
        w->long_batch = w->ahead_ws && !shorts;
        pthread_mutex_unlock(&p->lock);
        run_batch(p, w->ws, batch, ej, n, tokens, false);
    }
    return NULL;
}

int pool_check(const enc_model *m, int workers, enc_error *err)
{
    const int each = enc_threads(), max = enc_blas_threads_max(m);
    const long threads = (long)workers * each;
    if (threads <= max)
        return 0;
    enc_error_set(err, ENC_EINVAL,
                  "compute.workers x compute.forward_threads = %d x %d = %ld forward threads; "
                  "here forwards call OpenBLAS (the AVX-512 kernel is not in use: a CPU without "
                  "AVX-512, valgrind, or weights left unpacked), whose buffers cover at most %d: "
                  "lower either",
                  workers, each, threads, max);
    return -1;
}

pool *pool_new(const enc_model *m, const pool_options *o, enc_error *err)
{
    const int workers = o->workers;
    if (pool_check(m, workers, err) < 0)
        return NULL;
    pool *p = calloc(1, sizeof *p);
    if (!p) {
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the compute pool");
        return NULL;
    }
    p->model = m;
    p->opt = *o;
    p->capacity = o->queue_size;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->more, &ca);
    pthread_condattr_destroy(&ca);
    p->threads = calloc((size_t)workers, sizeof *p->threads);
    p->workers = calloc((size_t)workers, sizeof *p->workers);
    if (!p->threads || !p->workers) {
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the compute pool");
        pool_free(p);
        return NULL;
    }
    /* The workspaces (their threads, buffers and BLAS buffers) are made
     * here, before the daemon says it is ready: made later by the workers,
     * a limit on memory set once the daemon is up could find them
     * half-made. */
    for (int i = 0; i < workers; i++) {
        worker *w = &p->workers[i];
        w->p = p;
        if (!(w->ws = enc_workspace_new(m)) ||
            (o->short_tokens > 0 && !(w->ahead_ws = enc_workspace_new_beside(m, w->ws)))) {
            enc_error_set(err, ENC_ENOMEM, "out of memory for compute worker %d's workspace", i);
            pool_free(p);
            return NULL;
        }
        if (w->ahead_ws)
            enc_workspace_on_pause(w->ws, run_ahead, w);
    }
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, &p->workers[i]) != 0) {
            enc_error_set(err, ENC_ENOMEM, "cannot start compute worker %d", i);
            pool_free(p);
            return NULL;
        }
        p->n_workers++;
    }
    return p;
}

int pool_submit(pool *p, pool_job *job)
{
    int rc = -1;
    pthread_mutex_lock(&p->lock);
    if (!p->stopping && p->depth < p->capacity) {
        job->next = NULL;
        job->submitted = clock_now();
        job->tokens = 0;
        for (int b = 0; b < job->batch->B; b++)
            job->tokens += job->batch->lengths ? job->batch->lengths[b] : job->batch->L;
        job->rc = 0;
        enc_error_clear(&job->err);
        if (job_short(p, job))
            atomic_fetch_add(&p->shorts, 1);
        if (p->tail)
            p->tail->next = job;
        else
            p->head = job;
        p->tail = job;
        p->depth++;
        pthread_cond_signal(&p->wake);
        pthread_cond_broadcast(&p->more);
        rc = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int pool_queue_depth(pool *p)
{
    pthread_mutex_lock(&p->lock);
    int d = p->depth;
    pthread_mutex_unlock(&p->lock);
    return d;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_cond_broadcast(&p->more);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->threads[i], NULL);
    for (int i = 0; p->workers && i < p->opt.workers; i++) {
        enc_workspace_free(p->workers[i].ahead_ws); /* before the workspace it borrows from */
        enc_workspace_free(p->workers[i].ws);
    }
    free(p->workers);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->more);
    free(p);
}
