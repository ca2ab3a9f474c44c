/* TBRW_verify on a writing handle applies the rules of
 * TBRW_verify after reopening to what the session wrote, and TBRW_close
 * refuses, with the same code, to commit a file verify calls damaged (a
 * sample whose eventIndex names no event); the handle is left to abort.
 * Usage: verify_before_close DIR */
#include "write_helpers.h"

static wchar_t *path_in(const char *dir, const char *name) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return wide_path(buf);
}

static void write_file(TBRW_PTR h, const TBRW_U32 *events, int n) {
    TBRW_SYSTEM sys;
    TBRW_APPLICATION app;
    TBRW_VERSION_INFO vi;
    memset(&sys, 0, sizeof sys);
    sys.system_size = sizeof sys;
    memset(&app, 0, sizeof app);
    app.app_size = sizeof app;
    memset(&vi, 0, sizeof vi);
    vi.version_info_size = sizeof vi;
    vi.sample_file_version = 0x10;
    OK(TBRW_writing_section(h, TBRW_HARDWARE_SECTION));
    OK(TBRW_set_system(h, &sys));
    OK(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
    OK(TBRW_writing_section(h, TBRW_SOFTWARE_SECTION));
    OK(TBRW_set_application(h, &app));
    OK(TBRW_done_section(h, TBRW_SOFTWARE_SECTION));
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_set_version_info(h, &vi));
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_writing_stream(h, 0));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    add_legacy_descriptor(h);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    add_sample(h, 0x1000, 0, 1);
    add_sample(h, 0x1004, 3, 2);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    stream_info_and_events(h, events, n);
    OK(TBRW_done_stream(h, 0));
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *bad, *good;
    const TBRW_U32 one_event[1] = {0};
    const TBRW_U32 both_events[2] = {0, 3};
    TBRW_U32 code;
    if (argc != 2) return 2;
    bad = path_in(argv[1], "bad.tb5");
    good = path_in(argv[1], "good.tb5");

    OK(TBRW_open(&h, bad, TBRW_FILE_CREATE_ALWAYS));
    write_file(h, one_event, 1);
    code = TBRW_verify(h);
    ASSERT(code == TBRW_SAM_ERROR);
    EXPECT(TBRW_close(h), code);
    OK(TBRW_abort_cleanup_and_close(h));

    OK(TBRW_open(&h, good, TBRW_FILE_CREATE_ALWAYS));
    write_file(h, both_events, 2);
    OK(TBRW_verify(h));
    OK(TBRW_close(h));
    OK(TBRW_open(&h, good, TBRW_FILE_READ));
    OK(TBRW_verify(h));
    OK(TBRW_close(h));

    free(bad);
    free(good);
    printf("verify before close: ok\n");
    return 0;
}
