/* pool.h - the compute pool: a fixed set of workers, each with its own core
 * workspace, running forwards from a bounded queue.  HTTP threads submit a
 * job and go on serving other connections; the worker calls the job's done
 * callback from its own thread when the forward has run.
 *
 * Dynamic batching: a worker takes the first waiting job and every job
 * waiting behind it, up to batch_tokens real tokens in all, optionally
 * waiting batch_delay_ms for more to arrive, and runs them as one forward
 * (enc_forward_many); each job still gets exactly its own results.
 *
 * Short jobs (short_tokens) are never batched with long ones: a worker takes
 * the oldest job and those of its kind behind it, and a worker running a
 * batch of long jobs runs the short ones waiting between two phases of its
 * forward, on a second workspace on the same threads
 * (enc_workspace_on_pause).  A short request then waits for one phase of a
 * long forward, not all of it, and a long one still goes when it is the
 * oldest.
 *
 *     pool_options o = {.workers = 1, .queue_size = 64, .batch_tokens = 8192};
 *     pool *p = pool_new(model, &o, &err);
 *     job.batch = &req.batch; job.result = res; job.done = wake; job.arg = conn;
 *     if (pool_submit(p, &job) < 0) -> 429
 *     ... in done(): job.rc, job.err, job.queue_ms, job.compute_ms
 *     pool_free(p);   // finishes every job already queued first
 */
#ifndef ATTND_POOL_H
#define ATTND_POOL_H

#include "encoder.h"

#include <stdbool.h>

typedef struct pool pool;

typedef struct pool_job {
    const enc_batch *batch;     /* borrowed until done is called */
    enc_result result;          /* where the forward writes */
    void (*done)(struct pool_job *job, void *arg);
    void *arg;
    /* filled by the pool before done */
    int rc;                     /* enc_forward's status */
    enc_error err;
    double queue_ms;            /* submit to start */
    double compute_ms;          /* start to end */
    struct pool_job *next;      /* the pool's queue link */
    double submitted;           /* monotonic seconds */
    long tokens;                /* real tokens of the batch, counted at submit */
} pool_job;

/* One forward, as on_forward reports it. */
typedef struct pool_forward {
    int sequences;
    long tokens; /* real tokens */
    int jobs;
    double compute_s;
    bool ahead; /* short jobs run between two phases of a longer forward */
} pool_forward;

typedef struct pool_options {
    int workers;                /* forwards running at once */
    int queue_size;             /* jobs waiting at most */
    int batch_tokens;           /* tokens one forward takes at most (a bigger job runs alone) */
    int batch_delay_ms;         /* how long a forward may wait for more jobs; 0 = none */
    int short_tokens;           /* a job of at most this many tokens is short; 0 = none is */
    /* Called once per forward from the worker (may be NULL). */
    void (*on_forward)(void *arg, const pool_forward *f);
    void *on_forward_arg;
} pool_options;

/* Whether workers workspaces of enc_threads() threads each can run m's
 * forwards: 0, or -1 (err set, ENC_EINVAL) when there are more threads than
 * the BLAS buffers reserved for them cover (enc_blas_threads_max). */
int pool_check(const enc_model *m, int workers, enc_error *err);

/* Makes o->workers workspaces for m, then starts a worker thread on each:
 * when it returns, the pool can run forwards without allocating a
 * workspace.  Returns an owned pool, or NULL (err set; pool_check first). */
pool *pool_new(const enc_model *m, const pool_options *o, enc_error *err);

/* Queues a job.  Returns 0, or -1 when the queue is full or the pool is
 * stopping (done is then never called). */
int pool_submit(pool *p, pool_job *job);

/* Jobs waiting (not yet started). */
int pool_queue_depth(pool *p);

/* Runs every queued job to completion, stops the workers and frees the pool.
 * NULL is a no-op. */
void pool_free(pool *p);

#endif
