/* wake_latency.c - how long waking a thread on another CPU takes when that
 * CPU has gone idle (halted), and when attnd's spinners (server/runtime/spin.h) keep
 * it busy at idle priority.  The reference behind compute.spin_us.
 *
 *     build/bench/wake_latency [--gap-us 1000] [--rounds 300] [--window-us 2000]
 *
 * A waiter thread, pinned to the second allowed CPU, blocks in read() on an
 * eventfd; the main thread, pinned to the first, sleeps gap-us (long enough
 * for the waiter's CPU to halt), then writes the eventfd; the latency is from
 * just before the write to just after the read returns.  Run twice: without
 * spinners, then with spinners_new(CPUs, window-us) kicked before each sleep,
 * as the daemon kicks them at each hand-off.  Prints p10/p50/p90 in us and a
 * RESULT line; needs two CPUs. */
#include "bench_util.h"
#include "runtime/spin.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

typedef struct waiter {
    int fd;
    int cpu;
    _Atomic double sent_ms; /* written before the eventfd, read after it */
    double *lat_us;
    _Atomic int n;          /* wake-ups taken */
    int rounds;
} waiter;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *waiter_main(void *p)
{
    waiter *w = p;
    pin(w->cpu);
    while (w->n < w->rounds) {
        uint64_t v;
        if (read(w->fd, &v, sizeof v) != (ssize_t)sizeof v)
            break;
        w->lat_us[w->n] = (bench_now_ms() - w->sent_ms) * 1e3;
        w->n++;
    }
    return NULL;
}

/* One series: rounds wake-ups after gap_us each; sp kicked before each gap
 * (NULL: none).  Sorted latencies into lat_us. */
static int series(int cpu_a, int cpu_b, int gap_us, int rounds, spinners *sp, double *lat_us)
{
    waiter w = {.fd = eventfd(0, 0), .cpu = cpu_b, .lat_us = lat_us, .rounds = rounds};
    if (w.fd < 0)
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, waiter_main, &w) != 0)
        return -1;
    pin(cpu_a);
    for (int i = 0; i < rounds; i++) {
        spinners_kick(sp);
        struct timespec ts = {gap_us / 1000000, (long)(gap_us % 1000000) * 1000L};
        nanosleep(&ts, NULL);
        w.sent_ms = bench_now_ms();
        const uint64_t one = 1;
        if (write(w.fd, &one, sizeof one) != (ssize_t)sizeof one)
            break;
        /* The next round waits for this wake-up to be taken. */
        while (w.n <= i)
            sched_yield();
    }
    pthread_join(t, NULL);
    close(w.fd);
    bench_sort(lat_us, (size_t)w.n);
    return w.n;
}

int main(int argc, char **argv)
{
    int gap_us = 1000, rounds = 300;
    long window_us = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--gap-us"))
            gap_us = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--window-us"))
            window_us = atol(argv[i + 1]);
        else {
            fprintf(stderr, "usage: wake_latency [--gap-us N] [--rounds N] [--window-us N]\n");
            return 2;
        }
    }
    if (gap_us < 0 || rounds < 1 || window_us < 1) {
        fprintf(stderr, "wake_latency: --gap-us >= 0, --rounds >= 1, --window-us >= 1\n");
        return 2;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
        printf("wake_latency: needs two CPUs; skipped\n");
        return 0;
    }
    int cpus[2], k = 0;
    for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[k++] = c;
    double *halted = calloc((size_t)rounds, sizeof *halted);
    double *spun = calloc((size_t)rounds, sizeof *spun);
    spinners *sp = spinners_new(CPU_COUNT(&set), window_us);
    if (!halted || !spun || !sp) {
        fprintf(stderr, "wake_latency: cannot allocate or start the spinners\n");
        return 1;
    }
    const int nh = series(cpus[0], cpus[1], gap_us, rounds, NULL, halted);
    const int ns = series(cpus[0], cpus[1], gap_us, rounds, sp, spun);
    spinners_free(sp);
    if (nh < 1 || ns < 1) {
        fprintf(stderr, "wake_latency: the eventfd or the waiter thread failed\n");
        return 1;
    }
    printf("waking a thread on CPU %d from CPU %d after %d us asleep, %d rounds:\n", cpus[1],
           cpus[0], gap_us, rounds);
    printf("  CPU left idle:                 p10 %6.1f  p50 %6.1f  p90 %6.1f us\n",
           bench_percentile(halted, (size_t)nh, 10), bench_percentile(halted, (size_t)nh, 50),
           bench_percentile(halted, (size_t)nh, 90));
    printf("  CPU kept busy by the spinners: p10 %6.1f  p50 %6.1f  p90 %6.1f us\n",
           bench_percentile(spun, (size_t)ns, 10), bench_percentile(spun, (size_t)ns, 50),
           bench_percentile(spun, (size_t)ns, 90));
    printf("RESULT wake_idle_p50_us=%.1f wake_spun_p50_us=%.1f\n",
           bench_percentile(halted, (size_t)nh, 50), bench_percentile(spun, (size_t)ns, 50));
    free(halted);
    free(spun);
    return 0;
}
