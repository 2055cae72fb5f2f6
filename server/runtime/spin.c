/* spin.c - idle-priority spinners that keep CPUs out of halt (see spin.h). */
#include "runtime/spin.h"

#include "base/clock.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

struct spinners {
    long long window_ns;
    int n; /* threads started */
    pthread_t *threads;
    atomic_llong until;  /* spin while CLOCK_MONOTONIC ns < until */
    atomic_int sleeping; /* spinners in (or about to enter) cond_wait */
    atomic_int stopping;
    atomic_int idle;    /* spinners running at SCHED_IDLE */
    atomic_ulong spins; /* windows a spinner has begun to spin in */
    pthread_mutex_t lock;
    pthread_cond_t wake;
};

typedef struct spinner_arg {
    spinners *s;
    int cpu; /* to pin to, or -1 */
} spinner_arg;

static bool spinning(spinners *s)
{
    return clock_ns(CLOCK_MONOTONIC) < atomic_load(&s->until) && !atomic_load(&s->stopping);
}

static void *spinner_main(void *p)
{
    spinner_arg a = *(spinner_arg *)p;
    free(p);
    spinners *s = a.s;
    if (a.cpu >= 0) { /* unpinned if this fails: still useful */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(a.cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    /* Never spin at normal priority: without SCHED_IDLE, leave. */
    const struct sched_param sp = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
        return NULL;
    pthread_setname_np(pthread_self(), "attnd-spin");
    atomic_fetch_add(&s->idle, 1);
    while (!atomic_load(&s->stopping)) {
        /* Spin.  A SCHED_IDLE thread still gets a sliver of a busy CPU now
         * and then; the yield hands it back within ~10 us. */
        if (spinning(s))
            atomic_fetch_add(&s->spins, 1);
        for (unsigned k = 1; spinning(s); k++) {
            for (int i = 0; i < 32; i++)
                cpu_relax();
            if (k % 8 == 0)
                sched_yield();
        }
        /* Sleep until a kick.  sleeping is raised before until is read
         * again, and a kick stores until before it reads sleeping (both
         * sequentially consistent): one of the two sees the other. */
        pthread_mutex_lock(&s->lock);
        atomic_fetch_add(&s->sleeping, 1);
        while (!spinning(s) && !atomic_load(&s->stopping))
            pthread_cond_wait(&s->wake, &s->lock);
        atomic_fetch_sub(&s->sleeping, 1);
        pthread_mutex_unlock(&s->lock);
    }
    atomic_fetch_sub(&s->idle, 1);
    return NULL;
}

void spinners_state(spinners *s, spinners_status *st)
{
    *st = (spinners_status){0};
    if (!s)
        return;
    st->idle = atomic_load(&s->idle);
    st->sleeping = atomic_load(&s->sleeping);
    st->spins = atomic_load(&s->spins);
    st->until_ns = atomic_load(&s->until);
}

int spin_cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

spinners *spinners_new(int n, long window_us)
{
    if (n < 1 || window_us < 1)
        return NULL;
    spinners *s = calloc(1, sizeof *s);
    if (!s || !(s->threads = calloc((size_t)n, sizeof *s->threads))) {
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    s->window_ns = (long long)window_us * 1000;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    /* Exactly n CPUs for n spinners: one on each, so that no CPU is left
     * to halt while two spinners share another. */
    cpu_set_t set;
    CPU_ZERO(&set);
    const bool pin = n > 1 && sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == n;
    int cpu = -1, err = 0;
    for (int i = 0; i < n; i++) {
        if (pin)
            while (!CPU_ISSET(++cpu, &set))
                ;
        spinner_arg *a = malloc(sizeof *a);
        if (!a) {
            err = ENOMEM;
            break;
        }
        *a = (spinner_arg){s, pin ? cpu : -1};
        if ((err = pthread_create(&s->threads[i], NULL, spinner_main, a)) != 0) {
            free(a);
            break;
        }
        s->n++;
    }
    if (err) {
        spinners_free(s);
        errno = err;
        return NULL;
    }
    return s;
}

void spinners_kick(spinners *s)
{
    if (!s)
        return;
    const long long until = clock_ns(CLOCK_MONOTONIC) + s->window_ns;
    if (until > atomic_load_explicit(&s->until, memory_order_relaxed))
        atomic_store(&s->until, until);
    if (atomic_load(&s->sleeping) > 0) {
        pthread_mutex_lock(&s->lock);
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
    }
}

int spinners_count(const spinners *s)
{
    return s ? atomic_load(&s->idle) : 0;
}

void spinners_free(spinners *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n; i++)
        pthread_join(s->threads[i], NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    free(s->threads);
    free(s);
}

/* ---- CPU quotas ------------------------------------------------------------ */

/* The first line of path, without its newline, into buf.  false if unreadable. */
static bool first_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Looks for a quota in file in mnt + path and each ancestor up to mnt. */
static bool quota_in(const char *mnt, const char *path, const char *file, bool v2, char *why,
                     size_t why_len)
{
    char dir[PATH_MAX];
    const size_t root_len = strlen(mnt);
    if (snprintf(dir, sizeof dir, "%s%s", mnt, strcmp(path, "/") ? path : "") >= (int)sizeof dir)
        return false;
    for (;;) {
        char f[PATH_MAX + 32], v[128];
        snprintf(f, sizeof f, "%s/%s", dir, file);
        if (first_line(f, v, sizeof v)) {
            /* v2: "max 100000" is none, "200000 100000" a quota; v1: -1 none. */
            const bool limited = v2 ? strncmp(v, "max", 3) != 0 : strtoll(v, NULL, 10) >= 0;
            if (limited) {
                snprintf(why, why_len, "%s is \"%s\"", f, v);
                return true;
            }
        }
        char *slash = strlen(dir) > root_len ? strrchr(dir + root_len, '/') : NULL;
        if (!slash)
            return false;
        *slash = '\0';
    }
}

/* Whether the comma-separated list names controller c. */
static bool lists(const char *list, const char *c)
{
    const size_t n = strlen(c);
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, c, n))
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

bool spin_cpu_quota(const char *root, const char *self, char *why, size_t why_len)
{
    FILE *f = fopen(self, "r");
    if (!f)
        return false;
    char line[PATH_MAX + 64];
    bool limited = false;
    while (!limited && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* hierarchy-id:controllers:path */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        *c1 = *c2 = '\0';
        const char *controllers = c1 + 1, *path = c2 + 1;
        char mnt[PATH_MAX], probe[PATH_MAX + 32];
        if (!strcmp(line, "0") && !*controllers) { /* cgroup v2 */
            snprintf(probe, sizeof probe, "%s/cgroup.controllers", root);
            snprintf(mnt, sizeof mnt, exists(probe) ? "%s" : "%s/unified", root);
            limited = quota_in(mnt, path, "cpu.max", true, why, why_len);
        } else if (lists(controllers, "cpu")) { /* cgroup v1 */
            snprintf(mnt, sizeof mnt, "%s/%s", root, controllers);
            if (!exists(mnt))
                snprintf(mnt, sizeof mnt, "%s/cpu", root);
            limited = quota_in(mnt, path, "cpu.cfs_quota_us", false, why, why_len);
        }
    }
    fclose(f);
    return limited;
}
