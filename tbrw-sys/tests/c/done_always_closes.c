/* Every writing_ has its done_, and after done_ the
 * section is closed whatever it returns. Sections holding one structure
 * (hardware, software, version info, stream info, data descriptor) given
 * nothing give TBRW_NO_DATA_TO_WRITE and are dropped; tables and bytes
 * (modules, processes and threads, events, data, user-defined) may be
 * empty; a data section ending mid-record is dropped. TBRW_close then
 * succeeds. Usage: done_always_closes FILE */
#include "write_helpers.h"

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *path;
    TBRW_SampleRecordPC half;
    const TBRW_U32 events[1] = {0};
    TBRW_SECTION_IDENTIFIER one[3] = {TBRW_HARDWARE_SECTION, TBRW_SOFTWARE_SECTION, TBRW_VERSION_INFO_SECTION};
    TBRW_SECTION_IDENTIFIER tables[3] = {TBRW_MODULE_SECTION, TBRW_PROCESS_THREAD_SECTION,
                                         TBRW_USER_DEFINED_GLOBAL_SECTION};
    int i;
    if (argc != 2) return 2;
    path = wide_path(argv[1]);
    OK(TBRW_open(&h, path, TBRW_FILE_CREATE_ALWAYS));
    for (i = 0; i < 3; i++) {
        OK(TBRW_writing_section(h, one[i]));
        EXPECT(TBRW_done_section(h, one[i]), TBRW_NO_DATA_TO_WRITE);
        EXPECT(TBRW_done_section(h, one[i]), TBRW_SECTION_NOT_EXIST);
    }
    for (i = 0; i < 3; i++) {
        OK(TBRW_writing_section(h, tables[i]));
        OK(TBRW_done_section(h, tables[i]));
    }
    OK(TBRW_writing_stream(h, 0));
    OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    EXPECT(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION), TBRW_NO_DATA_TO_WRITE);
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    EXPECT(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION), TBRW_NO_DATA_TO_WRITE);
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    add_legacy_descriptor(h);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    memset(&half, 0, sizeof half);
    OK(TBRW_add_data(h, 0, sizeof half, &half));
    EXPECT(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION), TBRW_UNSUPPORTED_DATA_SIZE);
    EXPECT(TBRW_add_data(h, 0, sizeof half, &half), TBRW_SECTION_NOT_WRITEABLE);
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    add_sample(h, 0x1000, 0, 7);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_USER_DEFINED_STREAM_SECTION));
    OK(TBRW_done_stream_section(h, 0, TBRW_USER_DEFINED_STREAM_SECTION));
    stream_info_and_events(h, events, 1);
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_close(h));
    free(path);
    printf("done always closes: ok\n");
    return 0;
}
