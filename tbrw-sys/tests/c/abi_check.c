/* Every size and field offset of abi.md, and the constant values, checked
 * from C with sizeof/offsetof; the bit fields by setting them and reading
 * the whole word. */
#include <stddef.h>

#include "check.h"

#define SIZE(t, n) ASSERT(sizeof(t) == (n))
#define OFF(t, f, n) ASSERT(offsetof(t, f) == (n))

int main(void) {
    SIZE(TBRW_CHAR, 4);
    SIZE(TBRW_STRING_OR_ID, 8);
    SIZE(TBRW_FILETIME, 8);
    OFF(TBRW_FILETIME, dwHighDateTime, 4);

    SIZE(TBRW_VERSION_INFO, 16);
    OFF(TBRW_VERSION_INFO, sampling_driver_version, 4); OFF(TBRW_VERSION_INFO, bind_version, 8);
    OFF(TBRW_VERSION_INFO, sample_file_version, 12);

    SIZE(TBRW_STREAM_INFO, 56);
    OFF(TBRW_STREAM_INFO, sampling_duration, 4); OFF(TBRW_STREAM_INFO, stream_type, 8);
    OFF(TBRW_STREAM_INFO, sampling_interval, 12); OFF(TBRW_STREAM_INFO, sampling_start_time, 16);
    OFF(TBRW_STREAM_INFO, sampling_end_time, 24); OFF(TBRW_STREAM_INFO, command_line, 32);
    OFF(TBRW_STREAM_INFO, cpu_mask, 40); OFF(TBRW_STREAM_INFO, comment, 48);

    SIZE(TBRW_CPUID_IA32, 24);
    OFF(TBRW_CPUID_IA32, cpuid_eax, 4); OFF(TBRW_CPUID_IA32, cpuid_ebx, 8); OFF(TBRW_CPUID_IA32, cpuid_ecx, 12);
    OFF(TBRW_CPUID_IA32, cpuid_edx, 16); OFF(TBRW_CPUID_IA32, reserved, 20);
    SIZE(TBRW_CPUID_IA64, 24);
    OFF(TBRW_CPUID_IA64, cpuid_val, 8); OFF(TBRW_CPUID_IA64, reserved, 16);

    SIZE(TBRW_CPU_ARCH, 16);
    OFF(TBRW_CPU_ARCH, arch_type, 4); OFF(TBRW_CPU_ARCH, arch_num_cpuid, 6);
    OFF(TBRW_CPU_ARCH, cpuid_ia32_array, 8); OFF(TBRW_CPU_ARCH, cpuid_ia64_array, 8);

    SIZE(TBRW_CPU, 64);
    OFF(TBRW_CPU, cpu_number, 4); OFF(TBRW_CPU, cpu_native_arch_type, 8); OFF(TBRW_CPU, cpu_intel_processor_number, 12);
    OFF(TBRW_CPU, cpu_speed_mhz, 16); OFF(TBRW_CPU, cpu_fsb_mhz, 20); OFF(TBRW_CPU, cpu_cache_L2, 24);
    OFF(TBRW_CPU, cpu_cache_L3, 28); OFF(TBRW_CPU, cpu_tsc_offset, 32); OFF(TBRW_CPU, cpu_package_num, 40);
    OFF(TBRW_CPU, cpu_pacakge_num, 40); OFF(TBRW_CPU, cpu_core_num, 42); OFF(TBRW_CPU, cpu_hardware_thread_num, 44);
    OFF(TBRW_CPU, cpu_threads_per_core, 46); OFF(TBRW_CPU, num_cpu_arch_array, 48); OFF(TBRW_CPU, dummy, 52);
    OFF(TBRW_CPU, cpu_arch_array, 56);

    SIZE(TBRW_NODE, 40);
    OFF(TBRW_NODE, node_type_from_shell, 4); OFF(TBRW_NODE, node_id, 8); OFF(TBRW_NODE, node_num_available, 12);
    OFF(TBRW_NODE, node_num_used, 16); OFF(TBRW_NODE, reserved, 20); OFF(TBRW_NODE, node_physical_memory, 24);
    OFF(TBRW_NODE, cpu_array, 32);
    SIZE(TBRW_SYSTEM, 16);
    OFF(TBRW_SYSTEM, system_num_nodes, 4); OFF(TBRW_SYSTEM, node_array, 8);

    SIZE(TBRW_HOST, 24);
    OFF(TBRW_HOST, reserved, 4); OFF(TBRW_HOST, host_ip_address, 8); OFF(TBRW_HOST, host_name, 16);
    SIZE(TBRW_OS, 40);
    OFF(TBRW_OS, os_platform, 4); OFF(TBRW_OS, os_major, 8); OFF(TBRW_OS, os_minor, 12); OFF(TBRW_OS, os_build, 16);
    OFF(TBRW_OS, os_extra, 20); OFF(TBRW_OS, os_name, 24); OFF(TBRW_OS, os_name_extra, 32);
    SIZE(TBRW_APPLICATION, 32);
    OFF(TBRW_APPLICATION, app_reserved, 4); OFF(TBRW_APPLICATION, app_page_size, 8);
    OFF(TBRW_APPLICATION, app_alloc_granularity, 12); OFF(TBRW_APPLICATION, app_min_app_addr, 16);
    OFF(TBRW_APPLICATION, app_max_app_addr, 24);

    SIZE(TBRW_PID, 48);
    OFF(TBRW_PID, pid_id, 4); OFF(TBRW_PID, pid_flags, 8); OFF(TBRW_PID, reserved, 12); OFF(TBRW_PID, pid_event_when, 16);
    OFF(TBRW_PID, reserved_for_legacy, 24); OFF(TBRW_PID, reserved1, 28); OFF(TBRW_PID, pid_path, 32);
    OFF(TBRW_PID, pid_name, 40);
    SIZE(TBRW_TID, 40);
    OFF(TBRW_TID, tid_associated_pid, 4); OFF(TBRW_TID, tid_id, 8); OFF(TBRW_TID, tid_flags, 12);
    OFF(TBRW_TID, tid_event_when, 16); OFF(TBRW_TID, reserved_for_legacy, 24); OFF(TBRW_TID, reserved, 28);
    OFF(TBRW_TID, tid_name, 32);

    SIZE(TBRW_MODULE, 104);
    OFF(TBRW_MODULE, module_reserved, 4); OFF(TBRW_MODULE, module_associated_pid, 8); OFF(TBRW_MODULE, module_flags, 12);
    OFF(TBRW_MODULE, module_event_when, 16); OFF(TBRW_MODULE, module_segment_number, 24);
    OFF(TBRW_MODULE, module_code_selector, 32); OFF(TBRW_MODULE, reserved, 36); OFF(TBRW_MODULE, module_length, 40);
    OFF(TBRW_MODULE, module_load_address, 48); OFF(TBRW_MODULE, reserved_for_legacy, 56);
    OFF(TBRW_MODULE, reserved_for_legacy2, 60); OFF(TBRW_MODULE, reserved_for_legacy_flags, 64);
    OFF(TBRW_MODULE, reserved1, 68); OFF(TBRW_MODULE, module_unload_tsc, 72); OFF(TBRW_MODULE, module_path, 80);
    OFF(TBRW_MODULE, module_name, 88); OFF(TBRW_MODULE, module_segment_name, 96);
    {
        /* module_segment_type: bits 0-1 of the word at offset 28 */
        TBRW_MODULE m;
        TBRW_U32 word;
        memset(&m, 0, sizeof m);
        m.module_segment_type = TBRW_MODE_64BIT;
        memcpy(&word, (char *)&m + 28, 4);
        ASSERT(word == 3);
    }

    SIZE(TBRW_EVENT_DETAIL, 32);
    OFF(TBRW_EVENT_DETAIL, detail_access_size, 4); OFF(TBRW_EVENT_DETAIL, detail_method, 6);
    OFF(TBRW_EVENT_DETAIL, detail_access, 7); OFF(TBRW_EVENT_DETAIL, detail_address, 8);
    OFF(TBRW_EVENT_DETAIL, detail_value, 16); OFF(TBRW_EVENT_DETAIL, legacy_command, 24);
    OFF(TBRW_EVENT_DETAIL, reserved1, 25); OFF(TBRW_EVENT_DETAIL, reserved2, 26); OFF(TBRW_EVENT_DETAIL, reserved3, 28);
    SIZE(TBRW_EVENT, 48);
    OFF(TBRW_EVENT, event_id, 4); OFF(TBRW_EVENT, event_num_details, 8); OFF(TBRW_EVENT, event_flags, 12);
    OFF(TBRW_EVENT, event_sav, 16); OFF(TBRW_EVENT, event_name, 24); OFF(TBRW_EVENT, event_arch_name, 32);
    OFF(TBRW_EVENT, event_detail_array, 40);

    SIZE(TBRW_SAMPREC_DESC_ENTRY, 72);
    OFF(TBRW_SAMPREC_DESC_ENTRY, desc_offset, 4); OFF(TBRW_SAMPREC_DESC_ENTRY, desc_type, 8);
    OFF(TBRW_SAMPREC_DESC_ENTRY, desc_subtype, 10); OFF(TBRW_SAMPREC_DESC_ENTRY, desc_sub_type, 10);
    OFF(TBRW_SAMPREC_DESC_ENTRY, desc_data_size, 12); OFF(TBRW_SAMPREC_DESC_ENTRY, desc_access_offset, 16);
    OFF(TBRW_SAMPREC_DESC_ENTRY, desc_access_type, 24); OFF(TBRW_SAMPREC_DESC_ENTRY, desc_access_method, 25);
    OFF(TBRW_SAMPREC_DESC_ENTRY, desc_sample_flag, 26); OFF(TBRW_SAMPREC_DESC_ENTRY, reserved0, 27);
    OFF(TBRW_SAMPREC_DESC_ENTRY, reserved1, 28); OFF(TBRW_SAMPREC_DESC_ENTRY, desc_name, 32);
    OFF(TBRW_SAMPREC_DESC_ENTRY, padding, 40);

    SIZE(TBRW_CodeDescriptor, 8);
    OFF(TBRW_CodeDescriptor, lowWord, 0); OFF(TBRW_CodeDescriptor, baseLow, 2); OFF(TBRW_CodeDescriptor, highWord, 4);
    {
        TBRW_CodeDescriptor c;
        memset(&c, 0, sizeof c);
        c.baseMid = 0xAB; c.accessed = 1; c.readable = 1; c.conforming = 1; c.oneOne = 3; c.dpl = 2; c.pres = 1;
        c.limitHi = 0xF; c.sys = 1; c.reserved_0 = 0; c.default_size = 1; c.granularity = 1; c.baseHi = 0xCD;
        ASSERT(c.highWord == (0xABu | 1u << 8 | 1u << 9 | 1u << 10 | 3u << 11 | 2u << 13 | 1u << 15 | 0xFu << 16 | 1u << 20 |
                              1u << 22 | 1u << 23 | 0xCDu << 24));
        c.limitLow = 0x1234; c.baseLow = 0x5678;
        ASSERT(c.lowWord == 0x56781234u);
    }

    SIZE(TBRW_SampleRecordPC, 32);
    OFF(TBRW_SampleRecordPC, iip, 0); OFF(TBRW_SampleRecordPC, ipsr, 8); OFF(TBRW_SampleRecordPC, eip, 0);
    OFF(TBRW_SampleRecordPC, eflags, 4); OFF(TBRW_SampleRecordPC, csd, 8); OFF(TBRW_SampleRecordPC, cs, 16);
    OFF(TBRW_SampleRecordPC, cpuAndOS, 18); OFF(TBRW_SampleRecordPC, tid, 20); OFF(TBRW_SampleRecordPC, pidRecIndex, 24);
    OFF(TBRW_SampleRecordPC, bitFields2, 28);
    {
        TBRW_SampleRecordPC s;
        memset(&s, 0, sizeof s);
        s.cpuNum = 0xFFF; s.notVmid0 = 1; s.codeMode = 2;
        ASSERT(s.cpuAndOS == (0xFFFu | 1u << 12 | 2u << 13));
        s.mrIndex = 0xABCDE; s.eventIndex = 0x5A; s.tidIsRaw = 1; s.IA64PC = 0; s.pidRecIndexRaw = 1; s.mrIndexNone = 1;
        ASSERT(s.bitFields2 == (0xABCDEu | 0x5Au << 20 | 1u << 28 | 1u << 30 | 1u << 31));
    }
    SIZE(TBRW_SampleRecordTSC, 8);
    SIZE(DATA_BIND_STRUCT, 24);
    OFF(DATA_BIND_STRUCT, pid_index, 8); OFF(DATA_BIND_STRUCT, tid_index, 16);
    SIZE(MODULE_BIND_STRUCT, 8);
    SIZE(TID_BIND_STRUCT, 8);

    /* Constants */
    ASSERT(TBRW_HARDWARE_SECTION == 0 && TBRW_VERSION_INFO_SECTION == 5 && TBRW_USER_DEFINED_GLOBAL_SECTION == 4);
    ASSERT(TBRW_EVENT_DESCRIPTION_SECTION == 0 && TBRW_DATA_SECTION == 2 && TBRW_STREAM_INFO_SECTION == 4);
    ASSERT(TBRW_SAMPLING_STREAM == 1 && TBRW_CUSTOM_STREAM == 8 && TBRW_BIND_TID_INFORMATION_STREAM == 7);
    ASSERT(TBRW_FILE_READ == 1 && TBRW_FILE_WRITE == 2 && TBRW_FILE_CREATE_ALWAYS == 4);
    ASSERT(TBRW_GST_EM64T == 5 && TBRW_GST_ITANIUM == 2 && CPU_ARCHITECTURE_IA64 == 2);
    ASSERT(TBRW_OSFAMILY_LINUX64 == 6 && TBRW_MODE_64BIT == 3 && TBRW_PIDTID_WHEN_MASK == 0x110);
    ASSERT(TBRW_MODULE_TSC_USED == 0x10000 && TBRW_MODULE_GLOBAL_LOAD == 0x800 && TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS == 0x400);
    ASSERT(TBRW_EVENT_EBS == 1 && TBRW_OS_EVENT == 6);
    ASSERT(ST_LEGACY_UNKNOWN == 23 && ST_PEBS_MACHINE_STATE == 20 && ST_TIMESTAMP == ST_TIME_STAMP && ST_TIME_STAMP == 7);
    ASSERT(ST_PROCESS == 0x2000 && ST_POST_PROCESS_LAST == 0x2027 && ST_START_USER_DEFINED == 0x4000);
    ASSERT(ST_RESERVED_START == 0x8000);
    ASSERT(SST_TSC == 32 && SST_IFA == 38 && SST_LBR_FROM_TO_0 == 39 && SST_PEBS_R15 == 124 && SST_RESERVED_START == 0xC000);
    ASSERT(TBRW_SUCCESS == 0 && VT_SUCCESS == 0 && TBRW_SAM_ERROR == 22 && TBRW_BUFFER_TOO_SMALL == 103);
    ASSERT(TBRW_NOT_ALL_SECTIONS_CLOSED == 131 && TBRW_NO_DATA_TO_WRITE == 145);
    {
        TBRW_U32 major = 0, minor = 0;
        OK(TBRW_get_version(&major, &minor));
        ASSERT(major == 2 && minor == 3);
    }
    puts("abi ok");
    return 0;
}
