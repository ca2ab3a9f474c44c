/*
 * tbrw_types.h - data types of the TBRW (TB5 reader/writer) C API, as
 * implemented by the tbrw project.
 *
 * Layout-compatible with the TBRW 2.3 headers on x86_64 Linux (LP64,
 * wchar_t of 4 bytes): every size and offset is checked below and by the
 * project's C tests. Written for this project; names and numbers follow
 * the TBRW API.
 *
 * Two declaration styles (see "callbacks" below and the README):
 * - by default, the guide's: callback types are function types, so a
 *   program passes a callback function's name (guide 5.9, chapter 10);
 * - with TBRW_INTEL_HEADERS defined before the first include (or
 *   -DTBRW_INTEL_HEADERS), Intel's: callback types are pointer types, a
 *   program keeps one in a variable and passes its address, and the get_
 *   functions of typed structures take typed buffers.
 * The library accepts both forms of callback argument at run time, so
 * binaries built against either header (or Intel's own) work unchanged.
 */
#ifndef TBRW_TYPES_H
#define TBRW_TYPES_H

#include <stddef.h>
#include <wchar.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- Intel's platform names */

/* The platform this header was compiled for, as Intel's header names it
 * (it decides them itself, whatever the includer defined). */
#undef TBRW_OS_LINUX
#undef TBRW_32BIT
#undef TBRW_64BIT
#undef TBRW_ARCH_PENTIUM
#if defined(__linux__)
#define TBRW_OS_LINUX 1
#endif
#if defined(__x86_64__) || defined(__i386__)
#define TBRW_ARCH_PENTIUM 1
#endif
#if defined(__LP64__) || defined(_WIN64)
#define TBRW_64BIT 1
#else
#define TBRW_32BIT 1
#endif

/* ---------------------------------------------------------------- basic types */

typedef wchar_t TBRW_CHAR;
typedef unsigned char TBRW_U8;
typedef unsigned short TBRW_U16;
typedef unsigned int TBRW_U32;
typedef signed int TBRW_S32;
typedef signed long long TBRW_S64;
typedef unsigned long long TBRW_U64;
typedef void *TBRW_PTR;

/* Integers as wide as a pointer: a pointer cast to one (for arithmetic)
 * and back loses no bits. Signed / unsigned integer or pointer. */
#if defined(TBRW_64BIT)
typedef TBRW_S64 TBRW_SIOP;
typedef TBRW_U64 TBRW_UIOP;
#else
typedef TBRW_S32 TBRW_SIOP;
typedef TBRW_U32 TBRW_UIOP;
#endif

#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef INOUT
#define INOUT
#endif
#ifndef OPTIONAL
#define OPTIONAL
#endif
#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

/* Export and calling-convention decorations of the prototypes: nothing on Linux. */
#define TBRW_API
#define TBRW_APICALL

/* An offset that points nowhere. */
#define NULL_OFFSET 0

/* A compile-time check that a type has the size the program expects, at
 * file or block scope: TBRW_VERIFY_SIZEOF(TBRW_MODULE, 104); Compilation
 * fails when the size differs. */
#ifdef __cplusplus
#define TBRW_VERIFY_SIZEOF(type, size) static_assert(sizeof(type) == (size), "sizeof(" #type ") is not " #size)
#else
#define TBRW_VERIFY_SIZEOF(type, size) _Static_assert(sizeof(type) == (size), "sizeof(" #type ") is not " #size)
#endif

/* A string: a pointer to a wide string when writing, a unique id when reading. */
typedef struct __string_or_id {
    union {
        TBRW_U64 soi_uniqueid;
        TBRW_CHAR *soi_ptr;
    };
} TBRW_STRING_OR_ID;

/* A Windows FILETIME: 100 ns ticks since 1601. */
typedef struct __vtune_analyzer_filetime {
    TBRW_U32 dwLowDateTime;
    TBRW_U32 dwHighDateTime;
} TBRW_FILETIME, VTUNE_ANALYZER_FILETIME, *PTBRW_FILETIME;

/* ---------------------------------------------------------------- section identifiers */

typedef enum {
    TBRW_HARDWARE_SECTION = 0,
    TBRW_SOFTWARE_SECTION = 1,
    TBRW_PROCESS_THREAD_SECTION = 2,
    TBRW_MODULE_SECTION = 3,
    TBRW_USER_DEFINED_GLOBAL_SECTION = 4,
    TBRW_VERSION_INFO_SECTION = 5
} TBRW_SECTION_IDENTIFIER;

typedef enum {
    TBRW_EVENT_DESCRIPTION_SECTION = 0,
    TBRW_DATA_DESCRIPTION_SECTION = 1,
    TBRW_DATA_SECTION = 2,
    TBRW_USER_DEFINED_STREAM_SECTION = 3,
    TBRW_STREAM_INFO_SECTION = 4
} TBRW_STREAM_SECTION_IDENTIFIER;

typedef enum {
    TBRW_SAMPLING_STREAM = 1,
    TBRW_AGGREGATED_STREAM = 2,
    TBRW_BOOKMARK_STREAM = 3,
    TBRW_BIND_DATA_INFORMATION_STREAM = 4,
    TBRW_BIND_MODULE_INFORMATION_STREAM = 5,
    TBRW_BIND_PID_INFORMATION_STREAM = 6,
    TBRW_BIND_TID_INFORMATION_STREAM = 7,
    TBRW_CUSTOM_STREAM = 8
} TBRW_STREAM_TYPE;

/* TBRW_open access modes */
#define TBRW_FILE_READ 0x1
#define TBRW_FILE_WRITE 0x2
#define TBRW_FILE_CREATE_ALWAYS 0x4

/* ---------------------------------------------------------------- hardware */

#define CPU_ARCHITECTURE_NOT_SET 0
#define CPU_ARCHITECTURE_IA32 1
#define CPU_ARCHITECTURE_IA64 2

typedef enum {
    TBRW_GST_UNK = 0,
    TBRW_GST_X86 = 1,
    TBRW_GST_ITANIUM = 2,
    TBRW_GST_RESERVED1 = 3,
    TBRW_GST_RESERVED2 = 4,
    TBRW_GST_EM64T = 5,
    TBRW_GST_RESERVED3 = 6
} TBRW_GEN_ENTRY_SUBTYPES;

typedef struct __TBRW_cpuid_ia32 {
    TBRW_U32 cpuid_eax_input;
    TBRW_U32 cpuid_eax;
    TBRW_U32 cpuid_ebx;
    TBRW_U32 cpuid_ecx;
    TBRW_U32 cpuid_edx;
    TBRW_U32 reserved;
} TBRW_CPUID_IA32;

typedef struct __TBRW_cpuid_ia64 {
    TBRW_U64 cpuid_select;
    TBRW_U64 cpuid_val;
    TBRW_U64 reserved;
} TBRW_CPUID_IA64;

/* arch_type TBRW_GST_ITANIUM uses cpuid_ia64_array, every other type cpuid_ia32_array. */
typedef struct __TBRW_cpu_arch {
    TBRW_U32 arch_size;
    TBRW_U16 arch_type;
    TBRW_U16 arch_num_cpuid;
    union {
        TBRW_CPUID_IA32 *cpuid_ia32_array;
        TBRW_CPUID_IA64 *cpuid_ia64_array;
    };
} TBRW_CPU_ARCH;

typedef struct __TBRW_cpu {
    TBRW_U32 cpu_size;
    TBRW_U32 cpu_number;
    TBRW_U32 cpu_native_arch_type;
    TBRW_U32 cpu_intel_processor_number;
    TBRW_U32 cpu_speed_mhz;
    TBRW_U32 cpu_fsb_mhz;
    TBRW_U32 cpu_cache_L2;
    TBRW_U32 cpu_cache_L3;
    TBRW_S64 cpu_tsc_offset;
    union {
        TBRW_U16 cpu_package_num;
        TBRW_U16 cpu_pacakge_num; /* the guide's spelling */
    };
    TBRW_U16 cpu_core_num;
    TBRW_U16 cpu_hardware_thread_num;
    TBRW_U16 cpu_threads_per_core;
    TBRW_U32 num_cpu_arch_array;
    TBRW_U32 dummy;
    TBRW_CPU_ARCH *cpu_arch_array;
} TBRW_CPU;

typedef struct __TBRW_node {
    TBRW_U32 node_size;
    TBRW_U32 node_type_from_shell;
    TBRW_U32 node_id;
    TBRW_U32 node_num_available;
    TBRW_U32 node_num_used;
    TBRW_U32 reserved;
    TBRW_U64 node_physical_memory; /* MB */
    TBRW_CPU *cpu_array;           /* node_num_available entries */
} TBRW_NODE;

typedef struct __TBRW_system {
    TBRW_U32 system_size;
    TBRW_U32 system_num_nodes;
    TBRW_NODE *node_array;
} TBRW_SYSTEM;

/* ---------------------------------------------------------------- software */

#define TBRW_OSFAMILY_WIN32 0x00000001
#define TBRW_OSFAMILY_WIN64 0x00000002
#define TBRW_OSFAMILY_WINCE 0x00000003
#define TBRW_OSFAMILY_XOS 0x00000004
#define TBRW_OSFAMILY_LINUX32 0x00000005
#define TBRW_OSFAMILY_LINUX64 0x00000006

typedef struct __TBRW_host {
    TBRW_U32 host_size;
    TBRW_U32 reserved;
    TBRW_STRING_OR_ID host_ip_address;
    TBRW_STRING_OR_ID host_name;
} TBRW_HOST;

typedef struct __TBRW_os {
    TBRW_U32 os_size;
    TBRW_U32 os_platform;
    TBRW_U32 os_major;
    TBRW_U32 os_minor;
    TBRW_U32 os_build;
    TBRW_U32 os_extra;
    TBRW_STRING_OR_ID os_name;
    TBRW_STRING_OR_ID os_name_extra;
} TBRW_OS;

typedef struct __TBRW_application {
    TBRW_U32 app_size;
    TBRW_U32 app_reserved;
    TBRW_U32 app_page_size;
    TBRW_U32 app_alloc_granularity;
    TBRW_U64 app_min_app_addr;
    TBRW_U64 app_max_app_addr;
} TBRW_APPLICATION;

/* ---------------------------------------------------------------- processes, threads, modules */

#define TBRW_PIDTID_CREATED 0x0
#define TBRW_PIDTID_DESTROYED 0x1
#define TBRW_PIDTID_WHEN_SAMP_COUNT 0x0
#define TBRW_PIDTID_WHEN_TSC 0x10
#define TBRW_PIDTID_CREATION_MASK 0x1
#define TBRW_PIDTID_WHEN_MASK 0x110

typedef struct __TBRW_pid {
    TBRW_U32 pid_size;
    TBRW_U32 pid_id;
    TBRW_U32 pid_flags;
    TBRW_U32 reserved;
    TBRW_U64 pid_event_when;
    TBRW_U32 reserved_for_legacy;
    TBRW_U32 reserved1;
    TBRW_STRING_OR_ID pid_path;
    TBRW_STRING_OR_ID pid_name;
} TBRW_PID;

typedef struct __TBRW_tid {
    TBRW_U32 tid_size;
    TBRW_U32 tid_associated_pid;
    TBRW_U32 tid_id;
    TBRW_U32 tid_flags;
    TBRW_U64 tid_event_when;
    TBRW_U32 reserved_for_legacy;
    TBRW_U32 reserved;
    TBRW_STRING_OR_ID tid_name;
} TBRW_TID;

#define TBRW_MODULE_TSC_USED 0x10000
#define TBRW_MODULE_LOADED 0x8000
#define TBRW_MODULE_UNLOADED 0x4000
#define TBRW_MODULE_LOADED_MASK 0x2000
#define TBRW_MODULE_IS_EXE 0x1000
#define TBRW_MODULE_GLOBAL_LOAD 0x800
#define TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS 0x400

#define TBRW_MODE_V86 0
#define TBRW_MODE_16BIT 1
#define TBRW_MODE_32BIT 2
#define TBRW_MODE_64BIT 3

typedef struct __TBRW_module {
    TBRW_U32 module_size;
    TBRW_U32 module_reserved;
    TBRW_U32 module_associated_pid;
    TBRW_U32 module_flags;
    TBRW_U64 module_event_when;
    TBRW_U32 module_segment_number;
    TBRW_U32 module_segment_type : 2;
    TBRW_U32 : 30;
    TBRW_U32 module_code_selector;
    TBRW_U32 reserved;
    TBRW_U64 module_length;
    TBRW_U64 module_load_address;
    TBRW_U32 reserved_for_legacy;
    TBRW_U32 reserved_for_legacy2;
    TBRW_U32 reserved_for_legacy_flags;
    TBRW_U32 reserved1;
    TBRW_U64 module_unload_tsc;
    TBRW_STRING_OR_ID module_path;
    TBRW_STRING_OR_ID module_name;
    TBRW_STRING_OR_ID module_segment_name;
} TBRW_MODULE;

/* ---------------------------------------------------------------- version, stream info */

typedef struct __TBRW_version_info {
    TBRW_U32 version_info_size;
    TBRW_U32 sampling_driver_version; /* 0xFFFFFFFF: unknown */
    TBRW_U32 bind_version;
    TBRW_U32 sample_file_version; /* 0x10 and up */
} TBRW_VERSION_INFO;

typedef struct __TBRW_stream_info {
    TBRW_U32 stream_info_size;
    TBRW_U32 sampling_duration; /* ms */
    TBRW_U32 stream_type;       /* TBRW_STREAM_TYPE */
    TBRW_U32 sampling_interval; /* us */
    VTUNE_ANALYZER_FILETIME sampling_start_time;
    VTUNE_ANALYZER_FILETIME sampling_end_time;
    TBRW_STRING_OR_ID command_line;
    TBRW_STRING_OR_ID cpu_mask;
    TBRW_STRING_OR_ID comment;
} TBRW_STREAM_INFO;

/* ---------------------------------------------------------------- events */

#define TBRW_EVENT_TBS 0x0
#define TBRW_EVENT_EBS 0x1
#define TBRW_EVENT_MODE_MASK 0x1

typedef enum {
    TBRW_MSR = 0,
    TBRW_PMC = 1,
    TBRW_PMD = 2,
    TBRW_TBS_VTD = 3,
    TBRW_TBS_RTC = 4,
    TBRW_TBS_STATCARD = 5,
    TBRW_OS_EVENT = 6
} TBRW_ACCESS_METHOD;

typedef struct __TBRW_event_detail {
    TBRW_U32 detail_size;
    TBRW_U16 detail_access_size; /* bits */
    TBRW_U8 detail_method;       /* TBRW_ACCESS_METHOD */
    TBRW_U8 detail_access;       /* 0 read, 1 write */
    TBRW_U64 detail_address;
    TBRW_U64 detail_value;
    TBRW_U8 legacy_command;
    TBRW_U8 reserved1;
    TBRW_U16 reserved2;
    TBRW_U32 reserved3;
} TBRW_EVENT_DETAIL;

typedef struct __TBRW_event {
    TBRW_U32 event_size;
    TBRW_U32 event_id;
    TBRW_U32 event_num_details;
    TBRW_U32 event_flags;
    TBRW_U64 event_sav;
    TBRW_STRING_OR_ID event_name;
    TBRW_STRING_OR_ID event_arch_name;
    TBRW_EVENT_DETAIL *event_detail_array;
} TBRW_EVENT;

/* ---------------------------------------------------------------- data descriptor */

typedef struct __tbrw_samprec_desc_entry {
    union {
        TBRW_U64 force_8_byte_aligned;
        struct {
            TBRW_U32 desc_size;
            TBRW_U32 desc_offset;
            TBRW_U16 desc_type; /* ST_* of samprec_shared.h */
            union {
                TBRW_U16 desc_subtype; /* SST_* of samprec_shared.h */
                TBRW_U16 desc_sub_type; /* the guide's spelling */
            };
            TBRW_U32 desc_data_size;
            TBRW_U64 desc_access_offset;
            TBRW_U8 desc_access_type;
            TBRW_U8 desc_access_method;
            TBRW_U8 desc_sample_flag;
            TBRW_U8 reserved0;
            TBRW_U32 reserved1;
            TBRW_STRING_OR_ID desc_name;
        };
    };
    TBRW_U8 padding[32];
} TBRW_SAMPREC_DESC_ENTRY;

/* ---------------------------------------------------------------- sample records */

typedef struct TBRW_CodeDescriptor_s {
    union {
        TBRW_U32 lowWord;
        struct {
            TBRW_U16 limitLow;
            TBRW_U16 baseLow;
        };
    };
    union {
        TBRW_U32 highWord;
        struct {
            TBRW_U32 baseMid : 8;
            TBRW_U32 accessed : 1;
            TBRW_U32 readable : 1;
            TBRW_U32 conforming : 1;
            TBRW_U32 oneOne : 2;
            TBRW_U32 dpl : 2;
            TBRW_U32 pres : 1;
            TBRW_U32 limitHi : 4;
            TBRW_U32 sys : 1;
            TBRW_U32 reserved_0 : 1;
            TBRW_U32 default_size : 1;
            TBRW_U32 granularity : 1;
            TBRW_U32 baseHi : 8;
        };
    };
} TBRW_CodeDescriptor;

typedef struct TBRW_SampleRecordPC_s {
    union {
        struct {
            TBRW_U64 iip;  /* IA-64 interrupt instruction pointer */
            TBRW_U64 ipsr; /* IA-64 interrupt processor status */
        };
        struct {
            TBRW_U32 eip;    /* IA-32 instruction pointer */
            TBRW_U32 eflags; /* IA-32 eflags */
            TBRW_CodeDescriptor csd;
        };
    };
    TBRW_U16 cs;
    union {
        TBRW_U16 cpuAndOS;
        struct {
            TBRW_U16 cpuNum : 12;
            TBRW_U16 notVmid0 : 1;
            TBRW_U16 codeMode : 2;
            TBRW_U16 : 1;
        };
    };
    TBRW_U32 tid;
    TBRW_U32 pidRecIndex;
    union {
        TBRW_U32 bitFields2;
        struct {
            TBRW_U32 mrIndex : 20;
            TBRW_U32 eventIndex : 8;
            TBRW_U32 tidIsRaw : 1;
            TBRW_U32 IA64PC : 1;
            TBRW_U32 pidRecIndexRaw : 1;
            TBRW_U32 mrIndexNone : 1;
        };
    };
} TBRW_SampleRecordPC, *TBRW_PSampleRecordPC;

typedef struct TBRW_SampleRecordTSC_s {
    TBRW_U64 tsc;
} TBRW_SampleRecordTSC;

/* ---------------------------------------------------------------- bind */

typedef struct __data_bind_struct {
    TBRW_U64 module_index; /* 0xFFFFFFFFFFFFFFFF: no module covers the sample */
    TBRW_U64 pid_index;
    TBRW_U64 tid_index;
} DATA_BIND_STRUCT;

typedef struct __module_bind_struct {
    TBRW_U64 pid_index;
} MODULE_BIND_STRUCT;

typedef struct __tid_bind_struct {
    TBRW_U64 pid_index;
} TID_BIND_STRUCT;

/* module_index of a sample no module covers */
#define TBRW_UNKNOWN_MODULE_INDEX 0xFFFFFFFFFFFFFFFFULL

/* ---------------------------------------------------------------- callbacks */
/*
 * The enumerate_ functions take a TBRW_..._CALLBACK * argument.
 * - Default (the guide's style): the callback types are function types, so
 *   that argument is a pointer to the function: pass the function's name,
 *   TBRW_enumerate_data(h, 0, my_callback, &user, 0).
 * - With TBRW_INTEL_HEADERS (Intel's style): the callback types are
 *   pointers to functions, so the argument is a pointer to a function
 *   pointer: TBRW_DATA_CALLBACK cb = my_callback;
 *   TBRW_enumerate_data(h, 0, &cb, &user, 0).
 * The library tells the two apart at run time (README, "The C API"), so
 * either kind of argument works whichever header a program was built
 * with; an argument that is neither gives TBRW_BAD_PARAMETER.
 * Return TRUE for more, FALSE to stop; any other value is returned by the
 * enumerate function unchanged.
 */
#if defined(TBRW_INTEL_HEADERS)
typedef TBRW_U32 (*TBRW_DATA_CALLBACK)(void *data, TBRW_U32 data_size, TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32 (*TBRW_PID_CALLBACK)(TBRW_PID *pid, TBRW_U32 pid_data_size, TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32 (*TBRW_TID_CALLBACK)(TBRW_TID *tid, TBRW_U32 tid_data_size, TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32 (*TBRW_MODULE_CALLBACK)(TBRW_MODULE *module, TBRW_U32 module_data_size, TBRW_U32 num_entries,
                                         void *user_ptr);
typedef TBRW_U32 (*TBRW_EVENT_CALLBACK)(TBRW_EVENT *event, TBRW_U32 event_data_size, TBRW_U32 num_entries,
                                        void *user_ptr);
typedef TBRW_U32 (*TBRW_DATA_DESC_CALLBACK)(TBRW_SAMPREC_DESC_ENTRY *data_desc, TBRW_U32 data_desc_size,
                                            TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32 (*BIND_DATA_CALLBACK)(const void *data, TBRW_U32 sizeof_data_buffer, TBRW_U64 num_entries,
                                       const DATA_BIND_STRUCT *bind_table, TBRW_U32 sizeof_bind_buffer,
                                       void *user_ptr);
typedef TBRW_U32 (*BIND_MODULE_CALLBACK)(const TBRW_MODULE *data, TBRW_U32 sizeof_data_buffer, TBRW_U64 num_entries,
                                         const MODULE_BIND_STRUCT *bind_table, TBRW_U32 sizeof_bind_buffer,
                                         void *user_ptr);
typedef TBRW_U32 (*BIND_TID_CALLBACK)(const TBRW_TID *data, TBRW_U32 sizeof_data_buffer, TBRW_U64 num_entries,
                                      const TID_BIND_STRUCT *bind_table, TBRW_U32 sizeof_bind_buffer,
                                      void *user_ptr);
#else
typedef TBRW_U32(TBRW_DATA_CALLBACK)(void *data, TBRW_U32 data_size, TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32(TBRW_PID_CALLBACK)(TBRW_PID *pid, TBRW_U32 pid_data_size, TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32(TBRW_TID_CALLBACK)(TBRW_TID *tid, TBRW_U32 tid_data_size, TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32(TBRW_MODULE_CALLBACK)(TBRW_MODULE *module, TBRW_U32 module_data_size, TBRW_U32 num_entries,
                                       void *user_ptr);
typedef TBRW_U32(TBRW_EVENT_CALLBACK)(TBRW_EVENT *event, TBRW_U32 event_data_size, TBRW_U32 num_entries,
                                      void *user_ptr);
typedef TBRW_U32(TBRW_DATA_DESC_CALLBACK)(TBRW_SAMPREC_DESC_ENTRY *data_desc, TBRW_U32 data_desc_size,
                                          TBRW_U32 num_entries, void *user_ptr);
typedef TBRW_U32(BIND_DATA_CALLBACK)(const void *data, TBRW_U32 sizeof_data_buffer, TBRW_U64 num_entries,
                                     const DATA_BIND_STRUCT *bind_table, TBRW_U32 sizeof_bind_buffer,
                                     void *user_ptr);
typedef TBRW_U32(BIND_MODULE_CALLBACK)(const TBRW_MODULE *data, TBRW_U32 sizeof_data_buffer, TBRW_U64 num_entries,
                                       const MODULE_BIND_STRUCT *bind_table, TBRW_U32 sizeof_bind_buffer,
                                       void *user_ptr);
typedef TBRW_U32(BIND_TID_CALLBACK)(const TBRW_TID *data, TBRW_U32 sizeof_data_buffer, TBRW_U64 num_entries,
                                    const TID_BIND_STRUCT *bind_table, TBRW_U32 sizeof_bind_buffer,
                                    void *user_ptr);
#endif

/* ---------------------------------------------------------------- size checks */

#ifdef __cplusplus
#define TBRW_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define TBRW_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

TBRW_STATIC_ASSERT(sizeof(TBRW_STRING_OR_ID) == 8, "TBRW_STRING_OR_ID");
TBRW_STATIC_ASSERT(sizeof(TBRW_FILETIME) == 8, "TBRW_FILETIME");
TBRW_STATIC_ASSERT(sizeof(TBRW_UIOP) == sizeof(void *) && sizeof(TBRW_SIOP) == sizeof(void *), "TBRW_UIOP");
TBRW_STATIC_ASSERT(sizeof(TBRW_VERSION_INFO) == 16, "TBRW_VERSION_INFO");
TBRW_STATIC_ASSERT(sizeof(TBRW_STREAM_INFO) == 56, "TBRW_STREAM_INFO");
TBRW_STATIC_ASSERT(sizeof(TBRW_CPUID_IA32) == 24, "TBRW_CPUID_IA32");
TBRW_STATIC_ASSERT(sizeof(TBRW_CPUID_IA64) == 24, "TBRW_CPUID_IA64");
TBRW_STATIC_ASSERT(sizeof(TBRW_CPU_ARCH) == 16, "TBRW_CPU_ARCH");
TBRW_STATIC_ASSERT(sizeof(TBRW_CPU) == 64, "TBRW_CPU");
TBRW_STATIC_ASSERT(sizeof(TBRW_NODE) == 40, "TBRW_NODE");
TBRW_STATIC_ASSERT(sizeof(TBRW_SYSTEM) == 16, "TBRW_SYSTEM");
TBRW_STATIC_ASSERT(sizeof(TBRW_HOST) == 24, "TBRW_HOST");
TBRW_STATIC_ASSERT(sizeof(TBRW_OS) == 40, "TBRW_OS");
TBRW_STATIC_ASSERT(sizeof(TBRW_APPLICATION) == 32, "TBRW_APPLICATION");
TBRW_STATIC_ASSERT(sizeof(TBRW_PID) == 48, "TBRW_PID");
TBRW_STATIC_ASSERT(sizeof(TBRW_TID) == 40, "TBRW_TID");
TBRW_STATIC_ASSERT(sizeof(TBRW_MODULE) == 104, "TBRW_MODULE");
TBRW_STATIC_ASSERT(sizeof(TBRW_EVENT_DETAIL) == 32, "TBRW_EVENT_DETAIL");
TBRW_STATIC_ASSERT(sizeof(TBRW_EVENT) == 48, "TBRW_EVENT");
TBRW_STATIC_ASSERT(sizeof(TBRW_SAMPREC_DESC_ENTRY) == 72, "TBRW_SAMPREC_DESC_ENTRY");
TBRW_STATIC_ASSERT(sizeof(TBRW_CodeDescriptor) == 8, "TBRW_CodeDescriptor");
TBRW_STATIC_ASSERT(sizeof(TBRW_SampleRecordPC) == 32, "TBRW_SampleRecordPC");
TBRW_STATIC_ASSERT(sizeof(TBRW_SampleRecordTSC) == 8, "TBRW_SampleRecordTSC");
TBRW_STATIC_ASSERT(sizeof(DATA_BIND_STRUCT) == 24, "DATA_BIND_STRUCT");
TBRW_STATIC_ASSERT(sizeof(MODULE_BIND_STRUCT) == 8, "MODULE_BIND_STRUCT");
TBRW_STATIC_ASSERT(sizeof(TID_BIND_STRUCT) == 8, "TID_BIND_STRUCT");

#ifdef __cplusplus
}
#endif

#endif /* TBRW_TYPES_H */
