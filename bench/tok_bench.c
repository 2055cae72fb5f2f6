/* tok_bench.c - times attnd's C tokenizer (core/tokenizer/tokenizer.h) on one
 * thread, for bench/run.sh's text section.
 *
 *   tok_bench throughput --tokenizer FILE --corpus FILE [--repeat R] [--warmup W]
 *                        [--name KEY]
 *       every line of the corpus (UTF-8, one text a line) encoded alone,
 *       tok_encode with the special tokens, no truncation, one encoding's
 *       arrays reused; W untimed passes over the corpus (1), then R timed
 *       ones (5): the tokens of one pass, an FNV-1a hash of their ids (to
 *       compare with bench/tok_hf.mjs), the best and median pass, tokens/s
 *       of the median pass.
 *       RESULT KEY_tokens KEY_hash KEY_best_ms KEY_median_ms KEY_tok_per_s
 *       KEY_load_ms
 *   tok_bench batch --tokenizer FILE --corpus FILE --out FILE [--batch B]
 *                   [--tokens N] [--repeat R] [--warmup W] [--name KEY]
 *       makes B texts (8) of exactly N tokens each (126) before the special
 *       tokens, from the corpus's words in order (a word that would pass N
 *       is left out, then " ." fills up to N), writes them to --out one a
 *       line, then times encoding the B texts one after another with the
 *       special tokens, as the daemon does for one request: W untimed (20)
 *       then R timed batches (200), the best, median and p90 ms.
 *       RESULT KEY_best_ms KEY_median_ms KEY_p90_ms KEY_tokens (all B)
 *
 * KEY defaults to tok (throughput) and tokb (batch).  Exit status 0, 1 on
 * an error, 2 on bad arguments. */
#include "bench_util.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    const char *mode, *tokenizer, *corpus, *out, *name;
    int repeat, warmup, batch, tokens;
} opts;

typedef struct line {
    const char *s;
    size_t len;
} line;

static void usage(void)
{
    fputs("usage: tok_bench throughput --tokenizer FILE --corpus FILE [--repeat R] [--warmup W] "
          "[--name KEY]\n"
          "       tok_bench batch --tokenizer FILE --corpus FILE --out FILE [--batch B] "
          "[--tokens N] [--repeat R] [--warmup W] [--name KEY]\n",
          stderr);
}

static int parse_int(const char *flag, const char *v, int lo, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > 1000000) {
        fprintf(stderr, "tok_bench: %s: want an integer >= %d, got '%s'\n", flag, lo, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    bool batch = strcmp(o->mode, "batch") == 0;
    if (!batch && strcmp(o->mode, "throughput") != 0)
        return -1;
    *o = (opts){.mode = argv[1],
                .name = batch ? "tokb" : "tok",
                .repeat = batch ? 200 : 5,
                .warmup = batch ? 20 : 1,
                .batch = 8,
                .tokens = 126};
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return -1;
        i++;
        if (!strcmp(f, "--tokenizer"))
            o->tokenizer = v;
        else if (!strcmp(f, "--corpus"))
            o->corpus = v;
        else if (!strcmp(f, "--out"))
            o->out = v;
        else if (!strcmp(f, "--name"))
            o->name = v;
        else if (!strcmp(f, "--repeat")) {
            if (parse_int(f, v, 1, &o->repeat) < 0)
                return -1;
        } else if (!strcmp(f, "--warmup")) {
            if (parse_int(f, v, 0, &o->warmup) < 0)
                return -1;
        } else if (!strcmp(f, "--batch")) {
            if (parse_int(f, v, 1, &o->batch) < 0)
                return -1;
        } else if (!strcmp(f, "--tokens")) {
            if (parse_int(f, v, 1, &o->tokens) < 0)
                return -1;
        } else {
            fprintf(stderr, "tok_bench: unknown option %s\n", f);
            return -1;
        }
    }
    if (!o->tokenizer || !o->corpus || (batch && !o->out))
        return -1;
    return 0;
}

/* The whole file (owned, NUL-ended) and its lines (owned; empty lines left
 * out), or NULL. */
static char *read_lines(const char *path, line **lines, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tok_bench: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[len] = '\0';
    size_t nl = 0;
    for (size_t i = 0; i < len; i++)
        nl += buf[i] == '\n';
    *lines = calloc(nl + 1, sizeof **lines);
    *n = 0;
    if (!*lines) {
        free(buf);
        return NULL;
    }
    for (char *p = buf; p < buf + len;) {
        char *e = memchr(p, '\n', (size_t)(buf + len - p));
        if (!e)
            e = buf + len;
        if (e > p)
            (*lines)[(*n)++] = (line){p, (size_t)(e - p)};
        p = e + 1;
    }
    return buf;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int throughput(const opts *o, const tok_tokenizer *t, const line *lines, size_t n,
                      double load_ms)
{
    tok_encoding e = {0};
    enc_error err = {0};
    double *ms = calloc((size_t)o->repeat, sizeof *ms);
    uint64_t tokens = 0;
    uint32_t hash = 2166136261u;
    size_t bytes = 0;
    if (!ms)
        return 1;
    /* One untimed pass for the count and the hash, then the passes. */
    for (size_t i = 0; i < n; i++) {
        if (tok_encode(t, lines[i].s, lines[i].len, NULL, 0, true, 0, &e, NULL, &err) < 0) {
            fprintf(stderr, "tok_bench: line %zu: %s\n", i + 1, err.message);
            free(ms);
            tok_encoding_free(&e);
            return 1;
        }
        tokens += e.n;
        for (size_t k = 0; k < e.n; k++)
            hash = (hash ^ (uint32_t)e.ids[k]) * 16777619u;
    }
    for (int r = -o->warmup; r < o->repeat; r++) {
        uint64_t count = 0;
        double t0 = bench_now_ms();
        for (size_t i = 0; i < n; i++) {
            tok_encode(t, lines[i].s, lines[i].len, NULL, 0, true, 0, &e, NULL, &err);
            count += e.n;
        }
        double dt = bench_now_ms() - t0;
        if (r >= 0)
            ms[r] = dt;
        if (count != tokens) {
            fprintf(stderr, "tok_bench: a pass gave %llu tokens, the first %llu\n",
                    (unsigned long long)count, (unsigned long long)tokens);
            free(ms);
            tok_encoding_free(&e);
            return 1;
        }
    }
    for (size_t i = 0; i < n; i++)
        bytes += lines[i].len;
    tok_encoding_free(&e);
    double med = median(ms, (size_t)o->repeat), best = ms[0];
    double tps = (double)tokens / (med / 1e3);
    printf("%s: %zu texts (%zu bytes), %llu tokens a pass (special tokens included), ids hash "
           "%08x; %d passes: best %.2f ms, median %.2f ms -> %.0f tokens/s, %.2f MB/s on one "
           "thread (tokenizer.json loaded in %.1f ms)\n",
           o->tokenizer, n, bytes, (unsigned long long)tokens, hash, o->repeat, best, med, tps,
           (double)bytes / (med / 1e3) / 1e6, load_ms);
    printf("RESULT %s_tokens=%llu %s_hash=%08x %s_best_ms=%.3f %s_median_ms=%.3f "
           "%s_tok_per_s=%.0f %s_load_ms=%.2f\n",
           o->name, (unsigned long long)tokens, o->name, hash, o->name, best, o->name, med, o->name,
           tps, o->name, load_ms);
    free(ms);
    return 0;
}

/* The number of tokens of s (len) without the special tokens, or -1. */
static long count_tokens(const tok_tokenizer *t, const char *s, size_t len, tok_encoding *e)
{
    enc_error err = {0};
    if (tok_encode(t, s, len, NULL, 0, false, 0, e, NULL, &err) < 0) {
        fprintf(stderr, "tok_bench: %s\n", err.message);
        return -1;
    }
    return (long)e->n;
}

/* Appends "word" (with a space before it when text is not empty) to
 * text (len, cap bytes). */
static int append(char **text, size_t *len, size_t *cap, const char *w, size_t wl)
{
    if (*len + wl + 2 > *cap) {
        size_t c = (*len + wl + 2) * 2;
        char *p = realloc(*text, c);
        if (!p)
            return -1;
        *text = p;
        *cap = c;
    }
    if (*len)
        (*text)[(*len)++] = ' ';
    memcpy(*text + *len, w, wl);
    *len += wl;
    (*text)[*len] = '\0';
    return 0;
}

static int batch(const opts *o, const tok_tokenizer *t, const line *lines, size_t n)
{
    const size_t B = (size_t)o->batch;
    char **texts = calloc(B, sizeof *texts);
    size_t *lens = calloc(B, sizeof *lens);
    tok_encoding e = {0};
    int rc = 1;
    size_t li = 0, wi = 0; /* the next word: line li, byte wi */
    if (!texts || !lens)
        goto done;
    for (size_t b = 0; b < B; b++) {
        size_t cap = 0;
        long have = 0;
        int misses = 0;
        while (have < o->tokens && li < n && misses < 50) {
            const char *s = lines[li].s + wi, *end = lines[li].s + lines[li].len;
            const char *sp = memchr(s, ' ', (size_t)(end - s));
            size_t wl = (size_t)((sp ? sp : end) - s);
            if (sp)
                wi += wl + 1;
            else
                li++, wi = 0;
            if (!wl)
                continue;
            size_t before = lens[b];
            if (append(&texts[b], &lens[b], &cap, s, wl) < 0)
                goto done;
            long c = count_tokens(t, texts[b], lens[b], &e);
            if (c < 0)
                goto done;
            if (c > o->tokens) { /* too long: leave it out */
                lens[b] = before;
                texts[b][before] = '\0';
                misses++;
            } else
                have = c;
        }
        while (have < o->tokens) {
            if (append(&texts[b], &lens[b], &cap, ".", 1) < 0)
                goto done;
            long c = count_tokens(t, texts[b], lens[b], &e);
            if (c != have + 1) {
                fprintf(stderr, "tok_bench: text %zu: \" .\" did not add one token (%ld -> %ld)\n",
                        b, have, c);
                goto done;
            }
            have = c;
        }
    }
    FILE *f = fopen(o->out, "w");
    if (!f) {
        fprintf(stderr, "tok_bench: %s: %s\n", o->out, strerror(errno));
        goto done;
    }
    for (size_t b = 0; b < B; b++)
        fprintf(f, "%s\n", texts[b]);
    if (fclose(f) != 0) {
        fprintf(stderr, "tok_bench: %s: write failed\n", o->out);
        goto done;
    }
    double *ms = calloc((size_t)o->repeat, sizeof *ms);
    if (!ms)
        goto done;
    size_t tokens = 0, bytes = 0;
    enc_error err = {0};
    for (int r = -o->warmup; r < o->repeat; r++) {
        size_t count = 0;
        double t0 = bench_now_ms();
        for (size_t b = 0; b < B; b++) {
            if (tok_encode(t, texts[b], lens[b], NULL, 0, true, 0, &e, NULL, &err) < 0) {
                fprintf(stderr, "tok_bench: %s\n", err.message);
                free(ms);
                goto done;
            }
            count += e.n;
        }
        double dt = bench_now_ms() - t0;
        if (r >= 0)
            ms[r] = dt;
        tokens = count;
    }
    for (size_t b = 0; b < B; b++)
        bytes += lens[b];
    qsort(ms, (size_t)o->repeat, sizeof *ms, cmp_double);
    double best = ms[0], med = median(ms, (size_t)o->repeat);
    double p90 = bench_percentile(ms, (size_t)o->repeat, 90);
    printf("%zu texts of %d tokens (+ special tokens: %zu in all, %zu bytes) written to %s; "
           "encoding the %zu one after another, %d times: best %.4f ms, median %.4f ms, p90 "
           "%.4f ms\n",
           B, o->tokens, tokens, bytes, o->out, B, o->repeat, best, med, p90);
    printf("RESULT %s_best_ms=%.4f %s_median_ms=%.4f %s_p90_ms=%.4f %s_tokens=%zu\n", o->name, best,
           o->name, med, o->name, p90, o->name, tokens);
    free(ms);
    rc = 0;
done:
    tok_encoding_free(&e);
    for (size_t b = 0; texts && b < B; b++)
        free(texts[b]);
    free(texts);
    free(lens);
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    line *lines = NULL;
    size_t n = 0;
    char *buf = read_lines(o.corpus, &lines, &n);
    if (!buf)
        return 1;
    if (!n) {
        fprintf(stderr, "tok_bench: %s: no text\n", o.corpus);
        free(buf);
        free(lines);
        return 1;
    }
    enc_error err = {0};
    double t0 = bench_now_ms();
    tok_tokenizer *t = tok_load(o.tokenizer, &err);
    double load_ms = bench_now_ms() - t0;
    int rc = 1;
    if (!t)
        fprintf(stderr, "tok_bench: %s: %s\n", o.tokenizer, err.message);
    else if (!strcmp(o.mode, "throughput"))
        rc = throughput(&o, t, lines, n, load_ms);
    else
        rc = batch(&o, t, lines, n);
    tok_free(t);
    free(buf);
    free(lines);
    return rc;
}
