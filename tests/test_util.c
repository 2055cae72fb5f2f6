/* test_util.c - helpers for the Check suites. */
#include "test_util.h"

#include "kernels/blockmask.h"

#include <stdarg.h>
#include <stdio.h>

#include <check.h>
#include <math.h>
#include <stdlib.h>

double max_abs_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            return INFINITY;
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst)
            worst = d;
    }
    return worst;
}

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

void fill_random(float *x, size_t n, uint64_t *state, float scale)
{
    for (size_t i = 0; i < n; i++) {
        double acc = 0;
        for (int k = 0; k < 4; k++)
            acc += uniform01(state) - 0.5;
        x[i] = (float)(acc * 1.7320508 * scale); /* unit variance */
    }
}

int rand_int(uint64_t *state, int lo, int hi)
{
    return lo + (int)(next_u64(state) % (uint64_t)(hi - lo + 1));
}

enc_batch batch_plain(const float *x, int B, int L, const int *lengths)
{
    enc_batch in = {.x = x, .B = B, .L = L, .lengths = lengths};
    in.mask.window_left = ENC_WINDOW_NONE;
    in.mask.window_right = ENC_WINDOW_NONE;
    return in;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    EXPECT(p != NULL, "out of memory: %zu x %zu bytes", n, size);
    return p;
}

uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

int chk_fail(chk *k, const char *fmt, ...)
{
    if (k->failed)
        return -1;
    k->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->msg, sizeof k->msg, fmt, ap);
    va_end(ap);
    return -1;
}

uint64_t band_tile_scores(int len, int w, bool causal)
{
    if (w >= len - 1 && !causal)
        return (uint64_t)len * (uint64_t)len;
    uint64_t n = 0;
    for (int q0 = 0; q0 < len; q0 += BM_TILE_Q) {
        const int q1 = q0 + BM_TILE_Q < len ? q0 + BM_TILE_Q : len;
        for (int k0 = 0; k0 < len; k0 += BM_TILE_K) {
            const int k1 = k0 + BM_TILE_K < len ? k0 + BM_TILE_K : len;
            bool any = false; /* some pair (i, j) with |i - j| <= w (and j <= i) */
            for (int i = q0; i < q1 && !any; i++)
                for (int j = k0; j < k1 && !any; j++)
                    any = abs(i - j) <= w && (!causal || j <= i);
            if (any)
                n += (uint64_t)(q1 - q0) * (uint64_t)(k1 - k0);
        }
    }
    const uint64_t all = (uint64_t)len * (uint64_t)len;
    return n < all ? n : all;
}
