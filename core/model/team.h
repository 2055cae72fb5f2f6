/* team.h - a small fork-join team: n threads (the caller and n-1 helpers) run
 * one function together and meet again.  One team per workspace, so a
 * forward uses its threads without sharing them with any other forward.
 *
 * The helpers spin briefly between phases (a forward runs a few phases per
 * layer, microseconds apart) and then sleep, so an idle daemon costs no CPU.
 *
 *     static void work(void *arg, int tid, int n) { ... rows tid*M/n .. (tid+1)*M/n ... }
 *     team *t = team_new(2);
 *     team_run(t, work, &args);   // returns when every thread has finished
 *     team_free(t);
 */
#ifndef ATTND_TEAM_H
#define ATTND_TEAM_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct team team;

typedef void (*team_fn)(void *arg, int tid, int n);

/* A team of n threads (n >= 1; n = 1 runs everything on the caller).
 * Returns an owned team, or NULL when threads cannot be started. */
team *team_new(int n);

/* Runs fn(arg, tid, n) for every tid in 0..n-1, and waits for all: tid 0 on
 * the caller, tid k on helper k, or on the caller too when helper k has not
 * begun it by the time the caller is done with its own (a helper without a
 * CPU does not hold the run up).  Each tid runs exactly once, never two at
 * once, so a share may use tid's scratch.  Not reentrant: one run at a time
 * per team. */
void team_run(team *t, team_fn fn, void *arg);

/* No run follows soon (a forward has ended): the helpers go to sleep at
 * once instead of spinning for the next phase, which would keep a CPU from
 * the threads that send the result.  The next team_run wakes them. */
void team_rest(team *t);

/* Helpers asleep right now (for tests). */
int team_sleepers(team *t);

int team_size(const team *t);

/* Stops and frees the helpers; NULL is a no-op. */
void team_free(team *t);

/* The rows [*lo, *hi) of n rows that thread tid of nth takes. */
void team_split(int n, int tid, int nth, int *lo, int *hi);

/* n items dealt to nth threads as each comes for more (team_deal_take),
 * where team_split's fixed shares make a run wait for its slowest thread
 * (a core that runs slower, or one the scheduler lends elsewhere for a
 * while).  Guided: each take is a 2nth-th of what is left, at least one
 * item, so the first takes are large and the last ones even the threads
 * out.  For work whose result does not depend on the thread that takes
 * an item.
 *
 *     team_deal d;                      // in the run's arg, set by the caller
 *     team_deal_init(&d, panels, team_size(t));
 *     ... in fn: while (team_deal_take(&d, &lo, &hi)) work(lo, hi);
 */
typedef struct {
    atomic_int next; /* the first item not yet taken */
    int n, nth;
} team_deal;

void team_deal_init(team_deal *d, int n, int nth);

/* The next items [*lo, *hi), or false when every item is taken. */
bool team_deal_take(team_deal *d, int *lo, int *hi);

#endif
