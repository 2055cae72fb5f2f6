/* check_heads.c - the checkpoint's own answer: each task-head directory of
 * tests/fixtures/heads (tools/fixtures/make_head_fixtures.py: transformers'
 * *ForSequenceClassification, *ForTokenClassification and *ForMaskedLM
 * written out in torch after its modeling code, 4.x- and 5.x-saved, tied
 * and untied) loaded as the daemon loads it, its head described as
 * config.json says, its logits and SPLADE vector from token ids within 1e-4
 * of the fixture's, on the packed GEMM and on OpenBLAS, on one thread and
 * two, alone and batched with another job; the refusals, naming the field
 * or tensor; and /v1/encode's "logits" and /v1/model's "head" from a
 * daemon. */
#include "daemon.h"
#include "hf_util.h"
#include "kernels/simd.h"
#include "load/safetensors.h"
#include "model/embed.h"
#include "model/head.h"
#include "model/model.h"
#include "model/rollout.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"
#include "v1_util.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADS    TESTS_DIR "/fixtures/heads"
#define HEAD_TOL 1e-5

static const char *const CASES[] = {
    "bert_seq",           "bert_seq_5",
    "roberta_seq",        "xlm_roberta_rerank",
    "camembert_seq",      "electra_seq",
    "distilbert_seq",     "distilbert_regress",
    "modernbert_seq_cls", "modernbert_seq_mean",
    "cross_encoder",      "bert_token",
    "roberta_token",      "distilbert_token",
    "electra_token",      "modernbert_token",
    "bert_token_5",       "bert_mlm",
    "bert_mlm_twice",     "bert_mlm_untied",
    "bert_mlm_5",         "roberta_mlm",
    "xlm_roberta_mlm",    "distilbert_mlm",
    "modernbert_mlm",     "modernbert_mlm_5",
    "mpnet_seq",          "mpnet_token",
    "mpnet_mlm",          "gte_rerank",
    "gte_token",          "gte_mlm",
    "deberta_seq",        "deberta_token",
    "deberta_mlm",        "deberta_mlm_new",
    "qwen3_seq",          "qwen3_token",
    "gemma3_seq",         "qwen2_seq",
    "jina_rerank",        "mistral_seq",
};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

/* A case's head.safetensors: the batch as the core takes it, and what the
 * head must give. */
typedef struct head_case {
    st_file f;
    int B, L;
    int32_t *input_ids, *types; /* types NULL when the family has none */
    int *lengths;
    enc_ids ids;
    enc_batch in;
    float *logits, *splade; /* splade NULL but for masked LMs */
    size_t n_logits;
    json_t *head; /* the metadata's "head" */
} head_case;

static void case_open(head_case *k, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/head.safetensors", dir);
    enc_error err = {0};
    memset(k, 0, sizeof *k);
    ck_assert_msg(st_open(&k->f, path, &err) == 0, "%s: %s", path, err.message);
    const st_tensor *t = st_find(&k->f, "input_ids");
    ck_assert(t && t->ndim == 2);
    k->B = (int)t->shape[0];
    k->L = (int)t->shape[1];
    const size_t BL = (size_t)k->B * k->L;
    k->input_ids = hf_ints(&k->f, "input_ids", BL);
    k->types = hf_ints(&k->f, "token_type_ids", BL);
    int32_t *len = hf_ints(&k->f, "lengths", (size_t)k->B);
    k->lengths = xcalloc((size_t)k->B, sizeof *k->lengths);
    for (int b = 0; b < k->B; b++)
        k->lengths[b] = len[b];
    free(len);
    k->ids = (enc_ids){.input_ids = k->input_ids, .token_type_ids = k->types};
    k->in = batch_plain(NULL, k->B, k->L, k->lengths);
    k->in.ids = &k->ids;
    enc_hf_config c;
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", dir, err.message);
    k->in.mask.causal = c.hp.causal; /* a decoder's (Qwen3's) */
    k->logits = torch_floats(&k->f, "logits", &k->n_logits);
    k->splade = torch_floats(&k->f, "splade", NULL);
    k->head = json_loads(st_metadata(&k->f, "head"), 0, NULL);
    ck_assert_msg(k->logits && k->head, "%s: no logits or head metadata", path);
}

static void case_close(head_case *k)
{
    free(k->input_ids);
    free(k->types);
    free(k->lengths);
    free(k->logits);
    free(k->splade);
    json_decref(k->head);
    st_close(&k->f);
}

/* The strings of the JSON array want are n, and items (in any order). */
static void same_names(const char *what, const char *name, size_t n, const char *const *items,
                       const json_t *want)
{
    ck_assert_msg(json_array_size(want) == n, "%s: %s: %zu, the fixture lists %zu", name, what, n,
                  json_array_size(want));
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < json_array_size(want) && !found; j++)
            found = strcmp(items[i], json_string_value(json_array_get(want, j))) == 0;
        ck_assert_msg(found, "%s: %s: %s is not the fixture's", name, what, items[i]);
    }
}

/* The head as config.json names it: kind, class, labels in id order,
 * function, pooling, tying, its tensors, and nothing else ignored. */
static void check_info(const enc_model *m, const head_case *k, const char *name)
{
    const enc_head_info *h = enc_model_head(m);
    ck_assert_msg(h != NULL, "%s: no head", name);
    const json_t *want = k->head;
    ck_assert_str_eq(enc_head_kind_name(h->kind), json_string_value(json_object_get(want, "kind")));
    ck_assert_str_eq(h->architecture, json_string_value(json_object_get(want, "architecture")));
    ck_assert_str_eq(enc_model_class(m), h->architecture);
    ck_assert_ptr_null(enc_model_head_unsupported(m));
    const json_t *labels = json_object_get(want, "labels");
    if (h->kind == ENC_HEAD_MASKED_LM) {
        ck_assert_ptr_null(h->labels);
        ck_assert_uint_eq(json_array_size(labels), 0);
    } else {
        ck_assert_int_eq(h->n_outputs, (int)json_array_size(labels));
        for (int i = 0; i < h->n_outputs; i++)
            ck_assert_str_eq(h->labels[i], json_string_value(json_array_get(labels, (size_t)i)));
    }
    ck_assert_str_eq(enc_head_function_name(h->function),
                     json_string_value(json_object_get(want, "function")));
    const json_t *pooling = json_object_get(want, "pooling"), *tied = json_object_get(want, "tied");
    if (pooling)
        ck_assert_int_eq(h->mean_pooling, strcmp(json_string_value(pooling), "mean") == 0);
    if (tied)
        ck_assert_int_eq(h->tied, json_is_true(tied));
    same_names("head tensors", name, h->n_tensors, h->tensors, json_object_get(want, "tensors"));
    const size_t n = enc_model_ignored_count(m);
    const char **ign = xcalloc(n + 1, sizeof *ign);
    for (size_t i = 0; i < n; i++)
        ign[i] = enc_model_ignored(m, i);
    same_names("ignored tensors", name, n, ign, json_object_get(want, "ignored"));
    free(ign);
}

/* Logits (or SPLADE) of k's batch on m against the fixture's: within HEAD_TOL,
 * padding rows exactly 0. */
static void check_values(const enc_model *m, const head_case *k, enc_head_output what,
                         const float *got, const char *name, const char *how)
{
    const float *want = what == ENC_HEAD_OUT_SPLADE ? k->splade : k->logits;
    const size_t n = enc_head_floats(m, what, k->B, k->L);
    if (what == ENC_HEAD_OUT_LOGITS)
        ck_assert_uint_eq(n, k->n_logits);
    const double d = max_abs_diff(got, want, n);
    ck_assert_msg(d <= HEAD_TOL, "%s (%s): %s differ from the fixture's by %g", name, how,
                  what == ENC_HEAD_OUT_SPLADE ? "SPLADE weights" : "logits", d);
    const enc_head_info *h = enc_model_head(m);
    if (what != ENC_HEAD_OUT_LOGITS || h->kind == ENC_HEAD_SEQUENCE)
        return;
    const size_t C = (size_t)h->n_outputs;
    for (int b = 0; b < k->B; b++)
        for (size_t t = (size_t)k->lengths[b] * C; t < (size_t)k->L * C; t++)
            ck_assert_msg(got[(size_t)b * k->L * C + t] == 0.0f, "%s (%s): padding not 0", name,
                          how);
}

/* One forward of k's batch asking what, into a fresh buffer (owned). */
static float *run_head(const enc_model *m, const head_case *k, enc_head_output what,
                       const char *name)
{
    const int D = enc_model_hparams(m)->d_model;
    float *out = xcalloc((size_t)k->B * k->L * D, sizeof *out);
    float *logits = xcalloc(enc_head_floats(m, what, k->B, k->L) + 1, sizeof *logits);
    enc_result res = {.out = out, .head = what, .logits = logits};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, &k->in, &res, &err) == 0, "%s: %s", name, err.message);
    enc_workspace_free(ws);
    free(out);
    return logits;
}

/* Every head directory: its description, and its logits (and a masked
 * LM's SPLADE vector) on the packed GEMM and on OpenBLAS, one thread and
 * two. */
START_TEST(test_head_matches_fixture)
{
    const char *name = CASES[_i];
    char dir[512];
    snprintf(dir, sizeof dir, HEADS "/%s", name);
    enc_model *m = hf_load(dir);
    head_case k;
    case_open(&k, dir);
    check_info(m, &k, name);
    const bool lm = enc_model_head(m)->kind == ENC_HEAD_MASKED_LM;
    ck_assert_int_eq(k.splade != NULL, lm);
    for (int threads = 1; threads <= 2; threads++)
        for (int simd = simd_supported(); simd >= 0; simd--) {
            enc_set_threads(threads);
            simd_set_enabled(simd);
            char how[64];
            snprintf(how, sizeof how, "%s, %d thread%s", simd ? "AVX-512" : "OpenBLAS", threads,
                     threads > 1 ? "s" : "");
            float *got = run_head(m, &k, ENC_HEAD_OUT_LOGITS, name);
            check_values(m, &k, ENC_HEAD_OUT_LOGITS, got, name, how);
            free(got);
            if (lm) {
                got = run_head(m, &k, ENC_HEAD_OUT_SPLADE, name);
                check_values(m, &k, ENC_HEAD_OUT_SPLADE, got, name, how);
                free(got);
            }
        }
    simd_set_enabled(true);
    enc_set_threads(1);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* Chosen rows (ENC_HEAD_OUT_ROWS, fill-mask's masked positions): a subset
 * of the real tokens of both sequences gives the fixture's logits of those
 * rows, in order, on both kernels; rows a forward must refuse are named. */
START_TEST(test_head_rows)
{
    static const char *const cases[] = {"bert_mlm", "roberta_token", "modernbert_mlm",
                                        "distilbert_mlm"};
    const char *name = cases[_i];
    char dir[512];
    snprintf(dir, sizeof dir, HEADS "/%s", name);
    enc_model *m = hf_load(dir);
    head_case k;
    case_open(&k, dir);
    const size_t C = (size_t)enc_model_head(m)->n_outputs;
    /* every other real token of sequence 0 from the first, the last of sequence 1 */
    int32_t rows[16];
    int n = 0;
    for (int i = 0; i < k.lengths[0]; i += 2)
        rows[n++] = i;
    rows[n++] = k.L + k.lengths[1] - 1;
    const int D = enc_model_hparams(m)->d_model;
    float *out = xcalloc((size_t)k.B * k.L * D, sizeof *out);
    float *logits = xcalloc((size_t)n * C, sizeof *logits);
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    for (int simd = simd_supported(); simd >= 0; simd--) {
        simd_set_enabled(simd);
        memset(logits, 0xff, (size_t)n * C * sizeof *logits); /* NaN: every entry written */
        enc_result res = {.out = out,
                          .head = ENC_HEAD_OUT_ROWS,
                          .logits = logits,
                          .head_rows = rows,
                          .n_head_rows = n};
        ck_assert_msg(enc_forward(m, ws, &k.in, &res, &err) == 0, "%s: %s", name, err.message);
        for (int r = 0; r < n; r++) {
            const double d =
                max_abs_diff(logits + (size_t)r * C, k.logits + (size_t)rows[r] * C, C);
            ck_assert_msg(d <= HEAD_TOL, "%s (%s): row %d (token %d) differs by %g", name,
                          simd ? "AVX-512" : "OpenBLAS", r, rows[r], d);
        }
    }
    simd_set_enabled(true);
    static const struct {
        int32_t rows[2];
        int n;
        const char *msg;
    } bad[] = {
        {{3, 2}, 2, "head_rows[1] = 2 is not above the one before"},
        {{-1}, 1, "head_rows[0] = -1 is outside 0..13"},
        {{14}, 1, "head_rows[0] = 14 is outside 0..13"},
        {{0, 11}, 2, "head_rows[1] = 11 is padding (sequence 1 has 4 tokens)"},
    };
    for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
        enc_result res = {.out = out,
                          .head = ENC_HEAD_OUT_ROWS,
                          .logits = logits,
                          .head_rows = bad[t].rows,
                          .n_head_rows = bad[t].n};
        enc_error_clear(&err);
        ck_assert_int_eq(enc_forward(m, ws, &k.in, &res, &err), ENC_EINVAL);
        ck_assert_msg(strstr(err.message, bad[t].msg), "%s: %s", name, err.message);
    }
    enc_workspace_free(ws);
    free(out);
    free(logits);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* A dynamic batch: the head's job run together with a job that asks for
 * no head (and a masked LM's with one asking for SPLADE) gives what it
 * gives alone, and the other job's outputs are its own. */
START_TEST(test_head_batched)
{
    static const char *const cases[] = {"bert_seq", "modernbert_seq_mean", "roberta_token",
                                        "distilbert_mlm"};
    const char *name = cases[_i];
    char dir[512];
    snprintf(dir, sizeof dir, HEADS "/%s", name);
    enc_model *m = hf_load(dir);
    head_case k;
    case_open(&k, dir);
    const bool lm = enc_model_head(m)->kind == ENC_HEAD_MASKED_LM;
    const int D = enc_model_hparams(m)->d_model;
    const size_t n_out = (size_t)k.B * k.L * D;
    float *out0 = xcalloc(n_out, sizeof(float)), *out1 = xcalloc(n_out, sizeof(float));
    float *l0 = xcalloc(k.n_logits, sizeof(float));
    float *l1 = lm ? xcalloc(enc_head_floats(m, ENC_HEAD_OUT_SPLADE, k.B, k.L), 4) : NULL;
    enc_result r0 = {.out = out0, .head = ENC_HEAD_OUT_LOGITS, .logits = l0};
    enc_result r1 = {
        .out = out1, .head = lm ? ENC_HEAD_OUT_SPLADE : ENC_HEAD_OUT_NONE, .logits = l1};
    enc_job jobs[2] = {{.in = &k.in, .res = &r0}, {.in = &k.in, .res = &r1}};
    enc_workspace *ws = enc_workspace_new(m);
    ck_assert_int_eq(enc_forward_many(m, ws, jobs, 2), 0);
    enc_workspace_free(ws);
    check_values(m, &k, ENC_HEAD_OUT_LOGITS, l0, name, "batched");
    if (lm)
        check_values(m, &k, ENC_HEAD_OUT_SPLADE, l1, name, "batched");
    ck_assert_msg(max_abs_diff(out0, out1, n_out) <= HEAD_TOL, "%s: the two jobs' outputs differ",
                  name);
    free(out0);
    free(out1);
    free(l0);
    free(l1);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* Embeddings in (the embedding module's rows, computed here by the
 * module alone) give the head's logits as ids in do: the head reads the
 * stack's output whatever fed it. */
START_TEST(test_head_embeddings_in)
{
    static const char *const cases[] = {"bert_seq", "roberta_token", "distilbert_mlm",
                                        "modernbert_seq_mean"};
    char dir[512];
    snprintf(dir, sizeof dir, HEADS "/%s", cases[_i]);
    enc_model *m = hf_load(dir);
    head_case k;
    case_open(&k, dir);
    const int D = enc_model_hparams(m)->d_model;
    float *x = xcalloc((size_t)k.B * k.L * D, sizeof *x);
    for (int b = 0; b < k.B; b++)
        embed_rows(m->embed, &k.in, b, 0, k.lengths[b], x + (size_t)b * k.L * D, D);
    enc_batch in = batch_plain(x, k.B, k.L, k.lengths);
    float *out = xcalloc((size_t)k.B * k.L * D, sizeof *out), *logits = xcalloc(k.n_logits, 4);
    enc_result res = {.out = out, .head = ENC_HEAD_OUT_LOGITS, .logits = logits};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
    check_values(m, &k, ENC_HEAD_OUT_LOGITS, logits, cases[_i], "embeddings in");
    free(x);
    free(out);
    free(logits);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* The head directory dir loaded as the daemon loads it, in dtype. */
static enc_model *load_dtype(const char *dir, enc_dtype dtype)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_int_eq(enc_hf_config_read(dir, &c, &err), 0);
    c.hp.dtype = dtype;
    enc_model *m = enc_model_load_dir(dir, &c.hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", dir, err.message);
    return m;
}

/* model.dtype bfloat16: the stack's Linears round their inputs to
 * bfloat16 and the head stays float32, so the logits are the fixture's
 * within bfloat16's rounding (8 bits of mantissa, through two layers). */
START_TEST(test_head_bfloat16)
{
    enc_model *m = load_dtype(HEADS "/bert_mlm", ENC_DTYPE_BFLOAT16);
    head_case k;
    case_open(&k, HEADS "/bert_mlm");
    float *got = run_head(m, &k, ENC_HEAD_OUT_LOGITS, "bert_mlm bfloat16");
    double worst = 0, scale = 0;
    for (size_t i = 0; i < k.n_logits; i++) {
        worst = fmax(worst, fabs(got[i] - k.logits[i]));
        scale = fmax(scale, fabs(k.logits[i]));
    }
    ck_assert_msg(worst <= 0.02 * scale, "bfloat16 logits differ by %g (largest logit %g)", worst,
                  scale);
    free(got);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* model.dtype int8: the head's Linears (a classifier's, a masked LM's
 * decoder over the vocabulary) run on the int8 GEMM as the stack's do,
 * quantised by the first forward that computes the head, not at load nor
 * by a forward without it.  On
 * every head directory the logits stay within 5% of the largest float32
 * logit of the batch (int8's rounding, about 1/254 of a row's largest
 * value per Linear, through the stack's layers and the head's one or two
 * Linears: the figures printed are 0.6-3.7%), every sequence classifier's
 * argmax label is float32's on every sequence, and a token classifier's
 * or masked LM's argmax agrees on at least 99% of the real tokens -- or
 * picks one whose float32 logit is within twice that largest error of
 * float32's pick, a near tie no rounding of that size could resolve (a
 * random table's, gte_mlm's gaps of 0.003 against an error of 0.02). */
START_TEST(test_head_int8)
{
    const char *name = CASES[_i];
    char dir[512];
    snprintf(dir, sizeof dir, HEADS "/%s", name);
    enc_model *f32 = load_dtype(dir, ENC_DTYPE_FLOAT32), *i8 = load_dtype(dir, ENC_DTYPE_INT8);
    ck_assert_int_eq(enc_model_dtype(i8), ENC_DTYPE_INT8);
    const head_linear *out = &i8->head->out;
    head_case k;
    case_open(&k, dir);
    free(run_head(i8, &k, ENC_HEAD_OUT_NONE, name));
    ck_assert_msg(!head_ready(i8->head) && !out->pk, "%s: head quantised before its first use",
                  name);
    float *a = run_head(f32, &k, ENC_HEAD_OUT_LOGITS, name);
    float *b = run_head(i8, &k, ENC_HEAD_OUT_LOGITS, name);
    ck_assert_msg(head_ready(i8->head) && out->pk && gemm_packed_int8(out->pk[0]),
                  "%s: head not in int8", name);
    const enc_head_info *h = enc_model_head(f32);
    const int C = h->n_outputs;
    double worst = 0, top = 0;
    for (size_t i = 0; i < k.n_logits; i++) {
        worst = fmax(worst, fabs(a[i] - b[i]));
        top = fmax(top, fabs(a[i]));
    }
    int rows = 0, agree = 0, ties = 0;
    for (int s = 0; s < k.B; s++)
        for (int t = 0; t < (h->kind == ENC_HEAD_SEQUENCE ? 1 : k.lengths[s]); t++) {
            const size_t r = h->kind == ENC_HEAD_SEQUENCE ? (size_t)s : (size_t)s * k.L + t;
            int ba = 0, bb = 0;
            for (int j = 1; j < C; j++) {
                ba = a[r * C + j] > a[r * C + ba] ? j : ba;
                bb = b[r * C + j] > b[r * C + bb] ? j : bb;
            }
            rows++;
            agree += ba == bb;
            ties += ba != bb && a[r * C + ba] - a[r * C + bb] <= 2.0 * worst;
        }
    printf("heads: %s int8 against float32: logits within %.3g of the largest %.3g (%.2f%%), "
           "argmax agrees on %d of %d %s (%d near ties)\n",
           name, worst, top, 100.0 * worst / top, agree, rows,
           h->kind == ENC_HEAD_SEQUENCE ? "sequences" : "tokens", ties);
    ck_assert_msg(worst <= 0.05 * top, "%s: int8 logits differ by %g (largest %g)", name, worst,
                  top);
    if (h->kind == ENC_HEAD_SEQUENCE && C > 1)
        ck_assert_msg(agree == rows, "%s: labels differ on %d of %d", name, rows - agree, rows);
    else if (C > 1)
        ck_assert_msg(agree + ties >= 0.99 * rows, "%s: argmax differs on %d of %d (%d near ties)",
                      name, rows - agree, rows, ties);
    free(a);
    free(b);
    case_close(&k);
    enc_model_free(f32);
    enc_model_free(i8);
}
END_TEST

/* One forward of a head case on its own workspace, started with others at
 * a barrier. */
typedef struct head_thread {
    const enc_model *m;
    const head_case *k;
    pthread_barrier_t *start;
    float *logits;
    int rc;
} head_thread;

static void *head_thread_run(void *arg)
{
    head_thread *t = arg;
    const int D = enc_model_hparams(t->m)->d_model;
    float *out = xcalloc((size_t)t->k->B * t->k->L * D, sizeof *out);
    enc_result res = {.out = out, .head = ENC_HEAD_OUT_LOGITS, .logits = t->logits};
    enc_workspace *ws = enc_workspace_new(t->m);
    enc_error err = {0};
    pthread_barrier_wait(t->start);
    t->rc = ws ? enc_forward(t->m, ws, &t->k->in, &res, &err) : -1;
    enc_workspace_free(ws);
    free(out);
    return NULL;
}

/* Two forwards asking for an int8 masked LM's head at once, its decoder
 * not yet quantised: one quantises it, both read the same panels (the
 * same logits, bit for bit), within test_head_int8's bound of the float32
 * fixture's logits. */
START_TEST(test_head_int8_concurrent)
{
    enc_model *m = load_dtype(HEADS "/bert_mlm", ENC_DTYPE_INT8);
    ck_assert(!head_ready(m->head));
    head_case k;
    case_open(&k, HEADS "/bert_mlm");
    enc_set_threads(1);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    head_thread t[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        t[i] = (head_thread){
            .m = m, .k = &k, .start = &start, .logits = xcalloc(k.n_logits, sizeof(float))};
        ck_assert_int_eq(pthread_create(&th[i], NULL, head_thread_run, &t[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    ck_assert_msg(t[0].rc == 0 && t[1].rc == 0, "forwards failed: %d %d", t[0].rc, t[1].rc);
    ck_assert(head_ready(m->head) && gemm_packed_int8(m->head->out.pk[0]));
    double worst = 0, top = 0;
    for (size_t i = 0; i < k.n_logits; i++) {
        ck_assert_msg(memcmp(&t[0].logits[i], &t[1].logits[i], sizeof(float)) == 0,
                      "logit %zu: %g and %g", i, t[0].logits[i], t[1].logits[i]);
        worst = fmax(worst, fabs(t[0].logits[i] - k.logits[i]));
        top = fmax(top, fabs(k.logits[i]));
    }
    ck_assert_msg(worst <= 0.05 * top, "int8 logits differ by %g (largest %g)", worst, top);
    for (int i = 0; i < 2; i++)
        free(t[i].logits);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* A forward asking a model for a head it lacks fails, naming what it has. */
START_TEST(test_head_refused_forward)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 16;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 32;
    enc_error err = {0};
    enc_model *seeded = enc_model_random(&hp, 1, &err);
    ck_assert_ptr_nonnull(seeded);
    float x[16] = {0}, out[16], logits[64];
    enc_batch in = batch_plain(x, 1, 1, NULL);
    enc_result res = {.out = out, .head = ENC_HEAD_OUT_LOGITS, .logits = logits};
    enc_workspace *ws = enc_workspace_new(seeded);
    ck_assert_int_eq(enc_forward(seeded, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "has no head"), "%s", err.message);
    enc_workspace_free(ws);
    enc_model_free(seeded);

    /* SPLADE of a sequence head; logits without a buffer */
    enc_model *m = hf_load(HEADS "/bert_seq");
    head_case k;
    case_open(&k, HEADS "/bert_seq");
    float *o = xcalloc((size_t)k.B * k.L * 16, sizeof *o);
    res = (enc_result){.out = o, .head = ENC_HEAD_OUT_SPLADE, .logits = logits};
    ws = enc_workspace_new(m);
    enc_error_clear(&err);
    ck_assert_int_eq(enc_forward(m, ws, &k.in, &res, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "SPLADE needs a masked-LM head; this model's is sequence"),
                  "%s", err.message);
    ck_assert_uint_eq(enc_head_floats(m, ENC_HEAD_OUT_SPLADE, 2, 7), 0);
    res = (enc_result){.out = o, .head = ENC_HEAD_OUT_LOGITS};
    enc_error_clear(&err);
    ck_assert_int_eq(enc_forward(m, ws, &k.in, &res, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "no buffer"), "%s", err.message);
    const int32_t row0 = 0;
    res = (enc_result){.out = o,
                       .head = ENC_HEAD_OUT_ROWS,
                       .logits = logits,
                       .head_rows = &row0,
                       .n_head_rows = 1};
    enc_error_clear(&err);
    ck_assert_int_eq(enc_forward(m, ws, &k.in, &res, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "chosen rows need a token head or masked LM; this model's "
                                      "is sequence"),
                  "%s", err.message);
    enc_workspace_free(ws);
    free(o);
    case_close(&k);
    enc_model_free(m);
}
END_TEST

/* Architectures naming a head attnd does not compute: the encoder is
 * served, the head's tensors listed as ignored, the class named. */
START_TEST(test_head_unsupported)
{
    static const char *const links[] = {"model.safetensors", NULL};
    scratch s;
    scratch_make(&s, HEADS "/bert_seq", "{\"architectures\": [\"BertForQuestionAnswering\"]}", NULL,
                 links);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "BertForQuestionAnswering");
    ck_assert_str_eq(enc_model_head_note(m), "");
    ck_assert_uint_eq(enc_model_ignored_count(m), 4); /* pooler and classifier */
    enc_model_free(m);
    scratch_free(&s);

    /* a masked LM whose decoder the files lack (tie_word_embeddings false,
     * no cls.predictions.decoder.weight): the head is left out, saying why */
    scratch_make(&s, HEADS "/bert_mlm", "{\"tie_word_embeddings\": false}", NULL, links);
    m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "BertForMaskedLM");
    ck_assert_str_eq(enc_model_head_note(m),
                     "its decoder cls.predictions.decoder.weight is not in the files");
    ck_assert_uint_eq(enc_model_ignored_count(m), 5);
    enc_model_free(m);
    scratch_free(&s);

    /* a base model: no head, nothing unsupported */
    scratch_make(&s, HEADS "/bert_seq", "{\"architectures\": [\"BertModel\"]}", NULL, links);
    m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_ptr_null(enc_model_head_unsupported(m));
    ck_assert_str_eq(enc_model_class(m), "BertModel");
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* A head the files or config.json cannot give is refused, naming the
 * tensor or field. */
static const struct {
    const char *base, *edit, *want;
} REFUSALS[] = {
    /* two labels for a classifier of three rows */
    {"bert_seq", "{\"id2label\": {\"0\": \"a\", \"1\": \"b\"}}",
     "tensor 'classifier.bias' has shape [3], expected [2]"},
    {"bert_seq", "{\"id2label\": {\"0\": \"a\", \"2\": \"b\"}}",
     "id2label has no string label for id 1"},
    {"bert_seq", "{\"problem_type\": \"ranking\"}", "problem_type must be regression"},
    {"cross_encoder", "{\"sentence_transformers\": {\"activation_fn\": \"torch.nn.Tanh\"}}",
     "the CrossEncoder activation 'torch.nn.Tanh' is not supported"},
    {"modernbert_seq_cls", "{\"classifier_pooling\": \"max\"}",
     "classifier_pooling must be \"cls\" or \"mean\""},
    {"modernbert_seq_cls", "{\"classifier_activation\": \"softsign\"}",
     "classifier_activation 'softsign' is not supported"},
    {"modernbert_mlm", "{\"decoder_bias\": false}", ""}, /* loads: checked below */
    {"bert_seq", "{\"architectures\": \"BertForSequenceClassification\"}",
     "architectures must be an array of class names"},
};

START_TEST(test_head_refused_load)
{
    static const char *const links[] = {"model.safetensors", NULL};
    char base[512];
    snprintf(base, sizeof base, HEADS "/%s", REFUSALS[_i].base);
    scratch s;
    scratch_make(&s, base, REFUSALS[_i].edit, NULL, links);
    if (REFUSALS[_i].want[0]) {
        refused(s.dir, REFUSALS[_i].want);
    } else { /* decoder_bias false: decoder.bias is not read, so it is ignored */
        enc_model *m = hf_load(s.dir);
        ck_assert_uint_eq(enc_model_ignored_count(m), 1);
        ck_assert_str_eq(enc_model_ignored(m, 0), "decoder.bias");
        enc_model_free(m);
    }
    scratch_free(&s);
}
END_TEST

/* A task class whose head's own tensors are not in the files at all (a
 * base model saved under a task class's name: sentence-transformers'
 * all-mpnet-base-v2 says MPNetForMaskedLM) serves the encoder, the head
 * left out saying why, as transformers' AutoModel loads it; the outputs
 * are the encoder's. */
START_TEST(test_head_absent_served)
{
    static const char *const links[] = {"model.safetensors", NULL};
    scratch s;
    scratch_make(&s, HEADS "/bert_seq", "{\"architectures\": [\"BertForMaskedLM\"]}", NULL, links);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "BertForMaskedLM");
    ck_assert_str_eq(enc_model_head_note(m),
                     "its tensors (cls.predictions.transform.dense.weight, ...) are not in the "
                     "files");
    bool classifier = false; /* the classifier's tensors: ignored */
    for (size_t i = 0; i < enc_model_ignored_count(m); i++)
        classifier = classifier || strcmp(enc_model_ignored(m, i), "classifier.weight") == 0;
    ck_assert(classifier);
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* ---- the daemon ------------------------------------------------------------------ */

/* k's ids (and types) as /v1/encode's ragged rows (owned JSON text), with
 * extra fields. */
static char *head_body(const head_case *k, const char *extra)
{
    json_t *ids = json_array(), *types = json_array();
    for (int b = 0; b < k->B; b++) {
        json_t *row = json_array(), *trow = json_array();
        for (int i = 0; i < k->lengths[b]; i++) {
            json_array_append_new(row, json_integer(k->input_ids[(size_t)b * k->L + i]));
            if (k->types)
                json_array_append_new(trow, json_integer(k->types[(size_t)b * k->L + i]));
        }
        json_array_append_new(ids, row);
        json_array_append_new(types, trow);
    }
    json_t *body = json_pack("{s:o, s:s, s:b}", "input_ids", ids, "attention", "none", "logits", 1);
    if (k->types)
        json_object_set_new(body, "token_type_ids", types);
    else
        json_decref(types);
    if (extra) {
        json_t *e = json_loads(extra, 0, NULL);
        json_object_update(body, e);
        json_decref(e);
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}

/* /v1/encode's logits (nested JSON) against k's: [B][C], or per token
 * [B][len][C]. */
static void check_json_logits(const json_t *logits, const head_case *k, size_t C, bool per_token,
                              const char *name)
{
    ck_assert_msg(json_array_size(logits) == (size_t)k->B, "%s: %zu rows of logits", name,
                  json_array_size(logits));
    double worst = 0;
    for (int b = 0; b < k->B; b++) {
        const json_t *row = json_array_get(logits, (size_t)b);
        const size_t rows = per_token ? (size_t)k->lengths[b] : 1;
        ck_assert_uint_eq(json_array_size(row), per_token ? rows : C);
        for (size_t i = 0; i < rows; i++) {
            const json_t *v = per_token ? json_array_get(row, i) : row;
            ck_assert_uint_eq(json_array_size(v), C);
            for (size_t c = 0; c < C; c++) {
                const float want = k->logits[((size_t)b * (per_token ? k->L : 1) + i) * C + c];
                const double d = fabs(json_number_value(json_array_get(v, c)) - want);
                worst = d > worst ? d : worst;
            }
        }
    }
    ck_assert_msg(worst <= HEAD_TOL, "%s: /v1/encode's logits differ from the fixture's by %g",
                  name, worst);
}

/* attnd --model-dir on a head directory: /v1/model describes the head;
 * /v1/encode "logits": true answers the fixture's logits from ids, nested
 * and in base64 with logits_shape. */
START_TEST(test_daemon_logits)
{
    static const char *const cases[] = {"bert_seq", "xlm_roberta_rerank", "bert_token",
                                        "roberta_mlm"};
    const char *name = cases[_i];
    char dir[512];
    snprintf(dir, sizeof dir, HEADS "/%s", name);
    head_case k;
    case_open(&k, dir);
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", dir, NULL}, NULL), 0);
    http_resp r;
    ck_assert_int_eq(http_do(d.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *info = json_loads(r.body, 0, NULL), *h = json_object_get(info, "head");
    ck_assert_str_eq(json_string_value(json_object_get(h, "kind")),
                     json_string_value(json_object_get(k.head, "kind")));
    ck_assert_str_eq(json_string_value(json_object_get(h, "architecture")),
                     json_string_value(json_object_get(k.head, "architecture")));
    ck_assert_str_eq(json_string_value(json_object_get(h, "function")),
                     json_string_value(json_object_get(k.head, "function")));
    const bool mlm = strcmp(json_string_value(json_object_get(h, "kind")), "masked_lm") == 0;
    if (!mlm)
        ck_assert(json_equal(json_object_get(h, "labels"), json_object_get(k.head, "labels")));
    const size_t C = (size_t)json_integer_value(json_object_get(h, "outputs"));
    const bool per_token = strcmp(json_string_value(json_object_get(h, "kind")), "sequence") != 0;
    json_decref(info);
    http_resp_free(&r);

    char *body = head_body(&k, NULL);
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_msg(r.status == 200, "%s: %ld %s", name, (long)r.status, r.body);
    json_t *j = json_loads(r.body, 0, NULL);
    check_json_logits(json_object_get(j, "logits"), &k, C, per_token, name);
    json_decref(j);
    http_resp_free(&r);
    free(body);

    /* base64: one string per sequence (ragged), logits_shape per sequence */
    body = head_body(&k, "{\"encoding\": \"base64\"}");
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_int_eq(r.status, 200);
    j = json_loads(r.body, 0, NULL);
    const json_t *b64 = json_object_get(j, "logits"), *shape = json_object_get(j, "logits_shape");
    ck_assert_uint_eq(json_array_size(b64), (size_t)k.B);
    for (int b = 0; b < k.B; b++) {
        const json_t *sh = json_array_get(shape, (size_t)b);
        ck_assert_uint_eq(json_integer_value(json_array_get(sh, 0)),
                          per_token ? (size_t)k.lengths[b] : C);
        size_t n = 0;
        float *v = b64_floats(json_array_get(b64, (size_t)b), &n);
        const size_t rows = per_token ? (size_t)k.lengths[b] : 1;
        ck_assert_uint_eq(n, rows * C);
        const float *want = k.logits + (size_t)b * (per_token ? (size_t)k.L : 1) * C;
        ck_assert_msg(max_abs_diff(v, want, n) <= HEAD_TOL, "%s: base64 logits differ", name);
        free(v);
    }
    json_decref(j);
    http_resp_free(&r);
    free(body);
    ck_assert_int_eq(daemon_stop(&d), 0);
    case_close(&k);
}
END_TEST

/* Text in: the logits of the tokenizer's ids, as the same ids sent as
 * input_ids give them (hf/bert_text's tokenizer cut to the fixture's
 * vocabulary of 50: specials, punctuation, digits 0..7). */
START_TEST(test_daemon_text_logits)
{
    /* hf/bert_text's tokenizer.json with its vocabulary cut to ids 0..49 */
    json_t *tok = json_load_file(TESTS_DIR "/fixtures/hf/bert_text/tokenizer.json", 0, NULL);
    ck_assert_ptr_nonnull(tok);
    json_t *vocab = json_object_get(json_object_get(tok, "model"), "vocab");
    const char *key;
    json_t *id, *tmp;
    json_object_foreach_safe(vocab, tmp, key, id)
    {
        if (json_integer_value(id) >= 50)
            json_object_del(vocab, key);
    }
    ck_assert_uint_eq(json_object_size(vocab), 50);
    char path[64];
    snprintf(path, sizeof path, "/tmp/attnd_heads_XXXXXX");
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(json_dump_file(tok, path, 0), 0);
    json_decref(tok);
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d,
                                  (const char *const[]){"--model-dir", HEADS "/bert_token",
                                                        "--tokenizer", path, NULL},
                                  NULL),
                     0);
    unlink(path);
    http_resp r;
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode",
                                    "{\"text\": [\"1 + 2 = 3\", \"(4)\"], \"logits\": true, "
                                    "\"attention\": \"none\"}",
                                    &r),
                     0);
    ck_assert_msg(r.status == 200, "%s", r.body);
    json_t *text = json_loads(r.body, 0, NULL);
    http_resp_free(&r);
    json_t *ids = json_object_get(text, "input_ids");
    ck_assert_uint_eq(json_array_size(json_array_get(ids, 0)), 7); /* [CLS] 1 + 2 = 3 [SEP] */
    json_t *body = json_pack("{s:O, s:b, s:s}", "input_ids", ids, "logits", 1, "attention", "none");
    char *b = json_dumps(body, JSON_COMPACT);
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", b, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *by_ids = json_loads(r.body, 0, NULL);
    const json_t *a = json_object_get(text, "logits"), *w = json_object_get(by_ids, "logits");
    ck_assert_uint_eq(json_array_size(a), 2);
    for (size_t s = 0; s < 2; s++) {
        const json_t *ra = json_array_get(a, s), *rw = json_array_get(w, s);
        ck_assert_uint_eq(json_array_size(ra), json_array_size(json_array_get(ids, s)));
        ck_assert_uint_eq(json_array_size(ra), json_array_size(rw));
        for (size_t t = 0; t < json_array_size(ra); t++)
            for (size_t c = 0; c < 5; c++)
                ck_assert(fabs(json_number_value(json_array_get(json_array_get(ra, t), c)) -
                               json_number_value(json_array_get(json_array_get(rw, t), c))) < 1e-6);
    }
    json_decref(by_ids);
    json_decref(body);
    json_decref(text);
    free(b);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* "logits" on a model without a head it computes: 400 naming what it
 * has; over limits.max_logits_bytes: 413. */
START_TEST(test_daemon_logits_refused)
{
    static const struct {
        const char *dir, *want;
        int status;
        const char *extra_arg;
    } cases[] = {
        {TESTS_DIR "/fixtures/hf/bert_base", "logits: this model has no task head (BertModel)", 400,
         NULL},
        {TESTS_DIR "/fixtures/hf/electra_disc",
         "logits: this model's head (ElectraForPreTraining) is not one attnd computes", 400, NULL},
        {HEADS "/roberta_mlm",
         "logits: 3 x 50 float32 ([B][L][outputs]) is over "
         "limits.max_logits_bytes (500)",
         413, "500"},
    };
    daemon_proc d;
    const char *args[] = {"--model-dir", cases[_i].dir, "--max-logits-bytes", cases[_i].extra_arg,
                          NULL};
    if (!cases[_i].extra_arg)
        args[2] = NULL;
    ck_assert_int_eq(daemon_start(&d, args, NULL), 0);
    http_resp r;
    ck_assert_int_eq(
        http_post_json(d.port, "/v1/encode", "{\"input_ids\": [[5, 6, 7]], \"logits\": true}", &r),
        0);
    ck_assert_int_eq(r.status, cases[_i].status);
    ck_assert_msg(strstr(r.body, cases[_i].want), "%s", r.body);
    http_resp_free(&r);
    /* logits false is no request for them */
    ck_assert_int_eq(
        http_post_json(d.port, "/v1/encode", "{\"input_ids\": [[5, 6, 7]], \"logits\": false}", &r),
        0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(strstr(r.body, "\"logits\""));
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* "explain": true: each sequence's rollout from explain_from, the same as
 * enc_rollout over every layer's weights the daemon returns (the rollout
 * itself is held to a float64 reference in check_rollout.c); "attention":
 * "none" returns the explanation and no weights; the refusals. */
START_TEST(test_daemon_explain)
{
    head_case k;
    case_open(&k, HEADS "/bert_seq");
    daemon_proc d;
    ck_assert_int_eq(
        daemon_start(&d, (const char *const[]){"--model-dir", HEADS "/bert_seq", NULL}, NULL), 0);
    char *body = head_body(&k, "{\"attention\": \"mean\", \"attention_layers\": \"all\"}");
    http_resp r;
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *weights = json_loads(r.body, 0, NULL);
    http_resp_free(&r);
    free(body);
    const json_t *layers = json_object_get(weights, "attention_layers");
    const int n_layers = (int)json_array_size(layers);
    ck_assert_int_eq(n_layers, 2);
    for (int from = 0; from < 3; from++) {
        char extra[96];
        snprintf(extra, sizeof extra, "{\"explain\": true, \"explain_from\": %d}", from);
        body = head_body(&k, extra);
        ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
        ck_assert_msg(r.status == 200, "%s", r.body);
        json_t *j = json_loads(r.body, 0, NULL);
        ck_assert_ptr_null(json_object_get(j, "attention")); /* "attention": "none" */
        const json_t *ex = json_object_get(j, "explain");
        ck_assert_uint_eq(json_array_size(ex), (size_t)k.B);
        for (int b = 0; b < k.B; b++) {
            const int len = k.lengths[b];
            float *w[2];
            const float *wl[2];
            for (int l = 0; l < n_layers; l++) { /* layer l's [len][len] mean weights */
                const json_t *a = json_array_get(
                    json_object_get(json_array_get(layers, (size_t)l), "attention"), (size_t)b);
                w[l] = xcalloc((size_t)len * len, sizeof(float));
                for (int i = 0; i < len; i++)
                    for (int jj = 0; jj < len; jj++)
                        w[l][i * len + jj] = (float)json_number_value(
                            json_array_get(json_array_get(a, (size_t)i), (size_t)jj));
                wl[l] = w[l];
            }
            double buf[64], want[32];
            enc_rollout(wl, n_layers, 1, (size_t)len * len, len, len, from, buf, want);
            const json_t *got = json_array_get(ex, (size_t)b);
            ck_assert_uint_eq(json_array_size(got), (size_t)len);
            double total = 0;
            for (int i = 0; i < len; i++) {
                const double v = json_number_value(json_array_get(got, (size_t)i));
                ck_assert_msg(fabs(v - want[i]) < 1e-6, "explain[%d][%d] = %g, want %g", b, i, v,
                              want[i]);
                total += v;
            }
            ck_assert_msg(fabs(total - 1.0) < 1e-6, "explain[%d] sums to %g", b, total);
            free(w[0]);
            free(w[1]);
        }
        json_decref(j);
        http_resp_free(&r);
        free(body);
    }
    json_decref(weights);

    static const struct {
        const char *extra, *want;
    } bad[] = {
        {"{\"explain\": true, \"explain_from\": 4}",
         "explain_from = 4 is outside sequence 1's tokens 0..3"},
        {"{\"explain_from\": 1}", "explain_from is given without \\\"explain\\\": true"},
        {"{\"explain\": true, \"attention\": \"mean\", \"attention_format\": \"csr\"}",
         "explain needs dense attention weights"},
        {"{\"explain\": 1}", "explain"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        body = head_body(&k, bad[i].extra);
        ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
        ck_assert_msg(r.status == 400 && strstr(r.body, bad[i].want), "%s: %ld %s", bad[i].extra,
                      (long)r.status, r.body);
        http_resp_free(&r);
        free(body);
    }
    ck_assert_int_eq(daemon_stop(&d), 0);
    case_close(&k);
}
END_TEST

Suite *heads_suite(void)
{
    Suite *s = timed_suite("heads");
    TCase *core = timed_case(s, "core", 60);
    tcase_add_loop_test(core, test_head_matches_fixture, 0, N_CASES);
    tcase_add_loop_test(core, test_head_batched, 0, 4);
    tcase_add_loop_test(core, test_head_rows, 0, 4);
    tcase_add_loop_test(core, test_head_embeddings_in, 0, 4);
    tcase_add_test(core, test_head_bfloat16);
    tcase_add_loop_test(core, test_head_int8, 0, N_CASES);
    tcase_add_test(core, test_head_absent_served);
    tcase_add_test(core, test_head_int8_concurrent);
    tcase_add_test(core, test_head_refused_forward);
    tcase_add_test(core, test_head_unsupported);
    tcase_add_loop_test(core, test_head_refused_load, 0, (int)(sizeof REFUSALS / sizeof *REFUSALS));
    TCase *daemon = timed_case(s, "daemon", 60);
    tcase_add_loop_test(daemon, test_daemon_logits, 0, 4);
    tcase_add_loop_test(daemon, test_daemon_logits_refused, 0, 3);
    tcase_add_test(daemon, test_daemon_explain);
    tcase_add_test(daemon, test_daemon_text_logits);
    return s;
}
