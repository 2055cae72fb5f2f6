/* check_jsonnum.c - server/codec/jsonnum.c: numbers read from JSON text
 * against strtod (bit for bit) and jansson, on edge cases, random numbers
 * in every form a client prints, and the RFC 8259 grammar; floats written
 * against snprintf's "%.{p}g" and read back with strtof. */
#include "codec/jsonnum.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON numbers in: encode_number_parse against strtod and jansson ------- */

static bool same_bits_d(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static bool same_bits_f(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* text must be one JSON number whose value is strtod's, bit for bit, and so
 * its float32 (float)strtod's; records the first failure in k. */
static void number_is_strtod(chk *k, const char *text)
{
    double got, want = strtod(text, NULL);
    if (!jsonnum_parse(text, strlen(text), &got))
        chk_fail(k, "'%s' was refused", text);
    else if (!same_bits_d(got, want) || !same_bits_f((float)got, (float)want))
        chk_fail(k, "'%s' read as %a, strtod gives %a", text, got, want);
}

START_TEST(test_number_parse_edges)
{
    static const char *const good[] = {
        "0", "-0", "0.0", "-0.0", "0e0", "0E-5", "0e99999999999", "1", "-1", "1E+2", "1e+2", "1E2",
        "1e-2", "0.5", "-0.125", "123456789", "1.23456789e-05", "-4.5e-07",
        /* float32's edges, and past them */
        "1e-45", "1.4e-45", "1.401298464324817e-45", "7.006492321624085e-46", "7.1e-46", "1e-46",
        "1.17549435e-38", "1.1754942e-38", "3.4028235e38", "3.40282347e+38", "3.4028236e38",
        "3.40282356779733661637539395458142568448e38", "1e39", "-1e39",
        /* double's edges: subnormals, overflow to inf as strtod does */
        "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-400",
        "1.7976931348623157e308", "1.7976931348623159e308", "1e400", "-1e400",
        /* the fast path's edges: 19 digits, 2^53, 10^22 */
        "9007199254740992", "9007199254740993", "9007199254740993.0", "1e22", "1e23", "4e-22",
        "1e-22", "1e-23", "1234567890123456789", "12345678901234567890", "9223372036854775807",
        "9223372036854775808", "-9223372036854775809", "123456789012345678901234567890",
        "0.000000000000000000000000000000000000000000001", "1.0000000000000000000000000001",
        /* float midpoints: (float)(double) rounds twice, as before */
        "1.00000005960464477539062500", "1.000000059604644775390625001",
        "1.0000000596046447753906249", "16777217", "16777219", "0.1", "0.2", "0.3", "2.5e-8",
        "8.589973e9", "1e10", "1e11", "4294967295", "4294967296.5"};
    static const char *const bad[] = {
        "",     "01",    "-01",  "00",    "+1",       ".5",  "1.",    "-",        "--1",
        "1e",   "1e+",   "1e-",  "1E",    "NaN",      "nan", "inf",   "Infinity", "-Infinity",
        "0x10", "1.5.3", " 1",   "1 ",    "1e5.5",    "1,5", "1_000", "-.5",      "1.e5",
        "e5",   "0.",    "1ee5", "1e+-5", "\xd9\xa1", "1\n"};
    chk k = {0};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        number_is_strtod(&k, good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double v = 42.0;
        if (jsonnum_parse(bad[i], strlen(bad[i]), &v))
            chk_fail(&k, "'%s' was accepted (as %g)", bad[i], v);
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
    double v;
    ck_assert(jsonnum_parse("-0", 2, &v) && signbit(v)); /* strtod's -0 */
    ck_assert(jsonnum_parse("12", 1, &v) && v == 1.0);   /* len is the token */
}
END_TEST

/* encode_number_token against jansson itself: the token it finds at the
 * start of each text is the one jansson reads there (as "[token]"), with
 * jansson's value; where it finds none, jansson refuses the number. */
START_TEST(test_number_token)
{
    static const struct {
        const char *text;
        size_t len; /* 0: not a number */
    } c[] = {
        {"12,", 2},
        {"-0.5]", 4},
        {"1e5x", 3}, /* what follows is the caller's */
        {"01", 1},   /* the number 0, then 1 */
        {"3.25E-2 ", 7},
        {"9223372036854775807", 19},  /* INT64_MAX */
        {"-9223372036854775808", 20}, /* INT64_MIN */
        /* beyond int64 (jansson: "too big integer"): numbers all the same,
         * as JavaScript's JSON.stringify(1e20) writes them */
        {"9223372036854775808", 19},
        {"-9223372036854775809]", 20},
        {"123456789012345678901234567890", 30},
        {"100000000000000000000", 21},
        {"12345678901234567890.0", 22}, /* a real: no int64 limit */
        {"1e308", 5},
        {"1e400", 0}, /* "real number overflow" */
        {"-1.8e308,", 0},
        {"1e-400", 6}, /* underflow to 0 is taken */
        {"+1", 0},
        {"-", 0},
        {".5", 0},
        {"1.", 0},
        {"1e+", 0},
        {"", 0},
        {"x1", 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        const char *t = c[i].text;
        double v = 42.0;
        const size_t n = jsonnum_token(t, strlen(t), &v);
        ck_assert_msg(n == c[i].len, "'%s': token of %zu bytes, expected %zu", t, n, c[i].len);
        char doc[64];
        snprintf(doc, sizeof doc, "[%.*s]", (int)(n ? n : strlen(t)), t);
        json_error_t je;
        json_t *a = json_loads(doc, 0, &je);
        if (n == 0) {
            if (c[i].len == 0 && a && strcmp(t, "") != 0) /* the whole text, where no token */
                ck_abort_msg("'%s': jansson takes %s", t, doc);
        } else if (!a && strstr(je.text, "too big")) {
            /* jansson refuses the integer; its value is strtod's */
            ck_assert_msg(v == strtod(t, NULL), "'%s': %.17g, strtod %.17g", t, v, strtod(t, NULL));
        } else {
            ck_assert_msg(a && json_array_size(a) == 1 && json_is_number(json_array_get(a, 0)),
                          "'%s': jansson refuses %s (%s)", t, doc, je.text);
            const double want = json_number_value(json_array_get(a, 0));
            ck_assert_msg(v == want, "'%s': %.17g, jansson %.17g", t, v, want);
        }
        json_decref(a);
    }
}
END_TEST

/* Random numbers in every form a client may print, against strtod. */
START_TEST(test_number_parse_random)
{
    uint64_t s = 0xD1CE;
    chk k = {0};
    char text[96];
    for (int it = 0; it < 300000 && !k.failed; it++) {
        const uint64_t r = splitmix(&s);
        union {
            uint32_t u;
            float f;
        } f32 = {.u = (uint32_t)r};
        union {
            uint64_t u;
            double d;
        } f64 = {.u = splitmix(&s)};
        switch (it % 6) {
        case 0: /* any float, as the daemon and PyTorch print it */
            if (!isfinite(f32.f))
                continue;
            snprintf(text, sizeof text, "%.*g", 1 + (int)((r >> 40) % 9), (double)f32.f);
            break;
        case 1: /* any double, round-trip and beyond */
            if (!isfinite(f64.d))
                continue;
            snprintf(text, sizeof text, "%.*g", 1 + (int)((r >> 40) % 20), f64.d);
            break;
        case 2: /* exponent form with a lower-case or upper-case e */
            if (!isfinite(f32.f))
                continue;
            snprintf(text, sizeof text, (r >> 60) & 1 ? "%.*e" : "%.*E", (int)((r >> 40) % 12),
                     (double)f32.f);
            break;
        default: { /* digits, a point, an exponent, at random */
            size_t n = 0;
            if (r & 1)
                text[n++] = '-';
            const int int_digits = 1 + (int)((r >> 8) % 22), frac = (int)((r >> 16) % 24);
            for (int d = 0; d < int_digits; d++)
                text[n++] = (char)('0' + (d == 0 && int_digits > 1 ? 1 + splitmix(&s) % 9
                                                                   : splitmix(&s) % 10));
            if (int_digits == 1 && (r >> 30) % 3 == 0)
                text[n - 1] = '0'; /* 0.xxx */
            if (frac) {
                text[n++] = '.';
                for (int d = 0; d < frac; d++)
                    text[n++] = (char)('0' + splitmix(&s) % 10);
            }
            if ((r >> 32) % 3)
                n += (size_t)snprintf(text + n, sizeof text - n, "e%+d",
                                      (int)((r >> 36) % 700) - 350);
            text[n] = '\0';
        }
        }
        number_is_strtod(&k, text);
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
}
END_TEST

/* Short strings of number characters: a JSON number exactly when jansson
 * takes "[text]" (those it refuses for overflowing its int64 or double are
 * numbers too, of no interest here). */
START_TEST(test_number_parse_grammar)
{
    static const char alphabet[] = "0123456789-+.eE";
    uint64_t s = 0x6A66;
    chk k = {0};
    char text[16], doc[32];
    for (int it = 0; it < 200000 && !k.failed; it++) {
        const size_t n = 1 + splitmix(&s) % 7;
        for (size_t i = 0; i < n; i++)
            text[i] = alphabet[splitmix(&s) % (sizeof alphabet - 1)];
        text[n] = '\0';
        snprintf(doc, sizeof doc, "[%s]", text);
        json_error_t je;
        json_t *j = json_loads(doc, 0, &je);
        if (!j && (strstr(je.text, "overflow") || strstr(je.text, "too big")))
            continue; /* jansson stops there, before any later fault ("9e999.") */
        const bool jansson = j != NULL;
        double v;
        const bool ours = jsonnum_parse(text, n, &v);
        if (ours != jansson)
            chk_fail(&k, "'%s': jansson %s it, encode_number_parse %s it", text,
                     jansson ? "takes" : "refuses", ours ? "takes" : "refuses");
        else if (j && json_number_value(json_array_get(j, 0)) != v)
            chk_fail(&k, "'%s': jansson reads %g, encode_number_parse %g", text,
                     json_number_value(json_array_get(j, 0)), v);
        json_decref(j);
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
}
END_TEST

/* ---- JSON numbers out: encode_format_float against snprintf ------------------ */

/* f at precision p must print as snprintf's "%.*g" (so the same decimal
 * value), and at 9 digits read back with strtof as the same float. */
static void format_is_snprintf(chk *k, float f, int p)
{
    char got[JSONNUM_CHARS + 8], want[64];
    memset(got, 'x', sizeof got);
    const size_t n = jsonnum_format(got, f, p);
    snprintf(want, sizeof want, "%.*g", p, (double)f);
    if (n != strlen(got) || strcmp(got, want) != 0) {
        chk_fail(k, "%a at precision %d: '%s', snprintf '%s'", (double)f, p, got, want);
        return;
    }
    if (p == 9) {
        char *end;
        const float back = strtof(got, &end);
        if (*end != '\0' || !same_bits_f(back, f))
            chk_fail(k, "'%s' reads back as %a, not %a", got, (double)back, (double)f);
    }
}

START_TEST(test_format_float_edges)
{
    chk k = {0};
    const float specials[] = {
        0.0f,       -0.0f,        1.0f,        -1.0f,        0.5f,          2.5f,    0.25f,
        0.125f,     0.375f,       1.5f,        9.5f,         95.0f,         0.95f,   0.0001f,
        0.00001f,   123456789.0f, 16777216.0f, 16777215.0f,  1e9f,          1e10f,   3e30f,
        1.5e-7f,    FLT_MIN,      -FLT_MIN,    FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MAX, -FLT_MAX,
        9.9999995f, 9.999999f,    0.99999994f, 99999.99f,    999999.94f,    1e-36f,  1e-37f,
        1e-38f,     1e-39f,       1e-40f,      1e-44f,       3.4e38f};
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        for (int p = 1; p <= 9; p++)
            format_is_snprintf(&k, specials[i], p);
    /* around every power of ten, where the exponent and the carries change */
    for (int j = -45; j <= 38; j++) {
        float f = (float)pow(10.0, j);
        for (int step = 0; step < 8; step++)
            f = nextafterf(f, 0.0f);
        for (int step = 0; step < 16; step++, f = nextafterf(f, INFINITY))
            for (int p = 1; p <= 9; p++)
                format_is_snprintf(&k, f, p);
    }
    /* exact ties (12.5 at 2 digits, 0.0625 at 3) and their neighbours */
    for (int p = 1; p <= 8; p++)
        for (int n = 1; n < 2000; n++) {
            format_is_snprintf(&k, (float)n + 0.5f, p);
            format_is_snprintf(&k, (float)n / 1024.0f, p);
            format_is_snprintf(&k, nextafterf((float)n + 0.5f, 0.0f), p);
        }
    /* integers, and every float in a few binades */
    for (uint32_t i = 0; i < 100000; i++)
        format_is_snprintf(&k, (float)i, 1 + (int)(i % 9));
    for (uint32_t u = 0x3f800000u; u < 0x3f800000u + 200000; u++) {
        float f;
        memcpy(&f, &u, sizeof f);
        format_is_snprintf(&k, f, 9);
        format_is_snprintf(&k, f, 1 + (int)(u % 8));
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
    char buf[JSONNUM_CHARS];
    ck_assert_str_eq((jsonnum_format(buf, NAN, 9), buf), "null");
    ck_assert_str_eq((jsonnum_format(buf, -INFINITY, 3), buf), "null");
    ck_assert_str_eq((jsonnum_format(buf, -0.0f, 9), buf), "-0");
    ck_assert_str_eq((jsonnum_format(buf, 0.1f, 0), buf), "0.1"); /* clamped to 1 */
}
END_TEST

/* A million random floats of every exponent (subnormals included), every
 * precision, against snprintf. */
START_TEST(test_format_float_random)
{
    uint64_t s = 0xF10A7;
    chk k = {0};
    for (int it = 0; it < 1000000 && !k.failed; it++) {
        const uint64_t r = splitmix(&s);
        const uint32_t u = (uint32_t)r;
        float f;
        memcpy(&f, &u, sizeof f);
        if (!isfinite(f))
            continue;
        format_is_snprintf(&k, f, 9);
        if (it % 4 == 0)
            format_is_snprintf(&k, f, 1 + (int)((r >> 32) % 8));
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
}
END_TEST

/* Integers beyond int64 rewritten as reals of the same value and length,
 * strings and int64 integers left alone; jansson then reads the text. */
START_TEST(test_widen)
{
    const char *in = "{\"a\": [100000000000000000000, \"123456789012345678901\", "
                     "-9223372036854775809,9223372036854775807, 1e400x, "
                     "123456789012345678901234567890123456789012345678901234567890]}";
    const size_t n = strlen(in);
    char *text = strdup(in);
    ck_assert_uint_eq(jsonnum_widen(text, n), 3);
    ck_assert_uint_eq(strlen(text), n);
    ck_assert_ptr_nonnull(strstr(text, "\"123456789012345678901\""));
    ck_assert_ptr_nonnull(strstr(text, ",9223372036854775807,"));
    ck_assert_ptr_null(strstr(text, "100000000000000000000"));
    static const char *const big[] = {
        "100000000000000000000", "-9223372036854775809",
        "123456789012345678901234567890123456789012345678901234567890"};
    /* each rewritten token: same length, a JSON real, the same value */
    const char *p = text + strlen("{\"a\": [");
    for (size_t i = 0; i < 3; i++) {
        if (i == 1)
            p = strstr(text, "-9");
        if (i == 2)
            p = strstr(text, "1e400x, ") + strlen("1e400x, ");
        jsonnum_scanned t;
        ck_assert(jsonnum_scan(p, strlen(p), &t));
        ck_assert_uint_eq(t.len, strlen(big[i]));
        ck_assert(!t.integer);
        double got, want = strtod(big[i], NULL);
        ck_assert(jsonnum_parse(p, t.len, &got));
        ck_assert_msg(fabs(got - want) <= 1e-13 * fabs(want), "%.*s is %.17g, want %.17g",
                      (int)t.len, p, got, want);
        ck_assert((float)got == (float)want);
    }
    free(text);
}
END_TEST

Suite *jsonnum_suite(void)
{
    Suite *s = timed_suite("jsonnum");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_number_parse_edges);
    tcase_add_test(tc, test_number_token);
    tcase_add_test(tc, test_number_parse_random);
    tcase_add_test(tc, test_number_parse_grammar);
    tcase_add_test(tc, test_format_float_edges);
    tcase_add_test(tc, test_format_float_random);
    tcase_add_test(tc, test_widen);
    return s;
}
