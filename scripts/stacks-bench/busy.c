/* The program `scripts/stacks-bench.sh` records with `perf record -F 20000 -g`:
 * one busy thread per CPU walking call chains of 4 to 19 frames through
 * eight functions, each chain one of 64 fixed patterns, so that a few
 * thousand distinct stacks carry millions of samples, as in real profiles.
 * Built with frame pointers so that perf's default unwinding sees them.
 * Usage: busy SECONDS [THREADS] */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;
static double deadline;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef double (*step_fn)(unsigned *, int);
static step_fn steps[8];

#define STEP(name, work)                                                   \
    __attribute__((noinline)) static double name(unsigned *seed, int depth) { \
        double x = 0;                                                      \
        for (int i = 0; i < 2000; i++) x += work;                          \
        if (depth > 0)                                                     \
            x += steps[(*seed * 5u + (unsigned)depth * (*seed | 1u)) % 8](seed, depth - 1); \
        return x;                                                          \
    }
STEP(alpha, sin(i * 0.001))
STEP(beta, cos(i * 0.002))
STEP(gamma_, sqrt((double)i))
STEP(delta, (double)(i % 7) * 0.5)
STEP(epsilon, log1p((double)i))
STEP(zeta, exp(-(double)(i % 13)))
STEP(eta, (double)((i * 2654435761u) >> 20))
STEP(theta, tanh(i * 0.0001))

static void *run(void *arg) {
    unsigned seed = (unsigned)(size_t)arg * 7919u + 1;
    while (now() < deadline) {
        seed = seed * 1103515245u + 12345u;
        /* One of 64 patterns; its depth 3 to 18 below the first step. */
        unsigned pattern = (seed >> 16) % 64;
        sink += steps[pattern % 8](&pattern, 3 + (int)(pattern % 16));
    }
    return NULL;
}

int main(int argc, char **argv) {
    step_fn s[8] = {alpha, beta, gamma_, delta, epsilon, zeta, eta, theta};
    for (int i = 0; i < 8; i++) steps[i] = s[i];
    double secs = argc > 1 ? atof(argv[1]) : 10;
    long n = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 256) n = 256;
    deadline = now() + secs;
    pthread_t t[256];
    for (long i = 0; i < n; i++) pthread_create(&t[i], NULL, run, (void *)i);
    for (long i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
