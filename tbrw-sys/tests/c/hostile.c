/* What a careless or hostile caller and a hostile system get: paths refused
 * at TBRW_open with errno saying why, a garbage count that is
 * TBRW_NO_MEMORY (not an abort), writers of one file excluding each other,
 * and an OS write error visible through errno. Usage: hostile DIR */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The garbage count below makes the library ask malloc for ~240 GB, which
 * must fail and be reported; under AddressSanitizer that means returning
 * NULL rather than stopping the program. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#ifdef __cplusplus
}
#endif

static wchar_t *path_in(const char *dir, const char *name) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return wide_path(buf);
}

#define EXPECT_ERRNO(call, want, want_errno)                                                                           \
    do {                                                                                                               \
        errno = 12345;                                                                                                 \
        EXPECT(call, want);                                                                                            \
        if (errno != (want_errno)) {                                                                                   \
            fprintf(stderr, "%s:%d: %s: errno %d (%s), expected %d\n", __FILE__, __LINE__, #call, errno,             \
                    strerror(errno), (int)(want_errno));                                                               \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static void empty_file(const wchar_t *name) {
    TBRW_PTR h = NULL;
    TBRW_VERSION_INFO vi;
    memset(&vi, 0, sizeof vi);
    vi.version_info_size = sizeof vi;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_set_version_info(h, &vi));
    OK(TBRW_done_section(h, TBRW_VERSION_INFO_SECTION));
    OK(TBRW_close(h));
}

static void bad_paths(const char *dir) {
    TBRW_PTR h = NULL;
    wchar_t *d = wide_path(dir), *missing = path_in(dir, "no/such/dir/f.tb5");
    EXPECT_ERRNO(TBRW_open(&h, L"", TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS), TBRW_FILE_OPEN_FAILED, ENOENT);
    EXPECT_ERRNO(TBRW_open(&h, L"", TBRW_FILE_READ), TBRW_FILE_OPEN_FAILED, ENOENT);
    EXPECT_ERRNO(TBRW_open(&h, d, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS), TBRW_FILE_OPEN_FAILED, EISDIR);
    EXPECT_ERRNO(TBRW_open(&h, d, TBRW_FILE_READ), TBRW_FILE_OPEN_FAILED, EISDIR);
    EXPECT_ERRNO(TBRW_open(&h, d, TBRW_FILE_WRITE), TBRW_FILE_OPEN_FAILED, EISDIR);
    EXPECT_ERRNO(TBRW_open(&h, missing, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS), TBRW_FILE_OPEN_FAILED, ENOENT);
    EXPECT_ERRNO(TBRW_open(&h, missing, TBRW_FILE_READ), TBRW_FILE_OPEN_FAILED, ENOENT);
    ASSERT(h == NULL);
    /* Not an OS error: errno says so. */
    EXPECT_ERRNO(TBRW_open(&h, d, 0), TBRW_INVALID_ACCESS_PERMS, 0);
    free(d);
    free(missing);
}

static void garbage_node_count(const char *dir) {
    TBRW_PTR h = NULL;
    TBRW_NODE node;
    TBRW_SYSTEM sys;
    wchar_t *name = path_in(dir, "sys.tb5");
    memset(&node, 0, sizeof node);
    node.node_size = sizeof node;
    memset(&sys, 0, sizeof sys);
    sys.system_size = sizeof sys;
    sys.system_num_nodes = 0xFFFFFFFFu;
    sys.node_array = &node;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_section(h, TBRW_HARDWARE_SECTION));
    EXPECT_ERRNO(TBRW_set_system(h, &sys), TBRW_NO_MEMORY, ENOMEM);
    sys.system_num_nodes = 1; /* the handle still works */
    OK(TBRW_set_system(h, &sys));
    OK(TBRW_done_section(h, TBRW_HARDWARE_SECTION));
    OK(TBRW_abort_cleanup_and_close(h));
    free(name);
}

static void writers_exclude_each_other(const char *dir) {
    TBRW_PTR a = NULL, b = NULL;
    wchar_t *name = path_in(dir, "shared.tb5");
    empty_file(name);
    OK(TBRW_open(&a, name, TBRW_FILE_WRITE));
    /* Replacing the file would silently drop what `a` appends. */
    EXPECT_ERRNO(TBRW_open(&b, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS), TBRW_FILE_OPEN_FAILED, EWOULDBLOCK);
    EXPECT_ERRNO(TBRW_open(&b, name, TBRW_FILE_WRITE), TBRW_FILE_OPEN_FAILED, EWOULDBLOCK);
    OK(TBRW_open(&b, name, TBRW_FILE_READ)); /* readers are not writers */
    OK(TBRW_close(b));
    OK(TBRW_close(a));
    OK(TBRW_open(&b, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_abort_cleanup_and_close(b));
    free(name);
}

/* A write the OS refuses (a file size limit here: the same path as a full
 * disk) is TBRW_SAM_ERROR with the OS's reason in errno. */
static void os_write_error(const char *dir) {
    TBRW_PTR h = NULL;
    TBRW_STREAM_INFO si;
    TBRW_SAMPREC_DESC_ENTRY d;
    struct rlimit old, small;
    static unsigned char block[1 << 16];
    TBRW_U32 i, r = TBRW_SUCCESS;
    wchar_t *name = path_in(dir, "big.tb5");
    memset(&si, 0, sizeof si);
    si.stream_info_size = sizeof si;
    memset(&d, 0, sizeof d);
    d.desc_size = sizeof d;
    d.desc_type = ST_IP;
    d.desc_data_size = 8;
    OK(TBRW_open(&h, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));
    OK(TBRW_writing_stream(h, 0));
    OK(TBRW_writing_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_set_stream_info(h, 0, &si));
    OK(TBRW_done_stream_section(h, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_add_data_descriptor_entry(h, 0, &d));
    OK(TBRW_done_stream_section(h, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(h, 0, TBRW_DATA_SECTION));
    ASSERT(getrlimit(RLIMIT_FSIZE, &old) == 0);
    small = old;
    small.rlim_cur = 256 * 1024;
    signal(SIGXFSZ, SIG_IGN);
    ASSERT(setrlimit(RLIMIT_FSIZE, &small) == 0);
    for (i = 0; i < 64 && r == TBRW_SUCCESS; i++) {
        r = TBRW_add_data(h, 0, sizeof block, block);
    }
    if (r == TBRW_SUCCESS) r = TBRW_done_stream_section(h, 0, TBRW_DATA_SECTION);
    ASSERT(r == TBRW_SAM_ERROR);
    if (errno != EFBIG) {
        fprintf(stderr, "errno %d (%s), expected EFBIG\n", errno, strerror(errno));
        exit(1);
    }
    ASSERT(setrlimit(RLIMIT_FSIZE, &old) == 0);
    OK(TBRW_abort_cleanup_and_close(h));
    free(name);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    bad_paths(argv[1]);
    garbage_node_count(argv[1]);
    writers_exclude_each_other(argv[1]);
    os_write_error(argv[1]);
    printf("hostile: ok\n");
    return 0;
}
