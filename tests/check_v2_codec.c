/* check_v2_codec.c - the Open Inference Protocol (KServe v2) with Triton's
 * binary tensor data extension, through its codec (server/protocol/v2.c,
 * v2_request.c) in-process: routes, requests and responses written here byte
 * by byte from the protocol documents, token ids in, the data arrays read
 * from the text, malformed requests (v2_util.c's table, which check_v2.c
 * sends to the daemon) and limits.
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
#include "v2_util.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The codec tests' model: D 4, H 2, one layer (check_v2.c's small_v2). */
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
    const api_ctx lim = {
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

/* An embedding module as the core describes one, for the codec alone
 * (check_v2.c runs the Hugging Face fixtures from ids). */

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
    const api_ctx lim = {.max_batch = 4,
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
        api_ctx l = lim;
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
    api_ctx lim = {.max_batch = 2,
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

Suite *v2_codec_suite(void)
{
    Suite *s = timed_suite("v2_codec");
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
    return s;
}
