/* pool.c - the bounded compute pool (see pool.h). */
#include "runtime/pool.h"

#include <pthread.h>
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
    int stopping;
    int n_workers;
    pthread_t *threads;
    struct worker_arg *args;    /* (workers) what each worker thread is given */
};

typedef struct worker_arg {
    pool *p;
    enc_workspace *ws; /* the worker's, made by pool_new */
} worker_arg;

double pool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Takes the next batch off the queue into jobs (under p->lock): the first
 * job, then those behind it while they fit in batch_tokens.  Returns how many. */
static int take_batch(pool *p, pool_job **jobs, long *tokens)
{
    int n = 0;
    *tokens = 0;
    while (p->head && n < MAX_BATCH_JOBS &&
           (n == 0 || *tokens + p->head->tokens <= p->opt.batch_tokens)) {
        pool_job *job = p->head;
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        p->depth--;
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

static void *worker_main(void *arg)
{
    const worker_arg *wa = arg;
    pool *p = wa->p;
    enc_workspace *ws = wa->ws;
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
            long queued = 0;
            for (pool_job *j = p->head; j; j = j->next)
                queued += j->tokens;
            while (queued < p->opt.batch_tokens && p->depth < MAX_BATCH_JOBS && !p->stopping) {
                if (pthread_cond_timedwait(&p->more, &p->lock, &until) != 0)
                    break;
                queued = 0;
                for (pool_job *j = p->head; j; j = j->next)
                    queued += j->tokens;
            }
        }
        long tokens = 0;
        const int n = take_batch(p, batch, &tokens);
        pthread_mutex_unlock(&p->lock);

        const double start = pool_now();
        int sequences = 0;
        for (int k = 0; k < n; k++) {
            batch[k]->queue_ms = (start - batch[k]->submitted) * 1e3;
            ej[k] = (enc_job){.in = batch[k]->batch, .res = &batch[k]->result};
            sequences += batch[k]->batch->B;
        }
        enc_forward_many(p->model, ws, ej, n);
        const double compute_s = pool_now() - start;
        if (p->opt.on_forward)
            p->opt.on_forward(p->opt.on_forward_arg, sequences, tokens, n, compute_s);
        for (int k = 0; k < n; k++) {
            batch[k]->rc = ej[k].rc;
            batch[k]->err = ej[k].err;
            batch[k]->compute_ms = compute_s * 1e3;
            batch[k]->done(batch[k], batch[k]->arg);
        }
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
    p->args = calloc((size_t)workers, sizeof *p->args);
    if (!p->threads || !p->args) {
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the compute pool");
        pool_free(p);
        return NULL;
    }
    /* The workspaces (their threads, buffers and BLAS buffers) are made
     * here, before the daemon says it is ready: made later by the workers,
     * a limit on memory set once the daemon is up could find them
     * half-made. */
    for (int i = 0; i < workers; i++) {
        p->args[i].p = p;
        if (!(p->args[i].ws = enc_workspace_new(m))) {
            enc_error_set(err, ENC_ENOMEM, "out of memory for compute worker %d's workspace", i);
            pool_free(p);
            return NULL;
        }
    }
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) != 0) {
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
        job->submitted = pool_now();
        job->tokens = 0;
        for (int b = 0; b < job->batch->B; b++)
            job->tokens += job->batch->lengths ? job->batch->lengths[b] : job->batch->L;
        job->rc = 0;
        enc_error_clear(&job->err);
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
    for (int i = 0; p->args && i < p->opt.workers; i++)
        enc_workspace_free(p->args[i].ws);
    free(p->args);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->more);
    free(p);
}
