/*
 * Intel's 2020 ABI of the TBRW structures (docs/FORMAT.md, "Intel's 2020 ABI"),
 * as the programs that call Intel's library through tbrw_any.h build them:
 * the corpus writer and the write benchmark.
 */
#ifndef INTEL_ABI_H
#define INTEL_ABI_H

#include "tbrw_any.h"

typedef union {
    U64 id;
    const wchar_t *ptr;
} SOI;
typedef struct {
    U32 eax_input, eax, ebx, ecx, edx, reserved;
} CPUID32;
typedef struct {
    U32 arch_size;
    U16 arch_type, arch_num_cpuid;
    CPUID32 *cpuids;
} ARCH;
typedef struct {
    U32 cpu_size, number, native, processor, speed, fsb, l2, l3;
    int64_t tsc_offset;
    U16 package, core, thread, threads_per_core;
    U32 num_arch, dummy;
    ARCH *archs;
} CPU;
typedef struct {
    U32 node_size, type_from_shell, id, num_available, num_used, reserved;
    U64 memory_mb;
    CPU *cpus;
} NODE;
typedef struct {
    U32 system_size, num_nodes;
    U8 reserved[32];
    NODE *nodes;
} SYSTEM;
typedef struct {
    U32 host_size, reserved;
    SOI ip, name;
} HOST;
typedef struct {
    U32 os_size, platform, major, minor, build, extra;
    SOI name, name_extra;
} OS;
typedef struct {
    U32 app_size, reserved, page_size, granularity;
    U64 min_addr, max_addr;
} APP;
typedef struct {
    U32 pid_size, id, flags, reserved;
    U64 event_when;
    U32 legacy, parent_index;
    SOI path, name;
} PID;
typedef struct {
    U32 tid_size, pid, id, flags;
    U64 event_when;
    U32 legacy, reserved;
    SOI name;
} TID;
typedef struct {
    U32 module_size, reserved0, pid, flags;
    U64 event_when;
    U32 segment_number, segment_type, code_selector, reserved;
    U64 length, load_address;
    U32 legacy, legacy2, legacy_flags, reserved1;
    U64 unload_tsc;
    SOI path, name, segment_name;
    U8 intel_only[40];
} MODULE;
typedef struct {
    U32 detail_size;
    U16 access_size;
    U8 method, access;
    U64 address, value;
    U8 legacy_command, reserved1;
    U16 reserved2;
    U32 reserved3;
} DETAIL;
typedef struct {
    U32 event_size, id, num_details, flags;
    U64 sav;
    SOI name, arch_name;
    DETAIL *details;
} EVENT;
typedef struct {
    U32 desc_size, offset;
    U16 type, subtype;
    U32 data_size;
    U64 access_offset;
    U8 access_type, access_method, sample_flag, reserved0;
    U32 reserved1;
    SOI name;
    U8 padding[32];
} DESC;
typedef struct {
    U32 size, driver, bind, file_version;
} VERSION;
typedef struct {
    U32 size, duration, type, interval;
    U32 start_lo, start_hi, end_lo, end_hi;
    SOI command_line, cpu_mask, comment;
    U64 run_mode;
} SINFO;

#endif
