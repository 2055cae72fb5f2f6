/* prepare.c - the prepare workers (see prepare.h): a FIFO of jobs under one
 * lock, drained by a fixed set of threads. */
#include "runtime/prepare.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The workers run at SCHED_IDLE: a long text's tokenization takes only CPU
 * time no other thread of the host wants, and gives a CPU up at once when a
 * forward's thread or an HTTP thread wakes.  On a host with fewer cores than
 * threads a forward's team (model/team.c) would otherwise wait at its
 * barriers for a member the scheduler gave to a tokenizer: at nice 10 small
 * requests' p99 beside 1 MB texts was 3.4-4x theirs alone on 2 CPUs, at
 * SCHED_IDLE 0.7-1.4x (docs/performance.md, bigtext).  The price: while the
 * forwards keep every CPU busy, long texts wait for a lull (SCHED_IDLE still
 * gets a sliver).  Where SCHED_IDLE is refused, nice PREPARE_NICE. */
#define PREPARE_NICE 10

struct prepare {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* a job arrived, or stopping */
    prepare_job *head, *tail; /* the queue */
    bool stopping;
    int n_threads; /* started, joined by prepare_stop */
    pthread_t threads[];
};

static void *worker_main(void *arg)
{
    prepare *p = arg;
    /* Linux's policies and nice are per thread; failing both, the worker
     * runs at the default. */
    const struct sched_param idle = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle) != 0)
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PREPARE_NICE);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        prepare_job *job = p->head;
        if (!job) /* stopping, and the queue is drained */
            break;
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        job->run(job, job->arg); /* job may be gone once run returns */
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

prepare *prepare_new(int workers)
{
    if (workers < 1 || workers > 64)
        return NULL;
    prepare *p = calloc(1, sizeof *p + (size_t)workers * sizeof(pthread_t));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
            prepare_free(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

int prepare_submit(prepare *p, prepare_job *job)
{
    if (!p)
        return -1;
    int rc = -1;
    pthread_mutex_lock(&p->lock);
    if (!p->stopping) {
        job->next = NULL;
        if (p->tail)
            p->tail->next = job;
        else
            p->head = job;
        p->tail = job;
        pthread_cond_signal(&p->wake);
        rc = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void prepare_stop(prepare *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->wake);
    const int n = p->n_threads;
    p->n_threads = 0; /* a second stop joins nothing */
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
}

void prepare_free(prepare *p)
{
    if (!p)
        return;
    prepare_stop(p);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}
