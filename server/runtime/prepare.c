/* prepare.c - the prepare workers (see prepare.h): a FIFO of jobs under one
 * lock, drained by a fixed set of threads. */
#include "runtime/prepare.h"

#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The workers' nice value: a long text's tokenization leaves the CPU to
 * the forwards and the HTTP threads (nice 0) when they wake, and is slowed,
 * not starved, on a host whose CPUs are full: it gets about a tenth of a
 * core beside each busy thread (at nice 19, a fiftieth: beside two busy
 * processes on 2 CPUs a 1 MB text then took over 40 s).  At SCHED_IDLE
 * (prepare_new's idle) a tokenizer gives a CPU up at once to any other
 * thread, but then also to any busy process beside attnd, for as long as
 * it is busy. */
#define PREPARE_NICE 10

/* With fewer cores than threads a woken thread can wait for a tick (4 ms
 * at HZ 250) behind a tokenizer at nice 10 before the scheduler takes the
 * CPU back.  So a worker at nice 10 gives its CPU up every
 * PREPARE_YIELD_US of a job (sched_yield, from a timer's signal): a woken
 * HTTP or forward thread waits that long at most (docs/performance.md,
 * bigtext), and with no thread waiting the yield returns at once.  Each
 * yield moves the worker behind every thread waiting, busy processes
 * beside attnd too: a worker that had under PREPARE_STARVED of a CPU over
 * a window of PREPARE_WINDOW_NS gives nothing up in the next PREPARE_HOLD
 * windows, so it keeps most of its share at nice 10. */
#define PREPARE_YIELD_US  100
#define PREPARE_WINDOW_NS 20000000LL
#define PREPARE_STARVED   0.05
#define PREPARE_HOLD      4
#define PREPARE_SIGNAL    (SIGRTMIN + 1)

struct prepare {
    bool idle;          /* prepare_new's */
    atomic_long yields; /* prepare_yields */
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* a job arrived, or stopping */
    prepare_job *head, *tail; /* the queue */
    bool stopping;
    int n_threads; /* started, joined by prepare_stop */
    pthread_t threads[];
};

bool prepare_starved(long long cpu_ns, long long wall_ns)
{
    return (double)cpu_ns < PREPARE_STARVED * (double)wall_ns;
}

/* A worker's own state for its timer's signal (yield_tick). */
typedef struct {
    prepare *p;                        /* NULL: no job running, nothing to give up */
    long long window_wall, window_cpu; /* where the window began */
    int hold;                          /* windows left that give nothing up */
} yield_state;

static _Thread_local yield_state ys;

/* The timer's signal, on the worker running a job: sched_yield unless the
 * worker was starved in one of the last PREPARE_HOLD windows.  Atomics and
 * clock_gettime only: async-signal-safe. */
static void yield_tick(int sig)
{
    (void)sig;
    const int saved = errno;
    prepare *p = ys.p;
    if (p) {
        const long long wall = clock_ns(CLOCK_MONOTONIC);
        if (wall - ys.window_wall >= PREPARE_WINDOW_NS) {
            const long long cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            if (prepare_starved(cpu - ys.window_cpu, wall - ys.window_wall))
                ys.hold = PREPARE_HOLD;
            else if (ys.hold > 0)
                ys.hold--;
            ys.window_wall = wall;
            ys.window_cpu = cpu;
        }
        if (ys.hold == 0) {
            atomic_fetch_add_explicit(&p->yields, 1, memory_order_relaxed);
            sched_yield();
        }
    }
    errno = saved;
}

/* This worker's timer, PREPARE_SIGNAL to this thread; false when none can
 * be made (the worker then never gives way). */
static bool yield_timer(timer_t *timer)
{
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = PREPARE_SIGNAL};
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    return timer_create(CLOCK_MONOTONIC, &ev, timer) == 0;
}

/* Arms (on) or stops the timer around a job. */
static void yield_arm(prepare *p, timer_t timer, bool on)
{
    const long ns = on ? PREPARE_YIELD_US * 1000L : 0;
    const struct itimerspec t = {{0, ns}, {0, ns}};
    if (on) {
        ys.window_wall = clock_ns(CLOCK_MONOTONIC);
        ys.window_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        ys.hold = 0;
    }
    atomic_signal_fence(memory_order_seq_cst);
    ys.p = on ? p : NULL;
    atomic_signal_fence(memory_order_seq_cst);
    timer_settime(timer, 0, &t, NULL);
}

static void *worker_main(void *arg)
{
    prepare *p = arg;
    /* Linux's policies and nice are per thread; failing, the worker runs at
     * nice PREPARE_NICE, or the default. */
    const struct sched_param none = {0};
    const bool idle = p->idle && pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) == 0;
    if (!idle)
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PREPARE_NICE);
    timer_t timer;
    const bool yields = !idle && yield_timer(&timer);
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
        if (yields)
            yield_arm(p, timer, true);
        job->run(job, job->arg); /* job may be gone once run returns */
        if (yields)
            yield_arm(p, timer, false);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    if (yields)
        timer_delete(timer);
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
    /* the handler is the process's; only the workers' timers raise it */
    struct sigaction sa = {.sa_handler = yield_tick, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(PREPARE_SIGNAL, &sa, NULL);
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

long prepare_yields(prepare *p)
{
    return p ? atomic_load(&p->yields) : 0;
}
