/* tok_util.c - the tokenizer suites' fixtures (tok_util.h). */
#include "tok_util.h"

#include <check.h>
#include <stdio.h>

tok_tokenizer *tokenizer_fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s/tokenizer.json", name);
    enc_error err = {0};
    tok_tokenizer *t = tok_load(path, &err);
    ck_assert_msg(t != NULL, "%s: %s", name, err.message);
    return t;
}

json_t *tokenizer_fixture_json(const char *name, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s/%s", name, file);
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_ALLOW_NUL, &jerr); /* a byte-level token's NUL, decoded */
    ck_assert_msg(j != NULL, "%s: %s", path, jerr.text);
    return j;
}
