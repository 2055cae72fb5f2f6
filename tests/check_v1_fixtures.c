/* check_v1_fixtures.c - the /v1/encode codec (server/protocol/v1.c) end
 * to end against independent references: the PyTorch fixtures
 * (tests/fixtures/torch/), whose request bodies are written here from a
 * case's x and mask (nested JSON, base64, the unbatched form), run through
 * parse -> enc_forward -> the response, which is parsed back with jansson
 * and compared with PyTorch's out / attn.{l} / attn_mean.{l}; and, on
 * random shapes, the core's own output arrays element by element (the
 * writer and the nesting, not the math). */
#include "v1_util.h"
#include "codec/base64.h"
#include "suites.h"
#include "timing.h"
#include "torch_fixture.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixture tests ---------------------------------------------------------------- */

static const char *const REQUIRED_CASES[] = {
    "layer_post_relu",  "mask_lengths",     "mask_combined", "mask_window_global",
    "mask_attn_add_3d", "mask_key_padding", "gqa_kv2",       "stack3_post_gelu"};

START_TEST(test_required_cases_present)
{
    for (size_t i = 0; i < sizeof REQUIRED_CASES / sizeof *REQUIRED_CASES; i++) {
        bool found = false;
        for (int k = 0; k < torch_case_count(); k++)
            found = found || strcmp(torch_case_name(k), REQUIRED_CASES[i]) == 0;
        ck_assert_msg(found, "fixture case %s is missing under %s", REQUIRED_CASES[i], TORCH_DIR);
    }
}
END_TEST

/* Nested JSON in and out, attention "heads", attention_layers "all". */
START_TEST(test_fixture_nested)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    char *body = fx_body(&c, -1, false, "\"attention_layers\": \"all\"");
    run r;
    run_body(&r, c.model, &c.hp, body, c.name);
    const int n_layers = c.hp.n_layers;

    ck_assert_str_eq(json_string_value(json_object_get(r.resp, "model")), "encoder");
    check_shape(json_object_get(r.resp, "shape"),
                (size_t[]){(size_t)c.y.B, (size_t)c.y.L, (size_t)c.y.D}, 3);
    float *want = fx_want(&c, "out", -1);
    check_json(json_object_get(r.resp, "outputs"), &c.y, want, T_OUT, -1, &TORCH_TOL, "outputs");
    free(want);
    want = fx_want(&c, "attn", n_layers - 1);
    check_json(json_object_get(r.resp, "attention"), &c.y, want, T_HEADS, -1, &TORCH_TOL,
               "attention");
    free(want);
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    ck_assert_uint_eq(json_array_size(layers), (size_t)n_layers);
    for (int l = 0; l < n_layers; l++) {
        const json_t *e = json_array_get(layers, (size_t)l);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), l);
        want = fx_want(&c, "attn", l);
        check_json(json_object_get(e, "attention"), &c.y, want, T_HEADS, -1, &TORCH_TOL,
                   "attention_layers");
        free(want);
    }
    ck_assert_ptr_null(json_object_get(r.resp, "outputs_shape"));
    ck_assert_ptr_null(json_object_get(r.resp, "attention_shape"));
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);
    fx_free(&c);
}
END_TEST

/* embeddings_b64 in, "encoding": "base64" out, attention "mean"; layer 0
 * listed for stacks. */
START_TEST(test_fixture_base64)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    const int n_layers = c.hp.n_layers;
    char *body = fx_body(&c, -1, true,
                         n_layers > 1 ? "\"attention\": \"mean\", \"encoding\": \"base64\", "
                                        "\"attention_layers\": [0]"
                                      : "\"attention\": \"mean\", \"encoding\": \"base64\"");
    run r;
    run_body(&r, c.model, &c.hp, body, c.name);
    check_shape(json_object_get(r.resp, "shape"),
                (size_t[]){(size_t)c.y.B, (size_t)c.y.L, (size_t)c.y.D}, 3);
    float *want = fx_want(&c, "out", -1);
    check_b64(json_object_get(r.resp, "outputs"), json_object_get(r.resp, "outputs_shape"), &c.y,
              want, T_OUT, -1, &TORCH_TOL, "outputs");
    free(want);
    const json_t *ashape = json_object_get(r.resp, "attention_shape");
    want = fx_want(&c, "attn_mean", n_layers - 1);
    check_b64(json_object_get(r.resp, "attention"), ashape, &c.y, want, T_MEAN, -1, &TORCH_TOL,
              "attention");
    free(want);
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    if (n_layers > 1) {
        ck_assert_uint_eq(json_array_size(layers), 1);
        const json_t *e = json_array_get(layers, 0);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), 0);
        want = fx_want(&c, "attn_mean", 0);
        check_b64(json_object_get(e, "attention"), ashape, &c.y, want, T_MEAN, -1, &TORCH_TOL,
                  "attention_layers[0]");
        free(want);
    } else {
        ck_assert_ptr_null(layers);
    }
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);
    fx_free(&c);
}
END_TEST

/* Each sequence alone in the unbatched form [L][D] (with its lengths,
 * key_padding and attn slice): the fixture's sequence b, [len][D] out and
 * [H][len][len] attention.  Even b nested JSON; odd b base64 both ways. */
START_TEST(test_fixture_unbatched)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    const int n_layers = c.hp.n_layers;
    for (int b = 0; b < c.y.B; b++) {
        const bool b64 = b % 2 == 1;
        char extra[128];
        snprintf(extra, sizeof extra, "\"encoding\": \"%s\"%s", b64 ? "base64" : "json",
                 n_layers > 1 ? ", \"attention_layers\": [0]" : "");
        char *body = fx_body(&c, b, b64, extra);
        run r;
        run_body(&r, c.model, &c.hp, body, c.name);
        check_shape(json_object_get(r.resp, "shape"), (size_t[]){(size_t)c.y.L, (size_t)c.y.D}, 2);
        float *out = fx_want(&c, "out", -1), *last = fx_want(&c, "attn", n_layers - 1);
        const json_t *e = json_array_get(json_object_get(r.resp, "attention_layers"), 0);
        float *first = n_layers > 1 ? fx_want(&c, "attn", 0) : NULL;
        if (b64) {
            const json_t *ashape = json_object_get(r.resp, "attention_shape");
            check_b64(json_object_get(r.resp, "outputs"), json_object_get(r.resp, "outputs_shape"),
                      &c.y, out, T_OUT, b, &TORCH_TOL, "outputs");
            check_b64(json_object_get(r.resp, "attention"), ashape, &c.y, last, T_HEADS, b,
                      &TORCH_TOL, "attention");
            if (first)
                check_b64(json_object_get(e, "attention"), ashape, &c.y, first, T_HEADS, b,
                          &TORCH_TOL, "attention_layers[0]");
        } else {
            check_json(json_object_get(r.resp, "outputs"), &c.y, out, T_OUT, b, &TORCH_TOL,
                       "outputs");
            check_json(json_object_get(r.resp, "attention"), &c.y, last, T_HEADS, b, &TORCH_TOL,
                       "attention");
            if (first)
                check_json(json_object_get(e, "attention"), &c.y, first, T_HEADS, b, &TORCH_TOL,
                           "attention_layers[0]");
        }
        if (first)
            ck_assert_int_eq(json_integer_value(json_object_get(e, "layer")), 0);
        else
            ck_assert_ptr_null(json_object_get(r.resp, "attention_layers"));
        check_usage(r.resp, &c.y, b);
        free(out);
        free(last);
        free(first);
        run_free(&r);
        free(body);
    }
    fx_free(&c);
}
END_TEST

/* precision 3: values rounded (1e-2 relative of PyTorch's), at most 3
 * significant digits printed; precision 9: each printed number is, by
 * strtof, exactly the float the core returned; attention "none": no
 * attention in the response. */
START_TEST(test_fixture_precision)
{
    fx c;
    fx_load(&c, torch_case_name(_i));
    const int last = c.hp.n_layers - 1;
    const tol rounded = {false, TOL, 1e-2};

    char *body = fx_body(&c, -1, false, "\"precision\": 3, \"attention\": \"mean\"");
    run r;
    run_body(&r, c.model, &c.hp, body, c.name);
    float *want = fx_want(&c, "out", -1);
    check_json(json_object_get(r.resp, "outputs"), &c.y, want, T_OUT, -1, &rounded, "outputs");
    free(want);
    want = fx_want(&c, "attn_mean", last);
    check_json(json_object_get(r.resp, "attention"), &c.y, want, T_MEAN, -1, &rounded, "attention");
    free(want);
    const char *keys[] = {"outputs", "attention"};
    for (int k = 0; k < 2; k++) {
        tokens t = scan_numbers(r.text, keys[k]);
        ck_assert_uint_gt(t.n, 0);
        size_t worst = 0;
        for (size_t i = 0; i < t.n; i++)
            if (sig_digits(t.start[i], t.len[i]) > 3)
                worst = i + 1;
        ck_assert_msg(worst == 0, "%s: '%.*s' has more than 3 significant digits", keys[k],
                      worst ? (int)t.len[worst - 1] : 0, worst ? t.start[worst - 1] : "");
        tokens_free(&t);
    }
    run_free(&r);
    free(body);

    body = fx_body(&c, -1, false, "\"precision\": 9, \"attention\": \"heads\"");
    run_body(&r, c.model, &c.hp, body, c.name);
    tokens t = scan_numbers(r.text, "outputs");
    check_tokens_exact(&t, &c.y, r.req.out, T_OUT, "outputs");
    tokens_free(&t);
    t = scan_numbers(r.text, "attention");
    check_tokens_exact(&t, &c.y, r.req.attn[last], T_HEADS, "attention");
    tokens_free(&t);
    run_free(&r);
    free(body);

    body = fx_body(&c, -1, false, "\"attention\": \"none\", \"attention_layers\": \"all\"");
    run_body(&r, c.model, &c.hp, body, c.name);
    want = fx_want(&c, "out", -1);
    check_json(json_object_get(r.resp, "outputs"), &c.y, want, T_OUT, -1, &TORCH_TOL, "outputs");
    free(want);
    ck_assert_ptr_null(json_object_get(r.resp, "attention"));
    ck_assert_ptr_null(json_object_get(r.resp, "attention_layers"));
    run_free(&r);
    free(body);
    fx_free(&c);
}
END_TEST

/* embeddings_b64 in a body: plain text is decoded from the body, text with
 * JSON escapes goes through jansson; both give the same floats, and a bad
 * character deep in the text is named with its offset. */
START_TEST(test_base64_body_paths)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 4;
    hp.n_heads = hp.n_kv_heads = 1;
    hp.d_ff = 8;
    const api_ctx lim = {.max_batch = 64,
                         .max_seq_len = 4096,
                         .max_batch_tokens = 65536,
                         .max_attention_bytes = (size_t)1 << 20};
    /* 8 floats; 0x3fffffff (1.99999988) encodes as "////" */
    static const uint32_t bits[8] = {0x3fffffffu, 0x3f800000u, 0xc0490fdbu, 0x00000001u,
                                     0x7f7fffffu, 0x80000000u, 0x3eaaaaabu, 0x42280000u};
    unsigned char le[32];
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 4; j++)
            le[4 * k + j] = (unsigned char)(bits[k] >> (8 * j));
    size_t n;
    char *b64 = base64_encode(le, sizeof le, &n);
    ck_assert_ptr_nonnull(strstr(b64, "////"));
    /* The same text with every '/' written "\/" and the first 'A' as \u0041. */
    char esc[128] = "", *e = esc;
    for (const char *c = b64; *c; c++)
        e += *c == '/' ? sprintf(e, "\\/") : sprintf(e, "%c", *c);
    char *a = strchr(esc, 'A');
    ck_assert_ptr_nonnull(a);
    char esc2[160];
    snprintf(esc2, sizeof esc2, "%.*s\\u0041%s", (int)(a - esc), esc, a + 1);
    const char *texts[] = {b64, esc, esc2};
    for (int t = 0; t < 3; t++) {
        char body[256];
        snprintf(body, sizeof body, "{\"shape\": [2, 4], \"embeddings_b64\": \"%s\"}", texts[t]);
        encode_request req;
        api_error err = {0};
        ck_assert_msg(v1_request_parse(&req, body, strlen(body), &hp, &lim, &err) == 0, "%s: %s",
                      body, err.message);
        ck_assert_int_eq(req.batch.B, 1);
        ck_assert_int_eq(req.batch.L, 2);
        ck_assert(!req.batched);
        for (int k = 0; k < 8; k++) {
            uint32_t u;
            memcpy(&u, &req.x[k], 4);
            ck_assert_msg(u == bits[k], "%s: float %d is %08x, want %08x", body, k, u, bits[k]);
        }
        encode_request_free(&req);
    }
    /* A bad character past the first groups, in both paths. */
    for (int t = 0; t < 2; t++) {
        char bad[64], body[256];
        snprintf(bad, sizeof bad, "%s", b64);
        bad[21] = t ? '\x01' : '.';
        snprintf(body, sizeof body, "{\"shape\": [2, 4], \"embeddings_b64\": \"%s\"}", bad);
        encode_request req;
        api_error err = {0};
        ck_assert_int_eq(v1_request_parse(&req, body, strlen(body), &hp, &lim, &err), -1);
        encode_request_free(&req);
        const char *want = t ? "invalid JSON at line 1, column" : "'.' at offset 21";
        ck_assert_msg(strstr(err.message, want), "'%s' lacks '%s'", err.message, want);
    }
    free(b64);
}
END_TEST

/* ---- token ids: the Hugging Face fixtures ------------------------------------ */

/* A directory's ids.safetensors through /v1/encode from token ids: padded
 * with lengths (every layer's weights), ragged rows, attention_mask (base64
 * out), and each sequence alone; outputs and weights within 1e-4 of the
 * references (transformers' embedding module and layers written out). */
START_TEST(test_ids_fixture)
{
    ids_fx c;
    ids_fx_load(&c, ids_fx_dir(_i));
    enc_model *m = ids_fx_model(&c);
    const enc_hparams *hp = enc_model_hparams(m);
    ck_assert_msg(enc_model_embedding(m) != NULL, "%s: no embedding module", c.name);
    ck_assert_int_eq(hp->d_model, c.D);
    ck_assert_int_eq(hp->n_layers, c.n_layers);
    float *out = ids_fx_want(&c, -1), *last = ids_fx_want(&c, c.n_layers - 1);
    char what[128];

    /* padded, lengths, every layer */
    char *body = ids_body(&c, IDS_PADDED, 0, "\"attention_layers\": \"all\"");
    run r;
    run_body(&r, m, hp, body, c.name);
    snprintf(what, sizeof what, "%s padded: outputs", c.name);
    check_shape(json_object_get(r.resp, "shape"), (size_t[]){(size_t)c.B, (size_t)c.L, (size_t)c.D},
                3);
    check_json(json_object_get(r.resp, "outputs"), &c.y, out, T_OUT, -1, &TORCH_TOL, what);
    const json_t *layers = json_object_get(r.resp, "attention_layers");
    ck_assert_uint_eq(json_array_size(layers), (size_t)c.n_layers);
    for (int l = 0; l < c.n_layers; l++) {
        float *want = ids_fx_want(&c, l);
        snprintf(what, sizeof what, "%s padded: attention layer %d", c.name, l);
        check_json(json_object_get(json_array_get(layers, (size_t)l), "attention"), &c.y, want,
                   T_HEADS, -1, &TORCH_TOL, what);
        free(want);
    }
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);

    /* ragged rows, no lengths: each row its own length */
    body = ids_body(&c, IDS_RAGGED, 0, NULL);
    run_body(&r, m, hp, body, c.name);
    snprintf(what, sizeof what, "%s ragged: outputs", c.name);
    check_json(json_object_get(r.resp, "outputs"), &c.y, out, T_OUT, -1, &TORCH_TOL, what);
    snprintf(what, sizeof what, "%s ragged: attention", c.name);
    check_json(json_object_get(r.resp, "attention"), &c.y, last, T_HEADS, -1, &TORCH_TOL, what);
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);

    /* attention_mask instead of lengths, base64 out */
    body = ids_body(&c, IDS_MASK, 0, "\"encoding\": \"base64\"");
    run_body(&r, m, hp, body, c.name);
    snprintf(what, sizeof what, "%s mask: outputs", c.name);
    check_b64(json_object_get(r.resp, "outputs"), json_object_get(r.resp, "outputs_shape"), &c.y,
              out, T_OUT, -1, &TORCH_TOL, what);
    snprintf(what, sizeof what, "%s mask: attention", c.name);
    check_b64(json_object_get(r.resp, "attention"), json_object_get(r.resp, "attention_shape"),
              &c.y, last, T_HEADS, -1, &TORCH_TOL, what);
    check_usage(r.resp, &c.y, -1);
    run_free(&r);
    free(body);

    /* each sequence alone, int[len] */
    for (int b = 0; b < c.B; b++) {
        body = ids_body(&c, IDS_ONE, b, NULL);
        run_body(&r, m, hp, body, c.name);
        ck_assert(!r.req.batched);
        snprintf(what, sizeof what, "%s sequence %d alone: outputs", c.name, b);
        check_json(json_object_get(r.resp, "outputs"), &c.y, out, T_OUT, b, &TORCH_TOL, what);
        snprintf(what, sizeof what, "%s sequence %d alone: attention", c.name, b);
        check_json(json_object_get(r.resp, "attention"), &c.y, last, T_HEADS, b, &TORCH_TOL, what);
        run_free(&r);
        free(body);
    }
    free(out);
    free(last);
    enc_model_free(m);
    ids_fx_free(&c);
}
END_TEST

/* The fixtures are there: every model_type the core embeds, and a padded
 * batch of the RoBERTa family among them. */
START_TEST(test_ids_fixtures_present)
{
    static const char *const want[] = {"bert_base",    "bert_mlm",       "roberta_mlm", "camembert",
                                       "electra_disc", "distilbert_mlm", "xlm_roberta"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        bool found = false;
        for (int k = 0; k < ids_fx_count(); k++) {
            const char *d = ids_fx_dir(k), *slash = strrchr(d, '/');
            found = found || strcmp(slash ? slash + 1 : d, want[i]) == 0;
        }
        ck_assert_msg(found, "no ids.safetensors for %s under tests/fixtures/hf", want[i]);
    }
}
END_TEST

/* ---- random shapes: the writer against the core's arrays ---------------------- */

START_TEST(test_random_shapes)
{
    uint64_t st = 0x5EED0000u + (uint64_t)_i;
    for (int iter = 0; iter < 12; iter++) {
        enc_hparams hp;
        enc_hparams_default(&hp);
        hp.n_heads = rand_int(&st, 1, 4);
        hp.d_model = hp.n_heads * rand_int(&st, 1, 4);
        hp.n_kv_heads = hp.n_heads % 2 == 0 && rand_int(&st, 0, 1) ? hp.n_heads / 2 : hp.n_heads;
        hp.d_ff = rand_int(&st, 1, 9);
        hp.n_layers = rand_int(&st, 1, 3);
        hp.activation = (enc_activation)rand_int(&st, 0, 2);
        hp.norm_first = rand_int(&st, 0, 1);
        enc_error e = {0};
        enc_model *m = enc_model_random(&hp, st, &e);
        ck_assert_msg(m != NULL, "%s", e.message);

        const int B = rand_int(&st, 1, 4), L = rand_int(&st, 1, 7), D = hp.d_model;
        const bool batched = B > 1 || rand_int(&st, 0, 1), b64_in = rand_int(&st, 0, 1);
        const bool b64_out = rand_int(&st, 0, 1);
        int lengths[4];
        const bool use_lengths = rand_int(&st, 0, 1);
        for (int b = 0; b < B; b++)
            lengths[b] = rand_int(&st, 1, L);
        const int mode = rand_int(&st, 0, 2); /* heads, mean, none */
        const int layer_choice = rand_int(&st, 0, 2);
        float *x = xcalloc((size_t)B * L * D, sizeof *x);
        fill_random(x, (size_t)B * L * D, &st, 2.0f);

        char *body = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&body, &size);
        fputc('{', f);
        put_embeddings(f, x, B, L, D, batched, b64_in);
        if (use_lengths) {
            fputs(", \"lengths\": [", f);
            for (int b = 0; b < B; b++)
                fprintf(f, b ? ", %d" : "%d", lengths[b]);
            fputc(']', f);
        }
        fprintf(f, ", \"attention\": \"%s\", \"encoding\": \"%s\"",
                mode == 0   ? "heads"
                : mode == 1 ? "mean"
                            : "none",
                b64_out ? "base64" : "json");
        if (layer_choice == 1)
            fputs(", \"attention_layers\": \"all\"", f);
        else if (layer_choice == 2)
            fprintf(f, ", \"attention_layers\": [%d]", rand_int(&st, 0, hp.n_layers - 1));
        if (rand_int(&st, 0, 1))
            fputs(", \"mask\": {\"causal\": true}", f);
        fputc('}', f);
        fclose(f);

        run r;
        run_body(&r, m, &hp, body, "random");
        const layout y = {B, L, D, hp.n_heads, use_lengths ? lengths : NULL};
        const int kind = mode == 0 ? T_HEADS : T_MEAN;
        const json_t *j = r.resp;
        if (batched)
            check_shape(json_object_get(j, "shape"), (size_t[]){(size_t)B, (size_t)L, (size_t)D},
                        3);
        else
            check_shape(json_object_get(j, "shape"), (size_t[]){(size_t)L, (size_t)D}, 2);
        const int seq = batched ? -1 : 0;
        const json_t *ashape = json_object_get(j, "attention_shape");
        if (b64_out)
            check_b64(json_object_get(j, "outputs"), json_object_get(j, "outputs_shape"), &y,
                      r.req.out, T_OUT, seq, &EXACT, "outputs");
        else
            check_json(json_object_get(j, "outputs"), &y, r.req.out, T_OUT, seq, &EXACT, "outputs");
        if (mode == 2) {
            ck_assert_ptr_null(json_object_get(j, "attention"));
            ck_assert_ptr_null(json_object_get(j, "attention_layers"));
        } else {
            const float *last = r.req.attn[hp.n_layers - 1];
            if (b64_out)
                check_b64(json_object_get(j, "attention"), ashape, &y, last, kind, seq, &EXACT,
                          "attention");
            else
                check_json(json_object_get(j, "attention"), &y, last, kind, seq, &EXACT,
                           "attention");
            const json_t *layers = json_object_get(j, "attention_layers");
            ck_assert_uint_eq(json_array_size(layers), layer_choice == 0   ? 0
                                                       : layer_choice == 1 ? (size_t)hp.n_layers
                                                                           : 1);
            for (size_t k = 0; k < json_array_size(layers); k++) {
                const json_t *le = json_array_get(layers, k);
                const int l = (int)json_integer_value(json_object_get(le, "layer"));
                ck_assert(l >= 0 && l < hp.n_layers && r.req.attn[l]);
                if (b64_out)
                    check_b64(json_object_get(le, "attention"), ashape, &y, r.req.attn[l], kind,
                              seq, &EXACT, "attention_layers");
                else
                    check_json(json_object_get(le, "attention"), &y, r.req.attn[l], kind, seq,
                               &EXACT, "attention_layers");
            }
        }
        run_free(&r);
        free(body);
        free(x);
        enc_model_free(m);
    }
}
END_TEST

Suite *v1_fixtures_suite(void)
{
    Suite *s = timed_suite("v1_fixtures");
    const int n_cases = torch_case_count();
    TCase *torch = timed_case(s, "against PyTorch", 300);
    tcase_add_test(torch, test_required_cases_present);
    tcase_add_loop_test(torch, test_fixture_nested, 0, n_cases);
    tcase_add_loop_test(torch, test_fixture_base64, 0, n_cases);
    tcase_add_loop_test(torch, test_fixture_unbatched, 0, n_cases);
    tcase_add_loop_test(torch, test_fixture_precision, 0, n_cases);
    tcase_add_test(torch, test_base64_body_paths);
    TCase *ids = timed_case(s, "token ids", 300);
    tcase_add_test(ids, test_ids_fixtures_present);
    tcase_add_loop_test(ids, test_ids_fixture, 0, ids_fx_count());
    TCase *shapes = timed_case(s, "random shapes", 300);
    tcase_add_loop_test(shapes, test_random_shapes, 0, 4);
    return s;
}
