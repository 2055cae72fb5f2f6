/* check_v1_embeddings.c - the embeddings read from a /v1/encode body's
 * text (server/codec/extract.c through server/protocol/v1.c): the messages
 * that name an entry and their order, integers of any size, a large body
 * read on two threads, and invalid JSON worded for the body; and the token
 * ids (input_ids, token_type_ids, attention_mask) read from the text the
 * same way. */
#include "v1_util.h"
#include "suites.h"
#include "timing.h"

#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the embeddings scanner: the jansson-based walk's messages and order ------ */

typedef struct want_msg {
    const char *body;
    int status; /* 0: accepted */
    const char *message;
} want_msg;

START_TEST(test_scanner_messages)
{
    small s;
    small_load(&s); /* d_model 4, max_batch 4, max_seq_len 8, max_batch_tokens 16 */
    static const want_msg cases[] = {
        /* the walk's order: a sequence's rows before the next sequence's count */
        {"{\"embeddings\": [[[1,2,3,4],[1,2,\"x\",4]],[[1,2,3,4]]]}", 400,
         "embeddings[0][1][2] is not a number (it is a string)"},
        /* ... a sequence's count before its rows, a row's length before its numbers */
        {"{\"embeddings\": [[[1,2,3,4]],[[1,\"x\",3,4],[1,2,3,4]]]}", 400,
         "embeddings[1] has 2 rows; embeddings[0] has 1 (sequences must have the same length: "
         "pad them and send lengths)"},
        {"{\"embeddings\": [[[1,2,3,4],[1,\"x\",3]]]}", 400,
         "embeddings[0][1] has 3 numbers; d_model is 4"},
        {"{\"embeddings\": [[1,2,3,4],[5,6,7,{\"a\": [1]}]]}", 400,
         "embeddings[1][3] is not a number (it is an object)"},
        {"{\"embeddings\": [[1,2,3,4],[5,6,7,[8]]]}", 400,
         "embeddings[1][3] is not a number (it is an array)"},
        {"{\"embeddings\": [[[1,2,3,4]], 5]}", 400,
         "embeddings[1] is a number; expected an array of rows"},
        {"{\"embeddings\": [[1,2,3,4], true]}", 400,
         "embeddings[1] is a boolean; expected an array of d_model (4) numbers"},
        {"{\"embeddings\": [[[1,2,3,4]], [null]]}", 400,
         "embeddings[1][0] is null; expected an array of d_model (4) numbers"},
        {"{\"embeddings\": [[1,2,3,4],[5,6,7,1e39]]}", 400,
         "embeddings[1][3] = 1e+39 is outside the float32 range"},
        {"{\"embeddings\": [[1,2,3,-3.4028236e38]]}", 400,
         "embeddings[0][3] = -3.40282e+38 is outside the float32 range"},
        {"{\"embeddings\": [[1,2,3,\"\\u00e9\"]]}", 400,
         "embeddings[0][3] is not a number (it is a string)"},
        /* the shape: before the limits */
        {"{\"embeddings\": []}", 400, "embeddings is empty; expected number[B][L][d_model]"},
        {"{\"embeddings\": [[]]}", 400, "embeddings[0] is empty; embeddings must be"},
        {"{\"embeddings\": [null, [1]]}", 400, "embeddings[0] is null; embeddings must be"},
        {"{\"embeddings\": [[\"a\"]]}", 400, "embeddings[0][0] is a string; embeddings must be"},
        {"{\"embeddings\": [[{}]]}", 400, "embeddings[0][0] is an object; embeddings must be"},
        {"{\"embeddings\": \"abc\"}", 400,
         "embeddings must be number[B][L][d_model] or number[L][d_model], not a string"},
        {"{\"embeddings\": null, \"embeddings_b64\": null}", 400, "embeddings is required"},
        /* the limits: before the walk's errors */
        {"{\"embeddings\": [[[1,2,3,4]],[[1,2,3,4]],[[1,2,3,4]],[[1,2,3,4]],[[\"x\"]]]}", 413,
         "batch of 5 sequences is over limits.max_batch (4)"},
        {"{\"embeddings\": [[1,2,3,4],[1],[1],[1],[1],[1],[1],[1],[1]]}", 413,
         "sequence length 9 is over limits.max_seq_len (8)"},
        /* the other fields: before embeddings (jansson's order of the fields) */
        {"{\"embeddings\": [[1,\"x\",3,4]], \"precision\": 12}", 400,
         "precision = 12 is outside 1..9"},
        {"{\"embeddings\": [[1,\"x\",3,4]], \"embedings\": 1}", 400, "unknown field 'embedings'"},
        {"{\"embeddings\": [[1,2,3,4]], \"shape\": [1, 4]}", 400,
         "shape is only used with embeddings_b64"},
        /* accepted */
        {"{\"embedd\\u0069ngs\": [[1,2,3,4]]}", 0, NULL},
        {"{\"attention\": \"mean\", \"embeddings\":\n[[1,2,3,4]\n,[5,6,7,8]\t]\r\n}", 0, NULL},
        {"{\"embeddings\": [[[-0, 1E+2, 1e-45, 3.4028234663852886e38]]]}", 0, NULL},
        /* FLT_MAX printed with 8 or 9 digits is above it as a double: refused, as before */
        {"{\"embeddings\": [[1, 2, 3, 3.4028235e38]]}", 400,
         "embeddings[0][3] = 3.40282e+38 is outside the float32 range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        encode_request req;
        api_error err;
        const int rc = parse_small(&s, cases[i].body, &req, &err);
        if (cases[i].status == 0) {
            ck_assert_msg(rc == 0, "%s: %s", cases[i].body, err.message);
        } else {
            ck_assert_msg(rc < 0 && api_error_status(err.kind) == cases[i].status,
                          "%s: status %d (%s), want %d", cases[i].body, api_error_status(err.kind),
                          err.message, cases[i].status);
            ck_assert_msg(strstr(err.message, cases[i].message) != NULL,
                          "%s: message '%s' lacks '%s'", cases[i].body, err.message,
                          cases[i].message);
        }
        encode_request_free(&req);
    }
    /* The numbers are (float)strtod of the text: -0 stays negative. */
    encode_request req;
    api_error err;
    ck_assert_int_eq(
        parse_small(&s, "{\"embeddings\": [[-0, 1E+2, 1e-45, 3.4028234663852886e38]]}", &req, &err),
        0);
    ck_assert(req.x[0] == 0.0f && signbit(req.x[0]));
    ck_assert(req.x[1] == 100.0f && req.x[2] == FLT_TRUE_MIN && req.x[3] == FLT_MAX);
    encode_request_free(&req);
    /* A NUL byte is not JSON, though jansson 2.14 drops one after a number:
     * the scan refuses it and says where. */
    static const char nul_body[] = "{\"embeddings\": [[1\0, 2, 3, 4]]}";
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(v1_request_parse(&req, nul_body, sizeof nul_body - 1, &s.hp, &s.lim, &err),
                     -1);
    ck_assert_str_eq(err.message, "invalid JSON at line 1, column 19: expected ',' or ']'");
    encode_request_free(&req);
    enc_model_free(s.model);
}
END_TEST

/* Invalid JSON anywhere gets jansson's own message for the body, line and
 * column included, whether the fault is inside the embeddings array (read
 * by the scanner) or outside it (read by jansson from a copy). */
/* Integers of any size are numbers, as JavaScript writes them
 * (JSON.stringify(1e20) is 100000000000000000000), rounded to float32
 * like any other: jansson alone refused them as "too big integer". */
START_TEST(test_big_integers_are_numbers)
{
    small s;
    small_load(&s);
    static const struct {
        const char *text;
        float want;
    } c[] = {{"100000000000000000000", 1e20f},
             {"-9223372036854775809", -9223372036854775809.0f},
             {"123456789012345678901234567890", 1.2345678901234568e29f}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"embeddings\": [[1, 2, 3, %s]]}", c[i].text);
        encode_request req;
        api_error err = {0};
        ck_assert_msg(parse_small(&s, body, &req, &err) == 0, "%s: %s", c[i].text, err.message);
        ck_assert_msg(req.x[3] == c[i].want && req.x[3] == (float)strtod(c[i].text, NULL),
                      "%s read as %.9g", c[i].text, (double)req.x[3]);
        encode_request_free(&req);
    }
    /* Beyond int64 where an integer is wanted: refused, naming the field
     * (jansson alone said "too big integer" and named none). */
    encode_request req;
    api_error err = {0};
    ck_assert_int_eq(parse_small(&s,
                                 "{\"embeddings\": [[1, 2, 3, 4]], \"lengths\": "
                                 "[100000000000000000000]}",
                                 &req, &err),
                     -1);
    encode_request_free(&req);
    ck_assert_msg(strstr(err.message, "lengths[0]") && !strstr(err.message, "too big"), "%s",
                  err.message);
    enc_model_free(s.model);
}
END_TEST

/* A body past 1 MB is read on two threads, split at a row's end: every
 * number lands where it belongs, whitespace before the brackets or not. */
START_TEST(test_large_body_split)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 256;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 64;
    enum { B = 2, L = 300, D = 256 };
    char *body = xcalloc((size_t)B * L * D * 24 + 64, 1);
    float *want = xcalloc((size_t)B * L * D, sizeof *want);
    size_t n = (size_t)sprintf(body, "{\"embeddings\": [");
    uint64_t s = 77;
    for (int b = 0; b < B; b++) {
        n += (size_t)sprintf(body + n, b ? ", [" : "[");
        for (int i = 0; i < L; i++) {
            n += (size_t)sprintf(body + n, i ? ",\n  [" : "[");
            for (int k = 0; k < D; k++) {
                char num[32];
                snprintf(num, sizeof num, "%.6g",
                         (double)((int)(splitmix(&s) % 2000001) - 1000000) * 1e-4);
                want[((size_t)b * L + (size_t)i) * D + (size_t)k] = (float)strtod(num, NULL);
                n += (size_t)sprintf(body + n, "%s%s", k ? (k % 7 ? "," : " , ") : "", num);
            }
            n += (size_t)sprintf(body + n, i % 3 ? "]" : " \n ]");
        }
        n += (size_t)sprintf(body + n, "]");
    }
    sprintf(body + n, "]}");
    ck_assert_uint_gt(strlen(body), 1u << 20);
    encode_request req;
    api_error err = {0};
    const api_ctx lim = {.max_batch = 64,
                         .max_seq_len = 4096,
                         .max_batch_tokens = 65536,
                         .max_attention_bytes = (size_t)1 << 30};
    ck_assert_msg(v1_request_parse(&req, body, strlen(body), &hp, &lim, &err) == 0, "%s",
                  err.message);
    for (size_t k = 0; k < (size_t)B * L * D; k++)
        EXPECT(req.x[k] == want[k], "x[%zu] = %.9g, want %.9g", k, (double)req.x[k],
               (double)want[k]);
    encode_request_free(&req);
    free(want);
    free(body);
}
END_TEST

START_TEST(test_scanner_syntax)
{
    small s;
    small_load(&s);
    static const char *const bodies[] = {
        "{\"embeddings\": [[01, 2, 3, 4]]}",
        "{\"embeddings\": [[1., 2, 3, 4]]}",
        "{\"embeddings\": [[+1, 2, 3, 4]]}",
        "{\"embeddings\": [[.5, 2, 3, 4]]}",
        "{\"embeddings\": [[NaN, 2, 3, 4]]}",
        "{\"embeddings\": [[1, Infinity, 3, 4]]}",
        "{\"embeddings\": [[1, -Infinity, 3, 4]]}",
        "{\"embeddings\": [[1, 2, 3, 4],]}",
        "{\"embeddings\": [[1 2, 3, 4]]}",
        "{\"embeddings\": [[1, 2, 3, 4]}",
        "{\"embeddings\": [[1, 2, 3, 4]",
        "{\"embeddings\": [[1, 2, tru, 4]]}",
        "{\"embeddings\": [[1, 2, truex, 4]]}",
        "{\"embeddings\": [[1, 2, \"\xff\", 4]]}",
        "{\"embeddings\": [[1, 2, \"a\nb\", 4]]}",
        "{\"embeddings\": [[1, 2, 3, 4]]\n, \"precision\": 4,\n \"mask\": {\"causal\": tru}}",
        "{\"embeddings\":\n  [[1, 2, 3, 4],\n   [5, 6, 7, 8]], \"x\" 1}",
        "{\"embeddings\": [[1, 2, \"\xc3\xa9\xc3\xa9\", 4]], \"precision\": 4 \"x\"}",
        "{\"embeddings\": [[1, 2, 3, 4]], \"embeddings\": [[1, 2, 3, 4]]}",
        "{\"a\": [1, \"embeddings\"], \"embeddings\": [[1, 2, 3, 4]] \"b\"}",
        "{\"embeddings\": [[1, 2, 3, 4]]} []",
        "{\"embeddings\": [[1, 2, 3, 4]]}\n\n  x",
        "[[1, 2, 3, 4]] x",
        "{\"embeddings\" [[1, 2, 3, 4]]}",
        "{\"precision\": 4 \"embeddings\": [[1, 2, 3, 4]]}",
        /* embeddings_b64's characters are read from the body too */
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"shape\": [1, 4],}",
        "{\"embeddings_b64\": \"AAAA\nAAAA\", \"shape\": [1, 4]}",
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"embeddings_b64\": \"AAAA\"}",
        "{\"embeddings_b64\":\n \"AAAAAAAAAAAAAAAAAAAAAA==\"\n \"shape\": [1, 4]}",
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"shape\": [1, 4]} x",
        "{\"embeddings_b64\": \"AAAAAAAAAAAAAAAAAAAAAA==, \"shape\": [1, 4]}",
        "{\"embeddings_b64\": \"\xc3\xa9"
        "AAAAAAAAAAAAAAAAAAAAA==\", \"shape\": [1 4]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        const char *body = bodies[i];
        json_error_t je;
        json_t *j = json_loadb(body, strlen(body), JSON_REJECT_DUPLICATES, &je);
        ck_assert_msg(j == NULL, "%s: jansson takes it", body);
        char want[512];
        snprintf(want, sizeof want, "invalid JSON at line %d, column %d: ", je.line, je.column);
        encode_request req;
        api_error err;
        ck_assert_int_eq(parse_small(&s, body, &req, &err), -1);
        encode_request_free(&req);
        ck_assert_msg(err.kind == API_BAD_REQUEST && strncmp(err.message, want, strlen(want)) == 0,
                      "%s: '%s', want '%s...'", body, err.message, want);
        /* jansson's text, as printable ASCII */
        for (const char *a = je.text, *b = err.message + strlen(want); *a; a++, b++)
            ck_assert_msg(*b == ((unsigned char)*a >= 0x20 && (unsigned char)*a < 0x7f ? *a : '?'),
                          "%s: '%s' is not jansson's '%s'", body, err.message, je.text);
    }
    /* Valid JSON that jansson would refuse inside a value that is refused
     * anyway (a lone surrogate, a duplicate key, a real past double), and
     * nesting past the array's: the entry is named. */
    static const struct {
        const char *body, *message;
    } named[] = {
        {"{\"embeddings\": [[1, 2, 3, 1e400]]}",
         "embeddings[0][3] = inf is outside the float32 range"},
        {"{\"embeddings\": [[1, 2, \"\\ud800\", 4]]}",
         "embeddings[0][2] is not a number (it is a string)"},
        {"{\"embeddings\": [[1, 2, {\"a\": 1, \"a\": 2}, 4]]}",
         "embeddings[0][2] is not a number (it is an object)"},
        {"{\"embeddings\": [[[[[[[[[[1]]]]]]]]]]}", "embeddings[0][0] has 1 number; d_model is 4"},
        {"{\"embeddings\": [[1, 2, 3, [[[[[[[[[]]]]]]]]]]]}",
         "embeddings[0][3] is not a number (it is an array)"},
    };
    for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
        encode_request req;
        api_error err;
        ck_assert_int_eq(parse_small(&s, named[i].body, &req, &err), -1);
        ck_assert_msg(strcmp(err.message, named[i].message) == 0, "%s: '%s', want '%s'",
                      named[i].body, err.message, named[i].message);
        encode_request_free(&req);
    }
    /* Nesting: 2047 arrays are valid JSON (a d_model error); 5000 are not,
     * and jansson words it for the body. */
    char *nest = xcalloc(2 * 5000 + 64, 1);
    for (int n = 2047; n <= 5000; n += 5000 - 2047) {
        memset(nest, 0, 2 * 5000 + 64);
        strcpy(nest, "{\"embeddings\": ");
        memset(nest + strlen(nest), '[', (size_t)n);
        memset(nest + strlen(nest), ']', (size_t)n);
        strcat(nest, "}");
        encode_request req;
        api_error err;
        ck_assert_int_eq(parse_small(&s, nest, &req, &err), -1);
        ck_assert_msg(strstr(err.message, n == 5000
                                              ? "invalid JSON at line 1"
                                              : "embeddings[0][0] has 1 number; d_model is 4"),
                      "%d arrays: %s", n, err.message);
        encode_request_free(&req);
    }
    free(nest);
    enc_model_free(s.model);
}
END_TEST

/* ---- token ids read from the text ---------------------------------------------- */

static const char *const ID_TENSORS[] = {"embeddings.word_embeddings.weight"};
static const enc_embedding_info ID_MODULE = {.vocab_size = 50,
                                             .type_vocab_size = 2,
                                             .max_positions = 512,
                                             .padding_idx = -1,
                                             .position = "absolute",
                                             .dtype = "F32",
                                             .n_tensors = 1,
                                             .tensors = ID_TENSORS};

/* The ids arrays take the embeddings' path: escaped keys and any white
 * space, the limits before an entry's fault, syntax named for the body, a
 * large batch read exactly; none of it goes through one json_t per id. */
START_TEST(test_ids_text)
{
    small s;
    small_load(&s); /* max_batch 4, max_seq_len 8, max_batch_tokens 16 */
    api_ctx lim = s.lim;
    lim.embedding = &ID_MODULE;
    static const want_msg cases[] = {
        {"{\"input\\u005fids\": [[1, 2], [3, 4]], \"token_type\\u005fids\": [[0, 1], [1, 0]]}", 0,
         NULL},
        {"{\"input_ids\":\n[ [1,2]\r\n,\t[3 ,4] ],\"attention_mask\" : [[1,1],[1,0]]}", 0, NULL},
        /* the limits before an entry's fault */
        {"{\"input_ids\": [[1], [2], [3], [4], [\"x\"]]}", 413,
         "batch of 5 sequences is over limits.max_batch (4)"},
        {"{\"input_ids\": [[1, 2, 3, 4, 5, 6, 7, 8, \"x\"]]}", 413,
         "sequence length 9 is over limits.max_seq_len (8)"},
        /* an entry's kind before another's value, in document order */
        {"{\"input_ids\": [[1, null], [2, 3.5]]}", 400, "input_ids[0][1] is null, not an integer"},
        {"{\"input_ids\": [[1, 2], {\"a\": 1}]}", 400,
         "input_ids[1] is an object; expected an array of integers"},
        /* syntax: named with the body's line and column */
        {"{\"input_ids\": [[1, 2],\n [3,, 4]]}", 400, "invalid JSON at line 2, column"},
        {"{\"token_type_ids\": [[0, 0]], \"input_ids\": [[1 2]]}", 400,
         "invalid JSON at line 1, column"},
        /* jansson still reads every other field */
        {"{\"input_ids\": [[1, 2]], \"precision\": 0}", 400, "precision = 0 is outside 1..9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        encode_request req;
        api_error err = {0};
        const int rc =
            v1_request_parse(&req, cases[i].body, strlen(cases[i].body), &s.hp, &lim, &err);
        if (cases[i].status == 0) {
            ck_assert_msg(rc == 0, "%s: %s", cases[i].body, err.message);
            ck_assert(req.input_ids[0] == 1 && req.input_ids[1] == 2 && req.input_ids[2] == 3 &&
                      req.input_ids[3] == 4);
        } else {
            ck_assert_msg(rc < 0 && api_error_status(err.kind) == cases[i].status,
                          "%s: status %d (%s), want %d", cases[i].body, api_error_status(err.kind),
                          err.message, cases[i].status);
            ck_assert_msg(strstr(err.message, cases[i].message) != NULL,
                          "%s: message '%s' lacks '%s'", cases[i].body, err.message,
                          cases[i].message);
        }
        encode_request_free(&req);
    }
    /* A NUL byte among the ids is refused, not read as the end. */
    static const char nul_body[] = "{\"input_ids\": [[1\0, 2]]}";
    encode_request req;
    api_error err = {0};
    ck_assert_int_eq(v1_request_parse(&req, nul_body, sizeof nul_body - 1, &s.hp, &lim, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.message, "invalid JSON at line 1, column"));
    encode_request_free(&req);

    /* 64 ragged rows of up to 512 ids, types and a mask: every entry lands
     * where it belongs, padding after each row's own length. */
    enum { B = 64, L = 512 };
    const api_ctx big = {
        .max_batch = B, .max_seq_len = L, .max_batch_tokens = (long)B * L, .embedding = &ID_MODULE};
    char *body = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&body, &size);
    for (int field = 0; field < 3; field++) {
        fprintf(f, field ? "], \"%s\": [" : "{\"%s\": [",
                field == 0   ? "input_ids"
                : field == 1 ? "token_type_ids"
                             : "attention_mask");
        for (int b = 0; b < B; b++) {
            const int n = b == 5 ? L : 1 + (b * 37) % L;
            fputs(b ? ", [" : "[", f);
            for (int i = 0; i < n; i++) {
                const int v = field == 0   ? (b * 131 + i * 7) % 50
                              : field == 1 ? (b + i) % 2
                                           : i < n - 1 || b % 3 != 0 || n == 1;
                fprintf(f, i ? ",%d" : "%d", v);
            }
            fputc(']', f);
        }
    }
    fputs("], \"attention\": \"none\"}", f);
    fclose(f);
    memset(&err, 0, sizeof err);
    ck_assert_msg(v1_request_parse(&req, body, size, &s.hp, &big, &err) == 0, "%s", err.message);
    ck_assert(req.batch.B == B && req.batch.L == L);
    for (int b = 0; b < B; b++) {
        const int n = b == 5 ? L : 1 + (b * 37) % L;
        const int len = b % 3 == 0 && n > 1 ? n - 1 : n;
        ck_assert_msg(req.batch.lengths[b] == len, "lengths[%d] = %d, want %d", b,
                      req.batch.lengths[b], len);
        for (int i = 0; i < L; i++) {
            const int32_t want = i < n ? (b * 131 + i * 7) % 50 : 0;
            const int32_t want_type = i < n ? (b + i) % 2 : 0;
            const int32_t got = req.input_ids[(size_t)b * L + i];
            const int32_t got_type = req.token_type_ids[(size_t)b * L + i];
            if (got != want || got_type != want_type)
                ck_abort_msg("[%d][%d]: id %d type %d, want %d %d", b, i, got, got_type, want,
                             want_type);
        }
    }
    encode_request_free(&req);
    free(body);
    enc_model_free(s.model);
}
END_TEST

Suite *v1_embeddings_suite(void)
{
    Suite *s = timed_suite("v1_embeddings");
    TCase *tc = timed_case(s, "from the text", 120);
    tcase_add_test(tc, test_scanner_messages);
    tcase_add_test(tc, test_scanner_syntax);
    tcase_add_test(tc, test_big_integers_are_numbers);
    tcase_add_test(tc, test_large_body_split);
    tcase_add_test(tc, test_ids_text);
    return s;
}
