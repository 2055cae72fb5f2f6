/* metrics.h - the daemon's Prometheus metrics (docs/contract.md section 6;
 * docs/api.md, "GET /metrics"): requests by route and status, request /
 * queue / compute duration histograms, batch sizes, tokens, attention
 * scores, in-flight requests and queue depth.
 * Thread-safe.
 *
 *     static const char *const routes[] = {"/v1/encode", "/health"};
 *     metrics *mx = metrics_new(routes, 2);
 *     metrics_request(mx, "/v1/encode", 200, 0.012);
 *     char *text = metrics_render(mx, queue_depth, &len);   // owned
 */
#ifndef ATTND_METRICS_H
#define ATTND_METRICS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct metrics metrics;

/* Counts requests by the n route names given (the array is copied, the
 * strings borrowed: they must outlive mx; at most 64), and "other".  Owned; NULL when out of memory
 * or n is over 64. */
metrics *metrics_new(const char *const *routes, int n);
void metrics_free(metrics *mx);

/* A finished request: route is one of the names metrics_new was given
 * (anything else counts as "other"), status its HTTP status. */
void metrics_request(metrics *mx, const char *route, int status, double seconds);
/* A finished forward (one dynamic batch): its sequences, real tokens,
 * requests and compute time; ahead: it ran between two phases of a longer
 * one (compute.short_tokens). */
void metrics_forward(metrics *mx, int sequences, long tokens, int requests, double compute_s,
                     bool ahead);
/* A request's forward computed this many query-key scores
 * (usage.attention_scores). */
void metrics_attention_scores(metrics *mx, unsigned long long scores);
/* A request's wait for a compute worker. */
void metrics_queue(metrics *mx, double queue_s);
/* Requests being served now: +1 when one starts, -1 when it ends. */
void metrics_in_flight(metrics *mx, int delta);

/* The Prometheus text exposition (version 0.0.4).  Owned; NULL when out of
 * memory. */
char *metrics_render(metrics *mx, int queue_depth, size_t *len);

#endif
