/* team.c - the fork-join team (see team.h). */
#include "model/team.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Spins before sleeping: about 50-100 us, longer than the gap between two
 * phases of a forward, far shorter than the gap between requests. */
#define SPIN_LIMIT 20000

/* What helper tid starts with: its team, and its share's number. */
typedef struct helper_arg {
    team *t;
    int tid;
} helper_arg;

struct team {
    int n;
    pthread_t *threads; /* (n - 1) helpers */
    helper_arg *args;   /* (n - 1) theirs, kept here: see helper_main */
    team_fn fn;
    void *arg;
    atomic_uint generation; /* bumped for each run */
    atomic_int pending;     /* helpers still working on this run */
    atomic_int stopping;
    atomic_int resting;   /* no run follows soon: helpers sleep without spinning */
    atomic_uint *claimed; /* (n) the last run whose share tid someone has taken */
    pthread_mutex_t lock; /* for sleeping helpers */
    pthread_cond_t wake;
    int sleepers; /* helpers waiting on wake (under lock) */
};

/* Runs share tid of run gen unless someone has taken it already: the
 * helper whose share it is, or the caller, when it is done with its own
 * before the helper has started (a helper the scheduler has not given a
 * CPU: more threads than free cores).  A run's fn and arg stay put until
 * every share taken is done. */
static void run_share(team *t, int tid, unsigned gen)
{
    unsigned before = gen - 1;
    if (!atomic_compare_exchange_strong(&t->claimed[tid], &before, gen))
        return;
    t->fn(t->arg, tid, t->n);
    atomic_fetch_sub_explicit(&t->pending, 1, memory_order_release);
}

/* A helper allocates nothing when it starts: a thread's first malloc or
 * free maps its own heap (a 64 MiB arena), and a helper the scheduler
 * starts late would map it after team_new has returned, into an address
 * space limited in between (test_pool_ready_before_limit failed so, its
 * worker's forward out of memory, when the limit counted the arenas of
 * two late helpers as room). */
static void *helper_main(void *p)
{
    const helper_arg ha = *(const helper_arg *)p;
    team *t = ha.t;
    unsigned seen = 0;
    for (;;) {
        /* Wait for a new generation: spin, then sleep. */
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&t->generation, memory_order_acquire)) == seen &&
               !atomic_load(&t->stopping)) {
            if (++spins < SPIN_LIMIT && !atomic_load_explicit(&t->resting, memory_order_relaxed)) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&t->lock);
            t->sleepers++;
            while (atomic_load(&t->generation) == seen && !atomic_load(&t->stopping))
                pthread_cond_wait(&t->wake, &t->lock);
            t->sleepers--;
            pthread_mutex_unlock(&t->lock);
            spins = 0;
        }
        if (atomic_load(&t->stopping))
            break;
        seen = gen;
        run_share(t, ha.tid, gen);
    }
    return NULL;
}

team *team_new(int n)
{
    team *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->n = n < 1 ? 1 : n;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    if (t->n > 1) {
        t->threads = calloc((size_t)t->n - 1, sizeof *t->threads);
        t->args = calloc((size_t)t->n - 1, sizeof *t->args);
        t->claimed = calloc((size_t)t->n, sizeof *t->claimed);
        if (!t->threads || !t->args || !t->claimed)
            goto fail;
        for (int i = 1; i < t->n; i++) {
            t->args[i - 1] = (helper_arg){t, i};
            if (pthread_create(&t->threads[i - 1], NULL, helper_main, &t->args[i - 1]) != 0)
                goto fail;
        }
    }
    return t;
fail:
    /* Only the helpers started so far are joined: mark the rest absent. */
    team_free(t);
    return NULL;
}

void team_run(team *t, team_fn fn, void *arg)
{
    if (t->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    t->fn = fn;
    t->arg = arg;
    atomic_store(&t->resting, 0);
    atomic_store(&t->pending, t->n - 1);
    const unsigned gen = atomic_fetch_add_explicit(&t->generation, 1, memory_order_release) + 1;
    pthread_mutex_lock(&t->lock);
    if (t->sleepers)
        pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    fn(arg, 0, t->n);
    /* The shares no helper has started yet are the caller's. */
    for (int tid = 1; tid < t->n; tid++)
        run_share(t, tid, gen);
    /* Spin while the helpers finish their shares, then yield the CPU, so
     * that a helper waiting for one (more threads than free cores, or
     * valgrind, which runs one thread at a time) gets it sooner. */
    for (int spins = 0; atomic_load_explicit(&t->pending, memory_order_acquire) > 0;)
        if (++spins < SPIN_LIMIT)
            cpu_relax();
        else
            sched_yield();
}

void team_rest(team *t)
{
    if (t)
        atomic_store(&t->resting, 1);
}

int team_sleepers(team *t)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    const int n = t->sleepers;
    pthread_mutex_unlock(&t->lock);
    return n;
}

int team_size(const team *t)
{
    return t ? t->n : 1;
}

void team_free(team *t)
{
    if (!t)
        return;
    atomic_store(&t->stopping, 1);
    pthread_mutex_lock(&t->lock);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; t->threads && i < t->n - 1; i++)
        if (t->threads[i])
            pthread_join(t->threads[i], NULL);
    free(t->threads);
    free(t->args);
    free(t->claimed);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    free(t);
}

void team_split(int n, int tid, int nth, int *lo, int *hi)
{
    *lo = (int)((long long)n * tid / nth);
    *hi = (int)((long long)n * (tid + 1) / nth);
}

void team_deal_init(team_deal *d, int n, int nth)
{
    atomic_init(&d->next, 0);
    d->n = n;
    d->nth = nth < 1 ? 1 : nth;
}

bool team_deal_take(team_deal *d, int *lo, int *hi)
{
    int at = atomic_load_explicit(&d->next, memory_order_relaxed), size;
    do {
        if (at >= d->n)
            return false;
        size = (d->n - at) / (2 * d->nth);
        size = size < 1 ? 1 : size;
    } while (!atomic_compare_exchange_weak_explicit(&d->next, &at, at + size, memory_order_relaxed,
                                                    memory_order_relaxed));
    *lo = at;
    *hi = at + size;
    return true;
}
