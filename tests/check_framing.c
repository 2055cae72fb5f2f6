/* check_framing.c - RFC 9112 framing and the request lifecycle: what the
 * headers decide, and that every client reads the answer.
 *
 * - framing_check / framing_path (server/http/framing.c) on worked
 *   examples taken from RFC 9112's rules, each rule at least once;
 * - the real build/attnd on 127.0.0.1, spoken to over raw sockets (libcurl
 *   would refuse to send most of these): each malformed request of issue
 *   19's list gets its 400 or 501; an answer decided from the headers (413,
 *   401, 404, 405, 415) reaches a client that sends its whole body before
 *   it reads; a request target over the limit is a 414 (RFC 9112 section
 *   3), attnd's JSON one on a connection kept open, or libmicrohttpd's own
 *   past its buffer; a keyless client's body is not kept; Expect:
 *   100-continue gets the answer instead of 100 Continue. */
#include "protocol/api.h"
#include "daemon.h"
#include "http/framing.h"
#include "http/linger.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- framing_check ----------------------------------------------------------- */

#define FIELDS(...)  ((const http_field[]){__VA_ARGS__})
#define NFIELDS(...) (sizeof FIELDS(__VA_ARGS__) / sizeof(http_field))

/* framing_check on fields, expecting kind (API_OK: success) and, on error,
 * a message containing want. */
static http_framing check_fields(const char *version, const http_field *f, size_t n,
                                 api_error_kind kind, const char *want)
{
    http_framing fr;
    api_error err = {0};
    const int rc = framing_check(version, f, n, &fr, &err);
    ck_assert_msg(rc == (kind == API_OK ? 0 : -1), "rc %d, message '%s'", rc, err.message);
    ck_assert_int_eq(err.kind, kind);
    if (want)
        ck_assert_msg(strstr(err.message, want), "message '%s' lacks '%s'", err.message, want);
    return fr;
}

#define CHECK(version, kind, want, ...)                                                            \
    check_fields(version, FIELDS(__VA_ARGS__), NFIELDS(__VA_ARGS__), kind, want)

START_TEST(test_framing_accepts)
{
    http_framing fr = CHECK("HTTP/1.1", API_OK, NULL, {"Host", "a"}, {"Content-Length", "12"});
    ck_assert_int_eq(fr.body, HTTP_BODY_LENGTH);
    ck_assert_int_eq(fr.length, 12);
    ck_assert(!fr.expect_continue);
    /* The same length twice is one length (RFC 9112 6.3 allows a recipient
     * to accept identical values). */
    fr = CHECK("HTTP/1.1", API_OK, NULL, {"host", "a"}, {"content-length", "7"},
               {"Content-Length", "7"}, {"Expect", "100-Continue"});
    ck_assert_int_eq(fr.length, 7);
    ck_assert(fr.expect_continue);
    fr = CHECK("HTTP/1.1", API_OK, NULL, {"Host", "a"}, {"Transfer-Encoding", "Chunked"});
    ck_assert_int_eq(fr.body, HTTP_BODY_CHUNKED);
    /* HTTP/1.0 needs no Host; no length means no body. */
    fr = CHECK("HTTP/1.0", API_OK, NULL, {"Accept", "*/*"});
    ck_assert_int_eq(fr.body, HTTP_BODY_NONE);
    /* Every tchar is allowed in a name. */
    CHECK("HTTP/1.1", API_OK, NULL, {"Host", "a"}, {"X-!#$%&'*+-.^_`|~09az", "1"});
    /* Content-Length of 2^64 - 1 is a number (too large is the route's
     * 413, not a framing error). */
    fr = CHECK("HTTP/1.1", API_OK, NULL, {"Host", "a"}, {"Content-Length", "18446744073709551615"});
    ck_assert(fr.length == 18446744073709551615ull);
}
END_TEST

START_TEST(test_framing_refuses)
{
    /* Field names that are not tokens: a space before the colon stays in
     * the name as libmicrohttpd parses it. */
    CHECK("HTTP/1.1", API_BAD_REQUEST, "'Content-Length ' is not a token", {"Host", "a"},
          {"Content-Length ", "5"});
    CHECK("HTTP/1.1", API_BAD_REQUEST, "'X Bad' is not a token", {"Host", "a"}, {"X Bad", "1"});
    CHECK("HTTP/1.1", API_BAD_REQUEST, "'X(y)' is not a token", {"Host", "a"}, {"X(y)", "1"});
    /* Host: one in HTTP/1.1, never two. */
    CHECK("HTTP/1.1", API_BAD_REQUEST, "Host is missing", {"Accept", "*/*"});
    CHECK("HTTP/1.1", API_BAD_REQUEST, "Host is given 2 times", {"Host", "a"}, {"Host", "b"});
    CHECK("HTTP/1.0", API_BAD_REQUEST, "Host is given 2 times", {"Host", "a"}, {"Host", "a"});
    /* Content-Length: digits, one value. */
    CHECK("HTTP/1.1", API_BAD_REQUEST, "given twice with different values (5 and 50)",
          {"Host", "a"}, {"Content-Length", "5"}, {"Content-Length", "50"});
    static const char *const bad_lengths[] = {"",   "-1",   "+5",  "5, 5",
                                              " 5", "0x10", "5.0", "18446744073709551616"};
    for (size_t i = 0; i < sizeof bad_lengths / sizeof *bad_lengths; i++)
        CHECK("HTTP/1.1", API_BAD_REQUEST, "is not a number of bytes", {"Host", "a"},
              {"Content-Length", bad_lengths[i]});
    /* Transfer-Encoding: chunked alone and last; anything else unknown. */
    CHECK("HTTP/1.1", API_NOT_IMPLEMENTED, "Transfer-Encoding gzip is not supported", {"Host", "a"},
          {"Transfer-Encoding", "gzip"});
    CHECK("HTTP/1.1", API_NOT_IMPLEMENTED, "identity", {"Host", "a"},
          {"Transfer-Encoding", "identity"});
    CHECK("HTTP/1.1", API_NOT_IMPLEMENTED, "gzip", {"Host", "a"},
          {"Transfer-Encoding", "chunked, gzip"});
    CHECK("HTTP/1.1", API_NOT_IMPLEMENTED, "gzip", {"Host", "a"},
          {"Transfer-Encoding", "gzip, chunked"});
    CHECK("HTTP/1.1", API_BAD_REQUEST, "chunked twice", {"Host", "a"},
          {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"});
    CHECK("HTTP/1.1", API_BAD_REQUEST, "must end with chunked", {"Host", "a"},
          {"Transfer-Encoding", ""});
    CHECK("HTTP/1.1", API_BAD_REQUEST, "Content-Length and Transfer-Encoding together",
          {"Host", "a"}, {"Content-Length", "5"}, {"Transfer-Encoding", "chunked"});
    CHECK("HTTP/1.0", API_BAD_REQUEST, "Transfer-Encoding needs HTTP/1.1",
          {"Transfer-Encoding", "chunked"});
}
END_TEST

/* ---- framing_path ------------------------------------------------------------- */

static void path_is(const char *target, const char *want)
{
    char path[64];
    api_error err = {0};
    ck_assert_msg(framing_path(target, path, sizeof path, &err) == 0, "%s: %s", target,
                  err.message);
    ck_assert_str_eq(path, want);
}

/* framing_path refuses target with kind and a message containing want;
 * path then holds what was decoded before the fault, decoded (NULL: not
 * looked at). */
static void path_refused_as(const char *target, api_error_kind kind, const char *want,
                            const char *decoded)
{
    char path[64];
    api_error err = {0};
    ck_assert_msg(framing_path(target, path, sizeof path, &err) == -1, "%s accepted", target);
    ck_assert_int_eq(err.kind, kind);
    ck_assert_msg(strstr(err.message, want), "%s: '%s' lacks '%s'", target, err.message, want);
    if (decoded)
        ck_assert_str_eq(path, decoded);
}

static void path_refused(const char *target, const char *want)
{
    path_refused_as(target, API_BAD_REQUEST, want, NULL);
}

START_TEST(test_framing_path)
{
    path_is("/health", "/health");
    path_is("/v2/models/en%63oder/infer", "/v2/models/encoder/infer");
    path_is("/a%2Fb%2fc", "/a/b/c");
    /* absolute-form (RFC 9112 3.2.2): scheme and authority dropped */
    path_is("http://localhost:8080/health", "/health");
    path_is("HTTP://[::1]:80/v1/encode", "/v1/encode");
    path_is("https://a/v2", "/v2");
    path_is("http://a", "/");
    path_refused("/health%00.png", "escaped NUL");
    path_refused("/v1/encode%00", "escaped NUL");
    path_refused("/hea%zzlth", "not followed by two hex digits");
    path_refused("/a%4", "not followed by two hex digits");
    path_refused("/a%", "not followed by two hex digits");
    path_refused("*", "neither a path nor an http URL");
    path_refused("health", "neither a path nor an http URL");
    path_refused("ftp://a/health", "neither a path nor an http URL");
    path_refused_as("/v2/%zz", API_BAD_REQUEST, "two hex digits", "/v2/");
    /* RFC 9112 section 3: a target longer than any the server parses is a
     * 414 (URI Too Long), naming the target and the limit: here path has
     * 64 bytes, so 63 decoded bytes fit and 64 do not, however they were
     * escaped. */
    char target[256], want[64];
    memset(target, 'a', 63);
    target[0] = '/';
    target[63] = '\0';
    path_is(target, target);
    memcpy(want, target, sizeof want);
    target[63] = 'a';
    target[64] = '\0';
    path_refused_as(target, API_URI_TOO_LONG, "request target '/aaaa", want);
    path_refused_as(target, API_URI_TOO_LONG, "is too long: its path is over 63 bytes", want);
    for (int i = 0; i < 62; i++) /* "/%61%61..." decodes to 63 bytes: it fits */
        memcpy(target + 1 + 3 * i, "%61", 4);
    path_is(target, want);
    strcat(target, "%61");
    path_refused_as(target, API_URI_TOO_LONG, "its path is over 63 bytes", want);
    /* the prefix tells a /v2 target (its errors' form) */
    snprintf(target, sizeof target, "http://h/v2/models/%0100d/infer", 0);
    path_refused_as(target, API_URI_TOO_LONG, "request target 'http://h/v2/models/000",
                    "/v2/models/0000000000000000000000000000000000000000000000000000");
}
END_TEST

/* ---- the daemon ----------------------------------------------------------------- */

/* Sends text as a client that writes everything before it reads; the
 * answer must be status, and an error body must name want. */
static void expect_answer(const char *what, const char *text, size_t len, long status,
                          const char *want)
{
    http_resp r;
    const int rc = raw_request(dp.port, text, len, &r);
    ck_assert_msg(rc == 0, "%s: %s", what,
                  rc == -1 ? "broken pipe: the daemon closed before the body was sent"
                           : "no answer");
    ck_assert_msg(r.status == status, "%s: status %ld, want %ld: %.300s", what, r.status, status,
                  r.body);
    if (want)
        ck_assert_msg(strstr(r.body, want), "%s: body '%.300s' lacks '%s'", what, r.body, want);
    http_resp_free(&r);
}

static void expect_text(const char *what, const char *text, long status, const char *want)
{
    expect_answer(what, text, strlen(text), status, want);
}

/* A request of method and path with extra header lines (each ending in
 * \r\n) and a body of n bytes 'x' (owned; its length in *len). */
static char *request_with_body(const char *method, const char *path, const char *headers, size_t n,
                               size_t *len)
{
    char head[1024];
    const int k =
        snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: a\r\n%sContent-Length: %zu\r\n\r\n",
                 method, path, headers, n);
    char *text = xcalloc((size_t)k + n + 1, 1);
    memcpy(text, head, (size_t)k);
    memset(text + k, 'x', n);
    *len = (size_t)k + n;
    return text;
}

static const char *const keyed_model[] = {"--d-model",        "16",    "--n-heads", "4",
                                          "--d-ff",           "32",    "--api-key", "k",
                                          "--max-body-bytes", "65536", NULL};

static const char small_body[] = "{\"embeddings\": [[1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7]]}";

#define JSON_KEY "Content-Type: application/json\r\nAuthorization: Bearer k\r\n"

START_TEST(test_malformed_framing_http)
{
    start_or_fail(keyed_model, NULL);
    expect_text("two Content-Lengths",
                "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY
                "Content-Length: 5\r\nContent-Length: 50\r\n\r\n{\"a\":1}",
                400, "Content-Length is given twice");
    expect_text("a space before the colon",
                "GET /health HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello", 400,
                "is not a token");
    expect_text("a space in a name", "GET /health HTTP/1.1\r\nHost: a\r\nX Bad: 1\r\n\r\n", 400,
                "'X Bad' is not a token");
    expect_text("HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\n", 400, "Host is missing");
    static const char *const codings[] = {"gzip", "identity", "chunked, gzip"};
    for (size_t i = 0; i < sizeof codings / sizeof *codings; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY
                 "Transfer-Encoding: %s\r\n\r\nabc",
                 codings[i]);
        expect_text(codings[i], text, 501, "is not supported");
    }
    expect_text("Content-Length and chunked",
                "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY
                "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                400, "together");
    expect_text("absolute-form", "GET http://a/health HTTP/1.1\r\nHost: a\r\n\r\n", 200,
                "\"status\":\"ok\"");
    expect_text("an escaped NUL",
                "POST /v1/encode%00.png HTTP/1.1\r\nHost: a\r\n" JSON_KEY
                "Content-Length: 2\r\n\r\n{}",
                400, "escaped NUL");
    expect_text("a bad escape", "GET /hea%zzlth HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                "two hex digits");
    /* under /v2 (as far as the path decodes), in the protocol's form */
    expect_text("a bad escape under /v2", "GET /v2/models/enc%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                "{\"error\":\"request target '/v2/models/enc%zz' has a '%' not followed");
    /* Content-Encoding on /v1/encode: 415 naming it, as on /v2. */
    expect_text("gzip on /v1",
                "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY
                "Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
                415, "Content-Encoding gzip is not supported");
    expect_text("gzip on /v2",
                "POST /v2/models/encoder/infer HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\n"
                "Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
                415, "Content-Encoding gzip is not supported");
    /* After all that, the daemon serves. */
    char good[512];
    snprintf(good, sizeof good,
             "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY "Content-Length: %zu\r\n\r\n%s",
             strlen(small_body), small_body);
    expect_text("a good request", good, 200, "\"outputs\"");
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* An answer decided from the headers reaches a client that sends its
 * whole body first: 413 just over the limit and far over it, on both
 * protocols, and the errors decided before the size keep their status. */
START_TEST(test_early_answers_are_read)
{
    start_or_fail(keyed_model, NULL);
    static const struct {
        const char *what, *method, *path, *headers;
        size_t n;
        long status;
        const char *want;
    } cases[] = {
        {"64 bytes over", "POST", "/v1/encode", JSON_KEY, 65536 + 64, 413, "max_body_bytes"},
        {"2 MB over", "POST", "/v1/encode", JSON_KEY, 2u << 20, 413, "max_body_bytes"},
        {"/v2 over", "POST", "/v2/models/encoder/infer", "Authorization: Bearer k\r\n", 65536 + 64,
         413, "max_body_bytes"},
        {"no key", "POST", "/v1/encode", "Content-Type: application/json\r\n", 1u << 20, 401,
         "API key"},
        {"no route", "POST", "/v1/encoder", JSON_KEY, 1u << 20, 404, "no route /v1/encoder"},
        {"wrong method", "PUT", "/v1/encode", JSON_KEY, 1u << 20, 405, "does not accept PUT"},
        {"not JSON", "POST", "/v1/encode",
         "Content-Type: text/plain\r\nAuthorization: Bearer k\r\n", 1u << 20, 415,
         "application/json"},
        {"unknown model", "POST", "/v2/models/other/infer", "Authorization: Bearer k\r\n", 1u << 20,
         404, "unknown model 'other'"},
        /* past the drain budget (64 MiB here): answered at once with
         * Connection: close, and the socket lingers (linger.c) */
        {"100 MB over", "POST", "/v1/encode", JSON_KEY, 100u << 20, 413, "max_body_bytes"},
        {"unframed", "POST", "/v1/encode", "Transfer-Encoding: gzip\r\n" JSON_KEY, 8u << 20, 501,
         "gzip"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t len;
        char *text =
            request_with_body(cases[i].method, cases[i].path, cases[i].headers, cases[i].n, &len);
        expect_answer(cases[i].what, text, len, cases[i].status, cases[i].want);
        free(text);
    }
    /* A small body read and discarded leaves the connection open for the
     * next request (keep-alive). */
    const int fd = raw_connect(dp.port);
    ck_assert_int_ge(fd, 0);
    size_t len;
    char *text = request_with_body("POST", "/nowhere", "", 100, &len);
    http_resp r;
    ck_assert_int_eq(raw_exchange(fd, text, len, &r), 0);
    ck_assert_int_eq(r.status, 404);
    http_resp_free(&r);
    free(text);
    const char *health = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
    ck_assert_int_eq(raw_exchange(fd, health, strlen(health), &r), 0);
    ck_assert_int_eq(r.status, 200);
    http_resp_free(&r);
    close(fd);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* ---- request targets over the limit ------------------------------------------ */

/* A request of method whose target is n bytes: base, then 'a's; with the
 * keyed JSON headers and, when body, small_body.  Owned; length in *len. */
static char *long_target_request(const char *method, const char *base, size_t n, bool body,
                                 size_t *len)
{
    char tail[512];
    const int k =
        body ? snprintf(tail, sizeof tail,
                        " HTTP/1.1\r\nHost: a\r\n" JSON_KEY "Content-Length: %zu\r\n\r\n%s",
                        strlen(small_body), small_body)
             : snprintf(tail, sizeof tail, " HTTP/1.1\r\nHost: a\r\n" JSON_KEY "\r\n");
    const size_t m = strlen(method), b = strlen(base);
    char *text = xcalloc(m + 1 + n + (size_t)k + 1, 1);
    memcpy(text, method, m);
    text[m] = ' ';
    memcpy(text + m + 1, base, b);
    memset(text + m + 1 + b, 'a', n - b);
    memcpy(text + m + 1 + n, tail, (size_t)k + 1);
    *len = m + 1 + n + (size_t)k;
    return text;
}

/* Whether the peer closes fd within timeout_ms (what it sends is read and
 * dropped). */
static bool closed_within(int fd, int timeout_ms)
{
    char buf[4096];
    const struct timespec step = {0, 10 * 1000 * 1000};
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        const ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return true;
        if (k < 0)
            nanosleep(&step, NULL);
    }
    return false;
}

/* RFC 9112 section 3: "A server that receives a request-target longer than
 * any URI it wishes to parse MUST respond with a 414 (URI Too Long)".
 * attnd parses paths of up to 255 bytes (percent-decoded): one byte over,
 * and 8 KB, on /, /v1/encode and /v2/models/..., with a body and without,
 * is a 414 with the JSON error naming the target and the limit (under /v2
 * in the protocol's {"error": "..."} form), and the connection stays open
 * for the next request; 255 bytes is no 414.  A request line past
 * libmicrohttpd's 32 KiB buffer (64 KB, 1 MB) never reaches attnd:
 * libmicrohttpd answers 414 itself (an HTML body) and closes; the daemon
 * serves on. */
START_TEST(test_long_targets)
{
    start_or_fail(keyed_model, NULL);
    static const char *const bases[] = {"/", "/v1/encode", "/v2/models/"};
    static const size_t sizes[] = {256, 8192};
    const char *health = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
    for (size_t b = 0; b < sizeof bases / sizeof *bases; b++) {
        const bool v2 = strncmp(bases[b], "/v2", 3) == 0;
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
            for (int body = 0; body < 2; body++) {
                const char *method = body ? "POST" : "GET";
                char what[128];
                snprintf(what, sizeof what, "%s %s + %zu bytes", method, bases[b], sizes[z]);
                size_t len;
                char *text = long_target_request(method, bases[b], sizes[z], body, &len);
                const int fd = raw_connect(dp.port);
                ck_assert_int_ge(fd, 0);
                http_resp r;
                ck_assert_msg(raw_exchange(fd, text, len, &r) == 0, "%s: no answer", what);
                ck_assert_msg(r.status == 414, "%s: status %ld, want 414: %.300s", what, r.status,
                              r.body);
                json_error_t je;
                json_t *j = json_loads(r.body, 0, &je);
                ck_assert_msg(j, "%s: body is not JSON: %.300s", what, r.body);
                const json_t *e = json_object_get(j, "error");
                const char *message =
                    v2 ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
                ck_assert_msg(message, "%s: no error message in %.300s", what, r.body);
                if (!v2)
                    ck_assert_str_eq(json_string_value(json_object_get(e, "type")), "uri_too_long");
                char quoted[64];
                snprintf(quoted, sizeof quoted, "request target '%saaa", bases[b]);
                ck_assert_msg(strstr(message, quoted) && strstr(message, "over 255 bytes"),
                              "%s: message '%s' names not the target and the limit", what, message);
                char conn[32];
                ck_assert_msg(!http_header(&r, "Connection", conn, sizeof conn),
                              "%s: Connection: %s", what, conn);
                json_decref(j);
                http_resp_free(&r);
                /* kept open: the next request on it is served */
                ck_assert_msg(raw_exchange(fd, health, strlen(health), &r) == 0,
                              "%s: the connection did not stay open", what);
                ck_assert_int_eq(r.status, 200);
                http_resp_free(&r);
                close(fd);
                free(text);
            }
        /* 255 bytes: within the limit, so the route decides (404). */
        size_t len;
        char *text = long_target_request("GET", bases[b], 255, false, &len);
        expect_answer("255 bytes", text, len, 404, v2 ? "unknown model" : "no route");
        free(text);
    }
    static const size_t far[] = {64u << 10, 1u << 20};
    for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
        for (size_t z = 0; z < sizeof far / sizeof *far; z++)
            for (int body = 0; body < 2; body++) {
                size_t len;
                char *text =
                    long_target_request(body ? "POST" : "GET", bases[b], far[z], body, &len);
                const int fd = raw_connect(dp.port);
                ck_assert_int_ge(fd, 0);
                (void)raw_send(fd, text, len); /* libmicrohttpd may close before the end */
                const int st = raw_status(fd, 10000);
                ck_assert_msg(st == 414, "%s %s + %zu bytes: status %d, want libmicrohttpd's 414",
                              body ? "POST" : "GET", bases[b], far[z], st);
                ck_assert_msg(closed_within(fd, 10000), "%s + %zu bytes: left open", bases[b],
                              far[z]);
                close(fd);
                free(text);
            }
    expect_text("after the long targets", health, 200, "\"status\":\"ok\"");
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* A connection answered before its body lingers: it keeps taking the
 * client's bytes (so the client reads the answer, not a reset), and is
 * closed once the client falls silent (after LINGER_IDLE_S: the test
 * observes the close, bounded by a minute). */
START_TEST(test_lingering_close)
{
    start_or_fail(keyed_model, NULL);
    const int fd = raw_connect(dp.port);
    ck_assert_int_ge(fd, 0);
    const char *head =
        "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY "Content-Length: 1000000000\r\n\r\n";
    ck_assert_int_eq(raw_send(fd, head, strlen(head)), 0);
    ck_assert_int_eq(raw_status(fd, 10000), 413);
    enum { CHUNK = 1 << 20 };
    char *chunk = xcalloc(CHUNK, 1);
    memset(chunk, 'x', CHUNK);
    for (int i = 0; i < 16; i++) /* a reset would fail these */
        ck_assert_msg(raw_send(fd, chunk, CHUNK) == 0, "send %d after the answer failed", i);
    /* Silent, the socket is closed by the daemon (LINGER_IDLE_S later): its
     * descriptor of the connection goes.  Observed, bounded by a minute. */
    const unsigned long ino = raw_peer_inode(fd, dp.port);
    ck_assert_msg(ino != 0, "the daemon's end of the connection is not in /proc/net/tcp");
    char name[64];
    snprintf(name, sizeof name, "socket:[%lu]", ino);
    ck_assert_int_eq(proc_fds(dp.pid, name), 1); /* lingering: still the daemon's */
    int held = 1;
    for (int i = 0; i < 600 && held; i++) {
        const struct timespec step = {0, 100000000L};
        nanosleep(&step, NULL);
        held = proc_fds(dp.pid, name);
    }
    ck_assert_msg(!held,
                  "the daemon still holds the connection after a minute of silence "
                  "(LINGER_IDLE_S is %.0f s)",
                  LINGER_IDLE_S);
    free(chunk);
    close(fd);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Keyless clients cannot make the daemon keep their bodies: four of them
 * sending 16 MB each (under max_body_bytes) each read 401, and the
 * daemon's resident memory grows by far less than one body. */
START_TEST(test_keyless_bodies_not_kept)
{
    const char *args[] = {"--d-model", "16",        "--n-heads", "4", "--d-ff",
                          "32",        "--api-key", "k",         NULL};
    start_or_fail(args, NULL);
    enum { CLIENTS = 4, BODY = 16 << 20 };
    size_t len;
    char *text =
        request_with_body("POST", "/v1/encode", "Content-Type: application/json\r\n", BODY, &len);
    const unsigned long rss0 = proc_status_kb(dp.pid, "VmRSS:");
    int fd[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) {
        fd[c] = raw_connect(dp.port);
        ck_assert_int_ge(fd[c], 0);
        /* Everything but the last byte: the daemon holds all four open. */
        ck_assert_int_eq(raw_send(fd[c], text, len - 1), 0);
    }
    const unsigned long rss1 = proc_status_kb(dp.pid, "VmRSS:");
    for (int c = 0; c < CLIENTS; c++) {
        http_resp r;
        ck_assert_int_eq(raw_exchange(fd[c], text + len - 1, 1, &r), 0);
        ck_assert_int_eq(r.status, 401);
        http_resp_free(&r);
        close(fd[c]);
    }
    ck_assert_msg(rss1 < rss0 + (BODY >> 10) / 2,
                  "VmRSS %lu kB -> %lu kB with %d keyless 16 MB bodies in", rss0, rss1, CLIENTS);
    free(text);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* Expect: 100-continue: an answer the headers decide comes instead of 100
 * Continue; a request the headers accept gets 100 Continue. */
START_TEST(test_expect_continue)
{
    start_or_fail(keyed_model, NULL);
    const int fd = raw_connect(dp.port);
    ck_assert_int_ge(fd, 0);
    const char *keyless = "POST /v1/encode HTTP/1.1\r\nHost: a\r\nContent-Type: application/json"
                          "\r\nContent-Length: 3000\r\nExpect: 100-continue\r\n\r\n";
    ck_assert_int_eq(raw_send(fd, keyless, strlen(keyless)), 0);
    const int st = raw_status(fd, 30000);
    ck_assert_msg(st == 401, "a keyless Expect: 100-continue got %d, want 401", st);
    close(fd);
    const int fd2 = raw_connect(dp.port);
    ck_assert_int_ge(fd2, 0);
    const char *keyed = "POST /v1/encode HTTP/1.1\r\nHost: a\r\n" JSON_KEY
                        "Content-Length: 36\r\nExpect: 100-continue\r\n\r\n";
    ck_assert_int_eq(raw_send(fd2, keyed, strlen(keyed)), 0);
    ck_assert_int_eq(raw_status(fd2, 30000), 100);
    close(fd2);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *framing_suite(void)
{
    Suite *s = timed_suite("framing");
    TCase *unit = timed_case(s, "rules", 60);
    tcase_add_test(unit, test_framing_accepts);
    tcase_add_test(unit, test_framing_refuses);
    tcase_add_test(unit, test_framing_path);
    TCase *tc = timed_case(s, "daemon", 300);
    tcase_add_test(tc, test_malformed_framing_http);
    tcase_add_test(tc, test_early_answers_are_read);
    tcase_add_test(tc, test_long_targets);
    tcase_add_test(tc, test_lingering_close);
    tcase_add_test(tc, test_keyless_bodies_not_kept);
    tcase_add_test(tc, test_expect_continue);
    return s;
}
