/* Every lifecycle error with its code, the get_ buffer
 * protocol, callbacks that stop early or fail, foreign handles and NULL
 * pointers, the string conversions. Usage: lifecycle DIR */
#include "check.h"

static wchar_t *path_in(const char *dir, const char *name) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return wide_path(buf);
}

static TBRW_SAMPREC_DESC_ENTRY desc(TBRW_U16 type, TBRW_U32 size) {
    TBRW_SAMPREC_DESC_ENTRY d;
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.desc_type = type;
    d.desc_data_size = size;
    return d;
}

static void write_minimal_stream(TBRW_PTR h, TBRW_U32 n, TBRW_U32 records) {
    TBRW_STREAM_INFO si;
    TBRW_SAMPREC_DESC_ENTRY d = desc(ST_IP, 8);
    TBRW_U64 v;
    TBRW_U32 i;
    memset(&si, 0, sizeof si);
    si.stream_info_size = sizeof si;
    OK(TBRW_writing_stream(h, n));
    OK(TBRW_writing_stream_section(h, n, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_set_stream_info(h, n, &si));
    OK(TBRW_done_stream_section(h, n, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_writing_stream_section(h, n, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_add_data_descriptor_entry(h, n, &d));
    OK(TBRW_done_stream_section(h, n, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, n, TBRW_DATA_SECTION));
    for (i = 0; i < records; i++) {
        v = 1000 + i;
        OK(TBRW_add_data(h, n, 8, &v));
    }
    OK(TBRW_done_stream_section(h, n, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(h, n));
}

static unsigned calls;
static TBRW_U32 stop_after_two(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)data; (void)size; (void)n; (void)user;
    return ++calls == 2 ? FALSE : TRUE;
}
static TBRW_U32 fail_with_12345(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)data; (void)size; (void)n; (void)user;
    calls++;
    return 12345;
}
static TBRW_U32 count_records(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)data;
    ASSERT(size == n * 8);
    *(TBRW_U64 *)user += n;
    return TRUE;
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL, r = NULL;
    wchar_t *a, *b;
    const TBRW_CHAR *text = NULL;
    TBRW_VERSION_INFO vi;
    TBRW_U64 counted = 0;
    TBRW_U32 used = 0, bound = 0;
    if (argc != 2) return 2;
    a = path_in(argv[1], "a.tb5");
    b = path_in(argv[1], "missing.tb5");

    /* access modes, opening */
    EXPECT(TBRW_open(&h, a, 0), TBRW_INVALID_ACCESS_PERMS);
    ASSERT(h == NULL);
    EXPECT(TBRW_open(&h, a, 0x80), TBRW_INVALID_ACCESS_PERMS);
    EXPECT(TBRW_open(&h, b, TBRW_FILE_READ), TBRW_FILE_OPEN_FAILED);
    EXPECT(TBRW_open(NULL, a, TBRW_FILE_READ), TBRW_UNEXPECTED_NULL_PTR);
    EXPECT(TBRW_open(&h, NULL, TBRW_FILE_READ), TBRW_UNEXPECTED_NULL_PTR);

    /* foreign handles and NULL */
    EXPECT(TBRW_verify(NULL), TBRW_UNEXPECTED_NULL_PTR);
    EXPECT(TBRW_verify((TBRW_PTR)&vi), TBRW_BAD_PARAMETER);
    EXPECT(TBRW_close((TBRW_PTR)0x1234), TBRW_BAD_PARAMETER);

    /* error strings */
    OK(TBRW_error_string(TBRW_BUFFER_TOO_SMALL, &text));
    ASSERT(text != NULL && wcslen(text) > 0);
    EXPECT(TBRW_error_string(999, &text), TBRW_INVALID_ERROR_CODE);
    EXPECT(TBRW_error_string(TBRW_SUCCESS, NULL), TBRW_UNEXPECTED_NULL_PTR);

    /* writing */
    OK(TBRW_open(&h, a, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    memset(&vi, 0, sizeof vi);
    vi.version_info_size = sizeof vi;
    vi.sample_file_version = 16;
    EXPECT(TBRW_set_version_info(h, &vi), TBRW_SECTION_NOT_WRITEABLE);
    EXPECT(TBRW_reading_section(h, TBRW_HARDWARE_SECTION), TBRW_INVALID_ACCESS_PERMS);
    EXPECT(TBRW_writing_section(h, (TBRW_SECTION_IDENTIFIER)17), TBRW_UNKNOWN_SECTION_NUMBER);
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    EXPECT(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION), TBRW_SECTION_ALREADY_IN_USE);
    EXPECT(TBRW_set_version_info(h, NULL), TBRW_UNEXPECTED_NULL_PTR);
    vi.version_info_size = 4;
    EXPECT(TBRW_set_version_info(h, &vi), TBRW_BAD_PARAMETER);
    vi.version_info_size = sizeof vi;
    EXPECT(TBRW_close(h), TBRW_GLOBAL_SECTION_NOT_CLOSED);
    /* done_ closes the section whatever it returns: an empty one is dropped. */
    EXPECT(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION), TBRW_NO_DATA_TO_WRITE);
    EXPECT(TBRW_set_version_info(h, &vi), TBRW_SECTION_NOT_WRITEABLE);
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_set_version_info(h, &vi));
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    EXPECT(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION), TBRW_SECTION_ALREADY_IN_USE);
    EXPECT(TBRW_done_section(h, TBRW_HARDWARE_SECTION), TBRW_SECTION_NOT_EXIST);
    {
        /* an arch type tbrw_types.h does not know */
        TBRW_CPU_ARCH arch;
        TBRW_CPU cpu;
        TBRW_NODE node;
        TBRW_SYSTEM sys;
        memset(&arch, 0, sizeof arch); memset(&cpu, 0, sizeof cpu); memset(&node, 0, sizeof node);
        arch.arch_size = sizeof arch; arch.arch_type = 77;
        cpu.cpu_size = sizeof cpu; cpu.num_cpu_arch_array = 1; cpu.cpu_arch_array = &arch;
        node.node_size = sizeof node; node.node_num_available = 1; node.cpu_array = &cpu;
        sys.system_size = sizeof sys; sys.system_num_nodes = 1; sys.node_array = &node;
        OK(TBRW_writing_section(h, TBRW_HARDWARE_SECTION));
        EXPECT(TBRW_set_system(h, &sys), TBRW_UNSUPPORTED_ARCH_TYPE);
        arch.arch_type = TBRW_GST_EM64T; arch.arch_num_cpuid = 2; /* cpuids missing */
        EXPECT(TBRW_set_system(h, &sys), TBRW_UNEXPECTED_NULL_PTR);
        arch.arch_num_cpuid = 0;
        OK(TBRW_set_system(h, &sys));
        OK(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
    }

    EXPECT(TBRW_writing_stream(h, 1), TBRW_INVALID_STREAM);
    EXPECT(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION), TBRW_STREAM_NOT_EXIST);
    OK(TBRW_writing_stream(h, 0));
    EXPECT(TBRW_writing_stream(h, 0), TBRW_STREAM_ALREADY_IN_USE);
    EXPECT(TBRW_writing_stream_section(h, 0, (TBRW_STREAM_SECTION_IDENTIFIER)9), TBRW_UNKNOWN_SECTION_NUMBER);
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    EXPECT(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION), TBRW_SECTION_ALREADY_IN_USE);
    {
        TBRW_SAMPREC_DESC_ENTRY legacy = desc(ST_LEGACY_SAMPLE_RECORD, 32), tsc = desc(ST_TIME_STAMP, 8);
        TBRW_SAMPREC_DESC_ENTRY reserved = desc(0x8001, 4);
        TBRW_U64 v = 0;
        char wrong[36];
        tsc.desc_subtype = SST_TSC;
        EXPECT(TBRW_add_data_descriptor_entry(h, 0, &reserved), TBRW_BAD_PARAMETER);
        OK(TBRW_add_data_descriptor_entry(h, 0, &legacy));
        OK(TBRW_add_data_descriptor_entry(h, 0, &tsc));
        EXPECT(TBRW_close(h), TBRW_STREAM_SECTION_NOT_CLOSED);
        EXPECT(TBRW_add_data(h, 0, 8, &v), TBRW_SECTION_NOT_WRITEABLE);
        /* Pieces are checked once the descriptor is done (before, data wait). */
        OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
        OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
        memset(wrong, 0, sizeof wrong);
        EXPECT(TBRW_add_data(h, 0, sizeof wrong, wrong), TBRW_UNSUPPORTED_DATA_SIZE);
        EXPECT(TBRW_add_data(h, 0, 8, NULL), TBRW_UNEXPECTED_NULL_PTR);
        OK(TBRW_add_data(h, 0, 32, wrong));
        /* Ending mid-record: refused, and the section is dropped all the same. */
        EXPECT(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION), TBRW_UNSUPPORTED_DATA_SIZE);
        EXPECT(TBRW_add_data(h, 0, 8, &v), TBRW_SECTION_NOT_WRITEABLE);
        OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
        OK(TBRW_add_data(h, 0, 32, wrong));
        OK(TBRW_add_data(h, 0, 8, &v));
        OK(TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION));
    }
    EXPECT(TBRW_done_stream(h, 0), TBRW_SECTION_NOT_EXIST); /* no stream info */
    EXPECT(TBRW_close(h), TBRW_STREAM_NOT_CLOSED);
    {
        TBRW_STREAM_INFO si;
        memset(&si, 0, sizeof si);
        si.stream_info_size = sizeof si;
        OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
        OK(TBRW_set_stream_info(h, 0, &si));
        OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    }
    OK(TBRW_done_stream(h, 0));
    write_minimal_stream(h, 1, 1000);
    OK(TBRW_close(h));
    EXPECT(TBRW_close(h), TBRW_BAD_PARAMETER); /* closed handles are not ours any more */

    /* reading */
    OK(TBRW_open(&r, a, TBRW_FILE_READ));
    EXPECT(TBRW_writing_section(r, TBRW_MODULE_SECTION), TBRW_INVALID_ACCESS_PERMS);
    EXPECT(TBRW_get_version_info(r, sizeof vi, &vi, NULL), TBRW_SECTION_NOT_READABLE);
    EXPECT(TBRW_reading_section(r, TBRW_SOFTWARE_SECTION), TBRW_SECTION_NOT_EXIST);
    OK(TBRW_reading_section(r, TBRW_VERSION_INFO_SECTION));
    EXPECT(TBRW_reading_section(r, TBRW_VERSION_INFO_SECTION), TBRW_SECTION_ALREADY_IN_USE);
    /* buffer protocol: 0/NULL query, too small with the size needed, exact */
    EXPECT(TBRW_get_version_info(r, 0, NULL, &used), TBRW_BUFFER_TOO_SMALL);
    ASSERT(used == sizeof vi);
    used = 0;
    EXPECT(TBRW_get_version_info(r, sizeof vi - 1, &vi, &used), TBRW_BUFFER_TOO_SMALL);
    ASSERT(used == sizeof vi);
    EXPECT(TBRW_get_version_info(r, sizeof vi, NULL, NULL), TBRW_UNEXPECTED_NULL_PTR);
    memset(&vi, 0, sizeof vi);
    OK(TBRW_get_version_info(r, sizeof vi, &vi, NULL));
    ASSERT(vi.sample_file_version == 16 && vi.version_info_size == sizeof vi);
    EXPECT(TBRW_close(r), TBRW_NOT_ALL_SECTIONS_CLOSED);
    OK(TBRW_done_section(r, TBRW_VERSION_INFO_SECTION));
    EXPECT(TBRW_reading_stream(r, 2), TBRW_STREAM_NOT_EXIST);
    OK(TBRW_reading_stream(r, 1));
    EXPECT(TBRW_enumerate_data(r, 1, count_records, &counted, 0), TBRW_SECTION_NOT_READABLE);
    EXPECT(TBRW_reading_stream_section(r, 1, TBRW_EVENT_DESCRIPTION_SECTION), TBRW_SECTION_NOT_EXIST);
    OK(TBRW_reading_stream_section(r, 1, TBRW_DATA_SECTION));
    OK(TBRW_enumerate_data(r, 1, count_records, &counted, 0));
    ASSERT(counted == 1000);
    counted = 0;
    OK(TBRW_enumerate_data(r, 1, count_records, &counted, 1000)); /* start at the end: nothing */
    ASSERT(counted == 0);
    EXPECT(TBRW_enumerate_data(r, 1, count_records, &counted, 1001), TBRW_INVALID_READ_START);
    EXPECT(TBRW_enumerate_data(r, 1, NULL, &counted, 0), TBRW_UNEXPECTED_NULL_PTR);
    /* callbacks: FALSE stops (success), any other value is returned as it is */
    calls = 0;
    EXPECT(TBRW_enumerate_data(r, 1, fail_with_12345, NULL, 0), 12345);
    ASSERT(calls == 1);
    calls = 0;
    OK(TBRW_enumerate_data(r, 1, stop_after_two, NULL, 0));
    ASSERT(calls == 1); /* one chunk only: the enumeration ended on its own */
    EXPECT(TBRW_done_stream(r, 1), TBRW_STREAM_SECTION_NOT_CLOSED);
    OK(TBRW_done_stream_section(r, 1, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(r, 1));
    /* bind on a read-only handle: in memory */
    OK(TBRW_is_bound(r, 1, &bound));
    ASSERT(bound == 0);
    EXPECT(TBRW_unbind(r, 1), TBRW_STREAM_NOT_BOUND);
    EXPECT(TBRW_dobind(r, 1), TBRW_INVALID_STREAM); /* ST_IP but no ST_PID: cannot be bound */
    OK(TBRW_dobind(r, 0));                          /* legacy records: bound, in memory */
    OK(TBRW_is_bound(r, 0, &bound));
    ASSERT(bound == 1);
    OK(TBRW_unbind(r, 0));
    OK(TBRW_is_bound(r, 0, &bound));
    ASSERT(bound == 0);
    OK(TBRW_close(r));

    /* a stream big enough for several callbacks: FALSE stops after the second */
    OK(TBRW_open(&h, a, TBRW_FILE_READ | TBRW_FILE_WRITE));
    write_minimal_stream(h, 2, 300000); /* 2.4 MB: three chunks of at most 1 MiB */
    OK(TBRW_close(h));
    OK(TBRW_open(&r, a, TBRW_FILE_READ));
    OK(TBRW_reading_stream(r, 2));
    OK(TBRW_reading_stream_section(r, 2, TBRW_DATA_SECTION));
    calls = 0;
    OK(TBRW_enumerate_data(r, 2, stop_after_two, NULL, 0));
    ASSERT(calls == 2);
    counted = 0;
    OK(TBRW_enumerate_data(r, 2, count_records, &counted, 299990));
    ASSERT(counted == 10);
    OK(TBRW_done_stream_section(r, 2, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(r, 2));
    OK(TBRW_abort_cleanup_and_close(r));

    /* string conversions: size queries */
    {
        TBRW_U32 n = 0;
        wchar_t w[8];
        char u[8];
        EXPECT(TBRW_convert_utf8_to_wcs("h\xc3\xa9llo", NULL, &n), TBRW_BUFFER_TOO_SMALL);
        ASSERT(n == 6);
        OK(TBRW_convert_utf8_to_wcs("h\xc3\xa9llo", w, &n));
        ASSERT(wcscmp(w, L"h\u00e9llo") == 0);
        n = 0;
        EXPECT(TBRW_convert_wcs_to_utf8(w, NULL, &n), TBRW_BUFFER_TOO_SMALL);
        ASSERT(n == 7);
        OK(TBRW_convert_wcs_to_utf8(w, u, &n));
        ASSERT(strcmp(u, "h\xc3\xa9llo") == 0);
        EXPECT(TBRW_convert_utf8_to_wcs("\xff", w, &n), TBRW_BAD_PARAMETER);
    }
    free(a);
    free(b);
    printf("lifecycle: ok\n");
    return 0;
}
