/* Four threads spinning in work() for 0.5 s; main waits for them. */
#include <pthread.h>
#include <time.h>

volatile unsigned long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void *work(void *arg) {
    double end = now() + 0.5;
    (void)arg;
    do {
        for (int i = 0; i < 2000000; i++) sink += i;
    } while (now() < end);
    return 0;
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    return 0;
}
