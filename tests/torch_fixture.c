/* torch_fixture.c - reading the PyTorch fixtures. */
#include "torch_fixture.h"
#include "test_util.h"

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CASES 128

static char names[MAX_CASES][256];
static int n_names = -1;

static int cmp_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void list_cases(void)
{
    if (n_names >= 0)
        return;
    n_names = 0;
    DIR *d = opendir(TORCH_DIR);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && n_names < MAX_CASES) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/case.safetensors", TORCH_DIR, e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "rb") : NULL;
        if (f) {
            fclose(f);
            snprintf(names[n_names++], sizeof names[0], "%s", e->d_name);
        }
    }
    closedir(d);
    qsort(names, (size_t)n_names, sizeof names[0], cmp_names);
}

int torch_case_count(void)
{
    list_cases();
    return n_names;
}

const char *torch_case_name(int i)
{
    list_cases();
    return i >= 0 && i < n_names ? names[i] : NULL;
}

void torch_case_open(st_file *f, const char *name)
{
    char path[1024];
    enc_error err = {0};
    snprintf(path, sizeof path, "%s/%s/case.safetensors", TORCH_DIR, name);
    ck_assert_msg(st_open(f, path, &err) == 0, "%s", err.message);
}

float *torch_floats(const st_file *f, const char *name, size_t *numel)
{
    const st_tensor *t = st_find(f, name);
    if (!t)
        return NULL;
    float *v = xcalloc(t->numel, sizeof *v);
    enc_error err = {0};
    ck_assert_msg(st_tensor_read_f32(t, v, &err) == 0, "%s", err.message);
    if (numel)
        *numel = t->numel;
    return v;
}

static int cfg_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_integer(v), "fixture config: %s is not an integer", key);
    return (int)json_integer_value(v);
}

void torch_hparams(const st_file *f, enc_hparams *hp)
{
    json_error_t jerr;
    const char *text = st_metadata(f, "config");
    ck_assert_msg(text != NULL, "fixture metadata lacks config");
    json_t *cfg = json_loads(text, 0, &jerr);
    ck_assert_msg(cfg != NULL, "fixture config: %s", jerr.text);
    enc_hparams_default(hp);
    hp->d_model = cfg_int(cfg, "d_model");
    hp->n_heads = cfg_int(cfg, "n_heads");
    hp->n_kv_heads = cfg_int(cfg, "n_kv_heads");
    hp->d_ff = cfg_int(cfg, "d_ff");
    hp->n_layers = cfg_int(cfg, "n_layers");
    ck_assert_int_eq(enc_activation_parse(json_string_value(json_object_get(cfg, "activation")),
                                          &hp->activation),
                     0);
    hp->norm_first = json_is_true(json_object_get(cfg, "norm_first"));
    hp->bias = json_is_true(json_object_get(cfg, "bias"));
    hp->layer_norm_eps = (float)json_number_value(json_object_get(cfg, "layer_norm_eps"));
    const json_t *ffn = json_object_get(cfg, "ffn");
    if (ffn) /* a gated feed-forward */
        ck_assert_int_eq(enc_ffn_parse(json_string_value(ffn), &hp->ffn), 0);
    const json_t *norm = json_object_get(cfg, "norm"), *v;
    if (norm) /* the block options of the ModernBERT-class cases */
        ck_assert_int_eq(enc_norm_parse(json_string_value(norm), &hp->norm), 0);
    hp->final_norm = json_is_true(json_object_get(cfg, "final_norm"));
    hp->first_norm_identity = json_is_false(json_object_get(cfg, "first_attn_norm"));
    if ((v = json_object_get(cfg, "global_every")))
        hp->global_every = (int)json_integer_value(v);
    if ((v = json_object_get(cfg, "local_window")))
        hp->local_window = (int)json_integer_value(v);
    if ((v = json_object_get(cfg, "rope_theta_local")))
        hp->rope_theta_local = json_number_value(v);
    const json_t *pos = json_object_get(cfg, "position");
    if (pos) { /* positions inside attention */
        ck_assert_int_eq(enc_position_parse(json_string_value(pos), &hp->position), 0);
        if (hp->position == ENC_POS_ROPE) {
            hp->rope_theta = json_number_value(json_object_get(cfg, "rope_theta"));
            hp->rope_dim = cfg_int(cfg, "rope_dim");
            ck_assert_int_eq(
                enc_rope_style_parse(json_string_value(json_object_get(cfg, "rope_style")),
                                     &hp->rope_style),
                0);
        }
    }
    json_decref(cfg);
}

enc_model *torch_model(const char *name, const enc_hparams *hp)
{
    char path[1024];
    enc_error err = {0};
    snprintf(path, sizeof path, "%s/%s/model.safetensors", TORCH_DIR, name);
    enc_model *m = enc_model_load(path, hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", name, err.message);
    return m;
}

void torch_daemon_flags(const st_file *f, const char *name, char **args, int *n, int max)
{
    json_t *cfg = json_loads(st_metadata(f, "config"), 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    static const char *const keys[] = {"d_model",        "n_heads",      "n_kv_heads",
                                       "d_ff",           "n_layers",     "activation",
                                       "layer_norm_eps", "position",     "rope_theta",
                                       "rope_dim",       "rope_style",   "ffn",
                                       "norm",           "final_norm",   "first_attn_norm",
                                       "global_every",   "local_window", "rope_theta_local"};
    const int n_keys = (int)(sizeof keys / sizeof *keys);
    ck_assert_int_le(*n + 2 * n_keys + 4 + 1, max);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        if (!json_object_get(cfg, keys[i]))
            continue; /* the positions' and ffn keys, in some cases only */
        char flag[64], val[80];
        snprintf(flag, sizeof flag, "--%s", keys[i]);
        for (char *p = flag; *p; p++)
            *p = *p == '_' ? '-' : *p;
        json_t *v = json_object_get(cfg, keys[i]);
        if (json_is_boolean(v)) { /* --flag or --no-flag */
            snprintf(val, sizeof val, "--no-%s", flag + 2);
            args[(*n)++] = strdup(json_is_true(v) ? flag : val);
            continue;
        }
        if (json_is_string(v))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else if (json_is_integer(v))
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        else
            snprintf(val, sizeof val, "%.9g", json_number_value(v));
        args[(*n)++] = strdup(flag);
        args[(*n)++] = strdup(val);
    }
    args[(*n)++] = strdup(json_is_true(json_object_get(cfg, "norm_first")) ? "--norm-first"
                                                                           : "--no-norm-first");
    args[(*n)++] = strdup(json_is_true(json_object_get(cfg, "bias")) ? "--bias" : "--no-bias");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", TORCH_DIR, name);
    args[(*n)++] = strdup("--weights");
    args[(*n)++] = strdup(path);
    args[*n] = NULL;
    json_decref(cfg);
}
