/* hf_util.h - what the model-directory suites share: scratch copies of a
 * fixture directory with config.json edited, loading one that must be
 * refused, or one whose outputs must be a case's, config_load on a command
 * line, and attnd refusing at start-up. */
#ifndef ATTND_TESTS_HF_UTIL_H
#define ATTND_TESTS_HF_UTIL_H

#include "config/config.h"
#include "encoder.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A scratch directory under /tmp. */
typedef struct scratch {
    char dir[64];
} scratch;

/* Makes s: config.json = base's (a directory path) with edit_json's fields
 * merged in and remove's deleted, and symlinks to base's files named in
 * links (NULL-terminated lists, or NULL). */
void scratch_make(scratch *s, const char *base, const char *edit_json, const char *const *remove,
                  const char *const *links);
/* Writes s's file name with text. */
void scratch_write(const scratch *s, const char *name, const char *text);
/* Removes s and everything in it. */
void scratch_free(scratch *s);

/* Loading directory dir (config.json, then the tensors) fails with a
 * message holding want. */
void refused(const char *dir, const char *want);

/* An edit of a directory's config.json (JSON fields merged in) and the
 * refusal it gets. */
typedef struct config_refusal {
    const char *edit, *want;
} config_refusal;

/* Each of n edits of base's config.json, its model.safetensors linked,
 * is refused with a message holding its want (refused). */
void refused_edits(const char *base, const config_refusal *cases, size_t n);

/* config_load of argv (after "attnd", NULL-terminated) and env: the
 * message into msg, or "" when it loaded (cfg then filled; config_free
 * it). */
void config_try(attnd_config *cfg, const char *const *argv, const char *const *env, char *msg,
                size_t size);

/* A command line (after "attnd", NULL-terminated) config_load refuses,
 * and what its message holds. */
typedef struct settings_refusal {
    const char *const argv[8];
    const char *want;
} settings_refusal;
/* config_try of each of n command lines fails with a message holding its
 * want. */
void settings_refused(const settings_refusal *cases, size_t n);

/* attnd args... --check-config exits with status and, as its one last line,
 * "attnd: ..." holding want. */
void startup_refused(const char *const *args, const char *want, int status);
/* startup_refused (status 2) of --model-dir: a copy of base with edit
 * merged into its config.json, its model.safetensors linked. */
void edit_startup_refused(const char *base, const char *edit, const char *want);

/* Directory dir loaded as the daemon loads it (config.json, then the
 * tensors); owned, the test failing with the message otherwise. */
enc_model *hf_load(const char *dir);

/* Tensor name of a fixture file as int32 (owned; want entries), or NULL
 * when absent. */
struct st_file;
int32_t *hf_ints(const struct st_file *f, const char *name, size_t want);

/* sha256 of the file at path, 64 hex digits and a NUL. */
void file_sha256(const char *path, char hex[65]);

/* m's tensors outside the stack and the embedding module, as the
 * fixtures' "ignored" lists them: its ignored ones, then its head's
 * (enc_model_head). */
size_t hf_outside_count(const enc_model *m);
const char *hf_outside_item(const void *m, size_t i);
/* /v1/model's weights.ignored_tensors and head.tensors together (owned). */
json_t *hf_outside_json(const json_t *model);

/* m's ignored tensors with its embedding module's, and its files (with
 * their sha256, sorted), are what the fixture's hf metadata lists (its
 * "ignored": every tensor outside the stack); name labels messages. */
void hf_check_files(const enc_model *m, const char *dir, const json_t *hf, const char *name);

/* x [B, L, D] as nested JSON arrays (owned), for /v1/encode's embeddings. */
json_t *embeddings_json(const float *x, int B, int L, int D);
/* The largest |outputs[b][i][k] - want[b][i][k]| of /v1/encode's nested
 * outputs over each sequence's first lengths[b] tokens (lengths NULL: L). */
double outputs_diff(const json_t *outputs, const float *want, int B, int L, int D,
                    const float *lengths);

/* One forward of m over in without weights (the fast one on a workspace
 * of its own, or the naive one) into out (B x L x d_model). */
void hf_forward(const enc_model *m, const enc_batch *in, bool naive, float *out);

/* The elements of dir/model.safetensors' encoder.layer.* tensors: a
 * directory's stack, as its file counts it. */
size_t hf_stack_params(const char *dir);

/* Loads directory dir (config.json, then the tensors) and runs it (the
 * fast forward, or the naive one) over case_dir/case.safetensors' x and
 * lengths: the largest difference from its out. */
double dir_outputs_diff(const char *dir, const char *case_dir, bool naive);

/* Tensor name of dir's text.safetensors (tools/fixtures/make_text_fixtures.py) as
 * floats (owned), its first dimensions in dims (0 past its rank). */
float *hf_text_tensor(const char *dir, const char *name, int dims[3]);

/* Token ids of dir's text.safetensors: ids [B, L] and each row's length
 * (the mask's ones; mask_name NULL: L), as floats (owned). */
typedef struct hf_ids {
    float *ids, *lengths;
    int B, L;
} hf_ids;
hf_ids hf_text_ids(const char *dir, const char *ids_name, const char *mask_name);
/* Row b of x, its first lengths[b] ids, as a JSON list of ints (owned). */
json_t *hf_ids_row(const hf_ids *x, int b);
void hf_ids_free(hf_ids *x);

/* A text fixture's batch and its reference, from dir's text.safetensors:
 * the ids as a forward takes them, each text's length (its longest in
 * longest), last_hidden_state (want), and a batch over them (in: no mask
 * but the lengths; a suite may set in.mask).  Not to be copied: in points
 * at the case's own ids. */
typedef struct hf_case {
    int B, L, D, longest;
    int32_t *ids;
    int *lengths;
    float *want, *out; /* (B, L, D) each: the reference, hf_case_diff's outputs */
    enc_ids in_ids;
    enc_batch in;
} hf_case;
void hf_case_load(hf_case *c, const char *dir);
/* m's forward over c->in (the fast one, or the naive one) into c->out: the
 * largest difference from want over each text's real tokens. */
double hf_case_diff(hf_case *c, const enc_model *m, bool naive);
void hf_case_free(hf_case *c);
/* Both forwards of m over c: within tol of the reference where changed is
 * NULL, else (m changed as that says) further than far from it. */
void hf_case_expect(hf_case *c, const enc_model *m, const char *changed, double tol, double far);

/* A tensor of a model file and where the model bound it (cols 0: a
 * vector). */
typedef struct bound_tensor {
    const char *name;
    const float *got;
    int64_t rows, cols;
} bound_tensor;
/* Each of parts is in file (a float32 safetensors path) with that shape,
 * bound with the same values, and a matrix read in place in m's mapping. */
void expect_bound(const enc_model *m, const char *file, const bound_tensor *parts, size_t n);
/* The parameters of file's tensors but the one named skip (the stack's
 * where skip is the word table). */
size_t file_params_but(const char *file, const char *skip);

#endif
