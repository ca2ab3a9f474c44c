/*
 * Shared by tbrw_reader.c and tbrw_writer.c: the .dat format of
 * docs/DAT.md (little-endian fields, strings as u32 length + UTF-8,
 * 0xFFFFFFFF for no string), and what the two programs share around it:
 * error messages that name the file, the step and the TBRW code's text,
 * and the command line (-f/--force; an output is never an input).
 */
#ifndef TBRW_EXAMPLE_DAT_H
#define TBRW_EXAMPLE_DAT_H

/* realpath(): POSIX, hidden by a strict -std=c11 unless asked for. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
/* The file the TBRW handle works on, and what is being done with it: the
 * context of a failed TBRW call's message. */
static const char *subject = "";
static const char *step = "starting";
static char step_buf[96];
static TBRW_PTR h;

static inline void stop(void) {
    if (h) TBRW_abort_cleanup_and_close(h);
    exit(1);
}

/* A TBRW call failed: names the file, the step and the code's text. */
static inline void die(TBRW_U32 code) {
    const TBRW_CHAR *text = NULL;
    if (TBRW_error_string(code, &text) != TBRW_SUCCESS) text = L"unknown error";
    fprintf(stderr, "%s: %s: %s: %ls (TBRW error %u)\n", prog, subject, step, text, code);
    stop();
}

/* A failure about `path`; `err` (an errno value, or 0) adds the system's reason. */
static inline void fail_at(const char *path, const char *what, int err) {
    fprintf(stderr, "%s: %s: %s%s%s\n", prog, path, what, err ? ": " : "", err ? strerror(err) : "");
    stop();
}

static inline void fail(const char *what) {
    fprintf(stderr, "%s: %s\n", prog, what);
    stop();
}

static inline const char *section_name(TBRW_SECTION_IDENTIFIER s) {
    static const char *names[] = {"hardware", "software", "process and thread", "module", "user-defined", "version info"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

static inline const char *stream_section_name(TBRW_STREAM_SECTION_IDENTIFIER s) {
    static const char *names[] = {"event description", "data description", "data", "user-defined", "info"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

/* The step for a global section: "<doing> the <name> section". */
static inline void section_step(const char *doing, TBRW_SECTION_IDENTIFIER s) {
    snprintf(step_buf, sizeof step_buf, "%s the %s section", doing, section_name(s));
    step = step_buf;
}

/* The step for a stream, or one of its sections (what < 0: the stream). */
static inline void stream_step(const char *doing, TBRW_U32 n, int what) {
    if (what < 0)
        snprintf(step_buf, sizeof step_buf, "%s stream %u", doing, n);
    else
        snprintf(step_buf, sizeof step_buf, "%s stream %u's %s section", doing, n,
                 stream_section_name((TBRW_STREAM_SECTION_IDENTIFIER)what));
    step = step_buf;
}

#define CALL(x)                                                                                                        \
    do {                                                                                                               \
        TBRW_U32 r_ = (x);                                                                                             \
        if (r_ != TBRW_SUCCESS) die(r_);                                                                               \
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

/* The path with its folder resolved (the file itself need not exist), or
 * NULL. Caller frees. */
static inline char *resolved(const char *path) {
    char *r = realpath(path, NULL), *dir, *d;
    const char *base = base_name(path);
    if (r) return r;
    dir = dir_name(path);
    d = realpath(*dir ? dir : ".", NULL);
    free(dir);
    if (!d) return NULL;
    r = (char *)xmalloc(strlen(d) + strlen(base) + 2);
    sprintf(r, "%s/%s", d, base);
    free(d);
    return r;
}

/* Whether two paths name the same file: the same device and inode when both
 * exist (hard and symbolic links count), else the same resolved path. */
static inline int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    char *ra, *rb;
    int same;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    ra = resolved(a);
    rb = resolved(b);
    same = ra && rb ? strcmp(ra, rb) == 0 : strcmp(a, b) == 0;
    free(ra);
    free(rb);
    return same;
}

/* Exits with a message naming `out` when it is the input `in`, or when it
 * exists and `force` is not set. */
static inline void check_output(const char *out, const char *in, int force) {
    struct stat st;
    if (same_file(out, in)) {
        if (strcmp(out, in) == 0)
            fprintf(stderr, "%s: %s is an input: it cannot also be the output\n", prog, out);
        else
            fprintf(stderr, "%s: %s is the input %s: it cannot also be the output\n", prog, out, in);
        exit(1);
    }
    if (!force && lstat(out, &st) == 0) {
        fprintf(stderr, "%s: %s exists: give --force to replace it\n", prog, out);
        exit(1);
    }
}

/* The command line of both programs: two paths and -f/--force anywhere,
 * -h/--help. Exits unless there are exactly two paths, stored in `paths`. */
static inline void parse_in_out(int argc, char **argv, const char *usage, const char **paths, int *force) {
    int i, n = 0, only_paths = 0;
    *force = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_paths && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            printf("%s\n", usage);
            exit(0);
        } else if (!only_paths && (strcmp(a, "-f") == 0 || strcmp(a, "--force") == 0)) {
            *force = 1;
        } else if (!only_paths && strcmp(a, "--") == 0) {
            only_paths = 1;
        } else if (!only_paths && a[0] == '-' && a[1]) {
            fprintf(stderr, "%s: unknown option '%s'\n%s\n", prog, a, usage);
            exit(2);
        } else if (n == 2) {
            fprintf(stderr, "%s: two paths expected: '%s' is one too many\n%s\n", prog, a, usage);
            exit(2);
        } else {
            paths[n++] = a;
        }
    }
    if (n < 2) {
        fprintf(stderr, "%s: two paths expected, got %d\n%s\n", prog, n, usage);
        exit(2);
    }
}

#endif
