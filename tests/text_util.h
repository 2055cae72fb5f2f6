/* text_util.h - what the text suites share (text_util.c): the daemon on
 * tests/fixtures/hf/bert_text that a suite's case starts and stops
 * (text_start, text_stop), requests to it or to another daemon, the
 * refusals' messages, an embedding read from a response, and a fixture's
 * pooled tensor. */
#ifndef ATTND_TESTS_TEXT_UTIL_H
#define ATTND_TESTS_TEXT_UTIL_H

#include "daemon.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TEXT_DIR TESTS_DIR "/fixtures/hf/bert_text"

/* The daemon on TEXT_DIR, one worker; text_up when it started. */
extern daemon_proc text_daemon;
extern bool text_up;

/* A Check unchecked fixture's setup and teardown: text_daemon started and
 * stopped. */
void text_start(void);
void text_stop(void);

/* POSTs body (a JSON text) to path on port; the response parsed (owned),
 * its status in *status. */
json_t *post_at(int port, const char *path, const char *body, long *status);

/* The same to text_daemon. */
json_t *post(const char *path, const char *body, long *status);

/* post with body as a JSON value (its reference taken). */
json_t *post_json(const char *path, json_t *body, long *status);

/* post_at with body as a JSON value (its reference taken). */
json_t *post_json_at(int port, const char *path, json_t *body, long *status);

/* The error message of a refusal with the status expected (either error
 * shape: /v2's {"error": "..."} or {"error": {"message": ...}}). */
void expect_error(const char *path, const char *body, long want_status, const char *want);
/* The same to the daemon on port. */
void expect_error_at(int port, const char *path, const char *body, long want_status,
                     const char *want);

/* /v1/tokenize's one list of tokens for body on port (owned; body's
 * reference taken), its status 200. */
json_t *tokens_of(int port, json_t *body);

/* GET /v1/model on port (owned), its status 200. */
json_t *model_info(int port);

/* GET /v1/model on port: every field of the JSON object want (text) is
 * its hyperparameters' (a nested object or list compared whole; numbers
 * by value, so 16 and 16.0 are equal), or the test fails naming it. */
void expect_hyperparameters(int port, const char *want);

/* GET /v1/model's tokenizer on port (owned). */
json_t *model_tokenizer(int port);

/* The n numbers of a JSON array into out; the test fails on another count. */
void floats_of(const json_t *array, float *out, size_t n);

/* The embedding of row b of data (float list or base64 of float32) into out (n). */
void embedding_of(const json_t *data, size_t b, float *out, size_t n);

/* The pooled tensor name of dir's text.safetensors, as B rows of D floats
 * (owned). */
float *pooled_fixture(const char *dir, const char *name, int *B, int *D);

/* /v1/embeddings on port of text.json's texts of fixture directory dir
 * (make_text_fixtures.py's): each row within tol of text.safetensors'
 * tensor (a pooled one).  The number of rows. */
int embeddings_match_fixture(int port, const char *dir, const char *tensor, double tol);

/* A text fixture directory (make_text_fixtures.py's dir) served on port,
 * text in: /v1/encode gives Hugging Face's ids of text.json's texts and of
 * its pair, and last_hidden_state / pair_last_hidden_state of them within
 * tol; /v1/embeddings gives text.safetensors' tensor (a pooled one) within
 * tol. */
void text_matches_fixture(int port, const char *dir, const char *tensor, double tol);

#endif
