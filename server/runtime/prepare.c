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

/* The workers' nice value: a long text's tokenization leaves the CPU to
 * the forwards and the HTTP threads (nice 0) when they wake, and is slowed,
 * not starved, on a host whose CPUs are full: it gets about a tenth of a
 * core beside each busy thread (at nice 19, a fiftieth: beside two busy
 * processes on 2 CPUs a 1 MB text then took over 40 s).  With fewer cores
 * than threads, a forward still loses time to a tokenizer: small requests'
 * p99 beside 1 MB texts was 2.3-2.4x theirs alone at nice 10 on 2 CPUs,
 * 1.3-1.9x at nice 19 (docs/performance.md, bigtext).  At SCHED_IDLE
 * (prepare_new's idle) 0.7-1.6x: a tokenizer gives a CPU up at once to any
 * other thread, but then also to any busy process beside attnd, for as long
 * as it is busy. */
#define PREPARE_NICE 10

struct prepare {
    bool idle; /* prepare_new's */
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
    /* Linux's policies and nice are per thread; failing, the worker runs at
     * nice PREPARE_NICE, or the default. */
    const struct sched_param none = {0};
    if (!p->idle || pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) != 0)
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

prepare *prepare_new(int workers, bool idle)
{
    if (workers < 1 || workers > 64)
        return NULL;
    prepare *p = calloc(1, sizeof *p + (size_t)workers * sizeof(pthread_t));
    if (!p)
        return NULL;
    p->idle = idle;
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
