/* The C API benchmark, one phase per run (the driver, c_api.rs, runs them
 * side by side and prints the ratios). Every phase prints
 * "<seconds> <samples counted or summed> <peak RSS KiB>".
 *
 *   write-c   FILE N M P   fwrite of the records, one record per call (FILE.raw)
 *   write-c-sync FILE N M P  the same, then fsync: as durable as TBRW_close
 *   write-lib FILE N M P   the same records through TBRW_add_data, one per call
 *   read-c    FILE         fread of FILE.raw in 1 MiB blocks, summing ip + tsc
 *   read-lib  FILE         TBRW_enumerate_data, summing the same fields
 *   bind-c    FILE         hand-written bind: modules sorted per pid, binary search per ip
 *   bind-lib  FILE         TBRW_dobind (stored on close), then TBRW_bind_enumerate_data
 *   bind-lib-session FILE  TBRW_dobind and TBRW_bind_enumerate_data in one session, then close
 *
 * N samples over M modules in P processes (M/P per process, each at its own
 * address range with gaps between); the exe of each process is loaded before
 * the run; every 5th other module is loaded half-way through and every 7th
 * unloaded at a third, so time decides part of the bind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "tbrw.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        TBRW_U32 r_ = (call);                                                                                          \
        if (r_ != TBRW_SUCCESS) {                                                                                      \
            fprintf(stderr, "%s:%d: %s returned %u\n", __FILE__, __LINE__, #call, r_);                               \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

typedef struct {
    TBRW_SampleRecordPC pc;
    TBRW_U64 tsc;
} Record;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long peak_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static TBRW_U64 module_base(unsigned j) { return 0x10000000ULL + (TBRW_U64)j * 0x100000ULL; }
#define MODULE_LEN 0x80000ULL

static void module_at(unsigned p, unsigned j, TBRW_U64 n, TBRW_MODULE *m) {
    memset(m, 0, sizeof *m);
    m->module_size = sizeof *m;
    m->module_associated_pid = 1000 + p;
    m->module_load_address = module_base(j);
    m->module_length = MODULE_LEN;
    m->module_unload_tsc = (TBRW_U64)-1;
    m->module_segment_type = TBRW_MODE_64BIT;
    m->module_flags = TBRW_MODULE_TSC_USED | TBRW_MODULE_LOADED;
    if (j == 0) {
        m->module_flags |= TBRW_MODULE_IS_EXE | TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS;
    } else {
        if (j % 5 == 0) m->module_event_when = n / 2;
        if (j % 7 == 0) m->module_unload_tsc = n / 3;
    }
}

static void record_at(TBRW_U64 i, unsigned nproc, unsigned per, Record *r) {
    uint64_t x = next_rand();
    unsigned p = (unsigned)(x % nproc), j = (unsigned)((x >> 16) % per);
    memset(r, 0, sizeof *r);
    r->pc.codeMode = TBRW_MODE_64BIT;
    r->pc.iip = module_base(j) + (x >> 32) % 0x90000; /* some land in the gaps */
    r->pc.pidRecIndexRaw = 1;
    r->pc.pidRecIndex = 1000 + p;
    r->pc.tidIsRaw = 1;
    r->pc.tid = 5000 + p * 4 + (unsigned)(x >> 8) % 4;
    r->tsc = i;
}

static void write_c(const char *file, TBRW_U64 n, unsigned m, unsigned nproc, int durable) {
    char raw[4096];
    Record r;
    TBRW_U64 i;
    double t;
    FILE *f;
    snprintf(raw, sizeof raw, "%s.raw", file);
    t = now();
    f = fopen(raw, "wb");
    if (!f) exit(1);
    for (i = 0; i < n; i++) {
        record_at(i, nproc, m / nproc, &r);
        if (fwrite(&r, sizeof r, 1, f) != 1) exit(1);
    }
    if (durable && (fflush(f) != 0 || fsync(fileno(f)) != 0)) exit(1);
    if (fclose(f) != 0) exit(1);
    printf("%.6f %llu %ld\n", now() - t, (unsigned long long)n, peak_kib());
}

static wchar_t *wide(const char *s) {
    wchar_t *w = NULL;
    CHECK(TBRW_convert_utf8_to_wcs_malloced(s, &w));
    return w;
}

static void write_lib(const char *file, TBRW_U64 n, unsigned m, unsigned nproc) {
    TBRW_PTR h = NULL;
    wchar_t *name = wide(file);
    unsigned p, j, per = m / nproc;
    TBRW_U64 i;
    Record r;
    TBRW_SAMPREC_DESC_ENTRY d;
    TBRW_STREAM_INFO si;
    TBRW_EVENT e;
    double t = now();
    CHECK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    CHECK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    for (p = 0; p < nproc; p++) {
        for (j = 0; j < per; j++) {
            TBRW_MODULE mod;
            module_at(p, j, n, &mod);
            mod.module_name.soi_ptr = (TBRW_CHAR *)L"module.so";
            mod.module_path.soi_ptr = (TBRW_CHAR *)L"/usr/lib/module.so";
            CHECK(TBRW_add_module(h, &mod));
        }
    }
    CHECK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    CHECK(TBRW_writing_stream(h, 0));
    memset(&si, 0, sizeof si);
    si.stream_info_size = sizeof si;
    si.stream_type = TBRW_SAMPLING_STREAM;
    CHECK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    CHECK(TBRW_set_stream_info(h, 0, &si));
    CHECK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    memset(&e, 0, sizeof e);
    e.event_size = sizeof e;
    e.event_flags = TBRW_EVENT_EBS;
    e.event_name.soi_ptr = (TBRW_CHAR *)L"Clockticks";
    CHECK(TBRW_writing_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    CHECK(TBRW_add_event(h, 0, &e));
    CHECK(TBRW_done_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    CHECK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.desc_data_size = sizeof(TBRW_SampleRecordPC);
    d.desc_type = ST_LEGACY_SAMPLE_RECORD;
    d.desc_name.soi_ptr = (TBRW_CHAR *)L"SampleRecord";
    CHECK(TBRW_add_data_descriptor_entry(h, 0, &d));
    d.desc_data_size = sizeof(TBRW_U64);
    d.desc_offset = sizeof(TBRW_SampleRecordPC);
    d.desc_type = ST_TIMESTAMP;
    d.desc_sub_type = SST_TSC;
    d.desc_name.soi_ptr = (TBRW_CHAR *)L"TimeStamp";
    CHECK(TBRW_add_data_descriptor_entry(h, 0, &d));
    CHECK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    CHECK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    for (i = 0; i < n; i++) {
        record_at(i, nproc, per, &r);
        CHECK(TBRW_add_data(h, 0, sizeof r, &r));
    }
    CHECK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    CHECK(TBRW_done_stream(h, 0));
    CHECK(TBRW_close(h));
    printf("%.6f %llu %ld\n", now() - t, (unsigned long long)n, peak_kib());
    free(name);
}

static TBRW_U64 sum_records(const unsigned char *b, size_t n) {
    TBRW_U64 s = 0;
    size_t k;
    for (k = 0; k < n; k++) {
        Record r;
        memcpy(&r, b + k * sizeof r, sizeof r);
        s += r.pc.iip + r.tsc;
    }
    return s;
}

static void read_c(const char *file) {
    char raw[4096];
    static unsigned char buf[(1 << 20) / sizeof(Record) * sizeof(Record)];
    TBRW_U64 sum = 0;
    size_t got;
    double t;
    FILE *f;
    snprintf(raw, sizeof raw, "%s.raw", file);
    t = now();
    f = fopen(raw, "rb");
    if (!f) exit(1);
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) sum += sum_records(buf, got / sizeof(Record));
    fclose(f);
    printf("%.6f %llu %ld\n", now() - t, (unsigned long long)sum, peak_kib());
}

static TBRW_U32 sum_cb(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)size;
    *(TBRW_U64 *)user += sum_records((const unsigned char *)data, n);
    return TRUE;
}

static void read_lib(const char *file) {
    TBRW_PTR h = NULL;
    wchar_t *name = wide(file);
    TBRW_U64 sum = 0;
    double t = now();
    CHECK(TBRW_open(&h, name, TBRW_FILE_READ));
    CHECK(TBRW_reading_stream(h, 0));
    CHECK(TBRW_reading_stream_section(h, 0, TBRW_DATA_SECTION));
    CHECK(TBRW_enumerate_data(h, 0, sum_cb, &sum, 0));
    CHECK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    CHECK(TBRW_done_stream(h, 0));
    CHECK(TBRW_close(h));
    printf("%.6f %llu %ld\n", now() - t, (unsigned long long)sum, peak_kib());
    free(name);
}

/* The hand-written bind: per pid, the modules sorted by address. Modules of
 * one pid never overlap in this workload, so one binary search finds the
 * only candidate, and its [load, unload) interval decides. */
typedef struct {
    TBRW_U64 lo, hi, load, unload;
} Range;
typedef struct {
    Range *r;
    size_t n, cap;
} Space;
typedef struct {
    Space *spaces; /* indexed by pid - 1000 */
    size_t nspaces;
} Modules;

static TBRW_U32 module_cb(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    Modules *ms = (Modules *)user;
    TBRW_U32 k;
    (void)size;
    for (k = 0; k < n; k++) {
        size_t p = m[k].module_associated_pid - 1000;
        Space *s;
        if (p >= ms->nspaces) {
            size_t old = ms->nspaces, want = p + 1;
            ms->spaces = (Space *)realloc(ms->spaces, want * sizeof(Space));
            memset(ms->spaces + old, 0, (want - old) * sizeof(Space));
            ms->nspaces = want;
        }
        s = &ms->spaces[p];
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 16;
            s->r = (Range *)realloc(s->r, s->cap * sizeof(Range));
        }
        s->r[s->n].lo = m[k].module_load_address;
        s->r[s->n].hi = m[k].module_load_address + m[k].module_length;
        s->r[s->n].load = m[k].module_event_when;
        s->r[s->n].unload = m[k].module_unload_tsc;
        s->n++;
    }
    return TRUE;
}

static int by_lo(const void *a, const void *b) {
    TBRW_U64 x = ((const Range *)a)->lo, y = ((const Range *)b)->lo;
    return x < y ? -1 : x > y;
}

typedef struct {
    Modules *ms;
    TBRW_U64 bound;
} BindState;

static TBRW_U32 bind_data_cb(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    BindState *st = (BindState *)user;
    const unsigned char *b = (const unsigned char *)data;
    TBRW_U32 k;
    (void)size;
    for (k = 0; k < n; k++) {
        Record r;
        size_t p, lo = 0, hi;
        const Space *s;
        memcpy(&r, b + k * sizeof r, sizeof r);
        p = r.pc.pidRecIndex - 1000;
        if (p >= st->ms->nspaces) continue;
        s = &st->ms->spaces[p];
        hi = s->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->r[mid].lo <= r.pc.iip) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0) {
            const Range *m = &s->r[lo - 1];
            if (r.pc.iip < m->hi && m->load <= r.tsc && r.tsc < m->unload) st->bound++;
        }
    }
    return TRUE;
}

static void bind_c(const char *file) {
    TBRW_PTR h = NULL;
    wchar_t *name = wide(file);
    Modules ms = {NULL, 0};
    BindState st;
    size_t p;
    double t = now();
    CHECK(TBRW_open(&h, name, TBRW_FILE_READ));
    CHECK(TBRW_reading_section(h, TBRW_MODULE_SECTION));
    CHECK(TBRW_enumerate_modules(h, module_cb, &ms, 0));
    CHECK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    for (p = 0; p < ms.nspaces; p++) qsort(ms.spaces[p].r, ms.spaces[p].n, sizeof(Range), by_lo);
    st.ms = &ms;
    st.bound = 0;
    CHECK(TBRW_reading_stream(h, 0));
    CHECK(TBRW_reading_stream_section(h, 0, TBRW_DATA_SECTION));
    CHECK(TBRW_enumerate_data(h, 0, bind_data_cb, &st, 0));
    CHECK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    CHECK(TBRW_done_stream(h, 0));
    CHECK(TBRW_close(h));
    printf("%.6f %llu %ld\n", now() - t, (unsigned long long)st.bound, peak_kib());
    for (p = 0; p < ms.nspaces; p++) free(ms.spaces[p].r);
    free(ms.spaces);
    free(name);
}

static TBRW_U32 bound_cb(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *binds, TBRW_U32 bsize,
                         void *user) {
    TBRW_U64 k, *bound = (TBRW_U64 *)user;
    (void)data;
    (void)size;
    (void)bsize;
    for (k = 0; k < n; k++) *bound += binds[k].module_index != TBRW_UNKNOWN_MODULE_INDEX;
    return TRUE;
}

/* Reopened: the enumerate reads the stored bind. In one session: it reads
 * the bind TBRW_dobind just made, which is stored on close. */
static void bind_lib(const char *file, int one_session) {
    TBRW_PTR h = NULL;
    wchar_t *name = wide(file);
    TBRW_U64 bound = 0;
    double t = now();
    CHECK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    CHECK(TBRW_dobind(h, 0));
    if (one_session) CHECK(TBRW_bind_enumerate_data(h, 0, bound_cb, &bound, 0));
    CHECK(TBRW_close(h));
    if (!one_session) {
        CHECK(TBRW_open(&h, name, TBRW_FILE_READ));
        CHECK(TBRW_bind_enumerate_data(h, 0, bound_cb, &bound, 0));
        CHECK(TBRW_close(h));
    }
    printf("%.6f %llu %ld\n", now() - t, (unsigned long long)bound, peak_kib());
    free(name);
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "write-c") == 0) {
        write_c(argv[2], strtoull(argv[3], NULL, 10), (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]), 0);
    } else if (argc == 6 && strcmp(argv[1], "write-c-sync") == 0) {
        write_c(argv[2], strtoull(argv[3], NULL, 10), (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]), 1);
    } else if (argc == 6 && strcmp(argv[1], "write-lib") == 0) {
        write_lib(argv[2], strtoull(argv[3], NULL, 10), (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
    } else if (argc == 3 && strcmp(argv[1], "read-c") == 0) {
        read_c(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "read-lib") == 0) {
        read_lib(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "bind-c") == 0) {
        bind_c(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "bind-lib") == 0) {
        bind_lib(argv[2], 0);
    } else if (argc == 3 && strcmp(argv[1], "bind-lib-session") == 0) {
        bind_lib(argv[2], 1);
    } else {
        fprintf(stderr, "usage: %s write-c|write-lib FILE N M P | read-c|read-lib|bind-c|bind-lib|bind-lib-session FILE\n", argv[0]);
        return 2;
    }
    return 0;
}
