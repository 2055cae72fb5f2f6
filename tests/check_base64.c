/* check_base64.c - server/codec/base64.c against RFC 4648's test vectors and
 * a naive encoder written here: every length, both directions, the AVX-512
 * and the table paths, and every kind of invalid input refused. */
#include "codec/base64.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loop 0: the VBMI loops where the CPU has them; loop 1: the table loops
 * alone.  On a CPU without VBMI both loops run the table loops. */
static void use_path(int i)
{
    static bool said;
    base64_set_vbmi(i == 0);
    ck_assert(i == 0 || !base64_vbmi_enabled());
    if (i == 0 && !base64_vbmi_enabled() && !said) {
        said = true;
        printf("base64: this CPU has no AVX-512 VBMI: the VBMI loops are not run here (the "
               "table loops are, twice)\n");
        fflush(stdout);
    }
}

static void vbmi_back_on(void) /* for the suites after these (CK_FORK=no) */
{
    base64_set_vbmi(true);
}

START_TEST(test_base64_rfc4648)
{
    use_path(_i);
    /* RFC 4648 section 10. */
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        size_t n = 99;
        char *e = base64_encode(plain[i], strlen(plain[i]), &n);
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(e, coded[i]);
        ck_assert_uint_eq(n, strlen(coded[i]));
        free(e);
        unsigned char *d = base64_decode(coded[i], strlen(coded[i]), &n);
        ck_assert_ptr_nonnull(d);
        ck_assert_uint_eq(n, strlen(plain[i]));
        ck_assert(memcmp(d, plain[i], n) == 0);
        free(d);
    }
    /* Every byte value survives a round trip. */
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)(255 - i);
    size_t n, m;
    char *e = base64_encode(all, sizeof all, &n);
    unsigned char *d = base64_decode(e, n, &m);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(m, sizeof all);
    ck_assert(memcmp(d, all, m) == 0);
    free(e);
    free(d);
}
END_TEST

/* Long strings, where the AVX-512 VBMI loops run on CPUs that have them
 * (64 characters a step): every length from 0 to 400 and a few large ones
 * against a bit-by-bit encoder written here, round trips, and a bad
 * character anywhere -- inside a step, at its edges, in the final group --
 * refused. */

static size_t reference_b64(const unsigned char *s, size_t n, char *d)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        int bits[24];
        for (int k = 0; k < 24; k++)
            bits[k] = i + (size_t)k / 8 < n ? s[i + (size_t)k / 8] >> (7 - k % 8) & 1 : 0;
        for (int c = 0; c < 4; c++) {
            int v = 0;
            for (int k = 0; k < 6; k++)
                v = v << 1 | bits[c * 6 + k];
            d[o++] = c >= 2 && i + (size_t)c - 1 >= n ? '=' : A[v];
        }
    }
    d[o] = '\0';
    return o;
}

START_TEST(test_base64_long)
{
    use_path(_i);
    uint64_t st = 77;
    static const char bad_chars[] = {'!', (char)0xC3, '=', '-', '\n', '\0'};
    for (size_t n = 0; n < 5000; n += n < 400 ? 1 : 997) {
        unsigned char *b = xcalloc(n + 1, 1);
        for (size_t i = 0; i < n; i++)
            b[i] = (unsigned char)(splitmix(&st) >> 24);
        char *want = xcalloc(n / 3 * 4 + 8, 1);
        const size_t wl = reference_b64(b, n, want);
        size_t el = 0, dl = 0;
        char *e = base64_encode(b, n, &el);
        ck_assert_msg(el == wl && strcmp(e, want) == 0, "%zu bytes encode differently", n);
        unsigned char *d = base64_decode(want, wl, &dl);
        ck_assert_msg(d && dl == n && memcmp(d, b, n) == 0, "%zu bytes: no round trip", n);
        free(d);
        for (size_t t = 0; wl >= 8 && t < sizeof bad_chars; t++) {
            const size_t at = t == 0   ? 63 % wl
                              : t == 1 ? 64 % wl
                                       : (size_t)(splitmix(&st) % (wl - 4)); /* before the end */
            const char keep = want[at];
            want[at] = bad_chars[t];
            d = base64_decode(want, wl, &dl);
            ck_assert_msg(d == NULL, "%zu chars: 0x%02x at %zu accepted", wl,
                          (unsigned char)bad_chars[t], at);
            want[at] = keep;
        }
        free(b);
        free(want);
        free(e);
    }
}
END_TEST

START_TEST(test_base64_rejects)
{
    use_path(_i);
    static const char *const bad[] = {
        "Zg=",                                  /* length not a multiple of 4 */
        "Zg",      "Z",        "Zm9vY", "Z===", /* too much padding */
        "====",    "Zg=a",                      /* '=' then data */
        "=Zg=",    "Zg==Zg==",                  /* padding in the middle */
        "Zm9v\n",  "Zm 9",                      /* whitespace is not allowed */
        "Zm9-",    "Zm9_",                      /* the URL-safe alphabet is not standard base64 */
        "Zm9\xff", "Zm.v",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t n = 7;
        unsigned char *d = base64_decode(bad[i], strlen(bad[i]), &n);
        ck_assert_msg(d == NULL, "'%s' was accepted", bad[i]);
        ck_assert_uint_eq(n, 7); /* untouched */
    }
    /* Non-zero bits under the padding are accepted (as most decoders do). */
    size_t n;
    unsigned char *d = base64_decode("Zh==", 4, &n);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(d[0], 'f');
    free(d);
}
END_TEST

Suite *base64_suite(void)
{
    Suite *s = timed_suite("base64");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_checked_fixture(tc, NULL, vbmi_back_on);
    tcase_add_loop_test(tc, test_base64_rfc4648, 0, 2);
    tcase_add_loop_test(tc, test_base64_rejects, 0, 2);
    tcase_add_loop_test(tc, test_base64_long, 0, 2);
    return s;
}
