/* One thread spinning in spin() for argv[1] seconds of its CPU time
 * (default 0.6; CPU time, so a loaded machine stretches the run rather than
 * shrinking the work); prints the address of spin. Exits with status 3. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void spin(double secs) {
    double end = now() + secs;
    do {
        for (int i = 0; i < 2000000; i++) sink += i;
    } while (now() < end);
}

int main(int argc, char **argv) {
    printf("spin=%p\n", (void *)spin);
    fflush(stdout);
    spin(argc > 1 ? atof(argv[1]) : 0.6);
    return 3;
}
