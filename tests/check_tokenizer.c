/* check_tokenizer.c - core/tokenizer/ against Hugging Face's own tokenizers:
 * the ids, type ids, special tokens' mask, offsets and sequence ids that
 * Hugging Face's Rust tokenizers (its Node binding) gives for every test
 * tokenizer and text (tests/fixtures/tokenizers/<name>/reference.json, made
 * by tests/tokenizer/reference.mjs over tools/fixtures/make_tokenizer_fixtures.py's
 * tokenizer.json files), offsets worked out by hand, truncation's
 * arithmetic, right and left truncation against Hugging Face's
 * (truncation.json, tests/tokenizer/truncation.mjs), and the refusals;
 * hostile sizes (a 1 MiB word), an encoding reused over 100,000 texts, and
 * threads sharing one tokenizer.  Ids decoded back to text:
 * check_tokenizer_decode.c. */
#include "tokenizer/tokenizer.h"

#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "tok_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* e against one encoding of reference.json (ids, type_ids,
 * special_tokens_mask, offsets, and for a pair sequence_ids): the first
 * difference, or NULL. */
static const char *differs(const tok_encoding *e, const json_t *want)
{
    const json_t *ids = json_object_get(want, "ids"), *types = json_object_get(want, "type_ids"),
                 *mask = json_object_get(want, "special_tokens_mask"),
                 *offsets = json_object_get(want, "offsets"),
                 *seqs = json_object_get(want, "sequence_ids");
    if (e->n != json_array_size(ids))
        return "the number of tokens";
    for (size_t i = 0; i < e->n; i++) {
        const json_t *o = json_array_get(offsets, i), *q = json_array_get(seqs, i);
        if (e->ids[i] != json_integer_value(json_array_get(ids, i)))
            return "ids";
        if (e->type_ids[i] != json_integer_value(json_array_get(types, i)))
            return "type_ids";
        if (e->special[i] != json_integer_value(json_array_get(mask, i)))
            return "special_tokens_mask";
        if (e->start[i] != json_integer_value(json_array_get(o, 0)) ||
            e->stop[i] != json_integer_value(json_array_get(o, 1)))
            return "offsets";
        if (seqs && (json_is_null(q) ? e->seq[i] != 255 : e->seq[i] != json_integer_value(q)))
            return "sequence_ids";
    }
    return NULL;
}

/* "id [start, stop)" of each token (* for a special one), for messages. */
static const char *show(const tok_encoding *e, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < e->n && k + 40 < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%d [%u, %u)%s", i ? ", " : "", e->ids[i],
                              e->start[i], e->stop[i], e->special[i] ? "*" : "");
    return buf;
}

static void expect(const char *name, const char *what, const json_t *item, const tok_encoding *e,
                   const json_t *want)
{
    const char *d = differs(e, want);
    if (!d)
        return;
    char got[2048];
    char *ref = json_dumps(want, JSON_COMPACT);
    ck_abort_msg("%s, %s, \"%.60s\": %s differ: %s; Hugging Face: %.1500s", name, what,
                 json_string_value(json_object_get(item, "text")), d, show(e, got, sizeof got),
                 ref);
}

/* Every text and pair of reference.json, with and without the special
 * tokens: ids, type ids, the special tokens' mask, offsets, sequence ids. */
START_TEST(test_reference)
{
    const char *name = NAMES[_i];
    tok_tokenizer *t = tokenizer_fixture(name);
    json_t *g = tokenizer_fixture_json(name, "reference.json");
    tok_encoding e = {0};
    enc_error err = {0};
    size_t index, checked = 0;
    json_t *item;
    json_array_foreach(json_object_get(g, "items"), index, item)
    {
        const json_t *text = json_object_get(item, "text");
        for (int special = 1; special >= 0; special--) {
            const json_t *w = json_object_get(item, special ? "with_special" : "without_special");
            ck_assert_msg(!json_object_get(w, "error"), "%s: the reference failed", name);
            ck_assert_msg(tok_encode(t, json_string_value(text), json_string_length(text), NULL, 0,
                                     special, 0, &e, NULL, &err) == 0,
                          "%s: %s", name, err.message);
            expect(name, special ? "with specials" : "without specials", item, &e, w);
            checked++;
        }
    }
    json_array_foreach(json_object_get(g, "pairs"), index, item)
    {
        const json_t *a = json_object_get(item, "text"), *b = json_object_get(item, "text_pair");
        for (int special = 1; special >= 0; special--) {
            const json_t *w = json_object_get(item, special ? "with_special" : "without_special");
            ck_assert_int_eq(tok_encode(t, json_string_value(a), json_string_length(a),
                                        json_string_value(b), json_string_length(b), special, 0, &e,
                                        NULL, &err),
                             0);
            expect(name, special ? "pair with specials" : "pair without specials", item, &e, w);
            checked++;
        }
    }
    ck_assert_uint_gt(checked, 150);
    tok_encoding_free(&e);
    json_decref(g);
    tok_free(t);
}
END_TEST

/* Offsets in characters of the input, as tokenizers' encode_char_offsets
 * gives them, worked out by hand. */
static void expect_offsets(const char *name, const char *text, bool special, size_t n,
                           const int32_t (*want)[2])
{
    tok_tokenizer *t = tokenizer_fixture(name);
    tok_encoding e = {0};
    enc_error err = {0};
    ck_assert_msg(tok_encode(t, text, strlen(text), NULL, 0, special, 0, &e, NULL, &err) == 0, "%s",
                  err.message);
    ck_assert_msg(e.n == n, "%s \"%s\": %zu tokens, expected %zu", name, text, e.n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg((int32_t)e.start[i] == want[i][0] && (int32_t)e.stop[i] == want[i][1],
                      "%s \"%s\": token %zu (%s) at [%u, %u), expected [%d, %d)", name, text, i,
                      tok_token_text(t, e.ids[i]), e.start[i], e.stop[i], want[i][0], want[i][1]);
    tok_encoding_free(&e);
    tok_free(t);
}

START_TEST(test_offsets_wordpiece)
{
    /* [CLS] hello , world ! [SEP]: specials at [0, 0) */
    expect_offsets("bert-uncased", "Hello, world!", true, 6,
                   (const int32_t[][2]){{0, 0}, {0, 5}, {5, 6}, {7, 12}, {12, 13}, {0, 0}});
    /* characters, not bytes: "é" is one character (two bytes); the accent is
     * stripped ("cafe" is not in the vocabulary: c ##a ##f ##e), the offsets
     * stay on the original */
    expect_offsets("bert-uncased", "Café world", false, 5,
                   (const int32_t[][2]){{0, 1}, {1, 2}, {2, 3}, {3, 4}, {5, 10}});
    /* CJK characters are words of their own; the emoji is [UNK] over its one character */
    expect_offsets("bert-uncased", "\xe4\xb8\xad \xf0\x9f\x98\x80 x", false, 3,
                   (const int32_t[][2]){{0, 1}, {2, 3}, {4, 5}});
}
END_TEST

START_TEST(test_offsets_byte_level)
{
    /* "Ġworld" covers the space, trim_offsets takes it off */
    expect_offsets("roberta", "Hello world", false, 3,
                   (const int32_t[][2]){{0, 1}, {1, 5}, {6, 11}});
    /* <s> ... </s>; <mask> with lstrip takes the space before it, trimmed off again */
    expect_offsets("roberta", "a <mask>", true, 4,
                   (const int32_t[][2]){{0, 0}, {0, 1}, {2, 8}, {0, 0}});
}
END_TEST

START_TEST(test_offsets_metaspace)
{
    /* "▁world" begins with the space it stands for: Metaspace keeps it */
    tok_tokenizer *t = tokenizer_fixture("xlmr");
    tok_encoding e = {0};
    enc_error err = {0};
    const char *text = "Hello world";
    ck_assert_int_eq(tok_encode(t, text, strlen(text), NULL, 0, false, 0, &e, NULL, &err), 0);
    ck_assert_uint_gt(e.n, 1);
    ck_assert_str_eq(tok_token_text(t, e.ids[e.n - 1]), "\xe2\x96\x81world");
    ck_assert_uint_eq(e.start[e.n - 1], 5);
    ck_assert_uint_eq(e.stop[e.n - 1], 11);
    tok_encoding_free(&e);
    tok_free(t);
}
END_TEST

/* Every token's span lies in its text and the model's tokens move forward,
 * on every tokenizer and every text (hostile ones included). */
START_TEST(test_offsets_bounded)
{
    const char *name = NAMES[_i];
    tok_tokenizer *t = tokenizer_fixture(name);
    json_t *texts = tokenizer_fixture_json(".", "texts.json");
    tok_encoding e = {0};
    enc_error err = {0};
    size_t index;
    json_t *v;
    json_array_foreach(json_object_get(texts, "texts"), index, v)
    {
        const char *s = json_string_value(v);
        const size_t len = json_string_length(v);
        size_t chars = 0;
        for (size_t i = 0; i < len; i++)
            chars += ((unsigned char)s[i] & 0xC0) != 0x80;
        ck_assert_int_eq(tok_encode(t, s, len, NULL, 0, true, 0, &e, NULL, &err), 0);
        uint32_t last = 0;
        for (size_t i = 0; i < e.n; i++) {
            EXPECT(e.start[i] <= e.stop[i] && e.stop[i] <= chars,
                   "%s \"%.40s\": token %zu at [%u, %u) of %zu characters", name, s, i, e.start[i],
                   e.stop[i], chars);
            if (e.seq[i] == 255)
                continue;
            EXPECT(e.start[i] >= last, "%s \"%.40s\": token %zu starts at %u, before %u", name, s,
                   i, e.start[i], last);
            last = e.start[i];
        }
    }
    tok_encoding_free(&e);
    json_decref(texts);
    tok_free(t);
}
END_TEST

/* tokenizers' right and left truncation, longest_first: the longer text
 * gives way first, the specials stay. */
START_TEST(test_truncation)
{
    tok_tokenizer *t = tokenizer_fixture("bert-uncased");
    tok_encoding e = {0};
    enc_error err = {0};
    /* words of the vocabulary: one token each */
    const char *a = "one two three four world the over the lazy dog";
    const char *b = "hello world the";
    size_t whole = 0;
    /* 10 + 3 tokens, 3 specials: at 16 nothing is cut */
    ck_assert_int_eq(tok_encode(t, a, strlen(a), b, strlen(b), true, 16, &e, &whole, &err), 0);
    ck_assert_uint_eq(e.n, 16);
    ck_assert_uint_eq(whole, 16);
    /* at 11: 8 for the texts; n1 = 3 (b), n2 = max(3, 8 - 3) = 5: a keeps 5 */
    ck_assert_int_eq(tok_encode(t, a, strlen(a), b, strlen(b), true, 11, &e, &whole, &err), 0);
    ck_assert_uint_eq(whole, 16);
    ck_assert_uint_eq(e.n, 11);
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < e.n; i++) {
        na += e.seq[i] == 0;
        nb += e.seq[i] == 1;
    }
    ck_assert_uint_eq(na, 5);
    ck_assert_uint_eq(nb, 3);
    ck_assert_str_eq(tok_token_text(t, e.ids[e.n - 1]), "[SEP]");
    /* at 7: 4 for the texts, both cut: n1 = 2, n2 = 2 */
    ck_assert_int_eq(tok_encode(t, a, strlen(a), b, strlen(b), true, 7, &e, &whole, &err), 0);
    ck_assert_uint_eq(e.n, 7);
    /* one text: the first 3 tokens and the two specials */
    ck_assert_int_eq(tok_encode(t, a, strlen(a), NULL, 0, true, 5, &e, &whole, &err), 0);
    ck_assert_uint_eq(e.n, 5);
    ck_assert_uint_eq(whole, 12);
    ck_assert_str_eq(tok_token_text(t, e.ids[3]), "three");
    ck_assert_str_eq(tok_token_text(t, e.ids[4]), "[SEP]");
    /* left: as many of each, the last ones; offsets in the text as uncut */
    ck_assert_int_eq(
        tok_encode_dir(t, a, strlen(a), NULL, 0, true, 5, TOK_TRUNCATE_LEFT, &e, &whole, &err), 0);
    ck_assert_uint_eq(e.n, 5);
    ck_assert_uint_eq(whole, 12);
    ck_assert_str_eq(tok_token_text(t, e.ids[0]), "[CLS]");
    ck_assert_str_eq(tok_token_text(t, e.ids[1]), "the");
    ck_assert_str_eq(tok_token_text(t, e.ids[3]), "dog");
    ck_assert_str_eq(tok_token_text(t, e.ids[4]), "[SEP]");
    ck_assert_uint_eq(e.start[3], strlen(a) - 3);
    ck_assert_int_eq(tok_encode_dir(t, a, strlen(a), b, strlen(b), true, 11, TOK_TRUNCATE_LEFT, &e,
                                    &whole, &err),
                     0);
    ck_assert_uint_eq(e.n, 11);
    ck_assert_str_eq(tok_token_text(t, e.ids[1]), "the"); /* a's last 5: the over the lazy dog */
    ck_assert_str_eq(tok_token_text(t, e.ids[2]), "over");
    ck_assert_str_eq(tok_token_text(t, e.ids[7]), "hello"); /* b whole */
    /* no room for the specials */
    enc_error_clear(&err);
    ck_assert_int_eq(tok_encode(t, a, strlen(a), NULL, 0, true, 1, &e, &whole, &err), ENC_ELIMIT);
    ck_assert_int_eq(
        tok_encode_dir(t, a, strlen(a), NULL, 0, true, 1, TOK_TRUNCATE_LEFT, &e, &whole, &err),
        ENC_ELIMIT);
    tok_encoding_free(&e);
    tok_free(t);
}
END_TEST

/* The tokenizer a case of truncation.json names: a fixture's, or one of
 * its "edits" (a fixture's tokenizer.json with fields merged into its
 * top-level objects). */
static tok_tokenizer *load_edited(const json_t *edits, const char *name)
{
    const json_t *edit = json_object_get(edits, name);
    if (!edit)
        return tokenizer_fixture(name);
    json_t *j =
        tokenizer_fixture_json(json_string_value(json_object_get(edit, "base")), "tokenizer.json");
    const char *key;
    json_t *fields;
    json_object_foreach(json_object_get(edit, "merge"), key, fields)
    {
        ck_assert(json_object_update(json_object_get(j, key), fields) == 0);
    }
    char *text = json_dumps(j, JSON_COMPACT);
    enc_error err = {0};
    tok_tokenizer *t = tok_load_json(text, strlen(text), &err);
    ck_assert_msg(t != NULL, "%s: %s", name, err.message);
    free(text);
    json_decref(j);
    return t;
}

/* A pair case where tokenizers 0.23's early exit counted the texts short
 * (truncation.mjs): each text keeps what truncate_encodings' longest_first
 * gives for the whole lengths, its first (right) or last (left) tokens as
 * the uncut encoding has them. */
static void early_exit_case(const tok_tokenizer *t, const json_t *c, const tok_encoding *e,
                            bool is_left, const char *what)
{
    const json_t *a = json_object_get(c, "text"), *b = json_object_get(c, "text_pair"),
                 *lengths = json_object_get(c, "lengths");
    const bool special = json_is_true(json_object_get(c, "add_special_tokens"));
    size_t na = (size_t)json_integer_value(json_array_get(lengths, 0)),
           nb = (size_t)json_integer_value(json_array_get(lengths, 1));
    const size_t added = special ? tok_added_special(t, true) : 0,
                 max = (size_t)json_integer_value(json_object_get(c, "max_length")) - added;
    /* truncate_encodings, LongestFirst, stride 0 (utils/truncation.rs) */
    size_t n1 = na < nb ? na : nb, n2 = na < nb ? nb : na;
    n2 = n1 > max ? n1 : (n1 > max - n1 ? n1 : max - n1);
    if (n1 + n2 > max) {
        n1 = max / 2;
        n2 = n1 + max % 2;
    }
    const size_t keep[2] = {na > nb ? n2 : n1, na > nb ? n1 : n2}, whole[2] = {na, nb};
    tok_encoding w = {0};
    enc_error err = {0};
    ck_assert_int_eq(tok_encode(t, json_string_value(a), json_string_length(a),
                                json_string_value(b), json_string_length(b), special, 0, &w, NULL,
                                &err),
                     0);
    for (uint8_t s = 0; s < 2; s++) {
        size_t i = 0, j = 0, n = 0;
        const size_t skip = is_left ? whole[s] - keep[s] : 0;
        for (size_t k = 0; k < w.n && j < skip; k++) /* the uncut encoding's first kept */
            if (w.seq[k] == s && j++ == skip - 1)
                i = k + 1;
        for (size_t k = 0; k < e->n; k++) {
            if (e->seq[k] != s)
                continue;
            while (i < w.n && w.seq[i] != s)
                i++;
            ck_assert_msg(i < w.n && e->ids[k] == w.ids[i] && e->stop[k] == w.stop[i],
                          "%s: text %u's token %zu is not the uncut encoding's", what, s, k);
            i++;
            n++;
        }
        ck_assert_msg(n == keep[s], "%s: text %u keeps %zu tokens, truncate_encodings %zu", what, s,
                      n, keep[s]);
    }
    tok_encoding_free(&w);
}

/* Every case of truncation.json (tests/tokenizer/truncation.mjs): Hugging
 * Face's right and left truncation (longest_first, stride 0) of texts and
 * pairs at several lengths, with and without the specials: ids, type ids,
 * the special tokens' mask, offsets, sequence ids, and the count uncut.
 * Right through tok_encode_dir is tok_encode's.  Where tokenizers 0.23's
 * early exit changes a pair's kept lengths ("early_exit"), against
 * truncate_encodings' rule on the whole lengths (early_exit_case). */
START_TEST(test_truncation_reference)
{
    json_t *g = tokenizer_fixture_json(".", "truncation.json");
    const json_t *edits = json_object_get(g, "edits");
    const char *loaded = NULL;
    tok_tokenizer *t = NULL;
    tok_encoding e = {0}, r = {0};
    size_t index, left = 0, early = 0;
    json_t *c;
    json_array_foreach(json_object_get(g, "cases"), index, c)
    {
        const char *name = json_string_value(json_object_get(c, "tokenizer"));
        if (!loaded || strcmp(loaded, name) != 0) {
            tok_free(t);
            t = load_edited(edits, name);
            loaded = name;
        }
        const json_t *a = json_object_get(c, "text"), *b = json_object_get(c, "text_pair");
        const bool special = json_is_true(json_object_get(c, "add_special_tokens"));
        const size_t max = (size_t)json_integer_value(json_object_get(c, "max_length"));
        const bool is_left =
            strcmp(json_string_value(json_object_get(c, "direction")), "left") == 0;
        enc_error err = {0};
        size_t whole = 0;
        const int rc = tok_encode_dir(
            t, json_string_value(a), json_string_length(a),
            json_is_string(b) ? json_string_value(b) : NULL, json_string_length(b), special, max,
            is_left ? TOK_TRUNCATE_LEFT : TOK_TRUNCATE_RIGHT, &e, &whole, &err);
        ck_assert_msg(rc == 0, "%s, case %zu: %s", name, index, err.message);
        char what[64];
        snprintf(what, sizeof what, "%s, max %zu%s%s", is_left ? "left" : "right", max,
                 json_is_string(b) ? ", a pair" : "", special ? "" : ", no specials");
        if (json_is_true(json_object_get(c, "early_exit"))) {
            early_exit_case(t, c, &e, is_left, what);
            early++;
        } else {
            expect(name, what, c, &e, json_object_get(c, "encoding"));
        }
        ck_assert_msg(whole == (size_t)json_integer_value(json_object_get(c, "untruncated")),
                      "%s, %s, case %zu: %zu tokens uncut", name, what, index, whole);
        if (!is_left) { /* tok_encode is right truncation */
            ck_assert_int_eq(tok_encode(t, json_string_value(a), json_string_length(a),
                                        json_is_string(b) ? json_string_value(b) : NULL,
                                        json_string_length(b), special, max, &r, NULL, &err),
                             0);
            ck_assert_msg(r.n == e.n && memcmp(r.ids, e.ids, e.n * sizeof *e.ids) == 0 &&
                              memcmp(r.start, e.start, e.n * sizeof *e.start) == 0,
                          "%s, %s, case %zu: tok_encode differs", name, what, index);
        }
        left += is_left;
    }
    ck_assert_uint_gt(left, 100);
    ck_assert_uint_lt(early, 20);
    tok_encoding_free(&e);
    tok_encoding_free(&r);
    tok_free(t);
    json_decref(g);
}
END_TEST

START_TEST(test_invalid_utf8)
{
    tok_tokenizer *t = tokenizer_fixture("bert-uncased");
    tok_encoding e = {0};
    static const struct {
        const char *text;
        long at;
    } v[] = {
        {"ab\xff", 2},       {"\xc3", 0},
        {"a\xc0\xaf", 1},                                                  /* overlong */
        {"\xed\xa0\x80", 0}, /* a surrogate */ {"ok \xf4\x90\x80\x80", 3}, /* above U+10FFFF */
        {"\xe2\x82", 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        enc_error err = {0};
        ck_assert_int_eq(tok_utf8_invalid_at(v[i].text, strlen(v[i].text)), v[i].at);
        ck_assert_int_eq(
            tok_encode(t, v[i].text, strlen(v[i].text), NULL, 0, true, 0, &e, NULL, &err),
            ENC_EINVAL);
        char want[64];
        snprintf(want, sizeof want, "at byte %ld", v[i].at);
        ck_assert_msg(strstr(err.message, want), "%s", err.message);
    }
    ck_assert_int_eq(tok_utf8_invalid_at("h\xc3\xa9 \xf0\x9f\x98\x80", 8), -1);
    tok_encoding_free(&e);
    tok_free(t);
}
END_TEST

/* A component attnd does not implement is refused at load, named. */
START_TEST(test_refusals)
{
    static const struct {
        const char *json, *names;
    } v[] = {
        {"{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}", "WordLevel"},
        {"{\"normalizer\": {\"type\": \"Nope\"}, \"model\": " WORDPIECE "}", "Nope"},
        {"{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
         "\"Whitespace\"}, "
         "{\"type\": \"Nope\"}]}, \"model\": " WORDPIECE "}",
         "pre_tokenizer.pretokenizers[1]"},
        {"{\"post_processor\": {\"type\": \"Nope\"}, \"model\": " WORDPIECE "}", "post_processor"},
        {"{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0}, \"merges\": "
         "[]}}",
         "dropout"},
        {"[1, 2]", "object"},
        {"{\"model\": ", "line"},
        /* Hugging Face numbers "x" (not in the vocabulary) 3, the vocabulary's
         * size (its tokens, id 1 a hole), which is "[UNK]"'s id: two tokens,
         * one id */
        {"{\"added_tokens\": [{\"id\": 9, \"content\": \"x\"}], \"model\": {\"type\": "
         "\"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\", "
         "\"max_input_chars_per_word\": 100, \"vocab\": {\"a\": 0, \"b\": 2, \"[UNK]\": 3}}}",
         "numbers \"x\" 3 (the file says 9), the id of \"[UNK]\""},
        {"{\"added_tokens\": [{\"id\": 4, \"content\": \"x\"}, {\"id\": 4, \"content\": "
         "\"x\", \"lstrip\": true}], \"model\": " WORDPIECE "}",
         "added_tokens[1] repeats \"x\" with other options"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        enc_error err = {0};
        tok_tokenizer *t = tok_load_json(v[i].json, strlen(v[i].json), &err);
        ck_assert_msg(t == NULL, "case %zu loaded", i);
        ck_assert_msg(strstr(err.message, v[i].names), "case %zu: \"%s\" does not name %s", i,
                      err.message, v[i].names);
    }
    enc_error err = {0};
    ck_assert_ptr_null(tok_load(FIXTURES "/no-such/tokenizer.json", &err));
    ck_assert_int_eq(err.status, ENC_EIO);
}
END_TEST

/* The page shows tokens readably: the byte-level and Metaspace marks as the
 * spaces they stand for. */
START_TEST(test_display)
{
    char buf[64];
    tok_tokenizer *t = tokenizer_fixture("roberta");
    int32_t id = tok_token_id(t, "\xc4\xa0world");
    ck_assert_int_ge(id, 0);
    tok_token_display(t, id, buf, sizeof buf);
    ck_assert_str_eq(buf, " world");
    tok_free(t);
    t = tokenizer_fixture("xlmr");
    id = tok_token_id(t, "\xe2\x96\x81world");
    ck_assert_int_ge(id, 0);
    tok_token_display(t, id, buf, sizeof buf);
    ck_assert_str_eq(buf, " world");
    tok_free(t);
}
END_TEST

/* ---- hostile sizes, reuse, threads ------------------------------------------- */

static size_t code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* The texts' tokens (seq 0, in order) cover [0, chars) without a gap: the
 * first starts at 0, each starts no later than the ones before reach and
 * no earlier than the one before it, the last reach is the text's end;
 * every span within the text, every id in the vocabulary, and the
 * post-processor's tokens at [0, 0). */
static void expect_cover(const char *name, const char *what, const tok_tokenizer *t,
                         const tok_encoding *e, size_t chars)
{
    uint32_t reach = 0, last = 0;
    size_t model = 0;
    for (size_t i = 0; i < e->n; i++) {
        EXPECT(e->ids[i] >= 0 && (size_t)e->ids[i] < tok_id_count(t),
               "%s, %s: token %zu has id %d", name, what, i, e->ids[i]);
        EXPECT(e->start[i] <= e->stop[i] && e->stop[i] <= chars,
               "%s, %s: token %zu at [%u, %u) of %zu characters", name, what, i, e->start[i],
               e->stop[i], chars);
        if (e->special[i]) {
            EXPECT(e->start[i] == 0 && e->stop[i] == 0, "%s, %s: special %zu at [%u, %u)", name,
                   what, i, e->start[i], e->stop[i]);
            continue;
        }
        EXPECT(e->start[i] >= last && e->start[i] <= reach,
               "%s, %s: token %zu at [%u, %u) after one at %u, covered up to %u", name, what, i,
               e->start[i], e->stop[i], last, reach);
        last = e->start[i];
        if (e->stop[i] > reach)
            reach = e->stop[i];
        model++;
    }
    EXPECT(model > 0 && reach == chars, "%s, %s: %zu tokens cover [0, %u) of %zu characters", name,
           what, model, reach, chars);
}

enum { MIB = 1 << 20 };

/* A 1 MiB word: 'a' x 2^20; the CJK character U+4E2D run to 1 MiB of bytes
 * (349,525 characters); 2^20 letters a-z in a fixed pseudo-random order.
 * Each through WordPiece, byte-level BPE, Unigram and BPE with byte
 * fallback (the suite's timeout bounds the time; nothing is timed). */
static char *huge_text(int kind, size_t *len)
{
    char *s = malloc(MIB + 1);
    ck_assert_ptr_nonnull(s);
    if (kind == 0) {
        memset(s, 'a', MIB);
        *len = MIB;
    } else if (kind == 1) {
        size_t n = 0;
        while (n + 3 <= MIB) {
            memcpy(s + n, "\xe4\xb8\xad", 3);
            n += 3;
        }
        *len = n;
    } else {
        uint32_t x = 12345;
        for (size_t i = 0; i < MIB; i++) {
            x = x * 1103515245u + 12345u;
            s[i] = (char)('a' + (x >> 16) % 26);
        }
        *len = MIB;
    }
    s[*len] = '\0';
    return s;
}

static const char *const HUGE_NAMES[] = {"bert-uncased", "roberta", "xlmr", "llama-bpe"};
static const char *const HUGE_KINDS[] = {"'a' x 2^20", "U+4E2D to 1 MiB", "2^20 letters a-z"};

START_TEST(test_huge_word)
{
    const char *name = HUGE_NAMES[_i / 3];
    const int kind = _i % 3;
    tok_tokenizer *t = tokenizer_fixture(name);
    size_t len;
    char *s = huge_text(kind, &len);
    const size_t chars = code_points(s, len);
    tok_encoding e = {0};
    enc_error err = {0};
    size_t whole = 0;
    EXPECT(tok_encode(t, s, len, NULL, 0, true, 0, &e, &whole, &err) == 0, "%s, %s: %s", name,
           HUGE_KINDS[kind], err.message);
    ck_assert_uint_eq(whole, e.n);
    expect_cover(name, HUGE_KINDS[kind], t, &e, chars);
    if (strcmp(name, "bert-uncased") == 0) {
        const int32_t unk = tok_token_id(t, "[UNK]");
        if (kind == 1) {
            /* a CJK character is a word of its own: one token each, [i, i + 1) */
            ck_assert_uint_eq(e.n, chars + 2);
            for (size_t i = 1; i + 1 < e.n; i++)
                EXPECT(e.ids[i] == e.ids[1] && e.start[i] == i - 1 && e.stop[i] == i,
                       "token %zu: %d at [%u, %u)", i, e.ids[i], e.start[i], e.stop[i]);
        } else {
            /* one word over max_input_chars_per_word: [CLS] [UNK] [SEP], the
             * [UNK] spanning the whole text */
            ck_assert_uint_eq(e.n, 3);
            ck_assert_int_eq(e.ids[1], unk);
            ck_assert_uint_eq(e.start[1], 0);
            ck_assert_uint_eq(e.stop[1], chars);
        }
    }
    /* truncated to 8: the first 8 - specials of the same tokens */
    tok_encoding c = {0};
    ck_assert_int_eq(tok_encode(t, s, len, NULL, 0, true, 8, &c, &whole, &err), 0);
    ck_assert_uint_eq(whole, e.n);
    ck_assert_uint_eq(c.n, e.n < 8 ? e.n : 8);
    const size_t added = tok_added_special(t, false);
    for (size_t i = 0, j = 0; i < c.n; i++) {
        if (c.special[i])
            continue;
        while (e.special[j])
            j++;
        EXPECT(c.ids[i] == e.ids[j] && c.start[i] == e.start[j] && c.stop[i] == e.stop[j],
               "%s: truncated token %zu differs", name, i);
        j++;
    }
    size_t specials = 0;
    for (size_t i = 0; i < c.n; i++)
        specials += c.special[i];
    ck_assert_uint_eq(specials, added);
    tok_encoding_free(&c);
    tok_encoding_free(&e);
    free(s);
    tok_free(t);
}
END_TEST

/* One result, copied. */
typedef struct {
    bool done;
    int rc;
    size_t n;
    int32_t *ids;
    uint32_t *start, *stop;
    uint8_t *special, *seq;
} saved;

static void save(saved *v, int rc, const tok_encoding *e)
{
    v->done = true;
    v->rc = rc;
    v->n = rc == 0 ? e->n : 0;
    const size_t n = v->n ? v->n : 1;
    v->ids = malloc(n * sizeof *v->ids);
    v->start = malloc(n * sizeof *v->start);
    v->stop = malloc(n * sizeof *v->stop);
    v->special = malloc(n);
    v->seq = malloc(n);
    ck_assert(v->ids && v->start && v->stop && v->special && v->seq);
    if (v->n) {
        memcpy(v->ids, e->ids, v->n * sizeof *v->ids);
        memcpy(v->start, e->start, v->n * sizeof *v->start);
        memcpy(v->stop, e->stop, v->n * sizeof *v->stop);
        memcpy(v->special, e->special, v->n);
        memcpy(v->seq, e->seq, v->n);
    }
}

static void saved_free(saved *v)
{
    free(v->ids);
    free(v->start);
    free(v->stop);
    free(v->special);
    free(v->seq);
}

/* e (from rc) equals v: the first difference, or NULL. */
static const char *same(const saved *v, int rc, const tok_encoding *e)
{
    if (rc != v->rc)
        return "status";
    if (rc != 0)
        return NULL;
    if (e->n != v->n)
        return "the number of tokens";
    for (size_t i = 0; i < e->n; i++) {
        if (e->ids[i] != v->ids[i])
            return "ids";
        if (e->start[i] != v->start[i] || e->stop[i] != v->stop[i])
            return "offsets";
        if (e->special[i] != v->special[i] || e->seq[i] != v->seq[i])
            return "specials or sequence ids";
    }
    return NULL;
}

/* Tiny texts (and one longer, so the reused arrays shrink in use), an
 * invalid one among them. */
static const char *const TINY[] = {
    "a",
    "\xc3\xa9",         /* é */
    "\xf0\x9f\x98\x80", /* 😀 */
    "",
    " ",
    "ab",
    "\xe4\xb8\xad", /* 中 */
    "e\xcc\x81",    /* e + combining acute */
    "\xcc\x81",     /* a lone combining mark */
    "\xe2\x80\x8d", /* ZWJ */
    "[CLS]",
    "<s>",
    "a b",
    "x\xf0\x9f\x98\x80y",
    "Hello, world! The quick brown fox jumps over the lazy dog; \xe4\xb8\xad\xe6\x96\x87 "
    "caf\xc3\xa9 \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 antidisestablishmentarianism",
    "bad \xc3", /* invalid: ENC_EINVAL every time */
};
enum { N_TINY = sizeof TINY / sizeof TINY[0], N_REUSE = 100000 };

/* 100,000 encodings one after another into one tok_encoding (its arrays
 * reused, grown and left larger than needed), over the four kinds of model,
 * with and without specials, single and paired: each result equals the
 * first encoding of the same input into a fresh tok_encoding.  Under
 * valgrind and ASan this is the leak and reuse test. */
START_TEST(test_reuse_many)
{
    tok_tokenizer *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = tokenizer_fixture(HUGE_NAMES[k]);
    static saved first[4][N_TINY][2][2];
    memset(first, 0, sizeof first);
    tok_encoding e = {0};
    for (long i = 0; i < N_REUSE; i++) {
        const int k = (int)(i % 4), x = (int)(i / 4 % N_TINY), special = (int)(i / 7 % 2),
                  pair = (int)(i % 3 == 2);
        const char *a = TINY[x], *b = pair ? TINY[(x + 1) % N_TINY] : NULL;
        enc_error err = {0};
        saved *v = &first[k][x][special][pair];
        if (!v->done) {
            tok_encoding fresh = {0};
            enc_error ferr = {0};
            int rc = tok_encode(t[k], a, strlen(a), b, b ? strlen(b) : 0, special, 0, &fresh, NULL,
                                &ferr);
            EXPECT(rc == 0 || rc == ENC_EINVAL, "%s \"%s\": %s", HUGE_NAMES[k], a, ferr.message);
            save(v, rc, &fresh);
            tok_encoding_free(&fresh);
        }
        int rc = tok_encode(t[k], a, strlen(a), b, b ? strlen(b) : 0, special, 0, &e, NULL, &err);
        const char *d = same(v, rc, &e);
        EXPECT(d == NULL, "%s, encoding %ld \"%s\"%s%s: %s differ from the first encoding",
               HUGE_NAMES[k], i, a, b ? " + " : "", b ? b : "", d);
        EXPECT(rc == 0 || strstr(err.message, "byte"), "%s", err.message);
    }
    for (int k = 0; k < 4; k++) {
        for (int x = 0; x < N_TINY; x++)
            for (int s = 0; s < 2; s++)
                for (int p = 0; p < 2; p++) {
                    ck_assert(first[k][x][s][p].done);
                    saved_free(&first[k][x][s][p]);
                }
        tok_free(t[k]);
    }
    tok_encoding_free(&e);
}
END_TEST

/* Threads sharing one tokenizer: each encodes its own share of texts.json's
 * texts and pairs, round after round, and every result must equal the one
 * the main thread got alone. */
enum { N_THREADS = 4, ROUNDS = 20 };

typedef struct {
    const tok_tokenizer *t;
    json_t *texts, *pairs;
    saved *alone; /* texts then pairs, with specials */
    int which;
    const char *failed;
    size_t failed_at;
} share;

static int encode_item(const tok_tokenizer *t, json_t *texts, json_t *pairs, size_t i,
                       tok_encoding *e)
{
    enc_error err = {0};
    const size_t nt = json_array_size(texts);
    if (i < nt) {
        const json_t *v = json_array_get(texts, i);
        return tok_encode(t, json_string_value(v), json_string_length(v), NULL, 0, true, 0, e, NULL,
                          &err);
    }
    const json_t *p = json_array_get(pairs, i - nt), *a = json_object_get(p, "text"),
                 *b = json_object_get(p, "text_pair");
    return tok_encode(t, json_string_value(a), json_string_length(a), json_string_value(b),
                      json_string_length(b), true, 0, e, NULL, &err);
}

static void *share_run(void *arg)
{
    share *s = arg;
    tok_encoding e = {0};
    const size_t n = json_array_size(s->texts) + json_array_size(s->pairs);
    for (int r = 0; r < ROUNDS && !s->failed; r++)
        for (size_t i = (size_t)s->which; i < n && !s->failed; i += N_THREADS) {
            int rc = encode_item(s->t, s->texts, s->pairs, i, &e);
            const char *d = same(&s->alone[i], rc, &e);
            if (d) {
                s->failed = d;
                s->failed_at = i;
            }
        }
    tok_encoding_free(&e);
    return NULL;
}

START_TEST(test_threads_share)
{
    const char *name = NAMES[_i];
    tok_tokenizer *t = tokenizer_fixture(name);
    json_t *g = tokenizer_fixture_json(".", "texts.json");
    json_t *texts = json_object_get(g, "texts"), *pairs = json_object_get(g, "pairs");
    const size_t n = json_array_size(texts) + json_array_size(pairs);
    saved *alone = calloc(n, sizeof *alone);
    ck_assert_ptr_nonnull(alone);
    tok_encoding e = {0};
    for (size_t i = 0; i < n; i++) {
        int rc = encode_item(t, texts, pairs, i, &e);
        EXPECT(rc == 0, "%s: item %zu refused", name, i);
        save(&alone[i], rc, &e);
    }
    share s[N_THREADS];
    pthread_t th[N_THREADS];
    for (int k = 0; k < N_THREADS; k++) {
        s[k] = (share){.t = t, .texts = texts, .pairs = pairs, .alone = alone, .which = k};
        ck_assert_int_eq(pthread_create(&th[k], NULL, share_run, &s[k]), 0);
    }
    for (int k = 0; k < N_THREADS; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    for (int k = 0; k < N_THREADS; k++)
        EXPECT(!s[k].failed, "%s: thread %d, item %zu: %s differ from one thread's", name, k,
               s[k].failed_at, s[k].failed);
    for (size_t i = 0; i < n; i++)
        saved_free(&alone[i]);
    free(alone);
    tok_encoding_free(&e);
    json_decref(g);
    tok_free(t);
}
END_TEST

Suite *tokenizer_suite(void)
{
    Suite *s = timed_suite("tokenizer");
    TCase *tc = timed_case(s, "tokenizer", 120);
    tcase_add_loop_test(tc, test_reference, 0, N_NAMES);
    tcase_add_test(tc, test_offsets_wordpiece);
    tcase_add_test(tc, test_offsets_byte_level);
    tcase_add_test(tc, test_offsets_metaspace);
    tcase_add_loop_test(tc, test_offsets_bounded, 0, N_NAMES);
    tcase_add_test(tc, test_truncation);
    tcase_add_test(tc, test_truncation_reference);
    tcase_add_test(tc, test_invalid_utf8);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_display);
    /* sizes and threads: their own case, with room under valgrind */
    TCase *hostile = timed_case(s, "hostile", 300);
    tcase_add_loop_test(hostile, test_huge_word, 0, 3 * 4);
    tcase_add_test(hostile, test_reuse_many);
    tcase_add_loop_test(hostile, test_threads_share, 0, N_NAMES);
    return s;
}
