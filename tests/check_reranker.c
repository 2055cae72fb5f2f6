/* check_reranker.c - causal LMs served as rerankers (docs/model.md,
 * "Rerankers from causal LMs"): Qwen3-Reranker's Qwen3ForCausalLM with
 * sentence-transformers 5.4+'s LogitScore module, and saved as the model
 * card has it (tied, no modules) with model.score_tokens.  The fixtures
 * (tools/fixtures/make_reranker_fixture.py) hold what the model card's
 * procedure computes: the prompt's three parts tokenized by Hugging Face's
 * tokenizers, the middle cut to max_length, then a plain-torch Qwen3
 * (tools/fixtures/qwen3_reference.py) and lm_head's two logits at the last
 * token.  Checked here: a pair made one text by the template (the ids, cut
 * or not), the scores through /rerank and /predict, raw_scores, the head
 * /v1/model shows, and each setting's refusals. */
#include "daemon.h"
#include "hf_util.h"
#include "protocol/text.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "tokenizer/tokenizer.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RERANKER TESTS_DIR "/fixtures/hf/qwen3_reranker"
#define TIED     TESTS_DIR "/fixtures/hf/qwen3_reranker_tied"

static json_t *fixture(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/rerank.json", dir);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    ck_assert_msg(j != NULL, "%s: %s", path, jerr.text);
    return j;
}

static const json_t *fcase(const json_t *f, size_t i)
{
    return json_array_get(json_object_get(f, "cases"), i);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_number(v), "fixture: no number %s", key);
    return json_number_value(v);
}

/* The model card's prompt written out from the fixture's parts: prefix,
 * "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}",
 * suffix (owned). */
static char *card_template(const json_t *f)
{
    const char *prefix = json_string_value(json_object_get(f, "prefix"));
    const char *suffix = json_string_value(json_object_get(f, "suffix"));
    const char *inst = json_string_value(json_object_get(f, "instruction"));
    ck_assert(prefix && suffix && inst);
    char *t = NULL;
    ck_assert_int_ge(asprintf(&t, "%s<Instruct>: %s\n<Query>: {query}\n<Document>: {document}%s",
                              prefix, inst, suffix),
                     0);
    return t;
}

/* The end a case cuts: its "truncation_direction". */
static tok_direction direction(const json_t *k)
{
    const char *d = json_string_value(json_object_get(k, "truncation_direction"));
    ck_assert_msg(d != NULL, "fixture: a case without truncation_direction");
    return strcmp(d, "left") == 0 ? TOK_TRUNCATE_LEFT : TOK_TRUNCATE_RIGHT;
}

/* A [query, document] pair made one text by the template: the ids are the
 * model card's (prefix, middle, suffix tokenized apart by Hugging Face's
 * tokenizers), whole and with the middle cut to max_length from the right,
 * or from the left: the document's first tokens go, the template and the
 * query stay (by tokenizers' offsets).  A limit that the text around the
 * document alone passes is refused from either end, naming it: a cut takes
 * the document's tokens only. */
START_TEST(test_pair_template_ids)
{
    json_t *f = fixture(RERANKER);
    enc_error err = {0};
    tok_tokenizer *tok = tok_load(RERANKER "/tokenizer.json", &err);
    ck_assert_msg(tok, "%s", err.message);
    char *tpl = card_template(f);
    size_t checked = 0, cut = 0;
    for (size_t c = 0; c < json_array_size(json_object_get(f, "cases")); c++) {
        const json_t *k = fcase(f, c);
        const json_t *max = json_object_get(k, "max_length");
        const api_ctx ctx = {.max_seq_len =
                                 json_is_integer(max) ? (int)json_integer_value(max) : 1 << 20,
                             .tokenizer = tok,
                             .pair_template = tpl};
        const text_options o = {.flags = TEXT_TRUNCATE, .direction = direction(k)};
        const json_t *docs = json_object_get(k, "documents");
        for (size_t d = 0; d < json_array_size(docs); d++) {
            const json_t *doc = json_array_get(docs, d);
            json_t *pair =
                json_pack("[[O,O]]", json_object_get(k, "query"), json_object_get(doc, "document"));
            text_batch tb;
            api_error ae = {0};
            ck_assert_msg(text_tokenize(pair, "inputs", &ctx, &o, &tb, &ae) == 0, "%s", ae.message);
            const json_t *want = json_object_get(doc, "input_ids");
            ck_assert_uint_eq(tb.enc[0].n, json_array_size(want));
            for (size_t i = 0; i < tb.enc[0].n; i++)
                ck_assert_msg(tb.enc[0].ids[i] == json_integer_value(json_array_get(want, i)),
                              "case %zu document %zu: token %zu is %d, the card's %lld", c, d, i,
                              tb.enc[0].ids[i], json_integer_value(json_array_get(want, i)));
            cut += json_is_integer(max);
            checked++;
            text_batch_free(&tb);
            json_decref(pair);
        }
    }
    ck_assert_uint_ge(checked, 6);
    ck_assert_uint_ge(cut, 2);
    const json_t *k = fcase(f, 2);
    ck_assert_int_eq(direction(k), TOK_TRUNCATE_LEFT);
    const size_t around = json_array_size(json_object_get(f, "prefix_ids")) +
                          json_array_size(json_object_get(f, "suffix_ids"));
    const api_ctx ctx = {.max_seq_len = (int)around + 3, .tokenizer = tok, .pair_template = tpl};
    json_t *pair =
        json_pack("[[O,O]]", json_object_get(k, "query"),
                  json_object_get(json_array_get(json_object_get(k, "documents"), 0), "document"));
    for (int left = 0; left < 2; left++) {
        const text_options o = {.flags = TEXT_TRUNCATE,
                                .direction = left ? TOK_TRUNCATE_LEFT : TOK_TRUNCATE_RIGHT};
        text_batch tb;
        api_error ae = {0};
        ck_assert_int_ne(text_tokenize(pair, "inputs", &ctx, &o, &tb, &ae), 0);
        ck_assert_int_eq(ae.kind, API_TOO_LARGE);
        ck_assert_msg(strstr(ae.message, "inputs[0]") && strstr(ae.message, "before {document}"),
                      "%s", ae.message);
    }
    json_decref(pair);
    free(tpl);
    tok_free(tok);
    json_decref(f);
}
END_TEST

/* j as compact JSON text (owned), j released. */
static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

/* /rerank of case c on the running daemon (raw_scores as raw), each
 * document's score against the fixture's number key within tol, and the
 * answer in that number's order (highest first). */
static void rerank_against(const json_t *f, size_t c, bool raw, const char *key, double tol)
{
    const json_t *k = fcase(f, c), *docs = json_object_get(k, "documents");
    json_t *texts = json_array();
    for (size_t d = 0; d < json_array_size(docs); d++)
        json_array_append(texts, json_object_get(json_array_get(docs, d), "document"));
    char *body = dump(json_pack(
        "{s:O,s:o,s:b,s:b,s:O}", "query", json_object_get(k, "query"), "texts", texts, "raw_scores",
        raw, "truncate", 1, "truncation_direction", json_object_get(k, "truncation_direction")));
    long status;
    json_t *got = daemon_post("/rerank", body, &status);
    ck_assert_msg(status == 200, "/rerank: %ld", status);
    ck_assert_uint_eq(json_array_size(got), json_array_size(docs));
    double above = INFINITY;
    for (size_t i = 0; i < json_array_size(got); i++) {
        const json_t *o = json_array_get(got, i);
        const size_t d = (size_t)json_integer_value(json_object_get(o, "index"));
        const double want = num(json_array_get(docs, d), key);
        ck_assert_msg(want <= above,
                      "case %zu: document %zu ranked %zu is out of the fixture's %s "
                      "order",
                      c, d, i, key);
        above = want;
        const double s = json_number_value(json_object_get(o, "score"));
        ck_assert_msg(fabs(s - want) < tol, "case %zu document %zu: %.7g, want %s %.7g", c, d, s,
                      key, want);
    }
    json_decref(got);
    free(body);
}

/* rerank_against the fixture's score (the sigmoid), raw: its logit
 * difference. */
static void rerank_case(const json_t *f, size_t c, bool raw, double tol)
{
    rerank_against(f, c, raw, raw ? "logit_diff" : "score", tol);
}

/* A body's scores are not the fixture's documents mixed up: the spread
 * the fixture asserts is there. */
static double spread(const json_t *f)
{
    const json_t *docs = json_object_get(fcase(f, 0), "documents");
    double lo = 1, hi = 0;
    for (size_t d = 0; d < json_array_size(docs); d++) {
        const double s = num(json_array_get(docs, d), "score");
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    return hi - lo;
}

/* The LogitScore module's directory, the template by default: /rerank's
 * scores (cut documents too), the logit differences with raw_scores, and
 * /v1/model's head (score_tokens, one output) and pair_template. */
START_TEST(test_logit_score_module)
{
    json_t *f = fixture(RERANKER);
    ck_assert_msg(spread(f) > 0.05, "the fixture's scores are too close to tell apart");
    const json_t *cut = fcase(f, 1);
    char max[32];
    snprintf(max, sizeof max, "%lld", json_integer_value(json_object_get(cut, "max_length")));
    start_or_fail((const char *const[]){"--model-dir", RERANKER, NULL}, NULL);
    rerank_case(f, 0, false, 1e-5);
    rerank_case(f, 0, true, 1e-4);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *model = http_json_body(&r);
    const json_t *head = json_object_get(model, "head");
    ck_assert_str_eq(json_string_value(json_object_get(head, "kind")), "sequence");
    ck_assert_int_eq(json_integer_value(json_object_get(head, "outputs")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(head, "pooling")), "last");
    const json_t *ids = json_object_get(head, "score_tokens");
    ck_assert_uint_eq(json_array_size(ids), 2);
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 0)),
                     json_integer_value(json_object_get(f, "true_token_id")));
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 1)),
                     json_integer_value(json_object_get(f, "false_token_id")));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(head, "tensors"), 0)),
                     "lm_head.weight");
    const char *tpl =
        json_string_value(json_object_get(json_object_get(model, "tokenizer"), "pair_template"));
    char *card = card_template(f);
    ck_assert_msg(tpl && strcmp(tpl, card) == 0, "pair_template is not the model card's: %s",
                  tpl ? tpl : "null");
    free(card);
    json_decref(model);
    http_resp_free(&r);
    /* a document over the limit without truncate: refused, naming it */
    const json_t *long_doc = json_array_get(json_object_get(cut, "documents"), 0);
    char *body = dump(json_pack("{s:O,s:[O]}", "query", json_object_get(cut, "query"), "texts",
                                json_object_get(long_doc, "document")));
    ck_assert_int_eq(daemon_stop(&dp), 0);
    start_or_fail((const char *const[]){"--model-dir", RERANKER, "--max-seq-len", max, NULL}, NULL);
    rerank_case(f, 1, false, 1e-5);
    rerank_case(f, 2, false, 1e-5); /* its document cut from the left */
    long status;
    json_t *got = daemon_post("/rerank", body, &status);
    ck_assert_int_eq(status, 422); /* TEI's Validation */
    ck_assert_msg(strstr(json_string_value(json_object_get(got, "error")), "texts[0]") != NULL,
                  "the error names no text: %s", json_string_value(json_object_get(got, "error")));
    json_decref(got);
    free(body);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    json_decref(f);
}
END_TEST

/* Saved as the model card's (tied: no lm_head, no sentence-transformers
 * files): embeddings alone, until --score-tokens yes,no makes the
 * reranker; /predict answers a pair by the same score. */
START_TEST(test_score_tokens_tied)
{
    json_t *f = fixture(TIED);
    start_or_fail((const char *const[]){"--model-dir", TIED, NULL}, NULL);
    long status;
    json_t *got = daemon_post("/rerank", "{\"query\": \"a\", \"texts\": [\"b\"]}", &status);
    ck_assert_int_eq(status, 424);
    json_decref(got);
    ck_assert_int_eq(daemon_stop(&dp), 0);

    start_or_fail((const char *const[]){"--model-dir", TIED, "--score-tokens", "yes,no", NULL},
                  NULL);
    rerank_case(f, 0, false, 1e-5);
    const json_t *k = fcase(f, 0), *doc = json_array_get(json_object_get(k, "documents"), 0);
    char *body = dump(json_pack("{s:[O,O]}", "inputs", json_object_get(k, "query"),
                                json_object_get(doc, "document")));
    got = daemon_post("/predict", body, &status);
    ck_assert_int_eq(status, 200);
    const double s = json_number_value(json_object_get(json_array_get(got, 0), "score"));
    ck_assert_msg(fabs(s - num(doc, "score")) < 1e-5, "/predict: %g, want %g", s,
                  num(doc, "score"));
    json_decref(got);
    free(body);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    json_decref(f);
}
END_TEST

/* bfloat16 and int8 (the score's lm_head rows as the Linears, in that
 * dtype): case 0's documents in float32's order, their scores within the
 * bounds measured on these 32-wide random models (bfloat16 1.8e-3 untied,
 * 4.5e-3 tied; int8 2.0e-2, 9.6e-3), untied with its LogitScore module and
 * tied with --score-tokens. */
START_TEST(test_dtypes)
{
    static const struct {
        const char *dtype;
        double tol;
    } DT[] = {{"bfloat16", 0.01}, {"int8", 0.05}};
    for (int tied = 0; tied < 2; tied++) {
        json_t *f = fixture(tied ? TIED : RERANKER);
        for (size_t i = 0; i < sizeof DT / sizeof *DT; i++) {
            if (tied)
                start_or_fail((const char *const[]){"--model-dir", TIED, "--dtype", DT[i].dtype,
                                                    "--score-tokens", "yes,no", NULL},
                              NULL);
            else
                start_or_fail(
                    (const char *const[]){"--model-dir", RERANKER, "--dtype", DT[i].dtype, NULL},
                    NULL);
            rerank_case(f, 0, false, DT[i].tol);
            ck_assert_int_eq(daemon_stop(&dp), 0);
        }
        json_decref(f);
    }
}
END_TEST

/* s: the LogitScore directory's model, tokenizer and modules.json with
 * 1_LogitScore/config.json holding config. */
static void logit_score_dir(scratch *s, const char *config)
{
    scratch_make(
        s, RERANKER, NULL, NULL,
        (const char *const[]){"model.safetensors", "tokenizer.json", "modules.json", NULL});
    char sub[128];
    snprintf(sub, sizeof sub, "%s/1_LogitScore", s->dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    scratch_write(s, "1_LogitScore/config.json", config);
}

/* One score token: the head is lm_head's row of it alone, raw_scores its
 * logit (the fixture's logit_true), from --score-tokens yes on the tied
 * directory and from a LogitScore module whose false_token_id is null (as
 * zeroentropy/zerank-2 saves it); /v1/model's head names one token. */
START_TEST(test_one_token)
{
    json_t *tied = fixture(TIED), *f = fixture(RERANKER);
    start_or_fail((const char *const[]){"--model-dir", TIED, "--score-tokens", "yes", NULL}, NULL);
    rerank_against(tied, 0, true, "logit_true", 1e-4);
    ck_assert_int_eq(daemon_stop(&dp), 0);

    scratch s;
    logit_score_dir(&s, "{\"true_token_id\": 1003, \"false_token_id\": null}");
    start_or_fail((const char *const[]){"--model-dir", s.dir, NULL}, NULL);
    rerank_against(f, 0, true, "logit_true", 1e-4);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *model = http_json_body(&r);
    const json_t *ids = json_object_get(json_object_get(model, "head"), "score_tokens");
    ck_assert_uint_eq(json_array_size(ids), 1);
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 0)), 1003);
    json_decref(model);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    scratch_free(&s);
    json_decref(f);
    json_decref(tied);
}
END_TEST

/* Each setting's refusal at start-up, naming it. */
START_TEST(test_refused)
{
    startup_refused((const char *const[]){"--model-dir", TIED, "--score-tokens", "maybe,no", NULL},
                    "model.score_tokens: 'maybe' is not a token of", 1);
    startup_refused((const char *const[]){"--model-dir", TIED, "--score-tokens", "yes,no,", NULL},
                    "model.score_tokens: 'yes,no,' must be one token or two", 1);
    startup_refused((const char *const[]){"--model-dir", TESTS_DIR "/fixtures/hf/bert_text",
                                          "--score-tokens", "[CLS]", NULL},
                    "is not a causal LM", 1);
    startup_refused(
        (const char *const[]){"--model-dir", RERANKER, "--rerank-template", "{query} alone", NULL},
        "model.rerank_template must hold {query} and {document} once", 1);
    /* a LogitScore module naming a token past the vocabulary */
    scratch s;
    logit_score_dir(&s, "{\"true_token_id\": 99999}");
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL},
                    "1_LogitScore/config.json: true_token_id (and false_token_id, unless null) "
                    "must be token ids below vocab_size",
                    1);
    scratch_free(&s);
}
END_TEST

/* A directory with a chat_template.jinja (zerank-2's form) and no
 * model.rerank_template: the start-up says that the template is not
 * rendered and which prompt pairs take; with the setting given, nothing. */
START_TEST(test_chat_template_warned)
{
    scratch s;
    logit_score_dir(&s, "{\"true_token_id\": 1003, \"false_token_id\": null}");
    scratch_write(&s, "chat_template.jinja", "{{ query }} {{ document }}");
    char *out = NULL;
    ck_assert_int_eq(
        run_attnd((const char *const[]){"--model-dir", s.dir, "--check-config", NULL}, NULL, &out),
        0);
    ck_assert_msg(strstr(out, "chat_template.jinja is not rendered: each [query, document] pair "
                              "takes Qwen3-Reranker's prompt"),
                  "%s", out);
    free(out);
    ck_assert_int_eq(
        run_attnd((const char *const[]){"--model-dir", s.dir, "--check-config", "--rerank-template",
                                        "{query}|{document}", NULL},
                  NULL, &out),
        0);
    ck_assert_msg(!strstr(out, "is not rendered"), "%s", out);
    free(out);
    scratch_free(&s);
}
END_TEST

Suite *reranker_suite(void)
{
    Suite *s = timed_suite("reranker");
    TCase *core = timed_case(s, "core", 10);
    tcase_add_test(core, test_pair_template_ids);
    TCase *tc = timed_case(s, "daemon", 60);
    tcase_add_test(tc, test_logit_score_module);
    tcase_add_test(tc, test_score_tokens_tied);
    tcase_add_test(tc, test_dtypes);
    tcase_add_test(tc, test_one_token);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_chat_template_warned);
    return s;
}
