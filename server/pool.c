/* pool.c - the bounded compute pool (see pool.h). */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct pool {
    const enc_model *model;
    pthread_mutex_t lock;
    pthread_cond_t wake;        /* a job arrived, or stopping */
    pool_job *head, *tail;      /* the queue */
    int depth, capacity;
    int stopping;
    int n_workers;
    pthread_t *threads;
};

double pool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    enc_workspace *ws = enc_workspace_new(p->model);
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        pool_job *job = p->head;
        if (!job) { /* stopping, and the queue is drained */
            pthread_mutex_unlock(&p->lock);
            break;
        }
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        p->depth--;
        pthread_mutex_unlock(&p->lock);

        double start = pool_now();
        job->queue_ms = (start - job->submitted) * 1e3;
        if (ws) {
            job->rc = enc_forward(p->model, ws, job->batch, &job->result, &job->err);
        } else {
            job->rc = enc_error_set(&job->err, ENC_ENOMEM, "out of memory for a workspace");
        }
        job->compute_ms = (pool_now() - start) * 1e3;
        job->done(job, job->arg);
    }
    enc_workspace_free(ws);
    return NULL;
}

pool *pool_new(const enc_model *m, int workers, int queue_size, enc_error *err)
{
    pool *p = calloc(1, sizeof *p);
    if (!p) {
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the compute pool");
        return NULL;
    }
    p->model = m;
    p->capacity = queue_size;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->threads = calloc((size_t)workers, sizeof *p->threads);
    if (!p->threads) {
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the compute pool");
        pool_free(p);
        return NULL;
    }
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
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
        job->rc = 0;
        enc_error_clear(&job->err);
        if (p->tail)
            p->tail->next = job;
        else
            p->head = job;
        p->tail = job;
        p->depth++;
        pthread_cond_signal(&p->wake);
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
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}
