/* The library main_dlopen loads: lib_spin() spins for its argument's seconds. */
#include <time.h>

volatile unsigned long lib_sink;

void lib_spin(double secs) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 2000000; i++) lib_sink += i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < secs);
}
