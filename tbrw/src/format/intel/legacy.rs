//! VTune's legacy sections as Intel's 2020 writer writes them beside the
//! TBRW ones (docs/FORMAT.md, "The legacy sections (for a writer)"): the
//! structures of the 2012 library's DWARF, filled as the 2020 library
//! fills them (its files: `tbrw/tests/data/intel`). Intel's 2020 reader
//! reads none of them but requires some to be present and not empty
//! ([`super::VERIFY_REQUIRES`], and the header-ex section to open a file);
//! they are written so that a reader of VTune's legacy sections finds what
//! Intel's writer puts there.
//!
//! Texts are given as texts (the legacy sections keep their strings inside
//! the section, as offsets from its start); no file access here.

use binrw::binrw;

use crate::format::raw::raw_struct;
pub(crate) use crate::format::raw::Raw;
use crate::model::hardware::{Cpuids, System};
use crate::model::module::{Module, ModuleFlags};
use crate::model::process::{Pid, Tid};
use crate::model::software::Application;
use crate::model::stream::FileTime;

raw_struct!(
    /// `ModuleRecord_s` (section 0x02), 64 bytes; its strings follow the records.
    ModuleRecordRaw = 64 {
        rec_length: u16,
        /// Bits 0-1: the segment type (processor mode).
        segment_bits: u16,
        selector: u16,
        /// Bytes of the segment name with its NUL.
        segment_name_length: u16,
        segment_number: u32,
        /// [`module_bits`].
        flags: u32,
        length: u64,
        load_address: u64,
        /// The pid itself (`pidRecIndexRaw` set).
        pid: u32,
        unload_tsc: [u8; 8],
        /// Offsets from the section start.
        path: u32,
        path_length: u16,
        file_name_offset: u16,
        segment_name: u32,
        load_tsc: u64,
    }
);

/// `ModuleRecord_s.flags` bits (from the 2012 library's DWARF).
pub(crate) mod module_bits {
    pub const EXE: u32 = 1 << 0;
    pub const GLOBAL_MODULE: u32 = 1 << 1;
    pub const PID_REC_INDEX_RAW: u32 = 1 << 3;
    pub const TSC_USED: u32 = 1 << 5;
    pub const SEGMENT_NAME_SET: u32 = 1 << 8;
    pub const FIRST_MODULE_REC_IN_PROCESS: u32 = 1 << 9;
}

raw_struct!(
    /// `PidRecord_s` (0x03) and `TidRecord_s` (0x07), 40 bytes each.
    PidTidRecordRaw = 40 {
        rec_length: u16,
        bits: u16,
        os_id: u32,
        /// Intel's writer puts the record's index here.
        instance: u32,
        index_num: u32,
        reserved: u32,
        /// The low 32 bits of the record's time (where Intel's writer puts them).
        when_low: u32,
        tsc: u64,
        /// Pids: the path's offset from the section start; tids: the pid.
        path_or_pid: u32,
        /// Pids: the path's bytes with its NUL, then the file name's offset in it.
        path_length: u16,
        file_name_offset: u16,
    }
);

raw_struct!(
    /// `SoftwareConfiguration_s` (0x0D), 476 bytes.
    SoftwareConfigRaw = 476 {
        computer_name: [[u8; 32]; 2],
        ip_address: [[u8; 32]; 2],
        os_name: [[u8; 32]; 4],
        os_family: u32,
        /// `VT_OSVERSIONINFO`: size (0 in Intel's files), major, minor, build, platform.
        os_version_size: u32,
        os_major: u32,
        os_minor: u32,
        os_build: u32,
        os_platform: u32,
        os_csd_version: [[u8; 32]; 4],
        w95_obfuscator: u32,
        reserved: [u32; 16],
    }
);

raw_struct!(
    /// `SampleFileHeaderEx_s` (0x10), 460 bytes.
    HeaderExRaw = 460 {
        sampler_version: u32,
        comment: [[u8; 32]; 8],
        sampling_interval: u32,
        shell_platform: u32,
        analyzer_version: u32,
        reserved1: [u32; 5],
        workload_id: [[u8; 32]; 2],
        total_sample_count: u32,
        sample_count_recorded: u32,
        duration: u32,
        start_low: u32,
        start_high: u32,
        end_low: u32,
        end_high: u32,
        skip_samples: u32,
        modules_with_samples: u32,
        flags: u32,
        cpu_mask_offset: u32,
        reserved2: [u32; 15],
    }
);

/// `SampleFileHeaderEx_s.flags` as Intel's 2020 writer sets them in every
/// file: `samplerProduced` (bit 31), `modrecFixedLen`, `pidCreatesTracked`,
/// `tidCreatesTracked`, `tidsTracked`, `pidCreatesTrackedInModuleRecs`.
pub(crate) const HEADER_EX_FLAGS: u32 = 0x8000_06C8;

raw_struct!(
    /// `SampleRecordHeader_s` (0x13), 112 bytes.
    RecordHeaderRaw = 112 {
        sample_count: u32,
        flags: u32,
        pc_offset: u32,
        event_index_offset: u32,
        cpu_num_offset: u32,
        tsc_offset: u32,
        counter_offset: u32,
        record_size: u32,
        tsc_size: u32,
        counter_size: u32,
        counter_entries: u32,
        counter_event_bitmap: u32,
        /// The index of this section's entry in the file header.
        section_number: u32,
        reserved: [u32; 15],
    }
);

/// `SampleRecordHeader_s.flags` of legacy PC records with a TSC: PC,
/// event index, TSC, cpu number, pid set, tid set (Intel's 0x77).
pub(crate) const RECORD_HEADER_FLAGS: u32 = 0x77;

raw_struct!(
    /// `__generic_array_header` (0x18), 64 bytes: an array of the
    /// `vtsa_sys_info` tree follows it.
    ArrayHeaderRaw = 64 {
        hdr_size: u32,
        padding: u32,
        next: [u64; 2],
        reserved: [u32; 7],
        num_entries: u32,
        entry_size: u32,
        array_type: u16,
        array_subtype: u16,
    }
);

/// The pieces of a legacy section with strings: the records, then the strings.
struct WithStrings {
    records: Vec<u8>,
    strings: Vec<u8>,
    base: usize,
}

impl WithStrings {
    fn new(count: usize, size: usize) -> WithStrings {
        WithStrings { records: Vec::with_capacity(count * size), strings: Vec::new(), base: count * size }
    }

    /// Adds `text` with its NUL; returns its offset from the section start.
    fn add(&mut self, text: &str) -> u32 {
        let at = self.base + self.strings.len();
        self.strings.extend_from_slice(text.as_bytes());
        self.strings.push(0);
        at as u32
    }

    fn finish(mut self) -> Vec<u8> {
        self.records.append(&mut self.strings);
        self.records
    }
}

/// The offset of the file name in `path` (after its last `/` or `\`).
fn file_name_offset(path: &str) -> u16 {
    path.rfind(['/', '\\']).map_or(0, |i| i + 1).min(u16::MAX as usize) as u16
}

/// A text's bytes with its NUL, as a u16 length.
fn length_with_nul(text: &str) -> u16 {
    (text.len() + 1).min(u16::MAX as usize) as u16
}

/// The legacy module section (0x02): one record per module, then each
/// module's path and segment name. `text` gives a string's text.
pub(crate) fn modules<S: Copy>(modules: &[Module<S>], text: &dyn Fn(S) -> Option<String>) -> Vec<u8> {
    let mut w = WithStrings::new(modules.len(), ModuleRecordRaw::SIZE);
    for m in modules {
        let path = text(m.path).or_else(|| text(m.name)).unwrap_or_default();
        let segment = text(m.segment_name);
        let mut flags = module_bits::PID_REC_INDEX_RAW;
        for (model, bit) in [
            (ModuleFlags::IS_EXE, module_bits::EXE),
            (ModuleFlags::GLOBAL_LOAD, module_bits::GLOBAL_MODULE),
            (ModuleFlags::TSC_USED, module_bits::TSC_USED),
            (ModuleFlags::FIRST_MODULE_REC_IN_PROCESS, module_bits::FIRST_MODULE_REC_IN_PROCESS),
        ] {
            if m.flags.contains(model) {
                flags |= bit;
            }
        }
        let path_at = w.add(&path);
        let (segment_name, segment_name_length) = match &segment {
            Some(s) => {
                flags |= module_bits::SEGMENT_NAME_SET;
                (w.add(s), length_with_nul(s))
            }
            None => (0, 0),
        };
        ModuleRecordRaw {
            rec_length: ModuleRecordRaw::SIZE as u16,
            segment_bits: u16::from(m.segment_type & 3),
            selector: m.code_selector as u16,
            segment_name_length,
            segment_number: m.segment_number,
            flags,
            length: m.length,
            load_address: m.load_address,
            pid: m.associated_pid,
            unload_tsc: m.unload_tsc.to_le_bytes(),
            path: path_at,
            path_length: length_with_nul(&path),
            file_name_offset: file_name_offset(&path),
            segment_name,
            load_tsc: m.event_when,
        }
        .encode_into(&mut w.records);
    }
    w.finish()
}

/// The legacy pid section (0x03): one record per process, then their paths.
pub(crate) fn pids<S: Copy>(pids: &[Pid<S>], text: &dyn Fn(S) -> Option<String>) -> Vec<u8> {
    let mut w = WithStrings::new(pids.len(), PidTidRecordRaw::SIZE);
    for (i, p) in pids.iter().enumerate() {
        let path = text(p.path).or_else(|| text(p.name)).unwrap_or_default();
        let at = w.add(&path);
        PidTidRecordRaw {
            rec_length: PidTidRecordRaw::SIZE as u16,
            os_id: p.id,
            instance: i as u32,
            when_low: p.event_when as u32,
            path_or_pid: at,
            path_length: length_with_nul(&path),
            file_name_offset: file_name_offset(&path),
            ..Default::default()
        }
        .encode_into(&mut w.records);
    }
    w.finish()
}

/// The legacy tid section (0x07): one record per thread.
pub(crate) fn tids<S>(tids: &[Tid<S>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tids.len() * PidTidRecordRaw::SIZE);
    for (i, t) in tids.iter().enumerate() {
        PidTidRecordRaw {
            rec_length: PidTidRecordRaw::SIZE as u16,
            os_id: t.id,
            instance: i as u32,
            when_low: t.event_when as u32,
            path_or_pid: t.associated_pid,
            ..Default::default()
        }
        .encode_into(&mut out);
    }
    out
}

/// `text` in a fixed-size field of `K` × 32 bytes, cut (at a character
/// boundary) to leave its NUL.
fn fixed<const K: usize>(text: Option<&str>) -> [[u8; 32]; K] {
    let mut out = [[0u8; 32]; K];
    if let Some(t) = text {
        let mut n = t.len().min(32 * K - 1);
        while !t.is_char_boundary(n) {
            n -= 1;
        }
        for (i, b) in t.as_bytes()[..n].iter().enumerate() {
            out[i / 32][i % 32] = *b;
        }
    }
    out
}

/// The texts and numbers of the legacy software section.
#[derive(Debug, Default)]
pub(crate) struct SoftwareTexts {
    pub host_name: Option<String>,
    pub ip_address: Option<String>,
    pub os_name: Option<String>,
    pub os_name_extra: Option<String>,
    /// platform, major, minor, build.
    pub os: [u32; 4],
}

/// The legacy software section (0x0D).
pub(crate) fn software(s: &SoftwareTexts) -> Vec<u8> {
    let [platform, major, minor, build] = s.os;
    SoftwareConfigRaw {
        computer_name: fixed(s.host_name.as_deref()),
        ip_address: fixed(s.ip_address.as_deref()),
        os_name: fixed(s.os_name.as_deref()),
        os_family: platform,
        os_major: major,
        os_minor: minor,
        os_build: build,
        os_platform: platform,
        os_csd_version: fixed(s.os_name_extra.as_deref()),
        ..Default::default()
    }
    .encode()
}

/// What the legacy header-ex and sample-record header say about stream 0.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stream0 {
    pub records: u64,
    pub record_size: u32,
    pub interval_us: u32,
    pub duration_ms: u32,
    pub start: FileTime,
    pub end: FileTime,
    /// The legacy PC record's and the TSC's offsets, when the records have them.
    pub pc_offset: Option<u32>,
    pub tsc_offset: Option<u32>,
}

/// The legacy header-ex section (0x10).
pub(crate) fn header_ex(s: &Stream0) -> Vec<u8> {
    let count = s.records.min(u64::from(u32::MAX)) as u32;
    HeaderExRaw {
        sampling_interval: s.interval_us,
        total_sample_count: count,
        sample_count_recorded: count,
        duration: s.duration_ms,
        start_low: s.start.low,
        start_high: s.start.high,
        end_low: s.end.low,
        end_high: s.end.high,
        flags: HEADER_EX_FLAGS,
        ..Default::default()
    }
    .encode()
}

/// The legacy sample-record header (0x13); `section_number` is the index
/// of its own entry in the file header.
pub(crate) fn record_header(s: &Stream0, section_number: u32) -> Vec<u8> {
    let legacy = s.pc_offset.is_some();
    RecordHeaderRaw {
        sample_count: s.records.min(u64::from(u32::MAX)) as u32,
        flags: if legacy { RECORD_HEADER_FLAGS } else { 0 },
        pc_offset: s.pc_offset.unwrap_or(0),
        tsc_offset: s.tsc_offset.unwrap_or(0),
        record_size: s.record_size,
        tsc_size: if s.tsc_offset.is_some() { 8 } else { 0 },
        section_number,
        ..Default::default()
    }
    .encode()
}

/// Bytes of a `__sys_info` (0x18's head) and of a node, a cpu and a cpuid
/// entry in it.
const SYS_INFO_SIZE: usize = 48;
const NODE_SIZE: u32 = 48;
const CPUID_SIZE: u32 = 20;

/// Bytes of a `__generic_per_cpu` entry in a file whose version info
/// states `sample_file_version`: Intel's 2020 reader takes a "Sample6 "
/// file's cpus from this section when the version is below 22, and reads
/// its cpu entries as 64 bytes below 21 and as 72 from 21 (its
/// `helper_tbrw_system_get_cpu_arch_info`); the 8 bytes it adds from 21
/// are two 16-bit words it reads into the cpu's `dummy`.
pub(crate) fn legacy_cpu_size(sample_file_version: u32) -> u32 {
    if sample_file_version < 21 {
        64
    } else {
        72
    }
}

fn array_header(out: &mut Vec<u8>, n: usize, entry_size: u32, array_type: u16, array_subtype: u16) {
    ArrayHeaderRaw {
        hdr_size: ArrayHeaderRaw::SIZE as u32,
        num_entries: n as u32,
        entry_size,
        array_type,
        array_subtype,
        ..Default::default()
    }
    .encode_into(out);
}

fn put_u32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut [u8], at: usize, v: u64) {
    out[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The legacy `vtsa_sys_info` section (0x18): the system's nodes, their
/// cpus and each cpu's first architecture's cpuid leaves, as generic
/// arrays (`__sys_info`, `__node_info`, `__generic_per_cpu`), each
/// pointer an offset from the section start. (Intel's 2020 writer also
/// leaves an unreferenced second copy of each cpu array; that is not
/// written here.) `sample_file_version` is the file's, which sets the size
/// of a cpu entry ([`legacy_cpu_size`]).
pub(crate) fn sys_info(system: &System, app: Option<&Application>, sample_file_version: u32) -> Vec<u8> {
    let cpu_size = legacy_cpu_size(sample_file_version);
    let mut out = vec![0u8; SYS_INFO_SIZE];
    put_u64(&mut out, 8, SYS_INFO_SIZE as u64);
    if let Some(a) = app {
        put_u64(&mut out, 16, a.min_app_addr);
        put_u64(&mut out, 24, a.max_app_addr);
        put_u32(&mut out, 32, a.page_size);
        put_u32(&mut out, 36, a.alloc_granularity);
    }
    array_header(&mut out, system.nodes.len(), NODE_SIZE, 4, 0);
    let nodes_at = out.len();
    out.resize(nodes_at + system.nodes.len() * NODE_SIZE as usize, 0);
    for (i, node) in system.nodes.iter().enumerate() {
        let at = nodes_at + i * NODE_SIZE as usize;
        put_u32(&mut out, at, node.type_from_shell);
        put_u32(&mut out, at + 4, node.id);
        put_u32(&mut out, at + 8, node.num_available);
        put_u32(&mut out, at + 12, node.num_used);
        put_u64(&mut out, at + 16, node.physical_memory_mb);
        let cpu_array = out.len() as u64;
        put_u64(&mut out, at + 32, cpu_array);
        array_header(&mut out, node.cpus.len(), cpu_size, 1, 0);
        let cpus_at = out.len();
        out.resize(cpus_at + node.cpus.len() * cpu_size as usize, 0);
        for (k, cpu) in node.cpus.iter().enumerate() {
            let c = cpus_at + k * cpu_size as usize;
            put_u32(&mut out, c, cpu.number);
            put_u32(&mut out, c + 4, cpu.speed_mhz);
            put_u32(&mut out, c + 8, cpu.fsb_mhz);
            put_u32(&mut out, c + 12, cpu.cache_l2_kb);
            put_u64(&mut out, c + 32, cpu.tsc_offset as u64);
            put_u32(&mut out, c + 40, cpu.intel_processor_number);
            put_u32(&mut out, c + 44, cpu.cache_l3_kb);
            for (j, v) in
                [cpu.package_num, cpu.core_num, cpu.hardware_thread_num, cpu.threads_per_core].into_iter().enumerate()
            {
                out[c + 56 + 2 * j..c + 58 + 2 * j].copy_from_slice(&v.to_le_bytes());
            }
            if cpu_size >= 72 {
                put_u32(&mut out, c + 64, cpu.dummy);
            }
        }
        for (k, cpu) in node.cpus.iter().enumerate() {
            let c = cpus_at + k * cpu_size as usize;
            let leaves_at = out.len() as u64;
            put_u64(&mut out, c + 24, leaves_at);
            let (arch, leaves): (u16, Vec<[u32; 5]>) = match cpu.archs.first() {
                Some(a) => (
                    a.arch_type,
                    match &a.cpuids {
                        Cpuids::Ia32(v) => v.iter().map(|l| [l.eax_input, l.eax, l.ebx, l.ecx, l.edx]).collect(),
                        Cpuids::Ia64(v) => v
                            .iter()
                            .map(|l| {
                                [l.select as u32, (l.select >> 32) as u32, l.value as u32, (l.value >> 32) as u32, 0]
                            })
                            .collect(),
                    },
                ),
                None => (0, Vec::new()),
            };
            array_header(&mut out, leaves.len(), CPUID_SIZE, 3, arch);
            for l in leaves {
                for w in l {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::hardware::{CpuArch, CpuidIa32, Node};

    fn size_of_encoding<T: Raw + Default>() -> usize {
        T::default().encode().len()
    }

    #[test]
    fn declared_sizes_match_encodings() {
        assert_eq!(size_of_encoding::<ModuleRecordRaw>(), ModuleRecordRaw::SIZE);
        assert_eq!(size_of_encoding::<PidTidRecordRaw>(), PidTidRecordRaw::SIZE);
        assert_eq!(size_of_encoding::<SoftwareConfigRaw>(), SoftwareConfigRaw::SIZE);
        assert_eq!(size_of_encoding::<HeaderExRaw>(), HeaderExRaw::SIZE);
        assert_eq!(size_of_encoding::<RecordHeaderRaw>(), RecordHeaderRaw::SIZE);
        assert_eq!(size_of_encoding::<ArrayHeaderRaw>(), ArrayHeaderRaw::SIZE);
    }

    /// The bytes Intel's 2020 writer wrote for the kernel module of
    /// `tbrw/tests/data/intel/guide.tb7` (its first legacy module record).
    #[test]
    fn a_module_record_is_what_intels_writer_writes() {
        let m = Module {
            associated_pid: 0,
            flags: ModuleFlags::from_bits_retain(0x18800),
            segment_number: 1,
            segment_type: 3,
            code_selector: 0x33,
            length: 0x100_0000,
            load_address: 0xffff_ffff_8100_0000,
            unload_tsc: u64::MAX,
            path: "/boot/vmlinux-6.1.0-18-amd64",
            name: "vmlinux-6.1.0-18-amd64",
            segment_name: ".text",
            ..Default::default()
        };
        let mut seven = vec![m; 1];
        seven.resize(7, Module { path: "", segment_name: "", ..Default::default() });
        let text = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let b = modules(&seven, &text);
        let want = "4000030033000600010000002a010000000000010000000000000081ffffffff00000000ffffffffffffffff\
                    c00100001d000600dd0100000000000000000000";
        assert_eq!(hex(&b[..64]), want);
        assert_eq!(&b[448..448 + 35], b"/boot/vmlinux-6.1.0-18-amd64\0.text\0");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// The guide fixture's `vtsa_sys_info` tree: one node of a cpu of one
    /// architecture with three leaves, offsets from the section start.
    #[test]
    fn sys_info_is_a_tree_of_generic_arrays() {
        let leaf = CpuidIa32 { eax_input: 1, eax: 0x906ea, ebx: 2, ecx: 3, edx: 4, reserved: 9 };
        let sys = System {
            nodes: vec![Node {
                num_available: 1,
                num_used: 1,
                physical_memory_mb: 16384,
                cpus: vec![crate::model::hardware::Cpu {
                    speed_mhz: 2900,
                    threads_per_core: 2,
                    archs: vec![CpuArch { arch_type: 5, cpuids: Cpuids::Ia32(vec![leaf; 3]) }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let app = Application { page_size: 4096, alloc_granularity: 4096, min_app_addr: 0x10000, ..Default::default() };
        let b = sys_info(&sys, Some(&app), 27);
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        assert_eq!((u64_at(8), u64_at(16), u32_at(32)), (48, 0x10000, 4096));
        assert_eq!((u32_at(48 + 52), u32_at(48 + 56), u32_at(48 + 60)), (1, 48, 4));
        let cpus = u64_at(112 + 32) as usize;
        assert_eq!((cpus, u32_at(cpus + 52), u32_at(cpus + 56)), (160, 1, 72));
        let leaves = u64_at(cpus + 64 + 24) as usize;
        assert_eq!((leaves, u32_at(leaves + 52), u32_at(leaves + 56), u32_at(leaves + 60)), (296, 3, 20, 0x5_0003));
        assert_eq!(u32_at(leaves + 64 + 4), 0x906ea);
        assert_eq!(b.len(), leaves + 64 + 60);
    }

    /// Intel's 2020 reader reads a cpu entry of this section as 64 bytes in
    /// a file stating a sample file version below 21 and as 72 from 21, the
    /// 8 more bytes two 16-bit halves of `dummy` (its
    /// `helper_tbrw_system_get_cpu_arch_info`): the second cpu of a version
    /// 16 file lies 64 bytes after the first.
    #[test]
    fn cpu_entries_are_sized_by_the_files_version() {
        let cpu = |number: u32| crate::model::hardware::Cpu {
            number,
            speed_mhz: 2900 + number,
            dummy: 0x0002_0001,
            archs: vec![CpuArch { arch_type: 5, cpuids: Cpuids::Ia32(vec![]) }],
            ..Default::default()
        };
        let sys = System { nodes: vec![Node { cpus: vec![cpu(0), cpu(1)], ..Default::default() }] };
        for (version, size) in [(16, 64), (20, 64), (21, 72), (27, 72)] {
            assert_eq!(legacy_cpu_size(version), size);
            let b = sys_info(&sys, None, version);
            let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
            let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
            let header = u64_at(112 + 32) as usize;
            assert_eq!((u32_at(header + 52), u32_at(header + 56)), (2, size), "version {version}");
            let second = header + 64 + size as usize;
            assert_eq!((u32_at(second), u32_at(second + 4)), (1, 2901), "version {version}");
            let dummy = if size == 72 { 0x0002_0001 } else { u32_at(second) };
            assert_eq!(u32_at(header + 64 + 64), dummy, "version {version}: what follows the first cpu's 64 bytes");
        }
    }
}
