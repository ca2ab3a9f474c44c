/* 200 quick children (tests/lifetimes.rs): the parent forks a child,
 * spends 2.5 ms of CPU time in parent_work(), waits for the child, and
 * again. Each child spends 5 ms of CPU time in child_work() and exits.
 * Durations are CPU time, so a loaded machine stretches the run without
 * changing the shares (two thirds of the CPU time in the children).
 *
 * Each child reads its own CPU clock (CLOCK_THREAD_CPUTIME_ID, its only
 * thread) just before it ends and sends it to the parent down a pipe as
 * it is (formatting it would cost the child tens of microseconds its
 * clock could not show); the parent prints one line per process, itself
 * last: "process PID NAME CPU_NS". Exits 0. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILDREN 200

volatile unsigned long sink;

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin_until(long long end) {
    do {
        for (int i = 0; i < 20000; i++) sink += i ^ (sink >> 3);
    } while (cpu_ns() < end);
}

__attribute__((noinline)) void child_work(long long ns) { spin_until(cpu_ns() + ns); }
__attribute__((noinline)) void parent_work(long long ns) { spin_until(cpu_ns() + ns); }

struct clock_line {
    pid_t pid;
    long long cpu_ns;
};

int main(void) {
    static struct clock_line children[CHILDREN];
    int fds[2];
    if (pipe(fds) != 0) return 2;
    for (int i = 0; i < CHILDREN; i++) {
        pid_t p = fork();
        if (p == 0) {
            prctl(PR_SET_NAME, "forks-child", 0, 0, 0);
            child_work(5000000LL);
            struct clock_line c = {getpid(), cpu_ns()};
            _exit(write(fds[1], &c, sizeof c) == sizeof c ? 0 : 3);
        }
        parent_work(2500000LL);
        int st = 0;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
        if (read(fds[0], &children[i], sizeof children[i]) != sizeof children[i]) return 1;
    }
    for (int i = 0; i < CHILDREN; i++) printf("process %d forks-child %lld\n", (int)children[i].pid, children[i].cpu_ns);
    printf("process %d forks %lld\n", (int)getpid(), cpu_ns());
    return 0;
}
