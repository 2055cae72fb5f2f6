/* v1_util.h - what the /v1/encode codec suites share (v1_util.c): how a
 * received number is held to an expected one, the PyTorch fixture cases,
 * request bodies written here (not by the code under test), one request
 * run end to end, and the small seeded model of the invalid-request
 * directory.  Element loops record the first mismatch and assert once per
 * tensor: a Check assertion per number would make the forked runner crawl. */
#ifndef ATTND_TESTS_V1_UTIL_H
#define ATTND_TESTS_V1_UTIL_H

#include "protocol/v1.h"
#include "load/safetensors.h"
#include "test_util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INVALID_DIR TESTS_DIR "/fixtures/requests/invalid"
#define TOL         1e-4

/* How a received number is held to an expected float: exact (the float the
 * printed text rounds to, or the decoded float, equals it) or within
 * abs + rel * |want|. */
typedef struct tol {
    bool exact;
    double abs, rel;
} tol;

enum { T_OUT, T_HEADS, T_MEAN };

/* The batch the expected arrays describe: out (B, L, D), attention heads
 * (B, H, L, L), mean (B, L, L); sequence b has len(b) real rows. */
typedef struct layout {
    int B, L, D, H;
    const int *lengths;
} layout;

typedef struct tokens {
    const char **start;
    size_t *len;
    size_t n;
} tokens;

typedef struct fx {
    char name[256];
    enc_hparams hp;
    enc_model *model;
    st_file file;
    layout y;
    float *x;             /* (B, L, D) */
    int *lengths;         /* (B) or NULL */
    uint8_t *key_padding; /* (B, L) or NULL */
    float *attn;          /* (B or 1, L, L) or NULL: values of attn_bool or attn_add */
    bool attn_is_bool, attn_per_seq;
    bool causal;
    int win_left, win_right; /* -1: unbounded */
    int global[16];
    size_t n_global;
    char patterns[512]; /* the sparse pattern options, as JSON members ", \"strided\": {...}" */
    int32_t *positions; /* (B, L) position_ids, or NULL */
} fx;

typedef struct run {
    encode_request req;
    char *text; /* the response body */
    size_t len;
    json_t *resp; /* parsed with jansson */
} run;

/* The small model of the invalid directory, built from a seed. */
typedef struct small {
    enc_hparams hp;
    api_ctx lim;
    enc_model *model;
} small;

extern const tol TORCH_TOL;
extern const tol EXACT;
extern const api_ctx ROOMY;
/* An embedding module as the core describes one (BERT's: vocab 50, 2 types,
 * 24 positions), for the codecs' parsers alone: the seeded models have none. */
extern const char *const FAKE_TENSORS[];
extern const enc_embedding_info FAKE_BERT;

bool value_ok(double got, float want, const tol *t);

size_t lay_len(const layout *y, int b);

float want_at(const layout *y, const float *want, int kind, int b, size_t h, size_t i, size_t j);

/* Sequence b of a nested JSON response value: [len][D], [H][len][len] or
 * [len][len], exactly (ragged: no padding rows). */
int cmp_json_seq(chk *k, const json_t *node, const layout *y, const float *want, int kind, int b,
                 const tol *t, const char *what);

/* A nested JSON response value: [B]... (seq < 0) or sequence seq alone. */
void check_json(const json_t *node, const layout *y, const float *want, int kind, int seq,
                const tol *t, const char *what);

/* The floats of a base64 string (owned), decoded here from little-endian. */
float *b64_floats(const json_t *s, size_t *n);

int check_dims(chk *k, const json_t *shape, const size_t *dims, size_t nd, const char *what);

/* A base64 response value and its shape: one string for the batch (no
 * lengths) or the single sequence seq; with lengths and seq < 0, one string
 * and one shape per sequence. */
void check_b64(const json_t *node, const json_t *shape, const layout *y, const float *want,
               int kind, int seq, const tol *t, const char *what);

/* The number tokens of the array that follows "key": in text, in order. */
tokens scan_numbers(const char *text, const char *key);

void tokens_free(tokens *t);

/* Significant digits of a printed number: mantissa digits after leading zeros. */
int sig_digits(const char *s, size_t n);

/* Every token of the outputs (kind T_OUT) or attention array, in order, is
 * the float want holds there when read with strtof. */
void check_tokens_exact(const tokens *t, const layout *y, const float *want, int kind,
                        const char *what);

/* A fixture tensor as floats (owned), or NULL if absent. */
float *fx_floats(const fx *c, const char *name, size_t *numel);

/* Fixture tensor "name" (layer < 0) or "name.layer"; must exist. */
float *fx_want(const fx *c, const char *name, int layer);

/* An integer of a metadata object, or -1 (an unbounded window side) if absent. */
int meta_int(const json_t *o, const char *key);

void fx_load(fx *c, const char *name);

void fx_free(fx *c);

void put_float(FILE *f, float v);

void put_matrix(FILE *f, const float *m, size_t rows, size_t cols);

/* "embeddings": x[b0 .. b0+nb) nested ([B][L][D], or [L][D] when unbatched),
 * or "embeddings_b64" + "shape" with base64_encode of little-endian bytes. */
void put_embeddings(FILE *f, const float *x, int nb, int L, int D, bool batched, bool b64);

/* The body for fixture c: the whole batch (seq < 0) or sequence seq alone in
 * the unbatched [L][D] form; extra: more top-level fields, or NULL. */
char *fx_body(const fx *c, int seq, bool b64, const char *extra);

/* parse -> alloc outputs -> enc_forward -> encode_response -> json_loads. */
void run_body(run *r, const enc_model *m, const enc_hparams *hp, const char *body,
              const char *what);

void run_free(run *r);

void check_shape(const json_t *shape, const size_t *dims, size_t nd);

void check_usage(const json_t *resp, const layout *y, int seq);

/* ---- token ids: the Hugging Face fixtures' ids.safetensors ---------------- */

/* A Hugging Face fixture directory run from token ids (ids.safetensors,
 * written by tools/fixtures/make_hf_fixtures.py / make_modernbert_fixtures.py /
 * make_mpnet_fixtures.py):
 * input_ids (B, L) padded with pad_token_id past lengths, lengths, and
 * optionally token_type_ids and position_ids; out (B, L, D) and attn.{l}
 * (B, H, L, L), zero where a query or key is padding. */
typedef struct ids_fx {
    char dir[512];
    char name[64];
    st_file file; /* ids.safetensors */
    int B, L, D, H, n_layers;
    int32_t *input_ids;      /* (B, L) */
    int32_t *token_type_ids; /* (B, L) or NULL */
    int32_t *position_ids;   /* (B, L) or NULL */
    int *lengths;            /* (B) */
    layout y;
    json_t *embedding; /* metadata "embedding": position, tensors, ignored */
} ids_fx;

/* The fixture directories that hold ids.safetensors, under
 * tests/fixtures/hf/, hf5/ (transformers 5.x's config.json), modernbert/,
 * modernbert5/ and mpnet/, sorted. */
int ids_fx_count(void);
const char *ids_fx_dir(int i);

void ids_fx_load(ids_fx *c, const char *dir);
void ids_fx_free(ids_fx *c);
/* "out" or "attn.{layer}" (owned floats); must exist. */
float *ids_fx_want(const ids_fx *c, int layer);
/* The directory's model, loaded as the daemon loads it (owned). */
enc_model *ids_fx_model(const ids_fx *c);

typedef enum ids_form {
    IDS_PADDED, /* int[B][L] as the fixture pads them, with lengths */
    IDS_RAGGED, /* each row cut to its length, no lengths */
    IDS_MASK,   /* int[B][L] with attention_mask (1 below the length) instead of lengths */
    IDS_ONE,    /* sequence seq alone, int[len] */
} ids_form;

/* A /v1/encode body for c in form (seq: IDS_ONE's sequence), token types
 * and positions when the fixture has them; extra: more top-level fields,
 * or NULL.  Owned. */
char *ids_body(const ids_fx *c, ids_form form, int seq, const char *extra);

char *read_file(const char *path, size_t *size);

/* The model and limits of expected.json's "_config". */
void invalid_config(const json_t *cfg, enc_hparams *hp, api_ctx *lim);

bool printable(const char *s);

void small_load(small *s);

int parse_small(const small *s, const char *body, encode_request *req, api_error *err);

/* got against want: numbers within 1e-6 + 1e-4 of their size (a pipeline's
 * scores), integers as integers, everything else equal, the same keys and
 * lengths.  NULL, or the path where they differ (owned). */
char *json_near(const json_t *got, json_t *want, const char *path);

#endif
