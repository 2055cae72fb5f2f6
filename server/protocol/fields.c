/* fields.c - checking a request's JSON object against its field table
 * (fields.h).  The messages are the codecs' wording: api.h's quoting and
 * JSON kinds. */
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
            return BAD("%s must be true or false, not %s", name, api_json_kind(v));
        return 0;
    case FIELD_STRING:
        if (!json_is_string(v))
            return BAD("%s must be a string, not %s", name, api_json_kind(v));
        return 0;
    case FIELD_CHOICE: {
        const char *s = json_string_value(v);
        list_text(list, sizeof list, f->choices, SIZE_MAX, "\"");
        if (!s)
            return BAD("%s must be %s, not %s", name, list, api_json_kind(v));
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
                       api_json_kind(v));
        if (!json_is_integer(v))
            return BAD("%s must be an integer, not %s", name, api_json_kind(v));
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
        v = api_json_field(obj, f->name);
        if (!v && f->required)
            return BAD("%s is required%s%s", name, f->form ? ": " : "", f->form ? f->form : "");
        if (v && check_value(f, v, name, err) < 0)
            return -1;
    }
    return 0;
}

bool fields_bool(const json_t *obj, const char *name, bool def)
{
    const json_t *v = api_json_field(obj, name);
    return v ? json_is_true(v) : def;
}

long long fields_int(const json_t *obj, const char *name, long long def)
{
    const json_t *v = api_json_field(obj, name);
    return v ? json_integer_value(v) : def;
}

int fields_choice(const field_table *t, const json_t *obj, const char *name, int def)
{
    const field_spec *f = find(t, name);
    const char *s = json_string_value(api_json_field(obj, name));
    if (!f || !s)
        return def;
    for (int i = 0; f->choices[i]; i++)
        if (strcmp(f->choices[i], s) == 0)
            return i;
    return def;
}
