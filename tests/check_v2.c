/* check_v2.c - the Open Inference Protocol (KServe v2) with Triton's binary
 * tensor data extension: the codec (server/protocol/v2.c) on requests and responses
 * written here byte by byte from the protocol documents, and the real daemon
 * against the PyTorch fixtures, through JSON and through binary tensors.
 *
 * The protocol documents this follows: KServe's "Open Inference Protocol"
 * (inference request / response JSON, $parameters, {"error": $string}) and
 * Triton's "Binary Tensor Data Extension" (Inference-Header-Content-Length,
 * binary_data_size, binary_data, binary_data_output; little-endian,
 * row-major, in input / output order after the JSON). */
#include "daemon.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"
#include "protocol/v2.h"
#include "v1_util.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The codec tests' model: D 4, H 2, one layer (the daemon tests' small_v2). */
static enc_hparams tiny_hp(void)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 4;
    hp.n_heads = 2;
    hp.n_kv_heads = 2;
    hp.d_ff = 8;
    return hp;
}

static const char *const small_v2[] = {"--d-model", "4", "--n-heads", "2", "--d-ff", "8", NULL};

/* ---- bytes by hand ------------------------------------------------------------ */

/* A growing byte buffer for request bodies. */
typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static void put(bytes *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_str(bytes *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A 32-bit value, little-endian, whatever the host's order. */
static void put_le32(bytes *b, uint32_t u)
{
    unsigned char c[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 24)};
    put(b, c, 4);
}

static void put_f32(bytes *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    put_le32(b, u);
}

static float get_f32(const unsigned char *c)
{
    uint32_t u = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A 2 x 4 input and its JSON text. */
static const float X8[8] = {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.0f, -0.5f, 1.0f};
#define X8_JSON "[0.5,-1,0.25,2,1.5,0,-0.5,1]"
#define EMB_JSON                                                                                   \
    "{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON "}"
#define EMB_BIN                                                                                    \
    "{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"                            \
    "\"parameters\":{\"binary_data_size\":32}}"

#define INFER(inputs)       "{\"inputs\":[" inputs "]}"
#define WITH_PARAMS(params) "{\"inputs\":[" EMB_JSON "],\"parameters\":{" params "}}"
#define WITH_OUTPUTS(outs)  "{\"inputs\":[" EMB_JSON "],\"outputs\":[" outs "]}"
#define LEN_IN(dtype, shape, data)                                                                 \
    "{\"name\":\"lengths\",\"datatype\":\"" dtype "\",\"shape\":" shape ",\"data\":" data "}"
#define EMB_IN(dtype, shape, data)                                                                 \
    "{\"name\":\"embeddings\",\"datatype\":\"" dtype "\",\"shape\":" shape ",\"data\":" data "}"

/* ---- the codec -------------------------------------------------------------------- */

START_TEST(test_route_parse)
{
    static const struct {
        const char *url;
        v2_route route;
        const char *name, *version;
    } cases[] = {
        {"/v2", V2_ROUTE_SERVER, "", NULL},
        {"/v2/health/live", V2_ROUTE_LIVE, "", NULL},
        {"/v2/health/ready", V2_ROUTE_READY, "", NULL},
        {"/v2/models/encoder", V2_ROUTE_MODEL, "encoder", NULL},
        {"/v2/models/encoder/ready", V2_ROUTE_MODEL_READY, "encoder", NULL},
        {"/v2/models/encoder/infer", V2_ROUTE_INFER, "encoder", NULL},
        {"/v2/models/enc/versions/1", V2_ROUTE_MODEL, "enc", "1"},
        {"/v2/models/enc/versions/7/ready", V2_ROUTE_MODEL_READY, "enc", "7"},
        {"/v2/models/enc/versions/1/infer", V2_ROUTE_INFER, "enc", "1"},
        {"/v2/models/ready", V2_ROUTE_MODEL, "ready", NULL}, /* a model named "ready" */
        {"/v2/", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2/health", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2/models", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2/models/", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2/models/encoder/", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2/models/encoder/explain", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2/models/encoder/versions/1/infer/x", V2_ROUTE_UNKNOWN, "", NULL},
        {"/v2x", V2_ROUTE_NONE, "", NULL},
        {"/v1/encode", V2_ROUTE_NONE, "", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        v2_path p;
        v2_route r = v2_route_parse(cases[i].url, &p);
        ck_assert_msg(r == cases[i].route, "%s: route %d, want %d", cases[i].url, r,
                      cases[i].route);
        if (r == V2_ROUTE_UNKNOWN || r == V2_ROUTE_NONE)
            continue;
        ck_assert_str_eq(p.name, cases[i].name);
        ck_assert_int_eq(p.has_version, cases[i].version != NULL);
        if (cases[i].version)
            ck_assert_str_eq(p.version, cases[i].version);
    }
    v2_path p;
    api_error err = {0};
    v2_route_parse("/v2/models/encoder/versions/1", &p);
    ck_assert_int_eq(v2_check_model(&p, "encoder", &err), 0);
    v2_route_parse("/v2/models/encoder/versions/2", &p);
    ck_assert_int_eq(v2_check_model(&p, "encoder", &err), -1);
    ck_assert_int_eq(api_error_status(err.kind), 404);
    ck_assert_ptr_nonnull(strstr(err.message, "no version '2'"));
}
END_TEST

/* Parses body (header_len: the Inference-Header-Content-Length value, or
 * NULL) with the tiny model and no limits; fails the test on an error. */
static void parse_ok(v2_request *req, const bytes *b, const char *header_len)
{
    enc_hparams hp = tiny_hp();
    api_error err = {0};
    int rc =
        v2_request_parse(req, (const char *)b->p, b->len, header_len, "encoder", &hp, NULL, &err);
    ck_assert_msg(rc == 0, "refused: %s", err.message);
}

static void assert_x8(const v2_request *req)
{
    ck_assert_int_eq(req->enc.batch.B, 1);
    ck_assert_int_eq(req->enc.batch.L, 2);
    ck_assert_ptr_eq(req->enc.batch.x, req->enc.x);
    ck_assert_mem_eq(req->enc.x, X8, sizeof X8);
}

/* The same 1 x 2 x 4 tensor as flat JSON, nested JSON, binary; lengths
 * as JSON or binary, before or after the embeddings. */
START_TEST(test_parse_forms)
{
    v2_request req;
    bytes b = {0};

    put_str(&b, "{\"id\":\"req-1\",\"inputs\":[" EMB_JSON "]}");
    parse_ok(&req, &b, NULL);
    assert_x8(&req);
    ck_assert_str_eq(req.id, "req-1");
    ck_assert_ptr_null(req.enc.batch.lengths);
    ck_assert_int_eq(req.enc.attn_mode, ENC_ATTN_HEADS); /* the default: both outputs */
    ck_assert_int_eq(req.n_out, 2);
    ck_assert_int_eq(req.out[0], V2_OUT_OUTPUTS);
    ck_assert_int_eq(req.out[1], V2_OUT_ATTENTION);
    ck_assert(!req.binary[0] && !req.binary[1]);
    ck_assert(req.enc.want_layer[0]);
    v2_request_free(&req);

    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
                "\"data\":[[[0.5,-1,0.25,2],[1.5,0,-0.5,1]]]},"
                "{\"name\":\"lengths\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[1]}]}");
    parse_ok(&req, &b, NULL);
    assert_x8(&req);
    ck_assert_int_eq(req.enc.batch.lengths[0], 1);
    v2_request_free(&req);

    /* Binary embeddings, JSON lengths. */
    b.len = 0;
    put_str(&b, "{\"inputs\":[" EMB_BIN ","
                "{\"name\":\"lengths\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[2]}]}");
    char hl[32];
    snprintf(hl, sizeof hl, "%zu", b.len);
    for (int i = 0; i < 8; i++)
        put_f32(&b, X8[i]);
    parse_ok(&req, &b, hl);
    assert_x8(&req);
    ck_assert_int_eq(req.enc.batch.lengths[0], 2);
    v2_request_free(&req);

    /* Both binary, lengths first: the bytes follow the inputs' order. */
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"lengths\",\"datatype\":\"INT32\",\"shape\":[1],"
                "\"parameters\":{\"binary_data_size\":4}}," EMB_BIN "]}");
    snprintf(hl, sizeof hl, "%zu", b.len);
    put_le32(&b, 1);
    for (int i = 0; i < 8; i++)
        put_f32(&b, X8[i]);
    parse_ok(&req, &b, hl);
    assert_x8(&req);
    ck_assert_int_eq(req.enc.batch.lengths[0], 1);
    v2_request_free(&req);

    /* JSON embeddings, binary lengths; a header with nothing after it. */
    b.len = 0;
    put_str(&b, "{\"inputs\":[" EMB_JSON ",{\"name\":\"lengths\",\"datatype\":\"INT32\","
                "\"shape\":[1],\"parameters\":{\"binary_data_size\":4}}]}");
    snprintf(hl, sizeof hl, "%zu", b.len);
    put_le32(&b, 2);
    parse_ok(&req, &b, hl);
    assert_x8(&req);
    ck_assert_int_eq(req.enc.batch.lengths[0], 2);
    v2_request_free(&req);

    b.len = 0;
    put_str(&b, "{\"inputs\":[" EMB_JSON "]}");
    snprintf(hl, sizeof hl, "%zu", b.len);
    parse_ok(&req, &b, hl);
    assert_x8(&req);
    v2_request_free(&req);
    free(b.p);
}
END_TEST

/* position_ids: INT32 [L] or [B, L], as JSON or binary in any input order,
 * for a model with positions inside attention; refusals name the input. */
START_TEST(test_parse_position_ids)
{
    enc_hparams hp = tiny_hp();
    hp.position = ENC_POS_ROPE;
    const api_limits lim = {
        .max_batch = 4, .max_seq_len = 8, .max_batch_tokens = 64, .max_attention_bytes = 1 << 20};
    v2_request req;
    api_error err = {0};
    bytes b = {0};
    /* JSON, [L] */
    put_str(&b, "{\"inputs\":[" EMB_JSON ",{\"name\":\"position_ids\",\"datatype\":\"INT32\","
                "\"shape\":[2],\"data\":[3,0]}]}");
    ck_assert_msg(
        v2_request_parse(&req, (const char *)b.p, b.len, NULL, "encoder", &hp, &lim, &err) == 0,
        "%s", err.message);
    assert_x8(&req);
    ck_assert(req.enc.batch.positions && req.enc.batch.positions[0] == 3 &&
              req.enc.batch.positions[1] == 0);
    v2_request_free(&req);
    /* binary [B, L] before the embeddings */
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"position_ids\",\"datatype\":\"INT32\",\"shape\":[1,2],"
                "\"parameters\":{\"binary_data_size\":8}}," EMB_BIN "]}");
    char hl[32];
    snprintf(hl, sizeof hl, "%zu", b.len);
    put_le32(&b, 7);
    put_le32(&b, 5);
    for (int i = 0; i < 8; i++)
        put_f32(&b, X8[i]);
    ck_assert_msg(
        v2_request_parse(&req, (const char *)b.p, b.len, hl, "encoder", &hp, &lim, &err) == 0, "%s",
        err.message);
    assert_x8(&req);
    ck_assert(req.enc.batch.positions[0] == 7 && req.enc.batch.positions[1] == 5);
    v2_request_free(&req);

    static const struct {
        const char *input, *want;
        bool no_positions;
    } bad[] = {
        {"{\"name\":\"position_ids\",\"datatype\":\"INT32\",\"shape\":[3],\"data\":[0,1,2]}",
         "inputs[1] (position_ids): shape [3]; expected [2] (every sequence) or [1, 2]", false},
        {"{\"name\":\"position_ids\",\"datatype\":\"INT64\",\"shape\":[2],\"data\":[0,1]}",
         "inputs[1] (position_ids): datatype is 'INT64'; the model takes INT32", false},
        {"{\"name\":\"position_ids\",\"datatype\":\"INT32\",\"shape\":[2],\"data\":[0,-4]}",
         "inputs[1] (position_ids)[1] = -4 is outside 0..7 (below limits.max_seq_len)", false},
        {"{\"name\":\"position_ids\",\"datatype\":\"INT32\",\"shape\":[1,2],\"data\":[[0,8]]}",
         "inputs[1] (position_ids)[0][1] = 8 is outside 0..7", false},
        {"{\"name\":\"position_ids\",\"datatype\":\"INT32\",\"shape\":[2],\"data\":[0,1]}",
         "inputs[1] (position_ids): this model has no positions inside attention", true},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b.len = 0;
        put_str(&b, "{\"inputs\":[" EMB_JSON ",");
        put_str(&b, bad[i].input);
        put_str(&b, "]}");
        enc_hparams h = hp;
        memset(&err, 0, sizeof err);
        if (bad[i].no_positions)
            h.position = ENC_POS_NONE;
        ck_assert_int_eq(
            v2_request_parse(&req, (const char *)b.p, b.len, NULL, "encoder", &h, &lim, &err), -1);
        ck_assert_msg(strstr(err.message, bad[i].want), "case %zu: '%s' lacks '%s'", i, err.message,
                      bad[i].want);
        v2_request_free(&req);
    }
    free(b.p);
}
END_TEST

/* Requested outputs: asking for "outputs" alone computes no attention. */
/* ---- token ids in ------------------------------------------------------------ */

/* An embedding module as the core describes one, for the codec alone (the
 * daemon tests below run the Hugging Face fixtures from ids). */

static void put_le64(bytes *b, uint64_t u)
{
    put_le32(b, (uint32_t)u);
    put_le32(b, (uint32_t)(u >> 32));
}

#define IDS_IN(name, dtype, shape, data)                                                           \
    "{\"name\":\"" name "\",\"datatype\":\"" dtype "\",\"shape\":" shape ",\"data\":" data "}"

/* input_ids, token_type_ids and attention_mask: INT32 or INT64, JSON flat or
 * nested, or binary (8 bytes each for INT64), in any input order. */
START_TEST(test_parse_ids)
{
    enc_hparams hp = tiny_hp();
    const api_limits lim = {.max_batch = 4,
                            .max_seq_len = 8,
                            .max_batch_tokens = 64,
                            .max_attention_bytes = 1 << 20,
                            .embedding = &FAKE_BERT};
    v2_request req;
    api_error err = {0};
    bytes b = {0};
    static const int32_t ids[6] = {1, 2, 3, 4, 5, 49}, types[6] = {0, 0, 1, 1, 1, 0};
    /* JSON: INT64 nested ids, INT32 flat types */
    put_str(&b,
            "{\"inputs\":[" IDS_IN("input_ids", "INT64", "[2,3]", "[[1,2,3],[4,5,49]]") "," IDS_IN(
                "token_type_ids", "INT32", "[2,3]", "[0,0,1,1,1,0]") "]}");
    ck_assert_msg(
        v2_request_parse(&req, (const char *)b.p, b.len, NULL, "encoder", &hp, &lim, &err) == 0,
        "%s", err.message);
    ck_assert(req.enc.batch.B == 2 && req.enc.batch.L == 3 && req.enc.batched);
    ck_assert_ptr_null(req.enc.batch.x);
    ck_assert_ptr_nonnull(req.enc.batch.ids);
    ck_assert_mem_eq(req.enc.batch.ids->input_ids, ids, sizeof ids);
    ck_assert_mem_eq(req.enc.batch.ids->token_type_ids, types, sizeof types);
    ck_assert_ptr_null(req.enc.batch.lengths);
    ck_assert_int_eq(encode_request_alloc_outputs(&req.enc, &hp, &err), 0);
    v2_request_free(&req);

    /* binary: attention_mask INT32 first, then ids INT64, then types INT64 */
    for (int dtype64 = 0; dtype64 < 2; dtype64++) {
        b.len = 0;
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"inputs\":[{\"name\":\"attention_mask\",\"datatype\":\"INT32\",\"shape\":[2,"
                 "3],\"parameters\":{\"binary_data_size\":24}},{\"name\":\"input_ids\","
                 "\"datatype\":\"%s\",\"shape\":[2,3],\"parameters\":{\"binary_data_size\":%d}},"
                 "{\"name\":\"token_type_ids\",\"datatype\":\"INT64\",\"shape\":[2,3],"
                 "\"parameters\":{\"binary_data_size\":48}}]}",
                 dtype64 ? "INT64" : "INT32", dtype64 ? 48 : 24);
        put_str(&b, json);
        char hl[32];
        snprintf(hl, sizeof hl, "%zu", b.len);
        static const int32_t am[6] = {1, 1, 1, 1, 0, 0};
        for (int i = 0; i < 6; i++)
            put_le32(&b, (uint32_t)am[i]);
        for (int i = 0; i < 6; i++) {
            if (dtype64)
                put_le64(&b, (uint64_t)(int64_t)ids[i]);
            else
                put_le32(&b, (uint32_t)ids[i]);
        }
        for (int i = 0; i < 6; i++)
            put_le64(&b, (uint64_t)(int64_t)types[i]);
        ck_assert_msg(
            v2_request_parse(&req, (const char *)b.p, b.len, hl, "encoder", &hp, &lim, &err) == 0,
            "%s", err.message);
        ck_assert_mem_eq(req.enc.batch.ids->input_ids, ids, sizeof ids);
        ck_assert_mem_eq(req.enc.batch.ids->token_type_ids, types, sizeof types);
        ck_assert(req.enc.batch.lengths && req.enc.batch.lengths[0] == 3 &&
                  req.enc.batch.lengths[1] == 1);
        ck_assert_ptr_null(req.enc.batch.mask.key_padding);
        v2_request_free(&req);
    }

    /* attention_mask with a zero inside: key padding; with lengths that agree */
    b.len = 0;
    put_str(&b, "{\"inputs\":[" IDS_IN("input_ids", "INT32", "[1,3]", "[7,8,9]") "," IDS_IN(
                    "attention_mask", "INT64", "[1,3]", "[[1,0,1]]") "," LEN_IN("INT32", "[1]",
                                                                                "[3]") "]}");
    ck_assert_msg(
        v2_request_parse(&req, (const char *)b.p, b.len, NULL, "encoder", &hp, &lim, &err) == 0,
        "%s", err.message);
    ck_assert(req.enc.batch.lengths[0] == 3);
    ck_assert(req.enc.batch.mask.key_padding && req.enc.batch.mask.key_padding[1] == 1 &&
              req.enc.batch.mask.key_padding[0] == 0 && req.enc.batch.mask.key_padding[2] == 0);
    v2_request_free(&req);

    /* refusals, each naming the input */
    static const struct {
        const char *inputs, *want;
        bool no_embedding;
    } bad[] = {
        {EMB_JSON "," IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]"),
         "inputs[1] (input_ids): give embeddings (inputs[0]) or input_ids, not both", false},
        {EMB_JSON "," IDS_IN("token_type_ids", "INT32", "[1,2]", "[0,0]"),
         "inputs[1] (token_type_ids) is only used with input_ids", false},
        {IDS_IN("input_ids", "FP32", "[1,2]", "[1,2]"),
         "inputs[0] (input_ids): datatype is 'FP32'; the model takes INT32 or INT64", false},
        {IDS_IN("input_ids", "INT32", "[2]", "[1,2]"),
         "inputs[0] (input_ids): shape [2] has 1 dimension; expected [B, L]", false},
        {IDS_IN("input_ids", "INT32", "[1,0]", "[]"),
         "inputs[0] (input_ids): shape [1, 0] is empty; B and L must be at least 1", false},
        {IDS_IN("input_ids", "INT64", "[1,2]", "[1,2147483648]"),
         "inputs[0] (input_ids): data[1] = 2147483648 is outside the INT32 range (INT64 ids and "
         "masks are read as int32)",
         false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2.5]"),
         "inputs[0] (input_ids): data[1] is a number with a fraction, not an integer", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[[1,50]]"),
         "inputs[0] (input_ids)[0][1] = 50 is outside 0..49 (the model's vocab_size is 50)", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]") "," IDS_IN("token_type_ids", "INT32",
                                                                   "[2,1]", "[0,0]"),
         "inputs[1] (token_type_ids): shape [2, 1]; expected [1, 2], as input_ids", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]") "," IDS_IN("token_type_ids", "INT32",
                                                                   "[1,2]", "[0,2]"),
         "inputs[1] (token_type_ids)[0][1] = 2 is outside 0..1", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]") "," IDS_IN("attention_mask", "INT32",
                                                                   "[1,2]", "[1,3]"),
         "inputs[1] (attention_mask)[0][1] = 3 is not 0 or 1", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]") "," IDS_IN("attention_mask", "INT32",
                                                                   "[1,2]", "[0,0]"),
         "inputs[1] (attention_mask)[0] has no 1", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]") "," IDS_IN(
             "attention_mask", "INT32", "[1,2]", "[1,0]") "," LEN_IN("INT32", "[1]", "[2]"),
         "inputs[2] (lengths)[0] = 2 but inputs[1] (attention_mask)[0] gives 1 real token", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]") "," IDS_IN("position_ids", "INT32", "[2]",
                                                                   "[0,24]"),
         "inputs[1] (position_ids)[1] = 24 is outside 0..23 (the model's position table)", false},
        {IDS_IN("input_ids", "INT32", "[1,2]", "[1,2]"),
         "inputs[0] (input_ids): this model takes embeddings, not input_ids", true},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b.len = 0;
        put_str(&b, "{\"inputs\":[");
        put_str(&b, bad[i].inputs);
        put_str(&b, "]}");
        api_limits l = lim;
        if (bad[i].no_embedding)
            l.embedding = NULL;
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(
            v2_request_parse(&req, (const char *)b.p, b.len, NULL, "encoder", &hp, &l, &err), -1);
        ck_assert_int_eq(err.kind, API_BAD_REQUEST);
        ck_assert_msg(strstr(err.message, bad[i].want), "case %zu:\n  '%s'\n  lacks '%s'", i,
                      err.message, bad[i].want);
        v2_request_free(&req);
    }
    /* INT64 binary outside int32, named with its element */
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,2],"
                "\"parameters\":{\"binary_data_size\":16}}]}");
    char hl[32];
    snprintf(hl, sizeof hl, "%zu", b.len);
    put_le64(&b, 3);
    put_le64(&b, (uint64_t)-4294967296LL);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(
        v2_request_parse(&req, (const char *)b.p, b.len, hl, "encoder", &hp, &lim, &err), -1);
    ck_assert_str_eq(err.message, "inputs[0] (input_ids): binary element 1 ([0][1]) = -4294967296 "
                                  "is outside the INT32 range (INT64 ids and masks are read as "
                                  "int32)");
    v2_request_free(&req);
    /* ... and a size that is the INT32 one */
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,2],"
                "\"parameters\":{\"binary_data_size\":8}}]}");
    snprintf(hl, sizeof hl, "%zu", b.len);
    put_le32(&b, 3);
    put_le32(&b, 4);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(
        v2_request_parse(&req, (const char *)b.p, b.len, hl, "encoder", &hp, &lim, &err), -1);
    ck_assert_str_eq(err.message, "inputs[0] (input_ids): binary_data_size is 8 but shape [1, 2] "
                                  "of INT64 needs 16 bytes");
    v2_request_free(&req);
    free(b.p);
}
END_TEST

/* The model metadata lists the inputs the model takes: ids only with an
 * embedding module, token types only where it has them. */
START_TEST(test_model_metadata_inputs)
{
    enc_hparams hp = tiny_hp();
    const char *const plain[] = {"embeddings", "lengths", "attention_mask", NULL};
    const char *const bert[] = {"embeddings", "lengths",        "position_ids",
                                "input_ids",  "token_type_ids", "attention_mask",
                                NULL};
    const char *const distil[] = {"embeddings", "lengths",        "position_ids",
                                  "input_ids",  "attention_mask", NULL};
    enc_embedding_info no_types = FAKE_BERT;
    no_types.type_vocab_size = 0;
    const struct {
        const enc_embedding_info *e;
        const char *const *names;
    } cases[] = {{NULL, plain}, {&FAKE_BERT, bert}, {&no_types, distil}};
    for (size_t c = 0; c < 3; c++) {
        char *text = v2_model_metadata("encoder", &hp, cases[c].e, false);
        ck_assert_ptr_nonnull(text);
        json_error_t je;
        json_t *j = json_loads(text, 0, &je);
        ck_assert_ptr_nonnull(j);
        json_t *in = json_object_get(j, "inputs");
        size_t n = 0;
        while (cases[c].names[n])
            n++;
        ck_assert_msg(json_array_size(in) == n, "case %zu: %s", c, text);
        for (size_t k = 0; k < n; k++) {
            json_t *e = json_array_get(in, k);
            ck_assert_str_eq(json_string_value(json_object_get(e, "name")), cases[c].names[k]);
            const char *dt = json_string_value(json_object_get(e, "datatype"));
            const char *name = cases[c].names[k];
            const char *want = strcmp(name, "embeddings") == 0 ? "FP32"
                               : strcmp(name, "lengths") == 0 || strcmp(name, "position_ids") == 0
                                   ? "INT32"
                                   : "INT64";
            ck_assert_msg(strcmp(dt, want) == 0, "%s: %s, want %s", name, dt, want);
        }
        json_decref(j);
        free(text);
    }
}
END_TEST

START_TEST(test_parse_outputs)
{
    enc_hparams hp = tiny_hp();
    v2_request req;
    api_error err = {0};
    bytes b = {0};
    put_str(&b, "{\"inputs\":[" EMB_JSON "],\"outputs\":[{\"name\":\"outputs\"}]}");
    parse_ok(&req, &b, NULL);
    ck_assert_int_eq(req.enc.attn_mode, ENC_ATTN_NONE);
    ck_assert(!req.enc.want_layer[0]);
    ck_assert_int_eq(req.n_out, 1);
    ck_assert_int_eq(encode_request_alloc_outputs(&req.enc, &hp, &err), 0);
    enc_result res = encode_request_result(&req.enc);
    ck_assert_int_eq(res.attn_mode, ENC_ATTN_NONE);
    ck_assert_ptr_null(res.attn);
    ck_assert_ptr_null(req.enc.attn[0]);
    v2_request_free(&req);

    /* binary_data_output for all, overridden per output; listed order kept. */
    b.len = 0;
    put_str(&b, "{\"inputs\":[" EMB_JSON "],\"parameters\":{\"binary_data_output\":true,"
                "\"attention\":\"mean\"},\"outputs\":[{\"name\":\"attention\"},"
                "{\"name\":\"outputs\",\"parameters\":{\"binary_data\":false}}]}");
    parse_ok(&req, &b, NULL);
    ck_assert_int_eq(req.enc.attn_mode, ENC_ATTN_MEAN);
    ck_assert_int_eq(req.n_out, 2);
    ck_assert_int_eq(req.out[0], V2_OUT_ATTENTION);
    ck_assert_int_eq(req.out[1], V2_OUT_OUTPUTS);
    ck_assert(req.binary[V2_OUT_ATTENTION] && !req.binary[V2_OUT_OUTPUTS]);
    v2_request_free(&req);

    /* null is the same as absent. */
    b.len = 0;
    put_str(&b, "{\"id\":null,\"inputs\":[" EMB_JSON "],\"parameters\":null,\"outputs\":null}");
    parse_ok(&req, &b, NULL);
    ck_assert_ptr_null(req.id);
    ck_assert_int_eq(req.enc.attn_mode, ENC_ATTN_HEADS);
    ck_assert_int_eq(req.n_out, 2);
    v2_request_free(&req);

    /* attention "none" and no outputs list: outputs only. */
    b.len = 0;
    put_str(&b, "{\"inputs\":[" EMB_JSON "],\"parameters\":{\"attention\":\"none\"}}");
    parse_ok(&req, &b, NULL);
    ck_assert_int_eq(req.enc.attn_mode, ENC_ATTN_NONE);
    ck_assert_int_eq(req.n_out, 1);
    ck_assert_int_eq(req.out[0], V2_OUT_OUTPUTS);
    v2_request_free(&req);
    free(b.p);
}
END_TEST

/* Mask options as request parameters, in their scalar and JSON forms. */
START_TEST(test_parse_mask_parameters)
{
    v2_request req;
    bytes b = {0};
    put_str(&b, "{\"inputs\":[" EMB_JSON "],\"parameters\":{\"causal\":true,\"window\":1,"
                "\"global\":[1],\"key_padding\":[[false,true]],\"attn\":[[0,-1e39],[0.5,0]]}}");
    parse_ok(&req, &b, NULL);
    const enc_mask *m = &req.enc.batch.mask;
    ck_assert(m->causal);
    ck_assert_int_eq(m->window_left, 1);
    ck_assert_int_eq(m->window_right, 1);
    ck_assert_uint_eq(m->n_global, 1);
    ck_assert_int_eq(m->global[0], 1);
    ck_assert_int_eq(m->key_padding[0], 0);
    ck_assert_int_eq(m->key_padding[1], 1);
    ck_assert_int_eq(m->attn_kind, ENC_MASK_ADD);
    ck_assert(isinf(m->attn_add[1]) && m->attn_add[1] < 0);
    ck_assert(m->attn_add[2] == 0.5f);
    v2_request_free(&req);

    /* Scalar-only clients: window_left / window_right, JSON in strings. */
    b.len = 0;
    put_str(&b, "{\"inputs\":[" EMB_JSON "],\"parameters\":{\"window_left\":0,"
                "\"global\":\"[0]\",\"attn\":\"[[false,true],[false,false]]\"}}");
    parse_ok(&req, &b, NULL);
    m = &req.enc.batch.mask;
    ck_assert(!m->causal);
    ck_assert_int_eq(m->window_left, 0);
    ck_assert_int_eq(m->window_right, ENC_WINDOW_NONE);
    ck_assert_int_eq(m->global[0], 0);
    ck_assert_int_eq(m->attn_kind, ENC_MASK_BOOL);
    ck_assert_int_eq(m->attn_bool[1], 1);
    ck_assert_int_eq(m->attn_bool[2], 0);
    v2_request_free(&req);
    free(b.p);
}
END_TEST

/* ---- the data arrays read from the text -------------------------------------------- */

/* Parses body; then the same body with "inputs" spelled with an escape, which
 * jansson reads as the same key but the text scan does not follow, so every
 * number goes through jansson.  Both must agree: the same floats bit for bit,
 * or the same status and message.  Returns the first outcome's rc. */
static int parse_both_ways(const char *body, v2_request *out, api_error *err)
{
    enc_hparams hp = tiny_hp();
    const char *key = strstr(body, "\"inputs\"");
    ck_assert_ptr_nonnull(key);
    char *escaped = xcalloc(strlen(body) + 8, 1);
    memcpy(escaped, body, (size_t)(key - body));
    strcat(escaped, "\"\\u0069nputs\"");
    strcat(escaped, key + 8);
    v2_request slow;
    api_error e2 = {0};
    int rc = v2_request_parse(out, body, strlen(body), NULL, "encoder", &hp, NULL, err);
    int rc2 = v2_request_parse(&slow, escaped, strlen(escaped), NULL, "encoder", &hp, NULL, &e2);
    ck_assert_msg(rc == rc2, "%s: %d (%s) vs %d (%s)", body, rc, err->message, rc2, e2.message);
    if (rc == 0) {
        size_t n = (size_t)out->enc.batch.B * (size_t)out->enc.batch.L * 4;
        ck_assert_int_eq(slow.enc.batch.L, out->enc.batch.L);
        for (size_t k = 0; k < n; k++) /* == : jansson reads the integer -0 as 0 */
            ck_assert_msg(out->enc.x[k] == slow.enc.x[k], "x[%zu]: %a vs %a", k,
                          (double)out->enc.x[k], (double)slow.enc.x[k]);
        ck_assert_int_eq(!out->enc.lengths, !slow.enc.lengths);
        if (out->enc.lengths)
            ck_assert_int_eq(out->enc.lengths[0], slow.enc.lengths[0]);
    } else {
        ck_assert_int_eq(err->kind, e2.kind);
        /* The escape moves line 1's columns by 5: compare the line only. */
        const char *col = strstr(err->message, ", column "),
                   *col2 = strstr(e2.message, ", column ");
        if (strncmp(err->message, "invalid JSON at line 1,", 23) == 0 && col && col2)
            ck_assert_int_eq(strncmp(err->message, e2.message, (size_t)(col - err->message)), 0);
        else
            ck_assert_str_eq(err->message, e2.message);
    }
    v2_request_free(&slow);
    free(escaped);
    return rc;
}

START_TEST(test_text_numbers)
{
    /* Every spelling of a number against (float)strtod of the same text. */
    static const char *const nums[] = {
        "0", "-0", "1e-3", "1E+2", "0.1", "-1.5", "3.4028234e38", "-3.4028234663852886e38", "1e-46",
        "2.5e-7", "1.17549435e-38", "12345678901234567890123456789e-10", "7", "1e0", "-0.0",
        "0.000000000000000000001",
        /* integers beyond int64 are numbers (JSON.stringify(1e20)) */
        "100000000000000000000", "-9223372036854775809", "123456789012345678901234567890", "1"};
    const size_t n = sizeof nums / sizeof *nums;
    ck_assert_uint_eq(n % 4, 0);
    char body[2048];
    for (int nested = 0; nested < 2; nested++) {
        size_t at = (size_t)snprintf(body, sizeof body,
                                     "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":"
                                     "\"FP32\",\"shape\":[1,%zu,4],\"data\":[%s",
                                     n / 4, nested ? "[" : "");
        for (size_t k = 0; k < n; k++)
            at += (size_t)snprintf(body + at, sizeof body - at, "%s%s%s%s",
                                   nested && k % 4 == 0 ? "[" : "", nums[k],
                                   nested && k % 4 == 3 ? "]" : "", k + 1 < n ? " ,\n " : "");
        snprintf(body + at, sizeof body - at, "%s]}]}", nested ? "]" : "");
        v2_request req;
        api_error err = {0};
        ck_assert_int_eq(parse_both_ways(body, &req, &err), 0);
        for (size_t k = 0; k < n; k++) {
            float want = (float)strtod(nums[k], NULL);
            ck_assert_msg(memcmp(&req.enc.x[k], &want, sizeof want) == 0, "%s: %a, want %a",
                          nums[k], (double)req.enc.x[k], (double)want);
        }
        v2_request_free(&req);
    }
    /* The malformed data of the table, and a syntax error after the array
     * (jansson's line and column are the body's). */
    static const char *const bad[] = {
        INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1.5,0,-0.5]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],[5,6,7]]]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[[1,2,3,4,5,6,7,8]]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],5]]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],[5,6,7,[8]]]]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[1,2,3,[4],5,6,7,8]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1e39,0,-0.5,1]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,-1e39,0,-0.5,1]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[1.5]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[1e0]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[4294967298]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[2147483648]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[-2147483649]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[-2147483648]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[[2]]")),
        INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[-0]")),
        "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
        "\"data\":[0.5,\n-1,\n0.25,2,1.5,0,\n-0.5,1]}]\n,,}",
        "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
        "\"data\":[0.5,-1,0.25,2,1.5,0,-0.5,01]}]}",
        INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1e400,0,-0.5,1]")),
        /* past float32's range (an integer of any size is a number) */
        INFER(EMB_IN("FP32", "[1,2,4]",
                     "[0.5,-1,0.25,2,1234567890123456789012345678901234567890,0,-0.5,1]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1e-400,0,-0.5,1,9]")),
        INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1.,0,-0.5,1]")),
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        v2_request req;
        api_error err = {0};
        ck_assert_msg(parse_both_ways(bad[k], &req, &err) == -1, "%s accepted", bad[k]);
        v2_request_free(&req);
    }
    /* The line of the syntax error is the body's: line 4. */
    v2_request req;
    api_error err = {0};
    parse_both_ways(bad[16], &req, &err);
    ck_assert_msg(strstr(err.message, "at line 5, column 2"), "%s", err.message);
    v2_request_free(&req);
}
END_TEST

/* jansson's allocations while parsing, to see the data arrays bypass it. */
static size_t json_allocs;
static void *counting_malloc(size_t n)
{
    json_allocs++;
    return malloc(n);
}

START_TEST(test_text_numbers_bypass_jansson)
{
    json_malloc_t old_malloc;
    json_free_t old_free;
    json_get_alloc_funcs(&old_malloc, &old_free);
    json_set_alloc_funcs(counting_malloc, free);
    enc_hparams hp = tiny_hp();
    bytes b = {0};
    for (int escaped = 0; escaped < 2; escaped++) {
        b.len = 0;
        put_str(&b, escaped ? "{\"\\u0069nputs\"" : "{\"inputs\"");
        put_str(&b, ":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,256,4],"
                    "\"data\":[");
        for (int k = 0; k < 1024; k++)
            put_str(&b, k ? ",0.25" : "0.25");
        put_str(&b, "]}]}");
        json_allocs = 0;
        v2_request req;
        api_error err = {0};
        int rc = v2_request_parse(&req, (const char *)b.p, b.len, NULL, "encoder", &hp, NULL, &err);
        size_t allocs = json_allocs;
        ck_assert_msg(rc == 0, "%s", err.message);
        ck_assert(req.enc.x[1023] == 0.25f);
        v2_request_free(&req);
        /* "\u0069nputs" is "inputs" (jsontext.h): read as text too */
        ck_assert_msg(allocs < 64, "%zu jansson allocations for 1024 numbers read as text%s",
                      allocs, escaped ? " (key written with an escape)" : "");
    }
    json_set_alloc_funcs(old_malloc, old_free);
    free(b.p);
}
END_TEST

/* ---- malformed requests: one table, through the codec and the daemon ----------- */

typedef struct bad_case {
    const char *json;   /* the JSON header */
    const char *header; /* Inference-Header-Content-Length: NULL none, "" the JSON's length */
    int floats;         /* float32 values of X8 (cycled) after the JSON */
    int extra;          /* bytes more (0xab) */
    int nan_at;         /* >= 0: that float is NaN */
    int status;
    const char *want; /* in the error message */
} bad_case;

static const bad_case bad_cases[] = {
    /* the JSON header */
    {"{\"inputs\": [", NULL, 0, 0, -1, 400, "invalid JSON at line 1"},
    {"[1]", NULL, 0, 0, -1, 400, "must be a JSON object, not an array"},
    {"{\"inputz\":[]}", NULL, 0, 0, -1, 400, "unknown field 'inputz'"},
    {"{\"inputs\":[" EMB_JSON "],\"inputs\":[]}", NULL, 0, 0, -1, 400, "duplicate object key"},
    {"{}", NULL, 0, 0, -1, 400, "inputs must be a non-empty array"},
    {"{\"inputs\":[]}", NULL, 0, 0, -1, 400, "inputs must be a non-empty array"},
    {"{\"id\":5,\"inputs\":[" EMB_JSON "]}", NULL, 0, 0, -1, 400, "id must be a string"},
    {"{\"model_name\":\"other\",\"inputs\":[" EMB_JSON "]}", NULL, 0, 0, -1, 400,
     "model_name is 'other' but the URL names model 'encoder'"},
    /* inputs */
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[2]") ",{\"name\":\"tokens\",\"datatype\":"
                                                      "\"INT32\",\"shape\":[1],\"data\":[1]}"),
     NULL, 0, 0, -1, 400, "inputs[2]: unknown input 'tokens'"},
    {INFER(EMB_JSON "," EMB_JSON), NULL, 0, 0, -1, 400,
     "inputs[1]: input 'embeddings' is given twice"},
    {INFER(LEN_IN("INT32", "[1]", "[1]")), NULL, 0, 0, -1, 400, "input 'embeddings' is required"},
    {INFER("3"), NULL, 0, 0, -1, 400, "inputs[0] is a number; expected an object"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON
           ",\"contents\":{}}"),
     NULL, 0, 0, -1, 400, "inputs[0]: unknown field 'contents'"},
    {INFER("{\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON "}"), NULL, 0, 0, -1, 400,
     "inputs[0] has no name"},
    {INFER(EMB_IN("FP64", "[1,2,4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): datatype is 'FP64'; the model takes FP32"},
    {INFER(EMB_JSON "," LEN_IN("INT64", "[1]", "[2]")), NULL, 0, 0, -1, 400,
     "inputs[1] (lengths): datatype is 'INT64'; the model takes INT32"},
    {INFER("{\"name\":\"embeddings\",\"shape\":[1,2,4],\"data\":" X8_JSON "}"), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings) has no datatype"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"data\":" X8_JSON "}"), NULL, 0, 0, -1,
     400, "inputs[0] (embeddings) has no shape"},
    {INFER(EMB_IN("FP32", "[2,4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "shape [2, 4] has 2 dimensions; expected [B, L, 4]"},
    {INFER(EMB_IN("FP32", "[1,2,5]", "[1,2,3,4,5,6,7,8,9,10]")), NULL, 0, 0, -1, 400,
     "shape[2] = 5 but d_model is 4"},
    {INFER(EMB_IN("FP32", "[-1,2,4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): shape[0] is negative"},
    {INFER(EMB_IN("FP32", "[1,\"2\",4]", X8_JSON)), NULL, 0, 0, -1, 400,
     "shape[1] is a string; expected a non-negative integer"},
    {INFER(EMB_IN("FP32", "[0,2,4]", "[]")), NULL, 0, 0, -1, 400,
     "shape [0, 2, 4] is empty; B and L must be at least 1"},
    /* shape and data that disagree */
    {INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1.5,0,-0.5]")), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): data has 7 entries; shape [1, 2, 4] has 8"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],[5,6,7]]]")), NULL, 0, 0, -1, 400,
     "data[0][1] has 3 entries; shape [1, 2, 4] says 4"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[1,2,3,4,5,6,7,8]]")), NULL, 0, 0, -1, 400,
     "data[0] has 8 entries; shape [1, 2, 4] says 2"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[[1,2,3,4],5]]")), NULL, 0, 0, -1, 400,
     "data[0][1] is a number; shape [1, 2, 4] needs an array of 4 here"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "{\"x\":1}")), NULL, 0, 0, -1, 400, "data must be an array"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,\"2\",1.5,0,-0.5,1]")), NULL, 0, 0, -1, 400,
     "inputs[0] (embeddings): data[3] is a string, not a number"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[[[0.5,-1,0.25,2],[1.5,true,-0.5,1]]]")), NULL, 0, 0, -1, 400,
     "data[0][1][1] is a boolean, not a number"},
    {INFER(EMB_IN("FP32", "[1,2,4]", "[0.5,-1,0.25,2,1e39,0,-0.5,1]")), NULL, 0, 0, -1, 400,
     "data[4] = 1e+39 is outside the float32 range"},
    /* lengths */
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[3]")), NULL, 0, 0, -1, 400,
     "inputs[1] (lengths): lengths[0] = 3 is outside 1..2"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[0]")), NULL, 0, 0, -1, 400,
     "lengths[0] = 0 is outside 1..2"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[2]", "[2,2]")), NULL, 0, 0, -1, 400,
     "inputs[1] (lengths): shape [2]; expected [1]"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[1.5]")), NULL, 0, 0, -1, 400,
     "data[0] is a number with a fraction, not an integer"},
    {INFER(EMB_JSON "," LEN_IN("INT32", "[1]", "[4294967298]")), NULL, 0, 0, -1, 400,
     "data[0] = 4294967298 is outside the INT32 range"},
    /* data and binary_data_size */
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON
           ",\"parameters\":{\"binary_data_size\":32}}"),
     "", 8, 0, -1, 400, "has both data and parameters.binary_data_size"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4]}"), NULL, 0, 0, -1,
     400, "inputs[0] (embeddings) has no data"},
    {INFER(EMB_BIN), NULL, 0, 0, -1, 400,
     "has parameters.binary_data_size but the request has no Inference-Header-Content-Length"},
    {INFER(EMB_BIN), NULL, 8, 0, -1, 400, "needs an Inference-Header-Content-Length header"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":\"32\"}}"),
     "", 8, 0, -1, 400, "parameters.binary_data_size must be an integer, not a string"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":32,\"shared_memory_region\":\"r\"}}"),
     "", 8, 0, -1, 400,
     "inputs[0] (embeddings): parameters: unknown parameter "
     "'shared_memory_region'"},
    /* sizes that lie */
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":28}}"),
     "", 7, 0, -1, 400, "binary_data_size is 28 but shape [1, 2, 4] of FP32 needs 32 bytes"},
    {INFER("{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"
           "\"parameters\":{\"binary_data_size\":36}}"),
     "", 9, 0, -1, 400, "binary_data_size is 36 but shape [1, 2, 4] of FP32 needs 32 bytes"},
    {INFER(EMB_BIN), "", 7, 0, -1, 400,
     "binary_data_size 32 runs past the end of the body: only 28 bytes follow"},
    {INFER(EMB_BIN), "", 8, 3, -1, 400,
     "3 bytes after the 105-byte JSON header are claimed by no input's binary_data_size"},
    {INFER(EMB_JSON), "", 0, 1, -1, 400, "1 byte after the"},
    {INFER(EMB_BIN "," LEN_IN("INT32", "[1]", "[2]")), "", 8, 4, -1, 400, "4 bytes after the"},
    {INFER(EMB_BIN ",{\"name\":\"lengths\",\"datatype\":\"INT32\",\"shape\":[1],"
                   "\"parameters\":{\"binary_data_size\":4}}"),
     "", 8, 0, -1, 400,
     "inputs[1] (lengths): binary_data_size 4 runs past the end of the body: only 0 bytes "
     "follow the 191-byte JSON header and the inputs before it"},
    /* the header length */
    {INFER(EMB_BIN), "100000", 8, 0, -1, 400,
     "Inference-Header-Content-Length 100000 is past the end of the body (137 bytes)"},
    {INFER(EMB_BIN), "12x", 8, 0, -1, 400,
     "Inference-Header-Content-Length '12x' is not a byte count"},
    {INFER(EMB_BIN), "-5", 8, 0, -1, 400,
     "Inference-Header-Content-Length '-5' is not a byte count"},
    {INFER(EMB_BIN), "20", 8, 0, -1, 400,
     "invalid JSON header (the first Inference-Header-Content-Length bytes)"},
    /* binary values */
    {INFER(EMB_BIN), "", 8, 0, 5, 400,
     "inputs[0] (embeddings): binary element 5 ([0][1][1]) is NaN"},
    /* request parameters */
    {WITH_PARAMS("\"causul\":true"), NULL, 0, 0, -1, 400,
     "parameters: unknown parameter 'causul'; expected attention, causal"},
    {WITH_PARAMS("\"attention\":\"max\""), NULL, 0, 0, -1, 400,
     "parameters.attention must be \"heads\", \"mean\" or \"none\", not 'max'"},
    {WITH_PARAMS("\"causal\":\"yes\""), NULL, 0, 0, -1, 400,
     "parameters.causal must be true or false, not a string"},
    {WITH_PARAMS("\"window\":-1"), NULL, 0, 0, -1, 400,
     "parameters.window = -1 must not be negative"},
    {WITH_PARAMS("\"window_right\":-2"), NULL, 0, 0, -1, 400,
     "parameters.window_right = -2 must not be negative"},
    {WITH_PARAMS("\"window\":1,\"window_left\":1"), NULL, 0, 0, -1, 400,
     "give window, or window_left and window_right, not both"},
    {WITH_PARAMS("\"global\":\"[0,\""), NULL, 0, 0, -1, 400,
     "parameters.global: the string '[0,' is not valid JSON"},
    /* integers of any size are numbers (JavaScript writes 1e20 so), also in
     * a string holding JSON: the parameter names itself */
    {WITH_PARAMS("\"global\":\"[100000000000000000000]\""), NULL, 0, 0, -1, 400,
     "parameters.global[0] is a number; expected a position 0..1"},
    {WITH_PARAMS("\"window\":100000000000000000000"), NULL, 0, 0, -1, 400,
     "parameters.window must be a non-negative integer or {\"left\": int, \"right\": int}, "
     "not a number"},
    {WITH_PARAMS("\"global\":[5]"), NULL, 0, 0, -1, 400,
     "parameters.global[0] = 5 is outside 0..1"},
    {WITH_PARAMS("\"key_padding\":[[false]]"), NULL, 0, 0, -1, 400,
     "parameters.key_padding[0] has 1 entry; L is 2"},
    {WITH_PARAMS("\"attn\":[[true,1],[0,0]]"), NULL, 0, 0, -1, 400,
     "parameters.attn mixes booleans and numbers"},
    {WITH_PARAMS("\"binary_data_output\":1"), NULL, 0, 0, -1, 400,
     "parameters.binary_data_output must be true or false"},
    {"{\"inputs\":[" EMB_JSON "],\"parameters\":[]}", NULL, 0, 0, -1, 400,
     "parameters must be an object, not an array"},
    /* requested outputs */
    {WITH_OUTPUTS("{\"name\":\"logits\"}"), NULL, 0, 0, -1, 400,
     "outputs[0]: unknown output 'logits'; the model gives outputs and attention"},
    {WITH_OUTPUTS("{\"name\":\"outputs\"},{\"name\":\"outputs\"}"), NULL, 0, 0, -1, 400,
     "outputs[1]: output 'outputs' is asked for twice"},
    {"{\"inputs\":[" EMB_JSON "],\"parameters\":{\"attention\":\"none\"},"
     "\"outputs\":[{\"name\":\"attention\"}]}",
     NULL, 0, 0, -1, 400, "outputs[0] asks for attention but parameters.attention is \"none\""},
    {WITH_OUTPUTS("{\"name\":\"outputs\",\"parameters\":{\"classification\":2}}"), NULL, 0, 0, -1,
     400, "outputs[0] (outputs): parameters: unknown parameter 'classification'"},
    {WITH_OUTPUTS("{\"name\":\"outputs\",\"parameters\":{\"binary_data\":\"true\"}}"), NULL, 0, 0,
     -1, 400, "parameters.binary_data must be true or false, not a string"},
    {WITH_OUTPUTS("{\"nam\":\"outputs\"}"), NULL, 0, 0, -1, 400, "outputs[0]: unknown field 'nam'"},
    {"{\"inputs\":[" EMB_JSON "],\"outputs\":{}}", NULL, 0, 0, -1, 400, "outputs must be an array"},
};
#define N_BAD (int)(sizeof bad_cases / sizeof *bad_cases)

/* The body of a bad case, and its header value in hl (NULL: no header). */
static const char *bad_body(const bad_case *c, bytes *b, char hl[32])
{
    b->len = 0;
    put_str(b, c->json);
    for (int i = 0; i < c->floats; i++)
        put_f32(b, i == c->nan_at ? NAN : X8[i % 8]);
    for (int i = 0; i < c->extra; i++)
        put(b, "\xab", 1);
    if (!c->header)
        return NULL;
    if (c->header[0])
        snprintf(hl, 32, "%s", c->header);
    else
        snprintf(hl, 32, "%zu", strlen(c->json));
    return hl;
}

START_TEST(test_parse_malformed)
{
    const bad_case *c = &bad_cases[_i];
    enc_hparams hp = tiny_hp();
    bytes b = {0};
    char hl[32];
    const char *h = bad_body(c, &b, hl);
    v2_request req;
    api_error err = {0};
    int rc = v2_request_parse(&req, (const char *)b.p, b.len, h, "encoder", &hp, NULL, &err);
    ck_assert_msg(rc == -1, "case %d (%s) accepted", _i, c->json);
    ck_assert_msg(api_error_status(err.kind) == c->status, "case %d: status %d (%s)", _i,
                  api_error_status(err.kind), err.message);
    ck_assert_msg(strstr(err.message, c->want), "case %d: message '%s' lacks '%s'", _i, err.message,
                  c->want);
    v2_request_free(&req);
    free(b.p);
}
END_TEST

/* Limits, before anything sized by B and L is allocated: 413 naming them. */
START_TEST(test_parse_limits)
{
    enc_hparams hp = tiny_hp();
    api_limits lim = {.max_batch = 2,
                      .max_seq_len = 8,
                      .max_batch_tokens = 12,
                      .max_attention_bytes = 2 * 2 * 4 * 4 * 4};
    static const struct {
        const char *shape;
        const char *extra;
        int status;
        const char *want;
    } cases[] = {
        {"[3,1,4]", "", 413, "batch of 3 sequences is over limits.max_batch (2)"},
        {"[1,9,4]", "", 413, "sequence length 9 is over limits.max_seq_len (8)"},
        {"[2,7,4]", "", 413, "= 14 tokens is over limits.max_batch_tokens (12)"},
        {"[2,5,4]", "", 413, "is over limits.max_attention_bytes (256)"},
        /* the same shape without the attention output: allowed (shape and
         * data then disagree, which is only found after the limits) */
        {"[2,5,4]", ",\"outputs\":[{\"name\":\"outputs\"}]", 400, "data has 8 entries"},
        {"[2,5,4]", ",\"parameters\":{\"attention\":\"mean\"}", 400, "data has 8 entries"},
        {"[1000000000,1000000000,4]", "", 413, "over limits.max_batch"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char body[512];
        snprintf(body, sizeof body, "{\"inputs\":[" EMB_IN("FP32", "%s", X8_JSON) "]%s}",
                 cases[i].shape, cases[i].extra);
        v2_request req;
        api_error err = {0};
        ck_assert_int_eq(
            v2_request_parse(&req, body, strlen(body), NULL, "encoder", &hp, &lim, &err), -1);
        ck_assert_msg(api_error_status(err.kind) == cases[i].status, "%s: %d %s", body,
                      api_error_status(err.kind), err.message);
        ck_assert_msg(strstr(err.message, cases[i].want), "'%s' lacks '%s'", err.message,
                      cases[i].want);
        if (cases[i].status == 413)
            ck_assert_ptr_null(req.enc.x); /* nothing sized by B, L was allocated */
        v2_request_free(&req);
    }
}
END_TEST

/* The response, byte for byte as the protocol documents write it. */
START_TEST(test_response_bytes)
{
    enc_hparams hp = tiny_hp();
    hp.d_model = 2;
    hp.n_heads = 1;
    hp.n_kv_heads = 1;
    api_error err = {0};
    v2_request req;
    const char *body = "{\"id\":\"q\\\"1\",\"inputs\":[{\"name\":\"embeddings\",\"datatype\":"
                       "\"FP32\",\"shape\":[1,2,2],\"data\":[1,2,3,4]}],\"outputs\":[{\"name\":"
                       "\"attention\",\"parameters\":{\"binary_data\":true}},{\"name\":"
                       "\"outputs\"}]}";
    ck_assert_int_eq(v2_request_parse(&req, body, strlen(body), NULL, "enc", &hp, NULL, &err), 0);
    ck_assert_int_eq(encode_request_alloc_outputs(&req.enc, &hp, &err), 0);
    const float out[4] = {1.0f, -2.5f, 0.125f, 3.0f}, attn[4] = {1.0f, 0.0f, 0.25f, 0.75f};
    memcpy(req.enc.out, out, sizeof out);
    memcpy(req.enc.attn[0], attn, sizeof attn);
    size_t len = 0, hlen = 0;
    char *resp = v2_response(&req, "enc", &hp, &len, &hlen, 0);
    ck_assert_ptr_nonnull(resp);
    const char want_json[] = "{\"model_name\":\"enc\",\"model_version\":\"1\",\"id\":\"q\\\"1\","
                             "\"parameters\":{\"attention_scores\":0},\"outputs\":["
                             "{\"name\":\"attention\",\"datatype\":\"FP32\",\"shape\":[1,1,2,2],"
                             "\"parameters\":{\"binary_data_size\":16}},"
                             "{\"name\":\"outputs\",\"datatype\":\"FP32\",\"shape\":[1,2,2],"
                             "\"data\":[1,-2.5,0.125,3]}]}";
    /* 1.0, 0.0, 0.25, 0.75 as little-endian IEEE 754 single precision */
    const unsigned char want_bin[16] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00,
                                        0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x40, 0x3f};
    ck_assert_uint_eq(hlen, strlen(want_json));
    ck_assert_uint_eq(len, hlen + 16);
    ck_assert_msg(memcmp(resp, want_json, hlen) == 0, "JSON: %.*s", (int)hlen, resp);
    ck_assert_mem_eq(resp + hlen, want_bin, 16);
    free(resp);

    /* All JSON: no header length, the mean attention [B, L, L]. */
    req.binary[V2_OUT_ATTENTION] = false;
    resp = v2_response(&req, "enc", &hp, &len, &hlen, 12);
    ck_assert_uint_eq(hlen, 0);
    ck_assert_str_eq(resp, "{\"model_name\":\"enc\",\"model_version\":\"1\",\"id\":\"q\\\"1\","
                           "\"parameters\":{\"attention_scores\":12},\"outputs\":[{\"name\":"
                           "\"attention\",\"datatype\":\"FP32\",\"shape\":"
                           "[1,1,2,2],\"data\":[1,0,0.25,0.75]},{\"name\":\"outputs\","
                           "\"datatype\":\"FP32\",\"shape\":[1,2,2],\"data\":[1,-2.5,0.125,3]}]}");
    ck_assert_uint_eq(len, strlen(resp));
    free(resp);
    v2_request_free(&req);

    char *meta = v2_server_metadata("9.9");
    ck_assert_str_eq(meta, "{\"name\":\"attnd\",\"version\":\"9.9\",\"extensions\":"
                           "[\"binary_tensor_data\"]}");
    free(meta);
}
END_TEST

/* ---- the daemon ------------------------------------------------------------------- */

static json_t *parse_json(const char *text, size_t len)
{
    json_error_t e;
    json_t *j = json_loadb(text, len, 0, &e);
    ck_assert_msg(j != NULL, "not JSON (%s): %.300s", e.text, text);
    return j;
}

/* A v2 error: the status and {"error": "<message containing want>"}. */
static void assert_v2_error(const http_resp *r, long status, const char *want)
{
    ck_assert_msg(r->status == status, "status %ld, want %ld: %.300s", r->status, status, r->body);
    json_t *j = parse_json(r->body, r->len);
    const char *msg = json_string_value(json_object_get(j, "error"));
    ck_assert_msg(msg && json_object_size(j) == 1, "not {\"error\": string}: %s", r->body);
    ck_assert_msg(strstr(msg, want), "message '%s' lacks '%s'", msg, want);
    json_decref(j);
}

static void get(const char *path, http_resp *r)
{
    ck_assert_int_eq(http_do(dp.port, "GET", path, NULL, 0, NULL, r), 0);
}

static int post_infer(const char *path, const bytes *b, const char *header_len, http_resp *r)
{
    char h[96];
    const char *hdr[] = {NULL, NULL};
    if (header_len) {
        snprintf(h, sizeof h, "Inference-Header-Content-Length: %s", header_len);
        hdr[0] = h;
    }
    return http_do(dp.port, "POST", path, (const char *)b->p, b->len, hdr, r);
}

START_TEST(test_routes)
{
    start_or_fail(small_v2, NULL);
    http_resp r;
    get("/v2", &r);
    ck_assert_int_eq(r.status, 200);
    json_t *j = parse_json(r.body, r.len);
    ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "attnd");
    ck_assert(json_is_string(json_object_get(j, "version")));
    json_t *ext = json_object_get(j, "extensions");
    bool binary = false;
    for (size_t i = 0; i < json_array_size(ext); i++)
        binary =
            binary || strcmp(json_string_value(json_array_get(ext, i)), "binary_tensor_data") == 0;
    ck_assert_msg(binary, "extensions lack binary_tensor_data: %s", r.body);
    json_decref(j);
    http_resp_free(&r);

    static const char *const ok_empty[] = {"/v2/health/live", "/v2/health/ready",
                                           "/v2/models/encoder/ready",
                                           "/v2/models/encoder/versions/1/ready"};
    for (int i = 0; i < 4; i++) {
        get(ok_empty[i], &r);
        ck_assert_msg(r.status == 200 && r.len == 0, "%s: %ld '%s'", ok_empty[i], r.status, r.body);
        http_resp_free(&r);
    }
    static const char *const meta[] = {"/v2/models/encoder", "/v2/models/encoder/versions/1"};
    for (int i = 0; i < 2; i++) {
        get(meta[i], &r);
        ck_assert_int_eq(r.status, 200);
        j = parse_json(r.body, r.len);
        ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "encoder");
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "versions"), 0)), "1");
        json_t *in = json_object_get(j, "inputs"), *out = json_object_get(j, "outputs");
        /* the built-in model takes embeddings, token ids and text (its tokenizer and
         * seeded embedding module) */
        static const char *const inputs[] = {
            "{\"datatype\":\"FP32\",\"name\":\"embeddings\",\"shape\":[-1,-1,4]}",
            "{\"datatype\":\"INT32\",\"name\":\"lengths\",\"shape\":[-1]}",
            "{\"datatype\":\"INT32\",\"name\":\"position_ids\",\"shape\":[-1,-1]}",
            "{\"datatype\":\"INT64\",\"name\":\"input_ids\",\"shape\":[-1,-1]}",
            "{\"datatype\":\"INT64\",\"name\":\"token_type_ids\",\"shape\":[-1,-1]}",
            "{\"datatype\":\"BYTES\",\"name\":\"text\",\"shape\":[-1]}",
            "{\"datatype\":\"INT64\",\"name\":\"attention_mask\",\"shape\":[-1,-1]}"};
        ck_assert_uint_eq(json_array_size(in), sizeof inputs / sizeof *inputs);
        char *s;
        for (size_t k = 0; k < sizeof inputs / sizeof *inputs; k++) {
            s = json_dumps(json_array_get(in, k), JSON_COMPACT | JSON_SORT_KEYS);
            ck_assert_str_eq(s, inputs[k]);
            free(s);
        }
        s = json_dumps(json_array_get(out, 0), JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(s, "{\"datatype\":\"FP32\",\"name\":\"outputs\",\"shape\":[-1,-1,4]}");
        free(s);
        s = json_dumps(json_array_get(out, 1), JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(s,
                         "{\"datatype\":\"FP32\",\"name\":\"attention\",\"shape\":[-1,2,-1,-1]}");
        free(s);
        json_decref(j);
        http_resp_free(&r);
    }
    get("/v2/models/bert", &r);
    assert_v2_error(&r, 404, "unknown model 'bert'; this server serves 'encoder'");
    http_resp_free(&r);
    get("/v2/models/bert/ready", &r);
    assert_v2_error(&r, 404, "unknown model 'bert'");
    http_resp_free(&r);
    get("/v2/models/encoder/versions/2", &r);
    assert_v2_error(&r, 404, "model 'encoder' has no version '2'; its only version is 1");
    http_resp_free(&r);
    get("/v2/models/encoder/explain", &r);
    assert_v2_error(&r, 404, "no route /v2/models/encoder/explain");
    http_resp_free(&r);
    bytes b = {0};
    put_str(&b, INFER(EMB_JSON));
    ck_assert_int_eq(post_infer("/v2/models/bert/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 404, "unknown model 'bert'");
    http_resp_free(&r);
    ck_assert_int_eq(post_infer("/v2/models/encoder/versions/3/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 404, "no version '3'");
    http_resp_free(&r);
    char hv[128];
    ck_assert_int_eq(http_do(dp.port, "GET", "/v2/models/encoder/infer", NULL, 0, NULL, &r), 0);
    assert_v2_error(&r, 405, "does not accept GET; use POST");
    ck_assert_str_eq(http_header(&r, "Allow", hv, sizeof hv), "POST, OPTIONS");
    http_resp_free(&r);
    ck_assert_int_eq(post_infer("/v2/health/ready", &b, NULL, &r), 0);
    assert_v2_error(&r, 405, "use GET");
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "HEAD", "/v2/models/encoder", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    /* /v1 keeps its own error form. */
    get("/v1/nothing", &r);
    ck_assert_int_eq(r.status, 404);
    ck_assert_ptr_nonnull(strstr(r.body, "\"type\":\"not_found\""));
    http_resp_free(&r);
    /* The versioned infer route answers too. */
    ck_assert_int_eq(post_infer("/v2/models/encoder/versions/1/infer", &b, NULL, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Every malformed case through the daemon: the status and {"error": ...}. */
START_TEST(test_malformed_over_http)
{
    start_or_fail(small_v2, NULL);
    bytes b = {0};
    for (int i = 0; i < N_BAD; i++) {
        const bad_case *c = &bad_cases[i];
        char hl[32];
        const char *h = bad_body(c, &b, hl);
        http_resp r;
        ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, h, &r), 0);
        ck_assert_msg(r.status == c->status, "case %d (%.200s): %ld %.300s", i, c->json, r.status,
                      r.body);
        assert_v2_error(&r, c->status, c->want);
        http_resp_free(&r);
    }
    /* The daemon is still there and right. */
    b.len = 0;
    put_str(&b, INFER(EMB_JSON));
    http_resp r;
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* ---- the PyTorch fixtures through v2 ------------------------------------------------ */

typedef struct v2_case {
    st_file f;
    char *args[64];
    int n_args;
    int B, L, D, H, n_layers;
} v2_case;

/* Reads a fixture case and makes the daemon flags that serve its model. */
static void v2_case_load(v2_case *c, const char *name)
{
    memset(c, 0, sizeof *c);
    torch_case_open(&c->f, name);
    torch_daemon_flags(&c->f, name, c->args, &c->n_args, (int)(sizeof c->args / sizeof *c->args));
    json_t *cfg = json_loads(st_metadata(&c->f, "config"), 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    c->D = (int)json_integer_value(json_object_get(cfg, "d_model"));
    c->H = (int)json_integer_value(json_object_get(cfg, "n_heads"));
    c->n_layers = (int)json_integer_value(json_object_get(cfg, "n_layers"));
    json_decref(cfg);
    const st_tensor *x = st_find(&c->f, "x");
    c->B = (int)x->shape[0];
    c->L = (int)x->shape[1];
}

static void v2_case_free(v2_case *c)
{
    for (int i = 0; i < c->n_args; i++)
        free(c->args[i]);
    st_close(&c->f);
}

/* A nested JSON array of a tensor (bool when as_bool). */
static json_t *nested(const float *v, const int64_t *dims, int ndim, bool as_bool)
{
    json_t *a = json_array();
    size_t stride = 1;
    for (int k = 1; k < ndim; k++)
        stride *= (size_t)dims[k];
    for (int64_t i = 0; i < dims[0]; i++)
        json_array_append_new(a, ndim == 1
                                     ? (as_bool ? json_boolean(v[i] != 0) : json_real(v[i]))
                                     : nested(v + (size_t)i * stride, dims + 1, ndim - 1, as_bool));
    return a;
}

/* How a request sends embeddings / lengths and asks for outputs. */
typedef enum { SEND_NESTED, SEND_FLAT, SEND_BINARY } send_mode;

/* An infer request for a fixture case, written from the protocol: the JSON
 * header (inputs, the case's mask as request parameters, attention mode,
 * requested outputs), then any binary tensors in input order.  Returns the
 * header length as text in hl when binary data follows (else NULL). */
static const char *case_request(const v2_case *c, send_mode emb, send_mode len, bool mean,
                                bool bin_out, bytes *b, char hl[32])
{
    json_t *root = json_object(), *inputs = json_array(), *params = json_object();
    const st_tensor *tx = st_find(&c->f, "x");
    size_t nx = 0, nl = 0;
    float *x = torch_floats(&c->f, "x", &nx);
    float *lengths = torch_floats(&c->f, "lengths", &nl);
    json_t *e = json_pack("{s:s, s:s, s:[i,i,i]}", "name", "embeddings", "datatype", "FP32",
                          "shape", c->B, c->L, c->D);
    if (emb == SEND_BINARY)
        json_object_set_new(e, "parameters",
                            json_pack("{s:I}", "binary_data_size", (json_int_t)(nx * 4)));
    else if (emb == SEND_NESTED)
        json_object_set_new(e, "data", nested(x, tx->shape, 3, false));
    else {
        int64_t flat = (int64_t)nx;
        json_object_set_new(e, "data", nested(x, &flat, 1, false));
    }
    json_array_append_new(inputs, e);
    if (lengths) {
        json_t *l =
            json_pack("{s:s, s:s, s:[i]}", "name", "lengths", "datatype", "INT32", "shape", c->B);
        if (len == SEND_BINARY)
            json_object_set_new(l, "parameters",
                                json_pack("{s:I}", "binary_data_size", (json_int_t)(nl * 4)));
        else {
            json_t *a = json_array();
            for (size_t i = 0; i < nl; i++)
                json_array_append_new(a, json_integer((json_int_t)lengths[i]));
            json_object_set_new(l, "data", a);
        }
        /* lengths first, so the binary data's order is the inputs' order */
        json_array_insert_new(inputs, 0, l);
    }
    json_object_set_new(root, "id", json_string("fixture"));
    json_object_set_new(root, "inputs", inputs);

    /* The case's mask: {"causal", "window": null | {"left", "right"}, "global"}. */
    json_t *mask = json_loads(st_metadata(&c->f, "mask"), 0, NULL);
    if (json_is_true(json_object_get(mask, "causal")))
        json_object_set_new(params, "causal", json_true());
    json_t *w = json_object_get(mask, "window");
    if (json_is_object(w)) { /* the scalar form */
        json_t *left = json_object_get(w, "left"), *right = json_object_get(w, "right");
        if (json_is_integer(left))
            json_object_set(params, "window_left", left);
        if (json_is_integer(right))
            json_object_set(params, "window_right", right);
    }
    json_t *g = json_object_get(mask, "global");
    if (json_array_size(g)) { /* as a string holding JSON, as scalar-only clients send it */
        char *s = json_dumps(g, JSON_COMPACT);
        json_object_set_new(params, "global", json_string(s));
        free(s);
    }
    static const char *const patterns[] = {"strided", "fixed", "blocks"};
    for (int k = 0; k < 3; k++) { /* objects, as they are */
        json_t *o = json_object_get(mask, patterns[k]);
        if (o)
            json_object_set(params, patterns[k], o);
    }
    json_decref(mask);
    static const char *const tensors[] = {"key_padding", "attn_bool", "attn_add"};
    for (int k = 0; k < 3; k++) {
        const st_tensor *t = st_find(&c->f, tensors[k]);
        if (!t)
            continue;
        float *m = torch_floats(&c->f, tensors[k], NULL);
        json_object_set_new(params, k == 0 ? "key_padding" : "attn",
                            nested(m, t->shape, t->ndim, k < 2));
        free(m);
    }
    json_object_set_new(params, "attention", json_string(mean ? "mean" : "heads"));
    json_object_set_new(root, "parameters", params);
    /* Ask for attention first and outputs second: the response keeps that order. */
    json_object_set_new(root, "outputs",
                        json_pack("[{s:s, s:{s:b}}, {s:s, s:{s:b}}]", "name", "attention",
                                  "parameters", "binary_data", bin_out, "name", "outputs",
                                  "parameters", "binary_data", bin_out));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    b->len = 0;
    put_str(b, text);
    size_t header = strlen(text);
    free(text);
    if (lengths && len == SEND_BINARY)
        for (size_t i = 0; i < nl; i++)
            put_le32(b, (uint32_t)(int32_t)lengths[i]);
    if (emb == SEND_BINARY)
        for (size_t i = 0; i < nx; i++)
            put_f32(b, x[i]);
    free(x);
    free(lengths);
    if (header == b->len)
        return NULL;
    snprintf(hl, 32, "%zu", header);
    return hl;
}

/* One output of a response, decoded from JSON data or from the binary data
 * after the header (owned floats, n of them). */
typedef struct got_output {
    float *v;
    size_t n;
    int64_t shape[4];
    int rank;
    bool binary;
} got_output;

/* Decodes a 200 response as the protocol lays it out; out[0] = attention,
 * out[1] = outputs (the order the requests ask for). */
static void decode_response(const http_resp *r, got_output out[2])
{
    char hv[32];
    size_t header = r->len;
    if (http_header(r, "Inference-Header-Content-Length", hv, sizeof hv)) {
        header = (size_t)strtoull(hv, NULL, 10);
        ck_assert_uint_le(header, r->len);
    }
    json_t *j = parse_json(r->body, header);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "fixture");
    ck_assert_str_eq(json_string_value(json_object_get(j, "model_version")), "1");
    json_t *outs = json_object_get(j, "outputs");
    ck_assert_uint_eq(json_array_size(outs), 2);
    static const char *const names[] = {"attention", "outputs"};
    size_t at = header;
    for (int k = 0; k < 2; k++) {
        json_t *o = json_array_get(outs, (size_t)k);
        got_output *g = &out[k];
        memset(g, 0, sizeof *g);
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), names[k]);
        ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
        json_t *shape = json_object_get(o, "shape");
        g->rank = (int)json_array_size(shape);
        g->n = 1;
        for (int d = 0; d < g->rank; d++) {
            g->shape[d] = json_integer_value(json_array_get(shape, (size_t)d));
            g->n *= (size_t)g->shape[d];
        }
        g->v = xcalloc(g->n, sizeof *g->v);
        json_t *size = json_object_get(json_object_get(o, "parameters"), "binary_data_size");
        if (size) {
            g->binary = true;
            ck_assert_int_eq(json_integer_value(size), (json_int_t)(g->n * 4));
            ck_assert_uint_le(at + g->n * 4, r->len);
            for (size_t i = 0; i < g->n; i++)
                g->v[i] = get_f32((const unsigned char *)r->body + at + 4 * i);
            at += g->n * 4;
        } else {
            json_t *data = json_object_get(o, "data");
            ck_assert_uint_eq(json_array_size(data), g->n);
            for (size_t i = 0; i < g->n; i++)
                g->v[i] = (float)json_number_value(json_array_get(data, i));
        }
    }
    ck_assert_uint_eq(at, r->len); /* every byte accounted for */
    json_decref(j);
}

static const char *const v2_cases[] = {
    "layer_post_relu",   "mask_combined",   "mask_lengths",       "stack3_post_gelu",
    "gqa_kv2",           "mask_window_lr",  "mask_window_global", "mask_attn_add_3d",
    "mask_attn_bool_2d", "mask_key_padding"};

/* A fixture case through v2: nested JSON, flat JSON, binary both ways, and
 * mixed; heads and mean; each result within 1e-4 of PyTorch's. */
START_TEST(test_torch_fixtures)
{
    v2_case c;
    v2_case_load(&c, v2_cases[_i]);
    start_or_fail((const char *const *)c.args, NULL);
    static const struct {
        send_mode emb, len;
        bool mean, bin_out;
    } forms[] = {
        {SEND_NESTED, SEND_FLAT, false, false},  {SEND_FLAT, SEND_FLAT, true, false},
        {SEND_BINARY, SEND_BINARY, false, true}, {SEND_BINARY, SEND_FLAT, true, true},
        {SEND_FLAT, SEND_BINARY, false, true},
    };
    bytes b = {0};
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        char hl[32];
        const char *h =
            case_request(&c, forms[f].emb, forms[f].len, forms[f].mean, forms[f].bin_out, &b, hl);
        http_resp r;
        ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, h, &r), 0);
        ck_assert_msg(r.status == 200, "%s form %zu: %ld %.300s", v2_cases[_i], f, r.status,
                      r.body);
        char ct[64];
        ck_assert_str_eq(http_header(&r, "Content-Type", ct, sizeof ct),
                         forms[f].bin_out ? "application/octet-stream" : "application/json");
        got_output g[2];
        decode_response(&r, g);
        ck_assert(g[0].binary == forms[f].bin_out && g[1].binary == forms[f].bin_out);

        size_t n = 0;
        float *want = torch_floats(&c.f, "out", &n);
        ck_assert_int_eq(g[1].rank, 3);
        ck_assert(g[1].shape[0] == c.B && g[1].shape[1] == c.L && g[1].shape[2] == c.D);
        ck_assert_uint_eq(g[1].n, n);
        double d = max_abs_diff(g[1].v, want, n);
        ck_assert_msg(d <= 1e-4, "%s form %zu: outputs differ from PyTorch by %g", v2_cases[_i], f,
                      d);
        free(want);

        char key[32];
        snprintf(key, sizeof key, forms[f].mean ? "attn_mean.%d" : "attn.%d", c.n_layers - 1);
        want = torch_floats(&c.f, key, &n);
        ck_assert_int_eq(g[0].rank, forms[f].mean ? 3 : 4);
        ck_assert(g[0].shape[0] == c.B && g[0].shape[g[0].rank - 1] == c.L);
        if (!forms[f].mean)
            ck_assert_int_eq(g[0].shape[1], c.H);
        ck_assert_uint_eq(g[0].n, n);
        d = max_abs_diff(g[0].v, want, n);
        ck_assert_msg(d <= 1e-4, "%s form %zu: attention differs from PyTorch by %g", v2_cases[_i],
                      f, d);
        free(want);
        free(g[0].v);
        free(g[1].v);
        http_resp_free(&r);
    }
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    v2_case_free(&c);
}
END_TEST

/* ---- token ids: the Hugging Face fixtures over HTTP ------------------------- */

typedef enum ids_send { IDS_JSON32, IDS_JSON64, IDS_BIN32, IDS_BIN64 } ids_send;

/* One integer input of the fixture's (B, L) (or [B] for lengths) values:
 * JSON (nested for INT32, flat for INT64) or binary, appended to bin. */
static void ids_input(json_t *inputs, bytes *bin, const char *name, const int32_t *v, size_t n,
                      json_t *shape, ids_send how, bool int64)
{
    json_t *in = json_pack("{s:s, s:s, s:o}", "name", name, "datatype", int64 ? "INT64" : "INT32",
                           "shape", shape);
    if (how == IDS_BIN32 || how == IDS_BIN64) {
        json_object_set_new(
            in, "parameters",
            json_pack("{s:I}", "binary_data_size", (json_int_t)(n * (int64 ? 8 : 4))));
        for (size_t k = 0; k < n; k++) {
            put_le32(bin, (uint32_t)v[k]);
            if (int64)
                put_le32(bin, v[k] < 0 ? 0xffffffffu : 0);
        }
    } else {
        json_t *data = json_array();
        const size_t cols =
            json_array_size(shape) == 2 ? (size_t)json_integer_value(json_array_get(shape, 1)) : n;
        json_t *row = NULL;
        for (size_t k = 0; k < n; k++) {
            if (how == IDS_JSON32 && cols < n && k % cols == 0) /* nested as the shape */
                json_array_append_new(data, row = json_array());
            json_array_append_new(how == IDS_JSON32 && cols < n ? row : data, json_integer(v[k]));
        }
        json_object_set_new(in, "data", data);
    }
    json_array_append_new(inputs, in);
}

/* The fixture through /v2 infer from ids, four ways: JSON INT32 with
 * lengths, JSON INT64 with attention_mask and binary outputs, binary INT32
 * with lengths, binary INT64 with attention_mask (and position_ids where
 * the fixture has them); outputs and the last layer's weights, dense with
 * zero padding, within 1e-4 of the references. */
START_TEST(test_infer_ids_hf)
{
    ids_fx c;
    ids_fx_load(&c, ids_fx_dir(_i));
    start_or_fail((const char *const[]){"--model-dir", c.dir, NULL}, NULL);
    http_resp r;
    get("/v2/models/encoder", &r);
    ck_assert_int_eq(r.status, 200);
    json_t *meta = parse_json(r.body, r.len);
    bool has_ids = false, has_types = false;
    json_t *mins = json_object_get(meta, "inputs");
    for (size_t k = 0; k < json_array_size(mins); k++) {
        const char *n = json_string_value(json_object_get(json_array_get(mins, k), "name"));
        has_ids |= strcmp(n, "input_ids") == 0;
        has_types |= strcmp(n, "token_type_ids") == 0;
    }
    ck_assert_msg(has_ids, "%s: metadata lacks input_ids: %s", c.name, r.body);
    if (c.token_type_ids)
        ck_assert_msg(has_types, "%s: metadata lacks token_type_ids: %s", c.name, r.body);
    json_decref(meta);
    http_resp_free(&r);

    const size_t BL = (size_t)c.B * (size_t)c.L;
    int32_t *mask = xcalloc(BL, sizeof *mask);
    for (int b = 0; b < c.B; b++)
        for (int i = 0; i < c.lengths[b]; i++)
            mask[(size_t)b * c.L + i] = 1;
    float *out = ids_fx_want(&c, -1), *last = ids_fx_want(&c, c.n_layers - 1);
    bytes b = {0}, bin = {0};
    for (int how = IDS_JSON32; how <= IDS_BIN64; how++) {
        const bool int64 = how == IDS_JSON64 || how == IDS_BIN64;
        const bool use_mask = how == IDS_JSON64 || how == IDS_BIN64;
        const bool bin_out = how == IDS_JSON64 || how == IDS_BIN32;
        json_t *root = json_pack("{s:s}", "id", "fixture");
        json_t *inputs = json_array();
        bin.len = 0;
        ids_input(inputs, &bin, "input_ids", c.input_ids, BL, json_pack("[i,i]", c.B, c.L),
                  (ids_send)how, int64);
        if (c.token_type_ids)
            ids_input(inputs, &bin, "token_type_ids", c.token_type_ids, BL,
                      json_pack("[i,i]", c.B, c.L), (ids_send)how, int64);
        if (use_mask)
            ids_input(inputs, &bin, "attention_mask", mask, BL, json_pack("[i,i]", c.B, c.L),
                      (ids_send)how, int64);
        else
            ids_input(inputs, &bin, "lengths", c.lengths, (size_t)c.B, json_pack("[i]", c.B),
                      how == IDS_BIN32 ? IDS_BIN32 : IDS_JSON64, false);
        if (c.position_ids)
            ids_input(inputs, &bin, "position_ids", c.position_ids, BL,
                      json_pack("[i,i]", c.B, c.L), how >= IDS_BIN32 ? IDS_BIN32 : IDS_JSON32,
                      false);
        json_object_set_new(root, "inputs", inputs);
        json_object_set_new(root, "outputs",
                            json_pack("[{s:s, s:{s:b}}, {s:s, s:{s:b}}]", "name", "attention",
                                      "parameters", "binary_data", bin_out, "name", "outputs",
                                      "parameters", "binary_data", bin_out));
        char *text = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        b.len = 0;
        put_str(&b, text);
        char hl[32];
        snprintf(hl, sizeof hl, "%zu", strlen(text));
        free(text);
        if (bin.len)
            put(&b, bin.p, bin.len);
        ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, bin.len ? hl : NULL, &r), 0);
        ck_assert_msg(r.status == 200, "%s way %d: %ld %.300s", c.name, how, r.status, r.body);
        got_output g[2];
        decode_response(&r, g);
        ck_assert(g[1].rank == 3 && g[1].shape[0] == c.B && g[1].shape[1] == c.L &&
                  g[1].shape[2] == c.D);
        double d = max_abs_diff(g[1].v, out, BL * (size_t)c.D);
        ck_assert_msg(d <= 1e-4, "%s way %d: outputs differ from the reference by %g", c.name, how,
                      d);
        ck_assert(g[0].rank == 4 && g[0].shape[1] == c.H);
        d = max_abs_diff(g[0].v, last, BL * (size_t)c.H * (size_t)c.L);
        ck_assert_msg(d <= 1e-4, "%s way %d: attention differs from the reference by %g", c.name,
                      how, d);
        free(g[0].v);
        free(g[1].v);
        http_resp_free(&r);
    }
    /* INT64 outside int32, and an id outside the vocabulary: 400 naming them */
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,2],"
                "\"data\":[1,4294967297]}]}");
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 400,
                    "inputs[0] (input_ids): data[1] = 4294967297 is outside the INT32 "
                    "range");
    http_resp_free(&r);
    b.len = 0;
    put_str(&b, "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT32\",\"shape\":[1,2],"
                "\"data\":[1,-1]}]}");
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 400, "inputs[0] (input_ids)[0][1] = -1 is outside 0..");
    http_resp_free(&r);
    free(b.p);
    free(bin.p);
    free(mask);
    free(out);
    free(last);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    ids_fx_free(&c);
}
END_TEST

/* A request written out literally, as in Triton's binary extension document:
 * binary input, one output asked for in binary, the other not asked for. */
START_TEST(test_literal_binary_exchange)
{
    v2_case c;
    v2_case_load(&c, "layer_post_relu");
    start_or_fail((const char *const *)c.args, NULL);
    size_t nx = 0;
    float *x = torch_floats(&c.f, "x", &nx);
    ck_assert_uint_eq(nx, 2 * 6 * 16);
    bytes b = {0};
    const char *json = "{\"model_name\":\"encoder\",\"inputs\":[{\"name\":\"embeddings\","
                       "\"shape\":[2,6,16],\"datatype\":\"FP32\",\"parameters\":{"
                       "\"binary_data_size\":768}}],\"outputs\":[{\"name\":\"outputs\","
                       "\"parameters\":{\"binary_data\":true}}]}";
    put_str(&b, json);
    for (size_t i = 0; i < nx; i++)
        put_f32(&b, x[i]);
    char hl[32];
    snprintf(hl, sizeof hl, "%zu", strlen(json));
    http_resp r;
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, hl, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    /* attention_scores: no mask, so B L^2 H per layer */
    char want_json[256];
    snprintf(want_json, sizeof want_json,
             "{\"model_name\":\"encoder\",\"model_version\":\"1\",\"parameters\":{"
             "\"attention_scores\":%d},\"outputs\":[{\"name\":\"outputs\",\"datatype\":\"FP32\","
             "\"shape\":[2,6,16],\"parameters\":{\"binary_data_size\":768}}]}",
             2 * 6 * 6 * c.H * c.n_layers);
    char hv[32];
    ck_assert_ptr_nonnull(http_header(&r, "Inference-Header-Content-Length", hv, sizeof hv));
    ck_assert_uint_eq(strtoull(hv, NULL, 10), strlen(want_json));
    ck_assert_uint_eq(r.len, strlen(want_json) + 768);
    ck_assert_msg(memcmp(r.body, want_json, strlen(want_json)) == 0, "%.*s", (int)strlen(want_json),
                  r.body);
    float *want = torch_floats(&c.f, "out", NULL);
    float got[192];
    for (int i = 0; i < 192; i++)
        got[i] = get_f32((const unsigned char *)r.body + strlen(want_json) + 4 * i);
    ck_assert_double_le(max_abs_diff(got, want, 192), 1e-4);
    free(want);
    free(x);
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    v2_case_free(&c);
}
END_TEST

/* Limits and the body size are 413 {"error"}; the API key guards infer but
 * not the health routes; /metrics counts the v2 routes. */
START_TEST(test_limits_auth_metrics)
{
    static const char *const args[] = {"--d-model",
                                       "4",
                                       "--n-heads",
                                       "2",
                                       "--d-ff",
                                       "8",
                                       "--max-batch",
                                       "2",
                                       "--max-attention-bytes",
                                       "64",
                                       "--max-body-bytes",
                                       "2048",
                                       "--api-key",
                                       "k3y",
                                       NULL};
    start_or_fail(args, NULL);
    static const char *const auth[] = {"Authorization: Bearer k3y", NULL};
    http_resp r;
    bytes b = {0};
    put_str(&b, INFER(EMB_JSON));
    ck_assert_int_eq(post_infer("/v2/models/encoder/infer", &b, NULL, &r), 0);
    assert_v2_error(&r, 401, "missing or wrong API key");
    http_resp_free(&r);
    get("/v2/health/live", &r);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    get("/v2/health/ready", &r);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    get("/v2/models/encoder", &r);
    assert_v2_error(&r, 401, "API key");
    http_resp_free(&r);

    /* 1 x 2 x 2 x 2 heads x 4 bytes = 32 bytes of attention: allowed. */
    ck_assert_int_eq(
        http_do(dp.port, "POST", "/v2/models/encoder/infer", (const char *)b.p, b.len, auth, &r),
        0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    http_resp_free(&r);
    /* 1 x 2 heads x 3 x 3 x 4 = 72 bytes: over, unless only outputs are asked for. */
    const char *over = INFER(EMB_IN("FP32", "[1,3,4]", "[1,2,3,4,5,6,7,8,9,10,11,12]"));
    ck_assert_int_eq(
        http_do(dp.port, "POST", "/v2/models/encoder/infer", over, strlen(over), auth, &r), 0);
    assert_v2_error(&r, 413, "over limits.max_attention_bytes (64)");
    http_resp_free(&r);
    const char *outputs_only = "{\"inputs\":[" EMB_IN(
        "FP32", "[1,3,4]",
        "[1,2,3,4,5,6,7,8,9,10,11,12]") "],\"outputs\":[{\"name\":\"outputs\"}]}";
    ck_assert_int_eq(http_do(dp.port, "POST", "/v2/models/encoder/infer", outputs_only,
                             strlen(outputs_only), auth, &r),
                     0);
    ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
    json_t *j = parse_json(r.body, r.len);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 1);
    json_decref(j);
    http_resp_free(&r);
    const char *batch3 = INFER(EMB_IN("FP32", "[3,1,4]", "[1,2,3,4,5,6,7,8,9,10,11,12]"));
    ck_assert_int_eq(
        http_do(dp.port, "POST", "/v2/models/encoder/infer", batch3, strlen(batch3), auth, &r), 0);
    assert_v2_error(&r, 413, "batch of 3 sequences is over limits.max_batch (2)");
    http_resp_free(&r);
    char *big = xcalloc(4096, 1);
    memset(big, ' ', 4095);
    ck_assert_int_eq(http_do(dp.port, "POST", "/v2/models/encoder/infer", big, 4095, auth, &r), 0);
    assert_v2_error(&r, 413, "over server.max_body_bytes (2048 bytes)");
    http_resp_free(&r);
    free(big);

    /* A request is counted when the daemon has finished it, which may be a
     * moment after its client has the whole response, and not in the order
     * they were sent (two HTTP threads): look until every count is there. */
    for (int tries = 0;; tries++) {
        ck_assert_int_eq(http_do(dp.port, "GET", "/metrics", NULL, 0, auth, &r), 0);
        if (tries == 250 ||
            (strstr(r.body,
                    "attnd_requests_total{route=\"/v2/models/{name}/infer\",status=\"413\"} 3") &&
             strstr(r.body,
                    "attnd_requests_total{route=\"/v2/models/{name}/infer\",status=\"200\"} 2") &&
             strstr(r.body, "attnd_requests_total{route=\"/v2/health/live\",status=\"200\"} 1")))
            break;
        http_resp_free(&r);
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    const char *line = strstr(r.body, "attnd_requests_total{route=\"/v2/models/{name}/infer\"");
    ck_assert_msg(strstr(r.body, "attnd_requests_total{route=\"/v2/models/{name}/infer\","
                                 "status=\"200\"} 2"),
                  "%.300s", line ? line : "no infer line");
    ck_assert(strstr(r.body, "attnd_requests_total{route=\"/v2/health/live\",status=\"200\"} 1"));
    http_resp_free(&r);
    free(b.p);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *v2_suite(void)
{
    Suite *s = timed_suite("v2");
    TCase *tc = timed_case(s, "codec", 60);
    tcase_add_test(tc, test_route_parse);
    tcase_add_test(tc, test_parse_forms);
    tcase_add_test(tc, test_parse_position_ids);
    tcase_add_test(tc, test_parse_ids);
    tcase_add_test(tc, test_model_metadata_inputs);
    tcase_add_test(tc, test_parse_outputs);
    tcase_add_test(tc, test_parse_mask_parameters);
    tcase_add_test(tc, test_text_numbers);
    tcase_add_test(tc, test_text_numbers_bypass_jansson);
    tcase_add_loop_test(tc, test_parse_malformed, 0, N_BAD);
    tcase_add_test(tc, test_parse_limits);
    tcase_add_test(tc, test_response_bytes);
    tc = timed_case(s, "daemon", 120);
    tcase_add_test(tc, test_routes);
    tcase_add_test(tc, test_malformed_over_http);
    tcase_add_loop_test(tc, test_torch_fixtures, 0, (int)(sizeof v2_cases / sizeof *v2_cases));
    tcase_add_test(tc, test_literal_binary_exchange);
    tcase_add_loop_test(tc, test_infer_ids_hf, 0, ids_fx_count());
    tcase_add_test(tc, test_limits_auth_metrics);
    return s;
}
