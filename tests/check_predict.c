/* check_predict.c - POST /v1/predict, the checkpoint's own answer in the
 * shapes of transformers' pipelines: each directory of
 * tests/fixtures/pipelines (tools/fixtures/make_pipeline_fixtures.py: a task-head
 * model with a real tokenizer, and the fill-mask, token-classification and
 * text-classification pipelines' outputs for its texts, their postprocess
 * transcribed from transformers and run on torch's logits and Hugging
 * Face's tokenizers) served by a daemon, every answer the pipeline's within
 * 1e-4 of their size (scores) and exactly (labels, tokens, words, offsets, sequences);
 * a batch answering as its texts alone; "explain" as /v1/encode's rollout;
 * truncation from either end; the refusals, naming the field. */
#include "daemon.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "v1_util.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIPELINES TESTS_DIR "/fixtures/pipelines"
static const char *const CASES[] = {"bert_fill_mask", "roberta_fill_mask", "bert_ner",
                                    "roberta_ner",    "xlmr_ner",          "bert_text_cls",
                                    "bert_rerank"};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

/* A case's request body: its text (or pair) and options. */
static bool same_option(const json_t *a, const json_t *b, const char *key)
{
    const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
    return x == y || (x && y && json_equal(x, y));
}

static char *case_body(const json_t *c, bool listed)
{
    const json_t *text = json_object_get(c, "text"), *pair = json_object_get(c, "text_pair");
    json_t *in = pair ? json_pack("[O,O]", text, pair) : json_pack("O", text);
    if (listed || pair) /* a pair is always in a list */
        in = json_pack("[o]", in);
    json_t *body = json_pack("{s:o}", "inputs", in);
    const char *opts[] = {"top_k", "aggregation_strategy"};
    for (size_t i = 0; i < 2; i++)
        if (json_object_get(c, opts[i]))
            json_object_set(body, opts[i], json_object_get(c, opts[i]));
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return s;
}

/* POST /v1/predict; the parsed 200 body (the test fails otherwise). */
static json_t *predict(int port, const char *body, const char *name)
{
    http_resp r;
    ck_assert_int_eq(http_post_json(port, "/v1/predict", body, &r), 0);
    ck_assert_msg(r.status == 200, "%s: %ld %s (%s)", name, r.status, r.body, body);
    json_t *j = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    http_resp_free(&r);
    return j;
}

static json_t *load_pipeline(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/pipeline.json", dir);
    json_error_t jerr;
    json_t *p = json_load_file(path, 0, &jerr);
    ck_assert_msg(p != NULL, "%s: %s", path, jerr.text);
    return p;
}

/* Every case of a directory: the pipeline's output, alone and as a list
 * of one; the task named. */
START_TEST(test_pipeline_outputs)
{
    const char *name = CASES[_i];
    char dir[512];
    snprintf(dir, sizeof dir, PIPELINES "/%s", name);
    json_t *p = load_pipeline(dir);
    start_or_fail((const char *const[]){"--model-dir", dir, NULL}, NULL);
    const char *task = json_string_value(json_object_get(p, "task"));
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(p, "cases"), i, c)
    {
        for (int listed = 0; listed <= 1; listed++) {
            char *body = case_body(c, listed);
            json_t *j = predict(dp.port, body, name);
            ck_assert_str_eq(json_string_value(json_object_get(j, "task")), task);
            const json_t *got = json_object_get(j, "predictions");
            if (listed || json_object_get(c, "text_pair")) {
                ck_assert_uint_eq(json_array_size(got), 1);
                got = json_array_get(got, 0);
            }
            char *at = json_near(got, json_object_get(c, "output"), "predictions");
            if (at) {
                char *g = json_dumps(got, JSON_COMPACT);
                char *w = json_dumps(json_object_get(c, "output"), JSON_COMPACT);
                ck_abort_msg("%s case %zu (%s): %s differs\n got  %s\n want %s", name, i, body, at,
                             g, w);
            }
            json_decref(j);
            free(body);
        }
    }
    json_decref(p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* A directory's texts as one list: one forward (usage counts them all),
 * each answer the one it gets alone. */
START_TEST(test_pipeline_batched)
{
    static const char *const cases[] = {"bert_fill_mask", "roberta_ner", "bert_text_cls"};
    const char *name = cases[_i];
    char dir[512];
    snprintf(dir, sizeof dir, PIPELINES "/%s", name);
    json_t *p = load_pipeline(dir);
    start_or_fail((const char *const[]){"--model-dir", dir, NULL}, NULL);
    /* the cases with the first case's options (top_k / aggregation) */
    const json_t *cases_ = json_object_get(p, "cases"), *first = json_array_get(cases_, 0);
    json_t *inputs = json_array(), *want = json_array();
    size_t i;
    const json_t *c;
    json_array_foreach(cases_, i, c)
    {
        if (!same_option(c, first, "top_k") || !same_option(c, first, "aggregation_strategy"))
            continue;
        const json_t *pair = json_object_get(c, "text_pair");
        json_array_append_new(inputs, pair ? json_pack("[O,O]", json_object_get(c, "text"), pair)
                                           : json_incref(json_object_get(c, "text")));
        json_array_append(want, json_object_get(c, "output"));
    }
    ck_assert_uint_ge(json_array_size(inputs), 2);
    json_t *body = json_pack("{s:o}", "inputs", inputs);
    if (json_object_get(first, "top_k"))
        json_object_set(body, "top_k", json_object_get(first, "top_k"));
    if (json_object_get(first, "aggregation_strategy"))
        json_object_set(body, "aggregation_strategy",
                        json_object_get(first, "aggregation_strategy"));
    char *text = json_dumps(body, JSON_COMPACT);
    json_t *j = predict(dp.port, text, name);
    char *at = json_near(json_object_get(j, "predictions"), want, "predictions");
    ck_assert_msg(at == NULL, "%s: batched %s differs", name, at);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "usage"), "sequences")),
                     (json_int_t)json_array_size(want));
    free(text);
    json_decref(j);
    json_decref(body);
    json_decref(want);
    json_decref(p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* "explain": each token of the text with its offsets and the rollout's
 * relevance, /v1/encode's explain of the same text (itself checked
 * against a float64 rollout of the weights in check_heads), summing to 1;
 * from another token with explain_from. */
START_TEST(test_pipeline_explain)
{
    static const char *const cases[] = {"bert_text_cls", "bert_ner", "roberta_fill_mask"};
    const char *name = cases[_i];
    char dir[512];
    snprintf(dir, sizeof dir, PIPELINES "/%s", name);
    json_t *p = load_pipeline(dir);
    start_or_fail((const char *const[]){"--model-dir", dir, NULL}, NULL);
    const json_t *c = json_array_get(json_object_get(p, "cases"), 0);
    const json_t *text = json_object_get(c, "text");
    for (int from = 0; from <= 1; from++) {
        json_t *req =
            json_pack("{s:O,s:b,s:i}", "inputs", text, "explain", 1, "explain_from", from);
        char *body = json_dumps(req, JSON_COMPACT);
        json_t *j = predict(dp.port, body, name);
        free(body);
        json_decref(req);
        req = json_pack("{s:O,s:s,s:b,s:i}", "text", text, "attention", "none", "explain", 1,
                        "explain_from", from);
        body = json_dumps(req, JSON_COMPACT);
        http_resp r;
        ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
        ck_assert_msg(r.status == 200, "%s", r.body);
        json_t *e = json_loads(r.body, 0, NULL);
        const json_t *want = json_object_get(e, "explain"), *toks = json_object_get(e, "tokens");
        const json_t *got = json_object_get(j, "explain");
        const json_t *ids = json_object_get(c, "input_ids"), *offs = json_object_get(c, "offsets");
        ck_assert_uint_eq(json_array_size(got), json_array_size(ids));
        ck_assert_uint_eq(json_array_size(want), json_array_size(ids));
        double total = 0;
        for (size_t i = 0; i < json_array_size(got); i++) {
            const json_t *t = json_array_get(got, i), *o = json_array_get(offs, i);
            ck_assert_int_eq(json_integer_value(json_object_get(t, "id")),
                             json_integer_value(json_array_get(ids, i)));
            ck_assert(json_equal(json_object_get(t, "text"),
                                 json_object_get(json_array_get(toks, i), "text")));
            ck_assert_int_eq(json_integer_value(json_object_get(t, "start")),
                             json_integer_value(json_array_get(o, 0)));
            ck_assert_int_eq(json_integer_value(json_object_get(t, "stop")),
                             json_integer_value(json_array_get(o, 1)));
            const double v = json_number_value(json_object_get(t, "relevance"));
            ck_assert_msg(fabs(v - json_number_value(json_array_get(want, i))) < 1e-6,
                          "%s: token %zu relevance %g, /v1/encode %g", name, i, v,
                          json_number_value(json_array_get(want, i)));
            total += v;
        }
        ck_assert_msg(fabs(total - 1.0) < 1e-6, "%s: relevance sums to %g", name, total);
        json_decref(e);
        http_resp_free(&r);
        free(body);
        json_decref(req);
        json_decref(j);
    }
    json_decref(p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* What each task refuses, the field named; a model without a head. */
START_TEST(test_predict_refused)
{
    static const struct {
        const char *dir, *body;
        long status;
        const char *want;
    } bad[] = {
        {"bert_ner", "{\"inputs\": \"a b\", \"top_k\": 2}", 400,
         "top_k is not used by token-classification"},
        {"bert_ner", "{\"inputs\": [[\"a\", \"b\"]]}", 400,
         "inputs[0] is a pair; token-classification takes one text per sequence"},
        {"bert_fill_mask", "{\"inputs\": \"no mask here\"}", 400,
         "inputs has no mask token ([MASK])"},
        {"bert_fill_mask", "{\"inputs\": [\"a [MASK]\", \"none\"]}", 400,
         "inputs[1] has no mask token ([MASK])"},
        {"bert_fill_mask", "{\"inputs\": \"a [MASK]\", \"aggregation_strategy\": \"simple\"}", 400,
         "aggregation_strategy is only used by token-classification; this model answers fill-mask"},
        {"bert_fill_mask", "{\"inputs\": \"a [MASK]\", \"raw_scores\": true}", 400,
         "raw_scores is only used by text-classification"},
        {"bert_fill_mask", "{\"inputs\": \"a [MASK]\", \"top_k\": 0}", 400, "top_k"},
        {"bert_text_cls", "{\"inputs\": \"a\", \"explain_from\": 1}", 400,
         "explain_from is given without"},
        {"bert_text_cls", "{\"inputs\": \"a\", \"explain\": true, \"explain_from\": 9}", 400,
         "explain_from = 9 is outside sequence 0's tokens 0..2"},
        {"bert_text_cls", "{\"inputs\": \"a\", \"aggregation\": \"simple\"}", 400,
         "unknown field 'aggregation'"},
        {"bert_text_cls", "{}", 400, "inputs is required"},
        {"bert_text_cls", "{\"text\": \"a\"}", 400, "unknown field 'text'; expected inputs"},
        {"bert_text_cls", "{\"inputs\": 3}", 400, "inputs"},
        {"bert_text_cls", "{\"inputs\": \"a\", \"inputs\": \"b\"}", 400, "duplicate"},
        {"bert_text_cls", "{\"inputs\": \"a\", \"model\": \"other\"}", 404, "model 'other'"},
    };
    const char *running = NULL;
    for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
        if (!running || strcmp(running, bad[t].dir) != 0) {
            if (running)
                ck_assert_int_eq(daemon_stop(&dp), 0);
            char dir[512];
            snprintf(dir, sizeof dir, PIPELINES "/%s", bad[t].dir);
            start_or_fail((const char *const[]){"--model-dir", dir, NULL}, NULL);
            running = bad[t].dir;
        }
        http_resp r;
        ck_assert_int_eq(http_post_json(dp.port, "/v1/predict", bad[t].body, &r), 0);
        ck_assert_msg(r.status == bad[t].status && strstr(r.body, bad[t].want),
                      "%s: %ld %s, want %ld and \"%s\"", bad[t].body, r.status, r.body,
                      bad[t].status, bad[t].want);
        http_resp_free(&r);
    }
    ck_assert_int_eq(daemon_stop(&dp), 0);
    /* a base model's directory: no head to answer with */
    start_or_fail((const char *const[]){"--model-dir", TESTS_DIR "/fixtures/hf/bert_text", NULL},
                  NULL);
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/predict", "{\"inputs\": \"a\"}", &r), 0);
    ck_assert_msg(r.status == 400 && strstr(r.body, "this model has no task head (BertModel)"),
                  "%ld %s", r.status, r.body);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* "truncate" and "truncation_direction": a text over the model's 64
 * positions is refused, naming the limit; cut from the right it answers as
 * its first 62 words alone, from the left as its last 62. */
START_TEST(test_predict_truncate)
{
    start_or_fail((const char *const[]){"--model-dir", PIPELINES "/bert_text_cls", NULL}, NULL);
    char text[1024] = "hello world", first[1024] = "hello world", last[1024] = "lazy dog";
    for (int i = 0; i < 30; i++) /* 92 tokens, one a word */
        strcat(text, " the lazy dog");
    for (int i = 0; i < 20; i++) {
        strcat(first, " the lazy dog");
        strcat(last, " the lazy dog");
    }
    char body[2048];
    snprintf(body, sizeof body, "{\"inputs\": \"%s\"}", text);
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/predict", body, &r), 0);
    ck_assert_msg(r.status == 413 && strstr(r.body, "inputs has 94 tokens; the model takes at most "
                                                    "64 (config.json's max_position_embeddings)"),
                  "%ld %s", r.status, r.body);
    http_resp_free(&r);
    static const char *const dirs[] = {"right", "left"};
    for (int d = 0; d < 2; d++) {
        snprintf(body, sizeof body,
                 "{\"inputs\": \"%s\", \"truncate\": true, \"truncation_direction\": \"%s\"}", text,
                 dirs[d]);
        json_t *cut = predict(dp.port, body, dirs[d]);
        snprintf(body, sizeof body, "{\"inputs\": \"%s\"}", d ? last : first);
        json_t *alone = predict(dp.port, body, dirs[d]);
        const json_t *a = json_object_get(cut, "predictions"),
                     *b = json_object_get(alone, "predictions");
        ck_assert_msg(json_equal(a, b), "%s: %s, alone %s", dirs[d], json_dumps(a, 0),
                      json_dumps(b, 0));
        ck_assert_int_eq(
            json_integer_value(json_object_get(json_object_get(cut, "usage"), "tokens")), 64);
        json_decref(cut);
        json_decref(alone);
    }
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *predict_suite(void)
{
    Suite *s = timed_suite("predict");
    TCase *daemon = timed_case(s, "daemon", 60);
    tcase_add_loop_test(daemon, test_pipeline_outputs, 0, N_CASES);
    tcase_add_loop_test(daemon, test_pipeline_batched, 0, 3);
    tcase_add_loop_test(daemon, test_pipeline_explain, 0, 3);
    tcase_add_test(daemon, test_predict_refused);
    tcase_add_test(daemon, test_predict_truncate);
    return s;
}
