/* Opens a TB5 file for reading in a loop while another process appends to
 * it (tbrw-sys/tests/readers_during_appends.rs runs the appender): every
 * TBRW_open(READ) must succeed, and the file must read as one whole commit
 * (its stream count and its last stream's data). Prints the number of
 * opens, of failures and of different stream counts seen.
 * Usage: open_during_appends FILE OPENS. Valid C11 and C++. */
#include <errno.h>

#include "check.h"

/* Counts records through the enumeration callback. */
static TBRW_U32 count_records(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)data;
    (void)size;
    *(TBRW_U64 *)user += n;
    return TRUE;
}

int main(int argc, char **argv) {
    wchar_t *path;
    long opens, i;
    long failures = 0;
    /* Stream counts seen: the appender adds one stream per commit. */
    static unsigned char seen[4096];
    long distinct = 0;
    if (argc != 3) {
        fprintf(stderr, "usage: open_during_appends FILE OPENS\n");
        return 2;
    }
    path = wide_path(argv[1]);
    opens = strtol(argv[2], NULL, 10);
    for (i = 0; i < opens; i++) {
        TBRW_PTR h = NULL;
        TBRW_U32 streams = 0;
        TBRW_U64 records = 0;
        TBRW_U32 rc;
        errno = 0;
        rc = TBRW_open(&h, path, TBRW_FILE_READ);
        if (rc != TBRW_SUCCESS) {
            int e = errno;
            if (failures++ < 5) {
                const TBRW_CHAR *text = NULL;
                TBRW_error_string(rc, &text);
                fprintf(stderr, "open %ld: TBRW_open(READ) returned %u (%ls), errno %d\n", i, rc,
                        text ? text : L"?", e);
            }
            continue;
        }
        OK(TBRW_get_number_data_streams(h, &streams));
        ASSERT(streams >= 2);
        /* The last stream is whole: an appended one has exactly one record. */
        OK(TBRW_reading_stream(h, streams - 1));
        OK(TBRW_reading_stream_section(h, streams - 1, TBRW_DATA_SECTION));
        OK(TBRW_enumerate_data(h, streams - 1, count_records, &records, 0));
        OK(TBRW_done_stream_section(h, streams - 1, TBRW_DATA_SECTION));
        OK(TBRW_done_stream(h, streams - 1));
        ASSERT(streams == 2 || records == 1);
        OK(TBRW_close(h));
        if (streams < sizeof seen && !seen[streams]) {
            seen[streams] = 1;
            distinct++;
        }
    }
    free(path);
    printf("opens %ld failures %ld stream counts %ld\n", opens, failures, distinct);
    return 0;
}
