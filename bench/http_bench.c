/* http_bench.c - a load client for attnd's POST /v1/encode over keep-alive
 * connections (libcurl, one easy handle per client, so one TCP connection).
 *
 *   http_bench latency    --port P --format b64|json --batch B --len L
 *                         [--seconds S] [--max-requests N] [--warmup W]
 *   http_bench throughput --port P --clients C --batch B --len L --seconds S
 * common: --host 127.0.0.1  --d-model D (768)  --name KEY (prefix of RESULT keys)
 *         --attention heads|mean|none (heads)  --pid PID (the daemon's, for its faults)
 *
 * latency: one client sends identical requests one after the other until S
 * seconds or N requests, and reports p50/p99 of the end-to-end time of each
 * (curl_easy_perform: send the body, the daemon decodes, computes, encodes,
 * receive the whole body), plus the median of the daemon's own X-Compute-Ms
 * and, with --pid, the daemon's minor page faults per measured request
 * (/proc/PID/stat's minflt before and after: memory it touched for the first
 * time, which a daemon that reuses its buffers does not).
 * throughput: C clients start together, each sends requests back to back
 * until S seconds have passed; tokens/s = successful requests x B x L / the
 * wall time from the start until the last client's last response.
 *
 * Requests carry per-head attention weights ("attention": "heads"), or what
 * --attention heads|mean|none asks for.
 * b64: embeddings_b64 + shape in, "encoding": "base64" out.  json: nested
 * arrays in (%.9g), JSON numbers out with "precision": 9.  Any response
 * other than 200 is counted as an error; errors make the exit status 1.
 */
#include "bench_util.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What the command line asks for. */
typedef struct options {
    const char *mode; /* "latency" or "throughput" */
    const char *host;
    const char *name;      /* RESULT key prefix */
    const char *attention; /* "heads", "mean" or "none" */
    int port;
    int b64; /* 1: base64 in and out; 0: JSON numbers */
    int batch, len, d_model;
    int clients;
    double seconds;
    int max_requests;
    int warmup;
    int pid; /* the daemon's, or 0 */
} options;

/* A growing NUL-terminated string. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

/* One client: its connection, its request, what it measured. */
typedef struct client {
    const options *o;
    const char *body; /* borrowed: the shared request body */
    size_t body_len;
    CURL *curl;
    struct curl_slist *headers;
    char head[128]; /* the first bytes of the last response body */
    size_t head_len, body_bytes;
    double compute_ms;    /* X-Compute-Ms of the last response, or -1 */
    double *ms, *compute; /* (n) per-request latency and X-Compute-Ms */
    size_t n, cap;
    long ok, errors, last_status;
    long connects;            /* TCP connections opened (1 = keep-alive held) */
    pthread_barrier_t *start; /* throughput: where the clients start together */
} client;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("http_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q)
        die("out of memory (%zu bytes)", n);
    return q;
}

/* Appends printf-formatted text. */
static void text_printf(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->len;
        int n = vsnprintf(t->s ? t->s + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            die("vsnprintf failed");
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 64;
        t->s = xrealloc(t->s, t->cap);
    }
}

/* Appends the standard base64 (RFC 4648, with padding) of n bytes. */
static void text_base64(text *t, const unsigned char *p, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t need = t->len + (n + 2) / 3 * 4 + 1;
    if (need > t->cap) {
        t->cap = need * 2;
        t->s = xrealloc(t->s, t->cap);
    }
    char *w = t->s + t->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        *w++ = abc[v >> 18];
        *w++ = abc[(v >> 12) & 63];
        *w++ = abc[(v >> 6) & 63];
        *w++ = abc[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0u);
        *w++ = abc[v >> 18];
        *w++ = abc[(v >> 12) & 63];
        *w++ = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        *w++ = '=';
    }
    *w = '\0';
    t->len = (size_t)(w - t->s);
}

/* The request body for a seeded N(0, 1) input of shape (B, L, D). */
static text make_body(const options *o)
{
    const size_t n = (size_t)o->batch * (size_t)o->len * (size_t)o->d_model;
    float *x = xrealloc(NULL, n * sizeof *x); /* (B, L, D) */
    bench_rng r = bench_rng_new(3);
    bench_fill_normal(&r, x, n);
    text t = {0};
    if (o->b64) {
        /* x86-64 is little-endian, which is what the API wants. */
        text_printf(&t, "{\"embeddings_b64\":\"");
        text_base64(&t, (const unsigned char *)x, n * sizeof *x);
        text_printf(&t, "\",\"shape\":[%d,%d,%d],\"attention\":\"%s\",\"encoding\":\"base64\"}",
                    o->batch, o->len, o->d_model, o->attention);
    } else {
        text_printf(&t, "{\"embeddings\":[");
        size_t k = 0;
        for (int b = 0; b < o->batch; b++) {
            text_printf(&t, b ? ",[" : "[");
            for (int i = 0; i < o->len; i++) {
                text_printf(&t, i ? ",[" : "[");
                for (int d = 0; d < o->d_model; d++)
                    text_printf(&t, d ? ",%.9g" : "%.9g", (double)x[k++]);
                text_printf(&t, "]");
            }
            text_printf(&t, "]");
        }
        text_printf(&t, "],\"attention\":\"%s\",\"encoding\":\"json\",\"precision\":9}",
                    o->attention);
    }
    free(x);
    return t;
}

/* libcurl: keep the first bytes of the body (for error messages), count all. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    client *c = arg;
    size_t len = size * n, room = sizeof c->head - 1 - c->head_len;
    size_t take = len < room ? len : room;
    memcpy(c->head + c->head_len, p, take);
    c->head_len += take;
    c->head[c->head_len] = '\0';
    c->body_bytes += len;
    return len;
}

/* libcurl: pick X-Compute-Ms out of the response headers. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    client *c = arg;
    static const char name[] = "X-Compute-Ms:";
    size_t len = size * n;
    if (len > sizeof name && !strncasecmp(p, name, sizeof name - 1)) {
        char num[32];
        size_t k = len - (sizeof name - 1);
        k = k < sizeof num - 1 ? k : sizeof num - 1;
        memcpy(num, p + sizeof name - 1, k);
        num[k] = '\0';
        c->compute_ms = strtod(num, NULL);
    }
    return len;
}

static void client_init(client *c, const options *o, const text *body)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    c->body = body->s;
    c->body_len = body->len;
    if (!(c->curl = curl_easy_init()))
        die("curl_easy_init failed");
    char url[256];
    snprintf(url, sizeof url, "http://%s:%d/v1/encode", o->host, o->port);
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    /* No "Expect: 100-continue" round trip for large bodies. */
    c->headers = curl_slist_append(c->headers, "Expect:");
    if (!c->headers)
        die("curl_slist_append failed");
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 60L);
}

static void client_free(client *c)
{
    curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    free(c->ms);
    free(c->compute);
}

/* Sends the request once.  A response other than 200 counts as an error; a
 * 200 with record set counts as ok and its end-to-end milliseconds and
 * X-Compute-Ms are kept (record 0: a warm-up request). */
static void client_send(client *c, int record)
{
    c->head_len = c->body_bytes = 0;
    c->head[0] = '\0';
    c->compute_ms = -1;
    double t0 = bench_now_ms();
    CURLcode rc = curl_easy_perform(c->curl);
    double ms = bench_now_ms() - t0;
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    c->last_status = rc == CURLE_OK ? status : -(long)rc;
    long connects = 0;
    curl_easy_getinfo(c->curl, CURLINFO_NUM_CONNECTS, &connects);
    c->connects += connects;
    if (status != 200) {
        c->errors++;
        return;
    }
    if (!record)
        return;
    c->ok++;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->ms = xrealloc(c->ms, c->cap * sizeof *c->ms);
        c->compute = xrealloc(c->compute, c->cap * sizeof *c->compute);
    }
    c->ms[c->n] = ms;
    c->compute[c->n] = c->compute_ms;
    c->n++;
}

/* Why the last request failed, in one line. */
static void client_report_error(const client *c)
{
    if (c->last_status < 0)
        fprintf(stderr, "http_bench: request failed: %s\n",
                curl_easy_strerror((CURLcode)-c->last_status));
    else
        fprintf(stderr, "http_bench: HTTP %ld: %.120s\n", c->last_status, c->head);
}

/* Minor page faults of process pid so far (/proc/PID/stat field 10), or -1. */
static long minor_faults(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    long v = -1;
    /* after ")": state ppid pgrp session tty_nr tpgid flags minflt */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %ld", &v) != 1)
        return -1;
    return v;
}

static int run_latency(const options *o, const text *body)
{
    client c;
    client_init(&c, o, body);
    for (int i = 0; i < o->warmup; i++) {
        client_send(&c, 0);
        if (c.errors) {
            client_report_error(&c);
            client_free(&c);
            return 1;
        }
    }
    const long faults0 = o->pid ? minor_faults(o->pid) : -1;
    double end = bench_now_ms() + o->seconds * 1e3;
    while (c.n < (size_t)o->max_requests && bench_now_ms() < end && !c.errors) {
        client_send(&c, 1);
    }
    const long faults1 = faults0 >= 0 ? minor_faults(o->pid) : -1;
    if (c.errors || c.n == 0) {
        client_report_error(&c);
        client_free(&c);
        return 1;
    }
    bench_sort(c.ms, c.n);
    bench_sort(c.compute, c.n);
    double p50 = bench_percentile(c.ms, c.n, 50), p99 = bench_percentile(c.ms, c.n, 99);
    double compute = bench_percentile(c.compute, c.n, 50);
    printf("%s B=%d L=%d, %zu requests on %ld connection(s): p50 %.3f ms, p99 %.3f ms, "
           "min %.3f ms; daemon X-Compute-Ms median %.3f ms; request %.1f KiB, response "
           "%.1f KiB\n",
           o->b64 ? "base64 in/out" : "JSON in/out (precision 9)", o->batch, o->len, c.n,
           c.connects, p50, p99, c.ms[0], compute, (double)c.body_len / 1024,
           (double)c.body_bytes / 1024);
    printf("RESULT %s_p50_ms=%.3f %s_p99_ms=%.3f %s_compute_ms=%.3f %s_requests=%zu\n", o->name,
           p50, o->name, p99, o->name, compute, o->name, c.n);
    if (faults1 >= 0) {
        /* the response's pages: what first-touching it all would cost */
        const double per = (double)(faults1 - faults0) / (double)c.n;
        const double pages = (double)c.body_bytes / 4096;
        printf("daemon minor faults per request: %.1f (%.2f%% of the response's %.0f pages)\n",
               per, 100 * per / pages, pages);
        printf("RESULT %s_faults=%.1f %s_fault_pct=%.3f\n", o->name, per, o->name,
               100 * per / pages);
    }
    client_free(&c);
    return 0;
}

/* A throughput client: connect and warm up, wait for the others, then send
 * until the time is up. */
static void *client_main(void *arg)
{
    client *c = arg;
    client_send(c, 0);
    pthread_barrier_wait(c->start);
    const double deadline = bench_now_ms() + c->o->seconds * 1e3;
    while (bench_now_ms() < deadline)
        client_send(c, 1);
    return NULL;
}

static int run_throughput(const options *o, const text *body)
{
    const int n = o->clients;
    client *cs = xrealloc(NULL, (size_t)n * sizeof *cs);
    pthread_t *tids = xrealloc(NULL, (size_t)n * sizeof *tids);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        client_init(&cs[i], o, body);
        cs[i].start = &start;
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&tids[i], NULL, client_main, &cs[i]) != 0)
            die("cannot start client thread %d", i);
    /* The barrier opens when every client has had its warm-up response. */
    pthread_barrier_wait(&start);
    const double t0 = bench_now_ms();
    for (int i = 0; i < n; i++)
        pthread_join(tids[i], NULL);
    double elapsed_s = (bench_now_ms() - t0) / 1e3;

    long ok = 0, errors = 0, connects = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        ok += cs[i].ok;
        errors += cs[i].errors;
        connects += cs[i].connects;
        total += cs[i].n;
    }
    double *all = xrealloc(NULL, (total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < cs[i].n; j++)
            all[k++] = cs[i].ms[j];
    bench_sort(all, total);
    const double tokens = (double)ok * o->batch * o->len, tps = tokens / elapsed_s;
    printf("%d client(s) on %ld connection(s) x B=%d L=%d %s requests for %.2f s: %ld ok, "
           "%ld errors, %.1f requests/s, %.0f tokens/s; latency p50 %.3f ms, p99 %.3f ms\n",
           n, connects, o->batch, o->len, o->b64 ? "base64" : "JSON", elapsed_s, ok, errors,
           (double)ok / elapsed_s, tps, total ? bench_percentile(all, total, 50) : 0.0,
           total ? bench_percentile(all, total, 99) : 0.0);
    printf("RESULT %s_tokens_per_s=%.1f %s_requests=%ld %s_errors=%ld\n", o->name, tps, o->name, ok,
           o->name, errors);
    if (errors)
        for (int i = 0; i < n; i++)
            if (cs[i].errors) {
                client_report_error(&cs[i]);
                break;
            }
    for (int i = 0; i < n; i++)
        client_free(&cs[i]);
    pthread_barrier_destroy(&start);
    free(all);
    free(tids);
    free(cs);
    return errors || ok == 0 ? 1 : 0;
}

static void usage(void)
{
    fputs("usage: http_bench latency --port P --format b64|json --batch B --len L\n"
          "                          [--seconds S] [--max-requests N] [--warmup W]\n"
          "       http_bench throughput --port P --clients C --batch B --len L --seconds S\n"
          "       common: [--host H] [--d-model D] [--name KEY] [--attention heads|mean|none]\n"
          "               [--pid PID]\n",
          stderr);
    exit(2);
}

static int parse_int(const char *flag, const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0 || v > (1L << 24)) {
        fprintf(stderr, "http_bench: %s '%s' must be a non-negative integer\n", flag, s);
        exit(2);
    }
    return (int)v;
}

static options parse_args(int argc, char **argv)
{
    options o = {.host = "127.0.0.1",
                 .name = "http",
                 .b64 = 1,
                 .batch = 1,
                 .len = 128,
                 .d_model = 768,
                 .clients = 1,
                 .seconds = 5,
                 .max_requests = 1000000,
                 .warmup = 3,
                 .attention = "heads"};
    if (argc < 2)
        usage();
    o.mode = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(f, "--port"))
            o.port = parse_int(f, v);
        else if (!strcmp(f, "--host"))
            o.host = v;
        else if (!strcmp(f, "--attention")) {
            if (strcmp(v, "heads") && strcmp(v, "mean") && strcmp(v, "none"))
                usage();
            o.attention = v;
        } else if (!strcmp(f, "--name"))
            o.name = v;
        else if (!strcmp(f, "--format")) {
            if (strcmp(v, "b64") && strcmp(v, "json"))
                usage();
            o.b64 = !strcmp(v, "b64");
        } else if (!strcmp(f, "--batch"))
            o.batch = parse_int(f, v);
        else if (!strcmp(f, "--len"))
            o.len = parse_int(f, v);
        else if (!strcmp(f, "--d-model"))
            o.d_model = parse_int(f, v);
        else if (!strcmp(f, "--clients"))
            o.clients = parse_int(f, v);
        else if (!strcmp(f, "--seconds"))
            o.seconds = strtod(v, NULL);
        else if (!strcmp(f, "--max-requests"))
            o.max_requests = parse_int(f, v);
        else if (!strcmp(f, "--pid"))
            o.pid = parse_int(f, v);
        else if (!strcmp(f, "--warmup"))
            o.warmup = parse_int(f, v);
        else
            usage();
    }
    if (o.port < 1 || o.port > 65535 || o.batch < 1 || o.len < 1 || o.d_model < 1 ||
        o.clients < 1 || !(o.seconds > 0) || o.max_requests < 1)
        usage();
    return o;
}

int main(int argc, char **argv)
{
    options o = parse_args(argc, argv);
    if (strcmp(o.mode, "latency") && strcmp(o.mode, "throughput"))
        usage();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        die("curl_global_init failed");
    text body = make_body(&o);
    int rc = !strcmp(o.mode, "latency") ? run_latency(&o, &body) : run_throughput(&o, &body);
    free(body.s);
    curl_global_cleanup();
    return rc;
}
