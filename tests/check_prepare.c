/* check_prepare.c - large bodies parsed and tokenized on the prepare
 * workers (server/runtime/prepare.h), off the HTTP threads: the pool itself
 * (order, a stop that runs what is queued, refusal after it, priority),
 * then
 * build/attnd with one HTTP thread and one prepare worker: a small
 * /v1/embeddings request answered while 256 KiB texts are still queued on
 * other connections; a 256 KiB text cut to the token limit answering what its
 * first words answer on the HTTP thread (/v1/embeddings, /v1/tokenize), and
 * refused uncut with the contract's 413; clients that close their
 * connection mid-prepare; SIGTERM with prepares queued. */
#include "daemon.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include "base/clock.h"
#include "runtime/prepare.h"

#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the pool ------------------------------------------------------------ */

typedef struct order_job {
    prepare_job job;
    int index;
    int *log, *n; /* where run writes its index, under lock */
    pthread_mutex_t *lock;
} order_job;

static void log_index(prepare_job *job, void *arg)
{
    (void)job;
    order_job *o = arg;
    pthread_mutex_lock(o->lock);
    o->log[(*o->n)++] = o->index;
    pthread_mutex_unlock(o->lock);
}

/* One worker runs jobs in the order they came; prepare_stop runs every one
 * still queued before it returns; later jobs are refused and never run. */
START_TEST(test_pool_order_and_stop)
{
    enum { N = 200 };
    static order_job jobs[N + 1];
    int log[N + 1], n = 0;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    prepare *p = prepare_new(1, false);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i <= N; i++)
        jobs[i] = (order_job){.job = {.run = log_index, .arg = &jobs[i]},
                              .index = i,
                              .log = log,
                              .n = &n,
                              .lock = &lock};
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(prepare_submit(p, &jobs[i].job), 0);
    prepare_stop(p);
    ck_assert_int_eq(n, N);
    for (int i = 0; i < N; i++)
        EXPECT(log[i] == i, "job %d ran in place %d", log[i], i);
    ck_assert_int_eq(prepare_submit(p, &jobs[N].job), -1);
    prepare_stop(p); /* again: nothing to join */
    prepare_free(p);
    ck_assert_int_eq(n, N);
    /* no workers: no pool, and nothing can be queued */
    ck_assert_ptr_null(prepare_new(0, false));
    ck_assert_int_eq(prepare_submit(NULL, &jobs[0].job), -1);
    prepare_free(NULL);
}
END_TEST

static void record_priority(prepare_job *job, void *arg)
{
    (void)job;
    int *got = arg;
    got[0] = sched_getscheduler(0);
    errno = 0;
    got[1] = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}

/* A worker runs its jobs at nice 10, or at SCHED_IDLE when asked
 * (server.tokenize_idle). */
START_TEST(test_pool_priority)
{
    for (int idle = 0; idle < 2; idle++) {
        int got[2] = {-2, -2};
        prepare_job job = {.run = record_priority, .arg = got};
        prepare *p = prepare_new(1, idle);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(prepare_submit(p, &job), 0);
        prepare_stop(p);
        prepare_free(p);
        if (idle)
            ck_assert_msg(got[0] == SCHED_IDLE, "policy %d, want SCHED_IDLE", got[0]);
        else
            ck_assert_msg(got[0] == SCHED_OTHER && got[1] == 10, "policy %d nice %d, want nice 10",
                          got[0], got[1]);
    }
}
END_TEST

/* Several workers: every job runs once. */
START_TEST(test_pool_workers_run_all)
{
    enum { N = 500 };
    static order_job jobs[N];
    static int log[N];
    int n = 0;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    prepare *p = prepare_new(3, false);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < N; i++) {
        jobs[i] = (order_job){.job = {.run = log_index, .arg = &jobs[i]},
                              .index = i,
                              .log = log,
                              .n = &n,
                              .lock = &lock};
        ck_assert_int_eq(prepare_submit(p, &jobs[i].job), 0);
    }
    prepare_free(p);
    ck_assert_int_eq(n, N);
    static char seen[N];
    for (int i = 0; i < N; i++)
        seen[log[i]]++;
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == 1, "job %d ran %d times", i, seen[i]);
}
END_TEST

typedef struct spin_arg {
    double seconds;   /* of CPU at most */
    prepare *stop_at; /* or NULL: stop as soon as its worker has given way once */
} spin_arg;

/* Runs on a worker until it has had arg's seconds of CPU, or its pool has
 * counted a yield. */
static void spin_cpu(prepare_job *job, void *arg)
{
    (void)job;
    const spin_arg *a = arg;
    const long long until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (long long)(a->seconds * 1e9);
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until &&
           !(a->stop_at && prepare_yields(a->stop_at) > 0))
        ;
}

/* A worker at nice 10 gives its CPU up during a job (a timer's signal
 * every 100 us: one within 2 s of CPU, however slow the signal, as under
 * valgrind); at SCHED_IDLE it has no need to (2 ms of CPU: a SCHED_IDLE
 * thread beside busy processes, as in make test-busy, gets little). */
START_TEST(test_pool_yields)
{
    for (int idle = 0; idle < 2; idle++) {
        prepare *p = prepare_new(1, idle);
        ck_assert_ptr_nonnull(p);
        spin_arg a = {idle ? 0.002 : 2.0, idle ? NULL : p};
        prepare_job job = {.run = spin_cpu, .arg = &a};
        ck_assert_int_eq(prepare_submit(p, &job), 0);
        prepare_stop(p);
        const long yields = prepare_yields(p);
        prepare_free(p);
        EXPECT((yields > 0) == !idle, "idle %d: %ld yields", idle, yields);
    }
}
END_TEST

/* A worker that had under 5% of a CPU in a window gives nothing up in
 * the next four (worked examples). */
START_TEST(test_pool_starved)
{
    ck_assert(prepare_starved(4000000, 100000000));  /* 4 ms of 100 */
    ck_assert(!prepare_starved(6000000, 100000000)); /* 6 ms of 100 */
    ck_assert(!prepare_starved(20000000, 20000000)); /* the whole window */
    ck_assert(prepare_starved(0, 20000000));
}
END_TEST

/* ---- the daemon ---------------------------------------------------------- */

/* One HTTP thread, one prepare worker, texts cut to 16 tokens. */
/* clang-format off */
static const char *const ARGS[] = {"--d-model", "16", "--n-heads", "4", "--d-ff", "32",
                                   "--seed", "3", "--threads", "1", "--tokenize-threads", "1",
                                   "--auto-truncate", "--max-seq-len", "16", NULL};
/* clang-format on */

/* A big text: 256 KiB, a good part of a second for the prepare worker,
 * several seconds beside two busy loops (make test-busy), where its nice
 * 10 gets about a tenth of a core: four 1 MB texts took over a minute
 * there. */
#define BIG_BYTES (256u << 10)
#define N_BIG     4

/* The sentence whose repetitions make a big text: over 16 tokens. */
static const char SENTENCE[] = "the committee will review every proposal before the end of the "
                               "month and publish its findings in a short report ";

/* A POST /v1/embeddings of {"input": text}, text being SENTENCE repeated
 * to at least bytes bytes (one copy when 0), as raw bytes (owned). */
static char *embeddings_request(size_t bytes, size_t *len)
{
    const size_t one = strlen(SENTENCE), copies = bytes ? bytes / one + 1 : 1;
    const size_t body_len = copies * one + 16;
    char *body = malloc(body_len + 1), *req = malloc(body_len + 256);
    ck_assert(body && req);
    size_t n = (size_t)sprintf(body, "{\"input\": \"");
    for (size_t i = 0; i < copies; i++, n += one)
        memcpy(body + n, SENTENCE, one);
    n += (size_t)sprintf(body + n, "\"}");
    *len = (size_t)sprintf(req,
                           "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: "
                           "application/json\r\nContent-Length: %zu\r\n\r\n",
                           n);
    memcpy(req + *len, body, n);
    *len += n;
    free(body);
    return req;
}

/* The embedding of a 200 answer (owned array of dims floats). */
static double *embedding_of(const http_resp *r, size_t *dims)
{
    ck_assert_int_eq(r->status, 200);
    json_t *j = http_json_body(r);
    const json_t *e = json_object_get(json_array_get(json_object_get(j, "data"), 0), "embedding");
    *dims = json_array_size(e);
    ck_assert_uint_gt(*dims, 0);
    double *v = malloc(*dims * sizeof *v);
    for (size_t i = 0; i < *dims; i++)
        v[i] = json_number_value(json_array_get(e, i));
    json_decref(j);
    return v;
}

static void expect_same(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        EXPECT(fabs(a[i] - b[i]) < 1e-5, "embedding[%zu]: %g, not %g", i, a[i], b[i]);
}

/* The small request (one SENTENCE, parsed on the HTTP thread) answered
 * alone: the reference every other answer is held to.  The big texts are
 * cut to the same 16 tokens as the one sentence, so their embeddings are
 * the same. */
static double *reference(size_t *dims)
{
    size_t len;
    char *req = embeddings_request(0, &len);
    http_resp r;
    ck_assert_int_eq(raw_request(dp.port, req, len, &r), 0);
    double *v = embedding_of(&r, dims);
    http_resp_free(&r);
    free(req);
    return v;
}

/* N_BIG connections, each sent a 256 KiB text whole. */
static void send_bigs(int *fd)
{
    size_t len;
    char *req = embeddings_request(BIG_BYTES, &len);
    for (int b = 0; b < N_BIG; b++) {
        ck_assert_int_ge(fd[b] = raw_connect(dp.port), 0);
        ck_assert_int_eq(raw_send(fd[b], req, len), 0);
    }
    free(req);
}

/* How many of the N_BIG connections have an answer (or were closed), read
 * or not. */
static int answered(const int *fd)
{
    struct pollfd pfd[N_BIG];
    for (int b = 0; b < N_BIG; b++)
        pfd[b] = (struct pollfd){.fd = fd[b], .events = POLLIN};
    ck_assert_int_ge(poll(pfd, N_BIG, 0), 0);
    int n = 0;
    for (int b = 0; b < N_BIG; b++)
        n += (pfd[b].revents & (POLLIN | POLLHUP)) != 0;
    return n;
}

/* While four 256 KiB texts wait for the one prepare worker, a small request on
 * another connection is answered: when its answer is in, none of the big
 * ones is (each takes the worker a good part of a second; with
 * --tokenize-threads 0 the one HTTP thread tokenizes the big texts whose
 * bodies came first before it reads the small one, and this fails).
 * The small request is all sent but its last byte before the big ones, and
 * that byte after them: what it waits for then is the daemon alone, not a
 * client that valgrind slows (its 50 ms between headers and body, as
 * raw_request sends them, and the rest came close to the first big text's
 * prepare there).  Every answer is the reference's. */
START_TEST(test_small_beside_big)
{
    start_or_fail(ARGS, NULL);
    size_t dims, d2;
    double *ref = reference(&dims);
    size_t len;
    char *req = embeddings_request(0, &len);
    const int small_fd = raw_connect(dp.port);
    ck_assert_int_ge(small_fd, 0);
    ck_assert_int_eq(raw_send(small_fd, req, len - 1), 0);
    int fd[N_BIG];
    send_bigs(fd);
    http_resp r;
    ck_assert_int_eq(raw_send(small_fd, req + len - 1, 1), 0);
    ck_assert_int_eq(raw_response(small_fd, 30000, &r), 0);
    const int early = answered(fd);
    close(small_fd);
    ck_assert_msg(early == 0, "%d of the 256 KiB texts were answered before the small request",
                  early);
    double *small = embedding_of(&r, &d2);
    ck_assert_uint_eq(d2, dims);
    expect_same(small, ref, dims);
    http_resp_free(&r);
    free(small);
    free(req);
    /* the big ones: answered, each the reference */
    for (int b = 0; b < N_BIG; b++) {
        ck_assert_int_eq(raw_response(fd[b], 30000, &r), 0);
        double *big = embedding_of(&r, &d2);
        ck_assert_uint_eq(d2, dims);
        expect_same(big, ref, dims);
        free(big);
        http_resp_free(&r);
        close(fd[b]);
    }
    free(ref);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* A POST /v1/tokenize of {"text": SENTENCE repeated to bytes bytes (one
 * copy when 0), "truncate": true}: its answer (owned body). */
static char *tokenize_answer(size_t bytes)
{
    size_t len;
    char *req = embeddings_request(bytes, &len);
    /* the same body, another route and field: {"text": ..., "truncate": true} */
    char *body = strstr(req, "\r\n\r\n") + 4;
    const size_t body_len = len - (size_t)(body - req);
    char *tb = malloc(body_len + 32);
    ck_assert_ptr_nonnull(tb);
    sprintf(tb, "{\"truncate\": true, \"text\"%.*s", (int)(body_len - 8),
            body + 8); /* what follows {"input" */
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/tokenize", tb, &r), 0);
    ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
    char *answer = strdup(r.body);
    http_resp_free(&r);
    free(tb);
    free(req);
    return answer;
}

/* /v1/tokenize answers from the body too: a 256 KiB text's (on the prepare
 * worker) cut to 16 tokens is the one sentence's (on the HTTP thread). */
START_TEST(test_tokenize_big)
{
    start_or_fail(ARGS, NULL);
    char *small = tokenize_answer(0), *big = tokenize_answer(BIG_BYTES);
    ck_assert_str_eq(big, small);
    json_t *j = json_loads(small, 0, NULL);
    ck_assert_uint_eq(json_array_size(json_array_get(json_object_get(j, "tokens"), 0)), 16);
    json_decref(j);
    free(small);
    free(big);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* A 256 KiB text a request does not let be cut: the contract's 413, naming
 * the field, from the prepare worker's parse. */
START_TEST(test_big_refused)
{
    start_or_fail(ARGS, NULL);
    const size_t one = strlen(SENTENCE), copies = BIG_BYTES / one + 1;
    char *body = malloc(copies * one + 64);
    ck_assert_ptr_nonnull(body);
    size_t n = (size_t)sprintf(body, "{\"truncate\": false, \"text\": \"");
    for (size_t i = 0; i < copies; i++, n += one)
        memcpy(body + n, SENTENCE, one);
    strcpy(body + n, "\"}");
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
    http_assert_error(&r, 413, "too_large", "text has");
    http_resp_free(&r);
    free(body);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Clients that close their connection while their text waits for, or is
 * on, the prepare worker: the daemon goes on answering and exits cleanly. */
START_TEST(test_disconnect_mid_prepare)
{
    start_or_fail(ARGS, NULL);
    size_t dims, d2;
    double *ref = reference(&dims);
    int fd[N_BIG];
    send_bigs(fd);
    for (int b = 0; b < N_BIG; b++)
        close(fd[b]);
    /* a big text after them is still prepared and answered */
    size_t len;
    char *req = embeddings_request(BIG_BYTES, &len);
    http_resp r;
    ck_assert_int_eq(raw_request(dp.port, req, len, &r), 0);
    double *big = embedding_of(&r, &d2);
    ck_assert_uint_eq(d2, dims);
    expect_same(big, ref, dims);
    free(big);
    free(req);
    http_resp_free(&r);
    free(ref);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* SIGTERM while 256 KiB texts are queued for the prepare worker: each
 * accepted request is answered (its embedding, or 503 when it reached the
 * compute pool after the server had closed) and the daemon exits 0.  None
 * is answered before the SIGTERM: a forward waits 3 s in the compute queue
 * (the batch delay) for others to join it, so a text prepared before the
 * SIGTERM (on a slow client's time) is held there, and answered as the
 * daemon drains. */
START_TEST(test_shutdown_with_prepares_queued)
{
    enum { N_ARGS = sizeof ARGS / sizeof *ARGS - 1 };
    const char *args[N_ARGS + 3];
    memcpy(args, ARGS, N_ARGS * sizeof *args);
    args[N_ARGS] = "--batch-delay-ms";
    args[N_ARGS + 1] = "3000";
    args[N_ARGS + 2] = NULL;
    start_or_fail(args, NULL);
    int fd[N_BIG], st[N_BIG];
    send_bigs(fd);
    /* Every big request begun (the daemon refuses connections it has not
     * accepted yet once SIGTERM closes its listener): answered, or in
     * flight (/metrics counts its own request too). */
    int begun = 0;
    for (int i = 0; i < 1000 && begun < N_BIG; i++) {
        begun = answered(fd) + (int)http_metric(dp.port, "attnd_requests_in_flight") - 1;
        if (begun < N_BIG)
            usleep(10000);
    }
    ck_assert_int_ge(begun, N_BIG);
    /* no big text's answer is in: each is still queued for the prepare
     * worker or on it (each waits behind those before it), or prepared and
     * waiting in the compute queue */
    ck_assert_int_eq(answered(fd), 0);
    ck_assert_int_eq(daemon_stop(&dp), 0);
    raw_statuses(fd, st, N_BIG, 30000);
    for (int b = 0; b < N_BIG; b++) {
        EXPECT(st[b] == 200 || st[b] == 503, "big request %d: status %d", b, st[b]);
        close(fd[b]);
    }
}
END_TEST

Suite *prepare_suite(void)
{
    Suite *s = timed_suite("prepare");
    TCase *unit = timed_case(s, "pool", 10);
    tcase_add_test(unit, test_pool_order_and_stop);
    tcase_add_test(unit, test_pool_workers_run_all);
    tcase_add_test(unit, test_pool_priority);
    tcase_add_test(unit, test_pool_yields);
    tcase_add_test(unit, test_pool_starved);
    TCase *tc = timed_case(s, "daemon", 60);
    tcase_add_test(tc, test_small_beside_big);
    tcase_add_test(tc, test_tokenize_big);
    tcase_add_test(tc, test_big_refused);
    tcase_add_test(tc, test_disconnect_mid_prepare);
    tcase_add_test(tc, test_shutdown_with_prepares_queued);
    return s;
}
