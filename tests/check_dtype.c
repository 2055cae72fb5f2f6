/* check_dtype.c - model.dtype bfloat16 and int8 against float32
 * (docs/model.md, "bfloat16", "int8"); for bfloat16: the same model and inputs run both ways, each
 * token's outputs within cosine 0.999 of float32's, on a BERT-base-sized block of seeded weights
 * and on every Hugging Face fixture directory; the largest errors are printed.  The kernels
 * themselves are checked against a double loop on bfloat16-rounded inputs in check_gemm.c.  Each
 * test runs on the AVX-512 kernels and on OpenBLAS's form (kernel_for); on a CPU without AVX-512F
 * (valgrind) only the latter, and the test says so. */
#include "kernels/gemm.h"
#include "kernels/gemm_int8.h"
#include "model/model.h"
#include "load/safetensors.h"
#include "kernels/simd.h"
#include "model/pooling.h"
#include "tokenizer/tokenizer.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What one comparison found. */
typedef struct accuracy {
    double min_cos;  /* the smallest cosine of a token's outputs to float32's */
    double max_abs;  /* the largest |bfloat16 - float32| of an output */
    double attn_abs; /* the same of the attention weights (the last layer's, per head) */
} accuracy;

/* Runs the batch in through f32 and bf16, each with its own workspace, the
 * weights as mode asks (dense); the outputs' and the last layer's attention
 * weights' differences. */
static accuracy compare_batch(const enc_model *f32, const enc_model *bf16, const enc_batch *in,
                              enc_attn_mode mode)
{
    const enc_hparams *hp = enc_model_hparams(f32);
    const int D = hp->d_model, H = hp->n_heads, N = hp->n_layers, B = in->B, L = in->L;
    const size_t n_out = (size_t)B * L * D;
    const size_t n_attn =
        mode == ENC_ATTN_NONE ? 1 : (size_t)B * enc_attn_heads(mode, H) * L * L;
    float *out[2] = {xcalloc(n_out, sizeof(float)), xcalloc(n_out, sizeof(float))};
    float *attn[2] = {xcalloc(n_attn, sizeof(float)), xcalloc(n_attn, sizeof(float))};
    const enc_model *models[2] = {f32, bf16};
    for (int k = 0; k < 2; k++) {
        float **layers = xcalloc((size_t)N, sizeof *layers);
        layers[N - 1] = attn[k];
        enc_workspace *ws = enc_workspace_new(models[k]);
        enc_result res = {.out = out[k], .attn_mode = mode, .attn = layers};
        enc_error err = {0};
        ck_assert_msg(enc_forward(models[k], ws, in, &res, &err) == 0, "%s", err.message);
        enc_workspace_free(ws);
        free(layers);
    }
    accuracy a = {.min_cos = 1.0};
    for (int b = 0; b < B; b++)
        for (int i = 0; i < (in->lengths ? in->lengths[b] : L); i++) {
            const float *u = out[0] + ((size_t)b * L + i) * D, *v = out[1] + ((size_t)b * L + i) * D;
            double uv = 0, uu = 0, vv = 0;
            for (int j = 0; j < D; j++) {
                uv += (double)u[j] * v[j];
                uu += (double)u[j] * u[j];
                vv += (double)v[j] * v[j];
                a.max_abs = fmax(a.max_abs, fabs((double)u[j] - v[j]));
            }
            a.min_cos = fmin(a.min_cos, uv / sqrt(uu * vv));
        }
    a.attn_abs = max_abs_diff(attn[0], attn[1], n_attn);
    for (int k = 0; k < 2; k++) {
        free(out[k]);
        free(attn[k]);
    }
    return a;
}

/* x (B, L, D; lengths) through both, every key, per-head weights. */
static accuracy compare(const enc_model *f32, const enc_model *bf16, const float *x, int B, int L,
                        const int *lengths)
{
    enc_batch in = {.x = x, .B = B, .L = L, .lengths = lengths};
    in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE; /* every key */
    in.mask.causal = enc_model_hparams(f32)->causal; /* a decoder's: every earlier one */
    return compare_batch(f32, bf16, &in, ENC_ATTN_HEADS);
}

/* Each test runs twice: _i 0 on the kernels the CPU has (vdpbf16ps or
 * widened, AVX-512), _i 1 with the AVX-512 forms off, as on a CPU without
 * them: OpenBLAS on widened panels (gemm_bf16_blas_cols).  Sets the forms
 * for _i; false (and a line that says so) when _i 0 would repeat _i 1. */
static bool kernel_for(int i, const char *what)
{
    if (i == 0 && !simd_supported()) {
        printf("dtype: %s: no AVX-512F here: only OpenBLAS's bfloat16 form runs\n", what);
        return false;
    }
    simd_set_enabled(i == 0);
    return true;
}

/* m runs its Linears in bfloat16 (it must, on any CPU). */
static void assert_bf16(const enc_model *m, const char *what)
{
    ck_assert_msg(enc_model_dtype(m) == ENC_DTYPE_BFLOAT16, "%s: not in bfloat16", what);
}

/* The share of the whole pages inside bytes at p that are resident
 * (mincore). */
static double resident_share(const void *p, size_t bytes)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
    ck_assert(hi > lo);
    const size_t n = (hi - lo) / page;
    unsigned char *vec = xcalloc(n, 1);
    ck_assert_int_eq(mincore((void *)lo, hi - lo, vec), 0);
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    return (double)in / (double)n;
}

/* A BERT-base-sized block: D 768, 12 heads, F 3072, GELU, post-norm. */
static void bert_base_block(enc_hparams *hp)
{
    enc_hparams_default(hp);
    hp->d_model = 768;
    hp->n_heads = hp->n_kv_heads = 12;
    hp->d_ff = 3072;
    hp->activation = ENC_ACT_GELU;
}

/* That block of seeded weights, 2 sequences of 64 and 37 tokens (the
 * width is what matters here; under valgrind the portable bfloat16 path
 * runs it, minutes for 128 tokens). */
START_TEST(test_bert_base_block)
{
    if (!kernel_for(_i, "BERT-base block"))
        return;
    enc_hparams hp;
    bert_base_block(&hp);
    enc_error err = {0};
    enc_model *f32 = enc_model_random(&hp, 7, &err);
    hp.dtype = ENC_DTYPE_BFLOAT16;
    enc_model *bf16 = enc_model_random(&hp, 7, &err);
    ck_assert_msg(f32 && bf16, "%s", err.message);
    ck_assert_int_eq(enc_model_dtype(f32), ENC_DTYPE_FLOAT32);
    /* bfloat16 keeps its panels only: the seeded float32 weights' pages are
     * given back (float32 reads them, with AVX-512 off) */
    const size_t w1 = (size_t)hp.d_ff * hp.d_model * sizeof(float);
    ck_assert_double_eq(resident_share(f32->layers[0].w_1, w1), 1.0);
    ck_assert_double_eq(resident_share(bf16->layers[0].w_1, w1), 0.0);
    ck_assert_double_eq(resident_share(bf16->layers[0].w_q, w1 / 4), 0.0);
    assert_bf16(bf16, "BERT-base block");
    const int B = 2, L = 64, lengths[2] = {64, 37};
    float *x = xcalloc((size_t)B * L * hp.d_model, sizeof *x);
    uint64_t st = 99;
    fill_random(x, (size_t)B * L * hp.d_model, &st, 1.0f);
    const accuracy a = compare(f32, bf16, x, B, L, lengths);
    printf("dtype: BERT-base block, seeded, %s: bfloat16 against float32: min cosine %.6f, "
           "max abs %.3g, attention max abs %.3g\n",
           gemm_bf16_kernel(), a.min_cos, a.max_abs, a.attn_abs);
    ck_assert_msg(a.min_cos >= 0.999, "cosine %.6f", a.min_cos);
    ck_assert_msg(a.max_abs > 0.0 && a.attn_abs > 0.0, "bfloat16 gave float32's very outputs");
    free(x);
    enc_model_free(f32);
    enc_model_free(bf16);
    simd_set_enabled(true);
}
END_TEST

/* One directory's model in float32 and in another dtype, with a random
 * batch over both: what a fixture_dirs check compares. */
typedef struct dir_pair {
    const char *name; /* the directory's, under its root */
    enc_model *f32, *other;
    const float *x; /* B x L x D */
    int B, L, D;
    const int *lengths;
} dir_pair;

/* Each directory of tests/fixtures/hf and tests/fixtures/modernbert with a
 * config.json, loaded in float32 and in dtype, and check run on the two
 * with a random batch (B 2, L 24, lengths 24 and 9; its seed the
 * directory's place in the walk).  The number of directories checked. */
static int fixture_dirs(enc_dtype dtype, void (*check)(const dir_pair *))
{
    static const char *const roots[] = {TESTS_DIR "/fixtures/hf", TESTS_DIR "/fixtures/modernbert"};
    int compared = 0;
    for (size_t r = 0; r < sizeof roots / sizeof *roots; r++) {
        DIR *d = opendir(roots[r]);
        ck_assert_ptr_nonnull(d);
        for (struct dirent *e; (e = readdir(d));) {
            char dir[1024], cfgpath[1100];
            snprintf(dir, sizeof dir, "%s/%s", roots[r], e->d_name);
            snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
            if (e->d_name[0] == '.' || access(cfgpath, R_OK) != 0)
                continue;
            enc_hf_config c;
            enc_error err = {0};
            ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", dir, err.message);
            enc_hparams hp = c.hp;
            hp.dtype = ENC_DTYPE_FLOAT32;
            enc_model *f32 = enc_model_load_dir(dir, &hp, &err);
            hp.dtype = dtype;
            enc_model *other = f32 ? enc_model_load_dir(dir, &hp, &err) : NULL;
            ck_assert_msg(f32 && other, "%s: %s", dir, err.message);
            static const int lengths[2] = {24, 9};
            const int B = 2, L = 24, D = hp.d_model;
            float *x = xcalloc((size_t)B * L * D, sizeof *x);
            uint64_t st = 5 + (uint64_t)compared;
            fill_random(x, (size_t)B * L * D, &st, 1.0f);
            check(&(dir_pair){e->d_name, f32, other, x, B, L, D, lengths});
            free(x);
            compared++;
            enc_model_free(f32);
            enc_model_free(other);
        }
        closedir(d);
    }
    return compared;
}

static void check_bf16_dir(const dir_pair *p)
{
    assert_bf16(p->other, p->name);
    const accuracy a = compare(p->f32, p->other, p->x, p->B, p->L, p->lengths);
    printf("dtype: %s, %s: bfloat16 against float32: min cosine %.6f, max abs %.3g, "
           "attention max abs %.3g\n",
           p->name, gemm_bf16_kernel(), a.min_cos, a.max_abs, a.attn_abs);
    ck_assert_msg(a.min_cos >= 0.999, "%s: cosine %.6f", p->name, a.min_cos);
}

/* Every directory of tests/fixtures/hf and tests/fixtures/modernbert with a
 * config.json, loaded in float32 and in bfloat16. */
START_TEST(test_fixture_directories)
{
    if (!kernel_for(_i, "fixture directories"))
        return;
    const int compared = fixture_dirs(ENC_DTYPE_BFLOAT16, check_bf16_dir);
    ck_assert_int_ge(compared, 15);

    /* a weights file of the stack alone (docs/contract.md section 2) */
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 4;
    hp.n_heads = hp.n_kv_heads = 2;
    hp.d_ff = 8;
    enc_error err = {0};
    static const char file[] = TESTS_DIR "/fixtures/safetensors/model/valid.safetensors";
    enc_model *f32 = enc_model_load(file, &hp, &err);
    hp.dtype = ENC_DTYPE_BFLOAT16;
    enc_model *bf16 = f32 ? enc_model_load(file, &hp, &err) : NULL;
    ck_assert_msg(f32 && bf16, "%s", err.message);
    assert_bf16(bf16, "a weights file");
    const int B = 1, L = 5, lengths[1] = {5};
    float x[5 * 4];
    uint64_t st = 3;
    fill_random(x, sizeof x / sizeof *x, &st, 1.0f);
    const accuracy a = compare(f32, bf16, x, B, L, lengths);
    printf("dtype: a weights file, %s: min cosine %.7f, max abs %.3g\n", gemm_bf16_kernel(),
           a.min_cos, a.max_abs);
    ck_assert_msg(a.min_cos >= 0.999 && a.max_abs > 0.0, "cosine %.7f", a.min_cos);
    enc_model_free(f32);
    enc_model_free(bf16);
    simd_set_enabled(true);
}
END_TEST

/* Attention's products in bfloat16 on each of its paths (core/kernels/attention.c):
 * the online softmax without weights and the whole rows with them, a
 * window with global tokens (the tiles, the gathered columns), the
 * strided pattern (the residue classes) and BigBird's blocks, each with
 * and without weights; bfloat16 within cosine 0.99999 of float32 on the same
 * mask, no output off by more than 0.02, no weight by more than 0.002
 * (measured: 0.999999, 0.006, 0.0008; one key/value panel read wrong in the
 * gathered columns alone gives 0.99973 and 0.07).  Seeded 2-layer model,
 * heads of 64. */
START_TEST(test_attention_paths)
{
    if (!simd_supported()) {
        printf("dtype: attention paths: no AVX-512F here: attention's bfloat16 products are not "
               "run here\n");
        return;
    }
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 256;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 512;
    hp.n_layers = 2;
    enc_error err = {0};
    enc_model *f32 = enc_model_random(&hp, 11, &err);
    hp.dtype = ENC_DTYPE_BFLOAT16;
    enc_model *bf16 = enc_model_random(&hp, 11, &err);
    ck_assert_msg(f32 && bf16, "%s", err.message);
    assert_bf16(bf16, "attention paths");
    const int B = 2, L = 300, lengths[2] = {300, 211};
    float *x = xcalloc((size_t)B * L * hp.d_model, sizeof *x);
    uint64_t st = 41;
    fill_random(x, (size_t)B * L * hp.d_model, &st, 1.0f);
    static const int global[] = {0, 7, 150};
    static const char *const names[] = {"every key", "window and global", "stride", "blocks"};
    for (int c = 0; c < 4; c++)
        for (int w = 0; w < 2; w++) {
            enc_batch in = {.x = x, .B = B, .L = L, .lengths = lengths};
            in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE;
            if (c == 1) {
                in.mask.window_left = in.mask.window_right = 40;
                in.mask.global = global;
                in.mask.n_global = 3;
            } else if (c == 2) {
                in.mask.stride = 24;
            } else if (c == 3) {
                in.mask.blocks = (enc_blocks_pattern){
                    .size = 32, .window = 1, .global = 1, .random = 2, .seed = 5};
            }
            const enc_attn_mode mode = w ? ENC_ATTN_HEADS : ENC_ATTN_NONE;
            const accuracy a = compare_batch(f32, bf16, &in, mode);
            printf("dtype: attention paths, %s, %s weights, %s: min cosine %.6f, max abs %.3g, "
                   "attention max abs %.3g\n",
                   names[c], w ? "with" : "without", gemm_bf16_kernel(), a.min_cos, a.max_abs,
                   a.attn_abs);
            ck_assert_msg(a.min_cos >= 0.99999 && a.max_abs <= 0.02,
                          "%s, weights %d: cosine "
                          "%.7f, max abs %g",
                          names[c], w, a.min_cos, a.max_abs);
            ck_assert_msg(a.attn_abs <= 0.002, "%s: weights off by %g", names[c], a.attn_abs);
        }
    free(x);
    enc_model_free(f32);
    enc_model_free(bf16);
}
END_TEST

/* A fixture tensor's floats (owned). */
static float *fixture_floats(const st_file *f, const char *name, size_t n)
{
    const st_tensor *t = st_find(f, name);
    ck_assert_msg(t && t->numel == n, "%s: %zu values", name, t ? t->numel : 0);
    float *v = xcalloc(n, sizeof *v);
    enc_error err = {0};
    ck_assert_int_eq(st_tensor_read_f32(t, v, &err), 0);
    return v;
}

/* The yardstick: PyTorch's own bfloat16 autocast against its float32 on a
 * BERT-base-sized block of attnd's seeded weights (seed 7) and the same
 * inputs (tools/fixtures/make_autocast_fixture.py).  attnd in float32 is PyTorch's
 * float32 (the same model); attnd's bfloat16 error, largest and per-token
 * cosine, is at most 1.5x PyTorch's. */
START_TEST(test_against_torch_autocast)
{
    if (!kernel_for(_i, "the autocast comparison"))
        return;
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, TESTS_DIR "/fixtures/autocast/bert_block.safetensors", &err) == 0,
                  "%s", err.message);
    enc_hparams hp;
    bert_base_block(&hp);
    const uint64_t seed = strtoull(st_metadata(&f, "seed"), NULL, 10);
    const double torch_abs = strtod(st_metadata(&f, "torch_bf16_max_abs"), NULL);
    const double torch_cos = strtod(st_metadata(&f, "torch_bf16_min_cos"), NULL);
    enc_model *f32 = enc_model_random(&hp, seed, &err);
    hp.dtype = ENC_DTYPE_BFLOAT16;
    enc_model *bf16 = enc_model_random(&hp, seed, &err);
    ck_assert_msg(f32 && bf16, "%s", err.message);
    const int B = 2, L = 24, D = 768, lengths[2] = {L, L};
    const size_t n = (size_t)B * L * D;
    float *x = fixture_floats(&f, "x", n), *y32 = fixture_floats(&f, "y_f32", n);
    float *out = xcalloc(n, sizeof *out);
    enc_workspace *ws = enc_workspace_new(f32);
    enc_batch in = {.x = x, .B = B, .L = L};
    in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE;
    enc_result res = {.out = out};
    ck_assert_msg(enc_forward(f32, ws, &in, &res, &err) == 0, "%s", err.message);
    const double same = max_abs_diff(out, y32, n);
    ck_assert_msg(same <= 1e-4, "attnd float32 against PyTorch float32: %g", same);
    assert_bf16(bf16, "the autocast comparison");
    const accuracy a = compare(f32, bf16, x, B, L, lengths);
    printf("dtype: BERT-base block against PyTorch %s's autocast: attnd bfloat16 (%s) max abs "
           "%.4g, min cosine %.7f; PyTorch's %.4g, %.7f (%.2fx, %.2fx its error)\n",
           st_metadata(&f, "torch"), gemm_bf16_kernel(), a.max_abs, a.min_cos, torch_abs,
           torch_cos, a.max_abs / torch_abs, (1.0 - a.min_cos) / (1.0 - torch_cos));
    ck_assert_msg(a.max_abs <= 1.5 * torch_abs, "max abs %g, PyTorch's %g", a.max_abs, torch_abs);
    ck_assert_msg(1.0 - a.min_cos <= 1.5 * (1.0 - torch_cos), "cosine %.7f, PyTorch's %.7f",
                  a.min_cos, torch_cos);
    enc_workspace_free(ws);
    enc_model_free(f32);
    enc_model_free(bf16);
    free(x);
    free(y32);
    free(out);
    st_close(&f);
    simd_set_enabled(true);
}
END_TEST

/* model.dtype int8 (docs/model.md, "int8"). */

/* out (B, L, D) = m's forward of x, every key (owned). */
static float *forward_out(const enc_model *m, const float *x, int B, int L, const int *lengths)
{
    const int D = enc_model_hparams(m)->d_model;
    float *out = xcalloc((size_t)B * L * D, sizeof *out);
    enc_batch in = {.x = x, .B = B, .L = L, .lengths = lengths};
    in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE;
    in.mask.causal = enc_model_hparams(m)->causal;
    enc_result res = {.out = out};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
    return out;
}

/* The smallest per-token cosine of u to v (B sequences of L tokens of D,
 * lengths[b] of them real) and the mean per-token cosine distance, over the
 * dimensions j with !skip[j] (every one when skip is NULL). */
static void token_cosines(const float *u, const float *v, int B, int L, int D, const int *lengths,
                          const char *skip, double *min_cos, double *mean_dist)
{
    double sum = 0.0;
    int n = 0;
    *min_cos = 1.0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < lengths[b]; i++, n++) {
            const float *a = u + ((size_t)b * L + i) * D, *c = v + ((size_t)b * L + i) * D;
            double ac = 0, aa = 0, cc = 0;
            for (int j = 0; j < D; j++) {
                if (skip && skip[j])
                    continue;
                ac += (double)a[j] * c[j];
                aa += (double)a[j] * a[j];
                cc += (double)c[j] * c[j];
            }
            const double cos = ac / sqrt(aa * cc);
            *min_cos = fmin(*min_cos, cos);
            sum += 1.0 - cos;
        }
    *mean_dist = sum / n;
}

static const char *const int8_kernels[] = {"portable", "avx2", "avx_vnni", "avx512_vnni",
                                           "amx_int8"};

/* The two blocks of tools/fixtures/make_int8_fixture.py: as seeded, and with
 * outlier dimensions (the input's and both LayerNorms' weights' channels of
 * metadata "outliers" times "outlier_scales"). */
static const char *const int8_fixtures[] = {"bert_block", "bert_block_outliers"};

/* m's first layer given the fixture's outlier dimensions: both LayerNorms'
 * weights there set to their factors, marked in skip (D); returns how many. */
static int apply_outliers(enc_model *m, st_file *f, char *skip)
{
    const char *dims = st_metadata(f, "outliers"), *scales = st_metadata(f, "outlier_scales");
    int n = 0;
    if (!dims)
        return 0;
    ck_assert_ptr_nonnull(scales);
    const char *sc = scales;
    for (const char *d = dims; *d;) {
        char *end;
        const long c = strtol(d, &end, 10);
        if (end == d)
            break;
        char *after;
        const float factor = strtof(sc, &after);
        sc = after;
        ck_assert(c >= 0 && c < m->hp.d_model && factor > 1.0f);
        m->layers[0].ln1_w[c] = factor;
        m->layers[0].ln2_w[c] = factor;
        skip[c] = 1;
        d = end;
        n++;
    }
    return n;
}

/* The yardstick: PyTorch's quantize_dynamic (qint8) against its float32 on
 * the BERT-base-sized block of seeded weights (seed 7) and the same inputs
 * (tools/fixtures/make_int8_fixture.py), without and with outlier dimensions.  attnd
 * in float32 is PyTorch's float32; attnd's int8, on each kernel this CPU
 * has (the same bits on each), has a mean per-token cosine distance to its
 * float32 at most PyTorch's and every token's cosine at least 0.99: over
 * all dimensions, and over all but the outliers (whose size would hide the
 * others' error).  With outliers, the others' mean distance is at most
 * 1e-4 too: a row's scale set by its outliers gives ~3e-4 there.  Where
 * the CPU multiplies bfloat16 itself, attention's products run in
 * bfloat16 (forward.c): the bounds are held there, and again with them in
 * float32 (gemm_bf16_use_dpbf16(false)), as on CPUs without it. */
START_TEST(test_int8_against_torch)
{
    char path[256];
    snprintf(path, sizeof path, "%s/fixtures/int8/%s.safetensors", TESTS_DIR, int8_fixtures[_i]);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    enc_hparams hp;
    bert_base_block(&hp);
    const uint64_t seed = strtoull(st_metadata(&f, "seed"), NULL, 10);
    enc_model *f32 = enc_model_random(&hp, seed, &err);
    /* seeded in float32, changed, then packed in int8 (model_pack) */
    enc_model *i8 = enc_model_random(&hp, seed, &err);
    ck_assert_msg(f32 && i8, "%s", err.message);
    const int B = 2, L = 24, D = 768, lengths[2] = {L, L};
    char skip[768] = {0};
    const int n_out = apply_outliers(f32, &f, skip);
    ck_assert_int_eq(apply_outliers(i8, &f, skip), n_out);
    model_pack(f32);
    i8->hp.dtype = ENC_DTYPE_INT8;
    model_pack(i8);
    ck_assert_int_eq(enc_model_dtype(i8), ENC_DTYPE_INT8);
    const size_t n = (size_t)B * L * D;
    float *x = fixture_floats(&f, "x", n), *y32 = fixture_floats(&f, "y_f32", n);
    float *y8 = fixture_floats(&f, "y_int8", n);
    float *out32 = forward_out(f32, x, B, L, lengths);
    double top = 1.0;
    for (size_t k = 0; k < n; k++)
        top = fmax(top, fabs(y32[k]));
    const double same = max_abs_diff(out32, y32, n);
    ck_assert_msg(same <= 1e-4 * top, "attnd float32 against PyTorch float32: %g", same);
    double torch_min, torch_mean, torch_min_in, torch_mean_in;
    token_cosines(y8, y32, B, L, D, lengths, NULL, &torch_min, &torch_mean);
    token_cosines(y8, y32, B, L, D, lengths, skip, &torch_min_in, &torch_mean_in);
    const int forms = gemm_bf16_native() ? 2 : 1;
    for (int form = 0; form < forms; form++) {
        gemm_bf16_use_dpbf16(form == 0);
        const char *prods = gemm_bf16_native() ? "bfloat16" : "float32";
        float *first = NULL;
        for (size_t k = 0; k < sizeof int8_kernels / sizeof *int8_kernels; k++) {
            if (!gemm_int8_limit(int8_kernels[k])) {
                printf("dtype: int8: no %s on this CPU: not run\n", int8_kernels[k]);
                continue;
            }
            float *out8 = forward_out(i8, x, B, L, lengths);
            double min_cos, mean_dist, min_in, mean_in;
            token_cosines(out8, out32, B, L, D, lengths, NULL, &min_cos, &mean_dist);
            token_cosines(out8, out32, B, L, D, lengths, skip, &min_in, &mean_in);
            printf("dtype: %s (%d outlier dimensions), int8 on %s, attention in %s, against "
                   "float32: per-token cosine min %.6f, mean distance %.3g (without the outlier "
                   "dimensions: %.6f, %.3g); PyTorch %s quantize_dynamic (%s): %.6f, %.3g (%.6f, "
                   "%.3g)\n",
                   int8_fixtures[_i], n_out, int8_kernels[k], prods, min_cos, mean_dist, min_in,
                   mean_in, st_metadata(&f, "torch"), st_metadata(&f, "engine"), torch_min,
                   torch_mean, torch_min_in, torch_mean_in);
            ck_assert_msg(min_cos >= 0.99 && min_in >= 0.99, "%s, %s: per-token cosine %.6f, %.6f",
                          int8_kernels[k], prods, min_cos, min_in);
            ck_assert_msg(mean_dist <= torch_mean && mean_in <= torch_mean_in,
                          "%s, %s: mean cosine distance %.3g, %.3g; PyTorch's %.3g, %.3g",
                          int8_kernels[k], prods, mean_dist, mean_in, torch_mean, torch_mean_in);
            if (n_out)
                ck_assert_msg(mean_in <= 1e-4, "%s, %s: mean cosine distance but the outliers %.3g",
                              int8_kernels[k], prods, mean_in);
            if (first) {
                ck_assert_msg(memcmp(out8, first, n * sizeof *out8) == 0,
                              "%s and %s give different outputs", int8_kernels[k], int8_kernels[0]);
                free(out8);
            } else {
                first = out8;
            }
        }
        free(first);
    }
    gemm_bf16_use_dpbf16(true);
    gemm_int8_limit("amx_int8");
    enc_model_free(f32);
    enc_model_free(i8);
    free(x);
    free(y32);
    free(y8);
    free(out32);
    st_close(&f);
}
END_TEST

static void check_int8_dir(const dir_pair *p)
{
    ck_assert_int_eq(enc_model_dtype(p->other), ENC_DTYPE_INT8);
    float *a = forward_out(p->f32, p->x, p->B, p->L, p->lengths),
          *b = forward_out(p->other, p->x, p->B, p->L, p->lengths);
    double min_cos, mean_dist;
    token_cosines(b, a, p->B, p->L, p->D, p->lengths, NULL, &min_cos, &mean_dist);
    printf("dtype: %s, int8 on %s against float32: per-token cosine min %.6f, mean "
           "distance %.3g\n",
           p->name, gemm_int8_kernel(), min_cos, mean_dist);
    ck_assert_msg(min_cos >= 0.99, "%s: cosine %.6f", p->name, min_cos);
    free(a);
    free(b);
}

/* Every directory of tests/fixtures/hf and tests/fixtures/modernbert
 * (GeGLU and RoPE: the gating and the rotation in passes of their own),
 * loaded in float32 and in int8: every token's cosine at least 0.99. */
START_TEST(test_int8_fixture_directories)
{
    const int compared = fixture_dirs(ENC_DTYPE_INT8, check_int8_dir);
    ck_assert_int_ge(compared, 15);
}
END_TEST

/* Retrieval (docs/model.md, "int8"): tests/fixtures/hf/bert_text, its
 * tokenizer and its sentence-transformers pooling (mean, normalized),
 * embeds a corpus of 48 sentences and 10 queries made here from a seed, in
 * float32 and in int8; each query's 10 nearest sentences by cosine in int8
 * hold at least 9 of float32's 10 (recall@10 >= 0.9), every query. */
enum { RET_DOCS = 48, RET_QUERIES = 10, RET_K = 10 };

static const char *const ret_subjects[] = {"the old man", "a young girl", "my brother",
                                           "the teacher", "our neighbour", "the doctor",
                                           "a small dog", "the farmer"};
static const char *const ret_verbs[] = {"reads", "paints", "sells", "finds", "carries", "watches",
                                        "builds", "cleans"};
static const char *const ret_objects[] = {"a red book", "the wooden table", "some fresh bread",
                                          "an old map", "the blue car", "a heavy box",
                                          "the garden gate", "a letter"};
static const char *const ret_places[] = {"in the morning", "near the river", "at the market",
                                         "after dinner", "in the city", "on the hill",
                                         "before the storm", "at school"};

/* Sentence i of a set drawn from seed: one of each list. */
static void ret_sentence(char *buf, size_t cap, uint64_t *st)
{
    int k[4];
    for (int j = 0; j < 4; j++) {
        *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
        k[j] = (int)((*st >> 33) % 8);
    }
    snprintf(buf, cap, "%s %s %s %s.", ret_subjects[k[0]], ret_verbs[k[1]], ret_objects[k[2]],
             ret_places[k[3]]);
}

/* n texts through m with tokenizer t: mean-pooled, normalized (n, D). */
static float *ret_embed(const enc_model *m, const tok_tokenizer *t, char texts[][128], int n)
{
    const int D = enc_model_hparams(m)->d_model;
    tok_encoding e = {0};
    enc_error err = {0};
    int L = 0, *lengths = xcalloc((size_t)n, sizeof *lengths);
    int32_t *ids = NULL;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            ck_assert_msg(tok_encode(t, texts[i], strlen(texts[i]), NULL, 0, true, 64, &e, NULL,
                                     &err) == 0,
                          "%s", err.message);
            if (pass == 0) {
                lengths[i] = (int)e.n;
                L = L > (int)e.n ? L : (int)e.n;
                continue;
            }
            if (!ids)
                ids = xcalloc((size_t)n * L, sizeof *ids);
            memcpy(ids + (size_t)i * L, e.ids, e.n * sizeof *ids);
        }
    tok_encoding_free(&e);
    const enc_ids in_ids = {.input_ids = ids};
    enc_batch in = {.ids = &in_ids, .B = n, .L = L, .lengths = lengths};
    in.mask.causal = enc_model_hparams(m)->causal;
    float *x = xcalloc((size_t)n * L * D, sizeof *x), *v = xcalloc((size_t)n * D, sizeof *v);
    enc_workspace *ws = enc_workspace_new(m);
    enc_result res = {.out = x, .attn_mode = ENC_ATTN_NONE};
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
    enc_workspace_free(ws);
    enc_pool(x, n, L, D, lengths, ENC_POOL_MEAN, true, v);
    free(x);
    free(ids);
    free(lengths);
    return v;
}

/* The RET_K sentences nearest query q (by cosine: the vectors are unit). */
static void ret_top(const float *docs, const float *q, int D, int top[RET_K])
{
    double sim[RET_DOCS];
    bool taken[RET_DOCS] = {false};
    for (int d = 0; d < RET_DOCS; d++) {
        sim[d] = 0;
        for (int j = 0; j < D; j++)
            sim[d] += (double)docs[(size_t)d * D + j] * q[j];
    }
    for (int k = 0; k < RET_K; k++) {
        int best = -1;
        for (int d = 0; d < RET_DOCS; d++)
            if (!taken[d] && (best < 0 || sim[d] > sim[best]))
                best = d;
        taken[best] = true;
        top[k] = best;
    }
}

START_TEST(test_int8_retrieval)
{
    const char *dir = TESTS_DIR "/fixtures/hf/bert_text";
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s", err.message);
    enc_hparams hp = c.hp;
    hp.dtype = ENC_DTYPE_FLOAT32;
    enc_model *f32 = enc_model_load_dir(dir, &hp, &err);
    hp.dtype = ENC_DTYPE_INT8;
    enc_model *i8 = f32 ? enc_model_load_dir(dir, &hp, &err) : NULL;
    ck_assert_msg(f32 && i8, "%s", err.message);
    ck_assert_int_eq(enc_model_dtype(i8), ENC_DTYPE_INT8);
    tok_tokenizer *t = tok_load(TESTS_DIR "/fixtures/hf/bert_text/tokenizer.json", &err);
    ck_assert_msg(t, "%s", err.message);
    static char docs[RET_DOCS][128], queries[RET_QUERIES][128];
    uint64_t st = 2024;
    for (int i = 0; i < RET_DOCS; i++)
        ret_sentence(docs[i], sizeof docs[i], &st);
    for (int i = 0; i < RET_QUERIES; i++)
        ret_sentence(queries[i], sizeof queries[i], &st);
    const int D = hp.d_model;
    float *dv[2] = {ret_embed(f32, t, docs, RET_DOCS), ret_embed(i8, t, docs, RET_DOCS)};
    float *qv[2] = {ret_embed(f32, t, queries, RET_QUERIES),
                    ret_embed(i8, t, queries, RET_QUERIES)};
    double sum = 0, worst = 1;
    for (int q = 0; q < RET_QUERIES; q++) {
        int top[2][RET_K];
        for (int k = 0; k < 2; k++)
            ret_top(dv[k], qv[k] + (size_t)q * D, D, top[k]);
        int hit = 0;
        for (int a = 0; a < RET_K; a++)
            for (int b = 0; b < RET_K; b++)
                hit += top[1][a] == top[0][b];
        const double recall = (double)hit / RET_K;
        sum += recall;
        worst = fmin(worst, recall);
        ck_assert_msg(recall >= 0.9, "query %d \"%s\": recall@%d %.2f", q, queries[q], RET_K,
                      recall);
    }
    printf("dtype: bert_text retrieval, %d sentences, %d queries, int8 on %s against float32: "
           "recall@%d mean %.3f, min %.2f\n",
           RET_DOCS, RET_QUERIES, gemm_int8_kernel(), RET_K, sum / RET_QUERIES, worst);
    for (int k = 0; k < 2; k++) {
        free(dv[k]);
        free(qv[k]);
    }
    tok_free(t);
    enc_model_free(f32);
    enc_model_free(i8);
}
END_TEST

Suite *dtype_suite(void)
{
    Suite *s = timed_suite("dtype");
    TCase *tc = timed_case(s, "bfloat16", 120);
    tcase_add_loop_test(tc, test_bert_base_block, 0, 2);
    tcase_add_loop_test(tc, test_fixture_directories, 0, 2);
    tcase_add_loop_test(tc, test_against_torch_autocast, 0, 2);
    tcase_add_test(tc, test_attention_paths);
    tc = timed_case(s, "int8", 120);
    tcase_add_loop_test(tc, test_int8_against_torch, 0, 2);
    tcase_add_test(tc, test_int8_fixture_directories);
    tcase_add_test(tc, test_int8_retrieval);
    return s;
}
