/* A file without a process/thread section, bound
 * read-only: the tables the bind generates (guide 6.2) are read through the
 * ordinary section calls while the in-memory bind exists, and are gone again
 * after TBRW_unbind. Usage: bind_tables FILE.tb5 */
#include "check.h"

static void write_file(const wchar_t *name) {
    TBRW_PTR h = NULL;
    TBRW_SAMPREC_DESC_ENTRY d;
    unsigned i;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    for (i = 0; i < 2; i++) {
        TBRW_MODULE m;
        memset(&m, 0, sizeof m);
        m.module_size = sizeof m;
        m.module_load_address = 0x400000;
        m.module_length = 0x1000;
        m.module_associated_pid = 10 + 10 * i;
        m.module_unload_tsc = (TBRW_U64)-1;
        m.module_segment_type = TBRW_MODE_64BIT;
        m.module_flags = TBRW_MODULE_TSC_USED | TBRW_MODULE_LOADED | TBRW_MODULE_IS_EXE;
        m.module_name.soi_ptr = (TBRW_CHAR *)(i == 0 ? L"a.out" : L"b.out");
        m.module_path.soi_ptr = m.module_name.soi_ptr;
        OK(TBRW_add_module(h, &m));
    }
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_writing_stream(h, 0));
    {
        TBRW_STREAM_INFO si;
        TBRW_EVENT e;
        memset(&si, 0, sizeof si);
        si.stream_info_size = sizeof si;
        si.stream_type = TBRW_SAMPLING_STREAM;
        OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        OK(TBRW_set_stream_info(h, 0, &si));
        OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        memset(&e, 0, sizeof e);
        e.event_size = sizeof e;
        e.event_flags = TBRW_EVENT_EBS;
        e.event_name.soi_ptr = (TBRW_CHAR *)L"Clockticks";
        OK(TBRW_writing_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
        OK(TBRW_add_event(h, 0, &e));
        OK(TBRW_done_stream_section(h, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    }
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.desc_data_size = sizeof(TBRW_SampleRecordPC);
    d.desc_type = ST_LEGACY_SAMPLE_RECORD;
    d.desc_name.soi_ptr = (TBRW_CHAR *)L"SampleRecord";
    OK(TBRW_add_data_descriptor_entry(h, 0, &d));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    for (i = 0; i < 30; i++) {
        TBRW_SampleRecordPC s;
        memset(&s, 0, sizeof s);
        s.codeMode = TBRW_MODE_64BIT;
        s.iip = 0x400010 + i;
        s.pidRecIndexRaw = 1;
        s.pidRecIndex = i % 2 ? 20 : 10;
        s.tidIsRaw = 1;
        s.tid = 100 + i % 3;
        OK(TBRW_add_data(h, 0, sizeof s, &s));
    }
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_close(h));
}

static unsigned pids_seen, tids_seen;

static TBRW_U32 pid_cb(TBRW_PID *p, TBRW_U32 size, TBRW_U32 n, void *user) {
    TBRW_U32 k;
    (void)user;
    ASSERT(size == n * sizeof(TBRW_PID));
    for (k = 0; k < n; k++) ASSERT(p[k].pid_id == 10 + 10 * (pids_seen + k));
    pids_seen += n;
    return TRUE;
}

static TBRW_U32 tid_cb(TBRW_TID *t, TBRW_U32 size, TBRW_U32 n, void *user) {
    TBRW_U32 k;
    (void)user;
    ASSERT(size == n * sizeof(TBRW_TID));
    for (k = 0; k < n; k++) ASSERT(t[k].tid_associated_pid == 10 || t[k].tid_associated_pid == 20);
    tids_seen += n;
    return TRUE;
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *name;
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.tb5\n", argv[0]);
        return 2;
    }
    name = wide_path(argv[1]);
    write_file(name);

    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    EXPECT(TBRW_reading_section(h, TBRW_PROCESS_THREAD_SECTION), TBRW_SECTION_NOT_EXIST);
    OK(TBRW_dobind(h, 0));
    OK(TBRW_reading_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_enumerate_processes(h, pid_cb, NULL, 0));
    OK(TBRW_enumerate_threads(h, tid_cb, NULL, 0));
    ASSERT(pids_seen == 2 && tids_seen == 6);
    OK(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_unbind(h, 0));
    EXPECT(TBRW_reading_section(h, TBRW_PROCESS_THREAD_SECTION), TBRW_SECTION_NOT_EXIST);
    OK(TBRW_close(h));
    free(name);
    printf("bind tables: ok\n");
    return 0;
}
