/* test_util.h - small helpers shared by the Check suites. */
#ifndef ATTND_TEST_UTIL_H
#define ATTND_TEST_UTIL_H

#include "encoder.h"

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef TESTS_DIR
#error "TESTS_DIR must name the tests/ directory (the Makefile defines it)"
#endif

/* The classic fields of an enc_hparams as designated initializers, for
 * {HP_BASE(...), .position = ENC_POS_ROPE, ...}: the rest (positions, the
 * feed-forward's kind) stay zero, their defaults, unless named. */
#define HP_BASE(D, H, G, F, LAYERS, ACT, NORM_FIRST, EPS, BIAS)                                    \
    .d_model = (D), .n_heads = (H), .n_kv_heads = (G), .d_ff = (F), .n_layers = (LAYERS),          \
    .activation = (ACT), .norm_first = (NORM_FIRST), .layer_norm_eps = (EPS), .bias = (BIAS)

/* Largest |a[i] - b[i]| over n floats; infinity if either holds a NaN. */
double max_abs_diff(const float *a, const float *b, size_t n);

/* Fills n floats with a deterministic pseudo-random normal-ish sequence
 * (sum of uniforms) of the given scale from *state. */
void fill_random(float *x, size_t n, uint64_t *state, float scale);

/* Uniform integer in [lo, hi] from *state. */
int rand_int(uint64_t *state, int lo, int hi);

/* A zeroed batch with no mask (windows unbounded). */
enc_batch batch_plain(const float *x, int B, int L, const int *lengths);

/* The next of a splitmix64 sequence from *state (deterministic test data). */
uint64_t splitmix(uint64_t *state);

/* First-failure recording, for checks over many values that report the
 * first one at fault: chk_fail records it (once) and returns -1; the test
 * then asserts !k.failed with k.msg. */
typedef struct chk {
    bool failed;
    char msg[512];
} chk;
int chk_fail(chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A check inside a loop over many values: ck_assert_msg's failure, without
 * its cost on success.  Check records every passing ck_assert (a message
 * with its file and line, written by the test and read back by the runner,
 * which keeps the last); over a tensor's elements that is millions of
 * writes, and under AddressSanitizer or valgrind it cost more than the tests
 * themselves (DEVELOPERS.md, "Tests").  A failure reports the same message,
 * file and line as ck_assert_msg's. */
#define EXPECT(expr, ...)                                                                          \
    do {                                                                                           \
        if (!(expr))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

/* Checks allocation; aborts the test on NULL. */
void *xcalloc(size_t n, size_t size);

/* Scores a layer whose mask is |i - j| <= w (and j <= i when causal)
 * computes for a sequence of len tokens, from the block mask's tile rule
 * written out: a tile of BM_TILE_Q query rows x BM_TILE_K keys is scored
 * whole when it holds an allowed pair; len^2 at most (then it runs dense). */
uint64_t band_tile_scores(int len, int w, bool causal);

#endif
