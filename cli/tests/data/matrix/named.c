/* Two named threads spinning in their own call chains, a sleeper, and main
   waiting: what the consistency matrix records. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) static double leaf_a(double x) { return sin(x) * cos(x); }
__attribute__((noinline)) static double middle_a(int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += leaf_a(i * 0.001);
    return s;
}
__attribute__((noinline)) static double leaf_b(double x) { return sqrt(x + 1.0) / (x + 2.0); }
__attribute__((noinline)) static double middle_b(int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += leaf_b(i * 0.5);
    return s;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *crunch_a(void *arg) {
    pthread_setname_np(pthread_self(), "crunch-A");
    double end = seconds() + *(double *)arg;
    while (seconds() < end) sink += middle_a(20000);
    return NULL;
}

static void *crunch_b(void *arg) {
    pthread_setname_np(pthread_self(), "crunch-B");
    double end = seconds() + *(double *)arg;
    while (seconds() < end) sink += middle_b(20000);
    return NULL;
}

static void *sleeper(void *arg) {
    pthread_setname_np(pthread_self(), "sleeper");
    usleep((useconds_t)(*(double *)arg * 1e6));
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    pthread_t a, b, c;
    pthread_create(&a, NULL, crunch_a, &secs);
    pthread_create(&b, NULL, crunch_b, &secs);
    pthread_create(&c, NULL, sleeper, &secs);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    printf("%f\n", sink);
    return 0;
}
