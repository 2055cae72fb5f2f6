/* check_v1_requests.c - what a /v1/encode request may say and what it
 * gets: every body of tests/fixtures/requests/invalid/
 * (tools/fixtures/make_invalid_requests.py) with the status and message it must get;
 * defaults and nulls, the mask's forms, attention_layers and the limits,
 * the response's details; and every truncation and many byte changes of
 * valid bodies (a clear error, never a crash). */
#include "v1_util.h"
#include "codec/base64.h"
#include "suites.h"
#include "timing.h"

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_invalid_requests)
{
    json_error_t je;
    json_t *expect = json_load_file(INVALID_DIR "/expected.json", 0, &je);
    ck_assert_msg(expect != NULL, "expected.json: %s", je.text);
    enc_hparams hp;
    api_ctx lim = {0};
    invalid_config(json_object_get(expect, "_config"), &hp, &lim);

    DIR *d = opendir(INVALID_DIR);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int checked = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "expected.json") == 0)
            continue;
        const json_t *want = json_object_get(expect, e->d_name);
        ck_assert_msg(json_is_object(want), "%s has no entry in expected.json", e->d_name);
        const int status = (int)json_integer_value(json_object_get(want, "status"));
        const char *msg = json_string_value(json_object_get(want, "message"));
        ck_assert_msg((status == 400 || status == 413) && msg && *msg,
                      "expected.json: bad entry for %s", e->d_name);
        char path[1024];
        size_t size;
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, e->d_name);
        char *body = read_file(path, &size);
        encode_request req;
        api_error err = {0};
        const int rc = v1_request_parse(&req, body, size, &hp, &lim, &err);
        encode_request_free(&req);
        free(body);
        ck_assert_msg(rc < 0, "%s was accepted", e->d_name);
        ck_assert_msg(api_error_status(err.kind) == status, "%s: status %d, want %d (%s)",
                      e->d_name, api_error_status(err.kind), status, err.message);
        ck_assert_msg(strstr(err.message, msg) != NULL, "%s: message '%s' lacks '%s'", e->d_name,
                      err.message, msg);
        ck_assert_msg(printable(err.message), "%s: message is not printable ASCII", e->d_name);
        checked++;
    }
    closedir(d);
    /* ... and every expectation has its file. */
    const char *key;
    json_t *v;
    int entries = 0;
    json_object_foreach(expect, key, v)
    {
        if (key[0] == '_')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, key);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "expected.json names %s, which does not exist", key);
        fclose(f);
        entries++;
    }
    ck_assert_int_eq(entries, checked);
    ck_assert_int_ge(checked, 25);
    json_decref(expect);
}
END_TEST

START_TEST(test_defaults_and_nulls)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    ck_assert_int_eq(parse_small(&s, "{\"embeddings\": [[1, 2, 3, 4], [5, 6, 7, 8]]}", &req, &err),
                     0);
    ck_assert(!req.batched);
    ck_assert_int_eq(req.batch.B, 1);
    ck_assert_int_eq(req.batch.L, 2);
    ck_assert_int_eq(req.attn_mode, ENC_ATTN_HEADS);
    ck_assert_int_eq(req.precision, 9);
    ck_assert(!req.base64_out && !req.layers_listed);
    ck_assert(!req.want_layer[0] && req.want_layer[1]);
    ck_assert_ptr_null(req.batch.lengths);
    ck_assert_int_eq(req.batch.mask.window_left, ENC_WINDOW_NONE);
    ck_assert_int_eq(req.batch.mask.window_right, ENC_WINDOW_NONE);
    ck_assert_float_eq(req.x[7], 8.0f);
    encode_request_free(&req);
    encode_request_free(&req); /* twice is harmless */

    /* null is absent for every optional field */
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[[1, 2, 3, 4]]], \"embeddings_b64\": null, "
                                 "\"shape\": null, \"lengths\": null, \"mask\": null, "
                                 "\"attention\": null, \"attention_layers\": null, "
                                 "\"precision\": null, \"encoding\": null}",
                                 &req, &err),
                     0);
    ck_assert(req.batched && req.attn_mode == ENC_ATTN_HEADS && req.precision == 9);
    encode_request_free(&req);
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[1, 2, 3, 4]], \"mask\": {\"causal\": null, "
                                 "\"window\": {\"left\": null, \"right\": 2}, \"attn\": null}}",
                                 &req, &err),
                     0);
    ck_assert_int_eq(req.batch.mask.window_left, ENC_WINDOW_NONE);
    ck_assert_int_eq(req.batch.mask.window_right, 1); /* clamped to L */
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

START_TEST(test_mask_forms)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    const char *x = "\"embeddings\": [[[1, 2, 3, 4], [4, 3, 2, 1], [0, 1, 0, 1]], "
                    "[[1, 1, 1, 1], [2, 0, 2, 0], [-1, 0, 1, 0]]]";
    char body[1024];

    snprintf(body, sizeof body, "{%s, \"mask\": {\"window\": 1, \"global\": [2, 0, 2]}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.window_left, 1);
    ck_assert_int_eq(req.batch.mask.window_right, 1);
    ck_assert_uint_eq(req.batch.mask.n_global, 3);
    ck_assert_int_eq(req.batch.mask.global[1], 0);
    encode_request_free(&req);

    snprintf(body, sizeof body, "{%s, \"mask\": {\"window\": {\"right\": 0}}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.window_left, ENC_WINDOW_NONE);
    ck_assert_int_eq(req.batch.mask.window_right, 0);
    encode_request_free(&req);

    snprintf(body, sizeof body, "{%s, \"mask\": {\"window\": 9223372036854775807}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.window_left, 3); /* clamped to L: same meaning */
    encode_request_free(&req);

    /* key_padding [B][L] and attn [B][L][L] booleans */
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"causal\": true, \"key_padding\": [[false, true, false], [true, "
             "false, false]], \"attn\": [[[false, true, false], [false, false, false], [true, "
             "false, false]], [[false, false, false], [false, false, false], [false, false, "
             "true]]]}}",
             x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert(req.batch.mask.causal);
    ck_assert_int_eq(req.batch.mask.key_padding[1], 1);
    ck_assert_int_eq(req.batch.mask.key_padding[3], 1);
    ck_assert_int_eq(req.batch.mask.attn_kind, ENC_MASK_BOOL);
    ck_assert(req.batch.mask.attn_per_sequence);
    ck_assert_int_eq(req.batch.mask.attn_bool[1], 1);
    ck_assert_int_eq(req.batch.mask.attn_bool[6], 1);
    ck_assert_int_eq(req.batch.mask.attn_bool[17], 1);
    ck_assert_int_eq(req.batch.mask.attn_bool[16], 0);
    encode_request_free(&req);

    /* -1e39 (below float32) is -inf: not allowed, the same as true */
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"attn\": [[0, -1e39, 0.5], [0, 0, 0], [0, 0, 0]]}}", x);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.attn_kind, ENC_MASK_ADD);
    ck_assert(!req.batch.mask.attn_per_sequence);
    ck_assert(isinf(req.attn_add[1]) && req.attn_add[1] < 0);
    ck_assert_float_eq(req.attn_add[2], 0.5f);
    encode_request_free(&req);
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"attn\": [[0, -1e39, 0], [0, 0, 0], [-1e39, -1e39, 0]]}}", x);
    run r1, r2;
    run_body(&r1, s.model, &s.hp, body, "additive mask");
    snprintf(body, sizeof body,
             "{%s, \"mask\": {\"attn\": [[false, true, false], [false, false, false], [true, "
             "true, false]]}}",
             x);
    run_body(&r2, s.model, &s.hp, body, "boolean mask");
    const layout y = {2, 3, 4, 2, NULL};
    const tol close = {false, 1e-6, 0.0};
    check_json(json_object_get(r1.resp, "outputs"), &y, r2.req.out, T_OUT, -1, &close, "outputs");
    check_json(json_object_get(r1.resp, "attention"), &y, r2.req.attn[1], T_HEADS, -1, &close,
               "attention");
    /* Disallowed keys get weight 0; a lone allowed key weight 1. */
    const json_t *a0 = json_array_get(json_array_get(json_object_get(r1.resp, "attention"), 0), 0);
    ck_assert(json_number_value(json_array_get(json_array_get(a0, 0), 1)) == 0.0);
    ck_assert(json_number_value(json_array_get(json_array_get(a0, 2), 0)) == 0.0);
    ck_assert(json_number_value(json_array_get(json_array_get(a0, 2), 2)) == 1.0);
    run_free(&r1);
    run_free(&r2);

    /* The unbatched form: key_padding bool[L] and bool[1][L] */
    const char *one = "\"embeddings\": [[1, 2, 3, 4], [4, 3, 2, 1]]";
    snprintf(body, sizeof body, "{%s, \"mask\": {\"key_padding\": [false, true]}}", one);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.key_padding[1], 1);
    encode_request_free(&req);
    snprintf(body, sizeof body, "{%s, \"mask\": {\"key_padding\": [[true, false]]}}", one);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(req.batch.mask.key_padding[0], 1);
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

START_TEST(test_attention_layers_and_limits)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    /* Listed layers keep the request's order; "attention" is the last layer. */
    run r;
    run_body(&r, s.model, &s.hp,
             "{\"embeddings\": [[1, 2, 3, 4], [4, 3, 2, 1]], \"attention_layers\": [1, 0]}",
             "layers [1, 0]");
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    ck_assert_uint_eq(json_array_size(layers), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(layers, 0), "layer")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(layers, 1), "layer")), 0);
    ck_assert(json_equal(json_object_get(json_array_get(layers, 0), "attention"),
                         json_object_get(r.resp, "attention")));
    ck_assert(!json_equal(json_object_get(json_array_get(layers, 1), "attention"),
                          json_object_get(r.resp, "attention")));
    run_free(&r);

    /* [0] alone: layer 0 listed, the last still computed for "attention". */
    ck_assert_int_eq(
        parse_small(&s, "{\"embeddings\": [[1, 2, 3, 4]], \"attention_layers\": [0]}", &req, &err),
        0);
    ck_assert(req.want_layer[0] && req.want_layer[1] && req.layers_listed);
    encode_request_free(&req);
    /* "none": attention_layers is validated but has no effect. */
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[1, 2, 3, 4]], \"attention\": \"none\", "
                                 "\"attention_layers\": \"all\"}",
                                 &req, &err),
                     0);
    ck_assert(!req.want_layer[0] && !req.want_layer[1] && !req.layers_listed);
    encode_request_free(&req);

    /* max_attention_bytes 1024: 2 x 2 heads x 8 x 8 x 4 bytes = 1024 is at the
     * limit, not over; "all" doubles it. */
    char body[4096];
    FILE *f = fmemopen(body, sizeof body, "w");
    fputs("{\"embeddings\": [", f);
    for (int b = 0; b < 2; b++) {
        fputs(b ? ", [" : "[", f);
        for (int i = 0; i < 8; i++)
            fprintf(f, "%s[%d, 0.5, -1, 2]", i ? ", " : "", i);
        fputc(']', f);
    }
    fputs("]", f);
    long at = ftell(f);
    fputs("}", f);
    fclose(f);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    encode_request_free(&req);
    snprintf(body + at, sizeof body - (size_t)at, ", \"attention_layers\": \"all\"}");
    ck_assert_int_eq(parse_small(&s, body, &req, &err), -1);
    ck_assert_int_eq(err.kind, API_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(err.message, "2048 bytes"));
    encode_request_free(&req);
    snprintf(body + at, sizeof body - (size_t)at,
             ", \"attention_layers\": \"all\", \"attention\": \"mean\"}");
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    encode_request_free(&req);

    /* No limits at all: still no overflow, just too large. */
    memset(&err, 0, sizeof err);
    const char *huge = "{\"embeddings_b64\": \"AAAA\", \"shape\": [2147483647, 2147483647, 4]}";
    ck_assert_int_eq(v1_request_parse(&req, huge, strlen(huge), &s.hp, NULL, &err), -1);
    ck_assert_int_eq(err.kind, API_TOO_LARGE);
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

/* position_ids: int[L] for every sequence or int[B][L], below
 * limits.max_seq_len, for a model with positions inside attention only;
 * every refusal names the field and the entry. */
START_TEST(test_position_ids)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    const char *emb = "{\"embeddings\": [[[1, 2, 3, 4], [4, 3, 2, 1], [0, 0, 1, 1]], "
                      "[[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]], \"position_ids\": ";
    char body[512];
    snprintf(body, sizeof body, "%s[0, 1, 2]}", emb);
    ck_assert_int_eq(parse_small(&s, body, &req, &err), -1); /* no positions in this model */
    ck_assert_str_eq(err.message, "position_ids: this model has no positions inside attention "
                                  "(model.position is none): its input embeddings carry them");
    encode_request_free(&req);

    s.hp.position = ENC_POS_ALIBI;
    snprintf(body, sizeof body, "%s[5, 0, 7]}", emb); /* [L]: every sequence */
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    static const int32_t shared[] = {5, 0, 7, 5, 0, 7};
    ck_assert(req.batch.positions && memcmp(req.batch.positions, shared, sizeof shared) == 0);
    encode_request_free(&req);
    snprintf(body, sizeof body, "%s[[0, 1, 2], [7, 7, 0]]}", emb); /* [B][L] */
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    static const int32_t rows[] = {0, 1, 2, 7, 7, 0};
    ck_assert(memcmp(req.batch.positions, rows, sizeof rows) == 0);
    encode_request_free(&req);

    char top[96], top_value[64];
    snprintf(top, sizeof top, "position_ids[1][2] = %d is outside 0..%d (below limits.max_seq_len)",
             s.lim.max_seq_len, s.lim.max_seq_len - 1);
    snprintf(top_value, sizeof top_value, "[[0, 1, 2], [0, 1, %d]]}", s.lim.max_seq_len);
    const struct {
        const char *value, *want;
    } bad[] = {
        {"\"0 1 2\"}", "position_ids must be int[L] or int[B][L] (non-negative integers), not a "
                       "string"},
        {"[]}", "position_ids must be int[L] or int[B][L] (non-negative integers), not an empty "
                "array"},
        {"[0, 1]}", "position_ids has 2 entries; the sequences have 3 positions"},
        {"[[0, 1, 2]]}", "position_ids has 1 row; the batch has 2 sequences"},
        {"[[0, 1, 2], [0, 1]]}", "position_ids[1] is of another length; expected 3 integers"},
        {"[[0, 1, 2], 7]}", "position_ids[1] is a number; expected 3 integers"},
        {"[0, -1, 2]}", "position_ids[1] = -1 is outside 0.."},
        {"[0, 1.5, 2]}", "position_ids[1] = 1.5 is not an integer"},
        {"[[0, 1, 2], [0, true, 2]]}", "position_ids[1][1] is a boolean; expected an integer"},
        {top_value, top},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(body, sizeof body, "%s%s", emb, bad[i].value);
        ck_assert_int_eq(parse_small(&s, body, &req, &err), -1);
        ck_assert_int_eq(err.kind, API_BAD_REQUEST);
        ck_assert_msg(strstr(err.message, bad[i].want), "%s: '%s' lacks '%s'", bad[i].value,
                      err.message, bad[i].want);
        encode_request_free(&req);
    }
    enc_model_free(s.model);
}
END_TEST

/* Zeroes a parsed request's outputs, as a forward would write them: the
 * codec leaves them unset, the forward writes every entry. */
static void zero_outputs(encode_request *req, const enc_hparams *hp)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const size_t heads = (size_t)enc_attn_heads(req->attn_mode, hp->n_heads);
    memset(req->out, 0, B * L * (size_t)hp->d_model * sizeof *req->out);
    for (int l = 0; l < req->n_layers; l++)
        if (req->attn[l])
            memset(req->attn[l], 0, B * heads * L * L * sizeof(float));
}

START_TEST(test_response_details)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    const char *body = "{\"embeddings\": [[1, 2, 3, 4], [-4, 3, 2, 1e-30]], \"lengths\": [1], "
                       "\"encoding\": \"base64\", \"precision\": 2}";
    ck_assert_int_eq(parse_small(&s, body, &req, &err), 0);
    ck_assert_int_eq(encode_request_alloc_outputs(&req, &s.hp, &err), 0);
    zero_outputs(&req, &s.hp); /* as the forward would leave them */
    /* Values set by hand: the writer, not the model, is under test here. */
    const float vals[] = {-0.0f, 1.5f, -0.3125f, 3e30f};
    memcpy(req.out, vals, sizeof vals);
    req.out[4] = 99.0f; /* padding row: never written */
    req.attn[1][0] = 1.0f;
    encode_usage u = {.sequences = 1, .tokens = 1};
    size_t len;
    char *text = v1_response(&req, "my \"model\" \xc3\xa9", &s.hp, &u, &len);
    ck_assert_ptr_nonnull(text);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", je.text, text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "my \"model\" \xc3\xa9");
    check_shape(json_object_get(j, "shape"), (size_t[]){2, 4}, 2);
    check_shape(json_object_get(j, "outputs_shape"), (size_t[]){1, 4}, 2);
    check_shape(json_object_get(j, "attention_shape"), (size_t[]){2, 1, 1}, 3);
    size_t n;
    float *got = b64_floats(json_object_get(j, "outputs"), &n);
    ck_assert_uint_eq(n, 4);
    ck_assert(memcmp(got, vals, sizeof vals) == 0); /* base64 is exact, -0 included */
    free(got);
    got = b64_floats(json_object_get(j, "attention"), &n);
    ck_assert_uint_eq(n, 2);
    ck_assert(got[0] == 1.0f && got[1] == 0.0f);
    free(got);
    json_decref(j);
    free(text);

    /* The same in JSON with 2 digits. */
    req.base64_out = false;
    text = v1_response(&req, "m", &s.hp, &u, &len);
    ck_assert_ptr_nonnull(strstr(text, "\"outputs\":[[-0,1.5,-0.31,3e+30]]"));
    ck_assert_ptr_nonnull(strstr(text, "\"attention\":[[[1]],[[0]]]"));
    ck_assert_ptr_nonnull(strstr(text, "\"usage\":{\"sequences\":1,\"tokens\":1,"));
    free(text);

    /* A non-finite value (the core never returns one) still gives valid JSON. */
    req.out[1] = NAN;
    req.out[2] = -INFINITY;
    text = v1_response(&req, "m", &s.hp, &u, &len);
    j = json_loads(text, 0, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    json_decref(j);
    free(text);
    encode_request_free(&req);

    /* Unparsed or never-allocated requests: no response, no crash. */
    encode_request zero;
    memset(&zero, 0, sizeof zero);
    ck_assert_ptr_null(v1_response(&zero, "m", &s.hp, &u, &len));
    encode_request_free(&zero);
    enc_model_free(s.model);
}
END_TEST

/* ---- token ids ------------------------------------------------------------------ */

/* An embedding module as the core describes one (enc_embedding_info), for
 * the parser alone: the small model is seeded and has none, so these
 * requests are parsed and checked, not run (check_v1_fixtures.c runs the
 * Hugging Face fixtures from ids). */
static const enc_embedding_info FAKE_ROBERTA = {.vocab_size = 50,
                                                .type_vocab_size = 1,
                                                .max_positions = 24,
                                                .padding_idx = 1,
                                                .position = "roberta",
                                                .dtype = "F32",
                                                .n_tensors = 1,
                                                .tensors = FAKE_TENSORS};
static const enc_embedding_info FAKE_DISTIL = {.vocab_size = 50,
                                               .type_vocab_size = 0,
                                               .max_positions = 24,
                                               .padding_idx = -1,
                                               .position = "sinusoidal",
                                               .dtype = "F16",
                                               .n_tensors = 1,
                                               .tensors = FAKE_TENSORS};

static int parse_ids(const small *s, const enc_embedding_info *e, const char *body,
                     encode_request *req, api_error *err)
{
    api_ctx lim = s->lim;
    lim.embedding = e;
    memset(err, 0, sizeof *err);
    return v1_request_parse(req, body, strlen(body), &s->hp, &lim, err);
}

static void assert_ids(const int32_t *got, const int32_t *want, size_t n, const char *what)
{
    for (size_t k = 0; k < n; k++)
        ck_assert_msg(got[k] == want[k], "%s[%zu] = %d, want %d", what, k, (int)got[k],
                      (int)want[k]);
}

/* input_ids int[B][L] and int[L], token_type_ids with them, ragged rows
 * padded to the longest with their lengths, the padding id. */
START_TEST(test_input_ids_forms)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;

    ck_assert_msg(parse_ids(&s, &FAKE_BERT,
                            "{\"input_ids\": [[1, 2, 3], [4, 5, 49]], \"token_type_ids\": [[0, 0, "
                            "1], [1, 1, 0]]}",
                            &req, &err) == 0,
                  "%s", err.message);
    ck_assert(req.batched && req.batch.B == 2 && req.batch.L == 3);
    ck_assert_ptr_null(req.batch.x);
    ck_assert_ptr_nonnull(req.batch.ids);
    ck_assert_ptr_eq(req.batch.ids->input_ids, req.input_ids);
    ck_assert_ptr_eq(req.batch.ids->token_type_ids, req.token_type_ids);
    assert_ids(req.input_ids, (const int32_t[]){1, 2, 3, 4, 5, 49}, 6, "input_ids");
    assert_ids(req.token_type_ids, (const int32_t[]){0, 0, 1, 1, 1, 0}, 6, "token_type_ids");
    ck_assert_ptr_null(req.batch.lengths);
    ck_assert_ptr_null(req.batch.mask.key_padding);
    ck_assert_int_eq(encode_request_alloc_outputs(&req, &s.hp, &err), 0);
    encode_request_free(&req);

    /* the unbatched form; no token types: NULL (all 0) */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT, "{\"input_ids\": [7, 8, 9, 10]}", &req, &err), 0);
    ck_assert(!req.batched && req.batch.B == 1 && req.batch.L == 4);
    assert_ids(req.input_ids, (const int32_t[]){7, 8, 9, 10}, 4, "input_ids");
    ck_assert_ptr_null(req.batch.ids->token_type_ids);
    encode_request_free(&req);

    /* ragged rows: padded to the longest with the padding id, each row its
     * own length; token_type_ids ragged alike */
    ck_assert_msg(parse_ids(&s, &FAKE_ROBERTA,
                            "{\"input_ids\": [[5, 6], [7, 8, 9, 10], [11]], \"token_type_ids\": "
                            "[[0, 0], [0, 0, 0, 0], [0]]}",
                            &req, &err) == 0,
                  "%s", err.message);
    ck_assert(req.batch.B == 3 && req.batch.L == 4);
    assert_ids(req.input_ids, (const int32_t[]){5, 6, 1, 1, 7, 8, 9, 10, 11, 1, 1, 1}, 12,
               "input_ids (padding_idx 1)");
    ck_assert_ptr_nonnull(req.batch.lengths);
    ck_assert(req.batch.lengths[0] == 2 && req.batch.lengths[1] == 4 && req.batch.lengths[2] == 1);
    encode_request_free(&req);
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT, "{\"input_ids\": [[5, 6], [7, 8, 9]]}", &req, &err),
                     0);
    assert_ids(req.input_ids, (const int32_t[]){5, 6, 0, 7, 8, 9}, 6, "input_ids (pad 0)");
    encode_request_free(&req);

    /* lengths with ragged rows: at most each row's own */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{\"input_ids\": [[5, 6, 7], [8, 9]], \"lengths\": [2, 1]}", &req,
                               &err),
                     0);
    ck_assert(req.batch.lengths[0] == 2 && req.batch.lengths[1] == 1);
    encode_request_free(&req);

    /* padding past lengths is never looked up: any int32 */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{\"input_ids\": [[5, 6, -100], [8, 9, 2147483647]], \"lengths\": "
                               "[2, 2]}",
                               &req, &err),
                     0);
    encode_request_free(&req);

    /* DistilBERT: no token types, so only 0 */
    ck_assert_int_eq(parse_ids(&s, &FAKE_DISTIL,
                               "{\"input_ids\": [1, 2], \"token_type_ids\": [0, 0]}", &req, &err),
                     0);
    encode_request_free(&req);

    /* position_ids index the position table with ids, below its size */
    ck_assert_msg(
        parse_ids(&s, &FAKE_BERT,
                  "{\"input_ids\": [[1, 2, 3], [4]], \"position_ids\": [[5, 6, 23], [9]]}", &req,
                  &err) == 0,
        "%s", err.message);
    assert_ids(req.batch.positions, (const int32_t[]){5, 6, 23, 9, 0, 0}, 6, "position_ids");
    encode_request_free(&req);
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{\"input_ids\": [1, 2, 3], \"position_ids\": [2, 1, 0]}", &req,
                               &err),
                     0);
    assert_ids(req.batch.positions, (const int32_t[]){2, 1, 0}, 3, "position_ids");
    encode_request_free(&req);

    /* white space, newlines and key order do not matter; null is absent */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{ \"token_type_ids\" :\n[ [1 ,0] ] , \"embeddings\": null,\n"
                               "\"input_ids\":[[ 3,\t4 ]], \"attention_mask\": null}",
                               &req, &err),
                     0);
    assert_ids(req.input_ids, (const int32_t[]){3, 4}, 2, "input_ids");
    assert_ids(req.token_type_ids, (const int32_t[]){1, 0}, 2, "token_type_ids");
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

/* attention_mask as transformers takes it: trailing zeros end a sequence
 * (lengths), a zero inside hides that key (key padding), its query still
 * computed; with lengths it must agree; with mask.key_padding the two add. */
START_TEST(test_attention_mask)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;

    ck_assert_msg(parse_ids(&s, &FAKE_BERT,
                            "{\"input_ids\": [[1, 2, 3, 4], [5, 6, 7, 8]], \"attention_mask\": "
                            "[[1, 1, 0, 0], [1, 0, 1, 0]]}",
                            &req, &err) == 0,
                  "%s", err.message);
    ck_assert(req.batch.lengths && req.batch.lengths[0] == 2 && req.batch.lengths[1] == 3);
    ck_assert_ptr_nonnull(req.batch.mask.key_padding);
    static const uint8_t kp[] = {0, 0, 0, 0, 0, 1, 0, 0};
    ck_assert_mem_eq(req.batch.mask.key_padding, kp, sizeof kp);
    encode_request_free(&req);

    /* all ones: lengths L (the response's ragged form), no key padding */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{\"input_ids\": [[1, 2], [3, 4]], \"attention_mask\": [[1, 1], "
                               "[1, 1]]}",
                               &req, &err),
                     0);
    ck_assert(req.batch.lengths[0] == 2 && req.batch.lengths[1] == 2);
    ck_assert_ptr_null(req.batch.mask.key_padding);
    encode_request_free(&req);

    /* with lengths that agree; with mask.key_padding: both hide keys */
    ck_assert_msg(parse_ids(&s, &FAKE_BERT,
                            "{\"input_ids\": [[1, 2, 3], [4, 5, 6]], \"lengths\": [3, 1], "
                            "\"attention_mask\": [[0, 1, 1], [1, 0, 0]], \"mask\": "
                            "{\"key_padding\": [[false, true, false], [false, false, true]]}}",
                            &req, &err) == 0,
                  "%s", err.message);
    static const uint8_t kp2[] = {1, 1, 0, 0, 0, 1};
    ck_assert_mem_eq(req.batch.mask.key_padding, kp2, sizeof kp2);
    ck_assert(req.batch.lengths[0] == 3 && req.batch.lengths[1] == 1);
    encode_request_free(&req);

    /* ragged ids: the mask rows ragged alike, shortening them further */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{\"input_ids\": [[1, 2, 3], [4, 5]], \"attention_mask\": [[1, 1, "
                               "1], [1, 0]]}",
                               &req, &err),
                     0);
    ck_assert(req.batch.lengths[0] == 3 && req.batch.lengths[1] == 1);
    encode_request_free(&req);

    /* the unbatched form, and with embeddings (any model) */
    ck_assert_int_eq(parse_ids(&s, &FAKE_BERT,
                               "{\"input_ids\": [1, 2, 3], \"attention_mask\": [1, 0, 1]}", &req,
                               &err),
                     0);
    ck_assert(!req.batched && req.batch.lengths[0] == 3 && req.batch.mask.key_padding[1] == 1);
    encode_request_free(&req);
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[[1, 2, 3, 4], [4, 3, 2, 1]], [[1, 1, 1, 1], "
                                 "[0, 0, 0, 0]]], \"attention_mask\": [[1, 1], [1, 0]]}",
                                 &req, &err),
                     0);
    ck_assert(req.batch.lengths[0] == 2 && req.batch.lengths[1] == 1);
    encode_request_free(&req);

    /* a masked key inside a sequence changes what the others see, exactly as
     * mask.key_padding does (the seeded model, from embeddings) */
    const char *emb = "\"embeddings\": [[1, 2, 3, 4], [4, 3, 2, 1], [0, 1, 0, 1]]";
    char b1[512], b2[512];
    snprintf(b1, sizeof b1, "{%s, \"attention_mask\": [1, 0, 1]}", emb);
    snprintf(b2, sizeof b2,
             "{%s, \"lengths\": [3], \"mask\": {\"key_padding\": [false, true, false]}}", emb);
    run r1, r2;
    run_body(&r1, s.model, &s.hp, b1, "attention_mask");
    run_body(&r2, s.model, &s.hp, b2, "key_padding");
    ck_assert_msg(strcmp(r1.text, r2.text) == 0, "attention_mask [1, 0, 1]:\n%s\nkey_padding:\n%s",
                  r1.text, r2.text);
    /* the masked key gets weight 0 from every query, its own included */
    const json_t *h0 = json_array_get(json_object_get(r1.resp, "attention"), 0);
    for (size_t i = 0; i < 3; i++)
        ck_assert(json_number_value(json_array_get(json_array_get(h0, i), 1)) == 0.0);
    run_free(&r1);
    run_free(&r2);
    enc_model_free(s.model);
}
END_TEST

/* Every refusal of the ids and the mask names the field and the entry. */
START_TEST(test_input_ids_refused)
{
    small s;
    small_load(&s);
    encode_request req;
    api_error err;
    static const struct {
        const char *body, *want;
        int status;
    } bad[] = {
        {"{\"input_ids\": [[1, 2]], \"embeddings\": [[1, 2, 3, 4], [1, 2, 3, 4]]}",
         "give one of text, input_ids, embeddings or embeddings_b64 (with shape), not both "
         "embeddings and input_ids",
         400},
        {"{\"input_ids\": [1], \"embeddings_b64\": \"AAAA\", \"shape\": [1, 4]}",
         "not both embeddings_b64 and input_ids", 400},
        {"{\"embeddings\": [[1, 2, 3, 4]], \"token_type_ids\": [0]}",
         "token_type_ids is only used with input_ids", 400},
        {"{\"input_ids\": [[1, 3.5]]}", "input_ids[0][1] is 3.5, not an integer", 400},
        {"{\"input_ids\": [1, 2e0]}", "input_ids[1] is 2e0, not an integer", 400},
        {"{\"input_ids\": [[1, 2], [3, -1]]}",
         "input_ids[1][1] = -1 is outside 0..49 (the model's vocab_size is 50)", 400},
        {"{\"input_ids\": [[1, 2], [50, 3]]}", "input_ids[1][0] = 50 is outside 0..49", 400},
        {"{\"input_ids\": [[1, 2147483648]]}",
         "input_ids[0][1] = 2147483648 is outside the int32 range", 400},
        {"{\"input_ids\": [[1, -2147483649]]}",
         "input_ids[0][1] = -2147483649 is outside the int32 range", 400},
        {"{\"input_ids\": [[1, 1e40]]}", "input_ids[0][1] = 1e+40 is outside the int32 range", 400},
        {"{\"input_ids\": [[1, \"2\"]]}", "input_ids[0][1] is a string, not an integer", 400},
        {"{\"input_ids\": [[1, 2], 3]}", "input_ids[1] is a number; expected an array of integers",
         400},
        {"{\"input_ids\": [[[1]]]}", "input_ids[0][0] is an array, not an integer", 400},
        {"{\"input_ids\": [1, [2]]}", "input_ids[1] is an array, not an integer", 400},
        {"{\"input_ids\": []}", "input_ids is empty", 400},
        {"{\"input_ids\": [[]]}", "input_ids[0] is empty; a sequence needs at least one token",
         400},
        {"{\"input_ids\": [[1], []]}", "input_ids[1] is empty", 400},
        {"{\"input_ids\": \"1 2 3\"}",
         "input_ids must be int[B][L] or int[L] (token ids), not a string", 400},
        {"{\"input_ids\": [[1, 2], [3]], \"lengths\": [2, 2]}",
         "lengths[1] = 2 is outside 1..1 (input_ids[1] has 1 id)", 400},
        {"{\"input_ids\": [[1, 2], [3, 4]], \"lengths\": [2, 3]}", "lengths[1] = 3 is outside 1..2",
         400},
        {"{\"input_ids\": [[1, 2], [3, 4]], \"token_type_ids\": [[0, 2], [0, 0]]}",
         "token_type_ids[0][1] = 2 is outside 0..1 (the model's type_vocab_size is 2)", 400},
        {"{\"input_ids\": [[1, 2], [3, 4]], \"token_type_ids\": [[0, 0]]}",
         "token_type_ids has 1 row; the batch has 2 sequences", 400},
        {"{\"input_ids\": [[1, 2], [3]], \"token_type_ids\": [[0, 0], [0, 0]]}",
         "token_type_ids[1] has 2 entries; input_ids[1] has 1", 400},
        {"{\"input_ids\": [1, 2], \"token_type_ids\": [[0, 0]]}",
         "token_type_ids[0] is an array, not an integer (token_type_ids must be int[L], shaped as "
         "input_ids)",
         400},
        {"{\"input_ids\": [[1, 2]], \"token_type_ids\": [0, 0]}",
         "token_type_ids[0] is a number; token_type_ids must be int[B][L] (shaped as input_ids)",
         400},
        {"{\"input_ids\": [[1, 2]], \"token_type_ids\": []}",
         "token_type_ids has 0 rows; the batch has 1 sequence", 400},
        {"{\"input_ids\": [1, 2], \"token_type_ids\": [0, 0, 1]}",
         "token_type_ids has 3 entries; input_ids has 2", 400},
        {"{\"input_ids\": [1, 2], \"token_type_ids\": [0, true]}",
         "token_type_ids[1] is a boolean, not an integer", 400},
        {"{\"input_ids\": [1, 2], \"token_type_ids\": {\"0\": 1}}",
         "token_type_ids must be int[L] (shaped as input_ids), not an object", 400},
        {"{\"input_ids\": [[1, 2], [3, 4]], \"attention_mask\": [[1, 2], [1, 1]]}",
         "attention_mask[0][1] = 2 is not 0 or 1", 400},
        {"{\"input_ids\": [[1, 2], [3, 4]], \"attention_mask\": [[1, 1], [0, 0]]}",
         "attention_mask[1] has no 1: a sequence needs at least one real token", 400},
        {"{\"input_ids\": [1, 2], \"attention_mask\": [0, 0]}",
         "attention_mask has no 1: a sequence needs at least one real token", 400},
        {"{\"input_ids\": [[1, 2, 3], [3, 4, 5]], \"attention_mask\": [[1, 1, 0], [1, 1, 1]], "
         "\"lengths\": [3, 3]}",
         "lengths[0] = 3 but attention_mask[0] gives 2 real tokens (its last 1 is at index 1): "
         "send one of them, or make them agree",
         400},
        {"{\"input_ids\": [[1, 2], [3, 4]], \"attention_mask\": [[1, 0.5], [1, 1]]}",
         "attention_mask[0][1] is 0.5, not an integer", 400},
        {"{\"embeddings\": [[[1, 2, 3, 4]]], \"attention_mask\": [[1, 1]]}",
         "attention_mask[0] has 2 entries; the sequences have 1 position", 400},
        {"{\"embeddings\": [[1, 2, 3, 4]], \"attention_mask\": [[1]]}",
         "attention_mask[0] is an array, not an integer (attention_mask must be int[L], for the "
         "embeddings' sequences)",
         400},
        {"{\"input_ids\": [[1, 2, 3], [4]], \"position_ids\": [[0, 1, 2], [0, 1]]}",
         "position_ids[1] is of another length; expected 1 integers, as input_ids[1]", 400},
        {"{\"input_ids\": [1, 2], \"position_ids\": [0, 24]}",
         "position_ids[1] = 24 is outside 0..23 (the model's position table)", 400},
        {"{\"embeddings\": [[1, 2, 3, 4]], \"position_ids\": [0]}",
         "position_ids: this model has no positions inside attention (model.position is none): "
         "its input embeddings carry them (with input_ids, position_ids index the model's "
         "position table)",
         400},
        {"{\"input_ids\": [[1, 2, 3, 4, 5, 6, 7, 8, 9]]}",
         "sequence length 9 is over limits.max_seq_len (8)", 413},
        {"{\"input_ids\": [[1], [2], [3], [4], [5]]}",
         "batch of 5 sequences is over limits.max_batch", 413},
        {"{\"input_ids\": [[1, 2, 3, 4, 5, 6, 7, 8], [1], [2]]}",
         "batch of 3 sequences x 8 positions = 24 tokens is over limits.max_batch_tokens (16)",
         413},
        {"{\"input_ids\": [1], \"input_ids\": [2]}", "duplicate object key", 400},
        {"{\"input_ids\": [1, 2,], \"token_type_ids\": [0, 0]}",
         "invalid JSON at line 1, column 21", 400},
        {"{\"inputs_ids\": [1]}",
         "unknown field 'inputs_ids'; expected embeddings, "
         "embeddings_b64, shape, input_ids, token_type_ids, "
         "attention_mask, lengths, text, truncate,",
         400},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const int rc = parse_ids(&s, &FAKE_BERT, bad[i].body, &req, &err);
        ck_assert_msg(rc == -1, "%s was accepted", bad[i].body);
        ck_assert_msg(api_error_status(err.kind) == bad[i].status, "%s: status %d (%s)",
                      bad[i].body, api_error_status(err.kind), err.message);
        ck_assert_msg(strstr(err.message, bad[i].want), "%s:\n  '%s'\n  lacks '%s'", bad[i].body,
                      err.message, bad[i].want);
        ck_assert(printable(err.message));
        encode_request_free(&req);
    }
    /* A model without an embedding module takes embeddings only. */
    ck_assert_int_eq(parse_small(&s, "{\"input_ids\": [[1, 2]]}", &req, &err), -1);
    ck_assert_str_eq(err.message, "input_ids: this model takes embeddings, not input_ids: it has "
                                  "no embedding module (serve a model.dir: a Hugging Face "
                                  "directory brings one)");
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

/* ---- robustness: every truncation and many byte changes of valid bodies ------ */

static void parse_any(const small *s, const char *body, size_t len)
{
    encode_request req;
    api_error err = {0};
    if (v1_request_parse(&req, body, len, &s->hp, &s->lim, &err) == 0) {
        ck_assert_int_eq(err.kind, API_OK);
        if (encode_request_alloc_outputs(&req, &s->hp, &err) == 0) {
            size_t n;
            encode_usage u = {0};
            zero_outputs(&req, &s->hp);
            free(v1_response(&req, "m", &s->hp, &u, &n));
        }
    } else {
        ck_assert(err.kind == API_BAD_REQUEST || err.kind == API_TOO_LARGE);
        ck_assert(err.message[0] != '\0' && printable(err.message));
    }
    encode_request_free(&req);
}

START_TEST(test_mutations)
{
    small s;
    small_load(&s);
    char b64[64];
    {
        const float v[8] = {1, -2, 0.5f, 3, 0, 0, 1e-3f, 7};
        char *t = base64_encode(v, sizeof v, NULL); /* little-endian host */
        snprintf(b64, sizeof b64, "%s", t);
        free(t);
    }
    char b64_body[256];
    snprintf(b64_body, sizeof b64_body,
             "{\"embeddings_b64\": \"%s\", \"shape\": [1, 2, 4], \"lengths\": [2], \"encoding\": "
             "\"base64\"}",
             b64);
    const char *bodies[] = {
        "{\"embeddings\": [[[1, 2, 3, 4], [5, 6, 7, 8]], [[0, 1, 0, 1], [2, 2, 2, 2]]], "
        "\"lengths\": [2, 1], \"mask\": {\"causal\": true, \"window\": {\"left\": 1, \"right\": "
        "0}, \"global\": [1], \"key_padding\": [[false, true], [false, false]], \"attn\": [[0, "
        "-1], [0.5, 0]]}, \"attention\": \"mean\", \"attention_layers\": [0], \"precision\": 4}",
        b64_body,
    };
    static const char repl[] = {'[', ']', '{', '}', '"', ',',  '0',
                                '-', 'e', ':', ' ', 'x', '\0', (char)0xff};
    for (size_t k = 0; k < sizeof bodies / sizeof *bodies; k++) {
        const size_t n = strlen(bodies[k]);
        char *buf = xcalloc(n + 1, 1);
        for (size_t cut = 0; cut <= n; cut++)
            parse_any(&s, bodies[k], cut);
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < sizeof repl; c++) {
                memcpy(buf, bodies[k], n + 1);
                buf[i] = repl[c];
                parse_any(&s, buf, n);
            }
        free(buf);
    }
    /* Deep nesting stops at jansson's depth limit, not the stack. */
    const size_t deep = 100000;
    char *nest = xcalloc(2 * deep + 32, 1);
    strcpy(nest, "{\"embeddings\": ");
    memset(nest + strlen(nest), '[', deep);
    parse_any(&s, nest, strlen(nest));
    free(nest);
    enc_model_free(s.model);
}
END_TEST

/* The core's statuses as every route answers them (api_error_of_core, the
 * one mapping), by docs/contract.md section 7: a refused input 400, over a
 * limit 413 (a sequence whose mask allows more than INT32_MAX pairs, a
 * text the tokenizer cannot count), out of memory 503; only what no input
 * causes (an i/o error, an unknown status) is a 500. */
START_TEST(test_core_status_to_http)
{
    static const struct {
        int status, http;
    } cases[] = {{ENC_EINVAL, 400}, {ENC_ENUMERIC, 400}, {ENC_EFORMAT, 400}, {ENC_ELIMIT, 413},
                 {ENC_ENOMEM, 503}, {ENC_EIO, 500},      {-99, 500}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(api_error_status(api_error_of_core(cases[i].status)) == cases[i].http,
                      "%s: %d, want %d", enc_strerror(cases[i].status),
                      api_error_status(api_error_of_core(cases[i].status)), cases[i].http);
}
END_TEST

Suite *v1_requests_suite(void)
{
    Suite *s = timed_suite("v1_requests");
    TCase *invalid = timed_case(s, "invalid bodies", 120);
    tcase_add_test(invalid, test_invalid_requests);
    tcase_add_test(invalid, test_core_status_to_http);
    TCase *options = timed_case(s, "options", 120);
    tcase_add_test(options, test_defaults_and_nulls);
    tcase_add_test(options, test_mask_forms);
    tcase_add_test(options, test_attention_layers_and_limits);
    tcase_add_test(options, test_position_ids);
    tcase_add_test(options, test_input_ids_forms);
    tcase_add_test(options, test_attention_mask);
    tcase_add_test(options, test_input_ids_refused);
    tcase_add_test(options, test_response_details);
    TCase *mutations = timed_case(s, "mutations", 300);
    tcase_add_test(mutations, test_mutations);
    return s;
}
