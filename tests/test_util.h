/* test_util.h - small helpers shared by the Check suites. */
#ifndef ATTND_TEST_UTIL_H
#define ATTND_TEST_UTIL_H

#include "encoder.h"

#include <stddef.h>
#include <stdint.h>

#ifndef TESTS_DIR
#error "TESTS_DIR must name the tests/ directory (the Makefile defines it)"
#endif

/* Largest |a[i] - b[i]| over n floats; infinity if either holds a NaN. */
double max_abs_diff(const float *a, const float *b, size_t n);

/* Fills n floats with a deterministic pseudo-random normal-ish sequence
 * (sum of uniforms) of the given scale from *state. */
void fill_random(float *x, size_t n, uint64_t *state, float scale);

/* Uniform integer in [lo, hi] from *state. */
int rand_int(uint64_t *state, int lo, int hi);

/* A zeroed batch with no mask (windows unbounded). */
enc_batch batch_plain(const float *x, int B, int L, const int *lengths);

/* Checks allocation; aborts the test on NULL. */
void *xcalloc(size_t n, size_t size);

#endif
