/* check_runtime.c - the daemon's runtime and text helpers as units, no
 * daemon started:
 *
 * - pool (server/runtime/pool.c): jobs batched into shared forwards each
 *   get their own results, equal to the same batch's forward run alone;
 *   the queue holds at most queue_size and a
 *   refused job is never called back; pool_free finishes what was queued;
 *   a short job submitted during a long job's forward finishes first, run
 *   between its phases (short_tokens), and after it without;
 * - metrics (server/runtime/metrics.c): the Prometheus text after known
 *   events holds exactly their counts;
 * - strbuf (server/codec/strbuf.c): growth, printf, detach, and the
 *   failed state. */
#include "codec/strbuf.h"
#include "runtime/metrics.h"
#include "runtime/pool.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pool ------------------------------------------------------------------ */

typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
} waiter;

static void job_done(pool_job *job, void *arg)
{
    (void)job;
    waiter *w = arg;
    pthread_mutex_lock(&w->lock);
    w->done++;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static void wait_for(waiter *w, int n)
{
    pthread_mutex_lock(&w->lock);
    while (w->done < n)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

enum { JOBS = 12, D = 16, L = 5 };

START_TEST(test_pool_jobs_get_their_own_results)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = D;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 32;
    enc_error err = {0};
    enc_model *m = enc_model_random(&hp, 11, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    /* dynamic batching: a 5 ms batch delay lets queued jobs share forwards */
    pool_options o = {.workers = 1, .queue_size = JOBS, .batch_tokens = 8192, .batch_delay_ms = 5};
    pool *p = pool_new(m, &o, &err);
    ck_assert_msg(p != NULL, "%s", err.message);
    static float x[JOBS][L * D], out[JOBS][L * D], want[L * D];
    static enc_batch batch[JOBS];
    static pool_job job[JOBS];
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    uint64_t seed = 5;
    for (int j = 0; j < JOBS; j++) {
        fill_random(x[j], L * D, &seed, 1.0f);
        batch[j] = batch_plain(x[j], 1, L - j % 3, NULL);
        job[j] = (pool_job){.batch = &batch[j], .done = job_done, .arg = &w};
        job[j].result.out = out[j];
        job[j].result.attn_mode = ENC_ATTN_NONE;
        ck_assert_int_eq(pool_submit(p, &job[j]), 0);
    }
    wait_for(&w, JOBS);
    /* Each job's outputs are those of its batch run alone. */
    enc_workspace *ws = enc_workspace_new(m);
    for (int j = 0; j < JOBS; j++) {
        ck_assert_msg(job[j].rc == 0, "job %d: %s", j, job[j].err.message);
        enc_result r = {.out = want, .attn_mode = ENC_ATTN_NONE};
        ck_assert_int_eq(enc_forward(m, ws, &batch[j], &r, &err), 0);
        const size_t n = (size_t)batch[j].L * D;
        ck_assert_msg(max_abs_diff(out[j], want, n) < 1e-5, "job %d differs by %g", j,
                      max_abs_diff(out[j], want, n));
        ck_assert(job[j].queue_ms >= 0 && job[j].compute_ms >= 0);
    }
    enc_workspace_free(ws);
    pool_free(p);
    enc_model_free(m);
}
END_TEST

START_TEST(test_pool_queue_bound)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = D;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 32;
    enc_error err = {0};
    enc_model *m = enc_model_random(&hp, 11, &err);
    ck_assert_ptr_nonnull(m);
    /* Eight jobs submitted at once into 2 places: the queue never holds more
     * than 2; a job refused (pool_submit -1) never has done called; every
     * accepted one runs, pool_free finishing those still queued. */
    pool_options o = {.workers = 1, .queue_size = 2, .batch_tokens = 1};
    pool *p = pool_new(m, &o, &err);
    ck_assert_ptr_nonnull(p);
    static float x[L * D], out[8][L * D];
    static enc_batch batch;
    static pool_job job[8];
    uint64_t seed = 9;
    fill_random(x, L * D, &seed, 1.0f);
    batch = batch_plain(x, 1, L, NULL);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int accepted = 0;
    for (int j = 0; j < 8; j++) {
        job[j] = (pool_job){.batch = &batch, .done = job_done, .arg = &w};
        job[j].result.out = out[j];
        job[j].result.attn_mode = ENC_ATTN_NONE;
        accepted += pool_submit(p, &job[j]) == 0;
        ck_assert_int_le(pool_queue_depth(p), 2);
    }
    ck_assert_int_ge(accepted, 2);
    pool_free(p); /* finishes every accepted job */
    ck_assert_int_eq(w.done, accepted);
    enc_model_free(m);
}
END_TEST

/* Jobs' completion order, and the pool's forwards run ahead. */
typedef struct order_log {
    atomic_int next;
    atomic_int ahead;
} order_log;

typedef struct ordered {
    waiter *w;
    order_log *log;
    int order; /* 1 for the first job done */
} ordered;

static void ordered_done(pool_job *job, void *arg)
{
    ordered *o = arg;
    o->order = atomic_fetch_add(&o->log->next, 1) + 1;
    job_done(job, o->w);
}

static void count_ahead(void *arg, const pool_forward *f)
{
    order_log *log = arg;
    if (f->ahead)
        atomic_fetch_add(&log->ahead, 1);
}

/* A long job (B sequences of LL tokens) is taken by the pool's one worker,
 * then a short one (5 tokens) is submitted.  Returns 0 when the short one
 * was submitted while the long one ran (the outcome in *short_first), -1
 * when the long one had finished first (too fast to tell: try bigger).
 * Both jobs' outputs are checked against their batches run alone. */
static int long_then_short(const enc_model *m, int short_tokens, int B, int LL, bool *short_first,
                           int *ahead)
{
    enum { DM = 64 };
    order_log log = {0};
    enc_error err = {0};
    pool_options o = {.workers = 1,
                      .queue_size = 4,
                      .batch_tokens = 1 << 20,
                      .short_tokens = short_tokens,
                      .on_forward = count_ahead,
                      .on_forward_arg = &log};
    pool *p = pool_new(m, &o, &err);
    ck_assert_msg(p != NULL, "%s", err.message);
    const size_t nl = (size_t)B * LL * DM;
    float *xl = malloc(nl * sizeof *xl), *outl = malloc(nl * sizeof *outl),
          *want = malloc(nl * sizeof *want);
    static float xs[5 * DM], outs[5 * DM];
    ck_assert(xl && outl && want);
    uint64_t seed = 21;
    fill_random(xl, nl, &seed, 1.0f);
    fill_random(xs, 5 * DM, &seed, 1.0f);
    enc_batch bl = batch_plain(xl, B, LL, NULL), bs = batch_plain(xs, 1, 5, NULL);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    ordered ol = {&w, &log, 0}, os = {&w, &log, 0};
    pool_job jl = {.batch = &bl, .done = ordered_done, .arg = &ol};
    pool_job js = {.batch = &bs, .done = ordered_done, .arg = &os};
    jl.result = (enc_result){.out = outl, .attn_mode = ENC_ATTN_NONE};
    js.result = (enc_result){.out = outs, .attn_mode = ENC_ATTN_NONE};
    ck_assert_int_eq(pool_submit(p, &jl), 0);
    while (pool_queue_depth(p) > 0) /* until the worker has taken it */
        sched_yield();
    ck_assert_int_eq(pool_submit(p, &js), 0);
    const bool in_time = atomic_load(&log.next) == 0; /* the long one still running */
    wait_for(&w, 2);
    *short_first = os.order < ol.order;
    *ahead = atomic_load(&log.ahead);
    pool_free(p);
    enc_workspace *ws = enc_workspace_new(m);
    ck_assert_msg(jl.rc == 0 && js.rc == 0, "%s %s", jl.err.message, js.err.message);
    enc_result r = {.out = want, .attn_mode = ENC_ATTN_NONE};
    ck_assert_int_eq(enc_forward(m, ws, &bl, &r, &err), 0);
    ck_assert_msg(max_abs_diff(outl, want, nl) < 1e-5, "long job differs by %g",
                  max_abs_diff(outl, want, nl));
    ck_assert_int_eq(enc_forward(m, ws, &bs, &r, &err), 0);
    ck_assert_msg(max_abs_diff(outs, want, 5 * DM) < 1e-5, "short job differs by %g",
                  max_abs_diff(outs, want, 5 * DM));
    enc_workspace_free(ws);
    free(xl);
    free(outl);
    free(want);
    return in_time ? 0 : -1;
}

/* With short_tokens, a short job submitted while a long one runs on the
 * only worker finishes first, in a forward of its own run ahead (between
 * the long one's phases); without, it waits its turn.  Either way both get
 * the outputs of their batches run alone.  The long batch doubles until it
 * outlasts the short one's submission (valgrind or not). */
START_TEST(test_pool_short_jobs_run_ahead)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 64;
    hp.n_heads = hp.n_kv_heads = 4;
    hp.d_ff = 128;
    hp.n_layers = 4;
    enc_error err = {0};
    enc_model *m = enc_model_random(&hp, 13, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    for (int short_tokens = 64; short_tokens >= 0; short_tokens -= 64) {
        bool short_first = false;
        int ahead = 0, B = 2;
        while (long_then_short(m, short_tokens, B, 256, &short_first, &ahead) < 0) {
            ck_assert_msg(B < 64, "the long job ended before the short one was submitted");
            B *= 2;
        }
        if (short_tokens) {
            ck_assert_msg(short_first, "the short job waited for the long one");
            ck_assert_int_eq(ahead, 1);
        } else {
            ck_assert_msg(!short_first, "without short_tokens, the short job went first");
            ck_assert_int_eq(ahead, 0);
        }
    }
    enc_model_free(m);
}
END_TEST

/* ---- metrics ----------------------------------------------------------------- */

/* The value of the sample line starting with name (labels included). */
static double sample(const char *text, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    ck_abort_msg("no sample %s in:\n%s", name, text);
    return 0;
}

START_TEST(test_metrics_counts)
{
    static const char *const routes[] = {"/v1/encode", "/health"};
    metrics *mx = metrics_new(routes, 2);
    ck_assert_ptr_nonnull(mx);
    metrics_request(mx, "/v1/encode", 200, 0.010);
    metrics_request(mx, "/v1/encode", 200, 0.030);
    metrics_request(mx, "/v1/encode", 413, 0.001);
    metrics_request(mx, "/no/such", 404, 0.001);
    metrics_request(mx, "/health", 200, 0.001);
    metrics_forward(mx, 3, 300, 2, 0.020, false);
    metrics_forward(mx, 1, 12, 1, 0.002, true);
    metrics_attention_scores(mx, 12345);
    metrics_queue(mx, 0.002);
    metrics_in_flight(mx, 1);
    metrics_in_flight(mx, 1);
    metrics_in_flight(mx, -1);
    size_t len;
    char *text = metrics_render(mx, 7, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(strlen(text), len);
    ck_assert(sample(text, "attnd_requests_total{route=\"/v1/encode\",status=\"200\"}") == 2);
    ck_assert(sample(text, "attnd_requests_total{route=\"/v1/encode\",status=\"413\"}") == 1);
    ck_assert(sample(text, "attnd_requests_total{route=\"other\",status=\"404\"}") == 1);
    ck_assert(sample(text, "attnd_requests_total{route=\"/health\",status=\"200\"}") == 1);
    ck_assert(sample(text, "attnd_attention_scores_total") == 12345);
    ck_assert(sample(text, "attnd_requests_in_flight") == 1);
    ck_assert(sample(text, "attnd_queue_depth") == 7);
    ck_assert(sample(text, "attnd_forwards_total") == 2);
    ck_assert(sample(text, "attnd_forwards_ahead_total") == 1);
    free(text);
    metrics_free(mx);
}
END_TEST

/* ---- strbuf ------------------------------------------------------------------- */

START_TEST(test_strbuf)
{
    strbuf b = {0};
    for (int i = 0; i < 1000; i++)
        strbuf_printf(&b, "%d,", i);
    strbuf_puts(&b, "end");
    strbuf_put(&b, "\0x", 2); /* bytes, a NUL among them */
    size_t len;
    char *s = strbuf_detach(&b, &len);
    ck_assert_ptr_nonnull(s);
    size_t want = 0;
    char num[16];
    for (int i = 0; i < 1000; i++)
        want += (size_t)snprintf(num, sizeof num, "%d,", i);
    ck_assert_uint_eq(len, want + 3 + 2);
    ck_assert(strncmp(s, "0,1,2,", 6) == 0 && memcmp(s + want, "end\0x", 5) == 0);
    ck_assert_int_eq(s[len], '\0');
    free(s);
    ck_assert_ptr_null(b.s); /* empty after detach */
    /* A failed buffer ignores writes and detaches to NULL. */
    b.failed = true;
    strbuf_puts(&b, "lost");
    ck_assert_ptr_null(strbuf_detach(&b, &len));
    strbuf_free(&b);
}
END_TEST

Suite *runtime_suite(void)
{
    Suite *s = timed_suite("runtime");
    TCase *tc = timed_case(s, "units", 60);
    tcase_add_test(tc, test_pool_jobs_get_their_own_results);
    tcase_add_test(tc, test_pool_queue_bound);
    tcase_add_test(tc, test_pool_short_jobs_run_ahead);
    tcase_add_test(tc, test_metrics_counts);
    tcase_add_test(tc, test_strbuf);
    return s;
}
