/* regex.h - tokenizer.json's patterns, on Oniguruma (the engine tokenizers
 * uses). */
#ifndef ATTND_TOK_REGEX_H
#define ATTND_TOK_REGEX_H

#include "base/error.h"
#include "tokenizer/str.h"

#include <jansson.h>
#include <stddef.h>

typedef struct tok_regex tok_regex;
void tok_regex_free(tok_regex *re);
/* pattern (len bytes, UTF-8) compiled as the onig crate's Regex::new does;
 * NULL with err naming what. */
tok_regex *tok_regex_compile(const char *pattern, size_t len, enc_error *err, const char *what);
/* tokenizer.json's {"String": s} or {"Regex": r} pattern (path names it),
 * compiled as tokenizers' Split and Replace do: a String is escaped
 * (regex::escape) and matched literally. */
tok_regex *tok_regex_pattern(const json_t *pattern, const char *path, enc_error *err);
/* Finds the matches of re in s's code points, left to right,
 * non-overlapping, as the onig crate's find_iter that tokenizers' find_matches
 * walks: calls fn(a, b, ctx) for each match [a, b) in code point indices.
 * Empty matches are reported too (tokenizers keeps them), except one at the
 * end of the previous match.  A negative return from fn stops the walk and
 * is returned.  0, or a negative enc_status. */
int tok_regex_each(const tok_regex *re, const tok_str *s, int (*fn)(size_t a, size_t b, void *ctx),
                   void *ctx);

#endif
