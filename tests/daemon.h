/* daemon.h - integration-test helpers: run build/attnd on an ephemeral
 * 127.0.0.1 port and talk HTTP to it with libcurl. */
#ifndef ATTND_TESTS_DAEMON_H
#define ATTND_TESTS_DAEMON_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#ifndef ATTND_BIN
#error "ATTND_BIN must name build/attnd (the Makefile defines it)"
#endif

typedef struct daemon_proc {
    pid_t pid;
    int port;
    int err_fd;             /* the daemon's stderr */
    pthread_t reader;       /* drains err_fd into log */
    pthread_mutex_t lock;
    char *log;              /* everything the daemon wrote to stderr */
    size_t log_len, log_cap;
} daemon_proc;

/* Starts attnd with args (NULL-terminated, after argv[0]; "--host 127.0.0.1
 * --port 0" are added first) and extra environment entries "K=V" (NULL-
 * terminated, may be NULL), waits until /health is 200.  Returns 0 or -1
 * (the daemon's log is then in d->log). */
int daemon_start(daemon_proc *d, const char *const *args, const char *const *env);

/* Sends SIGTERM, waits; returns the exit status (or -1 if killed by a signal).
 * Frees the log. */
int daemon_stop(daemon_proc *d);

/* A copy of the log so far (owned). */
char *daemon_log(daemon_proc *d);
/* A copy of the log once it holds needle, or after timeout_ms without it
 * (owned): the log is read from the daemon's pipe by a thread of its own,
 * which a busy host may leave behind what the daemon has already said. */
char *daemon_log_until(daemon_proc *d, const char *needle, int timeout_ms);

/* ---- the daemon suites' fixture ------------------------------------------ */

/* The daemon a daemon suite's test runs: one at a time (each test in its own
 * process under CK_FORK, one after the other without). */
extern daemon_proc dp;

/* A small seeded model: D 16, 4 heads, F 32, seed 3 (args for
 * start_or_fail). */
extern const char *const small_model[];

/* daemon_start on dp, or the test fails with the daemon's log. */
void start_or_fail(const char *const *args, const char *const *env);

/* Runs ATTND_BIN with args to completion (no server), capturing stdout and
 * stderr together into *out (owned).  Returns the exit status. */
int run_attnd(const char *const *args, const char *const *env, char **out);

typedef struct http_resp {
    long status;
    char *body;             /* owned, NUL-terminated */
    size_t len;
    char *headers;          /* owned, raw header block */
} http_resp;

/* One request.  headers: NULL-terminated "Name: value" strings, or NULL.
 * body may be NULL.  Returns 0 (any HTTP status) or -1 (no response). */
int http_do(int port, const char *method, const char *path, const char *body, size_t len,
            const char *const *headers, http_resp *out);

/* POST path with Content-Type application/json. */
int http_post_json(int port, const char *path, const char *body, http_resp *out);

/* The value of a response header (case-insensitive name), copied into buf;
 * NULL when absent. */
const char *http_header(const http_resp *r, const char *name, char *buf, size_t size);

void http_resp_free(http_resp *r);

/* ---- a response's JSON, for the daemon suites (daemon_fixture.c) ---------- */

struct json_t; /* jansson's */

/* r's body parsed as JSON (owned), or the test fails. */
struct json_t *http_json_body(const http_resp *r);

/* POST path with body on the running daemon (dp): *status and the body
 * parsed as JSON, any JSON value (owned); the test fails otherwise. */
struct json_t *daemon_post(const char *path, const char *body, long *status);

/* The value of metric name (an attnd_* sample without labels) in GET
 * /metrics on port; the test fails when there is no answer or no such
 * sample. */
long http_metric(int port, const char *name);

/* The error body of the API's contract: r's status, its error's type, and a
 * message containing want; else the test fails. */
void http_assert_error(const http_resp *r, long status, const char *type, const char *want);

/* ---- raw sockets: what libcurl would not send ---------------------------- */

/* A TCP connection to 127.0.0.1:port from source address from (another
 * loopback address such as "127.0.0.2", or NULL), or -1. */
int raw_connect_from(int port, const char *from);
int raw_connect(int port);

/* Sends all n bytes (MSG_NOSIGNAL); returns 0, or -1 when the peer is gone. */
int raw_send(int fd, const char *s, size_t n);

/* Reads what the daemon answers on n connections within timeout_ms: st[b]
 * is the HTTP status of fd[b]'s first response line, 0 when it was closed
 * without one, -1 when it is still open and silent. */
void raw_statuses(const int *fd, int *st, int n, int timeout_ms);

/* raw_statuses on one connection. */
int raw_status(int fd, int timeout_ms);

/* Sends text (len bytes) on a new connection, all of it before reading,
 * as Python's http.client and Node's fetch do (the headers, and 50 ms later
 * the body, in two writes as http.client makes them), then reads one response
 * into out (free with http_resp_free).  Returns 0; -1 when sending failed
 * (the daemon closed the connection first: a broken pipe); -2 when no
 * response came within 60 s (a daemon test's own timeout: a 1 MB text
 * behind four on a prepare worker beside busy processes takes 25-30). */
int raw_request(int port, const char *text, size_t len, http_resp *out);

/* The same on an open connection fd (for keep-alive). */
int raw_exchange(int fd, const char *text, size_t len, http_resp *out);

/* Reads one response on fd within timeout_ms into out (free with
 * http_resp_free).  Returns 0, or -1 when none came. */
int raw_response(int fd, int timeout_ms, http_resp *out);

/* A field of /proc/PID/status in kB ("VmRSS:", "VmSize:"), or 0. */
unsigned long proc_status_kb(pid_t pid, const char *field);

/* How many of pid's descriptors link to a name starting with kind
 * ("socket:", "socket:[INODE]"; "" counts them all). */
int proc_fds(pid_t pid, const char *kind);

/* The inode of the daemon's end of fd, a connection to its port on
 * 127.0.0.1 (/proc/net/tcp), or 0 when it has none (closed). */
unsigned long raw_peer_inode(int fd, int port);

#endif
