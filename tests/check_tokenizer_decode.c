/* check_tokenizer_decode.c - core/tokenizer/'s decoding (decode.c,
 * roles.c) against Hugging Face's: ids decoded back to text as Hugging
 * Face decodes them for every test tokenizer (reference.json) and every
 * decoder, decodes worked out by hand, clean_up_tokenization_spaces,
 * tokenizer_config.json's roles (the unk, pad and mask tokens), ids to
 * tokens, and the refusals. */
#include "tokenizer/tokenizer.h"

#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "tok_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tok_decode of ids (a JSON list) against Hugging Face's want, byte for
 * byte (mark points only on failure: there are thousands). */
static void expect_decoded(const char *name, const char *what, const tok_tokenizer *t,
                           const json_t *ids, bool skip, const json_t *want)
{
    const size_t n = json_array_size(ids);
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    char *got;
    size_t len;
    enc_error err = {0};
    if (tok_decode(t, v, n, skip, &got, &len, &err) != 0)
        ck_abort_msg("%s, %s: %s", name, what, err.message);
    if (!json_is_string(want) || len != json_string_length(want) ||
        memcmp(got, json_string_value(want), len) != 0 || got[len] != '\0') {
        char *list = json_dumps(ids, JSON_COMPACT);
        ck_abort_msg("%s, %s, skip_special %d, ids %.300s: \"%.300s\" (%zu bytes); Hugging "
                     "Face: \"%.300s\" (%zu bytes)",
                     name, what, skip, list, got, len, json_string_value(want),
                     json_string_length(want));
    }
    free(got);
    free(v);
}

/* An id list of "decodes" or "decoders": decoded_skip is decoded where
 * the file leaves it out. */
static void expect_decodes(const char *name, const char *what, const tok_tokenizer *t,
                           const json_t *d)
{
    const json_t *skip = json_object_get(d, "decoded_skip");
    expect_decoded(name, what, t, json_object_get(d, "ids"), false, json_object_get(d, "decoded"));
    expect_decoded(name, what, t, json_object_get(d, "ids"), true,
                   skip ? skip : json_object_get(d, "decoded"));
}

/* The with_special ids of every text and pair of reference.json decoded
 * (decode(ids, false) and decode(ids, true)), then its id lists at the
 * decoders' edges: every id, prefixes cutting characters into bytes, ids
 * reversed, the added tokens, none. */
START_TEST(test_decode_reference)
{
    const char *name = NAMES[_i];
    tok_tokenizer *t = tokenizer_fixture(name);
    json_t *g = tokenizer_fixture_json(name, "reference.json");
    size_t index, checked = 0;
    json_t *item;
    for (int pairs = 0; pairs < 2; pairs++)
        json_array_foreach(json_object_get(g, pairs ? "pairs" : "items"), index, item)
        {
            const json_t *ids = json_object_get(json_object_get(item, "with_special"), "ids");
            expect_decoded(name, json_string_value(json_object_get(item, "text")), t, ids, false,
                           json_object_get(item, "decoded"));
            expect_decoded(name, json_string_value(json_object_get(item, "text")), t, ids, true,
                           json_object_get(item, "decoded_skip"));
            checked++;
        }
    json_array_foreach(json_object_get(g, "decodes"), index, item)
    {
        expect_decodes(name, "decodes", t, item);
        checked++;
    }
    ck_assert_uint_gt(checked, 120);
    json_decref(g);
    tok_free(t);
}
END_TEST

/* The tokenizers whose reference.json decodes with other decoders. */
static const char *const DECODER_NAMES[] = {"bert-uncased", "bert-cased", "xlmr", "llama-bpe",
                                            "roberta"};

/* The tokenizer.json of name with its decoder replaced by another of
 * reference.json's "decoders" (every type and option), against Hugging
 * Face's: each id list decoded; a decoder Hugging Face refuses to load
 * loads, and tok_decode refuses it, naming it. */
START_TEST(test_decode_decoders)
{
    const char *name = DECODER_NAMES[_i];
    json_t *g = tokenizer_fixture_json(name, "reference.json"),
           *root = tokenizer_fixture_json(name, "tokenizer.json");
    size_t index, checked = 0;
    json_t *c;
    json_array_foreach(json_object_get(g, "decoders"), index, c)
    {
        json_t *dec = json_object_get(c, "decoder");
        char *what = json_dumps(dec, JSON_COMPACT | JSON_ENCODE_ANY);
        ck_assert_int_eq(json_object_set(root, "decoder", dec), 0);
        char *text = json_dumps(root, JSON_COMPACT);
        enc_error err = {0};
        tok_tokenizer *t = tok_load_json(text, strlen(text), &err);
        ck_assert_msg(t != NULL, "%s, decoder %s: %s", name, what, err.message);
        const json_t *refused = json_object_get(c, "refused");
        if (refused) {
            char unset, *out = &unset;
            size_t len = 1;
            int rc = tok_decode(t, (const int32_t[]){1}, 1, false, &out, &len, &err);
            ck_assert_msg(rc == ENC_EINVAL || rc == ENC_EFORMAT,
                          "%s, decoder %s (Hugging Face: %s) decoded", name, what,
                          json_string_value(refused));
            ck_assert_msg(strstr(err.message, "decoder"), "%s: \"%s\" does not name the decoder",
                          what, err.message);
            ck_assert(out == NULL && len == 0);
        }
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(c, "decodes"), k, d)
        {
            expect_decodes(name, what, t, d);
            checked++;
        }
        tok_free(t);
        free(text);
        free(what);
    }
    ck_assert_uint_gt(checked, 10);
    json_decref(root);
    json_decref(g);
}
END_TEST

/* Decoding no fixture reaches, by hand. */
START_TEST(test_decode_by_hand)
{
    static const char json[] =
        "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
        "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, "
        "\"vocab\": {\"[UNK]\": 0, \"<0x+A>\": 1, \"<0x41>\": 2, \"<0xe2>\": 3, \"<0x82>\": 4, "
        "\"<0xAC>\": 5, \"<0x4g>\": 6, \"<0X41>\": 7, \"s\": 8}}, \"decoder\": %s}";
    static const struct {
        const char *decoder;
        int32_t ids[16];
        size_t n;
        const char *want;
    } v[] = {
        /* u8::from_str_radix takes "+A" for 10: "\nA\u20ac" and a cut
         * "\u20ac", one U+FFFD for each of the 7 bytes (Hugging Face's
         * tokenizers 0.23.2 gives this); "<0x4g>", "<0X41>" are no bytes */
        {"{\"type\": \"ByteFallback\"}",
         {1, 2, 3, 4, 5, 3, 4, 8, 3, 5, 6, 7, 2},
         13,
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
         "s\xef\xbf\xbd\xef\xbf\xbd<0x4g><0X41>A"},
        {"{\"type\": \"ByteFallback\"}", {1, 2, 3, 4, 5}, 5, "\nA\xe2\x82\xac"},
        /* Strip past a token's start, where the crate panics: the token
         * goes */
        {"{\"type\": \"Strip\", \"content\": \"s\", \"start\": 1, \"stop\": 1}",
         {8, 2, 8},
         3,
         "<0x41>"},
        {"{\"type\": \"Strip\", \"content\": \"s\", \"start\": 0, \"stop\": 3}", {8, 8}, 2, ""},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char text[1024], *out;
        size_t len;
        enc_error err = {0};
        snprintf(text, sizeof text, json, v[i].decoder);
        tok_tokenizer *t = tok_load_json(text, strlen(text), &err);
        ck_assert_msg(t != NULL, "case %zu: %s", i, err.message);
        ck_assert_msg(tok_decode(t, v[i].ids, v[i].n, false, &out, &len, &err) == 0, "case %zu: %s",
                      i, err.message);
        ck_assert_msg(len == strlen(v[i].want) && strcmp(out, v[i].want) == 0,
                      "case %zu: \"%s\", expected \"%s\"", i, out, v[i].want);
        free(out);
        tok_free(t);
    }
}
END_TEST

/* tok_decode's refusals: an id with no token, by its index; a decoder not
 * supported, only when decoding. */
/* transformers' clean_up_tokenization, a worked example: each
 * replacement in its order (" ' " before " 's", so "it 's ' quoted" keeps
 * its space before the closing quote). */
START_TEST(test_clean_up)
{
    char s[] = "Hello , world ! Is n't it ? I 'm here , it 's ' quoted ' . We 've we 're";
    const char *want = "Hello, world! Isn't it? I'm here, it's'quoted '. We've we're";
    ck_assert_uint_eq(tok_clean_up(s, strlen(s)), strlen(want));
    ck_assert_str_eq(s, want);
    char empty[] = "";
    ck_assert_uint_eq(tok_clean_up(empty, 0), 0);
}
END_TEST

/* tokenizer_config.json's roles over tokenizer.json's: the defaults (the
 * model's unk token, the specials spelled [PAD] / <mask>), the file's
 * strings and AddedToken objects, null, and the refusals naming the key
 * (which leave the roles as they were); its model_max_length, and the
 * values that say none. */
START_TEST(test_roles)
{
    tok_tokenizer *t = tokenizer_fixture("bert-uncased");
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_UNK), tok_token_id(t, "[UNK]"));
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_PAD), tok_token_id(t, "[PAD]"));
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_MASK), tok_token_id(t, "[MASK]"));
    ck_assert(tok_role_id(t, TOK_ROLE_MASK) >= 0 && !tok_clean_up_spaces(t));
    json_t *cfg = tokenizer_fixture_json("bert-uncased", "tokenizer_config.json");
    char *text = json_dumps(cfg, 0);
    enc_error err = {0};
    ck_assert_uint_eq(tok_model_max_length(t), 0);
    ck_assert_int_eq(tok_read_config(t, text, strlen(text), &err), 0);
    ck_assert(tok_clean_up_spaces(t));
    ck_assert_uint_eq(tok_model_max_length(t), 512);
    free(text);
    json_decref(cfg);
    /* model_max_length: transformers' "none" (int(1e30), no int64) and null
     * are no length; a file with them loads */
    static const struct {
        const char *cfg;
        size_t want;
    } lengths[] = {
        {"{\"model_max_length\": 1000000000000000019884624838656}", 0},
        {"{\"model_max_length\": 128}", 128},
        {"{\"model_max_length\": 9223372036854775807, \"pad_token\": \"[PAD]\"}", 0},
        {"{\"model_max_length\": 256.0}", 256},
        {"{\"model_max_length\": null}", 256}, /* kept */
    };
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        ck_assert_msg(tok_read_config(t, lengths[i].cfg, strlen(lengths[i].cfg), &err) == 0,
                      "%s: %s", lengths[i].cfg, err.message);
        ck_assert_msg(tok_model_max_length(t) == lengths[i].want, "%s: %zu", lengths[i].cfg,
                      tok_model_max_length(t));
    }
    static const struct {
        const char *cfg, *err;
    } cases[] = {
        {"{\"mask_token\": {\"content\": \"[SEP]\", \"lstrip\": true}}", NULL},
        {"{\"pad_token\": null}", NULL},
        {"{\"mask_token\": \"<mask>\"}", "mask_token '<mask>' is not a token of tokenizer.json"},
        {"{\"unk_token\": 3}", "unk_token must be a string or an AddedToken"},
        {"{\"clean_up_tokenization_spaces\": \"yes\"}", "clean_up_tokenization_spaces must be"},
        {"{\"model_max_length\": 0}", "model_max_length must be a positive integer"},
        {"{\"model_max_length\": 12.5}", "model_max_length must be a positive integer"},
        {"{\"model_max_length\": \"512\"}", "model_max_length must be a positive integer"},
        {"[1]", "must hold an object"},
        {"{", "tokenizer_config.json:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        enc_error_clear(&err);
        const int rc = tok_read_config(t, cases[i].cfg, strlen(cases[i].cfg), &err);
        if (!cases[i].err) {
            ck_assert_msg(rc == 0, "%s: %s", cases[i].cfg, err.message);
            continue;
        }
        ck_assert_msg(rc < 0 && strstr(err.message, cases[i].err), "%s: %s", cases[i].cfg,
                      err.message);
    }
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_MASK), tok_token_id(t, "[SEP]"));
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_PAD), -1);
    tok_free(t);
    t = tokenizer_fixture("roberta");
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_MASK), tok_token_id(t, "<mask>"));
    ck_assert_int_eq(tok_role_id(t, TOK_ROLE_PAD), tok_token_id(t, "<pad>"));
    tok_free(t);
}
END_TEST

/* The reference entry's with_special encoding ws with the template's
 * specials in place of its own, into want and types: each text's tokens
 * (special_tokens_mask 0; a pair's by sequence_ids), after bos where
 * add_bos and before eos where add_eos.  Returns their number. */
static size_t bos_eos_expected(const json_t *ws, int32_t bos, bool add_bos, int32_t eos,
                               bool add_eos, int32_t *want, uint8_t *types)
{
    const json_t *ids = json_object_get(ws, "ids"), *seqs = json_object_get(ws, "sequence_ids"),
                 *mask = json_object_get(ws, "special_tokens_mask");
    const int texts = json_is_array(seqs) ? 2 : 1;
    size_t n = 0;
    for (int s = 0; s < texts; s++) {
        if (add_bos) {
            types[n] = (uint8_t)s;
            want[n++] = bos;
        }
        for (size_t i = 0; i < json_array_size(ids); i++) {
            const json_t *q = json_array_get(seqs, i);
            if (json_integer_value(json_array_get(mask, i)) == 0 &&
                (texts == 1 || (json_is_integer(q) && json_integer_value(q) == s))) {
                types[n] = (uint8_t)s;
                want[n++] = (int32_t)json_integer_value(json_array_get(ids, i));
            }
        }
        if (add_eos) {
            types[n] = (uint8_t)s;
            want[n++] = eos;
        }
    }
    return n;
}

/* transformers' LlamaTokenizerFast (and CodeLlama's, Gemma's) rebuilds the
 * post-processor from tokenizer_config.json's add_bos_token (default true)
 * and add_eos_token (default false): [bos] $A [eos], [bos] $B [eos] for a
 * pair's second (type 1).  Checked on the llama-bpe fixture against Hugging
 * Face's own ids of every text and pair (reference.json, whose template is
 * bos alone) with the specials placed by that rule; a class that does not
 * rebuild keeps tokenizer.json's; the refusals name the key. */
START_TEST(test_bos_eos_template)
{
    json_t *ref = tokenizer_fixture_json("llama-bpe", "reference.json");
    static const struct {
        const char *cfg;
        bool bos, eos; /* the template the file should give */
    } cases[] = {
        {"{\"tokenizer_class\": \"LlamaTokenizer\", \"add_eos_token\": true}", true, true},
        {"{\"tokenizer_class\": \"LlamaTokenizerFast\", \"add_bos_token\": false, "
         "\"add_eos_token\": true, \"eos_token\": {\"content\": \"</s>\"}}",
         false, true},
        {"{\"tokenizer_class\": \"CodeLlamaTokenizer\", \"add_bos_token\": false}", false, false},
        {"{\"tokenizer_class\": \"LlamaTokenizer\"}", true, false},
        /* not rebuilt: tokenizer.json's bos alone */
        {"{\"tokenizer_class\": \"PreTrainedTokenizerFast\", \"add_eos_token\": true}", true,
         false},
    };
    enc_error err = {0};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tok_tokenizer *t = tokenizer_fixture("llama-bpe");
        const int32_t bos = tok_token_id(t, "<s>"), eos = tok_token_id(t, "</s>");
        ck_assert_msg(tok_read_config(t, cases[c].cfg, strlen(cases[c].cfg), &err) == 0, "%s: %s",
                      cases[c].cfg, err.message);
        ck_assert_uint_eq(tok_added_special(t, false), cases[c].bos + cases[c].eos);
        ck_assert_uint_eq(tok_added_special(t, true), 2 * (cases[c].bos + cases[c].eos));
        size_t checked = 0;
        for (int p = 0; p < 2; p++) {
            const json_t *list = json_object_get(ref, p ? "pairs" : "items");
            for (size_t i = 0; i < json_array_size(list); i++) {
                const json_t *it = json_array_get(list, i);
                const char *a = json_string_value(json_object_get(it, "text"));
                const char *b = p ? json_string_value(json_object_get(it, "text_pair")) : NULL;
                const json_t *ws = json_object_get(it, "with_special");
                const size_t m = json_array_size(json_object_get(ws, "ids")) + 4;
                int32_t *want = xcalloc(m, sizeof *want);
                uint8_t *types = xcalloc(m, 1);
                const size_t n =
                    bos_eos_expected(ws, bos, cases[c].bos, eos, cases[c].eos, want, types);
                tok_encoding e = {0};
                ck_assert_int_eq(
                    tok_encode(t, a, strlen(a), b, b ? strlen(b) : 0, true, 0, &e, NULL, &err), 0);
                ck_assert_msg(e.n == n, "%s: '%s': %zu ids, want %zu", cases[c].cfg, a, e.n, n);
                for (size_t k = 0; k < n; k++)
                    ck_assert_msg(e.ids[k] == want[k] && e.type_ids[k] == types[k],
                                  "%s: '%s' id %zu: %d (type %u), want %d (type %u)", cases[c].cfg,
                                  a, k, e.ids[k], e.type_ids[k], want[k], types[k]);
                tok_encoding_free(&e);
                free(want);
                free(types);
                checked++;
            }
        }
        ck_assert_uint_ge(checked, 10);
        tok_free(t);
    }
    static const struct {
        const char *cfg, *err;
    } bad[] = {
        {"{\"tokenizer_class\": \"LlamaTokenizer\", \"add_eos_token\": \"yes\"}",
         "tokenizer_config.json: add_eos_token must be true or false"},
        {"{\"tokenizer_class\": \"LlamaTokenizer\", \"add_eos_token\": true, \"eos_token\": null}",
         "tokenizer_config.json: add_eos_token true needs eos_token (LlamaTokenizer adds it to "
         "every text)"},
        /* Gemma's default tokens, which this vocabulary has not */
        {"{\"tokenizer_class\": \"GemmaTokenizer\"}",
         "tokenizer_config.json: bos_token '<bos>' is not a token of tokenizer.json"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        tok_tokenizer *t = tokenizer_fixture("llama-bpe");
        enc_error_clear(&err);
        ck_assert_int_lt(tok_read_config(t, bad[c].cfg, strlen(bad[c].cfg), &err), 0);
        ck_assert_msg(strstr(err.message, bad[c].err), "%s: %s", bad[c].cfg, err.message);
        tok_free(t);
    }
    json_decref(ref);
}
END_TEST

/* Decoder.decode over token strings (convert_tokens_to_string): WordPiece
 * joins "##" pieces and spaces words, as decode of their ids does. */
START_TEST(test_decode_tokens)
{
    tok_tokenizer *t = tokenizer_fixture("bert-uncased");
    const char *toks[] = {"the", "##re", "is", "a", "[UNK]", ","};
    int32_t ids[6];
    for (size_t i = 0; i < 6; i++)
        ck_assert_int_ge(ids[i] = tok_token_id(t, toks[i]), 0);
    char *a = NULL, *b = NULL;
    size_t la, lb;
    enc_error err = {0};
    ck_assert_int_eq(tok_decode_tokens(t, toks, 6, &a, &la, &err), 0);
    ck_assert_int_eq(tok_decode(t, ids, 6, false, &b, &lb, &err), 0);
    ck_assert_str_eq(a, "there is a [UNK],");
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    tok_free(t);
}
END_TEST

START_TEST(test_decode_errors)
{
    tok_tokenizer *t = tokenizer_fixture("bert-uncased");
    char *out;
    size_t len;
    enc_error err = {0};
    ck_assert_int_eq(tok_decode(t, (const int32_t[]){5, 3162, 6}, 3, false, &out, &len, &err),
                     ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "ids[1]: 3162 is out of range"), "%s", err.message);
    ck_assert(out == NULL && len == 0);
    enc_error_clear(&err);
    ck_assert_int_eq(tok_decode(t, (const int32_t[]){-1}, 1, true, &out, &len, &err), ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "ids[0]: -1"), "%s", err.message);
    enc_error_clear(&err);
    ck_assert_int_eq(tok_decode(t, NULL, 0, false, &out, &len, &err), 0);
    ck_assert(out != NULL && len == 0 && out[0] == '\0');
    free(out);
    tok_free(t);
    /* a hole in the vocabulary (Hugging Face leaves such ids out) */
    static const char holed[] =
        "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
        "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, "
        "\"vocab\": {\"a\": 0, \"b\": 2, \"[UNK]\": 3}}}";
    t = tok_load_json(holed, strlen(holed), &err);
    ck_assert_msg(t != NULL, "%s", err.message);
    ck_assert_int_eq(tok_decode(t, (const int32_t[]){0, 1}, 2, false, &out, &len, &err),
                     ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "ids[1]: no token has id 1"), "%s", err.message);
    tok_free(t);

    static const struct {
        const char *decoder, *message;
        int status;
    } v[] = {
        {"{\"type\": \"Nope\"}", "the tokenizer's decoder 'Nope' is not supported", ENC_EINVAL},
        {"{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Fuse\"}, {\"type\": \"Nope\"}]}",
         "the tokenizer's decoder 'Nope' is not supported (decoder.decoders[1])", ENC_EINVAL},
        {"{\"type\": \"WordPiece\", \"prefix\": \"##\"}", "decoder.cleanup is missing",
         ENC_EFORMAT},
        {"{\"type\": \"Strip\", \"content\": \"ab\", \"start\": 0, \"stop\": 0}",
         "decoder.content must be one character", ENC_EFORMAT},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"decoder\": %s, \"model\": " WORDPIECE "}", v[i].decoder);
        enc_error_clear(&err);
        t = tok_load_json(json, strlen(json), &err);
        ck_assert_msg(t != NULL, "case %zu: %s", i, err.message);
        ck_assert_int_eq(tok_decode(t, (const int32_t[]){0}, 1, false, &out, &len, &err),
                         v[i].status);
        ck_assert_str_eq(err.message, v[i].message);
        tok_free(t);
    }
}
END_TEST

Suite *tokenizer_decode_suite(void)
{
    Suite *s = timed_suite("tokenizer_decode");
    TCase *tc = timed_case(s, "decode", 120);
    tcase_add_loop_test(tc, test_decode_reference, 0, N_NAMES);
    tcase_add_loop_test(tc, test_decode_decoders, 0,
                        sizeof DECODER_NAMES / sizeof DECODER_NAMES[0]);
    tcase_add_test(tc, test_decode_by_hand);
    tcase_add_test(tc, test_decode_errors);
    tcase_add_test(tc, test_clean_up);
    tcase_add_test(tc, test_roles);
    tcase_add_test(tc, test_bos_eos_template);
    tcase_add_test(tc, test_decode_tokens);
    return s;
}
