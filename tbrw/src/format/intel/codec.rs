//! Intel's raw structures to and from the model. Strings: a model
//! [`StringId`] of an Intel file is the absolute file offset of its text
//! (the on-disk value without bit 63); 0 is "no string". No file access
//! here: the reader walks the sections and hands their bytes to these.
//! The encoders (tested against the decoders here) are for a writer of
//! Intel's layout.

use super::raw::*;
use super::STRING_FLAG;
use crate::model::descriptor::DescEntry;
use crate::model::event::{Event, EventDetail, EventFlags};
use crate::model::hardware::{Cpuids, System};
use crate::model::module::{Module, ModuleFlags};
use crate::model::process::{Pid, PidTidFlags, Tid};
use crate::model::software::{Application, Host, Os};
use crate::model::stream::{FileTime, StreamInfo};
use crate::model::strings::StringId;
use crate::model::version::VersionInfo;

/// The string id an on-disk string field names.
pub(crate) fn string_id(raw: u64) -> StringId {
    StringId(raw & !STRING_FLAG)
}

/// The on-disk value of a string field naming the text at `id`'s offset.
#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn string_field(id: StringId) -> u64 {
    if id.is_none() {
        0
    } else {
        STRING_FLAG | id.0
    }
}

pub(crate) fn decode_host(r: &HostRaw) -> Host<StringId> {
    Host { reserved: r.reserved, ip_address: string_id(r.ip_address), name: string_id(r.name) }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_host(h: &Host<StringId>) -> HostRaw {
    HostRaw {
        host_size: HostRaw::SIZE as u32,
        reserved: h.reserved,
        ip_address: string_field(h.ip_address),
        name: string_field(h.name),
    }
}

pub(crate) fn decode_os(r: &OsRaw) -> Os<StringId> {
    Os {
        platform: r.platform,
        major: r.major,
        minor: r.minor,
        build: r.build,
        extra: r.extra,
        name: string_id(r.name),
        name_extra: string_id(r.name_extra),
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_os(o: &Os<StringId>) -> OsRaw {
    OsRaw {
        os_size: OsRaw::SIZE as u32,
        platform: o.platform,
        major: o.major,
        minor: o.minor,
        build: o.build,
        extra: o.extra,
        name: string_field(o.name),
        name_extra: string_field(o.name_extra),
    }
}

pub(crate) fn decode_application(r: &ApplicationRaw) -> Application {
    Application {
        reserved: r.reserved,
        page_size: r.page_size,
        alloc_granularity: r.alloc_granularity,
        min_app_addr: r.min_app_addr,
        max_app_addr: r.max_app_addr,
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_application(a: &Application) -> ApplicationRaw {
    ApplicationRaw {
        app_size: ApplicationRaw::SIZE as u32,
        reserved: a.reserved,
        page_size: a.page_size,
        alloc_granularity: a.alloc_granularity,
        min_app_addr: a.min_app_addr,
        max_app_addr: a.max_app_addr,
    }
}

pub(crate) fn decode_version(r: &VersionInfoRaw) -> VersionInfo {
    VersionInfo {
        sampling_driver_version: r.sampling_driver_version,
        bind_version: r.bind_version,
        sample_file_version: r.sample_file_version,
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_version(v: &VersionInfo) -> VersionInfoRaw {
    VersionInfoRaw {
        version_info_size: VersionInfoRaw::SIZE as u32,
        sampling_driver_version: v.sampling_driver_version,
        bind_version: v.bind_version,
        sample_file_version: v.sample_file_version,
    }
}

pub(crate) fn decode_pid(r: &PidRaw) -> Pid<StringId> {
    Pid {
        id: r.id,
        flags: PidTidFlags::from_bits_retain(r.flags),
        reserved: r.reserved,
        event_when: r.event_when,
        reserved_for_legacy: r.reserved_for_legacy,
        reserved1: r.reserved1,
        path: string_id(r.path),
        name: string_id(r.name),
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_pid(p: &Pid<StringId>) -> PidRaw {
    PidRaw {
        pid_size: PidRaw::SIZE as u32,
        id: p.id,
        flags: p.flags.bits(),
        reserved: p.reserved,
        event_when: p.event_when,
        reserved_for_legacy: p.reserved_for_legacy,
        reserved1: p.reserved1,
        path: string_field(p.path),
        name: string_field(p.name),
    }
}

pub(crate) fn decode_tid(r: &TidRaw) -> Tid<StringId> {
    Tid {
        associated_pid: r.associated_pid,
        id: r.id,
        flags: PidTidFlags::from_bits_retain(r.flags),
        event_when: r.event_when,
        reserved_for_legacy: r.reserved_for_legacy,
        reserved: r.reserved,
        name: string_id(r.name),
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_tid(t: &Tid<StringId>) -> TidRaw {
    TidRaw {
        tid_size: TidRaw::SIZE as u32,
        associated_pid: t.associated_pid,
        id: t.id,
        flags: t.flags.bits(),
        event_when: t.event_when,
        reserved_for_legacy: t.reserved_for_legacy,
        reserved: t.reserved,
        name: string_field(t.name),
    }
}

pub(crate) fn decode_module(r: &ModuleRaw) -> Module<StringId> {
    Module {
        reserved: r.reserved,
        associated_pid: r.associated_pid,
        flags: ModuleFlags::from_bits_retain(r.flags),
        event_when: r.event_when,
        segment_number: r.segment_number,
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
        path: string_id(r.path),
        name: string_id(r.name),
        segment_name: string_id(r.segment_name),
    }
}

/// The module's 104 guide-defined bytes; Intel's records add 40 zero bytes
/// ([`MODULE_RECORD_SIZE`]).
#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_module(m: &Module<StringId>) -> ModuleRaw {
    ModuleRaw {
        module_size: MODULE_RECORD_SIZE as u32,
        reserved: m.reserved,
        associated_pid: m.associated_pid,
        flags: m.flags.bits(),
        event_when: m.event_when,
        segment_number: m.segment_number,
        segment_type: u32::from(m.segment_type & 3),
        code_selector: m.code_selector,
        reserved2: m.reserved2,
        length: m.length,
        load_address: m.load_address,
        reserved_for_legacy: m.reserved_for_legacy,
        reserved_for_legacy2: m.reserved_for_legacy2,
        reserved_for_legacy_flags: m.reserved_for_legacy_flags,
        reserved1: m.reserved1,
        unload_tsc: m.unload_tsc,
        path: string_field(m.path),
        name: string_field(m.name),
        segment_name: string_field(m.segment_name),
    }
}

/// The system section (0x19): the hardware tree depth first, as Intel
/// writes it and its reader walks it (`read/intel/system.rs`): the
/// `TBRW_SYSTEM`, then each node followed by its cpus, each cpu followed
/// by its architectures, each followed by its cpuid leaves; every pointer
/// the offset (from the section start) of what follows.
pub(crate) fn encode_system(s: &System) -> Vec<u8> {
    let mut out = Vec::new();
    SystemRaw {
        system_size: SystemRaw::SIZE as u32,
        num_nodes: s.nodes.len() as u32,
        reserved: [0; 8],
        nodes_at: SystemRaw::SIZE as u64,
    }
    .encode_into(&mut out);
    for n in &s.nodes {
        let cpus_at = (out.len() + NodeRaw::SIZE) as u64;
        NodeRaw {
            node_size: NodeRaw::SIZE as u32,
            type_from_shell: n.type_from_shell,
            id: n.id,
            num_available: n.cpus.len() as u32,
            num_used: n.num_used,
            reserved: n.reserved,
            physical_memory: n.physical_memory_mb,
            cpus_at,
        }
        .encode_into(&mut out);
        for c in &n.cpus {
            let archs_at = (out.len() + CpuRaw::SIZE) as u64;
            CpuRaw {
                cpu_size: CpuRaw::SIZE as u32,
                number: c.number,
                native_arch_type: c.native_arch_type,
                intel_processor_number: c.intel_processor_number,
                speed_mhz: c.speed_mhz,
                fsb_mhz: c.fsb_mhz,
                cache_l2: c.cache_l2_kb,
                cache_l3: c.cache_l3_kb,
                tsc_offset: c.tsc_offset,
                package_num: c.package_num,
                core_num: c.core_num,
                hardware_thread_num: c.hardware_thread_num,
                threads_per_core: c.threads_per_core,
                num_archs: u32::from(c.core_type) << 16 | (c.archs.len() as u32 & 0xFFFF),
                dummy: c.dummy,
                archs_at,
            }
            .encode_into(&mut out);
            for a in &c.archs {
                let leaves: Vec<[u32; 6]> = match &a.cpuids {
                    Cpuids::Ia32(v) => {
                        v.iter().map(|l| [l.eax_input, l.eax, l.ebx, l.ecx, l.edx, l.reserved]).collect()
                    }
                    Cpuids::Ia64(v) => v
                        .iter()
                        .map(|l| {
                            let w = |x: u64| [x as u32, (x >> 32) as u32];
                            let [a, b] = w(l.select);
                            let [c, d] = w(l.value);
                            let [e, f] = w(l.reserved);
                            [a, b, c, d, e, f]
                        })
                        .collect(),
                };
                let cpuids_at = (out.len() + ArchRaw::SIZE) as u64;
                ArchRaw {
                    arch_size: ArchRaw::SIZE as u32,
                    arch_type: a.arch_type,
                    num_cpuids: leaves.len() as u16,
                    cpuids_at,
                }
                .encode_into(&mut out);
                for words in leaves {
                    CpuidRaw { words }.encode_into(&mut out);
                }
            }
        }
    }
    out
}

/// An event; its details are decoded by the caller (they follow it).
pub(crate) fn decode_event(r: &EventRaw, details: Vec<EventDetail>) -> Event<StringId> {
    Event {
        id: r.id,
        flags: EventFlags::from_bits_retain(r.flags),
        sav: r.sav,
        name: string_id(r.name),
        arch_name: string_id(r.arch_name),
        details,
    }
}

/// An event whose details follow it at once (`details_at` 48, as Intel writes them).
#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_event(e: &Event<StringId>) -> EventRaw {
    EventRaw {
        event_size: EventRaw::SIZE as u32,
        id: e.id,
        num_details: e.details.len() as u32,
        flags: e.flags.bits(),
        sav: e.sav,
        name: string_field(e.name),
        arch_name: string_field(e.arch_name),
        details_at: EventRaw::SIZE as u64,
    }
}

pub(crate) fn decode_detail(r: &EventDetailRaw) -> EventDetail {
    EventDetail {
        access_size_bits: r.access_size_bits,
        method: r.method,
        access: r.access,
        address: r.address,
        value: r.value,
        legacy_command: r.legacy_command,
        reserved1: r.reserved1,
        reserved2: r.reserved2,
        reserved3: r.reserved3,
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_detail(d: &EventDetail) -> EventDetailRaw {
    EventDetailRaw {
        detail_size: EventDetailRaw::SIZE as u32,
        access_size_bits: d.access_size_bits,
        method: d.method,
        access: d.access,
        address: d.address,
        value: d.value,
        legacy_command: d.legacy_command,
        reserved1: d.reserved1,
        reserved2: d.reserved2,
        reserved3: d.reserved3,
    }
}

pub(crate) fn decode_desc(r: &DescEntryRaw) -> DescEntry<StringId> {
    DescEntry {
        offset: r.offset,
        desc_type: r.desc_type,
        subtype: r.subtype,
        data_size: r.data_size,
        access_offset: r.access_offset,
        access_type: r.access_type,
        access_method: r.access_method,
        sample_flag: r.sample_flag,
        reserved0: r.reserved0,
        reserved1: r.reserved1,
        name: string_id(r.name),
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_desc(d: &DescEntry<StringId>) -> DescEntryRaw {
    DescEntryRaw {
        desc_size: DescEntryRaw::SIZE as u32,
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
        name: string_field(d.name),
        padding: [0; 32],
    }
}

pub(crate) fn decode_stream_info(r: &StreamInfoRaw) -> StreamInfo<StringId> {
    StreamInfo {
        sampling_duration_ms: r.sampling_duration,
        stream_type: r.stream_type,
        sampling_interval_us: r.sampling_interval,
        start_time: FileTime { low: r.start_low, high: r.start_high },
        end_time: FileTime { low: r.end_low, high: r.end_high },
        command_line: string_id(r.command_line),
        cpu_mask: string_id(r.cpu_mask),
        comment: string_id(r.comment),
    }
}

#[allow(dead_code)] // the writer of Intel's layout
pub(crate) fn encode_stream_info(s: &StreamInfo<StringId>) -> StreamInfoRaw {
    StreamInfoRaw {
        stream_info_size: StreamInfoRaw::SIZE as u32,
        sampling_duration: s.sampling_duration_ms,
        stream_type: s.stream_type,
        sampling_interval: s.sampling_interval_us,
        start_low: s.start_time.low,
        start_high: s.start_time.high,
        end_low: s.end_time.low,
        end_high: s.end_time.high,
        command_line: string_field(s.command_line),
        cpu_mask: string_field(s.cpu_mask),
        comment: string_field(s.comment),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_fields_are_offsets_with_bit_63() {
        assert_eq!(string_id(0), StringId::NONE);
        assert_eq!(string_id(0x8000_0000_0000_06d2), StringId(0x6d2));
        assert_eq!(string_field(StringId(0x6d2)), 0x8000_0000_0000_06d2);
        assert_eq!(string_field(StringId::NONE), 0);
    }

    #[test]
    fn encodings_round_trip() {
        let s = |n| StringId(n);
        let m = Module {
            reserved: 1,
            associated_pid: 2,
            flags: ModuleFlags::from_bits_retain(0x19000),
            event_when: 3,
            segment_number: 4,
            segment_type: 3,
            code_selector: 0x33,
            reserved2: 5,
            length: 6,
            load_address: 7,
            reserved_for_legacy: 8,
            reserved_for_legacy2: 9,
            reserved_for_legacy_flags: 10,
            reserved1: 11,
            unload_tsc: 12,
            path: s(100),
            name: s(200),
            segment_name: StringId::NONE,
        };
        assert_eq!(decode_module(&encode_module(&m)), m);
        let p = Pid {
            id: 1,
            flags: PidTidFlags::from_bits_retain(0x11),
            reserved: 2,
            event_when: 3,
            reserved_for_legacy: 4,
            reserved1: 5,
            path: s(9),
            name: s(10),
        };
        assert_eq!(decode_pid(&encode_pid(&p)), p);
        let t = Tid {
            associated_pid: 1,
            id: 2,
            flags: PidTidFlags::DESTROYED,
            event_when: 3,
            reserved_for_legacy: 4,
            reserved: 5,
            name: s(7),
        };
        assert_eq!(decode_tid(&encode_tid(&t)), t);
        let d = DescEntry {
            offset: 8,
            desc_type: 1,
            subtype: 2,
            data_size: 32,
            access_offset: 3,
            access_type: 4,
            access_method: 5,
            sample_flag: 6,
            reserved0: 7,
            reserved1: 8,
            name: s(42),
        };
        assert_eq!(decode_desc(&encode_desc(&d)), d);
        let i = StreamInfo {
            sampling_duration_ms: 1,
            stream_type: 2,
            sampling_interval_us: 3,
            start_time: FileTime { low: 4, high: 5 },
            end_time: FileTime { low: 6, high: 7 },
            command_line: s(1),
            cpu_mask: StringId::NONE,
            comment: s(3),
        };
        assert_eq!(decode_stream_info(&encode_stream_info(&i)), i);
        let h = Host { reserved: 1, ip_address: s(2), name: s(3) };
        assert_eq!(decode_host(&encode_host(&h)), h);
        let o = Os { platform: 6, major: 1, minor: 2, build: 3, extra: 4, name: s(5), name_extra: s(6) };
        assert_eq!(decode_os(&encode_os(&o)), o);
        let a = Application { reserved: 1, page_size: 2, alloc_granularity: 3, min_app_addr: 4, max_app_addr: 5 };
        assert_eq!(decode_application(&encode_application(&a)), a);
        let v = VersionInfo { sampling_driver_version: 0x50000, bind_version: 1, sample_file_version: 27 };
        assert_eq!(decode_version(&encode_version(&v)), v);
        let det = EventDetail {
            access_size_bits: 64,
            method: 2,
            access: 1,
            address: 0x186,
            value: 9,
            legacy_command: 1,
            reserved1: 2,
            reserved2: 3,
            reserved3: 4,
        };
        assert_eq!(decode_detail(&encode_detail(&det)), det);
        let e = Event {
            id: 0x10000,
            flags: EventFlags::EBS,
            sav: 2_000_000,
            name: s(1),
            arch_name: s(2),
            details: vec![det],
        };
        assert_eq!(decode_event(&encode_event(&e), vec![det]), e);
    }
}
