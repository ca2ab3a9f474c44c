//! The C structures a caller gives to `set_`/`add_`, read field by field
//! into the `tbrw` model (their `*_size` checked, strings read from
//! `soi_ptr`).

use std::mem::size_of;

use tb5::codes::*;
use tb5::*;

use super::*;
use crate::ctypes::*;

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
