/* check_checkpoint.c - Hugging Face encoder directories (model.dir,
 * core/checkpoint.c): the directories of tests/fixtures/hf (written by
 * tools/make_hf_fixtures.py in every architecture's naming, with their
 * embedding, pooler and head tensors) against PyTorch's outputs, against
 * the same weights under PyTorch's names bit for bit, the files and
 * ignored tensors they report, every refusal with the name it must give,
 * the settings that disagree with config.json, and the daemon's /v1/model. */
#include "config.h"
#include "daemon.h"
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

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The model's list (count, item) equals the JSON array want as sets. */
static void same_names(const char *what, const char *name, size_t n, const char **got,
                       const json_t *want)
{
    ck_assert_msg(json_array_size(want) == n, "%s: %zu %s, the fixture lists %zu", name, n, what,
                  json_array_size(want));
    const char **w = xcalloc(n + 1, sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = json_string_value(json_array_get(want, i));
    qsort(w, n, sizeof *w, by_string);
    qsort(got, n, sizeof *got, by_string);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(w[i] && strcmp(got[i], w[i]) == 0, "%s: %s %zu is %s, the fixture's %s", name,
                      what, i, got[i], w[i] ? w[i] : "(none)");
    free(w);
}

/* sha256 of the file at path, hex. */
static void file_sha256(const char *path, char hex[SHA256_HEX_SIZE])
{
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    const long n = ftell(fp);
    rewind(fp);
    char *buf = xcalloc((size_t)n + 1, 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    sha256_hex(buf, (size_t)n, hex);
    free(buf);
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

    /* What was left out, and what was read. */
    size_t n = enc_model_ignored_count(m);
    const char **names = xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = enc_model_ignored(m, i);
    same_names("ignored tensors", name, n, names, json_object_get(hf, "ignored"));
    free(names);
    n = enc_model_file_count(m);
    names = xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        const char *sha;
        names[i] = enc_model_file(m, i, &sha);
        char hex[SHA256_HEX_SIZE];
        path_of(path, sizeof path, dir, names[i]);
        file_sha256(path, hex);
        ck_assert_msg(strcmp(sha, hex) == 0, "%s: %s's sha256", name, names[i]);
        ck_assert(i == 0 || strcmp(names[i - 1], names[i]) < 0); /* sorted */
    }
    same_names("files", name, n, names, json_object_get(hf, "files"));
    free(names);

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

/* A scratch directory holding config.json = base's with edit applied, and
 * links to base's other files (those named in links). */
typedef struct scratch {
    char dir[64];
} scratch;

static void scratch_make(scratch *s, const char *base, const char *edit_json,
                         const char *const *remove, const char *const *links)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/attnd_hf_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    char src[512], dst[640];
    snprintf(src, sizeof src, "%s/%s/config.json", HF_DIR, base);
    json_t *cfg = json_load_file(src, 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    if (edit_json) {
        json_t *edit = json_loads(edit_json, 0, NULL);
        ck_assert_msg(edit != NULL, "bad edit %s", edit_json);
        json_object_update(cfg, edit);
        json_decref(edit);
    }
    for (const char *const *r = remove; r && *r; r++)
        json_object_del(cfg, *r);
    snprintf(dst, sizeof dst, "%s/config.json", s->dir);
    ck_assert_int_eq(json_dump_file(cfg, dst, JSON_INDENT(2)), 0);
    json_decref(cfg);
    for (const char *const *l = links; l && *l; l++) {
        snprintf(src, sizeof src, "%s/%s/%s", HF_DIR, base, *l);
        snprintf(dst, sizeof dst, "%s/%s", s->dir, *l);
        ck_assert_int_eq(symlink(src, dst), 0);
    }
}

static void scratch_write(const scratch *s, const char *name, const char *text)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
}

static void scratch_free(scratch *s)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Loading the scratch directory fails with a message holding want. */
static void refused(const scratch *s, const char *want)
{
    enc_hf_config c;
    enc_error err = {0};
    enc_model *m = NULL;
    if (enc_hf_config_read(s->dir, &c, &err) == 0)
        m = enc_model_load_dir(s->dir, &c.hp, &err);
    ck_assert_msg(m == NULL, "loaded, want a refusal with '%s'", want);
    ck_assert_msg(strstr(err.message, want) != NULL, "message '%s' lacks '%s'", err.message, want);
}

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
        scratch_make(&s, "bert_mlm", cases[i].edit, (const char *const[]){cases[i].remove, NULL},
                     WEIGHTS);
        refused(&s, cases[i].want);
        scratch_free(&s);
    }
    scratch s;
    scratch_make(&s, "bert_mlm", NULL, NULL, WEIGHTS);
    scratch_write(&s, "config.json", "{\"model_type\": \"bert\",");
    refused(&s, "config.json: line 1");
    scratch_free(&s);
    scratch_make(&s, "bert_mlm", NULL, NULL, NULL);
    refused(&s, "neither model.safetensors nor model.safetensors.index.json is there");
    scratch_free(&s);
}
END_TEST

START_TEST(test_bad_index_refused)
{
    static const char *const SHARDS[] = {"model-00001-of-00002.safetensors",
                                         "model-00002-of-00002.safetensors", NULL};
    scratch s;
    scratch_make(&s, "bert_sharded", NULL, NULL, SHARDS);
    scratch_write(&s, "model.safetensors.index.json",
                  "{\"weight_map\": {\"bert.encoder.layer.0.attention.self.query.weight\": "
                  "\"../model-00001-of-00002.safetensors\"}}");
    refused(&s, "tensor 'bert.encoder.layer.0.attention.self.query.weight' names no file of the "
                "directory");
    scratch_write(
        &s, "model.safetensors.index.json",
        "{\"weight_map\": {\"bert.encoder.layer.1.output.dense.weight\": "
        "\"model-00001-of-00002.safetensors\", \"bert.encoder.layer.0.output.dense.weight\": "
        "\"model-00002-of-00002.safetensors\"}}");
    refused(&s, "model.safetensors.index.json: tensor 'bert.encoder.layer.");
    scratch_write(&s, "model.safetensors.index.json", "{\"metadata\": {}}");
    refused(&s, "model.safetensors.index.json: no 'weight_map' object");
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
    scratch_make(&s, "bert_mlm", NULL, NULL, NULL);
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
        scratch_make(&s, "bert_mlm", cases[i].edit, NULL, WEIGHTS);
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
    scratch_make(&s, "bert_mlm",
                 "{\"position_embedding_type\": \"rotary\", \"partial_rotary_factor\": 0.1}", NULL,
                 WEIGHTS);
    refused(&s, "config.json: partial_rotary_factor 0.1 leaves no pair of the head's 4 dimensions "
                "to rotate");
    scratch_free(&s);
    scratch_make(&s, "bert_mlm", "{\"position_embedding_type\": \"rotary\", \"rope_theta\": -1}",
                 NULL, WEIGHTS);
    refused(&s, "config.json: 'rope_theta' is not a positive number");
    scratch_free(&s);
}
END_TEST

/* ---- the settings against config.json -------------------------------------------- */

/* config_load of argv (after "attnd") and env; the message, or "" when it
 * loaded (cfg then filled). */
static void load(attnd_config *cfg, const char *const *argv, const char *const *env, char *msg,
                 size_t size)
{
    char *args[16] = {strdup("attnd")}, *envp[8] = {NULL};
    int argc = 1;
    for (; argv[argc - 1]; argc++)
        args[argc] = strdup(argv[argc - 1]);
    for (int i = 0; env && env[i]; i++)
        envp[i] = strdup(env[i]);
    enc_error err = {0};
    msg[0] = '\0';
    if (config_load(cfg, argc, args, envp, &err) < 0)
        snprintf(msg, size, "%s", err.message);
    for (int i = 0; i < argc; i++)
        free(args[i]);
    for (int i = 0; envp[i]; i++)
        free(envp[i]);
}

START_TEST(test_settings_against_config_json)
{
    const char *dir = HF_DIR "/bert_mlm", *ddir = HF_DIR "/distilbert_mlm";
    attnd_config cfg;
    char msg[1024];
    load(&cfg, (const char *const[]){"--model-dir", dir, NULL}, NULL, msg, sizeof msg);
    ck_assert_msg(msg[0] == '\0', "%s", msg);
    ck_assert_int_eq(cfg.model.hp.d_model, 16);
    ck_assert_int_eq(cfg.model.hp.n_layers, 2);
    ck_assert(!cfg.model.hp.norm_first);
    config_free(&cfg);
    /* the same values given again are fine */
    load(&cfg, (const char *const[]){"--model-dir", dir, "--d-model", "16", "--n-heads", "4", NULL},
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
        load(&cfg, (const char *const[]){"--model-dir", dir, cases[i].flag, cases[i].value, NULL},
             NULL, msg, sizeof msg);
        ck_assert_msg(strstr(msg, cases[i].want) != NULL, "%s: '%s' lacks '%s'", cases[i].flag, msg,
                      cases[i].want);
    }
    /* from a variable, named as such; DistilBERT's fixed eps */
    load(&cfg, (const char *const[]){"--model-dir", dir, NULL},
         (const char *const[]){"ATTND_D_FF=64", NULL}, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "model.d_ff: ATTND_D_FF gives 64, but") != NULL, "%s", msg);
    load(&cfg, (const char *const[]){"--model-dir", ddir, "--layer-norm-eps", "1e-5", NULL}, NULL,
         msg, sizeof msg);
    ck_assert_msg(strstr(msg, "config.json: distilbert fixes layer_norm_eps at 1e-12") != NULL,
                  "%s", msg);
    load(&cfg, (const char *const[]){"--model-dir", "/nonexistent/dir", NULL}, NULL, msg,
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
        scratch_make(&s, "bert_mlm", cases[i].edit, (const char *const[]){cases[i].remove, NULL},
                     WEIGHTS);
        char *out = NULL;
        const int st =
            run_attnd((const char *const[]){"--model-dir", s.dir, "--check-config", NULL}, NULL, &out);
        ck_assert_msg(st == cases[i].status, "case %zu: exit %d: %s", i, st, out);
        ck_assert_msg(strstr(out, cases[i].want), "case %zu: '%s' lacks '%s'", i, out,
                      cases[i].want);
        const char *line = strstr(out, cases[i].want);
        while (line > out && line[-1] != '\n')
            line--;
        ck_assert_msg(strncmp(line, "attnd: ", 7) == 0 && strchr(line, '\n') &&
                          strchr(line, '\n')[1] == '\0',
                      "case %zu: not one last line 'attnd: ...': %s", i, out);
        free(out);
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
    json_t *emb = json_array();
    for (int b = 0; b < B; b++) {
        json_t *seq = json_array();
        for (int i = 0; i < L; i++) {
            json_t *row = json_array();
            for (int k = 0; k < D; k++)
                json_array_append_new(row, json_real(x[((size_t)b * L + i) * D + k]));
            json_array_append_new(seq, row);
        }
        json_array_append_new(emb, seq);
    }
    json_t *req = json_pack("{s:o, s:s}", "embeddings", emb, "attention", "none");
    char *body = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %s", (long)r.status, r.body);
    json_t *resp = json_loads(r.body, 0, NULL);
    const json_t *outs = json_object_get(resp, "outputs");
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++)
            for (int k = 0; k < D; k++) {
                const double g = json_number_value(
                    json_array_get(json_array_get(json_array_get(outs, b), i), k));
                worst = fmax(worst, fabs(g - want[((size_t)b * L + i) * D + k]));
            }
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
