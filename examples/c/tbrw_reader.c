/*
 * tbrw_reader IN.tb5 OUT.dat
 *
 * The C version of the guide's tbrw_reader, against the TBRW C API only:
 * writes OUT.dat (every section but the data, docs/DAT.md) and, beside it,
 * <IN.tb5 file name>.dat with the data sections. The same bytes as the
 * Rust version.
 */
#include "dat.h"

/* ------------------------------------------------------------------ a growing byte buffer */

struct buf {
    unsigned char *b;
    size_t len, cap;
};

static void put(struct buf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->b = (unsigned char *)realloc(b->b, b->cap);
        if (!b->b) fail("out of memory");
    }
    memcpy(b->b + b->len, p, n);
    b->len += n;
}
static void u8(struct buf *b, TBRW_U8 v) { put(b, &v, 1); }
static void u16(struct buf *b, TBRW_U16 v) { put(b, &v, 2); }
static void u32(struct buf *b, TBRW_U32 v) { put(b, &v, 4); }
static void u64(struct buf *b, TBRW_U64 v) { put(b, &v, 8); }

/* A string id: u32 length and UTF-8, or 0xFFFFFFFF for no string. */
static void str(struct buf *b, TBRW_STRING_OR_ID id) {
    TBRW_U32 need = 0, r;
    TBRW_CHAR *w;
    char *u = NULL;
    if (id.soi_uniqueid == 0) {
        u32(b, 0xFFFFFFFFu);
        return;
    }
    r = TBRW_convert_uniqueid_to_string(h, 0, &id, NULL, &need);
    if (r != TBRW_BUFFER_TOO_SMALL) die(r);
    w = (TBRW_CHAR *)xmalloc(need);
    CALL(TBRW_convert_uniqueid_to_string(h, need, &id, w, NULL));
    CALL(TBRW_convert_wcs_to_utf8_malloced(w, &u));
    u32(b, (TBRW_U32)strlen(u));
    put(b, u, strlen(u));
    free(u);
    free(w);
}

static struct buf out;

static void record(TBRW_U32 tag, TBRW_U32 stream, const struct buf *payload) {
    TBRW_U64 n = payload ? payload->len : 0;
    u32(&out, tag);
    u32(&out, stream);
    u64(&out, n);
    if (n) put(&out, payload->b, n);
}

/* ------------------------------------------------------------------ collecting callbacks */

/* Encoded entries and how many there are. */
struct counted {
    struct buf b;
    TBRW_U64 n;
};

static TBRW_U32 pids_cb(TBRW_PID *p, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct buf *b = &((struct counted *)user)->b;
    TBRW_U32 i;
    (void)size;
    ((struct counted *)user)->n += n;
    for (i = 0; i < n; i++) {
        u32(b, p[i].pid_id);
        u32(b, p[i].pid_flags);
        u32(b, p[i].reserved);
        u64(b, p[i].pid_event_when);
        u32(b, p[i].reserved_for_legacy);
        u32(b, p[i].reserved1);
        str(b, p[i].pid_path);
        str(b, p[i].pid_name);
    }
    return TRUE;
}
static TBRW_U32 tids_cb(TBRW_TID *t, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct buf *b = &((struct counted *)user)->b;
    TBRW_U32 i;
    (void)size;
    ((struct counted *)user)->n += n;
    for (i = 0; i < n; i++) {
        u32(b, t[i].tid_associated_pid);
        u32(b, t[i].tid_id);
        u32(b, t[i].tid_flags);
        u64(b, t[i].tid_event_when);
        u32(b, t[i].reserved_for_legacy);
        u32(b, t[i].reserved);
        str(b, t[i].tid_name);
    }
    return TRUE;
}
static TBRW_U32 modules_cb(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct buf *b = &((struct counted *)user)->b;
    TBRW_U32 i;
    (void)size;
    ((struct counted *)user)->n += n;
    for (i = 0; i < n; i++) {
        u32(b, m[i].module_reserved);
        u32(b, m[i].module_associated_pid);
        u32(b, m[i].module_flags);
        u64(b, m[i].module_event_when);
        u32(b, m[i].module_segment_number);
        u8(b, (TBRW_U8)m[i].module_segment_type);
        u32(b, m[i].module_code_selector);
        u32(b, m[i].reserved);
        u64(b, m[i].module_length);
        u64(b, m[i].module_load_address);
        u32(b, m[i].reserved_for_legacy);
        u32(b, m[i].reserved_for_legacy2);
        u32(b, m[i].reserved_for_legacy_flags);
        u32(b, m[i].reserved1);
        u64(b, m[i].module_unload_tsc);
        str(b, m[i].module_path);
        str(b, m[i].module_name);
        str(b, m[i].module_segment_name);
    }
    return TRUE;
}
static TBRW_U32 events_cb(TBRW_EVENT *e, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct counted *c = (struct counted *)user;
    TBRW_U32 j;
    (void)size;
    (void)n; /* one event per call */
    c->n++;
    u32(&c->b, e->event_id);
    u32(&c->b, e->event_flags);
    u64(&c->b, e->event_sav);
    str(&c->b, e->event_name);
    str(&c->b, e->event_arch_name);
    u32(&c->b, e->event_num_details);
    for (j = 0; j < e->event_num_details; j++) {
        TBRW_EVENT_DETAIL *d = &e->event_detail_array[j];
        u16(&c->b, d->detail_access_size);
        u8(&c->b, d->detail_method);
        u8(&c->b, d->detail_access);
        u64(&c->b, d->detail_address);
        u64(&c->b, d->detail_value);
        u8(&c->b, d->legacy_command);
        u8(&c->b, d->reserved1);
        u16(&c->b, d->reserved2);
        u32(&c->b, d->reserved3);
    }
    return TRUE;
}
static TBRW_U32 record_size;
static TBRW_U32 descs_cb(TBRW_SAMPREC_DESC_ENTRY *d, TBRW_U32 size, TBRW_U32 n, void *user) {
    struct counted *c = (struct counted *)user;
    TBRW_U32 i;
    (void)size;
    for (i = 0; i < n; i++) {
        c->n++;
        u32(&c->b, d[i].desc_offset);
        u16(&c->b, d[i].desc_type);
        u16(&c->b, d[i].desc_subtype);
        u32(&c->b, d[i].desc_data_size);
        u64(&c->b, d[i].desc_access_offset);
        u8(&c->b, d[i].desc_access_type);
        u8(&c->b, d[i].desc_access_method);
        u8(&c->b, d[i].desc_sample_flag);
        u8(&c->b, d[i].reserved0);
        u32(&c->b, d[i].reserved1);
        str(&c->b, d[i].desc_name);
    }
    return TRUE;
}
static FILE *data_out;
static char *data_path;
static TBRW_U64 data_at;
static TBRW_U32 data_cb(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)n;
    *(TBRW_U64 *)user += n;
    if (fwrite(data, 1, size, data_out) != size) fail_at(data_path, "cannot write", errno);
    data_at += size;
    return TRUE;
}

/* Opens a section for reading: 1 if it exists, 0 if not. */
static int reading(TBRW_SECTION_IDENTIFIER s) {
    TBRW_U32 r;
    section_step("reading", s);
    r = TBRW_reading_section(h, s);
    if (r == TBRW_SECTION_NOT_EXIST) return 0;
    CALL(r);
    return 1;
}
static int reading_stream(TBRW_U32 n, TBRW_STREAM_SECTION_IDENTIFIER s) {
    TBRW_U32 r;
    stream_step("reading", n, (int)s);
    r = TBRW_reading_stream_section(h, n, s);
    if (r == TBRW_SECTION_NOT_EXIST) return 0;
    CALL(r);
    return 1;
}

int main(int argc, char **argv) {
    wchar_t *w = NULL;
    char *dir, *data_name;
    const char *paths[2], *in, *dump;
    int force;
    struct buf p = {0, 0, 0};
    TBRW_U32 streams = 0, n, i, j, k, l, need = 0, r;
    FILE *f;
    prog = "tbrw_reader";
    parse_in_out(argc, argv, "usage: tbrw_reader IN.tb5 OUT.dat [-f|--force]", paths, &force);
    in = paths[0];
    dump = paths[1];
    data_name = (char *)xmalloc(strlen(base_name(in)) + 5);
    sprintf(data_name, "%s.dat", base_name(in));
    dir = dir_name(dump);
    data_path = (char *)xmalloc(strlen(dir) + strlen(data_name) + 1);
    sprintf(data_path, "%s%s", dir, data_name);
    if (same_file(dump, data_path)) {
        fprintf(stderr, "%s: %s is where the data file of %s goes: name the dump differently\n", prog, dump, in);
        return 1;
    }
    check_output(dump, in, force);
    check_output(data_path, in, force);

    subject = in;
    step = "opening it";
    CALL(TBRW_convert_utf8_to_wcs_malloced(in, &w));
    CALL(TBRW_open(&h, w, TBRW_FILE_READ));
    free(w);
    step = "verifying it";
    CALL(TBRW_verify(h));

    data_out = fopen(data_path, "wb");
    if (!data_out) fail_at(data_path, "cannot create", errno);

    put(&out, DAT_MAGIC, 8);
    u32(&out, 1);
    u32(&out, (TBRW_U32)strlen(data_name));
    put(&out, data_name, strlen(data_name));

    if (reading(TBRW_HARDWARE_SECTION)) {
        TBRW_SYSTEM *sys;
        r = TBRW_get_system(h, 0, NULL, &need);
        if (r != TBRW_BUFFER_TOO_SMALL) die(r);
        sys = (TBRW_SYSTEM *)xmalloc(need);
        CALL(TBRW_get_system(h, need, sys, NULL));
        p.len = 0;
        u32(&p, sys->system_num_nodes);
        for (i = 0; i < sys->system_num_nodes; i++) {
            TBRW_NODE *nd = &sys->node_array[i];
            u32(&p, nd->node_type_from_shell);
            u32(&p, nd->node_id);
            u32(&p, nd->node_num_available);
            u32(&p, nd->node_num_used);
            u32(&p, nd->reserved);
            u64(&p, nd->node_physical_memory);
            u32(&p, nd->node_num_available);
            for (j = 0; j < nd->node_num_available; j++) {
                TBRW_CPU *c = &nd->cpu_array[j];
                u32(&p, c->cpu_number);
                u32(&p, c->cpu_native_arch_type);
                u32(&p, c->cpu_intel_processor_number);
                u32(&p, c->cpu_speed_mhz);
                u32(&p, c->cpu_fsb_mhz);
                u32(&p, c->cpu_cache_L2);
                u32(&p, c->cpu_cache_L3);
                u64(&p, (TBRW_U64)c->cpu_tsc_offset);
                u16(&p, c->cpu_package_num);
                u16(&p, c->cpu_core_num);
                u16(&p, c->cpu_hardware_thread_num);
                u16(&p, c->cpu_threads_per_core);
                /* The count is the low 16 bits: VTune 2025 keeps a hybrid CPU's core type above them. */
                u32(&p, c->num_cpu_arch_array & 0xFFFFu);
                for (k = 0; k < (c->num_cpu_arch_array & 0xFFFFu); k++) {
                    TBRW_CPU_ARCH *a = &c->cpu_arch_array[k];
                    u16(&p, a->arch_type);
                    u16(&p, a->arch_num_cpuid);
                    u8(&p, a->arch_type == TBRW_GST_ITANIUM);
                    for (l = 0; l < a->arch_num_cpuid; l++) {
                        if (a->arch_type == TBRW_GST_ITANIUM) {
                            u64(&p, a->cpuid_ia64_array[l].cpuid_select);
                            u64(&p, a->cpuid_ia64_array[l].cpuid_val);
                            u64(&p, a->cpuid_ia64_array[l].reserved);
                        } else {
                            TBRW_CPUID_IA32 *x = &a->cpuid_ia32_array[l];
                            u32(&p, x->cpuid_eax_input);
                            u32(&p, x->cpuid_eax);
                            u32(&p, x->cpuid_ebx);
                            u32(&p, x->cpuid_ecx);
                            u32(&p, x->cpuid_edx);
                            u32(&p, x->reserved);
                        }
                    }
                }
            }
        }
        free(sys);
        record(TAG_HARDWARE, NO_STREAM, &p);
        CALL(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
    }
    if (reading(TBRW_SOFTWARE_SECTION)) {
        TBRW_HOST host;
        TBRW_OS os;
        TBRW_APPLICATION app;
        TBRW_U32 rh = TBRW_get_host(h, sizeof host, &host, NULL), ro = TBRW_get_os(h, sizeof os, &os, NULL),
                 ra = TBRW_get_application(h, sizeof app, &app, NULL);
        if (rh != TBRW_SUCCESS && rh != TBRW_ENTRY_NOT_FOUND) die(rh);
        if (ro != TBRW_SUCCESS && ro != TBRW_ENTRY_NOT_FOUND) die(ro);
        if (ra != TBRW_SUCCESS && ra != TBRW_ENTRY_NOT_FOUND) die(ra);
        p.len = 0;
        u32(&p, (rh == TBRW_SUCCESS) | (ro == TBRW_SUCCESS) << 1 | (ra == TBRW_SUCCESS) << 2);
        if (rh == TBRW_SUCCESS) {
            u32(&p, host.reserved);
            str(&p, host.host_ip_address);
            str(&p, host.host_name);
        }
        if (ro == TBRW_SUCCESS) {
            u32(&p, os.os_platform);
            u32(&p, os.os_major);
            u32(&p, os.os_minor);
            u32(&p, os.os_build);
            u32(&p, os.os_extra);
            str(&p, os.os_name);
            str(&p, os.os_name_extra);
        }
        if (ra == TBRW_SUCCESS) {
            u32(&p, app.app_reserved);
            u32(&p, app.app_page_size);
            u32(&p, app.app_alloc_granularity);
            u64(&p, app.app_min_app_addr);
            u64(&p, app.app_max_app_addr);
        }
        record(TAG_SOFTWARE, NO_STREAM, &p);
        CALL(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
    }
    if (reading(TBRW_VERSION_INFO_SECTION)) {
        TBRW_VERSION_INFO v;
        CALL(TBRW_get_version_info(h, sizeof v, &v, NULL));
        p.len = 0;
        u32(&p, v.sampling_driver_version);
        u32(&p, v.bind_version);
        u32(&p, v.sample_file_version);
        record(TAG_VERSION, NO_STREAM, &p);
        CALL(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    }
    if (reading(TBRW_PROCESS_THREAD_SECTION)) {
        struct counted pids = {{0, 0, 0}, 0}, tids = {{0, 0, 0}, 0};
        CALL(TBRW_enumerate_processes(h, pids_cb, &pids, 0));
        CALL(TBRW_enumerate_threads(h, tids_cb, &tids, 0));
        p.len = 0;
        u64(&p, pids.n);
        if (pids.b.len) put(&p, pids.b.b, pids.b.len);
        u64(&p, tids.n);
        if (tids.b.len) put(&p, tids.b.b, tids.b.len);
        free(pids.b.b);
        free(tids.b.b);
        record(TAG_PROCESS_THREAD, NO_STREAM, &p);
        CALL(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
    }
    if (reading(TBRW_MODULE_SECTION)) {
        struct counted mods = {{0, 0, 0}, 0};
        CALL(TBRW_enumerate_modules(h, modules_cb, &mods, 0));
        p.len = 0;
        u64(&p, mods.n);
        if (mods.b.len) put(&p, mods.b.b, mods.b.len);
        free(mods.b.b);
        record(TAG_MODULES, NO_STREAM, &p);
        CALL(TBRW_done_section(h, TBRW_MODULE_SECTION));
    }
    if (reading(TBRW_USER_DEFINED_GLOBAL_SECTION)) {
        r = TBRW_get_user_defined_global(h, 0, NULL, &need);
        if (r != TBRW_SUCCESS && r != TBRW_BUFFER_TOO_SMALL) die(r);
        p.len = 0;
        if (need) {
            unsigned char *b = (unsigned char *)xmalloc(need);
            CALL(TBRW_get_user_defined_global(h, need, b, NULL));
            put(&p, b, need);
            free(b);
        }
        record(TAG_USER_GLOBAL, NO_STREAM, &p);
        CALL(TBRW_done_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    }

    step = "counting its streams";
    CALL(TBRW_get_number_data_streams(h, &streams));
    for (n = 0; n < streams; n++) {
        stream_step("reading", n, -1);
        CALL(TBRW_reading_stream(h, n));
        record(TAG_STREAM, n, NULL);
        if (reading_stream(n, TBRW_STREAM_INFO_SECTION)) {
            TBRW_STREAM_INFO si;
            CALL(TBRW_get_stream_info(h, n, sizeof si, &si, NULL));
            p.len = 0;
            u32(&p, si.sampling_duration);
            u32(&p, si.stream_type);
            u32(&p, si.sampling_interval);
            u64(&p, ((TBRW_U64)si.sampling_start_time.dwHighDateTime << 32) | si.sampling_start_time.dwLowDateTime);
            u64(&p, ((TBRW_U64)si.sampling_end_time.dwHighDateTime << 32) | si.sampling_end_time.dwLowDateTime);
            str(&p, si.command_line);
            str(&p, si.cpu_mask);
            str(&p, si.comment);
            record(TAG_STREAM_INFO, n, &p);
            CALL(TBRW_done_stream_section(h, n, TBRW_STREAM_INFO_SECTION));
        }
        if (reading_stream(n, TBRW_EVENT_DESCRIPTION_SECTION)) {
            struct counted c = {{0, 0, 0}, 0};
            CALL(TBRW_enumerate_events(h, n, events_cb, &c, 0));
            p.len = 0;
            u32(&p, (TBRW_U32)c.n);
            if (c.b.len) put(&p, c.b.b, c.b.len);
            free(c.b.b);
            record(TAG_EVENTS, n, &p);
            CALL(TBRW_done_stream_section(h, n, TBRW_EVENT_DESCRIPTION_SECTION));
        }
        record_size = 0;
        if (reading_stream(n, TBRW_DATA_DESCRIPTION_SECTION)) {
            struct counted c = {{0, 0, 0}, 0};
            CALL(TBRW_enumerate_data_descriptor_entries(h, n, descs_cb, &c));
            /* The record size as the library reads the descriptor. */
            CALL(TBRW_get_size_of_each_data_entry(h, n, &record_size));
            p.len = 0;
            u32(&p, (TBRW_U32)c.n);
            if (c.b.len) put(&p, c.b.b, c.b.len);
            free(c.b.b);
            record(TAG_DESCRIPTOR, n, &p);
            CALL(TBRW_done_stream_section(h, n, TBRW_DATA_DESCRIPTION_SECTION));
        }
        if (reading_stream(n, TBRW_USER_DEFINED_STREAM_SECTION)) {
            r = TBRW_get_user_defined_stream(h, n, 0, NULL, &need);
            if (r != TBRW_SUCCESS && r != TBRW_BUFFER_TOO_SMALL) die(r);
            p.len = 0;
            if (need) {
                unsigned char *b = (unsigned char *)xmalloc(need);
                CALL(TBRW_get_user_defined_stream(h, n, need, b, NULL));
                put(&p, b, need);
                free(b);
            }
            record(TAG_USER_STREAM, n, &p);
            CALL(TBRW_done_stream_section(h, n, TBRW_USER_DEFINED_STREAM_SECTION));
        }
        if (reading_stream(n, TBRW_DATA_SECTION)) {
            TBRW_U64 at = data_at, count = 0;
            CALL(TBRW_enumerate_data(h, n, data_cb, &count, 0));
            p.len = 0;
            u32(&p, record_size);
            u64(&p, count);
            u64(&p, at);
            record(TAG_DATA, n, &p);
            CALL(TBRW_done_stream_section(h, n, TBRW_DATA_SECTION));
        } else if (record_size > 0) {
            /* A descriptor and no data section: a stream written with no
             * records (Intel's layout has no section of no bytes). */
            p.len = 0;
            u32(&p, record_size);
            u64(&p, 0);
            u64(&p, data_at);
            record(TAG_DATA, n, &p);
        }
        record(TAG_STREAM_END, n, NULL);
        stream_step("reading", n, -1);
        CALL(TBRW_done_stream(h, n));
    }
    record(TAG_END, NO_STREAM, NULL);
    step = "closing it";
    CALL(TBRW_close(h));
    h = NULL;
    if (fclose(data_out) != 0) fail_at(data_path, "cannot write", errno);
    f = fopen(dump, "wb");
    if (!f) fail_at(dump, "cannot create", errno);
    if (fwrite(out.b, 1, out.len, f) != out.len || fclose(f) != 0) fail_at(dump, "cannot write", errno);
    printf("wrote %s and %s\n", dump, data_path);
    free(out.b);
    free(p.b);
    free(dir);
    free(data_path);
    free(data_name);
    return 0;
}
