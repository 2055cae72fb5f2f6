/* check_checkpoint.c - Hugging Face encoder directories (model.dir,
 * core/load/checkpoint.c): the directories of tests/fixtures/hf (written by
 * tools/fixtures/make_hf_fixtures.py in every architecture's naming, with their
 * embedding, pooler and head tensors) against PyTorch's outputs, against
 * the same weights under PyTorch's names bit for bit, the files and
 * ignored tensors they report, every refusal with the name it must give,
 * the settings that disagree with config.json, and the daemon's /v1/model.
 * tests/fixtures/hf5 (tools/fixtures/make_hf5_fixtures.py) holds the same
 * directories with config.json in transformers 5's form: they go through
 * the same comparisons.  Each config.json field that changes what
 * transformers computes is either honoured (the outputs stay PyTorch's) or
 * refused naming it. */
#include "config/config.h"
#include "daemon.h"
#include "hf_util.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "load/safetensors.h"
#include "load/sha256.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HF_DIR  TESTS_DIR "/fixtures/hf"
#define HF5_DIR TESTS_DIR "/fixtures/hf5"
#define TOL     1e-4

static const char *const CASES[] = {
    "bert_mlm",  "bert_base",    "roberta_mlm",          "xlm_roberta",
    "camembert", "electra_disc", "distilbert_mlm",       "bert_sharded",
    "bert_f16",  "bert_stack4",  "distilbert_sinusoidal"};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

/* AddressSanitizer's build: its shadow (an eighth of every allocation),
 * redzones and quarantine of freed blocks are resident memory that is not
 * the model's, so the resident-memory bound below holds in the plain build
 * (make test) and under valgrind only. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static void path_of(char *buf, size_t size, const char *dir, const char *name)
{
    ck_assert_int_lt(snprintf(buf, size, "%s/%s", dir, name), (int)size);
}

/* One forward of m over x [B, L, D], per-head weights; out and attn owned. */
static void run(enc_model *m, const float *x, int B, int L, float **out, float **attn)
{
    const enc_hparams *hp = enc_model_hparams(m);
    *out = xcalloc((size_t)B * L * hp->d_model, sizeof **out);
    for (int l = 0; l < hp->n_layers; l++)
        attn[l] = xcalloc((size_t)B * hp->n_heads * L * L, sizeof **attn);
    enc_batch in = batch_plain(x, B, L, NULL);
    enc_result res = {.out = *out, .attn_mode = ENC_ATTN_HEADS, .attn = attn};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
}

/* Each directory, in the 4.x and the 5.x format: config.json read as the
 * fixture script wrote attnd's config; the forward within 1e-4 of PyTorch
 * (outputs and every layer's per-head weights); the same bits as the
 * PyTorch-named file of the same weights; the ignored tensors and files the
 * script lists. */
START_TEST(test_directory_matches_pytorch)
{
    const char *name = CASES[_i % N_CASES];
    char dir[512], path[640];
    path_of(dir, sizeof dir, _i < N_CASES ? HF_DIR : HF5_DIR, name);
    path_of(path, sizeof path, dir, "case.safetensors");
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s: %s", path, err.message);
    enc_hparams want;
    torch_hparams(&f, &want);
    json_t *hf = json_loads(st_metadata(&f, "hf"), 0, NULL);
    ck_assert_msg(hf != NULL, "%s: no hf metadata", name);

    enc_hf_config c;
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", name, err.message);
    ck_assert_str_eq(c.model_type, json_string_value(json_object_get(hf, "model_type")));
    ck_assert_int_eq(c.hp.d_model, want.d_model);
    ck_assert_int_eq(c.hp.n_heads, want.n_heads);
    ck_assert_int_eq(c.hp.n_kv_heads, want.n_kv_heads);
    ck_assert_int_eq(c.hp.d_ff, want.d_ff);
    ck_assert_int_eq(c.hp.n_layers, want.n_layers);
    ck_assert_int_eq(c.hp.activation, want.activation);
    ck_assert_msg(c.hp.layer_norm_eps == want.layer_norm_eps, "%s: eps %g, want %g", name,
                  (double)c.hp.layer_norm_eps, (double)want.layer_norm_eps);
    ck_assert(!c.hp.norm_first && c.hp.bias);

    enc_model *m = enc_model_load_dir(dir, &c.hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", name, err.message);
    ck_assert_str_eq(enc_model_architecture(m), c.model_type);
    const st_tensor *xt = st_find(&f, "x");
    ck_assert(xt && xt->ndim == 3);
    const int B = (int)xt->shape[0], L = (int)xt->shape[1], H = c.hp.n_heads;
    float *x = torch_floats(&f, "x", NULL), *out, *attn[ENC_MAX_LAYERS] = {0};
    run(m, x, B, L, &out, attn);
    float *want_out = torch_floats(&f, "out", NULL);
    double d = max_abs_diff(out, want_out, (size_t)B * L * c.hp.d_model);
    ck_assert_msg(d <= TOL, "%s: outputs differ from PyTorch by %g", name, d);
    for (int l = 0; l < c.hp.n_layers; l++) {
        char key[32];
        snprintf(key, sizeof key, "attn.%d", l);
        float *w = torch_floats(&f, key, NULL);
        d = max_abs_diff(attn[l], w, (size_t)B * H * L * L);
        ck_assert_msg(d <= TOL, "%s: %s differs from PyTorch by %g", name, key, d);
        free(w);
    }

    /* The PyTorch-named file of the same weights: the same bits. */
    path_of(path, sizeof path, dir, "torch.safetensors");
    enc_model *t = enc_model_load(path, &c.hp, &err);
    ck_assert_msg(t != NULL, "%s: %s", path, err.message);
    float *out2, *attn2[ENC_MAX_LAYERS] = {0};
    run(t, x, B, L, &out2, attn2);
    ck_assert_msg(memcmp(out, out2, (size_t)B * L * c.hp.d_model * sizeof *out) == 0,
                  "%s: outputs differ from the PyTorch-named file's", name);
    for (int l = 0; l < c.hp.n_layers; l++)
        ck_assert_msg(memcmp(attn[l], attn2[l], (size_t)B * H * L * L * sizeof(float)) == 0,
                      "%s: layer %d's weights differ from the PyTorch-named file's", name, l);

    hf_check_files(m, dir, hf, name); /* what was left out, and what was read */

    for (int l = 0; l < c.hp.n_layers; l++) {
        free(attn[l]);
        free(attn2[l]);
    }
    free(out);
    free(out2);
    free(x);
    free(want_out);
    enc_model_free(m);
    enc_model_free(t);
    json_decref(hf);
    st_close(&f);
}
END_TEST

/* ---- refusals ---------------------------------------------------------------------- */

static const char *const WEIGHTS[] = {"model.safetensors", NULL};

START_TEST(test_bad_config_refused)
{
    static const struct {
        const char *edit;
        const char *remove;
        const char *want;
    } cases[] = {
        {NULL, "hidden_size", "config.json: missing 'hidden_size'"},
        {"{\"hidden_size\": \"16\"}", NULL, "config.json: 'hidden_size' is not a positive integer"},
        {"{\"num_hidden_layers\": 0}", NULL, "'num_hidden_layers' is not a positive integer"},
        {"{\"hidden_act\": \"swish\"}", NULL,
         "config.json: hidden_act 'swish' is not supported (gelu, gelu_python, gelu_new, "
         "gelu_pytorch_tanh, gelu_fast, gelu_accurate, relu)"},
        /* what attnd cannot compute among transformers' ACT2FN */
        {"{\"hidden_act\": \"quick_gelu\"}", NULL,
         "config.json: hidden_act 'quick_gelu' is not supported"},
        {"{\"hidden_act\": \"gelu_10\"}", NULL,
         "config.json: hidden_act 'gelu_10' is not supported"},
        {"{\"hidden_act\": \"silu\"}", NULL, "config.json: hidden_act 'silu' is not supported"},
        {"{\"hidden_act\": 3}", NULL, "config.json: a string expected for 'hidden_act'"},
        {"{\"model_type\": \"gpt2\"}", NULL, "config.json: model_type 'gpt2' is not supported"},
        {NULL, "model_type", "config.json: missing 'model_type'"},
        {"{\"layer_norm_eps\": -1}", NULL, "'layer_norm_eps' is not a positive number"},
        {"{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}", NULL,
         "config.json: rope_scaling is not supported"},
        {"{\"position_embedding_type\": \"relative_key\"}", NULL,
         "config.json: position_embedding_type 'relative_key' is not supported (absolute, alibi, "
         "rotary): transformers adds learned distance embeddings"},
        {"{\"position_embedding_type\": \"relative_key_query\"}", NULL,
         "config.json: position_embedding_type 'relative_key_query' is not supported"},
        /* a decoder's causal self-attention, a cross-attention */
        {"{\"is_decoder\": true}", NULL, "config.json: is_decoder true is not supported"},
        {"{\"is_decoder\": \"no\"}", NULL, "config.json: 'is_decoder' is not true or false"},
        {"{\"add_cross_attention\": true}", NULL,
         "config.json: add_cross_attention true is not supported"},
        /* 4.x prunes these heads as it loads the model */
        {"{\"pruned_heads\": {\"0\": [1]}}", NULL, "config.json: pruned_heads is not supported"},
        {"{\"quantization_config\": {\"quant_method\": \"bitsandbytes\"}}", NULL,
         "config.json: quantization_config is not supported"},
        /* transformers 5's rope_parameters (read with a rotary position type) */
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": {\"rope_type\": "
         "\"yarn\", \"factor\": 4.0}}",
         NULL,
         "config.json: rope_parameters.rope_type 'yarn' is not supported (default: attnd computes "
         "RoPE without scaling)"},
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": {\"type\": "
         "\"linear\"}}",
         NULL, "config.json: rope_parameters.type 'linear' is not supported"},
        /* refused with absolute positions too, as rope_scaling is */
        {"{\"rope_parameters\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}}", NULL,
         "config.json: rope_parameters.rope_type 'dynamic' is not supported"},
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": {\"full_attention\": "
         "{\"rope_theta\": 500}}}",
         NULL,
         "config.json: rope_parameters has entries per layer type, but a bert model has no "
         "layer_types"},
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": 500}", NULL,
         "config.json: 'rope_parameters' is not an object"},
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": {\"rope_theta\": 0}}",
         NULL, "config.json: 'rope_parameters.rope_theta' is not a positive number"},
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": "
         "{\"partial_rotary_factor\": 0.1}}",
         NULL,
         "config.json: rope_parameters.partial_rotary_factor 0.1 leaves no pair of the head's 4 "
         "dimensions to rotate"},
        /* the embedding module's fields */
        {"{\"vocab_size\": 0}", NULL, "config.json: 'vocab_size' is not a positive integer"},
        {"{\"pad_token_id\": 50}", NULL,
         "config.json: pad_token_id (50) is not below vocab_size (50)"},
        {"{\"pad_token_id\": -1}", NULL,
         "config.json: 'pad_token_id' is not a non-negative integer"},
        {"{\"type_vocab_size\": \"2\"}", NULL,
         "config.json: 'type_vocab_size' is not a non-negative integer"},
        {"{\"max_position_embeddings\": 0}", NULL,
         "config.json: 'max_position_embeddings' is not a positive integer"},
        /* the file's shapes against config.json's sizes */
        {"{\"hidden_size\": 12, \"num_attention_heads\": 4}", NULL,
         "tensor 'bert.encoder.layer.0.attention.self.query.weight' has shape [16, 16], "
         "expected [12, 12]"},
        /* one layer fewer than the file: the other is not ignored */
        {"{\"num_hidden_layers\": 1}", NULL, "unexpected tensor 'bert.encoder.layer.1."},
        {"{\"num_hidden_layers\": 3}", NULL,
         "missing tensor 'bert.encoder.layer.2.attention.self.query.weight'"},
        /* DistilBERT's names are not in a BERT file */
        {"{\"model_type\": \"distilbert\", \"dim\": 16, \"n_heads\": 4, \"hidden_dim\": 32, "
         "\"n_layers\": 2, \"activation\": \"gelu\"}",
         NULL,
         "missing tensor 'transformer.layer.0.attention.q_lin.weight' (or "
         "'distilbert.transformer.layer.0.attention.q_lin.weight')"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, HF_DIR "/bert_mlm", cases[i].edit,
                     (const char *const[]){cases[i].remove, NULL}, WEIGHTS);
        refused(s.dir, cases[i].want);
        scratch_free(&s);
    }
    scratch s;
    scratch_make(&s, HF_DIR "/bert_mlm", NULL, NULL, WEIGHTS);
    scratch_write(&s, "config.json", "{\"model_type\": \"bert\",");
    refused(s.dir, "config.json: line 1");
    scratch_free(&s);
    scratch_make(&s, HF_DIR "/bert_mlm", NULL, NULL, NULL);
    refused(s.dir, "neither model.safetensors nor model.safetensors.index.json is there");
    scratch_free(&s);
}
END_TEST

START_TEST(test_bad_index_refused)
{
    static const char *const SHARDS[] = {"model-00001-of-00002.safetensors",
                                         "model-00002-of-00002.safetensors", NULL};
    scratch s;
    scratch_make(&s, HF_DIR "/bert_sharded", NULL, NULL, SHARDS);
    scratch_write(&s, "model.safetensors.index.json",
                  "{\"weight_map\": {\"bert.encoder.layer.0.attention.self.query.weight\": "
                  "\"../model-00001-of-00002.safetensors\"}}");
    refused(s.dir, "tensor 'bert.encoder.layer.0.attention.self.query.weight' names no file of the "
                   "directory");
    scratch_write(
        &s, "model.safetensors.index.json",
        "{\"weight_map\": {\"bert.encoder.layer.1.output.dense.weight\": "
        "\"model-00001-of-00002.safetensors\", \"bert.encoder.layer.0.output.dense.weight\": "
        "\"model-00002-of-00002.safetensors\"}}");
    refused(s.dir, "model.safetensors.index.json: tensor 'bert.encoder.layer.");
    scratch_write(&s, "model.safetensors.index.json", "{\"metadata\": {}}");
    refused(s.dir, "model.safetensors.index.json: no 'weight_map' object");
    scratch_free(&s);
}
END_TEST

/* Writes src's safetensors file to dst with every tensor name ending in
 * from[i] renamed to end in to[i] (the data section copied as it is). */
static void rename_tensors(const char *src, const char *dst, const char *const *from,
                           const char *const *to)
{
    FILE *fp = fopen(src, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    const size_t n = (size_t)ftell(fp);
    rewind(fp);
    unsigned char *bytes = xcalloc(n, 1);
    ck_assert_uint_eq(fread(bytes, 1, n, fp), n);
    fclose(fp);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | bytes[i];
    json_t *head = json_loadb((const char *)bytes + 8, (size_t)hlen, 0, NULL), *out = json_object();
    ck_assert_ptr_nonnull(head);
    const char *key;
    json_t *v;
    json_object_foreach(head, key, v)
    {
        char name[256];
        snprintf(name, sizeof name, "%s", key);
        for (int i = 0; from[i]; i++) {
            const size_t k = strlen(name), f = strlen(from[i]);
            if (k >= f && strcmp(name + k - f, from[i]) == 0)
                snprintf(name + k - f, sizeof name - (k - f), "%s", to[i]);
        }
        json_object_set(out, name, v);
    }
    char *text = json_dumps(out, JSON_COMPACT);
    const uint64_t len = strlen(text);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(len >> (8 * i));
    fp = fopen(dst, "wb");
    ck_assert_ptr_nonnull(fp);
    fwrite(le, 1, 8, fp);
    fwrite(text, 1, len, fp);
    fwrite(bytes + 8 + hlen, 1, n - 8 - (size_t)hlen, fp);
    fclose(fp);
    free(text);
    json_decref(out);
    json_decref(head);
    free(bytes);
}

/* A checkpoint converted from TensorFlow names its LayerNorms' parameters
 * gamma and beta (bert-base-uncased's does): the same model, bit for bit. */
START_TEST(test_gamma_beta_names)
{
    scratch s;
    scratch_make(&s, HF_DIR "/bert_mlm", NULL, NULL, NULL);
    char dst[640];
    snprintf(dst, sizeof dst, "%s/model.safetensors", s.dir);
    rename_tensors(HF_DIR "/bert_mlm/model.safetensors", dst,
                   (const char *const[]){"LayerNorm.weight", "LayerNorm.bias", NULL},
                   (const char *const[]){"LayerNorm.gamma", "LayerNorm.beta", NULL});
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_int_eq(enc_hf_config_read(s.dir, &c, &err), 0);
    enc_model *renamed = enc_model_load_dir(s.dir, &c.hp, &err);
    ck_assert_msg(renamed != NULL, "%s", err.message);
    enc_model *plain = enc_model_load_dir(HF_DIR "/bert_mlm", &c.hp, &err);
    ck_assert_msg(plain != NULL, "%s", err.message);
    uint64_t seed = 7;
    const int B = 2, L = 5, D = c.hp.d_model;
    float *x = xcalloc((size_t)B * L * D, sizeof *x), *o1, *o2;
    float *a1[ENC_MAX_LAYERS] = {0}, *a2[ENC_MAX_LAYERS] = {0};
    fill_random(x, (size_t)B * L * D, &seed, 1.0f);
    run(renamed, x, B, L, &o1, a1);
    run(plain, x, B, L, &o2, a2);
    ck_assert(memcmp(o1, o2, (size_t)B * L * D * sizeof *o1) == 0);
    /* the embeddings' gamma and beta are the embedding module's, listed
     * under the file's names */
    const enc_embedding_info *emb = enc_model_embedding(renamed);
    ck_assert_ptr_nonnull(emb);
    bool seen = false;
    for (size_t i = 0; i < emb->n_tensors; i++)
        seen = seen || strcmp(emb->tensors[i], "bert.embeddings.LayerNorm.gamma") == 0;
    ck_assert(seen);
    for (int l = 0; l < c.hp.n_layers; l++) {
        free(a1[l]);
        free(a2[l]);
    }
    free(o1);
    free(o2);
    free(x);
    enc_model_free(renamed);
    enc_model_free(plain);
    scratch_free(&s);
}
END_TEST

/* position_embedding_type and the rotary fields give the positions inside
 * attention; a setting that disagrees is refused naming both. */
START_TEST(test_positions_from_config_json)
{
    static const struct {
        const char *edit;
        enc_position position;
        double theta;
        int rope_dim;
    } cases[] = {
        {"{\"position_embedding_type\": \"absolute\"}", ENC_POS_NONE, 10000.0, 0},
        {"{\"position_embedding_type\": \"alibi\"}", ENC_POS_ALIBI, 10000.0, 0},
        {"{\"position_embedding_type\": \"rotary\"}", ENC_POS_ROPE, 10000.0, 0},
        {"{\"position_embedding_type\": \"rotary\", \"rotary_emb_base\": 500, "
         "\"partial_rotary_factor\": 0.5}",
         ENC_POS_ROPE, 500.0, 2},
        {"{\"position_embedding_type\": \"rope\", \"rope_theta\": 1e6, \"rope_scaling\": null}",
         ENC_POS_ROPE, 1e6, 0},
        /* transformers 5's rope_parameters: its rope_theta and partial_rotary_factor first,
           then the top-level ones 4.x writes (RotaryEmbeddingConfigMixin's order) */
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": {\"rope_type\": "
         "\"default\", \"rope_theta\": 500.0, \"partial_rotary_factor\": 0.5}}",
         ENC_POS_ROPE, 500.0, 2},
        {"{\"position_embedding_type\": \"rotary\", \"rope_theta\": 1e6, "
         "\"partial_rotary_factor\": 1.0, \"rope_parameters\": {\"rope_theta\": 500.0, "
         "\"partial_rotary_factor\": 0.5}}",
         ENC_POS_ROPE, 500.0, 2},
        {"{\"position_embedding_type\": \"rotary\", \"rope_theta\": 1e6, "
         "\"partial_rotary_factor\": 0.5, \"rope_parameters\": {\"type\": \"default\"}}",
         ENC_POS_ROPE, 1e6, 2},
        {"{\"position_embedding_type\": \"rotary\", \"rope_parameters\": null}", ENC_POS_ROPE,
         10000.0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, HF_DIR "/bert_mlm", cases[i].edit, NULL, WEIGHTS);
        enc_hf_config c;
        enc_error err = {0};
        ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s: %s", cases[i].edit,
                      err.message);
        ck_assert_int_eq(c.hp.position, cases[i].position);
        ck_assert(c.hp.position != ENC_POS_ROPE || c.hp.rope_theta == cases[i].theta);
        ck_assert_int_eq(c.hp.rope_dim, cases[i].rope_dim);
        enc_model *m = enc_model_load_dir(s.dir, &c.hp, &err);
        ck_assert_msg(m != NULL, "%s", err.message);
        enc_model_free(m);
        if (cases[i].position == ENC_POS_ALIBI) { /* --position none disagrees */
            attnd_config cfg;
            enc_error cerr = {0};
            char *argv[] = {"attnd", "--model-dir", s.dir, "--position", "none", NULL};
            ck_assert_int_lt(config_load(&cfg, 5, argv, NULL, &cerr), 0);
            ck_assert_msg(strstr(cerr.message, "model.position: --position gives none, but ") &&
                              strstr(cerr.message,
                                     "config.json: position_embedding_type gives position alibi"),
                          "%s", cerr.message);
        }
        scratch_free(&s);
    }
    scratch s;
    scratch_make(&s, HF_DIR "/bert_mlm",
                 "{\"position_embedding_type\": \"rotary\", \"partial_rotary_factor\": 0.1}", NULL,
                 WEIGHTS);
    refused(s.dir,
            "config.json: partial_rotary_factor 0.1 leaves no pair of the head's 4 dimensions "
            "to rotate");
    scratch_free(&s);
    scratch_make(&s, HF_DIR "/bert_mlm",
                 "{\"position_embedding_type\": \"rotary\", \"rope_theta\": -1}", NULL, WEIGHTS);
    refused(s.dir, "config.json: 'rope_theta' is not a positive number");
    scratch_free(&s);
}
END_TEST

/* DistilBERT's and ELECTRA's own fields: a DistilBertConfig attribute_map
 * alias that disagrees with its field, a sinusoidal_pos_embds or
 * embedding_size of the wrong type. */
START_TEST(test_family_fields_refused)
{
    static const struct {
        const char *base, *edit, *want;
    } cases[] = {
        {"distilbert_mlm", "{\"hidden_size\": 32}",
         "config.json: 'hidden_size' (32) and 'dim' (16) differ (DistilBertConfig reads "
         "hidden_size as dim)"},
        {"distilbert_mlm", "{\"num_attention_heads\": 2}",
         "config.json: 'num_attention_heads' (2) and 'n_heads' (4) differ"},
        {"distilbert_mlm", "{\"num_hidden_layers\": 1}",
         "config.json: 'num_hidden_layers' (1) and 'n_layers' (2) differ"},
        {"distilbert_mlm", "{\"sinusoidal_pos_embds\": 1}",
         "config.json: 'sinusoidal_pos_embds' is not true or false"},
        {"electra_disc", "{\"embedding_size\": 0}",
         "config.json: 'embedding_size' is not a positive integer"},
        {"electra_disc", "{\"is_decoder\": true}",
         "config.json: is_decoder true is not supported (transformers' electra then masks"},
        {"roberta_mlm", "{\"add_cross_attention\": true}",
         "config.json: add_cross_attention true is not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char base[512];
        path_of(base, sizeof base, HF_DIR, cases[i].base);
        scratch s;
        scratch_make(&s, base, cases[i].edit, NULL, WEIGHTS);
        refused(s.dir, cases[i].want);
        scratch_free(&s);
    }
}
END_TEST

/* What the embedding module will need, as config.json says it, in the
 * 4.x and the 5.x form alike: vocab_size, type_vocab_size,
 * max_position_embeddings, pad_token_id, ELECTRA's embedding_size (its
 * class default 128 when absent), DistilBERT's sinusoidal_pos_embds. */
START_TEST(test_embedding_fields_read)
{
    static const struct {
        const char *name, *edit, *remove;
        int vocab, types, positions, pad, width;
        bool sinusoidal;
    } cases[] = {
        {"bert_mlm", NULL, NULL, 50, 2, 24, 0, 16, false},
        {"roberta_mlm", NULL, NULL, 50, 1, 24, 1, 16, false},
        {"electra_disc", NULL, NULL, 50, 2, 24, 0, 8, false},
        {"electra_disc", NULL, "embedding_size", 50, 2, 24, 0, 128, false},
        {"distilbert_mlm", NULL, NULL, 50, 0, 24, 0, 16, false},
        {"distilbert_mlm", "{\"sinusoidal_pos_embds\": true}", NULL, 50, 0, 24, 0, 16, true},
        {"bert_mlm", "{\"pad_token_id\": null}", "vocab_size", 0, 2, 24, -1, 16, false},
    };
    for (int form = 0; form < 2; form++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            char base[512];
            path_of(base, sizeof base, form ? HF5_DIR : HF_DIR, cases[i].name);
            scratch s;
            scratch_make(&s, base, cases[i].edit, (const char *const[]){cases[i].remove, NULL},
                         NULL);
            enc_hf_config c;
            enc_error err = {0};
            ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s: %s", base, err.message);
            ck_assert_int_eq(c.vocab_size, cases[i].vocab);
            ck_assert_int_eq(c.type_vocab_size, cases[i].types);
            ck_assert_int_eq(c.max_position_embeddings, cases[i].positions);
            ck_assert_int_eq(c.pad_token_id, cases[i].pad);
            ck_assert_int_eq(c.embedding_size, cases[i].width);
            ck_assert_int_eq(c.sinusoidal, cases[i].sinusoidal);
            scratch_free(&s);
        }
}
END_TEST

/* Fields attnd honours without a block option of its own give PyTorch's
 * outputs: each of transformers' names for the exact GELU (gelu_python)
 * and for the tanh one (gelu_pytorch_tanh, gelu_fast, gelu_accurate) on
 * the case of that activation; dtype and torch_dtype saying another type
 * than the file's tensors (attnd reads each tensor as stored); a decoder's
 * and a cross-attention's switches given false, as 5.x writes them; the
 * fields that only configure the head, dropout or the embeddings. */
START_TEST(test_honoured_fields_keep_outputs)
{
    static const struct {
        const char *name, *edit;
    } cases[] = {
        {"bert_mlm", "{\"hidden_act\": \"gelu_python\"}"},
        {"bert_base", "{\"hidden_act\": \"gelu_pytorch_tanh\"}"},
        {"bert_base", "{\"hidden_act\": \"gelu_fast\"}"},
        {"bert_base", "{\"hidden_act\": \"gelu_accurate\"}"},
        {"distilbert_mlm", "{\"activation\": \"gelu_python\"}"},
        {"bert_mlm", "{\"dtype\": \"bfloat16\", \"torch_dtype\": \"float16\"}"},
        {"bert_f16", "{\"dtype\": \"float32\"}"},
        {"bert_mlm",
         "{\"is_decoder\": false, \"add_cross_attention\": false, \"pruned_heads\": {}, "
         "\"quantization_config\": null, \"rope_scaling\": null}"},
        {"bert_mlm",
         "{\"hidden_dropout_prob\": 0.9, \"attention_probs_dropout_prob\": 0.9, "
         "\"classifier_dropout\": 0.5, \"use_cache\": false, \"chunk_size_feed_forward\": "
         "2, \"tie_word_embeddings\": false, \"initializer_range\": 1.0, "
         "\"output_attentions\": true}"},
        {"electra_disc", "{\"summary_type\": \"mean\", \"summary_use_proj\": false}"},
        {"distilbert_mlm", "{\"dim\": 16, \"hidden_size\": 16, \"n_heads\": 4, "
                           "\"num_attention_heads\": 4}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char base[512];
        path_of(base, sizeof base, HF_DIR, cases[i].name);
        scratch s;
        scratch_make(&s, base, cases[i].edit, NULL, WEIGHTS);
        enc_hf_config c, want; /* the case's own activation: the same function */
        enc_error err = {0};
        ck_assert_msg(enc_hf_config_read(base, &want, &err) == 0, "%s", err.message);
        ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "%s", err.message);
        ck_assert_msg(c.hp.activation == want.hp.activation, "%s %s: activation %s, want %s",
                      cases[i].name, cases[i].edit, enc_activation_name(c.hp.activation),
                      enc_activation_name(want.hp.activation));
        const double d = dir_outputs_diff(s.dir, base, false);
        ck_assert_msg(d <= TOL, "%s %s: outputs differ from PyTorch by %g", cases[i].name,
                      cases[i].edit, d);
        scratch_free(&s);
    }
}
END_TEST

/* ---- the settings against config.json -------------------------------------------- */

START_TEST(test_settings_against_config_json)
{
    const char *dir = HF_DIR "/bert_mlm", *ddir = HF_DIR "/distilbert_mlm";
    attnd_config cfg;
    char msg[1024];
    config_try(&cfg, (const char *const[]){"--model-dir", dir, NULL}, NULL, msg, sizeof msg);
    ck_assert_msg(msg[0] == '\0', "%s", msg);
    ck_assert_int_eq(cfg.model.hp.d_model, 16);
    ck_assert_int_eq(cfg.model.hp.n_layers, 2);
    ck_assert(!cfg.model.hp.norm_first);
    config_free(&cfg);
    /* the same values given again are fine */
    config_try(&cfg,
               (const char *const[]){"--model-dir", dir, "--d-model", "16", "--n-heads", "4", NULL},
               NULL, msg, sizeof msg);
    ck_assert_msg(msg[0] == '\0', "%s", msg);
    config_free(&cfg);

    static const struct {
        const char *flag, *value, *want;
    } cases[] = {
        {"--d-model", "32",
         "model.d_model: --d-model gives 32, but " HF_DIR
         "/bert_mlm/config.json: hidden_size is 16"},
        {"--n-heads", "2",
         "model.n_heads: --n-heads gives 2, but " HF_DIR
         "/bert_mlm/config.json: num_attention_heads is 4"},
        {"--n-kv-heads", "2",
         "model.n_kv_heads: --n-kv-heads gives 2, but " HF_DIR
         "/bert_mlm/config.json: num_attention_heads (no grouped-query "
         "attention) is 4"},
        {"--d-ff", "64", "config.json: intermediate_size is 32"},
        {"--n-layers", "1", "config.json: num_hidden_layers is 2"},
        {"--activation", "relu",
         "model.activation: --activation gives relu, but " HF_DIR
         "/bert_mlm/config.json: hidden_act is gelu (gelu)"},
        {"--layer-norm-eps", "1e-5", "config.json: layer_norm_eps is 1e-12"},
        {"--norm-first", NULL,
         "model.norm_first: --norm-first gives true, but " HF_DIR
         "/bert_mlm/config.json: a bert model has norm_first false"},
        {"--no-bias", NULL, "a bert model has bias true"},
        {"--weights", "x.safetensors", "model.dir and model.weights (--weights) are both given"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        config_try(&cfg,
                   (const char *const[]){"--model-dir", dir, cases[i].flag, cases[i].value, NULL},
                   NULL, msg, sizeof msg);
        ck_assert_msg(strstr(msg, cases[i].want) != NULL, "%s: '%s' lacks '%s'", cases[i].flag, msg,
                      cases[i].want);
    }
    /* from a variable, named as such; DistilBERT's fixed eps */
    config_try(&cfg, (const char *const[]){"--model-dir", dir, NULL},
               (const char *const[]){"ATTND_D_FF=64", NULL}, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "model.d_ff: ATTND_D_FF gives 64, but") != NULL, "%s", msg);
    config_try(&cfg, (const char *const[]){"--model-dir", ddir, "--layer-norm-eps", "1e-5", NULL},
               NULL, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "config.json: distilbert fixes layer_norm_eps at 1e-12") != NULL,
                  "%s", msg);
    config_try(&cfg, (const char *const[]){"--model-dir", "/nonexistent/dir", NULL}, NULL, msg,
               sizeof msg);
    ck_assert_msg(strstr(msg, "model.dir '/nonexistent/dir': cannot open") != NULL, "%s", msg);
}
END_TEST

/* attnd itself refuses a bad directory at start-up with one line naming the
 * file and the field (exit status 2, a configuration error) or the tensor
 * (1, the model cannot be loaded). */
START_TEST(test_startup_refusals)
{
    static const struct {
        const char *edit, *remove, *want;
        int status;
    } cases[] = {
        {NULL, "num_attention_heads", "config.json: missing 'num_attention_heads'", 2},
        {"{\"intermediate_size\": \"big\"}", NULL,
         "config.json: 'intermediate_size' is not a positive integer", 2},
        {"{\"hidden_act\": \"quick_gelu\"}", NULL,
         "config.json: hidden_act 'quick_gelu' is not supported", 2},
        {"{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4}}", NULL,
         "config.json: rope_scaling is not supported", 2},
        {"{\"num_hidden_layers\": 3}", NULL,
         "missing tensor 'bert.encoder.layer.2.attention.self.query.weight'", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, HF_DIR "/bert_mlm", cases[i].edit,
                     (const char *const[]){cases[i].remove, NULL}, WEIGHTS);
        startup_refused((const char *const[]){"--model-dir", s.dir, NULL}, cases[i].want,
                        cases[i].status);
        scratch_free(&s);
    }
}
END_TEST

/* ---- the daemon ------------------------------------------------------------------------- */

/* attnd --model-dir: the start-up lines name the head and the ignored
 * tensors, /v1/model reports the architecture, the files with their sha256
 * and the ignored and head tensors, and /v1/encode answers with PyTorch's
 * outputs. */
START_TEST(test_daemon_serves_directory)
{
    const char *dir = HF_DIR "/roberta_mlm";
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", dir, NULL}, NULL), 0);
    char *log = daemon_log_until(&d, "attnd: ready", 10000); /* the model's lines come before */
    ck_assert_msg(strstr(log, "model.dir: roberta; ") &&
                      strstr(log, "model.dir: roberta, RobertaForMaskedLM: masked_lm head, 50 "
                                  "outputs, 5 tensors"),
                  "%s", log);
    free(log);
    http_resp r;
    ck_assert_int_eq(http_do(d.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *info = json_loads(r.body, 0, NULL), *w = json_object_get(info, "weights");
    ck_assert_str_eq(json_string_value(json_object_get(w, "architecture")), "roberta");
    ck_assert_str_eq(json_string_value(json_object_get(w, "source")), dir);

    char path[512];
    path_of(path, sizeof path, dir, "case.safetensors");
    st_file f;
    enc_error err = {0};
    ck_assert_int_eq(st_open(&f, path, &err), 0);
    json_t *hf = json_loads(st_metadata(&f, "hf"), 0, NULL);
    /* ignored: the head, as ids.safetensors lists it (the embedding
     * module's tensors are used) */
    {
        st_file idf;
        path_of(path, sizeof path, dir, "ids.safetensors");
        ck_assert_int_eq(st_open(&idf, path, &err), 0);
        json_t *meta = json_loads(st_metadata(&idf, "embedding"), 0, NULL);
        json_t *got = hf_outside_json(info);
        const json_t *expect = json_object_get(meta, "ignored");
        ck_assert_uint_eq(json_array_size(got), json_array_size(expect));
        for (size_t i = 0; i < json_array_size(expect); i++) {
            bool found = false;
            for (size_t j = 0; j < json_array_size(got) && !found; j++)
                found = json_equal(json_array_get(got, j), json_array_get(expect, i));
            ck_assert_msg(found, "ignored_tensors and head.tensors lack %s",
                          json_string_value(json_array_get(expect, i)));
        }
        json_decref(got);
        json_decref(meta);
        st_close(&idf);
    }
    const json_t *files = json_object_get(w, "files");
    ck_assert_uint_eq(json_array_size(files), json_array_size(json_object_get(hf, "files")));
    for (size_t i = 0; i < json_array_size(files); i++) {
        const json_t *e = json_array_get(files, i);
        char hex[SHA256_HEX_SIZE];
        path_of(path, sizeof path, dir, json_string_value(json_object_get(e, "name")));
        file_sha256(path, hex);
        ck_assert_str_eq(json_string_value(json_object_get(e, "sha256")), hex);
    }
    json_decref(info);
    http_resp_free(&r);

    /* the encode, nested JSON in and out */
    const st_tensor *xt = st_find(&f, "x");
    const int B = (int)xt->shape[0], L = (int)xt->shape[1], D = (int)xt->shape[2];
    float *x = torch_floats(&f, "x", NULL), *want = torch_floats(&f, "out", NULL);
    json_t *emb = embeddings_json(x, B, L, D);
    json_t *req = json_pack("{s:o, s:s}", "embeddings", emb, "attention", "none");
    char *body = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %s", (long)r.status, r.body);
    json_t *resp = json_loads(r.body, 0, NULL);
    const double worst = outputs_diff(json_object_get(resp, "outputs"), want, B, L, D, NULL);
    ck_assert_msg(worst <= TOL, "outputs differ from PyTorch by %g", worst);
    json_decref(resp);
    http_resp_free(&r);
    free(body);
    json_decref(req);
    free(x);
    free(want);
    json_decref(hf);
    st_close(&f);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* ---- memory: the stack held once ---------------------------------------------- */

/* A directory at dir of architecture mem_archs[arch], F32, random values:
 * D 256, 4 heads, F 1024, 8 layers (a 24 MiB stack for BERT, 32 MiB gated),
 * a 16384-row word table (16 MiB) written first: large next to what else a
 * load allocates, small enough for valgrind.  Tensors written one at a
 * time through a small buffer, so the test's own memory stays out of the
 * figures.  Returns the stack's Linear weights' kB. */
enum { MEM_D = 256, MEM_F = 1024, MEM_LAYERS = 8, MEM_V = 16384, MEM_P = 128 };

/* A tensor's sizes in units: 0 none (1-D), else one of these. */
enum { U_D = 1, U_F, U_2F, U_3D, U_E, U_V, U_P, U_2 };

static int mem_units(int u)
{
    static const int n[] = {1, MEM_D, MEM_F, 2 * MEM_F, 3 * MEM_D, MEM_D / 4, MEM_V, MEM_P, 2};
    return n[u];
}

typedef struct {
    const char *name;
    int rows, cols;
} mem_tensor;

/* BERT (post-norm, one Linear each); Qwen3 (its gated feed-forward's two
 * halves, gate_proj and up_proj, apart); GTE (them fused, up's rows first:
 * up_gate_proj). */
static const struct {
    const char *arch, *config, *layer;
    mem_tensor top[5], per_layer[16];
} mem_archs[] = {
    {"BERT",
     "\"architectures\": [\"BertModel\"], \"model_type\": \"bert\", \"hidden_act\": \"gelu\", "
     "\"layer_norm_eps\": 1e-12, \"type_vocab_size\": 2",
     "encoder.layer.",
     {{"embeddings.word_embeddings.weight", U_V, U_D},
      {"embeddings.position_embeddings.weight", U_P, U_D},
      {"embeddings.token_type_embeddings.weight", U_2, U_D},
      {"embeddings.LayerNorm.weight", U_D, 0},
      {"embeddings.LayerNorm.bias", U_D, 0}},
     {{"attention.self.query.weight", U_D, U_D},
      {"attention.self.query.bias", U_D, 0},
      {"attention.self.key.weight", U_D, U_D},
      {"attention.self.key.bias", U_D, 0},
      {"attention.self.value.weight", U_D, U_D},
      {"attention.self.value.bias", U_D, 0},
      {"attention.output.dense.weight", U_D, U_D},
      {"attention.output.dense.bias", U_D, 0},
      {"attention.output.LayerNorm.weight", U_D, 0},
      {"attention.output.LayerNorm.bias", U_D, 0},
      {"intermediate.dense.weight", U_F, U_D},
      {"intermediate.dense.bias", U_F, 0},
      {"output.dense.weight", U_D, U_F},
      {"output.dense.bias", U_D, 0},
      {"output.LayerNorm.weight", U_D, 0},
      {"output.LayerNorm.bias", U_D, 0}}},
    {"Qwen3",
     "\"architectures\": [\"Qwen3Model\"], \"model_type\": \"qwen3\", \"hidden_act\": "
     "\"silu\", \"head_dim\": 64, \"num_key_value_heads\": 4, \"rms_norm_eps\": 1e-6, "
     "\"rope_theta\": 1000000, \"use_sliding_window\": false, \"attention_bias\": false",
     "layers.",
     {{"embed_tokens.weight", U_V, U_D}, {"norm.weight", U_D, 0}},
     {{"input_layernorm.weight", U_D, 0},
      {"self_attn.q_proj.weight", U_D, U_D},
      {"self_attn.k_proj.weight", U_D, U_D},
      {"self_attn.v_proj.weight", U_D, U_D},
      {"self_attn.o_proj.weight", U_D, U_D},
      {"self_attn.q_norm.weight", U_E, 0},
      {"self_attn.k_norm.weight", U_E, 0},
      {"post_attention_layernorm.weight", U_D, 0},
      {"mlp.gate_proj.weight", U_F, U_D},
      {"mlp.up_proj.weight", U_F, U_D},
      {"mlp.down_proj.weight", U_D, U_F}}},
    {"GTE",
     "\"architectures\": [\"NewModel\"], \"model_type\": \"new\", \"hidden_act\": \"gelu\", "
     "\"layer_norm_eps\": 1e-12, \"layer_norm_type\": \"layer_norm\", \"pack_qkv\": true, "
     "\"position_embedding_type\": \"rope\", \"rope_theta\": 500000, \"type_vocab_size\": 0, "
     "\"unpad_inputs\": false",
     "encoder.layer.",
     {{"embeddings.word_embeddings.weight", U_V, U_D},
      {"embeddings.LayerNorm.weight", U_D, 0},
      {"embeddings.LayerNorm.bias", U_D, 0}},
     {{"attention.qkv_proj.weight", U_3D, U_D},
      {"attention.qkv_proj.bias", U_3D, 0},
      {"attention.o_proj.weight", U_D, U_D},
      {"attention.o_proj.bias", U_D, 0},
      {"attn_ln.weight", U_D, 0},
      {"attn_ln.bias", U_D, 0},
      {"mlp.up_gate_proj.weight", U_2F, U_D},
      {"mlp.down_proj.weight", U_D, U_F},
      {"mlp.down_proj.bias", U_D, 0},
      {"mlp_ln.weight", U_D, 0},
      {"mlp_ln.bias", U_D, 0}}},
};
enum { N_MEM_ARCHS = sizeof mem_archs / sizeof *mem_archs };

static long write_mem_dir(const char *dir, int arch)
{
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp,
            "{%s, \"hidden_size\": %d, \"num_attention_heads\": 4, \"intermediate_size\": %d, "
            "\"num_hidden_layers\": %d, \"max_position_embeddings\": %d, \"vocab_size\": %d, "
            "\"pad_token_id\": 0}\n",
            mem_archs[arch].config, MEM_D, MEM_F, MEM_LAYERS, MEM_P, MEM_V);
    fclose(fp);

    enum { N_TOP = 5, N_LAYER = 16, N_ALL = N_TOP + MEM_LAYERS * N_LAYER };
    char names[N_ALL][96];
    int64_t shape[N_ALL][2];
    int n = 0;
    long stack_floats = 0;
    for (int l = -1; l < MEM_LAYERS; l++)
        for (int k = 0; k < (l < 0 ? N_TOP : N_LAYER); k++) {
            const mem_tensor *t = l < 0 ? &mem_archs[arch].top[k] : &mem_archs[arch].per_layer[k];
            if (!t->name)
                continue;
            shape[n][0] = mem_units(t->rows);
            shape[n][1] = mem_units(t->cols);
            stack_floats += l >= 0 && t->cols ? (long)(shape[n][0] * shape[n][1]) : 0;
            if (l < 0)
                snprintf(names[n], sizeof names[n], "%s", t->name);
            else
                snprintf(names[n], sizeof names[n], "%s%d.%s", mem_archs[arch].layer, l, t->name);
            n++;
        }
    json_t *hdr = json_object();
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const size_t bytes = (size_t)shape[i][0] * (size_t)shape[i][1] * sizeof(float);
        json_t *sh = shape[i][1] == 1
                         ? json_pack("[I]", (json_int_t)shape[i][0])
                         : json_pack("[I,I]", (json_int_t)shape[i][0], (json_int_t)shape[i][1]);
        json_object_set_new(hdr, names[i],
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", "F32", "shape", sh,
                                      "data_offsets", (json_int_t)off, (json_int_t)(off + bytes)));
        off += bytes;
    }
    char *text = json_dumps(hdr, JSON_COMPACT);
    size_t len = strlen(text);
    const size_t padded = (len + 7) & ~(size_t)7; /* the data 8-aligned, as safetensors pads */
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    unsigned char head[8];
    for (int b = 0; b < 8; b++)
        head[b] = (unsigned char)((uint64_t)padded >> (8 * b));
    ck_assert_uint_eq(fwrite(head, 1, 8, fp), 8);
    ck_assert_uint_eq(fwrite(text, 1, len, fp), len);
    for (; len < padded; len++)
        fputc(' ', fp);
    enum { CHUNK = 1 << 16 };
    float *buf = xcalloc(CHUNK, sizeof *buf);
    uint64_t st = 31;
    for (int i = 0; i < n; i++) {
        const bool norm_w = strstr(names[i], "LayerNorm.weight") || strstr(names[i], "ln.weight") ||
                            strstr(names[i], "norm.weight");
        for (size_t left = (size_t)shape[i][0] * (size_t)shape[i][1]; left > 0;) {
            const size_t k = left < CHUNK ? left : CHUNK;
            fill_random(buf, k, &st, norm_w ? 0.1f : 0.05f);
            for (size_t j = 0; norm_w && j < k; j++)
                buf[j] += 1.0f;
            ck_assert_uint_eq(fwrite(buf, sizeof *buf, k, fp), k);
            left -= k;
        }
    }
    free(buf);
    fclose(fp);
    free(text);
    json_decref(hdr);
    return stack_floats * 4 / 1024;
}

/* A line's value in kB from /proc/self/status ("VmRSS:"). */
static long status_kb(const char *key)
{
    FILE *fp = fopen("/proc/self/status", "r");
    ck_assert_ptr_nonnull(fp);
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, fp))
        if (strncmp(line, key, strlen(key)) == 0)
            v = atol(line + strlen(key));
    fclose(fp);
    ck_assert_int_ge(v, 0);
    return v;
}

/* The resident kB of every mapping of path (/proc/self/smaps). */
static long mapped_kb(const char *path)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(fp);
    char line[4608];
    bool in = false;
    long kb = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi;
        char name[4096] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, name) >= 2 &&
            strchr(line, '-') < strchr(line, ' '))
            in = strcmp(name, path) == 0;
        else if (in && strncmp(line, "Rss:", 4) == 0)
            kb += atol(line + 4);
    }
    fclose(fp);
    return kb;
}

/* A model's Linear weights are held once, for each of mem_archs (a gated
 * feed-forward's halves apart or fused in either order too): packed for the AVX-512 kernel
 * (gemm.h) while float32 tensors stay in the file, not also as a float32
 * copy; the pages of the file that the load read to check them, and the
 * word table's, are given back; a forward from ids then reads the rows it
 * looks up without mapping the table back.  Observed from outside the
 * core: the process's resident memory across the load (VmRSS) against the
 * packed panels' bytes, and the resident pages of the file's mappings
 * (/proc/self/smaps) after the load and after a forward of ids all over
 * the vocabulary; the forward's outputs must still be the naive
 * reference's, which reads the weights in the file.  A float32 copy of the
 * stack beside the panels, file pages kept after packing, or the table
 * kept after its check each add a stack (24 MiB) or the table (16 MiB)
 * over a limit of half a stack's margin; rows read through the mapping
 * leave megabytes of the table mapped. */
START_TEST(test_weights_resident_once)
{
    char dir[] = "/tmp/attnd-memXXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const long stack_kb = write_mem_dir(dir, _i);
    const char *arch = mem_archs[_i].arch;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    const long table_kb = (long)MEM_V * MEM_D * 4 / 1024;

    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s", err.message);
    const long before = status_kb("VmRSS:");
    enc_model *m = enc_model_load_dir(dir, &c.hp, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    const long grew = status_kb("VmRSS:") - before;
    long packed_kb = 0;
    for (int l = 0; l < m->hp.n_layers; l++) {
        const enc_layer *ly = &m->layers[l];
        packed_kb += (long)((gemm_packed_bytes(ly->pk_qkv) + gemm_packed_bytes(ly->pk_o) +
                             gemm_packed_bytes(ly->pk_1) + gemm_packed_bytes(ly->pk_2)) /
                            1024);
    }
    /* the panels (none without AVX-512), the small tensors, the rest of a
     * load: well under another half stack (not under ASan: UNDER_ASAN) */
    ck_assert_msg(UNDER_ASAN || grew < packed_kb + stack_kb / 2,
                  "%s: loading grew the process by %ld kB: %ld kB of packed panels, a stack of "
                  "%ld kB, a word table of %ld kB",
                  arch, grew, packed_kb, stack_kb, table_kb);
    printf("checkpoint: %s, float32: the load grew the process by %ld kB: packed panels %ld kB, "
           "the stack's Linears %ld kB in the file\n",
           arch, grew, packed_kb, stack_kb);
    long file_kb = mapped_kb(path);
    ck_assert_msg(file_kb < stack_kb / 4, "%s: after the load %ld kB of the file are resident",
                  arch, file_kb);

    /* a forward from ids all over the vocabulary */
    enum { B = 2, L = 64 };
    int32_t ids[B * L];
    uint64_t st = 5;
    for (int i = 0; i < B * L; i++)
        ids[i] = (int32_t)(splitmix(&st) % MEM_V);
    const enc_ids e = {ids, NULL};
    enc_batch in = batch_plain(NULL, B, L, NULL);
    in.ids = &e;
    in.mask.causal = m->hp.causal; /* Qwen3's */
    float *out = xcalloc((size_t)B * L * MEM_D, sizeof *out);
    float *want = xcalloc((size_t)B * L * MEM_D, sizeof *want);
    enc_result res = {.out = out}, ref = {.out = want};
    enc_workspace *ws = enc_workspace_new(m);
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    /* the panels' kernel reads no weight in the file; the portable one all */
    file_kb = mapped_kb(path);
    const long allowed = (m->packed ? 0 : stack_kb) + table_kb / 4;
    ck_assert_msg(file_kb < allowed,
                  "%s: after a forward of %d ids %ld kB of the file are resident (%s: %ld "
                  "allowed)",
                  arch, B * L, file_kb, m->packed ? "packed" : "unpacked", allowed);
    in.B = 1; /* the first sequence's first 8 tokens, against the naive reference */
    in.L = 8;
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
    ck_assert_msg(enc_forward_naive(m, &in, &ref, &err) == 0, "%s", err.message);
    const double d = max_abs_diff(out, want, (size_t)in.B * in.L * MEM_D);
    ck_assert_msg(d <= TOL, "%s: the forward differs from the naive reference by %g", arch, d);
    free(out);
    free(want);
    enc_model_free(m);
    if (_i > 0) { /* the table's check below is the loader's, whatever the architecture */
        char cmd[320];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        return;
    }

    /* the table is checked part by part (4 MiB each): a NaN in row 9000,
     * in its third part, is refused by its index in the whole table */
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    unsigned char head[8];
    ck_assert_uint_eq(fread(head, 1, 8, fp), 8);
    uint64_t data = 8;
    for (int b = 0; b < 8; b++)
        data += (uint64_t)head[b] << (8 * b);
    static const unsigned char nan[4] = {0, 0, 0xC0, 0x7F}; /* the word table is first */
    ck_assert_int_eq(fseek(fp, (long)(data + (9000 * MEM_D + 7) * 4), SEEK_SET), 0);
    ck_assert_uint_eq(fwrite(nan, 1, 4, fp), 4);
    fclose(fp);
    char want_msg[128];
    snprintf(want_msg, sizeof want_msg,
             "tensor 'embeddings.word_embeddings.weight' has a non-finite value at index %d",
             9000 * MEM_D + 7);
    refused(dir, want_msg);
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *checkpoint_suite(void)
{
    Suite *s = timed_suite("checkpoint");
    TCase *tc = timed_case(s, "core", 60);
    tcase_add_loop_test(tc, test_directory_matches_pytorch, 0, 2 * N_CASES);
    tcase_add_test(tc, test_bad_config_refused);
    tcase_add_test(tc, test_family_fields_refused);
    tcase_add_test(tc, test_embedding_fields_read);
    tcase_add_test(tc, test_honoured_fields_keep_outputs);
    tcase_add_test(tc, test_bad_index_refused);
    tcase_add_test(tc, test_gamma_beta_names);
    tcase_add_test(tc, test_positions_from_config_json);
    tcase_add_test(tc, test_settings_against_config_json);
    /* a 30 MB file written, read, checked (valgrind: slow) */
    TCase *mem = timed_case(s, "memory", 240);
    tcase_add_loop_test(mem, test_weights_resident_once, 0, N_MEM_ARCHS);
    return s;
}

/* The cases that start build/attnd: its start-up refusals and its serving
 * of a directory. */
Suite *checkpoint_daemon_suite(void)
{
    Suite *s = timed_suite("checkpoint_daemon");
    TCase *tc = timed_case(s, "daemon", 60);
    tcase_add_test(tc, test_startup_refusals);
    tcase_add_test(tc, test_daemon_serves_directory);
    return s;
}
