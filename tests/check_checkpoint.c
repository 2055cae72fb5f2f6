/* check_checkpoint.c - Hugging Face encoder directories (model.dir,
 * core/checkpoint.c): the directories of tests/fixtures/hf (written by
 * tools/make_hf_fixtures.py in every architecture's naming, with their
 * embedding, pooler and head tensors) against PyTorch's outputs, against
 * the same weights under PyTorch's names bit for bit, the files and
 * ignored tensors they report, every refusal with the name it must give,
 * the settings that disagree with config.json, and the daemon's /v1/model. */
#include "config.h"
#include "daemon.h"
#include "hf_util.h"
#include "safetensors.h"
#include "sha256.h"
#include "suites.h"
#include "test_util.h"
#include "torch_fixture.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HF_DIR TESTS_DIR "/fixtures/hf"
#define TOL    1e-4

static const char *const CASES[] = {"bert_mlm",  "bert_base",    "roberta_mlm",    "xlm_roberta",
                                    "camembert", "electra_disc", "distilbert_mlm", "bert_sharded",
                                    "bert_f16",  "bert_stack4"};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

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

/* Each directory: config.json read as the fixture script wrote attnd's
 * config; the forward within 1e-4 of PyTorch (outputs and every layer's
 * per-head weights); the same bits as the PyTorch-named file of the same
 * weights; the ignored tensors and files the script lists. */
START_TEST(test_directory_matches_pytorch)
{
    const char *name = CASES[_i];
    char dir[512], path[640];
    path_of(dir, sizeof dir, HF_DIR, name);
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
         "config.json: hidden_act 'swish' is not supported (gelu, gelu_new, gelu_pytorch_tanh, "
         "relu)"},
        {"{\"hidden_act\": 3}", NULL, "config.json: a string expected for 'hidden_act'"},
        {"{\"model_type\": \"gpt2\"}", NULL, "config.json: model_type 'gpt2' is not supported"},
        {NULL, "model_type", "config.json: missing 'model_type'"},
        {"{\"layer_norm_eps\": -1}", NULL, "'layer_norm_eps' is not a positive number"},
        {"{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}", NULL,
         "config.json: rope_scaling is not supported"},
        {"{\"position_embedding_type\": \"relative_key\"}", NULL,
         "config.json: position_embedding_type 'relative_key' is not supported"},
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
    /* the embeddings' gamma and beta are ignored like the rest */
    bool seen = false;
    for (size_t i = 0; i < enc_model_ignored_count(renamed); i++)
        seen =
            seen || strcmp(enc_model_ignored(renamed, i), "bert.embeddings.LayerNorm.gamma") == 0;
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

/* attnd --model-dir: the start-up line names the ignored tensors, /v1/model
 * reports the architecture, the files with their sha256 and the ignored
 * tensors, and /v1/encode answers with PyTorch's outputs. */
START_TEST(test_daemon_serves_directory)
{
    const char *dir = HF_DIR "/roberta_mlm";
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", dir, NULL}, NULL), 0);
    char *log = daemon_log(&d);
    ck_assert_msg(strstr(log, "model.dir: roberta; ") && strstr(log, "roberta.embeddings."), "%s",
                  log);
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
    ck_assert(json_equal(json_object_get(w, "ignored_tensors"), json_object_get(hf, "ignored")) ||
              json_array_size(json_object_get(w, "ignored_tensors")) ==
                  json_array_size(json_object_get(hf, "ignored")));
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

Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_directory_matches_pytorch, 0, N_CASES);
    tcase_add_test(tc, test_bad_config_refused);
    tcase_add_test(tc, test_bad_index_refused);
    tcase_add_test(tc, test_gamma_beta_names);
    tcase_add_test(tc, test_positions_from_config_json);
    tcase_add_test(tc, test_settings_against_config_json);
    tcase_add_test(tc, test_startup_refusals);
    tcase_add_test(tc, test_daemon_serves_directory);
    suite_add_tcase(s, tc);
    return s;
}
