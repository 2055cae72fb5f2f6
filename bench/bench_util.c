/* bench_util.c - clock, input generator and order statistics for the
 * benchmark programs (see bench_util.h). */
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bench_rng bench_rng_new(uint64_t seed)
{
    return (bench_rng){.state = seed};
}

static uint64_t rng_next(bench_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A uniform double in (0, 1]: never 0, so log() below is finite. */
static double rng_unit(bench_rng *r)
{
    return ((double)(rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

void bench_fill_normal(bench_rng *r, float *x, size_t n)
{
    const double two_pi = 6.283185307179586;
    for (size_t i = 0; i < n; i += 2) {
        double rad = sqrt(-2.0 * log(rng_unit(r))), ang = two_pi * rng_unit(r);
        x[i] = (float)(rad * cos(ang));
        if (i + 1 < n)
            x[i + 1] = (float)(rad * sin(ang));
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
}

double bench_percentile(const double *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n); /* 1-based */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

int bench_parse_int(const char *prog, const char *flag, const char *s, long min)
{
    char *end;
    const long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *s == '\0' || *end != '\0' || v < min || v > (1L << 24)) {
        fprintf(stderr, "%s: %s '%s' must be an integer >= %ld\n", prog, flag, s ? s : "",
                min);
        exit(2);
    }
    return (int)v;
}
