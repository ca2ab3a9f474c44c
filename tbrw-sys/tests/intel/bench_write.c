/*
 * bench_write LIBRARY FILE RECORDS   writes FILE, prints "<seconds> <records>"
 * bench_write LIBRARY check FILE     prints "<TBRW_open READ code> <data bytes of stream 0>"
 *
 * The same program for Intel's libamplxe_tbrw_3.19.so and this project's
 * libtbrw.so (loaded with dlopen, tbrw_any.h): a new file with the global
 * sections of the guide's content (system, host and OS, application,
 * version, a process, a thread, a module) and stream 0 (its information,
 * one event, the descriptor) whose data is RECORDS records of 48 bytes as
 * intel_corpus.c writes its million-record stream (descriptor id, the
 * guide's PC sample record, TSC), added 4,096 records per TBRW_add_data;
 * then TBRW_close. The time runs from TBRW_open to the end of TBRW_close.
 *
 * Where the ABIs differ (docs/FORMAT.md, "Intel's 2020 ABI") the structure
 * the loaded library expects is passed: TBRW_SYSTEM of 48 bytes with the
 * node array at 40 or the guide's 16 with it at 8; TBRW_set_os with a
 * count or without; the module and stream information in Intel's larger
 * sizes (their first fields are the guide's); the global section
 * descriptor of the modules only to Intel's library (it has it, ours has
 * no such function); the thread in Intel's thread section, in ours in the
 * process section.
 */
#include <time.h>

#include "tbrw_any.h"

#include "intel_abi.h"

typedef struct { /* the guide's TBRW_SYSTEM */
    U32 system_size, num_nodes;
    NODE *nodes;
} SYSTEM_GUIDE;

static void *h;

static void check(U32 r, const char *call, int line) {
    if (r != 0) {
        fprintf(stderr, "bench_write: %s (line %d) gave %u\n", call, line, r);
        exit(1);
    }
}
#define CALL(n, sig, ...) check(ANY(n, sig, __VA_ARGS__), #n, __LINE__)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void section(U32 s) { CALL(TBRW_writing_section, (void *, U32), h, s); }
static void done(U32 s) { CALL(TBRW_done_section, (void *, U32), h, s); }

static void hardware(void) {
    static CPUID32 ids[2][2];
    static ARCH archs[2];
    static CPU cpus[2];
    NODE node;
    U32 i;
    for (i = 0; i < 2; i++) {
        CPUID32 leaves[2] = {{0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69, 0},
                             {1, 0x906ea, 0x100800 | (i << 24), 0x7ffafbff, 0xbfebfbff, 0}};
        memcpy(ids[i], leaves, sizeof leaves);
        archs[i].arch_size = sizeof(ARCH);
        archs[i].arch_type = 5;
        archs[i].arch_num_cpuid = 2;
        archs[i].cpuids = ids[i];
        memset(&cpus[i], 0, sizeof cpus[i]);
        cpus[i].cpu_size = sizeof(CPU);
        cpus[i].number = i;
        cpus[i].native = 1;
        cpus[i].speed = 2900;
        cpus[i].num_arch = 1;
        cpus[i].archs = &archs[i];
    }
    memset(&node, 0, sizeof node);
    node.node_size = sizeof node;
    node.num_available = node.num_used = 2;
    node.memory_mb = 16384;
    node.cpus = cpus;
    section(SEC_HARDWARE);
    if (any_is_intel) {
        SYSTEM sys;
        memset(&sys, 0, sizeof sys);
        sys.system_size = sizeof sys;
        sys.num_nodes = 1;
        sys.nodes = &node;
        CALL(TBRW_set_system, (void *, SYSTEM *), h, &sys);
    } else {
        SYSTEM_GUIDE sys = {sizeof(SYSTEM_GUIDE), 1, &node};
        CALL(TBRW_set_system, (void *, SYSTEM_GUIDE *), h, &sys);
    }
    done(SEC_HARDWARE);
}

static void globals(void) {
    HOST host = {sizeof(HOST), 0, {.ptr = L"10.0.0.7"}, {.ptr = L"benchbox"}};
    OS os = {sizeof(OS), 6, 6, 1, 0, 0, {.ptr = L"Linux"}, {.ptr = L"6.1.0-18-amd64"}};
    APP app = {sizeof(APP), 0, 4096, 4096, 0x10000, 0x7fffffffffffull};
    VERSION v = {sizeof(VERSION), 0x00050000u, 0, 27};
    PID p = {sizeof(PID), 500, 0, 0, 0, 0, 0, {.ptr = L"/usr/bin/bench"}, {.ptr = L"bench"}};
    TID t = {sizeof(TID), 500, 500, 0, 0, 0, 0, {.ptr = L"bench"}};
    MODULE m;
    hardware();
    section(SEC_SOFTWARE);
    CALL(TBRW_set_host, (void *, HOST *), h, &host);
    if (any_is_intel)
        CALL(TBRW_set_os, (void *, U32, OS *), h, 1, &os);
    else
        CALL(TBRW_set_os, (void *, OS *), h, &os);
    CALL(TBRW_set_application, (void *, APP *), h, &app);
    done(SEC_SOFTWARE);
    section(SEC_VERSION);
    CALL(TBRW_set_version_info, (void *, VERSION *), h, &v);
    done(SEC_VERSION);
    section(SEC_PROCESS);
    CALL(TBRW_add_process, (void *, PID *), h, &p);
    if (any_is_intel) { /* threads are a section of their own in Intel's library, of the process section in ours */
        done(SEC_PROCESS);
        section(SEC_THREAD);
    }
    CALL(TBRW_add_thread, (void *, TID *), h, &t);
    done(any_is_intel ? SEC_THREAD : SEC_PROCESS);
    if (TBRW_add_global_section_descriptor_any) {
        DESC d[2];
        memset(d, 0, sizeof d);
        d[0].desc_size = d[1].desc_size = sizeof(DESC);
        d[0].type = 31; /* ST_DESCRIPTOR_ID */
        d[0].name.ptr = L"DescriptorID";
        d[1].type = 33; /* ST_MODULE_RECORD */
        d[1].data_size = sizeof(MODULE);
        d[1].name.ptr = L"ModuleRecord";
        section(SEC_GLOBAL_DESC);
        check(((U32(*)(void *, U32, DESC *, U32))TBRW_add_global_section_descriptor_any)(h, SEC_MODULE, d, 2),
              "TBRW_add_global_section_descriptor", __LINE__);
        done(SEC_GLOBAL_DESC);
    }
    memset(&m, 0, sizeof m);
    m.module_size = sizeof m;
    m.pid = 500;
    m.flags = 0x19000 | 0x400;
    m.segment_number = 1;
    m.segment_type = 3;
    m.code_selector = 0x33;
    m.length = 0x100000;
    m.load_address = 0x400000;
    m.unload_tsc = ~0ull;
    m.path.ptr = L"/usr/bin/bench";
    m.name.ptr = L"bench";
    m.segment_name.ptr = L".text";
    section(SEC_MODULE);
    CALL(TBRW_add_module, (void *, MODULE *), h, &m);
    done(SEC_MODULE);
}

static void field(U32 offset, U16 type, U16 subtype, U32 size, const wchar_t *name) {
    DESC d;
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.offset = offset;
    d.type = type;
    d.subtype = subtype;
    d.data_size = size;
    d.name.ptr = name;
    CALL(TBRW_add_data_descriptor_entry, (void *, U32, DESC *), h, 0, &d);
}

static void stream(U32 records) {
    static U8 chunk[48 * 4096];
    SINFO si;
    EVENT e;
    U32 i, k = 0;
    CALL(TBRW_writing_stream, (void *, U32), h, 0);
    memset(&si, 0, sizeof si);
    si.size = sizeof si;
    si.duration = 3000;
    si.type = 1;
    si.interval = 1000;
    si.command_line.ptr = L"/usr/bin/bench";
    si.cpu_mask.ptr = L"0-1";
    si.comment.ptr = L"samples";
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_INFO);
    CALL(TBRW_set_stream_info, (void *, U32, SINFO *), h, 0, &si);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_INFO);
    memset(&e, 0, sizeof e);
    e.event_size = sizeof e;
    e.flags = 1;
    e.sav = 2000003;
    e.name.ptr = L"CPU_CLK_UNHALTED.THREAD";
    e.arch_name.ptr = L"Kaby Lake";
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    CALL(TBRW_add_event, (void *, U32, EVENT *), h, 0, &e);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    field(0, 31, 0, 8, L"DescriptorID");
    field(8, 1, 0, 32, L"pc");
    field(40, 7, 32, 8, L"tsc");
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    for (i = 0; i < records; i++) {
        U8 *r = chunk + 48 * k;
        U64 zero = 0, tsc = 5000000 + (U64)i * 1000, ip = 0x400000 + (i * 2654435761u) % 0x100000;
        U32 tid = 500, pid = 500, bits = (1u << 28) | (1u << 30);
        U16 cs = 0x33, cpu_and_os = (U16)((i % 2) | (3u << 13));
        memcpy(r, &zero, 8);
        memset(r + 8, 0, 32);
        memcpy(r + 8, &ip, 8);
        memcpy(r + 24, &cs, 2);
        memcpy(r + 26, &cpu_and_os, 2);
        memcpy(r + 28, &tid, 4);
        memcpy(r + 32, &pid, 4);
        memcpy(r + 36, &bits, 4);
        memcpy(r + 40, &tsc, 8);
        if (++k == 4096 || i + 1 == records) {
            CALL(TBRW_add_data, (void *, U32, U32, const void *), h, 0, 48 * k, chunk);
            k = 0;
        }
    }
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    CALL(TBRW_done_stream, (void *, U32), h, 0);
}

static U32 count_intel(const void *data, U64 bytes, U32 x, void *user, U64 *left) {
    (void)data;
    (void)x;
    (void)left;
    *(U64 *)user += bytes;
    return 1;
}

static U32 count_guide(const void *data, U32 bytes, U32 n, void *user) {
    (void)data;
    (void)n;
    *(U64 *)user += bytes;
    return 1;
}

/* The TBRW_open READ code of `path` and the bytes of its stream 0. */
static void check_file(const char *path) {
    wchar_t *w = any_wide(path);
    U64 bytes = 0;
    U32 r = ANY(TBRW_open, (void **, const wchar_t *, U32), &h, w, ANY_READ);
    free(w);
    if (r == 0) {
        CALL(TBRW_reading_stream, (void *, U32), h, 0);
        CALL(TBRW_reading_stream_section, (void *, U32, U32), h, 0, SS_DATA);
        if (any_is_intel) {
            U32 (*cb)(const void *, U64, U32, void *, U64 *) = count_intel;
            CALL(TBRW_enumerate_data, (void *, U32, void *, void *, U64), h, 0, &cb, &bytes, 0);
        } else {
            U32 (*cb)(const void *, U32, U32, void *) = count_guide;
            CALL(TBRW_enumerate_data, (void *, U32, void *, void *, U64), h, 0, &cb, &bytes, 0);
        }
        CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
        CALL(TBRW_done_stream, (void *, U32), h, 0);
        CALL(TBRW_close, (void *), h);
    }
    printf("%u %llu\n", r, (unsigned long long)bytes);
}

int main(int argc, char **argv) {
    wchar_t *w;
    double t0;
    U32 records;
    if (argc != 4) {
        fprintf(stderr, "usage: bench_write LIBRARY FILE RECORDS | LIBRARY check FILE\n");
        return 2;
    }
    any_load(argv[1]);
    if (!strcmp(argv[2], "check")) {
        check_file(argv[3]);
        return 0;
    }
    records = (U32)strtoul(argv[3], NULL, 10);
    remove(argv[2]);
    w = any_wide(argv[2]);
    t0 = now();
    CALL(TBRW_open, (void **, const wchar_t *, U32), &h, w, ANY_READ | ANY_WRITE | ANY_CREATE);
    globals();
    stream(records);
    CALL(TBRW_close, (void *), h);
    printf("%.6f %u\n", now() - t0, records);
    free(w);
    return 0;
}
