/* The guide's chapter 6, written as the guide writes it (with wcsdup for
 * _wcsdup), then read back through the C API and compared field by field;
 * then TBRW_verify, TBRW_dobind and the bind enumerations.
 * Usage: guide_write_read FILE.tb5 SAMPLES */
#include "check.h"

static unsigned samples_wanted;

static void write_file(const wchar_t *name) {
    TBRW_PTR tbrw_ptr = NULL;
    TBRW_U32 ret;
    unsigned i;
    OK(TBRW_open(&tbrw_ptr, name, TBRW_FILE_WRITE | TBRW_FILE_CREATE_ALWAYS));

    /* 6.3 hardware */
    TBRW_CPUID_IA32 ia32_cpuid;
    ia32_cpuid.cpuid_eax_input = 0x0;
    ia32_cpuid.cpuid_eax = 0xa;
    ia32_cpuid.cpuid_ebx = 0x756e6547;
    ia32_cpuid.cpuid_ecx = 0x6c65746e;
    ia32_cpuid.cpuid_edx = 0x49656e69;
    ia32_cpuid.reserved = 0;
    TBRW_CPU_ARCH cpu_arch;
    cpu_arch.arch_size = sizeof(TBRW_CPU_ARCH);
    cpu_arch.arch_type = TBRW_GST_X86;
    cpu_arch.arch_num_cpuid = 1;
    cpu_arch.cpuid_ia32_array = (TBRW_CPUID_IA32 *)&ia32_cpuid;
    TBRW_CPU cpu_info;
    memset(&cpu_info, 0, sizeof cpu_info);
    cpu_info.cpu_size = sizeof(TBRW_CPU);
    cpu_info.cpu_number = 0;
    cpu_info.cpu_native_arch_type = CPU_ARCHITECTURE_IA32;
    cpu_info.cpu_intel_processor_number = 8086;
    cpu_info.cpu_speed_mhz = 3000;
    cpu_info.cpu_fsb_mhz = 1333;
    cpu_info.cpu_cache_L2 = 4096;
    cpu_info.cpu_cache_L3 = 128;
    cpu_info.cpu_tsc_offset = 0;
    cpu_info.cpu_package_num = 0;
    cpu_info.cpu_core_num = 0;
    cpu_info.cpu_hardware_thread_num = 0;
    cpu_info.cpu_threads_per_core = 1;
    cpu_info.num_cpu_arch_array = 1;
    cpu_info.cpu_arch_array = &cpu_arch;
    TBRW_NODE node_info;
    memset(&node_info, 0, sizeof node_info);
    node_info.node_size = sizeof(TBRW_NODE);
    node_info.node_type_from_shell = 0;
    node_info.node_id = 1;
    node_info.node_num_available = 1;
    node_info.node_num_used = 1;
    node_info.node_physical_memory = 1024;
    node_info.cpu_array = &cpu_info;
    TBRW_SYSTEM sys_info;
    sys_info.system_size = sizeof(TBRW_SYSTEM);
    sys_info.system_num_nodes = 1;
    sys_info.node_array = &node_info;
    OK(TBRW_writing_section(tbrw_ptr, TBRW_HARDWARE_SECTION));
    OK(TBRW_set_system(tbrw_ptr, &sys_info));
    OK(TBRW_done_section(tbrw_ptr, TBRW_HARDWARE_SECTION));

    /* 6.4 software */
    OK(TBRW_writing_section(tbrw_ptr, TBRW_SOFTWARE_SECTION));
    TBRW_HOST host_info;
    host_info.host_size = sizeof(TBRW_HOST);
    host_info.reserved = 0;
    host_info.host_ip_address.soi_ptr = (TBRW_CHAR *)wcsdup(L"10.10.10.10");
    host_info.host_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"testhost.intel.com");
    ret = TBRW_set_host(tbrw_ptr, &host_info);
    OK(ret);
    TBRW_OS os_info;
    os_info.os_size = sizeof(TBRW_OS);
    os_info.os_platform = TBRW_OSFAMILY_WIN32;
    os_info.os_major = 0x5;
    os_info.os_minor = 0x1;
    os_info.os_build = 0xa28;
    os_info.os_extra = 0;
    os_info.os_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"Windows XP");
    os_info.os_name_extra.soi_ptr = (TBRW_CHAR *)wcsdup(L"32-bit");
    ret = TBRW_set_os(tbrw_ptr, &os_info);
    OK(ret);
    TBRW_APPLICATION app_info;
    app_info.app_size = sizeof(TBRW_APPLICATION);
    app_info.app_reserved = 0;
    app_info.app_page_size = 1024;
    app_info.app_alloc_granularity = 2048;
    app_info.app_min_app_addr = 0xfffff;
    app_info.app_max_app_addr = 0xffffffff;
    ret = TBRW_set_application(tbrw_ptr, &app_info);
    OK(ret);
    OK(TBRW_done_section(tbrw_ptr, TBRW_SOFTWARE_SECTION));
    free(host_info.host_ip_address.soi_ptr);
    free(host_info.host_name.soi_ptr);
    free(os_info.os_name.soi_ptr);
    free(os_info.os_name_extra.soi_ptr);

    /* 6.5 version info */
    OK(TBRW_writing_section(tbrw_ptr, TBRW_VERSION_INFO_SECTION));
    TBRW_VERSION_INFO version_info;
    version_info.version_info_size = sizeof(TBRW_VERSION_INFO);
    version_info.sampling_driver_version = 0xffffffff;
    version_info.bind_version = 0;
    version_info.sample_file_version = 0x10;
    OK(TBRW_set_version_info(tbrw_ptr, &version_info));
    OK(TBRW_done_section(tbrw_ptr, TBRW_VERSION_INFO_SECTION));

    /* 6.6 modules */
    OK(TBRW_writing_section(tbrw_ptr, TBRW_MODULE_SECTION));
    TBRW_MODULE module_info;
    memset(&module_info, 0, sizeof module_info);
    module_info.module_size = sizeof(TBRW_MODULE);
    module_info.module_load_address = 0x400000;
    module_info.module_length = 0x2000;
    module_info.module_associated_pid = 0x1000;
    module_info.module_code_selector = 0x8;
    module_info.module_event_when = (TBRW_U64)0x0000;
    module_info.module_unload_tsc = (TBRW_U64)-1;
    module_info.module_segment_type = TBRW_MODE_32BIT;
    module_info.module_segment_number = 0;
    module_info.module_flags =
        TBRW_MODULE_TSC_USED | TBRW_MODULE_LOADED | TBRW_MODULE_IS_EXE | TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS;
    module_info.module_path.soi_ptr = (TBRW_CHAR *)wcsdup(L"C:\\sample\\sample.exe");
    module_info.module_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"sample.exe");
    module_info.module_segment_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"");
    module_info.reserved_for_legacy = 0;
    module_info.reserved_for_legacy2 = 0;
    module_info.reserved_for_legacy_flags = 0;
    ret = TBRW_add_module(tbrw_ptr, &module_info);
    OK(ret);
    OK(TBRW_done_section(tbrw_ptr, TBRW_MODULE_SECTION));
    free(module_info.module_path.soi_ptr);
    free(module_info.module_name.soi_ptr);
    free(module_info.module_segment_name.soi_ptr);

    /* stream 0, all its sections open at once */
    OK(TBRW_writing_stream(tbrw_ptr, 0));
    OK(TBRW_writing_stream_section(tbrw_ptr, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(tbrw_ptr, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_writing_stream_section(tbrw_ptr, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_writing_stream_section(tbrw_ptr, 0, TBRW_DATA_SECTION));

    /* 6.7 events */
    TBRW_EVENT_DETAIL event_det;
    memset(&event_det, 0, sizeof event_det);
    event_det.detail_size = sizeof(TBRW_EVENT_DETAIL);
    event_det.detail_access = 1;
    event_det.detail_access_size = 32;
    event_det.detail_method = TBRW_MSR;
    event_det.detail_address = 0x21;
    event_det.detail_value = 0xffe17b80;
    event_det.legacy_command = 0;
    TBRW_EVENT event_info;
    event_info.event_size = sizeof(TBRW_EVENT);
    event_info.event_id = 0;
    event_info.event_num_details = 1;
    event_info.event_flags = TBRW_EVENT_EBS;
    event_info.event_sav = 2000000;
    event_info.event_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"SampleEvent");
    event_info.event_arch_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"Core 2");
    event_info.event_detail_array = &event_det;
    ret = TBRW_add_event(tbrw_ptr, 0, &event_info);
    OK(ret);
    free(event_info.event_name.soi_ptr);
    free(event_info.event_arch_name.soi_ptr);

    /* 6.8 stream info */
    TBRW_STREAM_INFO stream_info;
    stream_info.stream_info_size = sizeof(TBRW_STREAM_INFO);
    stream_info.sampling_duration = 20000;
    stream_info.stream_type = TBRW_SAMPLING_STREAM;
    stream_info.command_line.soi_ptr = (TBRW_CHAR *)wcsdup(L"unknown");
    stream_info.comment.soi_ptr = (TBRW_CHAR *)wcsdup(L"sample_comment");
    stream_info.cpu_mask.soi_ptr = (TBRW_CHAR *)wcsdup(L"none");
    stream_info.sampling_interval = 1000;
    stream_info.sampling_start_time.dwLowDateTime = 1526932352;
    stream_info.sampling_start_time.dwHighDateTime = 29849313;
    stream_info.sampling_end_time.dwLowDateTime = 1566932352;
    stream_info.sampling_end_time.dwHighDateTime = 29849313;
    ret = TBRW_set_stream_info(tbrw_ptr, 0, &stream_info);
    OK(ret);
    free(stream_info.command_line.soi_ptr);
    free(stream_info.comment.soi_ptr);
    free(stream_info.cpu_mask.soi_ptr);

    /* 6.9 descriptors: both with desc_offset 0, as the guide writes them */
    TBRW_SAMPREC_DESC_ENTRY desc_entry1;
    memset(&desc_entry1, 0, sizeof desc_entry1);
    desc_entry1.desc_size = sizeof(TBRW_SAMPREC_DESC_ENTRY);
    desc_entry1.desc_data_size = sizeof(TBRW_SampleRecordPC);
    desc_entry1.desc_offset = 0;
    desc_entry1.desc_type = ST_LEGACY_SAMPLE_RECORD;
    desc_entry1.desc_sub_type = SST_NONE;
    desc_entry1.desc_sample_flag = 0;
    desc_entry1.desc_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"SampleRecord");
    ret = TBRW_add_data_descriptor_entry(tbrw_ptr, 0, &desc_entry1);
    OK(ret);
    TBRW_SAMPREC_DESC_ENTRY desc_entry2;
    memset(&desc_entry2, 0, sizeof desc_entry2);
    desc_entry2.desc_size = sizeof(TBRW_SAMPREC_DESC_ENTRY);
    desc_entry2.desc_data_size = sizeof(TBRW_SampleRecordTSC);
    desc_entry2.desc_offset = 0;
    desc_entry2.desc_type = ST_TIMESTAMP;
    desc_entry2.desc_sub_type = SST_TSC;
    desc_entry2.desc_sample_flag = 0;
    desc_entry2.desc_name.soi_ptr = (TBRW_CHAR *)wcsdup(L"TimeStamp");
    ret = TBRW_add_data_descriptor_entry(tbrw_ptr, 0, &desc_entry2);
    OK(ret);
    free(desc_entry1.desc_name.soi_ptr);
    free(desc_entry2.desc_name.soi_ptr);

    /* 6.10 samples: the PC record, then the TSC record, in two calls */
    for (i = 0; i < samples_wanted; i++) {
        TBRW_SampleRecordPC sample;
        memset(&sample, 0, sizeof sample);
        sample.codeMode = TBRW_MODE_32BIT;
        sample.eip = 0x400000 + (i * 4) % 0x2000;
        sample.eflags = 0x246;
        sample.csd.lowWord = 0xffff;
        sample.csd.highWord = 0xcf9b00;
        sample.cs = 0x1B;
        sample.mrIndex = 0;
        sample.eventIndex = 0;
        sample.tidIsRaw = 1;
        sample.IA64PC = 0;
        sample.pidRecIndexRaw = 1;
        sample.pidRecIndex = 0x1000;
        sample.cpuNum = i % 2;
        sample.tid = 100 + i % 3;
        sample.mrIndexNone = 0;
        ret = TBRW_add_data(tbrw_ptr, 0, sizeof(TBRW_SampleRecordPC), (void *)&sample);
        OK(ret);
        TBRW_SampleRecordTSC tsc;
        tsc.tsc = 0x00001972178D8F5EULL + i;
        ret = TBRW_add_data(tbrw_ptr, 0, sizeof(TBRW_SampleRecordTSC), (void *)&tsc);
        OK(ret);
    }
    OK(TBRW_done_stream_section(tbrw_ptr, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream_section(tbrw_ptr, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_done_stream_section(tbrw_ptr, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_done_stream_section(tbrw_ptr, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_done_stream(tbrw_ptr, 0));
    OK(TBRW_verify(tbrw_ptr));
    OK(TBRW_close(tbrw_ptr));
}

/* ------------------------------------------------------------------ reading */

static TBRW_PTR rd;
static unsigned modules_seen, records_seen;

static TBRW_U32 module_cb(TBRW_MODULE *m, TBRW_U32 size, TBRW_U32 n, void *user) {
    ASSERT(size == n * sizeof(TBRW_MODULE) && n == 1 && user == (void *)&modules_seen);
    ASSERT(m->module_size == sizeof(TBRW_MODULE) && m->module_load_address == 0x400000 && m->module_length == 0x2000);
    ASSERT(m->module_associated_pid == 0x1000 && m->module_code_selector == 0x8 && m->module_segment_type == TBRW_MODE_32BIT);
    ASSERT(m->module_unload_tsc == (TBRW_U64)-1 && m->module_event_when == 0);
    ASSERT(m->module_flags == (TBRW_MODULE_TSC_USED | TBRW_MODULE_LOADED | TBRW_MODULE_IS_EXE |
                               TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS));
    /* Converting a string id from inside a callback works (no deadlock). */
    ASSERT(wcscmp(text_of(rd, m->module_path), L"C:\\sample\\sample.exe") == 0);
    ASSERT(wcscmp(text_of(rd, m->module_name), L"sample.exe") == 0);
    ASSERT(wcscmp(text_of(rd, m->module_segment_name), L"") == 0);
    modules_seen += n;
    return TRUE;
}

static TBRW_U32 event_cb(TBRW_EVENT *e, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)user;
    ASSERT(n == 1 && size == sizeof(TBRW_EVENT) + sizeof(TBRW_EVENT_DETAIL));
    ASSERT(e->event_id == 0 && e->event_flags == TBRW_EVENT_EBS && e->event_sav == 2000000 && e->event_num_details == 1);
    ASSERT(wcscmp(text_of(rd, e->event_name), L"SampleEvent") == 0);
    ASSERT(wcscmp(text_of(rd, e->event_arch_name), L"Core 2") == 0);
    ASSERT(e->event_detail_array == (TBRW_EVENT_DETAIL *)(e + 1));
    ASSERT(e->event_detail_array[0].detail_access == 1 && e->event_detail_array[0].detail_access_size == 32);
    ASSERT(e->event_detail_array[0].detail_method == TBRW_MSR && e->event_detail_array[0].detail_address == 0x21);
    ASSERT(e->event_detail_array[0].detail_value == 0xffe17b80);
    return TRUE;
}

static TBRW_U32 desc_cb(TBRW_SAMPREC_DESC_ENTRY *d, TBRW_U32 size, TBRW_U32 n, void *user) {
    (void)user;
    ASSERT(n == 2 && size == 2 * sizeof(TBRW_SAMPREC_DESC_ENTRY));
    ASSERT(d[0].desc_type == ST_LEGACY_SAMPLE_RECORD && d[0].desc_offset == 0 && d[0].desc_data_size == 32);
    /* The second entry was written with offset 0: it lies after the first. */
    ASSERT(d[1].desc_type == ST_TIME_STAMP && d[1].desc_subtype == SST_TSC && d[1].desc_offset == 32 && d[1].desc_data_size == 8);
    ASSERT(wcscmp(text_of(rd, d[0].desc_name), L"SampleRecord") == 0);
    ASSERT(wcscmp(text_of(rd, d[1].desc_name), L"TimeStamp") == 0);
    return TRUE;
}

static void check_record(const unsigned char *rec, unsigned i) {
    TBRW_SampleRecordPC pc;
    TBRW_SampleRecordTSC tsc;
    memcpy(&pc, rec, 32);
    memcpy(&tsc, rec + 32, 8);
    ASSERT(pc.eip == 0x400000 + (i * 4) % 0x2000 && pc.eflags == 0x246 && pc.cs == 0x1B);
    ASSERT(pc.csd.lowWord == 0xffff && pc.csd.highWord == 0xcf9b00 && pc.codeMode == TBRW_MODE_32BIT);
    ASSERT(pc.pidRecIndex == 0x1000 && pc.pidRecIndexRaw == 1 && pc.tidIsRaw == 1 && pc.IA64PC == 0);
    ASSERT(pc.tid == 100 + i % 3 && pc.cpuNum == i % 2);
    ASSERT(tsc.tsc == 0x00001972178D8F5EULL + i);
}

static TBRW_U32 data_cb(void *data, TBRW_U32 size, TBRW_U32 n, void *user) {
    unsigned start = *(unsigned *)user, k;
    ASSERT(size == n * 40);
    for (k = 0; k < n; k++) check_record((const unsigned char *)data + 40 * k, start + records_seen + k);
    records_seen += n;
    return TRUE;
}

static unsigned bound_seen;
static TBRW_U32 bind_cb(const void *data, TBRW_U32 size, TBRW_U64 n, const DATA_BIND_STRUCT *binds, TBRW_U32 bsize,
                        void *user) {
    unsigned start = *(unsigned *)user;
    TBRW_U64 k;
    ASSERT(size == n * 40 && bsize == n * sizeof(DATA_BIND_STRUCT));
    for (k = 0; k < n; k++) {
        check_record((const unsigned char *)data + 40 * k, (unsigned)(start + bound_seen + k));
        ASSERT(binds[k].module_index == 0 && binds[k].pid_index == 0);
    }
    bound_seen += (unsigned)n;
    return TRUE;
}

static unsigned mbinds_seen;
static TBRW_U32 bind_module_cb(const TBRW_MODULE *m, TBRW_U32 size, TBRW_U64 n, const MODULE_BIND_STRUCT *b,
                               TBRW_U32 bsize, void *user) {
    (void)user;
    ASSERT(n == 1 && size == sizeof(TBRW_MODULE) && bsize == sizeof(MODULE_BIND_STRUCT));
    ASSERT(m[0].module_load_address == 0x400000 && b[0].pid_index == 0);
    mbinds_seen++;
    return TRUE;
}

static unsigned tbinds_seen;
static TBRW_U32 bind_tid_cb(const TBRW_TID *t, TBRW_U32 size, TBRW_U64 n, const TID_BIND_STRUCT *b, TBRW_U32 bsize,
                            void *user) {
    TBRW_U64 k;
    (void)user;
    ASSERT(size == n * sizeof(TBRW_TID) && bsize == n * sizeof(TID_BIND_STRUCT));
    for (k = 0; k < n; k++) {
        ASSERT(t[k].tid_associated_pid == 0x1000 && t[k].tid_id == 100 + (tbinds_seen + k) % 3 && b[k].pid_index == 0);
    }
    tbinds_seen += (unsigned)n;
    return TRUE;
}

static void read_file(const wchar_t *name) {
    TBRW_U32 needed = 0, n = 0;
    unsigned start = 0;
    OK(TBRW_open(&rd, name, TBRW_FILE_READ));
    OK(TBRW_get_number_data_streams(rd, &n));
    ASSERT(n == 1);

    /* hardware: size query, then one self-contained buffer */
    OK(TBRW_reading_section(rd, TBRW_HARDWARE_SECTION));
    EXPECT(TBRW_get_system(rd, 0, NULL, &needed), TBRW_BUFFER_TOO_SMALL);
    ASSERT(needed == sizeof(TBRW_SYSTEM) + sizeof(TBRW_NODE) + sizeof(TBRW_CPU) + sizeof(TBRW_CPU_ARCH) + sizeof(TBRW_CPUID_IA32));
    {
        TBRW_SYSTEM *sys = (TBRW_SYSTEM *)malloc(needed);
        const char *lo = (const char *)sys, *hi = (const char *)sys + needed;
        TBRW_U32 used = 0;
        EXPECT(TBRW_get_system(rd, needed - 1, sys, &used), TBRW_BUFFER_TOO_SMALL);
        OK(TBRW_get_system(rd, needed, sys, &used));
        ASSERT(used == needed);
        ASSERT(sys->system_num_nodes == 1 && (const char *)sys->node_array >= lo && (const char *)sys->node_array < hi);
        TBRW_NODE *node = sys->node_array;
        ASSERT(node->node_id == 1 && node->node_num_available == 1 && node->node_num_used == 1 && node->node_physical_memory == 1024);
        TBRW_CPU *cpu = node->cpu_array;
        ASSERT((const char *)cpu >= lo && (const char *)cpu < hi);
        ASSERT(cpu->cpu_native_arch_type == CPU_ARCHITECTURE_IA32 && cpu->cpu_intel_processor_number == 8086);
        ASSERT(cpu->cpu_speed_mhz == 3000 && cpu->cpu_fsb_mhz == 1333 && cpu->cpu_cache_L2 == 4096 && cpu->cpu_cache_L3 == 128);
        ASSERT(cpu->cpu_threads_per_core == 1 && cpu->num_cpu_arch_array == 1);
        TBRW_CPU_ARCH *arch = cpu->cpu_arch_array;
        ASSERT((const char *)arch >= lo && (const char *)arch < hi);
        ASSERT(arch->arch_type == TBRW_GST_X86 && arch->arch_num_cpuid == 1);
        ASSERT((const char *)arch->cpuid_ia32_array >= lo && (const char *)(arch->cpuid_ia32_array + 1) <= hi);
        ASSERT(arch->cpuid_ia32_array[0].cpuid_eax == 0xa && arch->cpuid_ia32_array[0].cpuid_ebx == 0x756e6547);
        ASSERT(arch->cpuid_ia32_array[0].cpuid_ecx == 0x6c65746e && arch->cpuid_ia32_array[0].cpuid_edx == 0x49656e69);
        free(sys);
    }
    OK(TBRW_done_section(rd, TBRW_HARDWARE_SECTION));

    /* software */
    OK(TBRW_reading_section(rd, TBRW_SOFTWARE_SECTION));
    {
        TBRW_HOST host;
        TBRW_OS os;
        TBRW_APPLICATION app;
        TBRW_U32 used = 0;
        EXPECT(TBRW_get_host(rd, 0, NULL, &used), TBRW_BUFFER_TOO_SMALL);
        ASSERT(used == sizeof(TBRW_HOST));
        OK(TBRW_get_host(rd, sizeof host, &host, NULL));
        ASSERT(wcscmp(text_of(rd, host.host_ip_address), L"10.10.10.10") == 0);
        ASSERT(wcscmp(text_of(rd, host.host_name), L"testhost.intel.com") == 0);
        OK(TBRW_get_os(rd, sizeof os, &os, &used));
        ASSERT(used == sizeof os && os.os_platform == TBRW_OSFAMILY_WIN32 && os.os_major == 5 && os.os_minor == 1);
        ASSERT(os.os_build == 0xa28 && os.os_extra == 0);
        ASSERT(wcscmp(text_of(rd, os.os_name), L"Windows XP") == 0 && wcscmp(text_of(rd, os.os_name_extra), L"32-bit") == 0);
        OK(TBRW_get_application(rd, sizeof app, &app, NULL));
        ASSERT(app.app_page_size == 1024 && app.app_alloc_granularity == 2048);
        ASSERT(app.app_min_app_addr == 0xfffff && app.app_max_app_addr == 0xffffffff);
        /* the string-id buffer protocol */
        {
            TBRW_STRING_OR_ID id = host.host_name;
            TBRW_U32 need = 0;
            wchar_t small[4];
            EXPECT(TBRW_convert_uniqueid_to_string(rd, 0, &id, NULL, &need), TBRW_BUFFER_TOO_SMALL);
            ASSERT(need == (wcslen(L"testhost.intel.com") + 1) * sizeof(wchar_t));
            EXPECT(TBRW_convert_uniqueid_to_string(rd, sizeof small, &id, small, NULL), TBRW_BUFFER_TOO_SMALL);
            ASSERT(id.soi_uniqueid == host.host_name.soi_uniqueid);
            id.soi_uniqueid = 0;
            EXPECT(TBRW_convert_uniqueid_to_string(rd, sizeof small, &id, small, NULL), TBRW_INVALID_STRING);
        }
    }
    OK(TBRW_done_section(rd, TBRW_SOFTWARE_SECTION));

    OK(TBRW_reading_section(rd, TBRW_VERSION_INFO_SECTION));
    {
        TBRW_VERSION_INFO v;
        OK(TBRW_get_version_info(rd, sizeof v, &v, NULL));
        ASSERT(v.version_info_size == sizeof v && v.sampling_driver_version == 0xffffffff && v.bind_version == 0);
        ASSERT(v.sample_file_version == 0x10);
    }
    OK(TBRW_done_section(rd, TBRW_VERSION_INFO_SECTION));

    OK(TBRW_reading_section(rd, TBRW_MODULE_SECTION));
    OK(TBRW_enumerate_modules(rd, module_cb, &modules_seen, 0));
    ASSERT(modules_seen == 1);
    OK(TBRW_done_section(rd, TBRW_MODULE_SECTION));
    EXPECT(TBRW_reading_section(rd, TBRW_PROCESS_THREAD_SECTION), TBRW_SECTION_NOT_EXIST);

    OK(TBRW_reading_stream(rd, 0));
    OK(TBRW_reading_stream_section(rd, 0, TBRW_STREAM_INFO_SECTION));
    {
        TBRW_STREAM_INFO si;
        OK(TBRW_get_stream_info(rd, 0, sizeof si, &si, NULL));
        ASSERT(si.sampling_duration == 20000 && si.stream_type == TBRW_SAMPLING_STREAM && si.sampling_interval == 1000);
        ASSERT(si.sampling_start_time.dwLowDateTime == 1526932352 && si.sampling_start_time.dwHighDateTime == 29849313);
        ASSERT(si.sampling_end_time.dwLowDateTime == 1566932352 && si.sampling_end_time.dwHighDateTime == 29849313);
        ASSERT(wcscmp(text_of(rd, si.command_line), L"unknown") == 0 && wcscmp(text_of(rd, si.cpu_mask), L"none") == 0);
        ASSERT(wcscmp(text_of(rd, si.comment), L"sample_comment") == 0);
    }
    OK(TBRW_done_stream_section(rd, 0, TBRW_STREAM_INFO_SECTION));
    OK(TBRW_reading_stream_section(rd, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_enumerate_events(rd, 0, event_cb, NULL, 0));
    OK(TBRW_done_stream_section(rd, 0, TBRW_EVENT_DESCRIPTION_SECTION));
    OK(TBRW_reading_stream_section(rd, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_enumerate_data_descriptor_entries(rd, 0, desc_cb, NULL));
    OK(TBRW_done_stream_section(rd, 0, TBRW_DATA_DESCRIPTION_SECTION));
    OK(TBRW_reading_stream_section(rd, 0, TBRW_DATA_SECTION));
    OK(TBRW_enumerate_data(rd, 0, data_cb, &start, 0));
    ASSERT(records_seen == samples_wanted);
    records_seen = 0;
    start = samples_wanted / 2;
    OK(TBRW_enumerate_data(rd, 0, data_cb, &start, start));
    ASSERT(records_seen == samples_wanted - start);
    OK(TBRW_done_stream_section(rd, 0, TBRW_DATA_SECTION));
    OK(TBRW_done_stream(rd, 0));
    OK(TBRW_verify(rd));
    OK(TBRW_close(rd));
}

static void bind_file(const wchar_t *name) {
    TBRW_PTR h = NULL;
    TBRW_U32 bound = 9, size = 0;
    unsigned start = 0;
    const TBRW_PID *pid = NULL;
    const TBRW_TID *tid = NULL;
    const TBRW_MODULE *mod = NULL;
    OK(TBRW_open(&h, name, TBRW_FILE_READ | TBRW_FILE_WRITE));
    /* Intel's TBRW_get_size_of_each_data_entry: the descriptor's record
     * size (the PC record and the TSC), no section open. */
    OK(TBRW_get_size_of_each_data_entry(h, 0, &size));
    ASSERT(size == sizeof(TBRW_SampleRecordPC) + sizeof(TBRW_SampleRecordTSC));
    EXPECT(TBRW_get_size_of_each_data_entry(h, 7, &size), TBRW_STREAM_NOT_EXIST);
    EXPECT(TBRW_get_size_of_each_data_entry(h, 0, NULL), TBRW_UNEXPECTED_NULL_PTR);
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 0);
    EXPECT(TBRW_bind_enumerate_data(h, 0, bind_cb, &start, 0), TBRW_STREAM_NOT_BOUND);
    OK(TBRW_dobind(h, 0));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    OK(TBRW_get_size_of_data_bind_entry(h, 0, &size));
    ASSERT(size == sizeof(DATA_BIND_STRUCT));
    OK(TBRW_get_size_of_module_bind_entry(h, 0, &size));
    ASSERT(size == sizeof(MODULE_BIND_STRUCT));
    OK(TBRW_get_size_of_tid_bind_entry(h, 0, &size));
    ASSERT(size == sizeof(TID_BIND_STRUCT));
    OK(TBRW_bind_enumerate_data(h, 0, bind_cb, &start, 0));
    ASSERT(bound_seen == samples_wanted);
    bound_seen = 0;
    start = samples_wanted - 1;
    OK(TBRW_bind_enumerate_data(h, 0, bind_cb, &start, start));
    ASSERT(bound_seen == 1);
    OK(TBRW_bind_enumerate_modules(h, bind_module_cb, NULL, 0));
    ASSERT(mbinds_seen == 1);
    OK(TBRW_bind_enumerate_tids(h, bind_tid_cb, NULL, 0));
    ASSERT(tbinds_seen == 3);
    OK(TBRW_get_one_pid(h, 0, &pid));
    ASSERT(pid->pid_id == 0x1000 && wcscmp(text_of(h, pid->pid_name), L"sample.exe") == 0);
    ASSERT(wcscmp(text_of(h, pid->pid_path), L"C:\\sample\\sample.exe") == 0);
    EXPECT(TBRW_get_one_pid(h, 1, &pid), TBRW_ENTRY_NOT_FOUND);
    OK(TBRW_get_one_tid(h, 2, &tid));
    ASSERT(tid->tid_id == 102 && tid->tid_associated_pid == 0x1000);
    OK(TBRW_get_one_module(h, 0, &mod));
    ASSERT(mod->module_load_address == 0x400000);
    EXPECT(TBRW_get_one_module(h, 1, &mod), TBRW_ENTRY_NOT_FOUND);
    OK(TBRW_close(h));

    /* Bound for good: seen by a new read-only handle. */
    OK(TBRW_open(&h, name, TBRW_FILE_READ));
    OK(TBRW_is_bound(h, 0, &bound));
    ASSERT(bound == 1);
    OK(TBRW_verify(h));
    /* the bind wrote the process/thread section the file lacked */
    OK(TBRW_reading_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_done_section(h, TBRW_PROCESS_THREAD_SECTION));
    OK(TBRW_close(h));
}

int main(int argc, char **argv) {
    wchar_t *name;
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE.tb5 SAMPLES\n", argv[0]);
        return 2;
    }
    samples_wanted = (unsigned)strtoul(argv[2], NULL, 10);
    name = wide_path(argv[1]);
    write_file(name);
    read_file(name);
    bind_file(name);
    free(name);
    printf("guide file: %u samples written, read back, verified and bound\n", samples_wanted);
    return 0;
}
