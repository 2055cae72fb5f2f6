/* check_text_limits.c - how much of a text the model sees, through the
 * daemon (tests/fixtures/hf/bert_text and edited copies): truncation from
 * either end on every text route (left keeps the text's last tokens, with
 * their offsets) and TEI's spellings, server.auto_truncate, the model's
 * token limit and where it comes from (config.json,
 * tokenizer_config.json's model_max_length, sentence-transformers'
 * max_seq_length), each said in /v1/model and in the 413. */
#include "daemon.h"
#include "hf_util.h"
#include "suites.h"
#include "test_util.h"
#include "text_util.h"
#include "timing.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text of 124 tokens with bert_text's tokenizer: a sentence 12 times,
 * then two words that only its end has. */
static char *long_text(void)
{
    char *s = xcalloc(1024, 1);
    for (int i = 0; i < 12; i++)
        strcat(s, "the quick brown fox jumps over the lazy dog . ");
    strcat(s, "hello world");
    return s;
}

/* Token i of list a is token j of list b: id, start, stop. */
static bool same_token(const json_t *a, size_t i, const json_t *b, size_t j)
{
    static const char *const keys[] = {"id", "start", "stop"};
    for (int k = 0; k < 3; k++)
        if (json_integer_value(json_object_get(json_array_get(a, i), keys[k])) !=
            json_integer_value(json_object_get(json_array_get(b, j), keys[k])))
            return false;
    return true;
}

/* The ids of a list of tokens (owned). */
static json_t *ids_of(const json_t *toks)
{
    json_t *ids = json_array();
    for (size_t i = 0; i < json_array_size(toks); i++)
        json_array_append_new(
            ids, json_integer(json_integer_value(json_object_get(json_array_get(toks, i), "id"))));
    return ids;
}

/* truncation_direction on every text route: a left cut keeps the text's last
 * tokens (offsets as uncut) between the specials, a right cut its first;
 * /v1/encode, /v1/embeddings run those ids; TEI's spellings; the 413 says
 * where the limit comes from; the fields refused where they mean nothing. */
START_TEST(test_truncation_direction)
{
    char *text = long_text();
    json_t *whole = tokens_of(text_daemon.port, json_pack("{s:s}", "text", text));
    const size_t n = json_array_size(whole);
    ck_assert_uint_eq(n, 124);
    json_t *left =
        tokens_of(text_daemon.port, json_pack("{s:s, s:b, s:s}", "text", text, "truncate", 1,
                                              "truncation_direction", "left"));
    json_t *right =
        tokens_of(text_daemon.port, json_pack("{s:s, s:b}", "text", text, "truncate", 1));
    ck_assert_uint_eq(json_array_size(left), 64);
    ck_assert_uint_eq(json_array_size(right), 64);
    for (size_t i = 0; i < 64; i++) {
        /* [CLS] and [SEP] at the ends; between them the last 62 or the first 62 */
        const size_t from_left = i == 0 ? 0 : i == 63 ? n - 1 : n - 64 + i;
        const size_t from_right = i == 63 ? n - 1 : i;
        ck_assert_msg(same_token(left, i, whole, from_left), "left token %zu", i);
        ck_assert_msg(same_token(right, i, whole, from_right), "right token %zu", i);
    }
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(left, 62), "text")), "world");
    /* TEI's spellings */
    json_t *cap = tokens_of(text_daemon.port, json_pack("{s:s, s:b, s:s}", "text", text, "truncate",
                                                        1, "truncation_direction", "Left"));
    ck_assert(json_equal(cap, left));
    json_decref(cap);
    cap = tokens_of(text_daemon.port, json_pack("{s:s, s:b, s:s}", "text", text, "truncate", 1,
                                                "truncation_direction", "Right"));
    ck_assert(json_equal(cap, right));
    json_decref(cap);

    /* /v1/encode and /v1/predict's way (encode_set_text): the left ids */
    json_t *left_ids = ids_of(left);
    long status;
    json_t *r = post_json("/v1/encode",
                          json_pack("{s:s, s:b, s:s, s:s}", "text", text, "truncate", 1,
                                    "truncation_direction", "left", "attention", "none"),
                          &status);
    ck_assert_int_eq(status, 200);
    ck_assert(json_equal(json_object_get(r, "input_ids"), left_ids));
    json_decref(r);
    /* /v1/embeddings: the embedding of the left ids */
    float got[32], want[32];
    r = post_json(
        "/v1/embeddings",
        json_pack("{s:s, s:b, s:s}", "input", text, "truncate", 1, "truncation_direction", "left"),
        &status);
    ck_assert_int_eq(status, 200);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens")), 64);
    embedding_of(json_object_get(r, "data"), 0, got, 32);
    json_decref(r);
    r = post_json("/v1/embeddings", json_pack("{s:[O]}", "input", left_ids), &status);
    ck_assert_int_eq(status, 200);
    embedding_of(json_object_get(r, "data"), 0, want, 32);
    json_decref(r);
    ck_assert_msg(max_abs_diff(got, want, 32) < 1e-6, "left-cut text and its ids differ by %g",
                  max_abs_diff(got, want, 32));

    /* over the limit: its count, the limit, where it comes from, and what cuts */
    json_t *body = json_pack("{s:s}", "input", text);
    char *b = json_dumps(body, JSON_COMPACT);
    expect_error("/v1/embeddings", b, 413,
                 "input has 124 tokens; the model takes at most 64 (sentence_bert_config.json's "
                 "max_seq_length); \"truncate\": true cuts it to that");
    free(b);
    json_decref(body);
    /* what is refused */
    expect_error("/v1/tokenize",
                 "{\"text\": \"a\", \"truncate\": true, \"truncation_direction\": "
                 "\"LEFT\"}",
                 400, "truncation_direction must be \"right\", \"left\", \"Right\" or \"Left\"");
    expect_error("/v1/embeddings", "{\"input\": [2, 3], \"truncate\": true}", 400,
                 "truncate is only used with text input; token ids are taken as given");
    expect_error("/v1/embeddings", "{\"input\": [[2, 3]], \"truncation_direction\": \"left\"}", 400,
                 "truncation_direction is only used with text input");
    expect_error("/v1/encode", "{\"input_ids\": [2, 3], \"truncation_direction\": \"left\"}", 400,
                 "truncation_direction is only used with text");
    expect_error("/v1/embeddings", "{\"input\": \"a\", \"prompt_name\": \"query\"}", 400,
                 "prompt_name 'query': the model has no prompts");
    json_decref(left_ids);
    json_decref(whole);
    json_decref(left);
    json_decref(right);
    free(text);
}
END_TEST

static void expect_limit(const json_t *tok, json_int_t max, const char *from)
{
    ck_assert_int_eq(json_integer_value(json_object_get(tok, "max_input_length")), max);
    ck_assert_str_eq(json_string_value(json_object_get(tok, "max_input_length_from")), from);
}

/* server.auto_truncate: the default of "truncate" on /v1/encode,
 * /v1/embeddings and /v2 (a request's own false refuses), never on
 * /v1/tokenize; /v1/model says it. */
START_TEST(test_auto_truncate)
{
    json_t *tok = model_tokenizer(text_daemon.port);
    expect_limit(tok, 64, "sentence_bert_config.json's max_seq_length");
    ck_assert(json_is_false(json_object_get(tok, "auto_truncate")));
    ck_assert(json_is_object(json_object_get(tok, "prompts")) &&
              json_object_size(json_object_get(tok, "prompts")) == 0);
    ck_assert(json_is_null(json_object_get(tok, "default_prompt_name")));
    json_decref(tok);

    daemon_proc d;
    static const char *const args[] = {"--model-dir", TEXT_DIR, "--auto-truncate", NULL};
    ck_assert_int_eq(daemon_start(&d, args, NULL), 0);
    tok = model_tokenizer(d.port);
    ck_assert(json_is_true(json_object_get(tok, "auto_truncate")));
    json_decref(tok);
    char *text = long_text();
    long status;
    json_t *body = json_pack("{s:s, s:s}", "text", text, "attention", "none");
    char *b = json_dumps(body, JSON_COMPACT);
    json_t *r = post_at(d.port, "/v1/encode", b, &status);
    ck_assert_int_eq(status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r, "input_ids")), 64);
    json_decref(r);
    free(b);
    json_object_set_new(body, "truncate", json_false());
    b = json_dumps(body, JSON_COMPACT);
    r = post_at(d.port, "/v1/encode", b, &status);
    ck_assert_int_eq(status, 413);
    json_decref(r);
    free(b);
    json_decref(body);
    body = json_pack("{s:[s]}", "input", text);
    b = json_dumps(body, JSON_COMPACT);
    r = post_at(d.port, "/v1/embeddings", b, &status);
    ck_assert_int_eq(status, 200);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens")), 64);
    json_decref(r);
    free(b);
    json_decref(body);
    /* /v2's text input: no field says, the setting does */
    body = json_pack("{s:[{s:s, s:s, s:[i], s:[s]}]}", "inputs", "name", "text", "datatype",
                     "BYTES", "shape", 1, "data", text);
    b = json_dumps(body, JSON_COMPACT);
    r = post_at(d.port, "/v2/models/encoder/infer", b, &status);
    ck_assert_msg(status == 200, "/v2: %ld", status);
    json_decref(r);
    free(b);
    json_decref(body);
    /* /v1/tokenize counts: nothing cut unless asked */
    json_t *toks = tokens_of(d.port, json_pack("{s:s}", "text", text));
    ck_assert_uint_eq(json_array_size(toks), 124);
    json_decref(toks);
    daemon_stop(&d);
    free(text);
}
END_TEST

/* A tokenizer of 6 ids (ModernBERT's fixture has 64): "a" and "b" words,
 * [CLS] ... [SEP]. */
static const char TINY_TOKENIZER[] =
    "{\"added_tokens\": [{\"id\": 1, \"content\": \"[CLS]\", \"special\": true}, {\"id\": 2, "
    "\"content\": \"[SEP]\", \"special\": true}], \"pre_tokenizer\": {\"type\": "
    "\"WhitespaceSplit\"}, \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", "
    "2], \"cls\": [\"[CLS]\", 1]}, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
    "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, \"vocab\": "
    "{\"[UNK]\": 0, \"[CLS]\": 1, \"[SEP]\": 2, \"[PAD]\": 3, \"a\": 4, \"b\": 5}}}";

/* n words "a" then one "b" (owned): n + 3 tokens with the specials. */
static char *words(int n)
{
    char *s = xcalloc((size_t)n * 2 + 4, 1);
    for (int i = 0; i < n; i++)
        strcat(s, "a ");
    strcat(s, "b");
    return s;
}

/* The token limit is the model's: ModernBERT's max_position_embeddings (no
 * position table), tokenizer_config.json's model_max_length where it is
 * smaller (transformers' 1e30 meaning none, and loading), and
 * sentence-transformers' max_seq_length before it; each said in
 * /v1/model, in the 413, and what truncate cuts to. */
START_TEST(test_model_limit)
{
    static const char *const mb_files[] = {"model.safetensors", NULL};
    static const char *const st_files[] = {"model.safetensors", "tokenizer.json", "modules.json",
                                           "1_Pooling", NULL};
    static const struct {
        const char *base, *edit;
        const char *const *links;
        const char *tokenizer, *tokenizer_config, *st_config;
        json_int_t max;
        const char *from;
    } cases[] = {
        /* ModernBERT: RoPE, no table; its max_position_embeddings 256 */
        {TESTS_DIR "/fixtures/modernbert/modernbert_mlm", "{\"max_position_embeddings\": 256}",
         mb_files, TINY_TOKENIZER, NULL, NULL, 256, "config.json's max_position_embeddings"},
        /* the tokenizer's length, below the table's 64 */
        {TEXT_DIR, NULL, st_files, NULL, "{\"model_max_length\": 16}", NULL, 16,
         "tokenizer_config.json's model_max_length"},
        /* transformers' "none": the table's 64 */
        {TEXT_DIR, NULL, st_files, NULL,
         "{\"model_max_length\": 1000000000000000019884624838656, \"unk_token\": \"[UNK]\"}", NULL,
         64, "config.json's max_position_embeddings"},
        /* sentence-transformers' max_seq_length first, even over the tokenizer's */
        {TEXT_DIR, NULL, st_files, NULL, "{\"model_max_length\": 16}", "{\"max_seq_length\": 20}",
         20, "sentence_bert_config.json's max_seq_length"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        scratch s;
        scratch_make(&s, cases[c].base, cases[c].edit, NULL, cases[c].links);
        if (cases[c].tokenizer)
            scratch_write(&s, "tokenizer.json", cases[c].tokenizer);
        if (cases[c].tokenizer_config)
            scratch_write(&s, "tokenizer_config.json", cases[c].tokenizer_config);
        if (cases[c].st_config)
            scratch_write(&s, "sentence_bert_config.json", cases[c].st_config);
        daemon_proc d;
        const char *const args[] = {"--model-dir", s.dir, NULL};
        ck_assert_msg(daemon_start(&d, args, NULL) == 0, "case %zu: %s", c, d.log);
        json_t *tok = model_tokenizer(d.port);
        expect_limit(tok, cases[c].max, cases[c].from);
        json_decref(tok);
        /* one token over: refused, naming the limit and its source */
        const bool mb = cases[c].tokenizer != NULL;
        char *text = mb ? words((int)cases[c].max - 2) : NULL;
        if (!mb) { /* bert_text's tokenizer: "hello" is one token */
            text = xcalloc((size_t)cases[c].max * 6 + 1, 1);
            for (json_int_t i = 0; i < cases[c].max - 1; i++)
                strcat(text, "hello ");
        }
        json_t *body = json_pack("{s:s, s:s}", "text", text, "attention", "none");
        char *b = json_dumps(body, JSON_COMPACT);
        long status;
        json_t *r = post_at(d.port, "/v1/encode", b, &status);
        ck_assert_msg(status == 413, "case %zu: %ld", c, status);
        char want[160];
        snprintf(want, sizeof want, "text has %lld tokens; the model takes at most %lld (%s)",
                 (long long)cases[c].max + 1, (long long)cases[c].max, cases[c].from);
        const char *msg =
            json_string_value(json_object_get(json_object_get(r, "error"), "message"));
        ck_assert_msg(msg && strstr(msg, want), "case %zu: \"%s\" does not say \"%s\"", c,
                      msg ? msg : "", want);
        json_decref(r);
        free(b);
        /* truncate cuts it to the limit, from the left: the "b" (ModernBERT) stays */
        json_object_set_new(body, "truncate", json_true());
        json_object_set_new(body, "truncation_direction", json_string("left"));
        b = json_dumps(body, JSON_COMPACT);
        r = post_at(d.port, "/v1/encode", b, &status);
        ck_assert_msg(status == 200, "case %zu: %ld", c, status);
        const json_t *ids = json_object_get(r, "input_ids");
        ck_assert_uint_eq(json_array_size(ids), (size_t)cases[c].max);
        if (mb)
            ck_assert_int_eq(json_integer_value(json_array_get(ids, (size_t)cases[c].max - 2)), 5);
        json_decref(r);
        free(b);
        json_decref(body);
        free(text);
        daemon_stop(&d);
        scratch_free(&s);
    }
}
END_TEST

Suite *text_limits_suite(void)
{
    Suite *s = timed_suite("text_limits");
    TCase *tc = timed_case(s, "daemon", 120);
    tcase_add_unchecked_fixture(tc, text_start, text_stop);
    tcase_add_test(tc, test_truncation_direction);
    tcase_add_test(tc, test_auto_truncate);
    tcase_add_test(tc, test_model_limit);
    return s;
}
