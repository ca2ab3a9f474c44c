//! The run-time engine: one open TB5 file and the TBRW lifecycle rules.
//!
//! [`Engine`] is what `TBRW_open` returns in the C API: every operation of
//! the guide (open a section for reading or writing, set/add into it, mark
//! it done, the same for streams and their sections, close, abort) is a
//! method here that checks the state and fails with the error the guide
//! prescribes ([`Error::code`] gives the TBRW number). The typestate facade
//! in [`crate::writer`] drives this same engine, so the rules exist once.
//!
//! Output never becomes visible half-written: a new file is built in a
//! temporary file beside the target and renamed over it on close; an
//! append writes only past the committed end and commits by rewriting one
//! commit slot of the header (docs/FORMAT.md, "Commits").

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::codec;
use crate::descriptor::{desc_type, DescEntry, RecordLayout};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::hardware::System;
use crate::module::Module;
use crate::process::{Pid, Tid};
use crate::raw::{self, kind, DirEntryRaw, FileHeaderRaw, ProcessThreadRaw, Raw, SlotRaw, StringBlockRaw};
use crate::reader::Tb5File;
use crate::section::{GlobalSection, SectionRef, StreamSection};
use crate::sink::{SectionSink, CHUNK};
use crate::software::{Application, Host, Os, Software};
use crate::stream::StreamInfo;
use crate::strings::{MapStrings, StringId, StringInterner, Text};
use crate::version::VersionInfo;

/// Access mode flags of `TBRW_open` (`tbrw_types.h`).
pub mod access {
    /// `TBRW_FILE_READ`: read the committed content.
    pub const READ: u32 = 0x1;
    /// `TBRW_FILE_WRITE`: write new sections and streams (append to an
    /// existing file unless `CREATE_ALWAYS` is given).
    pub const WRITE: u32 = 0x2;
    /// `TBRW_FILE_CREATE_ALWAYS`: create a new file (replacing any file at
    /// the path when the new one is closed). Implies `WRITE`.
    pub const CREATE_ALWAYS: u32 = 0x4;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not in the file and not being written.
    Absent,
    /// In the committed file.
    Existing,
    /// Open for reading (and in the committed file).
    Reading,
    /// Open for writing in this session.
    Writing,
    /// Written and done in this session.
    Written,
}

/// What a global section being written holds so far.
enum GlobalBuilder {
    None,
    Hardware(Option<System>),
    Software(Software<StringId>),
    ProcessThread { pids: SectionSink, tids: SectionSink, np: u64, nt: u64 },
    Module { sink: SectionSink, count: u64 },
    UserDefined(Option<SectionSink>),
    Version(Option<VersionInfo>),
}

struct StreamState {
    writing: bool,
    sections: [State; 5],
    events: Option<(SectionSink, u64)>,
    descs: Vec<DescEntry<StringId>>,
    /// Fixed when the first data arrives; the descriptor cannot change after.
    layout: Option<RecordLayout>,
    data: Option<DataState>,
    user: Option<SectionSink>,
    info: Option<StreamInfo<StringId>>,
    done: bool,
}

struct DataState {
    sink: SectionSink,
    /// Bytes of the current (incomplete) record received so far.
    pos_in_record: u32,
    /// Set when data of a size the layout does not allow was taken in
    /// (only possible with [`Engine::add_data_from_reader`]).
    poisoned: Option<String>,
}

/// One section on its way into the output, in parts.
pub(crate) enum Part {
    Bytes(Vec<u8>),
    Sink(SectionSink),
}

pub(crate) struct Pending {
    pub(crate) kind: u16,
    pub(crate) stream: u32,
    pub(crate) parts: Vec<Part>,
    pub(crate) count: u64,
    pub(crate) record_size: u32,
}

pub(crate) struct Output {
    pub(crate) file: File,
    /// The temporary file of a new file (renamed on close); `None` when appending.
    temp: Option<NamedTempFile>,
    pub(crate) dir: PathBuf,
    /// Next free byte.
    end: u64,
    /// The committed end when appending; the header size for a new file.
    base_end: u64,
    /// The stream whose data section owns the tail.
    tail: Option<u32>,
    pub(crate) pending: Vec<Pending>,
    pub(crate) entries: Vec<DirEntryRaw>,
}

fn align(x: u64) -> u64 {
    x.div_ceil(raw::SECTION_ALIGN) * raw::SECTION_ALIGN
}

fn global_kind(s: GlobalSection) -> u16 {
    kind::GLOBAL_BASE + s as u16
}

fn stream_kind(s: StreamSection) -> u16 {
    kind::STREAM_BASE + s as u16
}

impl Output {
    /// Writes a finished section at the tail (which must be free).
    fn place(&mut self, p: Pending, path: &Path) -> Result<()> {
        let start = align(self.end);
        let mut at = start;
        let mut hasher = crc32fast::Hasher::new();
        for part in p.parts {
            match part {
                Part::Bytes(b) => {
                    self.file.write_all_at(&b, at).map_err(|e| Error::io(path, "write", e))?;
                    hasher.update(&b);
                    at += b.len() as u64;
                }
                Part::Sink(s) => {
                    let (len, h) = s.copy_to(&self.file, at, path)?;
                    hasher.combine(&h);
                    at += len;
                }
            }
        }
        self.zero_pad(self.end, start, path)?;
        self.entries.push(DirEntryRaw {
            kind: p.kind,
            flags: 0,
            stream: p.stream,
            offset: start,
            length: at - start,
            count: p.count,
            record_size: p.record_size,
            crc: hasher.finalize(),
            reserved: 0,
        });
        self.end = at;
        Ok(())
    }

    fn zero_pad(&self, from: u64, to: u64, path: &Path) -> Result<()> {
        if to > from {
            self.file.write_all_at(&[0u8; 8][..(to - from) as usize], from).map_err(|e| Error::io(path, "write", e))?;
        }
        Ok(())
    }

    /// Queues a finished section, or writes it now if the tail is free.
    pub(crate) fn submit(&mut self, p: Pending, path: &Path) -> Result<()> {
        if self.tail.is_some() {
            self.pending.push(p);
            Ok(())
        } else {
            self.flush_pending(path)?;
            self.place(p, path)
        }
    }

    fn flush_pending(&mut self, path: &Path) -> Result<()> {
        for p in std::mem::take(&mut self.pending) {
            self.place(p, path)?;
        }
        Ok(())
    }
}

/// One open TB5 file with the TBRW lifecycle (see the module doc).
pub struct Engine {
    path: PathBuf,
    mode: u32,
    pub(crate) existing: Option<Tb5File>,
    pub(crate) out: Option<Output>,
    pub(crate) binds: crate::bind::BindState,
    strings: StringInterner,
    globals: [State; 6],
    builders: [GlobalBuilder; 6],
    streams: BTreeMap<u32, StreamState>,
    finished: bool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("path", &self.path).field("mode", &self.mode).finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens `path` with `TBRW_FILE_*` flags (see [`access`]).
    pub fn open(path: impl AsRef<Path>, mode: u32) -> Result<Engine> {
        let path = path.as_ref().to_owned();
        let known = access::READ | access::WRITE | access::CREATE_ALWAYS;
        if mode == 0 || mode & !known != 0 {
            return Err(Error::InvalidAccess { mode, what: "opening (unknown or no flags)" });
        }
        let create = mode & access::CREATE_ALWAYS != 0;
        let write = create || mode & access::WRITE != 0;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let (existing, out) = if create {
            let temp = tempfile::Builder::new()
                .prefix(&format!(".{}.", path.file_name().and_then(|n| n.to_str()).unwrap_or("tb5")))
                .suffix(".tmp")
                // The file becomes the user's file: the usual 0666 less the umask, not a temp file's 0600.
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
                .tempfile_in(&dir)
                .map_err(|source| Error::FileOpen { path: path.clone(), source })?;
            let file = temp.as_file().try_clone().map_err(|e| Error::io(&path, "open", e))?;
            let header = FileHeaderRaw {
                magic: raw::MAGIC,
                format_version: raw::FORMAT_VERSION,
                min_reader_version: raw::MIN_FORMAT_VERSION,
                header_size: raw::HEADER_SIZE as u32,
                flags: 0,
                reserved: [0; 9],
                crc: 0,
            };
            let mut bytes = header.encode();
            let crc = crc32fast::hash(&bytes[..60]);
            bytes[60..64].copy_from_slice(&crc.to_le_bytes());
            bytes.resize(raw::HEADER_SIZE as usize, 0);
            file.write_all_at(&bytes, 0).map_err(|e| Error::io(&path, "write", e))?;
            let out = Output {
                file,
                temp: Some(temp),
                dir,
                end: raw::HEADER_SIZE,
                base_end: raw::HEADER_SIZE,
                tail: None,
                pending: Vec::new(),
                entries: Vec::new(),
            };
            (None, Some(out))
        } else if write {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|source| Error::FileOpen { path: path.clone(), source })?;
            file.try_lock().map_err(|e| Error::FileOpen {
                path: path.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!("another writer holds the file: {e}"),
                ),
            })?;
            let existing = Tb5File::open(&path)?;
            let end = existing.committed_end();
            // Bytes past the committed end are what an interrupted append left: not part of the file.
            file.set_len(end).map_err(|e| Error::io(&path, "truncate", e))?;
            let out = Output {
                file,
                temp: None,
                dir,
                end,
                base_end: end,
                tail: None,
                pending: Vec::new(),
                entries: Vec::new(),
            };
            (Some(existing), Some(out))
        } else {
            (Some(Tb5File::open(&path)?), None)
        };
        let mut strings = StringInterner::new(existing.as_ref().map_or(0, |e| e.string_count()));
        if let (Some(e), true) = (&existing, write) {
            for id in 1..=e.string_count() {
                strings.add_existing(e.string(StringId(id))?, id);
            }
        }
        let mut globals = [State::Absent; 6];
        if let Some(e) = &existing {
            for g in GlobalSection::ALL {
                if e.has_section(g) {
                    globals[g.index()] = State::Existing;
                }
            }
        }
        Ok(Engine {
            path,
            mode,
            existing,
            out,
            strings,
            globals,
            builders: std::array::from_fn(|_| GlobalBuilder::None),
            streams: BTreeMap::new(),
            binds: Default::default(),
            finished: false,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the engine was closed or aborted (it can do nothing more).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The `TBRW_FILE_*` flags the file was opened with.
    pub fn mode(&self) -> u32 {
        self.mode
    }

    pub(crate) fn stream_written_here(&self, n: u32) -> bool {
        self.streams.get(&n).is_some_and(|s| s.writing)
    }

    pub(crate) fn global_absent(&self, s: GlobalSection) -> bool {
        self.globals[s.index()] == State::Absent
    }

    pub(crate) fn mark_global_written(&mut self, s: GlobalSection) {
        self.globals[s.index()] = State::Written;
    }

    /// The committed content (when opened for reading or appending).
    pub fn existing(&self) -> Option<&Tb5File> {
        self.existing.as_ref()
    }

    fn require_write(&self, what: &'static str) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::InvalidAccess { mode: self.mode, what });
        }
        Ok(())
    }

    fn require_read(&self, what: &'static str) -> Result<&Tb5File> {
        if self.mode & access::READ == 0 {
            return Err(Error::InvalidAccess { mode: self.mode, what });
        }
        self.existing.as_ref().ok_or(Error::InvalidAccess { mode: self.mode, what })
    }

    fn intern_all<T: MapStrings<Text>>(&mut self, v: T) -> T::Output<StringId> {
        match v.map_strings::<StringId, std::convert::Infallible>(&mut |s| Ok(self.strings.intern(s.as_deref()))) {
            Ok(x) => x,
            Err(never) => match never {},
        }
    }

    // ------------------------------------------------------------ global sections

    /// `TBRW_writing_section`.
    pub fn writing_section(&mut self, s: GlobalSection) -> Result<()> {
        self.require_write("writing a section")?;
        if self.globals[s.index()] != State::Absent {
            return Err(Error::SectionInUse { section: s.into() });
        }
        self.builders[s.index()] = match s {
            GlobalSection::Hardware => GlobalBuilder::Hardware(None),
            GlobalSection::Software => GlobalBuilder::Software(Software::default()),
            GlobalSection::ProcessThread => {
                GlobalBuilder::ProcessThread { pids: SectionSink::memory(), tids: SectionSink::memory(), np: 0, nt: 0 }
            }
            GlobalSection::Module => GlobalBuilder::Module { sink: SectionSink::memory(), count: 0 },
            GlobalSection::UserDefinedGlobal => GlobalBuilder::UserDefined(None),
            GlobalSection::VersionInfo => GlobalBuilder::Version(None),
        };
        self.globals[s.index()] = State::Writing;
        Ok(())
    }

    /// `TBRW_reading_section`.
    pub fn reading_section(&mut self, s: GlobalSection) -> Result<()> {
        self.require_read("reading a section")?;
        match self.globals[s.index()] {
            State::Existing => {
                self.globals[s.index()] = State::Reading;
                Ok(())
            }
            State::Reading => Err(Error::SectionInUse { section: s.into() }),
            _ => Err(Error::SectionNotExist { section: s.into() }),
        }
    }

    /// `TBRW_done_section`: ends reading, or finishes writing (the section
    /// is then part of the file once it is closed).
    pub fn done_section(&mut self, s: GlobalSection) -> Result<()> {
        match self.globals[s.index()] {
            State::Reading => {
                self.globals[s.index()] = State::Existing;
                Ok(())
            }
            State::Writing => {
                let parts_count = self.finish_global(s)?;
                let out = self.out.as_mut().expect("writing implies output");
                out.submit(parts_count, &self.path)?;
                self.builders[s.index()] = GlobalBuilder::None;
                self.globals[s.index()] = State::Written;
                Ok(())
            }
            _ => Err(Error::SectionNotExist { section: s.into() }),
        }
    }

    fn finish_global(&mut self, s: GlobalSection) -> Result<Pending> {
        let section = SectionRef::Global(s);
        let nothing = || Error::NoDataToWrite { section };
        let builder = std::mem::replace(&mut self.builders[s.index()], GlobalBuilder::None);
        let restore = |this: &mut Self, b| this.builders[s.index()] = b;
        let (parts, count) = match builder {
            GlobalBuilder::Hardware(Some(sys)) => match codec::encode_system(&sys) {
                Ok(b) => (vec![Part::Bytes(b)], sys.nodes.len() as u64),
                Err(e) => {
                    restore(self, GlobalBuilder::Hardware(Some(sys)));
                    return Err(e);
                }
            },
            GlobalBuilder::Software(sw) if sw.host.is_some() || sw.os.is_some() || sw.application.is_some() => {
                (vec![Part::Bytes(codec::encode_software(&sw))], 1)
            }
            GlobalBuilder::Version(Some(v)) => (vec![Part::Bytes(codec::encode_version(&v))], 1),
            GlobalBuilder::UserDefined(Some(sink)) => (vec![Part::Sink(sink)], 1),
            GlobalBuilder::Module { sink, count } => (vec![Part::Sink(sink)], count),
            GlobalBuilder::ProcessThread { pids, tids, np, nt } => {
                let head = ProcessThreadRaw { pid_count: np, tid_count: nt }.encode();
                (vec![Part::Bytes(head), Part::Sink(pids), Part::Sink(tids)], np + nt)
            }
            b => {
                restore(self, b);
                return Err(nothing());
            }
        };
        Ok(Pending { kind: global_kind(s), stream: raw::NO_STREAM, parts, count, record_size: 0 })
    }

    fn writing_global(&mut self, s: GlobalSection) -> Result<&mut GlobalBuilder> {
        if self.globals[s.index()] != State::Writing {
            return Err(Error::SectionNotWriteable { section: s.into() });
        }
        Ok(&mut self.builders[s.index()])
    }

    /// `TBRW_set_system` (replaces what was set before).
    pub fn set_system(&mut self, system: &System) -> Result<()> {
        // Encode once now so that a bad system is reported by this call.
        codec::encode_system(system)?;
        match self.writing_global(GlobalSection::Hardware)? {
            GlobalBuilder::Hardware(h) => *h = Some(system.clone()),
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    fn software_builder(&mut self) -> Result<&mut Software<StringId>> {
        match self.writing_global(GlobalSection::Software)? {
            GlobalBuilder::Software(s) => Ok(s),
            _ => unreachable!("builder matches its section"),
        }
    }

    /// `TBRW_set_host`.
    pub fn set_host(&mut self, host: &Host) -> Result<()> {
        self.software_builder()?;
        let h = self.intern_all(host.clone());
        self.software_builder()?.host = Some(h);
        Ok(())
    }

    /// `TBRW_set_os`.
    pub fn set_os(&mut self, os: &Os) -> Result<()> {
        self.software_builder()?;
        let o = self.intern_all(os.clone());
        self.software_builder()?.os = Some(o);
        Ok(())
    }

    /// `TBRW_set_application`.
    pub fn set_application(&mut self, app: &Application) -> Result<()> {
        self.software_builder()?.application = Some(*app);
        Ok(())
    }

    /// `TBRW_set_version_info`.
    pub fn set_version_info(&mut self, v: &VersionInfo) -> Result<()> {
        match self.writing_global(GlobalSection::VersionInfo)? {
            GlobalBuilder::Version(x) => *x = Some(*v),
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// `TBRW_set_user_defined_global` (replaces what was set before).
    pub fn set_user_defined_global(&mut self, data: &[u8]) -> Result<()> {
        self.writing_global(GlobalSection::UserDefinedGlobal)?;
        let mut sink = SectionSink::memory();
        let out = self.out.as_ref().expect("writing implies output");
        sink.write(data, &out.file, &out.dir, &self.path)?;
        self.builders[GlobalSection::UserDefinedGlobal.index()] = GlobalBuilder::UserDefined(Some(sink));
        Ok(())
    }

    /// `TBRW_add_process`.
    pub fn add_process(&mut self, pid: &Pid) -> Result<()> {
        self.writing_global(GlobalSection::ProcessThread)?;
        let rec = codec::encode_pid(&self.intern_all(pid.clone())).encode();
        let out = self.out.as_ref().expect("writing implies output");
        match &mut self.builders[GlobalSection::ProcessThread.index()] {
            GlobalBuilder::ProcessThread { pids, np, .. } => {
                pids.write(&rec, &out.file, &out.dir, &self.path)?;
                *np += 1;
            }
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// `TBRW_add_thread`.
    pub fn add_thread(&mut self, tid: &Tid) -> Result<()> {
        self.writing_global(GlobalSection::ProcessThread)?;
        let rec = codec::encode_tid(&self.intern_all(tid.clone())).encode();
        let out = self.out.as_ref().expect("writing implies output");
        match &mut self.builders[GlobalSection::ProcessThread.index()] {
            GlobalBuilder::ProcessThread { tids, nt, .. } => {
                tids.write(&rec, &out.file, &out.dir, &self.path)?;
                *nt += 1;
            }
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// `TBRW_add_module`.
    pub fn add_module(&mut self, module: &Module) -> Result<()> {
        self.writing_global(GlobalSection::Module)?;
        let m = self.intern_all(module.clone());
        let rec = codec::encode_module(&m)?.encode();
        let out = self.out.as_ref().expect("writing implies output");
        match &mut self.builders[GlobalSection::Module.index()] {
            GlobalBuilder::Module { sink, count } => {
                sink.write(&rec, &out.file, &out.dir, &self.path)?;
                *count += 1;
            }
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// Checks that a global section is open for reading (`get_` functions).
    pub fn check_readable(&self, s: GlobalSection) -> Result<&Tb5File> {
        if self.globals[s.index()] != State::Reading {
            return Err(Error::SectionNotReadable { section: s.into() });
        }
        self.require_read("reading")
    }

    // ------------------------------------------------------------ streams

    /// `TBRW_get_number_data_streams`: committed streams plus the streams
    /// written and done in this session.
    pub fn number_of_streams(&self) -> u32 {
        let committed = self.existing.as_ref().map_or(0, |e| e.stream_count());
        let new = self.streams.iter().filter(|(_, s)| s.writing && s.done).map(|(n, _)| n + 1).max().unwrap_or(0);
        committed.max(new)
    }

    fn committed_streams(&self) -> u32 {
        self.existing.as_ref().map_or(0, |e| e.stream_count())
    }

    /// `TBRW_writing_stream`.
    pub fn writing_stream(&mut self, n: u32) -> Result<()> {
        self.require_write("writing a stream")?;
        let committed = self.committed_streams();
        if n < committed || self.streams.get(&n).is_some_and(|s| s.writing) {
            return Err(Error::StreamInUse { stream: n });
        }
        let next = committed + self.streams.values().filter(|s| s.writing).count() as u32;
        if n > next {
            return Err(Error::InvalidStream {
                stream: n,
                why: format!("streams are numbered from 0 without gaps; the next free index is {next}"),
            });
        }
        self.streams.insert(n, StreamState::new(true));
        Ok(())
    }

    /// `TBRW_reading_stream`.
    pub fn reading_stream(&mut self, n: u32) -> Result<()> {
        let file = self.require_read("reading a stream")?;
        if n >= file.stream_count() {
            return Err(Error::StreamNotExist { stream: n });
        }
        if self.streams.contains_key(&n) {
            return Err(Error::StreamInUse { stream: n });
        }
        let mut st = StreamState::new(false);
        for s in StreamSection::ALL {
            if file.stream_entry(n, s).is_some() {
                st.sections[s.index()] = State::Existing;
            }
        }
        self.streams.insert(n, st);
        Ok(())
    }

    /// `TBRW_done_stream`: ends reading, or finishes a written stream. A
    /// written stream needs its stream info and data descriptor sections.
    pub fn done_stream(&mut self, n: u32) -> Result<()> {
        let st = self.streams.get(&n).filter(|s| !s.done).ok_or(Error::StreamNotExist { stream: n })?;
        if let Some(open) =
            StreamSection::ALL.into_iter().find(|s| matches!(st.sections[s.index()], State::Writing | State::Reading))
        {
            return Err(Error::StreamSectionNotClosed { stream: n, section: open });
        }
        if !st.writing {
            self.streams.remove(&n);
            return Ok(());
        }
        for need in [StreamSection::StreamInfo, StreamSection::DataDescription] {
            if st.sections[need.index()] != State::Written {
                return Err(Error::SectionNotExist { section: SectionRef::Stream(n, need) });
            }
        }
        self.streams.get_mut(&n).expect("checked above").done = true;
        Ok(())
    }

    /// Drops a stream being written, with everything written to it
    /// (the typed facade does this when a stream writer is dropped).
    pub fn discard_stream(&mut self, n: u32) {
        let Some(st) = self.streams.get(&n) else { return };
        if !st.writing {
            return;
        }
        self.streams.remove(&n);
        if let Some(out) = self.out.as_mut() {
            if out.tail == Some(n) {
                // Nothing was placed after the direct data section: its bytes
                // are overwritten by what comes next (or cut off at commit).
                // Waiting sections stay queued for the next placement.
                out.tail = None;
            }
            out.pending.retain(|p| p.stream != n);
            out.entries.retain(|e| e.stream != n);
        }
    }

    fn stream_mut(&mut self, n: u32) -> Result<&mut StreamState> {
        self.streams.get_mut(&n).filter(|s| !s.done).ok_or(Error::StreamNotExist { stream: n })
    }

    /// `TBRW_writing_stream_section`.
    pub fn writing_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        self.require_write("writing a stream section")?;
        let out = self.out.as_mut().expect("checked above");
        let st = self.streams.get_mut(&n).filter(|st| !st.done).ok_or(Error::StreamNotExist { stream: n })?;
        if !st.writing {
            return Err(Error::InvalidStream { stream: n, why: "it is open for reading, not writing".into() });
        }
        if st.sections[s.index()] != State::Absent {
            return Err(Error::SectionInUse { section: SectionRef::Stream(n, s) });
        }
        match s {
            StreamSection::EventDescription => st.events = Some((SectionSink::memory(), 0)),
            StreamSection::DataDescription => st.descs.clear(),
            StreamSection::Data => {
                let sink = if out.tail.is_none() {
                    out.tail = Some(n);
                    let start = align(out.end);
                    out.zero_pad(out.end, start, &self.path)?;
                    out.end = start;
                    SectionSink::direct(start)
                } else {
                    SectionSink::memory()
                };
                st.data = Some(DataState { sink, pos_in_record: 0, poisoned: None });
            }
            StreamSection::UserDefinedStream => st.user = None,
            StreamSection::StreamInfo => st.info = None,
        }
        st.sections[s.index()] = State::Writing;
        Ok(())
    }

    /// `TBRW_reading_stream_section`.
    pub fn reading_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        let st = self.streams.get_mut(&n).ok_or(Error::StreamNotExist { stream: n })?;
        if st.writing {
            return Err(Error::InvalidStream { stream: n, why: "it is open for writing, not reading".into() });
        }
        match st.sections[s.index()] {
            State::Existing => {
                st.sections[s.index()] = State::Reading;
                Ok(())
            }
            State::Reading => Err(Error::SectionInUse { section: SectionRef::Stream(n, s) }),
            _ => Err(Error::SectionNotExist { section: SectionRef::Stream(n, s) }),
        }
    }

    /// Checks that a stream section is open for reading (`get_`/`enumerate_`).
    pub fn check_stream_readable(&self, n: u32, s: StreamSection) -> Result<&Tb5File> {
        let st = self.streams.get(&n).ok_or(Error::StreamNotExist { stream: n })?;
        if st.sections[s.index()] != State::Reading {
            return Err(Error::SectionNotReadable { section: SectionRef::Stream(n, s) });
        }
        self.require_read("reading")
    }

    /// `TBRW_done_stream_section`.
    pub fn done_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        let section = SectionRef::Stream(n, s);
        let st = self.streams.get_mut(&n).ok_or(Error::StreamNotExist { stream: n })?;
        match st.sections[s.index()] {
            State::Reading => {
                st.sections[s.index()] = State::Existing;
                return Ok(());
            }
            State::Writing => {}
            _ => return Err(Error::SectionNotExist { section }),
        }
        let kind = stream_kind(s);
        let pending = match s {
            StreamSection::EventDescription => {
                let (sink, count) = st.events.take().expect("writing events");
                Pending { kind, stream: n, parts: vec![Part::Sink(sink)], count, record_size: 0 }
            }
            StreamSection::DataDescription => {
                if st.descs.is_empty() {
                    return Err(Error::NoDataToWrite { section });
                }
                let layout = RecordLayout::from_entries(&st.descs)?;
                let mut bytes = Vec::with_capacity(st.descs.len() * raw::DescEntryRaw::SIZE);
                for (i, d) in st.descs.iter().enumerate() {
                    let mut d = d.clone();
                    d.offset = layout.offset_of(i).expect("one offset per entry");
                    codec::encode_desc(&d).encode_into(&mut bytes);
                }
                // The descriptor is final: the record layout is now known.
                st.layout = Some(layout);
                Pending {
                    kind,
                    stream: n,
                    parts: vec![Part::Bytes(bytes)],
                    count: st.descs.len() as u64,
                    record_size: 0,
                }
            }
            StreamSection::Data => {
                let d = st.data.as_ref().expect("writing data");
                if let Some(why) = &d.poisoned {
                    return Err(Error::UnsupportedDataSize { stream: n, what: why.clone() });
                }
                if d.pos_in_record != 0 {
                    return Err(Error::UnsupportedDataSize {
                        stream: n,
                        what: format!(
                            "the data ends {} bytes into a record; the section must end on a whole record",
                            d.pos_in_record
                        ),
                    });
                }
                // No data ever added: the layout comes from the descriptor as it stands.
                let record_size = match &st.layout {
                    Some(l) => l.record_size(),
                    None => RecordLayout::from_entries(&st.descs).map_or(0, |l| l.record_size()),
                };
                if record_size == 0 {
                    return Err(Error::UnsupportedDataSize {
                        stream: n,
                        what: "the data descriptor defines no bytes, so the data section has no record size".into(),
                    });
                }
                let d = st.data.take().expect("checked above");
                let count = d.sink.len() / u64::from(record_size);
                let out = self.out.as_mut().expect("writing implies output");
                if d.sink.is_direct() {
                    let crate::sink::Dest::Direct { start } = d.sink.dest else { unreachable!() };
                    let (len, crc) = d.sink.finish_direct(&out.file, &self.path)?;
                    out.entries.push(DirEntryRaw {
                        kind,
                        flags: 0,
                        stream: n,
                        offset: start,
                        length: len,
                        count,
                        record_size,
                        crc,
                        reserved: 0,
                    });
                    out.end = start + len;
                    out.tail = None;
                    out.flush_pending(&self.path)?;
                    st.sections[s.index()] = State::Written;
                    return Ok(());
                }
                Pending { kind, stream: n, parts: vec![Part::Sink(d.sink)], count, record_size }
            }
            StreamSection::UserDefinedStream => {
                let sink = st.user.take().ok_or(Error::NoDataToWrite { section })?;
                Pending { kind, stream: n, parts: vec![Part::Sink(sink)], count: 1, record_size: 0 }
            }
            StreamSection::StreamInfo => {
                let info = st.info.as_ref().ok_or(Error::NoDataToWrite { section })?;
                Pending {
                    kind,
                    stream: n,
                    parts: vec![Part::Bytes(codec::encode_stream_info(info))],
                    count: 1,
                    record_size: 0,
                }
            }
        };
        st.sections[s.index()] = State::Written;
        self.out.as_mut().expect("writing implies output").submit(pending, &self.path)
    }

    fn writing_stream_section_state(&mut self, n: u32, s: StreamSection) -> Result<&mut StreamState> {
        let st = self.stream_mut(n)?;
        if !st.writing || st.sections[s.index()] != State::Writing {
            return Err(Error::SectionNotWriteable { section: SectionRef::Stream(n, s) });
        }
        Ok(st)
    }

    /// `TBRW_set_stream_info` (replaces what was set before).
    pub fn set_stream_info(&mut self, n: u32, info: &StreamInfo) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::StreamInfo)?;
        let info = self.intern_all(info.clone());
        self.stream_mut(n)?.info = Some(info);
        Ok(())
    }

    /// `TBRW_add_event`.
    pub fn add_event(&mut self, n: u32, event: &Event) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::EventDescription)?;
        let e = self.intern_all(event.clone());
        let mut bytes = Vec::new();
        codec::encode_event(&e, &mut bytes)?;
        let out = self.out.as_ref().expect("writing implies output");
        let st = self.streams.get_mut(&n).expect("checked above");
        let (sink, count) = st.events.as_mut().expect("writing events");
        sink.write(&bytes, &out.file, &out.dir, &self.path)?;
        *count += 1;
        Ok(())
    }

    /// `TBRW_add_data_descriptor_entry`.
    pub fn add_data_descriptor_entry(&mut self, n: u32, entry: &DescEntry) -> Result<()> {
        let st = self.writing_stream_section_state(n, StreamSection::DataDescription)?;
        if st.layout.is_some() {
            return Err(Error::bad(format!(
                "stream {n}: data records were already added, so the data descriptor can no longer change"
            )));
        }
        if entry.desc_type == desc_type::LEGACY_SAMPLE_RECORD && n != 0 {
            return Err(Error::bad(format!(
                "stream {n}: legacy sample records (ST_LEGACY_SAMPLE_RECORD) belong in stream 0 only"
            )));
        }
        let e = self.intern_all(entry.clone());
        let st = self.streams.get_mut(&n).expect("checked above");
        st.descs.push(e);
        // Reject a reserved type or an impossible offset at the call that adds it.
        if let Err(err) = RecordLayout::from_entries(&st.descs) {
            st.descs.pop();
            return Err(err);
        }
        Ok(())
    }

    fn data_state(&mut self, n: u32) -> Result<(&mut StreamState, &Output)> {
        let st = self.streams.get_mut(&n).filter(|s| !s.done).ok_or(Error::StreamNotExist { stream: n })?;
        if !st.writing || st.sections[StreamSection::Data.index()] != State::Writing {
            return Err(Error::SectionNotWriteable { section: SectionRef::Stream(n, StreamSection::Data) });
        }
        if st.layout.is_none() {
            if st.descs.is_empty() {
                return Err(Error::SectionNotExist { section: SectionRef::Stream(n, StreamSection::DataDescription) });
            }
            let layout = RecordLayout::from_entries(&st.descs)?;
            if layout.record_size() == 0 {
                return Err(Error::UnsupportedDataSize {
                    stream: n,
                    what: "the data descriptor defines records of 0 bytes".into(),
                });
            }
            st.layout = Some(layout);
        }
        Ok((st, self.out.as_ref().expect("writing implies output")))
    }

    /// `TBRW_add_data`: appends bytes to the data section. A record may
    /// arrive in pieces, but every piece must end at the start or end of a
    /// descriptor field (so the guide's 32-byte PC record followed by the
    /// 8-byte TSC works, and a piece of a wrong size is caught at once).
    pub fn add_data(&mut self, n: u32, bytes: &[u8]) -> Result<()> {
        let path = self.path.clone();
        let (st, out) = self.data_state(n)?;
        let layout = st.layout.as_ref().expect("set by data_state");
        let rs = u64::from(layout.record_size());
        let d = st.data.as_mut().expect("writing data");
        let end = (u64::from(d.pos_in_record) + bytes.len() as u64) % rs;
        if !layout.is_boundary(end as u32) {
            return Err(Error::UnsupportedDataSize {
                stream: n,
                what: format!(
                    "{} bytes added at byte {} of a {rs}-byte record end at byte {end}, inside a descriptor field",
                    bytes.len(),
                    d.pos_in_record
                ),
            });
        }
        d.sink.write(bytes, &out.file, &out.dir, &path)?;
        d.pos_in_record = end as u32;
        Ok(())
    }

    /// `TBRW_add_data_from_file`: appends the whole content of a file of records.
    pub fn add_data_from_file(&mut self, n: u32, file: &Path) -> Result<()> {
        let f = File::open(file).map_err(|source| Error::FileOpen { path: file.to_owned(), source })?;
        let len = f.metadata().map_err(|e| Error::io(file, "stat", e))?.len();
        {
            let (st, _) = self.data_state(n)?;
            let layout = st.layout.as_ref().expect("set by data_state");
            let d = st.data.as_ref().expect("writing data");
            let end = (u64::from(d.pos_in_record) + len) % u64::from(layout.record_size());
            if !layout.is_boundary(end as u32) {
                return Err(Error::UnsupportedDataSize {
                    stream: n,
                    what: format!(
                        "{}: {len} bytes is not a whole number of {}-byte records",
                        file.display(),
                        layout.record_size()
                    ),
                });
            }
        }
        let got = self.add_data_from_reader(n, &mut std::io::BufReader::with_capacity(CHUNK, f))?;
        if got != len {
            return Err(Error::io(
                file,
                "read",
                std::io::Error::other(format!("file changed size while read ({len} then {got} bytes)")),
            ));
        }
        Ok(())
    }

    /// Appends everything `reader` yields to the data section and returns
    /// the byte count. If the total does not end on a field boundary the
    /// call fails and the data section cannot be finished.
    pub fn add_data_from_reader(&mut self, n: u32, reader: &mut dyn Read) -> Result<u64> {
        let path = self.path.clone();
        let (st, out) = self.data_state(n)?;
        let layout = st.layout.as_ref().expect("set by data_state");
        let rs = u64::from(layout.record_size());
        let d = st.data.as_mut().expect("writing data");
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0u64;
        loop {
            let k = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    d.poisoned = Some(format!("reading the data failed after {total} bytes: {e}"));
                    return Err(Error::io(&path, "read data", e));
                }
            };
            d.sink.write(&buf[..k], &out.file, &out.dir, &path)?;
            total += k as u64;
        }
        let end = (u64::from(d.pos_in_record) + total) % rs;
        d.pos_in_record = end as u32;
        if !layout.is_boundary(end as u32) {
            let what = format!("{total} bytes read end at byte {end} of a {rs}-byte record, inside a descriptor field");
            d.poisoned = Some(what.clone());
            return Err(Error::UnsupportedDataSize { stream: n, what });
        }
        Ok(total)
    }

    /// The record layout of a stream being written, once known.
    pub fn record_layout(&self, n: u32) -> Option<&RecordLayout> {
        self.streams.get(&n).and_then(|s| s.layout.as_ref())
    }

    /// `TBRW_set_user_defined_stream` (replaces what was set before).
    pub fn set_user_defined_stream(&mut self, n: u32, data: &[u8]) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::UserDefinedStream)?;
        let out = self.out.as_ref().expect("writing implies output");
        let mut sink = SectionSink::memory();
        sink.write(data, &out.file, &out.dir, &self.path)?;
        self.streams.get_mut(&n).expect("checked above").user = Some(sink);
        Ok(())
    }

    /// Drops a global section being written, as if it had never been opened.
    pub fn discard_section(&mut self, s: GlobalSection) {
        if self.globals[s.index()] == State::Writing {
            self.globals[s.index()] = State::Absent;
            self.builders[s.index()] = GlobalBuilder::None;
        }
    }

    /// Drops a stream section being written, as if it had never been opened.
    pub fn discard_stream_section(&mut self, n: u32, s: StreamSection) {
        let Some(st) = self.streams.get_mut(&n) else { return };
        if st.sections[s.index()] != State::Writing {
            return;
        }
        st.sections[s.index()] = State::Absent;
        match s {
            StreamSection::EventDescription => st.events = None,
            StreamSection::DataDescription => st.descs.clear(),
            StreamSection::Data => {
                st.data = None;
                st.layout = None;
                if let Some(out) = self.out.as_mut() {
                    if out.tail == Some(n) {
                        out.tail = None;
                    }
                }
            }
            StreamSection::UserDefinedStream => st.user = None,
            StreamSection::StreamInfo => st.info = None,
        }
    }

    /// `TBRW_verify`: checks the committed content ([`Tb5File::verify`])
    /// and, in a writing session, that the sections the guide's 6.2
    /// requires exist (committed or finished in this session), also in
    /// every stream finished in this session.
    pub fn verify(&self) -> Result<()> {
        if let Some(f) = &self.existing {
            f.verify()?;
        }
        if self.out.is_none() {
            return Ok(());
        }
        for g in GlobalSection::ALL {
            if g.is_required() && !matches!(self.globals[g.index()], State::Existing | State::Reading | State::Written)
            {
                return Err(Error::MissingRequired { path: self.path.clone(), section: g.into() });
            }
        }
        for (&n, st) in self.streams.iter().filter(|(_, st)| st.writing && st.done) {
            for s in StreamSection::ALL {
                if s.is_required() && st.sections[s.index()] != State::Written {
                    return Err(Error::MissingRequired { path: self.path.clone(), section: SectionRef::Stream(n, s) });
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ close

    fn check_all_closed(&self) -> Result<()> {
        if let Some(g) = GlobalSection::ALL.into_iter().find(|g| self.globals[g.index()] == State::Writing) {
            return Err(Error::GlobalSectionNotClosed { section: g });
        }
        for (&n, st) in &self.streams {
            if let Some(s) = StreamSection::ALL.into_iter().find(|s| st.sections[s.index()] == State::Writing) {
                return Err(Error::StreamSectionNotClosed { stream: n, section: s });
            }
            if st.writing && !st.done {
                return Err(Error::StreamNotClosed { stream: n });
            }
        }
        if let Some(g) = GlobalSection::ALL.into_iter().find(|g| self.globals[g.index()] == State::Reading) {
            return Err(Error::NotAllSectionsClosed { section: g.into() });
        }
        if let Some((&n, _)) = self.streams.iter().find(|(_, st)| !st.writing) {
            return Err(Error::NotAllSectionsClosed { section: SectionRef::WholeStream(n) });
        }
        Ok(())
    }

    /// `TBRW_close`. A lifecycle error (something still open) leaves the
    /// engine as it was, so the caller can finish or abort; an I/O error
    /// during the commit aborts.
    pub fn close(&mut self) -> Result<()> {
        self.check_all_closed()?;
        let committed = self.committed_streams();
        let total = self.number_of_streams();
        for n in committed..total {
            if !self.streams.contains_key(&n) {
                return Err(Error::InvalidStream {
                    stream: n,
                    why: format!(
                        "stream {} was written but stream {n} was not; streams are numbered without gaps",
                        total - 1
                    ),
                });
            }
        }
        let result = self.commit();
        self.finished = true;
        if result.is_err() {
            self.cleanup();
        }
        result
    }

    fn commit(&mut self) -> Result<()> {
        let Some(out) = self.out.as_mut() else { return Ok(()) };
        let path = self.path.clone();
        let unchanged = out.entries.is_empty() && out.pending.is_empty() && self.binds.removed.is_empty();
        if out.temp.is_none() && unchanged && self.strings.new_strings().is_empty() {
            // An append that changes nothing commits nothing.
            return Ok(());
        }
        out.flush_pending(&path)?;
        let new = self.strings.new_strings();
        if !new.is_empty() {
            let mut offsets = Vec::with_capacity((new.len() + 1) * 4);
            let mut total: u64 = 0;
            offsets.extend_from_slice(&0u32.to_le_bytes());
            for s in new {
                total += s.len() as u64;
                let o = u32::try_from(total).map_err(|_| Error::bad("more than 4 GiB of new strings in one commit"))?;
                offsets.extend_from_slice(&o.to_le_bytes());
            }
            let mut bytes = Vec::with_capacity(total as usize);
            for s in new {
                bytes.extend_from_slice(s.as_bytes());
            }
            let head = StringBlockRaw { first_id: self.strings.first_new_id(), count: new.len() as u64 }.encode();
            let p = Pending {
                kind: kind::STRING_BLOCK,
                stream: raw::NO_STREAM,
                parts: vec![Part::Bytes(head), Part::Bytes(offsets), Part::Bytes(bytes)],
                count: new.len() as u64,
                record_size: 0,
            };
            out.place(p, &path)?;
        }
        let mut dir = Vec::new();
        let mut n_entries = 0u32;
        if let Some(e) = &self.existing {
            for s in e.directory() {
                if self.binds.removed.contains(&(s.raw.kind, s.raw.stream)) {
                    continue;
                }
                s.raw.encode_into(&mut dir);
                n_entries += 1;
            }
        }
        for e in &out.entries {
            e.encode_into(&mut dir);
            n_entries += 1;
        }
        let dir_offset = align(out.end);
        out.zero_pad(out.end, dir_offset, &path)?;
        out.file.write_all_at(&dir, dir_offset).map_err(|e| Error::io(&path, "write", e))?;
        out.end = dir_offset + dir.len() as u64;
        // Bytes of a discarded data section may lie past the directory.
        out.file.set_len(out.end).map_err(|e| Error::io(&path, "truncate", e))?;
        // The directory and everything before it must be durable before the
        // slot that points at them is written: that order is the commit.
        out.file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
        let (generation, slot) = match &self.existing {
            Some(e) => (e.generation() + 1, 1 - e.active_slot()),
            None => (1, 0),
        };
        let mut s = SlotRaw {
            generation,
            dir_offset,
            dir_length: u32::try_from(dir.len()).map_err(|_| Error::bad("directory larger than 4 GiB"))?,
            dir_entries: n_entries,
            dir_crc: crc32fast::hash(&dir),
            crc: 0,
        }
        .encode();
        let crc = crc32fast::hash(&s[..28]);
        s[28..32].copy_from_slice(&crc.to_le_bytes());
        #[cfg(test)]
        if let Some(hook) = crash_hook::take() {
            // Tests stop here to see what a crash between the two writes leaves.
            return hook(&out.file, raw::SLOT_OFFSET[slot], &s);
        }
        out.file.write_all_at(&s, raw::SLOT_OFFSET[slot]).map_err(|e| Error::io(&path, "write", e))?;
        out.file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
        if let Some(temp) = out.temp.take() {
            temp.persist(&path).map_err(|e| Error::io(&path, "rename into place", e.error))?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
                _ => PathBuf::from("."),
            };
            // Make the rename itself durable.
            File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(&dir, "fsync folder", e))?;
        }
        Ok(())
    }

    /// `TBRW_abort_cleanup_and_close`: drops everything written in this
    /// session. A new file never appears; an existing file stays as it was.
    pub fn abort(&mut self) {
        self.cleanup();
        self.finished = true;
    }

    fn cleanup(&mut self) {
        if let Some(out) = self.out.take() {
            if out.temp.is_none() {
                // Appending: cut off what this session wrote past the committed end.
                let _ = out.file.set_len(out.base_end);
            }
            // A NamedTempFile removes itself when dropped.
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if !self.finished {
            self.cleanup();
        }
    }
}

impl StreamState {
    fn new(writing: bool) -> Self {
        StreamState {
            writing,
            sections: [State::Absent; 5],
            events: None,
            descs: Vec::new(),
            layout: None,
            data: None,
            user: None,
            info: None,
            done: false,
        }
    }
}

#[cfg(test)]
pub(crate) mod crash_hook {
    //! Lets a test replace the commit-slot write (the last step of a commit)
    //! to simulate a crash around it.
    use std::cell::RefCell;
    use std::fs::File;

    type Hook = Box<dyn FnOnce(&File, u64, &[u8]) -> crate::Result<()>>;
    thread_local!(static HOOK: RefCell<Option<Hook>> = RefCell::new(None));

    pub(crate) fn set(h: Hook) {
        HOOK.with(|x| *x.borrow_mut() = Some(h));
    }
    pub(crate) fn take() -> Option<Hook> {
        HOOK.with(|x| x.borrow_mut().take())
    }
}
