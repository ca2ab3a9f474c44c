/* Guide 9.3.4: a stream finished in this writing session can be checked
 * and bound at once (no done_stream needed); the bind is stored at close.
 * Usage: bind_same_session FILE */
#include "write_helpers.h"

static void add_module(TBRW_PTR h) {
    TBRW_MODULE m;
    memset(&m, 0, sizeof m);
    m.module_size = sizeof m;
    m.module_load_address = 0x400000;
    m.module_length = 0x2000;
    m.module_associated_pid = 0x1000;
    m.module_unload_tsc = (TBRW_U64)-1;
    m.module_segment_type = TBRW_MODE_32BIT;
    m.module_flags = TBRW_MODULE_TSC_USED | TBRW_MODULE_LOADED | TBRW_MODULE_IS_EXE | TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS;
    m.module_path.soi_ptr = (TBRW_CHAR *)L"/bin/app";
    m.module_name.soi_ptr = (TBRW_CHAR *)L"app";
    m.module_segment_name.soi_ptr = (TBRW_CHAR *)L"";
    OK(TBRW_writing_section(h, TBRW_MODULE_SECTION));
    OK(TBRW_add_module(h, &m));
    OK(TBRW_done_section(h, TBRW_MODULE_SECTION));
}

/* Samples alternate between the module (even) and an address outside it (odd). */
static void add_samples(TBRW_PTR h, TBRW_U32 n) {
    TBRW_U32 i;
    for (i = 0; i < n; i++) {
        TBRW_SampleRecordPC s;
        TBRW_U64 tsc = 100 + i;
        memset(&s, 0, sizeof s);
        s.eip = (i % 2 == 0) ? 0x400100 + i : 0x900000;
        s.pidRecIndex = 0x1000;
        s.pidRecIndexRaw = 1;
        s.tid = 7;
        s.tidIsRaw = 1;
        OK(TBRW_add_data(h, 0, sizeof s, &s));
        OK(TBRW_add_data(h, 0, sizeof tsc, &tsc));
    }
}

static TBRW_U64 seen, in_module;

static TBRW_U32 data_cb(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *b, TBRW_U32 bsize,
                        void *user) {
    TBRW_U64 i;
    (void)data;
    (void)user;
    ASSERT(size == n * 40 && bsize == n * sizeof(DATA_BIND_STRUCT));
    for (i = 0; i < n; i++) {
        if ((seen + i) % 2 == 0) {
            ASSERT(b[i].module_index == 0);
            in_module++;
        } else {
            ASSERT(b[i].module_index != 0);
        }
    }
    seen += n;
    return TBRW_SUCCESS;
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *path;
    const TBRW_U32 events[1] = {0};
    TBRW_U32 bound = 9, streams = 0;
    if (argc != 2) return 2;
    path = wide_path(argv[1]);

    OK(TBRW_open(&h, path, TBRW_FILE_CREATE_ALWAYS));
    add_module(h);
    OK(TBRW_writing_stream(h, 0));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    add_legacy_descriptor(h);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    stream_info_and_events(h, events, 1);
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    add_samples(h, 1000);
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    /* Before TBRW_done_stream the stream can be checked and bound already. */
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 0);
    EXPECT(TBRW_unbind(h, 0), TBRW_STREAM_NOT_BOUND);
    OK(TBRW_dobind(h, 0));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    OK(TBRW_unbind(h, 0));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 0);
    OK(TBRW_dobind(h, 0));
    OK(TBRW_dobind(h, 0)); /* a bound stream is left as it is */
    OK(TBRW_done_stream(h, 0));
    OK(TBRW_get_number_data_streams(h, &streams));
    ASSERT(streams == 1);
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    EXPECT(TBRW_is_bound(h, 1, &bound), TBRW_STREAM_NOT_EXIST);
    EXPECT(TBRW_dobind(h, 1), TBRW_STREAM_NOT_EXIST);
    OK(TBRW_close(h));

    OK(TBRW_open(&h, path, TBRW_FILE_READ));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    OK(TBRW_bind_enumerate_data(h, 0, data_cb, NULL, 0));
    ASSERT(seen == 1000 && in_module == 500);
    OK(TBRW_close(h));
    free(path);
    printf("bind in the same session: ok\n");
    return 0;
}
