/* bench_util.h - what the benchmark programs share: a monotonic clock, a
 * seeded normal generator for inputs, and order statistics of timings.
 *
 *     bench_rng r = bench_rng_new(42);
 *     bench_fill_normal(&r, x, n);              // x[i] ~ N(0, 1), same on every run
 *     double t0 = bench_now_ms();  ...  ms[i] = bench_now_ms() - t0;
 *     bench_sort(ms, n);
 *     double p50 = bench_percentile(ms, n, 50), best = ms[0];
 */
#ifndef ATTND_BENCH_UTIL_H
#define ATTND_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin). */
double bench_now_ms(void);

/* A small deterministic generator (splitmix64). */
typedef struct bench_rng {
    uint64_t state;
} bench_rng;

bench_rng bench_rng_new(uint64_t seed);

/* Fills x (n) with standard normal floats (Box-Muller). */
void bench_fill_normal(bench_rng *r, float *x, size_t n);

/* Sorts v (n) ascending. */
void bench_sort(double *v, size_t n);

/* The p-th percentile (0..100) of a sorted v (n >= 1), nearest rank: the
 * smallest sample with at least p% of the samples at or below it. */
double bench_percentile(const double *sorted, size_t n, double p);

/* Flag flag's value s (NULL: missing) as an integer min..2^24; otherwise
 * prints "prog: flag 's' must be an integer >= min" and exits 2. */
int bench_parse_int(const char *prog, const char *flag, const char *s, long min);

#endif
