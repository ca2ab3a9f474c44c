/*
 * print_tb5 FILE.tb5 [--records N|all]
 *
 * The C version of the guide's print_tb5, written against the TBRW C API
 * only (tbrw.h). Prints the same text as the Rust version
 * (examples/src/bin/print_tb5.rs); the JSON output is the Rust version's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "tbrw.h"

static TBRW_PTR h;
static const char *prog = "print_tb5";
/* The file being printed, and what is being done with it: the context of a
 * failed TBRW call's message. */
static const char *path;
static const char *step = "starting";
static char step_buf[96];

/* A TBRW call failed: names the file, the step and the code's text. */
static void die(TBRW_U32 code) {
    const TBRW_CHAR *text = NULL;
    if (TBRW_error_string(code, &text) != TBRW_SUCCESS) text = L"unknown error";
    fprintf(stderr, "%s: %s: %s: %ls (TBRW error %u)\n", prog, path, step, text, code);
    if (h) TBRW_abort_cleanup_and_close(h);
    exit(1);
}

#define CALL(x)                                                                                                        \
    do {                                                                                                               \
        TBRW_U32 r_ = (x);                                                                                             \
        if (r_ != TBRW_SUCCESS) die(r_);                                                                               \
    } while (0)

static TBRW_U32 reading(TBRW_SECTION_IDENTIFIER s) {
    static const char *names[] = {"hardware", "software", "process and thread", "module", "user-defined", "version info"};
    snprintf(step_buf, sizeof step_buf, "reading the %s section", (unsigned)s < 6 ? names[s] : "unknown");
    step = step_buf;
    return TBRW_reading_section(h, s);
}

/* Sets the step to stream n, or one of its sections (s < 0: the stream itself). */
static void stream_step(const char *doing, TBRW_U32 n, int s) {
    static const char *names[] = {"event description", "data description", "data", "user-defined", "info"};
    if (s < 0)
        snprintf(step_buf, sizeof step_buf, "%s stream %u", doing, n);
    else
        snprintf(step_buf, sizeof step_buf, "%s stream %u's %s section", doing, n, s < 5 ? names[s] : "unknown");
    step = step_buf;
}

static TBRW_U32 reading_stream(TBRW_U32 n, TBRW_STREAM_SECTION_IDENTIFIER s) {
    stream_step("reading", n, (int)s);
    return TBRW_reading_stream_section(h, n, s);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(1);
    }
    return p;
}

/* A string id as the Rust version prints it: "text" or (none). Caller frees. */
/* The next code point of UTF-8 text `s` (which the library made valid),
 * and its length in `*len`. */
static unsigned long next_code_point(const unsigned char *s, size_t *len) {
    if (s[0] < 0x80) {
        *len = 1;
        return s[0];
    }
    if ((s[0] & 0xe0) == 0xc0 && s[1]) {
        *len = 2;
        return ((unsigned long)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
    }
    if ((s[0] & 0xf0) == 0xe0 && s[1] && s[2]) {
        *len = 3;
        return ((unsigned long)(s[0] & 0x0f) << 12) | ((unsigned long)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
    }
    if ((s[0] & 0xf8) == 0xf0 && s[1] && s[2] && s[3]) {
        *len = 4;
        return ((unsigned long)(s[0] & 0x07) << 18) | ((unsigned long)(s[1] & 0x3f) << 12) |
               ((unsigned long)(s[2] & 0x3f) << 6) | (s[3] & 0x3f);
    }
    *len = 1;
    return s[0];
}

/* A name from the file, quoted and escaped as every tbrw output escapes
 * names (the Rust print_tb5's `tbrw::text::Quoted`): quotes and
 * backslashes, control characters and the characters that change the
 * direction text is shown in never reach the terminal as they are. */
static char *quoted(const char *u) {
    const unsigned char *s = (const unsigned char *)u;
    char *q = (char *)xmalloc(strlen(u) * 10 + 3), *o = q;
    size_t len;
    *o++ = '"';
    while (*s) {
        unsigned long c = next_code_point(s, &len);
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c == '\t') {
            o += sprintf(o, "\\t");
        } else if (c == '\n') {
            o += sprintf(o, "\\n");
        } else if (c == '\r') {
            o += sprintf(o, "\\r");
        } else if (c < 0x20 || c == 0x7f) {
            o += sprintf(o, "\\x%02lx", c);
        } else if ((c >= 0x80 && c <= 0x9f) || c == 0x61c || c == 0x200e || c == 0x200f ||
                   (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) {
            o += sprintf(o, "\\u{%lx}", c);
        } else {
            memcpy(o, s, len);
            o += len;
        }
        s += len;
    }
    *o++ = '"';
    *o = 0;
    return q;
}

static char *str_of(TBRW_STRING_OR_ID id) {
    TBRW_U32 need = 0;
    TBRW_CHAR *w;
    char *u = NULL, *q;
    TBRW_U32 r;
    if (id.soi_uniqueid == 0) {
        q = (char *)xmalloc(7);
        strcpy(q, "(none)");
        return q;
    }
    r = TBRW_convert_uniqueid_to_string(h, 0, &id, NULL, &need);
    if (r != TBRW_BUFFER_TOO_SMALL) die(r);
    w = (TBRW_CHAR *)xmalloc(need);
    CALL(TBRW_convert_uniqueid_to_string(h, need, &id, w, NULL));
    CALL(TBRW_convert_wcs_to_utf8_malloced(w, &u));
    free(w);
    q = quoted(u);
    free(u);
    return q;
}

static void hex_preview(const unsigned char *b, size_t n) {
    size_t i;
    for (i = 0; i < n && i < 32; i++) printf(i ? " %02x" : "%02x", b[i]);
    if (n > 32) printf(" ...");
}

static const char *stored_names[] = {
    "ST_NONE", "ST_LEGACY_SAMPLE_RECORD", "ST_IP", "ST_PID", "ST_TID", "ST_PROCESSOR_NUMBER", "ST_PROCESSOR_STATUS",
    "ST_TIME_STAMP", "ST_POWER", "ST_INTERRUPT_FAULT_ADDR", "ST_IEAR", "ST_DEAR", "ST_BRANCH_TRACE", "ST_INST_TRACE",
    "ST_PMD", "ST_IEAR_PHYSICAL", "ST_DEAR_PHYSICAL", "ST_BRANCH_TRACE_PHYSICAL", "ST_INST_TRACE_PHYSICAL",
    "ST_PMD_PHYSICAL", "ST_PEBS_MACHINE_STATE", "ST_UNCORE_TAG_NUMBER", "ST_DEAR_INFO", "ST_LEGACY_UNKNOWN",
    /* Intel's later types (its records begin with an ST_DESCRIPTOR_ID). */
    "ST_UNCORE_CORE_ID", "ST_UNCORE_PACKAGE_ID", "ST_DEAR_INFO_EX", "ST_GFX_EVENT_COUNT", "ST_CS_EVENT_COUNT",
    "ST_EVENT_COUNT", "ST_EM_GROUP_ID", "ST_DESCRIPTOR_ID", "ST_LEGACY_MODULE_RECORD", "ST_MODULE_RECORD"};
static const char *extended_names[] = {
    "ST_PROCESS", "ST_PROCESS_PATH", "ST_PROCESS_IDX", "ST_THREAD", "ST_THREAD_IDX", "ST_MODULE", "ST_MODULE_PATH",
    "ST_MODULE_LOAD_ADDRESS", "ST_MODULE_IDX", "ST_SEG_NAME", "ST_SEG_NUM", "ST_SEG_OFFSET", "ST_SEG_TYPE", "ST_EVENT",
    "ST_EVENT_ID", "ST_EVENT_IDX", "ST_CORE", "ST_HARDWARE_THREAD", "ST_PACKAGE", "ST_FUNCTION", "ST_FN_RVA",
    "ST_FN_SIZE", "ST_FUNCTION_FULL_NAME", "ST_FN_SEG_OFFSET", "ST_CLASS", "ST_RVA", "ST_FNID_SUM", "ST_FNID_AVG",
    "ST_FNID_MIN", "ST_FNID_MAX", "ST_SAMPLES", "ST_SAMPLE_IDX", "ST_WALL_CLOCK", "ST_EVENT_COUNTS",
    "ST_PERCENTAGE_TOTAL", "ST_PERCENTAGE_SEL", "ST_ANNOTATION", "ST_CS", "ST_MODE", "ST_POST_PROCESS_LAST"};

static void type_name(TBRW_U16 t, char *buf) {
    if (t < sizeof stored_names / sizeof *stored_names)
        strcpy(buf, stored_names[t]);
    else if (t >= 0x2000 && t - 0x2000 < (int)(sizeof extended_names / sizeof *extended_names))
        strcpy(buf, extended_names[t - 0x2000]);
    else
        sprintf(buf, "0x%04x", t);
}

static int is_extended(TBRW_U16 t) { return t >= 0x2000 && t <= 0x2FFF; }

/* ------------------------------------------------------------------ collecting callbacks */

struct list {
    void *items;
    size_t len, cap, size;
};

static void push(struct list *l, const void *item, size_t size) {
    if (l->len == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = realloc(l->items, l->cap * size);
        if (!l->items) exit(1);
    }
    memcpy((char *)l->items + l->len * size, item, size);
    l->len++;
    l->size = size;
}

static TBRW_U32 collect_pids(TBRW_PID *p, TBRW_U32 size, TBRW_U32 n, void *user) {
    TBRW_U32 i;
    (void)size;
    for (i = 0; i < n; i++) push((struct list *)user, &p[i], sizeof *p);
    return TRUE;
}
static TBRW_U32 collect_tids(TBRW_TID *t, TBRW_U32 size, TBRW_U32 n, void *user) {
    TBRW_U32 i;
    (void)size;
    for (i = 0; i < n; i++) push((struct list *)user, &t[i], sizeof *t);
    return TRUE;
}
static TBRW_U32 collect_modules(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    TBRW_U32 i;
    (void)size;
    for (i = 0; i < n; i++) push((struct list *)user, &m[i], sizeof *m);
    return TRUE;
}
/* One event per call, its details right after it: copied as one block. */
struct event_copy {
    TBRW_EVENT e;
    TBRW_EVENT_DETAIL *details;
};
static TBRW_U32 collect_events(TBRW_EVENT *e, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct event_copy c;
    (void)size;
    (void)n;
    c.e = *e;
    c.details = (TBRW_EVENT_DETAIL *)xmalloc(sizeof(TBRW_EVENT_DETAIL) * (e->event_num_details + 1));
    if (e->event_num_details) memcpy(c.details, e->event_detail_array, sizeof(TBRW_EVENT_DETAIL) * e->event_num_details);
    push((struct list *)user, &c, sizeof c);
    return TRUE;
}
static TBRW_U32 collect_descs(TBRW_SAMPREC_DESC_ENTRY *d, TBRW_U32 size, TBRW_U32 n, void *user) {
    TBRW_U32 i;
    (void)size;
    for (i = 0; i < n; i++) push((struct list *)user, &d[i], sizeof *d);
    return TRUE;
}
static TBRW_U32 count_records(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)data;
    (void)size;
    *(TBRW_U64 *)user += n;
    return TRUE;
}

/* ------------------------------------------------------------------ sections */

static void print_hardware(void) {
    TBRW_U32 r = reading(TBRW_HARDWARE_SECTION), need = 0, i, j, k, l;
    TBRW_SYSTEM *sys;
    printf("== hardware\n");
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("(absent)\n");
        return;
    }
    CALL(r);
    r = TBRW_get_system(h, 0, NULL, &need);
    if (r != TBRW_BUFFER_TOO_SMALL) die(r);
    sys = (TBRW_SYSTEM *)xmalloc(need);
    CALL(TBRW_get_system(h, need, sys, NULL));
    printf("nodes: %u\n", sys->system_num_nodes);
    for (i = 0; i < sys->system_num_nodes; i++) {
        TBRW_NODE *n = &sys->node_array[i];
        printf("node %u: id=%u type_from_shell=%u num_available=%u num_used=%u reserved=%u physical_memory_mb=%llu cpus=%u\n", i,
               n->node_id, n->node_type_from_shell, n->node_num_available, n->node_num_used, n->reserved,
               n->node_physical_memory, n->node_num_available);
        for (j = 0; j < n->node_num_available; j++) {
            TBRW_CPU *c = &n->cpu_array[j];
            printf("  cpu %u: number=%u native_arch_type=%u intel_processor_number=%u speed_mhz=%u fsb_mhz=%u "
                   "cache_l2_kb=%u cache_l3_kb=%u tsc_offset=%lld package_num=%u core_num=%u hardware_thread_num=%u "
                   "threads_per_core=%u archs=%u\n",
                   j, c->cpu_number, c->cpu_native_arch_type, c->cpu_intel_processor_number, c->cpu_speed_mhz,
                   c->cpu_fsb_mhz, c->cpu_cache_L2, c->cpu_cache_L3, c->cpu_tsc_offset, c->cpu_package_num,
                   c->cpu_core_num, c->cpu_hardware_thread_num, c->cpu_threads_per_core, c->num_cpu_arch_array & 0xFFFFu);
            /* The count is the low 16 bits: VTune 2025 keeps a hybrid CPU's core type above them. */
            for (k = 0; k < (c->num_cpu_arch_array & 0xFFFFu); k++) {
                TBRW_CPU_ARCH *a = &c->cpu_arch_array[k];
                printf("    arch %u: arch_type=%u cpuids=%u\n", k, a->arch_type, a->arch_num_cpuid);
                for (l = 0; l < a->arch_num_cpuid; l++) {
                    if (a->arch_type == TBRW_GST_ITANIUM) {
                        TBRW_CPUID_IA64 *x = &a->cpuid_ia64_array[l];
                        printf("      cpuid %u: select=0x%llx value=0x%llx reserved=0x%llx\n", l, x->cpuid_select,
                               x->cpuid_val, x->reserved);
                    } else {
                        TBRW_CPUID_IA32 *x = &a->cpuid_ia32_array[l];
                        printf("      cpuid %u: eax_input=0x%x eax=0x%x ebx=0x%x ecx=0x%x edx=0x%x reserved=0x%x\n", l,
                               x->cpuid_eax_input, x->cpuid_eax, x->cpuid_ebx, x->cpuid_ecx, x->cpuid_edx, x->reserved);
                    }
                }
            }
        }
    }
    free(sys);
    CALL(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
}

static void print_software(void) {
    TBRW_U32 r = reading(TBRW_SOFTWARE_SECTION);
    TBRW_HOST host;
    TBRW_OS os;
    TBRW_APPLICATION app;
    printf("== software\n");
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("(absent)\n");
        return;
    }
    CALL(r);
    r = TBRW_get_host(h, sizeof host, &host, NULL);
    if (r == TBRW_ENTRY_NOT_FOUND) {
        printf("host: (absent)\n");
    } else {
        char *ip, *name;
        CALL(r);
        ip = str_of(host.host_ip_address);
        name = str_of(host.host_name);
        printf("host: ip_address=%s name=%s reserved=%u\n", ip, name, host.reserved);
        free(ip);
        free(name);
    }
    r = TBRW_get_os(h, sizeof os, &os, NULL);
    if (r == TBRW_ENTRY_NOT_FOUND) {
        printf("os: (absent)\n");
    } else {
        char *name, *extra;
        CALL(r);
        name = str_of(os.os_name);
        extra = str_of(os.os_name_extra);
        printf("os: platform=%u major=%u minor=%u build=%u extra=%u name=%s name_extra=%s\n", os.os_platform, os.os_major,
               os.os_minor, os.os_build, os.os_extra, name, extra);
        free(name);
        free(extra);
    }
    r = TBRW_get_application(h, sizeof app, &app, NULL);
    if (r == TBRW_ENTRY_NOT_FOUND) {
        printf("application: (absent)\n");
    } else {
        CALL(r);
        printf("application: page_size=%u alloc_granularity=%u min_app_addr=0x%llx max_app_addr=0x%llx reserved=%u\n",
               app.app_page_size, app.app_alloc_granularity, app.app_min_app_addr, app.app_max_app_addr,
               app.app_reserved);
    }
    CALL(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
}

static void print_version(void) {
    TBRW_U32 r = reading(TBRW_VERSION_INFO_SECTION);
    TBRW_VERSION_INFO v;
    printf("== version info\n");
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("(absent)\n");
        return;
    }
    CALL(r);
    CALL(TBRW_get_version_info(h, sizeof v, &v, NULL));
    printf("sampling_driver_version=0x%x bind_version=%u sample_file_version=%u\n", v.sampling_driver_version,
           v.bind_version, v.sample_file_version);
    CALL(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
}

static void print_processes(void) {
    TBRW_U32 r = reading(TBRW_PROCESS_THREAD_SECTION);
    struct list pids = {0, 0, 0, 0}, tids = {0, 0, 0, 0};
    size_t i;
    printf("== processes and threads\n");
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("(absent)\n");
        return;
    }
    CALL(r);
    CALL(TBRW_enumerate_processes(h, collect_pids, &pids, 0));
    CALL(TBRW_enumerate_threads(h, collect_tids, &tids, 0));
    printf("processes: %zu\n", pids.len);
    for (i = 0; i < pids.len; i++) {
        TBRW_PID *p = &((TBRW_PID *)pids.items)[i];
        char *path = str_of(p->pid_path), *name = str_of(p->pid_name);
        printf("process %zu: id=%u flags=0x%x event_when=0x%llx path=%s name=%s reserved=%u reserved_for_legacy=%u "
               "reserved1=%u\n",
               i, p->pid_id, p->pid_flags, p->pid_event_when, path, name, p->reserved, p->reserved_for_legacy,
               p->reserved1);
        free(path);
        free(name);
    }
    printf("threads: %zu\n", tids.len);
    for (i = 0; i < tids.len; i++) {
        TBRW_TID *t = &((TBRW_TID *)tids.items)[i];
        char *name = str_of(t->tid_name);
        printf("thread %zu: id=%u associated_pid=%u flags=0x%x event_when=0x%llx name=%s reserved_for_legacy=%u "
               "reserved=%u\n",
               i, t->tid_id, t->tid_associated_pid, t->tid_flags, t->tid_event_when, name, t->reserved_for_legacy,
               t->reserved);
        free(name);
    }
    free(pids.items);
    free(tids.items);
    CALL(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
}

static struct list modules = {0, 0, 0, 0};

static void print_modules(void) {
    TBRW_U32 r = reading(TBRW_MODULE_SECTION);
    size_t i;
    printf("== modules\n");
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("(absent)\n");
        return;
    }
    CALL(r);
    CALL(TBRW_enumerate_modules(h, collect_modules, &modules, 0));
    printf("modules: %zu\n", modules.len);
    for (i = 0; i < modules.len; i++) {
        TBRW_MODULE *m = &((TBRW_MODULE *)modules.items)[i];
        char *path = str_of(m->module_path), *name = str_of(m->module_name), *seg = str_of(m->module_segment_name);
        printf("module %zu: pid=%u flags=0x%x load_address=0x%llx length=0x%llx event_when=0x%llx unload_tsc=0x%llx "
               "segment_type=%u segment_number=%u code_selector=0x%x path=%s name=%s segment_name=%s reserved=%u "
               "reserved2=%u reserved_for_legacy=%u reserved_for_legacy2=%u reserved_for_legacy_flags=%u "
               "reserved1=%u\n",
               i, m->module_associated_pid, m->module_flags, m->module_load_address, m->module_length,
               m->module_event_when, m->module_unload_tsc, (unsigned)m->module_segment_type, m->module_segment_number,
               m->module_code_selector, path, name, seg, m->module_reserved, m->reserved, m->reserved_for_legacy,
               m->reserved_for_legacy2, m->reserved_for_legacy_flags, m->reserved1);
        free(path);
        free(name);
        free(seg);
    }
    CALL(TBRW_done_section(h, TBRW_MODULE_SECTION));
}

static void print_user_global(void) {
    TBRW_U32 r = reading(TBRW_USER_DEFINED_GLOBAL_SECTION), need = 0;
    unsigned char *b;
    printf("== user-defined\n");
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("(absent)\n");
        return;
    }
    CALL(r);
    r = TBRW_get_user_defined_global(h, 0, NULL, &need);
    if (r != TBRW_SUCCESS && r != TBRW_BUFFER_TOO_SMALL) die(r);
    b = (unsigned char *)xmalloc(need);
    CALL(TBRW_get_user_defined_global(h, need, b, NULL));
    printf("%u bytes: ", need);
    hex_preview(b, need);
    printf("\n");
    free(b);
    CALL(TBRW_done_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
}

/* ------------------------------------------------------------------ streams */

struct stream_ctx {
    TBRW_SAMPREC_DESC_ENTRY *descs;
    size_t ndescs;
    long pc_at, tsc_at;
    TBRW_U32 record_size;
    TBRW_U64 show, seen;
    int bound;
    TBRW_U64 *counts; /* per module, and [nmodules] for unknown */
};

static void print_module_name(TBRW_U64 index) {
    const TBRW_MODULE *m = NULL;
    char *name;
    CALL(TBRW_get_one_module(h, index, &m));
    name = str_of(m->module_name);
    printf("%s", name);
    free(name);
}

static void print_record(struct stream_ctx *c, const unsigned char *rec, TBRW_U64 i, const DATA_BIND_STRUCT *bind) {
    size_t k;
    printf("  record %llu: ", i);
    if (c->pc_at >= 0) {
        TBRW_SampleRecordPC pc;
        memcpy(&pc, rec + c->pc_at, sizeof pc);
        if (pc.IA64PC)
            printf("iip=0x%llx ipsr=0x%llx", pc.iip, pc.ipsr);
        else
            printf("eip=0x%x eflags=0x%x csd=0x%x:0x%x", pc.eip, pc.eflags, pc.csd.lowWord, pc.csd.highWord);
        printf(" cs=0x%x cpu=%u code_mode=%u tid=%u pid_rec_index=%u mr_index=%u event_index=%u tid_is_raw=%u ia64_pc=%u "
               "pid_rec_index_raw=%u mr_index_none=%u",
               pc.cs, (unsigned)pc.cpuNum, (unsigned)pc.codeMode, pc.tid, pc.pidRecIndex, (unsigned)pc.mrIndex,
               (unsigned)pc.eventIndex, (unsigned)pc.tidIsRaw, (unsigned)pc.IA64PC, (unsigned)pc.pidRecIndexRaw,
               (unsigned)pc.mrIndexNone);
        if (c->tsc_at >= 0) {
            TBRW_U64 tsc;
            memcpy(&tsc, rec + c->tsc_at, 8);
            printf(" tsc=0x%llx", tsc);
        }
    } else if (c->ndescs > 0) {
        int first = 1;
        for (k = 0; k < c->ndescs; k++) {
            TBRW_SAMPREC_DESC_ENTRY *d = &c->descs[k];
            const unsigned char *f = rec + d->desc_offset;
            TBRW_U32 n = d->desc_data_size, b;
            /* An extended type is a computed value, no bytes of the record,
             * except where a file stores it: Intel's bind streams give
             * ST_MODULE_IDX and the like a size inside the record. */
            if (is_extended(d->desc_type) && (n == 0 || d->desc_offset + n > c->record_size)) continue;
            if (!first) printf(" ");
            first = 0;
            if (d->desc_name.soi_uniqueid) {
                char *q = str_of(d->desc_name);
                q[strlen(q) - 1] = 0; /* unquote */
                printf("%s=", q + 1);
                free(q);
            } else {
                char t[32];
                type_name(d->desc_type, t);
                printf("%s=", t);
            }
            if (n == 1 || n == 2 || n == 4 || n == 8) {
                TBRW_U64 v = 0;
                memcpy(&v, f, n);
                if (d->desc_type == ST_IP)
                    printf("0x%llx", v);
                else
                    printf("%llu", v);
            } else {
                printf("0x");
                for (b = 0; b < n; b++) printf("%02x", f[b]);
            }
        }
    } else {
        hex_preview(rec, c->record_size);
    }
    if (bind) {
        const TBRW_PID *p = NULL;
        const TBRW_TID *t = NULL;
        char *pname;
        printf(" -> ");
        if (bind->module_index == TBRW_UNKNOWN_MODULE_INDEX) {
            printf("module unknown");
        } else {
            printf("module %llu ", bind->module_index);
            print_module_name(bind->module_index);
        }
        CALL(TBRW_get_one_pid(h, bind->pid_index, &p));
        pname = str_of(p->pid_name);
        printf(" process %llu pid=%u %s", bind->pid_index, p->pid_id, pname);
        free(pname);
        CALL(TBRW_get_one_tid(h, bind->tid_index, &t));
        printf(" thread %llu tid=%u", bind->tid_index, t->tid_id);
    }
    printf("\n");
}

static TBRW_U32 show_records(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct stream_ctx *c = (struct stream_ctx *)user;
    TBRW_U32 k;
    (void)size;
    for (k = 0; k < n && c->seen < c->show; k++, c->seen++)
        print_record(c, (const unsigned char *)data + (size_t)k * c->record_size, c->seen, NULL);
    return c->seen < c->show ? TRUE : FALSE;
}

static TBRW_U32 show_bound(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *binds, TBRW_U32 bsize,
                           void *user) {
    struct stream_ctx *c = (struct stream_ctx *)user;
    TBRW_U64 k;
    (void)size;
    (void)bsize;
    for (k = 0; k < n && c->seen < c->show; k++, c->seen++)
        print_record(c, (const unsigned char *)data + (size_t)k * c->record_size, c->seen, &binds[k]);
    return c->seen < c->show ? TRUE : FALSE;
}

static TBRW_U32 count_modules(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *binds, TBRW_U32 bsize,
                              void *user) {
    struct stream_ctx *c = (struct stream_ctx *)user;
    TBRW_U64 k;
    (void)data;
    (void)size;
    (void)bsize;
    for (k = 0; k < n; k++) {
        TBRW_U64 m = binds[k].module_index;
        c->counts[m == TBRW_UNKNOWN_MODULE_INDEX ? modules.len : m]++;
    }
    return TRUE;
}

static TBRW_U64 *sort_counts;
static int by_count(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (sort_counts[x] != sort_counts[y]) return sort_counts[x] < sort_counts[y] ? 1 : -1;
    return x < y ? -1 : (x > y);
}

static void print_stream(TBRW_U32 n, TBRW_U64 show) {
    TBRW_U32 r;
    struct stream_ctx c;
    struct list events = {0, 0, 0, 0}, descs = {0, 0, 0, 0};
    TBRW_U64 records = 0;
    size_t i, j;
    char t[32];
    memset(&c, 0, sizeof c);
    c.pc_at = c.tsc_at = -1;
    printf("== stream %u\n", n);
    stream_step("reading", n, -1);
    CALL(TBRW_reading_stream(h, n));

    r = reading_stream(n, TBRW_STREAM_INFO_SECTION);
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("info: (absent)\n");
    } else {
        TBRW_STREAM_INFO si;
        char *cmd, *mask, *comment;
        CALL(r);
        CALL(TBRW_get_stream_info(h, n, sizeof si, &si, NULL));
        cmd = str_of(si.command_line);
        mask = str_of(si.cpu_mask);
        comment = str_of(si.comment);
        printf("info: stream_type=%u sampling_duration_ms=%u sampling_interval_us=%u start_time=0x%llx end_time=0x%llx "
               "command_line=%s cpu_mask=%s comment=%s\n",
               si.stream_type, si.sampling_duration, si.sampling_interval,
               ((TBRW_U64)si.sampling_start_time.dwHighDateTime << 32) | si.sampling_start_time.dwLowDateTime,
               ((TBRW_U64)si.sampling_end_time.dwHighDateTime << 32) | si.sampling_end_time.dwLowDateTime, cmd, mask,
               comment);
        free(cmd);
        free(mask);
        free(comment);
        CALL(TBRW_done_stream_section(h, n, TBRW_STREAM_INFO_SECTION));
    }

    r = reading_stream(n, TBRW_EVENT_DESCRIPTION_SECTION);
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("events: (absent)\n");
    } else {
        CALL(r);
        CALL(TBRW_enumerate_events(h, n, collect_events, &events, 0));
        printf("events: %zu\n", events.len);
        for (i = 0; i < events.len; i++) {
            struct event_copy *e = &((struct event_copy *)events.items)[i];
            char *name = str_of(e->e.event_name), *arch = str_of(e->e.event_arch_name);
            printf("event %zu: id=%u flags=0x%x sav=%llu name=%s arch_name=%s details=%u\n", i, e->e.event_id,
                   e->e.event_flags, e->e.event_sav, name, arch, e->e.event_num_details);
            for (j = 0; j < e->e.event_num_details; j++) {
                TBRW_EVENT_DETAIL *d = &e->details[j];
                printf("  detail %zu: access_size_bits=%u method=%u access=%u address=0x%llx value=0x%llx "
                       "legacy_command=%u reserved1=%u reserved2=%u reserved3=%u\n",
                       j, d->detail_access_size, d->detail_method, d->detail_access, d->detail_address, d->detail_value,
                       d->legacy_command, d->reserved1, d->reserved2, d->reserved3);
            }
            free(name);
            free(arch);
            free(e->details);
        }
        CALL(TBRW_done_stream_section(h, n, TBRW_EVENT_DESCRIPTION_SECTION));
    }

    r = reading_stream(n, TBRW_DATA_DESCRIPTION_SECTION);
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("descriptor: (absent)\n");
    } else {
        CALL(r);
        CALL(TBRW_enumerate_data_descriptor_entries(h, n, collect_descs, &descs));
        c.descs = (TBRW_SAMPREC_DESC_ENTRY *)descs.items;
        c.ndescs = descs.len;
        /* The record size as the library reads the descriptor (Intel's
         * function; the same in every layout this library reads). */
        CALL(TBRW_get_size_of_each_data_entry(h, n, &c.record_size));
        for (i = 0; i < c.ndescs; i++) {
            TBRW_SAMPREC_DESC_ENTRY *d = &c.descs[i];
            if (is_extended(d->desc_type)) continue;
            if (c.pc_at < 0 && d->desc_type == ST_LEGACY_SAMPLE_RECORD && d->desc_data_size >= 32) c.pc_at = d->desc_offset;
            if (c.tsc_at < 0 && d->desc_type == ST_TIME_STAMP && d->desc_subtype == SST_TSC && d->desc_data_size == 8)
                c.tsc_at = d->desc_offset;
        }
        printf("descriptor: entries=%zu record_size=%u\n", c.ndescs, c.record_size);
        for (i = 0; i < c.ndescs; i++) {
            TBRW_SAMPREC_DESC_ENTRY *d = &c.descs[i];
            char *name = str_of(d->desc_name);
            type_name(d->desc_type, t);
            printf("  entry %zu: offset=%u data_size=%u type=%s subtype=%u name=%s access_offset=0x%llx access_type=%u "
                   "access_method=%u sample_flag=%u reserved0=%u reserved1=%u\n",
                   i, d->desc_offset, d->desc_data_size, t, d->desc_subtype, name, d->desc_access_offset,
                   d->desc_access_type, d->desc_access_method, d->desc_sample_flag, d->reserved0, d->reserved1);
            free(name);
        }
        CALL(TBRW_done_stream_section(h, n, TBRW_DATA_DESCRIPTION_SECTION));
    }

    r = reading_stream(n, TBRW_USER_DEFINED_STREAM_SECTION);
    if (r == TBRW_SECTION_NOT_EXIST) {
        printf("user-defined: (absent)\n");
    } else {
        TBRW_U32 need = 0;
        unsigned char *b;
        CALL(r);
        r = TBRW_get_user_defined_stream(h, n, 0, NULL, &need);
        if (r != TBRW_SUCCESS && r != TBRW_BUFFER_TOO_SMALL) die(r);
        b = (unsigned char *)xmalloc(need);
        CALL(TBRW_get_user_defined_stream(h, n, need, b, NULL));
        printf("user-defined: %u bytes: ", need);
        hex_preview(b, need);
        printf("\n");
        free(b);
        CALL(TBRW_done_stream_section(h, n, TBRW_USER_DEFINED_STREAM_SECTION));
    }

    r = reading_stream(n, TBRW_DATA_SECTION);
    if (r == TBRW_SECTION_NOT_EXIST && c.record_size > 0) {
        /* A descriptor and no data section: a stream written with no
         * records (Intel's layout has no section of no bytes). */
        printf("records: 0\n");
    } else if (r == TBRW_SECTION_NOT_EXIST) {
        printf("records: (absent)\n");
    } else {
        CALL(r);
        CALL(TBRW_enumerate_data(h, n, count_records, &records, 0));
        printf("records: %llu\n", records);
        /* Bind for the names: a stored bind is used as it is; a read-only handle binds in memory. */
        stream_step("binding", n, -1);
        r = TBRW_dobind(h, n);
        if (r != TBRW_SUCCESS && r != TBRW_INVALID_STREAM) die(r);
        stream_step("reading", n, TBRW_DATA_SECTION);
        c.bound = r == TBRW_SUCCESS;
        c.show = show < records ? show : records;
        if (c.show > 0) {
            if (c.bound)
                CALL(TBRW_bind_enumerate_data(h, n, show_bound, &c, 0));
            else
                CALL(TBRW_enumerate_data(h, n, show_records, &c, 0));
        }
        if (c.bound) {
            size_t *order = (size_t *)xmalloc(sizeof(size_t) * (modules.len + 1));
            c.counts = (TBRW_U64 *)calloc(modules.len + 1, sizeof(TBRW_U64));
            CALL(TBRW_bind_enumerate_data(h, n, count_modules, &c, 0));
            for (i = 0; i <= modules.len; i++) order[i] = i;
            sort_counts = c.counts;
            qsort(order, modules.len + 1, sizeof *order, by_count);
            printf("samples by module:\n");
            for (i = 0; i <= modules.len; i++) {
                size_t m = order[i];
                if (c.counts[m] == 0) continue;
                if (m == modules.len) {
                    printf("  %llu unknown module\n", c.counts[m]);
                } else {
                    printf("  %llu module %zu ", c.counts[m], m);
                    print_module_name(m);
                    printf(" pid=%u\n", ((TBRW_MODULE *)modules.items)[m].module_associated_pid);
                }
            }
            free(order);
            free(c.counts);
        }
        CALL(TBRW_done_stream_section(h, n, TBRW_DATA_SECTION));
    }
    free(events.items);
    free(descs.items);
    stream_step("reading", n, -1);
    CALL(TBRW_done_stream(h, n));
}

/* A bad command line: the reason (naming `arg` where "%s" is) and the usage line. */
static void bad_usage(const char *reason, const char *arg) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", reason);
    if (arg) {
        const char *at = strstr(reason, "%s");
        if (at) snprintf(msg, sizeof msg, "%.*s%s%s", (int)(at - reason), reason, arg, at + 2);
    }
    fprintf(stderr, "%s: %s\nusage: print_tb5 FILE.tb5 [--records N|all]\n", prog, msg);
    exit(2);
}

int main(int argc, char **argv) {
    TBRW_U64 show = 5;
    TBRW_U32 streams = 0, n;
    wchar_t *wpath = NULL;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--records") == 0) {
            char *end = NULL;
            if (++i == argc) bad_usage("--records takes a number or 'all'", NULL);
            a = argv[i];
            if (strcmp(a, "all") == 0) {
                show = ~0ULL;
            } else {
                errno = 0;
                show = strtoull(a, &end, 10);
                if (!*a || *a == '-' || *end || errno) bad_usage("--records takes a number or 'all', not '%s'", a);
            }
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            printf("usage: print_tb5 FILE.tb5 [--records N|all]\n");
            return 0;
        } else if (a[0] == '-' && a[1]) {
            bad_usage("unknown option '%s'", a);
        } else if (path) {
            bad_usage("one file expected: '%s' is one too many", a);
        } else {
            path = a;
        }
    }
    if (!path) bad_usage("no file given", NULL);
    step = "opening it";
    CALL(TBRW_convert_utf8_to_wcs_malloced(path, &wpath));
    CALL(TBRW_open(&h, wpath, TBRW_FILE_READ));
    free(wpath);
    step = "verifying it";
    CALL(TBRW_verify(h));
    step = "counting its streams";
    CALL(TBRW_get_number_data_streams(h, &streams));
    printf("streams: %u\n", streams);
    print_hardware();
    print_software();
    print_version();
    print_processes();
    print_modules();
    print_user_global();
    for (n = 0; n < streams; n++) print_stream(n, show);
    free(modules.items);
    step = "closing it";
    CALL(TBRW_close(h));
    return 0;
}
