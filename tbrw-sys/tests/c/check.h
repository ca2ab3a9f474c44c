/* Helpers shared by the C tests: every call is checked, a failure prints
 * the call, its line and the code (with its text) and exits 1. Valid C11
 * and C++. */
#ifndef TBRW_TEST_CHECK_H
#define TBRW_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "tbrw.h"

static inline void check_fail(const char *file, int line, const char *call, TBRW_U32 got, TBRW_U32 want) {
    const TBRW_CHAR *text = NULL;
    if (TBRW_error_string(got, &text) != TBRW_SUCCESS) {
        text = L"(no text)";
    }
    fprintf(stderr, "%s:%d: %s returned %u (%ls), expected %u\n", file, line, call, got, text, want);
    exit(1);
}

#define EXPECT(call, want)                                                                                             \
    do {                                                                                                               \
        TBRW_U32 got_ = (call);                                                                                        \
        if (got_ != (TBRW_U32)(want)) check_fail(__FILE__, __LINE__, #call, got_, (TBRW_U32)(want));                  \
    } while (0)
#define OK(call) EXPECT(call, TBRW_SUCCESS)
#define ASSERT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond);                              \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* A file name argument as a wide string (free it with free()). */
static inline wchar_t *wide_path(const char *path) {
    wchar_t *w = NULL;
    OK(TBRW_convert_utf8_to_wcs_malloced(path, &w));
    return w;
}

/* The text of a string id, in a static buffer; "-" for no string (id 0:
 * a thread a bind adds to the file's table has no name). */
static inline const wchar_t *text_of(TBRW_PTR h, TBRW_STRING_OR_ID id) {
    static wchar_t buf[512];
    TBRW_U32 needed = 0;
    TBRW_STRING_OR_ID copy = id;
    if (id.soi_uniqueid == 0) return L"-";
    OK(TBRW_convert_uniqueid_to_string(h, sizeof buf, &copy, buf, &needed));
    return buf;
}

#endif
