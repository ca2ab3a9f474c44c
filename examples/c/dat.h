/*
 * Shared by tbrw_reader.c and tbrw_writer.c: the .dat format of
 * docs/DAT.md (little-endian fields, strings as u32 length + UTF-8,
 * 0xFFFFFFFF for no string) and the error handling of the two programs.
 */
#ifndef TBRW_EXAMPLE_DAT_H
#define TBRW_EXAMPLE_DAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "tbrw.h"

#define DAT_MAGIC "TBRWDAT1"
enum {
    TAG_HARDWARE = 1,
    TAG_SOFTWARE = 2,
    TAG_PROCESS_THREAD = 3,
    TAG_MODULES = 4,
    TAG_USER_GLOBAL = 5,
    TAG_VERSION = 6,
    TAG_STREAM = 16,
    TAG_STREAM_INFO = 17,
    TAG_EVENTS = 18,
    TAG_DESCRIPTOR = 19,
    TAG_DATA = 20,
    TAG_USER_STREAM = 21,
    TAG_STREAM_END = 31,
    TAG_END = 255
};
#define NO_STREAM 0xFFFFFFFFu

static const char *prog;
static TBRW_PTR h;

static inline void die(TBRW_U32 code, const char *what) {
    const TBRW_CHAR *text = NULL;
    if (TBRW_error_string(code, &text) != TBRW_SUCCESS) text = L"unknown error";
    fprintf(stderr, "%s: %s: %ls (TBRW error %u)\n", prog, what, text, code);
    if (h) TBRW_abort_cleanup_and_close(h);
    exit(1);
}

static inline void fail(const char *what) {
    fprintf(stderr, "%s: %s\n", prog, what);
    if (h) TBRW_abort_cleanup_and_close(h);
    exit(1);
}

#define CALL(x)                                                                                                        \
    do {                                                                                                               \
        TBRW_U32 r_ = (x);                                                                                             \
        if (r_ != TBRW_SUCCESS) die(r_, #x);                                                                           \
    } while (0)

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) fail("out of memory");
    return p;
}

/* The file name part of a path. */
static inline const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The folder part of a path, with its trailing slash ("" for none). Caller frees. */
static inline char *dir_name(const char *path) {
    const char *s = strrchr(path, '/');
    size_t n = s ? (size_t)(s - path) + 1 : 0;
    char *d = (char *)xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

#endif
