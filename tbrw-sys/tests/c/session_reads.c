/* Guide 5, step 3: reading and writing tasks on one open file in any
 * order. With read permission, a global section or a stream finished with
 * its done_ call is read back before the file is closed (enumerations,
 * get_ and get_one_ functions, strings), in a new file and in an append
 * session; without read permission that is TBRW_INVALID_ACCESS_PERMS. A
 * section finished while another stream's data section holds the file's
 * tail is readable too, and both end up in the file intact. A callback
 * that aborts the session mid-enumeration still reads its records.
 * Usage: session_reads FOLDER */
#include "check.h"

/* Records of 16 bytes: ST_IP (8), ST_PID (4), ST_TID (4). */
typedef struct {
    TBRW_U64 ip;
    TBRW_U32 pid, tid;
} record;

static wchar_t *path_in(const char *dir, const char *name) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return wide_path(buf);
}

static void add_records(TBRW_PTR h, TBRW_U32 stream, TBRW_U64 base, TBRW_U32 from, TBRW_U32 to) {
    TBRW_U32 i;
    for (i = from; i < to; i++) {
        record r;
        memset(&r, 0, sizeof r);
        r.ip = base + i;
        r.pid = 10;
        r.tid = 100 + i % 2;
        OK(TBRW_add_data(h, stream, sizeof r, &r));
    }
}

/* Stream info (with a comment), one event and the descriptor of `record`. */
static void stream_sections(TBRW_PTR h, TBRW_U32 stream, const wchar_t *comment) {
    static const TBRW_U16 types[3] = {ST_IP, ST_PID, ST_TID};
    static const TBRW_U32 sizes[3] = {8, 4, 4};
    TBRW_STREAM_INFO si;
    TBRW_EVENT ev;
    int k;
    memset(&si, 0, sizeof si);
    si.stream_info_size = sizeof si;
    si.stream_type = TBRW_SAMPLING_STREAM;
    si.sampling_interval = 1000 + stream;
    si.comment.soi_ptr = (TBRW_CHAR *)comment;
    OK(TBRW_writing_stream_section(h, stream, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_set_stream_info(h, stream, &si));
    OK(TBRW_done_stream_section(h, stream, TBRW_STREAM_INFO_SECTION));
    memset(&ev, 0, sizeof ev);
    ev.event_size = sizeof ev;
    ev.event_id = 7;
    ev.event_name.soi_ptr = (TBRW_CHAR *)L"Clockticks";
    OK(TBRW_writing_stream_section(h, stream, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_add_event(h, stream, &ev));
    OK(TBRW_done_stream_section(h, stream, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, stream, TBRW_DATA_DESCRIPTION_SECTION));
    for (k = 0; k < 3; k++) {
        TBRW_SAMPREC_DESC_ENTRY d;
        memset(&d, 0, sizeof d);
        d.desc_size = sizeof d;
        d.desc_type = types[k];
        d.desc_data_size = sizes[k];
        OK(TBRW_add_data_descriptor_entry(h, stream, &d));
    }
    OK(TBRW_done_stream_section(h, stream, TBRW_DATA_DESCRIPTION_SECTION));
}

/* A whole stream: its sections and `n` records from `base`. */
static void write_stream(TBRW_PTR h, TBRW_U32 stream, TBRW_U64 base, TBRW_U32 n, const wchar_t *comment) {
    OK(TBRW_writing_stream(h, stream));
    stream_sections(h, stream, comment);
    OK(TBRW_writing_stream_section(h, stream, TBRW_DATA_SECTION));
    add_records(h, stream, base, 0, n);
    OK(TBRW_done_stream_section(h, stream, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, stream));
}

static void write_modules(TBRW_PTR h) {
    static const wchar_t *names[3] = {L"a.out", L"libfirst.so", L"libsecond.so"};
    int i;
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    for (i = 0; i < 3; i++) {
        TBRW_MODULE m;
        memset(&m, 0, sizeof m);
        m.module_size = sizeof m;
        m.module_associated_pid = 10;
        m.module_load_address = 0x400000 + 0x100000 * i;
        m.module_length = 0x1000;
        m.module_unload_tsc = (TBRW_U64)-1;
        m.module_flags = TBRW_MODULE_LOADED | (i == 0 ? TBRW_MODULE_IS_EXE : 0);
        m.module_name.soi_ptr = (TBRW_CHAR *)names[i];
        m.module_path.soi_ptr = (TBRW_CHAR *)names[i];
        OK(TBRW_add_module(h, &m));
    }
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
}

/* What enumerations saw. */
typedef struct {
    TBRW_PTR h;
    TBRW_U64 base;
    TBRW_U64 records;
    unsigned modules, events;
    int abort_inside;
} seen;

static TBRW_U32 on_module(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    seen *s = (seen *)user;
    TBRW_U32 k;
    (void)size;
    for (k = 0; k < n; k++, s->modules++) {
        static const wchar_t *names[3] = {L"a.out", L"libfirst.so", L"libsecond.so"};
        ASSERT(m[k].module_load_address == 0x400000 + 0x100000 * s->modules);
        ASSERT(wcscmp(text_of(s->h, m[k].module_name), names[s->modules]) == 0);
    }
    return TRUE;
}

static TBRW_U32 on_event(TBRW_EVENT *e, TBRW_U32 size, TBRW_U32 n, void *user) {
    seen *s = (seen *)user;
    (void)size;
    ASSERT(n == 1 && e->event_id == 7 && wcscmp(text_of(s->h, e->event_name), L"Clockticks") == 0);
    s->events++;
    return TRUE;
}

static TBRW_U32 on_data(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    seen *s = (seen *)user;
    const record *r = (const record *)data;
    TBRW_U32 k;
    ASSERT(size == n * sizeof(record));
    if (s->abort_inside) OK(TBRW_abort_cleanup_and_close(s->h));
    /* Read after an abort too: the records stay mapped while handed out. */
    for (k = 0; k < n; k++, s->records++) ASSERT(r[k].ip == s->base + s->records && r[k].pid == 10);
    return TRUE;
}

/* Reads stream `stream` of the open handle: `n` records from `base`. */
static void read_stream(TBRW_PTR h, TBRW_U32 stream, TBRW_U64 base, TBRW_U64 n, const wchar_t *comment) {
    seen s;
    TBRW_STREAM_INFO si;
    memset(&s, 0, sizeof s);
    s.h = h;
    s.base = base;
    OK(TBRW_reading_stream(h, stream));
    EXPECT(TBRW_reading_stream(h, stream), TBRW_STREAM_ALREADY_IN_USE);
    EXPECT(TBRW_reading_stream_section(h, stream, TBRW_USER_DEFINED_STREAM_SECTION), TBRW_SECTION_NOT_EXIST);
    EXPECT(TBRW_enumerate_data(h, stream, on_data, &s, 0), TBRW_SECTION_NOT_READABLE);
    OK(TBRW_reading_stream_section(h, stream, TBRW_DATA_SECTION));
    OK(TBRW_reading_stream_section(h, stream, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_reading_stream_section(h, stream, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_enumerate_data(h, stream, on_data, &s, 0));
    ASSERT(s.records == n);
    OK(TBRW_enumerate_events(h, stream, on_event, &s, 0));
    ASSERT(s.events == 1);
    OK(TBRW_get_stream_info(h, stream, sizeof si, &si, NULL));
    ASSERT(si.sampling_interval == 1000 + stream && wcscmp(text_of(h, si.comment), comment) == 0);
    EXPECT(TBRW_done_stream(h, stream), TBRW_STREAM_SECTION_NOT_CLOSED);
    OK(TBRW_done_stream_section(h, stream, TBRW_DATA_SECTION));
    OK(TBRW_done_stream_section(h, stream, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_done_stream_section(h, stream, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_done_stream(h, stream));
    EXPECT(TBRW_done_stream(h, stream), TBRW_STREAM_NOT_EXIST);
}

static void read_modules(TBRW_PTR h) {
    seen s;
    const TBRW_MODULE *m = NULL;
    memset(&s, 0, sizeof s);
    s.h = h;
    /* get_one_module needs no open section. */
    OK(TBRW_get_one_module(h, 2, &m));
    ASSERT(m->module_load_address == 0x600000 && wcscmp(text_of(h, m->module_name), L"libsecond.so") == 0);
    OK(TBRW_reading_section(h, TBRW_MODULE_SECTION));
    EXPECT(TBRW_reading_section(h, TBRW_MODULE_SECTION), TBRW_SECTION_ALREADY_IN_USE);
    OK(TBRW_enumerate_modules(h, on_module, &s, 0));
    ASSERT(s.modules == 3);
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
}

/* A new file, READ | WRITE. */
static void new_file(const wchar_t *name) {
    TBRW_PTR h = NULL;
    TBRW_U32 n = 0, used = 0;
    TBRW_VERSION_INFO vi;
    const TBRW_PID *p = NULL;
    char user[6] = "hello";
    char back[6];
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    /* Nothing yet: absent, not forbidden. */
    EXPECT(TBRW_reading_section(h, TBRW_MODULE_SECTION), TBRW_SECTION_NOT_EXIST);
    EXPECT(TBRW_reading_stream(h, 0), TBRW_STREAM_NOT_EXIST);
    write_modules(h);
    read_modules(h);
    read_modules(h); /* again, after done_section */

    /* A section being written is in use, not readable. */
    memset(&vi, 0, sizeof vi);
    vi.version_info_size = sizeof vi;
    vi.sample_file_version = 16;
    vi.bind_version = 5;
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    EXPECT(TBRW_reading_section(h, TBRW_VERSION_INFO_SECTION), TBRW_SECTION_ALREADY_IN_USE);
    OK(TBRW_set_version_info(h, &vi));
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_reading_section(h, TBRW_VERSION_INFO_SECTION));
    memset(&vi, 0, sizeof vi);
    OK(TBRW_get_version_info(h, sizeof vi, &vi, NULL));
    ASSERT(vi.bind_version == 5 && vi.sample_file_version == 16);
    EXPECT(TBRW_close(h), TBRW_NOT_ALL_SECTIONS_CLOSED);
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));

    OK(TBRW_writing_section(h, TBRW_SOFTWARE_SECTION));
    {
        TBRW_OS os;
        memset(&os, 0, sizeof os);
        os.os_size = sizeof os;
        os.os_platform = TBRW_OSFAMILY_LINUX64;
        os.os_name.soi_ptr = (TBRW_CHAR *)L"Linux, written in this session";
        OK(TBRW_set_os(h, &os));
        OK(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
        memset(&os, 0, sizeof os);
        EXPECT(TBRW_get_os(h, sizeof os, &os, NULL), TBRW_SECTION_NOT_READABLE);
        OK(TBRW_reading_section(h, TBRW_SOFTWARE_SECTION));
        OK(TBRW_get_os(h, sizeof os, &os, NULL));
        ASSERT(os.os_platform == TBRW_OSFAMILY_LINUX64);
        ASSERT(wcscmp(text_of(h, os.os_name), L"Linux, written in this session") == 0);
        OK(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
    }
    OK(TBRW_writing_section(h, TBRW_PROCESS_THREAD_SECTION));
    {
        TBRW_PID pid;
        memset(&pid, 0, sizeof pid);
        pid.pid_size = sizeof pid;
        pid.pid_id = 10;
        pid.pid_name.soi_ptr = (TBRW_CHAR *)L"a.out";
        OK(TBRW_add_process(h, &pid));
    }
    OK(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_get_one_pid(h, 0, &p));
    ASSERT(p->pid_id == 10 && wcscmp(text_of(h, p->pid_name), L"a.out") == 0);

    /* Stream 0, then read back while stream 1 is being written. */
    write_stream(h, 0, 0x1000, 5000, L"first");
    OK(TBRW_get_number_data_streams(h, &n));
    ASSERT(n == 1);
    read_stream(h, 0, 0x1000, 5000, L"first");
    OK(TBRW_writing_stream(h, 1));
    stream_sections(h, 1, L"second");
    OK(TBRW_writing_stream_section(h, 1, TBRW_DATA_SECTION));
    add_records(h, 1, 0x900000, 0, 70000); /* written straight to the file's tail */
    EXPECT(TBRW_reading_stream(h, 1), TBRW_STREAM_ALREADY_IN_USE);
    EXPECT(TBRW_reading_stream(h, 2), TBRW_STREAM_NOT_EXIST);
    /* Finished while stream 1's data hold the tail: it waits for it, and
     * reading it moves stream 1's data off the tail. */
    OK(TBRW_writing_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    OK(TBRW_set_user_defined_global(h, sizeof user, user));
    OK(TBRW_done_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    OK(TBRW_reading_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    OK(TBRW_get_user_defined_global(h, sizeof back, back, &used));
    ASSERT(used == sizeof user && memcmp(back, user, sizeof user) == 0);
    OK(TBRW_done_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    read_stream(h, 0, 0x1000, 5000, L"first");
    add_records(h, 1, 0x900000, 70000, 100000);
    OK(TBRW_done_stream_section(h, 1, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 1));
    read_stream(h, 1, 0x900000, 100000, L"second");
    OK(TBRW_close(h));

    /* The file holds it all (verified once the append adds the hardware section). */
    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    read_modules(h);
    read_stream(h, 0, 0x1000, 5000, L"first");
    read_stream(h, 1, 0x900000, 100000, L"second");
    OK(TBRW_reading_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    OK(TBRW_get_user_defined_global(h, sizeof back, back, &used));
    ASSERT(memcmp(back, user, sizeof user) == 0);
    OK(TBRW_done_section(h, TBRW_USER_DEFINED_GLOBAL_SECTION));
    OK(TBRW_close(h));
}

/* Without read permission: what was written cannot be read back. */
static void write_only(const wchar_t *name) {
    TBRW_PTR h = NULL;
    const TBRW_MODULE *m = NULL;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    write_modules(h);
    EXPECT(TBRW_reading_section(h, TBRW_MODULE_SECTION), TBRW_INVALID_ACCESS_PERMS);
    EXPECT(TBRW_get_one_module(h, 0, &m), TBRW_SECTION_NOT_EXIST); /* a new file has nothing committed */
    write_stream(h, 0, 0x1000, 10, L"first");
    EXPECT(TBRW_reading_stream(h, 0), TBRW_INVALID_ACCESS_PERMS);
    EXPECT(TBRW_reading_stream(h, 5), TBRW_INVALID_ACCESS_PERMS);
    OK(TBRW_close(h));
}

/* An append session on the file new_file wrote. */
static void append(const wchar_t *name) {
    TBRW_PTR h = NULL;
    TBRW_U32 n = 0;
    seen s;
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    write_stream(h, 2, 0x7000, 300, L"third, appended");
    OK(TBRW_get_number_data_streams(h, &n));
    ASSERT(n == 3);
    EXPECT(TBRW_writing_stream(h, 2), TBRW_STREAM_ALREADY_IN_USE);
    read_stream(h, 2, 0x7000, 300, L"third, appended");
    read_stream(h, 0, 0x1000, 5000, L"first"); /* committed, in the same session */
    read_modules(h);
    /* A global section the file did not have. */
    OK(TBRW_writing_section(h, TBRW_HARDWARE_SECTION));
    {
        TBRW_SYSTEM sys;
        TBRW_U32 used = 0;
        memset(&sys, 0, sizeof sys);
        sys.system_size = sizeof sys;
        OK(TBRW_set_system(h, &sys));
        OK(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
        OK(TBRW_reading_section(h, TBRW_HARDWARE_SECTION));
        EXPECT(TBRW_get_system(h, 0, NULL, &used), TBRW_BUFFER_TOO_SMALL);
        ASSERT(used >= sizeof sys);
        OK(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
    }
    OK(TBRW_close(h));

    /* Without read permission, the appended stream cannot be read back. */
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE));
    write_stream(h, 3, 0x8000, 10, L"fourth");
    EXPECT(TBRW_reading_stream(h, 3), TBRW_INVALID_ACCESS_PERMS);
    EXPECT(TBRW_reading_stream(h, 0), TBRW_INVALID_ACCESS_PERMS);
    OK(TBRW_close(h));

    /* A callback aborts the append it reads: the append is gone, and the
     * records it was handed stay readable until it returns. */
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    write_stream(h, 4, 0x9000, 100, L"aborted");
    OK(TBRW_reading_stream(h, 4));
    OK(TBRW_reading_stream_section(h, 4, TBRW_DATA_SECTION));
    memset(&s, 0, sizeof s);
    s.h = h;
    s.base = 0x9000;
    s.abort_inside = 1;
    OK(TBRW_enumerate_data(h, 4, on_data, &s, 0));
    ASSERT(s.records == 100);
    EXPECT(TBRW_close(h), TBRW_BAD_PARAMETER);

    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    OK(TBRW_verify(h));
    OK(TBRW_get_number_data_streams(h, &n));
    ASSERT(n == 4);
    read_stream(h, 2, 0x7000, 300, L"third, appended");
    read_stream(h, 3, 0x8000, 10, L"fourth");
    OK(TBRW_close(h));
    /* The next writer cuts what the abort left past the committed end. */
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    OK(TBRW_close(h));
}

int main(int argc, char **argv) {
    wchar_t *a, *b;
    if (argc != 2) {
        fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
        return 2;
    }
    a = path_in(argv[1], "session.tb5");
    b = path_in(argv[1], "write_only.tb5");
    new_file(a);
    write_only(b);
    append(a);
    free(a);
    free(b);
    printf("session reads: ok\n");
    return 0;
}
