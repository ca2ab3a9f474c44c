/*
 * tbrw.h - the TBRW (TB5 reader/writer) C API, revision 2.3, as
 * implemented by the tbrw project: link with -ltbrw.
 *
 * Conventions (see the project README, "The C API"):
 * - Every function returns TBRW_SUCCESS (0) or a TBRW_* error code;
 *   TBRW_error_string turns a code into text.
 * - A failing function also sets errno: to the operating system's error
 *   behind the failure (ENOSPC for a full disk, EISDIR, ENOENT, EACCES for
 *   a bad path at TBRW_open, EWOULDBLOCK when another writer has the file),
 *   ENOMEM with TBRW_NO_MEMORY, and 0 when the OS was not involved (a
 *   damaged file, a lifecycle error). strerror(errno) gives its message.
 *   A successful call leaves errno alone.
 * - TBRW_enumerate_data hands out the records in place in the mapped file:
 *   the buffer is read-only (guide 5.9: const void *); writing into it faults.
 * - A file open for reading is memory-mapped: if another process truncates
 *   it meanwhile, touching the lost pages raises SIGBUS (see the README).
 * - Strings are written as TBRW_CHAR (wchar_t) pointers and read back as
 *   unique ids; TBRW_convert_uniqueid_to_string resolves an id (id 0 means
 *   "no string": TBRW_INVALID_STRING). Ids have bit 63 set and name the
 *   handle they came from: a structure read from one handle may be given to
 *   set_/add_ of another while the first is open (after that:
 *   TBRW_BAD_PARAMETER). An id is never taken for a pointer.
 * - get_ functions follow the buffer protocol: pass 0 and NULL to learn the
 *   size needed; a buffer too small gives TBRW_BUFFER_TOO_SMALL with the
 *   size needed in *size_buffer_used. Sizes are in bytes.
 * - enumerate_ callbacks receive the entries in chunks; return TRUE for
 *   more, FALSE to stop; any other value stops and is returned unchanged.
 *   The callback argument may be the function (the guide's style, this
 *   header's default) or the address of a variable holding a pointer to it
 *   (Intel's style: define TBRW_INTEL_HEADERS before including, and the
 *   declarations are Intel's; see tbrw_types.h). Anything else is
 *   TBRW_BAD_PARAMETER.
 * - Functions of one handle may be called from any thread; the handle
 *   serialises them. Callbacks may call other functions on the same handle.
 */
#ifndef TBRW_H
#define TBRW_H

#include "tbrw_types.h"
#include "samprec_shared.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- error codes */

#define TBRW_SUCCESS 0
#define VT_SUCCESS TBRW_SUCCESS
#define TBRW_SAM_ERROR 22
#define TBRW_INVALID_SAMPLE_FILE 24
#define TBRW_UNKNOWN_SECTION_NUMBER 25
#define TBRW_NO_MEMORY 26
#define TBRW_BUFFER_OVERFLOW 29
#define TBRW_SAMPLE_FILE_MAPPING_ERROR 34
#define TBRW_UNEXPECTED_NULL_PTR 36
#define TBRW_ENTRY_NOT_FOUND 39
#define TBRW_FILE_OPEN_FAILED 44
#define TBRW_BAD_PARAMETER 63
#define TBRW_UNEXPECTED_VALUE 72
#define TBRW_NOT_IMPLEMENTED 73
#define TBRW_SECTION_ALREADY_IN_USE 77
#define TBRW_SECTION_NOT_EXIST 78
#define TBRW_STREAM_NOT_EXIST 79
#define TBRW_INVALID_STREAM 80
#define TBRW_STREAM_ALREADY_IN_USE 81
#define TBRW_INVALID_ERROR_CODE 83
#define TBRW_INCOMPATIBLE_VERSION 84
#define TBRW_INVALID_READ_START 86
#define TBRW_INVALID_STRING 97
#define TBRW_UNSUPPORTED_DATA_SIZE 98
#define TBRW_BUFFER_TOO_SMALL 103
#define TBRW_INVALID_ACCESS_PERMS 111
#define TBRW_TB5_IS_NOT_BOUND 113
#define TBRW_SECTION_NOT_READABLE 124
#define TBRW_SECTION_NOT_WRITEABLE 125
#define TBRW_GLOBAL_SECTION_NOT_CLOSED 126
#define TBRW_STREAM_SECTION_NOT_CLOSED 127
#define TBRW_STREAM_NOT_CLOSED 128
#define TBRW_STREAM_NOT_BOUND 129
#define TBRW_NOT_ALL_SECTIONS_CLOSED 131
#define TBRW_BIND_MODULES_NOT_SORTED 142
#define TBRW_UNEXPECTED_NUM_CPUIDS 143
#define TBRW_UNSUPPORTED_ARCH_TYPE 144
#define TBRW_NO_DATA_TO_WRITE 145

/* The buffer type of the get_ functions of typed structures: the guide's
 * void *, or Intel's typed pointer with TBRW_INTEL_HEADERS. */
#if defined(TBRW_INTEL_HEADERS)
#define TBRW_GET_BUFFER(type) type
#else
#define TBRW_GET_BUFFER(type) void
#endif

/* ---------------------------------------------------------------- high level */

TBRW_U32 TBRW_get_version(OUT TBRW_U32 *major, OUT TBRW_U32 *minor);
TBRW_U32 TBRW_open(OUT TBRW_PTR *ptr, IN const TBRW_CHAR *filename, IN TBRW_U32 access_mode);
TBRW_U32 TBRW_close(IN TBRW_PTR ptr);
TBRW_U32 TBRW_error_string(IN TBRW_U32 error_code, OUT const TBRW_CHAR **error_string);
TBRW_U32 TBRW_abort_cleanup_and_close(IN TBRW_PTR ptr);
TBRW_U32 TBRW_verify(IN TBRW_PTR ptr);
TBRW_U32 TBRW_convert_uniqueid_to_string(IN TBRW_PTR ptr, IN TBRW_U32 size_of_buffer,
                                         IN const TBRW_STRING_OR_ID *string_id, OUT TBRW_CHAR *buffer,
                                         OPTIONAL OUT TBRW_U32 *size_buffer_needed);

/* ---------------------------------------------------------------- sections and streams */

TBRW_U32 TBRW_reading_section(IN TBRW_PTR ptr, IN TBRW_SECTION_IDENTIFIER section);
TBRW_U32 TBRW_writing_section(IN TBRW_PTR ptr, IN TBRW_SECTION_IDENTIFIER section);
TBRW_U32 TBRW_done_section(IN TBRW_PTR ptr, IN TBRW_SECTION_IDENTIFIER section);

TBRW_U32 TBRW_get_number_data_streams(IN TBRW_PTR ptr, OUT TBRW_U32 *numStreams);
TBRW_U32 TBRW_reading_stream(IN TBRW_PTR ptr, IN TBRW_U32 stream);
TBRW_U32 TBRW_writing_stream(IN TBRW_PTR ptr, IN TBRW_U32 stream);
TBRW_U32 TBRW_done_stream(IN TBRW_PTR ptr, IN TBRW_U32 stream);

TBRW_U32 TBRW_reading_stream_section(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_STREAM_SECTION_IDENTIFIER section);
TBRW_U32 TBRW_writing_stream_section(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_STREAM_SECTION_IDENTIFIER section);
TBRW_U32 TBRW_done_stream_section(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_STREAM_SECTION_IDENTIFIER section);

/* ---------------------------------------------------------------- global sections */

TBRW_U32 TBRW_set_system(IN TBRW_PTR ptr, IN TBRW_SYSTEM *system);
TBRW_U32 TBRW_get_system(IN TBRW_PTR ptr, IN TBRW_U32 size_of_buffer, OUT TBRW_SYSTEM *buf_ptr,
                         OPTIONAL OUT TBRW_U32 *size_buffer_used);

TBRW_U32 TBRW_set_host(IN TBRW_PTR ptr, IN TBRW_HOST *host);
TBRW_U32 TBRW_get_host(IN TBRW_PTR ptr, IN TBRW_U32 size_of_buffer, IN TBRW_GET_BUFFER(TBRW_HOST) *buf_ptr,
                       OPTIONAL OUT TBRW_U32 *size_buffer_used);
TBRW_U32 TBRW_set_os(IN TBRW_PTR ptr, IN TBRW_OS *os);
TBRW_U32 TBRW_get_os(IN TBRW_PTR ptr, IN TBRW_U32 size_of_buffer, IN TBRW_GET_BUFFER(TBRW_OS) *buf_ptr,
                     OPTIONAL OUT TBRW_U32 *size_buffer_used);
TBRW_U32 TBRW_set_application(IN TBRW_PTR ptr, IN TBRW_APPLICATION *application);
TBRW_U32 TBRW_get_application(IN TBRW_PTR ptr, IN TBRW_U32 size_of_buffer,
                              IN TBRW_GET_BUFFER(TBRW_APPLICATION) *buf_ptr, OPTIONAL OUT TBRW_U32 *size_buffer_used);

TBRW_U32 TBRW_add_process(IN TBRW_PTR ptr, IN TBRW_PID *process);
TBRW_U32 TBRW_get_one_pid(IN TBRW_PTR ptr, IN TBRW_U64 pid_index, OUT const TBRW_PID **p_pid);
TBRW_U32 TBRW_enumerate_processes(IN TBRW_PTR ptr, IN TBRW_PID_CALLBACK *callback_func, IN void *user_ptr,
                                  IN TBRW_U64 start_index);
TBRW_U32 TBRW_add_thread(IN TBRW_PTR ptr, IN TBRW_TID *thread);
TBRW_U32 TBRW_get_one_tid(IN TBRW_PTR ptr, IN TBRW_U64 tid_index, OUT const TBRW_TID **p_tid);
TBRW_U32 TBRW_enumerate_threads(IN TBRW_PTR ptr, IN TBRW_TID_CALLBACK *callback_func, IN void *user_ptr,
                                IN TBRW_U64 start_index);
TBRW_U32 TBRW_bind_enumerate_threads(IN TBRW_PTR ptr, IN BIND_TID_CALLBACK *callback_func, IN void *user_ptr,
                                     IN TBRW_U64 start_index);
TBRW_U32 TBRW_bind_enumerate_tids(IN TBRW_PTR ptr, IN BIND_TID_CALLBACK *callback_func, IN void *user_ptr,
                                  IN TBRW_U64 start_index);
TBRW_U32 TBRW_get_size_of_tid_bind_entry(IN TBRW_PTR ptr, IN TBRW_U32 data_stream, OUT TBRW_U32 *sizeof_tid_bind_entry);

TBRW_U32 TBRW_add_module(IN TBRW_PTR ptr, IN TBRW_MODULE *module);
TBRW_U32 TBRW_get_one_module(IN TBRW_PTR ptr, IN TBRW_U64 module_index, OUT const TBRW_MODULE **p_module);
TBRW_U32 TBRW_enumerate_modules(IN TBRW_PTR ptr, IN TBRW_MODULE_CALLBACK *callback_func, IN void *user_ptr,
                                IN TBRW_U64 start_index);
TBRW_U32 TBRW_bind_enumerate_modules(IN TBRW_PTR ptr, IN BIND_MODULE_CALLBACK *callback_func, IN void *user_ptr,
                                     IN TBRW_U64 start_index);
TBRW_U32 TBRW_get_size_of_module_bind_entry(IN TBRW_PTR ptr, IN TBRW_U32 data_stream,
                                            OUT TBRW_U32 *sizeof_module_bind_entry);

TBRW_U32 TBRW_set_version_info(IN TBRW_PTR tbrw_ptr, IN TBRW_VERSION_INFO *version_info);
TBRW_U32 TBRW_get_version_info(IN TBRW_PTR tbrw_ptr, IN TBRW_U32 size_of_buffer,
                               IN TBRW_GET_BUFFER(TBRW_VERSION_INFO) *buf_ptr, OPTIONAL OUT TBRW_U32 *size_buffer_used);

TBRW_U32 TBRW_set_user_defined_global(IN TBRW_PTR ptr, IN TBRW_U32 size_of_data, IN void *data_ptr);
TBRW_U32 TBRW_get_user_defined_global(IN TBRW_PTR ptr, IN TBRW_U32 size_of_buffer, IN void *buf_ptr,
                                      OPTIONAL OUT TBRW_U32 *size_buffer_used);

/* ---------------------------------------------------------------- stream sections */

TBRW_U32 TBRW_get_stream_info(IN TBRW_PTR tbrw_ptr, IN TBRW_U32 stream, IN TBRW_U32 size_of_buffer,
                              IN TBRW_GET_BUFFER(TBRW_STREAM_INFO) *buf_ptr, OPTIONAL OUT TBRW_U32 *size_buffer_used);
TBRW_U32 TBRW_set_stream_info(IN TBRW_PTR tbrw_ptr, IN TBRW_U32 stream, IN TBRW_STREAM_INFO *stream_info);

TBRW_U32 TBRW_add_event(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_EVENT *event_descriptor_entry);
TBRW_U32 TBRW_add_events_from_file(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_CHAR *filename, IN TBRW_U32 numEvents);
TBRW_U32 TBRW_enumerate_events(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_EVENT_CALLBACK *callback_func,
                               IN void *user_ptr, IN TBRW_U64 start_index);

TBRW_U32 TBRW_add_data_descriptor_entry(IN TBRW_PTR ptr, IN TBRW_U32 stream,
                                        IN TBRW_SAMPREC_DESC_ENTRY *data_descriptor_entry);
TBRW_U32 TBRW_enumerate_data_descriptor_entries(IN TBRW_PTR ptr, IN TBRW_U32 stream,
                                                TBRW_DATA_DESC_CALLBACK *callback_func, void *user_ptr);

TBRW_U32 TBRW_add_data(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_U32 size_of_data_entry, IN void *data_entry);
TBRW_U32 TBRW_add_data_from_file(IN TBRW_PTR ptr, IN TBRW_U32 stream, TBRW_CHAR *filename);
TBRW_U32 TBRW_enumerate_data(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_DATA_CALLBACK *callback_func,
                             IN void *user_ptr, IN TBRW_U64 start_index);
TBRW_U32 TBRW_bind_enumerate_data(IN TBRW_PTR ptr, IN TBRW_U32 data_stream, IN BIND_DATA_CALLBACK *callback_func,
                                  IN void *user_ptr, IN TBRW_U64 start_index);
TBRW_U32 TBRW_get_size_of_data_bind_entry(IN TBRW_PTR ptr, IN TBRW_U32 data_stream,
                                          OUT TBRW_U32 *sizeof_data_bind_entry);
/* Intel's, beyond the guide: the bytes of one record of a stream, as its data
 * descriptor defines them (the records' size whatever the file's layout; no
 * section needs to be open). */
TBRW_U32 TBRW_get_size_of_each_data_entry(IN TBRW_PTR ptr, IN TBRW_U32 stream, OUT TBRW_U32 *size_of_each_data_entry);
TBRW_U32 TBRW_is_bound(IN TBRW_PTR ptr, IN TBRW_U32 data_stream, OUT TBRW_U32 *is_bound);
TBRW_U32 TBRW_dobind(IN TBRW_PTR ptr, IN TBRW_U32 data_stream);
TBRW_U32 TBRW_unbind(IN TBRW_PTR ptr, IN TBRW_U32 data_stream);

TBRW_U32 TBRW_set_user_defined_stream(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_U32 size_of_data, IN void *data_ptr);
TBRW_U32 TBRW_get_user_defined_stream(IN TBRW_PTR ptr, IN TBRW_U32 stream, IN TBRW_U32 size_of_buffer,
                                      IN void *buf_ptr, OPTIONAL OUT TBRW_U32 *size_buffer_used);

/* ---------------------------------------------------------------- string conversions */

/* *wcs_size / *utf8_size: in characters / bytes, including the terminating NUL. */
TBRW_U32 TBRW_convert_utf8_to_wcs(IN const char *utf8, OUT wchar_t *wcs, INOUT TBRW_U32 *wcs_size);
TBRW_U32 TBRW_convert_wcs_to_utf8(IN const wchar_t *wcs, OUT char *utf8, INOUT TBRW_U32 *utf8_size);
/* Allocate the result with malloc; the caller frees it. */
TBRW_U32 TBRW_convert_utf8_to_wcs_malloced(IN const char *utf8, OUT wchar_t **wcs);
TBRW_U32 TBRW_convert_wcs_to_utf8_malloced(IN const wchar_t *wcs, OUT char **utf8);

#ifdef __cplusplus
}
#endif

#endif /* TBRW_H */
