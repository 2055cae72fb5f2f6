/* regex.c - tok_regex_*: tokenizer.json's patterns on Oniguruma, the engine
 * tokenizers' SysRegex uses (utils/onig.rs: the onig crate's Regex::new, so
 * ONIG_OPTION_NONE, the default syntax, UTF-8, and its find_iter's rule for
 * empty matches). */
#include "tokenizer/regex.h"

#include "tokenizer/utf8.h"

#include <oniguruma.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct tok_regex {
    regex_t *re;
};

static pthread_once_t onig_once = PTHREAD_ONCE_INIT;
/* onig_new is not thread-safe (the onig crate takes a lock around it too) */
static pthread_mutex_t onig_lock = PTHREAD_MUTEX_INITIALIZER;

static void onig_setup(void)
{
    OnigEncoding enc[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(enc, 1);
}

tok_regex *tok_regex_compile(const char *pattern, size_t len, enc_error *err, const char *what)
{
    pthread_once(&onig_once, onig_setup);
    tok_regex *r = calloc(1, sizeof *r);
    if (!r) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", what);
        return NULL;
    }
    OnigErrorInfo info;
    pthread_mutex_lock(&onig_lock);
    int rc = onig_new(&r->re, (const OnigUChar *)pattern, (const OnigUChar *)pattern + len,
                      ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
    pthread_mutex_unlock(&onig_lock);
    if (rc != ONIG_NORMAL) {
        OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, rc, &info);
        enc_error_set(err, rc == ONIGERR_MEMORY ? ENC_ENOMEM : ENC_EFORMAT,
                      "%s: the regular expression does not compile: %s", what, (char *)msg);
        free(r);
        return NULL;
    }
    return r;
}

void tok_regex_free(tok_regex *re)
{
    if (!re)
        return;
    if (re->re)
        onig_free(re->re);
    free(re);
}

/* regex::escape's metacharacters (regex-syntax is_meta_character). */
static bool is_meta(unsigned char c)
{
    return c && strchr("\\.+*?()|[]{}^$#&-~", c) != NULL;
}

tok_regex *tok_regex_pattern(const json_t *pattern, const char *path, enc_error *err)
{
    const json_t *v;
    if (json_is_object(pattern) && json_object_size(pattern) == 1 &&
        (v = json_object_get(pattern, "Regex"))) {
        if (!json_is_string(v)) {
            enc_error_set(err, ENC_EFORMAT, "%s.Regex must be a string", path);
            return NULL;
        }
        return tok_regex_compile(json_string_value(v), json_string_length(v), err, path);
    }
    if (!json_is_object(pattern) || json_object_size(pattern) != 1 ||
        !(v = json_object_get(pattern, "String"))) {
        enc_error_set(err, ENC_EINVAL,
                      "%s: only {\"String\": ...} or {\"Regex\": ...} is supported", path);
        return NULL;
    }
    if (!json_is_string(v)) {
        enc_error_set(err, ENC_EFORMAT, "%s.String must be a string", path);
        return NULL;
    }
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    char *esc = malloc(4 * len + 1);
    if (!esc) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) {
            memcpy(esc + n, "\\x00", 4);
            n += 4;
            continue;
        }
        if (is_meta(c))
            esc[n++] = '\\';
        esc[n++] = (char)c;
    }
    tok_regex *re = tok_regex_compile(esc, n, err, path);
    free(esc);
    return re;
}

/* The length of the UTF-8 sequence that starts with byte b. */
static size_t utf8_len(unsigned char b)
{
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

int tok_regex_each(const tok_regex *re, const tok_str *s, int (*fn)(size_t a, size_t b, void *ctx),
                   void *ctx)
{
    if (s->n == 0)
        return 0; /* find_matches returns before searching an empty string */
    size_t cap = 4 * s->n + 1;
    unsigned char *text = malloc(cap);
    size_t *at = malloc(cap * sizeof *at); /* byte -> code point index */
    OnigRegion *region = onig_region_new();
    int rc = 0;
    if (!text || !at || !region) {
        rc = ENC_ENOMEM;
        goto done;
    }
    size_t len = 0;
    for (size_t i = 0; i < s->n; i++) {
        int l = tok_utf8_put(s->cp[i], (char *)text + len);
        for (int k = 0; k < l; k++)
            at[len + (size_t)k] = i;
        len += (size_t)l;
    }
    at[len] = s->n;
    /* the onig crate's FindMatches::next */
    size_t last_end = 0;
    bool have_last = false;
    size_t last_match_end = 0;
    while (last_end <= len) {
        onig_region_clear(region);
        int r = onig_search(re->re, text, text + len, text + last_end, text + len, region,
                            ONIG_OPTION_NONE);
        if (r == ONIG_MISMATCH)
            break;
        if (r < 0) {
            rc = r == ONIGERR_MEMORY ? ENC_ENOMEM : ENC_ELIMIT;
            break;
        }
        size_t a = (size_t)region->beg[0], b = (size_t)region->end[0];
        if (a == b && have_last && last_match_end == b) {
            /* an empty match where the last one ended: step one char */
            last_end += last_end < len ? utf8_len(text[last_end]) : 1;
            continue;
        }
        last_end = b;
        last_match_end = b;
        have_last = true;
        rc = fn(at[a], at[b], ctx);
        if (rc < 0)
            break;
    }
done:
    free(text);
    free(at);
    if (region)
        onig_region_free(region, 1);
    return rc;
}
