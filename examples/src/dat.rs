//! `tbrw_reader` and `tbrw_writer`: a TB5 file to this project's `.dat`
//! dump and back (guide 2.2, 2.3, 2.5). The format is in docs/DAT.md.
//!
//! `tbrw_reader in.tb5 out.dat` writes `out.dat` (every section but the
//! data) and, beside it, `<in.tb5 file name>.dat` with the data sections of
//! every stream, which `out.dat` names. `tbrw_writer out.dat new.tb5` reads
//! both and writes a new TB5 file through the writing API, section by
//! section. Bind sections are not carried: bind the new file instead.
//!
//! One file on purpose: the dump's writer and its reader are the two directions
//! of one text format, each section's writing beside its parsing, so the two
//! cannot drift apart.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tbrw::work_file::WorkFile;
use tbrw::*;

/// The magic at the start of a `.dat` file.
pub const MAGIC: &[u8; 8] = b"TBRWDAT1";

/// Record tags.
pub mod tag {
    #![allow(missing_docs)]
    pub const HARDWARE: u32 = 1;
    pub const SOFTWARE: u32 = 2;
    pub const PROCESS_THREAD: u32 = 3;
    pub const MODULES: u32 = 4;
    pub const USER_GLOBAL: u32 = 5;
    pub const VERSION: u32 = 6;
    pub const STREAM: u32 = 16;
    pub const STREAM_INFO: u32 = 17;
    pub const EVENTS: u32 = 18;
    pub const DESCRIPTOR: u32 = 19;
    pub const DATA: u32 = 20;
    pub const USER_STREAM: u32 = 21;
    pub const STREAM_END: u32 = 31;
    pub const END: u32 = 255;
}

/// An error of the dat tools.
#[derive(Debug)]
pub enum DatError {
    /// From the TB5 side.
    Tb5(Error),
    /// An I/O error on a file.
    Io(PathBuf, std::io::Error),
    /// A malformed `.dat` file: which file, which record, which byte.
    Malformed {
        /// The file.
        file: PathBuf,
        /// The record number (0-based) and its tag, when known.
        record: Option<(u64, u32)>,
        /// Byte offset.
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

impl std::fmt::Display for DatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatError::Tb5(e) => e.fmt(f),
            DatError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            DatError::Malformed { file, record, offset, what } => {
                write!(f, "{}: ", file.display())?;
                if let Some((n, t)) = record {
                    write!(f, "record {n} (tag {t}), ")?;
                }
                write!(f, "byte {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for DatError {}

impl From<Error> for DatError {
    fn from(e: Error) -> Self {
        DatError::Tb5(e)
    }
}

type R<T = ()> = std::result::Result<T, DatError>;

/// The name of the data file for a TB5 input: its file name plus `.dat`.
pub fn data_file_name(tb5: &Path) -> String {
    format!("{}.dat", tb5.file_name().map_or_else(|| "tb5".into(), |n| n.to_string_lossy().into_owned()))
}

// ---------------------------------------------------------------- encoding

#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// u32 length (0xFFFFFFFF: no string) and UTF-8 bytes.
    fn str(&mut self, file: &Tb5File, id: StringId) -> R {
        match file.string_opt(id)? {
            None => self.u32(u32::MAX),
            Some(s) => {
                self.u32(s.len() as u32);
                self.0.extend_from_slice(s.as_bytes());
            }
        }
        Ok(())
    }
}

fn record(out: &mut Vec<u8>, tag: u32, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&stream.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
}

const GLOBAL: u32 = u32::MAX;

/// Where `tbrw_reader tb5 dat` puts the data file: beside `dat`, named
/// after `tb5`.
pub fn data_path(tb5: &Path, dat: &Path) -> PathBuf {
    beside(dat, &data_file_name(tb5))
}

/// `tbrw_reader`: dumps `tb5` into `dat` and the data file beside it.
/// Returns the path of the data file.
pub fn tb5_to_dat(tb5: &Path, dat: &Path) -> R<PathBuf> {
    let file = Tb5File::open(tb5)?;
    file.verify()?;
    let data_name = data_file_name(tb5);
    let data_path = beside(dat, &data_name);
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(data_name.len() as u32).to_le_bytes());
    out.extend_from_slice(data_name.as_bytes());

    if let Some(sys) = file.hardware()? {
        let mut e = Enc::default();
        e.u32(sys.nodes.len() as u32);
        for n in &sys.nodes {
            for v in [n.type_from_shell, n.id, n.num_available, n.num_used, n.reserved] {
                e.u32(v);
            }
            e.u64(n.physical_memory_mb);
            e.u32(n.cpus.len() as u32);
            for c in &n.cpus {
                for v in [
                    c.number,
                    c.native_arch_type,
                    c.intel_processor_number,
                    c.speed_mhz,
                    c.fsb_mhz,
                    c.cache_l2_kb,
                    c.cache_l3_kb,
                ] {
                    e.u32(v);
                }
                e.i64(c.tsc_offset);
                for v in [c.package_num, c.core_num, c.hardware_thread_num, c.threads_per_core] {
                    e.u16(v);
                }
                e.u32(c.archs.len() as u32);
                for a in &c.archs {
                    e.u16(a.arch_type);
                    e.u16(a.cpuids.len() as u16);
                    match &a.cpuids {
                        Cpuids::Ia32(v) => {
                            e.u8(0);
                            for x in v {
                                for w in [x.eax_input, x.eax, x.ebx, x.ecx, x.edx, x.reserved] {
                                    e.u32(w);
                                }
                            }
                        }
                        Cpuids::Ia64(v) => {
                            e.u8(1);
                            for x in v {
                                for w in [x.select, x.value, x.reserved] {
                                    e.u64(w);
                                }
                            }
                        }
                    }
                }
            }
        }
        record(&mut out, tag::HARDWARE, GLOBAL, &e.0);
    }
    if let Some(sw) = file.software()? {
        let mut e = Enc::default();
        e.u32(
            u32::from(sw.host.is_some()) | u32::from(sw.os.is_some()) << 1 | u32::from(sw.application.is_some()) << 2,
        );
        if let Some(h) = &sw.host {
            e.u32(h.reserved);
            e.str(&file, h.ip_address)?;
            e.str(&file, h.name)?;
        }
        if let Some(o) = &sw.os {
            for v in [o.platform, o.major, o.minor, o.build, o.extra] {
                e.u32(v);
            }
            e.str(&file, o.name)?;
            e.str(&file, o.name_extra)?;
        }
        if let Some(a) = &sw.application {
            for v in [a.reserved, a.page_size, a.alloc_granularity] {
                e.u32(v);
            }
            e.u64(a.min_app_addr);
            e.u64(a.max_app_addr);
        }
        record(&mut out, tag::SOFTWARE, GLOBAL, &e.0);
    }
    if let Some(v) = file.version_info()? {
        let mut e = Enc::default();
        for x in [v.sampling_driver_version, v.bind_version, v.sample_file_version] {
            e.u32(x);
        }
        record(&mut out, tag::VERSION, GLOBAL, &e.0);
    }
    if let Some(pt) = file.processes()? {
        let mut e = Enc::default();
        e.u64(pt.pid_count());
        for p in pt.pids() {
            for v in [p.id, p.flags.bits(), p.reserved] {
                e.u32(v);
            }
            e.u64(p.event_when);
            e.u32(p.reserved_for_legacy);
            e.u32(p.reserved1);
            e.str(&file, p.path)?;
            e.str(&file, p.name)?;
        }
        e.u64(pt.tid_count());
        for t in pt.tids() {
            for v in [t.associated_pid, t.id, t.flags.bits()] {
                e.u32(v);
            }
            e.u64(t.event_when);
            e.u32(t.reserved_for_legacy);
            e.u32(t.reserved);
            e.str(&file, t.name)?;
        }
        record(&mut out, tag::PROCESS_THREAD, GLOBAL, &e.0);
    }
    if let Some(mt) = file.modules()? {
        let mut e = Enc::default();
        e.u64(mt.len());
        for m in mt.iter() {
            let m = m?;
            for v in [m.reserved, m.associated_pid, m.flags.bits()] {
                e.u32(v);
            }
            e.u64(m.event_when);
            e.u32(m.segment_number);
            e.u8(m.segment_type);
            e.u32(m.code_selector);
            e.u32(m.reserved2);
            e.u64(m.length);
            e.u64(m.load_address);
            for v in [m.reserved_for_legacy, m.reserved_for_legacy2, m.reserved_for_legacy_flags, m.reserved1] {
                e.u32(v);
            }
            e.u64(m.unload_tsc);
            e.str(&file, m.path)?;
            e.str(&file, m.name)?;
            e.str(&file, m.segment_name)?;
        }
        record(&mut out, tag::MODULES, GLOBAL, &e.0);
    }
    if let Some(b) = file.user_defined_global()? {
        record(&mut out, tag::USER_GLOBAL, GLOBAL, b);
    }

    // Each file is built in a work file and put in place whole: a link at
    // either name is replaced itself, never written through (docs/FORMAT.md,
    // "Output paths").
    let data_work = WorkFile::create(&data_path).map_err(|e| DatError::Io(data_path.clone(), e))?;
    let mut data_out = BufWriter::with_capacity(1 << 20, data_work.file());
    let mut data_at = 0u64;
    for n in 0..file.stream_count() {
        let s = file.stream(n)?;
        record(&mut out, tag::STREAM, n, &[]);
        if let Some(i) = s.info()? {
            let mut e = Enc::default();
            for v in [i.sampling_duration_ms, i.stream_type, i.sampling_interval_us] {
                e.u32(v);
            }
            e.u64(i.start_time.ticks());
            e.u64(i.end_time.ticks());
            e.str(&file, i.command_line)?;
            e.str(&file, i.cpu_mask)?;
            e.str(&file, i.comment)?;
            record(&mut out, tag::STREAM_INFO, n, &e.0);
        }
        if let Some(events) = s.events()? {
            let mut e = Enc::default();
            e.u32(events.len() as u32);
            for ev in &events {
                e.u32(ev.id);
                e.u32(ev.flags.bits());
                e.u64(ev.sav);
                e.str(&file, ev.name)?;
                e.str(&file, ev.arch_name)?;
                e.u32(ev.details.len() as u32);
                for d in &ev.details {
                    e.u16(d.access_size_bits);
                    e.u8(d.method);
                    e.u8(d.access);
                    e.u64(d.address);
                    e.u64(d.value);
                    e.u8(d.legacy_command);
                    e.u8(d.reserved1);
                    e.u16(d.reserved2);
                    e.u32(d.reserved3);
                }
            }
            record(&mut out, tag::EVENTS, n, &e.0);
        }
        if let Some(descs) = s.descriptor()? {
            let mut e = Enc::default();
            e.u32(descs.len() as u32);
            for d in &descs {
                e.u32(d.offset);
                e.u16(d.desc_type);
                e.u16(d.subtype);
                e.u32(d.data_size);
                e.u64(d.access_offset);
                for v in [d.access_type, d.access_method, d.sample_flag, d.reserved0] {
                    e.u8(v);
                }
                e.u32(d.reserved1);
                e.str(&file, d.name)?;
            }
            record(&mut out, tag::DESCRIPTOR, n, &e.0);
        }
        if let Some(b) = s.user_defined()? {
            record(&mut out, tag::USER_STREAM, n, b);
        }
        if let Some(d) = s.data()? {
            let mut e = Enc::default();
            e.u32(d.record_size() as u32);
            e.u64(d.len());
            e.u64(data_at);
            record(&mut out, tag::DATA, n, &e.0);
            data_out.write_all(d.as_bytes()).map_err(|e| DatError::Io(data_path.clone(), e))?;
            data_at += d.as_bytes().len() as u64;
        }
        record(&mut out, tag::STREAM_END, n, &[]);
    }
    record(&mut out, tag::END, GLOBAL, &[]);
    data_out.flush().map_err(|e| DatError::Io(data_path.clone(), e))?;
    drop(data_out);
    data_work.put_in_place().map_err(|e| DatError::Io(data_path.clone(), e))?;
    let dat_work = WorkFile::create(dat).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    dat_work.file().write_all(&out).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    dat_work.put_in_place().map_err(|e| DatError::Io(dat.to_owned(), e))?;
    Ok(data_path)
}

// ---------------------------------------------------------------- decoding

struct Dec<'a> {
    b: &'a [u8],
    at: usize,
    /// Absolute offset of `b[0]` in the file.
    base: u64,
    file: &'a Path,
    record: Option<(u64, u32)>,
}

impl<'a> Dec<'a> {
    fn err(&self, what: impl Into<String>) -> DatError {
        DatError::Malformed {
            file: self.file.to_owned(),
            record: self.record,
            offset: self.base + self.at as u64,
            what: what.into(),
        }
    }
    fn take(&mut self, n: usize, what: &str) -> R<&'a [u8]> {
        if self.b.len() - self.at < n {
            return Err(self.err(format!("{what}: needs {n} bytes, {} left", self.b.len() - self.at)));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, w: &str) -> R<u8> {
        Ok(self.take(1, w)?[0])
    }
    fn u16(&mut self, w: &str) -> R<u16> {
        Ok(u16::from_le_bytes(self.take(2, w)?.try_into().unwrap_or_default()))
    }
    fn u32(&mut self, w: &str) -> R<u32> {
        Ok(u32::from_le_bytes(self.take(4, w)?.try_into().unwrap_or_default()))
    }
    fn u64(&mut self, w: &str) -> R<u64> {
        Ok(u64::from_le_bytes(self.take(8, w)?.try_into().unwrap_or_default()))
    }
    fn i64(&mut self, w: &str) -> R<i64> {
        Ok(self.u64(w)? as i64)
    }
    fn str(&mut self, w: &str) -> R<Text> {
        let n = self.u32(w)?;
        if n == u32::MAX {
            return Ok(None);
        }
        let b = self.take(n as usize, w)?;
        std::str::from_utf8(b).map(|s| Some(s.to_owned())).map_err(|_| self.err(format!("{w}: not UTF-8")))
    }
    /// A count of items of at least `min` bytes each, checked against what is left.
    fn count(&mut self, n: u64, min: usize, w: &str) -> R<usize> {
        match n.checked_mul(min as u64) {
            Some(x) if x <= (self.b.len() - self.at) as u64 => Ok(n as usize),
            _ => Err(self.err(format!("{n} {w} cannot fit in the {} bytes left", self.b.len() - self.at))),
        }
    }
    fn done(&self) -> R {
        if self.at != self.b.len() {
            return Err(self.err(format!("{} unexpected bytes at the end of the record", self.b.len() - self.at)));
        }
        Ok(())
    }
}

/// Reads a dump's header (magic, version, data file name) and returns the
/// data file's name.
fn read_header(top: &mut Dec<'_>) -> R<String> {
    if top.take(8, "magic")? != MAGIC {
        return Err(DatError::Malformed {
            file: top.file.to_owned(),
            record: None,
            offset: 0,
            what: "not a tbrw .dat file (bad magic)".into(),
        });
    }
    let version = top.u32("version")?;
    if version != 1 {
        return Err(top.err(format!("format version {version} is not supported (1 is)")));
    }
    let name_len = top.u32("data file name length")? as usize;
    let name = std::str::from_utf8(top.take(name_len, "data file name")?)
        .map_err(|_| top.err("data file name is not UTF-8"))?
        .to_owned();
    if name.contains('/') || name.is_empty() {
        return Err(top.err(format!("data file name {name:?} must be a plain file name")));
    }
    Ok(name)
}

/// The data file a dump names (beside the dump), from its header: what
/// `tbrw_writer` will read besides the dump itself.
pub fn data_file_of(dat: &Path) -> R<PathBuf> {
    let bytes = std::fs::read(dat).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    let name = read_header(&mut Dec { b: &bytes, at: 0, base: 0, file: dat, record: None })?;
    Ok(beside(dat, &name))
}

/// `name` in the folder of `path`.
fn beside(path: &Path, name: &str) -> PathBuf {
    path.parent().unwrap_or(Path::new("")).join(name)
}

/// `tbrw_writer`: reads `dat` (and the data file it names) and writes `tb5`.
pub fn dat_to_tb5(dat: &Path, tb5: &Path) -> R {
    let bytes = std::fs::read(dat).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    let mut top = Dec { b: &bytes, at: 0, base: 0, file: dat, record: None };
    let name = read_header(&mut top)?;
    let data_path = beside(dat, &name);

    let mut w = Tb5Writer::create(tb5)?;
    let mut index = 0u64;
    let mut open_stream: Option<u32> = None;
    let mut pending: Option<PendingStream> = None;
    loop {
        let at = top.at;
        let t = top.u32("record tag")?;
        let stream = top.u32("record stream")?;
        let len = top.u64("record length")?;
        let len = top.count(len, 1, "payload bytes")?;
        let payload = top.take(len, "payload")?;
        let mut d = Dec { b: payload, at: 0, base: (at + 16) as u64, file: dat, record: Some((index, t)) };
        index += 1;
        let in_stream = |d: &Dec<'_>| -> R<u32> {
            match open_stream {
                Some(n) if n == stream => Ok(n),
                _ => Err(d.err(format!("stream record for stream {stream} outside that stream"))),
            }
        };
        match t {
            tag::END => {
                if open_stream.is_some() {
                    return Err(d.err("END inside a stream"));
                }
                break;
            }
            tag::HARDWARE => {
                let sys = read_system(&mut d)?;
                w.write_hardware(&sys)?;
            }
            tag::SOFTWARE => {
                let sw = read_software(&mut d)?;
                w.write_software(&sw)?;
            }
            tag::VERSION => {
                let v = VersionInfo {
                    sampling_driver_version: d.u32("driver")?,
                    bind_version: d.u32("bind")?,
                    sample_file_version: d.u32("file")?,
                };
                d.done()?;
                w.write_version_info(&v)?;
            }
            tag::PROCESS_THREAD => {
                let mut sec = w.process_threads()?;
                let np = d.u64("process count")?;
                let np = d.count(np, 36, "processes")?;
                for _ in 0..np {
                    let p = Pid {
                        id: d.u32("pid")?,
                        flags: PidTidFlags::from_bits_retain(d.u32("flags")?),
                        reserved: d.u32("reserved")?,
                        event_when: d.u64("event_when")?,
                        reserved_for_legacy: d.u32("reserved_for_legacy")?,
                        reserved1: d.u32("reserved1")?,
                        path: d.str("path")?,
                        name: d.str("name")?,
                    };
                    sec.add_process(&p)?;
                }
                let nt = d.u64("thread count")?;
                let nt = d.count(nt, 32, "threads")?;
                for _ in 0..nt {
                    let t = Tid {
                        associated_pid: d.u32("associated pid")?,
                        id: d.u32("tid")?,
                        flags: PidTidFlags::from_bits_retain(d.u32("flags")?),
                        event_when: d.u64("event_when")?,
                        reserved_for_legacy: d.u32("reserved_for_legacy")?,
                        reserved: d.u32("reserved")?,
                        name: d.str("name")?,
                    };
                    sec.add_thread(&t)?;
                }
                d.done()?;
                sec.done()?;
            }
            tag::MODULES => {
                let mut sec = w.modules()?;
                let n = d.u64("module count")?;
                let n = d.count(n, 85, "modules")?;
                for _ in 0..n {
                    let m = Module {
                        reserved: d.u32("reserved")?,
                        associated_pid: d.u32("pid")?,
                        flags: ModuleFlags::from_bits_retain(d.u32("flags")?),
                        event_when: d.u64("event_when")?,
                        segment_number: d.u32("segment_number")?,
                        segment_type: d.u8("segment_type")?,
                        code_selector: d.u32("code_selector")?,
                        reserved2: d.u32("reserved2")?,
                        length: d.u64("length")?,
                        load_address: d.u64("load_address")?,
                        reserved_for_legacy: d.u32("reserved_for_legacy")?,
                        reserved_for_legacy2: d.u32("reserved_for_legacy2")?,
                        reserved_for_legacy_flags: d.u32("reserved_for_legacy_flags")?,
                        reserved1: d.u32("reserved1")?,
                        unload_tsc: d.u64("unload_tsc")?,
                        path: d.str("path")?,
                        name: d.str("name")?,
                        segment_name: d.str("segment_name")?,
                    };
                    sec.add_module(&m)?;
                }
                d.done()?;
                sec.done()?;
            }
            tag::USER_GLOBAL => w.write_user_defined_global(payload)?,
            tag::STREAM => {
                if open_stream.is_some() {
                    return Err(d.err("a stream inside a stream"));
                }
                open_stream = Some(stream);
                pending = Some(PendingStream::default());
            }
            tag::STREAM_INFO | tag::EVENTS | tag::DESCRIPTOR | tag::USER_STREAM | tag::DATA => {
                in_stream(&d)?;
                let p = pending.as_mut().expect("open stream has pending state");
                match t {
                    tag::STREAM_INFO => {
                        p.info = Some(StreamInfo {
                            sampling_duration_ms: d.u32("duration")?,
                            stream_type: d.u32("type")?,
                            sampling_interval_us: d.u32("interval")?,
                            start_time: FileTime::from_ticks(d.u64("start")?),
                            end_time: FileTime::from_ticks(d.u64("end")?),
                            command_line: d.str("command line")?,
                            cpu_mask: d.str("cpu mask")?,
                            comment: d.str("comment")?,
                        })
                    }
                    tag::EVENTS => p.events = Some(read_events(&mut d)?),
                    tag::DESCRIPTOR => p.descs = Some(read_descs(&mut d)?),
                    tag::USER_STREAM => p.user = Some(payload.to_vec()),
                    _ => {
                        p.data = Some((d.u32("record size")?, d.u64("record count")?, d.u64("data offset")?));
                    }
                }
                if t != tag::USER_STREAM {
                    d.done()?;
                }
            }
            tag::STREAM_END => {
                let n = in_stream(&d)?;
                let p = pending.take().expect("open stream has pending state");
                p.write(&mut w, n, &data_path, &d)?;
                open_stream = None;
            }
            other => return Err(d.err(format!("unknown record tag {other}"))),
        }
    }
    w.close()?;
    Ok(())
}

#[derive(Default)]
struct PendingStream {
    info: Option<StreamInfo>,
    events: Option<Vec<Event>>,
    descs: Option<Vec<DescEntry>>,
    user: Option<Vec<u8>>,
    data: Option<(u32, u64, u64)>,
}

impl PendingStream {
    /// Writes the stream the way a collector would: info, descriptor,
    /// events, user-defined bytes, then the records streamed from the data file.
    fn write(self, w: &mut Tb5Writer, n: u32, data_path: &Path, d: &Dec<'_>) -> R {
        let info = self.info.ok_or_else(|| d.err(format!("stream {n} has no STREAM_INFO record")))?;
        let descs = self.descs.ok_or_else(|| d.err(format!("stream {n} has no DESCRIPTOR record")))?;
        let mut s = w.stream(n)?.info(&info)?.data_descriptor(&descs)?;
        if let Some(ev) = &self.events {
            s.events(ev)?;
        }
        if let Some(u) = &self.user {
            s.user_defined(u)?;
        }
        if let Some((rs, count, offset)) = self.data {
            let mut data = s.data()?;
            let want = data.layout().map(|l| l.record_size());
            if want != Some(rs) {
                return Err(d.err(format!("stream {n}: record size {rs} but the descriptor defines {want:?}")));
            }
            let len = count.checked_mul(u64::from(rs)).ok_or_else(|| d.err("data length overflows"))?;
            let mut f = File::open(data_path).map_err(|e| DatError::Io(data_path.to_owned(), e))?;
            let size = f.metadata().map_err(|e| DatError::Io(data_path.to_owned(), e))?.len();
            if offset.checked_add(len).is_none_or(|end| end > size) {
                return Err(DatError::Malformed {
                    file: data_path.to_owned(),
                    record: None,
                    offset,
                    what: format!(
                        "stream {n}: {len} bytes of records at byte {offset} run past the end ({size} bytes)"
                    ),
                });
            }
            f.seek(SeekFrom::Start(offset)).map_err(|e| DatError::Io(data_path.to_owned(), e))?;
            let got = data.add_from_reader(&mut std::io::BufReader::with_capacity(1 << 20, f.take(len)))?;
            if got != len {
                return Err(DatError::Malformed {
                    file: data_path.to_owned(),
                    record: None,
                    offset: offset + got,
                    what: "data file ended early".into(),
                });
            }
            data.done()?;
        }
        s.finish()?;
        Ok(())
    }
}

fn read_system(d: &mut Dec<'_>) -> R<System> {
    let nn = d.u32("node count")?;
    let nn = d.count(nn.into(), 32, "nodes")?;
    let mut nodes = Vec::with_capacity(nn);
    for _ in 0..nn {
        let (type_from_shell, id, num_available, num_used, reserved) =
            (d.u32("type")?, d.u32("id")?, d.u32("available")?, d.u32("used")?, d.u32("reserved")?);
        let physical_memory_mb = d.u64("memory")?;
        let nc = d.u32("cpu count")?;
        let nc = d.count(nc.into(), 48, "cpus")?;
        let mut cpus = Vec::with_capacity(nc);
        for _ in 0..nc {
            let mut v = [0u32; 7];
            for x in &mut v {
                *x = d.u32("cpu field")?;
            }
            let tsc_offset = d.i64("tsc offset")?;
            let mut h = [0u16; 4];
            for x in &mut h {
                *x = d.u16("cpu field")?;
            }
            let na = d.u32("arch count")?;
            let na = d.count(na.into(), 5, "architectures")?;
            let mut archs = Vec::with_capacity(na);
            for _ in 0..na {
                let arch_type = d.u16("arch type")?;
                let k = d.u16("cpuid count")?;
                let form = d.u8("cpuid form")?;
                let k = d.count(k.into(), 24, "cpuids")?;
                let cpuids = match form {
                    0 => Cpuids::Ia32(
                        (0..k)
                            .map(|_| {
                                Ok(CpuidIa32 {
                                    eax_input: d.u32("cpuid")?,
                                    eax: d.u32("cpuid")?,
                                    ebx: d.u32("cpuid")?,
                                    ecx: d.u32("cpuid")?,
                                    edx: d.u32("cpuid")?,
                                    reserved: d.u32("cpuid")?,
                                })
                            })
                            .collect::<R<_>>()?,
                    ),
                    1 => Cpuids::Ia64(
                        (0..k)
                            .map(|_| {
                                Ok(CpuidIa64 {
                                    select: d.u64("cpuid")?,
                                    value: d.u64("cpuid")?,
                                    reserved: d.u64("cpuid")?,
                                })
                            })
                            .collect::<R<_>>()?,
                    ),
                    f => return Err(d.err(format!("unknown cpuid form {f}"))),
                };
                archs.push(CpuArch { arch_type, cpuids });
            }
            cpus.push(Cpu {
                number: v[0],
                native_arch_type: v[1],
                intel_processor_number: v[2],
                speed_mhz: v[3],
                fsb_mhz: v[4],
                cache_l2_kb: v[5],
                cache_l3_kb: v[6],
                tsc_offset,
                package_num: h[0],
                core_num: h[1],
                hardware_thread_num: h[2],
                threads_per_core: h[3],
                // The .dat format (docs/DAT.md) does not carry these.
                core_type: 0,
                dummy: 0,
                archs,
            });
        }
        nodes.push(Node { type_from_shell, id, num_available, num_used, reserved, physical_memory_mb, cpus });
    }
    d.done()?;
    Ok(System { nodes })
}

fn read_software(d: &mut Dec<'_>) -> R<Software> {
    let present = d.u32("present")?;
    if present & !7 != 0 {
        return Err(d.err(format!("unknown software parts {present:#x}")));
    }
    let host = if present & 1 != 0 {
        Some(Host { reserved: d.u32("reserved")?, ip_address: d.str("ip")?, name: d.str("host name")? })
    } else {
        None
    };
    let os = if present & 2 != 0 {
        Some(Os {
            platform: d.u32("platform")?,
            major: d.u32("major")?,
            minor: d.u32("minor")?,
            build: d.u32("build")?,
            extra: d.u32("extra")?,
            name: d.str("os name")?,
            name_extra: d.str("os name extra")?,
        })
    } else {
        None
    };
    let application = if present & 4 != 0 {
        Some(Application {
            reserved: d.u32("reserved")?,
            page_size: d.u32("page size")?,
            alloc_granularity: d.u32("granularity")?,
            min_app_addr: d.u64("min")?,
            max_app_addr: d.u64("max")?,
        })
    } else {
        None
    };
    d.done()?;
    Ok(Software { host, os, application })
}

fn read_events(d: &mut Dec<'_>) -> R<Vec<Event>> {
    let n = d.u32("event count")?;
    let n = d.count(n.into(), 28, "events")?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let id = d.u32("id")?;
        let flags = EventFlags::from_bits_retain(d.u32("flags")?);
        let sav = d.u64("sav")?;
        let name = d.str("name")?;
        let arch_name = d.str("arch name")?;
        let k = d.u32("detail count")?;
        let k = d.count(k.into(), 28, "details")?;
        let details = (0..k)
            .map(|_| {
                Ok(EventDetail {
                    access_size_bits: d.u16("access size")?,
                    method: d.u8("method")?,
                    access: d.u8("access")?,
                    address: d.u64("address")?,
                    value: d.u64("value")?,
                    legacy_command: d.u8("legacy command")?,
                    reserved1: d.u8("reserved1")?,
                    reserved2: d.u16("reserved2")?,
                    reserved3: d.u32("reserved3")?,
                })
            })
            .collect::<R<_>>()?;
        v.push(Event { id, flags, sav, name, arch_name, details });
    }
    Ok(v)
}

fn read_descs(d: &mut Dec<'_>) -> R<Vec<DescEntry>> {
    let n = d.u32("entry count")?;
    let n = d.count(n.into(), 32, "descriptor entries")?;
    (0..n)
        .map(|_| {
            Ok(DescEntry {
                offset: d.u32("offset")?,
                desc_type: d.u16("type")?,
                subtype: d.u16("subtype")?,
                data_size: d.u32("size")?,
                access_offset: d.u64("access offset")?,
                access_type: d.u8("access type")?,
                access_method: d.u8("access method")?,
                sample_flag: d.u8("sample flag")?,
                reserved0: d.u8("reserved0")?,
                reserved1: d.u32("reserved1")?,
                name: d.str("name")?,
            })
        })
        .collect()
}
