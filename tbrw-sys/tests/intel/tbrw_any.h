/*
 * tbrw_any.h - a TBRW library loaded at run time (dlopen), whichever it
 * is: Intel's 2020 libamplxe_tbrw_3.19.so, or this project's libtbrw.so.
 *
 * The two speak the same function names with different structures where
 * Intel's 2020 ABI departs from the 2.3 guide (docs/FORMAT.md, "Intel's
 * 2020 ABI"): TBRW_SYSTEM is 48 bytes with its node array at 40, stream
 * information 64 bytes, a module 144, events carry their id in two 16-bit
 * halves, TBRW_set_os takes a count, the data callback gets a byte count
 * (a chunk may end inside a record) and the bind data callback 32-byte
 * entries. Programs built on this header read every structure by its
 * guide-defined field offsets and take strides from what the callbacks
 * say, so one program runs against either library.
 *
 * Callbacks are passed as a pointer to a function pointer: Intel's library
 * needs that form and this project's accepts it.
 */
#ifndef TBRW_ANY_H
#define TBRW_ANY_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

typedef uint8_t U8;
typedef uint16_t U16;
typedef uint32_t U32;
typedef uint64_t U64;

/* Access modes and section identifiers (guide 8; 6 and 7 are Intel's:
 * threads and the global descriptor). */
#define ANY_READ 1u
#define ANY_WRITE 2u
#define ANY_CREATE 4u
enum { SEC_HARDWARE, SEC_SOFTWARE, SEC_PROCESS, SEC_MODULE, SEC_USER_GLOBAL, SEC_VERSION, SEC_THREAD, SEC_GLOBAL_DESC };
enum { SS_EVENTS, SS_DESCRIPTOR, SS_DATA, SS_USER, SS_INFO };

/* Little-endian field readers over a structure's bytes. */
static inline U16 rd16(const void *p, size_t at) {
    U16 v;
    memcpy(&v, (const U8 *)p + at, 2);
    return v;
}
static inline U32 rd32(const void *p, size_t at) {
    U32 v;
    memcpy(&v, (const U8 *)p + at, 4);
    return v;
}
static inline U64 rd64(const void *p, size_t at) {
    U64 v;
    memcpy(&v, (const U8 *)p + at, 8);
    return v;
}
static inline const void *rdptr(const void *p, size_t at) {
    const void *v;
    memcpy(&v, (const U8 *)p + at, sizeof v);
    return v;
}

/* The functions, as untyped entry points: each call site casts to the
 * signature it needs (they differ between the ABIs only in structure
 * layouts and callback shapes, never in the arguments passed here). */
#define ANY_FUNCTIONS(X)                                                                                           \
    X(TBRW_open) X(TBRW_close) X(TBRW_verify) X(TBRW_error_string) X(TBRW_abort_cleanup_and_close)                   \
    X(TBRW_reading_section) X(TBRW_done_section) X(TBRW_writing_section) X(TBRW_get_number_data_streams)             \
    X(TBRW_reading_stream) X(TBRW_done_stream) X(TBRW_writing_stream) X(TBRW_reading_stream_section)                 \
    X(TBRW_done_stream_section) X(TBRW_writing_stream_section) X(TBRW_get_system) X(TBRW_get_host) X(TBRW_get_os)   \
    X(TBRW_get_application) X(TBRW_get_version_info) X(TBRW_get_user_defined_global) X(TBRW_enumerate_processes)     \
    X(TBRW_enumerate_threads) X(TBRW_enumerate_modules) X(TBRW_get_stream_info) X(TBRW_enumerate_events)            \
    X(TBRW_enumerate_data_descriptor_entries) X(TBRW_enumerate_data) X(TBRW_get_user_defined_stream)                 \
    X(TBRW_is_bound) X(TBRW_dobind) X(TBRW_bind_enumerate_data) X(TBRW_bind_enumerate_modules)                       \
    X(TBRW_bind_enumerate_tids) X(TBRW_get_size_of_data_bind_entry) X(TBRW_convert_uniqueid_to_string) X(TBRW_set_system) X(TBRW_set_host)               \
    X(TBRW_set_os) X(TBRW_set_application) X(TBRW_set_version_info) X(TBRW_add_process) X(TBRW_add_thread)          \
    X(TBRW_add_module) X(TBRW_set_stream_info) X(TBRW_add_event) X(TBRW_add_data_descriptor_entry) X(TBRW_add_data) \
    X(TBRW_set_user_defined_global) X(TBRW_set_user_defined_stream)

#define ANY_DECLARE(n) static void (*n##_any)(void);
ANY_FUNCTIONS(ANY_DECLARE)
#undef ANY_DECLARE

/* Intel's only: the global section descriptor (how its reader finds the
 * module records); NULL with this project's library. */
static void (*TBRW_add_global_section_descriptor_any)(void);

/* Whether the loaded library is Intel's (its 2020 ABI). */
static int any_is_intel;

/* Loads the library at `path` and resolves every function (exit 2 when one is missing). */
static inline void any_load(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        exit(2);
    }
#define ANY_RESOLVE(n)                                                                                                 \
    *(void **)&n##_any = dlsym(lib, #n);                                                                               \
    if (!n##_any) {                                                                                                    \
        fprintf(stderr, "%s has no %s\n", path, #n);                                                                   \
        exit(2);                                                                                                       \
    }
    ANY_FUNCTIONS(ANY_RESOLVE)
#undef ANY_RESOLVE
    /* Intel's library exports its in-memory bind helpers; this project's does not. */
    any_is_intel = dlsym(lib, "TBRW_INMEM_bind_sample") != NULL;
    *(void **)&TBRW_add_global_section_descriptor_any = dlsym(lib, "TBRW_add_global_section_descriptor");
}

/* Calls function `n` with the argument types given. */
#define ANY(n, sig, ...) (((U32(*) sig) n##_any)(__VA_ARGS__))

/* A wide copy of a UTF-8 string (the caller frees it). */
static inline wchar_t *any_wide(const char *s) {
    size_t n = mbstowcs(NULL, s, 0);
    wchar_t *w;
    if (n == (size_t)-1) {
        fprintf(stderr, "not a valid multibyte string: %s\n", s);
        exit(2);
    }
    w = (wchar_t *)malloc((n + 1) * sizeof *w);
    if (!w) exit(3);
    mbstowcs(w, s, n + 1);
    return w;
}

/* Sizes of the structures each ABI hands out. */
#define ANY_SYSTEM_NODES_AT (any_is_intel ? 40u : 8u)
#define ANY_STREAM_INFO_SIZE (any_is_intel ? 64u : 56u)

#endif /* TBRW_ANY_H */
