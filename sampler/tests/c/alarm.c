/* A 1 ms SIGALRM handler on CPU time (tests/signals.rs): a POSIX timer on
 * the process's CPU clock sends SIGALRM every 1 ms of CPU time; its
 * handler on_alarm() spends about 15 % of the period in handler_work(),
 * the rest of the time is main_work()'s. The kernel checks CPU timers at
 * its scheduler ticks, so one signal may stand for several expiries: the
 * handler works 0.15 ms for each (timer_getoverrun), and the handler's
 * share of the CPU time stays about 15 % whatever HZ is.
 *
 * The loops make almost no system calls (a CPU clock reading is one):
 * handler_work() runs a number of iterations measured at the start to
 * last 0.15 ms, main_work() reads its clock once a millisecond or so. On a
 * busy machine a thread waiting for a CPU is stopped where it was
 * preempted, most often on its way out of a system call (docs/SAMPLER.md,
 * "Limits"): few calls, few such samples.
 *
 * Runs for 3 s of CPU time, then prints its own CPU clocks
 * (CLOCK_THREAD_CPUTIME_ID, its only thread), measured inside the
 * handler and in total: "handler_ns N total_ns M signals S". Exits 0. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

volatile unsigned long sink;
static volatile long long handler_ns;
static volatile long signals;
static long iterations_per_expiry;
static timer_t timer;

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) void handler_work(long iterations) {
    for (long i = 0; i < iterations; i++) sink += i * 7 + (sink >> 5);
}

__attribute__((noinline)) void on_alarm(int sig) {
    (void)sig;
    long long start = cpu_ns();
    int expiries = 1 + timer_getoverrun(timer);
    handler_work(iterations_per_expiry * expiries);
    handler_ns += cpu_ns() - start;
    signals++;
}

__attribute__((noinline)) void main_work(long long until) {
    while (cpu_ns() < until)
        for (int i = 0; i < 1000000; i++) sink += i ^ (sink >> 3);
}

int main(void) {
    /* How many iterations of handler_work last 0.15 ms here. */
    long long t0 = cpu_ns();
    handler_work(10000000);
    long long spent = cpu_ns() - t0;
    iterations_per_expiry = spent > 0 ? (long)(10000000LL * 150000 / spent) : 100000;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, 0);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGALRM;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &timer) != 0) return 2;
    long long start = cpu_ns();
    struct itimerspec every_ms = {{0, 1000000}, {0, 1000000}};
    timer_settime(timer, 0, &every_ms, 0);
    main_work(start + 3000000000LL);
    struct itimerspec off;
    memset(&off, 0, sizeof off);
    timer_settime(timer, 0, &off, 0);
    printf("handler_ns %lld total_ns %lld signals %ld\n", handler_ns, cpu_ns() - start, signals);
    return 0;
}
