/* 10 million calls of clock_gettime(CLOCK_MONOTONIC): the vDSO answers
 * them without a system call, so nearly all the time is in
 * __vdso_clock_gettime (tests/names.rs). Exits 0. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec now;
    long long sum = 0;
    for (long i = 0; i < 10000000; i++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        sum += now.tv_nsec & 1;
    }
    printf("%lld\n", sum);
    return 0;
}
