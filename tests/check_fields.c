/* check_fields.c - a request object checked against its field table
 * (server/protocol/fields.h): every message below is written out by hand
 * from the table, as a client reads it.  And the protocols' tables held to
 * the OpenAPI description that GET /openapi.json serves, schema by schema
 * (server/protocol/schemas.h). */
#include "protocol/fields.h"
#include "protocol/openapi.h"
#include "protocol/schemas.h"
#include "suites.h"
#include "timing.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- the tables against the OpenAPI description ------------------------------ */

typedef struct listed {
    const char *name; /* the table's C name, for messages */
    const field_table *table;
    const char *pointer; /* its schema's JSON pointer in the description */
} listed;

#define LISTED(table, pointer) {#table, &table, pointer},
static const listed LISTED_SCHEMAS[] = {REQUEST_SCHEMAS(LISTED)};
#undef LISTED
#define N_LISTED (sizeof LISTED_SCHEMAS / sizeof *LISTED_SCHEMAS)

#define BY_HAND(route) route,
static const char *const ROUTES_BY_HAND[] = {REQUEST_BODIES_BY_HAND(BY_HAND)};
#undef BY_HAND

/* Every disagreement found, a line each: the first dozen kept for the
 * failure's message, each written to stderr unless quiet. */
typedef struct findings {
    bool quiet;
    size_t n;
    size_t used;
    char text[4096];
} findings;

static void disagree(findings *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void disagree(findings *fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!fd->quiet)
        fprintf(stderr, "fields: %s\n", line);
    if (fd->n++ < 12 && fd->used < sizeof fd->text) {
        int w = snprintf(fd->text + fd->used, sizeof fd->text - fd->used, "\n  %s", line);
        if (w > 0)
            fd->used += (size_t)w;
    }
}

/* The value at pointer (RFC 6901) in doc, or NULL. */
static json_t *at_pointer(json_t *doc, const char *pointer)
{
    json_t *v = doc;
    for (const char *p = pointer; v && *p == '/';) {
        char key[256];
        size_t n = 0;
        for (p++; *p && *p != '/' && n + 1 < sizeof key; n++) {
            const bool esc = p[0] == '~' && (p[1] == '0' || p[1] == '1');
            key[n] = esc ? (p[1] == '1' ? '/' : '~') : *p;
            p += esc ? 2 : 1;
        }
        key[n] = '\0';
        char *end;
        const unsigned long i = strtoul(key, &end, 10);
        v = json_is_array(v) && n && !*end ? json_array_get(v, i) : json_object_get(v, key);
    }
    return v;
}

/* s with its $refs (local: "#/...") followed, or NULL. */
static json_t *deref(json_t *doc, json_t *s)
{
    for (int hops = 0; s && hops < 16; hops++) {
        const char *ref = json_string_value(json_object_get(s, "$ref"));
        if (!ref)
            return s;
        s = ref[0] == '#' ? at_pointer(doc, ref + 1) : NULL;
    }
    return NULL;
}

/* The object schema s describes, $refs followed: s itself when it has
 * properties (or allOf parts), else the one alternative of its anyOf or
 * oneOf that is such an object.  NULL when there is none or more than one. */
static json_t *object_schema(json_t *doc, json_t *s)
{
    s = deref(doc, s);
    if (!s || json_object_get(s, "properties") || json_object_get(s, "allOf"))
        return s;
    json_t *found = NULL;
    static const char *const unions[] = {"anyOf", "oneOf"};
    for (size_t k = 0; k < 2; k++) {
        size_t i;
        json_t *alt;
        json_array_foreach(json_object_get(s, unions[k]), i, alt)
        {
            json_t *o = object_schema(doc, alt);
            if (o && found && o != found)
                return NULL;
            found = o ? o : found;
        }
    }
    return found;
}

/* An object schema's parts: itself and, $refs followed, its allOf's. */
#define MAX_PARTS 8
static size_t parts_of(json_t *doc, json_t *obj, json_t **parts)
{
    size_t n = 0, i;
    json_t *p;
    parts[n++] = obj;
    json_array_foreach(json_object_get(obj, "allOf"), i, p)
    {
        if (n < MAX_PARTS && (p = deref(doc, p)))
            parts[n++] = p;
    }
    return n;
}

static json_t *property(json_t *const *parts, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++) {
        json_t *v = json_object_get(json_object_get(parts[k], "properties"), name);
        if (v)
            return v;
    }
    return NULL;
}

static bool lists_required(json_t *const *parts, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++) {
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(parts[k], "required"), i, r)
        {
            if (json_is_string(r) && strcmp(json_string_value(r), name) == 0)
                return true;
        }
    }
    return false;
}

static bool closed(json_t *const *parts, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (json_is_false(json_object_get(parts[k], "additionalProperties")))
            return true;
    return false;
}

static bool has_choice(const char *const *choices, const char *s)
{
    for (; *choices; choices++)
        if (strcmp(*choices, s) == 0)
            return true;
    return false;
}

/* One field of table e against its property prop (its $ref followed). */
static void compare_field(findings *fd, const listed *e, const field_spec *f, json_t *prop)
{
    static const char *const types[] = {[FIELD_BOOL] = "boolean",
                                        [FIELD_INT] = "integer",
                                        [FIELD_STRING] = "string",
                                        [FIELD_CHOICE] = "string"};
    if (f->type == FIELD_JSON)
        return; /* its own parser's, in any form */
    /* null is absent (fields_get): an optional field takes it */
    if (!f->required && !json_is_true(json_object_get(prop, "nullable")))
        disagree(fd, "%s: field '%s' takes null (absent) in the table; not nullable in %s", e->name,
                 f->name, e->pointer);
    const char *type = json_string_value(json_object_get(prop, "type"));
    if (!type || strcmp(type, types[f->type]) != 0) {
        disagree(fd, "%s: field '%s' is %s in the table, %s%s in %s", e->name, f->name,
                 types[f->type], type ? "" : "untyped (a union) ", type ? type : "", e->pointer);
        return;
    }
    json_t *choices = json_object_get(prop, "enum");
    if (f->type != FIELD_CHOICE && choices) {
        disagree(fd, "%s: field '%s' takes any %s in the table, an enum in %s", e->name, f->name,
                 type, e->pointer);
        return;
    }
    if (f->type == FIELD_CHOICE) {
        size_t i;
        json_t *c;
        if (!choices)
            disagree(fd, "%s: field '%s' is a choice in the table, any string in %s", e->name,
                     f->name, e->pointer);
        json_array_foreach(choices, i, c)
        {
            if (json_is_string(c) && !has_choice(f->choices, json_string_value(c)))
                disagree(fd, "%s: field '%s' refuses \"%s\", which %s's enum lists", e->name,
                         f->name, json_string_value(c), e->pointer);
        }
        for (const char *const *t = f->choices; choices && *t; t++) {
            bool found = false;
            json_array_foreach(choices, i, c)
            {
                found = found || (json_is_string(c) && strcmp(json_string_value(c), *t) == 0);
            }
            if (!found)
                disagree(fd, "%s: field '%s' takes \"%s\", which %s's enum lacks", e->name, f->name,
                         *t, e->pointer);
        }
    }
    if (f->type == FIELD_INT) {
        json_t *lo = json_object_get(prop, "minimum"), *hi = json_object_get(prop, "maximum");
        if (!lo)
            disagree(fd, "%s: field '%s' is at least %lld in the table, unbounded below in %s",
                     e->name, f->name, f->min, e->pointer);
        else if (json_integer_value(lo) != f->min)
            disagree(fd, "%s: field '%s' is at least %lld in the table, %lld in %s", e->name,
                     f->name, f->min, (long long)json_integer_value(lo), e->pointer);
        if (f->max < INT_MAX && (!hi || json_integer_value(hi) != f->max))
            disagree(fd, "%s: field '%s' is at most %lld in the table, not so in %s", e->name,
                     f->name, f->max, e->pointer);
        if (hi && json_integer_value(hi) > f->max)
            disagree(fd, "%s: field '%s' is at most %lld in the table, %lld in %s", e->name,
                     f->name, f->max, (long long)json_integer_value(hi), e->pointer);
    }
}

/* Whether obj is the object schema of some listed entry (objs: each
 * entry's, resolved). */
static bool is_listed(json_t *const *objs, json_t *obj)
{
    for (size_t k = 0; k < N_LISTED; k++)
        if (objs[k] == obj)
            return true;
    return false;
}

/* The objects with properties that schema s holds (through $ref, unions
 * and array items), each required to be a listed entry's. */
static void nested_listed(findings *fd, json_t *doc, json_t *const *objs, const listed *e,
                          const char *name, json_t *s, int depth)
{
    s = deref(doc, s);
    if (!s || depth > 8)
        return;
    if (json_object_get(s, "properties") || json_object_get(s, "allOf")) {
        if (!is_listed(objs, s))
            disagree(fd,
                     "%s: property '%s' of %s holds an object no table is listed for "
                     "(server/protocol/schemas.h)",
                     e->name, name, e->pointer);
        return;
    }
    static const char *const inner[] = {"anyOf", "oneOf"};
    for (size_t k = 0; k < 2; k++) {
        size_t i;
        json_t *alt;
        json_array_foreach(json_object_get(s, inner[k]), i, alt)
        {
            nested_listed(fd, doc, objs, e, name, alt, depth + 1);
        }
    }
    nested_listed(fd, doc, objs, e, name, json_object_get(s, "items"), depth + 1);
}

/* Each listed table and its schema: every field a property of the same
 * type, choices and range, required where the table requires it; every
 * property a field, the schema closed; every object it nests listed. */
static void compare_listed(findings *fd, json_t *doc, json_t *const *objs, size_t k)
{
    const listed *e = &LISTED_SCHEMAS[k];
    json_t *parts[MAX_PARTS];
    if (!objs[k]) {
        disagree(fd, "%s: %s is not in the description, or holds no one object schema", e->name,
                 e->pointer);
        return;
    }
    const size_t n = parts_of(doc, objs[k], parts);
    for (size_t i = 0; i < e->table->n; i++) {
        const field_spec *f = &e->table->fields[i];
        json_t *prop = deref(doc, property(parts, n, f->name));
        if (!prop) {
            disagree(fd, "%s: field '%s' is not a property of %s", e->name, f->name, e->pointer);
            continue;
        }
        compare_field(fd, e, f, prop);
        if (f->required && !lists_required(parts, n, f->name))
            disagree(fd, "%s: field '%s' is required by the table, not by %s", e->name, f->name,
                     e->pointer);
    }
    if (!closed(parts, n))
        disagree(fd, "%s refuses unknown %ss; %s does not say additionalProperties: false", e->name,
                 e->table->noun, e->pointer);
    for (size_t p = 0; p < n; p++) {
        const char *name;
        json_t *prop;
        json_object_foreach(json_object_get(parts[p], "properties"), name, prop)
        {
            bool found = false;
            for (size_t i = 0; i < e->table->n && !found; i++)
                found = strcmp(e->table->fields[i].name, name) == 0;
            if (!found)
                disagree(fd, "%s: property '%s' of %s is not a field of the table", e->name, name,
                         e->pointer);
            nested_listed(fd, doc, objs, e, name, prop, 0);
        }
    }
}

/* "/paths/~1v1~1encode/post/requestBody/content/application~1json/schema" for
 * route /v1/encode and method post. */
static void body_pointer(char *buf, size_t size, const char *route, const char *method)
{
    size_t n = (size_t)snprintf(buf, size, "/paths/");
    for (const char *c = route; *c && n + 3 < size; c++) {
        if (*c == '/' || *c == '~')
            buf[n++] = '~', buf[n++] = *c == '/' ? '1' : '0';
        else
            buf[n++] = *c;
    }
    snprintf(buf + n, size - n, "/%s/requestBody/content/application~1json/schema", method);
}

/* Every route with a JSON body: a listed table's, or read by hand (and then
 * not closed: what TEI's routes ignore, the description must not refuse). */
static void compare_routes(findings *fd, json_t *doc)
{
    const char *route, *method;
    json_t *ops, *op;
    json_object_foreach(json_object_get(doc, "paths"), route, ops)
    {
        json_object_foreach(ops, method, op)
        {
            json_t *body = at_pointer(op, "/requestBody/content/application~1json/schema");
            if (!body)
                continue;
            char pointer[512];
            body_pointer(pointer, sizeof pointer, route, method);
            bool by_table = false, by_hand = false;
            for (size_t k = 0; k < N_LISTED; k++)
                by_table = by_table || strcmp(LISTED_SCHEMAS[k].pointer, pointer) == 0;
            for (size_t k = 0; k < sizeof ROUTES_BY_HAND / sizeof *ROUTES_BY_HAND; k++)
                by_hand = by_hand ||
                          (strcmp(ROUTES_BY_HAND[k], route) == 0 && strcmp(method, "post") == 0);
            json_t *obj = object_schema(doc, body);
            if (!by_table && !by_hand)
                disagree(fd,
                         "%s %s takes a JSON body that neither REQUEST_SCHEMAS nor "
                         "REQUEST_BODIES_BY_HAND lists",
                         method, route);
            if (by_hand && obj && json_is_false(json_object_get(obj, "additionalProperties")))
                disagree(fd, "%s %s ignores unknown fields; its schema refuses them", method,
                         route);
        }
    }
    for (size_t k = 0; k < sizeof ROUTES_BY_HAND / sizeof *ROUTES_BY_HAND; k++) {
        char pointer[512];
        body_pointer(pointer, sizeof pointer, ROUTES_BY_HAND[k], "post");
        if (!at_pointer(doc, pointer))
            disagree(fd, "POST %s, read by hand, takes no JSON body in the description",
                     ROUTES_BY_HAND[k]);
    }
}

/* The description as GET /openapi.json serves it. */
static json_t *openapi_description(void)
{
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)openapi_json, openapi_json_len, 0, &jerr);
    ck_assert_msg(doc, "the OpenAPI description is not JSON: line %d: %s", jerr.line, jerr.text);
    return doc;
}

/* Each listed schema against its table, and every route's body listed. */
static size_t compare_all(json_t *doc, findings *fd)
{
    json_t *objs[N_LISTED];
    for (size_t k = 0; k < N_LISTED; k++)
        objs[k] = object_schema(doc, at_pointer(doc, LISTED_SCHEMAS[k].pointer));
    for (size_t k = 0; k < N_LISTED; k++)
        compare_listed(fd, doc, objs, k);
    compare_routes(fd, doc);
    return fd->n;
}

START_TEST(test_openapi_agrees)
{
    json_t *doc = openapi_description();
    findings fd = {0};
    compare_all(doc, &fd);
    json_decref(doc);
    ck_assert_msg(fd.n == 0,
                  "%zu disagreement(s) between the field tables (server/protocol/schemas.h) and "
                  "server/protocol/openapi.json:%s",
                  fd.n, fd.text);
}
END_TEST

/* The comparison finds what it is for: a description edited to disagree
 * with the tables in each way is reported, naming table, field and schema. */
START_TEST(test_openapi_disagreements_found)
{
    static const struct {
        const char *pointer, *key, *value, *expect;
    } edits[] = {
        {"/components/schemas/Blocks/properties", "colour", "{\"type\": \"string\"}",
         "options_blocks_fields: property 'colour' of /components/schemas/Mask/properties/blocks "
         "is not a field of the table"},
        {"/components/schemas/Blocks/properties", "size", "{\"type\": \"string\"}",
         "options_blocks_fields: field 'size' is integer in the table, string in "
         "/components/schemas/Mask/properties/blocks"},
        {"/components/schemas/EncodeRequest/properties", "encoding",
         "{\"type\": \"string\", \"enum\": [\"json\", \"base85\"]}",
         "v1_encode_fields: field 'encoding' refuses \"base85\", which "
         "/paths/~1v1~1encode/post/requestBody/content/application~1json/schema's enum lists"},
        {"/components/schemas/EncodeRequest/properties", "precision",
         "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 12}",
         "v1_encode_fields: field 'precision' is at most 9 in the table, not so in "
         "/paths/~1v1~1encode/post/requestBody/content/application~1json/schema"},
        {"/components/schemas/TokenizeRequest", "additionalProperties", "true",
         "text_tokenize_fields refuses unknown fields; "
         "/paths/~1v1~1tokenize/post/requestBody/content/application~1json/schema does not say "
         "additionalProperties: false"},
        {"/components/schemas/PredictRequest", "required", "[]",
         "predict_fields: field 'inputs' is required by the table, not by "
         "/paths/~1v1~1predict/post/requestBody/content/application~1json/schema"},
        {"/components/schemas/EmbeddingsRequest/properties", "input",
         "{\"type\": \"object\", \"properties\": {\"text\": {\"type\": \"string\"}}}",
         "openai_embeddings_fields: property 'input' of "
         "/paths/~1v1~1embeddings/post/requestBody/content/application~1json/schema holds an "
         "object no table is listed for"},
        {"/paths/~1v1~1model", "post",
         "{\"requestBody\": {\"content\": {\"application/json\": {\"schema\": {}}}}}",
         "post /v1/model takes a JSON body that neither REQUEST_SCHEMAS nor "
         "REQUEST_BODIES_BY_HAND lists"},
        {"/components/schemas/TeiEmbedRequest", "additionalProperties", "false",
         "post /embed ignores unknown fields; its schema refuses them"},
        {"/components/schemas/EncodeRequest/properties", "truncate", "{\"type\": \"boolean\"}",
         "v1_encode_fields: field 'truncate' takes null (absent) in the table; not nullable in "
         "/paths/~1v1~1encode/post/requestBody/content/application~1json/schema"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        json_t *doc = openapi_description();
        json_t *where = at_pointer(doc, edits[i].pointer);
        json_t *value = json_loads(edits[i].value, JSON_DECODE_ANY, NULL);
        ck_assert_msg(where && value, "edit %zu", i);
        ck_assert_int_eq(json_object_set_new(where, edits[i].key, value), 0);
        findings fd = {.quiet = true};
        compare_all(doc, &fd);
        json_decref(doc);
        ck_assert_msg(fd.n >= 1 && strstr(fd.text, edits[i].expect),
                      "edit %zu: expected '%s' among:%s", i, edits[i].expect, fd.text);
    }
}
END_TEST

Suite *fields_suite(void)
{
    Suite *s = timed_suite("fields");
    TCase *tc = timed_case(s, "table", 60);
    tcase_add_test(tc, test_messages);
    tcase_add_test(tc, test_readers);
    tc = timed_case(s, "openapi", 60);
    tcase_add_test(tc, test_openapi_agrees);
    tcase_add_test(tc, test_openapi_disagreements_found);
    return s;
}
