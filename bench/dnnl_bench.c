/* dnnl_bench.c - the library road to AMX and VNNI (bench/parts/int8.sh;
 * figures in docs/performance.md): oneDNN's matmul (Debian's libdnnl-dev;
 * PyTorch's own CPU kernels) on the four Linears of a BERT-base-sized
 * block, as `bench_core linears` times attnd's: B x L tokens of float32
 * in, float32 out, bias, no activation, the weights prepared once outside
 * the timing.
 *
 *     dnnl_bench --dtype int8|bfloat16 [--batch 8] [--len 128] [--threads 2]
 *                [--repeat 20] [--warmup 3] [--name dnnl]
 *
 * int8 is the scheme oneDNN's fast kernels take: each input quantised to
 * int8 with one scale for the whole tensor (a reorder, at a fixed scale:
 * oneDNN is spared the pass that finds the tensor's largest |x|), the
 * weights per output column, int32 sums, float32 out.  attnd's scale per
 * row and its outlier columns have no place there: a per-row scale (a
 * binary post-op over (M, 1)) drops oneDNN 2.6 to its reference kernel,
 * which the line "per-row scales" names.  bfloat16: the input rounded to
 * bfloat16 (a reorder), bfloat16 products summed in float32.
 *
 * Before timing, 64 sampled outputs of each Linear are held to the same
 * sums in double (int8: over the quantised values oneDNN read; bfloat16:
 * over the rounded ones), so a figure is of a matmul that computes the
 * Linears.
 *
 * Prints one line and "RESULT NAME_best_ms=.. NAME_median_ms=..
 * NAME_gflops=.." (bench/lib.sh reads it); exits 1 when oneDNN fails or a
 * sample is off, 2 on a bad flag. */
#include "bench_util.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        const dnnl_status_t s_ = (call);                                                           \
        if (s_ != dnnl_success) {                                                                  \
            fprintf(stderr, "dnnl_bench: %s failed: %s\n", #call, status_name(s_));                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The int8 inputs' common scale: values up to 4 (a normal's |x| rarely
 * passes it) map to 127. */
#define INPUT_RANGE 4.0f

static const char *status_name(dnnl_status_t s)
{
    switch (s) {
    case dnnl_out_of_memory:
        return "out of memory";
    case dnnl_invalid_arguments:
        return "invalid arguments";
    case dnnl_unimplemented:
        return "unimplemented";
    default:
        return "error";
    }
}

/* One Linear: out (M, N) = in (M, K) . w^T + b, and what it runs. */
typedef struct {
    int N, K;
    float *in, *b, *out;      /* in and out as attnd's: float32, rows packed */
    dnnl_primitive_t convert; /* in to src: a reorder (int8: with the common scale) */
    dnnl_primitive_t matmul;
    dnnl_memory_t in_m, src, wei, bias, out_m;
    int8_t *wq;       /* int8: the weights as N rows of K, for the samples */
    uint16_t *wb;     /* bfloat16: the same */
    float *col_scale; /* int8: per output column */
    float *bias_q;    /* int8: b over each column's output scale (oneDNN 2's matmul
                         scales the bias with the sums) */
} linear;

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static dnnl_memory_desc_t plain(int rows, int cols, dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols};
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, dims, dt, tag));
    return md;
}

static dnnl_memory_t memory(const dnnl_memory_desc_t *md, void *data)
{
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, engine, data ? data : DNNL_MEMORY_ALLOCATE));
    return m;
}

static void *data_of(dnnl_memory_t m)
{
    void *p;
    CHECK(dnnl_memory_get_data_handle(m, &p));
    return p;
}

static void run_reorder(dnnl_memory_t from, dnnl_memory_t to, const dnnl_primitive_attr_t attr)
{
    const dnnl_memory_desc_t *a, *b;
    CHECK(dnnl_memory_get_memory_desc(from, &a));
    CHECK(dnnl_memory_get_memory_desc(to, &b));
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, a, engine, b, engine, attr));
    CHECK(dnnl_primitive_create(&p, pd));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    CHECK(dnnl_primitive_execute(p, stream, 2, args));
    CHECK(dnnl_stream_wait(stream));
    dnnl_primitive_destroy(p);
    dnnl_primitive_desc_destroy(pd);
}

static uint16_t bf16_of(float x) /* round to nearest even; finite x */
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (uint16_t)((u + 0x7FFF + (u >> 16 & 1)) >> 16);
}

static float float_of(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The implementation oneDNN picked for pd. */
static const char *impl_of(const_dnnl_primitive_desc_t pd)
{
    const char *s = "?";
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
    return s;
}

/* Builds l's primitives for M rows; weights from r, quantised or rounded
 * once and reordered into the layout oneDNN's kernel wants. */
static void linear_init(linear *l, int M, bool i8, bench_rng *r, const char **impl)
{
    const dnnl_data_type_t dt = i8 ? dnnl_s8 : dnnl_bf16;
    const int N = l->N, K = l->K;
    float *w = malloc(sizeof *w * (size_t)N * K);
    l->col_scale = malloc(sizeof *l->col_scale * (size_t)N);
    if (!w || !l->col_scale)
        exit(1);
    bench_fill_normal(r, w, (size_t)N * K);
    dnnl_memory_desc_t wplain = plain(K, N, dt, dnnl_ba); /* (K, N) over w's (N, K) rows */
    dnnl_memory_t wm = memory(&wplain, NULL);
    if (i8) {
        l->wq = data_of(wm);
        for (int n = 0; n < N; n++) {
            float mx = 0.0f;
            for (int k = 0; k < K; k++)
                mx = fmaxf(mx, fabsf(w[(size_t)n * K + k]));
            l->col_scale[n] = mx / 127.0f;
            const float inv = mx > 0.0f ? 127.0f / mx : 0.0f; /* a zero row: zeros */
            for (int k = 0; k < K; k++)
                l->wq[(size_t)n * K + k] = (int8_t)lrintf(w[(size_t)n * K + k] * inv);
        }
    } else {
        l->wb = data_of(wm);
        for (size_t i = 0; i < (size_t)N * K; i++)
            l->wb[i] = bf16_of(w[i]);
    }
    free(w);

    const dnnl_memory_desc_t src = plain(M, K, dt, dnnl_ab), in = plain(M, K, dnnl_f32, dnnl_ab);
    const dnnl_memory_desc_t any = plain(K, N, dt, dnnl_format_tag_any);
    const dnnl_memory_desc_t bias = plain(1, N, dnnl_f32, dnnl_ab),
                             out = plain(M, N, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t md;
    CHECK(dnnl_matmul_desc_init(&md, &src, &any, &bias, &out));
    dnnl_primitive_attr_t attr;
    CHECK(dnnl_primitive_attr_create(&attr));
    if (i8) { /* dequantised: the input's common scale x each column's */
        float *s = malloc(sizeof *s * (size_t)N);
        l->bias_q = malloc(sizeof *l->bias_q * (size_t)N);
        if (!s || !l->bias_q)
            exit(1);
        for (int n = 0; n < N; n++) {
            s[n] = INPUT_RANGE / 127.0f * l->col_scale[n];
            l->bias_q[n] = l->b[n] / s[n]; /* normal weights: no column all zero */
        }
        CHECK(dnnl_primitive_attr_set_output_scales(attr, N, 1 << 1, s));
        free(s);
    }
    dnnl_primitive_desc_t pd; /* kept for the process: impl points into it */
    CHECK(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
    *impl = impl_of(pd);
    CHECK(dnnl_primitive_create(&l->matmul, pd));
    l->wei = memory(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), NULL);
    run_reorder(wm, l->wei, NULL);
    l->in_m = memory(&in, l->in);
    l->src = memory(&src, NULL);
    l->bias = memory(&bias, i8 ? l->bias_q : l->b);
    l->out_m = memory(&out, l->out);
    dnnl_primitive_attr_destroy(attr);

    /* the input's conversion, timed with the matmul */
    dnnl_primitive_attr_t cattr;
    CHECK(dnnl_primitive_attr_create(&cattr));
    if (i8) {
        const float q = 127.0f / INPUT_RANGE;
        CHECK(dnnl_primitive_attr_set_output_scales(cattr, 1, 0, &q));
    }
    dnnl_primitive_desc_t cpd;
    CHECK(dnnl_reorder_primitive_desc_create(&cpd, &in, engine, &src, engine, cattr));
    CHECK(dnnl_primitive_create(&l->convert, cpd));
    dnnl_primitive_attr_destroy(cattr);
}

static void linear_run(const linear *l)
{
    dnnl_exec_arg_t conv[] = {{DNNL_ARG_FROM, l->in_m}, {DNNL_ARG_TO, l->src}};
    CHECK(dnnl_primitive_execute(l->convert, stream, 2, conv));
    dnnl_exec_arg_t mm[] = {{DNNL_ARG_SRC, l->src},
                            {DNNL_ARG_WEIGHTS, l->wei},
                            {DNNL_ARG_BIAS, l->bias},
                            {DNNL_ARG_DST, l->out_m}};
    CHECK(dnnl_primitive_execute(l->matmul, stream, 4, mm));
}

/* Holds 64 sampled outputs of l to the sums in double over what oneDNN
 * read (int8: the quantised input and weights; bfloat16: the rounded
 * ones); the number that are off. */
static int linear_check(const linear *l, int M, bool i8, bench_rng *r)
{
    const void *src = data_of(l->src);
    int off = 0;
    for (int s = 0; s < 64; s++) {
        float u[2];
        bench_fill_normal(r, u, 2);
        const int m = (int)(fabsf(u[0]) * 1e4f) % M, n = (int)(fabsf(u[1]) * 1e4f) % l->N;
        double sum = 0.0, mag = 0.0;
        for (int k = 0; k < l->K; k++) {
            const double p = i8 ? (double)((const int8_t *)src)[(size_t)m * l->K + k] *
                                      l->wq[(size_t)n * l->K + k]
                                : (double)float_of(((const uint16_t *)src)[(size_t)m * l->K + k]) *
                                      float_of(l->wb[(size_t)n * l->K + k]);
            sum += p;
            mag += fabs(p);
        }
        const double scale = i8 ? INPUT_RANGE / 127.0 * l->col_scale[n] : 1.0;
        const double want = sum * scale + l->b[n], got = l->out[(size_t)m * l->N + n];
        if (fabs(got - want) > 1e-5 * (mag * scale + fabs(l->b[n])) + 1e-6)
            off++;
    }
    return off;
}

int main(int argc, char **argv)
{
    const char *dtype = NULL, *name = "dnnl";
    int batch = 8, len = 128, threads = 2, repeat = 20, warmup = 3;
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--dtype") && v)
            dtype = v;
        else if (!strcmp(f, "--name") && v)
            name = v;
        else if (!strcmp(f, "--batch"))
            batch = bench_parse_int("dnnl_bench", f, v, 1);
        else if (!strcmp(f, "--len"))
            len = bench_parse_int("dnnl_bench", f, v, 1);
        else if (!strcmp(f, "--threads"))
            threads = bench_parse_int("dnnl_bench", f, v, 1);
        else if (!strcmp(f, "--repeat"))
            repeat = bench_parse_int("dnnl_bench", f, v, 1);
        else if (!strcmp(f, "--warmup"))
            warmup = bench_parse_int("dnnl_bench", f, v, 0);
        else
            dtype = NULL, i = argc;
    }
    if (!dtype || (strcmp(dtype, "int8") && strcmp(dtype, "bfloat16"))) {
        fprintf(stderr, "usage: dnnl_bench --dtype int8|bfloat16 [--batch 8] [--len 128] "
                        "[--threads 2] [--repeat 20] [--warmup 3] [--name dnnl]\n");
        return 2;
    }
    const bool i8 = !strcmp(dtype, "int8");
    omp_set_num_threads(threads);
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));

    const int M = batch * len, D = 768, F = 3072;
    linear l[4] = {{.N = 3 * D, .K = D}, {.N = D, .K = D}, {.N = F, .K = D}, {.N = D, .K = F}};
    bench_rng r = bench_rng_new(4);
    float *x = malloc(sizeof *x * (size_t)M * D), *h = malloc(sizeof *h * (size_t)M * F);
    float *bias = malloc(sizeof *bias * (size_t)F);
    if (!x || !h || !bias)
        return 1;
    bench_fill_normal(&r, x, (size_t)M * D);
    bench_fill_normal(&r, h, (size_t)M * F); /* the hidden layer, as if after GELU */
    bench_fill_normal(&r, bias, (size_t)F);
    const char *impl = "?";
    for (int k = 0; k < 4; k++) {
        l[k].in = k == 3 ? h : x;
        l[k].b = bias;
        l[k].out = malloc(sizeof(float) * (size_t)M * l[k].N);
        if (!l[k].out)
            return 1;
        linear_init(&l[k], M, i8, &r, &impl);
    }
    int off = 0;
    for (int k = 0; k < 4; k++) {
        linear_run(&l[k]);
        CHECK(dnnl_stream_wait(stream));
        off += linear_check(&l[k], M, i8, &r);
    }
    if (off) {
        fprintf(stderr, "dnnl_bench: %d of 256 sampled outputs differ from the sums in double\n",
                off);
        return 1;
    }
    double *ms = malloc(sizeof *ms * (size_t)repeat);
    if (!ms)
        return 1;
    for (int i = -warmup; i < repeat; i++) {
        const double t0 = bench_now_ms();
        for (int k = 0; k < 4; k++)
            linear_run(&l[k]);
        CHECK(dnnl_stream_wait(stream));
        if (i >= 0)
            ms[i] = bench_now_ms() - t0;
    }
    bench_sort(ms, (size_t)repeat);
    const double best = ms[0], median = bench_percentile(ms, (size_t)repeat, 50);
    const double flops = 2.0 * M * ((double)3 * D * D + (double)D * D + 2.0 * D * F);
    const dnnl_version_t *ver = dnnl_version();
    printf("oneDNN %d.%d.%d matmul, the four Linears alone, %d tokens (D=%d F=%d), %s (%s), %d "
           "threads, best of %d: %.3f ms, median %.3f ms, %.1f GFLOP/s; 256 sampled outputs "
           "agree with double\n",
           ver->major, ver->minor, ver->patch, M, D, F, dtype, impl, threads, repeat, best, median,
           flops / (best * 1e6));
    if (i8) { /* what attnd's scheme would need */
        dnnl_matmul_desc_t md;
        const dnnl_memory_desc_t src = plain(M, D, dnnl_s8, dnnl_ab);
        const dnnl_memory_desc_t any = plain(D, D, dnnl_s8, dnnl_format_tag_any);
        const dnnl_memory_desc_t out = plain(M, D, dnnl_f32, dnnl_ab),
                                 rows = plain(M, 1, dnnl_f32, dnnl_ab);
        CHECK(dnnl_matmul_desc_init(&md, &src, &any, NULL, &out));
        dnnl_primitive_attr_t attr;
        dnnl_post_ops_t po;
        CHECK(dnnl_primitive_attr_create(&attr));
        CHECK(dnnl_post_ops_create(&po));
        CHECK(dnnl_post_ops_append_binary(po, dnnl_binary_mul, &rows));
        CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
        dnnl_primitive_desc_t pd;
        CHECK(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
        printf("per-row scales (a binary post-op over (M, 1)): oneDNN picks %s\n", impl_of(pd));
        dnnl_primitive_desc_destroy(pd);
        dnnl_post_ops_destroy(po);
        dnnl_primitive_attr_destroy(attr);
    }
    printf("RESULT %s_best_ms=%.3f %s_median_ms=%.3f %s_gflops=%.2f\n", name, best, name, median,
           name, flops / (best * 1e6));
    return 0;
}
