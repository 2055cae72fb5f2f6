/* daemon.c - run attnd for integration tests, and a small libcurl client. */
#include "daemon.h"


#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
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

char *daemon_log_until(daemon_proc *d, const char *needle, int timeout_ms)
{
    for (int waited = 0;; waited += 10) {
        char *copy = daemon_log(d);
        if (strstr(copy, needle) || waited >= timeout_ms)
            return copy;
        free(copy);
        usleep(10000);
    }
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

/* ---- the responses' record ---------------------------------------------- */

/* With ATTND_TEST_RECORD=DIR, every response a test reads is written to
 * DIR/<pid>-<n>.http: one line of JSON naming the request's method and
 * target and whether the body is still framed as it came (raw: chunked is
 * not decoded) or decoded (libcurl), then the response (status line,
 * headers, a blank line, the body), and the request's body, if any, to
 * DIR/<pid>-<n>.req.  make openapi-check validates each against /openapi.json
 * (tests/openapi/validate.mjs).  Check runs each test in its own process,
 * so the file names carry the pid. */
static void record_response(const char *method, const char *target, size_t target_len, bool raw,
                            const char *req, size_t req_len, const char *head, size_t head_len,
                            const char *body, size_t len)
{
    const char *dir = getenv("ATTND_TEST_RECORD");
    if (!dir || !*dir)
        return;
    static unsigned long seq;
    char name[4096];
    const unsigned long n = seq++;
    FILE *f;
    if (req && req_len) {
        snprintf(name, sizeof name, "%s/%ld-%lu.req", dir, (long)getpid(), n);
        if ((f = fopen(name, "wb"))) {
            fwrite(req, 1, req_len, f);
            fclose(f);
        }
    }
    snprintf(name, sizeof name, "%s/%ld-%lu.http", dir, (long)getpid(), n);
    f = fopen(name, "wb");
    if (!f)
        return;
    fprintf(f, "{\"method\": \"");
    for (const char *m = method; *m; m++)
        fputc(*m == '"' || *m == '\\' || (unsigned char)*m < 0x20 ? '?' : *m, f);
    fprintf(f, "\", \"target\": \"");
    for (size_t i = 0; i < target_len; i++) /* printable ASCII, others as \u00XX */
        if (target[i] == '"' || target[i] == '\\' || (unsigned char)target[i] < 0x20 ||
            (unsigned char)target[i] > 0x7e)
            fprintf(f, "\\u%04x", (unsigned char)target[i]);
        else
            fputc(target[i], f);
    fprintf(f, "\", \"raw\": %s}\n", raw ? "true" : "false");
    fwrite(head, 1, head_len, f);
    fwrite(body, 1, len, f);
    fclose(f);
}

/* record_response for a raw request's text: its method and target are the
 * request line's first two words. */
static void record_raw(const char *text, size_t len, const http_resp *r)
{
    const char *sp = memchr(text, ' ', len);
    const size_t mlen = sp ? (size_t)(sp - text) : 0;
    char method[32] = "";
    if (mlen < sizeof method)
        memcpy(method, text, mlen), method[mlen] = '\0';
    const char *t = sp ? sp + 1 : text + len;
    const char *te = t;
    while (te < text + len && *te != ' ' && *te != '\r' && *te != '\n')
        te++;
    char *head = malloc(strlen(r->headers) + 5);
    if (!head)
        return;
    strcpy(head, r->headers);
    strcat(head, "\r\n\r\n");
    record_response(method, t, (size_t)(te - t), true, NULL, 0, head, strlen(head), r->body, r->len);
    free(head);
}

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
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
        record_response(method, path, strlen(path), false, body, body ? len : 0, h.s ? h.s : "", h.len, b.s ? b.s : "", b.len);
    }
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

/* ---- raw sockets ---------------------------------------------------------- */

/* calloc that does not return NULL: this file is linked into the load
 * client too, without Check, so out of memory ends the process. */
static void *zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("daemon.c: out of memory\n", stderr);
        abort();
    }
    return p;
}

/* A TCP connection to 127.0.0.1:port from source address from (another
 * loopback address such as "127.0.0.2", or NULL), or -1. */
int raw_connect_from(int port, const char *from)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (from) {
        struct sockaddr_in src = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, from, &src.sin_addr) != 1 ||
            bind(fd, (struct sockaddr *)&src, sizeof src) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int raw_connect(int port)
{
    return raw_connect_from(port, NULL);
}

/* Sends all n bytes (MSG_NOSIGNAL); returns 0, or -1 when the peer is gone. */
int raw_send(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads what the daemon answers on n connections within timeout_ms (by the
 * clock: with many connections poll often returns at once): st[b] is the
 * HTTP status of fd[b]'s first response line, 0 when it was closed without
 * one, -1 when it is still open and silent. */
void raw_statuses(const int *fd, int *st, int n, int timeout_ms)
{
    enum { LINE = 64 };
    char *buf = zalloc((size_t)n, LINE);
    size_t *len = zalloc((size_t)n, sizeof *len);
    struct pollfd *p = zalloc((size_t)n, sizeof *p);
    for (int b = 0; b < n; b++)
        st[b] = -1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
            break;
        int open = 0;
        for (int b = 0; b < n; b++) {
            p[b] = (struct pollfd){.fd = st[b] == -1 ? fd[b] : -1, .events = POLLIN};
            open += st[b] == -1;
        }
        if (open == 0 || poll(p, (nfds_t)n, 50) < 0)
            break;
        for (int b = 0; b < n; b++) {
            if (st[b] != -1 || !(p[b].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char *line = buf + (size_t)b * LINE;
            const ssize_t k = recv(fd[b], line + len[b], LINE - 1 - len[b], 0);
            if (k > 0)
                len[b] += (size_t)k;
            line[len[b]] = '\0';
            if (len[b] >= 12 && strncmp(line, "HTTP/1.", 7) == 0)
                st[b] = atoi(line + 9);
            else if (k <= 0 || len[b] == LINE - 1)
                st[b] = 0;
        }
    }
    free(p);
    free(len);
    free(buf);
}

/* raw_statuses on one connection. */
int raw_status(int fd, int timeout_ms)
{
    int st;
    raw_statuses(&fd, &st, 1, timeout_ms);
    return st;
}

/* A field of /proc/PID/status in kB ("VmRSS:", "VmSize:"), or 0. */
unsigned long proc_status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    unsigned long kb = 0;
    size_t n = strlen(field);
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, field, n) == 0)
            kb = strtoul(line + n, NULL, 10);
    if (fp)
        fclose(fp);
    return kb;
}


/* Reads one response from fd into out (status, raw headers, body framed by
 * Content-Length or by the connection's end).  Returns 0, or -1 when no
 * status line came within timeout_ms. */
static int raw_read_response(int fd, int timeout_ms, http_resp *out)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = zalloc(cap, 1);
    long want = -1; /* the whole response's length, once the headers are in */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (want < 0 || (long)len < want) {
        if (poll(&p, 1, timeout_ms) <= 0)
            break;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown)
                break;
            buf = grown;
            cap *= 2;
        }
        const ssize_t k = recv(fd, buf + len, cap - 1 - len, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
        buf[len] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        if (want < 0 && end && strncmp(buf, "HTTP/1.1 100", 12) != 0) {
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            if (cl && cl < end)
                want = (end + 4 - buf) + atol(cl + 17);
        } else if (end && strncmp(buf, "HTTP/1.1 100", 12) == 0) {
            /* an interim 100 Continue: what follows is the response */
            memmove(buf, end + 4, len - (size_t)(end + 4 - buf) + 1);
            len -= (size_t)(end + 4 - buf);
        }
    }
    char *end = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.", 7) != 0 || !end) {
        free(buf);
        return -1;
    }
    *end = '\0';
    out->status = atol(buf + 9);
    out->headers = strdup(buf);
    out->len = len - (size_t)(end + 4 - buf);
    out->body = zalloc(out->len + 1, 1);
    memcpy(out->body, end + 4, out->len);
    free(buf);
    return 0;
}

int raw_request(int port, const char *text, size_t len, http_resp *out)
{
    memset(out, 0, sizeof *out);
    const int fd = raw_connect(port);
    if (fd < 0)
        return -2;
    /* The headers, then (as Python's http.client does, in a second write a
     * moment later) the whole body, and only then read: an answer sent
     * before the body and the connection closed under it is lost. */
    const char *end = strstr(text, "\r\n\r\n");
    const size_t head = end && (size_t)(end + 4 - text) < len ? (size_t)(end + 4 - text) : len;
    int rc = raw_send(fd, text, head);
    if (rc == 0 && head < len) {
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        rc = raw_send(fd, text + head, len - head);
    }
    if (rc < 0) {
        close(fd);
        return -1;
    }
    rc = raw_read_response(fd, 60000, out);
    close(fd);
    if (rc == 0)
        record_raw(text, len, out);
    return rc < 0 ? -2 : 0;
}

int raw_response(int fd, int timeout_ms, http_resp *out)
{
    memset(out, 0, sizeof *out);
    return raw_read_response(fd, timeout_ms, out) < 0 ? -1 : 0;
}

int raw_exchange(int fd, const char *text, size_t len, http_resp *out)
{
    memset(out, 0, sizeof *out);
    if (raw_send(fd, text, len) < 0)
        return -1;
    if (raw_read_response(fd, 30000, out) < 0)
        return -2;
    record_raw(text, len, out);
    return 0;
}

int proc_fds(pid_t pid, const char *kind)
{
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) { /* "." and ".." are no links */
        const ssize_t k = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
        if (k >= 0) {
            link[k] = '\0';
            n += strncmp(link, kind, strlen(kind)) == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

unsigned long raw_peer_inode(int fd, int port)
{
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    if (getsockname(fd, (struct sockaddr *)&me, &len) != 0)
        return 0;
    const unsigned mine = ntohs(me.sin_port);
    FILE *fp = fopen("/proc/net/tcp", "r");
    char line[512];
    unsigned long inode = 0;
    while (fp && !inode && fgets(line, sizeof line, fp)) {
        unsigned lport, rport;
        unsigned long ino;
        if (sscanf(line, " %*d: %*x:%x %*x:%x %*x %*s %*s %*s %*d %*d %lu", &lport, &rport, &ino) ==
                3 &&
            lport == (unsigned)port && rport == mine)
            inode = ino;
    }
    if (fp)
        fclose(fp);
    return inode;
}
