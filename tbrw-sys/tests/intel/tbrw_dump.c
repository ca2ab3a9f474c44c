/*
 * tbrw_dump LIBRARY FILE
 *
 * Prints everything the guide's API gives on FILE, read through LIBRARY
 * (Intel's libamplxe_tbrw_3.19.so or this project's libtbrw.so, loaded
 * with dlopen): the global sections, every process, thread and module,
 * every stream's information, events, data descriptor, user-defined bytes
 * and records, and the stored bind. Strings are resolved, never printed as
 * ids; fields are the guide's (docs/FORMAT.md "Intel's 2020 ABI" says what
 * differs and how it is read here). Two libraries that read a file alike
 * print the same text: that is the dump test (tbrw-sys/tests/intel_dump.rs).
 *
 * A call that fails prints its TBRW code in place of what it would give.
 * Streams of more than DIGEST_ABOVE bytes of records print a digest per
 * MiB instead of every record.
 */
#include "tbrw_any.h"

#define DIGEST_ABOVE (4u << 20)
#define STRING_CHARS (1u << 20)

static void *h;
static wchar_t *text_buf;

/* ------------------------------------------------------------------ printing */

static void hex_line(const U8 *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) printf("%02x", p[i]);
    putchar('\n');
}

/* A string id's text, quoted with non-ASCII and control characters escaped. */
static void print_string(const char *name, const void *soi) {
    U64 id = rd64(soi, 0);
    U32 need = 0, r;
    const wchar_t *c;
    printf(" %s=", name);
    if (id == 0) {
        printf("-");
        return;
    }
    r = ANY(TBRW_convert_uniqueid_to_string, (void *, U32, const void *, wchar_t *, U32 *), h,
            STRING_CHARS * (U32)sizeof(wchar_t), soi, text_buf, &need);
    if (r != 0) {
        printf("<code %u>", r);
        return;
    }
    putchar('"');
    for (c = text_buf; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", (char)*c);
        else if (*c >= 0x20 && *c < 0x7f)
            putchar((char)*c);
        else
            printf("\\u{%x}", (unsigned)*c);
    }
    putchar('"');
}

/* ------------------------------------------------------------------ global sections */

/* A section that cannot be opened for reading is printed as absent,
 * without its code: for a stream's missing section Intel's library gives
 * TBRW_STREAM_NOT_EXIST (79), this project's TBRW_SECTION_NOT_EXIST (78). */
static int open_section(U32 s, const char *what) {
    if (ANY(TBRW_reading_section, (void *, U32), h, s) != 0) {
        printf("%s: absent\n", what);
        return 0;
    }
    return 1;
}

static void close_section(U32 s) { ANY(TBRW_done_section, (void *, U32), h, s); }

/* A get_ function's structure: size first (NULL, 0), then the bytes; NULL when it failed (printed). */
static U8 *get_buffer(U32 r_size, U32 need, const char *what, U32 (*get)(U32, void *, U32 *)) {
    U8 *buf;
    U32 used = 0, r;
    if (r_size != 0 && r_size != 103) {
        printf("%s: code %u\n", what, r_size);
        return NULL;
    }
    if (need < 8) need = 8;
    buf = (U8 *)calloc(1, need + 64);
    if (!buf) exit(3);
    r = get(need + 64, buf, &used);
    if (r != 0) {
        printf("%s: code %u\n", what, r);
        free(buf);
        return NULL;
    }
    return buf;
}

#define GETTER(name, fn)                                                                                             \
    static U32 name(U32 size, void *buf, U32 *used) {                                                                \
        return ANY(fn, (void *, U32, void *, U32 *), h, size, buf, used);                                            \
    }
GETTER(get_system, TBRW_get_system)
GETTER(get_host, TBRW_get_host)
GETTER(get_os, TBRW_get_os)
GETTER(get_application, TBRW_get_application)
GETTER(get_version, TBRW_get_version_info)
GETTER(get_user_global, TBRW_get_user_defined_global)

static U8 *fetch(const char *what, U32 (*get)(U32, void *, U32 *)) {
    U32 need = 0;
    U32 r = get(0, NULL, &need);
    return get_buffer(r, need, what, get);
}

static void dump_cpu(const U8 *cpu) {
    U32 archs = rd32(cpu, 48), k, l;
    const U8 *arch = (const U8 *)rdptr(cpu, 56);
    printf("  cpu number=%u native=%u processor=%u speed=%u fsb=%u l2=%u l3=%u tsc_offset=%lld package=%u core=%u "
           "thread=%u threads_per_core=%u archs=%#x dummy=%#x\n",
           rd32(cpu, 4), rd32(cpu, 8), rd32(cpu, 12), rd32(cpu, 16), rd32(cpu, 20), rd32(cpu, 24), rd32(cpu, 28),
           (long long)rd64(cpu, 32), rd16(cpu, 40), rd16(cpu, 42), rd16(cpu, 44), rd16(cpu, 46), archs, rd32(cpu, 52));
    /* The count is the low 16 bits (a hybrid CPU's core type sits above them). */
    for (k = 0; k < (archs & 0xffff); k++, arch += 16) {
        const U8 *ids = (const U8 *)rdptr(arch, 8);
        printf("   arch type=%u cpuids=%u\n", rd16(arch, 4), rd16(arch, 6));
        for (l = 0; l < rd16(arch, 6); l++, ids += 24)
            printf("    cpuid %08x %08x %08x %08x %08x %08x\n", rd32(ids, 0), rd32(ids, 4), rd32(ids, 8),
                   rd32(ids, 12), rd32(ids, 16), rd32(ids, 20));
    }
}

static void dump_hardware(void) {
    U8 *sys;
    const U8 *node;
    U32 i, j;
    if (!open_section(SEC_HARDWARE, "hardware")) return;
    sys = fetch("hardware", get_system);
    if (sys) {
        printf("hardware: nodes=%u\n", rd32(sys, 4));
        node = (const U8 *)rdptr(sys, ANY_SYSTEM_NODES_AT);
        for (i = 0; i < rd32(sys, 4); i++, node += 40) {
            const U8 *cpu = (const U8 *)rdptr(node, 32);
            printf(" node type=%u id=%u available=%u used=%u reserved=%u memory=%llu\n", rd32(node, 4),
                   rd32(node, 8), rd32(node, 12), rd32(node, 16), rd32(node, 20),
                   (unsigned long long)rd64(node, 24));
            for (j = 0; j < rd32(node, 12); j++, cpu += 64) dump_cpu(cpu);
        }
        free(sys);
    }
    close_section(SEC_HARDWARE);
}

static void dump_software(void) {
    U8 *b;
    if (!open_section(SEC_SOFTWARE, "software")) return;
    if ((b = fetch("host", get_host))) {
        printf("host: reserved=%u", rd32(b, 4));
        print_string("ip", b + 8);
        print_string("name", b + 16);
        putchar('\n');
        free(b);
    }
    if ((b = fetch("os", get_os))) {
        printf("os: platform=%u major=%u minor=%u build=%u extra=%u", rd32(b, 4), rd32(b, 8), rd32(b, 12),
               rd32(b, 16), rd32(b, 20));
        print_string("name", b + 24);
        print_string("name_extra", b + 32);
        putchar('\n');
        free(b);
    }
    if ((b = fetch("application", get_application))) {
        printf("application: reserved=%u page=%u granularity=%u min=%#llx max=%#llx\n", rd32(b, 4), rd32(b, 8),
               rd32(b, 12), (unsigned long long)rd64(b, 16), (unsigned long long)rd64(b, 24));
        free(b);
    }
    close_section(SEC_SOFTWARE);
}

static void dump_version(void) {
    U8 *b;
    if (!open_section(SEC_VERSION, "version info")) return;
    if ((b = fetch("version info", get_version))) {
        printf("version info: driver=%#x bind=%u file=%u\n", rd32(b, 4), rd32(b, 8), rd32(b, 12));
        free(b);
    }
    close_section(SEC_VERSION);
}

static void dump_user_global(void) {
    U32 need = 0, r;
    U8 *b;
    if (!open_section(SEC_USER_GLOBAL, "user-defined global")) return;
    r = get_user_global(0, NULL, &need);
    if ((b = get_buffer(r, need, "user-defined global", get_user_global))) {
        printf("user-defined global: %u bytes\n ", need);
        hex_line(b, need);
        free(b);
    }
    close_section(SEC_USER_GLOBAL);
}

/* ------------------------------------------------------------------ tables */

static U32 on_pid(const U8 *p, U32 size, U32 n, void *user) {
    U32 i, stride = n ? size / n : 0;
    (void)user;
    for (i = 0; i < n; i++, p += stride) {
        printf(" pid id=%u flags=%#x reserved=%u when=%llu legacy=%u reserved1=%#x", rd32(p, 4), rd32(p, 8),
               rd32(p, 12), (unsigned long long)rd64(p, 16), rd32(p, 24), rd32(p, 28));
        print_string("path", p + 32);
        print_string("name", p + 40);
        putchar('\n');
    }
    return 1;
}

static U32 on_tid(const U8 *p, U32 size, U32 n, void *user) {
    U32 i, stride = n ? size / n : 0;
    (void)user;
    for (i = 0; i < n; i++, p += stride) {
        printf(" tid pid=%u id=%u flags=%#x when=%llu legacy=%u reserved=%u", rd32(p, 4), rd32(p, 8), rd32(p, 12),
               (unsigned long long)rd64(p, 16), rd32(p, 24), rd32(p, 28));
        print_string("name", p + 32);
        putchar('\n');
    }
    return 1;
}

static void print_module(const U8 *m) {
    printf(" module reserved=%u pid=%u flags=%#x when=%llu segment=%u type=%u selector=%#x reserved2=%u "
           "length=%#llx load=%#llx legacy=%u legacy2=%#x legacy_flags=%#x reserved1=%u unload=%#llx",
           rd32(m, 4), rd32(m, 8), rd32(m, 12), (unsigned long long)rd64(m, 16), rd32(m, 24), rd32(m, 28) & 3,
           rd32(m, 32), rd32(m, 36), (unsigned long long)rd64(m, 40), (unsigned long long)rd64(m, 48), rd32(m, 56),
           rd32(m, 60), rd32(m, 64), rd32(m, 68), (unsigned long long)rd64(m, 72));
    print_string("path", m + 80);
    print_string("name", m + 88);
    print_string("segment_name", m + 96);
    putchar('\n');
}

static U32 on_module(const U8 *p, U32 size, U32 n, void *user) {
    U32 i, stride = n ? size / n : 0;
    (void)user;
    for (i = 0; i < n; i++, p += stride) print_module(p);
    return 1;
}

typedef U32 (*table_cb)(const U8 *, U32, U32, void *);

static void dump_table(U32 section, const char *what, void (*fn)(void), table_cb cb) {
    U32 r;
    if (!open_section(section, what)) return;
    printf("%s:\n", what);
    r = ((U32(*)(void *, table_cb *, void *, U64))fn)(h, &cb, NULL, 0);
    if (r != 0) printf(" code %u\n", r);
    close_section(section);
}

/* ------------------------------------------------------------------ streams */

/* Events are 48 bytes in both ABIs; Intel's size argument also counts the
 * detail arrays that follow them. */
static U32 on_event(const U8 *e, U32 size, U32 n, void *user) {
    U32 i, k;
    (void)size;
    (void)user;
    for (i = 0; i < n; i++, e += 48) {
        const U8 *d = (const U8 *)rdptr(e, 40);
        printf("  event id=%#x details=%u flags=%#x sav=%llu", rd32(e, 4), rd32(e, 8), rd32(e, 12),
               (unsigned long long)rd64(e, 16));
        print_string("name", e + 24);
        print_string("arch", e + 32);
        putchar('\n');
        for (k = 0; k < rd32(e, 8); k++, d += 32)
            printf("   detail bits=%u method=%u access=%u address=%#llx value=%#llx legacy=%u r1=%u r2=%u r3=%u\n",
                   rd16(d, 4), d[6], d[7], (unsigned long long)rd64(d, 8), (unsigned long long)rd64(d, 16), d[24],
                   d[25], rd16(d, 26), rd32(d, 28));
    }
    return 1;
}

/* Where the records are split into lines: the furthest end of a descriptor entry. */
static U32 record_size;

static U32 on_desc(const U8 *d, U32 size, U32 n, void *user) {
    U32 i, stride = n ? size / n : 0;
    (void)user;
    for (i = 0; i < n; i++, d += stride) {
        U32 type = rd16(d, 8), end = rd32(d, 4) + rd32(d, 12);
        if (end > record_size) record_size = end;
        printf("  entry offset=%u type=%#x subtype=%#x size=%u access_offset=%#llx access=%u method=%u "
               "sample_flag=%u reserved0=%u reserved1=%u",
               rd32(d, 4), type, rd16(d, 10), rd32(d, 12), (unsigned long long)rd64(d, 16), d[24], d[25], d[26],
               d[27], rd32(d, 28));
        print_string("name", d + 32);
        putchar('\n');
    }
    return 1;
}

/* The records, gathered as one byte stream (Intel's chunks may end inside a record). */
struct records {
    U8 *bytes;
    U64 len, cap;
};

static U32 on_data_intel(const void *data, U64 bytes, U32 x, void *user, U64 *left) {
    struct records *r = (struct records *)user;
    (void)x;
    (void)left;
    if (r->len + bytes > r->cap) {
        while (r->len + bytes > r->cap) r->cap = r->cap ? r->cap * 2 : 1 << 16;
        r->bytes = (U8 *)realloc(r->bytes, r->cap);
        if (!r->bytes) exit(3);
    }
    memcpy(r->bytes + r->len, data, bytes);
    r->len += bytes;
    return 1;
}

static U32 on_data_guide(const void *data, U32 bytes, U32 n, void *user) {
    (void)n;
    return on_data_intel(data, bytes, 0, user, NULL);
}

/* FNV-1a, 64 bits. */
static U64 digest(const U8 *p, U64 n) {
    U64 x = 0xcbf29ce484222325ull, i;
    for (i = 0; i < n; i++) x = (x ^ p[i]) * 0x100000001b3ull;
    return x;
}

static void print_records(const struct records *r) {
    U64 at;
    U32 size = record_size ? record_size : 32;
    printf(" data: %llu bytes", (unsigned long long)r->len);
    if (r->len > DIGEST_ABOVE) {
        printf(", digest per MiB:\n");
        for (at = 0; at < r->len; at += 1u << 20) {
            U64 n = r->len - at < (1u << 20) ? r->len - at : (1u << 20);
            printf("  %016llx\n", (unsigned long long)digest(r->bytes + at, n));
        }
        return;
    }
    putchar('\n');
    for (at = 0; at < r->len; at += size) {
        printf("  ");
        hex_line(r->bytes + at, r->len - at < size ? (size_t)(r->len - at) : size);
    }
}

static int open_stream_section(U32 s, U32 sec, const char *what) {
    if (ANY(TBRW_reading_stream_section, (void *, U32, U32), h, s, sec) != 0) {
        printf(" %s: absent\n", what);
        return 0;
    }
    return 1;
}

static void close_stream_section(U32 s, U32 sec) { ANY(TBRW_done_stream_section, (void *, U32, U32), h, s, sec); }

static void dump_stream_info(U32 s) {
    U8 info[256];
    U32 used = 0, r;
    if (!open_stream_section(s, SS_INFO, "info")) return;
    memset(info, 0, sizeof info);
    r = ANY(TBRW_get_stream_info, (void *, U32, U32, void *, U32 *), h, s, ANY_STREAM_INFO_SIZE, info, &used);
    if (r != 0) {
        printf(" info: code %u\n", r);
    } else {
        printf(" info: duration=%u type=%u interval=%u start=%08x%08x end=%08x%08x", rd32(info, 4), rd32(info, 8),
               rd32(info, 12), rd32(info, 20), rd32(info, 16), rd32(info, 28), rd32(info, 24));
        print_string("command_line", info + 32);
        print_string("cpu_mask", info + 40);
        print_string("comment", info + 48);
        putchar('\n');
    }
    close_stream_section(s, SS_INFO);
}

static void dump_stream_user(U32 s) {
    U32 need = 0, used = 0, r;
    U8 *b;
    if (!open_stream_section(s, SS_USER, "user-defined")) return;
    r = ANY(TBRW_get_user_defined_stream, (void *, U32, U32, void *, U32 *), h, s, 0, NULL, &need);
    b = (U8 *)calloc(1, need + 64);
    if (!b) exit(3);
    if (r == 0 || r == 103) r = ANY(TBRW_get_user_defined_stream, (void *, U32, U32, void *, U32 *), h, s, need + 64, b, &used);
    if (r != 0) {
        printf(" user-defined: code %u\n", r);
    } else {
        printf(" user-defined: %u bytes\n  ", need);
        hex_line(b, need);
    }
    free(b);
    close_stream_section(s, SS_USER);
}

static void dump_stream_data(U32 s) {
    struct records rec = {NULL, 0, 0};
    U32 r;
    if (!open_stream_section(s, SS_DATA, "data")) return;
    if (any_is_intel) {
        U32 (*cb)(const void *, U64, U32, void *, U64 *) = on_data_intel;
        r = ANY(TBRW_enumerate_data, (void *, U32, void *, void *, U64), h, s, &cb, &rec, 0);
    } else {
        U32 (*cb)(const void *, U32, U32, void *) = on_data_guide;
        r = ANY(TBRW_enumerate_data, (void *, U32, void *, void *, U64), h, s, &cb, &rec, 0);
    }
    if (r != 0)
        printf(" data: code %u\n", r);
    else
        print_records(&rec);
    free(rec.bytes);
    close_stream_section(s, SS_DATA);
}

static void dump_stream(U32 s) {
    U32 r;
    printf("stream %u:\n", s);
    r = ANY(TBRW_reading_stream, (void *, U32), h, s);
    if (r != 0) {
        printf(" absent (code %u)\n", r);
        return;
    }
    dump_stream_info(s);
    if (open_stream_section(s, SS_EVENTS, "events")) {
        table_cb cb = (table_cb)on_event;
        printf(" events:\n");
        r = ANY(TBRW_enumerate_events, (void *, U32, void *, void *, U64), h, s, &cb, NULL, 0);
        if (r != 0) printf("  code %u\n", r);
        close_stream_section(s, SS_EVENTS);
    }
    record_size = 0;
    if (open_stream_section(s, SS_DESCRIPTOR, "descriptor")) {
        table_cb cb = (table_cb)on_desc;
        printf(" descriptor:\n");
        r = ANY(TBRW_enumerate_data_descriptor_entries, (void *, U32, void *, void *), h, s, &cb, NULL);
        if (r != 0) printf("  code %u\n", r);
        close_stream_section(s, SS_DESCRIPTOR);
    }
    dump_stream_user(s);
    dump_stream_data(s);
    ANY(TBRW_done_stream, (void *, U32), h, s);
}

/* ------------------------------------------------------------------ the stored bind */

/* Both libraries call it with (data, bytes, count, table, table bytes,
 * user); Intel's passes 0 as the count. Entries are
 * TBRW_get_size_of_data_bind_entry bytes (Intel's 32, the guide's 24), each
 * beginning module, process, thread index. */
static U32 bind_entry_size;

static U32 on_bind_data(const void *data, U64 bytes, U64 n, const U8 *table, U32 table_bytes, void *user) {
    U64 i, count = bind_entry_size ? table_bytes / bind_entry_size : 0;
    (void)data;
    (void)bytes;
    (void)n;
    (void)user;
    for (i = 0; i < count; i++, table += bind_entry_size)
        printf("  %lld %lld %lld\n", (long long)rd64(table, 0), (long long)rd64(table, 8), (long long)rd64(table, 16));
    return 1;
}

static U32 on_bind_module(const U8 *m, U64 size, U64 n, const U8 *table, U32 table_bytes, void *user) {
    U64 i, stride = n ? size / n : 0, tstride = n ? table_bytes / n : 0;
    (void)user;
    for (i = 0; i < n; i++, m += stride, table += tstride) printf("  module %llu -> process %lld\n",
                                                                  (unsigned long long)rd64(m, 48), (long long)rd64(table, 0));
    return 1;
}

static U32 on_bind_tid(const U8 *t, U64 size, U64 n, const U8 *table, U32 table_bytes, void *user) {
    U64 i, stride = n ? size / n : 0, tstride = n ? table_bytes / n : 0;
    (void)user;
    for (i = 0; i < n; i++, t += stride, table += tstride)
        printf("  thread %u/%u -> process %lld\n", rd32(t, 4), rd32(t, 8), (long long)rd64(table, 0));
    return 1;
}

/* The bind of stream s: its records' binds, then the module and thread
 * binds (this project's library takes those from the bind of the stream a
 * bind function named last: s, here). */
static void dump_bind(U32 s) {
    U32 bound = 0, r;
    void *cb;
    r = ANY(TBRW_is_bound, (void *, U32, U32 *), h, s, &bound);
    if (r != 0 || !bound) {
        printf("stream %u bound: %s\n", s, r ? "code" : "no");
        return;
    }
    printf("stream %u bound: yes\n", s);
    ANY(TBRW_reading_stream, (void *, U32), h, s);
    ANY(TBRW_reading_stream_section, (void *, U32, U32), h, s, SS_DATA);
    bind_entry_size = 0;
    r = ANY(TBRW_get_size_of_data_bind_entry, (void *, U32, U32 *), h, s, &bind_entry_size);
    cb = (void *)on_bind_data;
    printf(" bind data:%s\n", r || bind_entry_size < 24 ? " no entry size" : "");
    r = ANY(TBRW_bind_enumerate_data, (void *, U32, void *, void *, U64), h, s, &cb, NULL, 0);
    if (r != 0) printf("  code %u\n", r);
    close_stream_section(s, SS_DATA);
    ANY(TBRW_done_stream, (void *, U32), h, s);
    if (open_section(SEC_MODULE, " bind modules")) {
        cb = (void *)on_bind_module;
        printf(" bind modules:\n");
        r = ANY(TBRW_bind_enumerate_modules, (void *, void *, void *, U64), h, &cb, NULL, 0);
        if (r != 0) printf("  code %u\n", r);
        close_section(SEC_MODULE);
    }
    cb = (void *)on_bind_tid;
    printf(" bind threads:\n");
    r = ANY(TBRW_bind_enumerate_tids, (void *, void *, void *, U64), h, &cb, NULL, 0);
    if (r != 0) printf("  code %u\n", r);
}

int main(int argc, char **argv) {
    wchar_t *name;
    U32 r, streams = 0, s;
    if (argc != 3) {
        fprintf(stderr, "usage: tbrw_dump LIBRARY FILE\n");
        return 2;
    }
    any_load(argv[1]);
    text_buf = (wchar_t *)calloc(STRING_CHARS + 1, sizeof(wchar_t));
    if (!text_buf) return 3;
    name = any_wide(argv[2]);
    r = ANY(TBRW_open, (void **, const wchar_t *, U32), &h, name, ANY_READ);
    free(name);
    if (r != 0) {
        printf("open: code %u\n", r);
        return 1;
    }
    printf("verify: %u\n", ANY(TBRW_verify, (void *), h));
    dump_version();
    dump_hardware();
    dump_software();
    dump_user_global();
    dump_table(SEC_PROCESS, "processes", TBRW_enumerate_processes_any, (table_cb)on_pid);
    dump_table(any_is_intel ? SEC_THREAD : SEC_PROCESS, "threads", TBRW_enumerate_threads_any, (table_cb)on_tid);
    dump_table(SEC_MODULE, "modules", TBRW_enumerate_modules_any, (table_cb)on_module);
    r = ANY(TBRW_get_number_data_streams, (void *, U32 *), h, &streams);
    printf("streams: %u (code %u)\n", streams, r);
    for (s = 0; s < streams; s++) dump_stream(s);
    for (s = 0; s < streams; s++) dump_bind(s);
    r = ANY(TBRW_close, (void *), h);
    printf("close: %u\n", r);
    free(text_buf);
    return 0;
}
