/* bench_core.c - times the attnd core and the OpenBLAS sgemm it is built on.
 *
 *   bench_core info                      OpenBLAS build and core name
 *   bench_core roofline [options]        cblas_sgemm N x N x N: GFLOP/s
 *   bench_core core --batch B --len L [options]
 *                                        enc_forward, per-head attention
 *                                        weights unless --attention says
 *                                        otherwise: best and median ms,
 *                                        GFLOP/s, peak resident memory
 *   bench_core peak [--threads T] [--dtype D]
 *                                        the CPU's float32 FMA peak: T
 *                                        threads of independent 512-bit
 *                                        (or 256-bit) vfmadd231ps, GFLOP/s;
 *                                        --dtype int8: vpdpbusd's,
 *                                        bfloat16: vdpbf16ps's (AVX-512)
 *   bench_core linears --batch B --len L [options]
 *                                        the block's four Linears alone, on
 *                                        the core's packed kernel and team
 *                                        (core/kernels/gemm.h, core/model/team.h), split
 *                                        as the forward splits them: the
 *                                        forward's ceiling, GFLOP/s
 * options: --threads T (2): enc_set_threads(T) for "core", OpenBLAS threads
 *          for "roofline", threads for "peak" and "linears";  --repeat R (20)  --warmup W (3)  --n
 * N (2048)
 *          --d-model D (768)  --n-heads H (12)  --d-ff F (3072)
 *          --activation A (gelu)  --seed S (0)
 *          --position none|rope|alibi|relative (none): RoPE (neox, theta
 *          10000, every dimension), ALiBi or MPNet's relative position bias
 *          (32 buckets) inside attention
 *          --block bert|modernbert (bert): the block's kind.  modernbert:
 *          ModernBERT-base (D 768, H 12, F 1152 exact-GELU GeGLU, 22
 *          layers, pre-norm, layer 0's attention norm the identity, norms
 *          without bias and a final one, no Linear biases, RoPE 160000 on
 *          global layers and 10000 on local ones, every 3rd layer global,
 *          local window 64 each side); the options after it change it
 *          --n-layers N (1; modernbert 22)  --local-window W (modernbert 64)
 *          --ffn mlp|geglu|swiglu (mlp): also for "linears" (linear1 then
 *          has 2F rows)
 *          --attention heads|mean|none (heads): the last layer's weights
 *          --mask SPEC: "core" with a mask, options joined by ',':
 *          window=W  global=N (N positions spread evenly)  causal
 *          strided=S  fixed=L:C  blocks=B:W:G:R (seed 0)  docs=N (an
 *          explicit boolean attn mask: N equal documents, block diagonal)
 *          (none); "core" then also prints the scores computed
 *          --name KEY: "core"'s RESULT keys are KEY_best_ms ... instead of
 *          core_BxL_best_ms ...
 *          --kernels avx512|openblas (avx512 where the CPU has it): "core"
 *          with the AVX-512 forms off (simd_set_enabled(false)), as a CPU
 *          without AVX-512F runs: float32 Linears on OpenBLAS, bfloat16
 *          ones on OpenBLAS over widened panels
 *          --int8-kernel NAME: int8 on that kernel or a slower one (the
 *          fastest this CPU has by default: gemm_int8_kernel())
 *          --amx on|off (on): off runs what a CPU with AVX512_VNNI and
 *          AVX512_BF16 but without AMX runs (int8 on avx512_vnni, bfloat16
 *          on avx512_bf16)
 *
 * Each mode prints one human-readable line, then one "RESULT key=value ..."
 * line for bench/run.sh.  Timings are wall-clock (CLOCK_MONOTONIC) around each
 * call, after warm-up calls that size the workspace and wake the threads.
 * The model is one post-norm layer built from a seed (the values do not
 * change the work done); the input is seeded N(0, 1).
 */
#include "bench_util.h"
#include "encoder.h"

#include "kernels/gemm.h"
#include "kernels/gemm_int8.h"
#include "kernels/ops.h"
#include "kernels/simd.h"
#include "model/team.h"

#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the command line asks for. */
typedef struct options {
    const char *mode;
    int batch, len; /* B, L for "core" */
    int threads;
    int repeat, warmup;
    int n; /* sgemm size for "roofline" */
    enc_hparams hp;
    unsigned long seed;
    enc_attn_mode attn;
    const char *name; /* RESULT key prefix for "core", or NULL: core_BxL[_mode] */
    const char *mask; /* --mask SPEC, or NULL */
    const char *dtype; /* float32, bfloat16, bfloat16-wide (the widening kernel) or int8 */
} options;

static void usage(void)
{
    fputs("usage: bench_core info\n"
          "       bench_core roofline [--n N] [--threads T] [--repeat R] [--warmup W]\n"
          "       bench_core core --batch B --len L [--threads T] [--repeat R] [--warmup W]\n"
          "                       [--d-model D] [--n-heads H] [--d-ff F] [--activation A] "
          "[--position P]"
          " [--block bert|modernbert] [--n-layers N] [--local-window W] [--ffn K]"
          " [--seed S]\n"
          "                       [--attention heads|mean|none] [--mask SPEC] [--name KEY]\n"
          "                       [--dtype float32|bfloat16|int8] [--kernels avx512|openblas]\n"
          "       bench_core peak [--threads T] [--repeat R] [--dtype float32|bfloat16|int8]\n"
          "       bench_core linears --batch B --len L [--threads T] [--repeat R] [--warmup W]\n"
          "                       [--d-model D] [--d-ff F] [--ffn K] [--block B]\n"
          "                       [--dtype float32|bfloat16|bfloat16-wide|int8]\n"
          "       (core, linears: [--int8-kernel "
          "portable|avx2|avx_vnni|avx512_vnni|amx_int8] [--amx on|off])\n",
          stderr);
    exit(2);
}

static options parse_args(int argc, char **argv)
{
    options o = {.threads = 2,
                 .repeat = 20,
                 .warmup = 3,
                 .n = 2048,
                 .attn = ENC_ATTN_HEADS,
                 .dtype = "float32"};
    enc_hparams_default(&o.hp);
    o.hp.d_model = 768;
    o.hp.n_heads = o.hp.n_kv_heads = 12;
    o.hp.d_ff = 3072;
    o.hp.activation = ENC_ACT_GELU;
    if (argc < 2)
        usage();
    o.mode = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(f, "--batch"))
            o.batch = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--len"))
            o.len = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--threads"))
            o.threads = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--repeat"))
            o.repeat = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--warmup"))
            o.warmup = bench_parse_int("bench_core", f, v, 0);
        else if (!strcmp(f, "--n"))
            o.n = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--d-model"))
            o.hp.d_model = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--n-heads"))
            o.hp.n_heads = o.hp.n_kv_heads = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--d-ff"))
            o.hp.d_ff = bench_parse_int("bench_core", f, v, 1);
        else if (!strcmp(f, "--seed"))
            o.seed = (unsigned long)bench_parse_int("bench_core", f, v, 0);
        else if (!strcmp(f, "--attention")) {
            if (!strcmp(v, "heads") || !strcmp(v, "mean") || !strcmp(v, "none"))
                o.attn = v[0] == 'h' ? ENC_ATTN_HEADS : v[0] == 'm' ? ENC_ATTN_MEAN : ENC_ATTN_NONE;
            else
                usage();
        } else if (!strcmp(f, "--name")) {
            o.name = v;
        } else if (!strcmp(f, "--mask")) {
            o.mask = v;
        } else if (!strcmp(f, "--position")) {
            o.hp.rel_buckets = !strcmp(v, "relative") ? ENC_REL_BUCKETS : 0;
            if (enc_position_parse(o.hp.rel_buckets ? "none" : v, &o.hp.position) < 0) {
                fprintf(stderr, "bench_core: unknown position '%s' (none, rope, alibi, relative)\n",
                        v);
                exit(2);
            }
        } else if (!strcmp(f, "--block")) {
            if (!strcmp(v, "modernbert")) {
                enc_hparams *hp = &o.hp;
                hp->d_model = 768;
                hp->n_heads = hp->n_kv_heads = 12;
                hp->d_ff = 1152;
                hp->n_layers = 22;
                hp->activation = ENC_ACT_GELU;
                hp->ffn = ENC_FFN_GEGLU;
                hp->norm_first = hp->first_norm_identity = hp->final_norm = true;
                hp->norm = ENC_NORM_LAYERNORM_NOBIAS;
                hp->bias = false;
                hp->position = ENC_POS_ROPE;
                hp->rope_theta = 160000.0;
                hp->rope_theta_local = 10000.0;
                hp->global_every = 3;
                hp->local_window = 64;
            } else if (strcmp(v, "bert") != 0) {
                usage();
            }
        } else if (!strcmp(f, "--n-layers")) {
            o.hp.n_layers = bench_parse_int("bench_core", f, v, 1);
        } else if (!strcmp(f, "--local-window")) {
            o.hp.local_window = bench_parse_int("bench_core", f, v, 0);
        } else if (!strcmp(f, "--ffn")) {
            if (enc_ffn_parse(v, &o.hp.ffn) < 0) {
                fprintf(stderr, "bench_core: unknown ffn '%s' (mlp, geglu, swiglu)\n", v);
                exit(2);
            }
        } else if (!strcmp(f, "--dtype")) {
            if (strcmp(v, "float32") != 0 && strcmp(v, "bfloat16") != 0 &&
                strcmp(v, "bfloat16-wide") != 0 && strcmp(v, "int8") != 0) {
                fprintf(stderr, "bench_core: --dtype float32, bfloat16, bfloat16-wide or int8\n");
                exit(2);
            }
            o.dtype = v;
            o.hp.dtype = strcmp(v, "float32") == 0 ? ENC_DTYPE_FLOAT32
                         : strcmp(v, "int8") == 0  ? ENC_DTYPE_INT8
                                                   : ENC_DTYPE_BFLOAT16;
            gemm_bf16_use_dpbf16(strcmp(v, "bfloat16-wide") != 0);
        } else if (!strcmp(f, "--int8-kernel")) {
            if (!gemm_int8_limit(v)) {
                fprintf(stderr, "bench_core: --int8-kernel '%s': not on this CPU\n", v);
                exit(2);
            }
        } else if (!strcmp(f, "--amx")) {
            if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
                fprintf(stderr, "bench_core: --amx on or off\n");
                exit(2);
            }
            if (!strcmp(v, "off")) {
                gemm_bf16_use_amx(false);
                (void)gemm_int8_limit("avx512_vnni"); /* false: slower already */
            }
        } else if (!strcmp(f, "--kernels")) {
            if (strcmp(v, "avx512") != 0 && strcmp(v, "openblas") != 0) {
                fprintf(stderr, "bench_core: --kernels avx512 or openblas\n");
                exit(2);
            }
            simd_set_enabled(strcmp(v, "avx512") == 0);
        } else if (!strcmp(f, "--activation")) {
            if (enc_activation_parse(v, &o.hp.activation) < 0) {
                fprintf(stderr, "bench_core: unknown activation '%s'\n", v);
                exit(2);
            }
        } else
            usage();
    }
    return o;
}

/* Allocates n floats or exits: a benchmark has nothing to fall back on. */
static float *alloc_floats(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_core: out of memory (%zu floats)\n", n);
        exit(1);
    }
    return p;
}

static double *alloc_doubles(size_t n)
{
    double *p = calloc(n, sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_core: out of memory (%zu doubles)\n", n);
        exit(1);
    }
    return p;
}

/* This process's peak resident memory in MiB (VmHWM), or -1. */
static double peak_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

/* Sorts ms (n) in place and returns its best (smallest) and median. */
static void summarise(double *ms, int n, double *best, double *median)
{
    bench_sort(ms, (size_t)n);
    *best = ms[0];
    *median = bench_percentile(ms, (size_t)n, 50);
}

static int run_info(void)
{
    printf("OpenBLAS build: %s; core: %s; %d processors\n", openblas_get_config(),
           openblas_get_corename(), openblas_get_num_procs());
    printf("RESULT openblas_corename=%s\n", openblas_get_corename());
    return 0;
}

/* C (n, n) = A (n, n) B (n, n), row-major, on o->threads OpenBLAS threads. */
static int run_roofline(const options *o)
{
    const size_t n = (size_t)o->n;
    float *a = alloc_floats(n * n), *b = alloc_floats(n * n), *c = alloc_floats(n * n);
    bench_rng r = bench_rng_new(1);
    bench_fill_normal(&r, a, n * n);
    bench_fill_normal(&r, b, n * n);
    openblas_set_num_threads(o->threads);

    double *ms = alloc_doubles((size_t)o->repeat);
    for (int i = -o->warmup; i < o->repeat; i++) {
        double t0 = bench_now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, o->n, o->n, o->n, 1.0f, a, o->n, b,
                    o->n, 0.0f, c, o->n);
        if (i >= 0)
            ms[i] = bench_now_ms() - t0;
    }
    double best, median;
    summarise(ms, o->repeat, &best, &median);
    const double flops = 2.0 * (double)n * (double)n * (double)n;
    const double gflops = flops / (best * 1e6);
    printf("cblas_sgemm %dx%dx%d, %d OpenBLAS threads, best of %d: %.2f ms, %.1f GFLOP/s "
           "(median %.2f ms)\n",
           o->n, o->n, o->n, o->threads, o->repeat, best, gflops, median);
    printf("RESULT roofline_gflops=%.2f roofline_best_ms=%.3f\n", gflops, best);
    free(ms);
    free(a);
    free(b);
    free(c);
    return 0;
}

/* The mask of --mask SPEC for sequences of L tokens; global positions go
 * to *global (room for L), an attn mask to *attn (allocated).  Exits on a
 * bad SPEC. */
static void parse_mask(const char *spec, int L, enc_mask *mk, int *global, uint8_t **attn)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int a = 0, b = 0, c = 0, d = 0;
        if (sscanf(t, "window=%d", &a) == 1) {
            mk->window_left = mk->window_right = a;
        } else if (sscanf(t, "global=%d", &a) == 1 && a > 0 && a <= L) {
            for (int k = 0; k < a; k++)
                global[k] = (int)((long long)k * L / a);
            mk->global = global;
            mk->n_global = (size_t)a;
        } else if (!strcmp(t, "causal")) {
            mk->causal = true;
        } else if (sscanf(t, "strided=%d", &a) == 1) {
            mk->stride = a;
        } else if (sscanf(t, "fixed=%d:%d", &a, &b) == 2) {
            mk->fixed_block = a;
            mk->fixed_summary = b;
        } else if (sscanf(t, "blocks=%d:%d:%d:%d", &a, &b, &c, &d) == 4) {
            mk->blocks = (enc_blocks_pattern){.size = a, .window = b, .global = c, .random = d};
        } else if (sscanf(t, "docs=%d", &a) == 1 && a > 0 && a <= L) {
            *attn = calloc((size_t)L * L, 1);
            if (!*attn) {
                fputs("bench_core: out of memory for the attn mask\n", stderr);
                exit(1);
            }
            for (int i = 0; i < L; i++)
                for (int j = 0; j < L; j++)
                    (*attn)[(size_t)i * L + j] = (long long)i * a / L != (long long)j * a / L;
            mk->attn_kind = ENC_MASK_BOOL;
            mk->attn_bool = *attn;
        } else {
            fprintf(stderr, "bench_core: bad --mask option '%s'\n", t);
            exit(2);
        }
    }
}

/* enc_forward on a (B, L, D) input, with o->attn attention weights. */
static int run_core(const options *o)
{
    if (!o->batch || !o->len)
        usage();
    const size_t B = (size_t)o->batch, L = (size_t)o->len, D = (size_t)o->hp.d_model,
                 H = (size_t)o->hp.n_heads;
    enc_error err = {0};
    /* Threads first: the core gives a workspace its team when it is made. */
    enc_set_threads(o->threads);
    enc_model *m = enc_model_random(&o->hp, o->seed, &err);
    enc_workspace *ws = m ? enc_workspace_new(m) : NULL;
    if (!ws) {
        fprintf(stderr, "bench_core: cannot build the model: %s\n",
                m ? "out of memory for the workspace" : err.message);
        enc_model_free(m);
        return 1;
    }

    float *x = alloc_floats(B * L * D);   /* (B, L, D) */
    float *out = alloc_floats(B * L * D); /* (B, L, D) */
    const size_t n_attn = o->attn == ENC_ATTN_HEADS  ? B * H * L * L
                          : o->attn == ENC_ATTN_MEAN ? B * L * L
                                                     : 1;
    float *attn = alloc_floats(n_attn); /* (B, H, L, L), (B, L, L) or none */
    bench_rng r = bench_rng_new(2);
    bench_fill_normal(&r, x, B * L * D);
    float **layers = calloc((size_t)o->hp.n_layers, sizeof *layers); /* the last layer's */
    if (!layers) {
        fprintf(stderr, "bench_core: out of memory\n");
        return 1;
    }
    layers[o->hp.n_layers - 1] = attn;
    enc_batch in = {.x = x, .B = o->batch, .L = o->len};
    in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE;
    int *global = calloc(L, sizeof *global);
    uint8_t *attn_mask = NULL;
    if (o->mask)
        parse_mask(o->mask, o->len, &in.mask, global, &attn_mask);
    enc_result res = {.out = out, .attn_mode = o->attn, .attn = layers};

    /* The allowed pairs, for the ideal a pattern is held to (not timed). */
    unsigned long long nnz = (unsigned long long)B * L * L;
    if (o->mask) {
        enc_blockmask *bm = enc_blockmask_new(&in, true, &err);
        if (!bm) {
            fprintf(stderr, "bench_core: bad mask: %s\n", err.message);
            return 1;
        }
        nnz = 0;
        for (int b = 0; b < o->batch; b++)
            nnz += enc_blockmask_nnz(bm, b);
        enc_blockmask_free(bm);
    }

    double *ms = alloc_doubles((size_t)o->repeat);
    int rc = 0;
    for (int i = -o->warmup; i < o->repeat && rc == 0; i++) {
        double t0 = bench_now_ms();
        rc = enc_forward(m, ws, &in, &res, &err);
        if (i >= 0)
            ms[i] = bench_now_ms() - t0;
    }
    if (rc < 0) {
        fprintf(stderr, "bench_core: enc_forward failed: %s\n", err.message);
    } else {
        double best, median;
        summarise(ms, o->repeat, &best, &median);
        const double flops = enc_forward_flops(&o->hp, o->batch, o->len);
        const double gflops = flops / (best * 1e6);
        static const char *const mode_name[] = {"none", "heads", "mean"};
        const char *mode = o->attn == ENC_ATTN_HEADS  ? mode_name[1]
                           : o->attn == ENC_ATTN_MEAN ? mode_name[2]
                                                      : mode_name[0];
        char key[48];
        snprintf(key, sizeof key, "core_%dx%d%s%s", o->batch, o->len,
                 o->attn == ENC_ATTN_HEADS ? "" : "_", o->attn == ENC_ATTN_HEADS ? "" : mode);
        if (o->name)
            snprintf(key, sizeof key, "%s", o->name);
        const double rss = peak_rss_mib();
        const enc_dtype mdt = enc_model_dtype(m);
        printf("enc_forward B=%d L=%d (D=%d H=%d F=%d %s %s, %d layers, attention %s, Linears "
               "in %s on %s), %d threads, "
               "best of %d: %.3f ms, median %.3f ms, %.1f GFLOP/s (%.2f GFLOP/forward, "
               "workspace %.1f MiB, peak resident %.0f MiB)\n",
               o->batch, o->len, o->hp.d_model, o->hp.n_heads, o->hp.d_ff,
               enc_activation_name(o->hp.activation), enc_ffn_name(o->hp.ffn), o->hp.n_layers, mode,
               enc_dtype_name(mdt),
               mdt == ENC_DTYPE_BFLOAT16 ? gemm_bf16_kernel()
               : mdt == ENC_DTYPE_INT8   ? gemm_int8_kernel()
               : simd_enabled()          ? "avx512f"
                                         : "openblas",
               o->threads,
               o->repeat, best, median, gflops, flops / 1e9,
               (double)enc_workspace_bytes(ws) / (1 << 20), rss);
        if (o->mask)
            printf("mask %s: %llu allowed pairs (%.2f%% of B L^2), %llu scores computed (%.2f%% "
                   "of H L^2 a sequence)\n",
                   o->mask, nnz, 100.0 * (double)nnz / ((double)B * L * L),
                   (unsigned long long)res.scores,
                   100.0 * (double)res.scores / ((double)B * H * L * L));
        printf("RESULT %s_best_ms=%.3f %s_median_ms=%.3f %s_gflops=%.2f %s_peak_rss_mib=%.0f "
               "%s_scores=%llu %s_nnz=%llu\n",
               key, best, key, median, key, gflops, key, rss, key, (unsigned long long)res.scores,
               key, nnz);
    }
    free(ms);
    free(x);
    free(out);
    free(attn);
    free(layers);
    free(global);
    free(attn_mask);
    enc_workspace_free(ws);
    enc_model_free(m);
    return rc < 0 ? 1 : 0;
}

/* ---- peak: the FMA ceiling ------------------------------------------------ */

#define PEAK_STEPS 50000000L /* loop trips per thread: 12 FMAs each */

typedef struct peak_arg {
    pthread_barrier_t *start;
    const char *dtype;
    double gflops; /* this thread's rate */
    float live;    /* the chains' sum, so that they are computed */
} peak_arg;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 12 independent chains (more than the latency times the pipes), so the
 * loop runs at the units' throughput: a_i = op(a_i, b, c); distinct
 * starting values keep the compiler from merging them, and SUM12's sum
 * (kept by the caller) keeps them live. */
#define CHAINS12(T, set1, op, b, c)                                                                \
    T a0 = set1(1), a1 = set1(2), a2 = set1(3), a3 = set1(4), a4 = set1(5), a5 = set1(6);          \
    T a6 = set1(7), a7 = set1(8), a8 = set1(9), a9 = set1(10), a10 = set1(11), a11 = set1(12);     \
    for (long k = 0; k < PEAK_STEPS; k++) {                                                        \
        a0 = op(a0, b, c), a1 = op(a1, b, c), a2 = op(a2, b, c), a3 = op(a3, b, c);                \
        a4 = op(a4, b, c), a5 = op(a5, b, c), a6 = op(a6, b, c), a7 = op(a7, b, c);                \
        a8 = op(a8, b, c), a9 = op(a9, b, c), a10 = op(a10, b, c), a11 = op(a11, b, c);            \
    }
#define SUM12(add)                                                                                 \
    add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))),                         \
        add(add(a8, a9), add(a10, a11)))

__attribute__((target("avx512f"))) static double fma_loop_512(float *live)
{
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    CHAINS12(__m512, _mm512_set1_ps, _mm512_fmadd_ps, b, c)
    *live = _mm512_reduce_add_ps(SUM12(_mm512_add_ps));
    return 12.0 * 16 * 2 * PEAK_STEPS;
}

/* The 8 lanes of v added. */
__attribute__((target("avx2,fma"))) static float sum256(__m256 v)
{
    float l[8], s = 0;
    _mm256_storeu_ps(l, v);
    for (int i = 0; i < 8; i++)
        s += l[i];
    return s;
}

__attribute__((target("avx2,fma"))) static double fma_loop_256(float *live)
{
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    CHAINS12(__m256, _mm256_set1_ps, _mm256_fmadd_ps, b, c)
    *live = sum256(SUM12(_mm256_add_ps));
    return 12.0 * 8 * 2 * PEAK_STEPS;
}

/* The int8 and bfloat16 dot products' peaks: vpdpbusd (64 u8 x s8
 * multiply-adds into 16 int32, as the int8 kernel's) and vdpbf16ps (32
 * bfloat16 multiply-adds into 16 float32). Each multiply-add counts 2
 * operations, as the Linears' GFLOP/s count them. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double vnni_loop_512(float *live)
{
    const __m512i b = _mm512_set1_epi8(1), c = _mm512_set1_epi8(-1);
    CHAINS12(__m512i, _mm512_set1_epi32, _mm512_dpbusd_epi32, b, c)
    *live = (float)_mm512_reduce_add_epi32(SUM12(_mm512_add_epi32));
    return 12.0 * 64 * 2 * PEAK_STEPS;
}

__attribute__((target("avx512f,avx512bf16"))) static double bf16_loop_512(float *live)
{
    const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80), c = (__m512bh)_mm512_set1_epi16(0x3380);
    CHAINS12(__m512, _mm512_set1_ps, _mm512_dpbf16_ps, b, c)
    *live = _mm512_reduce_add_ps(SUM12(_mm512_add_ps));
    return 12.0 * 32 * 2 * PEAK_STEPS;
}

/* The widest loop for dtype this CPU has (float32: FMA; int8: vpdpbusd;
 * bfloat16: vdpbf16ps), or NULL. */
static double (*peak_loop(const char *dtype, const char **name))(float *)
{
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    if (!strcmp(dtype, "int8")) {
        *name = "512-bit vpdpbusd";
        return avx512 && __builtin_cpu_supports("avx512vnni") ? vnni_loop_512 : NULL;
    }
    if (!strncmp(dtype, "bfloat16", 8)) {
        *name = "512-bit vdpbf16ps";
        return avx512 && __builtin_cpu_supports("avx512bf16") ? bf16_loop_512 : NULL;
    }
    *name = "512-bit vfmadd231ps";
    if (avx512)
        return fma_loop_512;
    *name = "256-bit vfmadd231ps";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return fma_loop_256;
    return NULL;
}
#else
static double (*peak_loop(const char *dtype, const char **name))(float *)
{
    (void)dtype;
    *name = "none";
    return NULL;
}
#endif

static void *peak_thread(void *p)
{
    peak_arg *a = p;
    const char *name;
    double (*loop)(float *) = peak_loop(a->dtype, &name);
    pthread_barrier_wait(a->start);
    const double t0 = bench_now_ms();
    const double flops = loop(&a->live);
    a->gflops = flops / ((bench_now_ms() - t0) * 1e6);
    return NULL;
}

/* T threads run the FMA loop at once; the peak is the sum of their rates,
 * best of R rounds. */
static int run_peak(const options *o)
{
    const char *name;
    if (!peak_loop(o->dtype, &name)) {
        printf("SKIP: no %s on this CPU\n", !strcmp(o->dtype, "int8") ? "AVX512_VNNI"
                                            : !strncmp(o->dtype, "bfloat16", 8)
                                                ? "AVX512_BF16"
                                                : "AVX2/FMA or AVX-512");
        return 3;
    }
    const int n = o->threads;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    peak_arg *args = calloc((size_t)n, sizeof *args);
    pthread_barrier_t start;
    if (!th || !args || pthread_barrier_init(&start, NULL, (unsigned)n) != 0) {
        fprintf(stderr, "bench_core: cannot start %d threads\n", n);
        return 1;
    }
    double best = 0, worst_thread = 0;
    for (int r = 0; r < o->repeat; r++) {
        for (int i = 0; i < n; i++) {
            args[i] = (peak_arg){.start = &start, .dtype = o->dtype};
            if (pthread_create(&th[i], NULL, peak_thread, &args[i]) != 0) {
                /* the threads started wait at the barrier for ever: leave */
                fprintf(stderr, "bench_core: cannot start %d threads\n", n);
                exit(1);
            }
        }
        double sum = 0, lo = 1e30;
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            sum += args[i].gflops;
            lo = args[i].gflops < lo ? args[i].gflops : lo;
        }
        if (sum > best) {
            best = sum;
            worst_thread = lo;
        }
    }
    pthread_barrier_destroy(&start);
    const bool f32 = !strcmp(o->dtype, "float32");
    printf("%s peak, %d threads of independent %s, best of %d: %.1f %s/s "
           "(slowest thread %.1f)\n",
           f32 ? "float32 FMA" : o->dtype, n, name, o->repeat, best,
           strcmp(o->dtype, "int8") ? "GFLOP" : "GOP", worst_thread);
    if (f32)
        printf("RESULT peak_gflops=%.2f\n", best);
    else
        printf("RESULT peak_%s_gflops=%.2f\n", strncmp(o->dtype, "bfloat16", 8) ? "int8" : "bf16",
               best);
    free(th);
    free(args);
    return 0;
}

/* ---- linears: the forward's ceiling -------------------------------------- */

/* One Linear of the block as the forward runs it: out (M rows ldo apart,
 * N) = in (M rows ldi apart, K) . w^T + b - on the packed kernel (pk: float32
 * or bfloat16 with AVX-512, int8 on any CPU), on OpenBLAS over widened
 * panels (bf: bfloat16 without AVX-512), or on cblas_sgemm (w: float32
 * without AVX-512, in slices of 16 columns). */
typedef struct linear_run {
    const gemm_packed *pk, *bf;
    const float *w;
    int N, K;
    const float *in, *b;
    float *out;
    int M, ldi, ldo;
    float *scratch; /* (threads) gemm_scratch_bytes() each */
    void *rows;     /* int8: the input quantised once (gemm_int8_quantise), or NULL */
    team_deal deal; /* int8: the rows, then the grid's items; packed: the items; dealt as
                       the forward deals them */
    gemm_grid grid; /* packed: the items (gemm_grid_of) */
} linear_run;

/* int8: the input's rows quantised once for the team, dealt by rows, as
 * the forward's phase_quantise does before the Linear. */
static void quantise_phase(void *arg, int tid, int n)
{
    linear_run *l = arg;
    int r0, r1;
    (void)tid, (void)n;
    while (team_deal_take(&l->deal, &r0, &r1))
        gemm_int8_quantise(l->rows, l->in, l->ldi, l->K, r0, r1);
}

static void linear_phase(void *arg, int tid, int n)
{
    linear_run *l = arg;
    float *scratch = l->scratch + (size_t)tid * (gemm_scratch_bytes() / sizeof(float));
    int p0, p1;
    if (l->pk || l->bf) {
        if (l->pk) {
            while (team_deal_take(&l->deal, &p0, &p1))
                gemm_packed_items(l->out, l->ldo, l->in, l->ldi, l->pk, l->b, l->grid, p0, p1, NULL,
                                  scratch);
            return;
        }
        team_split(gemm_panels(l->bf), tid, n, &p0, &p1);
        if (p1 > p0)
            gemm_bf16_blas_cols(l->out, l->ldo, l->in, l->ldi, l->bf, l->b, l->M, p0, p1, NULL,
                                scratch);
        return;
    }
    team_split((l->N + 15) / 16, tid, n, &p0, &p1);
    p0 *= 16;
    p1 = p1 * 16 < l->N ? p1 * 16 : l->N;
    if (p1 > p0)
        ops_linear_cols(l->out, l->ldo, l->in, l->ldi, l->w, l->b, l->M, l->K, p0, p1, NULL);
}

/* The in-projection (3D outputs), the out-projection, and the feed-forward
 * pair for B*L tokens, each split by output panels over a team of T threads
 * as enc_forward splits them, and timed together: the forward's GEMM time
 * without attention, norms, activation or copies. */
static int run_linears(const options *o)
{
    if (!o->batch || !o->len)
        usage();
    const int M = o->batch * o->len, D = o->hp.d_model, F = o->hp.d_ff, Q = 3 * D;
    const int F1 = enc_ffn_rows(&o->hp); /* gated: input and gate rows */
    const int ldh = gemm_padded_ld(F1), ldq = gemm_padded_ld(Q), ldd = gemm_padded_ld(D);
    const int shape[4][2] = {{Q, D}, {D, D}, {F1, D}, {D, F}}; /* (N, K) */
    gemm_packed *pk[4] = {NULL};
    float *wf[4] = {NULL}; /* float32 without AVX-512: the rows, for cblas_sgemm */
    bench_rng r = bench_rng_new(4);
    const bool bf16 = strncmp(o->dtype, "bfloat16", 8) == 0, i8 = !strcmp(o->dtype, "int8");
    const bool blas = !i8 && !simd_enabled(); /* as the forward runs it without AVX-512 */
    for (int i = 0; i < 4; i++) {
        float *w = alloc_floats((size_t)shape[i][0] * shape[i][1]);
        bench_fill_normal(&r, w, (size_t)shape[i][0] * shape[i][1]);
        if (blas && !bf16) {
            wf[i] = w;
            continue;
        }
        pk[i] = i8     ? gemm_pack_int8(w, shape[i][0], shape[i][1])
                : bf16 ? gemm_pack_bf16(w, shape[i][0], shape[i][1])
                       : gemm_pack(w, shape[i][0], shape[i][1]);
        free(w);
        if (!pk[i]) {
            fprintf(stderr, "bench_core: cannot pack the weights (memory short)\n");
            for (int k = 0; k < i; k++)
                gemm_packed_free(pk[k]);
            return 1;
        }
    }
    const char *kernel = i8     ? gemm_int8_kernel()
                         : bf16 ? gemm_bf16_kernel()
                         : blas ? "openblas"
                                : "avx512f";
    float *x = alloc_floats((size_t)M * ldd), *qkv = alloc_floats((size_t)M * ldq);
    float *o_ = alloc_floats((size_t)M * ldd), *h = alloc_floats((size_t)M * ldh);
    float *bias = alloc_floats((size_t)(F1 > Q ? F1 : Q));
    float *scratch = aligned_alloc(64, (size_t)o->threads * gemm_scratch_bytes());
    team *t = team_new(o->threads);
    void *rows = i8 ? aligned_alloc(64, gemm_int8_rows_bytes(M, F > D ? F : D)) : NULL;
    if (!scratch || !t || (i8 && !rows)) {
        fprintf(stderr, "bench_core: out of memory for the team\n");
        return 1;
    }
    bench_fill_normal(&r, x, (size_t)M * ldd);
    bench_fill_normal(&r, h, (size_t)M * ldh); /* the hidden layer, as if after GELU */
    bench_fill_normal(&r, bias, (size_t)(F1 > Q ? F1 : Q));
    linear_run runs[4] = {
        {.in = x, .b = bias, .out = qkv, .M = M, .ldi = ldd, .ldo = ldq},
        {.in = x, .b = bias, .out = o_, .M = M, .ldi = ldd, .ldo = ldd}, /* reads x for z */
        {.in = x, .b = bias, .out = h, .M = M, .ldi = ldd, .ldo = ldh},
        {.in = h, .b = bias, .out = o_, .M = M, .ldi = ldh, .ldo = ldd},
    };
    for (int k = 0; k < 4; k++) {
        runs[k].scratch = scratch;
        runs[k].N = shape[k][0];
        runs[k].K = shape[k][1];
        runs[k].w = wf[k];
        runs[k].rows = rows;
        if (blas && bf16)
            runs[k].bf = pk[k];
        else
            runs[k].pk = pk[k];
    }
    double *ms = alloc_doubles((size_t)o->repeat);
    for (int i = -o->warmup; i < o->repeat; i++) {
        const double t0 = bench_now_ms();
        for (int k = 0; k < 4; k++) {
            if (rows) { /* int8: the rows first, for every item */
                team_deal_init(&runs[k].deal, M, team_size(t));
                team_run(t, quantise_phase, &runs[k]);
            }
            if (runs[k].pk) {
                runs[k].grid = gemm_grid_of(runs[k].pk, M, team_size(t), rows);
                team_deal_init(&runs[k].deal, gemm_grid_items(runs[k].grid), team_size(t));
            }
            team_run(t, linear_phase, &runs[k]);
        }
        if (i >= 0)
            ms[i] = bench_now_ms() - t0;
    }
    double best, median;
    summarise(ms, o->repeat, &best, &median);
    const double flops = 2.0 * M * ((double)Q * D + (double)D * D + (double)D * F1 + (double)D * F);
    const double gflops = flops / (best * 1e6);
    printf("the four Linears alone, %d tokens (D=%d F=%d %s), %s weights (kernel %s), %d threads, "
           "best of %d: %.3f ms, median %.3f ms, %.1f GFLOP/s (%.2f GFLOP)\n",
           M, D, F, enc_ffn_name(o->hp.ffn), i8 ? "int8" : bf16 ? "bfloat16" : "float32", kernel,
           o->threads, o->repeat, best, median, gflops,
           flops / 1e9);
    char key[48];
    snprintf(key, sizeof key, "linears_%dx%d", o->batch, o->len);
    if (o->name)
        snprintf(key, sizeof key, "%s", o->name);
    printf("RESULT %s_best_ms=%.3f %s_median_ms=%.3f %s_gflops=%.2f\n", key, best, key, median, key,
           gflops);
    team_free(t);
    for (int k = 0; k < 4; k++) {
        gemm_packed_free(pk[k]);
        free(wf[k]);
    }
    free(ms);
    free(scratch);
    free(rows);
    free(x);
    free(qkv);
    free(o_);
    free(h);
    free(bias);
    return 0;
}

int main(int argc, char **argv)
{
    options o = parse_args(argc, argv);
    if (!strcmp(o.mode, "info"))
        return run_info();
    if (!strcmp(o.mode, "roofline"))
        return run_roofline(&o);
    if (!strcmp(o.mode, "core"))
        return run_core(&o);
    if (!strcmp(o.mode, "peak"))
        return run_peak(&o);
    if (!strcmp(o.mode, "linears"))
        return run_linears(&o);
    usage();
    return 2;
}
