/* Shared by enumerate_guide.c and enumerate_intel.c: a file with something
 * in every section an enumeration reads, and callbacks that print what
 * they are handed, so that the two calling conventions can be compared by
 * their output. The callbacks are the same functions in both programs:
 * only the way they are passed differs. Valid C11 and C++. */
#ifndef TBRW_TEST_ENUM_DUMP_H
#define TBRW_TEST_ENUM_DUMP_H

#include "check.h"

#define DUMP_SAMPLES 300

/* What a callback needs besides its entries: the handle (for strings). */
typedef struct {
    TBRW_PTR h;
    unsigned calls;
} dump_ctx;

static inline void dump_write_file(const wchar_t *name) {
    TBRW_PTR h = NULL;
    TBRW_U32 i;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    for (i = 0; i < 5; i++) {
        TBRW_MODULE m;
        memset(&m, 0, sizeof m);
        m.module_size = sizeof m;
        m.module_associated_pid = i < 3 ? 10 : 20;
        m.module_load_address = 0x400000 + 0x10000 * (i % 3);
        m.module_length = 0x8000;
        m.module_unload_tsc = (TBRW_U64)-1;
        m.module_flags = TBRW_MODULE_LOADED | (i % 3 == 0 ? TBRW_MODULE_IS_EXE : 0);
        m.module_name.soi_ptr = (TBRW_CHAR *)(i == 0 ? L"a.out" : i == 3 ? L"b.out" : L"lib.so");
        m.module_path.soi_ptr = m.module_name.soi_ptr;
        OK(TBRW_add_module(h, &m));
    }
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_writing_section(h, TBRW_PROCESS_THREAD_SECTION));
    for (i = 0; i < 2; i++) {
        TBRW_PID p;
        TBRW_TID t;
        memset(&p, 0, sizeof p);
        p.pid_size = sizeof p;
        p.pid_id = 10 + 10 * i;
        p.pid_name.soi_ptr = (TBRW_CHAR *)(i == 0 ? L"a.out" : L"b.out");
        OK(TBRW_add_process(h, &p));
        memset(&t, 0, sizeof t);
        t.tid_size = sizeof t;
        t.tid_associated_pid = p.pid_id;
        t.tid_id = 100 + i;
        t.tid_name.soi_ptr = (TBRW_CHAR *)L"main";
        OK(TBRW_add_thread(h, &t));
    }
    OK(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));

    OK(TBRW_writing_stream(h, 0));
    {
        TBRW_STREAM_INFO si;
        TBRW_EVENT ev;
        TBRW_EVENT_DETAIL d;
        memset(&si, 0, sizeof si);
        si.stream_info_size = sizeof si;
        si.stream_type = TBRW_SAMPLING_STREAM;
        OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        OK(TBRW_set_stream_info(h, 0, &si));
        OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        OK(TBRW_writing_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
        for (i = 0; i < 3; i++) {
            memset(&ev, 0, sizeof ev);
            memset(&d, 0, sizeof d);
            d.detail_size = sizeof d;
            d.detail_value = 0xffe17b80 + i;
            ev.event_size = sizeof ev;
            ev.event_id = i;
            ev.event_sav = 1000000 * (i + 1);
            ev.event_name.soi_ptr = (TBRW_CHAR *)(i == 0 ? L"Clockticks" : i == 1 ? L"Instructions" : L"Misses");
            ev.event_num_details = 1;
            ev.event_detail_array = &d;
            OK(TBRW_add_event(h, 0, &ev));
        }
        OK(TBRW_done_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    }
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    {
        TBRW_SAMPREC_DESC_ENTRY pc, tsc;
        memset(&pc, 0, sizeof pc);
        pc.desc_size = sizeof pc;
        pc.desc_type = ST_LEGACY_SAMPLE_RECORD;
        pc.desc_data_size = 32;
        pc.desc_name.soi_ptr = (TBRW_CHAR *)L"SampleRecord";
        tsc = pc;
        tsc.desc_type = ST_TIME_STAMP;
        tsc.desc_subtype = SST_TSC;
        tsc.desc_data_size = 8;
        tsc.desc_name.soi_ptr = (TBRW_CHAR *)L"TSC";
        OK(TBRW_add_data_descriptor_entry(h, 0, &pc));
        OK(TBRW_add_data_descriptor_entry(h, 0, &tsc));
    }
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    for (i = 0; i < DUMP_SAMPLES; i++) {
        TBRW_SampleRecordPC s;
        TBRW_U64 tsc = 5000 + i;
        memset(&s, 0, sizeof s);
        s.eip = 0x400000 + 0x10000 * (i % 4) + 4 * i; /* every fourth outside any module */
        s.eventIndex = i % 3;
        s.pidRecIndexRaw = 1;
        s.pidRecIndex = i % 5 == 0 ? 20 : 10;
        s.tid = 100 + i % 2;
        OK(TBRW_add_data(h, 0, sizeof s, &s));
        OK(TBRW_add_data(h, 0, sizeof tsc, &tsc));
    }
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_dobind(h, 0)); /* bound at close */
    OK(TBRW_close(h));
}

static TBRW_U32 dump_data(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    const unsigned char *p = (const unsigned char *)data;
    TBRW_U32 k;
    ASSERT(size == n * 40);
    printf("data chunk %u: %u records\n", c->calls++, n);
    for (k = 0; k < n; k++) {
        TBRW_SampleRecordPC s;
        TBRW_U64 tsc;
        memcpy(&s, p + 40 * k, sizeof s);
        memcpy(&tsc, p + 40 * k + 32, sizeof tsc);
        printf("  eip %#x event %u pid %u tid %u tsc %llu\n", s.eip, (unsigned)s.eventIndex, s.pidRecIndex, s.tid,
               (unsigned long long)tsc);
    }
    return TRUE;
}

static TBRW_U32 dump_module(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    TBRW_U32 k;
    ASSERT(size == n * sizeof *m);
    printf("module chunk %u: %u modules\n", c->calls++, n);
    for (k = 0; k < n; k++)
        printf("  %ls pid %u at %#llx +%#llx flags %#x\n", text_of(c->h, m[k].module_name), m[k].module_associated_pid,
               (unsigned long long)m[k].module_load_address, (unsigned long long)m[k].module_length,
               m[k].module_flags);
    return TRUE;
}

static TBRW_U32 dump_pid(TBRW_PID *p, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    TBRW_U32 k;
    ASSERT(size == n * sizeof *p);
    printf("process chunk %u: %u processes\n", c->calls++, n);
    for (k = 0; k < n; k++) printf("  pid %u %ls\n", p[k].pid_id, text_of(c->h, p[k].pid_name));
    return TRUE;
}

static TBRW_U32 dump_tid(TBRW_TID *t, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    TBRW_U32 k;
    ASSERT(size == n * sizeof *t);
    printf("thread chunk %u: %u threads\n", c->calls++, n);
    for (k = 0; k < n; k++) printf("  tid %u of pid %u %ls\n", t[k].tid_id, t[k].tid_associated_pid, text_of(c->h, t[k].tid_name));
    return TRUE;
}

static TBRW_U32 dump_event(TBRW_EVENT *e, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    (void)size;
    ASSERT(n == 1 && e->event_num_details == 1);
    printf("event %u: id %u %ls sav %llu detail %#llx\n", c->calls++, e->event_id, text_of(c->h, e->event_name),
           (unsigned long long)e->event_sav, (unsigned long long)e->event_detail_array[0].detail_value);
    return TRUE;
}

static TBRW_U32 dump_desc(TBRW_SAMPREC_DESC_ENTRY *d, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    TBRW_U32 k;
    ASSERT(size == n * sizeof *d);
    printf("descriptor chunk %u: %u entries\n", c->calls++, n);
    for (k = 0; k < n; k++)
        printf("  type %u subtype %u offset %u size %u %ls\n", d[k].desc_type, d[k].desc_subtype, d[k].desc_offset,
               d[k].desc_data_size, text_of(c->h, d[k].desc_name));
    return TRUE;
}

static TBRW_U32 dump_bind_data(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *b,
                               TBRW_U32 bsize, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    const unsigned char *p = (const unsigned char *)data;
    TBRW_U64 k;
    ASSERT(size == n * 40 && bsize == n * sizeof *b);
    printf("bound data chunk %u: %llu records\n", c->calls++, (unsigned long long)n);
    for (k = 0; k < n; k++) {
        TBRW_U32 eip;
        memcpy(&eip, p + 40 * k, sizeof eip);
        printf("  eip %#x module %lld process %llu thread %llu\n", eip, (long long)b[k].module_index,
               (unsigned long long)b[k].pid_index, (unsigned long long)b[k].tid_index);
    }
    return TRUE;
}

static TBRW_U32 dump_bind_module(const TBRW_MODULE *m, TBRW_U32 size, TBRW_U64 n, const MODULE_BIND_STRUCT *b,
                                 TBRW_U32 bsize, void *user) {
    dump_ctx *c = (dump_ctx *)user;
    TBRW_U64 k;
    ASSERT(size == n * sizeof *m && bsize == n * sizeof *b);
    printf("bound module chunk %u: %llu modules\n", c->calls++, (unsigned long long)n);
    for (k = 0; k < n; k++)
        printf("  %ls at %#llx: process %llu\n", text_of(c->h, m[k].module_name),
               (unsigned long long)m[k].module_load_address, (unsigned long long)b[k].pid_index);
    return TRUE;
}

static TBRW_U32 dump_bind_tid(const TBRW_TID *t, TBRW_U32 size, TBRW_U64 n, const TID_BIND_STRUCT *b, TBRW_U32 bsize,
                              void *user) {
    dump_ctx *c = (dump_ctx *)user;
    TBRW_U64 k;
    ASSERT(size == n * sizeof *t && bsize == n * sizeof *b);
    printf("bound thread chunk %u: %llu threads\n", c->calls++, (unsigned long long)n);
    for (k = 0; k < n; k++)
        printf("  tid %u of pid %u: process %llu\n", t[k].tid_id, t[k].tid_associated_pid,
               (unsigned long long)b[k].pid_index);
    return TRUE;
}

/* Stops after the first chunk: the enumeration ends there. */
static TBRW_U32 dump_first_only(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    dump_data(data, size, n, user);
    return FALSE;
}

/* The callback arguments of every enumeration: the same type in both
 * header styles (TBRW_DATA_CALLBACK * and so on), which is a pointer to the
 * function with the guide's header and a pointer to a function pointer
 * with Intel's. */
typedef struct {
    TBRW_DATA_CALLBACK *data;
    TBRW_DATA_CALLBACK *first_only;
    TBRW_MODULE_CALLBACK *module;
    TBRW_PID_CALLBACK *pid;
    TBRW_TID_CALLBACK *tid;
    TBRW_EVENT_CALLBACK *event;
    TBRW_DATA_DESC_CALLBACK *desc;
    BIND_DATA_CALLBACK *bind_data;
    BIND_MODULE_CALLBACK *bind_module;
    BIND_TID_CALLBACK *bind_tid;
} dump_callbacks;

/* Every enumeration of the file, each callback printing what it gets. */
static void dump_all(TBRW_PTR h, const dump_callbacks *cb) {
    dump_ctx c;
    c.h = h;
    c.calls = 0;
    OK(TBRW_reading_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_enumerate_modules(h, cb->module, &c, 0));
    OK(TBRW_enumerate_modules(h, cb->module, &c, 3));
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_reading_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_enumerate_processes(h, cb->pid, &c, 0));
    OK(TBRW_enumerate_threads(h, cb->tid, &c, 1));
    OK(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_reading_stream(h, 0));
    OK(TBRW_reading_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_enumerate_events(h, 0, cb->event, &c, 0));
    OK(TBRW_done_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_reading_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_enumerate_data_descriptor_entries(h, 0, cb->desc, &c));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_reading_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_enumerate_data(h, 0, cb->data, &c, 0));
    OK(TBRW_enumerate_data(h, 0, cb->first_only, &c, DUMP_SAMPLES - 3));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_bind_enumerate_data(h, 0, cb->bind_data, &c, 0));
    OK(TBRW_bind_enumerate_modules(h, cb->bind_module, &c, 0));
    OK(TBRW_bind_enumerate_threads(h, cb->bind_tid, &c, 0));
    OK(TBRW_bind_enumerate_tids(h, cb->bind_tid, &c, 1));
    printf("dump: %u callbacks\n", c.calls);
}

#endif
