/* The guide's tbrw_reader -> tbrw_writer flow copies
 * structures read from one handle into another. Their string fields hold
 * ids, not pointers: the library resolves them through the handle they
 * came from while it is open and refuses them (TBRW_BAD_PARAMETER) after,
 * never dereferencing one. Usage: copy_reader_writer DIR */
#include "check.h"

static wchar_t *path_in(const char *dir, const char *name) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return wide_path(buf);
}

static void write_source(const wchar_t *path) {
    TBRW_PTR h = NULL;
    TBRW_MODULE m;
    TBRW_PID p;
    TBRW_HOST host;
    memset(&m, 0, sizeof m);
    m.module_size = sizeof m;
    m.module_load_address = 0x400000;
    m.module_length = 0x1000;
    m.module_path.soi_ptr = (TBRW_CHAR *)L"/usr/bin/copied";
    m.module_name.soi_ptr = (TBRW_CHAR *)L"copied";
    m.module_segment_name.soi_ptr = (TBRW_CHAR *)L".text";
    memset(&p, 0, sizeof p);
    p.pid_size = sizeof p;
    p.pid_id = 42;
    p.pid_name.soi_ptr = (TBRW_CHAR *)L"copied-process";
    memset(&host, 0, sizeof host);
    host.host_size = sizeof host;
    host.host_name.soi_ptr = (TBRW_CHAR *)L"source-host";
    OK(TBRW_open(&h, path, TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_add_module(h, &m));
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_writing_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_add_process(h, &p));
    OK(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_writing_section(h, TBRW_SOFTWARE_SECTION));
    OK(TBRW_set_host(h, &host));
    OK(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
    OK(TBRW_close(h));
}

/* The guide's tbrw_reader hands each enumerated module to the writer. */
static TBRW_U32 copy_modules(TBRW_MODULE *mods, TBRW_U32 size, TBRW_U32 n, void *writer) {
    TBRW_U32 i;
    ASSERT(size == n * sizeof *mods);
    for (i = 0; i < n; i++) OK(TBRW_add_module((TBRW_PTR)writer, &mods[i]));
    return TRUE;
}

static TBRW_U32 copy_processes(TBRW_PID *pids, TBRW_U32 size, TBRW_U32 n, void *writer) {
    TBRW_U32 i;
    ASSERT(size == n * sizeof *pids);
    for (i = 0; i < n; i++) OK(TBRW_add_process((TBRW_PTR)writer, &pids[i]));
    return TRUE;
}

int main(int argc, char **argv) {
    TBRW_PTR src = NULL, dst = NULL, back = NULL;
    wchar_t *a, *b;
    const TBRW_MODULE *one = NULL;
    const TBRW_PID *pid = NULL;
    TBRW_MODULE kept;
    TBRW_HOST host, bare;
    TBRW_U32 used = 0;
    if (argc != 2) return 2;
    a = path_in(argv[1], "source.tb5");
    b = path_in(argv[1], "copy.tb5");
    write_source(a);

    OK(TBRW_open(&src, a, TBRW_FILE_READ));
    OK(TBRW_open(&dst, b, TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_reading_section(src, TBRW_MODULE_SECTION));
    OK(TBRW_writing_section(dst, TBRW_MODULE_SECTION));
    OK(TBRW_enumerate_modules(src, copy_modules, dst, 0));
    /* get_one_module's const structure, copied as a whole. */
    OK(TBRW_get_one_module(src, 0, &one));
    ASSERT((one->module_name.soi_uniqueid >> 63) == 1);
    kept = *one;
    OK(TBRW_add_module(dst, &kept));
    OK(TBRW_done_section(src, TBRW_MODULE_SECTION));
    OK(TBRW_done_section(dst, TBRW_MODULE_SECTION));

    OK(TBRW_reading_section(src, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_writing_section(dst, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_enumerate_processes(src, copy_processes, dst, 0));
    OK(TBRW_done_section(src, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_done_section(dst, TBRW_PROCESS_THREAD_SECTION));

    OK(TBRW_reading_section(src, TBRW_SOFTWARE_SECTION));
    OK(TBRW_get_host(src, sizeof host, &host, &used));
    OK(TBRW_done_section(src, TBRW_SOFTWARE_SECTION));
    OK(TBRW_writing_section(dst, TBRW_SOFTWARE_SECTION));
    OK(TBRW_set_host(dst, &host));
    /* An id is resolved through its own handle, whichever handle is asked. */
    ASSERT(wcscmp(text_of(dst, host.host_name), L"source-host") == 0);
    OK(TBRW_close(src));

    /* The handle the ids came from is closed: refused, not dereferenced. */
    EXPECT(TBRW_set_host(dst, &host), TBRW_BAD_PARAMETER);
    { TBRW_STRING_OR_ID gone = host.host_name;
      wchar_t buf[32];
      EXPECT(TBRW_convert_uniqueid_to_string(dst, sizeof buf, &gone, buf, &used), TBRW_BAD_PARAMETER); }
    /* A bare string number, or an id naming no handle, is never a pointer either. */
    memset(&bare, 0, sizeof bare);
    bare.host_size = sizeof bare;
    bare.host_name.soi_uniqueid = 3;
    EXPECT(TBRW_set_host(dst, &bare), TBRW_BAD_PARAMETER);
    bare.host_name.soi_uniqueid = 0xFFFFFF8000000001ull;
    EXPECT(TBRW_set_host(dst, &bare), TBRW_BAD_PARAMETER);
    bare.host_name.soi_uniqueid = 0x8000000000000001ull;
    EXPECT(TBRW_set_host(dst, &bare), TBRW_BAD_PARAMETER);
    OK(TBRW_done_section(dst, TBRW_SOFTWARE_SECTION));
    OK(TBRW_close(dst));

    OK(TBRW_open(&back, b, TBRW_FILE_READ));
    OK(TBRW_get_one_module(back, 1, &one));
    ASSERT(wcscmp(text_of(back, one->module_path), L"/usr/bin/copied") == 0);
    ASSERT(wcscmp(text_of(back, one->module_segment_name), L".text") == 0);
    ASSERT(one->module_load_address == 0x400000 && one->module_length == 0x1000);
    OK(TBRW_get_one_module(back, 0, &one));
    ASSERT(wcscmp(text_of(back, one->module_name), L"copied") == 0);
    OK(TBRW_get_one_pid(back, 0, &pid));
    ASSERT(pid->pid_id == 42 && wcscmp(text_of(back, pid->pid_name), L"copied-process") == 0);
    OK(TBRW_reading_section(back, TBRW_SOFTWARE_SECTION));
    OK(TBRW_get_host(back, sizeof host, &host, &used));
    ASSERT(wcscmp(text_of(back, host.host_name), L"source-host") == 0);
    OK(TBRW_done_section(back, TBRW_SOFTWARE_SECTION));
    OK(TBRW_close(back));
    free(a);
    free(b);
    printf("copy reader to writer: ok\n");
    return 0;
}
