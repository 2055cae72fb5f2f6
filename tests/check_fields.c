/* check_fields.c - a request object checked against its field table
 * (server/protocol/fields.h): every message below is written out by hand
 * from the table, as a client reads it. */
#include "protocol/fields.h"
#include "suites.h"
#include "timing.h"

#include <jansson.h>
#include <limits.h>
#include <string.h>

static const char *const COLOURS[] = {"red", "green", "blue", NULL};
static const field_spec FIELDS[] = {
    {.name = "flag", .type = FIELD_BOOL},
    {.name = "digits", .type = FIELD_INT, .min = 1, .max = 9},
    {.name = "size", .type = FIELD_INT, .required = true, .min = 1, .max = INT_MAX},
    {.name = "seed", .type = FIELD_INT, .min = 0, .max = LLONG_MAX},
    {.name = "colour", .type = FIELD_CHOICE, .choices = COLOURS},
    {.name = "label", .type = FIELD_STRING},
    {.name = "rows", .type = FIELD_JSON},
};
static const field_table TABLE = FIELD_TABLE("option", FIELDS);

/* The message fields_check gives body, checked at where ("" when it passes). */
static const char *verdict(const char *body, const char *where, api_error *err)
{
    json_error_t jerr;
    json_t *obj = json_loads(body, 0, &jerr);
    ck_assert_msg(obj, "bad test JSON %s", body);
    memset(err, 0, sizeof *err);
    const int rc = fields_check(&TABLE, obj, where, err);
    json_decref(obj);
    ck_assert_int_eq(rc, err->kind == API_OK ? 0 : -1);
    return err->message;
}

START_TEST(test_messages)
{
    static const struct {
        const char *body, *where, *message;
    } cases[] = {
        {"{\"size\": 2}", "", ""},
        {"{\"size\": 2, \"flag\": null, \"rows\": [[1]], \"colour\": \"blue\"}", "", ""},
        {"{\"size\": 2, \"colr\": 1}", "",
         "unknown option 'colr'; expected flag, digits, size, seed, colour, label or rows"},
        {"{\"size\": 2, \"colr\": 1}", "mask.blocks",
         "mask.blocks: unknown option 'colr'; expected flag, digits, size, seed, colour, label or "
         "rows"},
        {"{}", "", "size is required"},
        {"{\"size\": null}", "p", "p.size is required"},
        {"{\"size\": 2, \"flag\": 1}", "", "flag must be true or false, not a number"},
        {"{\"size\": 2, \"digits\": \"3\"}", "", "digits must be an integer 1..9, not a string"},
        {"{\"size\": 2, \"digits\": 10}", "", "digits = 10 is outside 1..9"},
        {"{\"size\": 2, \"digits\": 2.5}", "", "digits must be an integer 1..9, not a number"},
        {"{\"size\": 0}", "m", "m.size = 0 must be at least 1"},
        {"{\"size\": 2147483648}", "", "size = 2147483648 is too large (at most 2147483647)"},
        {"{\"size\": 2, \"seed\": -1}", "", "seed = -1 must not be negative"},
        {"{\"size\": 2, \"seed\": true}", "", "seed must be an integer, not a boolean"},
        {"{\"size\": 2, \"colour\": \"pink\"}", "",
         "colour must be \"red\", \"green\" or \"blue\", not 'pink'"},
        {"{\"size\": 2, \"colour\": 3}", "",
         "colour must be \"red\", \"green\" or \"blue\", not a number"},
        {"{\"size\": 2, \"label\": []}", "", "label must be a string, not an array"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        api_error err;
        const char *got = verdict(cases[i].body, cases[i].where, &err);
        ck_assert_msg(strcmp(got, cases[i].message) == 0, "%s at '%s': '%s', expected '%s'",
                      cases[i].body, cases[i].where, got, cases[i].message);
        if (*cases[i].message)
            ck_assert_int_eq(err.kind, API_BAD_REQUEST);
    }
}
END_TEST

/* The readers give the checked values, or the default when absent or null. */
START_TEST(test_readers)
{
    json_t *obj =
        json_loads("{\"flag\": true, \"size\": 7, \"seed\": null, \"colour\": \"green\"}", 0, NULL);
    ck_assert_ptr_nonnull(obj);
    ck_assert(fields_bool(obj, "flag", false));
    ck_assert(!fields_bool(obj, "other", false));
    ck_assert_int_eq(fields_int(obj, "size", -1), 7);
    ck_assert_int_eq(fields_int(obj, "seed", 42), 42);
    ck_assert_int_eq(fields_choice(&TABLE, obj, "colour", -1), 1);
    ck_assert_int_eq(fields_choice(&TABLE, obj, "label", -1), -1);
    json_decref(obj);
}
END_TEST

Suite *fields_suite(void)
{
    Suite *s = timed_suite("fields");
    TCase *tc = timed_case(s, "table", 60);
    tcase_add_test(tc, test_messages);
    tcase_add_test(tc, test_readers);
    return s;
}
