//! Encoding and decoding of section payloads: owned model values (with
//! strings already turned into ids) to and from the raw structures of
//! `raw`. No file access and no lifecycle here.

use super::cursor::SectionCursor;
use super::raw::*;
use crate::model::descriptor::DescEntry;
use crate::model::error::{Error, Result};
use crate::model::event::{Event, EventDetail, EventFlags};
use crate::model::hardware::{Cpu, CpuArch, CpuidIa32, CpuidIa64, Cpuids, Node, System};
use crate::model::module::{Module, ModuleFlags};
use crate::model::process::{Pid, PidTidFlags, Tid};
use crate::model::software::{Application, Host, Os, Software};
use crate::model::stream::{FileTime, StreamInfo};
use crate::model::strings::StringId;
use crate::model::version::VersionInfo;

fn count_u32(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::bad(format!("too many {what}: {n}")))
}

// ---------------------------------------------------------------- hardware

pub(crate) fn encode_system(sys: &System) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    SystemRaw { num_nodes: count_u32(sys.nodes.len(), "nodes")?, reserved: 0 }.encode_into(&mut out);
    for node in &sys.nodes {
        NodeRaw {
            type_from_shell: node.type_from_shell,
            id: node.id,
            num_available: node.num_available,
            num_used: node.num_used,
            reserved: node.reserved,
            num_cpus: count_u32(node.cpus.len(), "cpus in a node")?,
            physical_memory_mb: node.physical_memory_mb,
        }
        .encode_into(&mut out);
        for cpu in &node.cpus {
            CpuRaw {
                number: cpu.number,
                native_arch_type: cpu.native_arch_type,
                intel_processor_number: cpu.intel_processor_number,
                speed_mhz: cpu.speed_mhz,
                fsb_mhz: cpu.fsb_mhz,
                cache_l2_kb: cpu.cache_l2_kb,
                cache_l3_kb: cpu.cache_l3_kb,
                num_archs: count_u32(cpu.archs.len(), "architectures of a cpu")?,
                tsc_offset: cpu.tsc_offset,
                package_num: cpu.package_num,
                core_num: cpu.core_num,
                hardware_thread_num: cpu.hardware_thread_num,
                threads_per_core: cpu.threads_per_core,
                dummy: cpu.dummy,
                core_type: cpu.core_type,
                pad: 0,
            }
            .encode_into(&mut out);
            for arch in &cpu.archs {
                let n = arch.cpuids.len();
                if n > u16::MAX as usize {
                    return Err(Error::UnexpectedNumCpuids {
                        what: format!("{n} cpuids in one architecture; arch_num_cpuid is 16 bits"),
                    });
                }
                let form = matches!(arch.cpuids, Cpuids::Ia64(_)) as u8;
                ArchRaw { arch_type: arch.arch_type, form, pad: 0, num_cpuids: n as u32 }.encode_into(&mut out);
                match &arch.cpuids {
                    Cpuids::Ia32(v) => {
                        for c in v {
                            CpuidIa32Raw {
                                eax_input: c.eax_input,
                                eax: c.eax,
                                ebx: c.ebx,
                                ecx: c.ecx,
                                edx: c.edx,
                                reserved: c.reserved,
                            }
                            .encode_into(&mut out)
                        }
                    }
                    Cpuids::Ia64(v) => {
                        for c in v {
                            CpuidIa64Raw { select: c.select, value: c.value, reserved: c.reserved }
                                .encode_into(&mut out)
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

pub(crate) fn decode_system(c: &mut SectionCursor<'_>) -> Result<System> {
    let sys: SystemRaw = c.read("system header")?;
    let n_nodes = c.check_count(sys.num_nodes.into(), NodeRaw::SIZE, "nodes")?;
    let mut nodes = Vec::with_capacity(n_nodes);
    for ni in 0..n_nodes {
        c.at_record(ni as u64);
        let n: NodeRaw = c.read("node")?;
        let n_cpus = c.check_count(n.num_cpus.into(), CpuRaw::SIZE, "cpus")?;
        let mut cpus = Vec::with_capacity(n_cpus);
        for _ in 0..n_cpus {
            let cr: CpuRaw = c.read("cpu")?;
            let n_arch = c.check_count(cr.num_archs.into(), ArchRaw::SIZE, "architectures")?;
            let mut archs = Vec::with_capacity(n_arch);
            for _ in 0..n_arch {
                let a: ArchRaw = c.read("architecture")?;
                let k = c.check_count(a.num_cpuids.into(), CpuidIa32Raw::SIZE, "cpuids")?;
                if a.num_cpuids > u32::from(u16::MAX) {
                    return Err(c.error(format!("{} cpuids exceed the 16-bit arch_num_cpuid", a.num_cpuids)));
                }
                let cpuids = match a.form {
                    0 => Cpuids::Ia32(
                        (0..k)
                            .map(|_| {
                                c.read::<CpuidIa32Raw>("IA-32 cpuid").map(|r| CpuidIa32 {
                                    eax_input: r.eax_input,
                                    eax: r.eax,
                                    ebx: r.ebx,
                                    ecx: r.ecx,
                                    edx: r.edx,
                                    reserved: r.reserved,
                                })
                            })
                            .collect::<Result<_>>()?,
                    ),
                    1 => Cpuids::Ia64(
                        (0..k)
                            .map(|_| {
                                c.read::<CpuidIa64Raw>("IA-64 cpuid").map(|r| CpuidIa64 {
                                    select: r.select,
                                    value: r.value,
                                    reserved: r.reserved,
                                })
                            })
                            .collect::<Result<_>>()?,
                    ),
                    f => return Err(c.error(format!("unknown cpuid form {f}"))),
                };
                archs.push(CpuArch { arch_type: a.arch_type, cpuids });
            }
            cpus.push(Cpu {
                number: cr.number,
                native_arch_type: cr.native_arch_type,
                intel_processor_number: cr.intel_processor_number,
                speed_mhz: cr.speed_mhz,
                fsb_mhz: cr.fsb_mhz,
                cache_l2_kb: cr.cache_l2_kb,
                cache_l3_kb: cr.cache_l3_kb,
                tsc_offset: cr.tsc_offset,
                package_num: cr.package_num,
                core_num: cr.core_num,
                hardware_thread_num: cr.hardware_thread_num,
                threads_per_core: cr.threads_per_core,
                core_type: cr.core_type,
                dummy: cr.dummy,
                archs,
            });
        }
        nodes.push(Node {
            type_from_shell: n.type_from_shell,
            id: n.id,
            num_available: n.num_available,
            num_used: n.num_used,
            reserved: n.reserved,
            physical_memory_mb: n.physical_memory_mb,
            cpus,
        });
    }
    c.finish("the system")?;
    Ok(System { nodes })
}

// ---------------------------------------------------------------- software

pub(crate) fn encode_software(sw: &Software<StringId>) -> Vec<u8> {
    let mut out = Vec::new();
    let present =
        u32::from(sw.host.is_some()) | u32::from(sw.os.is_some()) << 1 | u32::from(sw.application.is_some()) << 2;
    SoftwareRaw { present, pad: 0 }.encode_into(&mut out);
    if let Some(h) = &sw.host {
        HostRaw { reserved: h.reserved, pad: 0, ip_address: h.ip_address.0, name: h.name.0 }.encode_into(&mut out);
    }
    if let Some(o) = &sw.os {
        OsRaw {
            platform: o.platform,
            major: o.major,
            minor: o.minor,
            build: o.build,
            extra: o.extra,
            pad: 0,
            name: o.name.0,
            name_extra: o.name_extra.0,
        }
        .encode_into(&mut out);
    }
    if let Some(a) = &sw.application {
        ApplicationRaw {
            reserved: a.reserved,
            page_size: a.page_size,
            alloc_granularity: a.alloc_granularity,
            pad: 0,
            min_app_addr: a.min_app_addr,
            max_app_addr: a.max_app_addr,
        }
        .encode_into(&mut out);
    }
    out
}

pub(crate) fn decode_software(c: &mut SectionCursor<'_>) -> Result<Software<StringId>> {
    let s: SoftwareRaw = c.read("software header")?;
    if s.present & !0b111 != 0 {
        return Err(c.error(format!("unknown software parts {:#x}", s.present)));
    }
    let host = if s.present & 1 != 0 {
        let h: HostRaw = c.read("host")?;
        Some(Host { reserved: h.reserved, ip_address: StringId(h.ip_address), name: StringId(h.name) })
    } else {
        None
    };
    let os = if s.present & 2 != 0 {
        let o: OsRaw = c.read("OS")?;
        Some(Os {
            platform: o.platform,
            major: o.major,
            minor: o.minor,
            build: o.build,
            extra: o.extra,
            name: StringId(o.name),
            name_extra: StringId(o.name_extra),
        })
    } else {
        None
    };
    let application = if s.present & 4 != 0 {
        let a: ApplicationRaw = c.read("application")?;
        Some(Application {
            reserved: a.reserved,
            page_size: a.page_size,
            alloc_granularity: a.alloc_granularity,
            min_app_addr: a.min_app_addr,
            max_app_addr: a.max_app_addr,
        })
    } else {
        None
    };
    c.finish("the software section")?;
    Ok(Software { host, os, application })
}

// ---------------------------------------------------------------- version

pub(crate) fn encode_version(v: &VersionInfo) -> Vec<u8> {
    VersionInfoRaw {
        sampling_driver_version: v.sampling_driver_version,
        bind_version: v.bind_version,
        sample_file_version: v.sample_file_version,
        pad: 0,
    }
    .encode()
}

pub(crate) fn decode_version(c: &mut SectionCursor<'_>) -> Result<VersionInfo> {
    let v: VersionInfoRaw = c.read("version info")?;
    c.finish("the version info")?;
    Ok(VersionInfo {
        sampling_driver_version: v.sampling_driver_version,
        bind_version: v.bind_version,
        sample_file_version: v.sample_file_version,
    })
}

// ---------------------------------------------------------------- processes

pub(crate) fn encode_pid(p: &Pid<StringId>) -> PidRaw {
    PidRaw {
        id: p.id,
        flags: p.flags.bits(),
        reserved: p.reserved,
        reserved_for_legacy: p.reserved_for_legacy,
        reserved1: p.reserved1,
        pad: 0,
        event_when: p.event_when,
        path: p.path.0,
        name: p.name.0,
    }
}

pub(crate) fn decode_pid(r: PidRaw) -> Pid<StringId> {
    Pid {
        id: r.id,
        flags: PidTidFlags::from_bits_retain(r.flags),
        reserved: r.reserved,
        event_when: r.event_when,
        reserved_for_legacy: r.reserved_for_legacy,
        reserved1: r.reserved1,
        path: StringId(r.path),
        name: StringId(r.name),
    }
}

pub(crate) fn encode_tid(t: &Tid<StringId>) -> TidRaw {
    TidRaw {
        associated_pid: t.associated_pid,
        id: t.id,
        flags: t.flags.bits(),
        reserved_for_legacy: t.reserved_for_legacy,
        reserved: t.reserved,
        pad: 0,
        event_when: t.event_when,
        name: t.name.0,
    }
}

pub(crate) fn decode_tid(r: TidRaw) -> Tid<StringId> {
    Tid {
        associated_pid: r.associated_pid,
        id: r.id,
        flags: PidTidFlags::from_bits_retain(r.flags),
        event_when: r.event_when,
        reserved_for_legacy: r.reserved_for_legacy,
        reserved: r.reserved,
        name: StringId(r.name),
    }
}

// ---------------------------------------------------------------- modules

pub(crate) fn encode_module(m: &Module<StringId>) -> Result<ModuleRaw> {
    if m.segment_type > 3 {
        return Err(Error::bad(format!("module_segment_type {} does not fit its 2 bits", m.segment_type)));
    }
    Ok(ModuleRaw {
        reserved: m.reserved,
        associated_pid: m.associated_pid,
        flags: m.flags.bits(),
        segment_number: m.segment_number,
        segment_type: u32::from(m.segment_type),
        code_selector: m.code_selector,
        reserved2: m.reserved2,
        reserved_for_legacy: m.reserved_for_legacy,
        reserved_for_legacy2: m.reserved_for_legacy2,
        reserved_for_legacy_flags: m.reserved_for_legacy_flags,
        reserved1: m.reserved1,
        pad: 0,
        event_when: m.event_when,
        length: m.length,
        load_address: m.load_address,
        unload_tsc: m.unload_tsc,
        path: m.path.0,
        name: m.name.0,
        segment_name: m.segment_name.0,
    })
}

pub(crate) fn decode_module(r: ModuleRaw) -> Module<StringId> {
    Module {
        reserved: r.reserved,
        associated_pid: r.associated_pid,
        flags: ModuleFlags::from_bits_retain(r.flags),
        event_when: r.event_when,
        segment_number: r.segment_number,
        // The C field is 2 bits wide: whatever else a file holds there is not visible through the API.
        segment_type: (r.segment_type & 3) as u8,
        code_selector: r.code_selector,
        reserved2: r.reserved2,
        length: r.length,
        load_address: r.load_address,
        reserved_for_legacy: r.reserved_for_legacy,
        reserved_for_legacy2: r.reserved_for_legacy2,
        reserved_for_legacy_flags: r.reserved_for_legacy_flags,
        reserved1: r.reserved1,
        unload_tsc: r.unload_tsc,
        path: StringId(r.path),
        name: StringId(r.name),
        segment_name: StringId(r.segment_name),
    }
}

// ---------------------------------------------------------------- events

pub(crate) fn encode_event(e: &Event<StringId>, out: &mut Vec<u8>) -> Result<()> {
    EventRaw {
        id: e.id,
        flags: e.flags.bits(),
        num_details: count_u32(e.details.len(), "event details")?,
        pad: 0,
        sav: e.sav,
        name: e.name.0,
        arch_name: e.arch_name.0,
    }
    .encode_into(out);
    for d in &e.details {
        EventDetailRaw {
            access_size_bits: d.access_size_bits,
            method: d.method,
            access: d.access,
            reserved3: d.reserved3,
            address: d.address,
            value: d.value,
            legacy_command: d.legacy_command,
            reserved1: d.reserved1,
            reserved2: d.reserved2,
            pad: 0,
        }
        .encode_into(out);
    }
    Ok(())
}

pub(crate) fn decode_events(c: &mut SectionCursor<'_>, count: u64) -> Result<Vec<Event<StringId>>> {
    let n = c.check_count(count, EventRaw::SIZE, "events")?;
    let mut events = Vec::with_capacity(n);
    for i in 0..n {
        c.at_record(i as u64);
        let e: EventRaw = c.read("event")?;
        let k = c.check_count(e.num_details.into(), EventDetailRaw::SIZE, "event details")?;
        let details = (0..k)
            .map(|_| {
                c.read::<EventDetailRaw>("event detail").map(|d| EventDetail {
                    access_size_bits: d.access_size_bits,
                    method: d.method,
                    access: d.access,
                    address: d.address,
                    value: d.value,
                    legacy_command: d.legacy_command,
                    reserved1: d.reserved1,
                    reserved2: d.reserved2,
                    reserved3: d.reserved3,
                })
            })
            .collect::<Result<_>>()?;
        events.push(Event {
            id: e.id,
            flags: EventFlags::from_bits_retain(e.flags),
            sav: e.sav,
            name: StringId(e.name),
            arch_name: StringId(e.arch_name),
            details,
        });
    }
    c.finish("the events")?;
    Ok(events)
}

// ---------------------------------------------------------------- descriptor

pub(crate) fn encode_desc(d: &DescEntry<StringId>) -> DescEntryRaw {
    DescEntryRaw {
        offset: d.offset,
        desc_type: d.desc_type,
        subtype: d.subtype,
        data_size: d.data_size,
        access_type: d.access_type,
        access_method: d.access_method,
        sample_flag: d.sample_flag,
        reserved0: d.reserved0,
        access_offset: d.access_offset,
        reserved1: d.reserved1,
        pad: 0,
        name: d.name.0,
    }
}

pub(crate) fn decode_descs(c: &mut SectionCursor<'_>, count: u64) -> Result<Vec<DescEntry<StringId>>> {
    let n = c.check_count(count, DescEntryRaw::SIZE, "descriptor entries")?;
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        c.at_record(i as u64);
        let d: DescEntryRaw = c.read("descriptor entry")?;
        v.push(DescEntry {
            offset: d.offset,
            desc_type: d.desc_type,
            subtype: d.subtype,
            data_size: d.data_size,
            access_offset: d.access_offset,
            access_type: d.access_type,
            access_method: d.access_method,
            sample_flag: d.sample_flag,
            reserved0: d.reserved0,
            reserved1: d.reserved1,
            name: StringId(d.name),
        });
    }
    c.finish("the descriptor entries")?;
    Ok(v)
}

// ---------------------------------------------------------------- stream info

pub(crate) fn encode_stream_info(s: &StreamInfo<StringId>) -> Vec<u8> {
    StreamInfoRaw {
        sampling_duration_ms: s.sampling_duration_ms,
        stream_type: s.stream_type,
        sampling_interval_us: s.sampling_interval_us,
        pad: 0,
        start_low: s.start_time.low,
        start_high: s.start_time.high,
        end_low: s.end_time.low,
        end_high: s.end_time.high,
        command_line: s.command_line.0,
        cpu_mask: s.cpu_mask.0,
        comment: s.comment.0,
    }
    .encode()
}

pub(crate) fn decode_stream_info(c: &mut SectionCursor<'_>) -> Result<StreamInfo<StringId>> {
    let s: StreamInfoRaw = c.read("stream info")?;
    c.finish("the stream info")?;
    Ok(StreamInfo {
        sampling_duration_ms: s.sampling_duration_ms,
        stream_type: s.stream_type,
        sampling_interval_us: s.sampling_interval_us,
        start_time: FileTime { low: s.start_low, high: s.start_high },
        end_time: FileTime { low: s.end_low, high: s.end_high },
        command_line: StringId(s.command_line),
        cpu_mask: StringId(s.cpu_mask),
        comment: StringId(s.comment),
    })
}
