/* check_bufpool.c - server/runtime/bufpool.c: blocks come back for the next
 * request (the same memory, so no fresh pages), the smallest that fits is
 * chosen, at most keep wait idle (the larger ones), resize keeps contents,
 * and a NULL pool is plain malloc and free. */
#include "runtime/bufpool.h"
#include "suites.h"
#include "timing.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_reuse_and_fit)
{
    bufpool *bp = bufpool_new(4);
    ck_assert_ptr_nonnull(bp);
    char *a = bufpool_take(bp, 1000), *b = bufpool_take(bp, 100000);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq((uintptr_t)a % 64, 0);
    ck_assert_uint_eq((uintptr_t)b % 64, 0);
    memset(a, 1, 1000);
    memset(b, 2, 100000);
    bufpool_give(bp, a);
    bufpool_give(bp, b);
    size_t bytes;
    ck_assert_uint_eq(bufpool_idle(bp, &bytes), 2);
    ck_assert_uint_ge(bytes, 101000);
    /* The smallest that fits: 500 bytes gets a, 50000 gets b. */
    ck_assert_ptr_eq(bufpool_take(bp, 500), a);
    ck_assert_ptr_eq(bufpool_take(bp, 50000), b);
    ck_assert_uint_eq(bufpool_idle(bp, NULL), 0);
    bufpool_give(bp, a);
    bufpool_give(bp, b);
    /* None fits: a new, larger block replaces the largest idle one. */
    char *c = bufpool_take(bp, 200000);
    ck_assert_ptr_nonnull(c);
    memset(c, 3, 200000);
    ck_assert_uint_eq(bufpool_idle(bp, NULL), 1);
    bufpool_give(bp, c);
    ck_assert_ptr_eq(bufpool_take(bp, 150000), c);
    bufpool_give(bp, c);
    bufpool_free(bp);
}
END_TEST

START_TEST(test_keep_bound)
{
    bufpool *bp = bufpool_new(2);
    void *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = bufpool_take(bp, (size_t)(i + 1) * 4096);
    for (int i = 0; i < 4; i++)
        bufpool_give(bp, p[i]);
    size_t bytes;
    ck_assert_uint_eq(bufpool_idle(bp, &bytes), 2);
    /* the two largest stay */
    ck_assert_ptr_eq(bufpool_take(bp, 3 * 4096), p[2]);
    ck_assert_ptr_eq(bufpool_take(bp, 4 * 4096), p[3]);
    bufpool_give(bp, p[2]);
    bufpool_give(bp, p[3]);
    bufpool_free(bp);
    /* keep 0: everything given back is freed */
    bp = bufpool_new(0);
    bufpool_give(bp, bufpool_take(bp, 10));
    ck_assert_uint_eq(bufpool_idle(bp, NULL), 0);
    bufpool_free(bp);
}
END_TEST

START_TEST(test_resize_and_null_pool)
{
    bufpool *pools[2] = {bufpool_new(3), NULL};
    for (int k = 0; k < 2; k++) {
        bufpool *bp = pools[k];
        unsigned char *p = bufpool_resize(bp, NULL, 100);
        ck_assert_ptr_nonnull(p);
        for (int i = 0; i < 100; i++)
            p[i] = (unsigned char)i;
        p = bufpool_resize(bp, p, 1 << 20);
        ck_assert_ptr_nonnull(p);
        for (int i = 0; i < 100; i++)
            ck_assert_int_eq(p[i], i);
        /* shrinking keeps a pooled block (realloc may move it) */
        if (bp)
            ck_assert_ptr_eq(bufpool_resize(bp, p, 10), p);
        bufpool_give(bp, p);
        bufpool_give(bp, NULL);
        bufpool_free(bp);
    }
}
END_TEST

Suite *bufpool_suite(void)
{
    Suite *s = timed_suite("bufpool");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_reuse_and_fit);
    tcase_add_test(tc, test_keep_bound);
    tcase_add_test(tc, test_resize_and_null_pool);
    return s;
}
