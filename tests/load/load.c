/* load.c - attnd_load: the load test (make test-load, docs/reliability.md).
 *
 * Starts build/attnd on an ephemeral 127.0.0.1 port (tests/daemon.c), keeps
 * --connections keep-alive connections busy with a mix of valid /v1/encode
 * requests (nested JSON, a batch with lengths, base64 in and out, masks) and
 * a few GETs for --seconds, sampling the daemon's resident memory (VmRSS in
 * /proc/PID/status) twice a second.  It passes when there were no transport
 * errors, every response was a 200 (or a 429 from the deliberately short
 * compute queue) with a well-formed body, and VmRSS after warm-up grew by at
 * most --rss-slack-kb.  Then, unless --no-sigterm, a second daemon gets
 * SIGTERM in the middle of the same load: it must exit 0 and every request it
 * accepted (each line of its access log) must have finished with a 200 or a
 * 429 the client received.
 *
 * libcurl's multi interface drives all connections from one thread: it is
 * already the test suite's HTTP client, parses responses properly, reuses
 * connections, and needs no tool outside Debian's libcurl (wrk would need its
 * own package and Lua scripts for the request mix). */
#include "../daemon.h"

#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define D_MODEL   64
#define MAX_CONNS 1024

/* The daemon: small enough that requests are quick, big enough to work. */
static const char *const model_args[] = {"--d-model",  "64", "--n-heads",    "4", "--d-ff", "256",
                                         "--n-layers", "2",  "--queue-size", "32"};
#define N_MODEL_ARGS (sizeof model_args / sizeof *model_args)

typedef struct opts {
    int connections;
    double seconds;
    double warmup;     /* seconds before the RSS baseline */
    long rss_slack_kb; /* allowed VmRSS growth after warm-up */
    bool sigterm;      /* run the SIGTERM phase */
} opts;

/* ---- request bodies ------------------------------------------------------ */

typedef struct body {
    const char *what;
    const char *method;
    const char *path;
    char *text; /* owned; NULL for GET */
} body;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double next_value(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng % 40001) / 10000.0 - 2.0;
}

/* Appends printf text to a growing string. */
static void put(char **s, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char **s, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(*s + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < *cap - *len) {
            *len += (size_t)n;
            return;
        }
        *cap = *cap * 2 + (size_t)(n > 0 ? n : 0);
        if (!(*s = realloc(*s, *cap))) {
            perror("attnd_load");
            exit(2);
        }
    }
}

/* "[[...],[...]]": L rows of D_MODEL numbers. */
static void put_seq(char **s, size_t *len, size_t *cap, int L)
{
    put(s, len, cap, "[");
    for (int i = 0; i < L; i++) {
        put(s, len, cap, "%s[", i ? "," : "");
        for (int k = 0; k < D_MODEL; k++)
            put(s, len, cap, "%s%.4f", k ? "," : "", next_value());
        put(s, len, cap, "]");
    }
    put(s, len, cap, "]");
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64 of n little-endian float32 values (n*4 divisible by 3 not needed). */
static void put_b64(char **s, size_t *len, size_t *cap, size_t n)
{
    unsigned char *raw = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        float f = (float)next_value();
        memcpy(raw + i * 4, &f, 4); /* x86-64 and arm64 are little-endian */
    }
    size_t nb = n * 4;
    for (size_t i = 0; i < nb; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16;
        if (i + 1 < nb)
            v |= (uint32_t)raw[i + 1] << 8;
        if (i + 2 < nb)
            v |= raw[i + 2];
        put(s, len, cap, "%c%c%c%c", b64chars[v >> 18], b64chars[(v >> 12) & 63],
            i + 1 < nb ? b64chars[(v >> 6) & 63] : '=', i + 2 < nb ? b64chars[v & 63] : '=');
    }
    free(raw);
}

static int make_bodies(body *b)
{
    int n = 0;
    size_t len, cap;
    char *s;
#define START() (s = malloc(cap = 4096), len = 0)
    START();
    put(&s, &len, &cap, "{\"embeddings\": ");
    put_seq(&s, &len, &cap, 8);
    put(&s, &len, &cap, "}");
    b[n++] = (body){"json [8][64], heads", "POST", "/v1/encode", s};

    START();
    put(&s, &len, &cap, "{\"embeddings\": [");
    put_seq(&s, &len, &cap, 16);
    put(&s, &len, &cap, ",");
    put_seq(&s, &len, &cap, 16);
    put(&s, &len, &cap, "], \"lengths\": [16, 9], \"attention\": \"mean\", \"precision\": 5}");
    b[n++] = (body){"json [2][16][64], lengths, mean", "POST", "/v1/encode", s};

    START();
    put(&s, &len, &cap, "{\"embeddings_b64\": \"");
    put_b64(&s, &len, &cap, 32 * D_MODEL);
    put(&s, &len, &cap,
        "\", \"shape\": [1, 32, 64], \"encoding\": \"base64\", \"attention\": \"none\"}");
    b[n++] = (body){"base64 [1][32][64], none", "POST", "/v1/encode", s};

    START();
    put(&s, &len, &cap, "{\"embeddings\": ");
    put_seq(&s, &len, &cap, 12);
    put(&s, &len, &cap,
        ", \"mask\": {\"causal\": true, \"window\": {\"left\": 3, \"right\": 0}, "
        "\"global\": [0]}, \"attention_layers\": \"all\"}");
    b[n++] = (body){"json [12][64], causal window, all layers", "POST", "/v1/encode", s};

    b[n++] = (body){"GET /health", "GET", "/health", NULL};
    b[n++] = (body){"GET /metrics", "GET", "/metrics", NULL};
#undef START
    return n;
}

/* ---- the load -------------------------------------------------------------- */

typedef struct slot {
    CURL *easy;
    struct curl_slist *hdr;
    int kind;
    char *resp;
    size_t len, cap;
} slot;

typedef struct tally {
    long requests, ok, ok_encode, too_many, stopping_503, bad_status, bad_body, transport, connects;
    long transport_before_term; /* transport errors before SIGTERM was sent */
    bool termed;                /* SIGTERM sent: /health may say 503 */
    char first_error[256];      /* a sample, for the message */
} tally;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    slot *sl = arg;
    size_t add = size * n;
    if (sl->len + add + 1 > sl->cap) {
        size_t cap = (sl->cap ? sl->cap * 2 : 65536) + add;
        char *r = realloc(sl->resp, cap);
        if (!r)
            return 0;
        sl->resp = r;
        sl->cap = cap;
    }
    memcpy(sl->resp + sl->len, p, add);
    sl->len += add;
    sl->resp[sl->len] = '\0';
    return add;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void slot_request(slot *sl, int port, const body *bodies, int n_bodies, long seq)
{
    char url[128];
    sl->kind = (int)(seq % n_bodies);
    const body *b = &bodies[sl->kind];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, b->path);
    sl->len = 0;
    curl_easy_setopt(sl->easy, CURLOPT_URL, url);
    if (b->text) {
        curl_easy_setopt(sl->easy, CURLOPT_POSTFIELDS, b->text);
        curl_easy_setopt(sl->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(b->text));
    } else {
        curl_easy_setopt(sl->easy, CURLOPT_HTTPGET, 1L);
    }
}

/* Checks one finished transfer; returns its HTTP status (0: none). */
static long account(tally *t, slot *sl, CURLcode rc, const body *bodies)
{
    const body *b = &bodies[sl->kind];
    long status = 0, connects = 0;
    t->requests++;
    curl_easy_getinfo(sl->easy, CURLINFO_NUM_CONNECTS, &connects);
    t->connects += connects;
    if (rc != CURLE_OK) {
        t->transport++;
        if (!t->first_error[0])
            snprintf(t->first_error, sizeof t->first_error, "%s: %s", b->what,
                     curl_easy_strerror(rc));
        return 0;
    }
    curl_easy_getinfo(sl->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status == 429) {
        t->too_many++;
    } else if (t->termed && status == 503 &&
               (strcmp(b->path, "/health") == 0 ||
                (sl->resp && strstr(sl->resp, "the server is shutting down")))) {
        /* shutting down: /health, or a request that began on a kept-alive
         * connection in server_shutdown's last phase */
        t->stopping_503++;
    } else if (status != 200) {
        t->bad_status++;
        if (!t->first_error[0])
            snprintf(t->first_error, sizeof t->first_error, "%s: status %ld: %.150s", b->what,
                     status, sl->resp ? sl->resp : "");
    } else {
        /* A well-formed 200: the route's body, no non-finite number (null). */
        const char *want = strcmp(b->path, "/v1/encode") == 0 ? "\"outputs\""
                           : strcmp(b->path, "/health") == 0  ? "\"ok\""
                                                              : "attnd_requests_total";
        bool good = sl->resp && strstr(sl->resp, want) &&
                    (strcmp(b->path, "/v1/encode") != 0 || !strstr(sl->resp, "null"));
        if (good) {
            t->ok++;
            t->ok_encode += strcmp(b->path, "/v1/encode") == 0;
        } else {
            t->bad_body++;
            if (!t->first_error[0])
                snprintf(t->first_error, sizeof t->first_error, "%s: bad body: %.150s", b->what,
                         sl->resp ? sl->resp : "");
        }
    }
    return status;
}

/* VmRSS of pid in kB, or -1. */
static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    long kb = -1;
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (fp)
        fclose(fp);
    return kb;
}

#define RSS_SAMPLES 4096 /* two a second: 34 minutes */

typedef struct rss_track {
    long start, warm, max_after, end;
    long samples[RSS_SAMPLES]; /* VmRSS every half second */
    int n_samples;
} rss_track;

/* Runs the load for seconds against d; at sigterm_at (>0) sends SIGTERM and
 * stops adding requests once the connections fail.  Fills t and r. */
static void run_load(daemon_proc *d, const opts *o, double seconds, double sigterm_at,
                     const body *bodies, int n_bodies, tally *t, rss_track *r)
{
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)o->connections);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)o->connections);
    slot *slots = calloc((size_t)o->connections, sizeof *slots);
    long seq = 0;
    for (int i = 0; i < o->connections; i++) {
        slot *sl = &slots[i];
        sl->easy = curl_easy_init();
        sl->hdr = curl_slist_append(NULL, "Content-Type: application/json");
        sl->hdr = curl_slist_append(sl->hdr, "Expect:");
        curl_easy_setopt(sl->easy, CURLOPT_HTTPHEADER, sl->hdr);
        curl_easy_setopt(sl->easy, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(sl->easy, CURLOPT_WRITEDATA, sl);
        curl_easy_setopt(sl->easy, CURLOPT_PRIVATE, sl);
        curl_easy_setopt(sl->easy, CURLOPT_TIMEOUT, 60L);
        curl_easy_setopt(sl->easy, CURLOPT_NOSIGNAL, 1L);
        slot_request(sl, d->port, bodies, n_bodies, seq++);
        curl_multi_add_handle(multi, sl->easy);
    }
    const double t0 = now(), end = t0 + seconds;
    double next_sample = t0;
    bool termed = false;
    int running = o->connections;
    memset(r, 0, sizeof *r);
    r->start = rss_kb(d->pid);
    while (running > 0) {
        int still = 0;
        curl_multi_perform(multi, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            slot *sl = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&sl);
            account(t, sl, msg->data.result, bodies);
            curl_multi_remove_handle(multi, sl->easy);
            /* Keep going until the end; after SIGTERM, until the daemon is
             * gone (new connections are refused). */
            bool again = now() < end && !(termed && msg->data.result == CURLE_COULDNT_CONNECT);
            if (again) {
                slot_request(sl, d->port, bodies, n_bodies, seq++);
                curl_multi_add_handle(multi, sl->easy);
            } else {
                running--;
            }
        }
        double tn = now();
        if (sigterm_at > 0 && !termed && tn >= t0 + sigterm_at) {
            kill(d->pid, SIGTERM);
            termed = t->termed = true;
            t->transport_before_term = t->transport;
        }
        if (!termed && tn >= next_sample) {
            long kb = rss_kb(d->pid);
            if (tn - t0 < o->warmup || r->warm == 0)
                r->warm = kb;
            else if (kb > r->max_after)
                r->max_after = kb;
            r->end = kb;
            if (r->n_samples < RSS_SAMPLES)
                r->samples[r->n_samples++] = kb;
            next_sample = tn + 0.5;
        }
        curl_multi_poll(multi, NULL, 0, 50, NULL);
    }
    for (int i = 0; i < o->connections; i++) {
        curl_easy_cleanup(slots[i].easy);
        curl_slist_free_all(slots[i].hdr);
        free(slots[i].resp);
    }
    free(slots);
    curl_multi_cleanup(multi);
}

static void print_tally(const char *phase, const tally *t, double seconds)
{
    printf("%s: %ld requests in %.1f s (%.0f/s): %ld ok, %ld 429, %ld 503 after SIGTERM, "
           "%ld other status, %ld bad bodies, %ld transport errors; %ld connections opened\n",
           phase, t->requests, seconds, t->requests / seconds, t->ok, t->too_many, t->stopping_503,
           t->bad_status, t->bad_body, t->transport, t->connects);
    if (t->first_error[0])
        printf("%s: first failure seen: %s\n", phase, t->first_error);
}

/* ---- the phases ------------------------------------------------------------ */

static int start_daemon(daemon_proc *d, bool access_log)
{
    const char *args[N_MODEL_ARGS + 2];
    size_t n = 0;
    for (; n < N_MODEL_ARGS; n++)
        args[n] = model_args[n];
    args[n++] = access_log ? "--access-log" : "--no-access-log";
    args[n] = NULL;
    if (daemon_start(d, args, (const char *const[]){"OPENBLAS_NUM_THREADS=1", NULL}) != 0) {
        char *log = daemon_log(d);
        fprintf(stderr, "attnd_load: attnd did not start: %s\n", log ? log : "");
        free(log);
        return -1;
    }
    return 0;
}

static int phase_load(const opts *o, const body *bodies, int n_bodies)
{
    daemon_proc d;
    if (start_daemon(&d, false) < 0)
        return 1;
    tally t = {0};
    rss_track r;
    double t0 = now();
    run_load(&d, o, o->seconds, 0, bodies, n_bodies, &t, &r);
    print_tally("load", &t, now() - t0);
    long growth = r.max_after > r.warm ? r.max_after - r.warm : 0;
    printf("load: VmRSS %ld kB at start, %ld kB after %.0f s warm-up, %ld kB at most after, "
           "%ld kB at the end (growth %ld kB, allowed %ld kB)\n",
           r.start, r.warm, o->warmup, r.max_after, r.end, growth, o->rss_slack_kb);
    printf("load: VmRSS every 5 s (kB):");
    for (int i = 0; i < r.n_samples; i += 10)
        printf(" %ld", r.samples[i]);
    printf("\n");
    int status = daemon_stop(&d);
    int fail = 0;
    if (t.transport || t.bad_status || t.bad_body || t.ok == 0) {
        printf("load: FAIL: errors or no successful request\n");
        fail = 1;
    }
    if (r.warm <= 0 || growth > o->rss_slack_kb) {
        printf("load: FAIL: resident memory grew after warm-up\n");
        fail = 1;
    }
    if (status != 0) {
        printf("load: FAIL: attnd exited with %d\n", status);
        fail = 1;
    }
    return fail;
}

/* Counts access-log lines "POST /v1/encode <status> ..." by status. */
static void log_statuses(const char *log, long *s200, long *s429, long *other, char *sample,
                         size_t n)
{
    *s200 = *s429 = *other = 0;
    for (const char *p = log; (p = strstr(p, "\n")); p++) {
        const char *line = p + 1;
        if (strncmp(line, "POST /v1/encode ", 16) && strncmp(line, "GET /", 5))
            continue;
        const char *st = strchr(strchr(line, ' ') + 1, ' ');
        int code = st ? atoi(st + 1) : 0;
        if (strncmp(line, "POST", 4) == 0 && code == 200)
            (*s200)++;
        else if (code == 429)
            (*s429)++;
        else if (code != 200 && code != 503) { /* 503: /health, or refused while stopping */
            (*other)++;
            if (!sample[0]) {
                const char *e = strchr(line, '\n');
                snprintf(sample, n, "%.*s", (int)(e ? e - line : 80), line);
            }
        }
    }
}

static int phase_sigterm(const opts *o, const body *bodies, int n_bodies)
{
    daemon_proc d;
    if (start_daemon(&d, true) < 0)
        return 1;
    tally t = {0};
    rss_track r;
    opts quick = *o;
    quick.warmup = 0;
    double t0 = now();
    run_load(&d, &quick, 30, 1.5, bodies, n_bodies, &t, &r);
    int wstatus = 0;
    waitpid(d.pid, &wstatus, 0);
    pthread_join(d.reader, NULL);
    d.pid = 0;
    char *log = daemon_log(&d);
    print_tally("sigterm", &t, now() - t0);
    long l200 = 0, l429 = 0, lother = 0;
    char sample[160] = "";
    log_statuses(log, &l200, &l429, &lother, sample, sizeof sample);
    printf("sigterm: attnd logged %ld /v1/encode 200s, %ld 429s, %ld unfinished or failed; the "
           "client received %ld good /v1/encode 200s; %ld transport failures, all after SIGTERM "
           "(connections refused, or closed before a request was read)\n",
           l200, l429, lother, t.ok_encode, t.transport - t.transport_before_term);
    int fail = 0;
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        printf("sigterm: FAIL: attnd did not exit 0 (%s %d)\n",
               WIFSIGNALED(wstatus) ? "killed by signal" : "exit status",
               WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus));
        fail = 1;
    }
    if (lother) {
        printf("sigterm: FAIL: an accepted request did not finish: %s\n", sample);
        fail = 1;
    }
    if (t.bad_status || t.bad_body || t.transport_before_term || l200 == 0 || t.ok_encode != l200) {
        printf("sigterm: FAIL: a response was wrong or lost\n");
        fail = 1;
    }
    if (!strstr(log, "attnd: stopped")) {
        printf("sigterm: FAIL: no clean stop in the log\n");
        fail = 1;
    }
    if (fail) { /* what attnd said last, for whoever reads the failure */
        const size_t len = strlen(log);
        printf("sigterm: the end of attnd's log:\n%s\n", log + (len > 3000 ? len - 3000 : 0));
    }
    free(log);
    daemon_stop(&d);
    return fail;
}

static void usage(void)
{
    fputs("usage: attnd_load [--seconds S] [--connections N] [--warmup S] [--rss-slack-kb K]\n"
          "                  [--no-sigterm]\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    opts o = {
        .connections = 64, .seconds = 10, .warmup = -1, .rss_slack_kb = 8192, .sigterm = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-sigterm") == 0) {
            o.sigterm = false;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (strcmp(a, "--seconds") == 0)
            o.seconds = atof(v);
        else if (strcmp(a, "--connections") == 0)
            o.connections = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            o.warmup = atof(v);
        else if (strcmp(a, "--rss-slack-kb") == 0)
            o.rss_slack_kb = atol(v);
        else
            usage();
    }
    if (o.seconds <= 0 || o.connections < 1 || o.connections > MAX_CONNS)
        usage();
    if (o.warmup < 0)
        o.warmup = o.seconds / 4 < 3 ? o.seconds / 4 : 3;
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    body bodies[8];
    int n_bodies = make_bodies(bodies);
    printf("attnd_load: %d connections for %.0f s; requests:", o.connections, o.seconds);
    for (int i = 0; i < n_bodies; i++)
        printf("%s %s", i ? ";" : "", bodies[i].what);
    printf("\n");
    fflush(stdout);
    int fail = phase_load(&o, bodies, n_bodies);
    fflush(stdout);
    if (o.sigterm)
        fail |= phase_sigterm(&o, bodies, n_bodies);
    for (int i = 0; i < n_bodies; i++)
        free(bodies[i].text);
    curl_global_cleanup();
    printf("attnd_load: %s\n", fail ? "FAILED" : "passed");
    return fail ? 1 : 0;
}
