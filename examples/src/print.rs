//! `print_tb5`: every section of a TB5 file, as text or as one JSON document
//! (the text here; the JSON document's shapes in `json`, which shares this
//! module's binding and per-module counts).
//!
//! The text layout is plain `key=value` lines, chosen so that the C version
//! (`examples/c/print_tb5.c`, through the C API only) prints exactly the
//! same bytes. Strings are printed in double quotes as they are (no
//! escaping in text; escaped in JSON); a missing string is `(none)`.
//! Numbers that are addresses, flags or raw register values are lowercase
//! hex, counts and sizes decimal.
//!
//! Streams that can be bound (legacy records, or ST_IP + ST_PID fields) are
//! bound in memory when the file holds no bind, so that records show their
//! module, process and thread, and each stream ends with its sample counts
//! per module.

use std::collections::HashMap;
use std::io::{self, Write};

use tbrw::BindView;
use tbrw::*;

/// How many records to decode per stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Records {
    /// The first N.
    First(u64),
    /// Every record (streamed).
    All,
}

/// Output options.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Records decoded per stream.
    pub records: Records,
    /// One JSON document instead of text.
    pub json: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { records: Records::First(5), json: false }
    }
}

/// An error of `print_tb5`: a TB5 error or an output error.
#[derive(Debug)]
pub enum PrintError {
    /// Reading the file failed.
    Tb5(Error),
    /// Writing the output failed.
    Io(io::Error),
}

impl std::fmt::Display for PrintError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrintError::Tb5(e) => e.fmt(f),
            PrintError::Io(e) => write!(f, "writing the output: {e}"),
        }
    }
}

impl From<Error> for PrintError {
    fn from(e: Error) -> Self {
        PrintError::Tb5(e)
    }
}

impl From<io::Error> for PrintError {
    fn from(e: io::Error) -> Self {
        PrintError::Io(e)
    }
}

pub(crate) type R<T = ()> = std::result::Result<T, PrintError>;

struct Ctx<'f> {
    file: &'f Tb5File,
}

impl Ctx<'_> {
    /// A string of the file, quoted, its control characters (and quotes)
    /// escaped as every text output escapes names (`tbrw::text`).
    fn text(&self, id: StringId) -> R<String> {
        Ok(match self.file.string_opt(id)? {
            Some(s) => tbrw::text::Quoted(s).to_string(),
            None => "(none)".into(),
        })
    }
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

fn hex_preview(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(32).map(|b| format!("{b:02x}")).collect();
    let more = if bytes.len() > 32 { " ..." } else { "" };
    format!("{}{more}", shown.join(" "))
}

/// Opens, verifies and prints `path` to `out`.
pub fn print_file(path: &std::path::Path, opts: Options, out: &mut dyn Write) -> R {
    let file = Tb5File::open(path)?;
    file.verify()?;
    if opts.json {
        crate::json::print_json(&file, opts, out)
    } else {
        print_text(&file, opts, out)
    }
}

/// Binds a stream for printing: its stored bind, else one made in memory,
/// else none (the stream cannot be bound).
pub(crate) fn bind_for(file: &Tb5File, n: u32) -> R<Option<Bound<'_>>> {
    let s = file.stream(n)?;
    if let Some(v) = s.bind_view()? {
        return Ok(Some(Bound::Stored(v)));
    }
    match bind::bind_in_memory(file, n) {
        Ok(m) => Ok(Some(Bound::Memory(Box::new(m)))),
        Err(Error::InvalidStream { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub(crate) enum Bound<'f> {
    Stored(BindView<'f>),
    Memory(Box<MemoryBind>),
}

impl Bound<'_> {
    pub(crate) fn view(&self) -> BindView<'_> {
        match self {
            Bound::Stored(v) => *v,
            Bound::Memory(m) => BindView::Memory(m),
        }
    }
}

// ---------------------------------------------------------------- text

fn print_text(file: &Tb5File, opts: Options, out: &mut dyn Write) -> R {
    let c = Ctx { file };
    writeln!(out, "streams: {}", file.stream_count())?;
    print_hardware(file, out)?;
    print_software(&c, out)?;
    print_processes(&c, out)?;
    let modules = print_modules(&c, out)?;
    writeln!(out, "== user-defined")?;
    match file.user_defined_global()? {
        None => writeln!(out, "(absent)")?,
        Some(b) => writeln!(out, "{} bytes: {}", b.len(), hex_preview(b))?,
    }
    for n in 0..file.stream_count() {
        print_stream_text(&c, n, &modules, opts, out)?;
    }
    Ok(())
}

/// The hardware section: nodes, their cpus, each cpu's architectures and cpuids.
fn print_hardware(file: &Tb5File, out: &mut dyn Write) -> R {
    writeln!(out, "== hardware")?;
    match file.hardware()? {
        None => writeln!(out, "(absent)")?,
        Some(sys) => {
            writeln!(out, "nodes: {}", sys.nodes.len())?;
            for (i, n) in sys.nodes.iter().enumerate() {
                writeln!(
                    out,
                    "node {i}: id={} type_from_shell={} num_available={} num_used={} reserved={} physical_memory_mb={} cpus={}",
                    n.id,
                    n.type_from_shell,
                    n.num_available,
                    n.num_used,
                    n.reserved,
                    n.physical_memory_mb,
                    n.cpus.len()
                )?;
                for (j, cpu) in n.cpus.iter().enumerate() {
                    writeln!(
                        out,
                        "  cpu {j}: number={} native_arch_type={} intel_processor_number={} speed_mhz={} fsb_mhz={} cache_l2_kb={} cache_l3_kb={} tsc_offset={} package_num={} core_num={} hardware_thread_num={} threads_per_core={} archs={}",
                        cpu.number,
                        cpu.native_arch_type,
                        cpu.intel_processor_number,
                        cpu.speed_mhz,
                        cpu.fsb_mhz,
                        cpu.cache_l2_kb,
                        cpu.cache_l3_kb,
                        cpu.tsc_offset,
                        cpu.package_num,
                        cpu.core_num,
                        cpu.hardware_thread_num,
                        cpu.threads_per_core,
                        cpu.archs.len()
                    )?;
                    for (k, a) in cpu.archs.iter().enumerate() {
                        writeln!(out, "    arch {k}: arch_type={} cpuids={}", a.arch_type, a.cpuids.len())?;
                        match &a.cpuids {
                            Cpuids::Ia32(v) => {
                                for (l, x) in v.iter().enumerate() {
                                    writeln!(
                                        out,
                                        "      cpuid {l}: eax_input={} eax={} ebx={} ecx={} edx={} reserved={}",
                                        hex(x.eax_input.into()),
                                        hex(x.eax.into()),
                                        hex(x.ebx.into()),
                                        hex(x.ecx.into()),
                                        hex(x.edx.into()),
                                        hex(x.reserved.into())
                                    )?
                                }
                            }
                            Cpuids::Ia64(v) => {
                                for (l, x) in v.iter().enumerate() {
                                    writeln!(
                                        out,
                                        "      cpuid {l}: select={} value={} reserved={}",
                                        hex(x.select),
                                        hex(x.value),
                                        hex(x.reserved)
                                    )?
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The software section (host, OS, application) and the version info.
fn print_software(c: &Ctx<'_>, out: &mut dyn Write) -> R {
    let file = c.file;
    writeln!(out, "== software")?;
    match file.software()? {
        None => writeln!(out, "(absent)")?,
        Some(sw) => {
            match &sw.host {
                Some(h) => writeln!(
                    out,
                    "host: ip_address={} name={} reserved={}",
                    c.text(h.ip_address)?,
                    c.text(h.name)?,
                    h.reserved
                )?,
                None => writeln!(out, "host: (absent)")?,
            }
            match &sw.os {
                Some(o) => writeln!(
                    out,
                    "os: platform={} major={} minor={} build={} extra={} name={} name_extra={}",
                    o.platform,
                    o.major,
                    o.minor,
                    o.build,
                    o.extra,
                    c.text(o.name)?,
                    c.text(o.name_extra)?
                )?,
                None => writeln!(out, "os: (absent)")?,
            }
            match &sw.application {
                Some(a) => writeln!(
                    out,
                    "application: page_size={} alloc_granularity={} min_app_addr={} max_app_addr={} reserved={}",
                    a.page_size,
                    a.alloc_granularity,
                    hex(a.min_app_addr),
                    hex(a.max_app_addr),
                    a.reserved
                )?,
                None => writeln!(out, "application: (absent)")?,
            }
        }
    }

    writeln!(out, "== version info")?;
    match file.version_info()? {
        None => writeln!(out, "(absent)")?,
        Some(v) => writeln!(
            out,
            "sampling_driver_version={} bind_version={} sample_file_version={}",
            hex(v.sampling_driver_version.into()),
            v.bind_version,
            v.sample_file_version
        )?,
    }
    Ok(())
}

/// The process and thread tables.
fn print_processes(c: &Ctx<'_>, out: &mut dyn Write) -> R {
    writeln!(out, "== processes and threads")?;
    match c.file.processes()? {
        None => writeln!(out, "(absent)")?,
        Some(pt) => {
            writeln!(out, "processes: {}", pt.pid_count())?;
            for (i, p) in pt.pids().enumerate() {
                writeln!(out, "process {i}: {}", pid_text(c, &p)?)?;
            }
            writeln!(out, "threads: {}", pt.tid_count())?;
            for (i, t) in pt.tids().enumerate() {
                writeln!(out, "thread {i}: {}", tid_text(c, &t)?)?;
            }
        }
    }
    Ok(())
}

/// The module table; its modules, for the streams' binds.
fn print_modules<'f>(c: &Ctx<'f>, out: &mut dyn Write) -> R<Vec<Module<StringId>>> {
    writeln!(out, "== modules")?;
    let modules: Vec<Module<StringId>> = match c.file.modules()? {
        None => {
            writeln!(out, "(absent)")?;
            Vec::new()
        }
        Some(mt) => {
            let v: Vec<_> = mt.iter().collect::<Result<_>>()?;
            writeln!(out, "modules: {}", v.len())?;
            for (i, m) in v.iter().enumerate() {
                writeln!(
                    out,
                    "module {i}: pid={} flags={} load_address={} length={} event_when={} unload_tsc={} segment_type={} segment_number={} code_selector={} path={} name={} segment_name={} reserved={} reserved2={} reserved_for_legacy={} reserved_for_legacy2={} reserved_for_legacy_flags={} reserved1={}",
                    m.associated_pid,
                    hex(m.flags.bits().into()),
                    hex(m.load_address),
                    hex(m.length),
                    hex(m.event_when),
                    hex(m.unload_tsc),
                    m.segment_type,
                    m.segment_number,
                    hex(m.code_selector.into()),
                    c.text(m.path)?,
                    c.text(m.name)?,
                    c.text(m.segment_name)?,
                    m.reserved,
                    m.reserved2,
                    m.reserved_for_legacy,
                    m.reserved_for_legacy2,
                    m.reserved_for_legacy_flags,
                    m.reserved1
                )?;
            }
            v
        }
    };
    Ok(modules)
}

fn pid_text(c: &Ctx<'_>, p: &Pid<StringId>) -> R<String> {
    Ok(format!(
        "id={} flags={} event_when={} path={} name={} reserved={} reserved_for_legacy={} reserved1={}",
        p.id,
        hex(p.flags.bits().into()),
        hex(p.event_when),
        c.text(p.path)?,
        c.text(p.name)?,
        p.reserved,
        p.reserved_for_legacy,
        p.reserved1
    ))
}

fn tid_text(c: &Ctx<'_>, t: &Tid<StringId>) -> R<String> {
    Ok(format!(
        "id={} associated_pid={} flags={} event_when={} name={} reserved_for_legacy={} reserved={}",
        t.id,
        t.associated_pid,
        hex(t.flags.bits().into()),
        hex(t.event_when),
        c.text(t.name)?,
        t.reserved_for_legacy,
        t.reserved
    ))
}

fn legacy_text(rec: &[u8], pc_at: usize, tsc_at: Option<usize>) -> String {
    let pc = SampleRecordPc::from_slice(&rec[pc_at..]).unwrap_or_default();
    let head = if pc.ia64_pc() {
        format!("iip={} ipsr={}", hex(pc.iip()), hex(pc.ipsr()))
    } else {
        let csd = pc.csd();
        format!(
            "eip={} eflags={} csd={}:{}",
            hex(pc.eip().into()),
            hex(pc.eflags().into()),
            hex(csd.low_word.into()),
            hex(csd.high_word.into())
        )
    };
    let tsc = match tsc_at {
        Some(t) => format!(" tsc={}", hex(u64::from_le_bytes(rec[t..t + 8].try_into().unwrap_or_default()))),
        None => String::new(),
    };
    format!(
        "{head} cs={} cpu={} code_mode={} tid={} pid_rec_index={} mr_index={} event_index={} tid_is_raw={} ia64_pc={} pid_rec_index_raw={} mr_index_none={}{tsc}",
        hex(pc.cs.into()),
        pc.cpu_num(),
        pc.code_mode(),
        pc.tid,
        pc.pid_rec_index,
        pc.mr_index(),
        pc.event_index(),
        u8::from(pc.tid_is_raw()),
        u8::from(pc.ia64_pc()),
        u8::from(pc.pid_rec_index_raw()),
        u8::from(pc.mr_index_none())
    )
}

/// A field of a non-legacy record: 1/2/4/8-byte little-endian integers
/// (hex for ST_IP, decimal otherwise), other sizes as hex bytes.
fn field_value(desc_type: u16, bytes: &[u8]) -> String {
    match bytes.len() {
        1 | 2 | 4 | 8 => {
            let mut b = [0u8; 8];
            b[..bytes.len()].copy_from_slice(bytes);
            let v = u64::from_le_bytes(b);
            if desc_type == desc_type::IP {
                hex(v)
            } else {
                v.to_string()
            }
        }
        _ => format!("0x{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

pub(crate) fn type_name(t: u16) -> String {
    desc_type::name(t).map_or_else(|| format!("{t:#06x}"), str::to_owned)
}

fn print_stream_text(c: &Ctx<'_>, n: u32, modules: &[Module<StringId>], opts: Options, out: &mut dyn Write) -> R {
    let file = c.file;
    let s = file.stream(n)?;
    writeln!(out, "== stream {n}")?;
    match s.info()? {
        None => writeln!(out, "info: (absent)")?,
        Some(i) => writeln!(
            out,
            "info: stream_type={} sampling_duration_ms={} sampling_interval_us={} start_time={} end_time={} command_line={} cpu_mask={} comment={}",
            i.stream_type,
            i.sampling_duration_ms,
            i.sampling_interval_us,
            hex(i.start_time.ticks()),
            hex(i.end_time.ticks()),
            c.text(i.command_line)?,
            c.text(i.cpu_mask)?,
            c.text(i.comment)?
        )?,
    }
    match s.events()? {
        None => writeln!(out, "events: (absent)")?,
        Some(events) => {
            writeln!(out, "events: {}", events.len())?;
            for (i, e) in events.iter().enumerate() {
                writeln!(
                    out,
                    "event {i}: id={} flags={} sav={} name={} arch_name={} details={}",
                    e.id,
                    hex(e.flags.bits().into()),
                    e.sav,
                    c.text(e.name)?,
                    c.text(e.arch_name)?,
                    e.details.len()
                )?;
                for (j, d) in e.details.iter().enumerate() {
                    writeln!(
                        out,
                        "  detail {j}: access_size_bits={} method={} access={} address={} value={} legacy_command={} reserved1={} reserved2={} reserved3={}",
                        d.access_size_bits,
                        d.method,
                        d.access,
                        hex(d.address),
                        hex(d.value),
                        d.legacy_command,
                        d.reserved1,
                        d.reserved2,
                        d.reserved3
                    )?;
                }
            }
        }
    }
    let descs = s.descriptor()?.unwrap_or_default();
    let layout = s.layout()?;
    match &layout {
        None => writeln!(out, "descriptor: (absent)")?,
        Some(l) => {
            writeln!(out, "descriptor: entries={} record_size={}", descs.len(), l.record_size())?;
            for (i, d) in descs.iter().enumerate() {
                writeln!(
                    out,
                    "  entry {i}: offset={} data_size={} type={} subtype={} name={} access_offset={} access_type={} access_method={} sample_flag={} reserved0={} reserved1={}",
                    d.offset,
                    d.data_size,
                    type_name(d.desc_type),
                    d.subtype,
                    c.text(d.name)?,
                    hex(d.access_offset),
                    d.access_type,
                    d.access_method,
                    d.sample_flag,
                    d.reserved0,
                    d.reserved1
                )?;
            }
        }
    }
    match s.user_defined()? {
        None => writeln!(out, "user-defined: (absent)")?,
        Some(b) => writeln!(out, "user-defined: {} bytes: {}", b.len(), hex_preview(b))?,
    }
    let Some(data) = s.data()? else {
        writeln!(out, "records: (absent)")?;
        return Ok(());
    };
    writeln!(out, "records: {}", data.len())?;
    let bound = bind_for(file, n)?;
    let view = bound.as_ref().map(Bound::view);
    let show = match opts.records {
        Records::All => data.len(),
        Records::First(k) => k.min(data.len()),
    };
    let layout = layout.as_ref();
    let pc_at = layout.and_then(|l| l.legacy_pc_offset()).map(|x| x as usize);
    let tsc_at = layout.and_then(|l| l.tsc_offset()).map(|x| x as usize);
    for i in 0..show {
        let rec = data.record(i).unwrap_or_default();
        let mut line = match (pc_at, layout) {
            (Some(pc), _) => legacy_text(rec, pc, tsc_at),
            (None, Some(l)) => l
                .fields()
                .iter()
                .map(|f| {
                    let name = descs
                        .get(f.entry)
                        .and_then(|d| file.string_opt(d.name).ok().flatten())
                        .map_or_else(|| type_name(f.desc_type), |n| tbrw::text::escape(n).into_owned());
                    format!(
                        "{name}={}",
                        field_value(f.desc_type, &rec[f.offset as usize..(f.offset + f.size) as usize])
                    )
                })
                .collect::<Vec<_>>()
                .join(" "),
            (None, None) => hex_preview(rec),
        };
        if let Some(v) = &view {
            line.push_str(&bind_text(c, v, modules, i)?);
        }
        writeln!(out, "  record {i}: {line}")?;
    }
    if let Some(v) = &view {
        writeln!(out, "samples by module:")?;
        for (module, count) in module_counts(v) {
            match module {
                Some(m) => {
                    let md = &modules[m as usize];
                    writeln!(out, "  {count} module {m} {} pid={}", c.text(md.name)?, md.associated_pid)?
                }
                None => writeln!(out, "  {count} unknown module")?,
            }
        }
    }
    Ok(())
}

fn bind_text(c: &Ctx<'_>, v: &BindView<'_>, modules: &[Module<StringId>], i: u64) -> R<String> {
    let Some(d) = v.data_bind(i) else { return Ok(String::new()) };
    let module = if d.module_index == UNKNOWN_MODULE {
        "module unknown".to_owned()
    } else {
        format!("module {} {}", d.module_index, c.text(modules[d.module_index as usize].name)?)
    };
    let p = v.process(d.pid_index).unwrap_or_default();
    let t = v.thread(d.tid_index).unwrap_or_default();
    Ok(format!(
        " -> {module} process {} pid={} {} thread {} tid={}",
        d.pid_index,
        p.id,
        c.text(p.name)?,
        d.tid_index,
        t.id
    ))
}

/// Samples per module, most first (ties: lower module index first; unknown last among equals).
pub(crate) fn module_counts(v: &BindView<'_>) -> Vec<(Option<u64>, u64)> {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut binds = Vec::new();
    let mut at = 0;
    while at < v.len() {
        binds.clear();
        v.data_binds(at, 1 << 16, &mut binds);
        for b in &binds {
            *counts.entry(b.module_index).or_default() += 1;
        }
        at += binds.len().max(1) as u64;
    }
    let mut list: Vec<(u64, u64)> = counts.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    list.into_iter().map(|(m, n)| ((m != UNKNOWN_MODULE).then_some(m), n)).collect()
}
