/*
 * bench_enumerate LIBRARY FILE REPEATS
 *
 * Enumerates stream 0 of FILE through LIBRARY (Intel's
 * libamplxe_tbrw_3.19.so or this project's libtbrw.so, loaded with dlopen:
 * the same program for both) REPEATS times, each callback adding up every
 * byte it is handed. Prints the fastest and the median enumeration in
 * seconds, the bytes enumerated and their sum (the same for both libraries
 * when they hand out the same records).
 */
#include <time.h>

#include "tbrw_any.h"

struct sum {
    U64 bytes, total;
};

static void add(struct sum *s, const U8 *p, U64 n) {
    U64 i, t = 0;
    for (i = 0; i < n; i++) t += p[i];
    s->total += t;
    s->bytes += n;
}

static U32 on_intel(const void *data, U64 bytes, U32 x, void *user, U64 *left) {
    (void)x;
    (void)left;
    add((struct sum *)user, (const U8 *)data, bytes);
    return 1;
}

static U32 on_guide(const void *data, U32 bytes, U32 n, void *user) {
    (void)n;
    add((struct sum *)user, (const U8 *)data, bytes);
    return 1;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    void *h = NULL;
    wchar_t *name;
    int repeats, i;
    double *times;
    struct sum s = {0, 0};
    if (argc != 4 || (repeats = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: bench_enumerate LIBRARY FILE REPEATS\n");
        return 2;
    }
    any_load(argv[1]);
    name = any_wide(argv[2]);
    if (ANY(TBRW_open, (void **, const wchar_t *, U32), &h, name, ANY_READ) != 0) {
        fprintf(stderr, "cannot open %s\n", argv[2]);
        return 1;
    }
    free(name);
    times = (double *)calloc((size_t)repeats, sizeof *times);
    if (!times) return 3;
    for (i = 0; i < repeats; i++) {
        U32 r;
        double t0;
        s.bytes = s.total = 0;
        t0 = now();
        ANY(TBRW_reading_stream, (void *, U32), h, 0);
        ANY(TBRW_reading_stream_section, (void *, U32, U32), h, 0, SS_DATA);
        if (any_is_intel) {
            U32 (*cb)(const void *, U64, U32, void *, U64 *) = on_intel;
            r = ANY(TBRW_enumerate_data, (void *, U32, void *, void *, U64), h, 0, &cb, &s, 0);
        } else {
            U32 (*cb)(const void *, U32, U32, void *) = on_guide;
            r = ANY(TBRW_enumerate_data, (void *, U32, void *, void *, U64), h, 0, &cb, &s, 0);
        }
        ANY(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
        ANY(TBRW_done_stream, (void *, U32), h, 0);
        times[i] = now() - t0;
        if (r != 0) {
            fprintf(stderr, "TBRW_enumerate_data gave %u\n", r);
            return 1;
        }
    }
    ANY(TBRW_close, (void *), h);
    qsort(times, (size_t)repeats, sizeof *times, by_value);
    printf("%.6f %.6f %llu %llu\n", times[0], times[repeats / 2], (unsigned long long)s.bytes,
           (unsigned long long)s.total);
    free(times);
    return 0;
}
