/* respond.c - what the layer's files do to a request below its lifecycle
 * (request.c) and its routes (routes.c): its headers read, its responses
 * (whole bodies, the contract's errors, bodies streamed from its tensors
 * as the socket drains), and its release once nothing holds it. */
#include "http/internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* ---- the request ------------------------------------------------------- */

const char *http_header(request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Frees r when neither libmicrohttpd's request nor a streamed body needs
 * it any more. */
void http_request_unref(request *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    stream_free(r->out);
    if (r->pstate) {
        r->rt->proto->free(r->pstate);
        free(r->pstate);
    }
    json_decref(r->answer); /* a prepared answer its connection closed before sending */
    bufpool_give(r->srv->buffers, r->body);
    free(r);
}

/* ---- responses ----------------------------------------------------------- */

stop_state http_stopping(request *r)
{
    if (r->stop == STOP_UNREAD)
        r->stop = atomic_load(&r->srv->shutting_down) ? STOP_SHUTTING_DOWN
                  : atomic_load(&r->srv->draining)    ? STOP_DRAINING
                                                      : STOP_NONE;
    return r->stop;
}

/* Queues resp with the headers every response carries. */
static enum MHD_Result queue(request *r, int status, struct MHD_Response *resp, const char *type,
                             const char *const *extra)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    const char *origin = r->srv->cfg->server.cors_origin;
    if (origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                "X-Request-Id, X-Queue-Ms, X-Compute-Ms, Retry-After, "
                                "Inference-Header-Content-Length");
        if (strcmp(origin, "*") != 0)
            MHD_add_response_header(resp, "Vary", "Origin");
    }
    for (int i = 0; extra && extra[i]; i += 2)
        MHD_add_response_header(resp, extra[i], extra[i + 1]);
    if (http_stopping(r) != STOP_NONE || r->early.close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    r->status = status;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Queues body (owned, freed by MHD) with the headers every response carries. */
enum MHD_Result http_respond(request *r, int status, const char *type, char *body, size_t len,
                             const char *const *extra)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    r->bytes = len;
    return queue(r, status, resp, type, extra);
}

/* libmicrohttpd asks for the next bytes of a streamed body as the socket
 * drains: they are encoded from the tensors straight into its buffer. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    request *r = cls;
    const size_t n = stream_read(r->out, buf, max);
    r->bytes += n;
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void stream_done(void *cls)
{
    http_request_unref(cls);
}

/* The block libmicrohttpd asks a streamed body for at a time (and holds per
 * response): a body of known length gets its own size up to 512 KiB, so a
 * B=1 L=128 response (1.5 MB in base64) goes out in three sends (paired
 * daemons, 512 KiB against 128 KiB blocks: p50 / compute 1.13 against 1.16;
 * 2 MiB did no better) while a small one costs no more than itself; a body of unknown
 * length (JSON numbers, chunked) 128 KiB, where the block made no
 * difference.  64 connections streaming at once then hold at most 32 MiB. */
#define STREAM_BLOCK_MAX   (512u << 10)
#define STREAM_BLOCK_CHUNK (128u << 10)

/* A body that surely fits in this many bytes is produced whole before it is
 * queued: libmicrohttpd then sends the headers and the body in one sendmsg,
 * so a replica killed while it answers leaves a proxy nothing half-sent
 * (a response whose headers have gone out cannot be retried elsewhere;
 * deploy/nginx/attnd.conf). */
#define STREAM_WHOLE_MAX (64u << 10)

/* Queues r->out, produced as the socket drains: with Content-Length when
 * its length is known ahead (base64, binary), else chunked; a small body
 * (STREAM_WHOLE_MAX) whole, at once.  A streamed body reads the request's
 * tensors, so the request lives until libmicrohttpd is done with it. */
enum MHD_Result http_respond_stream(request *r, const char *type, const char *const *extra)
{
    if (stream_size_max(r->out) <= STREAM_WHOLE_MAX) {
        size_t len = 0;
        char *body = stream_collect(r->out, &len);
        return body ? http_respond(r, 200, type, body, len, extra) : MHD_NO;
    }
    const size_t size = stream_size(r->out);
    const bool known = size != (size_t)-1;
    const size_t block = !known                    ? STREAM_BLOCK_CHUNK
                         : size < 4096             ? 4096
                         : size < STREAM_BLOCK_MAX ? size
                                                   : STREAM_BLOCK_MAX;
    atomic_fetch_add(&r->refs, 1);
    struct MHD_Response *resp = MHD_create_response_from_callback(
        known ? size : MHD_SIZE_UNKNOWN, block, stream_reader, r, stream_done);
    if (!resp) {
        http_request_unref(r);
        return MHD_NO;
    }
    return queue(r, 200, resp, type, extra);
}

enum MHD_Result http_respond_json(request *r, int status, json_t *obj, const char *const *extra)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!s)
        return MHD_NO;
    return http_respond(r, status, "application/json", s, strlen(s), extra);
}

/* The error body of the path's protocol, or the contract's. */
enum MHD_Result http_respond_error(request *r, api_error_kind kind, const char *message,
                                   const char *const *extra)
{
    char *body = r->proto ? r->proto->error_body(kind, message) : api_error_body(kind, message);
    if (!body)
        return MHD_NO;
    const int status = r->proto && r->proto->error_status ? r->proto->error_status(kind, message)
                                                          : api_error_status(kind);
    return http_respond(r, status, "application/json", body, strlen(body), extra);
}
