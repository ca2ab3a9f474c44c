//! `print_tb5 --json`: the document's shapes as serde types, built from a
//! [`Tb5File`], and the writer that streams them with serde_json's compact
//! formatter (one line, then a newline).
//!
//! Strings are escaped by serde_json; byte blocks are lowercase hex strings;
//! a missing section or string is `null`. The stream list and each stream's
//! records are produced while they are written ([`Lazy`]), so that
//! `--records all` never holds a whole stream's records in memory.
//!
//! One file on purpose: the serde shapes of one document and the writer that
//! streams them belong together; the last eighty lines are its tests.

use std::cell::RefCell;
use std::fmt;
use std::io::Write;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use tbrw::*;

use crate::print::{bind_for, module_counts, type_name, Options, PrintError, Records, R};

/// Bytes written as one lowercase hex string.
struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where the first TB5 error met while serializing is kept: serde carries
/// only an error's text, and the caller wants the error itself.
type Failed = RefCell<Option<PrintError>>;

/// A JSON array whose items are made while it is written.
struct Lazy<'a, T> {
    len: u64,
    item: Box<dyn Fn(u64) -> R<T> + 'a>,
    failed: &'a Failed,
}

impl<T: Serialize> Serialize for Lazy<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(usize::try_from(self.len).ok())?;
        for i in 0..self.len {
            match (self.item)(i) {
                Ok(v) => seq.serialize_element(&v)?,
                Err(e) => {
                    let text = e.to_string();
                    self.failed.borrow_mut().get_or_insert(e);
                    return Err(S::Error::custom(text));
                }
            }
        }
        seq.end()
    }
}

/// Named values in their order, as one object (names may repeat: a
/// descriptor may give two fields the same name, and both are shown).
struct Fields<'a>(Vec<(String, Field<'a>)>);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A field of a non-legacy record: 1/2/4/8-byte little-endian integers
/// as numbers, other sizes as hex.
#[derive(Serialize)]
#[serde(untagged)]
enum Field<'a> {
    Int(u64),
    Bytes(Hex<'a>),
}

// ---------------------------------------------------------------- shapes

#[derive(Serialize)]
struct Doc<'a> {
    streams: u32,
    hardware: Option<Vec<NodeJson>>,
    software: Option<SoftwareJson<'a>>,
    version_info: Option<VersionJson>,
    processes: Option<ProcessesJson<'a>>,
    modules: Option<Vec<ModuleJson<'a>>>,
    user_defined: Option<Hex<'a>>,
    stream_list: Lazy<'a, StreamJson<'a>>,
}

#[derive(Serialize)]
struct NodeJson {
    id: u32,
    type_from_shell: u32,
    num_available: u32,
    num_used: u32,
    reserved: u32,
    physical_memory_mb: u64,
    cpus: Vec<CpuJson>,
}

#[derive(Serialize)]
struct CpuJson {
    number: u32,
    native_arch_type: u32,
    intel_processor_number: u32,
    speed_mhz: u32,
    fsb_mhz: u32,
    cache_l2_kb: u32,
    cache_l3_kb: u32,
    tsc_offset: i64,
    package_num: u16,
    core_num: u16,
    hardware_thread_num: u16,
    threads_per_core: u16,
    archs: Vec<ArchJson>,
}

#[derive(Serialize)]
struct ArchJson {
    arch_type: u16,
    cpuid_form: &'static str,
    cpuids: CpuidsJson,
}

#[derive(Serialize)]
#[serde(untagged)]
enum CpuidsJson {
    Ia32(Vec<CpuidIa32Json>),
    Ia64(Vec<CpuidIa64Json>),
}

#[derive(Serialize)]
struct CpuidIa32Json {
    eax_input: u32,
    eax: u32,
    ebx: u32,
    ecx: u32,
    edx: u32,
    reserved: u32,
}

#[derive(Serialize)]
struct CpuidIa64Json {
    select: u64,
    value: u64,
    reserved: u64,
}

#[derive(Serialize)]
struct SoftwareJson<'a> {
    host: Option<HostJson<'a>>,
    os: Option<OsJson<'a>>,
    application: Option<ApplicationJson>,
}

#[derive(Serialize)]
struct HostJson<'a> {
    ip_address: Option<&'a str>,
    name: Option<&'a str>,
    reserved: u32,
}

#[derive(Serialize)]
struct OsJson<'a> {
    platform: u32,
    major: u32,
    minor: u32,
    build: u32,
    extra: u32,
    name: Option<&'a str>,
    name_extra: Option<&'a str>,
}

#[derive(Serialize)]
struct ApplicationJson {
    page_size: u32,
    alloc_granularity: u32,
    min_app_addr: u64,
    max_app_addr: u64,
    reserved: u32,
}

#[derive(Serialize)]
struct VersionJson {
    sampling_driver_version: u32,
    bind_version: u32,
    sample_file_version: u32,
}

#[derive(Serialize)]
struct ProcessesJson<'a> {
    processes: Vec<PidJson<'a>>,
    threads: Vec<TidJson<'a>>,
}

#[derive(Serialize)]
struct PidJson<'a> {
    id: u32,
    flags: u32,
    event_when: u64,
    path: Option<&'a str>,
    name: Option<&'a str>,
    reserved: u32,
    reserved_for_legacy: u32,
    reserved1: u32,
}

#[derive(Serialize)]
struct TidJson<'a> {
    id: u32,
    associated_pid: u32,
    flags: u32,
    event_when: u64,
    name: Option<&'a str>,
    reserved_for_legacy: u32,
    reserved: u32,
}

#[derive(Serialize)]
struct ModuleJson<'a> {
    associated_pid: u32,
    flags: u32,
    load_address: u64,
    length: u64,
    event_when: u64,
    unload_tsc: u64,
    segment_type: u8,
    segment_number: u32,
    code_selector: u32,
    path: Option<&'a str>,
    name: Option<&'a str>,
    segment_name: Option<&'a str>,
    reserved: u32,
    reserved2: u32,
    reserved_for_legacy: u32,
    reserved_for_legacy2: u32,
    reserved_for_legacy_flags: u32,
    reserved1: u32,
}

#[derive(Serialize)]
struct StreamJson<'a> {
    index: u32,
    info: Option<StreamInfoJson<'a>>,
    events: Option<Vec<EventJson<'a>>>,
    descriptor: Option<DescriptorJson<'a>>,
    user_defined: Option<Hex<'a>>,
    record_count: Option<u64>,
    #[serde(serialize_with = "empty_if_none")]
    records: Option<Lazy<'a, RecordJson<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples_by_module: Option<Vec<ModuleCountJson<'a>>>,
}

/// A stream without a data section still has a (empty) record list.
fn empty_if_none<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => v.serialize(s),
        None => s.collect_seq(std::iter::empty::<()>()),
    }
}

#[derive(Serialize)]
struct StreamInfoJson<'a> {
    stream_type: u32,
    sampling_duration_ms: u32,
    sampling_interval_us: u32,
    start_time: u64,
    end_time: u64,
    command_line: Option<&'a str>,
    cpu_mask: Option<&'a str>,
    comment: Option<&'a str>,
}

#[derive(Serialize)]
struct EventJson<'a> {
    id: u32,
    flags: u32,
    sav: u64,
    name: Option<&'a str>,
    arch_name: Option<&'a str>,
    details: Vec<EventDetailJson>,
}

#[derive(Serialize)]
struct EventDetailJson {
    access_size_bits: u16,
    method: u8,
    access: u8,
    address: u64,
    value: u64,
    legacy_command: u8,
    reserved1: u8,
    reserved2: u16,
    reserved3: u32,
}

#[derive(Serialize)]
struct DescriptorJson<'a> {
    record_size: u32,
    entries: Vec<DescEntryJson<'a>>,
}

#[derive(Serialize)]
struct DescEntryJson<'a> {
    offset: u32,
    data_size: u32,
    #[serde(rename = "type")]
    desc_type: u16,
    type_name: Option<&'static str>,
    subtype: u16,
    name: Option<&'a str>,
    access_offset: u64,
    access_type: u8,
    access_method: u8,
    sample_flag: u8,
    reserved0: u8,
    reserved1: u32,
}

#[derive(Serialize)]
struct RecordJson<'a> {
    index: u64,
    #[serde(flatten)]
    body: RecordBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bind: Option<BindJson<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum RecordBody<'a> {
    /// A legacy sample record, decoded.
    Legacy(LegacyJson),
    /// Fields laid out by the stream's descriptor.
    Fields { fields: Fields<'a> },
    /// No descriptor: the raw record.
    Bytes { bytes: Hex<'a> },
}

#[derive(Serialize)]
struct LegacyJson {
    ip: u64,
    word0: u64,
    word1: u64,
    cs: u16,
    cpu: u16,
    not_vmid0: bool,
    code_mode: u8,
    tid: u32,
    pid_rec_index: u32,
    mr_index: u32,
    event_index: u8,
    tid_is_raw: bool,
    ia64_pc: bool,
    pid_rec_index_raw: bool,
    mr_index_none: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tsc: Option<u64>,
}

#[derive(Serialize)]
struct BindJson<'a> {
    module_index: Option<u64>,
    module_name: Option<&'a str>,
    pid_index: u64,
    pid: u32,
    process_name: Option<&'a str>,
    tid_index: u64,
    tid: u32,
}

#[derive(Serialize)]
struct ModuleCountJson<'a> {
    module_index: Option<u64>,
    name: Option<&'a str>,
    samples: u64,
}

// ---------------------------------------------------------------- building

/// Writes the document for `file` to `out`, one line.
pub(crate) fn print_json(file: &Tb5File, opts: Options, out: &mut dyn Write) -> R {
    let modules: Vec<Module<StringId>> = match file.modules()? {
        None => Vec::new(),
        Some(mt) => mt.iter().collect::<Result<_>>()?,
    };
    let failed = Failed::default();
    let written = {
        let doc = document(file, &modules, opts, &failed)?;
        serde_json::to_writer(&mut *out, &doc)
    };
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    // The only errors left are the output's (serde_json gives back the io::Error).
    written.map_err(|e| PrintError::Io(e.into()))?;
    writeln!(out)?;
    Ok(())
}

fn document<'a>(file: &'a Tb5File, modules: &'a [Module<StringId>], opts: Options, failed: &'a Failed) -> R<Doc<'a>> {
    let s = |id| file.string_opt(id);
    let software = match file.software()? {
        None => None,
        Some(sw) => Some(SoftwareJson {
            host: match &sw.host {
                None => None,
                Some(h) => Some(HostJson { ip_address: s(h.ip_address)?, name: s(h.name)?, reserved: h.reserved }),
            },
            os: match &sw.os {
                None => None,
                Some(o) => Some(OsJson {
                    platform: o.platform,
                    major: o.major,
                    minor: o.minor,
                    build: o.build,
                    extra: o.extra,
                    name: s(o.name)?,
                    name_extra: s(o.name_extra)?,
                }),
            },
            application: sw.application.as_ref().map(|a| ApplicationJson {
                page_size: a.page_size,
                alloc_granularity: a.alloc_granularity,
                min_app_addr: a.min_app_addr,
                max_app_addr: a.max_app_addr,
                reserved: a.reserved,
            }),
        }),
    };
    let processes = match file.processes()? {
        None => None,
        Some(pt) => Some(ProcessesJson {
            processes: pt
                .pids()
                .map(|p| {
                    Ok(PidJson {
                        id: p.id,
                        flags: p.flags.bits(),
                        event_when: p.event_when,
                        path: s(p.path)?,
                        name: s(p.name)?,
                        reserved: p.reserved,
                        reserved_for_legacy: p.reserved_for_legacy,
                        reserved1: p.reserved1,
                    })
                })
                .collect::<Result<_>>()?,
            threads: pt
                .tids()
                .map(|t| {
                    Ok(TidJson {
                        id: t.id,
                        associated_pid: t.associated_pid,
                        flags: t.flags.bits(),
                        event_when: t.event_when,
                        name: s(t.name)?,
                        reserved_for_legacy: t.reserved_for_legacy,
                        reserved: t.reserved,
                    })
                })
                .collect::<Result<_>>()?,
        }),
    };
    let module_list = match file.modules()? {
        None => None,
        Some(_) => Some(modules.iter().map(|m| module_json(file, m)).collect::<Result<_>>()?),
    };
    Ok(Doc {
        streams: file.stream_count(),
        hardware: file.hardware()?.map(|sys| sys.nodes.iter().map(node_json).collect()),
        software,
        version_info: file.version_info()?.map(|v| VersionJson {
            sampling_driver_version: v.sampling_driver_version,
            bind_version: v.bind_version,
            sample_file_version: v.sample_file_version,
        }),
        processes,
        modules: module_list,
        user_defined: file.user_defined_global()?.map(Hex),
        stream_list: Lazy {
            len: file.stream_count().into(),
            item: Box::new(move |n| stream_json(file, n as u32, modules, opts, failed)),
            failed,
        },
    })
}

fn node_json(n: &Node) -> NodeJson {
    NodeJson {
        id: n.id,
        type_from_shell: n.type_from_shell,
        num_available: n.num_available,
        num_used: n.num_used,
        reserved: n.reserved,
        physical_memory_mb: n.physical_memory_mb,
        cpus: n
            .cpus
            .iter()
            .map(|c| CpuJson {
                number: c.number,
                native_arch_type: c.native_arch_type,
                intel_processor_number: c.intel_processor_number,
                speed_mhz: c.speed_mhz,
                fsb_mhz: c.fsb_mhz,
                cache_l2_kb: c.cache_l2_kb,
                cache_l3_kb: c.cache_l3_kb,
                tsc_offset: c.tsc_offset,
                package_num: c.package_num,
                core_num: c.core_num,
                hardware_thread_num: c.hardware_thread_num,
                threads_per_core: c.threads_per_core,
                archs: c.archs.iter().map(arch_json).collect(),
            })
            .collect(),
    }
}

fn arch_json(a: &CpuArch) -> ArchJson {
    let (cpuid_form, cpuids) = match &a.cpuids {
        Cpuids::Ia32(v) => (
            "ia32",
            CpuidsJson::Ia32(
                v.iter()
                    .map(|x| CpuidIa32Json {
                        eax_input: x.eax_input,
                        eax: x.eax,
                        ebx: x.ebx,
                        ecx: x.ecx,
                        edx: x.edx,
                        reserved: x.reserved,
                    })
                    .collect(),
            ),
        ),
        Cpuids::Ia64(v) => (
            "ia64",
            CpuidsJson::Ia64(
                v.iter().map(|x| CpuidIa64Json { select: x.select, value: x.value, reserved: x.reserved }).collect(),
            ),
        ),
    };
    ArchJson { arch_type: a.arch_type, cpuid_form, cpuids }
}

fn module_json<'a>(file: &'a Tb5File, m: &Module<StringId>) -> Result<ModuleJson<'a>> {
    Ok(ModuleJson {
        associated_pid: m.associated_pid,
        flags: m.flags.bits(),
        load_address: m.load_address,
        length: m.length,
        event_when: m.event_when,
        unload_tsc: m.unload_tsc,
        segment_type: m.segment_type,
        segment_number: m.segment_number,
        code_selector: m.code_selector,
        path: file.string_opt(m.path)?,
        name: file.string_opt(m.name)?,
        segment_name: file.string_opt(m.segment_name)?,
        reserved: m.reserved,
        reserved2: m.reserved2,
        reserved_for_legacy: m.reserved_for_legacy,
        reserved_for_legacy2: m.reserved_for_legacy2,
        reserved_for_legacy_flags: m.reserved_for_legacy_flags,
        reserved1: m.reserved1,
    })
}

fn stream_json<'a>(
    file: &'a Tb5File,
    n: u32,
    modules: &'a [Module<StringId>],
    opts: Options,
    failed: &'a Failed,
) -> R<StreamJson<'a>> {
    let s = file.stream(n)?;
    let text = |id| file.string_opt(id);
    let info = match s.info()? {
        None => None,
        Some(i) => Some(StreamInfoJson {
            stream_type: i.stream_type,
            sampling_duration_ms: i.sampling_duration_ms,
            sampling_interval_us: i.sampling_interval_us,
            start_time: i.start_time.ticks(),
            end_time: i.end_time.ticks(),
            command_line: text(i.command_line)?,
            cpu_mask: text(i.cpu_mask)?,
            comment: text(i.comment)?,
        }),
    };
    let events = match s.events()? {
        None => None,
        Some(ev) => Some(
            ev.iter()
                .map(|e| {
                    Ok(EventJson {
                        id: e.id,
                        flags: e.flags.bits(),
                        sav: e.sav,
                        name: text(e.name)?,
                        arch_name: text(e.arch_name)?,
                        details: e
                            .details
                            .iter()
                            .map(|d| EventDetailJson {
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
                            .collect(),
                    })
                })
                .collect::<Result<_>>()?,
        ),
    };
    let descs = s.descriptor()?.unwrap_or_default();
    let layout = s.layout()?;
    let descriptor = match &layout {
        None => None,
        Some(l) => Some(DescriptorJson {
            record_size: l.record_size(),
            entries: descs
                .iter()
                .map(|d| {
                    Ok(DescEntryJson {
                        offset: d.offset,
                        data_size: d.data_size,
                        desc_type: d.desc_type,
                        type_name: desc_type::name(d.desc_type),
                        subtype: d.subtype,
                        name: text(d.name)?,
                        access_offset: d.access_offset,
                        access_type: d.access_type,
                        access_method: d.access_method,
                        sample_flag: d.sample_flag,
                        reserved0: d.reserved0,
                        reserved1: d.reserved1,
                    })
                })
                .collect::<Result<_>>()?,
        }),
    };
    let mut stream = StreamJson {
        index: n,
        info,
        events,
        descriptor,
        user_defined: s.user_defined()?.map(Hex),
        record_count: None,
        records: None,
        samples_by_module: None,
    };
    let Some(data) = s.data()? else {
        return Ok(stream);
    };
    let bound = bind_for(file, n)?;
    if let Some(b) = &bound {
        let counts = module_counts(&b.view());
        stream.samples_by_module = Some(
            counts
                .into_iter()
                .map(|(m, samples)| {
                    let name = match m {
                        Some(m) => text(modules[m as usize].name)?,
                        None => None,
                    };
                    Ok(ModuleCountJson { module_index: m, name, samples })
                })
                .collect::<Result<_>>()?,
        );
    }
    let show = match opts.records {
        Records::All => data.len(),
        Records::First(k) => k.min(data.len()),
    };
    stream.record_count = Some(data.len());
    let names: Vec<String> = match &layout {
        None => Vec::new(),
        Some(l) => l
            .fields()
            .iter()
            .map(|f| {
                descs
                    .get(f.entry)
                    .and_then(|d| file.string_opt(d.name).ok().flatten())
                    .map_or_else(|| type_name(f.desc_type), str::to_owned)
            })
            .collect(),
    };
    stream.records = Some(Lazy {
        len: show,
        item: Box::new(move |i| {
            let rec = data.record(i).unwrap_or_default();
            let body = match (layout.as_ref().and_then(|l| l.legacy_pc_offset()), &layout) {
                (Some(at), _) => {
                    let tsc_at = layout.as_ref().and_then(|l| l.tsc_offset()).map(|x| x as usize);
                    RecordBody::Legacy(legacy_json(rec, at as usize, tsc_at))
                }
                (None, Some(l)) => RecordBody::Fields {
                    fields: Fields(
                        l.fields()
                            .iter()
                            .zip(&names)
                            .map(|(f, name)| {
                                let bytes = &rec[f.offset as usize..(f.offset + f.size) as usize];
                                let v = match bytes.len() {
                                    1 | 2 | 4 | 8 => {
                                        let mut b = [0u8; 8];
                                        b[..bytes.len()].copy_from_slice(bytes);
                                        Field::Int(u64::from_le_bytes(b))
                                    }
                                    _ => Field::Bytes(Hex(bytes)),
                                };
                                (name.clone(), v)
                            })
                            .collect(),
                    ),
                },
                (None, None) => RecordBody::Bytes { bytes: Hex(rec) },
            };
            let bind = match &bound {
                None => None,
                Some(b) => bind_json(file, &b.view(), modules, i)?,
            };
            Ok(RecordJson { index: i, body, bind })
        }),
        failed,
    });
    Ok(stream)
}

fn legacy_json(rec: &[u8], pc_at: usize, tsc_at: Option<usize>) -> LegacyJson {
    let pc = SampleRecordPc::from_slice(&rec[pc_at..]).unwrap_or_default();
    LegacyJson {
        ip: pc.ip(),
        word0: pc.word0,
        word1: pc.word1,
        cs: pc.cs,
        cpu: pc.cpu_num(),
        not_vmid0: pc.not_vmid0(),
        code_mode: pc.code_mode(),
        tid: pc.tid,
        pid_rec_index: pc.pid_rec_index,
        mr_index: pc.mr_index(),
        event_index: pc.event_index(),
        tid_is_raw: pc.tid_is_raw(),
        ia64_pc: pc.ia64_pc(),
        pid_rec_index_raw: pc.pid_rec_index_raw(),
        mr_index_none: pc.mr_index_none(),
        tsc: tsc_at.map(|t| u64::from_le_bytes(rec[t..t + 8].try_into().unwrap_or_default())),
    }
}

fn bind_json<'a>(
    file: &'a Tb5File,
    v: &tbrw::bind::BindView<'_>,
    modules: &[Module<StringId>],
    i: u64,
) -> R<Option<BindJson<'a>>> {
    let Some(d) = v.data_bind(i) else { return Ok(None) };
    let p = v.process(d.pid_index).unwrap_or_default();
    let t = v.thread(d.tid_index).unwrap_or_default();
    let known = d.module_index != UNKNOWN_MODULE;
    Ok(Some(BindJson {
        module_index: known.then_some(d.module_index),
        module_name: if known { file.string_opt(modules[d.module_index as usize].name)? } else { None },
        pid_index: d.pid_index,
        pid: p.id,
        process_name: file.string_opt(p.name)?,
        tid_index: d.tid_index,
        tid: t.id,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_repeated_names_are_written_as_given() {
        let f = Fields(vec![
            ("a".into(), Field::Int(1)),
            ("a".into(), Field::Bytes(Hex(&[0, 0xab, 0xff]))),
            ("q\"\\\n\u{1}é".into(), Field::Int(2)),
        ]);
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"a":1,"a":"00abff","q\"\\\n\u0001é":2}"#);
    }

    #[test]
    fn an_item_error_is_kept_as_itself() {
        let failed = Failed::default();
        let lazy = Lazy {
            len: 3,
            item: Box::new(|i| {
                if i < 2 {
                    Ok(i)
                } else {
                    Err(PrintError::Tb5(Error::InvalidStream { stream: 7, why: "x".into() }))
                }
            }),
            failed: &failed,
        };
        let mut out = Vec::new();
        assert!(serde_json::to_writer(&mut out, &lazy).is_err());
        assert_eq!(out, b"[0,1");
        drop(lazy);
        assert!(matches!(failed.into_inner(), Some(PrintError::Tb5(Error::InvalidStream { stream: 7, .. }))));
    }

    /// A stream with a 3-byte field and a control character in a name, and
    /// a stream without a data section.
    #[test]
    fn odd_fields_and_a_stream_without_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("odd.tb5");
        let mut w = Tb5Writer::create(&p).unwrap();
        let mut s0 = w
            .stream(0)
            .unwrap()
            .info(&StreamInfo { stream_type: stream_type::CUSTOM, ..Default::default() })
            .unwrap()
            .data_descriptor(&[
                DescEntry { desc_type: 0x4001, data_size: 3, name: Some("rgb\u{7}".into()), ..Default::default() },
                DescEntry { desc_type: 0x4002, data_size: 1, ..Default::default() },
            ])
            .unwrap();
        let mut data = s0.data().unwrap();
        data.add(&[1, 2, 0xfe, 9]).unwrap();
        data.done().unwrap();
        s0.finish().unwrap();
        let s1 = w
            .stream(1)
            .unwrap()
            .info(&StreamInfo { stream_type: stream_type::CUSTOM, ..Default::default() })
            .unwrap()
            .data_descriptor(&[DescEntry { desc_type: 0x4001, data_size: 4, ..Default::default() }])
            .unwrap();
        s1.finish().unwrap();
        w.close().unwrap();

        let mut out = Vec::new();
        let opts = Options { json: true, records: Records::All };
        print_json(&Tb5File::open(&p).unwrap(), opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("]}\n") && text.lines().count() == 1, "{text}");
        assert!(
            text.contains(r#""record_count":1,"records":[{"index":0,"fields":{"rgb\u0007":"0102fe","0x4002":9}}]}"#),
            "{text}"
        );
        // Stream 1 has no records: Intel's layout (the default) has no data
        // section of no bytes, and a stream with a descriptor reads as one of
        // no records (docs/FORMAT.md, "What Intel's layout cannot hold").
        assert!(text.contains(r#""record_count":0,"records":[]}]}"#), "{text}");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["stream_list"].as_array().unwrap().len(), 2);
    }
}
