/* Every enumeration with Intel's calling convention, written to Intel's
 * headers: TBRW_INTEL_HEADERS makes the callback types pointers, a program
 * keeps its callbacks in local variables and passes their addresses (as
 * Intel's sfdump5 does), and Intel's other names are used as Intel's
 * headers give them. Prints what every callback is handed from FILE (made
 * by enumerate_guide), which must be what enumerate_guide printed. An
 * argument that is neither a function nor a pointer to one is refused.
 * Usage: enumerate_intel FILE.tb5 */
#define TBRW_INTEL_HEADERS
#include "enum_dump.h"

#if !defined(TBRW_OS_LINUX) || !defined(TBRW_64BIT) || !defined(TBRW_ARCH_PENTIUM) || defined(TBRW_32BIT)
#error "Intel's platform names"
#endif

TBRW_VERIFY_SIZEOF(TBRW_MODULE, 104);
TBRW_VERIFY_SIZEOF(TBRW_SAMPREC_DESC_ENTRY, 72);
TBRW_VERIFY_SIZEOF(TBRW_UIOP, 8);

/* A function declared with Intel's decorations. */
TBRW_API TBRW_U32 TBRW_APICALL count_entries(TBRW_U32 n);
TBRW_API TBRW_U32 TBRW_APICALL count_entries(TBRW_U32 n) {
    return n;
}

/* Intel's prototypes exactly: these assignments need the same types. */
static void prototypes_are_intels(void) {
    TBRW_U32 (*data)(TBRW_PTR, TBRW_U32, TBRW_DATA_CALLBACK *, void *, TBRW_U64) = TBRW_enumerate_data;
    TBRW_U32 (*bind)(TBRW_PTR, BIND_MODULE_CALLBACK *, void *, TBRW_U64) = TBRW_bind_enumerate_modules;
    TBRW_U32 (*host)(TBRW_PTR, TBRW_U32, TBRW_HOST *, TBRW_U32 *) = TBRW_get_host;
    TBRW_U32 (*info)(TBRW_PTR, TBRW_U32, TBRW_U32, TBRW_STREAM_INFO *, TBRW_U32 *) = TBRW_get_stream_info;
    TBRW_U32 (*version)(TBRW_PTR, TBRW_U32, TBRW_VERSION_INFO *, TBRW_U32 *) = TBRW_get_version_info;
    ASSERT(data != NULL && bind != NULL && host != NULL && info != NULL && version != NULL);
}

/* Intel's other names, with Intel's meaning. */
static void names_are_intels(void) {
    TBRW_FILETIME ft;
    PTBRW_FILETIME pft = &ft;
    int local = 0;
    TBRW_UIOP u = (TBRW_UIOP)&local;
    TBRW_SIOP s = (TBRW_SIOP)&local;
    TBRW_VERIFY_SIZEOF(TBRW_SIOP, 8);
    ft.dwLowDateTime = 1;
    ft.dwHighDateTime = 2;
    ASSERT(pft->dwHighDateTime == 2);
    ASSERT((int *)u == &local && (int *)s == &local && sizeof u == sizeof(void *) && (TBRW_SIOP)-1 < 0);
    ASSERT(NULL_OFFSET == 0 && count_entries(3) == 3);
}

/* Each enumeration refuses `arg`, a pointer to anything but a callback. */
static void all_refuse(TBRW_PTR h, void *arg, TBRW_U32 want) {
    EXPECT(TBRW_enumerate_data(h, 0, (TBRW_DATA_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_enumerate_modules(h, (TBRW_MODULE_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_enumerate_processes(h, (TBRW_PID_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_enumerate_threads(h, (TBRW_TID_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_enumerate_events(h, 0, (TBRW_EVENT_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_enumerate_data_descriptor_entries(h, 0, (TBRW_DATA_DESC_CALLBACK *)arg, NULL), want);
    EXPECT(TBRW_bind_enumerate_data(h, 0, (BIND_DATA_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_bind_enumerate_modules(h, (BIND_MODULE_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_bind_enumerate_threads(h, (BIND_TID_CALLBACK *)arg, NULL, 0), want);
    EXPECT(TBRW_bind_enumerate_tids(h, (BIND_TID_CALLBACK *)arg, NULL, 0), want);
}

int main(int argc, char **argv) {
    TBRW_PTR h = NULL;
    wchar_t *name;
    /* Intel's style: TBRW_DATA_CALLBACK cb = function; ... &cb. */
    TBRW_DATA_CALLBACK data = dump_data;
    TBRW_DATA_CALLBACK first_only = dump_first_only;
    TBRW_MODULE_CALLBACK module = dump_module;
    TBRW_PID_CALLBACK pid = dump_pid;
    TBRW_TID_CALLBACK tid = dump_tid;
    TBRW_EVENT_CALLBACK event = dump_event;
    TBRW_DATA_DESC_CALLBACK desc = dump_desc;
    BIND_DATA_CALLBACK bind_data = dump_bind_data;
    BIND_MODULE_CALLBACK bind_module = dump_bind_module;
    BIND_TID_CALLBACK bind_tid = dump_bind_tid;
    const dump_callbacks cb = {&data,  &first_only, &module,    &pid,         &tid,
                               &event, &desc,       &bind_data, &bind_module, &bind_tid};
    TBRW_DATA_CALLBACK none = NULL;
    void *zeros;
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.tb5\n", argv[0]);
        return 2;
    }
    prototypes_are_intels();
    names_are_intels();
    name = wide_path(argv[1]);
    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    dump_all(h, &cb);

    /* A heap buffer of zeros, a variable holding NULL, data on the stack:
     * neither a function nor a pointer to one. */
    zeros = calloc(16, sizeof(void *));
    ASSERT(zeros != NULL);
    all_refuse(h, zeros, TBRW_BAD_PARAMETER);
    all_refuse(h, (char *)zeros + 3, TBRW_BAD_PARAMETER);
    all_refuse(h, &none, TBRW_BAD_PARAMETER);
    all_refuse(h, &h, TBRW_BAD_PARAMETER);
    all_refuse(h, NULL, TBRW_UNEXPECTED_NULL_PTR);
    free(zeros);
    OK(TBRW_close(h));
    free(name);
    return 0;
}
