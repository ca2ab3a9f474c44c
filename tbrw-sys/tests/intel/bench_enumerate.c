/*
 * bench_enumerate LIBRARY FILE REPEATS
 *
 * Enumerates stream 0 of FILE (48-byte records as VTune writes them:
 * descriptor id, PC record, TSC) through LIBRARY (Intel's
 * libamplxe_tbrw_3.19.so or this project's libtbrw.so, loaded with dlopen:
 * the same program for both) REPEATS times, the callback reading each
 * record's ip (its first 8 bytes after the descriptor id) and TSC, as a
 * consumer of samples does; Intel's chunks may end inside a record, so a
 * record split between two is put together. Prints the fastest and the
 * median enumeration in seconds, the bytes enumerated and the sum of the
 * ips and TSCs (the same for both libraries when they hand out the same
 * records).
 */
#include <time.h>

#include "tbrw_any.h"

#define RECORD 48

struct sum {
    U64 bytes, total;
    U8 part[RECORD]; /* a record split between two chunks */
    U32 have;
};

static U64 word(const U8 *p) {
    U64 v;
    memcpy(&v, p, 8);
    return v;
}

static void add(struct sum *s, const U8 *p, U64 n) {
    U64 t = 0;
    s->bytes += n;
    if (s->have) {
        U64 take = RECORD - s->have < n ? RECORD - s->have : n;
        memcpy(s->part + s->have, p, take);
        s->have += (U32)take;
        p += take;
        n -= take;
        if (s->have < RECORD) return;
        t += word(s->part + 8) + word(s->part + 40);
        s->have = 0;
    }
    for (; n >= RECORD; p += RECORD, n -= RECORD) t += word(p + 8) + word(p + 40);
    memcpy(s->part, p, n);
    s->have = (U32)n;
    s->total += t;
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
    struct sum s;
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
        memset(&s, 0, sizeof s);
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
