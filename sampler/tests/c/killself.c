/* Spins 0.3 s, then kills itself with SIGKILL. */
#include <signal.h>
#include <time.h>

volatile unsigned long sink;

int main(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 2000000; i++) sink += i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < 0.3);
    raise(SIGKILL);
    return 0;
}
