/* builtin.h - what the built-in model (no model.dir, no model.weights) brings
 * besides its seeded weights: a tokenizer.json, so that it takes text with
 * nothing downloaded.  The Makefile writes it at build time from a word list
 * (config/builtin_tokenizer.sh over Debian's wamerican) and turns it into
 * $(BUILD)/gen/builtin_tokenizer.c with od and sed, as the page.
 *
 *     tok_tokenizer *t = tok_load_json((const char *)builtin_tokenizer_json,
 *                                      builtin_tokenizer_json_len, &err);
 */
#ifndef ATTND_BUILTIN_H
#define ATTND_BUILTIN_H

#include <stddef.h>

/* The tokenizer.json's bytes (UTF-8, not NUL-terminated) and their count. */
extern const unsigned char builtin_tokenizer_json[];
extern const size_t builtin_tokenizer_json_len;

#endif
