/* check_timing.c - tests/timing.c on a worked example: a log in Check's
 * XML form, written here, with a test well within its case's timeout, one
 * over a quarter of it, and one of a case timed_case never made. */
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One <test> as Check writes it. */
static void put_test(FILE *f, const char *id, const char *dur, const char *tcase)
{
    fprintf(f,
            "    <test result=\"success\">\n      <path>tests</path>\n      <fn>x.c:1</fn>\n"
            "      <id>%s</id>\n      <iteration>0</iteration>\n      <duration>%s</duration>\n"
            "      <description>%s</description>\n      <message>Passed</message>\n"
            "    </test>\n",
            id, dur, tcase);
}

/* Writes the example log; returns its path (owned). */
static char *example_log(void)
{
    char *path = xcalloc(64, 1);
    strcpy(path, "/tmp/attnd-timing-test-XXXXXX");
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("<?xml version=\"1.0\"?>\n<testsuites xmlns=\"http://check.sourceforge.net/ns\">\n"
          "  <datetime>2026-01-01 00:00:00</datetime>\n  <suite>\n    <title>timing_demo</title>\n",
          f);
    put_test(f, "test_quick", "1.000000", "demo");    /* 1/8 of 8 s */
    put_test(f, "test_slow", "2.500000", "demo");     /* over a quarter of 8 s */
    put_test(f, "test_untimed", "0.010000", "other"); /* no timed_case made it */
    fputs("  </suite>\n  <duration>3.51</duration>\n</testsuites>\n", f);
    fclose(f);
    return path;
}

/* timing_check on path with ATTND_TEST_TIME_SHARE share (NULL: unset);
 * what it printed into out (owned). */
static int check_with(const char *path, const char *share, char **out)
{
    const char *was = getenv("ATTND_TEST_TIME_SHARE");
    char *saved = was ? strdup(was) : NULL;
    if (share)
        setenv("ATTND_TEST_TIME_SHARE", share, 1);
    else
        unsetenv("ATTND_TEST_TIME_SHARE");
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    const int r = timing_check(path, f);
    const long n = ftell(f);
    *out = xcalloc((size_t)n + 1, 1);
    rewind(f);
    ck_assert_uint_eq(fread(*out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    saved ? setenv("ATTND_TEST_TIME_SHARE", saved, 1) : unsetenv("ATTND_TEST_TIME_SHARE");
    free(saved);
    return r;
}

START_TEST(test_flags_slow_and_untimed)
{
    /* the demo's timeout as written: no multiplier while it is made */
    const char *was = getenv("CK_TIMEOUT_MULTIPLIER");
    char *saved = was ? strdup(was) : NULL;
    unsetenv("CK_TIMEOUT_MULTIPLIER");
    timed_case(timed_suite("timing_demo"), "demo", 8);
    if (saved)
        setenv("CK_TIMEOUT_MULTIPLIER", saved, 1);
    free(saved);
    char *path = example_log(), *out;

    ck_assert_int_eq(check_with(path, NULL, &out), 2);
    ck_assert_msg(strstr(out, "timing_demo/demo: test_slow:0 took 2.50 s, over 0.25 of its "
                              "timeout of 8 s"),
                  "%s", out);
    ck_assert_msg(strstr(out, "timing_demo/other: test_untimed: its case was not made by "
                              "timed_case"),
                  "%s", out);
    ck_assert_msg(!strstr(out, "test_quick:0 took"), "%s", out);
    /* the slowest first: 31% of its timeout, then 12.5% */
    const char *slow = strstr(out, "2.50 s of    8 s (31.2%)"), *quick = strstr(out, "(12.5%)");
    ck_assert_msg(slow && quick && slow < quick, "%s", out);
    free(out);

    /* half of a timeout allowed: only the untimed one is left */
    ck_assert_int_eq(check_with(path, "0.5", &out), 1);
    ck_assert_msg(!strstr(out, "took"), "%s", out);
    free(out);

    /* a share that is not one, and a log that is not there */
    ck_assert_int_eq(check_with(path, "0", &out), -1);
    ck_assert_msg(strstr(out, "ATTND_TEST_TIME_SHARE: a number in (0, 1], not '0'"), "%s", out);
    free(out);
    unlink(path);
    ck_assert_int_eq(check_with(path, NULL, &out), -1);
    ck_assert_msg(strstr(out, "cannot read Check's log"), "%s", out);
    free(out);
    free(path);
}
END_TEST

Suite *timing_suite(void)
{
    Suite *s = timed_suite("timing");
    TCase *tc = timed_case(s, "worked", 60);
    tcase_add_test(tc, test_flags_slow_and_untimed);
    return s;
}
