/* prepare.h - the prepare workers: a few threads that run a request's
 * CPU-heavy first step (its protocol's parse of a large body: the JSON and
 * the tokenization of its texts) off the HTTP threads, so that a 1 MB text
 * does not hold every connection its HTTP thread serves.  Jobs run in the
 * order they come; the caller keeps each job alive until its run returns.
 *
 *     prepare *p = prepare_new(1, false); // 0 workers: NULL, run in place
 *     job.run = parse_it; job.arg = req;  // run() is called on a worker
 *     if (prepare_submit(p, &job) < 0) -> stopping: run() is never called
 *     prepare_stop(p);                    // runs every queued job, joins
 *     prepare_free(p);
 */
#ifndef ATTND_PREPARE_H
#define ATTND_PREPARE_H

#include <stdbool.h>

typedef struct prepare prepare;

typedef struct prepare_job {
    void (*run)(struct prepare_job *job, void *arg); /* on a worker thread */
    void *arg;
    struct prepare_job *next; /* the queue's link */
} prepare_job;

/* Starts workers (1..64) threads at nice 10, or with idle at SCHED_IDLE.
 * At nice 10 a worker gives its CPU up to any thread waiting for it every
 * PREPARE_YIELD_US of a job, unless it was starved of CPU just before
 * (prepare.c).  Returns an owned pool, or NULL (workers < 1, or out of
 * memory / threads: fewer started are joined again). */
prepare *prepare_new(int workers, bool idle);

/* Queues job.  Returns 0, or -1 when p is NULL or stopping (run is then
 * never called). */
int prepare_submit(prepare *p, prepare_job *job);

/* Refuses further jobs, runs every job already queued, joins the workers.
 * Idempotent; NULL is a no-op. */
void prepare_stop(prepare *p);

/* prepare_stop, then frees p.  NULL is a no-op. */
void prepare_free(prepare *p);

/* Times a worker gave its CPU up (for tests). */
long prepare_yields(prepare *p);

/* Whether a worker that had cpu_ns of CPU in the wall_ns of a window was
 * starved (under PREPARE_STARVED of a CPU): it then gives nothing up in
 * the next PREPARE_HOLD windows. */
bool prepare_starved(long long cpu_ns, long long wall_ns);

#endif
