/*
 * tbrw_writer IN.dat NEW.tb5
 *
 * The C version of the guide's tbrw_writer, against the TBRW C API only:
 * reads a tbrw_reader dump (docs/DAT.md) and writes a new TB5 file section
 * by section, the way a collector would. Bad input: one line naming the
 * record and byte, exit 1, and no file at NEW.tb5.
 */
#include "dat.h"

/* ------------------------------------------------------------------ a checked reader over the .dat bytes */

struct cur {
    const unsigned char *b;
    size_t at, end;
    size_t base; /* file offset of b[0] */
    long record; /* record number, -1 outside records */
};

/* The dump being read: where bad input is reported. */
static const char *dat_path;

static void bad(const struct cur *c, const char *what) {
    char msg[512];
    if (c->record >= 0)
        snprintf(msg, sizeof msg, "record %ld, byte %zu: %s", c->record, c->base + c->at, what);
    else
        snprintf(msg, sizeof msg, "byte %zu: %s", c->base + c->at, what);
    fail_at(dat_path, msg, 0);
}

static const unsigned char *take(struct cur *c, size_t n, const char *what) {
    const unsigned char *p;
    if (c->end - c->at < n) bad(c, what);
    p = c->b + c->at;
    c->at += n;
    return p;
}
static TBRW_U8 r8(struct cur *c) { return *take(c, 1, "record too short"); }
static TBRW_U16 r16(struct cur *c) {
    TBRW_U16 v;
    memcpy(&v, take(c, 2, "record too short"), 2);
    return v;
}
static TBRW_U32 r32(struct cur *c) {
    TBRW_U32 v;
    memcpy(&v, take(c, 4, "record too short"), 4);
    return v;
}
static TBRW_U64 r64(struct cur *c) {
    TBRW_U64 v;
    memcpy(&v, take(c, 8, "record too short"), 8);
    return v;
}
/* A count of items of at least `min` bytes each, checked against what is left. */
static size_t rcount(struct cur *c, TBRW_U64 n, size_t min) {
    if (min && n > (c->end - c->at) / min) bad(c, "a count larger than the record can hold");
    return (size_t)n;
}
/* A string as a malloc'd wide string, or NULL for "no string". */
static TBRW_CHAR *rstr(struct cur *c) {
    TBRW_U32 n = r32(c);
    char *u;
    wchar_t *w = NULL;
    TBRW_U32 r;
    if (n == 0xFFFFFFFFu) return NULL;
    u = (char *)xmalloc((size_t)n + 1);
    memcpy(u, take(c, n, "string runs past the record"), n);
    u[n] = 0;
    r = TBRW_convert_utf8_to_wcs_malloced(u, &w);
    free(u);
    if (r != TBRW_SUCCESS) bad(c, "string is not UTF-8");
    return w;
}
static void done(struct cur *c) {
    if (c->at != c->end) bad(c, "unexpected bytes at the end of the record");
}

/* ------------------------------------------------------------------ sections */

static void hardware(struct cur *c) {
    TBRW_SYSTEM sys;
    TBRW_U32 i, j, k, l;
    memset(&sys, 0, sizeof sys);
    sys.system_size = sizeof sys;
    sys.system_num_nodes = (TBRW_U32)rcount(c, r32(c), 32);
    sys.node_array = (TBRW_NODE *)xmalloc(sizeof(TBRW_NODE) * sys.system_num_nodes);
    for (i = 0; i < sys.system_num_nodes; i++) {
        TBRW_NODE *n = &sys.node_array[i];
        memset(n, 0, sizeof *n);
        n->node_size = sizeof *n;
        n->node_type_from_shell = r32(c);
        n->node_id = r32(c);
        (void)r32(c); /* num_available: the cpu count below is what the C structure carries */
        n->node_num_used = r32(c);
        n->reserved = r32(c);
        n->node_physical_memory = r64(c);
        n->node_num_available = (TBRW_U32)rcount(c, r32(c), 48);
        n->cpu_array = (TBRW_CPU *)xmalloc(sizeof(TBRW_CPU) * n->node_num_available);
        for (j = 0; j < n->node_num_available; j++) {
            TBRW_CPU *cpu = &n->cpu_array[j];
            memset(cpu, 0, sizeof *cpu);
            cpu->cpu_size = sizeof *cpu;
            cpu->cpu_number = r32(c);
            cpu->cpu_native_arch_type = r32(c);
            cpu->cpu_intel_processor_number = r32(c);
            cpu->cpu_speed_mhz = r32(c);
            cpu->cpu_fsb_mhz = r32(c);
            cpu->cpu_cache_L2 = r32(c);
            cpu->cpu_cache_L3 = r32(c);
            cpu->cpu_tsc_offset = (TBRW_S64)r64(c);
            cpu->cpu_package_num = r16(c);
            cpu->cpu_core_num = r16(c);
            cpu->cpu_hardware_thread_num = r16(c);
            cpu->cpu_threads_per_core = r16(c);
            cpu->num_cpu_arch_array = (TBRW_U32)rcount(c, r32(c), 5);
            cpu->cpu_arch_array = (TBRW_CPU_ARCH *)xmalloc(sizeof(TBRW_CPU_ARCH) * cpu->num_cpu_arch_array);
            for (k = 0; k < cpu->num_cpu_arch_array; k++) {
                TBRW_CPU_ARCH *a = &cpu->cpu_arch_array[k];
                TBRW_U8 form;
                a->arch_size = sizeof *a;
                a->arch_type = r16(c);
                a->arch_num_cpuid = (TBRW_U16)rcount(c, r16(c), 24);
                form = r8(c);
                if (form > 1) bad(c, "unknown cpuid form");
                if (form == 1) {
                    a->cpuid_ia64_array = (TBRW_CPUID_IA64 *)xmalloc(sizeof(TBRW_CPUID_IA64) * a->arch_num_cpuid);
                    for (l = 0; l < a->arch_num_cpuid; l++) {
                        a->cpuid_ia64_array[l].cpuid_select = r64(c);
                        a->cpuid_ia64_array[l].cpuid_val = r64(c);
                        a->cpuid_ia64_array[l].reserved = r64(c);
                    }
                } else {
                    a->cpuid_ia32_array = (TBRW_CPUID_IA32 *)xmalloc(sizeof(TBRW_CPUID_IA32) * a->arch_num_cpuid);
                    for (l = 0; l < a->arch_num_cpuid; l++) {
                        TBRW_CPUID_IA32 *x = &a->cpuid_ia32_array[l];
                        x->cpuid_eax_input = r32(c);
                        x->cpuid_eax = r32(c);
                        x->cpuid_ebx = r32(c);
                        x->cpuid_ecx = r32(c);
                        x->cpuid_edx = r32(c);
                        x->reserved = r32(c);
                    }
                }
            }
        }
    }
    done(c);
    section_step("writing", TBRW_HARDWARE_SECTION);
    CALL(TBRW_writing_section(h, TBRW_HARDWARE_SECTION));
    CALL(TBRW_set_system(h, &sys));
    CALL(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
    for (i = 0; i < sys.system_num_nodes; i++) {
        for (j = 0; j < sys.node_array[i].node_num_available; j++) {
            TBRW_CPU *cpu = &sys.node_array[i].cpu_array[j];
            for (k = 0; k < cpu->num_cpu_arch_array; k++) free(cpu->cpu_arch_array[k].cpuid_ia32_array);
            free(cpu->cpu_arch_array);
        }
        free(sys.node_array[i].cpu_array);
    }
    free(sys.node_array);
}

static void software(struct cur *c) {
    TBRW_U32 present = r32(c);
    if (present & ~7u) bad(c, "unknown software parts");
    section_step("writing", TBRW_SOFTWARE_SECTION);
    CALL(TBRW_writing_section(h, TBRW_SOFTWARE_SECTION));
    if (present & 1) {
        TBRW_HOST host;
        host.host_size = sizeof host;
        host.reserved = r32(c);
        host.host_ip_address.soi_ptr = rstr(c);
        host.host_name.soi_ptr = rstr(c);
        CALL(TBRW_set_host(h, &host));
        free(host.host_ip_address.soi_ptr);
        free(host.host_name.soi_ptr);
    }
    if (present & 2) {
        TBRW_OS os;
        os.os_size = sizeof os;
        os.os_platform = r32(c);
        os.os_major = r32(c);
        os.os_minor = r32(c);
        os.os_build = r32(c);
        os.os_extra = r32(c);
        os.os_name.soi_ptr = rstr(c);
        os.os_name_extra.soi_ptr = rstr(c);
        CALL(TBRW_set_os(h, &os));
        free(os.os_name.soi_ptr);
        free(os.os_name_extra.soi_ptr);
    }
    if (present & 4) {
        TBRW_APPLICATION app;
        app.app_size = sizeof app;
        app.app_reserved = r32(c);
        app.app_page_size = r32(c);
        app.app_alloc_granularity = r32(c);
        app.app_min_app_addr = r64(c);
        app.app_max_app_addr = r64(c);
        CALL(TBRW_set_application(h, &app));
    }
    done(c);
    CALL(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
}

static void process_threads(struct cur *c) {
    size_t n, i;
    section_step("writing", TBRW_PROCESS_THREAD_SECTION);
    CALL(TBRW_writing_section(h, TBRW_PROCESS_THREAD_SECTION));
    n = rcount(c, r64(c), 36);
    for (i = 0; i < n; i++) {
        TBRW_PID p;
        p.pid_size = sizeof p;
        p.pid_id = r32(c);
        p.pid_flags = r32(c);
        p.reserved = r32(c);
        p.pid_event_when = r64(c);
        p.reserved_for_legacy = r32(c);
        p.reserved1 = r32(c);
        p.pid_path.soi_ptr = rstr(c);
        p.pid_name.soi_ptr = rstr(c);
        CALL(TBRW_add_process(h, &p));
        free(p.pid_path.soi_ptr);
        free(p.pid_name.soi_ptr);
    }
    n = rcount(c, r64(c), 32);
    for (i = 0; i < n; i++) {
        TBRW_TID t;
        t.tid_size = sizeof t;
        t.tid_associated_pid = r32(c);
        t.tid_id = r32(c);
        t.tid_flags = r32(c);
        t.tid_event_when = r64(c);
        t.reserved_for_legacy = r32(c);
        t.reserved = r32(c);
        t.tid_name.soi_ptr = rstr(c);
        CALL(TBRW_add_thread(h, &t));
        free(t.tid_name.soi_ptr);
    }
    done(c);
    CALL(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
}

static void modules(struct cur *c) {
    size_t n = rcount(c, r64(c), 85), i;
    section_step("writing", TBRW_MODULE_SECTION);
    CALL(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    for (i = 0; i < n; i++) {
        TBRW_MODULE m;
        memset(&m, 0, sizeof m);
        m.module_size = sizeof m;
        m.module_reserved = r32(c);
        m.module_associated_pid = r32(c);
        m.module_flags = r32(c);
        m.module_event_when = r64(c);
        m.module_segment_number = r32(c);
        m.module_segment_type = r8(c) & 3;
        m.module_code_selector = r32(c);
        m.reserved = r32(c);
        m.module_length = r64(c);
        m.module_load_address = r64(c);
        m.reserved_for_legacy = r32(c);
        m.reserved_for_legacy2 = r32(c);
        m.reserved_for_legacy_flags = r32(c);
        m.reserved1 = r32(c);
        m.module_unload_tsc = r64(c);
        m.module_path.soi_ptr = rstr(c);
        m.module_name.soi_ptr = rstr(c);
        m.module_segment_name.soi_ptr = rstr(c);
        CALL(TBRW_add_module(h, &m));
        free(m.module_path.soi_ptr);
        free(m.module_name.soi_ptr);
        free(m.module_segment_name.soi_ptr);
    }
    done(c);
    CALL(TBRW_done_section(h, TBRW_MODULE_SECTION));
}

/* ------------------------------------------------------------------ streams */

/* The records of one stream, kept until STREAM_END (where they are written
 * in the order a collector would: info, descriptor, events, user bytes, data). */
struct pending {
    struct cur info, events, descs, user, data;
    int has_info, has_events, has_descs, has_user, has_data;
};

static void write_stream(TBRW_U32 n, struct pending *p, FILE *data_file, const struct cur *at) {
    TBRW_U32 i, count, j;
    if (!p->has_info) bad(at, "stream without a STREAM_INFO record");
    if (!p->has_descs) bad(at, "stream without a DESCRIPTOR record");
    stream_step("writing", n, -1);
    CALL(TBRW_writing_stream(h, n));
    {
        TBRW_STREAM_INFO si;
        struct cur *c = &p->info;
        TBRW_U64 t;
        si.stream_info_size = sizeof si;
        si.sampling_duration = r32(c);
        si.stream_type = r32(c);
        si.sampling_interval = r32(c);
        t = r64(c);
        si.sampling_start_time.dwLowDateTime = (TBRW_U32)t;
        si.sampling_start_time.dwHighDateTime = (TBRW_U32)(t >> 32);
        t = r64(c);
        si.sampling_end_time.dwLowDateTime = (TBRW_U32)t;
        si.sampling_end_time.dwHighDateTime = (TBRW_U32)(t >> 32);
        si.command_line.soi_ptr = rstr(c);
        si.cpu_mask.soi_ptr = rstr(c);
        si.comment.soi_ptr = rstr(c);
        done(c);
        stream_step("writing", n, TBRW_STREAM_INFO_SECTION);
        CALL(TBRW_writing_stream_section(h, n, TBRW_STREAM_INFO_SECTION));
        CALL(TBRW_set_stream_info(h, n, &si));
        CALL(TBRW_done_stream_section(h, n, TBRW_STREAM_INFO_SECTION));
        free(si.command_line.soi_ptr);
        free(si.cpu_mask.soi_ptr);
        free(si.comment.soi_ptr);
    }
    {
        struct cur *c = &p->descs;
        count = (TBRW_U32)rcount(c, r32(c), 32);
        stream_step("writing", n, TBRW_DATA_DESCRIPTION_SECTION);
        CALL(TBRW_writing_stream_section(h, n, TBRW_DATA_DESCRIPTION_SECTION));
        for (i = 0; i < count; i++) {
            TBRW_SAMPREC_DESC_ENTRY d;
            memset(&d, 0, sizeof d);
            d.desc_size = sizeof d;
            d.desc_offset = r32(c);
            d.desc_type = r16(c);
            d.desc_subtype = r16(c);
            d.desc_data_size = r32(c);
            d.desc_access_offset = r64(c);
            d.desc_access_type = r8(c);
            d.desc_access_method = r8(c);
            d.desc_sample_flag = r8(c);
            d.reserved0 = r8(c);
            d.reserved1 = r32(c);
            d.desc_name.soi_ptr = rstr(c);
            CALL(TBRW_add_data_descriptor_entry(h, n, &d));
            free(d.desc_name.soi_ptr);
        }
        done(c);
        CALL(TBRW_done_stream_section(h, n, TBRW_DATA_DESCRIPTION_SECTION));
    }
    if (p->has_events) {
        struct cur *c = &p->events;
        count = (TBRW_U32)rcount(c, r32(c), 28);
        stream_step("writing", n, TBRW_EVENT_DESCRIPTION_SECTION);
        CALL(TBRW_writing_stream_section(h, n, TBRW_EVENT_DESCRIPTION_SECTION));
        for (i = 0; i < count; i++) {
            TBRW_EVENT e;
            e.event_size = sizeof e;
            e.event_id = r32(c);
            e.event_flags = r32(c);
            e.event_sav = r64(c);
            e.event_name.soi_ptr = rstr(c);
            e.event_arch_name.soi_ptr = rstr(c);
            e.event_num_details = (TBRW_U32)rcount(c, r32(c), 28);
            e.event_detail_array = (TBRW_EVENT_DETAIL *)xmalloc(sizeof(TBRW_EVENT_DETAIL) * e.event_num_details);
            for (j = 0; j < e.event_num_details; j++) {
                TBRW_EVENT_DETAIL *d = &e.event_detail_array[j];
                d->detail_size = sizeof *d;
                d->detail_access_size = r16(c);
                d->detail_method = r8(c);
                d->detail_access = r8(c);
                d->detail_address = r64(c);
                d->detail_value = r64(c);
                d->legacy_command = r8(c);
                d->reserved1 = r8(c);
                d->reserved2 = r16(c);
                d->reserved3 = r32(c);
            }
            CALL(TBRW_add_event(h, n, &e));
            free(e.event_name.soi_ptr);
            free(e.event_arch_name.soi_ptr);
            free(e.event_detail_array);
        }
        done(c);
        CALL(TBRW_done_stream_section(h, n, TBRW_EVENT_DESCRIPTION_SECTION));
    }
    if (p->has_user) {
        stream_step("writing", n, TBRW_USER_DEFINED_STREAM_SECTION);
        CALL(TBRW_writing_stream_section(h, n, TBRW_USER_DEFINED_STREAM_SECTION));
        CALL(TBRW_set_user_defined_stream(h, n, (TBRW_U32)(p->user.end - p->user.at), (void *)(p->user.b + p->user.at)));
        CALL(TBRW_done_stream_section(h, n, TBRW_USER_DEFINED_STREAM_SECTION));
    }
    if (p->has_data) {
        struct cur *c = &p->data;
        TBRW_U32 rs = r32(c);
        TBRW_U64 records = r64(c), offset = r64(c), left;
        unsigned char *chunk;
        size_t per;
        done(c);
        if (rs == 0) bad(c, "record size 0");
        if (!data_file) bad(c, "the data file cannot be opened");
        if (fseek(data_file, (long)offset, SEEK_SET) != 0) bad(c, "data offset past the data file");
        per = (1u << 20) / rs + 1;
        chunk = (unsigned char *)xmalloc(per * rs);
        stream_step("writing", n, TBRW_DATA_SECTION);
        CALL(TBRW_writing_stream_section(h, n, TBRW_DATA_SECTION));
        for (left = records; left > 0;) {
            size_t k = left < per ? (size_t)left : per;
            if (fread(chunk, rs, k, data_file) != k) bad(c, "the data file ends before the records do");
            CALL(TBRW_add_data(h, n, (TBRW_U32)(k * rs), chunk));
            left -= k;
        }
        free(chunk);
        CALL(TBRW_done_stream_section(h, n, TBRW_DATA_SECTION));
    }
    stream_step("writing", n, -1);
    CALL(TBRW_done_stream(h, n));
}

int main(int argc, char **argv) {
    FILE *f;
    unsigned char *bytes;
    long size;
    struct cur top;
    TBRW_U32 name_len, open_stream = NO_STREAM;
    char *data_name, *dir, *data_path;
    const char *paths[2], *out_path;
    int force;
    FILE *data_file;
    wchar_t *w = NULL;
    struct pending p;
    long index = 0;
    prog = "tbrw_writer";
    parse_in_out(argc, argv, "usage: tbrw_writer IN.dat NEW.tb5 [-f|--force]", paths, &force);
    dat_path = paths[0];
    out_path = paths[1];
    f = fopen(dat_path, "rb");
    if (!f) fail_at(dat_path, "cannot open", errno);
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) fail_at(dat_path, "cannot read", errno);
    bytes = (unsigned char *)xmalloc((size_t)size);
    if (fread(bytes, 1, (size_t)size, f) != (size_t)size) fail_at(dat_path, "cannot read", errno);
    fclose(f);
    top.b = bytes;
    top.at = 0;
    top.end = (size_t)size;
    top.base = 0;
    top.record = -1;
    if (memcmp(take(&top, 8, "not a .dat file"), DAT_MAGIC, 8) != 0) bad(&top, "not a tbrw .dat file (bad magic)");
    if (r32(&top) != 1) bad(&top, "unsupported .dat version");
    name_len = r32(&top);
    data_name = (char *)xmalloc(name_len + 1);
    memcpy(data_name, take(&top, name_len, "data file name"), name_len);
    data_name[name_len] = 0;
    if (name_len == 0 || strchr(data_name, '/')) bad(&top, "the data file name must be a plain file name");
    dir = dir_name(dat_path);
    data_path = (char *)xmalloc(strlen(dir) + name_len + 1);
    sprintf(data_path, "%s%s", dir, data_name);
    check_output(out_path, dat_path, force);
    check_output(out_path, data_path, 1);
    data_file = fopen(data_path, "rb");

    subject = out_path;
    step = "creating it";
    CALL(TBRW_convert_utf8_to_wcs_malloced(out_path, &w));
    CALL(TBRW_open(&h, w, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    free(w);
    memset(&p, 0, sizeof p);
    for (;;) {
        struct cur c;
        TBRW_U32 tag, stream;
        TBRW_U64 len;
        top.record = index;
        tag = r32(&top);
        stream = r32(&top);
        len = r64(&top);
        c.b = top.b;
        c.base = 0;
        c.at = top.at;
        c.end = top.at + rcount(&top, len, 1);
        c.record = index++;
        top.at = c.end;
        if (tag == TAG_END) {
            if (open_stream != NO_STREAM) bad(&c, "END inside a stream");
            break;
        }
        if (tag >= TAG_STREAM_INFO && tag <= TAG_STREAM_END && stream != open_stream) bad(&c, "a stream record outside its stream");
        switch (tag) {
        case TAG_HARDWARE: hardware(&c); break;
        case TAG_SOFTWARE: software(&c); break;
        case TAG_PROCESS_THREAD: process_threads(&c); break;
        case TAG_MODULES: modules(&c); break;
        case TAG_VERSION: {
            TBRW_VERSION_INFO v;
            v.version_info_size = sizeof v;
            v.sampling_driver_version = r32(&c);
            v.bind_version = r32(&c);
            v.sample_file_version = r32(&c);
            done(&c);
            section_step("writing", TBRW_VERSION_INFO_SECTION);
            CALL(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
            CALL(TBRW_set_version_info(h, &v));
            CALL(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
            break;
        }
        case TAG_USER_GLOBAL:
            section_step("writing", TBRW_USER_DEFINED_GLOBAL_SECTION);
            CALL(TBRW_writing_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
            CALL(TBRW_set_user_defined_global(h, (TBRW_U32)(c.end - c.at), (void *)(c.b + c.at)));
            CALL(TBRW_done_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
            break;
        case TAG_STREAM:
            if (open_stream != NO_STREAM) bad(&c, "a stream inside a stream");
            open_stream = stream;
            memset(&p, 0, sizeof p);
            break;
        case TAG_STREAM_INFO: p.info = c; p.has_info = 1; break;
        case TAG_EVENTS: p.events = c; p.has_events = 1; break;
        case TAG_DESCRIPTOR: p.descs = c; p.has_descs = 1; break;
        case TAG_USER_STREAM: p.user = c; p.has_user = 1; break;
        case TAG_DATA: p.data = c; p.has_data = 1; break;
        case TAG_STREAM_END:
            write_stream(stream, &p, data_file, &c);
            open_stream = NO_STREAM;
            break;
        default: bad(&c, "unknown record tag");
        }
    }
    step = "closing it";
    CALL(TBRW_close(h));
    h = NULL;
    if (data_file) fclose(data_file);
    printf("wrote %s\n", out_path);
    free(bytes);
    free(data_name);
    free(dir);
    free(data_path);
    return 0;
}
