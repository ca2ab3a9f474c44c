/* Guide 5.2 (stream sections in any order): data added
 * before the data descriptor wait, and are checked when it is done; a
 * descriptor that does not fit them is refused and dropped. Usage:
 * any_order_stream FILE */
#include "write_helpers.h"

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *path;
    TBRW_SAMPREC_DESC_ENTRY ip = desc_entry(ST_IP, SST_NONE, 8);
    const TBRW_U32 events[1] = {0};
    TBRW_U32 i, n = 0;
    if (argc != 2) return 2;
    path = wide_path(argv[1]);
    OK(TBRW_open(&h, path, TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_stream(h, 0));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    for (i = 0; i < 50; i++) add_sample(h, 0x1000 + i, 0, i);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    stream_info_and_events(h, events, 1);
    /* 2000 bytes are not a whole number of 48-byte records: that descriptor is dropped. */
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    add_legacy_descriptor(h);
    OK(TBRW_add_data_descriptor_entry(h, 0, &ip));
    EXPECT(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION), TBRW_UNSUPPORTED_DATA_SIZE);
    EXPECT(TBRW_done_stream(h, 0), TBRW_SECTION_NOT_EXIST);
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    add_legacy_descriptor(h);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_close(h));

    OK(TBRW_open(&h, path, TBRW_FILE_READ));
    OK(TBRW_get_number_data_streams(h, &n));
    ASSERT(n == 1);
    OK(TBRW_close(h));
    free(path);
    printf("any order stream: ok\n");
    return 0;
}
