/*
 * intel_corpus LIBRARY OUT_DIR [NAME...]
 *
 * Writes the Intel-written test files (tbrw/tests/data/intel/README.md)
 * through LIBRARY, Intel's libamplxe_tbrw_3.19.so, with Intel's 2020 ABI
 * (docs/FORMAT.md, "Intel's 2020 ABI"). Without NAMEs it writes every file
 * but the million-record one; NAMEs choose (guide, streams, strings,
 * lifetimes, bound, million). Deterministic: the same bytes on every run
 * (Intel's writer puts no time or path in the file).
 */
#include "tbrw_any.h"

/* ------------------------------------------------------------------ Intel's 2020 structures */

#include "intel_abi.h"

_Static_assert(sizeof(SYSTEM) == 48, "TBRW_SYSTEM");
_Static_assert(sizeof(NODE) == 40, "TBRW_NODE");
_Static_assert(sizeof(CPU) == 64, "TBRW_CPU");
_Static_assert(sizeof(MODULE) == 144, "TBRW_MODULE");
_Static_assert(sizeof(EVENT) == 48, "TBRW_EVENT");
_Static_assert(sizeof(DESC) == 72, "TBRW_SAMPREC_DESC_ENTRY");
_Static_assert(sizeof(SINFO) == 64, "TBRW_STREAM_INFO");
_Static_assert(sizeof(PID) == 48, "TBRW_PID");
_Static_assert(sizeof(TID) == 40, "TBRW_TID");

/* ------------------------------------------------------------------ calls */

static void *h;
static const char *current;

static void check(U32 r, const char *call, int line) {
    if (r != 0) {
        fprintf(stderr, "intel_corpus: %s: %s (line %d) gave %u\n", current, call, line, r);
        exit(1);
    }
}
#define CALL(n, sig, ...) check(ANY(n, sig, __VA_ARGS__), #n, __LINE__)

/* Intel refuses a driver version whose low 16 bits exceed 2 in a
 * "Sample7 " file (84 on open), and hands a bind out only for driver
 * versions above 6: this one is neither. */
#define DRIVER_VERSION 0x00050000u

static void section(U32 s) { CALL(TBRW_writing_section, (void *, U32), h, s); }
static void done(U32 s) { CALL(TBRW_done_section, (void *, U32), h, s); }

static void begin(const char *dir, const char *name) {
    char path[4096];
    wchar_t *w;
    snprintf(path, sizeof path, "%s/%s.tb7", dir, name);
    remove(path);
    current = name;
    w = any_wide(path);
    CALL(TBRW_open, (void **, const wchar_t *, U32), &h, w, ANY_READ | ANY_WRITE | ANY_CREATE);
    free(w);
}

static void finish(void) {
    CALL(TBRW_close, (void *), h);
    h = NULL;
}

/* ------------------------------------------------------------------ global sections */

static void hardware(U32 ncpus) {
    static CPUID32 ids[4][3];
    static ARCH archs[4];
    static CPU cpus[4];
    NODE node;
    SYSTEM sys;
    U32 i;
    for (i = 0; i < ncpus; i++) {
        CPUID32 leaves[3] = {{0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69, 0},
                             {1, 0x906ea, 0x100800 | (i << 24), 0x7ffafbff, 0xbfebfbff, 0},
                             {0x80000002, 0x65746e49, 0x2952286c, 0x726f4320, 0x4d542865, 0}};
        memcpy(ids[i], leaves, sizeof leaves);
        archs[i].arch_size = sizeof(ARCH);
        archs[i].arch_type = 5;
        archs[i].arch_num_cpuid = 3;
        archs[i].cpuids = ids[i];
        memset(&cpus[i], 0, sizeof cpus[i]);
        cpus[i].cpu_size = sizeof(CPU);
        cpus[i].number = i;
        cpus[i].native = 1;
        cpus[i].speed = 2900;
        cpus[i].fsb = 100;
        cpus[i].l2 = 256;
        cpus[i].l3 = 12288;
        cpus[i].tsc_offset = (int64_t)i * 17;
        cpus[i].core = (U16)(i / 2);
        cpus[i].thread = (U16)(i % 2);
        cpus[i].threads_per_core = 2;
        cpus[i].num_arch = 1;
        cpus[i].archs = &archs[i];
    }
    memset(&node, 0, sizeof node);
    node.node_size = sizeof node;
    node.num_available = ncpus;
    node.num_used = ncpus;
    node.memory_mb = 16384;
    node.cpus = cpus;
    memset(&sys, 0, sizeof sys);
    sys.system_size = sizeof sys;
    sys.num_nodes = 1;
    sys.nodes = &node;
    section(SEC_HARDWARE);
    CALL(TBRW_set_system, (void *, SYSTEM *), h, &sys);
    done(SEC_HARDWARE);
}

static void software(const wchar_t *host_name, const wchar_t *os_name) {
    HOST host = {sizeof(HOST), 0, {.ptr = L"10.0.0.7"}, {.ptr = host_name}};
    OS os = {sizeof(OS), 6, 6, 1, 0, 0, {.ptr = os_name}, {.ptr = L"6.1.0-18-amd64"}};
    APP app = {sizeof(APP), 0, 4096, 4096, 0x10000, 0x7fffffffffffull};
    section(SEC_SOFTWARE);
    CALL(TBRW_set_host, (void *, HOST *), h, &host);
    CALL(TBRW_set_os, (void *, U32, OS *), h, 1, &os);
    CALL(TBRW_set_application, (void *, APP *), h, &app);
    done(SEC_SOFTWARE);
}

static void version(void) {
    VERSION v = {sizeof(VERSION), DRIVER_VERSION, 0, 27};
    section(SEC_VERSION);
    CALL(TBRW_set_version_info, (void *, VERSION *), h, &v);
    done(SEC_VERSION);
}

static void user_global(void) {
    static const U8 bytes[] = "user-defined global bytes\0\x01\x02\x03\xff";
    section(SEC_USER_GLOBAL);
    CALL(TBRW_set_user_defined_global, (void *, U32, const void *), h, (U32)sizeof bytes, bytes);
    done(SEC_USER_GLOBAL);
}

static void process(U32 id, U32 flags, U64 when, const wchar_t *path, const wchar_t *name) {
    PID p = {sizeof(PID), id, flags, 0, when, 0, 0, {.ptr = path}, {.ptr = name}};
    CALL(TBRW_add_process, (void *, PID *), h, &p);
}

static void thread(U32 pid, U32 id, U32 flags, U64 when, const wchar_t *name) {
    TID t = {sizeof(TID), pid, id, flags, when, 0, 0, {.ptr = name}};
    CALL(TBRW_add_thread, (void *, TID *), h, &t);
}

/* The module section descriptor (global section 7): without it Intel's
 * reader hands the modules out as 0 entries and its bind sees none. */
static void module_descriptor(void) {
    DESC d[2];
    memset(d, 0, sizeof d);
    d[0].desc_size = sizeof(DESC);
    d[0].type = 31; /* ST_DESCRIPTOR_ID */
    d[0].name.ptr = L"DescriptorID";
    d[1].desc_size = sizeof(DESC);
    d[1].type = 33; /* ST_MODULE_RECORD */
    d[1].data_size = sizeof(MODULE);
    d[1].name.ptr = L"ModuleRecord";
    section(SEC_GLOBAL_DESC);
    check(((U32(*)(void *, U32, DESC *, U32))TBRW_add_global_section_descriptor_any)(h, SEC_MODULE, d, 2),
          "TBRW_add_global_section_descriptor", __LINE__);
    done(SEC_GLOBAL_DESC);
}

static void module(U32 pid, U32 flags, U64 when, U64 load, U64 length, U64 unload, const wchar_t *path,
                   const wchar_t *name) {
    MODULE m;
    memset(&m, 0, sizeof m);
    m.module_size = sizeof m;
    m.pid = pid;
    m.flags = flags;
    m.event_when = when;
    m.segment_number = 1;
    m.segment_type = 3;
    m.code_selector = 0x33;
    m.length = length;
    m.load_address = load;
    m.unload_tsc = unload;
    m.path.ptr = path;
    m.name.ptr = name;
    m.segment_name.ptr = L".text";
    CALL(TBRW_add_module, (void *, MODULE *), h, &m);
}

/* ------------------------------------------------------------------ streams */

static void stream_info(U32 s, U32 type, const wchar_t *comment, const wchar_t *command_line) {
    SINFO si;
    memset(&si, 0, sizeof si);
    si.size = sizeof si;
    si.duration = 3000;
    si.type = type;
    si.interval = 1000;
    si.start_lo = 0x178d8f5e;
    si.start_hi = 0x1972;
    si.end_lo = 0x2b8d8f5e;
    si.end_hi = 0x1972;
    si.command_line.ptr = command_line;
    si.cpu_mask.ptr = L"0-3";
    si.comment.ptr = comment;
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, s, SS_INFO);
    CALL(TBRW_set_stream_info, (void *, U32, SINFO *), h, s, &si);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, s, SS_INFO);
}

static void event(U32 s, U32 id, U64 sav, const wchar_t *name, U32 details) {
    DETAIL d[2];
    EVENT e;
    U32 i;
    memset(d, 0, sizeof d);
    for (i = 0; i < details; i++) {
        d[i].detail_size = sizeof d[i];
        d[i].access_size = 64;
        d[i].method = (U8)(i * 2);
        d[i].access = 1;
        d[i].address = 0x186 + id;
        d[i].value = i ? sav : 0x43003c;
    }
    memset(&e, 0, sizeof e);
    e.event_size = sizeof e;
    e.id = id;
    e.num_details = details;
    e.flags = 1;
    e.sav = sav;
    e.name.ptr = name;
    e.arch_name.ptr = L"Kaby Lake";
    e.details = details ? d : NULL;
    CALL(TBRW_add_event, (void *, U32, EVENT *), h, s, &e);
}

static void field(U32 s, U32 offset, U16 type, U16 subtype, U32 size, const wchar_t *name) {
    DESC d;
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.offset = offset;
    d.type = type;
    d.subtype = subtype;
    d.data_size = size;
    d.name.ptr = name;
    CALL(TBRW_add_data_descriptor_entry, (void *, U32, DESC *), h, s, &d);
}

static void add(U32 s, const void *bytes, U32 n) { CALL(TBRW_add_data, (void *, U32, U32, const void *), h, s, n, bytes); }

/* A TBRW_SampleRecordPC (guide 6.11): a 64-bit ip, the pid and tid as
 * raw ids, its event. */
static void pc_record(U8 *r, U64 ip, U32 pid, U32 tid, U32 cpu, U32 event_index) {
    U16 cs = 0x33, cpu_and_os = (U16)(cpu | (3u << 13));
    U32 bits = (event_index << 20) | (1u << 28) | (1u << 30);
    memset(r, 0, 32);
    memcpy(r, &ip, 8);
    memcpy(r + 16, &cs, 2);
    memcpy(r + 18, &cpu_and_os, 2);
    memcpy(r + 20, &tid, 4);
    memcpy(r + 24, &pid, 4);
    memcpy(r + 28, &bits, 4);
}

/* ------------------------------------------------------------------ the files */

/* The guide's content (chapter 2's writer, chapter 6's sections): one node
 * of four cpus, host, OS, application, version, a user-defined global
 * section, three processes of two threads, their modules and the kernel,
 * stream 0 of legacy PC records each followed by its TSC (guide 6.9-6.10),
 * and a custom stream of user-defined records with user-defined stream
 * bytes. */
static void write_guide(const char *dir) {
    static const wchar_t *paths[3] = {L"/usr/bin/app", L"/usr/lib/libc.so.6", L"/usr/bin/worker"};
    static const wchar_t *names[3] = {L"app", L"libc.so.6", L"worker"};
    U8 rec[40];
    U32 i;
    begin(dir, "guide");
    hardware(4);
    software(L"perfbox", L"Linux");
    version();
    user_global();
    section(SEC_PROCESS);
    process(1000, 0, 0, paths[0], names[0]);
    process(1001, 0, 0, paths[0], names[0]);
    process(1002, 0x10, 0x1972178d8f5eull, paths[2], names[2]);
    done(SEC_PROCESS);
    section(SEC_THREAD);
    for (i = 0; i < 3; i++) {
        thread(1000 + i, 1000 + i, 0, 0, names[i == 2 ? 2 : 0]);
        thread(1000 + i, 2000 + i, 0, 0, L"helper");
    }
    done(SEC_THREAD);
    module_descriptor();
    section(SEC_MODULE);
    module(0, 0x18800, 0, 0xffffffff81000000ull, 0x1000000, ~0ull, L"/boot/vmlinux-6.1.0-18-amd64", L"vmlinux-6.1.0-18-amd64");
    for (i = 0; i < 3; i++) {
        module(1000 + i, 0x19000, 0, 0x400000, 0x20000, ~0ull, paths[i == 2 ? 2 : 0], names[i == 2 ? 2 : 0]);
        module(1000 + i, 0x18000, 0, 0x7f0000000000ull + ((U64)i << 32), 0x1c0000, ~0ull, paths[1], names[1]);
    }
    done(SEC_MODULE);

    CALL(TBRW_writing_stream, (void *, U32), h, 0);
    stream_info(0, 1, L"samples", L"/usr/bin/app --run");
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    event(0, 0, 2000000, L"CPU_CLK_UNHALTED.THREAD", 2);
    event(0, 1, 2000000, L"INST_RETIRED.ANY", 2);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    field(0, 0, 1, 0, 32, L"legacy sample");     /* ST_LEGACY_SAMPLE_RECORD */
    field(0, 32, 7, 32, 8, L"time stamp");       /* ST_TIME_STAMP, SST_TSC */
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    for (i = 0; i < 300; i++) {
        U32 p = i % 3;
        U64 ip = (i % 5 == 0) ? 0xffffffff81000000ull + i * 64 : (i % 2 ? 0x400000 + i * 16 : 0x7f0000000000ull + ((U64)p << 32) + i * 32);
        U64 tsc = 0x1972178d8f5eull + (U64)i * 2900000;
        pc_record(rec, ip, 1000 + p, (i % 4 == 0 ? 2000 : 1000) + p, i % 4, i % 2);
        memcpy(rec + 32, &tsc, 8);
        add(0, rec, 32);
        add(0, rec + 32, 8);
    }
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    CALL(TBRW_done_stream, (void *, U32), h, 0);

    CALL(TBRW_writing_stream, (void *, U32), h, 1);
    stream_info(1, 8, L"custom records", L"");
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 1, SS_DESCRIPTOR);
    field(1, 0, 7, 7, 8, L"time");               /* ST_TIME_STAMP, SST_TS_NANOSECONDS */
    field(1, 8, 0x4001, 0, 4, L"user value");   /* a user-defined type */
    field(1, 12, 0x4002, 0, 4, L"user flags");
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 1, SS_DESCRIPTOR);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 1, SS_USER);
    CALL(TBRW_set_user_defined_stream, (void *, U32, U32, const void *), h, 1, 11, "custom\0data");
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 1, SS_USER);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 1, SS_DATA);
    for (i = 0; i < 20; i++) {
        U8 r[16];
        U64 t = 1000000ull * i;
        U32 v = i * i, f = i & 3;
        memcpy(r, &t, 8);
        memcpy(r + 8, &v, 4);
        memcpy(r + 12, &f, 4);
        add(1, r, 16);
    }
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 1, SS_DATA);
    CALL(TBRW_done_stream, (void *, U32), h, 1);
    finish();
}

/* Several streams of different layouts and types; stream 2 has no records. */
static void write_streams(const char *dir) {
    U32 s, i;
    static const U32 types[4] = {1, 2, 1, 3};
    begin(dir, "streams");
    hardware(2);
    software(L"streambox", L"Linux");
    version();
    section(SEC_PROCESS);
    process(42, 0, 0, L"/opt/s", L"s");
    done(SEC_PROCESS);
    section(SEC_THREAD);
    thread(42, 42, 0, 0, L"s");
    thread(42, 43, 0, 0, L"s-worker");
    done(SEC_THREAD);
    module_descriptor();
    section(SEC_MODULE);
    module(42, 0x19000, 0, 0x400000, 0x10000, ~0ull, L"/opt/s", L"s");
    done(SEC_MODULE);
    for (s = 0; s < 4; s++) {
        wchar_t comment[64];
        swprintf(comment, 64, L"stream %u of type %u", s, types[s]);
        CALL(TBRW_writing_stream, (void *, U32), h, s);
        stream_info(s, types[s], comment, L"s --streams");
        if (s != 3) {
            CALL(TBRW_writing_stream_section, (void *, U32, U32), h, s, SS_EVENTS);
            event(s, s, 1000 + s, s ? L"cycles" : L"instructions", s % 2);
            CALL(TBRW_done_stream_section, (void *, U32, U32), h, s, SS_EVENTS);
        }
        CALL(TBRW_writing_stream_section, (void *, U32, U32), h, s, SS_DESCRIPTOR);
        field(s, 0, 2, 0, 8, L"ip");          /* ST_IP */
        field(s, 8, 3, 0, 4, L"pid");         /* ST_PID */
        field(s, 12, 4, 0, 4, L"tid");        /* ST_TID */
        field(s, 16, 7, 32, 8, L"tsc");       /* ST_TIME_STAMP */
        if (s == 1) field(s, 24, 5, 0, 2, L"cpu"); /* ST_PROCESSOR_NUMBER */
        CALL(TBRW_done_stream_section, (void *, U32, U32), h, s, SS_DESCRIPTOR);
        CALL(TBRW_writing_stream_section, (void *, U32, U32), h, s, SS_DATA);
        for (i = 0; s != 2 && i < 10 + 7 * s; i++) {
            U8 r[26];
            U64 ip = 0x401000 + i * 8, t = 100 + i;
            U32 pid = 42, tid = 42 + (i & 1);
            U16 cpu = (U16)(i % 2);
            memcpy(r, &ip, 8);
            memcpy(r + 8, &pid, 4);
            memcpy(r + 12, &tid, 4);
            memcpy(r + 16, &t, 8);
            memcpy(r + 24, &cpu, 2);
            add(s, r, s == 1 ? 26 : 24);
        }
        CALL(TBRW_done_stream_section, (void *, U32, U32), h, s, SS_DATA);
        CALL(TBRW_done_stream, (void *, U32), h, s);
    }
    finish();
}

/* Non-ASCII and very long strings in every place a string goes. */
static void write_strings(const char *dir) {
    static wchar_t long_path[5001];
    U8 rec[24];
    U32 i;
    for (i = 0; i < 5000; i++) long_path[i] = i % 50 == 49 ? L'/' : (wchar_t)(L'a' + i % 26);
    long_path[5000] = 0;
    long_path[0] = L'/';
    begin(dir, "strings");
    hardware(1);
    software(L"h\u00f4te-\u65e5\u672c", L"Linux \u00e9t\u00e9 \U0001F600");
    version();
    section(SEC_PROCESS);
    process(7, 0, 0, long_path, L"proc\u00e9ss\u00fc\u00df");
    process(8, 0, 0, L"/\u0434\u043e\u043c/\u043f\u0440\u043e\u0433", L"\u043f\u0440\u043e\u0433");
    done(SEC_PROCESS);
    section(SEC_THREAD);
    thread(7, 7, 0, 0, L"\u7ebf\u7a0b-1");
    thread(8, 8, 0, 0, L"tab\there \"quoted\" back\\slash");
    done(SEC_THREAD);
    module_descriptor();
    section(SEC_MODULE);
    module(7, 0x19000, 0, 0x400000, 0x10000, ~0ull, long_path, L"\u00e9x\u00e9");
    module(8, 0x19000, 0, 0x400000, 0x10000, ~0ull, L"/\u0434\u043e\u043c/\u043f\u0440\u043e\u0433",
           L"\u043f\u0440\u043e\u0433");
    done(SEC_MODULE);
    CALL(TBRW_writing_stream, (void *, U32), h, 0);
    stream_info(0, 1, L"comment \u00e0 la \U0001F680 fus\u00e9e", long_path);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    event(0, 0, 5000, L"\u00e9v\u00e9nement", 0);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    field(0, 0, 2, 0, 8, L"adresse \u00e9");
    field(0, 8, 3, 0, 4, L"\u8fdb\u7a0b");
    field(0, 12, 4, 0, 4, L"\u7ebf\u7a0b");
    field(0, 16, 7, 32, 8, long_path);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    for (i = 0; i < 4; i++) {
        U64 ip = 0x400100 + i, t = i;
        U32 pid = 7 + (i & 1);
        memcpy(rec, &ip, 8);
        memcpy(rec + 8, &pid, 4);
        memcpy(rec + 12, &pid, 4);
        memcpy(rec + 16, &t, 8);
        add(0, rec, 24);
    }
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    CALL(TBRW_done_stream, (void *, U32), h, 0);
    finish();
}

/* Pid reuse (pid 300 created, destroyed, created again), a library unloaded,
 * and another library loaded at the address the first one left. */
static void write_lifetimes(const char *dir) {
    U8 rec[40];
    U32 i;
    const U64 t0 = 1000000;
    begin(dir, "lifetimes");
    hardware(2);
    software(L"lifebox", L"Linux");
    version();
    section(SEC_PROCESS);
    process(300, 0x10, t0, L"/bin/first", L"first");
    process(300, 0x11, t0 + 5000, L"/bin/first", L"first");
    process(300, 0x10, t0 + 6000, L"/bin/second", L"second");
    done(SEC_PROCESS);
    section(SEC_THREAD);
    thread(300, 300, 0x10, t0, L"first");
    thread(300, 300, 0x11, t0 + 5000, L"first");
    thread(300, 300, 0x10, t0 + 6000, L"second");
    thread(300, 301, 0x10, t0 + 6100, L"second-worker");
    done(SEC_THREAD);
    module_descriptor();
    section(SEC_MODULE);
    module(300, 0x19000 | 0x400, t0, 0x400000, 0x10000, t0 + 5000, L"/bin/first", L"first");
    module(300, 0x18000, t0 + 10, 0x7f0000000000ull, 0x20000, t0 + 2000, L"/lib/liba.so", L"liba.so");
    module(300, 0x18000, t0 + 2500, 0x7f0000000000ull, 0x30000, t0 + 5000, L"/lib/libb.so", L"libb.so");
    module(300, 0x19000 | 0x400, t0 + 6000, 0x400000, 0x8000, ~0ull, L"/bin/second", L"second");
    done(SEC_MODULE);
    CALL(TBRW_writing_stream, (void *, U32), h, 0);
    stream_info(0, 1, L"lifetimes", L"first; second");
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    event(0, 0, 10000, L"cpu-clock", 0);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    field(0, 0, 1, 0, 32, L"pc");
    field(0, 32, 7, 32, 8, L"tsc");
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    for (i = 0; i < 80; i++) {
        U64 tsc = t0 + (U64)i * 100, ip = (i % 2) ? 0x400000 + i * 4 : 0x7f0000000100ull + i * 4;
        pc_record(rec, ip, 300, (i >= 61 && i % 3 == 0) ? 301 : 300, i % 2, 0);
        memcpy(rec + 32, &tsc, 8);
        add(0, rec, 40);
    }
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    CALL(TBRW_done_stream, (void *, U32), h, 0);
    finish();
}

/* Records Intel's TBRW_dobind binds: each begins with its 8-byte
 * ST_DESCRIPTOR_ID (the position of its descriptor, 0 here), then the PC
 * record and the TSC; no process or thread section (the bind makes them). */
static void bindable(const char *dir, const char *name, U32 records) {
    static U8 chunk[48 * 4096];
    U32 i, k = 0;
    begin(dir, name);
    hardware(2);
    software(L"bindbox", L"Linux");
    version();
    module_descriptor();
    section(SEC_MODULE);
    module(0, 0x18800, 0, 0xffffffff81000000ull, 0x1000000, ~0ull, L"/boot/vmlinux", L"vmlinux");
    module(500, 0x19000 | 0x10000, 0, 0x400000, 0x100000, ~0ull, L"/usr/bin/bench", L"bench");
    module(500, 0x18000 | 0x10000, 0, 0x7f0000000000ull, 0x200000, ~0ull, L"/usr/lib/libm.so.6", L"libm.so.6");
    done(SEC_MODULE);
    CALL(TBRW_writing_stream, (void *, U32), h, 0);
    stream_info(0, 1, L"samples", L"/usr/bin/bench");
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    event(0, 0, 2000003, L"CPU_CLK_UNHALTED.THREAD", 2);
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_EVENTS);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    field(0, 0, 31, 0, 8, L"DescriptorID");
    field(0, 8, 1, 0, 32, L"pc");
    field(0, 40, 7, 32, 8, L"tsc");
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DESCRIPTOR);
    CALL(TBRW_writing_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    for (i = 0; i < records; i++) {
        U8 *r = chunk + 48 * k;
        U64 zero = 0, tsc = 5000000 + (U64)i * 1000;
        U64 ip = i % 7 == 0 ? 0xffffffff81001000ull + (i % 4096) * 16
                            : (i % 3 ? 0x400000 + (i * 2654435761u) % 0x100000 : 0x7f0000000000ull + (i * 40503u) % 0x200000);
        memcpy(r, &zero, 8);
        pc_record(r + 8, ip, 500, 500 + i % 4, i % 2, 0);
        memcpy(r + 40, &tsc, 8);
        if (++k == 4096 || i + 1 == records) {
            add(0, chunk, 48 * k);
            k = 0;
        }
    }
    CALL(TBRW_done_stream_section, (void *, U32, U32), h, 0, SS_DATA);
    CALL(TBRW_done_stream, (void *, U32), h, 0);
    finish();
}

/* A bindable file bound by Intel's own TBRW_dobind (an append). */
static void write_bound(const char *dir) {
    char path[4096];
    wchar_t *w;
    bindable(dir, "bound", 600);
    snprintf(path, sizeof path, "%s/bound.tb7", dir);
    w = any_wide(path);
    CALL(TBRW_open, (void **, const wchar_t *, U32), &h, w, ANY_READ | ANY_WRITE);
    free(w);
    CALL(TBRW_dobind, (void *, U32), h, 0);
    finish();
}

int main(int argc, char **argv) {
    int i, all = argc == 3;
    if (argc < 3) {
        fprintf(stderr, "usage: intel_corpus LIBRARY OUT_DIR [guide|streams|strings|lifetimes|bound|million]...\n");
        return 2;
    }
    any_load(argv[1]);
    if (!any_is_intel || !TBRW_add_global_section_descriptor_any) {
        fprintf(stderr, "%s is not Intel's 2020 library\n", argv[1]);
        return 2;
    }
    for (i = all ? 0 : 3; all ? i < 5 : i < argc; i++) {
        static const char *everything[5] = {"guide", "streams", "strings", "lifetimes", "bound"};
        const char *name = all ? everything[i] : argv[i];
        if (!strcmp(name, "guide"))
            write_guide(argv[2]);
        else if (!strcmp(name, "streams"))
            write_streams(argv[2]);
        else if (!strcmp(name, "strings"))
            write_strings(argv[2]);
        else if (!strcmp(name, "lifetimes"))
            write_lifetimes(argv[2]);
        else if (!strcmp(name, "bound"))
            write_bound(argv[2]);
        else if (!strcmp(name, "million"))
            bindable(argv[2], "million", 1000000);
        else {
            fprintf(stderr, "unknown file %s\n", name);
            return 2;
        }
        printf("wrote %s/%s.tb7\n", argv[2], name);
    }
    return 0;
}
