/* fields.c - checking a request's JSON object against its field table
 * (fields.h), and the JSON accessors the parsers share: a value's kind, a
 * member, a body loaded with U+0000 refused.  The messages are the codecs'
 * wording: api.h's quoting. */
#include "protocol/fields.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BAD(...) api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)

static const field_spec *find(const field_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->fields[i].name, name) == 0)
            return &t->fields[i];
    return NULL;
}

/* "a, b or c" from items (n of them, or up to NULL when n is SIZE_MAX),
 * each quoted with quote; cut at size. */
static const char *list_text(char *buf, size_t size, const char *const *items, size_t n,
                             const char *quote)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && items[i]; i++) {
        const bool last = i + 1 == n || !items[i + 1];
        const char *sep = i == 0 ? "" : last ? " or " : ", ";
        int w = snprintf(buf + used, size - used, "%s%s%s%s", sep, quote, items[i], quote);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    return buf;
}

static const char *names_text(const field_table *t, char *buf, size_t size)
{
    const char *names[64];
    size_t n = t->n < 64 ? t->n : 64;
    for (size_t i = 0; i < n; i++)
        names[i] = t->fields[i].name;
    return list_text(buf, size, names, n, "");
}

/* One present field's value against its type and range. */
static int check_value(const field_spec *f, const json_t *v, const char *name, api_error *err)
{
    char q[API_SAFE_MAX + 4], list[256];
    switch (f->type) {
    case FIELD_JSON:
        return 0;
    case FIELD_BOOL:
        if (!json_is_boolean(v))
            return BAD("%s must be true or false, not %s", name, fields_kind(v));
        return 0;
    case FIELD_STRING:
        if (!json_is_string(v))
            return BAD("%s must be a string, not %s", name, fields_kind(v));
        return 0;
    case FIELD_CHOICE: {
        const char *s = json_string_value(v);
        list_text(list, sizeof list, f->choices, SIZE_MAX, "\"");
        if (!s)
            return BAD("%s must be %s, not %s", name, list, fields_kind(v));
        for (const char *const *c = f->choices; *c; c++)
            if (strcmp(*c, s) == 0)
                return 0;
        return BAD("%s must be %s, not '%s'", name, list, api_safe_text(s, q));
    }
    case FIELD_INT: {
        /* A range of a few values is said as one ("1..9"); a lower bound
         * alone, as one. */
        const bool range = f->max < INT_MAX;
        const long long x = json_integer_value(v);
        if (!json_is_integer(v) && range)
            return BAD("%s must be an integer %lld..%lld, not %s", name, f->min, f->max,
                       fields_kind(v));
        if (!json_is_integer(v))
            return BAD("%s must be an integer, not %s", name, fields_kind(v));
        if (range && (x < f->min || x > f->max))
            return BAD("%s = %lld is outside %lld..%lld", name, x, f->min, f->max);
        if (x < f->min && f->min == 0)
            return BAD("%s = %lld must not be negative", name, x);
        if (x < f->min)
            return BAD("%s = %lld must be at least %lld", name, x, f->min);
        if (x > f->max)
            return BAD("%s = %lld is too large (at most %lld)", name, x, f->max);
        return 0;
    }
    }
    return 0;
}

int fields_check(const field_table *t, json_t *obj, const char *where, api_error *err)
{
    const char *key;
    json_t *v;
    char q[API_SAFE_MAX + 4], list[512], name[128];
    json_object_foreach(obj, key, v)
    {
        if (!find(t, key))
            return BAD("%s%sunknown %s '%s'; expected %s", where, *where ? ": " : "", t->noun,
                       api_safe_text(key, q), names_text(t, list, sizeof list));
    }
    for (size_t i = 0; i < t->n; i++) {
        const field_spec *f = &t->fields[i];
        snprintf(name, sizeof name, "%s%s%s", where, *where ? "." : "", f->name);
        v = fields_get(obj, f->name);
        if (!v && f->required)
            return BAD("%s is required%s%s", name, f->form ? ": " : "", f->form ? f->form : "");
        if (v && check_value(f, v, name, err) < 0)
            return -1;
    }
    return 0;
}

bool fields_bool(const json_t *obj, const char *name, bool def)
{
    const json_t *v = fields_get(obj, name);
    return v ? json_is_true(v) : def;
}

long long fields_int(const json_t *obj, const char *name, long long def)
{
    const json_t *v = fields_get(obj, name);
    return v ? json_integer_value(v) : def;
}

int fields_choice(const field_table *t, const json_t *obj, const char *name, int def)
{
    const field_spec *f = find(t, name);
    const char *s = json_string_value(fields_get(obj, name));
    if (!f || !s)
        return def;
    for (int i = 0; f->choices[i]; i++)
        if (strcmp(f->choices[i], s) == 0)
            return i;
    return def;
}

/* ---- the JSON accessors ------------------------------------------------------ */

/* "a string", "an array", ... for messages. */
const char *fields_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* obj[key], with JSON null taken as absent.  Borrowed. */
json_t *fields_get(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* ---- request bodies ------------------------------------------------------------ */

int fields_body_error(const body_json *b, bool with_byte, api_error *err)
{
    if (b->fault == BODY_OOM)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    if (b->fault == BODY_SCAN)
        return api_error_set(err, API_BAD_REQUEST, "%s", b->why);
    char at[32] = "";
    if (with_byte && b->byte >= 0)
        snprintf(at, sizeof at, " (byte %d)", b->byte);
    return api_error_set(err, API_BAD_REQUEST, "invalid JSON at line %d, column %d%s: %s", b->line,
                         b->column, at, b->why);
}

/* The first string under v (named name, len bytes of it used) that holds
 * U+0000: its name in name, and 1; 0 when there is none. */
static int nul_find(json_t *v, char *name, size_t len, size_t size)
{
    if (json_is_string(v))
        return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
    size_t i;
    const char *key;
    json_t *item;
    char q[API_SAFE_MAX + 4];
    if (json_is_array(v)) {
        json_array_foreach(v, i, item)
        {
            snprintf(name + len, size - len, "[%zu]", i);
            if (nul_find(item, name, strlen(name), size))
                return 1;
        }
    } else if (json_is_object(v)) {
        json_object_foreach(v, key, item)
        {
            snprintf(name + len, size - len, "%s%s", len ? "." : "", api_safe_text(key, q));
            if (nul_find(item, name, strlen(name), size))
                return 1;
        }
    }
    name[len] = '\0';
    return 0;
}

int fields_refuse_nul(json_t *root, const char *text, api_error *err)
{
    char name[256] = "";
    const char *key;
    json_t *item;
    if (!json_is_object(root)) {
        if (nul_find(root, name, 0, sizeof name))
            return api_error_set(err, API_BAD_REQUEST,
                                 "the body's strings must not contain U+0000 (\\u0000)");
        return 0;
    }
    json_object_foreach(root, key, item)
    {
        if (text && strcmp(key, text) == 0)
            continue;
        snprintf(name, sizeof name, "%s", key);
        if (nul_find(item, name, strlen(name), sizeof name)) {
            char q[2 * API_SAFE_MAX + 8];
            return api_error_set(err, API_BAD_REQUEST, "%s must not contain U+0000 (\\u0000)%s%s%s",
                                 api_safe_text_n(name, q, 2 * API_SAFE_MAX), text ? ": only " : "",
                                 text ? text : "", text ? " may" : "");
        }
    }
    return 0;
}

json_t *fields_load(const char *body, size_t len, const char *text, api_error *err)
{
    body_json b;
    if (body_load(body, len, NULL, 0, NULL, 0, true, &b) < 0) {
        fields_body_error(&b, true, err);
        return NULL;
    }
    if (fields_refuse_nul(b.root, text, err) < 0) {
        json_decref(b.root);
        return NULL;
    }
    return b.root;
}
