/* check_tei.c - Hugging Face text-embeddings-inference's API (server/
 * protocol/tei.c) from a daemon: /embed and /embed_all against
 * sentence-transformers' and PyTorch's outputs (tests/fixtures/hf/
 * bert_text) and equal to /v1/embeddings; /similarity as the cosine of
 * those; /predict and POST / against transformers' text-classification
 * pipeline, /rerank ordered by a cross-encoder's scores (tests/fixtures/
 * pipelines); /embed_sparse as SPLADE of the masked LM's logits from
 * /v1/encode; POST / on token-classification and fill-mask heads in the
 * pipelines' shapes; /tokenize's byte offsets, /decode against Hugging Face's
 * tokenizers, /info; TEI's errors (status, error_type). */
#include "daemon.h"
#include "hf_util.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"
#include "v1_util.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_DIR  TESTS_DIR "/fixtures/hf/bert_text"
#define PIPELINES TESTS_DIR "/fixtures/pipelines"

static json_t *post_ok(const char *path, const char *body)
{
    long status;
    json_t *j = daemon_post(path, body, &status);
    if (status != 200) {
        char *s = json_dumps(j, JSON_ENCODE_ANY);
        ck_abort_msg("%s %s: %ld %s", path, body, status, s);
    }
    return j;
}

/* j as JSON text (owned), j released. */
static char *dump(json_t *j, size_t flags)
{
    char *s = json_dumps(j, flags);
    json_decref(j);
    return s;
}

static json_t *pipeline(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, PIPELINES "/%s/pipeline.json", name);
    json_t *p = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* The first label's score in a pipeline case's output. */
static double case_score(const json_t *c)
{
    return json_number_value(
        json_object_get(json_array_get(json_object_get(c, "output"), 0), "score"));
}

/* s: bert_rerank's model and tokenizer, to which a test adds
 * sentence-transformers' files. */
static void rerank_copy(scratch *s)
{
    scratch_make(s, PIPELINES "/bert_rerank", NULL, NULL,
                 (const char *const[]){"model.safetensors", "tokenizer.json",
                                       "tokenizer_config.json", NULL});
}

static void start_pipeline(const char *name)
{
    char dir[512];
    snprintf(dir, sizeof dir, PIPELINES "/%s", name);
    start_or_fail((const char *const[]){"--model-dir", dir, NULL}, NULL);
}

/* The code points of UTF-8 text s. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The fixture's texts as a JSON list (new reference). */
static json_t *fixture_texts(void)
{
    json_t *t = json_load_file(TEXT_DIR "/text.json", 0, NULL);
    ck_assert_ptr_nonnull(t);
    json_t *texts = json_incref(json_object_get(t, "texts"));
    json_decref(t);
    return texts;
}

/* /embed: sentence-transformers' normalized mean pooling of each text, the
 * very numbers /v1/embeddings gives; dimensions and normalize false as
 * the mean pooled cut; /embed_all: PyTorch's last hidden states;
 * /similarity and POST / with source_sentence: the cosines. */
START_TEST(test_tei_embed)
{
    start_or_fail((const char *const[]){"--model-dir", TEXT_DIR, NULL}, NULL);
    json_t *texts = fixture_texts();
    const size_t B = json_array_size(texts);
    int dims[3];
    float *want = hf_text_tensor(TEXT_DIR, "mean_normalized", dims),
          *mean = hf_text_tensor(TEXT_DIR, "mean_pooled", dims);
    const size_t D = (size_t)dims[1];
    char *body = dump(json_pack("{s:O}", "inputs", texts), JSON_COMPACT);
    json_t *got = post_ok("/embed", body);
    ck_assert_uint_eq(json_array_size(got), B);
    char *obody = dump(json_pack("{s:O}", "input", texts), JSON_COMPACT);
    json_t *oai = post_ok("/v1/embeddings", obody);
    for (size_t b = 0; b < B; b++) {
        const json_t *row = json_array_get(got, b);
        ck_assert_uint_eq(json_array_size(row), D);
        const json_t *orow =
            json_object_get(json_array_get(json_object_get(oai, "data"), b), "embedding");
        for (size_t j = 0; j < D; j++) {
            const double v = json_number_value(json_array_get(row, j));
            EXPECT(fabs(v - want[b * D + j]) < 1e-5, "embed[%zu][%zu] = %g, want %g", b, j, v,
                   (double)want[b * D + j]);
            EXPECT(v == json_number_value(json_array_get(orow, j)),
                   "embed[%zu][%zu] is not /v1/embeddings'", b, j);
        }
    }
    json_decref(got);
    /* one string: still a list of one; 4 dimensions of the mean, not normalized */
    got = post_ok("/embed", "{\"inputs\": \"The quick brown fox jumps over the lazy dog.\", "
                            "\"dimensions\": 4, \"normalize\": false}");
    ck_assert_uint_eq(json_array_size(got), 1);
    ck_assert_uint_eq(json_array_size(json_array_get(got, 0)), 4);
    for (size_t j = 0; j < 4; j++)
        ck_assert_msg(fabs(json_number_value(json_array_get(json_array_get(got, 0), j)) - mean[j]) <
                          1e-5,
                      "dimensions 4, normalize false: [%zu]", j);
    json_decref(got);
    /* /embed_all of the first text: PyTorch's last hidden state, row by row */
    float *h = hf_text_tensor(TEXT_DIR, "last_hidden_state", dims);
    json_t *tok =
        post_ok("/v1/tokenize", "{\"text\": \"The quick brown fox jumps over the lazy dog.\"}");
    const size_t len = json_array_size(json_array_get(json_object_get(tok, "tokens"), 0));
    got = post_ok("/embed_all", "{\"inputs\": \"The quick brown fox jumps over the lazy dog.\"}");
    const json_t *rows = json_array_get(got, 0);
    ck_assert_uint_eq(json_array_size(rows), len);
    for (size_t i = 0; i < len; i++)
        for (size_t j = 0; j < D; j++)
            EXPECT(fabs(json_number_value(json_array_get(json_array_get(rows, i), j)) -
                        h[i * D + j]) < 1e-4,
                   "embed_all[0][%zu][%zu]", i, j);
    json_decref(got);
    json_decref(tok);
    /* /similarity, and POST / with its body: the cosine of the mean-pooled
     * vectors (normalized: their dot products) */
    json_t *sim =
        json_pack("{s:{s:O,s:[O,O]}}", "inputs", "source_sentence", json_array_get(texts, 0),
                  "sentences", json_array_get(texts, 1), json_array_get(texts, 2));
    char *sbody = json_dumps(sim, JSON_COMPACT);
    for (int root = 0; root <= 1; root++) {
        got = post_ok(root ? "/" : "/similarity", sbody);
        ck_assert_uint_eq(json_array_size(got), 2);
        for (size_t k = 1; k <= 2; k++) {
            double dot = 0;
            for (size_t j = 0; j < D; j++)
                dot += (double)want[j] * want[k * D + j];
            const double v = json_number_value(json_array_get(got, k - 1));
            ck_assert_msg(fabs(v - dot) < 1e-5, "similarity[%zu] = %g, want %g", k - 1, v, dot);
        }
        json_decref(got);
    }
    /* TEI's timing headers: the texts' characters (code points), the
     * tokens Hugging Face's tokenizer gives them, integer milliseconds */
    {
        hf_ids x = hf_text_ids(TEXT_DIR, "input_ids", "attention_mask");
        long ntok = 0, chars = 0;
        for (int b = 0; b < x.B; b++)
            ntok += (long)x.lengths[b];
        for (size_t b = 0; b < B; b++)
            chars += (long)utf8_chars(json_string_value(json_array_get(texts, b)));
        http_resp hr;
        ck_assert_int_eq(http_post_json(dp.port, "/embed", body, &hr), 0);
        char v[64];
        ck_assert_str_eq(http_header(&hr, "x-compute-type", v, sizeof v), "cpu");
        ck_assert_int_eq(atol(http_header(&hr, "x-compute-tokens", v, sizeof v)), ntok);
        ck_assert_int_eq(atol(http_header(&hr, "x-compute-characters", v, sizeof v)), chars);
        static const char *const ms[] = {"x-compute-time", "x-total-time", "x-tokenization-time",
                                         "x-queue-time", "x-inference-time"};
        for (size_t i = 0; i < 5; i++) {
            const char *hv = http_header(&hr, ms[i], v, sizeof v);
            ck_assert_msg(hv && *hv && strspn(hv, "0123456789") == strlen(hv), "%s: %s", ms[i],
                          hv ? hv : "absent");
        }
        http_resp_free(&hr);
        hf_ids_free(&x);
    }
    /* POST / with inputs: /embed */
    got = post_ok("/", "{\"inputs\": \"Hello\"}");
    ck_assert_uint_eq(json_array_size(json_array_get(got, 0)), D);
    json_decref(got);
    free(sbody);
    json_decref(sim);
    free(h);
    free(body);
    free(obody);
    json_decref(oai);
    free(want);
    free(mean);
    json_decref(texts);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* TEI's token-id inputs on /embed: Hugging Face's ids of the fixture's
 * texts give sentence-transformers' embeddings, alone, as a batch and mixed
 * with text; a long list is cut as truncate says, from either end, or
 * refused; an id the vocabulary lacks is named. */
START_TEST(test_tei_embed_ids)
{
    start_or_fail((const char *const[]){"--model-dir", TEXT_DIR, NULL}, NULL);
    hf_ids x = hf_text_ids(TEXT_DIR, "input_ids", "attention_mask");
    int dims[3];
    float *want = hf_text_tensor(TEXT_DIR, "mean_normalized", dims);
    const size_t D = (size_t)dims[1];
    json_t *texts = fixture_texts(), *rows = json_array();
    for (int b = 0; b < x.B; b++)
        json_array_append_new(rows, hf_ids_row(&x, b));
    /* one list of ids; all rows; rows and texts alternating */
    json_t *mixed = json_array();
    for (int b = 0; b < x.B; b++)
        json_array_append(mixed, b % 2 ? json_array_get(rows, (size_t)b)
                                       : json_array_get(texts, (size_t)b));
    json_t *forms[] = {json_array_get(rows, 0), rows, mixed};
    for (size_t k = 0; k < 3; k++) {
        char *body = dump(json_pack("{s:O}", "inputs", forms[k]), JSON_COMPACT);
        json_t *got = post_ok("/embed", body);
        const size_t B = k == 0 ? 1 : (size_t)x.B;
        ck_assert_uint_eq(json_array_size(got), B);
        for (size_t b = 0; b < B; b++)
            for (size_t j = 0; j < D; j++) {
                const double v = json_number_value(json_array_get(json_array_get(got, b), j));
                EXPECT(fabs(v - want[b * D + j]) < 1e-5, "form %zu: embed[%zu][%zu] = %g, want %g",
                       k, b, j, v, (double)want[b * D + j]);
            }
        json_decref(got);
        free(body);
    }
    /* the second text's ids (33 with [CLS] and [SEP]) against a limit of 8:
     * truncate cuts them to the first or last 8, as sending those does */
    daemon_stop(&dp);
    start_or_fail((const char *const[]){"--model-dir", TEXT_DIR, "--max-seq-len", "8", NULL}, NULL);
    const json_t *row = json_array_get(rows, 1);
    const size_t n = json_array_size(row);
    ck_assert_uint_gt(n, 8);
    for (int left = 0; left <= 1; left++) {
        json_t *cut = json_array();
        for (size_t i = left ? n - 8 : 0; i < (left ? n : 8); i++)
            json_array_append(cut, json_array_get(row, i));
        char *a = dump(json_pack("{s:O,s:b,s:s}", "inputs", row, "truncate", 1,
                                 "truncation_direction", left ? "Left" : "Right"),
                       JSON_COMPACT);
        char *b = dump(json_pack("{s:o}", "inputs", cut), JSON_COMPACT);
        json_t *ga = post_ok("/embed", a), *gb = post_ok("/embed", b);
        ck_assert_msg(json_equal(ga, gb), "%s: not the embedding of the %s 8 ids", a,
                      left ? "last" : "first");
        json_decref(ga);
        json_decref(gb);
        free(a);
        free(b);
    }
    char *body = dump(json_pack("{s:O}", "inputs", row), JSON_COMPACT);
    long status;
    json_t *e = daemon_post("/embed", body, &status);
    const char *msg = json_string_value(json_object_get(e, "error"));
    ck_assert_msg(status == 422 && msg && strstr(msg, "inputs has 33 tokens") &&
                      strstr(msg, "at most 8"),
                  "ids over the limit: %ld %s", status, msg ? msg : "?");
    json_decref(e);
    free(body);
    e = daemon_post("/embed", "{\"inputs\": [[2, 50], [2, 999999, 3]]}", &status);
    msg = json_string_value(json_object_get(e, "error"));
    ck_assert_msg(status == 422 && msg && strstr(msg, "inputs[1][1] = 999999"),
                  "an id out of range: %ld %s", status, msg ? msg : "?");
    json_decref(e);
    json_decref(mixed);
    json_decref(rows);
    json_decref(texts);
    free(want);
    hf_ids_free(&x);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* /predict: a text, a pair and a batch of both, each as transformers'
 * text-classification pipeline ranks it (softmax over three labels); POST
 * / nests one text's labels as Inference Endpoints do. */
START_TEST(test_tei_predict)
{
    json_t *p = pipeline("bert_text_cls");
    start_pipeline("bert_text_cls");
    const json_t *cases = json_object_get(p, "cases");
    json_t *batch = json_array(), *want = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const json_t *text = json_object_get(c, "text"), *pair = json_object_get(c, "text_pair");
        json_t *in = pair ? json_pack("[O,O]", text, pair) : json_pack("O", text);
        char *body = dump(json_pack("{s:o}", "inputs", json_incref(in)), JSON_COMPACT);
        json_t *got = post_ok("/predict", body);
        char *at = json_near(got, json_object_get(c, "output"), "predict");
        ck_assert_msg(at == NULL, "/predict %s: %s differs", body, at);
        json_decref(got);
        free(body);
        json_array_append_new(batch, pair ? in : json_pack("[o]", in));
        json_array_append(want, json_object_get(c, "output"));
        if (!pair) { /* POST /: [[labels]] */
            body = dump(json_pack("{s:O}", "inputs", text), JSON_COMPACT);
            got = post_ok("/", body);
            ck_assert_uint_eq(json_array_size(got), 1);
            at = json_near(json_array_get(got, 0), json_object_get(c, "output"), "root");
            ck_assert_msg(at == NULL, "POST / %s: %s differs", body, at);
            json_decref(got);
            free(body);
        }
    }
    char *body = dump(json_pack("{s:O}", "inputs", batch), JSON_COMPACT);
    json_t *got = post_ok("/predict", body);
    char *at = json_near(got, want, "batch");
    ck_assert_msg(at == NULL, "/predict batch: %s differs", at);
    json_decref(got);
    free(body);
    /* raw_scores: the logits, whose softmax is the score */
    got = post_ok("/predict", "{\"inputs\": \"Nothing to see here.\", \"raw_scores\": true}");
    double sum = 0;
    for (size_t k = 0; k < json_array_size(got); k++)
        sum += exp(json_number_value(json_object_get(json_array_get(got, k), "score")));
    const json_t *w0 = json_array_get(json_object_get(json_array_get(cases, 3), "output"), 0);
    const json_t *g0 = NULL;
    for (size_t k = 0; k < json_array_size(got); k++)
        if (json_equal(json_object_get(json_array_get(got, k), "label"),
                       json_object_get(w0, "label")))
            g0 = json_array_get(got, k);
    ck_assert_ptr_nonnull(g0);
    ck_assert_msg(fabs(exp(json_number_value(json_object_get(g0, "score"))) / sum -
                       json_number_value(json_object_get(w0, "score"))) < 1e-5,
                  "raw_scores: softmax of the logits is not the score");
    json_decref(got);
    json_decref(batch);
    json_decref(want);
    json_decref(p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* A CrossEncoder as sentence-transformers 5.4 and later save it:
 * modules.json holds its Transformer alone (no Pooling, which attnd once
 * required) and config_sentence_transformers.json its activation_fn, which
 * wins over config.json's.  Here Identity: the head's function (transformers'
 * pipeline's, POST /'s) is none; /rerank's scores stay TEI's sigmoid, the
 * pipeline's scores. */
START_TEST(test_tei_rerank_st_modules)
{
    json_t *p = pipeline("bert_rerank");
    scratch s;
    rerank_copy(&s);
    scratch_write(&s, "modules.json",
                  "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
                  "\"sentence_transformers.base.modules.transformer.Transformer\"}]");
    scratch_write(&s, "sentence_bert_config.json",
                  "{\"transformer_task\": \"sequence-classification\", \"module_output_name\": "
                  "\"scores\"}");
    scratch_write(&s, "config_sentence_transformers.json",
                  "{\"model_type\": \"CrossEncoder\", \"activation_fn\": "
                  "\"torch.nn.modules.linear.Identity\", \"prompts\": {}, "
                  "\"default_prompt_name\": null}");
    start_or_fail((const char *const[]){"--model-dir", s.dir, NULL}, NULL);
    const json_t *cases = json_object_get(p, "cases");
    const json_t *c = json_array_get(cases, 0);
    const double want = case_score(c);
    char *body = dump(json_pack("{s:O,s:[O]}", "query", json_object_get(c, "text"), "texts",
                                json_object_get(c, "text_pair")),
                      JSON_COMPACT);
    json_t *got = post_ok("/rerank", body);
    const double score = json_number_value(json_object_get(json_array_get(got, 0), "score"));
    ck_assert_msg(fabs(score - want) < 1e-5, "/rerank scored %g, want %g", score, want);
    json_decref(got);
    free(body);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *model = http_json_body(&r);
    const json_t *head = json_object_get(model, "head");
    ck_assert_str_eq(json_string_value(json_object_get(head, "function")), "none");
    ck_assert_str_eq(json_string_value(json_object_get(head, "kind")), "sequence");
    json_decref(model);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    /* an activation attnd lacks is refused, naming the file */
    scratch_write(&s, "config_sentence_transformers.json",
                  "{\"model_type\": \"CrossEncoder\", \"activation_fn\": "
                  "\"torch.nn.modules.activation.Tanh\"}");
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL},
                    "config_sentence_transformers.json: the CrossEncoder activation "
                    "'torch.nn.modules.activation.Tanh' is not supported",
                    1);
    scratch_free(&s);
    json_decref(p);
}
END_TEST

/* POST body to path: a 400 whose message holds want. */
static void refused_400(const char *path, const char *body, const char *want)
{
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, path, body, &r), 0);
    http_assert_error(&r, 400, "invalid_request", want);
    http_resp_free(&r);
}

/* The first label's score /v1/predict gives a [query, passage] pair, with
 * prompt_name when not NULL. */
static double pair_score(const char *query, const json_t *passage, const char *prompt_name)
{
    json_t *body = json_pack("{s:[[s,O]]}", "inputs", query, passage);
    if (prompt_name)
        json_object_set_new(body, "prompt_name", json_string(prompt_name));
    char *text = dump(body, JSON_COMPACT);
    json_t *got = post_ok("/v1/predict", text);
    const json_t *first = json_array_get(json_array_get(json_object_get(got, "predictions"), 0), 0);
    const double score = json_number_value(json_object_get(first, "score"));
    json_decref(got);
    free(text);
    return score;
}

/* A CrossEncoder's prompts (sentence-transformers 5.4+:
 * config_sentence_transformers.json's model_type CrossEncoder, prompts,
 * default_prompt_name) go before each pair's first text, as its predict and
 * rank put them (its input formatter's prepend_prompt_to_texts).  With the
 * default prompt "What is ", the query "the capital of France?" scores as
 * the pipeline's "What is the capital of France?" (transformers in torch)
 * on /v1/predict, TEI's /predict and /rerank, and tokenizes to its ids;
 * prompt_name "how" makes "bake bread?" the pipeline's "How do I bake
 * bread?", and "none" leaves a text as it is.  Another model's pairs get no
 * prompt, and /v1/predict refuses its prompt_name. */
START_TEST(test_cross_encoder_prompts)
{
    json_t *p = pipeline("bert_rerank");
    const json_t *cases = json_object_get(p, "cases");
    const json_t *c0 = json_array_get(cases, 0), *c4 = json_array_get(cases, 4);
    ck_assert_str_eq(json_string_value(json_object_get(c0, "text")),
                     "What is the capital of France?");
    ck_assert_str_eq(json_string_value(json_object_get(c4, "text")), "How do I bake bread?");
    const double want0 = case_score(c0);
    const double want4 = case_score(c4);
    const json_t *passage0 = json_object_get(c0, "text_pair"),
                 *passage4 = json_object_get(c4, "text_pair");
    scratch s;
    rerank_copy(&s);
    scratch_write(&s, "config_sentence_transformers.json",
                  "{\"model_type\": \"CrossEncoder\", \"prompts\": {\"what\": \"What is \", "
                  "\"how\": \"How do I \", \"none\": \"\"}, \"default_prompt_name\": \"what\"}");
    start_or_fail((const char *const[]){"--model-dir", s.dir, NULL}, NULL);
    double got = pair_score("the capital of France?", passage0, NULL);
    ck_assert_msg(fabs(got - want0) < 1e-5, "/v1/predict, the default prompt: %g, want %g", got,
                  want0);
    got = pair_score("bake bread?", passage4, "how");
    ck_assert_msg(fabs(got - want4) < 1e-5, "/v1/predict, prompt_name how: %g, want %g", got,
                  want4);
    got = pair_score("What is the capital of France?", passage0, "none");
    ck_assert_msg(fabs(got - want0) < 1e-5, "/v1/predict, prompt_name none: %g, want %g", got,
                  want0);
    char *body =
        dump(json_pack("{s:s,s:[O]}", "query", "the capital of France?", "texts", passage0),
             JSON_COMPACT);
    json_t *r = post_ok("/rerank", body);
    got = json_number_value(json_object_get(json_array_get(r, 0), "score"));
    ck_assert_msg(fabs(got - want0) < 1e-5, "/rerank: %g, want %g", got, want0);
    json_decref(r);
    free(body);
    body =
        dump(json_pack("{s:[[s,O]]}", "inputs", "the capital of France?", passage0), JSON_COMPACT);
    r = post_ok("/predict", body);
    got = json_number_value(json_object_get(json_array_get(json_array_get(r, 0), 0), "score"));
    ck_assert_msg(fabs(got - want0) < 1e-5, "/predict: %g, want %g", got, want0);
    json_decref(r);
    free(body);
    body = dump(json_pack("{s:[[s,O]]}", "text", "the capital of France?", passage0), JSON_COMPACT);
    r = post_ok("/v1/tokenize", body);
    const json_t *toks = json_array_get(json_object_get(r, "tokens"), 0),
                 *ids = json_object_get(c0, "input_ids");
    ck_assert_uint_eq(json_array_size(toks), json_array_size(ids));
    for (size_t i = 0; i < json_array_size(ids); i++)
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(toks, i), "id")),
                         json_integer_value(json_array_get(ids, i)));
    json_decref(r);
    free(body);
    refused_400("/v1/predict", "{\"inputs\": [[\"a\", \"b\"]], \"prompt_name\": \"query\"}",
                "prompt_name 'query' is not one of the model's prompts: what, how, none");
    ck_assert_int_eq(daemon_stop(&dp), 0);
    /* a model that is not a CrossEncoder: no prompt on its pairs' scores */
    scratch_write(&s, "config_sentence_transformers.json",
                  "{\"prompts\": {\"what\": \"What is \"}, \"default_prompt_name\": \"what\"}");
    start_or_fail((const char *const[]){"--model-dir", s.dir, NULL}, NULL);
    got = pair_score("What is the capital of France?", passage0, NULL);
    ck_assert_msg(fabs(got - want0) < 1e-5, "not a CrossEncoder: %g, want %g", got, want0);
    refused_400("/v1/predict", "{\"inputs\": [[\"a\", \"b\"]], \"prompt_name\": \"what\"}",
                "prompt_name: this route takes a CrossEncoder's prompts only");
    refused_400("/v1/tokenize", "{\"text\": [[\"a\", \"b\"]], \"prompt_name\": \"what\"}",
                "text[0] is a [text, text_pair] pair; prompt_name is only used with single texts "
                "(and a CrossEncoder's pairs)");
    ck_assert_int_eq(daemon_stop(&dp), 0);
    scratch_free(&s);
    json_decref(p);
}
END_TEST

/* /rerank: one query against its passages, by the cross-encoder's sigmoid
 * (the pipeline's score of each pair), highest first, with the text when
 * asked; raw_scores its logit; POST / with query the same; explain. */
START_TEST(test_tei_rerank)
{
    json_t *p = pipeline("bert_rerank");
    start_pipeline("bert_rerank");
    const json_t *cases = json_object_get(p, "cases");
    const json_t *query = json_object_get(json_array_get(cases, 0), "text");
    json_t *texts = json_array();
    double score[8];
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        if (!json_equal(json_object_get(c, "text"), query))
            continue;
        json_array_append(texts, json_object_get(c, "text_pair"));
        score[n++] = case_score(c);
    }
    ck_assert_uint_ge(n, 3);
    for (int root = 0; root <= 1; root++) {
        char *body =
            dump(json_pack("{s:O,s:O,s:b}", "query", query, "texts", texts, "return_text", 1),
                 JSON_COMPACT);
        json_t *got = post_ok(root ? "/" : "/rerank", body);
        ck_assert_uint_eq(json_array_size(got), n);
        double last = 2;
        for (size_t k = 0; k < n; k++) {
            const json_t *o = json_array_get(got, k);
            const size_t idx = (size_t)json_integer_value(json_object_get(o, "index"));
            const double s = json_number_value(json_object_get(o, "score"));
            ck_assert_uint_lt(idx, n);
            ck_assert_msg(fabs(s - score[idx]) < 1e-5, "rerank: text %zu scored %g, want %g", idx,
                          s, score[idx]);
            ck_assert_msg(s <= last, "rerank: not by score, highest first");
            ck_assert(json_equal(json_object_get(o, "text"), json_array_get(texts, idx)));
            last = s;
        }
        json_decref(got);
        free(body);
    }
    /* raw_scores: the logit, log(p / (1 - p)); no text unless asked */
    char *body = dump(json_pack("{s:O,s:O,s:b}", "query", query, "texts", texts, "raw_scores", 1),
                      JSON_COMPACT);
    json_t *got = post_ok("/rerank", body);
    for (size_t k = 0; k < n; k++) {
        const json_t *o = json_array_get(got, k);
        const size_t idx = (size_t)json_integer_value(json_object_get(o, "index"));
        const double want = log(score[idx] / (1 - score[idx]));
        ck_assert_ptr_null(json_object_get(o, "text"));
        ck_assert_msg(fabs(json_number_value(json_object_get(o, "score")) - want) < 1e-4,
                      "raw score of text %zu", idx);
    }
    json_decref(got);
    free(body);
    /* explain: each pair's tokens with relevance summing to 1 */
    body = dump(json_pack("{s:O,s:[O],s:b}", "query", query, "texts", json_array_get(texts, 0),
                          "explain", 1),
                JSON_COMPACT);
    got = post_ok("/rerank", body);
    const json_t *ex = json_object_get(json_array_get(got, 0), "explain");
    double total = 0;
    for (size_t k = 0; k < json_array_size(ex); k++)
        total += json_number_value(json_object_get(json_array_get(ex, k), "relevance"));
    ck_assert_msg(json_array_size(ex) > 4 && fabs(total - 1) < 1e-6,
                  "rerank explain: %zu tokens, %g", json_array_size(ex), total);
    json_decref(got);
    free(body);
    json_decref(texts);
    json_decref(p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* POST / on a token-classification and a fill-mask head: the pipelines'
 * outputs, as @huggingface/inference's tokenClassification and fillMask
 * take them (parameters.top_k, parameters.aggregation_strategy). */
START_TEST(test_tei_root_pipelines)
{
    static const char *const cases[] = {"bert_ner", "roberta_fill_mask"};
    const char *name = cases[_i];
    json_t *p = pipeline(name);
    start_pipeline(name);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(p, "cases"), i, c)
    {
        json_t *k = json_object_get(c, "top_k"), *agg = json_object_get(c, "aggregation_strategy");
        json_t *params = json_object();
        if (k)
            json_object_set(params, "top_k", k);
        if (agg)
            json_object_set(params, "aggregation_strategy", agg);
        char *body =
            dump(json_pack("{s:O,s:o}", "inputs", json_object_get(c, "text"), "parameters", params),
                 JSON_COMPACT);
        json_t *got = post_ok("/", body);
        char *at = json_near(got, json_object_get(c, "output"), "root");
        ck_assert_msg(at == NULL, "%s POST / %s: %s differs", name, body, at);
        json_decref(got);
        free(body);
    }
    json_decref(p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* /embed_sparse: per text, max over its tokens of log(1 + relu(logits)),
 * the logits /v1/encode gives, only the non-zero entries, by index. */
START_TEST(test_tei_sparse)
{
    start_pipeline("bert_fill_mask");
    static const char text[] = "Paris is the capital of France.";
    json_t *got = post_ok("/embed_sparse", "{\"inputs\": [\"Paris is the capital of France.\"]}");
    json_t *enc = post_ok("/v1/encode", "{\"text\": \"Paris is the capital of France.\", "
                                        "\"logits\": true, \"attention\": \"none\"}");
    const json_t *logits = json_object_get(enc, "logits");
    const size_t len = json_array_size(logits), V = json_array_size(json_array_get(logits, 0));
    double *w = xcalloc(V, sizeof *w);
    for (size_t t = 0; t < len; t++)
        for (size_t v = 0; v < V; v++) {
            const double x = json_number_value(json_array_get(json_array_get(logits, t), v));
            w[v] = fmax(w[v], log1p(fmax(x, 0)));
        }
    const json_t *sparse = json_array_get(got, 0);
    size_t k = 0, nonzero = 0;
    for (size_t v = 0; v < V; v++) {
        nonzero += w[v] != 0;
        const json_t *e = json_array_get(sparse, k);
        if (e && (size_t)json_integer_value(json_object_get(e, "index")) == v) {
            EXPECT(fabs(json_number_value(json_object_get(e, "value")) - w[v]) < 1e-5,
                   "%s: sparse[%zu]", text, v);
            k++;
        } else {
            EXPECT(w[v] < 1e-6, "%s: index %zu (%g) missing", text, v, w[v]);
        }
    }
    ck_assert_uint_eq(k, json_array_size(sparse));
    ck_assert_uint_gt(nonzero, 0);
    free(w);
    json_decref(enc);
    json_decref(got);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* /tokenize: TEI's form (byte offsets, the text the token covers, null
 * offsets and the vocabulary's token on special tokens), the tokens of
 * /v1/tokenize; /decode as Hugging Face's tokenizers decodes
 * (tests/fixtures/tokenizers/bert-uncased/reference.json, the tokenizer of
 * bert_text). */
START_TEST(test_tei_tokenize_decode)
{
    start_or_fail((const char *const[]){"--model-dir", TEXT_DIR, NULL}, NULL);
    static const char text[] = "crème brûlée à la française";
    json_t *got = post_ok("/tokenize", "{\"inputs\": \"crème brûlée à la française\"}");
    json_t *own = post_ok("/v1/tokenize", "{\"text\": \"crème brûlée à la française\"}");
    const json_t *a = json_array_get(got, 0),
                 *b = json_array_get(json_object_get(own, "tokens"), 0);
    ck_assert_uint_eq(json_array_size(a), json_array_size(b));
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        ck_assert(json_equal(json_object_get(x, "id"), json_object_get(y, "id")));
        ck_assert(json_equal(json_object_get(x, "special"), json_object_get(y, "special")));
        if (json_is_true(json_object_get(x, "special"))) {
            ck_assert(json_is_null(json_object_get(x, "start")) &&
                      json_is_null(json_object_get(x, "stop")));
            ck_assert(json_equal(json_object_get(x, "text"), json_object_get(y, "text")));
            continue;
        }
        /* characters [start, stop) of /v1/tokenize are these bytes */
        size_t cs = (size_t)json_integer_value(json_object_get(y, "start")),
               ce = (size_t)json_integer_value(json_object_get(y, "stop")), bs = 0, cp = 0;
        for (; cp < cs; bs++)
            cp += ((unsigned char)text[bs + 1] & 0xC0) != 0x80;
        size_t be = bs;
        for (; cp < ce; be++)
            cp += ((unsigned char)text[be + 1] & 0xC0) != 0x80;
        ck_assert_int_eq(json_integer_value(json_object_get(x, "start")), (json_int_t)bs);
        ck_assert_int_eq(json_integer_value(json_object_get(x, "stop")), (json_int_t)be);
        ck_assert_uint_eq(json_string_length(json_object_get(x, "text")), be - bs);
        ck_assert(memcmp(json_string_value(json_object_get(x, "text")), text + bs, be - bs) == 0);
    }
    json_decref(got);
    json_decref(own);
    /* /decode of the reference's ids, with and without special tokens */
    json_t *ref =
        json_load_file(TESTS_DIR "/fixtures/tokenizers/bert-uncased/reference.json", 0, NULL);
    const json_t *items = json_object_get(ref, "items");
    int checked = 0;
    for (size_t i = 0; i < json_array_size(items) && checked < 8; i += 7, checked++) {
        const json_t *item = json_array_get(items, i);
        const json_t *ids = json_object_get(json_object_get(item, "with_special"), "ids");
        for (int skip = 0; skip <= 1; skip++) {
            const json_t *want = json_object_get(item, skip ? "decoded_skip" : "decoded");
            char *body =
                dump(json_pack("{s:O,s:b}", "ids", ids, "skip_special_tokens", skip), JSON_COMPACT);
            got = post_ok("/decode", body);
            ck_assert_msg(want && json_equal(json_array_get(got, 0), want), "/decode %s", body);
            json_decref(got);
            free(body);
        }
    }
    json_decref(ref);
    ck_assert_int_eq(checked, 8);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* prompt_name and truncation_direction on TEI's routes: /embed of a
 * prompt's model equals /v1/embeddings with the same prompt (the default
 * prompt where none is named), /tokenize's offsets count the prompt's bytes,
 * and a text cut from the left (or right) embeds as /v1/embeddings cuts it;
 * an unknown prompt is a 422 naming the model's. */
START_TEST(test_tei_prompts_truncation)
{
    start_or_fail((const char *const[]){"--model-dir", TESTS_DIR "/fixtures/hf/bert_prompts",
                                        "--max-seq-len", "8", NULL},
                  NULL);
    static const struct {
        const char *tei, *oai;
    } same[] = {
        {"{\"inputs\": \"Hello\"}", "{\"input\": \"Hello\"}"},
        {"{\"inputs\": \"Hello\", \"prompt_name\": \"document\"}",
         "{\"input\": \"Hello\", \"prompt_name\": \"document\"}"},
        {"{\"inputs\": \"one two three four five six seven eight nine\", \"truncate\": true, "
         "\"truncation_direction\": \"Left\", \"prompt_name\": \"document\"}",
         "{\"input\": \"one two three four five six seven eight nine\", \"truncate\": true, "
         "\"truncation_direction\": \"left\", \"prompt_name\": \"document\"}"},
        {"{\"inputs\": \"one two three four five six seven eight nine\", \"truncate\": true, "
         "\"prompt_name\": \"document\"}",
         "{\"input\": \"one two three four five six seven eight nine\", \"truncate\": true, "
         "\"prompt_name\": \"document\"}"},
    };
    for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
        json_t *a = post_ok("/embed", same[k].tei), *b = post_ok("/v1/embeddings", same[k].oai);
        const json_t *x = json_array_get(a, 0);
        const json_t *y =
            json_object_get(json_array_get(json_object_get(b, "data"), 0), "embedding");
        ck_assert_uint_gt(json_array_size(x), 0);
        ck_assert_msg(json_equal(x, y), "%s: /embed is not /v1/embeddings' %s", same[k].tei,
                      same[k].oai);
        json_decref(a);
        json_decref(b);
    }
    /* left and right cuts differ: the test above compares different texts */
    json_t *l = post_ok("/embed", same[2].tei), *r = post_ok("/embed", same[3].tei);
    ck_assert(!json_equal(l, r));
    json_decref(l);
    json_decref(r);
    /* token ids with a prompt (here the default, "query: "), as TEI takes
     * them: decoded without the special tokens, the text after the prompt */
    json_t *ids = post_ok("/v1/tokenize", "{\"text\": \"Hello\", \"prompt_name\": \"document\"}");
    json_t *row = json_array();
    size_t i;
    const json_t *tk;
    json_array_foreach(json_array_get(json_object_get(ids, "tokens"), 0), i, tk)
        json_array_append(row, json_object_get(tk, "id"));
    ck_assert_uint_eq(json_array_size(row), 3); /* [CLS] hello [SEP] */
    char *body = dump(json_pack("{s:o}", "inputs", row), JSON_COMPACT);
    l = post_ok("/embed", body);
    r = post_ok("/embed", "{\"inputs\": \"Hello\"}");
    ck_assert_msg(json_equal(l, r), "ids with the default prompt are not the prompted text's");
    json_decref(l);
    json_decref(r);
    json_decref(ids);
    free(body);
    /* /tokenize: the default prompt "query: " counted in the byte offsets */
    json_t *t = post_ok("/tokenize", "{\"inputs\": \"Hello\", \"add_special_tokens\": false}");
    const json_t *last =
        json_array_get(json_array_get(t, 0), json_array_size(json_array_get(t, 0)) - 1);
    ck_assert_int_eq(json_integer_value(json_object_get(last, "stop")),
                     (json_int_t)strlen("query: Hello"));
    json_decref(t);
    long status;
    json_t *e =
        daemon_post("/embed", "{\"inputs\": \"Hello\", \"prompt_name\": \"passage\"}", &status);
    ck_assert_msg(status == 422 && strstr(json_string_value(json_object_get(e, "error")), "query"),
                  "unknown prompt: %ld", status);
    json_decref(e);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* GET /info: the model's kind as TEI names it (an embedding model's pooling
 * as TEI's Pool prints it: cls, mean, splade, last_token), its labels, the
 * limits. */
START_TEST(test_tei_info)
{
    static const struct {
        const char *dir, *kind, *pooling;
        int max_input;
    } cases[] = {{TEXT_DIR, "embedding", "mean", 64},
                 {TESTS_DIR "/fixtures/hf/mistral_text", "embedding", "last_token", 128},
                 {PIPELINES "/bert_text_cls", "classifier", NULL, 64},
                 {PIPELINES "/bert_rerank", "reranker", NULL, 64}};
    const char *dir = cases[_i].dir, *kind = cases[_i].kind;
    start_or_fail((const char *const[]){"--model-dir", dir, "--max-batch", "8", NULL}, NULL);
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/info", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL), *type = json_object_get(j, "model_type");
    ck_assert_msg(json_object_get(type, kind), "%s: %s", dir, r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_client_batch_size")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_input_length")),
                     cases[_i].max_input);
    ck_assert_str_eq(json_string_value(json_object_get(j, "model_dtype")), "float32");
    if (cases[_i].pooling)
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(type, kind), "pooling")),
                         cases[_i].pooling);
    else
        ck_assert_uint_ge(
            json_object_size(json_object_get(json_object_get(type, kind), "id2label")), 1);
    json_decref(j);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* TEI's errors: {"error", "error_type"}, 422 for input it refuses, 400 for
 * empty input, 424 for a route the model's kind cannot answer; unknown
 * fields ignored as TEI ignores them. */
START_TEST(test_tei_errors)
{
    start_or_fail((const char *const[]){"--model-dir", TEXT_DIR, NULL}, NULL);
    static const struct {
        const char *path, *body;
        long status;
        const char *type, *msg;
    } bad[] = {
        {"/embed", "{\"inputs\": \"\"}", 400, "Empty", "`inputs` cannot be empty"},
        {"/embed", "{\"inputs\": []}", 400, "Empty", "`inputs` cannot be empty"},
        {"/embed", "{\"inputs\": \"a\", \"normalize\": 1}", 422, "Validation",
         "`normalize` must be"},
        {"/embed", "{\"inputs\": \"a\", \"dimensions\": 0}", 422, "Validation",
         "`dimensions` should be positive"},
        {"/embed", "{\"inputs\": [1, \"a\"]}", 422, "Validation", "`inputs[1]` must be a token id"},
        {"/embed", "{\"inputs\": [\"a\", [\"b\"]]}", 422, "Validation",
         "`inputs[1]` is a list that is not of token ids"},
        {"/embed", "{\"inputs\": [\"a\", []]}", 400, "Empty", "`inputs[1]` cannot be empty"},
        {"/similarity", "{\"inputs\": {\"source_sentence\": \"a\", \"sentences\": [\"b\", 3]}}",
         422, "Validation", "`inputs.sentences[1]` must be a string, not a number (token ids"},
        {"/embed", "{\"inputs\": \"a\", \"truncation_direction\": \"up\"}", 422, "Validation",
         "`truncation_direction`"},
        {"/embed", "{\"inputs\": ", 422, "Validation", "invalid JSON at line 1"},
        {"/predict", "{\"inputs\": \"a\"}", 424, "Backend",
         "Backend error: Model is not a classifier model"},
        {"/rerank", "{\"query\": \"a\", \"texts\": [\"b\"]}", 424, "Backend",
         "model is not a re-ranker model"},
        {"/rerank", "{\"query\": \"a\", \"texts\": []}", 400, "Empty", "`texts` cannot be empty"},
        {"/embed_sparse", "{\"inputs\": \"a\"}", 424, "Backend", "SPLADE"},
        {"/similarity", "{\"inputs\": {\"source_sentence\": \"a\", \"sentences\": []}}", 400,
         "Empty", "`inputs.sentences` cannot be empty"},
        {"/decode", "{\"ids\": []}", 400, "Empty", "`input_ids` cannot be empty"},
        {"/decode", "{\"ids\": [1, -2]}", 422, "Validation", "`ids[1]` must be a token id"},
    };
    for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
        long status;
        json_t *j = daemon_post(bad[t].path, bad[t].body, &status);
        const char *e = json_string_value(json_object_get(j, "error"));
        const char *type = json_string_value(json_object_get(j, "error_type"));
        ck_assert_msg(status == bad[t].status && e && strstr(e, bad[t].msg) && type &&
                          strcmp(type, bad[t].type) == 0,
                      "%s %s: %ld %s (%s), want %ld %s \"%s\"", bad[t].path, bad[t].body, status,
                      e ? e : "?", type ? type : "?", bad[t].status, bad[t].type, bad[t].msg);
        json_decref(j);
    }
    json_t *ok =
        post_ok("/embed", "{\"inputs\": \"a\", \"encoding_format\": \"float\", \"user\": 7}");
    json_decref(ok);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *tei_suite(void)
{
    Suite *s = timed_suite("tei");
    TCase *tc = timed_case(s, "daemon", 60);
    tcase_add_test(tc, test_tei_embed);
    tcase_add_test(tc, test_tei_embed_ids);
    tcase_add_test(tc, test_tei_predict);
    tcase_add_test(tc, test_tei_rerank);
    tcase_add_test(tc, test_tei_rerank_st_modules);
    tcase_add_test(tc, test_cross_encoder_prompts);
    tcase_add_loop_test(tc, test_tei_root_pipelines, 0, 2);
    tcase_add_test(tc, test_tei_sparse);
    tcase_add_test(tc, test_tei_tokenize_decode);
    tcase_add_loop_test(tc, test_tei_info, 0, 4);
    tcase_add_test(tc, test_tei_errors);
    tcase_add_test(tc, test_tei_prompts_truncation);
    return s;
}
