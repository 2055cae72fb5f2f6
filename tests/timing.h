/* timing.h - every test case's timeout, and each test's run time held
 * against it, so that the suites pass on a busy or instrumented host.
 *
 * The rule (DEVELOPERS.md, "Tests"): a case's timeout is written in
 * seconds for a plain -O3 build on a quiet 2-core host, where each of its
 * tests takes at most a tenth of it.  CK_TIMEOUT_MULTIPLIER, Check's own
 * variable, scales every timeout; the Makefile sets it for the sanitizer
 * builds (TEST_TIME_SCALE_SAN) and for valgrind (TEST_TIME_SCALE_VALGRIND).
 *
 * After the run, timing_check reads the run times Check wrote to its XML
 * log and fails, naming the test, when one took more than
 * ATTND_TEST_TIME_SHARE (default 0.25) of its scaled timeout, or when a
 * case was not made by timed_case. */
#ifndef ATTND_TESTS_TIMING_H
#define ATTND_TESTS_TIMING_H

#include <check.h>
#include <stdio.h>

/* suite_create(name), remembering the name for timed_case. */
Suite *timed_suite(const char *name);

/* A case of suite s (made by timed_suite) named name, added to it, its
 * timeout seconds on a plain build (scaled by CK_TIMEOUT_MULTIPLIER, as
 * Check scales it). */
TCase *timed_case(Suite *s, const char *name, double seconds);

/* Reads Check's XML log at xml_path and prints to out the slowest tests
 * against their timeouts, then a line for each one over the share or of a
 * case timed_case did not make.  Returns how many such tests there are
 * (0: all within), -1 when the log cannot be read. */
int timing_check(const char *xml_path, FILE *out);

#endif
