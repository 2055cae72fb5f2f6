/* check_spin.c - the idle-priority spinners (server/runtime/spin.h): they run at
 * SCHED_IDLE and nothing else, spin after a kick and sleep once the window
 * has passed; and the CPU-quota check that turns them off, on made-up
 * cgroup v1, v2 and hybrid trees. */
#include "runtime/spin.h"
#include "base/clock.h"
#include "suites.h"
#include "timing.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- made-up cgroup trees -------------------------------------------------- */

static char tree[64];

static void tree_new(void)
{
    snprintf(tree, sizeof tree, "/tmp/attnd-cgroup-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tree));
}

/* Writes text to tree/rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tree, rel);
    for (char *p = path + strlen(tree) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        ck_assert_msg(mkdir(path, 0700) == 0 || errno == EEXIST, "mkdir %s", path);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void tree_free(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
    ck_assert_int_eq(system(cmd), 0);
}

/* spin_cpu_quota on the tree, with tree/self as /proc/self/cgroup. */
static bool quota(char *why, size_t len)
{
    char self[128];
    snprintf(self, sizeof self, "%s/self", tree);
    why[0] = '\0';
    return spin_cpu_quota(tree, self, why, len);
}

START_TEST(test_quota_v2)
{
    char why[600];
    tree_new();
    /* A pure v2 mount (cgroup.controllers at the root), the process in
     * /a/b; the quota is on the parent, as a systemd slice would set it. */
    put("self", "0::/a/b\n");
    put("cgroup.controllers", "cpu memory\n");
    put("cpu.max", "max 100000\n");
    put("a/b/cpu.max", "max 100000\n");
    ck_assert(!quota(why, sizeof why));
    put("a/cpu.max", "200000 100000\n");
    ck_assert(quota(why, sizeof why));
    ck_assert_msg(strstr(why, "/a/cpu.max is \"200000 100000\""), "%s", why);
    /* On the process's own cgroup as well: that one is named. */
    put("a/b/cpu.max", "50000 100000\n");
    ck_assert(quota(why, sizeof why));
    ck_assert_msg(strstr(why, "/a/b/cpu.max is \"50000 100000\""), "%s", why);
    tree_free();
}
END_TEST

START_TEST(test_quota_v2_in_a_container)
{
    char why[600];
    tree_new();
    /* A cgroup namespace: the process sits at "/", the mount is its cgroup. */
    put("self", "0::/\n");
    put("cgroup.controllers", "cpu\n");
    put("cpu.max", "max 100000\n");
    ck_assert(!quota(why, sizeof why));
    put("cpu.max", "150000 100000\n"); /* docker run --cpus 1.5 */
    ck_assert(quota(why, sizeof why));
    tree_free();
}
END_TEST

START_TEST(test_quota_hybrid_and_v1)
{
    char why[600];
    tree_new();
    /* Hybrid: v1 controllers, v2 under unified/ (this machine's layout). */
    put("self", "9:name=systemd:/\n4:memory:/x\n2:cpuacct:/\n1:cpu,cpuacct:/docker/c1\n0::/\n");
    put("unified/cgroup.procs", "");
    put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put("cpu,cpuacct/docker/c1/cpu.cfs_quota_us", "-1\n");
    put("memory/x/cpu.cfs_quota_us", "5000\n"); /* not the cpu controller: ignored */
    ck_assert(!quota(why, sizeof why));
    put("cpu,cpuacct/docker/cpu.cfs_quota_us", "100000\n");
    ck_assert(quota(why, sizeof why));
    ck_assert_msg(strstr(why, "/cpu,cpuacct/docker/cpu.cfs_quota_us is \"100000\""), "%s", why);
    /* v2 on the unified mount is looked at too. */
    put("cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n");
    put("unified/cpu.max", "100000 100000\n");
    ck_assert(quota(why, sizeof why));
    ck_assert_msg(strstr(why, "/unified/cpu.max"), "%s", why);
    tree_free();
}
END_TEST

START_TEST(test_quota_unreadable_or_odd)
{
    char why[600];
    tree_new();
    ck_assert(!quota(why, sizeof why)); /* no self file */
    put("self", "garbage\n:::\n7:cpu\n0::relative/path\n\n");
    ck_assert(!quota(why, sizeof why));
    put("self", "1:cpu:/gone\n"); /* no such directories: nothing limits */
    ck_assert(!quota(why, sizeof why));
    tree_free();
}
END_TEST

/* ---- the spinners ----------------------------------------------------------- */

typedef struct spinner_info {
    int n;            /* threads named attnd-spin */
    int idle;         /* of them at SCHED_IDLE */
    int sleeping;     /* of them in state S */
    long long cpu_ns; /* their CPU time, summed */
} spinner_info;

/* Looks at this process's threads named attnd-spin in /proc. */
static spinner_info look(void)
{
    spinner_info in = {0};
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "", state = '?';
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* gone meanwhile */
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        if (strcmp(comm, "attnd-spin\n"))
            continue;
        in.n++;
        in.idle += sched_getscheduler(atoi(e->d_name)) == SCHED_IDLE;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if ((f = fopen(path, "r"))) {
            /* pid (comm) state ...: the state follows the last ')' */
            char line[1024] = "";
            if (fgets(line, sizeof line, f) && strrchr(line, ')'))
                state = strrchr(line, ')')[2];
            fclose(f);
        }
        in.sleeping += state == 'S';
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        long long ns = 0;
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%lld", &ns) != 1)
                ns = 0;
            fclose(f);
        }
        in.cpu_ns += ns;
    }
    closedir(d);
    return in;
}

/* attnd-spin threads still listed, polled for up to 5 s: a thread joined
 * by spinners_free can stay in /proc/self/task a moment longer (the kernel
 * clears the thread id the join waits on before it reaps the task). */
static int listed_after_free(void)
{
    int n = look().n;
    for (int i = 0; n > 0 && i < 500; i++) {
        usleep(10000);
        n = look().n;
    }
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

START_TEST(test_nothing_to_do)
{
    ck_assert_ptr_null(spinners_new(0, 2000));
    ck_assert_ptr_null(spinners_new(2, 0));
    spinners_kick(NULL);
    ck_assert_int_eq(spinners_count(NULL), 0);
    spinners_free(NULL);
    ck_assert_int_eq(listed_after_free(), 0);
}
END_TEST

/* Polls (every 5 ms, up to 30 s) until cond(sp) holds; whether it did.
 * What is waited for is a state the spinners reach, never how fast: a
 * SCHED_IDLE thread beside busy processes gets a sliver of a CPU, late. */
static bool eventually(spinners *sp, bool (*cond)(spinners *, void *), void *arg)
{
    for (int i = 0; i < 6000; i++) {
        if (cond(sp, arg))
            return true;
        sleep_ms(5);
    }
    return cond(sp, arg);
}

static bool all_asleep(spinners *sp, void *arg)
{
    spinners_status st;
    spinners_state(sp, &st);
    return st.idle == *(int *)arg && st.sleeping == st.idle;
}

static bool spun_more_than(spinners *sp, void *arg)
{
    spinners_status st;
    spinners_state(sp, &st);
    return st.spins > *(unsigned long *)arg;
}

/* *arg spinner threads, all asleep as the kernel shows them ('S' in
 * /proc/self/task/N/stat). */
static bool proc_asleep(spinners *sp, void *arg)
{
    (void)sp;
    const spinner_info i = look();
    return i.n == *(int *)arg && i.sleeping == i.n;
}

/* Spun in the window (spins went past *arg), or the window is over. */
static bool spun_or_window_over(spinners *sp, void *arg)
{
    spinners_status st;
    spinners_state(sp, &st);
    return st.spins > *(unsigned long *)arg || clock_ns(CLOCK_MONOTONIC) > st.until_ns;
}

START_TEST(test_spinners_idle_priority_and_asleep_after_the_window)
{
    int two = 2;
    spinners *sp = spinners_new(2, 50000); /* a 50 ms window */
    ck_assert_ptr_nonnull(sp);
    /* Both start, at SCHED_IDLE, and fall asleep: never kicked, never spun. */
    ck_assert_msg(eventually(sp, all_asleep, &two), "the spinners never all went to sleep");
    spinner_info a = look();
    ck_assert_int_eq(a.n, 2);
    ck_assert_int_eq(a.idle, 2);
    spinners_status st;
    spinners_state(sp, &st);
    ck_assert_uint_eq(st.spins, 0);
    ck_assert_int_eq(spinners_count(sp), 2);
    /* A kick opens a window of 50 ms from now; a sleeping spinner wakes
     * and spins in it (once it gets a CPU: any time before the window
     * ends); after it, all sleep again. */
    for (int round = 0; round < 2; round++) {
        spinners_state(sp, &st);
        unsigned long spins = st.spins;
        const long long t0 = clock_ns(CLOCK_MONOTONIC);
        spinners_kick(sp);
        spinners_state(sp, &st);
        ck_assert_msg(st.until_ns >= t0 + 50000000LL, "the window ends %lld ns after the kick",
                      st.until_ns - t0);
        /* Busy CPUs can keep a SCHED_IDLE thread off for longer than the
         * window: then it wakes, finds the window gone, and sleeps on
         * (test_kicked_spinners_spin gives it all the time it needs). */
        ck_assert(eventually(sp, spun_or_window_over, &spins));
        ck_assert_msg(eventually(sp, all_asleep, &two),
                      "the spinners were not all asleep after their window");
    }
    /* The kernel's view follows the counter: sleeping is raised just
     * before cond_wait, so a thread may still be on its way there. */
    ck_assert_msg(eventually(sp, proc_asleep, &two),
                  "the spinners' threads never showed as asleep (state S)");
    ck_assert_int_eq(look().idle, 2);
    spinners_free(sp);
    ck_assert_int_eq(listed_after_free(), 0);
}
END_TEST

/* With a window far longer than the test, a kicked spinner spins (the
 * count of windows begun goes up) as soon as it gets a CPU at all; free
 * then stops it mid-window. */
START_TEST(test_kicked_spinners_spin)
{
    spinners *sp = spinners_new(1, 600000000L); /* a 10 minute window */
    ck_assert_ptr_nonnull(sp);
    int one = 1;
    ck_assert(eventually(sp, all_asleep, &one));
    unsigned long none = 0;
    spinners_kick(sp);
    ck_assert_msg(eventually(sp, spun_more_than, &none), "a kicked spinner never spun");
    spinners_status st;
    spinners_state(sp, &st);
    ck_assert_int_eq(st.sleeping, 0); /* spinning, not asleep */
    spinners_free(sp);
    ck_assert_int_eq(listed_after_free(), 0);
}
END_TEST

static void *kick_many(void *sp)
{
    for (int i = 0; i < 1000; i++)
        spinners_kick(sp);
    return NULL;
}

START_TEST(test_kicks_from_many_threads_and_free_while_spinning)
{
    spinners *sp = spinners_new(spin_cpus_allowed(), 1000000);
    ck_assert_ptr_nonnull(sp);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, kick_many, sp), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    sleep_ms(20);
    spinners_free(sp); /* mid-window: the threads must still stop */
    ck_assert_int_eq(listed_after_free(), 0);
}
END_TEST

Suite *spin_suite(void)
{
    Suite *s = timed_suite("spin");
    TCase *tc = timed_case(s, "spin", 60);
    tcase_add_test(tc, test_quota_v2);
    tcase_add_test(tc, test_quota_v2_in_a_container);
    tcase_add_test(tc, test_quota_hybrid_and_v1);
    tcase_add_test(tc, test_quota_unreadable_or_odd);
    tcase_add_test(tc, test_nothing_to_do);
    tcase_add_test(tc, test_spinners_idle_priority_and_asleep_after_the_window);
    tcase_add_test(tc, test_kicked_spinners_spin);
    tcase_add_test(tc, test_kicks_from_many_threads_and_free_while_spinning);
    return s;
}
