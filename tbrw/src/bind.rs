//! Binding the streams of a TB5 file (guide 3.3, 5.10, 6.1): samples are
//! read through the stream's data descriptor, modules from the module
//! section, and `tbrw-bind` does the work (rules: docs/BIND.md).
//!
//! A bind is stored as five sections of the stream ([`BindSection`]) by an
//! append, or kept in memory when the file is open read-only. [`BindView`]
//! reads either. The engine's `dobind`, `is_bound`, `unbind` and `bound`
//! are what the C API's bind functions call.

use std::collections::HashSet;
use std::path::Path;

use tbrw_bind::{Binder, ModuleKind, ModuleMap, ModuleSpec, Sample};
pub use tbrw_bind::{DataBind, ModuleBind, TidBind, UNKNOWN_MODULE};

use crate::codec;
use crate::descriptor::{desc_subtype, desc_type, Field};
use crate::engine::{Engine, Part, Pending};
use crate::error::{Error, Location, Result};
use crate::module::{Module, ModuleFlags};
use crate::process::{Pid, PidTidFlags, Tid};
use crate::raw::{self, kind, DataBindRaw, PidRaw, ProcessThreadRaw, Raw, TidRaw};
use crate::reader::{StreamReader, Tb5File};
use crate::section::{BindSection, GlobalSection, SectionRef, StreamSection};
use crate::sink::SectionSink;
use crate::strings::StringId;
use crate::writer::Tb5Writer;

/// Size of one `DATA_BIND_STRUCT` (`TBRW_get_size_of_data_bind_entry`).
pub const DATA_BIND_SIZE: u32 = std::mem::size_of::<DataBind>() as u32;
/// Size of one `MODULE_BIND_STRUCT` (`TBRW_get_size_of_module_bind_entry`).
pub const MODULE_BIND_SIZE: u32 = std::mem::size_of::<ModuleBind>() as u32;
/// Size of one `TID_BIND_STRUCT` (`TBRW_get_size_of_tid_bind_entry`).
pub const TID_BIND_SIZE: u32 = std::mem::size_of::<TidBind>() as u32;

/// Records decoded per step while binding.
const CHUNK_RECORDS: usize = 1 << 16;

/// How to get (ip, pid, tid, tsc) out of a record of a stream.
#[derive(Debug)]
enum Decoder {
    /// `TBRW_SampleRecordPC` at `pc`, TSC at `tsc`.
    Legacy { pc: usize, tsc: Option<usize>, pid_of_index: Vec<u32> },
    /// `ST_IP`, `ST_PID`, optional `ST_TID` and `ST_TIME_STAMP` fields: (offset, size).
    Fields { ip: (usize, usize), pid: (usize, usize), tid: Option<(usize, usize)>, tsc: Option<(usize, usize)> },
}

fn read_le(rec: &[u8], (at, size): (usize, usize)) -> u64 {
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&rec[at..at + size]);
    u64::from_le_bytes(b)
}

impl Decoder {
    fn for_stream(file: &Tb5File, s: &StreamReader<'_>) -> Result<Decoder> {
        let n = s.index();
        let layout = s
            .layout()?
            .ok_or(Error::SectionNotExist { section: SectionRef::Stream(n, StreamSection::DataDescription) })?;
        if let Some(pc) = layout.legacy_pc_offset() {
            let pid_of_index = match file.processes()? {
                Some(pt) => pt.pids().map(|p| p.id).collect(),
                None => Vec::new(),
            };
            return Ok(Decoder::Legacy { pc: pc as usize, tsc: layout.tsc_offset().map(|t| t as usize), pid_of_index });
        }
        let field = |t: u16, what: &str| -> Result<Option<(usize, usize)>> {
            let candidates: Vec<&Field> = layout.fields().iter().filter(|f| f.desc_type == t).collect();
            let f = candidates
                .iter()
                .find(|f| t != desc_type::TIME_STAMP || f.subtype == desc_subtype::TSC)
                .or(candidates.first());
            match f {
                None => Ok(None),
                Some(f) if f.size == 4 || f.size == 8 => Ok(Some((f.offset as usize, f.size as usize))),
                Some(f) => Err(Error::InvalidStream {
                    stream: n,
                    why: format!("its {what} field is {} bytes; binding reads 4- or 8-byte fields", f.size),
                }),
            }
        };
        let ip = field(desc_type::IP, "ST_IP")?;
        let pid = field(desc_type::PID, "ST_PID")?;
        match (ip, pid) {
            (Some(ip), Some(pid)) => Ok(Decoder::Fields {
                ip,
                pid,
                tid: field(desc_type::TID, "ST_TID")?,
                tsc: field(desc_type::TIME_STAMP, "ST_TIME_STAMP")?,
            }),
            _ => Err(Error::InvalidStream {
                stream: n,
                why: format!(
                    "it cannot be bound: its data descriptor has {} (binding needs an ST_LEGACY_SAMPLE_RECORD, or ST_IP and ST_PID)",
                    match (ip, pid) {
                        (None, None) => "neither ST_IP nor ST_PID",
                        (None, _) => "no ST_IP",
                        _ => "no ST_PID",
                    }
                ),
            }),
        }
    }

    #[inline]
    fn decode(&self, rec: &[u8]) -> Sample {
        match self {
            Decoder::Legacy { pc, tsc, pid_of_index } => {
                let r = &rec[*pc..*pc + 32];
                let word0 = read_le(r, (0, 8));
                let pid_rec = read_le(r, (24, 4)) as u32;
                let bits = read_le(r, (28, 4)) as u32;
                let ia64 = bits & (1 << 29) != 0;
                let raw_pid = bits & (1 << 30) != 0;
                let pid =
                    if raw_pid { pid_rec } else { pid_of_index.get(pid_rec as usize).copied().unwrap_or(pid_rec) };
                Sample {
                    ip: if ia64 { word0 } else { word0 & 0xFFFF_FFFF },
                    pid,
                    tid: read_le(r, (20, 4)) as u32,
                    tsc: tsc.map(|t| read_le(rec, (t, 8))),
                }
            }
            Decoder::Fields { ip, pid, tid, tsc } => Sample {
                ip: read_le(rec, *ip),
                pid: read_le(rec, *pid) as u32,
                tid: tid.map_or(0, |t| read_le(rec, t) as u32),
                tsc: tsc.map(|t| read_le(rec, t)),
            },
        }
    }
}

fn module_spec(m: &Module<StringId>) -> ModuleSpec {
    ModuleSpec {
        pid: m.associated_pid,
        load_address: m.load_address,
        length: m.length,
        load_time: m.event_when,
        unload_time: m.unload_tsc,
        global: m.flags.contains(ModuleFlags::GLOBAL_LOAD),
        exe: m.flags.contains(ModuleFlags::IS_EXE),
        tsc_time: m.flags.contains(ModuleFlags::TSC_USED),
        kind: if m.flags.contains(ModuleFlags::UNLOADED) && !m.flags.contains(ModuleFlags::LOADED) {
            ModuleKind::Unload
        } else {
            ModuleKind::Load
        },
        first_in_process: m.flags.contains(ModuleFlags::FIRST_MODULE_REC_IN_PROCESS),
    }
}

/// The tables a bind generates, as TB5 records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindTables {
    /// The generated process table.
    pub processes: Vec<Pid<StringId>>,
    /// The generated thread table.
    pub threads: Vec<Tid<StringId>>,
    /// One per module.
    pub module_binds: Vec<ModuleBind>,
    /// One per thread.
    pub tid_binds: Vec<TidBind>,
}

/// Binds stream `n` of `file`, handing the per-record binds to `sink` in
/// stream order, chunk by chunk, and returns the tables.
pub(crate) fn compute(file: &Tb5File, n: u32, sink: &mut dyn FnMut(&[DataBind]) -> Result<()>) -> Result<BindTables> {
    let s = file.stream(n)?;
    let decoder = Decoder::for_stream(file, &s)?;
    let modules: Vec<Module<StringId>> = match file.modules()? {
        Some(t) => t.iter().collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let specs: Vec<ModuleSpec> = modules.iter().map(module_spec).collect();
    let map = ModuleMap::new(&specs);
    let mut binder = Binder::new(&map);
    if let Some(data) = s.data()? {
        let want = s.layout()?.map(|l| l.record_size() as usize);
        if want != Some(data.record_size()) {
            return Err(Error::malformed(
                Location {
                    file: file.path().to_owned(),
                    section: SectionRef::Stream(n, StreamSection::Data),
                    record: None,
                    offset: data.file_offset(),
                },
                format!("records are {} bytes but the data descriptor defines {:?}", data.record_size(), want),
            ));
        }
        let mut samples = Vec::with_capacity(CHUNK_RECORDS);
        let mut out = Vec::with_capacity(CHUNK_RECORDS);
        for chunk in data.as_bytes().chunks(CHUNK_RECORDS * data.record_size()) {
            samples.clear();
            samples.extend(chunk.chunks_exact(data.record_size()).map(|r| decoder.decode(r)));
            out.clear();
            binder.bind(&samples, &mut out);
            sink(&out)?;
        }
    }
    let t = binder.finish();
    let processes = t
        .processes
        .iter()
        .map(|p| {
            let exe = p.exe_module.map(|i| &modules[i as usize]);
            let tsc = exe.is_some_and(|m| m.flags.contains(ModuleFlags::TSC_USED));
            Pid {
                id: p.pid,
                flags: if p.start > 0 && tsc { PidTidFlags::WHEN_TSC } else { PidTidFlags::empty() },
                event_when: p.start,
                path: exe.map_or(StringId::NONE, |m| m.path),
                name: exe.map_or(StringId::NONE, |m| m.name),
                ..Default::default()
            }
        })
        .collect();
    let threads = t
        .threads
        .iter()
        .map(|th| Tid { associated_pid: t.processes[th.pid_index as usize].pid, id: th.tid, ..Default::default() })
        .collect();
    Ok(BindTables { processes, threads, tid_binds: t.tid_binds(), module_binds: t.module_binds })
}

/// A bind computed in memory (a read-only file, or before a commit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryBind {
    /// One per data record.
    pub data: Vec<DataBind>,
    /// The tables.
    pub tables: BindTables,
}

/// Binds a stream of a file in memory.
pub fn bind_in_memory(file: &Tb5File, stream: u32) -> Result<MemoryBind> {
    let mut data = Vec::new();
    let tables = compute(file, stream, &mut |b| {
        data.extend_from_slice(b);
        Ok(())
    })?;
    Ok(MemoryBind { data, tables })
}

/// The bind of a stream, stored in the file or computed in memory.
#[derive(Clone, Copy, Debug)]
pub enum BindView<'a> {
    /// Stored in the file: read from the mapping.
    Stored {
        /// `DATA_BIND_STRUCT`s, 24 bytes each.
        data: &'a [u8],
        /// `MODULE_BIND_STRUCT`s.
        modules: &'a [u8],
        /// Generated processes (`PidRaw`).
        processes: &'a [u8],
        /// Generated threads (`TidRaw`).
        threads: &'a [u8],
        /// `TID_BIND_STRUCT`s.
        tid_binds: &'a [u8],
    },
    /// Computed in memory.
    Memory(&'a MemoryBind),
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    b.get(i * 8..i * 8 + 8).map(|x| u64::from_le_bytes(x.try_into().unwrap_or_default()))
}

impl<'a> BindView<'a> {
    pub(crate) fn stored(file: &'a Tb5File, n: u32) -> Result<Option<BindView<'a>>> {
        let Some(data) = file.bind_bytes(n, BindSection::Data)? else { return Ok(None) };
        let get = |b| file.bind_bytes(n, b).map(Option::unwrap_or_default);
        Ok(Some(BindView::Stored {
            data,
            modules: get(BindSection::Modules)?,
            processes: get(BindSection::Processes)?,
            threads: get(BindSection::Threads)?,
            tid_binds: get(BindSection::TidBinds)?,
        }))
    }

    /// The number of data binds (= records of the stream).
    pub fn len(&self) -> u64 {
        match self {
            BindView::Stored { data, .. } => (data.len() / DataBindRaw::SIZE) as u64,
            BindView::Memory(m) => m.data.len() as u64,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bind of record `i`.
    pub fn data_bind(&self, i: u64) -> Option<DataBind> {
        let i = usize::try_from(i).ok()?;
        match self {
            BindView::Stored { data, .. } => {
                let r = DataBindRaw::decode(data.get(i.checked_mul(DataBindRaw::SIZE)?..)?)?;
                Some(DataBind { module_index: r.module_index, pid_index: r.pid_index, tid_index: r.tid_index })
            }
            BindView::Memory(m) => m.data.get(i).copied(),
        }
    }

    /// Appends the binds of records `start..start + max` (or to the end) to `out`.
    pub fn data_binds(&self, start: u64, max: usize, out: &mut Vec<DataBind>) {
        let end = self.len().min(start.saturating_add(max as u64));
        out.extend((start..end).filter_map(|i| self.data_bind(i)));
    }

    /// The records of `data` from `start` on, in chunks of at most
    /// `per_chunk`, each with the binds of its records: what
    /// `TBRW_bind_enumerate_data` hands to its callback.
    pub fn chunks<'d>(
        &self,
        data: &crate::reader::DataSection<'d>,
        start: u64,
        per_chunk: usize,
    ) -> Result<impl Iterator<Item = (&'d [u8], Vec<DataBind>)> + use<'a, 'd>> {
        if data.len() != self.len() {
            return Err(Error::bad(format!("{} binds for {} records", self.len(), data.len())));
        }
        let rs = data.record_size().max(1);
        let mut next = start;
        let view = *self;
        Ok(data.chunks_from(start, per_chunk)?.map(move |records| {
            let n = records.len() / rs;
            let mut binds = Vec::with_capacity(n);
            view.data_binds(next, n, &mut binds);
            next += n as u64;
            (records, binds)
        }))
    }

    /// The number of generated processes.
    pub fn process_count(&self) -> u64 {
        match self {
            BindView::Stored { processes, .. } => (processes.len() / PidRaw::SIZE) as u64,
            BindView::Memory(m) => m.tables.processes.len() as u64,
        }
    }

    /// Generated process `i`.
    pub fn process(&self, i: u64) -> Option<Pid<StringId>> {
        let i = usize::try_from(i).ok()?;
        match self {
            BindView::Stored { processes, .. } => {
                PidRaw::decode(processes.get(i.checked_mul(PidRaw::SIZE)?..)?).map(codec::decode_pid)
            }
            BindView::Memory(m) => m.tables.processes.get(i).cloned(),
        }
    }

    /// The number of generated threads.
    pub fn thread_count(&self) -> u64 {
        match self {
            BindView::Stored { threads, .. } => (threads.len() / TidRaw::SIZE) as u64,
            BindView::Memory(m) => m.tables.threads.len() as u64,
        }
    }

    /// Generated thread `i`.
    pub fn thread(&self, i: u64) -> Option<Tid<StringId>> {
        let i = usize::try_from(i).ok()?;
        match self {
            BindView::Stored { threads, .. } => {
                TidRaw::decode(threads.get(i.checked_mul(TidRaw::SIZE)?..)?).map(codec::decode_tid)
            }
            BindView::Memory(m) => m.tables.threads.get(i).cloned(),
        }
    }

    /// The number of module binds (= modules of the file).
    pub fn module_bind_count(&self) -> u64 {
        match self {
            BindView::Stored { modules, .. } => (modules.len() / 8) as u64,
            BindView::Memory(m) => m.tables.module_binds.len() as u64,
        }
    }

    /// The bind of module `i`.
    pub fn module_bind(&self, i: u64) -> Option<ModuleBind> {
        match self {
            BindView::Stored { modules, .. } => {
                u64_at(modules, usize::try_from(i).ok()?).map(|p| ModuleBind { pid_index: p })
            }
            BindView::Memory(m) => m.tables.module_binds.get(usize::try_from(i).ok()?).copied(),
        }
    }

    /// The bind of thread `i`.
    pub fn tid_bind(&self, i: u64) -> Option<TidBind> {
        match self {
            BindView::Stored { tid_binds, .. } => {
                u64_at(tid_binds, usize::try_from(i).ok()?).map(|p| TidBind { pid_index: p })
            }
            BindView::Memory(m) => m.tables.tid_binds.get(usize::try_from(i).ok()?).copied(),
        }
    }
}

impl<'f> StreamReader<'f> {
    /// Whether the stream has a stored bind.
    pub fn is_bound(&self) -> bool {
        self.file().bind_entry(self.index(), BindSection::Data).is_some()
    }

    /// The stored bind of the stream, if it has one.
    pub fn bind_view(&self) -> Result<Option<BindView<'f>>> {
        BindView::stored(self.file(), self.index())
    }
}

fn bind_kind(b: BindSection) -> u16 {
    kind::BIND_BASE + b as u16
}

fn encode_tables(tables: &BindTables) -> [Vec<u8>; 4] {
    let mut modules = Vec::with_capacity(tables.module_binds.len() * 8);
    for m in &tables.module_binds {
        modules.extend_from_slice(&m.pid_index.to_le_bytes());
    }
    let mut pids = Vec::with_capacity(tables.processes.len() * PidRaw::SIZE);
    for p in &tables.processes {
        codec::encode_pid(p).encode_into(&mut pids);
    }
    let mut tids = Vec::with_capacity(tables.threads.len() * TidRaw::SIZE);
    for t in &tables.threads {
        codec::encode_tid(t).encode_into(&mut tids);
    }
    let mut tid_binds = Vec::with_capacity(tables.tid_binds.len() * 8);
    for t in &tables.tid_binds {
        tid_binds.extend_from_slice(&t.pid_index.to_le_bytes());
    }
    [modules, pids, tids, tid_binds]
}

impl Engine {
    fn committed_stream(&self, n: u32) -> Result<&Tb5File> {
        let file = self.existing().ok_or(Error::StreamNotExist { stream: n })?;
        if n >= file.stream_count() {
            if self.stream_written_here(n) {
                return Err(Error::InvalidStream {
                    stream: n,
                    why: "it is being written in this session; it can be bound once the file is closed".into(),
                });
            }
            return Err(Error::StreamNotExist { stream: n });
        }
        Ok(file)
    }

    fn committed_bind_visible(&self, n: u32) -> bool {
        self.existing().is_some_and(|f| f.bind_entry(n, BindSection::Data).is_some())
            && !self.binds.removed.contains(&(bind_kind(BindSection::Data), n))
    }

    /// `TBRW_is_bound`.
    pub fn is_bound(&self, n: u32) -> Result<bool> {
        self.committed_stream(n)?;
        Ok(self.binds.memory.contains_key(&n) || self.binds.new.contains(&n) || self.committed_bind_visible(n))
    }

    /// `TBRW_dobind`: binds a committed stream. Opened for writing, the bind
    /// is appended to the file on close (and, when the file has no
    /// process/thread section, the generated tables become that section);
    /// opened read-only, it is kept in memory. A bound stream is left as it is.
    pub fn dobind(&mut self, n: u32) -> Result<()> {
        if self.is_bound(n)? {
            return Ok(());
        }
        if self.out.is_none() {
            let m = bind_in_memory(self.committed_stream(n)?, n)?;
            self.binds.memory.insert(n, m);
            return Ok(());
        }
        let path = self.path().to_owned();
        let (file, out) =
            (self.existing.as_ref().expect("checked by is_bound"), self.out.as_mut().expect("checked above"));
        let mut sink = SectionSink::memory();
        let mut count = 0u64;
        let mut buf = Vec::with_capacity(CHUNK_RECORDS * DataBindRaw::SIZE);
        let tables = compute(file, n, &mut |binds| {
            buf.clear();
            for d in binds {
                DataBindRaw { module_index: d.module_index, pid_index: d.pid_index, tid_index: d.tid_index }
                    .encode_into(&mut buf);
            }
            count += binds.len() as u64;
            sink.write(&buf, &out.file, &out.dir, &path)
        })?;
        let [modules, pids, tids, tid_binds] = encode_tables(&tables);
        let pending = |b: BindSection, parts: Vec<Part>, count: usize| Pending {
            kind: bind_kind(b),
            stream: n,
            parts,
            count: count as u64,
            record_size: 0,
        };
        let (np, nt) = (tables.processes.len(), tables.threads.len());
        out.submit(pending(BindSection::Data, vec![Part::Sink(sink)], count as usize), &path)?;
        out.submit(pending(BindSection::Modules, vec![Part::Bytes(modules)], tables.module_binds.len()), &path)?;
        out.submit(pending(BindSection::Processes, vec![Part::Bytes(pids.clone())], np), &path)?;
        out.submit(pending(BindSection::Threads, vec![Part::Bytes(tids.clone())], nt), &path)?;
        out.submit(pending(BindSection::TidBinds, vec![Part::Bytes(tid_binds)], nt), &path)?;
        if self.global_absent(GlobalSection::ProcessThread) {
            let head = ProcessThreadRaw { pid_count: np as u64, tid_count: nt as u64 }.encode();
            let p = Pending {
                kind: kind::GLOBAL_BASE + GlobalSection::ProcessThread as u16,
                stream: raw::NO_STREAM,
                parts: vec![Part::Bytes(head), Part::Bytes(pids), Part::Bytes(tids)],
                count: (np + nt) as u64,
                record_size: 0,
            };
            self.out.as_mut().expect("checked above").submit(p, &path)?;
            self.mark_global_written(GlobalSection::ProcessThread);
        }
        // Committed bind sections removed by an earlier unbind stay removed: these replace them.
        self.binds.new.insert(n);
        Ok(())
    }

    /// `TBRW_unbind`: removes the stream's bind. Opened for writing, the
    /// bind sections leave the file's directory on close; a bind made in
    /// memory is dropped. Not bound: [`Error::StreamNotBound`].
    pub fn unbind(&mut self, n: u32) -> Result<()> {
        self.committed_stream(n)?;
        let had_memory = self.binds.memory.remove(&n).is_some();
        if self.binds.new.remove(&n) {
            let out = self.out.as_mut().expect("new binds imply output");
            let is_bind = |k: u16, s: u32| s == n && (kind::BIND_BASE..kind::BIND_BASE + 5).contains(&k);
            out.pending.retain(|p| !is_bind(p.kind, p.stream));
            out.entries.retain(|e| !is_bind(e.kind, e.stream));
            return Ok(());
        }
        if self.committed_bind_visible(n) {
            if self.out.is_none() {
                return Err(Error::InvalidAccess {
                    mode: self.mode(),
                    what: "removing a stored bind from a file opened read-only",
                });
            }
            for b in BindSection::ALL {
                self.binds.removed.insert((bind_kind(b), n));
            }
            return Ok(());
        }
        if had_memory {
            Ok(())
        } else {
            Err(Error::StreamNotBound { stream: n })
        }
    }

    /// The bind of a stream, for the `bind_enumerate_` and `get_one_`
    /// functions: stored, or computed in memory (and kept) when it was
    /// made in this session.
    pub fn bound(&mut self, n: u32) -> Result<BindView<'_>> {
        self.committed_stream(n)?;
        if !self.binds.memory.contains_key(&n) {
            if self.binds.new.contains(&n) {
                let m = bind_in_memory(self.committed_stream(n)?, n)?;
                self.binds.memory.insert(n, m);
            } else if self.committed_bind_visible(n) {
                let file = self.existing().expect("checked");
                return Ok(BindView::stored(file, n)?.expect("bind sections exist"));
            } else {
                return Err(Error::StreamNotBound { stream: n });
            }
        }
        Ok(BindView::Memory(&self.binds.memory[&n]))
    }
}

/// Bind state of an engine.
#[derive(Debug, Default)]
pub(crate) struct BindState {
    /// Binds kept in memory: made read-only, or cached views of new binds.
    pub(crate) memory: std::collections::HashMap<u32, MemoryBind>,
    /// Streams whose bind sections were queued in this session.
    pub(crate) new: HashSet<u32>,
    /// Committed (kind, stream) sections to leave out of the next directory.
    pub(crate) removed: HashSet<(u16, u32)>,
}

impl Tb5Writer {
    /// Binds a committed stream of the file being appended to (see
    /// [`Engine::dobind`]); stored when the writer closes.
    pub fn dobind(&mut self, stream: u32) -> Result<()> {
        self.engine_mut().dobind(stream)
    }

    /// Removes the bind of a committed stream (see [`Engine::unbind`]).
    pub fn unbind(&mut self, stream: u32) -> Result<()> {
        self.engine_mut().unbind(stream)
    }
}

/// Binds stream `stream` of the file at `path` and stores the result
/// (an atomic append). A bound stream is left as it is.
pub fn dobind(path: impl AsRef<Path>, stream: u32) -> Result<()> {
    let mut w = Tb5Writer::append(path)?;
    w.dobind(stream)?;
    w.close()
}

/// Removes the stored bind of a stream of the file at `path`.
pub fn unbind(path: impl AsRef<Path>, stream: u32) -> Result<()> {
    let mut w = Tb5Writer::append(path)?;
    w.unbind(stream)?;
    w.close()
}
