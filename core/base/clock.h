/* clock.h - the clocks attnd reads: CLOCK_MONOTONIC in seconds, for
 * durations and deadlines, and any clock in nanoseconds (a thread's CPU
 * time too).  clock_gettime only, so both may run in a signal handler.
 *
 *     const double t0 = clock_now();
 *     ... ms = (clock_now() - t0) * 1e3;
 *     long long cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
 */
#ifndef ATTND_BASE_CLOCK_H
#define ATTND_BASE_CLOCK_H

#include <time.h>

/* clock's time in nanoseconds. */
static inline long long clock_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double clock_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
