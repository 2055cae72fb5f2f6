/* check_lifecycle.c - build/attnd from start to exit, over HTTP on an
 * ephemeral 127.0.0.1 port: configuration's precedence (flag over
 * environment over file), start-up errors and --help, 503 while the model
 * loads, the platform it reports, a full queue's 429, a graceful shutdown
 * with requests in flight, SIGTERM on any thread, and the drain
 * (server.drain_seconds). */
#include "daemon.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- configuration and start-up ----------------------------------------- */

static char *model_name_of(int port)
{
    http_resp r;
    ck_assert_int_eq(http_do(port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *j = http_json_body(&r);
    char *name = strdup(json_string_value(json_object_get(j, "name")));
    json_decref(j);
    http_resp_free(&r);
    return name;
}

START_TEST(test_config_precedence)
{
    char path[] = "/tmp/attnd-cfg-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *file = "{\"model\": {\"name\": \"from-file\", \"d_model\": 16, \"n_heads\": 4, "
                       "\"d_ff\": 32}}";
    ck_assert_int_eq(write(fd, file, strlen(file)), (ssize_t)strlen(file));
    close(fd);
    char cfg_env[64];
    snprintf(cfg_env, sizeof cfg_env, "ATTND_CONFIG=%s", path);
    /* file only */
    start_or_fail(NULL, (const char *const[]){cfg_env, NULL});
    char *n = model_name_of(dp.port);
    ck_assert_str_eq(n, "from-file");
    free(n);
    daemon_stop(&dp);
    /* env over file */
    start_or_fail(NULL, (const char *const[]){cfg_env, "ATTND_MODEL_NAME=from-env", NULL});
    n = model_name_of(dp.port);
    ck_assert_str_eq(n, "from-env");
    free(n);
    daemon_stop(&dp);
    /* flag over env over file */
    start_or_fail((const char *const[]){"--model-name", "from-flag", NULL},
                  (const char *const[]){cfg_env, "ATTND_MODEL_NAME=from-env", NULL});
    n = model_name_of(dp.port);
    ck_assert_str_eq(n, "from-flag");
    free(n);
    daemon_stop(&dp);
    unlink(path);
}
END_TEST

START_TEST(test_startup_errors)
{
    char *out = NULL;
    /* --help lists flags with their variables and defaults. */
    ck_assert_int_eq(run_attnd((const char *const[]){"--help", NULL}, NULL, &out), 0);
    const char *flags[] = {"--port",    "ATTND_PORT",  "--weights",      "ATTND_WEIGHTS",
                           "--api-key", "--max-batch", "--check-config", "8080"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        ck_assert_msg(strstr(out, flags[i]), "--help lacks %s", flags[i]);
    free(out);
    /* An invalid setting: one line naming it, non-zero. */
    ck_assert_int_ne(run_attnd((const char *const[]){"--n-heads", "7", NULL}, NULL, &out), 0);
    ck_assert_msg(strstr(out, "n_heads (7)"), "%s", out);
    ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
    free(out);
    ck_assert_int_ne(run_attnd(NULL, (const char *const[]){"ATTND_PORT=http", NULL}, &out), 0);
    ck_assert_msg(strstr(out, "ATTND_PORT"), "%s", out);
    free(out);
    /* A broken weights file: the tensor is named, non-zero. */
    const char *bad = TESTS_DIR "/fixtures/safetensors/model/";
    char wpath[512];
    snprintf(wpath, sizeof wpath, "%s%s", bad, "wrong_shape.safetensors");
    if (access(wpath, R_OK) != 0)
        snprintf(wpath, sizeof wpath, "%s%s", bad, "shape.safetensors");
    const char *tiny[] = {"--check-config", "--d-model", "4",         "--n-heads", "2",
                          "--d-ff",         "8",         "--weights", wpath,       NULL};
    ck_assert_int_ne(run_attnd(tiny, NULL, &out), 0);
    ck_assert_msg(strstr(out, "linear1.weight"), "%s", out);
    free(out);
    char vpath[512];
    snprintf(vpath, sizeof vpath, "%s%s", bad, "valid.safetensors");
    tiny[8] = vpath;
    ck_assert_int_eq(run_attnd(tiny, NULL, &out), 0);
    ck_assert_msg(strstr(out, "configuration OK"), "%s", out);
    free(out);
    /* The same refusal at start-up without --check-config. */
    const char *serve[] = {"--port", "0", "--d-model", "4",   "--n-heads", "2",
                           "--d-ff", "8", "--weights", wpath, NULL};
    ck_assert_int_ne(run_attnd(serve, NULL, &out), 0);
    ck_assert_msg(strstr(out, "linear1.weight"), "%s", out);
    free(out);
}
END_TEST

/* attnd listens before it builds the model: until then /health and
 * /v1/encode say 503.  A model of 400M parameters takes long enough to build
 * that the window is seen (the test waits for the listening line, then asks). */
START_TEST(test_starting_503)
{
    daemon_proc d;
    memset(&d, 0, sizeof d);
    pthread_mutex_init(&d.lock, NULL);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    d.pid = fork();
    if (d.pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(ATTND_BIN, ATTND_BIN, "--host", "127.0.0.1", "--port", "0", "--d-model", "2048",
              "--d-ff", "8192", "--n-layers", "8", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char log[4096] = "";
    size_t len = 0;
    int port = 0;
    while (!port && len < sizeof log - 1) {
        ssize_t n = read(fds[0], log + len, sizeof log - 1 - len);
        ck_assert_int_gt(n, 0);
        len += (size_t)n;
        log[len] = '\0';
        const char *p = strstr(log, "listening on http://");
        const char *colon = p ? strchr(p + 20, ':') : NULL;
        if (colon && strchr(colon, '\n'))
            port = atoi(colon + 1);
    }
    http_resp r;
    ck_assert_int_eq(http_do(port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.body, "{\"status\":\"starting\"}");
    http_resp_free(&r);
    ck_assert_int_eq(http_post_json(port, "/v1/encode", "{\"embeddings\": [[1]]}", &r), 0);
    http_assert_error(&r, 503, "unavailable", "loading");
    http_resp_free(&r);
    kill(d.pid, SIGKILL); /* no need to wait for 1.6 GB of weights */
    waitpid(d.pid, NULL, 0);
    close(fds[0]);
    pthread_mutex_destroy(&d.lock);
}
END_TEST

/* ---- shutdown ------------------------------------------------------------ */

typedef struct slow_req {
    int port;
    const char *body;
    long status;
} slow_req;

static void *send_slow(void *arg)
{
    slow_req *s = arg;
    http_resp r;
    if (http_post_json(s->port, "/v1/encode", s->body, &r) == 0)
        s->status = r.status;
    http_resp_free(&r);
    return NULL;
}

/* A body of B sequences of L tokens of width D. */
static char *big_body(int B, int L, int D)
{
    size_t cap = (size_t)B * L * D * 8 + 64, n = 0;
    char *s = xcalloc(cap, 1);
    n += (size_t)sprintf(s + n, "{\"attention\": \"none\", \"embeddings\": [");
    for (int b = 0; b < B; b++) {
        s[n++] = '[';
        for (int i = 0; i < L; i++) {
            s[n++] = '[';
            for (int k = 0; k < D; k++)
                n += (size_t)sprintf(s + n, "%s%d", k ? "," : "", (i * 7 + k) % 5 - 2);
            s[n++] = ']';
            if (i + 1 < L)
                s[n++] = ',';
        }
        s[n++] = ']';
        if (b + 1 < B)
            s[n++] = ',';
    }
    sprintf(s + n, "]}");
    return s;
}

static size_t keep_body(char *ptr, size_t size, size_t n, void *arg)
{
    char *dst = arg; /* a 256-byte buffer */
    size_t have = strlen(dst), add = size * n;
    if (have + add < 256) {
        memcpy(dst + have, ptr, add);
        dst[have + add] = '\0';
    }
    return size * n;
}

/* GET /health on a kept-alive curl handle: the status, the body in body. */
static long health_on(CURL *c, int port, char body[256])
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/health", port);
    body[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

START_TEST(test_graceful_shutdown)
{
    /* Requests still running at SIGTERM: the compute pool holds them for up
     * to a second to batch them (a slow model alone is not enough on a fast
     * machine: the first can finish before the third is sent). */
    start_or_fail((const char *const[]){"--d-model", "256", "--n-heads", "4", "--d-ff", "1024",
                                        "--n-layers", "6", "--forward-threads", "1",
                                        "--batch-delay-ms", "1000", NULL},
                  NULL);
    char *body = big_body(1, 384, 256);
    /* A connection opened before SIGTERM, kept alive, to watch /health. */
    CURL *watch = curl_easy_init();
    char hbody[256];
    ck_assert_int_eq(health_on(watch, dp.port, hbody), 200);
    slow_req reqs[3];
    pthread_t tids[3];
    for (int i = 0; i < 3; i++) {
        reqs[i] = (slow_req){.port = dp.port, .body = body};
        pthread_create(&tids[i], NULL, send_slow, &reqs[i]);
    }
    /* And one whose body is not all sent: the daemon cannot end before it
     * is, so what follows SIGTERM is checked on a daemon that is certainly
     * still stopping, however fast the three finish (on a busy machine the
     * batch delay may be spent by the time SIGTERM comes). */
    char *held_body = big_body(1, 2, 256), head[160];
    const size_t held_len = strlen(held_body);
    const int hold = raw_connect(dp.port);
    ck_assert_int_ge(hold, 0);
    snprintf(head, sizeof head,
             "POST /v1/encode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             held_len);
    ck_assert_int_eq(raw_send(hold, head, strlen(head)), 0);
    ck_assert_int_eq(raw_send(hold, held_body, held_len - 2), 0);
    /* Wait until all five are in flight (metrics count their own request);
     * the three may have finished on a busy machine, but the held one and
     * the metrics request itself must be: SIGTERM comes while a request is
     * in flight. */
    long in_flight = 0;
    for (int i = 0; i < 1000 && in_flight < 5; i++) {
        in_flight = http_metric(dp.port, "attnd_requests_in_flight");
        if (in_flight < 5)
            usleep(10000);
    }
    ck_assert_msg(in_flight >= 2, "%ld requests in flight before SIGTERM; the held one is",
                  in_flight);
    kill(dp.pid, SIGTERM);
    /* While they finish, /health says 503 on the open connection. */
    long hs = 0;
    for (int i = 0; i < 2000 && hs != 503; i++) {
        hs = health_on(watch, dp.port, hbody);
        usleep(5000);
    }
    ck_assert_int_eq(hs, 503);
    ck_assert_str_eq(hbody, "{\"status\":\"shutting_down\"}");
    /* The held request began before SIGTERM: it is answered in full. */
    ck_assert_int_eq(raw_send(hold, held_body + held_len - 2, 2), 0);
    ck_assert_int_eq(raw_status(hold, 30000), 200);
    close(hold);
    free(held_body);
    curl_easy_cleanup(watch);
    for (int i = 0; i < 3; i++) {
        pthread_join(tids[i], NULL);
        ck_assert_msg(reqs[i].status == 200, "request %d got %ld", i, reqs[i].status);
    }
    /* The listener closes: new connections fail (tried until one does,
     * bounded: the state is observed, not waited for). */
    http_resp r;
    int refused = 0;
    for (int i = 0; i < 500 && !(refused = http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r));
         i++) {
        http_resp_free(&r);
        usleep(10000);
    }
    ck_assert_msg(refused, "the daemon still accepted connections after its drain");
    http_resp_free(&r);
    int status = 0;
    waitpid(dp.pid, &status, 0);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    dp.pid = 0;
    char *log = daemon_log(&dp);
    ck_assert_ptr_nonnull(strstr(log, "SIGTERM"));
    free(log);
    daemon_stop(&dp);
    free(body);
}
END_TEST

/* Waits (bounded) until the daemon's log holds text; returns whether it did. */
static bool log_has(const char *text)
{
    for (int i = 0; i < 400; i++) {
        char *log = daemon_log(&dp);
        const bool found = strstr(log, text) != NULL;
        free(log);
        if (found)
            return true;
        usleep(25000);
    }
    return false;
}

/* Waits (bounded) for the daemon to exit; returns its exit status, or -1. */
static int wait_exit(void)
{
    for (int i = 0; i < 600; i++) {
        int status = 0;
        if (waitpid(dp.pid, &status, WNOHANG) == dp.pid) {
            dp.pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        usleep(50000);
    }
    return -1;
}

/* A thread of the daemon that does not block sig (its SigBlk mask in
 * /proc), other than the main thread; 0 when there is none. */
static pid_t thread_taking(pid_t pid, int sig)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        const pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == pid)
            continue;
        char path[96], line[128];
        snprintf(path, sizeof path, "%s/%d/status", dir, (int)tid);
        FILE *fp = fopen(path, "r");
        while (fp && fgets(line, sizeof line, fp))
            if (strncmp(line, "SigBlk:", 7) == 0 &&
                !(strtoull(line + 7, NULL, 16) & (1ull << (sig - 1))))
                found = tid;
        if (fp)
            fclose(fp);
    }
    if (d)
        closedir(d);
    return found;
}

START_TEST(test_sigterm_on_any_thread)
{
    /* OpenBLAS starts its threads in a constructor, before main blocks
     * SIGTERM: one delivered to such a thread (the kernel picks any thread
     * that does not block it, as when main is not yet in sigwait) must
     * still stop attnd gracefully, not end it by the default action. */
    start_or_fail(small_model, (const char *const[]){"OPENBLAS_NUM_THREADS=2", NULL});
    const pid_t tid = thread_taking(dp.pid, SIGTERM);
    ck_assert_msg(tid > 0, "no thread of attnd takes SIGTERM (OpenBLAS started none)");
    ck_assert_int_eq((int)syscall(SYS_tgkill, dp.pid, tid, SIGTERM), 0);
    ck_assert_int_eq(wait_exit(), 0); /* -1: killed by the signal */
    ck_assert(log_has("attnd: stopped"));
    daemon_stop(&dp);
}
END_TEST

/* server.drain_seconds: after SIGTERM readiness is 503 with Retry-After,
 * liveness 200, and new connections are still accepted and served, each
 * answer with Connection: close; a second SIGTERM ends the drain, and the
 * daemon exits 0 with each phase logged. */
START_TEST(test_drain_on_sigterm)
{
    const char *args[] = {"--d-model", "16", "--n-heads",       "4",   "--d-ff", "32",
                          "--seed",    "3",  "--drain-seconds", "600", NULL};
    start_or_fail(args, NULL);
    kill(dp.pid, SIGTERM);
    ck_assert(log_has("draining for 600 s"));
    char v[64];
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/health", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.body, "{\"status\":\"draining\"}");
    /* Retry-After: what is left of the drain, in whole seconds. */
    ck_assert_ptr_nonnull(http_header(&r, "Retry-After", v, sizeof v));
    ck_assert_int_ge(atoi(v), 500);
    ck_assert_int_le(atoi(v), 600);
    http_resp_free(&r);
    static const char *const ready[] = {"/v2/health/ready", "/v2/models/encoder/ready",
                                        "/v2/models/encoder/versions/1/ready"};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(http_do(dp.port, "GET", ready[i], NULL, 0, NULL, &r), 0);
        ck_assert_msg(r.status == 503, "%s: %ld", ready[i], r.status);
        ck_assert_ptr_nonnull(strstr(r.body, "draining"));
        ck_assert_ptr_nonnull(http_header(&r, "Retry-After", v, sizeof v));
        http_resp_free(&r);
    }
    ck_assert_int_eq(http_do(dp.port, "GET", "/v2/health/live", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    /* Still serving, on new connections, and asking each to close. */
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode",
                                    "{\"embeddings\": [[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]]}", &r),
                     0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(http_header(&r, "Connection", v, sizeof v), "close");
    http_resp_free(&r);
    kill(dp.pid, SIGTERM);
    ck_assert_int_eq(wait_exit(), 0);
    ck_assert(log_has("attnd: stopped"));
    char *log = daemon_log(&dp);
    const char *a = strstr(log, "draining for 600 s"),
               *b = strstr(log, "SIGTERM: the drain ends now"),
               *c = strstr(log, "no longer accepting"), *d = strstr(log, "attnd: stopped");
    ck_assert_msg(a && b && c && d && a < b && b < c && c < d, "phases not logged in order:\n%s",
                  log);
    free(log);
    daemon_stop(&dp);
}
END_TEST

/* A drain that runs its course: the daemon stops accepting by itself and
 * exits 0 once the period is over. */
START_TEST(test_drain_period_ends)
{
    const char *args[] = {"--d-model", "16", "--n-heads",       "4", "--d-ff", "32",
                          "--seed",    "3",  "--drain-seconds", "1", NULL};
    start_or_fail(args, NULL);
    kill(dp.pid, SIGINT);
    ck_assert_int_eq(wait_exit(), 0);
    ck_assert(log_has("attnd: stopped"));
    char *log = daemon_log(&dp);
    const char *a = strstr(log, "SIGINT: draining for 1 s"),
               *b = strstr(log, "drain period is over"), *c = strstr(log, "no longer accepting");
    ck_assert_msg(a && b && c && a < b && b < c, "phases not logged in order:\n%s", log);
    free(log);
    daemon_stop(&dp);
}
END_TEST

/* Whether /proc/cpuinfo's first "flags" line lists flag. */
static bool cpu_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    ck_assert_ptr_nonnull(f);
    char line[8192];
    bool found = false;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            for (char *t = strtok(strchr(line, ':') + 1, " \n"); t; t = strtok(NULL, " \n"))
                found |= strcmp(t, flag) == 0;
            break;
        }
    fclose(f);
    return found;
}

/* The BLAS the daemon runs on, in its ready line and /v1/model; an OpenBLAS
 * core older than the CPU (OPENBLAS_CORETYPE=Prescott stands for Debian's
 * OpenBLAS on a CPU it does not know) is warned about on a CPU with AVX2. */
START_TEST(test_platform_reported)
{
    start_or_fail(small_model, (const char *const[]){"OPENBLAS_CORETYPE=Prescott", NULL});
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    json_t *j = http_json_body(&r);
    json_t *pf = json_object_get(j, "platform");
    ck_assert_str_eq(json_string_value(json_object_get(pf, "blas_core")), "Prescott");
    /* The CPU the daemon runs on, from the kernel (not this process's own
     * view: valgrind's CPU has no AVX-512). */
    const bool avx512 = cpu_flag("avx512f"), avx2 = cpu_flag("avx2");
    ck_assert_str_eq(json_string_value(json_object_get(pf, "cpu_simd")), avx512 ? "avx512f"
                                                                         : avx2 ? "avx2"
                                                                         : cpu_flag("avx")
                                                                             ? "avx"
                                                                             : "sse2");
    ck_assert(json_is_boolean(json_object_get(pf, "blas_core_generic")));
    ck_assert_int_eq(json_is_true(json_object_get(pf, "blas_core_generic")), avx2);
    ck_assert(log_has("OpenBLAS core Prescott)"));
    char *log = daemon_log(&dp);
    ck_assert_int_eq(strstr(log, "warning: OpenBLAS runs its Prescott kernels") != NULL, avx2);
    free(log);
    json_decref(j);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_queue_full_429)
{
    /* A queue of one, held full: the batch delay keeps the first request
     * queued (it waits there for others to join), so one sent meanwhile
     * finds no room, whatever the speed of the machine or of the client
     * (under valgrind, requests racing each other could all be served one
     * after the other). */
    start_or_fail((const char *const[]){"--d-model", "256", "--n-heads", "4", "--d-ff", "1024",
                                        "--n-layers", "2", "--queue-size", "1", "--workers", "1",
                                        "--batch-delay-ms", "3000", NULL},
                  NULL);
    char *body = big_body(1, 4, 256);
    slow_req first = {.port = dp.port, .body = body};
    pthread_t tid;
    pthread_create(&tid, NULL, send_slow, &first);
    long depth = 0;
    for (int i = 0; i < 1000 && depth != 1; i++) {
        depth = http_metric(dp.port, "attnd_queue_depth");
        if (depth != 1)
            usleep(2000);
    }
    ck_assert_int_eq(depth, 1);
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
    http_assert_error(&r, 429, "queue_full", "compute.queue_size 1");
    char ra[16];
    ck_assert_ptr_nonnull(http_header(&r, "Retry-After", ra, sizeof ra));
    ck_assert_str_eq(ra, "1");
    http_resp_free(&r);
    pthread_join(tid, NULL);
    ck_assert_int_eq(first.status, 200);
    /* Room again once the first has run. */
    ck_assert_int_eq(http_metric(dp.port, "attnd_queue_depth"), 0);
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    free(body);
}
END_TEST
Suite *lifecycle_suite(void)
{
    Suite *s = timed_suite("lifecycle");
    TCase *tc = timed_case(s, "daemon", 120);
    tcase_add_test(tc, test_config_precedence);
    tcase_add_test(tc, test_startup_errors);
    tcase_add_test(tc, test_starting_503);
    tcase_add_test(tc, test_graceful_shutdown);
    tcase_add_test(tc, test_sigterm_on_any_thread);
    tcase_add_test(tc, test_queue_full_429);
    tcase_add_test(tc, test_drain_on_sigterm);
    tcase_add_test(tc, test_drain_period_ends);
    tcase_add_test(tc, test_platform_reported);
    return s;
}
