/* bench_core.c - times the attnd core and the OpenBLAS sgemm it is built on.
 *
 *   bench_core info                      OpenBLAS build and core name
 *   bench_core roofline [options]        cblas_sgemm N x N x N: GFLOP/s
 *   bench_core core --batch B --len L [options]
 *                                        enc_forward, per-head attention
 *                                        weights unless --attention says
 *                                        otherwise: best and median ms,
 *                                        GFLOP/s, peak resident memory
 * options: --threads T (2): enc_set_threads(T) for "core", OpenBLAS threads
 *          for "roofline";  --repeat R (20)  --warmup W (3)  --n N (2048)
 *          --d-model D (768)  --n-heads H (12)  --d-ff F (3072)
 *          --activation A (gelu)  --seed S (0)
 *          --attention heads|mean|none (heads)
 *
 * Each mode prints one human-readable line, then one "RESULT key=value ..."
 * line for bench/run.sh.  Timings are wall-clock (CLOCK_MONOTONIC) around each
 * call, after warm-up calls that size the workspace and wake the threads.
 * The model is one post-norm layer built from a seed (the values do not
 * change the work done); the input is seeded N(0, 1).
 */
#include "bench_util.h"
#include "encoder.h"

#include <cblas.h>
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
} options;

static void usage(void)
{
    fputs("usage: bench_core info\n"
          "       bench_core roofline [--n N] [--threads T] [--repeat R] [--warmup W]\n"
          "       bench_core core --batch B --len L [--threads T] [--repeat R] [--warmup W]\n"
          "                       [--d-model D] [--n-heads H] [--d-ff F] [--activation A]"
          " [--seed S]\n"
          "                       [--attention heads|mean|none]\n",
          stderr);
    exit(2);
}

/* An integer min..2^24 from argv; exits with a message otherwise. */
static int parse_int(const char *flag, const char *s, long min)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min || v > (1L << 24)) {
        fprintf(stderr, "bench_core: %s '%s' must be an integer >= %ld\n", flag, s, min);
        exit(2);
    }
    return (int)v;
}

static options parse_args(int argc, char **argv)
{
    options o = {.threads = 2, .repeat = 20, .warmup = 3, .n = 2048, .attn = ENC_ATTN_HEADS};
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
            o.batch = parse_int(f, v, 1);
        else if (!strcmp(f, "--len"))
            o.len = parse_int(f, v, 1);
        else if (!strcmp(f, "--threads"))
            o.threads = parse_int(f, v, 1);
        else if (!strcmp(f, "--repeat"))
            o.repeat = parse_int(f, v, 1);
        else if (!strcmp(f, "--warmup"))
            o.warmup = parse_int(f, v, 0);
        else if (!strcmp(f, "--n"))
            o.n = parse_int(f, v, 1);
        else if (!strcmp(f, "--d-model"))
            o.hp.d_model = parse_int(f, v, 1);
        else if (!strcmp(f, "--n-heads"))
            o.hp.n_heads = o.hp.n_kv_heads = parse_int(f, v, 1);
        else if (!strcmp(f, "--d-ff"))
            o.hp.d_ff = parse_int(f, v, 1);
        else if (!strcmp(f, "--seed"))
            o.seed = (unsigned long)parse_int(f, v, 0);
        else if (!strcmp(f, "--attention")) {
            if (!strcmp(v, "heads") || !strcmp(v, "mean") || !strcmp(v, "none"))
                o.attn = v[0] == 'h' ? ENC_ATTN_HEADS : v[0] == 'm' ? ENC_ATTN_MEAN : ENC_ATTN_NONE;
            else
                usage();
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
    float *layers[1] = {attn};
    enc_batch in = {.x = x, .B = o->batch, .L = o->len};
    in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE;
    enc_result res = {.out = out, .attn_mode = o->attn, .attn = layers};

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
        const double rss = peak_rss_mib();
        printf("enc_forward B=%d L=%d (D=%d H=%d F=%d %s, attention %s), %d threads, "
               "best of %d: %.3f ms, median %.3f ms, %.1f GFLOP/s (%.2f GFLOP/forward, "
               "workspace %.1f MiB, peak resident %.0f MiB)\n",
               o->batch, o->len, o->hp.d_model, o->hp.n_heads, o->hp.d_ff,
               enc_activation_name(o->hp.activation), mode, o->threads, o->repeat, best, median,
               gflops, flops / 1e9, (double)enc_workspace_bytes(ws) / (1 << 20), rss);
        printf("RESULT %s_best_ms=%.3f %s_median_ms=%.3f %s_gflops=%.2f %s_peak_rss_mib=%.0f\n",
               key, best, key, median, key, gflops, key, rss);
    }
    free(ms);
    free(x);
    free(out);
    free(attn);
    enc_workspace_free(ws);
    enc_model_free(m);
    return rc < 0 ? 1 : 0;
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
    usage();
    return 2;
}
