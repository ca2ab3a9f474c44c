/* The on-CPU test program (tests/oncpu.rs). Durations are CPU time, so a
 * loaded machine stretches the run rather than changing the shares.
 *
 * - Thread "cruncher" (pthread_setname_np): 1.5 s of CPU time in crunch(),
 *   which calls stage() -> leaf_deep() (three deep, two thirds of the work)
 *   and leaf_side() (a second leaf, one third). After 0.3 s of its CPU time
 *   it renames itself "cruncher-late" (prctl), and runs on for more than a
 *   second, so that the sampler sees the new name.
 * - Thread "sleepy": asleep 20 ms at a time until the cruncher is done.
 * - A child: fork, then exec of this program with argument "child", which
 *   spends 0.4 s of CPU time in child_loop().
 * - The main thread waits in pthread_join and waitpid.
 *
 * The loops read their CPU clock (a system call) every 30 ms or so only:
 * on a machine with more runnable threads than CPUs, a thread waiting for
 * a CPU is sampled where it was preempted, and the kernel preempts most
 * often on the way out of such a call (docs/SAMPLER.md, "Limits"), where
 * perf's cpu-clock, which samples running threads, shows nothing.
 *
 * With argument "child": the child's part only. Exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
static volatile int done;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void leaf_deep(int n) {
    for (int i = 0; i < n; i++) sink += i ^ (sink >> 3);
}

__attribute__((noinline)) void leaf_side(int n) {
    for (int i = 0; i < n; i++) sink += i * 7 + (sink >> 5);
}

__attribute__((noinline)) void stage(int n) {
    leaf_deep(n);
    sink++;
}

__attribute__((noinline)) void crunch(double secs, double rename_at) {
    double start = cpu_now(), now = start;
    int renamed = 0;
    while (now < start + secs) {
        stage(20000000);
        leaf_side(10000000);
        now = cpu_now();
        if (!renamed && now >= start + rename_at) {
            prctl(PR_SET_NAME, "cruncher-late", 0, 0, 0);
            renamed = 1;
        }
    }
}

static void *cruncher(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "cruncher");
    crunch(1.5, 0.3);
    return 0;
}

static void *sleepy(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "sleepy");
    struct timespec d = {0, 20 * 1000 * 1000};
    while (!done) {
        nanosleep(&d, 0);
        sink++;
    }
    return 0;
}

__attribute__((noinline)) void child_loop(double secs) {
    double end = cpu_now() + secs;
    do {
        for (int i = 0; i < 20000000; i++) sink += i ^ (sink >> 2);
    } while (cpu_now() < end);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        child_loop(0.4);
        return 0;
    }
    pthread_t c, s;
    pthread_create(&s, 0, sleepy, 0);
    pthread_create(&c, 0, cruncher, 0);
    pid_t p = fork();
    if (p == 0) {
        execl(argv[0], argv[0], "child", (char *)0);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    pthread_join(c, 0);
    done = 1;
    pthread_join(s, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
