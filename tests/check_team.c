/* check_team.c - the fork-join team (core/model/team.h): every thread takes its
 * share of every run, also after team_rest has put the helpers to sleep,
 * the caller takes the shares of helpers that have not started,
 * team_split covers the rows exactly once, and team_deal deals every item
 * exactly once, in guided takes, more of them to a thread that is faster. */
#include "model/team.h"
#include "suites.h"
#include "timing.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

typedef struct tally {
    atomic_int runs[8];
    atomic_int bad_n; /* calls that saw a team size other than the team's */
    int want_n;
} tally;

static void count(void *arg, int tid, int n)
{
    tally *t = arg;
    atomic_fetch_add(&t->runs[tid], 1);
    if (n != t->want_n)
        atomic_fetch_add(&t->bad_n, 1);
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

START_TEST(test_every_thread_runs)
{
    for (int n = 1; n <= 4; n++) {
        team *t = team_new(n);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(team_size(t), n);
        tally c = {.want_n = n};
        for (int r = 0; r < 500; r++)
            team_run(t, count, &c);
        for (int tid = 0; tid < n; tid++)
            ck_assert_int_eq(atomic_load(&c.runs[tid]), 500);
        ck_assert_int_eq(atomic_load(&c.bad_n), 0);
        team_free(t);
    }
}
END_TEST

typedef struct wakes {
    atomic_int runs[3];
    int round;          /* the run under way, from 1 */
    atomic_int missing; /* runs whose helpers did not come within 10 s */
} wakes;

/* The caller's share waits until every helper has run its own, so none is
 * taken over: the helpers themselves must have woken. */
static void helpers_come(void *arg, int tid, int n)
{
    wakes *k = arg;
    atomic_fetch_add(&k->runs[tid], 1);
    if (tid > 0)
        return;
    for (int w = 0; w < 20000; w++) {
        bool all = true;
        for (int h = 1; h < n; h++)
            all = all && atomic_load(&k->runs[h]) >= k->round;
        if (all)
            return;
        pause_us(500);
    }
    atomic_fetch_add(&k->missing, 1);
}

/* A rest between runs (the end of a forward) loses no wake-up: the helpers
 * go to sleep, and the next run wakes every one of them. */
START_TEST(test_rest_then_run)
{
    enum { n = 3 };
    team *t = team_new(n);
    ck_assert_ptr_nonnull(t);
    wakes k = {0};
    for (int r = 0; r < 300; r++) {
        k.round = r + 1;
        team_run(t, helpers_come, &k);
        if (r % 2) {
            team_rest(t);
            if (r % 10 == 1) { /* let them fall asleep: observed, not timed */
                int asleep = team_sleepers(t);
                for (int w = 0; w < 2000 && asleep < n - 1; w++) {
                    pause_us(500);
                    asleep = team_sleepers(t);
                }
                ck_assert_int_eq(asleep, n - 1);
            }
        }
    }
    for (int tid = 0; tid < n; tid++)
        ck_assert_int_eq(atomic_load(&k.runs[tid]), 300);
    ck_assert_int_eq(atomic_load(&k.missing), 0);
    team_free(t);
}
END_TEST

typedef struct takers {
    pthread_t caller;
    atomic_int stolen; /* helpers' shares the caller ran */
    atomic_int runs[3];
} takers;

static void note_taker(void *arg, int tid, int n)
{
    (void)n;
    takers *k = arg;
    atomic_fetch_add(&k->runs[tid], 1);
    if (tid > 0 && pthread_equal(pthread_self(), k->caller))
        atomic_fetch_add(&k->stolen, 1);
}

/* A helper's share that the helper has not started when the caller is done
 * with its own runs on the caller (a helper asleep, or without a CPU), and
 * still exactly once: with the helpers put to sleep before each run, the
 * caller, whose share is a few instructions, takes theirs. */
START_TEST(test_caller_takes_late_shares)
{
    const int n = 3;
    team *t = team_new(n);
    ck_assert_ptr_nonnull(t);
    takers k = {.caller = pthread_self()};
    for (int r = 0; r < 50; r++) {
        team_rest(t);
        for (int w = 0; w < 2000 && team_sleepers(t) < n - 1; w++)
            pause_us(500);
        team_run(t, note_taker, &k);
    }
    for (int tid = 0; tid < n; tid++)
        ck_assert_int_eq(atomic_load(&k.runs[tid]), 50);
    ck_assert_msg(atomic_load(&k.stolen) > 0, "the caller never took a sleeping helper's share");
    team_free(t);
}
END_TEST

START_TEST(test_split_covers_rows)
{
    for (int rows = 0; rows < 40; rows++)
        for (int nth = 1; nth <= 5; nth++) {
            int next = 0;
            for (int tid = 0; tid < nth; tid++) {
                int lo, hi;
                team_split(rows, tid, nth, &lo, &hi);
                ck_assert_int_eq(lo, next); /* in order, no gap, no overlap */
                ck_assert_int_ge(hi, lo);
                next = hi;
            }
            ck_assert_int_eq(next, rows);
        }
}
END_TEST

/* A deal run by a team: every take recorded, each item counted. */
typedef struct dealing {
    team_deal d;
    atomic_int taken[1000]; /* times each item was dealt */
    atomic_int per_tid[8];  /* items each tid took */
    atomic_int bad_take;    /* takes that were empty or not as guided */
    int slow_tid;           /* this tid sleeps 5 ms an item; -1: none */
} dealing;

static void take_all(void *arg, int tid, int n)
{
    dealing *g = arg;
    int lo, hi;
    while (team_deal_take(&g->d, &lo, &hi)) {
        /* guided: a 2n-th of what was left when taken, at least 1 */
        const int want = (g->d.n - lo) / (2 * n) > 1 ? (g->d.n - lo) / (2 * n) : 1;
        if (hi - lo != want || hi > g->d.n)
            atomic_fetch_add(&g->bad_take, 1);
        for (int i = lo; i < hi && i < g->d.n; i++)
            atomic_fetch_add(&g->taken[i], 1);
        atomic_fetch_add(&g->per_tid[tid], hi - lo);
        if (tid == g->slow_tid)
            pause_us(5000L * (hi - lo));
    }
}

START_TEST(test_deal_each_once)
{
    static dealing g; /* 4 KiB of counters: not on the stack */
    const int sizes[] = {0, 1, 7, 96, 1000};
    for (int nth = 1; nth <= 4; nth++) {
        team *t = team_new(nth);
        ck_assert_ptr_nonnull(t);
        for (int s = 0; s < 5; s++)
            for (int r = 0; r < 20; r++) {
                memset(&g, 0, sizeof g);
                g.slow_tid = -1;
                team_deal_init(&g.d, sizes[s], nth);
                team_run(t, take_all, &g);
                const int bad = atomic_load(&g.bad_take);
                ck_assert_msg(bad == 0, "n %d, %d threads: %d takes not as guided", sizes[s], nth,
                              bad);
                for (int i = 0; i < sizes[s]; i++)
                    ck_assert_msg(atomic_load(&g.taken[i]) == 1,
                                  "n %d, %d threads: item %d dealt %d times", sizes[s], nth, i,
                                  atomic_load(&g.taken[i]));
                int lo, hi; /* nothing left once dealt */
                ck_assert(!team_deal_take(&g.d, &lo, &hi));
            }
        team_free(t);
    }
    /* the guided takes of 96 items for 2 threads, as a worked example:
     * a quarter of what is left each time, at least one */
    team_deal d;
    team_deal_init(&d, 96, 2);
    const int want[] = {24, 18, 13, 10, 7, 6, 4, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
    int lo, hi, next = 0;
    for (int i = 0; i < (int)(sizeof want / sizeof *want); i++) {
        ck_assert(team_deal_take(&d, &lo, &hi));
        ck_assert_int_eq(lo, next);
        ck_assert_int_eq(hi - lo, want[i]);
        next = hi;
    }
    ck_assert_int_eq(next, 96);
    ck_assert(!team_deal_take(&d, &lo, &hi));
}
END_TEST

/* A thread that is slower takes fewer items: with one helper sleeping 5 ms
 * an item, the caller takes most of 64 (team_split would give each 32). */
START_TEST(test_deal_evens_out)
{
    static dealing g;
    team *t = team_new(2);
    ck_assert_ptr_nonnull(t);
    memset(&g, 0, sizeof g);
    g.slow_tid = 1;
    team_deal_init(&g.d, 64, 2);
    team_run(t, take_all, &g);
    ck_assert_int_eq(atomic_load(&g.per_tid[0]) + atomic_load(&g.per_tid[1]), 64);
    ck_assert_msg(atomic_load(&g.per_tid[1]) <= 24, "the slow thread took %d of 64",
                  atomic_load(&g.per_tid[1]));
    team_free(t);
}
END_TEST

Suite *team_suite(void)
{
    Suite *s = timed_suite("team");
    TCase *tc = timed_case(s, "runs", 60);
    tcase_add_test(tc, test_every_thread_runs);
    tcase_add_test(tc, test_rest_then_run);
    tcase_add_test(tc, test_caller_takes_late_shares);
    tcase_add_test(tc, test_split_covers_rows);
    tcase_add_test(tc, test_deal_each_once);
    tcase_add_test(tc, test_deal_evens_out);
    return s;
}
