//! Conversions between the C structures and the `tbrw` model, and the
//! `get_` buffer protocol (guide 5.8).
//!
//! Writing: a caller's structure is read field by field; its `*_size` field
//! must be at least the size of the structure this library knows (a newer,
//! larger structure is accepted), strings are read from `soi_ptr` (NULL:
//! no string). Reading: strings become `soi_uniqueid`s.
//!
//! String ids (guide 8.1 lets bit 63 of `TBRW_STRING_OR_ID` tell an id from
//! a pointer): an id this library hands out has bit 63 set, bit 62 set, the
//! serial of the handle it came from in bits 39..62 and the string's number
//! in the file in bits 0..39 (0 stays 0, "no string"). A structure read from one
//! handle can so be given to a `set_`/`add_` function of another: its ids
//! are resolved through the handle they came from while that handle is
//! open, and refused with `TBRW_BAD_PARAMETER` once it is closed. An id is
//! never dereferenced; neither is a value below [`NEVER_A_POINTER`].
//!
//! One file on purpose: each C structure's conversion in and out stand side by
//! side (field for field against the header), with the buffer protocol they
//! all use; the last lines are tests.

use std::mem::size_of;
use std::os::raw::c_void;

use tb5::codes::*;
use tb5::strings::wide_to_string;
use tb5::*;
use widestring::{WideCStr, WideChar};

use crate::ctypes::*;
use crate::handle::{locked_serial, non_null, token_of, with, Code, R};

pub(crate) fn check_size(size: u32, expected: usize) -> R {
    if (size as usize) < expected {
        return Err(Code(TBRW_BAD_PARAMETER));
    }
    Ok(())
}

/// Reads a wide C string; NULL is "no string".
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated `wchar_t` string.
pub(crate) unsafe fn wide_arg(p: *const TBRW_CHAR) -> R<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    // `TBRW_CHAR` is `wchar_t` (32 bits on Linux), the unit of `WideCStr`.
    let s = WideCStr::from_ptr_str(p as *const WideChar);
    Ok(Some(wide_to_string(s)?))
}

/// UTF-8 text as a NUL-terminated `wchar_t` string, the form every wide
/// string the library hands out takes.
///
/// Not `tb5::strings::string_to_wide`: that refuses text holding a NUL,
/// and a string id's text read from a file may hold one (a file written
/// through the Rust API); C then sees the text up to it, as it would any
/// `wchar_t` string.
pub(crate) fn to_wide(s: &str) -> Vec<TBRW_CHAR> {
    s.chars().map(|c| c as u32 as TBRW_CHAR).chain(std::iter::once(0)).collect()
}

/// Bit 63: the value is a string id, not a pointer.
const ID_FLAG: u64 = 1 << 63;
/// Bit 62: the id names its handle (serial in bits 39..62, number below).
const HANDLE_FLAG: u64 = 1 << 62;
/// Where the handle's serial starts in an id.
const SERIAL_SHIFT: u32 = 39;
/// The string number's bits in an id that names its handle.
const NUMBER_MASK: u64 = (1 << SERIAL_SHIFT) - 1;
/// The largest serial an id can carry.
const MAX_SERIAL: u64 = (1 << (62 - SERIAL_SHIFT)) - 1;

/// Linux maps nothing below `vm.mmap_min_addr` (64 KiB by default), so a
/// smaller non-zero value is a caller's bare string number, never a string.
pub(crate) const NEVER_A_POINTER: u64 = 0x1_0000;

/// A string id as this library hands it out: see the module doc. An id
/// made outside any handle, or whose number or serial does not fit, names
/// no handle (bit 62 clear, the number in bits 0..62): it can only be
/// resolved by `TBRW_convert_uniqueid_to_string` on the handle it came from.
pub(crate) fn encode_id(serial: u64, id: StringId) -> u64 {
    if id.0 == 0 {
        0
    } else if serial != 0 && serial <= MAX_SERIAL && id.0 <= NUMBER_MASK {
        ID_FLAG | HANDLE_FLAG | serial << SERIAL_SHIFT | id.0
    } else {
        ID_FLAG | (id.0 & !(ID_FLAG | HANDLE_FLAG))
    }
}

/// A `soi_uniqueid` split into the serial of the handle it names (0: none)
/// and the string number. A value without bit 63 is a bare string number.
pub(crate) fn decode_id(raw: u64) -> (u64, StringId) {
    if raw & ID_FLAG == 0 {
        (0, StringId(raw))
    } else if raw & HANDLE_FLAG == 0 {
        (0, StringId(raw & !ID_FLAG))
    } else {
        ((raw & !(ID_FLAG | HANDLE_FLAG)) >> SERIAL_SHIFT, StringId(raw & NUMBER_MASK))
    }
}

/// The text of string `id` of handle `serial` (committed, or new in its
/// writing session; `TBRW_BAD_PARAMETER` once that handle is closed).
pub(crate) fn text_of_handle(serial: u64, id: StringId) -> R<String> {
    let r = with(token_of(serial), |h| Ok(h.engine.string(id)?.to_owned()));
    r.map_err(|c| if c.0 == TBRW_UNEXPECTED_NULL_PTR { Code(TBRW_BAD_PARAMETER) } else { c })
}

/// A string field of a structure given to a `set_`/`add_` function: NULL,
/// a `wchar_t` pointer, or an id read from an open handle (see the module doc).
///
/// # Safety
/// A value with bit 63 clear and not below [`NEVER_A_POINTER`] is a valid
/// string pointer: see [`wide_arg`]. Must not be called with a handle
/// locked (an id's handle is locked to resolve it).
pub(crate) unsafe fn text(s: TBRW_STRING_OR_ID) -> R<Text> {
    let raw = s.soi_uniqueid;
    if raw & ID_FLAG != 0 {
        return match decode_id(raw) {
            (0, _) => Err(Code(TBRW_BAD_PARAMETER)),
            (serial, id) => text_of_handle(serial, id).map(Some),
        };
    }
    if raw != 0 && raw < NEVER_A_POINTER {
        return Err(Code(TBRW_BAD_PARAMETER));
    }
    wide_arg(s.soi_ptr)
}

/// An id handed out while the handle it belongs to is locked (every
/// `get_`/`enumerate_` converts inside `handle::with`).
fn soi(id: StringId) -> TBRW_STRING_OR_ID {
    TBRW_STRING_OR_ID::id(encode_id(locked_serial(), id))
}

// ------------------------------------------------------------------ writes

/// # Safety
/// `h` points to a valid `TBRW_HOST` whose string pointers are valid.
pub(crate) unsafe fn host_in(h: *const TBRW_HOST) -> R<Host> {
    non_null(h)?;
    let h = &*h;
    check_size(h.host_size, size_of::<TBRW_HOST>())?;
    Ok(Host { reserved: h.reserved, ip_address: text(h.host_ip_address)?, name: text(h.host_name)? })
}

/// # Safety
/// As [`host_in`].
pub(crate) unsafe fn os_in(o: *const TBRW_OS) -> R<Os> {
    non_null(o)?;
    let o = &*o;
    check_size(o.os_size, size_of::<TBRW_OS>())?;
    Ok(Os {
        platform: o.os_platform,
        major: o.os_major,
        minor: o.os_minor,
        build: o.os_build,
        extra: o.os_extra,
        name: text(o.os_name)?,
        name_extra: text(o.os_name_extra)?,
    })
}

/// # Safety
/// `a` points to a valid `TBRW_APPLICATION`.
pub(crate) unsafe fn application_in(a: *const TBRW_APPLICATION) -> R<Application> {
    non_null(a)?;
    let a = &*a;
    check_size(a.app_size, size_of::<TBRW_APPLICATION>())?;
    Ok(Application {
        reserved: a.app_reserved,
        page_size: a.app_page_size,
        alloc_granularity: a.app_alloc_granularity,
        min_app_addr: a.app_min_app_addr,
        max_app_addr: a.app_max_app_addr,
    })
}

/// # Safety
/// `v` points to a valid `TBRW_VERSION_INFO`.
pub(crate) unsafe fn version_in(v: *const TBRW_VERSION_INFO) -> R<VersionInfo> {
    non_null(v)?;
    let v = &*v;
    check_size(v.version_info_size, size_of::<TBRW_VERSION_INFO>())?;
    Ok(VersionInfo {
        sampling_driver_version: v.sampling_driver_version,
        bind_version: v.bind_version,
        sample_file_version: v.sample_file_version,
    })
}

/// # Safety
/// As [`host_in`].
pub(crate) unsafe fn stream_info_in(s: *const TBRW_STREAM_INFO) -> R<StreamInfo> {
    non_null(s)?;
    let s = &*s;
    check_size(s.stream_info_size, size_of::<TBRW_STREAM_INFO>())?;
    Ok(StreamInfo {
        sampling_duration_ms: s.sampling_duration,
        stream_type: s.stream_type,
        sampling_interval_us: s.sampling_interval,
        start_time: FileTime { low: s.sampling_start_time.dwLowDateTime, high: s.sampling_start_time.dwHighDateTime },
        end_time: FileTime { low: s.sampling_end_time.dwLowDateTime, high: s.sampling_end_time.dwHighDateTime },
        command_line: text(s.command_line)?,
        cpu_mask: text(s.cpu_mask)?,
        comment: text(s.comment)?,
    })
}

/// # Safety
/// As [`host_in`].
pub(crate) unsafe fn pid_in(p: *const TBRW_PID) -> R<Pid> {
    non_null(p)?;
    let p = &*p;
    check_size(p.pid_size, size_of::<TBRW_PID>())?;
    Ok(Pid {
        id: p.pid_id,
        flags: PidTidFlags::from_bits_retain(p.pid_flags),
        reserved: p.reserved,
        event_when: p.pid_event_when,
        reserved_for_legacy: p.reserved_for_legacy,
        reserved1: p.reserved1,
        path: text(p.pid_path)?,
        name: text(p.pid_name)?,
    })
}

/// # Safety
/// As [`host_in`].
pub(crate) unsafe fn tid_in(t: *const TBRW_TID) -> R<Tid> {
    non_null(t)?;
    let t = &*t;
    check_size(t.tid_size, size_of::<TBRW_TID>())?;
    Ok(Tid {
        associated_pid: t.tid_associated_pid,
        id: t.tid_id,
        flags: PidTidFlags::from_bits_retain(t.tid_flags),
        event_when: t.tid_event_when,
        reserved_for_legacy: t.reserved_for_legacy,
        reserved: t.reserved,
        name: text(t.tid_name)?,
    })
}

/// # Safety
/// As [`host_in`].
pub(crate) unsafe fn module_in(m: *const TBRW_MODULE) -> R<Module> {
    non_null(m)?;
    let m = &*m;
    check_size(m.module_size, size_of::<TBRW_MODULE>())?;
    Ok(Module {
        reserved: m.module_reserved,
        associated_pid: m.module_associated_pid,
        flags: ModuleFlags::from_bits_retain(m.module_flags),
        event_when: m.module_event_when,
        segment_number: m.module_segment_number,
        segment_type: (m.module_segment_type_bits & 3) as u8,
        code_selector: m.module_code_selector,
        reserved2: m.reserved,
        length: m.module_length,
        load_address: m.module_load_address,
        reserved_for_legacy: m.reserved_for_legacy,
        reserved_for_legacy2: m.reserved_for_legacy2,
        reserved_for_legacy_flags: m.reserved_for_legacy_flags,
        reserved1: m.reserved1,
        unload_tsc: m.module_unload_tsc,
        path: text(m.module_path)?,
        name: text(m.module_name)?,
        segment_name: text(m.module_segment_name)?,
    })
}

fn detail_in(d: &TBRW_EVENT_DETAIL) -> EventDetail {
    EventDetail {
        access_size_bits: d.detail_access_size,
        method: d.detail_method,
        access: d.detail_access,
        address: d.detail_address,
        value: d.detail_value,
        legacy_command: d.legacy_command,
        reserved1: d.reserved1,
        reserved2: d.reserved2,
        reserved3: d.reserved3,
    }
}

/// # Safety
/// `e` points to a valid `TBRW_EVENT` whose detail array has
/// `event_num_details` entries and whose string pointers are valid.
pub(crate) unsafe fn event_in(e: *const TBRW_EVENT) -> R<Event> {
    non_null(e)?;
    let e = &*e;
    check_size(e.event_size, size_of::<TBRW_EVENT>())?;
    let n = e.event_num_details as usize;
    let details = if n == 0 {
        Vec::new()
    } else {
        non_null(e.event_detail_array)?;
        let d = std::slice::from_raw_parts(e.event_detail_array, n);
        for x in d {
            check_size(x.detail_size, size_of::<TBRW_EVENT_DETAIL>())?;
        }
        d.iter().map(detail_in).collect()
    };
    Ok(Event {
        id: e.event_id,
        flags: EventFlags::from_bits_retain(e.event_flags),
        sav: e.event_sav,
        name: text(e.event_name)?,
        arch_name: text(e.event_arch_name)?,
        details,
    })
}

/// An event as stored by `TBRW_add_events_from_file`: the 48-byte
/// `TBRW_EVENT` followed by its `event_num_details` details; the pointer
/// and string fields of a file carry nothing and are ignored.
pub(crate) fn event_from_file(bytes: &[u8]) -> R<(Event, usize)> {
    let bad = || Code(TBRW_UNEXPECTED_VALUE);
    if bytes.len() < size_of::<TBRW_EVENT>() {
        return Err(bad());
    }
    // SAFETY: the length was checked; read_unaligned copies plain integers.
    let e: TBRW_EVENT = unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const TBRW_EVENT) };
    let n = e.event_num_details as usize;
    let need = n
        .checked_mul(size_of::<TBRW_EVENT_DETAIL>())
        .and_then(|d| d.checked_add(size_of::<TBRW_EVENT>()))
        .ok_or_else(bad)?;
    if bytes.len() < need {
        return Err(bad());
    }
    let details = (0..n)
        .map(|i| {
            let at = size_of::<TBRW_EVENT>() + i * size_of::<TBRW_EVENT_DETAIL>();
            // SAFETY: in bounds, checked above.
            detail_in(&unsafe { std::ptr::read_unaligned(bytes[at..].as_ptr() as *const TBRW_EVENT_DETAIL) })
        })
        .collect();
    let event = Event {
        id: e.event_id,
        flags: EventFlags::from_bits_retain(e.event_flags),
        sav: e.event_sav,
        details,
        ..Default::default()
    };
    Ok((event, need))
}

/// # Safety
/// As [`host_in`].
pub(crate) unsafe fn desc_in(d: *const TBRW_SAMPREC_DESC_ENTRY) -> R<DescEntry> {
    non_null(d)?;
    let d = &*d;
    check_size(d.desc_size, size_of::<TBRW_SAMPREC_DESC_ENTRY>())?;
    Ok(DescEntry {
        offset: d.desc_offset,
        desc_type: d.desc_type,
        subtype: d.desc_subtype,
        data_size: d.desc_data_size,
        access_offset: d.desc_access_offset,
        access_type: d.desc_access_type,
        access_method: d.desc_access_method,
        sample_flag: d.desc_sample_flag,
        reserved0: d.reserved0,
        reserved1: d.reserved1,
        name: text(d.desc_name)?,
    })
}

/// # Safety
/// `s` points to a valid `TBRW_SYSTEM` whose arrays have the lengths its
/// count fields say.
pub(crate) unsafe fn system_in(s: *const TBRW_SYSTEM) -> R<System> {
    non_null(s)?;
    let s = &*s;
    check_size(s.system_size, size_of::<TBRW_SYSTEM>())?;
    let slice = |p: *const u8, n: usize| -> R<()> {
        if n > 0 {
            non_null(p)
        } else {
            Ok(())
        }
    };
    slice(s.node_array as *const u8, s.system_num_nodes as usize)?;
    // The count is the caller's: a garbage one must be TBRW_NO_MEMORY, not an abort.
    let mut nodes = Vec::new();
    nodes.try_reserve_exact(s.system_num_nodes as usize).map_err(|_| Code(TBRW_NO_MEMORY))?;
    for i in 0..s.system_num_nodes as usize {
        let n = &*s.node_array.add(i);
        check_size(n.node_size, size_of::<TBRW_NODE>())?;
        slice(n.cpu_array as *const u8, n.node_num_available as usize)?;
        let mut cpus = Vec::new();
        for j in 0..n.node_num_available as usize {
            let c = &*n.cpu_array.add(j);
            check_size(c.cpu_size, size_of::<TBRW_CPU>())?;
            // The count is the low 16 bits, as Intel's library reads it: a
            // hybrid CPU's core type sits above them (`Cpu::core_type`).
            let num_archs = (c.num_cpu_arch_array & 0xFFFF) as usize;
            slice(c.cpu_arch_array as *const u8, num_archs)?;
            let mut archs = Vec::new();
            for k in 0..num_archs {
                let a = &*c.cpu_arch_array.add(k);
                check_size(a.arch_size, size_of::<TBRW_CPU_ARCH>())?;
                if a.arch_type > arch_type::MAX {
                    return Err(Code(TBRW_UNSUPPORTED_ARCH_TYPE));
                }
                let m = a.arch_num_cpuid as usize;
                slice(a.cpuid_array as *const u8, m)?;
                let cpuids = if a.arch_type == arch_type::ITANIUM {
                    let v = if m == 0 {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(a.cpuid_array as *const TBRW_CPUID_IA64, m)
                    };
                    Cpuids::Ia64(
                        v.iter()
                            .map(|x| CpuidIa64 { select: x.cpuid_select, value: x.cpuid_val, reserved: x.reserved })
                            .collect(),
                    )
                } else {
                    let v = if m == 0 {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(a.cpuid_array as *const TBRW_CPUID_IA32, m)
                    };
                    Cpuids::Ia32(
                        v.iter()
                            .map(|x| CpuidIa32 {
                                eax_input: x.cpuid_eax_input,
                                eax: x.cpuid_eax,
                                ebx: x.cpuid_ebx,
                                ecx: x.cpuid_ecx,
                                edx: x.cpuid_edx,
                                reserved: x.reserved,
                            })
                            .collect(),
                    )
                };
                archs.push(CpuArch { arch_type: a.arch_type, cpuids });
            }
            cpus.push(Cpu {
                number: c.cpu_number,
                native_arch_type: c.cpu_native_arch_type,
                intel_processor_number: c.cpu_intel_processor_number,
                speed_mhz: c.cpu_speed_mhz,
                fsb_mhz: c.cpu_fsb_mhz,
                cache_l2_kb: c.cpu_cache_L2,
                cache_l3_kb: c.cpu_cache_L3,
                tsc_offset: c.cpu_tsc_offset,
                package_num: c.cpu_package_num,
                core_num: c.cpu_core_num,
                hardware_thread_num: c.cpu_hardware_thread_num,
                threads_per_core: c.cpu_threads_per_core,
                core_type: (c.num_cpu_arch_array >> 16) as u16,
                dummy: c.dummy,
                archs,
            });
        }
        nodes.push(Node {
            type_from_shell: n.node_type_from_shell,
            id: n.node_id,
            num_available: n.node_num_available,
            num_used: n.node_num_used,
            reserved: n.reserved,
            physical_memory_mb: n.node_physical_memory,
            cpus,
        });
    }
    Ok(System { nodes })
}

// ------------------------------------------------------------------ reads

pub(crate) fn host_out(h: &Host<StringId>) -> TBRW_HOST {
    TBRW_HOST {
        host_size: size_of::<TBRW_HOST>() as u32,
        reserved: h.reserved,
        host_ip_address: soi(h.ip_address),
        host_name: soi(h.name),
    }
}

pub(crate) fn os_out(o: &Os<StringId>) -> TBRW_OS {
    TBRW_OS {
        os_size: size_of::<TBRW_OS>() as u32,
        os_platform: o.platform,
        os_major: o.major,
        os_minor: o.minor,
        os_build: o.build,
        os_extra: o.extra,
        os_name: soi(o.name),
        os_name_extra: soi(o.name_extra),
    }
}

pub(crate) fn application_out(a: &Application) -> TBRW_APPLICATION {
    TBRW_APPLICATION {
        app_size: size_of::<TBRW_APPLICATION>() as u32,
        app_reserved: a.reserved,
        app_page_size: a.page_size,
        app_alloc_granularity: a.alloc_granularity,
        app_min_app_addr: a.min_app_addr,
        app_max_app_addr: a.max_app_addr,
    }
}

pub(crate) fn version_out(v: &VersionInfo) -> TBRW_VERSION_INFO {
    TBRW_VERSION_INFO {
        version_info_size: size_of::<TBRW_VERSION_INFO>() as u32,
        sampling_driver_version: v.sampling_driver_version,
        bind_version: v.bind_version,
        sample_file_version: v.sample_file_version,
    }
}

pub(crate) fn stream_info_out(s: &StreamInfo<StringId>) -> TBRW_STREAM_INFO {
    TBRW_STREAM_INFO {
        stream_info_size: size_of::<TBRW_STREAM_INFO>() as u32,
        sampling_duration: s.sampling_duration_ms,
        stream_type: s.stream_type,
        sampling_interval: s.sampling_interval_us,
        sampling_start_time: TBRW_FILETIME { dwLowDateTime: s.start_time.low, dwHighDateTime: s.start_time.high },
        sampling_end_time: TBRW_FILETIME { dwLowDateTime: s.end_time.low, dwHighDateTime: s.end_time.high },
        command_line: soi(s.command_line),
        cpu_mask: soi(s.cpu_mask),
        comment: soi(s.comment),
    }
}

pub(crate) fn pid_out(p: &Pid<StringId>) -> TBRW_PID {
    TBRW_PID {
        pid_size: size_of::<TBRW_PID>() as u32,
        pid_id: p.id,
        pid_flags: p.flags.bits(),
        reserved: p.reserved,
        pid_event_when: p.event_when,
        reserved_for_legacy: p.reserved_for_legacy,
        reserved1: p.reserved1,
        pid_path: soi(p.path),
        pid_name: soi(p.name),
    }
}

pub(crate) fn tid_out(t: &Tid<StringId>) -> TBRW_TID {
    TBRW_TID {
        tid_size: size_of::<TBRW_TID>() as u32,
        tid_associated_pid: t.associated_pid,
        tid_id: t.id,
        tid_flags: t.flags.bits(),
        tid_event_when: t.event_when,
        reserved_for_legacy: t.reserved_for_legacy,
        reserved: t.reserved,
        tid_name: soi(t.name),
    }
}

pub(crate) fn module_out(m: &Module<StringId>) -> TBRW_MODULE {
    TBRW_MODULE {
        module_size: size_of::<TBRW_MODULE>() as u32,
        module_reserved: m.reserved,
        module_associated_pid: m.associated_pid,
        module_flags: m.flags.bits(),
        module_event_when: m.event_when,
        module_segment_number: m.segment_number,
        module_segment_type_bits: u32::from(m.segment_type & 3),
        module_code_selector: m.code_selector,
        reserved: m.reserved2,
        module_length: m.length,
        module_load_address: m.load_address,
        reserved_for_legacy: m.reserved_for_legacy,
        reserved_for_legacy2: m.reserved_for_legacy2,
        reserved_for_legacy_flags: m.reserved_for_legacy_flags,
        reserved1: m.reserved1,
        module_unload_tsc: m.unload_tsc,
        module_path: soi(m.path),
        module_name: soi(m.name),
        module_segment_name: soi(m.segment_name),
    }
}

pub(crate) fn desc_out(d: &DescEntry<StringId>) -> TBRW_SAMPREC_DESC_ENTRY {
    TBRW_SAMPREC_DESC_ENTRY {
        desc_size: size_of::<TBRW_SAMPREC_DESC_ENTRY>() as u32,
        desc_offset: d.offset,
        desc_type: d.desc_type,
        desc_subtype: d.subtype,
        desc_data_size: d.data_size,
        desc_access_offset: d.access_offset,
        desc_access_type: d.access_type,
        desc_access_method: d.access_method,
        desc_sample_flag: d.sample_flag,
        reserved0: d.reserved0,
        reserved1: d.reserved1,
        desc_name: soi(d.name),
        padding: [0; 32],
    }
}

/// One event followed by its details, in one buffer (8-byte aligned), with
/// `event_detail_array` pointing at them.
pub(crate) fn event_out(e: &Event<StringId>) -> Vec<u64> {
    let words = (size_of::<TBRW_EVENT>() + e.details.len() * size_of::<TBRW_EVENT_DETAIL>()) / 8;
    let mut buf = vec![0u64; words];
    let base = buf.as_mut_ptr() as *mut u8;
    // SAFETY: the buffer holds the event and its details, is 8-aligned,
    // and every write stays inside it.
    unsafe {
        let details = base.add(size_of::<TBRW_EVENT>()) as *mut TBRW_EVENT_DETAIL;
        for (i, d) in e.details.iter().enumerate() {
            details.add(i).write(TBRW_EVENT_DETAIL {
                detail_size: size_of::<TBRW_EVENT_DETAIL>() as u32,
                detail_access_size: d.access_size_bits,
                detail_method: d.method,
                detail_access: d.access,
                detail_address: d.address,
                detail_value: d.value,
                legacy_command: d.legacy_command,
                reserved1: d.reserved1,
                reserved2: d.reserved2,
                reserved3: d.reserved3,
            });
        }
        (base as *mut TBRW_EVENT).write(TBRW_EVENT {
            event_size: size_of::<TBRW_EVENT>() as u32,
            event_id: e.id,
            event_num_details: e.details.len() as u32,
            event_flags: e.flags.bits(),
            event_sav: e.sav,
            event_name: soi(e.name),
            event_arch_name: soi(e.arch_name),
            event_detail_array: if e.details.is_empty() { std::ptr::null_mut() } else { details },
        });
    }
    buf
}

// ------------------------------------------------------------------ buffer protocol

/// Hands `bytes` to the caller with the protocol of guide 5.8: the size
/// needed goes to `*used` (when given); a buffer smaller than that is
/// `TBRW_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `buf` is NULL or valid for `size_of_buffer` bytes; `used` is NULL or valid.
pub(crate) unsafe fn put(bytes: &[u8], size_of_buffer: u32, buf: *mut c_void, used: *mut u32) -> R {
    let needed = u32::try_from(bytes.len()).map_err(|_| Code(TBRW_BUFFER_OVERFLOW))?;
    if !used.is_null() {
        *used = needed;
    }
    if size_of_buffer < needed {
        return Err(Code(TBRW_BUFFER_TOO_SMALL));
    }
    if needed > 0 {
        non_null(buf)?;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, bytes.len());
    }
    Ok(())
}

/// The bytes of a plain C struct.
pub(crate) fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
    let mut out = vec![0u8; size_of::<T>()];
    // SAFETY: T is a plain-data #[repr(C)] struct; copying its bytes is what C would do.
    unsafe { std::ptr::copy_nonoverlapping(v as *const T as *const u8, out.as_mut_ptr(), size_of::<T>()) };
    out
}

/// The whole hardware section as one buffer, laid out for the address
/// `at`: `TBRW_SYSTEM`, then the nodes, then each node's cpus, each cpu's
/// architectures and each architecture's cpuids, every pointer pointing
/// inside the buffer.
pub(crate) fn system_image(sys: &System, at: usize) -> Vec<u8> {
    fn push<T: Copy>(img: &mut Vec<u8>, v: &T) {
        img.extend_from_slice(&bytes_of(v));
    }
    // Offsets of every array, computed first so that pointers can be written in one pass.
    let mut size = size_of::<TBRW_SYSTEM>() + sys.nodes.len() * size_of::<TBRW_NODE>();
    let mut cpu_at = Vec::new();
    for n in &sys.nodes {
        cpu_at.push(size);
        size += n.cpus.len() * size_of::<TBRW_CPU>();
    }
    let mut arch_at = Vec::new();
    for n in &sys.nodes {
        for c in &n.cpus {
            arch_at.push(size);
            size += c.archs.len() * size_of::<TBRW_CPU_ARCH>();
        }
    }
    let mut cpuid_at = Vec::new();
    for n in &sys.nodes {
        for c in &n.cpus {
            for a in &c.archs {
                cpuid_at.push(size);
                size += a.cpuids.len() * 24;
            }
        }
    }
    let ptr = |off: usize, len: usize| if len == 0 { 0usize } else { at + off };
    let mut img = Vec::with_capacity(size);
    push(
        &mut img,
        &TBRW_SYSTEM {
            system_size: size_of::<TBRW_SYSTEM>() as u32,
            system_num_nodes: sys.nodes.len() as u32,
            node_array: ptr(size_of::<TBRW_SYSTEM>(), sys.nodes.len()) as *mut TBRW_NODE,
        },
    );
    for (i, n) in sys.nodes.iter().enumerate() {
        push(
            &mut img,
            &TBRW_NODE {
                node_size: size_of::<TBRW_NODE>() as u32,
                node_type_from_shell: n.type_from_shell,
                node_id: n.id,
                // The cpu array has this many entries: it must say how many there are.
                node_num_available: n.cpus.len() as u32,
                node_num_used: n.num_used,
                reserved: n.reserved,
                node_physical_memory: n.physical_memory_mb,
                cpu_array: ptr(cpu_at[i], n.cpus.len()) as *mut TBRW_CPU,
            },
        );
    }
    let mut ci = 0;
    for n in &sys.nodes {
        for c in &n.cpus {
            push(
                &mut img,
                &TBRW_CPU {
                    cpu_size: size_of::<TBRW_CPU>() as u32,
                    cpu_number: c.number,
                    cpu_native_arch_type: c.native_arch_type,
                    cpu_intel_processor_number: c.intel_processor_number,
                    cpu_speed_mhz: c.speed_mhz,
                    cpu_fsb_mhz: c.fsb_mhz,
                    cpu_cache_L2: c.cache_l2_kb,
                    cpu_cache_L3: c.cache_l3_kb,
                    cpu_tsc_offset: c.tsc_offset,
                    cpu_package_num: c.package_num,
                    cpu_core_num: c.core_num,
                    cpu_hardware_thread_num: c.hardware_thread_num,
                    cpu_threads_per_core: c.threads_per_core,
                    num_cpu_arch_array: c.archs.len() as u32 | u32::from(c.core_type) << 16,
                    dummy: c.dummy,
                    cpu_arch_array: ptr(arch_at[ci], c.archs.len()) as *mut TBRW_CPU_ARCH,
                },
            );
            ci += 1;
        }
    }
    let mut ai = 0;
    for n in &sys.nodes {
        for c in &n.cpus {
            for a in &c.archs {
                push(
                    &mut img,
                    &TBRW_CPU_ARCH {
                        arch_size: size_of::<TBRW_CPU_ARCH>() as u32,
                        arch_type: a.arch_type,
                        arch_num_cpuid: a.cpuids.len() as u16,
                        cpuid_array: ptr(cpuid_at[ai], a.cpuids.len()) as *mut c_void,
                    },
                );
                ai += 1;
            }
        }
    }
    for n in &sys.nodes {
        for c in &n.cpus {
            for a in &c.archs {
                match &a.cpuids {
                    Cpuids::Ia32(v) => v.iter().for_each(|x| {
                        push(
                            &mut img,
                            &TBRW_CPUID_IA32 {
                                cpuid_eax_input: x.eax_input,
                                cpuid_eax: x.eax,
                                cpuid_ebx: x.ebx,
                                cpuid_ecx: x.ecx,
                                cpuid_edx: x.edx,
                                reserved: x.reserved,
                            },
                        )
                    }),
                    Cpuids::Ia64(v) => v.iter().for_each(|x| {
                        push(
                            &mut img,
                            &TBRW_CPUID_IA64 { cpuid_select: x.select, cpuid_val: x.value, reserved: x.reserved },
                        )
                    }),
                }
            }
        }
    }
    debug_assert_eq!(img.len(), size);
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_handle_and_are_never_pointers() {
        assert_eq!(encode_id(7, StringId(0)), 0);
        let id = encode_id(7, StringId(12));
        assert_eq!(id >> 63, 1);
        assert_eq!(decode_id(id), (7, StringId(12)));
        // A number or serial that does not fit: serial 0, the number kept whole.
        let big = encode_id(MAX_SERIAL + 1, StringId(5));
        assert_eq!(decode_id(big), (0, StringId(5)));
        assert_eq!(decode_id(encode_id(3, StringId(NUMBER_MASK + 1))), (0, StringId(NUMBER_MASK + 1)));
        assert_eq!(decode_id(encode_id(MAX_SERIAL, StringId(NUMBER_MASK))), (MAX_SERIAL, StringId(NUMBER_MASK)));
        assert_eq!(decode_id(12), (0, StringId(12)));
        // SAFETY: none of these is a pointer; `text` must not dereference them.
        unsafe {
            assert_eq!(text(TBRW_STRING_OR_ID::id(0)), Ok(None));
            assert_eq!(text(TBRW_STRING_OR_ID::id(3)), Err(Code(TBRW_BAD_PARAMETER)));
            assert_eq!(text(TBRW_STRING_OR_ID::id(big)), Err(Code(TBRW_BAD_PARAMETER)));
            assert_eq!(text(TBRW_STRING_OR_ID::id(id)), Err(Code(TBRW_BAD_PARAMETER)));
        }
    }
}
