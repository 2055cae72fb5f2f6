/* check_jsontext.c - the JSON text steps the codec and v2 share
 * (server/codec/jsontext.h), on worked examples: where each step stops, and which
 * written keys spell a name. */
#include "codec/jsontext.h"
#include "suites.h"
#include "timing.h"

#include <string.h>

typedef const char *(*step_fn)(const char *p, const char *end);

/* Where f stops in text (an offset), or -1 for NULL. */
static long stop(step_fn f, const char *text)
{
    const char *q = f(text, text + strlen(text));
    return q ? (long)(q - text) : -1;
}

/* A text and where a step should stop in it (-1: NULL). */
typedef struct stop_case {
    const char *text;
    long end;
} stop_case;

static void check_stops(step_fn f, const stop_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(stop(f, c[i].text) == c[i].end, "%s: stopped at %ld, not %ld", c[i].text,
                      stop(f, c[i].text), c[i].end);
}

START_TEST(test_skip_ws)
{
    const char *t = " \t\r\n x";
    ck_assert_ptr_eq(jt_skip_ws(t, t + strlen(t)), t + 5);
    ck_assert_ptr_eq(jt_skip_ws(t, t + 2), t + 2); /* never past end */
    const char *f = "\f\v1";                       /* not JSON whitespace */
    ck_assert_ptr_eq(jt_skip_ws(f, f + 3), f);
}
END_TEST

START_TEST(test_skip_string)
{
    static const stop_case c[] = {
        {"\"abc\"x", 5},      {"\"\"", 2},
        {"\"a\\\"b\"]", 6},   /* "a\"b": the escaped quote does not end it */
        {"\"a\\\\\"b", 5},    /* "a\\" then b: an even run of backslashes does */
        {"\"a\\\\\\\"\"", 7}, /* "a\\\"": odd again */
        {"\"[{,]}\":", 7},    /* brackets in a string are text */
        {"\"abc", -1},        {"\"a\\\"", -1},
    };
    check_stops(jt_skip_string, c, sizeof c / sizeof *c);
}
END_TEST

START_TEST(test_skip_value)
{
    static const stop_case c[] = {
        {"true,", 4},
        {"null}", 4},
        {"-1.5e3]", 6},
        {"12 ,", 2},
        {"\"s,]\" ,", 5},
        {"{}x", 2},
        {"[1,[2,{\"a\":\"]\"}],3] tail", 19},
        {"{\"k\":[{\"j\":\"}\"}]},", 17},
        {"[1,[2]", -1}, /* does not close */
        {"{\"a\":\"}", -1},
        {",", -1}, /* no value here */
        {"]", -1},
        {"", -1}, /* p == end */
    };
    check_stops(jt_skip_value, c, sizeof c / sizeof *c);
    ck_assert_int_eq(stop(jt_skip_nested, "[[]] "), 4);
}
END_TEST

START_TEST(test_key_is)
{
    static const struct {
        const char *written; /* between the quotes */
        const char *want;
        bool same;
    } c[] = {
        {"data", "data", true},
        {"dat", "data", false},
        {"datax", "data", false},
        {"Data", "data", false},
        {"d\\u0061ta", "data", true},
        {"\\u0064\\u0061\\u0074\\u0061", "data", true},
        {"d\\u0041ta", "dAta", true},  /* upper-case letter */
        {"d\\u00E1ta", "data", false}, /* beyond ASCII */
        {"d\\u0000ata", "d", false},   /* NUL */
        {"d\\nata", "data", false},    /* other escapes spell no letter */
        {"d\\u00", "d", false},        /* cut short */
        {"embeddings\\u005fb64", "embeddings_b64", true},
        {"embeddings", "embeddings_b64", false},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        ck_assert_msg(jt_key_is(c[i].written, strlen(c[i].written), c[i].want) == c[i].same,
                      "\"%s\" against %s: expected %s", c[i].written, c[i].want,
                      c[i].same ? "the same" : "different");
}
END_TEST

Suite *jsontext_suite(void)
{
    Suite *s = timed_suite("jsontext");
    TCase *tc = timed_case(s, "steps", 60);
    tcase_add_test(tc, test_skip_ws);
    tcase_add_test(tc, test_skip_string);
    tcase_add_test(tc, test_skip_value);
    tcase_add_test(tc, test_key_is);
    return s;
}
