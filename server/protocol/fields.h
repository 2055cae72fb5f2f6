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
 * absent throughout, as api_json_field does.  Each table is listed in
 * schemas.h beside the OpenAPI schema of the object it checks. */
#ifndef ATTND_FIELDS_H
#define ATTND_FIELDS_H

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

#endif
