/* spin.h - keeps idle CPUs awake across a request's hand-offs.
 *
 * A request passes between threads several times: the client's write wakes
 * an HTTP thread, which hands the decoded batch to a compute worker, whose
 * forward wakes its team; the finished forward wakes the HTTP thread again,
 * whose response wakes the client.  Each wake-up that lands on a halted CPU
 * waits for that CPU to come out of halt: on a virtual machine that is an
 * exit to the hypervisor, measured at 23-61 us here against 16-19 us for a
 * CPU that is running something (docs/performance.md, "Wake-ups").
 *
 * The spinners are threads at SCHED_IDLE that spin (pause, and sched_yield
 * now and then) for a window after each kick and then sleep.  SCHED_IDLE
 * means they run only on a CPU with nothing else to do and give way to any
 * other thread the moment it wakes, so they keep CPUs out of halt without
 * taking time from the daemon's threads or the client's; what they cost is
 * CPU time that would otherwise be idle, at most window x spinners per kick.
 * That time still counts against a cgroup's CPU quota, so the daemon turns
 * them off under one (spin_cpu_quota).
 *
 *     spinners *sp = spinners_new(2, 2000);  // 2 threads, 2 ms window
 *     spinners_kick(sp);                     // at each hand-off; NULL: no-op
 *     spinners_free(sp);
 */
#ifndef ATTND_SPIN_H
#define ATTND_SPIN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct spinners spinners;

/* n spinner threads, each spinning window_us after a kick.  With several
 * CPUs allowed and exactly n of them, spinner i is pinned to the i-th.
 * NULL when n < 1 or window_us < 1 (nothing to do) or on failure (errno
 * set; the daemon runs on without them). */
spinners *spinners_new(int n, long window_us);

/* Spin from now for the window (the later of this and any earlier kick's
 * end).  Cheap while spinning; wakes sleeping spinners otherwise.  Safe from
 * any thread; s may be NULL. */
void spinners_kick(spinners *s);

/* Spinners currently running at SCHED_IDLE (0 for NULL). */
int spinners_count(const spinners *s);

/* What the spinners are doing, for tests and /metrics: state, not CPU time
 * (how much CPU a SCHED_IDLE thread gets depends on everything else the
 * machine runs). */
typedef struct spinners_status {
    int idle;            /* threads running at SCHED_IDLE */
    int sleeping;        /* of them asleep until a kick */
    unsigned long spins; /* windows a spinner has begun to spin in, so far */
    long long until_ns;  /* CLOCK_MONOTONIC ns at which the current window ends */
} spinners_status;

/* The status of s (all zero for NULL). */
void spinners_state(spinners *s, spinners_status *st);

/* Stops and joins the threads.  s may be NULL. */
void spinners_free(spinners *s);

/* CPUs this process may run on (its affinity mask); 1 if unknown. */
int spin_cpus_allowed(void);

/* Whether a CPU quota applies to this process's cgroup or an ancestor:
 * cgroup v2 cpu.max other than "max ...", or cgroup v1 cpu.cfs_quota_us
 * other than -1.  root is the cgroup mount root ("/sys/fs/cgroup"; tests
 * pass a made-up tree) and self the process's cgroup list
 * ("/proc/self/cgroup").  On true, why gets the file and its value. */
bool spin_cpu_quota(const char *root, const char *self, char *why, size_t why_len);

#endif
