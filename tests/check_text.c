/* check_text.c - text in, through the daemon: /v1/tokenize against Hugging
 * Face's ids, /v1/encode with text against PyTorch's last_hidden_state of
 * those ids (tests/fixtures/hf/bert_text: tools/fixtures/make_text_fixtures.py, the
 * ids from the tokenizer's golden file, not from this code), /v1/embeddings
 * against sentence-transformers, /v2 with text, and the refusals: no
 * tokenizer, over the limit, truncation, bad forms; and sentence-
 * transformers' prompts (tests/fixtures/hf/bert_prompts:
 * tools/fixtures/make_prompt_fixture.mjs).  Truncation from either end,
 * server.auto_truncate and the model's token limit: check_text_limits.c. */
#include "daemon.h"
#include "hf_util.h"
#include "suites.h"
#include "test_util.h"
#include "text_util.h"
#include "timing.h"
#include "torch_fixture.h"

#include "load/safetensors.h"
#include "codec/base64.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static json_t *fixture_json(void)
{
    json_error_t jerr;
    json_t *j = json_load_file(TEXT_DIR "/text.json", 0, &jerr);
    ck_assert_msg(j != NULL, "text.json: %s", jerr.text);
    return j;
}

/* /v1/tokenize gives Hugging Face's ids for every text of the fixture. */
START_TEST(test_tokenize_ids)
{
    json_t *fx = fixture_json();
    const json_t *texts = json_object_get(fx, "texts");
    hf_ids x = hf_text_ids(TEXT_DIR, "input_ids", "attention_mask");
    json_t *ids = json_array();
    for (int b = 0; b < x.B; b++)
        json_array_append_new(ids, hf_ids_row(&x, b));
    long status;
    json_t *r = post_json("/v1/tokenize", json_pack("{s:O}", "text", texts), &status);
    ck_assert_int_eq(status, 200);
    const json_t *lists = json_object_get(r, "tokens");
    ck_assert_uint_eq(json_array_size(lists), json_array_size(texts));
    for (size_t b = 0; b < json_array_size(texts); b++) {
        const json_t *toks = json_array_get(lists, b), *want = json_array_get(ids, b);
        ck_assert_uint_eq(json_array_size(toks), json_array_size(want));
        for (size_t i = 0; i < json_array_size(want); i++) {
            const json_t *t = json_array_get(toks, i);
            ck_assert_int_eq(json_integer_value(json_object_get(t, "id")),
                             json_integer_value(json_array_get(want, i)));
            /* the first and last are [CLS] and [SEP]: special, at [0, 0), no sequence */
            const bool edge = i == 0 || i + 1 == json_array_size(want);
            ck_assert(json_is_true(json_object_get(t, "special")) == edge);
            ck_assert(json_is_null(json_object_get(t, "sequence")) == edge);
            ck_assert(json_is_string(json_object_get(t, "text")));
        }
    }
    json_decref(r);
    /* a single string: one list; without specials: none of [CLS] and [SEP] */
    r = post("/v1/tokenize", "{\"text\": \"Hello, world!\", \"add_special_tokens\": false}",
             &status);
    ck_assert_int_eq(status, 200);
    lists = json_object_get(r, "tokens");
    ck_assert_uint_eq(json_array_size(lists), 1);
    const json_t *toks = json_array_get(lists, 0);
    ck_assert_uint_eq(json_array_size(toks), 4); /* hello , world ! */
    const int spans[4][2] = {{0, 5}, {5, 6}, {7, 12}, {12, 13}};
    static const char *const words[4] = {"hello", ",", "world", "!"};
    for (size_t i = 0; i < 4; i++) {
        const json_t *t = json_array_get(toks, i);
        ck_assert_str_eq(json_string_value(json_object_get(t, "text")), words[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(t, "start")), spans[i][0]);
        ck_assert_int_eq(json_integer_value(json_object_get(t, "stop")), spans[i][1]);
        ck_assert_int_eq(json_integer_value(json_object_get(t, "sequence")), 0);
    }
    json_decref(r);
    /* a text of no tokens: [], as Hugging Face's encode("", add_special_tokens=False)
     * gives; /v1/encode has nothing to run on it (400) */
    r = post("/v1/tokenize", "{\"text\": [\"\", \" \"], \"add_special_tokens\": false}", &status);
    ck_assert_int_eq(status, 200);
    lists = json_object_get(r, "tokens");
    ck_assert_uint_eq(json_array_size(lists), 2);
    ck_assert(json_is_array(json_array_get(lists, 0)) && json_array_size(json_array_get(lists, 0)) == 0);
    ck_assert(json_is_array(json_array_get(lists, 1)) && json_array_size(json_array_get(lists, 1)) == 0);
    json_decref(r);
    json_decref(ids);
    hf_ids_free(&x);
    json_decref(fx);
}
END_TEST

/* /v1/encode with text: the ids Hugging Face's tokenizer gives, and the
 * outputs PyTorch computes from them, each sequence at its own length. */
START_TEST(test_encode_text)
{
    json_t *fx = fixture_json();
    const json_t *texts = json_object_get(fx, "texts");
    hf_ids x = hf_text_ids(TEXT_DIR, "input_ids", "attention_mask");
    int dims[3];
    float *want = hf_text_tensor(TEXT_DIR, "last_hidden_state", dims);
    const int B = dims[0], L = dims[1], D = dims[2];
    ck_assert_int_eq(B, (int)json_array_size(texts));
    long status;
    json_t *r = post_json("/v1/encode", json_pack("{s:O, s:s}", "text", texts, "attention", "none"),
                          &status);
    ck_assert_int_eq(status, 200);
    const json_t *out = json_object_get(r, "outputs");
    for (int b = 0; b < B; b++) {
        json_t *row = hf_ids_row(&x, b);
        ck_assert(json_equal(json_array_get(json_object_get(r, "input_ids"), (size_t)b), row));
        json_decref(row);
        ck_assert_uint_eq(json_array_size(json_array_get(out, (size_t)b)), (size_t)x.lengths[b]);
    }
    const double diff = outputs_diff(out, want, B, L, D, x.lengths);
    ck_assert_msg(diff < 1e-4, "text outputs differ from PyTorch's by %g", diff);
    ck_assert_uint_eq(json_array_size(json_object_get(r, "tokens")), (size_t)B);
    json_decref(r);

    /* the pair: token_type_ids 1 on the second text */
    const json_t *pair = json_object_get(fx, "pair");
    hf_ids px = hf_text_ids(TEXT_DIR, "pair_input_ids", NULL);
    float *pwant = hf_text_tensor(TEXT_DIR, "pair_last_hidden_state", dims);
    r = post_json("/v1/encode",
                  json_pack("{s:[[O, O]], s:s}", "text", json_object_get(pair, "text"),
                            json_object_get(pair, "text_pair"), "attention", "none"),
                  &status);
    ck_assert_int_eq(status, 200);
    json_t *prow = hf_ids_row(&px, 0);
    ck_assert(json_equal(json_array_get(json_object_get(r, "input_ids"), 0), prow));
    json_decref(prow);
    const double pdiff = outputs_diff(json_object_get(r, "outputs"), pwant, 1, px.L, D, px.lengths);
    ck_assert_msg(pdiff < 1e-4, "pair outputs differ from PyTorch's by %g", pdiff);
    json_decref(r);
    free(pwant);
    free(want);
    hf_ids_free(&x);
    hf_ids_free(&px);
    json_decref(fx);
}
END_TEST

/* One text gives the unbatched form: tokens and input_ids as one list,
 * attention weights as for embeddings. */
START_TEST(test_encode_one_text)
{
    long status;
    json_t *r = post("/v1/encode", "{\"text\": \"hello world\"}", &status);
    ck_assert_int_eq(status, 200);
    const json_t *ids = json_object_get(r, "input_ids");
    ck_assert_uint_eq(json_array_size(ids), 4);
    ck_assert(json_is_integer(json_array_get(ids, 0)));
    ck_assert_uint_eq(json_array_size(json_object_get(r, "outputs")), 4);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(r, "tokens"), 1), "text")),
        "hello");
    ck_assert(json_is_array(json_object_get(r, "attention")));
    json_decref(r);
}
END_TEST

START_TEST(test_text_refusals)
{
    /* 64 positions: a text of 100 words is over, with its count and the limit */
    char body[2048] = "{\"text\": \"";
    for (int i = 0; i < 100; i++)
        strcat(body, "hello ");
    strcat(body, "\"}");
    expect_error("/v1/encode", body, 413, "has 102 tokens; the model takes at most 64");
    /* truncate: cut to 64, [SEP] last */
    body[strlen(body) - 1] = '\0';
    strcat(body, ", \"truncate\": true}");
    long status;
    json_t *r = post("/v1/encode", body, &status);
    ck_assert_int_eq(status, 200);
    const json_t *ids = json_object_get(r, "input_ids");
    ck_assert_uint_eq(json_array_size(ids), 64);
    ck_assert_str_eq(json_string_value(
                         json_object_get(json_array_get(json_object_get(r, "tokens"), 63), "text")),
                     "[SEP]");
    json_decref(r);

    expect_error("/v1/encode", "{\"text\": 5}", 400, "text must be a string");
    expect_error("/v1/encode", "{\"text\": []}", 400, "text is an empty list");
    expect_error("/v1/encode", "{\"text\": [\"a\", 7]}", 400, "text[1] must be a string");
    expect_error("/v1/encode", "{\"text\": [[\"a\"]]}", 400, "text[0] must be a string or a");
    expect_error("/v1/encode", "{\"text\": \"a\", \"input_ids\": [1, 2]}", 400,
                 "not both text and input_ids");
    expect_error("/v1/encode", "{\"input_ids\": [1, 2], \"truncate\": true}", 400,
                 "truncate is only used with text");
    expect_error("/v1/encode", "{\"text\": \"a\", \"truncate\": 1}", 400,
                 "truncate must be true or false");
    expect_error("/v1/tokenize", "{\"txt\": \"a\"}", 400, "unknown field 'txt'");
    expect_error("/v1/tokenize", "{}", 400, "text is required");
    expect_error("/v1/tokenize", "{\"text\": \"a\", \"add_special_tokens\": \"yes\"}", 400,
                 "add_special_tokens must be true or false");
    /* invalid UTF-8 is refused by the JSON reader, at its byte */
    expect_error("/v1/tokenize", "{\"text\": \"ab\xff\"}", 400, "byte 12");
    /* a lone surrogate escape is not text */
    expect_error("/v1/tokenize", "{\"text\": \"\\ud800\"}", 400, "invalid JSON");
    /* a key given twice: refused naming it, as /v1/encode does */
    expect_error("/v1/tokenize", "{\"text\": \"a\", \"text\": \"b\"}", 400,
                 "duplicate object key near '\"text\"'");
    expect_error("/v1/tokenize", "{\"text\": \"a\", \"truncate\": true, \"truncate\": false}", 400,
                 "duplicate object key near '\"truncate\"'");
    expect_error("/v1/encode", "{\"text\": \"a\", \"text\": \"b\"}", 400,
                 "duplicate object key near '\"text\"'");
    /* U+0000 is text (the tokenizer's); elsewhere it is refused, named */
    expect_error("/v1/encode", "{\"text\": \"a\", \"attention\": \"mean\\u0000\"}", 400,
                 "attention must not contain U+0000 (\\u0000): only text may");
    expect_error("/v2/models/encoder/infer",
                 "{\"id\": \"a\\u0000\", \"inputs\": [{\"name\": \"text\", \"datatype\": "
                 "\"BYTES\", \"shape\": [1], \"data\": [\"a\"]}]}",
                 400, "id must not contain U+0000 (\\u0000)");
}
END_TEST

/* /v1/model says what text input has; a model without a tokenizer refuses
 * text naming the setting. */
START_TEST(test_no_tokenizer)
{
    long status;
    ck_assert(text_up);
    http_resp m = {0};
    ck_assert_int_eq(http_do(text_daemon.port, "GET", "/v1/model", NULL, 0, NULL, &m), 0);
    json_t *j = json_loads(m.body, 0, NULL);
    const json_t *tok = json_object_get(j, "tokenizer");
    ck_assert(json_is_object(tok));
    ck_assert_int_eq(json_integer_value(json_object_get(tok, "specials_per_text")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(tok, "specials_per_pair")), 3);
    json_decref(j);
    http_resp_free(&m);

    daemon_proc d;
    static const char *const args[] = {"--model-dir", TESTS_DIR "/fixtures/hf/bert_mlm", NULL};
    ck_assert_int_eq(daemon_start(&d, args, NULL), 0);
    http_resp r = {0};
    const char *body = "{\"text\": \"hello\"}";
    ck_assert_int_eq(http_post_json(d.port, "/v1/tokenize", body, &r), 0);
    ck_assert_int_eq(r.status, 400);
    ck_assert_msg(strstr(r.body, "model.tokenizer"), "%s", r.body);
    http_resp_free(&r);
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_int_eq(r.status, 400);
    http_resp_free(&r);
    daemon_stop(&d);
    (void)status;

    /* a tokenizer with more ids than the model's vocabulary is refused at start */
    startup_refused((const char *const[]){"--model-dir", TESTS_DIR "/fixtures/hf/bert_mlm",
                                          "--tokenizer", TEXT_DIR "/tokenizer.json", NULL},
                    "the model's vocab_size is 50", 1);
}
END_TEST
/* /v1/embeddings: sentence-transformers' embeddings of the fixture's texts
 * (mean pooling, then Normalize, as its modules.json says), as floats, as
 * base64, from token ids, and cut to fewer dimensions. */
START_TEST(test_embeddings)
{
    json_t *fx = fixture_json();
    const json_t *texts = json_object_get(fx, "texts");
    int B, D;
    float *want = pooled_fixture(TEXT_DIR, "mean_normalized", &B, &D);
    hf_ids x = hf_text_ids(TEXT_DIR, "input_ids", "attention_mask");
    long tokens = 0;
    for (int b = 0; b < B; b++)
        tokens += (long)x.lengths[b];
    json_t *rows = json_array();
    for (int b = 0; b < B; b++)
        json_array_append_new(rows, hf_ids_row(&x, b));
    float *got = xcalloc((size_t)D, sizeof *got);
    for (int form = 0; form < 3; form++) {
        long status;
        json_t *body = form == 2 ? json_pack("{s:O, s:s}", "input", rows, "model", "encoder")
                                 : json_pack("{s:O, s:s}", "input", texts, "encoding_format",
                                             form ? "base64" : "float");
        json_t *r = post_json("/v1/embeddings", body, &status);
        ck_assert_int_eq(status, 200);
        ck_assert_str_eq(json_string_value(json_object_get(r, "object")), "list");
        ck_assert_str_eq(json_string_value(json_object_get(r, "model")), "encoder");
        const json_t *data = json_object_get(r, "data");
        ck_assert_uint_eq(json_array_size(data), (size_t)B);
        for (int b = 0; b < B; b++) {
            const json_t *item = json_array_get(data, (size_t)b);
            ck_assert_str_eq(json_string_value(json_object_get(item, "object")), "embedding");
            ck_assert_int_eq(json_integer_value(json_object_get(item, "index")), b);
            embedding_of(data, (size_t)b, got, (size_t)D);
            const double d = max_abs_diff(got, want + (size_t)b * D, (size_t)D);
            ck_assert_msg(d < 1e-4, "form %d, text %d: differs from sentence-transformers' by %g",
                          form, b, d);
        }
        const json_t *usage = json_object_get(r, "usage");
        ck_assert_int_eq(json_integer_value(json_object_get(usage, "prompt_tokens")), tokens);
        ck_assert_int_eq(json_integer_value(json_object_get(usage, "total_tokens")), tokens);
        json_decref(r);
    }
    /* dimensions: the first 8, unit length again */
    long status;
    json_t *r = post_json("/v1/embeddings",
                          json_pack("{s:O, s:i}", "input", texts, "dimensions", 8), &status);
    ck_assert_int_eq(status, 200);
    for (int b = 0; b < B; b++) {
        float cut[8];
        double norm = 0;
        for (int k = 0; k < 8; k++)
            norm += (double)want[b * D + k] * want[b * D + k];
        for (int k = 0; k < 8; k++)
            cut[k] = (float)(want[b * D + k] / sqrt(norm));
        embedding_of(json_object_get(r, "data"), (size_t)b, got, 8);
        ck_assert_msg(max_abs_diff(got, cut, 8) < 1e-4, "dimensions 8, text %d", b);
    }
    json_decref(r);
    /* one string: one embedding */
    r = post("/v1/embeddings", "{\"input\": \"Hello world!\", \"user\": \"u-1\"}", &status);
    ck_assert_int_eq(status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r, "data")), 1);
    embedding_of(json_object_get(r, "data"), 0, got, (size_t)D);
    ck_assert(max_abs_diff(got, want + 3 * (size_t)D, (size_t)D) < 1e-4); /* text.json's 4th */
    json_decref(r);
    free(got);
    json_decref(rows);
    hf_ids_free(&x);
    free(want);
    json_decref(fx);
}
END_TEST

START_TEST(test_embeddings_refusals)
{
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"model\": \"gpt-4\"}", 404,
                 "model 'gpt-4' does not exist: this server serves 'encoder'");
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"dimensions\": 33}", 400,
                 "dimensions = 33 is more than the model's 32");
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"dimensions\": 0}", 400,
                 "dimensions = 0 must be at least 1");
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"encoding_format\": \"int8\"}", 400,
                 "encoding_format must be \"float\" or \"base64\"");
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"inputs\": 1}", 400,
                 "unknown field 'inputs'");
    expect_error("/v1/embeddings", "{}", 400, "input is required");
    expect_error("/v1/embeddings", "{\"input\": []}", 400, "input is an empty list");
    /* each entry named by its index, as a flat list or a list of lists has it */
    expect_error("/v1/embeddings", "{\"input\": [[2, 5000]]}", 400, "input[0][1] = 5000");
    expect_error("/v1/embeddings", "{\"input\": [2, 5000]}", 400, "input[1] = 5000 is outside");
    expect_error("/v1/embeddings", "{\"input\": [2, 99999999999]}", 400,
                 "input[1] = 99999999999 is outside the int32 range");
    expect_error("/v1/embeddings", "{\"input\": [[2], [3, 99999999999]]}", 400,
                 "input[1][1] = 99999999999 is outside the int32 range");
    expect_error("/v1/embeddings", "{\"input\": [1, \"a\"]}", 400,
                 "input[1] is a string, but input[0] is a token id");
    expect_error("/v1/embeddings", "{\"input\": [\"a\", \"b\", [1]]}", 400,
                 "input[2] is a list, but input[0] is a string");
    expect_error("/v1/embeddings", "{\"input\": [[1], 2]}", 400,
                 "input[1] is a token id, but input[0] is a list");
    expect_error("/v1/embeddings", "{\"input\": [[1], [2, 2.5]]}", 400,
                 "input[1][1] is a number that is not an integer");
    expect_error("/v1/embeddings", "{\"input\": [null]}", 400, "input[0] is null; input must be");
    expect_error("/v1/embeddings", "{\"input\": [[]]}", 400, "input[0] is empty");
    expect_error("/v1/embeddings", "{\"input\": [[1], []]}", 400, "input[1] is empty");
    expect_error("/v1/embeddings", "{\"input\": {\"a\": 1}}", 400, "input must be a string");
    /* a key given twice is refused, named, as on every route */
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"input\": \"b\"}", 400,
                 "duplicate object key near '\"input\"'");
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"model\": \"x\\u0000\"}", 400,
                 "model must not contain U+0000");
    char body[1024] = "{\"input\": \"";
    for (int i = 0; i < 100; i++)
        strcat(body, "hello ");
    strcat(body, "\"}");
    expect_error("/v1/embeddings", body, 413, "input has 102 tokens; the model takes at most 64");
}
END_TEST

/* U+0000 in text is the tokenizer's to read, as Hugging Face's tokenizers
 * and TEI take it: BERT's normalizer drops it (clean_text), so "hello\0
 * world" is "hello world", the text after it kept, on every route that
 * takes text. */
START_TEST(test_text_nul)
{
    long status;
    json_t *with =
        post("/v1/tokenize", "{\"text\": [\"hello\\u0000 world\", \"\\u0000!\"]}", &status);
    ck_assert_int_eq(status, 200);
    json_t *without = post("/v1/tokenize", "{\"text\": [\"hello world\", \"!\"]}", &status);
    ck_assert_int_eq(status, 200);
    for (size_t b = 0; b < 2; b++) {
        const json_t *a = json_array_get(json_object_get(with, "tokens"), b),
                     *w = json_array_get(json_object_get(without, "tokens"), b);
        ck_assert_uint_eq(json_array_size(a), json_array_size(w));
        for (size_t i = 0; i < json_array_size(w); i++)
            ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, i), "id")),
                             json_integer_value(json_object_get(json_array_get(w, i), "id")));
    }
    /* offsets count the NUL: "world" starts at 7 */
    ck_assert_int_eq(
        json_integer_value(json_object_get(
            json_array_get(json_array_get(json_object_get(with, "tokens"), 0), 2), "start")),
        7);
    json_decref(with);
    json_decref(without);
    static const char *const routes[][3] = {
        {"/v1/embeddings", "{\"input\": \"hello\\u0000 world\"}", "{\"input\": \"hello world\"}"},
        {"/v1/encode", "{\"text\": \"hello\\u0000 world\"}", "{\"text\": \"hello world\"}"}};
    for (size_t k = 0; k < 2; k++) {
        json_t *a = post(routes[k][0], routes[k][1], &status);
        ck_assert_msg(status == 200, "%s: %ld", routes[k][0], status);
        json_t *w = post(routes[k][0], routes[k][2], &status);
        ck_assert_int_eq(status, 200);
        const char *field = k == 0 ? "data" : "outputs";
        char *ja = json_dumps(json_object_get(a, field), JSON_COMPACT),
             *jw = json_dumps(json_object_get(w, field), JSON_COMPACT);
        ck_assert_msg(strcmp(ja, jw) == 0, "%s: the NUL changed the answer", routes[k][0]);
        free(ja);
        free(jw);
        json_decref(a);
        json_decref(w);
    }
}
END_TEST

/* A body of n texts, each the word "hello" words times. */
static char *texts_body(size_t n, int words)
{
    const size_t one = 6 * (size_t)words + 4;
    char *body = xcalloc(n * one + 64, 1), *p = body;
    p += sprintf(p, "{\"input\": [");
    for (size_t b = 0; b < n; b++) {
        p += sprintf(p, "%s\"", b ? ", " : "");
        for (int w = 0; w < words; w++)
            p += sprintf(p, "%shello", w ? " " : "");
        p += sprintf(p, "\"");
    }
    sprintf(p, "]}");
    return body;
}

/* Up to 2,048 inputs in one /v1/embeddings request, as OpenAI takes them,
 * past limits.max_batch (64 here), while B x L is within
 * limits.max_batch_tokens; one more is a 413, and so is a batch over the
 * token budget. */
START_TEST(test_embeddings_2048)
{
    char *body = texts_body(2048, 1);
    long status;
    json_t *r = post("/v1/embeddings", body, &status);
    ck_assert_int_eq(status, 200);
    const json_t *data = json_object_get(r, "data");
    ck_assert_uint_eq(json_array_size(data), 2048);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(data, 2047), "index")),
                     2047);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens")),
        2048 * 3);
    /* the same text, wherever it is in the batch (within BLAS's rounding,
     * which follows a row's place: docs/model.md) */
    float first[32], last[32];
    embedding_of(data, 0, first, 32);
    embedding_of(data, 2047, last, 32);
    ck_assert(max_abs_diff(first, last, 32) < 1e-6);
    json_decref(r);
    free(body);
    body = texts_body(2049, 1);
    expect_error("/v1/embeddings", body, 413,
                 "input has 2049 entries; /v1/embeddings takes at most 2048");
    free(body);
    /* 2,048 x 42 tokens: over limits.max_batch_tokens (65536) */
    body = texts_body(2048, 40);
    expect_error("/v1/embeddings", body, 413,
                 "batch of 2048 sequences x 42 positions = 86016 tokens is over "
                 "limits.max_batch_tokens (65536)");
    free(body);
    /* /v1/encode keeps limits.max_batch */
    body = texts_body(65, 1);
    memcpy(body, "{ \"text\": [", 11); /* in place of {"input": [ */
    expect_error("/v1/encode", body, 413, "text has 65 texts; limits.max_batch is 64");
    free(body);
}
END_TEST

/* The error of a request to path as OpenAI's shape has it: status, type,
 * param and code (NULL: JSON null), and a message that says want. */
static void expect_openai_error(const char *path, const char *body, long want_status,
                                const char *type, const char *param, const char *code,
                                const char *want)
{
    long status;
    json_t *j = post(path, body, &status);
    const json_t *e = json_object_get(j, "error");
    ck_assert_msg(json_is_object(e) && json_object_size(e) == 4, "%s %s: not OpenAI's shape", path,
                  body);
    const char *msg = json_string_value(json_object_get(e, "message"));
    ck_assert_msg(status == want_status, "%s %s: %ld, expected %ld (%s)", path, body, status,
                  want_status, msg ? msg : "");
    ck_assert_msg(msg && strstr(msg, want), "%s: \"%s\" does not say \"%s\"", body, msg ? msg : "",
                  want);
    ck_assert_str_eq(json_string_value(json_object_get(e, "type")), type);
    const json_t *p = json_object_get(e, "param"), *c = json_object_get(e, "code");
    ck_assert_msg(param ? json_is_string(p) && strcmp(json_string_value(p), param) == 0
                        : json_is_null(p),
                  "%s: param %s, expected %s", body, json_string_value(p), param ? param : "null");
    ck_assert_msg(code ? json_is_string(c) && strcmp(json_string_value(c), code) == 0
                       : json_is_null(c),
                  "%s: code %s, expected %s", body, json_string_value(c), code ? code : "null");
    json_decref(j);
}

/* /v1/embeddings' and /v1/models' errors in OpenAI's shape: {"error":
 * {"message", "type", "param", "code"}}, param the field the message
 * names; the other routes keep the daemon's. */
START_TEST(test_embeddings_openai_errors)
{
    const char *E = "/v1/embeddings", *INVALID = "invalid_request_error";
    expect_openai_error(E, "{\"input\": \"a\", \"model\": \"gpt-4\"}", 404, INVALID, "model",
                        "model_not_found", "model 'gpt-4' does not exist");
    expect_openai_error(E, "{\"input\": [[]]}", 400, INVALID, "input", NULL, "input[0] is empty");
    expect_openai_error(E, "{\"input\": \"a\", \"dimensions\": 99}", 400, INVALID, "dimensions",
                        NULL, "dimensions = 99");
    expect_openai_error(E, "{\"input\": \"a\", \"encoding_format\": 1}", 400, INVALID,
                        "encoding_format", NULL, "encoding_format must be");
    expect_openai_error(E, "{\"input\": \"a\", \"user\": 1}", 400, INVALID, "user", NULL,
                        "user must be a string");
    expect_openai_error(E, "{\"input\": \"a\", \"inputs\": 1}", 400, INVALID, NULL, NULL,
                        "unknown field 'inputs'");
    expect_openai_error(E, "{\"input\": ", 400, INVALID, NULL, NULL, "invalid JSON");
    char body[1024] = "{\"input\": \"";
    for (int i = 0; i < 100; i++)
        strcat(body, "hello ");
    strcat(body, "\"}");
    expect_openai_error(E, body, 413, INVALID, "input", NULL, "input has 102 tokens");
    /* the daemon's own form elsewhere */
    long status;
    json_t *j = post("/v1/tokenize", "{}", &status);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "type")),
                     "invalid_request");
    json_decref(j);
}
END_TEST

/* A directory whose modules.json pools by CLS without Normalize; and one
 * without sentence-transformers files, pooled as model.pooling says. */
START_TEST(test_embeddings_cls)
{
    static const char *const dirs[] = {TESTS_DIR "/fixtures/hf/roberta_text",
                                       TESTS_DIR "/fixtures/hf/bert_text"};
    static const char *const want_name[] = {"cls_pooled", "cls_pooled"};
    for (int k = 0; k < 2; k++) {
        daemon_proc d;
        const char *const args[] = {"--model-dir", dirs[k], "--pooling", "cls",
                                    "--normalize", "false", NULL};
        const char *const own[] = {"--model-dir", dirs[0], NULL}; /* its modules.json decides */
        ck_assert_int_eq(daemon_start(&d, k == 0 ? own : args, NULL), 0);
        embeddings_match_fixture(d.port, dirs[k], want_name[k], 1e-4);
        daemon_stop(&d);
    }
}
END_TEST

/* /v2 infer with the BYTES input "text": JSON strings and binary ones (a
 * 4-byte length before each), PyTorch's last_hidden_state of the
 * reference's ids; the metadata lists it; what does not go with it. */
START_TEST(test_v2_text)
{
    json_t *fx = fixture_json();
    const json_t *texts = json_object_get(fx, "texts");
    hf_ids x = hf_text_ids(TEXT_DIR, "input_ids", "attention_mask");
    int dims[3];
    float *want = hf_text_tensor(TEXT_DIR, "last_hidden_state", dims);
    const int B = dims[0], L = dims[1], D = dims[2];
    for (int binary = 0; binary < 2; binary++) {
        http_resp r = {0};
        if (!binary) {
            json_t *body = json_pack("{s:[{s:s, s:s, s:[i], s:O}], s:[{s:s}]}", "inputs", "name",
                                     "text", "datatype", "BYTES", "shape", B, "data", texts,
                                     "outputs", "name", "outputs");
            char *text = json_dumps(body, 0);
            json_decref(body);
            ck_assert_int_eq(http_post_json(text_daemon.port, "/v2/models/encoder/infer", text, &r),
                             0);
            free(text);
        } else {
            size_t n = 0;
            for (int b = 0; b < B; b++)
                n += 4 + json_string_length(json_array_get(texts, (size_t)b));
            char hdr[256];
            const int hl =
                snprintf(hdr, sizeof hdr,
                         "{\"inputs\": [{\"name\": \"text\", \"datatype\": \"BYTES\", "
                         "\"shape\": [%d, 1], \"parameters\": {\"binary_data_size\": %zu}}]}",
                         B, n);
            char *body = xcalloc((size_t)hl + n, 1);
            memcpy(body, hdr, (size_t)hl);
            size_t at = (size_t)hl;
            for (int b = 0; b < B; b++) {
                const json_t *s = json_array_get(texts, (size_t)b);
                const uint32_t len = (uint32_t)json_string_length(s);
                const unsigned char le[4] = {(unsigned char)len, (unsigned char)(len >> 8),
                                             (unsigned char)(len >> 16),
                                             (unsigned char)(len >> 24)};
                memcpy(body + at, le, 4);
                memcpy(body + at + 4, json_string_value(s), len);
                at += 4 + len;
            }
            char hlen[64];
            snprintf(hlen, sizeof hlen, "Inference-Header-Content-Length: %d", hl);
            const char *const headers[] = {"Content-Type: application/octet-stream", hlen, NULL};
            ck_assert_int_eq(http_do(text_daemon.port, "POST", "/v2/models/encoder/infer", body, at,
                                     headers, &r),
                             0);
            free(body);
        }
        ck_assert_msg(r.status == 200, "%s", r.body);
        json_t *j = json_loads(r.body, 0, NULL);
        const json_t *out = json_array_get(json_object_get(j, "outputs"), 0);
        const json_t *shape = json_object_get(out, "shape");
        ck_assert_int_eq(json_integer_value(json_array_get(shape, 0)), B);
        ck_assert_int_eq(json_integer_value(json_array_get(shape, 1)), L); /* the longest, 33 */
        const json_t *data = json_object_get(out, "data");
        double worst = 0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < (int)x.lengths[b]; i++)
                for (int k = 0; k < D; k++) {
                    const size_t at = ((size_t)b * L + i) * D + k;
                    worst =
                        fmax(worst, fabs(json_number_value(json_array_get(data, at)) - want[at]));
                }
        ck_assert_msg(worst < 1e-4, "v2 text (%s) differs from PyTorch's by %g",
                      binary ? "binary" : "JSON", worst);
        json_decref(j);
        http_resp_free(&r);
    }
    http_resp m = {0};
    ck_assert_int_eq(http_do(text_daemon.port, "GET", "/v2/models/encoder", NULL, 0, NULL, &m), 0);
    ck_assert_msg(strstr(m.body, "{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[-1]}"), "%s",
                  m.body);
    http_resp_free(&m);
    expect_error("/v2/models/encoder/infer",
                 "{\"inputs\": [{\"name\": \"text\", \"datatype\": \"BYTES\", \"shape\": [1], "
                 "\"data\": [\"a\"]}, {\"name\": \"input_ids\", \"datatype\": \"INT64\", "
                 "\"shape\": [1, 1], \"data\": [2]}]}",
                 400, "inputs[0] (text): input_ids is not used with text");
    expect_error("/v2/models/encoder/infer",
                 "{\"inputs\": [{\"name\": \"text\", \"datatype\": \"INT32\", \"shape\": [1], "
                 "\"data\": [1]}]}",
                 400, "the model takes BYTES");
    expect_error("/v2/models/encoder/infer",
                 "{\"inputs\": [{\"name\": \"text\", \"datatype\": \"BYTES\", \"shape\": [2], "
                 "\"data\": [\"a\", 5]}]}",
                 400, "data[1] is a number, not a string");
    expect_error("/v2/models/encoder/infer",
                 "{\"inputs\": [{\"name\": \"text\", \"datatype\": \"BYTES\", \"shape\": [1, 2], "
                 "\"data\": [\"a\", \"b\"]}]}",
                 400, "expected [B] or [B, 1]");
    free(want);
    hf_ids_free(&x);
    json_decref(fx);
}
END_TEST

/* A directory whose sentence-transformers modules attnd does not run is
 * refused at start-up, naming the module and what to set; set, it serves. */
START_TEST(test_embeddings_module_refused)
{
    scratch sc;
    static const char *const links[] = {"model.safetensors", "tokenizer.json", "1_Pooling", NULL};
    scratch_make(&sc, TEXT_DIR, NULL, NULL, links);
    scratch_write(&sc, "modules.json",
                  "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
                  "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", "
                  "\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}, "
                  "{\"idx\": 2, \"name\": \"2\", \"path\": \"2_LayerNorm\", \"type\": "
                  "\"sentence_transformers.models.LayerNorm\"}]");
    char *out = NULL;
    const char *const refused_args[] = {"--model-dir", sc.dir, "--check-config", NULL};
    ck_assert_int_eq(run_attnd(refused_args, NULL, &out), 1);
    ck_assert_msg(strstr(out, "module 2 (sentence_transformers.models.LayerNorm) is not supported"),
                  "%s", out);
    ck_assert_msg(strstr(out, "set model.pooling and model.normalize"), "%s", out);
    free(out);
    const char *const set_args[] = {"--model-dir", sc.dir, "--pooling",      "mean",
                                    "--normalize", "true", "--check-config", NULL};
    ck_assert_int_eq(run_attnd(set_args, NULL, &out), 0);
    ck_assert_msg(strstr(out, "configuration OK"), "%s", out);
    free(out);
    scratch_free(&sc);
}
END_TEST

#define DENSE_DIR TESTS_DIR "/fixtures/hf/dense_text"

/* A directory with Dense modules between its Pooling and its Normalize
 * (dense_text: CLS, 32 -> 48 with Tanh, 48 -> 16, Normalize, as LaBSE's and
 * EmbeddingGemma's modules run): /v1/embeddings gives sentence-transformers'
 * embeddings, 16 wide, and bounds dimensions by them; TEI's /embed with
 * normalize false gives the last Dense module's output; /v1/model says
 * what runs. */
START_TEST(test_embeddings_dense)
{
    daemon_proc d;
    const char *const args[] = {"--model-dir", DENSE_DIR, NULL};
    ck_assert_int_eq(daemon_start(&d, args, NULL), 0);
    char *log = daemon_log_until(&d, "attnd: ready", 10000);
    ck_assert_msg(strstr(log, "attnd: embeddings: cls pooling, Dense 32 -> 48 tanh, Dense 48 -> "
                              "16, normalized: 16 dimensions (modules.json)"),
                  "%s", log);
    free(log);
    json_t *fx = json_load_file(DENSE_DIR "/text.json", 0, NULL);
    const json_t *texts = json_object_get(fx, "texts");
    int B, W;
    float *want = pooled_fixture(DENSE_DIR, "sentence_embedding", &B, &W);
    float *raw = pooled_fixture(DENSE_DIR, "dense_embedding", &B, &W);
    ck_assert_int_eq(W, 16);
    float got[16];
    long status;
    json_t *r = post_json_at(d.port, "/v1/embeddings", json_pack("{s:O}", "input", texts), &status);
    ck_assert_int_eq(status, 200);
    for (int b = 0; b < B; b++) {
        embedding_of(json_object_get(r, "data"), (size_t)b, got, 16);
        const double diff = max_abs_diff(got, want + (size_t)b * 16, 16);
        ck_assert_msg(diff < 1e-4, "/v1/embeddings text %d: differs by %g", b, diff);
    }
    json_decref(r);
    r = post_json_at(d.port, "/embed", json_pack("{s:O, s:b}", "inputs", texts, "normalize", 0),
                     &status);
    ck_assert_int_eq(status, 200);
    ck_assert_uint_eq(json_array_size(r), (size_t)B);
    for (int b = 0; b < B; b++) {
        floats_of(json_array_get(r, (size_t)b), got, 16);
        const double diff = max_abs_diff(got, raw + (size_t)b * 16, 16);
        ck_assert_msg(diff < 1e-4, "/embed normalize false, text %d: differs by %g", b, diff);
    }
    json_decref(r);
    /* TEI's /similarity: the cosines of the Dense modules' outputs */
    r = post_json_at(d.port, "/similarity",
                     json_pack("{s:{s:O, s:[O, O, O]}}", "inputs", "source_sentence",
                               json_array_get(texts, 0), "sentences", json_array_get(texts, 1),
                               json_array_get(texts, 2), json_array_get(texts, 3)),
                     &status);
    ck_assert_int_eq(status, 200);
    ck_assert_uint_eq(json_array_size(r), 3);
    for (int b = 1; b < B; b++) {
        double cos = 0;
        for (int k = 0; k < 16; k++)
            cos += (double)want[k] * want[b * 16 + k];
        const double sim = json_number_value(json_array_get(r, (size_t)b - 1));
        ck_assert_msg(fabs(sim - cos) < 1e-4, "/similarity text %d: %g, want %g", b, sim, cos);
    }
    json_decref(r);
    expect_error_at(d.port, "/v1/embeddings", "{\"input\": \"a\", \"dimensions\": 17}", 400,
                    "dimensions = 17 is more than the model's 16");
    expect_error_at(d.port, "/embed", "{\"inputs\": \"a\", \"dimensions\": 17}", 422,
                    "maximum embedding dimension (16)");
    json_t *info = model_info(d.port);
    const json_t *pooling = json_object_get(info, "pooling");
    const json_t *dense = json_object_get(pooling, "dense");
    ck_assert_str_eq(json_string_value(json_object_get(pooling, "mode")), "cls");
    ck_assert_int_eq(json_integer_value(json_object_get(pooling, "dimensions")), 16);
    ck_assert(json_is_true(json_object_get(pooling, "normalize")));
    ck_assert_uint_eq(json_array_size(dense), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(dense, 0), "activation")),
                     "tanh");
    ck_assert(json_is_false(json_object_get(json_array_get(dense, 1), "bias")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(dense, 1), "out_features")),
                     16);
    json_decref(info);
    free(raw);
    free(want);
    json_decref(fx);
    daemon_stop(&d);
}
END_TEST

/* The prompts fixture (tools/fixtures/make_prompt_fixture.mjs): bert_text with
 * config_sentence_transformers.json's prompts {"query": "query: ",
 * "document": ""} and default_prompt_name "query". */
#define PROMPTS_DIR TESTS_DIR "/fixtures/hf/bert_prompts"

/* prompt_name puts the prompt's text before each text: the ids and offsets
 * Hugging Face gives for prompt + text (prompts.json), on /v1/tokenize and
 * /v1/embeddings; the default prompt where none is named; the empty prompt
 * gives sentence-transformers' embeddings of the text alone; /v1/model
 * lists them; the refusals. */
START_TEST(test_prompts)
{
    json_error_t jerr;
    json_t *fx = json_load_file(PROMPTS_DIR "/prompts.json", 0, &jerr);
    ck_assert_msg(fx != NULL, "prompts.json: %s", jerr.text);
    daemon_proc d;
    static const char *const args[] = {"--model-dir", PROMPTS_DIR, NULL};
    ck_assert_int_eq(daemon_start(&d, args, NULL), 0);
    json_t *tok = model_tokenizer(d.port);
    ck_assert(json_equal(json_object_get(tok, "prompts"), json_object_get(fx, "prompts")));
    ck_assert_str_eq(json_string_value(json_object_get(tok, "default_prompt_name")), "query");
    json_decref(tok);

    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(fx, "cases"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "prompt_name"));
        const json_t *text = json_object_get(c, "text"), *ids = json_object_get(c, "ids"),
                     *offsets = json_object_get(c, "offsets");
        for (int named = 0; named < 2; named++) {
            if (!named && strcmp(name, "query") != 0)
                continue; /* the default prompt is query's */
            json_t *body = named ? json_pack("{s:O, s:s}", "text", text, "prompt_name", name)
                                 : json_pack("{s:O}", "text", text);
            json_t *toks = tokens_of(d.port, body);
            ck_assert_uint_eq(json_array_size(toks), json_array_size(ids));
            for (size_t k = 0; k < json_array_size(ids); k++) {
                const json_t *t = json_array_get(toks, k), *o = json_array_get(offsets, k);
                ck_assert_msg(json_integer_value(json_object_get(t, "id")) ==
                                      json_integer_value(json_array_get(ids, k)) &&
                                  json_integer_value(json_object_get(t, "start")) ==
                                      json_integer_value(json_array_get(o, 0)) &&
                                  json_integer_value(json_object_get(t, "stop")) ==
                                      json_integer_value(json_array_get(o, 1)),
                              "%s, case %zu, token %zu: not Hugging Face's", name, i, k);
            }
            json_decref(toks);
        }
    }

    /* /v1/embeddings: "document" (empty) gives bert_text's sentence-transformers
     * embeddings; the default (query) is the embedding of "query: " + text */
    json_t *texts = json_load_file(TEXT_DIR "/text.json", 0, NULL);
    const json_t *list = json_object_get(texts, "texts");
    int B, D;
    float *want = pooled_fixture(TEXT_DIR, "mean_normalized", &B, &D);
    float *got = xcalloc((size_t)D, sizeof *got), *other = xcalloc((size_t)D, sizeof *other);
    long status;
    json_t *body = json_pack("{s:O, s:s}", "input", list, "prompt_name", "document");
    char *b = json_dumps(body, JSON_COMPACT);
    json_t *doc = post_at(d.port, "/v1/embeddings", b, &status);
    ck_assert_int_eq(status, 200);
    free(b);
    json_decref(body);
    for (int k = 0; k < B; k++) {
        embedding_of(json_object_get(doc, "data"), (size_t)k, got, (size_t)D);
        ck_assert_msg(max_abs_diff(got, want + (size_t)k * D, (size_t)D) < 1e-4,
                      "document prompt, text %d: not sentence-transformers' embedding", k);
    }
    json_t *prefixed = json_array();
    for (size_t k = 0; k < json_array_size(list); k++) {
        char s[512];
        snprintf(s, sizeof s, "query: %s", json_string_value(json_array_get(list, k)));
        json_array_append_new(prefixed, json_string(s));
    }
    body = json_pack("{s:O}", "input", list);
    b = json_dumps(body, JSON_COMPACT);
    json_t *query = post_at(d.port, "/v1/embeddings", b, &status);
    ck_assert_int_eq(status, 200);
    free(b);
    json_decref(body);
    body = json_pack("{s:O, s:s}", "input", prefixed, "prompt_name", "document");
    b = json_dumps(body, JSON_COMPACT);
    json_t *by_hand = post_at(d.port, "/v1/embeddings", b, &status);
    ck_assert_int_eq(status, 200);
    free(b);
    json_decref(body);
    for (int k = 0; k < B; k++) {
        embedding_of(json_object_get(query, "data"), (size_t)k, got, (size_t)D);
        embedding_of(json_object_get(by_hand, "data"), (size_t)k, other, (size_t)D);
        ck_assert_msg(max_abs_diff(got, other, (size_t)D) == 0, "query prompt, text %d", k);
        ck_assert_msg(max_abs_diff(got, want + (size_t)k * D, (size_t)D) > 1e-3,
                      "query prompt, text %d: the prompt changed nothing", k);
    }
    json_int_t prompted = 0; /* usage counts the prompt's tokens */
    json_array_foreach(json_object_get(fx, "cases"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "prompt_name")), "query") == 0)
            prompted += (json_int_t)json_array_size(json_object_get(c, "ids"));
    }
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(query, "usage"), "prompt_tokens")),
        prompted);
    json_decref(query);
    json_decref(by_hand);
    json_decref(doc);
    json_decref(prefixed);

    /* refusals: a name the model lacks, a named prompt with a pair, token ids */
    json_t *r = post_at(d.port, "/v1/embeddings",
                        "{\"input\": \"a\", \"prompt_name\": \"passage\"}", &status);
    ck_assert_int_eq(status, 400);
    ck_assert_msg(strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                         "prompt_name 'passage' is not one of the model's prompts: query, "
                         "document"),
                  "%s", json_dumps(r, 0));
    json_decref(r);
    r = post_at(d.port, "/v1/tokenize", "{\"text\": [[\"a\", \"b\"]], \"prompt_name\": \"query\"}",
                &status);
    ck_assert_int_eq(status, 400);
    json_decref(r);
    r = post_at(d.port, "/v1/embeddings", "{\"input\": [2, 3], \"prompt_name\": \"query\"}",
                &status);
    ck_assert_int_eq(status, 400);
    json_decref(r);
    /* a pair gets no default prompt: bert_text's pair ids */
    const json_t *pair = json_object_get(texts, "pair");
    json_t *toks =
        tokens_of(d.port, json_pack("{s:[[O, O]]}", "text", json_object_get(pair, "text"),
                                    json_object_get(pair, "text_pair")));
    ck_assert_uint_eq(json_array_size(toks), json_array_size(json_object_get(pair, "tokens")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(toks, 1), "text")), "the");
    json_decref(toks);
    free(got);
    free(other);
    free(want);
    json_decref(texts);
    daemon_stop(&d);
    json_decref(fx);

    /* a default_prompt_name that is not a prompt is refused at start-up, as
     * sentence-transformers refuses it */
    scratch s;
    static const char *const files[] = {"model.safetensors", "tokenizer.json", NULL};
    scratch_make(&s, PROMPTS_DIR, NULL, NULL, files);
    scratch_write(&s, "config_sentence_transformers.json",
                  "{\"prompts\": {\"query\": \"q: \"}, \"default_prompt_name\": \"passage\"}");
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL},
                    "config_sentence_transformers.json: default_prompt_name 'passage' is not one "
                    "of its prompts",
                    1);
    scratch_free(&s);
    /* a Pooling module that leaves the prompt's tokens out (include_prompt
     * false) is refused while a prompt has text; set, the pooling serves */
    static const char *const pooled[] = {"model.safetensors", "tokenizer.json", "modules.json",
                                         "config_sentence_transformers.json", NULL};
    scratch_make(&s, PROMPTS_DIR, NULL, NULL, pooled);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/1_Pooling", s.dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    scratch_write(&s, "1_Pooling/config.json",
                  "{\"word_embedding_dimension\": 32, \"pooling_mode_mean_tokens\": true, "
                  "\"include_prompt\": false}");
    char *out = NULL;
    const char *const refused_args[] = {"--model-dir", s.dir, "--check-config", NULL};
    ck_assert_int_eq(run_attnd(refused_args, NULL, &out), 1);
    ck_assert_msg(strstr(out, "the Pooling module's include_prompt false is not supported"), "%s",
                  out);
    ck_assert_msg(strstr(out, "set model.pooling and model.normalize"), "%s", out);
    free(out);
    const char *const set_args[] = {"--model-dir", s.dir,  "--pooling",      "mean",
                                    "--normalize", "true", "--check-config", NULL};
    ck_assert_int_eq(run_attnd(set_args, NULL, &out), 0);
    free(out);
    scratch_free(&s);
}
END_TEST

Suite *text_suite(void)
{
    Suite *s = timed_suite("text");
    TCase *tc = timed_case(s, "daemon", 120);
    tcase_add_unchecked_fixture(tc, text_start, text_stop);
    tcase_add_test(tc, test_tokenize_ids);
    tcase_add_test(tc, test_encode_text);
    tcase_add_test(tc, test_encode_one_text);
    tcase_add_test(tc, test_text_refusals);
    tcase_add_test(tc, test_no_tokenizer);
    tcase_add_test(tc, test_embeddings);
    tcase_add_test(tc, test_embeddings_refusals);
    tcase_add_test(tc, test_embeddings_openai_errors);
    tcase_add_test(tc, test_embeddings_2048);
    tcase_add_test(tc, test_text_nul);
    tcase_add_test(tc, test_embeddings_cls);
    tcase_add_test(tc, test_v2_text);
    tcase_add_test(tc, test_embeddings_module_refused);
    tcase_add_test(tc, test_embeddings_dense);
    tcase_add_test(tc, test_prompts);
    return s;
}
