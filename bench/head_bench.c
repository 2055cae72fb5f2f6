/* head_bench.c - what a task head costs (bench/parts/heads.sh): a Hugging
 * Face directory loaded as attnd loads it, one batch of random token ids run
 * with no head output, with the head's logits and (a masked LM) with its
 * SPLADE vector, interleaved repeat after repeat; and the process's resident
 * memory after loading and at its peak over the runs.
 *
 *     head_bench --dir DIR [--batch 8] [--len 128] [--threads 2] [--repeat 20]
 *                [--warmup 3] [--name head] [--modes none,logits,splade]
 *
 * Prints one line per mode and one "RESULT" line (bench/lib.sh reads it):
 * NAME_MODE_median_ms and NAME_MODE_best_ms for each mode; NAME_forward_gflops
 * (enc_forward_flops over the median without a head); for the logits and
 * SPLADE modes NAME_MODE_extra_ms (median minus the median without a head)
 * and NAME_MODE_share (that over the median without a head);
 * NAME_splade_gflops (the transform's and the vocabulary projection's
 * multiply-adds over SPLADE's extra median); NAME_rss_load_mb (VmRSS once
 * loaded), NAME_rss_peak_mb (VmHWM over the runs, reset after loading) and
 * NAME_weights_mb (the directory's tensors' bytes as float32). */
#include "bench_util.h"
#include "encoder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NONE, LOGITS, SPLADE, N_MODES };
static const char *const MODE_NAMES[N_MODES] = {"none", "logits", "splade"};

/* A /proc/self/status field in kB, or -1. */
static long status_kb(const char *field)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    const size_t n = strlen(field);
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    if (fp)
        fclose(fp);
    return kb;
}

static int by_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *name = "head", *modes = "none,logits,splade";
    int B = 8, L = 128, threads = 2, repeat = 20, warmup = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--dir"))
            dir = v;
        else if (!strcmp(k, "--batch"))
            B = atoi(v);
        else if (!strcmp(k, "--len"))
            L = atoi(v);
        else if (!strcmp(k, "--threads"))
            threads = atoi(v);
        else if (!strcmp(k, "--repeat"))
            repeat = atoi(v);
        else if (!strcmp(k, "--warmup"))
            warmup = atoi(v);
        else if (!strcmp(k, "--name"))
            name = v;
        else if (!strcmp(k, "--modes"))
            modes = v;
        else {
            fprintf(stderr, "head_bench: unknown option %s\n", k);
            return 2;
        }
    }
    if (!dir || B < 1 || L < 1 || repeat < 1 || threads < 1) {
        fprintf(stderr, "usage: head_bench --dir DIR [--batch B] [--len L] [--threads T] "
                        "[--repeat N] [--warmup W] [--name KEY] [--modes none,logits,splade]\n");
        return 2;
    }
    enc_error err = {0};
    enc_hf_config c;
    enc_model *m = NULL;
    if (enc_hf_config_read(dir, &c, &err) == 0)
        m = enc_model_load_dir(dir, &c.hp, &err);
    if (!m) {
        fprintf(stderr, "head_bench: %s: %s\n", dir, err.message);
        return 1;
    }
    const enc_head_info *h = enc_model_head(m);
    const enc_embedding_info *e = enc_model_embedding(m);
    if (!h || !e) {
        fprintf(stderr, "head_bench: %s has no %s\n", dir, h ? "embedding module" : "task head");
        return 1;
    }
    const long rss_load = status_kb("VmRSS");
    FILE *cr = fopen("/proc/self/clear_refs", "w"); /* VmHWM from here on */
    if (cr) {
        fputs("5", cr);
        fclose(cr);
    }
    bool on[N_MODES] = {false};
    for (int k = 0; k < N_MODES; k++)
        on[k] = strstr(modes, MODE_NAMES[k]) != NULL;
    on[SPLADE] = on[SPLADE] && h->kind == ENC_HEAD_MASKED_LM;

    enc_set_threads(threads);
    enc_workspace *ws = enc_workspace_new(m);
    const enc_hparams *hp = enc_model_hparams(m);
    const size_t BL = (size_t)B * L;
    int32_t *ids = malloc(BL * sizeof *ids);
    float *out = malloc(BL * hp->d_model * sizeof *out);
    size_t nlog = enc_head_floats(m, ENC_HEAD_OUT_LOGITS, B, L);
    const size_t nspl = enc_head_floats(m, ENC_HEAD_OUT_SPLADE, B, L);
    float *logits = malloc((nlog > nspl ? nlog : nspl) * sizeof *logits + 4);
    double *ms = malloc((size_t)N_MODES * repeat * sizeof *ms);
    if (!ws || !ids || !out || !logits || !ms) {
        fprintf(stderr, "head_bench: out of memory\n");
        return 1;
    }
    if (e->vocab_size <= 1000) {
        fprintf(stderr, "head_bench: a vocabulary of %d; over 1000 expected\n", e->vocab_size);
        return 1;
    }
    uint64_t s = 7;
    for (size_t t = 0; t < BL; t++) { /* ids 1000 .. vocab - 1: no special tokens */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[t] = (int32_t)(1000 + (s >> 33) % (uint64_t)(e->vocab_size - 1000));
    }
    enc_ids in_ids = {.input_ids = ids};
    enc_batch in = {.ids = &in_ids, .B = B, .L = L};
    in.mask.window_left = in.mask.window_right = ENC_WINDOW_NONE;
    static const enc_head_output OUT[N_MODES] = {ENC_HEAD_OUT_NONE, ENC_HEAD_OUT_LOGITS,
                                                 ENC_HEAD_OUT_SPLADE};
    for (int rep = -warmup; rep < repeat; rep++)
        for (int k = 0; k < N_MODES; k++) {
            if (!on[k])
                continue;
            enc_result res = {.out = out, .head = OUT[k], .logits = k ? logits : NULL};
            const double t0 = bench_now_ms();
            if (enc_forward(m, ws, &in, &res, &err) < 0) {
                fprintf(stderr, "head_bench: %s: %s\n", MODE_NAMES[k], err.message);
                return 1;
            }
            if (rep >= 0)
                ms[k * repeat + rep] = bench_now_ms() - t0;
        }
    double med[N_MODES] = {0}, best[N_MODES] = {0};
    for (int k = 0; k < N_MODES; k++) {
        if (!on[k])
            continue;
        qsort(ms + k * repeat, (size_t)repeat, sizeof *ms, by_double);
        med[k] = bench_percentile(ms + k * repeat, (size_t)repeat, 50);
        best[k] = ms[k * repeat];
        printf("%s: %s, B=%d L=%d, %d threads: median %.3f ms, best %.3f ms (%d runs)\n", name,
               MODE_NAMES[k], B, L, threads, med[k], best[k], repeat);
    }
    const double D = hp->d_model, V = h->n_outputs, T = (double)BL;
    const double fwd_gflops = on[NONE] ? enc_forward_flops(hp, B, L) / (med[NONE] * 1e6) : 0;
    printf("RESULT %s_forward_gflops=%.2f", name, fwd_gflops);
    for (int k = 0; k < N_MODES; k++)
        if (on[k])
            printf(" %s_%s_median_ms=%.3f %s_%s_best_ms=%.3f", name, MODE_NAMES[k], med[k], name,
                   MODE_NAMES[k], best[k]);
    for (int k = LOGITS; k < N_MODES && on[NONE]; k++)
        if (on[k])
            printf(" %s_%s_extra_ms=%.3f %s_%s_share=%.4f", name, MODE_NAMES[k], med[k] - med[NONE],
                   name, MODE_NAMES[k], (med[k] - med[NONE]) / med[NONE]);
    if (on[SPLADE] && on[NONE] && med[SPLADE] > med[NONE])
        printf(" %s_splade_gflops=%.2f", name,
               (2.0 * T * D * D + 2.0 * T * D * V) / ((med[SPLADE] - med[NONE]) * 1e6));
    double weights = (double)enc_model_param_count(m) * 4 / 1048576.0 +
                     (double)e->vocab_size * D * 4 / 1048576.0;
    printf(" %s_rss_load_mb=%.1f %s_rss_peak_mb=%.1f %s_weights_mb=%.1f\n", name, rss_load / 1024.0,
           name, status_kb("VmHWM") / 1024.0, name, weights);
    free(ms);
    free(logits);
    free(out);
    free(ids);
    enc_workspace_free(ws);
    enc_model_free(m);
    return 0;
}
