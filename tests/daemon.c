/* daemon.c - run attnd for integration tests, and a small libcurl client. */
#include "daemon.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void log_append(daemon_proc *d, const char *s, size_t n)
{
    pthread_mutex_lock(&d->lock);
    if (d->log_len + n + 1 > d->log_cap) {
        size_t cap = (d->log_cap ? d->log_cap : 4096) * 2 + n;
        char *p = realloc(d->log, cap);
        if (!p) {
            pthread_mutex_unlock(&d->lock);
            return;
        }
        d->log = p;
        d->log_cap = cap;
    }
    memcpy(d->log + d->log_len, s, n);
    d->log_len += n;
    d->log[d->log_len] = '\0';
    pthread_mutex_unlock(&d->lock);
}

static void *reader_main(void *arg)
{
    daemon_proc *d = arg;
    char buf[4096];
    ssize_t n;
    while ((n = read(d->err_fd, buf, sizeof buf)) > 0)
        log_append(d, buf, (size_t)n);
    return NULL;
}

char *daemon_log(daemon_proc *d)
{
    pthread_mutex_lock(&d->lock);
    char *copy = strdup(d->log ? d->log : "");
    pthread_mutex_unlock(&d->lock);
    return copy;
}

/* argv for ATTND_BIN: argv[0], then pre (may be NULL), then args.  execv
 * takes char *const[], so the strings are copied rather than cast. */
static char **make_argv(const char *const *pre, const char *const *args)
{
    size_t n = 1;
    for (size_t i = 0; pre && pre[i]; i++)
        n++;
    for (size_t i = 0; args && args[i]; i++)
        n++;
    char **argv = calloc(n + 1, sizeof *argv);
    size_t k = 0;
    argv[k++] = strdup(ATTND_BIN);
    for (size_t i = 0; pre && pre[i]; i++)
        argv[k++] = strdup(pre[i]);
    for (size_t i = 0; args && args[i]; i++)
        argv[k++] = strdup(args[i]);
    return argv;
}

static void free_argv(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* The child: environment plus extra entries (which replace same-named ones).
 * With ATTND_TEST_WRAPPER set (make valgrind sets it to a valgrind command
 * line), attnd runs under that command: its words, then argv. */
static void child_exec(char **argv, const char *const *env)
{
    for (size_t i = 0; env && env[i]; i++)
        putenv(strdup(env[i])); /* the child execs right away: never freed */
    const char *wrapper = getenv("ATTND_TEST_WRAPPER");
    if (wrapper && wrapper[0]) {
        char *words = strdup(wrapper), *save = NULL, *wargv[64];
        size_t n = 0, k = 0;
        for (char *w = strtok_r(words, " ", &save); w && n < 32; w = strtok_r(NULL, " ", &save))
            wargv[n++] = w;
        while (argv[k] && n < 63)
            wargv[n++] = argv[k++];
        wargv[n] = NULL;
        execvp(wargv[0], wargv);
        _exit(127);
    }
    execv(ATTND_BIN, argv);
    _exit(127);
}

int daemon_start(daemon_proc *d, const char *const *args, const char *const *env)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    static const char *const pre[] = {"--host", "127.0.0.1", "--port", "0", NULL};
    char **argv = make_argv(pre, args);
    d->pid = fork();
    if (d->pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        child_exec(argv, env);
    }
    free_argv(argv);
    close(fds[1]);
    d->err_fd = fds[0];
    pthread_create(&d->reader, NULL, reader_main, d);

    /* The port from "listening on http://127.0.0.1:PORT", then /health 200. */
    for (int waited = 0; waited < 20000; waited += 10) {
        if (!d->port) {
            pthread_mutex_lock(&d->lock);
            const char *p = d->log ? strstr(d->log, "listening on http://") : NULL;
            const char *colon = p ? strchr(p + 20, ':') : NULL;
            if (colon)
                d->port = atoi(colon + 1);
            pthread_mutex_unlock(&d->lock);
        }
        if (d->port) {
            http_resp r;
            if (http_do(d->port, "GET", "/health", NULL, 0, NULL, &r) == 0) {
                long st = r.status;
                http_resp_free(&r);
                if (st == 200)
                    return 0;
            }
        }
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->pid = 0;
            pthread_join(d->reader, NULL);
            return -1;
        }
        sleep_ms(10);
    }
    return -1;
}

int daemon_stop(daemon_proc *d)
{
    int status = 0, rc = -1;
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        waitpid(d->pid, &status, 0);
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pthread_join(d->reader, NULL);
        if (rc != 0) { /* say how it ended, and its last words, for the failing test */
            pthread_mutex_lock(&d->lock);
            const size_t n = d->log ? strlen(d->log) : 0;
            fprintf(stderr, "daemon_stop: attnd %s %d; the end of its log:\n%s\n",
                    WIFEXITED(status) ? "exited with status" : "was killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                    d->log ? d->log + (n > 3000 ? n - 3000 : 0) : "(none)");
            pthread_mutex_unlock(&d->lock);
        }
    }
    close(d->err_fd);
    free(d->log);
    d->log = NULL;
    d->pid = 0;
    pthread_mutex_destroy(&d->lock);
    return rc;
}

int run_attnd(const char *const *args, const char *const *env, char **out)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    char **argv = make_argv(NULL, args);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        child_exec(argv, env);
    }
    free_argv(argv);
    close(fds[1]);
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    ssize_t n;
    while (buf && (n = read(fds[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 1024) {
            char *b = realloc(buf, cap * 2);
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
    }
    close(fds[0]);
    if (buf)
        buf[len] = '\0';
    *out = buf;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- the client ---------------------------------------------------------- */

typedef struct grow {
    char *s;
    size_t len;
} grow;

static size_t on_data(char *ptr, size_t size, size_t n, void *arg)
{
    grow *g = arg;
    size_t add = size * n;
    char *s = realloc(g->s, g->len + add + 1);
    if (!s)
        return 0;
    memcpy(s + g->len, ptr, add);
    g->s = s;
    g->len += add;
    g->s[g->len] = '\0';
    return add;
}

int http_do(int port, const char *method, const char *path, const char *body, size_t len,
            const char *const *headers, http_resp *out)
{
    memset(out, 0, sizeof *out);
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    grow b = {0}, h = {0};
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    hl = curl_slist_append(hl, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    out->body = b.s ? b.s : strdup("");
    out->len = b.len;
    out->headers = h.s ? h.s : strdup("");
    return rc == CURLE_OK ? 0 : -1;
}

int http_post_json(int port, const char *path, const char *body, http_resp *out)
{
    static const char *const hdr[] = {"Content-Type: application/json", NULL};
    return http_do(port, "POST", path, body, strlen(body), hdr, out);
}

const char *http_header(const http_resp *r, const char *name, char *buf, size_t size)
{
    size_t n = strlen(name);
    for (const char *line = r->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (ll > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ')
                v++;
            size_t vl = (size_t)(line + ll - v);
            if (vl >= size)
                vl = size - 1;
            memcpy(buf, v, vl);
            buf[vl] = '\0';
            return buf;
        }
        line = end ? end + 2 : NULL;
    }
    return NULL;
}

void http_resp_free(http_resp *r)
{
    free(r->body);
    free(r->headers);
    r->body = r->headers = NULL;
}
