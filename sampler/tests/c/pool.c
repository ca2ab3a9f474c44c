/* A pool of short-lived threads beside a long one (tests/lifetimes.rs).
 * Every duration is CPU time, so a loaded machine stretches the run
 * without changing the shares.
 *
 * - Thread "work-0": 300 ms of CPU time in long_work().
 * - The main thread, 150 rounds: starts a thread "short-N" that spends
 *   0.25 to 1 ms of CPU time in short_work() (less than one period of
 *   the sampler's default 1 ms, most of them), joins it, then spends 1 ms
 *   in main_work().
 *
 * At the end the main thread prints one line per thread, its own CPU
 * clock (CLOCK_THREAD_CPUTIME_ID) read just before the thread ended (a
 * short thread then ends with the exit system call): "thread TID NAME
 * CPU_NS". Exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 150

volatile unsigned long sink;

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct thread_clock {
    pid_t tid;
    char name[16];
    long long cpu_ns;
};

static struct thread_clock clocks[ROUNDS + 2];

static void spin_until(long long end) {
    do {
        for (int i = 0; i < 20000; i++) sink += i ^ (sink >> 3);
    } while (cpu_ns() < end);
}

__attribute__((noinline)) void long_work(long long ns) { spin_until(cpu_ns() + ns); }
__attribute__((noinline)) void short_work(long long ns) { spin_until(cpu_ns() + ns); }
__attribute__((noinline)) void main_work(long long ns) { spin_until(cpu_ns() + ns); }

static void done(struct thread_clock *c) {
    c->tid = gettid();
    pthread_getname_np(pthread_self(), c->name, sizeof c->name);
    c->cpu_ns = cpu_ns();
}

static void *worker(void *arg) {
    pthread_setname_np(pthread_self(), "work-0");
    long_work(300000000LL);
    done(arg);
    return 0;
}

static void *short_thread(void *arg) {
    struct thread_clock *c = arg;
    char name[16];
    snprintf(name, sizeof name, "short-%d", (int)(c - clocks));
    pthread_setname_np(pthread_self(), name);
    short_work(250000LL * (1 + (c - clocks) % 4));
    done(c);
    /* Ends here: its clock then holds all it ran but the kernel's exit
     * (returning would run the C library's end of a thread, tens of
     * microseconds its clock could not show). The kernel clears the tid
     * and wakes pthread_join as for any thread. */
    syscall(SYS_exit, 0);
    return 0;
}

int main(void) {
    pthread_t w;
    pthread_create(&w, 0, worker, &clocks[ROUNDS]);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_t s;
        pthread_create(&s, 0, short_thread, &clocks[i]);
        pthread_join(s, 0);
        main_work(1000000LL);
    }
    pthread_join(w, 0);
    done(&clocks[ROUNDS + 1]);
    for (int i = 0; i < ROUNDS + 2; i++)
        printf("thread %d %s %lld\n", (int)clocks[i].tid, clocks[i].name, clocks[i].cpu_ns);
    return 0;
}
