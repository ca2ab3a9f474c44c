//! The `tbrw` model made into the C structures handed back by `get_` and
//! `enumerate_` (strings as `soi_uniqueid`s), and the system's image.

use std::mem::size_of;

use tb5::*;

use super::*;
use crate::ctypes::*;

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
