/* check_deberta.c - DeBERTa-v2 and -v3 directories (config.json model_type
 * deberta-v2: microsoft/deberta-v3-base, -large, -xsmall and their NLI,
 * prompt-injection and reranker fine-tunes): the relative position rows
 * against transformers' make_log_bucket_position, the fields read and
 * refused, the query Linear holding the scores' extra scale, the fast and
 * the naive forward, and text end to end against
 * tests/fixtures/hf/deberta_text (tools/fixtures/make_text_fixtures.py: the
 * ids from Hugging Face's tokenizers on the deberta-v3 tokenizer fixture,
 * a SentencePiece Unigram as DebertaV2Converter writes it, the outputs from
 * tools/fixtures/deberta_reference.py's forward written after
 * modeling_deberta_v2.py, checked against its float64 formulation). */
#include "daemon.h"
#include "hf_util.h"
#include "load/safetensors.h"
#include "model/model.h"
#include "suites.h"
#include "test_util.h"
#include "text_util.h"
#include "timing.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEB TESTS_DIR "/fixtures/hf/deberta_text"
#define TOL 1e-4

/* The table row of each distance d = i - j, against transformers'
 * make_log_bucket_position run in torch (float32) for deberta-v3's
 * position_buckets 256 and max_relative_positions 512, then clamped to the
 * table's 512 rows as DisentangledSelfAttention clamps its index: exact up
 * to 128 each side, logarithmic after, the ends reached at 511 and past
 * -511.  And for a small table (4 buckets to 6, span 4: the naive suite's
 * shape), the raw buckets -4 .. 4 of d = -12 .. 12 shifted by the span. */
START_TEST(test_rows_against_torch)
{
    const enc_disentangled v3 = {
        .span = 256, .buckets = 256, .max_position = 512, .c2p = true, .p2c = true};
    static const int want[][2] = {
        {0, 256},   {1, 257},    {-1, 255},  {127, 383},  {128, 384}, {-128, 128},
        {129, 385}, {-129, 127}, {200, 425}, {-200, 87},  {511, 511}, {-511, 1},
        {512, 511}, {600, 511},  {-600, 0},  {5000, 511}, {-5000, 0},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        ck_assert_msg(enc_dis_row(&v3, want[k][0]) == want[k][1], "d %d: row %d, torch's %d",
                      want[k][0], enc_dis_row(&v3, want[k][0]), want[k][1]);
    const enc_disentangled small = {.span = 4, .buckets = 4, .max_position = 6, .c2p = true};
    static const int raw[25] = {-4, -4, -4, -4, -4, -4, -4, -3, -3, -3, -2, -1, 0,
                                1,  2,  3,  3,  3,  4,  4,  4,  4,  4,  4,  4};
    for (int d = -12; d <= 12; d++) {
        const int r = 4 + raw[d + 12] > 7 ? 7 : 4 + raw[d + 12];
        ck_assert_msg(enc_dis_row(&small, d) == r, "d %d: row %d, torch's %d", d,
                      enc_dis_row(&small, d), r);
    }
    /* without buckets: the distance itself, clamped to the table */
    const enc_disentangled plain = {.span = 3, .p2c = true};
    for (int d = -6; d <= 6; d++)
        ck_assert_int_eq(enc_dis_row(&plain, d), d < -3 ? 0 : d > 2 ? 5 : 3 + d);
    ck_assert_int_eq(enc_dis_scale_factor(&v3), 3);
    ck_assert_int_eq(enc_dis_scale_factor(&small), 2);
}
END_TEST

/* Elements of dir/model.safetensors' tensors whose names start with
 * prefix. */
static size_t file_elements(const char *dir, const char *prefix)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    size_t n = 0;
    for (size_t i = 0; i < f.n_tensors; i++)
        if (strncmp(f.tensors[i].name, prefix, strlen(prefix)) == 0)
            n += f.tensors[i].numel;
    st_close(&f);
    return n;
}

/* deberta-v3-base's config.json (shrunk): post-norm with biases, gelu (erf),
 * no positions in the embeddings, no token types, relative attention with
 * both terms over the normed table; DebertaV2Model, no head. */
START_TEST(test_config_read)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(DEB, &c, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.model_type, "deberta-v2");
    ck_assert(!c.hp.norm_first && c.hp.bias);
    ck_assert_int_eq(c.hp.ffn, ENC_FFN_MLP);
    ck_assert_int_eq(c.hp.activation, ENC_ACT_GELU);
    ck_assert_int_eq(c.hp.position, ENC_POS_NONE);
    ck_assert_int_eq(c.hp.d_model, 48);
    ck_assert_int_eq(c.hp.n_heads, 4);
    ck_assert_float_eq(c.hp.layer_norm_eps, 1e-7f);
    ck_assert_int_eq(c.hp.dis.span, 8);
    ck_assert_int_eq(c.hp.dis.buckets, 8);
    ck_assert_int_eq(c.hp.dis.max_position, 64); /* max_relative_positions -1 */
    ck_assert(c.hp.dis.c2p && c.hp.dis.p2c && c.hp.dis.norm);
    ck_assert(c.no_positions && c.no_types);
    ck_assert_int_eq(c.type_vocab_size, 0);
    enc_model *m = hf_load(DEB);
    ck_assert_str_eq(enc_model_architecture(m), "deberta-v2");
    const enc_embedding_info *e = enc_model_embedding(m);
    ck_assert_int_eq(e->type_vocab_size, 0);
    ck_assert_int_eq(e->max_positions, 0);
    ck_assert_str_eq(e->position, "relative");
    /* the stack's parameters: the file's encoder.* elements (the layers,
     * rel_embeddings and their LayerNorm), no more */
    ck_assert_uint_eq(enc_model_param_count(m), file_elements(DEB, "encoder."));
    ck_assert_ptr_null(enc_model_head(m));
    enc_model_free(m);
}
END_TEST

/* Bound against the file: the query Linear (weight and bias) is the file's
 * times 1 / sqrt(3), the rest as they are; the table and its norm too. */
START_TEST(test_query_holds_the_scale)
{
    enc_model *m = hf_load(DEB);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, DEB "/model.safetensors", &err) == 0, "%s", err.message);
    const int D = 48;
    const enc_layer *ly = &m->layers[1];
    const float *wq =
        (const float *)(const void *)st_find(&f, "encoder.layer.1.attention.self.query_proj.weight")
            ->data;
    const float *bq =
        (const float *)(const void *)st_find(&f, "encoder.layer.1.attention.self.query_proj.bias")
            ->data;
    const float s = (float)(1.0 / sqrt(3.0));
    for (int i = 0; i < D * D; i++)
        ck_assert_msg(fabsf(ly->w_q[i] - wq[i] * s) <= 1e-7f * fabsf(wq[i]) + 1e-12f,
                      "w_q[%d] %g, file %g", i, ly->w_q[i], wq[i]);
    for (int i = 0; i < D; i++)
        ck_assert(fabsf(ly->b_qkv[i] - bq[i] * s) <= 1e-7f * fabsf(bq[i]) + 1e-12f);
    const st_tensor *k = st_find(&f, "encoder.layer.1.attention.self.key_proj.weight");
    ck_assert(memcmp(ly->w_k, k->data, (size_t)D * D * sizeof(float)) == 0);
    const st_tensor *t = st_find(&f, "encoder.rel_embeddings.weight");
    ck_assert(t && t->ndim == 2 && t->shape[0] == 16 && t->shape[1] == D);
    ck_assert(memcmp(m->dis_table, t->data, 16 * (size_t)D * sizeof(float)) == 0);
    ck_assert(memcmp(m->dis_ln_b, st_find(&f, "encoder.LayerNorm.bias")->data,
                     (size_t)D * sizeof(float)) == 0);
    st_close(&f);
    enc_model_free(m);
}
END_TEST

/* The fast forward (the terms as two products per head, added tile by
 * tile) and the naive one (each pair's terms in double) on the fixture's
 * ids give the reference's last hidden state; without either term, both
 * miss it by far. */
START_TEST(test_forward_and_naive_match)
{
    hf_case k;
    hf_case_load(&k, DEB);
    ck_assert_msg(k.L > 9, "the fixture's longest text (%d tokens) reaches no log bucket", k.L);
    for (int drop = 0; drop < 3; drop++) { /* none, c2p, p2c */
        enc_model *m = hf_load(DEB);
        m->hp.dis.c2p = drop != 1;
        m->hp.dis.p2c = drop != 2;
        static const char *const CHANGED[] = {NULL, "without c2p", "without p2c"};
        hf_case_expect(&k, m, CHANGED[drop], TOL, 1e-2);
        enc_model_free(m);
    }
    hf_case_free(&k);
}
END_TEST

/* What the modeling code computes otherwise is refused naming the field;
 * attnd itself refuses such a directory at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const config_refusal cases[] = {
        {"{\"relative_attention\": false}", "config.json: relative_attention false is not "
                                            "supported"},
        {"{\"share_att_key\": false}", "config.json: share_att_key false is not supported"},
        {"{\"conv_kernel_size\": 3}", "config.json: conv_kernel_size is not supported"},
        {"{\"attention_head_size\": 8}",
         "config.json: attention_head_size 8 is not supported (hidden_size / "
         "num_attention_heads = 12)"},
        {"{\"embedding_size\": 32}", "config.json: embedding_size 32 is not supported"},
        {"{\"pos_att_type\": \"p2c|p2p\"}", "config.json: pos_att_type 'p2p' is not supported"},
        {"{\"pos_att_type\": []}", "config.json: pos_att_type names neither c2p nor p2c"},
        {"{\"pos_att_type\": 3}", "config.json: pos_att_type is not a string or a list"},
        {"{\"pos_att_type\": null}", "config.json: missing 'pos_att_type'"},
        {"{\"norm_rel_ebd\": \"layer_norm|other\"}",
         "config.json: norm_rel_ebd is not supported unless none or layer_norm"},
        {"{\"max_relative_positions\": 5}",
         "config.json: max_relative_positions (or max_position_embeddings) 5 must be above "
         "position_buckets / 2 + 1 (5)"},
        {"{\"position_buckets\": \"8\"}", "config.json: 'position_buckets' is not an integer"},
        /* a table of another size, a position table the file lacks */
        {"{\"position_buckets\": 16}", "tensor 'encoder.rel_embeddings.weight' has shape"},
        {"{\"position_biased_input\": true}", "embeddings.position_embeddings.weight"},
        {"{\"type_vocab_size\": 2}", "embeddings.token_type_embeddings.weight"},
    };
    refused_edits(DEB, cases, sizeof cases / sizeof *cases);
    edit_startup_refused(DEB, "{\"share_att_key\": false}",
                         "config.json: share_att_key false is not supported");
}
END_TEST

/* microsoft/deberta-v3-base's config.json as published (20 fields: no
 * architectures, pad_token_id or pooler fields, pos_att_type the string
 * "p2c|c2p") reads as the fine-tunes' form (transformers' save_pretrained:
 * a list) and gives the same outputs; one term alone is read as such. */
START_TEST(test_published_forms_read)
{
    static const char *const files[] = {"model.safetensors", "text.safetensors", NULL};
    static const char *const drop[] = {
        "architectures",      "pad_token_id",         "pooler_dropout", "pooler_hidden_act",
        "pooler_hidden_size", "transformers_version", "torch_dtype",    NULL};
    scratch s;
    scratch_make(&s, DEB, "{\"pos_att_type\": \"p2c|c2p\"}", drop, files);
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.dis.c2p && c.hp.dis.p2c && c.hp.dis.span == 8);
    scratch_free(&s);
    scratch_make(&s, DEB, "{\"pos_att_type\": [\"c2p\"]}", NULL, files);
    ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
    ck_assert(c.hp.dis.c2p && !c.hp.dis.p2c);
    scratch_free(&s);
}
END_TEST

/* microsoft/deberta-v3-base's own form: config.json without legacy
 * (DebertaV2Config's default true: cls.predictions.*) over a file whose MLM
 * head is lm_predictions.* (DeBERTa's own names) -- transformers leaves
 * that head randomly initialised; attnd serves the encoder and leaves the
 * head out, saying why. */
START_TEST(test_mlm_head_under_other_names)
{
    static const char *const files[] = {"model.safetensors", NULL};
    static const char *const drop[] = {"legacy", NULL};
    scratch s;
    scratch_make(&s, TESTS_DIR "/fixtures/heads/deberta_mlm_new", "{}", drop, files);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_head(m));
    ck_assert_str_eq(enc_model_head_unsupported(m), "DebertaV2ForMaskedLM");
    ck_assert_msg(strstr(enc_model_head_note(m), "cls.predictions.transform.dense.weight") &&
                      strstr(enc_model_head_note(m), "are not in the files"),
                  "%s", enc_model_head_note(m));
    enc_model_free(m);
    scratch_free(&s);
}
END_TEST

/* deberta-v3's path, text in: Hugging Face's ids, the reference's
 * last_hidden_state of them, sentence-transformers' mean pooled, normalized
 * embeddings; /v1/model's hyperparameters say what was read. */
START_TEST(test_text_end_to_end)
{
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", DEB, NULL}, NULL), 0);
    text_matches_fixture(d.port, DEB, "mean_normalized", TOL);
    json_t *info = model_info(d.port);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "position")), "none");
    const json_t *ra = json_object_get(hp, "relative_attention");
    ck_assert_msg(json_is_object(ra), "no relative_attention in /v1/model");
    ck_assert_int_eq(json_integer_value(json_object_get(ra, "span")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(ra, "buckets")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(ra, "max_position")), 64);
    ck_assert(json_is_true(json_object_get(ra, "norm")));
    ck_assert_int_eq(json_array_size(json_object_get(ra, "terms")), 2);
    ck_assert(json_is_null(json_object_get(hp, "relative_bias")));
    json_decref(info);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *deberta_suite(void)
{
    Suite *s = timed_suite("deberta");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_test(tc, test_rows_against_torch);
    tcase_add_test(tc, test_config_read);
    tcase_add_test(tc, test_query_holds_the_scale);
    tcase_add_test(tc, test_forward_and_naive_match);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_published_forms_read);
    tcase_add_test(tc, test_mlm_head_under_other_names);
    tcase_add_test(tc, test_text_end_to_end);
    return s;
}
