/* fields.h - the fields of a request's JSON objects, each described once.
 *
 * Every JSON object a request holds (/v1/encode's body, its mask and the
 * mask's patterns, /v1/tokenize's and /v1/embeddings' bodies, a v2 request,
 * its inputs, outputs and parameters) has one field_table: each field's
 * name, JSON type, range or choices, and whether it is required.  A parser
 * checks the object against its table first (fields_check): a key the table
 * lacks is refused with the table's own list ("mask: unknown option 'windw';
 * expected causal, window, ... or blocks"), and so is a typed field whose
 * value is of another type or out of range, named by its path
 * ("mask.blocks.size = 0 must be at least 1").  Then the parser reads the
 * checked values (fields_bool, fields_int, fields_choice), which cannot
 * fail.  FIELD_JSON fields (arrays, nested objects, unions such as
 * mask.window) are their own parsers' to check.  JSON null is taken as
 * absent throughout, as fields_get does.  Each table is listed in
 * schemas.h beside the OpenAPI schema of the object it checks.  Below the
 * tables: the JSON accessors every parser shares (a value's kind, a member,
 * the body loaded, U+0000 refused). */
#ifndef ATTND_FIELDS_H
#define ATTND_FIELDS_H

#include "codec/body.h"
#include "protocol/api.h"

#include <stdbool.h>
#include <stddef.h>

struct json_t;

typedef enum field_type {
    FIELD_JSON,   /* any JSON value: its parser checks it */
    FIELD_BOOL,   /* true or false */
    FIELD_INT,    /* an integer in min..max */
    FIELD_STRING, /* any string */
    FIELD_CHOICE, /* one of the strings of choices */
} field_type;

typedef struct field_spec {
    const char *name; /* the JSON key */
    field_type type;
    bool required;
    long long min,
        max; /* FIELD_INT: the range (messages say it as "min..max" when max < INT_MAX) */
    const char *const *choices; /* FIELD_CHOICE: NULL-terminated */
    const char *form;           /* FIELD_JSON: what it must be, for "X is required: FORM" */
} field_spec;

typedef struct field_table {
    const char *noun; /* what the object's keys are called: "field", "option", "parameter" */
    const field_spec *fields;
    size_t n;
} field_table;

#define FIELD_TABLE(noun, fields)                                                                  \
    {                                                                                              \
        noun, fields, sizeof fields / sizeof *fields                                               \
    }

/* Checks obj (a JSON object) against t.  where names obj in messages: ""
 * for a request's body (its fields are named bare: "precision = 12 is
 * outside 1..9"), else a path ("mask", "parameters") that prefixes the
 * unknown-key message ("mask: unknown option ...") and each field's name
 * ("mask.causal must be true or false, not a string").  0, or -1 with a 400
 * in err. */
int fields_check(const field_table *t, struct json_t *obj, const char *where, api_error *err);

/* The checked value of obj.name, or def when it is absent (or null). */
bool fields_bool(const struct json_t *obj, const char *name, bool def);
long long fields_int(const struct json_t *obj, const char *name, long long def);
/* The index of the value in its table's choices (by name), or def. */
int fields_choice(const field_table *t, const struct json_t *obj, const char *name, int def);

/* ---- the JSON accessors every parser reads its body with ---- */

/* "an object", "an array", "a string", "a number", "a boolean", "null". */
const char *fields_kind(const struct json_t *v);
/* obj[key], JSON null taken as absent; borrowed. */
struct json_t *fields_get(const struct json_t *obj, const char *key);
/* A request body with no arrays scanned (len bytes; body NULL: empty)
 * read as JSON (body_load, integers beyond int64 refused): a new reference, or NULL with err set, a
 * 400 "invalid JSON at line L, column C: (byte N): ..." (a duplicate key named: "duplicate object
 * key near
 * '"input"'").
 * U+0000 ("\u0000") is taken in the strings of the top-level member text,
 * which the tokenizer reads by their length, and refused anywhere else
 * (fields_refuse_nul); text NULL: refused everywhere. */
struct json_t *fields_load(const char *body, size_t len, const char *text, api_error *err);
/* Refuses a string that holds U+0000 anywhere in root but under its
 * top-level member text (NULL: none): 400 naming where ("model",
 * "options.mask[2]").  0, or -1 with err set. */
int fields_refuse_nul(struct json_t *root, const char *text, api_error *err);
/* A body's fault (codec/body.h) as the request's error: 503 out of
 * memory, 400 "invalid JSON at line L, column C (byte N): why" (the byte
 * when with_byte and known), or the scan's own 400.  Returns -1. */
int fields_body_error(const body_json *b, bool with_byte, api_error *err);

#endif
