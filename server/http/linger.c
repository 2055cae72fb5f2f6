/* linger.c - a graceful close for connections answered before their body
 * was read (linger.h).
 *
 * An answer decided from the headers goes out with Connection: close when
 * the body is not read first: a body past the drain budget (request.c,
 * drain_budget), or one that cannot be framed.  Were the socket simply
 * closed while the client is still sending, the client's next bytes would
 * draw a reset, and a reset makes the client's kernel drop the answer it
 * has not read yet: Python's http.client and Node's fetch report a broken
 * pipe instead of the 413.  So such a socket is closed the way nginx's
 * lingering close does it: once libmicrohttpd has sent the answer and let
 * go of the socket, a duplicate of it is half-closed (a FIN after the
 * answer) and read and discarded here, on one thread, until the client
 * closes its side, is silent for LINGER_IDLE_S, or LINGER_TOTAL_S have
 * passed; then it is closed.  At most LINGER_MAX sockets linger at once;
 * past that a socket is closed at once. */
#include "http/linger.h"

#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct lingerer {
    int fd;
    double start, last; /* when it began lingering; its last byte */
} lingerer;

struct linger_set {
    pthread_t thread;
    int wake[2]; /* a byte: look at the new sockets; the write end closed: stop */
    pthread_mutex_t mu;
    lingerer added[LINGER_MAX]; /* handed over, not yet polled (under mu) */
    int n_added;
    int n_active; /* added + polled (under mu): the bound */
};

/* Reads and discards what fd holds; false when it is done (EOF, error). */
static bool drain(int fd)
{
    static char scratch[1 << 16]; /* never read: one thread writes it */
    for (;;) {
        const ssize_t n = recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
        if (n > 0)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
}

static void *linger_main(void *arg)
{
    linger_set *lg = arg;
    lingerer live[LINGER_MAX];
    struct pollfd fds[LINGER_MAX + 1];
    int n = 0;
    bool stopping = false;
    while (!stopping) {
        fds[0] = (struct pollfd){.fd = lg->wake[0], .events = POLLIN};
        for (int i = 0; i < n; i++)
            fds[i + 1] = (struct pollfd){.fd = live[i].fd, .events = POLLIN};
        const int timeout_ms = n ? 250 : -1; /* deadlines are checked this often */
        if (poll(fds, (nfds_t)n + 1, timeout_ms) < 0 && errno != EINTR)
            break;
        const int polled = n; /* live[0..polled) have fds[1..polled] */
        if (fds[0].revents) {
            char b[64];
            stopping = read(lg->wake[0], b, sizeof b) == 0;
            pthread_mutex_lock(&lg->mu);
            for (int i = 0; i < lg->n_added; i++)
                live[n++] = lg->added[i];
            lg->n_added = 0;
            pthread_mutex_unlock(&lg->mu);
        }
        const double t = clock_now();
        int kept = 0, closed = 0;
        for (int i = 0; i < n; i++) {
            lingerer *l = &live[i];
            bool open = true;
            if (i < polled && fds[i + 1].revents) {
                open = drain(l->fd);
                l->last = t;
            }
            if (open && !stopping && t - l->last < LINGER_IDLE_S && t - l->start < LINGER_TOTAL_S)
                live[kept++] = *l;
            else {
                close(l->fd);
                closed++;
            }
        }
        n = kept;
        if (closed) {
            pthread_mutex_lock(&lg->mu);
            lg->n_active -= closed;
            pthread_mutex_unlock(&lg->mu);
        }
    }
    for (int i = 0; i < n; i++)
        close(live[i].fd);
    return NULL;
}

linger_set *linger_new(void)
{
    linger_set *lg = calloc(1, sizeof *lg);
    if (!lg)
        return NULL;
    if (pipe2(lg->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        free(lg);
        return NULL;
    }
    pthread_mutex_init(&lg->mu, NULL);
    if (pthread_create(&lg->thread, NULL, linger_main, lg) != 0) {
        close(lg->wake[0]);
        close(lg->wake[1]);
        pthread_mutex_destroy(&lg->mu);
        free(lg);
        return NULL;
    }
    return lg;
}

bool linger_add(linger_set *lg, int fd)
{
    bool taken = false;
    if (lg) {
        pthread_mutex_lock(&lg->mu);
        if (lg->n_active < LINGER_MAX) {
            const double t = clock_now();
            lg->added[lg->n_added++] = (lingerer){fd, t, t};
            lg->n_active++;
            taken = true;
        }
        pthread_mutex_unlock(&lg->mu);
    }
    if (!taken) {
        close(fd);
        return false;
    }
    shutdown(fd, SHUT_WR); /* the answer is sent: a FIN after it */
    const char b = 1;
    if (write(lg->wake[1], &b, 1) < 0) {
        /* the pipe is full: the thread has wake-ups pending anyway */
    }
    return true;
}

void linger_free(linger_set *lg)
{
    if (!lg)
        return;
    close(lg->wake[1]); /* read() returns 0: stop */
    pthread_join(lg->thread, NULL);
    close(lg->wake[0]);
    pthread_mutex_lock(&lg->mu);
    for (int i = 0; i < lg->n_added; i++)
        close(lg->added[i].fd);
    pthread_mutex_unlock(&lg->mu);
    pthread_mutex_destroy(&lg->mu);
    free(lg);
}
