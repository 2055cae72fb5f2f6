/* check_pooling.c - core/model/pooling.c: sentence embeddings against
 * sentence-transformers' Pooling and Normalize as tools/fixtures/make_text_fixtures.py
 * computes them (float64, from PyTorch's last_hidden_state), worked
 * examples of each mode and of the Matryoshka cut, and the
 * sentence-transformers files of a directory: both forms of
 * 1_Pooling/config.json, Normalize, and the refusals; its text settings
 * (load/sentence.c: max_seq_length, prompts). */
#include "model/pooling.h"

#include "hf_util.h"
#include "load/sentence.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HF TESTS_DIR "/fixtures/hf"

/* The fixture's last_hidden_state pooled as dir's modules say, against the
 * fixture's pooled tensor want. */
static void pooled_matches(const char *dir, enc_pooling mode, bool normalize, const char *want_name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/text.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, "last_hidden_state");
    const int B = (int)t->shape[0], L = (int)t->shape[1], D = (int)t->shape[2];
    float *x = torch_floats(&f, "last_hidden_state", NULL);
    float *mask = torch_floats(&f, "attention_mask", NULL);
    float *want = torch_floats(&f, want_name, NULL);
    int *lengths = xcalloc((size_t)B, sizeof *lengths);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++)
            lengths[b] += mask[b * L + i] != 0;
    float *got = xcalloc((size_t)B * D, sizeof *got);
    enc_pool(x, B, L, D, lengths, mode, normalize, got);
    const double d = max_abs_diff(got, want, (size_t)B * D);
    ck_assert_msg(d < 1e-5, "%s %s: pooled differs from sentence-transformers' by %g", dir,
                  want_name, d);
    free(got);
    free(lengths);
    free(want);
    free(mask);
    free(x);
    st_close(&f);
}

START_TEST(test_against_sentence_transformers)
{
    pooled_matches(HF "/bert_text", ENC_POOL_MEAN, false, "mean_pooled");
    pooled_matches(HF "/bert_text", ENC_POOL_MEAN, true, "mean_normalized");
    pooled_matches(HF "/bert_text", ENC_POOL_CLS, false, "cls_pooled");
    pooled_matches(HF "/roberta_text", ENC_POOL_CLS, false, "cls_pooled");
    pooled_matches(HF "/roberta_text", ENC_POOL_MEAN, false, "mean_pooled");
}
END_TEST

/* Two sequences of 3 and 2 tokens, D = 2, worked by hand. */
START_TEST(test_modes_worked)
{
    const float x[2 * 3 * 2] = {1,  2, 3, -4, 5,  0, /* sequence 0 */
                                -1, 6, 3, 2,  99, 99 /* sequence 1: its third row is padding */};
    const int lengths[2] = {3, 2};
    float out[4];
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_CLS, false, out);
    ck_assert(out[0] == 1 && out[1] == 2 && out[2] == -1 && out[3] == 6);
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_MEAN, false, out);
    ck_assert(out[0] == 3 && fabsf(out[1] - (-2.0f / 3)) < 1e-7f && out[2] == 1 && out[3] == 4);
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_MAX, false, out);
    ck_assert(out[0] == 5 && out[1] == 2 && out[2] == 3 && out[3] == 6);
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_LAST, false, out);
    ck_assert(out[0] == 5 && out[1] == 0 && out[2] == 3 && out[3] == 2);
    /* normalized: (3, 4) / 5 */
    const float y[2] = {3, 4};
    enc_pool(y, 1, 1, 2, NULL, ENC_POOL_CLS, true, out);
    ck_assert(fabsf(out[0] - 0.6f) < 1e-7f && fabsf(out[1] - 0.8f) < 1e-7f);
    /* a zero vector stays zero (the norm is held at 1e-12, as F.normalize) */
    const float z[2] = {0, 0};
    enc_pool(z, 1, 1, 2, NULL, ENC_POOL_CLS, true, out);
    ck_assert(out[0] == 0 && out[1] == 0);
}
END_TEST

/* Matryoshka: the first dims, renormalized when the model normalizes. */
START_TEST(test_truncate)
{
    float v[2 * 3] = {3, 4, 12, 0, 0, 5};
    enc_pool_truncate(v, 2, 3, 2, true);
    ck_assert(fabsf(v[0] - 0.6f) < 1e-7f && fabsf(v[1] - 0.8f) < 1e-7f);
    ck_assert(v[2] == 0 && v[3] == 0);
    float w[2 * 3] = {3, 4, 12, 1, 2, 5};
    enc_pool_truncate(w, 2, 3, 1, false);
    ck_assert(w[0] == 3 && w[1] == 1);
}
END_TEST

START_TEST(test_st_files)
{
    enc_st_config c;
    enc_error err = {0};
    /* the newer form (pooling_mode "mean" or the eight keys) and Normalize */
    ck_assert_int_eq(enc_st_config_read(HF "/bert_text", &c, &err), 0);
    ck_assert(c.found && c.pooling == ENC_POOL_MEAN && c.normalize && c.include_prompt);
    /* the older five keys, CLS, no Normalize; no include_prompt: true */
    ck_assert_int_eq(enc_st_config_read(HF "/roberta_text", &c, &err), 0);
    ck_assert(c.found && c.pooling == ENC_POOL_CLS && !c.normalize && c.include_prompt);
    /* no modules.json: nothing found, no error */
    ck_assert_int_eq(enc_st_config_read(HF "/bert_mlm", &c, &err), 0);
    ck_assert(!c.found);
}
END_TEST

/* A directory with modules.json and 1_Pooling/config.json as given: read
 * (want NULL; what was read returned), or refused with want. */
static enc_st_config st_refused(const char *modules, const char *pooling, const char *want)
{
    char dir[] = "/tmp/attnd-st-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/modules.json", dir);
    FILE *f = fopen(path, "w");
    fputs(modules, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/1_Pooling", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/1_Pooling/config.json", dir);
    f = fopen(path, "w");
    fputs(pooling, f);
    fclose(f);
    enc_st_config c;
    enc_error err = {0};
    const int rc = enc_st_config_read(dir, &c, &err);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    if (!want) {
        ck_assert_msg(rc == 0, "%s", err.message);
        return c;
    }
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(err.message, want), "\"%s\" does not say \"%s\"", err.message, want);
    return c;
}

#define MODULES(extra)                                                                             \
    "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "                                    \
    "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", \"path\": "      \
    "\"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}" extra "]"

START_TEST(test_st_refusals)
{
    st_refused(MODULES(""), "{\"pooling_mode\": \"lasttoken\"}", NULL);
    st_refused(MODULES(""), "{\"pooling_mode\": [\"max\"]}", NULL);
    ck_assert(
        !st_refused(MODULES(""), "{\"pooling_mode\": \"mean\", \"include_prompt\": false}", NULL)
             .include_prompt);
    st_refused(MODULES(", {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Dense\", \"type\": "
                       "\"sentence_transformers.models.Dense\"}"),
               "{\"pooling_mode\": \"mean\"}", "module 2 (sentence_transformers.models.Dense)");
    st_refused(MODULES(""), "{\"pooling_mode\": \"weightedmean\"}",
               "pooling_mode \"weightedmean\" is not supported");
    st_refused(MODULES(""), "{\"pooling_mode\": [\"cls\", \"mean\"]}", "one mode");
    st_refused(MODULES(""),
               "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}",
               "2 pooling modes are true");
    st_refused(MODULES(""), "{\"pooling_mode_mean_sqrt_len_tokens\": true}",
               "pooling_mode_mean_sqrt_len_tokens is not supported");
    st_refused("[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
               "\"sentence_transformers.models.Transformer\"}]",
               "{}", "no Pooling module");
    st_refused("{", "{}", "modules.json");
}
END_TEST

/* A directory holding sentence_bert_config.json st and
 * config_sentence_transformers.json cst (each NULL: absent), read by
 * enc_st_text_read: refused with want, or (want NULL) into *t. */
static void st_text(const char *st, const char *cst, const char *want, enc_st_text *t)
{
    char dir[] = "/tmp/attnd-st-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *files[2][2] = {{"sentence_bert_config.json", st},
                               {"config_sentence_transformers.json", cst}};
    for (int i = 0; i < 2; i++) {
        if (!files[i][1])
            continue;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        fputs(files[i][1], f);
        fclose(f);
    }
    enc_error err = {0};
    const int rc = enc_st_text_read(dir, t, &err);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    if (!want) {
        ck_assert_msg(rc == 0, "%s", err.message);
        return;
    }
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(err.message, want), "\"%s\" does not say \"%s\"", err.message, want);
    ck_assert(t->n_prompts == 0 && !t->prompts && !t->default_prompt_name);
}

/* load/sentence.c: max_seq_length, the prompts in the file's order, the
 * default prompt; none without the files; the refusals, naming file and
 * key. */
START_TEST(test_st_text)
{
    enc_st_text t;
    enc_error err = {0};
    ck_assert_int_eq(enc_st_text_read(HF "/bert_text", &t, &err), 0);
    ck_assert(t.max_seq_length == 64 && t.n_prompts == 0 && !t.default_prompt_name);
    enc_st_text_free(&t);
    ck_assert_int_eq(enc_st_text_read(HF "/bert_mlm", &t, &err), 0);
    ck_assert(t.max_seq_length == 0 && t.n_prompts == 0);
    enc_st_text_free(&t);
    st_text("{\"max_seq_length\": null}",
            "{\"prompts\": {\"query\": \"q: \", \"document\": \"\", \"a\": \"A\"}, "
            "\"default_prompt_name\": \"document\", \"similarity_fn_name\": null}",
            NULL, &t);
    ck_assert_int_eq(t.max_seq_length, 0);
    ck_assert_uint_eq(t.n_prompts, 3);
    ck_assert_str_eq(t.prompts[0].name, "query");
    ck_assert_str_eq(t.prompts[2].name, "a");
    ck_assert_str_eq(enc_st_text_prompt(&t, "query"), "q: ");
    ck_assert_str_eq(enc_st_text_prompt(&t, "document"), "");
    ck_assert_ptr_null(enc_st_text_prompt(&t, "passage"));
    ck_assert_str_eq(t.default_prompt_name, "document");
    enc_st_text_free(&t);
    ck_assert_ptr_null(enc_st_text_prompt(NULL, "query"));
    st_text("{\"max_seq_length\": 0}", NULL, "sentence_bert_config.json: max_seq_length", &t);
    st_text("{\"max_seq_length\": 12.5}", NULL, "max_seq_length must be a positive integer", &t);
    st_text("[1]", NULL, "sentence_bert_config.json: the top level is not an object", &t);
    st_text(NULL, "{", "config_sentence_transformers.json: line 1", &t);
    st_text(NULL, "{\"prompts\": [\"q: \"]}", "prompts must be an object", &t);
    st_text(NULL, "{\"prompts\": {\"q\": \"q: \", \"n\": 3}}", "prompts.n must be a string", &t);
    st_text(NULL, "{\"prompts\": {\"q\": \"q: \"}, \"default_prompt_name\": \"p\"}",
            "default_prompt_name 'p' is not one of its prompts", &t);
    st_text(NULL, "{\"default_prompt_name\": 1}", "default_prompt_name must be a string or null",
            &t);
}
END_TEST

START_TEST(test_names)
{
    enc_pooling p;
    static const char *const names[] = {"auto", "cls", "mean", "max", "last"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert_int_eq(enc_pooling_parse(names[i], &p), 0);
        ck_assert_str_eq(enc_pooling_name(p), names[i]);
    }
    ck_assert_int_eq(enc_pooling_parse("lasttoken", &p), -1);
}
END_TEST

Suite *pooling_suite(void)
{
    Suite *s = timed_suite("pooling");
    TCase *tc = timed_case(s, "pooling", 60);
    tcase_add_test(tc, test_against_sentence_transformers);
    tcase_add_test(tc, test_modes_worked);
    tcase_add_test(tc, test_truncate);
    tcase_add_test(tc, test_st_files);
    tcase_add_test(tc, test_st_refusals);
    tcase_add_test(tc, test_st_text);
    tcase_add_test(tc, test_names);
    return s;
}
