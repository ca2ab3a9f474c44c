/* A damaged file with valid checksums never makes a read
 * hand out more entries than its buffers hold. argv[1]: a bound file whose
 * stored bind holds fewer data binds than the stream has records; argv[2]: a
 * file whose data section's record size disagrees with its descriptor. Both
 * enumerations must fail with TBRW_SAM_ERROR before any callback, and the
 * undamaged parts of the files still read. */
#include "check.h"

static unsigned calls;

static TBRW_U32 data_cb(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)data;
    (void)user;
    ASSERT(size == n * 40);
    calls++;
    return TRUE;
}

static TBRW_U32 bind_cb(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *binds, TBRW_U32 bsize,
                        void *user) {
    (void)data;
    (void)binds;
    (void)user;
    ASSERT(size == n * 40 && bsize == n * sizeof(DATA_BIND_STRUCT));
    calls++;
    return TRUE;
}

static TBRW_U32 module_cb(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)m;
    (void)user;
    ASSERT(size == n * sizeof(TBRW_MODULE));
    return TRUE;
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    TBRW_U32 bound = 0;
    wchar_t *short_bind, *wrong_size;
    if (argc != 3) {
        fprintf(stderr, "usage: %s SHORT_BIND.tb5 WRONG_RECORD_SIZE.tb5\n", argv[0]);
        return 2;
    }
    short_bind = wide_path(argv[1]);
    wrong_size = wide_path(argv[2]);

    OK(TBRW_open(&h, short_bind, TBRW_FILE_READ));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    EXPECT(TBRW_bind_enumerate_data(h, 0, bind_cb, NULL, 0), TBRW_SAM_ERROR);
    EXPECT(TBRW_bind_enumerate_data(h, 0, bind_cb, NULL, 999), TBRW_SAM_ERROR);
    ASSERT(calls == 0);
    /* the records themselves are intact */
    OK(TBRW_reading_stream(h, 0));
    OK(TBRW_reading_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_enumerate_data(h, 0, data_cb, NULL, 0));
    ASSERT(calls > 0);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    EXPECT(TBRW_verify(h), TBRW_SAM_ERROR);
    OK(TBRW_close(h));

    calls = 0;
    OK(TBRW_open(&h, wrong_size, TBRW_FILE_READ));
    OK(TBRW_reading_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_enumerate_modules(h, module_cb, NULL, 0));
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_reading_stream(h, 0));
    OK(TBRW_reading_stream_section(h, 0, TBRW_DATA_SECTION));
    EXPECT(TBRW_enumerate_data(h, 0, data_cb, NULL, 0), TBRW_SAM_ERROR);
    EXPECT(TBRW_enumerate_data(h, 0, data_cb, NULL, 10), TBRW_SAM_ERROR);
    ASSERT(calls == 0);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, 0));
    /* bound before the damage: the bind's records are the damaged ones */
    EXPECT(TBRW_bind_enumerate_data(h, 0, bind_cb, NULL, 0), TBRW_SAM_ERROR);
    ASSERT(calls == 0);
    OK(TBRW_close(h));

    free(short_bind);
    free(wrong_size);
    printf("damaged reads: ok\n");
    return 0;
}
