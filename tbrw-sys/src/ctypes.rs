//! The C structures of `tbrw_types.h`, mirrored with `#[repr(C)]`.
//!
//! Names are the C names; unions and bit fields of the C side are plain
//! integers here (the Rust side never touches them field by field). The
//! sizes and offsets are those of the guide's chapter 8 and Intel's public
//! TBRW headers; every one is asserted at compile time below, and the C
//! tests (`tests/c/abi_check.c`) check the same facts from the C side.
#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::mem::{offset_of, size_of};
use std::os::raw::c_void;

pub type TBRW_CHAR = libc_wchar;
/// `wchar_t` on Linux.
pub type libc_wchar = i32;

#[repr(C)]
#[derive(Clone, Copy)]
pub union TBRW_STRING_OR_ID {
    pub soi_uniqueid: u64,
    pub soi_ptr: *const TBRW_CHAR,
}

impl TBRW_STRING_OR_ID {
    pub fn id(id: u64) -> Self {
        TBRW_STRING_OR_ID { soi_uniqueid: id }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TBRW_FILETIME {
    pub dwLowDateTime: u32,
    pub dwHighDateTime: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TBRW_VERSION_INFO {
    pub version_info_size: u32,
    pub sampling_driver_version: u32,
    pub bind_version: u32,
    pub sample_file_version: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_STREAM_INFO {
    pub stream_info_size: u32,
    pub sampling_duration: u32,
    pub stream_type: u32,
    pub sampling_interval: u32,
    pub sampling_start_time: TBRW_FILETIME,
    pub sampling_end_time: TBRW_FILETIME,
    pub command_line: TBRW_STRING_OR_ID,
    pub cpu_mask: TBRW_STRING_OR_ID,
    pub comment: TBRW_STRING_OR_ID,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TBRW_CPUID_IA32 {
    pub cpuid_eax_input: u32,
    pub cpuid_eax: u32,
    pub cpuid_ebx: u32,
    pub cpuid_ecx: u32,
    pub cpuid_edx: u32,
    pub reserved: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TBRW_CPUID_IA64 {
    pub cpuid_select: u64,
    pub cpuid_val: u64,
    pub reserved: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_CPU_ARCH {
    pub arch_size: u32,
    pub arch_type: u16,
    pub arch_num_cpuid: u16,
    /// `cpuid_ia32_array` / `cpuid_ia64_array`.
    pub cpuid_array: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_CPU {
    pub cpu_size: u32,
    pub cpu_number: u32,
    pub cpu_native_arch_type: u32,
    pub cpu_intel_processor_number: u32,
    pub cpu_speed_mhz: u32,
    pub cpu_fsb_mhz: u32,
    pub cpu_cache_L2: u32,
    pub cpu_cache_L3: u32,
    pub cpu_tsc_offset: i64,
    pub cpu_package_num: u16,
    pub cpu_core_num: u16,
    pub cpu_hardware_thread_num: u16,
    pub cpu_threads_per_core: u16,
    pub num_cpu_arch_array: u32,
    pub dummy: u32,
    pub cpu_arch_array: *mut TBRW_CPU_ARCH,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_NODE {
    pub node_size: u32,
    pub node_type_from_shell: u32,
    pub node_id: u32,
    pub node_num_available: u32,
    pub node_num_used: u32,
    pub reserved: u32,
    pub node_physical_memory: u64,
    pub cpu_array: *mut TBRW_CPU,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_SYSTEM {
    pub system_size: u32,
    pub system_num_nodes: u32,
    pub node_array: *mut TBRW_NODE,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_HOST {
    pub host_size: u32,
    pub reserved: u32,
    pub host_ip_address: TBRW_STRING_OR_ID,
    pub host_name: TBRW_STRING_OR_ID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_OS {
    pub os_size: u32,
    pub os_platform: u32,
    pub os_major: u32,
    pub os_minor: u32,
    pub os_build: u32,
    pub os_extra: u32,
    pub os_name: TBRW_STRING_OR_ID,
    pub os_name_extra: TBRW_STRING_OR_ID,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TBRW_APPLICATION {
    pub app_size: u32,
    pub app_reserved: u32,
    pub app_page_size: u32,
    pub app_alloc_granularity: u32,
    pub app_min_app_addr: u64,
    pub app_max_app_addr: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_PID {
    pub pid_size: u32,
    pub pid_id: u32,
    pub pid_flags: u32,
    pub reserved: u32,
    pub pid_event_when: u64,
    pub reserved_for_legacy: u32,
    pub reserved1: u32,
    pub pid_path: TBRW_STRING_OR_ID,
    pub pid_name: TBRW_STRING_OR_ID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_TID {
    pub tid_size: u32,
    pub tid_associated_pid: u32,
    pub tid_id: u32,
    pub tid_flags: u32,
    pub tid_event_when: u64,
    pub reserved_for_legacy: u32,
    pub reserved: u32,
    pub tid_name: TBRW_STRING_OR_ID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_MODULE {
    pub module_size: u32,
    pub module_reserved: u32,
    pub module_associated_pid: u32,
    pub module_flags: u32,
    pub module_event_when: u64,
    pub module_segment_number: u32,
    /// Bits 0-1: `module_segment_type`.
    pub module_segment_type_bits: u32,
    pub module_code_selector: u32,
    pub reserved: u32,
    pub module_length: u64,
    pub module_load_address: u64,
    pub reserved_for_legacy: u32,
    pub reserved_for_legacy2: u32,
    pub reserved_for_legacy_flags: u32,
    pub reserved1: u32,
    pub module_unload_tsc: u64,
    pub module_path: TBRW_STRING_OR_ID,
    pub module_name: TBRW_STRING_OR_ID,
    pub module_segment_name: TBRW_STRING_OR_ID,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TBRW_EVENT_DETAIL {
    pub detail_size: u32,
    pub detail_access_size: u16,
    pub detail_method: u8,
    pub detail_access: u8,
    pub detail_address: u64,
    pub detail_value: u64,
    pub legacy_command: u8,
    pub reserved1: u8,
    pub reserved2: u16,
    pub reserved3: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_EVENT {
    pub event_size: u32,
    pub event_id: u32,
    pub event_num_details: u32,
    pub event_flags: u32,
    pub event_sav: u64,
    pub event_name: TBRW_STRING_OR_ID,
    pub event_arch_name: TBRW_STRING_OR_ID,
    pub event_detail_array: *mut TBRW_EVENT_DETAIL,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TBRW_SAMPREC_DESC_ENTRY {
    pub desc_size: u32,
    pub desc_offset: u32,
    pub desc_type: u16,
    pub desc_subtype: u16,
    pub desc_data_size: u32,
    pub desc_access_offset: u64,
    pub desc_access_type: u8,
    pub desc_access_method: u8,
    pub desc_sample_flag: u8,
    pub reserved0: u8,
    pub reserved1: u32,
    pub desc_name: TBRW_STRING_OR_ID,
    pub padding: [u8; 32],
}

pub use tb5::{DataBind as DATA_BIND_STRUCT, ModuleBind as MODULE_BIND_STRUCT, TidBind as TID_BIND_STRUCT};

/// `TBRW_DATA_CALLBACK` (and the other non-bind callbacks, by entry type).
pub type EnumCallback<T> =
    unsafe extern "C" fn(data: *mut T, data_size: u32, num_entries: u32, user_ptr: *mut c_void) -> u32;
/// `BIND_DATA_CALLBACK`, `BIND_MODULE_CALLBACK`, `BIND_TID_CALLBACK`.
pub type BindCallback<T, B> = unsafe extern "C" fn(
    data: *const T,
    sizeof_data_buffer: u32,
    num_entries: u64,
    bind_table: *const B,
    sizeof_bind_buffer: u32,
    user_ptr: *mut c_void,
) -> u32;

macro_rules! check {
    ($t:ty, $size:expr $(, $f:ident @ $o:expr)*) => {
        const _: () = assert!(size_of::<$t>() == $size);
        $(const _: () = assert!(offset_of!($t, $f) == $o);)*
    };
}

check!(TBRW_STRING_OR_ID, 8);
check!(TBRW_FILETIME, 8, dwLowDateTime @ 0, dwHighDateTime @ 4);
check!(TBRW_VERSION_INFO, 16, version_info_size @ 0, sampling_driver_version @ 4, bind_version @ 8, sample_file_version @ 12);
check!(TBRW_STREAM_INFO, 56, stream_info_size @ 0, sampling_duration @ 4, stream_type @ 8, sampling_interval @ 12,
    sampling_start_time @ 16, sampling_end_time @ 24, command_line @ 32, cpu_mask @ 40, comment @ 48);
check!(TBRW_CPUID_IA32, 24, cpuid_eax_input @ 0, cpuid_eax @ 4, cpuid_ebx @ 8, cpuid_ecx @ 12, cpuid_edx @ 16, reserved @ 20);
check!(TBRW_CPUID_IA64, 24, cpuid_select @ 0, cpuid_val @ 8, reserved @ 16);
check!(TBRW_CPU_ARCH, 16, arch_size @ 0, arch_type @ 4, arch_num_cpuid @ 6, cpuid_array @ 8);
check!(TBRW_CPU, 64, cpu_size @ 0, cpu_number @ 4, cpu_native_arch_type @ 8, cpu_intel_processor_number @ 12,
    cpu_speed_mhz @ 16, cpu_fsb_mhz @ 20, cpu_cache_L2 @ 24, cpu_cache_L3 @ 28, cpu_tsc_offset @ 32, cpu_package_num @ 40,
    cpu_core_num @ 42, cpu_hardware_thread_num @ 44, cpu_threads_per_core @ 46, num_cpu_arch_array @ 48, dummy @ 52,
    cpu_arch_array @ 56);
check!(TBRW_NODE, 40, node_size @ 0, node_type_from_shell @ 4, node_id @ 8, node_num_available @ 12, node_num_used @ 16,
    reserved @ 20, node_physical_memory @ 24, cpu_array @ 32);
check!(TBRW_SYSTEM, 16, system_size @ 0, system_num_nodes @ 4, node_array @ 8);
check!(TBRW_HOST, 24, host_size @ 0, reserved @ 4, host_ip_address @ 8, host_name @ 16);
check!(TBRW_OS, 40, os_size @ 0, os_platform @ 4, os_major @ 8, os_minor @ 12, os_build @ 16, os_extra @ 20, os_name @ 24,
    os_name_extra @ 32);
check!(TBRW_APPLICATION, 32, app_size @ 0, app_reserved @ 4, app_page_size @ 8, app_alloc_granularity @ 12,
    app_min_app_addr @ 16, app_max_app_addr @ 24);
check!(TBRW_PID, 48, pid_size @ 0, pid_id @ 4, pid_flags @ 8, reserved @ 12, pid_event_when @ 16, reserved_for_legacy @ 24,
    reserved1 @ 28, pid_path @ 32, pid_name @ 40);
check!(TBRW_TID, 40, tid_size @ 0, tid_associated_pid @ 4, tid_id @ 8, tid_flags @ 12, tid_event_when @ 16,
    reserved_for_legacy @ 24, reserved @ 28, tid_name @ 32);
check!(TBRW_MODULE, 104, module_size @ 0, module_reserved @ 4, module_associated_pid @ 8, module_flags @ 12,
    module_event_when @ 16, module_segment_number @ 24, module_segment_type_bits @ 28, module_code_selector @ 32,
    reserved @ 36, module_length @ 40, module_load_address @ 48, reserved_for_legacy @ 56, reserved_for_legacy2 @ 60,
    reserved_for_legacy_flags @ 64, reserved1 @ 68, module_unload_tsc @ 72, module_path @ 80, module_name @ 88,
    module_segment_name @ 96);
check!(TBRW_EVENT_DETAIL, 32, detail_size @ 0, detail_access_size @ 4, detail_method @ 6, detail_access @ 7,
    detail_address @ 8, detail_value @ 16, legacy_command @ 24, reserved1 @ 25, reserved2 @ 26, reserved3 @ 28);
check!(TBRW_EVENT, 48, event_size @ 0, event_id @ 4, event_num_details @ 8, event_flags @ 12, event_sav @ 16,
    event_name @ 24, event_arch_name @ 32, event_detail_array @ 40);
check!(TBRW_SAMPREC_DESC_ENTRY, 72, desc_size @ 0, desc_offset @ 4, desc_type @ 8, desc_subtype @ 10, desc_data_size @ 12,
    desc_access_offset @ 16, desc_access_type @ 24, desc_access_method @ 25, desc_sample_flag @ 26, reserved0 @ 27,
    reserved1 @ 28, desc_name @ 32, padding @ 40);
check!(DATA_BIND_STRUCT, 24, module_index @ 0, pid_index @ 8, tid_index @ 16);
check!(MODULE_BIND_STRUCT, 8, pid_index @ 0);
check!(TID_BIND_STRUCT, 8, pid_index @ 0);
