/* check_text.c - text in, through the daemon: /v1/tokenize against Hugging
 * Face's ids, /v1/encode with text against PyTorch's last_hidden_state of
 * those ids (tests/fixtures/hf/bert_text: tools/make_text_fixtures.py, the
 * ids from the tokenizer's golden file, not from this code), and the
 * refusals: no tokenizer, over the limit, truncation, bad forms. */
#include "daemon.h"
#include "hf_util.h"
#include "suites.h"
#include "test_util.h"
#include "torch_fixture.h"

#include "safetensors.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_DIR TESTS_DIR "/fixtures/hf/bert_text"

static daemon_proc text_daemon;
static bool text_up;

static void text_start(void)
{
    static const char *const args[] = {"--model-dir", TEXT_DIR, "--workers", "1", NULL};
    text_up = daemon_start(&text_daemon, args, NULL) == 0;
}

static void text_stop(void)
{
    if (text_up)
        daemon_stop(&text_daemon);
    text_up = false;
}

/* POSTs body (a JSON text) to path; the response parsed (owned), its status in *status. */
static json_t *post(const char *path, const char *body, long *status)
{
    ck_assert_msg(text_up, "attnd did not start on %s", TEXT_DIR);
    http_resp r = {0};
    ck_assert_int_eq(http_post_json(text_daemon.port, path, body, &r), 0);
    *status = r.status;
    json_error_t jerr;
    json_t *j = json_loads(r.body, 0, &jerr);
    ck_assert_msg(j != NULL, "%s: %s", path, r.body);
    http_resp_free(&r);
    return j;
}

static json_t *post_json(const char *path, json_t *body, long *status)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *j = post(path, text, status);
    free(text);
    return j;
}

static json_t *fixture_json(void)
{
    json_error_t jerr;
    json_t *j = json_load_file(TEXT_DIR "/text.json", 0, &jerr);
    ck_assert_msg(j != NULL, "text.json: %s", jerr.text);
    return j;
}

/* text.safetensors' token ids: ids (B, L) and each row's length (the
 * attention mask's ones), as floats; *B, *L. */
typedef struct fixture_ids {
    float *ids, *lengths;
    int B, L;
} fixture_ids;

static fixture_ids read_ids(const char *ids_name, const char *mask_name)
{
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, TEXT_DIR "/text.safetensors", &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, ids_name);
    ck_assert(t && t->ndim == 2);
    fixture_ids x = {.B = (int)t->shape[0], .L = (int)t->shape[1]};
    x.ids = torch_floats(&f, ids_name, NULL);
    x.lengths = xcalloc((size_t)x.B, sizeof *x.lengths);
    float *mask = mask_name ? torch_floats(&f, mask_name, NULL) : NULL;
    for (int b = 0; b < x.B; b++)
        for (int i = 0; i < x.L; i++)
            x.lengths[b] += mask ? mask[b * x.L + i] : 1.0f;
    free(mask);
    st_close(&f);
    return x;
}

/* Row b of x as a JSON list of ints (owned). */
static json_t *ids_row(const fixture_ids *x, int b)
{
    json_t *row = json_array();
    for (int i = 0; i < (int)x->lengths[b]; i++)
        json_array_append_new(row, json_integer((json_int_t)x->ids[b * x->L + i]));
    return row;
}

/* The error message of a refusal with the status expected. */
static void expect_error(const char *path, const char *body, long want_status, const char *want)
{
    long status;
    json_t *j = post(path, body, &status);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    ck_assert_msg(status == want_status, "%s %s: %ld, expected %ld (%s)", path, body, status,
                  want_status, msg ? msg : "");
    ck_assert_msg(msg && strstr(msg, want), "%s %s: \"%s\" does not say \"%s\"", path, body,
                  msg ? msg : "", want);
    json_decref(j);
}

/* /v1/tokenize gives Hugging Face's ids for every text of the fixture. */
START_TEST(test_tokenize_ids)
{
    json_t *fx = fixture_json();
    const json_t *texts = json_object_get(fx, "texts");
    fixture_ids x = read_ids("input_ids", "attention_mask");
    json_t *ids = json_array();
    for (int b = 0; b < x.B; b++)
        json_array_append_new(ids, ids_row(&x, b));
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
    json_decref(ids);
    free(x.ids);
    free(x.lengths);
    json_decref(fx);
}
END_TEST

/* /v1/encode with text: the ids Hugging Face's tokenizer gives, and the
 * outputs PyTorch computes from them, each sequence at its own length. */
START_TEST(test_encode_text)
{
    json_t *fx = fixture_json();
    const json_t *texts = json_object_get(fx, "texts");
    fixture_ids x = read_ids("input_ids", "attention_mask");
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, TEXT_DIR "/text.safetensors", &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, "last_hidden_state");
    ck_assert(t && t->ndim == 3);
    const int B = (int)t->shape[0], L = (int)t->shape[1], D = (int)t->shape[2];
    ck_assert_int_eq(B, (int)json_array_size(texts));
    float *want = torch_floats(&f, "last_hidden_state", NULL);
    long status;
    json_t *r = post_json("/v1/encode", json_pack("{s:O, s:s}", "text", texts, "attention", "none"),
                          &status);
    ck_assert_int_eq(status, 200);
    const json_t *out = json_object_get(r, "outputs");
    for (int b = 0; b < B; b++) {
        json_t *row = ids_row(&x, b);
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
    fixture_ids px = read_ids("pair_input_ids", NULL);
    float *pwant = torch_floats(&f, "pair_last_hidden_state", NULL);
    r = post_json("/v1/encode",
                  json_pack("{s:[[O, O]], s:s}", "text", json_object_get(pair, "text"),
                            json_object_get(pair, "text_pair"), "attention", "none"),
                  &status);
    ck_assert_int_eq(status, 200);
    json_t *prow = ids_row(&px, 0);
    ck_assert(json_equal(json_array_get(json_object_get(r, "input_ids"), 0), prow));
    json_decref(prow);
    const double pdiff = outputs_diff(json_object_get(r, "outputs"), pwant, 1, px.L, D, px.lengths);
    ck_assert_msg(pdiff < 1e-4, "pair outputs differ from PyTorch's by %g", pdiff);
    json_decref(r);
    free(pwant);
    free(want);
    free(x.ids);
    free(x.lengths);
    free(px.ids);
    free(px.lengths);
    st_close(&f);
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

Suite *text_suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("daemon");
    tcase_add_unchecked_fixture(tc, text_start, text_stop);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_tokenize_ids);
    tcase_add_test(tc, test_encode_text);
    tcase_add_test(tc, test_encode_one_text);
    tcase_add_test(tc, test_text_refusals);
    tcase_add_test(tc, test_no_tokenizer);
    suite_add_tcase(s, tc);
    return s;
}
