/* check_pooling.c - core/model/pooling.c: sentence embeddings against
 * sentence-transformers' Pooling, Dense and Normalize as
 * tools/fixtures/make_text_fixtures.py computes them (float64, from
 * PyTorch's last_hidden_state, torch's nn.Linear and nn.Tanh), worked
 * examples of each mode and of the Matryoshka cut, and the
 * sentence-transformers files of a directory: both forms of
 * 1_Pooling/config.json, Dense modules, Normalize, and the refusals; its
 * text settings (load/sentence.c: max_seq_length, prompts). */
#include "model/pooling.h"

#include "hf_util.h"
#include "load/sentence.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HF TESTS_DIR "/fixtures/hf"

/* A text fixture's encoder outputs: dir's text.safetensors (open), its
 * last_hidden_state x (B, L, D) and each text's length from its
 * attention_mask. */
typedef struct text_outputs {
    st_file f;
    int B, L, D;
    float *x;
    int *lengths;
} text_outputs;

static void outputs_open(text_outputs *o, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/text.safetensors", dir);
    enc_error err = {0};
    ck_assert_msg(st_open(&o->f, path, &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&o->f, "last_hidden_state");
    o->B = (int)t->shape[0], o->L = (int)t->shape[1], o->D = (int)t->shape[2];
    o->x = torch_floats(&o->f, "last_hidden_state", NULL);
    float *mask = torch_floats(&o->f, "attention_mask", NULL);
    o->lengths = xcalloc((size_t)o->B, sizeof *o->lengths);
    for (int b = 0; b < o->B; b++)
        for (int i = 0; i < o->L; i++)
            o->lengths[b] += mask[b * o->L + i] != 0;
    free(mask);
}

static void outputs_close(text_outputs *o)
{
    free(o->lengths);
    free(o->x);
    st_close(&o->f);
}

/* The fixture's last_hidden_state pooled as dir's modules say, against the
 * fixture's pooled tensor want. */
static void pooled_matches(const char *dir, enc_pooling mode, bool normalize, const char *want_name)
{
    text_outputs o;
    outputs_open(&o, dir);
    float *want = torch_floats(&o.f, want_name, NULL);
    float *got = xcalloc((size_t)o.B * o.D, sizeof *got);
    enc_pool(o.x, o.B, o.L, o.D, o.lengths, mode, normalize, got);
    const double d = max_abs_diff(got, want, (size_t)o.B * o.D);
    ck_assert_msg(d < 1e-5, "%s %s: pooled differs from sentence-transformers' by %g", dir,
                  want_name, d);
    free(got);
    free(want);
    outputs_close(&o);
}

START_TEST(test_against_sentence_transformers)
{
    pooled_matches(HF "/bert_text", ENC_POOL_MEAN, false, "mean_pooled");
    pooled_matches(HF "/bert_text", ENC_POOL_MEAN, true, "mean_normalized");
    pooled_matches(HF "/bert_text", ENC_POOL_CLS, false, "cls_pooled");
    pooled_matches(HF "/roberta_text", ENC_POOL_CLS, false, "cls_pooled");
    pooled_matches(HF "/roberta_text", ENC_POOL_MEAN, false, "mean_pooled");
}
END_TEST

/* dense_text's last_hidden_state through its modules (CLS, Dense 32 -> 48
 * with bias and Tanh, Dense 48 -> 16 without bias, Identity, Normalize) as
 * its modules.json says, against torch's: with Normalize, without it (TEI's
 * normalize false), and cut to 8 dimensions (the fixture's first 8,
 * renormalized). */
START_TEST(test_dense_against_sentence_transformers)
{
    enc_st_config c;
    enc_error err = {0};
    ck_assert_msg(enc_st_config_read(HF "/dense_text", 32, &c, &err) == 0, "%s", err.message);
    text_outputs o;
    outputs_open(&o, HF "/dense_text");
    enc_embedder e = {
        .mode = c.pooling, .normalize = c.normalize, .dense = c.dense, .n_dense = c.n_dense};
    ck_assert_int_eq(enc_embed_width(&e, o.D), 16);
    static const char *const names[] = {"sentence_embedding", "dense_embedding"};
    for (int k = 0; k < 2; k++) {
        e.normalize = k == 0;
        float *want = torch_floats(&o.f, names[k], NULL);
        float *got = enc_embed(&e, o.x, o.B, o.L, o.D, o.lengths, 0);
        const double d = max_abs_diff(got, want, (size_t)o.B * 16);
        ck_assert_msg(d < 1e-5, "%s differs from sentence-transformers' by %g", names[k], d);
        free(got);
        free(want);
    }
    e.normalize = true;
    float *want = torch_floats(&o.f, "sentence_embedding", NULL);
    float *got = enc_embed(&e, o.x, o.B, o.L, o.D, o.lengths, 8);
    for (int b = 0; b < o.B; b++) {
        double norm = 0;
        for (int k = 0; k < 8; k++)
            norm += (double)want[b * 16 + k] * want[b * 16 + k];
        for (int k = 0; k < 8; k++)
            ck_assert_msg(fabs(got[b * 8 + k] - want[b * 16 + k] / sqrt(norm)) < 1e-5,
                          "dimensions 8, row %d", b);
    }
    free(got);
    free(want);
    outputs_close(&o);
    enc_st_config_free(&c);
}
END_TEST

/* Two sequences of 3 and 2 tokens, D = 2, worked by hand. */
START_TEST(test_modes_worked)
{
    const float x[2 * 3 * 2] = {1,  2, 3, -4, 5,  0, /* sequence 0 */
                                -1, 6, 3, 2,  99, 99 /* sequence 1: its third row is padding */};
    const int lengths[2] = {3, 2};
    float out[4];
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_CLS, false, out);
    ck_assert(out[0] == 1 && out[1] == 2 && out[2] == -1 && out[3] == 6);
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_MEAN, false, out);
    ck_assert(out[0] == 3 && fabsf(out[1] - (-2.0f / 3)) < 1e-7f && out[2] == 1 && out[3] == 4);
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_MAX, false, out);
    ck_assert(out[0] == 5 && out[1] == 2 && out[2] == 3 && out[3] == 6);
    enc_pool(x, 2, 3, 2, lengths, ENC_POOL_LAST, false, out);
    ck_assert(out[0] == 5 && out[1] == 0 && out[2] == 3 && out[3] == 2);
    /* normalized: (3, 4) / 5 */
    const float y[2] = {3, 4};
    enc_pool(y, 1, 1, 2, NULL, ENC_POOL_CLS, true, out);
    ck_assert(fabsf(out[0] - 0.6f) < 1e-7f && fabsf(out[1] - 0.8f) < 1e-7f);
    /* a zero vector stays zero (the norm is held at 1e-12, as F.normalize) */
    const float z[2] = {0, 0};
    enc_pool(z, 1, 1, 2, NULL, ENC_POOL_CLS, true, out);
    ck_assert(out[0] == 0 && out[1] == 0);
}
END_TEST

/* The model's projection (voyage-4-nano's) against a naive one: every
 * token projected in double, then pooled, in each mode (the code projects
 * the pooled row for the linear modes, the tokens for max), and
 * enc_project_tokens' packed rows; worked on the same x as
 * test_modes_worked, projected 2 -> 3 by W = [[1, 0], [0, 1], [1, -2]]. */
START_TEST(test_projection_worked)
{
    const float x[2 * 3 * 2] = {1, 2, 3, -4, 5, 0, -1, 6, 3, 2, 99, 99};
    const int lengths[2] = {3, 2};
    float w[3 * 2] = {1, 0, 0, 1, 1, -2};
    const enc_dense project = {.in = 2, .out = 3, .weight = w};
    /* the projected tokens, by hand: (x0, x1, x0 - 2 x1) */
    const float tok[5 * 3] = {1,  2, -3,  3, -4, 11, 5, 0, 5, /* sequence 0 */
                              -1, 6, -13, 3, 2,  -1 /* sequence 1 */};
    enc_embedder e = {.project = &project};
    ck_assert_int_eq(enc_token_width(&e, 2), 3);
    ck_assert_int_eq(enc_embed_width(&e, 2), 3);
    float *packed = enc_project_tokens(&e, x, 2, 3, 2, lengths);
    ck_assert(max_abs_diff(packed, tok, 15) == 0.0);
    free(packed);
    static const struct {
        enc_pooling mode;
        float want[6];
    } cases[] = {
        {ENC_POOL_CLS, {1, 2, -3, -1, 6, -13}},
        {ENC_POOL_LAST, {5, 0, 5, 3, 2, -1}},
        {ENC_POOL_MEAN, {3, -2.0f / 3, 13.0f / 3, 1, 4, -7}},
        /* max over the projected tokens: not the projected max (5, 2) -> (5, 2, 1) */
        {ENC_POOL_MAX, {5, 2, 11, 3, 6, -1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        e.mode = cases[i].mode;
        float *got = enc_embed(&e, x, 2, 3, 2, lengths, 0);
        ck_assert_msg(max_abs_diff(got, cases[i].want, 6) < 1e-6, "%s",
                      enc_pooling_name(cases[i].mode));
        free(got);
    }
}
END_TEST

/* pplx-embed's quantizer: round(127 tanh(x)), after the pooling and before
 * the norm: 127 tanh(0.01) = 1.27 -> 1, 127 tanh(-2) = -122.46 -> -122,
 * 127 tanh(10) -> 127, 0 -> 0. */
START_TEST(test_int8_tanh_worked)
{
    const float x[4] = {0.01f, -2.0f, 10.0f, 0.0f};
    enc_embedder e = {.mode = ENC_POOL_CLS, .int8_tanh = true};
    float *got = enc_embed(&e, x, 1, 1, 4, NULL, 0);
    ck_assert(got[0] == 1 && got[1] == -122 && got[2] == 127 && got[3] == 0);
    free(got);
    e.normalize = true; /* TEI's /embed: the integers normalized */
    got = enc_embed(&e, x, 1, 1, 4, NULL, 0);
    const double n = sqrt(1.0 + 122.0 * 122 + 127.0 * 127);
    ck_assert(fabs(got[0] - 1 / n) < 1e-7 && fabs(got[1] + 122 / n) < 1e-7 &&
              fabs(got[2] - 127 / n) < 1e-7 && got[3] == 0);
    free(got);
}
END_TEST

/* Matryoshka: the first dims, renormalized when the model normalizes. */
START_TEST(test_truncate)
{
    float v[2 * 3] = {3, 4, 12, 0, 0, 5};
    enc_pool_truncate(v, 2, 3, 2, true);
    ck_assert(fabsf(v[0] - 0.6f) < 1e-7f && fabsf(v[1] - 0.8f) < 1e-7f);
    ck_assert(v[2] == 0 && v[3] == 0);
    float w[2 * 3] = {3, 4, 12, 1, 2, 5};
    enc_pool_truncate(w, 2, 3, 1, false);
    ck_assert(w[0] == 3 && w[1] == 1);
}
END_TEST

START_TEST(test_st_files)
{
    enc_st_config c;
    enc_error err = {0};
    /* the newer form (pooling_mode "mean" or the eight keys) and Normalize */
    ck_assert_int_eq(enc_st_config_read(HF "/bert_text", 32, &c, &err), 0);
    ck_assert(c.found && c.pooling == ENC_POOL_MEAN && c.normalize && c.include_prompt);
    ck_assert(c.n_dense == 0 && !c.dense);
    /* the older five keys, CLS, no Normalize; no include_prompt: true */
    ck_assert_int_eq(enc_st_config_read(HF "/roberta_text", 32, &c, &err), 0);
    ck_assert(c.found && c.pooling == ENC_POOL_CLS && !c.normalize && c.include_prompt);
    /* no modules.json: nothing found, no error */
    ck_assert_int_eq(enc_st_config_read(HF "/bert_mlm", 16, &c, &err), 0);
    ck_assert(!c.found);
    /* two Dense modules between the Pooling and the Normalize, as their
     * config.json files say; their weights as their model.safetensors */
    ck_assert_msg(enc_st_config_read(HF "/dense_text", 32, &c, &err) == 0, "%s", err.message);
    ck_assert(c.found && c.pooling == ENC_POOL_CLS && c.normalize && c.n_dense == 2);
    ck_assert(c.dense[0].in == 32 && c.dense[0].out == 48 && c.dense[0].bias && c.dense[0].tanh);
    ck_assert(c.dense[1].in == 48 && c.dense[1].out == 16 && !c.dense[1].bias && !c.dense[1].tanh);
    st_file f;
    ck_assert_int_eq(st_open(&f, HF "/dense_text/3_Dense/model.safetensors", &err), 0);
    float *w = torch_floats(&f, "linear.weight", NULL);
    ck_assert(max_abs_diff(c.dense[1].weight, w, 16 * 48) == 0);
    free(w);
    st_close(&f);
    enc_st_config_free(&c);
    ck_assert(c.n_dense == 0 && !c.dense);
}
END_TEST

/* Writes dir/name with text, making the folder before name's slash first
 * when there is one. */
static void put_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    const char *slash = strchr(name, '/');
    if (slash) {
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(slash - name), name);
        ck_assert(mkdir(path, 0700) == 0 || errno == EEXIST);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* enc_st_config_read of dir (d_model 32) into *c, then dir removed: read
 * (want NULL) or refused with a message holding want. */
static void read_removing(const char *dir, enc_st_config *c, const char *want)
{
    enc_error err = {0};
    const int rc = enc_st_config_read(dir, 32, c, &err);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    if (!want) {
        ck_assert_msg(rc == 0, "%s", err.message);
        return;
    }
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(err.message, want), "\"%s\" does not say \"%s\"", err.message, want);
}

/* A directory with modules.json and 1_Pooling/config.json as given: read
 * (want NULL; what was read returned), or refused with want. */
static enc_st_config st_refused(const char *modules, const char *pooling, const char *want)
{
    char dir[] = "/tmp/attnd-st-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    put_file(dir, "modules.json", modules);
    put_file(dir, "1_Pooling/config.json", pooling);
    enc_st_config c;
    read_removing(dir, &c, want);
    return c;
}

#define MODULES(extra)                                                                             \
    "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "                                    \
    "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", \"path\": "      \
    "\"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}" extra "]"

START_TEST(test_st_refusals)
{
    st_refused(MODULES(""), "{\"pooling_mode\": \"lasttoken\"}", NULL);
    st_refused(MODULES(""), "{\"pooling_mode\": [\"max\"]}", NULL);
    ck_assert(
        !st_refused(MODULES(""), "{\"pooling_mode\": \"mean\", \"include_prompt\": false}", NULL)
             .include_prompt);
    st_refused(MODULES(", {\"idx\": 2, \"name\": \"2\", \"path\": \"2_LayerNorm\", \"type\": "
                       "\"sentence_transformers.models.LayerNorm\"}"),
               "{\"pooling_mode\": \"mean\"}",
               "module 2 (sentence_transformers.models.LayerNorm) is not supported");
    st_refused(MODULES(""), "{\"pooling_mode\": \"weightedmean\"}",
               "pooling_mode \"weightedmean\" is not supported");
    st_refused(MODULES(""), "{\"pooling_mode\": [\"cls\", \"mean\"]}", "one mode");
    st_refused(MODULES(""),
               "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}",
               "2 pooling modes are true");
    st_refused(MODULES(""), "{\"pooling_mode_mean_sqrt_len_tokens\": true}",
               "pooling_mode_mean_sqrt_len_tokens is not supported");
    st_refused("[]", "{}", "no Pooling module");
    /* a CrossEncoder's (sentence-transformers 5.4+): the Transformer alone,
     * or a causal LM's with its LogitScore; no pooling read from it */
    static const char *const cross[] = {
        "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
        "\"sentence_transformers.base.modules.transformer.Transformer\"}]",
        "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
        "\"sentence_transformers.base.modules.transformer.Transformer\"}, {\"idx\": 1, \"name\": "
        "\"1\", \"path\": \"1_LogitScore\", \"type\": "
        "\"sentence_transformers.cross_encoder.modules.logit_score.LogitScore\"}]"};
    for (size_t i = 0; i < 2; i++) {
        const enc_st_config c = st_refused(cross[i], "{}", NULL);
        ck_assert(c.cross_encoder && !c.found && c.n_dense == 0);
    }
    /* a LogitScore anywhere else is not one */
    st_refused(MODULES(", {\"idx\": 2, \"name\": \"2\", \"path\": \"2_LogitScore\", \"type\": "
                       "\"sentence_transformers.cross_encoder.modules.logit_score.LogitScore\"}"),
               "{\"pooling_mode\": \"mean\"}",
               "module 2 (sentence_transformers.cross_encoder.modules.logit_score.LogitScore) "
               "is not supported");
    st_refused("{", "{}", "modules.json");
}
END_TEST

#define DENSE_MODULES                                                                              \
    MODULES(", {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Dense\", \"type\": "                    \
            "\"sentence_transformers.models.Dense\"}, {\"idx\": 3, \"name\": \"3\", \"path\": "    \
            "\"3_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}")

/* A directory whose modules are DENSE_MODULES: 1_Pooling/config.json mean,
 * 2_Dense/config.json config, and in 2_Dense a file called name (NULL:
 * none): a link to dense_text's file from, or empty (from NULL).  Read with
 * d_model 32, it is refused with want, and nothing is left in the config. */
static void dense_refused(const char *config, const char *name, const char *from, const char *want)
{
    char dir[] = "/tmp/attnd-st-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    put_file(dir, "modules.json", DENSE_MODULES);
    put_file(dir, "1_Pooling/config.json", "{\"pooling_mode\": \"mean\"}");
    put_file(dir, "2_Dense/config.json", config);
    char path[512];
    snprintf(path, sizeof path, "%s/2_Dense/%s", dir, name ? name : "");
    if (name && from)
        ck_assert_int_eq(symlink(from, path), 0);
    else if (name)
        put_file(dir, path + strlen(dir) + 1, "");
    enc_st_config c;
    read_removing(dir, &c, want);
    ck_assert(!c.found && c.n_dense == 0 && !c.dense);
}

#define DENSE_CONFIG(in, out, bias, act)                                                           \
    "{\"in_features\": " in ", \"out_features\": " out ", \"bias\": " bias                         \
    ", \"activation_function\": \"torch.nn.modules." act "\"}"
#define DENSE_2 HF "/dense_text/2_Dense/model.safetensors" /* [48, 32] and [48] */
#define DENSE_3 HF "/dense_text/3_Dense/model.safetensors" /* [16, 48], no bias */

/* A Dense module attnd cannot run as sentence-transformers would, named
 * with its file and field. */
START_TEST(test_dense_refusals)
{
#define W               "model.safetensors"
#define TANH(out, bias) DENSE_CONFIG("32", out, bias, "activation.Tanh")
    static const struct {
        const char *config, *name, *from, *want;
    } cases[] = {
        {DENSE_CONFIG("32", "48", "true", "activation.ReLU"), W, DENSE_2,
         "activation_function \"torch.nn.modules.activation.ReLU\" is not supported (Tanh or "
         "Identity)"},
        {DENSE_CONFIG("48", "16", "false", "linear.Identity"), W, DENSE_3,
         "in_features 48, but the module before it gives 32 features"},
        {TANH("0", "true"), W, DENSE_2, "out_features in 1 .. 1048576"},
        {TANH("48", "\"yes\""), W, DENSE_2, "bias must be true or false"},
        {"{\"in_features\": 32, \"out_features\": 48}", W, DENSE_2,
         "activation_function must be a string"},
        {TANH("40", "true"), W, DENSE_2, "linear.weight must be [40, 32], as config.json says"},
        {TANH("48", "false"), W, DENSE_2, "holds 2 tensors; the module has linear.weight"},
        {TANH("48", "true"), NULL, NULL, "2_Dense/model.safetensors is missing"},
        {TANH("48", "true"), "pytorch_model.bin", NULL,
         "has pytorch_model.bin only, and attnd reads safetensors"},
        {TANH("48", "true"), W, HF "/dense_text/config.json", "2_Dense/model.safetensors"},
        {"[", W, DENSE_2, "2_Dense/config.json"},
    };
#undef TANH
#undef W
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        dense_refused(cases[i].config, cases[i].name, cases[i].from, cases[i].want);
}
END_TEST

/* A directory holding sentence_bert_config.json st and
 * config_sentence_transformers.json cst (each NULL: absent), read by
 * enc_st_text_read: refused with want, or (want NULL) into *t. */
static void st_text(const char *st, const char *cst, const char *want, enc_st_text *t)
{
    char dir[] = "/tmp/attnd-st-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *files[2][2] = {{"sentence_bert_config.json", st},
                               {"config_sentence_transformers.json", cst}};
    for (int i = 0; i < 2; i++) {
        if (!files[i][1])
            continue;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        fputs(files[i][1], f);
        fclose(f);
    }
    enc_error err = {0};
    const int rc = enc_st_text_read(dir, t, &err);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    if (!want) {
        ck_assert_msg(rc == 0, "%s", err.message);
        return;
    }
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(err.message, want), "\"%s\" does not say \"%s\"", err.message, want);
    ck_assert(t->n_prompts == 0 && !t->prompts && !t->default_prompt_name);
}

/* load/sentence.c: max_seq_length, the prompts in the file's order, the
 * default prompt; none without the files; the refusals, naming file and
 * key. */
START_TEST(test_st_text)
{
    enc_st_text t;
    enc_error err = {0};
    ck_assert_int_eq(enc_st_text_read(HF "/bert_text", &t, &err), 0);
    ck_assert(t.max_seq_length == 64 && t.n_prompts == 0 && !t.default_prompt_name);
    enc_st_text_free(&t);
    ck_assert_int_eq(enc_st_text_read(HF "/bert_mlm", &t, &err), 0);
    ck_assert(t.max_seq_length == 0 && t.n_prompts == 0);
    enc_st_text_free(&t);
    st_text("{\"max_seq_length\": null}",
            "{\"prompts\": {\"query\": \"q: \", \"document\": \"\", \"a\": \"A\"}, "
            "\"default_prompt_name\": \"document\", \"similarity_fn_name\": null}",
            NULL, &t);
    ck_assert_int_eq(t.max_seq_length, 0);
    ck_assert_uint_eq(t.n_prompts, 3);
    ck_assert_str_eq(t.prompts[0].name, "query");
    ck_assert_str_eq(t.prompts[2].name, "a");
    ck_assert_str_eq(enc_st_text_prompt(&t, "query"), "q: ");
    ck_assert_str_eq(enc_st_text_prompt(&t, "document"), "");
    ck_assert_ptr_null(enc_st_text_prompt(&t, "passage"));
    ck_assert_str_eq(t.default_prompt_name, "document");
    enc_st_text_free(&t);
    ck_assert_ptr_null(enc_st_text_prompt(NULL, "query"));
    st_text("{\"max_seq_length\": 0}", NULL, "sentence_bert_config.json: max_seq_length", &t);
    st_text("{\"max_seq_length\": 12.5}", NULL, "max_seq_length must be a positive integer", &t);
    st_text("[1]", NULL, "sentence_bert_config.json: the top level is not an object", &t);
    st_text(NULL, "{", "config_sentence_transformers.json: line 1", &t);
    st_text(NULL, "{\"prompts\": [\"q: \"]}", "prompts must be an object", &t);
    st_text(NULL, "{\"prompts\": {\"q\": \"q: \", \"n\": 3}}", "prompts.n must be a string", &t);
    st_text(NULL, "{\"prompts\": {\"q\": \"q: \"}, \"default_prompt_name\": \"p\"}",
            "default_prompt_name 'p' is not one of its prompts", &t);
    st_text(NULL, "{\"default_prompt_name\": 1}", "default_prompt_name must be a string or null",
            &t);
}
END_TEST

START_TEST(test_names)
{
    enc_pooling p;
    static const char *const names[] = {"auto", "cls", "mean", "max", "last"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert_int_eq(enc_pooling_parse(names[i], &p), 0);
        ck_assert_str_eq(enc_pooling_name(p), names[i]);
    }
    ck_assert_int_eq(enc_pooling_parse("lasttoken", &p), -1);
}
END_TEST

Suite *pooling_suite(void)
{
    Suite *s = timed_suite("pooling");
    TCase *tc = timed_case(s, "pooling", 60);
    tcase_add_test(tc, test_against_sentence_transformers);
    tcase_add_test(tc, test_modes_worked);
    tcase_add_test(tc, test_projection_worked);
    tcase_add_test(tc, test_int8_tanh_worked);
    tcase_add_test(tc, test_truncate);
    tcase_add_test(tc, test_st_files);
    tcase_add_test(tc, test_st_refusals);
    tcase_add_test(tc, test_dense_refusals);
    tcase_add_test(tc, test_dense_against_sentence_transformers);
    tcase_add_test(tc, test_st_text);
    tcase_add_test(tc, test_names);
    return s;
}
