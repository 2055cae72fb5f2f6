/* check_modernbert.c - ModernBERT-class blocks: the directories of
 * tests/fixtures/modernbert (tools/fixtures/make_modernbert_fixtures.py, written
 * after transformers' modeling_modernbert.py) against their expected outputs
 * and weights, with padding and batching, and the naive reference on them;
 * the block options' tensors in PyTorch files; every refusal of a bad
 * config.json field, tensor or setting with the name it must give; and the
 * daemon serving a directory: /v1/model's layers, /v1/encode's outputs and
 * usage.attention_scores.  tests/fixtures/modernbert5
 * (tools/fixtures/make_hf5_fixtures.py) holds the same directories with config.json
 * in transformers 5's form (layer_types, rope_parameters): they go through
 * the same comparisons, and the fields of both forms are honoured (the
 * outputs stay the reference's) or refused naming them. */
#include "config/config.h"
#include "daemon.h"
#include "hf_util.h"
#include "load/safetensors.h"
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

#define MB_DIR  TESTS_DIR "/fixtures/modernbert"
#define MB5_DIR TESTS_DIR "/fixtures/modernbert5"
#define TOL     1e-4

static const char *const CASES[] = {"modernbert_mlm", "modernbert_base_bias", "modernbert_swiglu"};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

/* config.json read as the fixture script wrote attnd's config. */
static void same_hparams(const char *name, const enc_hparams *got, const enc_hparams *want)
{
    const int E = want->d_model / want->n_heads;
    ck_assert_int_eq(got->d_model, want->d_model);
    ck_assert_int_eq(got->n_heads, want->n_heads);
    ck_assert_int_eq(got->n_kv_heads, want->n_kv_heads);
    ck_assert_int_eq(got->d_ff, want->d_ff);
    ck_assert_int_eq(got->n_layers, want->n_layers);
    ck_assert_int_eq(got->ffn, want->ffn);
    if (got->ffn == ENC_FFN_GEGLU) /* SwiGLU uses no activation */
        ck_assert_int_eq(got->activation, want->activation);
    ck_assert(got->norm_first && want->norm_first);
    ck_assert_msg(got->layer_norm_eps == want->layer_norm_eps, "%s: eps", name);
    ck_assert_int_eq(got->bias, want->bias);
    ck_assert_int_eq(got->norm, want->norm);
    ck_assert(got->final_norm && want->final_norm);
    ck_assert(got->first_norm_identity && want->first_norm_identity);
    ck_assert_int_eq(got->position, ENC_POS_ROPE);
    ck_assert_int_eq(got->position, want->position);
    ck_assert_int_eq(got->rope_dim ? got->rope_dim : E, want->rope_dim ? want->rope_dim : E);
    ck_assert_int_eq(got->rope_style, want->rope_style);
    ck_assert_double_eq(got->rope_theta, want->rope_theta);
    ck_assert_int_eq(got->global_every, want->global_every);
    ck_assert_int_eq(got->local_window, want->local_window);
    ck_assert_double_eq(got->rope_theta_local, want->rope_theta_local);
}

/* One forward of m (the fast one, or the naive one) over the case's batch:
 * out and, per layer, the weights in mode. */
static void run(const enc_model *m, const enc_batch *in, enc_attn_mode mode, bool naive, float *out,
                float **attn)
{
    enc_result res = {.out = out, .attn_mode = mode, .attn = attn};
    enc_error err = {0};
    if (naive) {
        ck_assert_msg(enc_forward_naive(m, in, &res, &err) == 0, "%s", err.message);
        return;
    }
    enc_workspace *ws = enc_workspace_new(m);
    ck_assert_msg(enc_forward(m, ws, in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
}

/* Each directory, in the 4.x and the 5.x format: its config.json as
 * attnd's config; the forward, with the case's padding, within 1e-4 of the
 * reference (outputs, every weight the case keeps, per head and their
 * mean); the naive forward the same; the files and ignored tensors the
 * script lists. */
START_TEST(test_directory_matches_reference)
{
    const char *name = CASES[_i % N_CASES];
    char dir[512], path[640];
    snprintf(dir, sizeof dir, "%s/%s", _i < N_CASES ? MB_DIR : MB5_DIR, name);
    snprintf(path, sizeof path, "%s/case.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s: %s", path, err.message);
    enc_hparams want;
    torch_hparams(&f, &want);
    json_t *hf = json_loads(st_metadata(&f, "hf"), 0, NULL);
    ck_assert_msg(hf != NULL, "%s: no hf metadata", name);
    enc_hf_config c;
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", name, err.message);
    ck_assert_str_eq(c.model_type, "modernbert");
    same_hparams(name, &c.hp, &want);

    enc_model *m = enc_model_load_dir(dir, &c.hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", name, err.message);
    ck_assert_str_eq(enc_model_architecture(m), "modernbert");
    hf_check_files(m, dir, hf, name);

    const st_tensor *xt = st_find(&f, "x");
    ck_assert(xt && xt->ndim == 3);
    const int B = (int)xt->shape[0], L = (int)xt->shape[1], D = c.hp.d_model, H = c.hp.n_heads;
    const int NL = c.hp.n_layers;
    float *x = torch_floats(&f, "x", NULL), *want_out = torch_floats(&f, "out", NULL);
    int *lengths = NULL;
    const st_tensor *lt = st_find(&f, "lengths");
    if (lt) {
        float *lf = torch_floats(&f, "lengths", NULL);
        lengths = xcalloc((size_t)B, sizeof *lengths);
        for (int b = 0; b < B; b++)
            lengths[b] = (int)lf[b];
        free(lf);
    }
    const enc_batch in = batch_plain(x, B, L, lengths);
    const size_t n_out = (size_t)B * L * D, n_heads = (size_t)B * H * L * L;
    float *out = xcalloc(n_out, sizeof *out), *attn[ENC_MAX_LAYERS] = {0};
    int kept = 0;
    for (int naive = 0; naive < 2; naive++) {
        for (int mode = ENC_ATTN_HEADS; mode <= ENC_ATTN_MEAN; mode++) {
            const size_t n_attn = mode == ENC_ATTN_HEADS ? n_heads : (size_t)B * L * L;
            for (int l = 0; l < NL; l++)
                attn[l] = xcalloc(n_attn, sizeof **attn);
            run(m, &in, (enc_attn_mode)mode, naive, out, attn);
            double d = max_abs_diff(out, want_out, n_out);
            ck_assert_msg(d <= TOL, "%s (naive %d): outputs differ by %g", name, naive, d);
            for (int l = 0; l < NL; l++) {
                char key[32];
                snprintf(key, sizeof key, mode == ENC_ATTN_HEADS ? "attn.%d" : "attn_mean.%d", l);
                float *w = torch_floats(&f, key, NULL);
                if (w) { /* the L = 300 case keeps a few layers' */
                    d = max_abs_diff(attn[l], w, n_attn);
                    ck_assert_msg(d <= TOL, "%s (naive %d): %s differs by %g", name, naive, key, d);
                    kept++;
                }
                free(w);
                free(attn[l]);
                attn[l] = NULL;
            }
        }
    }
    ck_assert_int_ge(kept, 4 * (_i % N_CASES == 0 ? 1 : NL)); /* the weights were compared */
    free(out);
    free(x);
    free(want_out);
    free(lengths);
    enc_model_free(m);
    json_decref(hf);
    st_close(&f);
}
END_TEST

/* ---- refusals ---------------------------------------------------------------------- */

static const char *const WEIGHTS[] = {"model.safetensors", NULL};

/* A bad ModernBERT config.json is refused naming its field, and so is a
 * directory whose tensors do not fit it: a gated projection of the wrong
 * (odd) height, a layer missing, a layer too many.  attnd itself refuses
 * one at start-up in one line. */
START_TEST(test_bad_directory_refused)
{
    static const struct {
        const char *edit, *want;
    } cases[] = {
        {"{\"attention_bias\": true}",
         "config.json: attention_bias (true) and mlp_bias (false) differ"},
        {"{\"norm_bias\": true}", "config.json: norm_bias true with attention_bias and mlp_bias "
                                  "false is not supported"},
        {"{\"hidden_activation\": \"relu\"}",
         "config.json: hidden_activation 'relu' is not supported (gelu, gelu_python, gelu_new, "
         "gelu_pytorch_tanh, gelu_fast, gelu_accurate, silu, swish)"},
        {"{\"hidden_activation\": \"quick_gelu\"}",
         "config.json: hidden_activation 'quick_gelu' is not supported"},
        {"{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}}",
         "config.json: rope_scaling is not supported"},
        {"{\"quantization_config\": {\"quant_method\": \"gptq\"}}",
         "config.json: quantization_config is not supported"},
        {"{\"pad_token_id\": 64}", "config.json: pad_token_id (64) is not below vocab_size (64)"},
        /* transformers 5's sliding_window property is local_attention // 2 */
        {"{\"sliding_window\": 64}",
         "config.json: sliding_window (64) is not local_attention // 2 (16)"},
        {"{\"head_dim\": 4}", "config.json: head_dim (4) is not hidden_size / num_attention_heads"},
        /* 4.x's local_rope_theta null takes the global one, but not a mistyped one */
        {"{\"local_rope_theta\": false}",
         "config.json: 'local_rope_theta' is not a positive number"},
        {"{\"global_attn_every_n_layers\": 0}",
         "config.json: 'global_attn_every_n_layers' is not a positive integer"},
        {"{\"local_attention\": -128}", "config.json: 'local_attention' is not a positive integer"},
        {"{\"local_rope_theta\": \"ten\"}", "config.json: 'local_rope_theta' is not a positive "
                                            "number"},
        {"{\"norm_eps\": 0}", "config.json: 'norm_eps' is not a positive number"},
        /* the fused input projection: 2 x 47 rows expected, the file's 96 */
        {"{\"intermediate_size\": 47}",
         "tensor 'model.layers.0.mlp.Wi.weight' has 96 rows; ffn geglu needs 2 x d_ff = 94 (the "
         "input's 47 rows, then the gate's)"},
        {"{\"num_hidden_layers\": 7}", "missing tensor 'model.layers.6.attn.Wqkv.weight'"},
        {"{\"num_hidden_layers\": 5}",
         "unexpected tensor 'model.layers.5.attn.Wo.weight' (config.json: "
         "num_hidden_layers 5)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, MB_DIR "/modernbert_mlm", cases[i].edit, NULL, WEIGHTS);
        refused(s.dir, cases[i].want);
        scratch_free(&s);
    }
    scratch s;
    scratch_make(&s, MB_DIR "/modernbert_mlm", "{\"mlp_bias\": true}", NULL, WEIGHTS);
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL},
                    "config.json: attention_bias (false) and mlp_bias (true) differ", 2);
    scratch_free(&s);
    scratch_make(&s, MB_DIR "/modernbert_mlm", "{\"intermediate_size\": 47}", NULL, WEIGHTS);
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL},
                    "tensor 'model.layers.0.mlp.Wi.weight' has 96 rows; ffn geglu needs", 1);
    scratch_free(&s);
}
END_TEST

/* transformers 5's fields: a layer_types attnd cannot represent (layer l
 * global exactly when l mod N = K), of the wrong length or with another
 * kind of layer; a rope_parameters flat or with a scaled RoPE, a partial
 * rotary factor or a bad base; each refused naming the field. */
START_TEST(test_bad_5x_fields_refused)
{
    static const struct {
        const char *edit, *want;
    } cases[] = {
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"full_attention\", \"full_attention\", \"sliding_attention\"]}",
         "config.json: layer_types is not a pattern attnd computes (layer l full_attention "
         "exactly when l mod N = K, here N 3, K 0): layer 4 is full_attention"},
        {"{\"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
         "\"full_attention\", \"full_attention\", \"sliding_attention\"]}",
         "config.json: layer_types is not a pattern attnd computes (layer l full_attention "
         "exactly when l mod N = K, here N 2, K 1): layer 4 is full_attention"},
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\"]}",
         "config.json: 'layer_types' is not a list of num_hidden_layers (6) entries"},
        {"{\"layer_types\": \"full_attention\"}",
         "config.json: 'layer_types' is not a list of num_hidden_layers (6) entries"},
        {"{\"layer_types\": [\"full_attention\", \"sliding_attention\", \"chunked_attention\", "
         "\"full_attention\", \"sliding_attention\", \"sliding_attention\"]}",
         "config.json: layer_types[2] 'chunked_attention' is not supported (full_attention, "
         "sliding_attention)"},
        {"{\"rope_parameters\": {\"rope_theta\": 10000.0}}",
         "config.json: rope_parameters has 'rope_theta': ModernBertConfig reads one entry per "
         "layer type, full_attention and sliding_attention"},
        {"{\"rope_parameters\": [160000.0, 10000.0]}",
         "config.json: 'rope_parameters' is not an object"},
        {"{\"rope_parameters\": {\"full_attention\": 160000.0}}",
         "config.json: 'rope_parameters.full_attention' is not an object"},
        {"{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": "
         "160000.0}, \"sliding_attention\": {\"rope_type\": \"linear\", \"factor\": 2.0, "
         "\"rope_theta\": 10000.0}}}",
         "config.json: rope_parameters.sliding_attention.rope_type 'linear' is not supported "
         "(default: attnd computes RoPE without scaling)"},
        {"{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": "
         "160000.0, \"partial_rotary_factor\": 0.5}}}",
         "config.json: rope_parameters.full_attention.partial_rotary_factor 0.5 is not supported "
         "(ModernBERT rotates the whole head)"},
        {"{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": "
         "160000.0}, \"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": -1}}}",
         "config.json: 'rope_parameters.sliding_attention.rope_theta' is not a positive number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, MB5_DIR "/modernbert_mlm", cases[i].edit, NULL, WEIGHTS);
        refused(s.dir, cases[i].want);
        scratch_free(&s);
    }
    scratch s;
    scratch_make(
        &s, MB5_DIR "/modernbert_mlm",
        "{\"layer_types\": [\"full_attention\", \"full_attention\", \"sliding_attention\", "
        "\"full_attention\", \"full_attention\", \"sliding_attention\"]}",
        NULL, WEIGHTS);
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL},
                    "config.json: layer_types is not a pattern attnd computes", 2);
    scratch_free(&s);
}
END_TEST

/* What each form says, read as transformers reads it, gives the
 * reference's outputs (or, where the reference has no case, the
 * hyperparameters that say so): a missing local_rope_theta is
 * ModernBertConfig's 10000 (the bug: the global base was used); 5.x
 * rope_parameters and layer_types win over 4.x's fields that disagree, as
 * transformers 5 reads them; a missing rope_parameters entry takes the 4.x
 * field, else the default; an odd local_attention is floored; a consistent
 * sliding_window and head_dim are accepted. */
START_TEST(test_fields_honoured)
{
    static const struct {
        const char *base, *edit;
        const char *const remove[3];
        double theta, theta_local; /* what attnd must read */
        int every, window;
        bool outputs; /* the case's expected outputs still hold */
    } cases[] = {
        /* 4.x, local_rope_theta absent: 10000 (ModernBertConfig's default), not the global */
        {MB_DIR "/modernbert_mlm", NULL, {"local_rope_theta"}, 160000, 10000, 3, 16, true},
        {MB_DIR "/modernbert_mlm",
         NULL,
         {"local_rope_theta", "global_rope_theta"},
         160000,
         10000,
         3,
         16,
         true},
        /* 4.x, local_rope_theta null: the global one (bias case's 80000) */
        {MB_DIR "/modernbert_base_bias", NULL, {NULL}, 80000, 80000, 2, 8, true},
        /* 4.x, an odd local_attention: floored, as local_attention // 2 */
        {MB_DIR "/modernbert_mlm", "{\"local_attention\": 33}", {NULL}, 160000, 10000, 3, 16, true},
        /* the 5.x files themselves */
        {MB5_DIR "/modernbert_mlm", NULL, {NULL}, 160000, 10000, 3, 16, true},
        {MB5_DIR "/modernbert_base_bias", NULL, {NULL}, 80000, 80000, 2, 8, true},
        {MB5_DIR "/modernbert_swiglu", NULL, {NULL}, 160000, 0, 1, 0, true},
        /* 5.x with 4.x's fields disagreeing: rope_parameters and layer_types win */
        {MB5_DIR "/modernbert_mlm",
         "{\"global_rope_theta\": 500.0, \"local_rope_theta\": 600.0, "
         "\"global_attn_every_n_layers\": 2}",
         {NULL},
         160000,
         10000,
         3,
         16,
         true},
        /* 5.x without a sliding_attention entry: local_rope_theta, else 10000 */
        {MB5_DIR "/modernbert_mlm",
         "{\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 160000.0, \"rope_type\": "
         "\"default\"}}}",
         {NULL},
         160000,
         10000,
         3,
         16,
         true},
        {MB5_DIR "/modernbert_mlm",
         "{\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 160000.0}}, "
         "\"local_rope_theta\": 600.0}",
         {NULL},
         160000,
         600,
         3,
         16,
         false},
        {MB5_DIR "/modernbert_base_bias",
         "{\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 80000.0, \"type\": "
         "\"default\"}, \"sliding_attention\": null}, \"local_rope_theta\": null}",
         {NULL},
         80000,
         80000,
         2,
         8,
         true},
        /* 5.x without rope_parameters nor layer_types: 4.x's fields, then the defaults */
        {MB5_DIR "/modernbert_mlm",
         "{\"global_attn_every_n_layers\": 3}",
         {"rope_parameters", "layer_types"},
         160000,
         10000,
         3,
         16,
         true},
        {MB5_DIR "/modernbert_mlm",
         NULL,
         {"rope_parameters", "layer_types"},
         160000,
         10000,
         3,
         16,
         true},
        /* transformers 5's half-window property and head_dim, consistent */
        {MB5_DIR "/modernbert_mlm",
         "{\"sliding_window\": 16, \"head_dim\": 8}",
         {NULL},
         160000,
         10000,
         3,
         16,
         true},
        /* layer_types: every layer global; only layer 0 global */
        {MB5_DIR "/modernbert_mlm",
         "{\"layer_types\": [\"full_attention\", \"full_attention\", \"full_attention\", "
         "\"full_attention\", \"full_attention\", \"full_attention\"]}",
         {NULL},
         160000,
         0,
         1,
         0,
         false},
        {MB5_DIR "/modernbert_mlm",
         "{\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\"]}",
         {NULL},
         160000,
         10000,
         6,
         16,
         false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scratch s;
        scratch_make(&s, cases[i].base, cases[i].edit, cases[i].remove, WEIGHTS);
        enc_hf_config c;
        enc_error err = {0};
        ck_assert_msg(enc_hf_config_read(s.dir, &c, &err) == 0, "case %zu: %s", i, err.message);
        ck_assert_msg(
            c.hp.rope_theta == cases[i].theta && c.hp.rope_theta_local == cases[i].theta_local &&
                c.hp.global_every == cases[i].every && c.hp.local_window == cases[i].window,
            "case %zu: theta %g / %g, global every %d, window %d", i, c.hp.rope_theta,
            c.hp.rope_theta_local, c.hp.global_every, c.hp.local_window);
        if (cases[i].outputs)
            for (int naive = 0; naive < 2; naive++) {
                const double d = dir_outputs_diff(s.dir, cases[i].base, naive);
                ck_assert_msg(d <= TOL, "case %zu (naive %d): outputs differ by %g", i, naive, d);
            }
        scratch_free(&s);
    }
}
END_TEST

/* The block options' tensors in PyTorch files (the torch fixtures'): a
 * gated linear1 whose height is not 2 x d_ff, and a file that has what the
 * options say it must not, or lacks what they say it has, are refused
 * naming the tensor and the option. */
START_TEST(test_option_tensors_refused)
{
    static const struct {
        const char *fixture;
        enc_norm norm;
        bool final_norm, first_identity;
        const char *want;
    } cases[] = {
        {"final_norm", ENC_NORM_LAYERNORM, false, false,
         "unexpected tensor 'norm.bias' (the model has final_norm false)"},
        {"final_norm", ENC_NORM_LAYERNORM, true, true,
         "unexpected tensor 'layers.0.norm1.bias' (the model has first_attn_norm false: layer "
         "0 has no attention norm)"},
        {"final_norm", ENC_NORM_LAYERNORM_NOBIAS, true, false,
         "unexpected tensor 'layers.0.norm1.bias' (the model has norm layernorm_nobias)"},
        {"final_norm_nobias", ENC_NORM_LAYERNORM, true, false,
         "missing tensor 'layers.0.norm1.bias'"},
        {"first_attn_norm_off", ENC_NORM_LAYERNORM, true, false,
         "missing tensor 'layers.0.norm1.weight'"},
        {"norm_nobias", ENC_NORM_LAYERNORM_NOBIAS, true, false, "missing tensor 'norm.weight'"},
        /* bias false, but layernorm_bias (NomicBERT's norms) asks for the norms' biases */
        {"layer_nobias", ENC_NORM_LAYERNORM_BIAS, false, false, "missing tensor 'norm1.bias'"},
    };
    /* a gated feed-forward's linear1 of a height that is not 2 x d_ff */
    st_file g;
    torch_case_open(&g, "ffn_geglu");
    enc_hparams ghp;
    torch_hparams(&g, &ghp);
    st_close(&g);
    ghp.d_ff += 1;
    char gpath[640], want[160];
    snprintf(gpath, sizeof gpath, "%s/ffn_geglu/model.safetensors", TORCH_DIR);
    snprintf(want, sizeof want,
             "tensor 'linear1.weight' has %d rows; ffn geglu needs 2 x d_ff = %d (the input's %d "
             "rows, then the gate's)",
             2 * (ghp.d_ff - 1), 2 * ghp.d_ff, ghp.d_ff);
    enc_error gerr = {0};
    enc_model *gm = enc_model_load(gpath, &ghp, &gerr);
    const bool gloaded = gm != NULL;
    enc_model_free(gm);
    ck_assert_msg(!gloaded && strstr(gerr.message, want), "'%s' lacks '%s'", gerr.message, want);

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        st_file f;
        torch_case_open(&f, cases[i].fixture);
        enc_hparams hp;
        torch_hparams(&f, &hp);
        st_close(&f);
        hp.norm = cases[i].norm;
        hp.final_norm = cases[i].final_norm;
        hp.first_norm_identity = cases[i].first_identity;
        char path[640];
        snprintf(path, sizeof path, "%s/%s/model.safetensors", TORCH_DIR, cases[i].fixture);
        enc_error err = {0};
        enc_model *m = enc_model_load(path, &hp, &err);
        const bool loaded = m != NULL;
        enc_model_free(m);
        ck_assert_msg(!loaded, "case %zu loaded", i);
        ck_assert_msg(strstr(err.message, cases[i].want), "case %zu: '%s' lacks '%s'", i,
                      err.message, cases[i].want);
    }
}
END_TEST

/* Settings that make no sense, alone or against a directory's config.json,
 * are refused naming the setting. */
START_TEST(test_settings_refused)
{
#define DIR MB_DIR "/modernbert_mlm"
    static const settings_refusal cases[] = {
        {{"--global-every", "0"}, "--global-every: 0 is outside 1..256"},
        {{"--global-every", "2", "--local-window", "-1"},
         "--local-window: -1 is outside 0..1048576"},
        {{"--global-every", "3"},
         "model.global_every: --global-every gives 3, which makes local layers: give "
         "model.local_window too"},
        {{"--local-window", "8"},
         "model.local_window: --local-window gives 8, but every layer is global: set "
         "model.global_every to 2 or more"},
        {{"--global-every", "2", "--local-window", "4", "--rope-theta-local", "100"},
         "model.rope_theta_local: --rope-theta-local gives 100, but it is RoPE's base on local "
         "layers: it needs model.position rope"},
        {{"--position", "rope", "--rope-theta-local", "100"}, "model.rope_theta_local"},
        {{"--no-first-attn-norm"},
         "model: first_attn_norm false (layer 0's attention norm the "
         "identity) needs norm_first true"},
        {{"--norm", "groupnorm"},
         "--norm: 'groupnorm' is not one of layernorm, layernorm_nobias, layernorm_bias, rmsnorm"},
        {{"--ffn", "geglu", "--activation", "relu"}, "ffn geglu gates with the GELU"},
        {{"--model-dir", DIR, "--global-every", "2"},
         "model.global_every: --global-every gives 2, but " MB_DIR
         "/modernbert_mlm/config.json: global_attn_every_n_layers is 3"},
        {{"--model-dir", DIR, "--local-window", "64"}, "config.json: local_attention / 2 is 16"},
        {{"--model-dir", DIR, "--rope-theta-local", "160000"},
         "config.json: local_rope_theta is 10000"},
        {{"--model-dir", DIR, "--norm", "layernorm"}, "config.json: norm_bias is false"},
        {{"--model-dir", DIR, "--first-attn-norm"}, "a modernbert model has first_attn_norm false"},
        {{"--model-dir", DIR, "--no-final-norm"}, "a modernbert model has final_norm true"},
        {{"--model-dir", DIR, "--ffn", "swiglu"}, "a modernbert model has ffn geglu"},
        /* the 5.x form's fields, named */
        {{"--model-dir", MB5_DIR "/modernbert_mlm", "--global-every", "2"},
         "model.global_every: --global-every gives 2, but " MB5_DIR
         "/modernbert_mlm/config.json: layer_types makes every layer l with l mod 3 = 0 global"},
        {{"--model-dir", MB5_DIR "/modernbert_mlm", "--rope-theta-local", "160000"},
         "config.json: rope_parameters.sliding_attention.rope_theta is 10000"},
        {{"--model-dir", MB5_DIR "/modernbert_mlm", "--rope-theta", "10000"},
         "config.json: rope_parameters.full_attention.rope_theta is 160000"},
    };
    settings_refused(cases, sizeof cases / sizeof *cases);
    attnd_config cfg;
    char msg[1024];
    /* what config.json says, given again, and a consistent block by hand */
    config_try(&cfg,
               (const char *const[]){"--model-dir", DIR, "--global-every", "3", "--local-window",
                                     "16", "--no-first-attn-norm", "--norm", "layernorm_nobias",
                                     NULL},
               NULL, msg, sizeof msg);
    ck_assert_msg(msg[0] == '\0', "%s", msg);
    ck_assert(cfg.model.hp.first_norm_identity && cfg.model.hp.final_norm);
    ck_assert_double_eq(cfg.model.hp.rope_theta_local, 10000.0);
    config_free(&cfg);
    config_try(&cfg,
               (const char *const[]){"--norm-first", "--no-first-attn-norm", "--global-every", "3",
                                     "--local-window", "0", "--position", "rope", NULL},
               NULL, msg, sizeof msg);
    ck_assert_msg(msg[0] == '\0', "%s", msg);
    ck_assert_double_eq(cfg.model.hp.rope_theta_local, 10000.0); /* rope_theta's */
    config_free(&cfg);
#undef DIR
}
END_TEST

/* ---- the daemon ------------------------------------------------------------------------- */

/* attnd --model-dir on the L = 300 directory, in the 4.x and the 5.x form:
 * /v1/model lists each layer's kind, window and RoPE base (the local
 * layers' 10000 from rope_parameters.sliding_attention in the 5.x form);
 * /v1/encode of the padded batch gives the reference's outputs;
 * usage.attention_scores is the global layers' len^2 and the local layers'
 * band tiles, per head. */
START_TEST(test_daemon_serves_modernbert)
{
    const char *dir = _i ? MB5_DIR "/modernbert_mlm" : MB_DIR "/modernbert_mlm";
    daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, (const char *const[]){"--model-dir", dir, NULL}, NULL), 0);
    http_resp r;
    ck_assert_int_eq(http_do(d.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *info = json_loads(r.body, 0, NULL);
    http_resp_free(&r);
    const json_t *hp = json_object_get(info, "hyperparameters");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(info, "weights"), "architecture")),
        "modernbert");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "ffn")), "geglu");
    ck_assert_str_eq(json_string_value(json_object_get(hp, "norm")), "layernorm_nobias");
    ck_assert(json_is_true(json_object_get(hp, "final_norm")));
    ck_assert(json_is_false(json_object_get(hp, "first_attn_norm")));
    ck_assert_int_eq(json_integer_value(json_object_get(hp, "global_every")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(hp, "local_window")), 16);
    const json_t *layers = json_object_get(hp, "layers");
    ck_assert_uint_eq(json_array_size(layers), 6);
    for (int l = 0; l < 6; l++) {
        const json_t *e = json_array_get(layers, (size_t)l);
        const bool global = l % 3 == 0;
        ck_assert_str_eq(json_string_value(json_object_get(e, "attention")),
                         global ? "global" : "local");
        ck_assert(global ? json_is_null(json_object_get(e, "window"))
                         : json_integer_value(json_object_get(e, "window")) == 16);
        ck_assert_double_eq(json_number_value(json_object_get(e, "rope_theta")),
                            global ? 160000.0 : 10000.0);
    }
    json_decref(info);

    char path[640];
    snprintf(path, sizeof path, "%s/case.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_int_eq(st_open(&f, path, &err), 0);
    const st_tensor *xt = st_find(&f, "x");
    const int B = (int)xt->shape[0], L = (int)xt->shape[1], D = (int)xt->shape[2];
    float *x = torch_floats(&f, "x", NULL), *want = torch_floats(&f, "out", NULL);
    float *lf = torch_floats(&f, "lengths", NULL);
    json_t *emb = embeddings_json(x, B, L, D), *lens = json_array();
    for (int b = 0; b < B; b++)
        json_array_append_new(lens, json_integer((json_int_t)lf[b]));
    json_t *req =
        json_pack("{s:o, s:o, s:s}", "embeddings", emb, "lengths", lens, "attention", "none");
    char *body = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(http_post_json(d.port, "/v1/encode", body, &r), 0);
    ck_assert_msg(r.status == 200, "%ld %.300s", (long)r.status, r.body);
    json_t *resp = json_loads(r.body, 0, NULL);
    const double worst = outputs_diff(json_object_get(resp, "outputs"), want, B, L, D, lf);
    ck_assert_msg(worst <= TOL, "outputs differ from the reference by %g", worst);
    uint64_t scores = 0; /* layers 0 and 3 global, 1 2 4 5 local (window 16), 4 heads */
    for (int b = 0; b < B; b++)
        scores += 4 * (2 * (uint64_t)lf[b] * (uint64_t)lf[b] +
                       4 * band_tile_scores((int)lf[b], 16, false));
    const json_t *usage = json_object_get(resp, "usage");
    ck_assert_msg((uint64_t)json_integer_value(json_object_get(usage, "attention_scores")) ==
                      scores,
                  "attention_scores %lld, want %llu",
                  (long long)json_integer_value(json_object_get(usage, "attention_scores")),
                  (unsigned long long)scores);
    ck_assert_uint_lt(scores, 6 * 4 * (300 * 300 + 237 * 237)); /* the local layers' saving */
    json_decref(resp);
    http_resp_free(&r);
    free(body);
    json_decref(req);
    free(x);
    free(want);
    free(lf);
    st_close(&f);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

Suite *modernbert_suite(void)
{
    Suite *s = timed_suite("modernbert");
    TCase *tc = timed_case(s, "core", 120);
    tcase_add_loop_test(tc, test_directory_matches_reference, 0, 2 * N_CASES);
    tcase_add_test(tc, test_bad_directory_refused);
    tcase_add_test(tc, test_bad_5x_fields_refused);
    tcase_add_test(tc, test_fields_honoured);
    tcase_add_test(tc, test_option_tensors_refused);
    tcase_add_test(tc, test_settings_refused);
    tcase_add_loop_test(tc, test_daemon_serves_modernbert, 0, 2);
    return s;
}
