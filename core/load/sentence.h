/* sentence.h - what a sentence-transformers directory says of its text
 * input (sentence.c): its Transformer module's max_seq_length
 * (sentence_bert_config.json), and the prompts its encode prepends
 * (config_sentence_transformers.json's prompts and default_prompt_name).
 *
 *     enc_st_text st;
 *     if (enc_st_text_read(dir, &st, &err) < 0) ... the file and key named
 *     const char *p = enc_st_text_prompt(&st, "query"); // NULL: no such prompt
 *     enc_st_text_free(&st);
 */
#ifndef ATTND_LOAD_SENTENCE_H
#define ATTND_LOAD_SENTENCE_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>

/* A prompt: its name and the text prepended to an input. */
typedef struct enc_st_prompt {
    char *name, *text; /* owned */
} enc_st_prompt;

typedef struct enc_st_text {
    int max_seq_length;     /* sentence_bert_config.json's; 0: the file or the key is absent */
    enc_st_prompt *prompts; /* owned (n_prompts), in the file's order */
    size_t n_prompts;
    char *default_prompt_name; /* owned: one of the prompts' names, or NULL */
    /* config_sentence_transformers.json's model_type is "CrossEncoder"
     * (sentence-transformers 5.4+): its predict and rank put the prompt
     * before a pair's first text */
    bool cross_encoder;
} enc_st_text;

/* Reads dir/sentence_bert_config.json and dir/config_sentence_transformers.json
 * (each may be absent) into *t (zeroed first).  0, or ENC_EFORMAT /
 * ENC_EINVAL with err naming the file and key: the JSON, a max_seq_length
 * that is not a positive integer (null is none), prompts that are not an
 * object of strings, a default_prompt_name that is not one of them (as
 * sentence-transformers refuses it).  t is then empty. */
int enc_st_text_read(const char *dir, enc_st_text *t, enc_error *err);

/* The text of the prompt named name (borrowed), or NULL when t has none
 * of that name. */
const char *enc_st_text_prompt(const enc_st_text *t, const char *name);

/* Frees t's contents and zeroes it; a zeroed t is fine. */
void enc_st_text_free(enc_st_text *t);

#endif
