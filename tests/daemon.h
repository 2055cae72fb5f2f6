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

#endif
