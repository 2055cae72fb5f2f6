/* metrics.c - counters and histograms, rendered in Prometheus text format. */
#include "runtime/metrics.h"
#include "codec/strbuf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Requests are counted by route: the names metrics_new is given (the HTTP
 * layer's route table), then "other" for a path with no route. */
#define MAX_ROUTES 64
#define MAX_STATUS 600

/* Seconds: 1 ms to 30 s. */
static const double time_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                      0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};
#define N_TIME (int)(sizeof time_buckets / sizeof *time_buckets)
static const double batch_buckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
#define N_BATCH (int)(sizeof batch_buckets / sizeof *batch_buckets)

typedef struct histogram {
    const double *bounds;
    int n;
    unsigned long counts[16]; /* per bucket (not cumulative); [n] = +Inf */
    double sum;
    unsigned long total;
} histogram;

struct metrics {
    pthread_mutex_t lock;
    const char *routes[MAX_ROUTES + 1]; /* borrowed; [n_routes] = "other" */
    int n_routes;                       /* named ones, "other" aside */
    unsigned long requests[MAX_ROUTES + 1][MAX_STATUS];
    histogram request_s, queue_s, compute_s, batch, batch_requests;
    unsigned long tokens, sequences, forwards, forwards_ahead;
    unsigned long long attention_scores;
    long in_flight;
};

static void hist_init(histogram *h, const double *bounds, int n)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n = n;
}

static void hist_observe(histogram *h, double v)
{
    int i = 0;
    while (i < h->n && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->sum += v;
    h->total++;
}

metrics *metrics_new(const char *const *routes, int n)
{
    if (n < 0 || n > MAX_ROUTES)
        return NULL;
    metrics *mx = calloc(1, sizeof *mx);
    if (!mx)
        return NULL;
    for (int i = 0; i < n; i++)
        mx->routes[i] = routes[i];
    mx->routes[n] = "other";
    mx->n_routes = n;
    pthread_mutex_init(&mx->lock, NULL);
    hist_init(&mx->request_s, time_buckets, N_TIME);
    hist_init(&mx->queue_s, time_buckets, N_TIME);
    hist_init(&mx->compute_s, time_buckets, N_TIME);
    hist_init(&mx->batch, batch_buckets, N_BATCH);
    hist_init(&mx->batch_requests, batch_buckets, N_BATCH);
    return mx;
}

void metrics_free(metrics *mx)
{
    if (!mx)
        return;
    pthread_mutex_destroy(&mx->lock);
    free(mx);
}

static int route_index(const metrics *mx, const char *route)
{
    for (int i = 0; i < mx->n_routes; i++)
        if (route && strcmp(route, mx->routes[i]) == 0)
            return i;
    return mx->n_routes;
}

void metrics_request(metrics *mx, const char *route, int status, double seconds)
{
    if (status < 0 || status >= MAX_STATUS)
        status = 0;
    pthread_mutex_lock(&mx->lock);
    mx->requests[route_index(mx, route)][status]++;
    hist_observe(&mx->request_s, seconds);
    pthread_mutex_unlock(&mx->lock);
}

void metrics_forward(metrics *mx, int sequences, long tokens, int requests, double compute_s,
                     bool ahead)
{
    pthread_mutex_lock(&mx->lock);
    mx->forwards++;
    mx->forwards_ahead += ahead;
    mx->sequences += (unsigned long)sequences;
    mx->tokens += (unsigned long)tokens;
    hist_observe(&mx->batch, sequences);
    hist_observe(&mx->batch_requests, requests);
    hist_observe(&mx->compute_s, compute_s);
    pthread_mutex_unlock(&mx->lock);
}

void metrics_attention_scores(metrics *mx, unsigned long long scores)
{
    pthread_mutex_lock(&mx->lock);
    mx->attention_scores += scores;
    pthread_mutex_unlock(&mx->lock);
}

void metrics_queue(metrics *mx, double queue_s)
{
    pthread_mutex_lock(&mx->lock);
    hist_observe(&mx->queue_s, queue_s);
    pthread_mutex_unlock(&mx->lock);
}

void metrics_in_flight(metrics *mx, int delta)
{
    pthread_mutex_lock(&mx->lock);
    mx->in_flight += delta;
    pthread_mutex_unlock(&mx->lock);
}

static void put_hist(strbuf *b, const char *name, const char *help, const histogram *h)
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long cum = 0;
    for (int i = 0; i < h->n; i++) {
        cum += h->counts[i];
        strbuf_printf(b, "%s_bucket{le=\"%g\"} %lu\n", name, h->bounds[i], cum);
    }
    strbuf_printf(b, "%s_bucket{le=\"+Inf\"} %lu\n%s_sum %.9g\n%s_count %lu\n", name, h->total, name,
        h->sum, name, h->total);
}

char *metrics_render(metrics *mx, int queue_depth, size_t *len)
{
    strbuf b = {0};
    pthread_mutex_lock(&mx->lock);
    strbuf_printf(&b, "# HELP attnd_requests_total HTTP requests served, by route and status.\n"
            "# TYPE attnd_requests_total counter\n");
    for (int r = 0; r <= mx->n_routes; r++)
        for (int s = 0; s < MAX_STATUS; s++)
            if (mx->requests[r][s])
                strbuf_printf(&b, "attnd_requests_total{route=\"%s\",status=\"%d\"} %lu\n",
                              mx->routes[r], s, mx->requests[r][s]);
    put_hist(&b, "attnd_request_duration_seconds",
             "Time from a request's first byte to its response.", &mx->request_s);
    put_hist(&b, "attnd_queue_duration_seconds", "Time a forward waited for a compute worker.",
             &mx->queue_s);
    put_hist(&b, "attnd_compute_duration_seconds", "Time a forward ran on a compute worker.",
             &mx->compute_s);
    put_hist(&b, "attnd_batch_sequences", "Sequences per forward.", &mx->batch);
    put_hist(&b, "attnd_batch_requests", "Requests per forward (dynamic batching).",
             &mx->batch_requests);
    strbuf_printf(
        &b,
        "# HELP attnd_tokens_total Real tokens encoded (sum of lengths).\n"
        "# TYPE attnd_tokens_total counter\nattnd_tokens_total %lu\n"
        "# HELP attnd_sequences_total Sequences encoded.\n"
        "# TYPE attnd_sequences_total counter\nattnd_sequences_total %lu\n"
        "# HELP attnd_forwards_total Forwards run.\n"
        "# TYPE attnd_forwards_total counter\nattnd_forwards_total %lu\n"
        "# HELP attnd_forwards_ahead_total Forwards of short requests run between two phases "
        "of a longer forward (compute.short_tokens).\n"
        "# TYPE attnd_forwards_ahead_total counter\nattnd_forwards_ahead_total %lu\n"
        "# HELP attnd_attention_scores_total Query-key attention scores computed (every head "
        "and layer; usage.attention_scores summed).\n"
        "# TYPE attnd_attention_scores_total counter\nattnd_attention_scores_total %llu\n"
        "# HELP attnd_requests_in_flight Requests being served now.\n"
        "# TYPE attnd_requests_in_flight gauge\nattnd_requests_in_flight %ld\n"
        "# HELP attnd_queue_depth Forwards waiting for a compute worker.\n"
        "# TYPE attnd_queue_depth gauge\nattnd_queue_depth %d\n",
        mx->tokens, mx->sequences, mx->forwards, mx->forwards_ahead, mx->attention_scores,
        mx->in_flight, queue_depth);
    pthread_mutex_unlock(&mx->lock);
    return strbuf_detach(&b, len);
}
