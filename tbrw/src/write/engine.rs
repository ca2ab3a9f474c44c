//! The run-time engine: one open TB5 file and the TBRW lifecycle rules.
//!
//! [`Engine`] is what `TBRW_open` returns in the C API: every operation of
//! the guide (open a section for reading or writing, set/add into it, mark
//! it done, the same for streams and their sections, close, abort) is a
//! method here that checks the state and fails with the error the guide
//! prescribes ([`Error::code`] gives the TBRW number). The typestate facade
//! in [`crate::writer`] drives this same engine, so the rules exist once.
//!
//! This file holds the rules: which section or stream may be opened, read,
//! finished or discarded when. What goes into an open section (the `set_`
//! and `add_` calls, and the bytes a finished section becomes) is in
//! `content`; where the bytes go and how they are committed, in
//! `super::output`.
//!
//! Reading and writing tasks mix on one open file in any order (guide 5,
//! step 3): with read permission, a global section or a stream finished
//! with its `done_` call can be opened for reading before the file is
//! closed. Reads of those go to a view of the session ([`Tb5File`] over
//! the output, see `Output::view`), made when such a section is opened
//! and again whenever the session changed since. A finished section that
//! still waits for the file's tail (another stream's data section holds
//! it) makes that data section leave the tail: its bytes so far move to a
//! temporary file, and the waiting sections are placed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::durability::Durability;
use super::interner::StringInterner;
use super::layout::WriteLayout;
use super::output::Output;
use super::sink::SectionSink;
use crate::format::kind::SectionKind;
use crate::model::descriptor::RecordLayout;
use crate::model::error::{Error, Location, Result};
use crate::model::section::{GlobalSection, SectionRef, StreamSection};
use crate::model::strings::{MapStrings, StringId, Text};
use crate::model::version::MIN_SAMPLE_FILE_VERSION;
use crate::read::{MemoryBind, Tb5File};

mod content;

use content::{DataState, GlobalBuilder, StreamState};

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
    /// Written and done in this session, and open for reading.
    ReadingWritten,
}

/// What this session finished, as a file to read, and the state it shows.
struct SessionView {
    stamp: Stamp,
    file: Tb5File,
}

/// The output's revision, the global sections written and the streams
/// done in this session: what a view shows changes with one of them.
type Stamp = (u64, usize, usize);

/// One open TB5 file with the TBRW lifecycle (see the module doc).
pub struct Engine {
    path: PathBuf,
    mode: u32,
    existing: Option<Tb5File>,
    out: Option<Output>,
    /// Binds the bind layer keeps for this file: made read-only, or the
    /// in-memory view of a bind queued in this session.
    memory_binds: HashMap<u32, MemoryBind>,
    /// Streams written in this session that `dobind` was asked to bind: a
    /// bind is made from committed records (the view of the session is for
    /// reading them back, not for binding), so the bind layer's close binds
    /// them right after the commit.
    binds_at_close: BTreeSet<u32>,
    strings: StringInterner,
    globals: [State; 6],
    builders: [GlobalBuilder; 6],
    streams: BTreeMap<u32, StreamState>,
    /// `sample_file_version` of the version info written in this session.
    written_version: Option<u32>,
    /// What reads of sections finished in this session see (see the module doc).
    view: Option<SessionView>,
    finished: bool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("path", &self.path).field("mode", &self.mode).finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens `path` with `TBRW_FILE_*` flags (see [`access`]); commits
    /// wait as [`Durability::from_env`] says.
    pub fn open(path: impl AsRef<Path>, mode: u32) -> Result<Engine> {
        Engine::open_with(path, mode, Durability::from_env())
    }

    /// [`Engine::open`] with commits that wait as `durability` says.
    pub fn open_with(path: impl AsRef<Path>, mode: u32, durability: Durability) -> Result<Engine> {
        Engine::open_as(path, mode, durability, WriteLayout::default())
    }

    /// [`Engine::open_with`], a new file (`CREATE_ALWAYS`) written in
    /// `layout` (an append keeps the file's layout).
    pub fn open_as(path: impl AsRef<Path>, mode: u32, durability: Durability, layout: WriteLayout) -> Result<Engine> {
        let path = path.as_ref().to_owned();
        let known = access::READ | access::WRITE | access::CREATE_ALWAYS;
        if mode == 0 || mode & !known != 0 {
            return Err(Error::InvalidAccess { mode, what: "opening (unknown or no flags)" });
        }
        let create = mode & access::CREATE_ALWAYS != 0;
        let write = create || mode & access::WRITE != 0;
        let (existing, out) = if create {
            (None, Some(Output::create(&path, durability, layout)?))
        } else if write {
            let (out, existing) = Output::append(&path, durability)?;
            (Some(existing), Some(out))
        } else {
            (Some(Tb5File::open(&path)?), None)
        };
        Engine::from_parts(path, mode, existing, out)
    }

    /// After [`Engine::commit_close`] succeeded: an engine appending to the
    /// file just committed, which keeps this one's writer lock (the bind
    /// layer's close stores there the binds of streams this session wrote).
    pub(crate) fn continue_appending(&mut self) -> Result<Engine> {
        let out = self.out.take().ok_or(Error::InvalidAccess { mode: self.mode, what: "appending after close" })?;
        let (out, existing) = out.into_append()?;
        Engine::from_parts(self.path.clone(), access::WRITE, Some(existing), Some(out))
    }

    fn from_parts(path: PathBuf, mode: u32, existing: Option<Tb5File>, out: Option<Output>) -> Result<Engine> {
        let write = out.is_some();
        // The ids of an Intel file's strings are their offsets: new ones
        // are numbered past the file's end, so the two never meet.
        let first =
            existing.as_ref().map_or(0, |e| if e.layout().is_intel() { e.committed_end() } else { e.string_count() });
        let mut strings = StringInterner::new(first);
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
            memory_binds: HashMap::new(),
            binds_at_close: BTreeSet::new(),
            strings,
            globals,
            builders: std::array::from_fn(|_| GlobalBuilder::None),
            streams: BTreeMap::new(),
            written_version: None,
            view: None,
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

    /// The committed content (when opened for reading or appending).
    pub fn existing(&self) -> Option<&Tb5File> {
        self.existing.as_ref()
    }

    // ------------------------------------------------------------ for the bind layer

    pub(crate) fn stream_written_here(&self, n: u32) -> bool {
        self.streams.get(&n).is_some_and(|s| s.writing)
    }

    /// The record layout of a stream written in this session, once its
    /// data descriptor is done.
    pub(crate) fn written_layout(&self, n: u32) -> Option<&RecordLayout> {
        self.streams.get(&n).filter(|s| s.writing).and_then(|s| s.layout.as_ref())
    }

    /// The streams of this session to bind at close (see the field).
    pub(crate) fn binds_at_close(&self) -> &BTreeSet<u32> {
        &self.binds_at_close
    }

    pub(crate) fn binds_at_close_mut(&mut self) -> &mut BTreeSet<u32> {
        &mut self.binds_at_close
    }

    /// The output, when the file is open for writing.
    pub(crate) fn output(&self) -> Option<&Output> {
        self.out.as_ref()
    }

    /// The output, when the file is open for writing.
    pub(crate) fn output_mut(&mut self) -> Option<&mut Output> {
        self.out.as_mut()
    }

    /// Binds kept in memory (see the field).
    pub(crate) fn memory_binds(&self) -> &HashMap<u32, MemoryBind> {
        &self.memory_binds
    }

    /// Binds kept in memory, to change.
    pub(crate) fn memory_binds_mut(&mut self) -> &mut HashMap<u32, MemoryBind> {
        &mut self.memory_binds
    }

    /// Writes a process/thread section made outside the lifecycle (a bind's
    /// generated tables: `pids` and `tids` encoded records) if the file has
    /// none and none is being written. Returns whether it was written.
    pub(crate) fn add_generated_process_threads(
        &mut self,
        pids: Vec<u8>,
        tids: Vec<u8>,
        np: u64,
        nt: u64,
    ) -> Result<bool> {
        let s = GlobalSection::ProcessThread;
        if self.globals[s.index()] != State::Absent {
            return Ok(false);
        }
        let Some(out) = self.out.as_mut() else { return Ok(false) };
        use super::output::{process_thread_section, Part};
        out.submit(process_thread_section(Part::Bytes(pids), Part::Bytes(tids), np, nt))?;
        self.globals[s.index()] = State::Written;
        Ok(true)
    }

    /// Makes the process/thread section readable when the file has none
    /// (`present`), because a read-only bind's generated tables stand in for
    /// it (guide 6.2), or takes that back when the last such bind is dropped.
    pub(crate) fn set_generated_process_threads(&mut self, present: bool) {
        let s = GlobalSection::ProcessThread;
        if self.existing.as_ref().is_some_and(|f| f.has_section(s)) {
            return;
        }
        match (present, self.globals[s.index()]) {
            (true, State::Absent) => self.globals[s.index()] = State::Existing,
            (false, State::Existing | State::Reading) => self.globals[s.index()] = State::Absent,
            _ => {}
        }
    }

    // ------------------------------------------------------------ access

    fn require_write(&self, what: &'static str) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::InvalidAccess { mode: self.mode, what });
        }
        Ok(())
    }

    fn require_read(&self, what: &'static str) -> Result<()> {
        if self.mode & access::READ == 0 {
            return Err(Error::InvalidAccess { mode: self.mode, what });
        }
        Ok(())
    }

    /// The committed file, for a section or stream open for reading in it.
    fn committed(&self, what: &'static str) -> Result<&Tb5File> {
        self.existing.as_ref().ok_or(Error::InvalidAccess { mode: self.mode, what })
    }

    fn stamp(&self) -> Stamp {
        let written = self.globals.iter().filter(|g| matches!(g, State::Written | State::ReadingWritten)).count();
        let done = self.streams.values().filter(|s| s.writing && s.done).count();
        (self.out.as_ref().map_or(0, Output::revision), written, done)
    }

    /// Makes the view of what this session finished current (see the
    /// module doc); `needs` selects the sections about to be read, which
    /// must not wait in the output's queue.
    fn refresh_view(&mut self, needs: impl Fn(SectionKind, u32) -> bool) -> Result<()> {
        let Some(out) = self.out.as_mut() else { return Ok(()) };
        if let Some(holder) = out.waiting_for().filter(|_| out.is_waiting(&needs)) {
            // The tail's holder is the data section of a stream being written.
            if let Some(data) = self.streams.get_mut(&holder).and_then(|st| st.data.as_mut()) {
                out.free_tail(&mut data.sink)?;
            }
        }
        let stamp = self.stamp();
        if self.view.as_ref().is_some_and(|v| v.stamp == stamp) {
            return Ok(());
        }
        let (globals, streams) = (&self.globals, &self.streams);
        let finished = |kind: SectionKind, n: u32| match kind {
            SectionKind::Global(g) => matches!(globals[g.index()], State::Written | State::ReadingWritten),
            SectionKind::Stream(_) => streams.get(&n).is_some_and(|st| st.writing && st.done),
            // Binds and stored symbols of this session are read through the bind layer.
            _ => false,
        };
        let out = self.out.as_ref().expect("checked above");
        let file = out.view(self.existing.as_ref(), finished, self.number_of_streams())?;
        self.view = Some(SessionView { stamp, file });
        Ok(())
    }

    fn view_file(&self) -> Result<&Tb5File> {
        self.view.as_ref().map(|v| &v.file).ok_or(Error::InvalidAccess { mode: self.mode, what: "reading" })
    }

    /// The file `get_one_module`, `get_one_pid` and `get_one_tid` read (no
    /// section needs to be open for them; `section` is the one they read):
    /// with read permission, what this session finished too; else the
    /// committed file (`None` for a new file).
    pub fn readable_file(&mut self, section: GlobalSection) -> Result<Option<&Tb5File>> {
        let finished = matches!(self.globals[section.index()], State::Written | State::ReadingWritten);
        if self.mode & access::READ == 0 || !finished {
            return Ok(self.existing.as_ref());
        }
        self.refresh_view(|kind, _| kind == SectionKind::Global(section))?;
        self.view_file().map(Some)
    }

    /// The text of a string id of this file: committed, or new in this session.
    pub fn string(&self, id: StringId) -> Result<&str> {
        if let Some(text) = self.strings.new_text(id) {
            return Ok(text);
        }
        self.existing.as_ref().ok_or(Error::InvalidString { id: id.0 })?.string(id)
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
        self.builders[s.index()] = GlobalBuilder::new(s);
        self.globals[s.index()] = State::Writing;
        Ok(())
    }

    /// `TBRW_reading_section`: a committed section, or one this session
    /// finished (see the module doc).
    pub fn reading_section(&mut self, s: GlobalSection) -> Result<()> {
        self.require_read("reading a section")?;
        match self.globals[s.index()] {
            State::Existing => {
                self.globals[s.index()] = State::Reading;
                Ok(())
            }
            State::Written => {
                self.refresh_view(|kind, _| kind == SectionKind::Global(s))?;
                self.globals[s.index()] = State::ReadingWritten;
                Ok(())
            }
            State::Reading | State::ReadingWritten | State::Writing => Err(Error::SectionInUse { section: s.into() }),
            // Intel's library opens the hardware section of any file in its
            // layout for reading (and then gives 80 for a missing system).
            State::Absent
                if s == GlobalSection::Hardware && self.existing.as_ref().is_some_and(|e| e.layout().is_intel()) =>
            {
                self.globals[s.index()] = State::Reading;
                Ok(())
            }
            State::Absent => Err(Error::SectionNotExist { section: s.into() }),
        }
    }

    /// `TBRW_done_section`: ends reading, or finishes writing (the section
    /// is then part of the file once it is closed). The section is closed
    /// whatever this returns: one that cannot be written (given nothing,
    /// or invalid) is dropped, as if never opened, and the error says why.
    pub fn done_section(&mut self, s: GlobalSection) -> Result<()> {
        match self.globals[s.index()] {
            State::Reading => {
                // (A missing hardware section of an Intel file stays missing: it can be written.)
                let exists = self.existing.as_ref().is_some_and(|e| e.has_section(s));
                self.globals[s.index()] = if exists { State::Existing } else { State::Absent };
                Ok(())
            }
            State::ReadingWritten => {
                self.globals[s.index()] = State::Written;
                Ok(())
            }
            State::Writing => {
                let r = self
                    .finish_global(s)
                    .and_then(|pending| self.out.as_mut().expect("writing implies output").submit(pending));
                if let Err(e) = r {
                    self.discard_section(s);
                    return Err(e);
                }
                self.builders[s.index()] = GlobalBuilder::None;
                self.globals[s.index()] = State::Written;
                Ok(())
            }
            _ => Err(Error::SectionNotExist { section: s.into() }),
        }
    }

    /// Checks that a global section is open for reading (`get_` functions)
    /// and returns the file to read it from.
    pub fn check_readable(&self, s: GlobalSection) -> Result<&Tb5File> {
        match self.globals[s.index()] {
            State::Reading => self.committed("reading"),
            State::ReadingWritten => self.view_file(),
            _ => Err(Error::SectionNotReadable { section: s.into() }),
        }
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

    /// `TBRW_reading_stream`: a committed stream, or one this session
    /// finished with `done_stream` (see the module doc).
    pub fn reading_stream(&mut self, n: u32) -> Result<()> {
        self.require_read("reading a stream")?;
        if n >= self.committed_streams() {
            return self.reading_written_stream(n);
        }
        let file = self.committed("reading a stream")?;
        if self.streams.contains_key(&n) {
            return Err(Error::StreamInUse { stream: n });
        }
        let mut st = StreamState::new(false);
        let stream = file.stream(n)?;
        // Intel's library opens the data section of stream 0 when it has a
        // descriptor and no records (no data section in its layout) and the
        // file has VTune's legacy sample records section (as every file this
        // project writes has), and then finds no entry in it; it finds no
        // data section for such a stream otherwise, nor for any other
        // stream [R: `streams.tb7`, stream 2; a VTune XE 2016 file's
        // record-less streams 4 and 5; a winIDEA import without, and with,
        // its legacy sample records section].
        let legacy = file.intel().is_some_and(|i| {
            i.legacy.iter().any(|e| e.section_type == crate::format::intel::section_type::LEGACY_SAMPLE_RECORDS)
        });
        let no_records = legacy && n == 0 && stream.has_section(StreamSection::DataDescription);
        for s in StreamSection::ALL {
            if stream.has_section(s) || (s == StreamSection::Data && no_records) {
                st.sections[s.index()] = State::Existing;
            }
        }
        self.streams.insert(n, st);
        Ok(())
    }

    /// [`Engine::reading_stream`] of a stream of this session.
    fn reading_written_stream(&mut self, n: u32) -> Result<()> {
        match self.streams.get(&n) {
            None => return Err(Error::StreamNotExist { stream: n }),
            Some(st) if !st.done || st.reading.is_some() => return Err(Error::StreamInUse { stream: n }),
            Some(_) => {}
        }
        self.refresh_view(|kind, stream| stream == n && matches!(kind, SectionKind::Stream(_)))?;
        let st = self.streams.get_mut(&n).expect("checked above");
        st.reading = Some(st.sections.map(|x| if x == State::Written { State::Existing } else { State::Absent }));
        Ok(())
    }

    /// `TBRW_done_stream`: ends reading, or finishes a written stream. A
    /// written stream needs its stream info and data descriptor sections.
    pub fn done_stream(&mut self, n: u32) -> Result<()> {
        if let Some(st) = self.streams.get_mut(&n).filter(|st| st.done) {
            let reading = st.reading.ok_or(Error::StreamNotExist { stream: n })?;
            if let Some(open) = StreamSection::ALL.into_iter().find(|s| reading[s.index()] == State::Reading) {
                return Err(Error::StreamSectionNotClosed { stream: n, section: open });
            }
            st.reading = None;
            return Ok(());
        }
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
            out.release_tail(n);
            out.remove(|_, stream| stream == n);
        }
    }

    /// Whether stream `n` is being written in this session and not finished.
    pub(crate) fn stream_open_for_writing(&self, n: u32) -> bool {
        self.streams.get(&n).is_some_and(|s| s.writing && !s.done)
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
            StreamSection::EventDescription => {
                st.events = Some((SectionSink::memory(), 0));
                st.event_known = [false; 256];
            }
            StreamSection::DataDescription => st.descs.clear(),
            StreamSection::Data => st.data = Some(DataState::new(out.data_sink(n)?)),
            StreamSection::UserDefinedStream => st.user = None,
            StreamSection::StreamInfo => st.info = None,
        }
        st.sections[s.index()] = State::Writing;
        Ok(())
    }

    /// `TBRW_reading_stream_section`.
    pub fn reading_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        let st = self.streams.get_mut(&n).ok_or(Error::StreamNotExist { stream: n })?;
        let sections = match (st.writing, st.done, st.reading.as_mut()) {
            (false, _, _) => &mut st.sections,
            (true, true, Some(reading)) => reading,
            (true, true, None) => {
                return Err(Error::InvalidStream { stream: n, why: "it is not open for reading".into() })
            }
            (true, false, _) => {
                return Err(Error::InvalidStream { stream: n, why: "it is open for writing, not reading".into() })
            }
        };
        match sections[s.index()] {
            State::Existing => {
                sections[s.index()] = State::Reading;
                Ok(())
            }
            State::Reading => Err(Error::SectionInUse { section: SectionRef::Stream(n, s) }),
            _ => Err(Error::SectionNotExist { section: SectionRef::Stream(n, s) }),
        }
    }

    /// Checks that a stream section is open for reading (`get_`/`enumerate_`)
    /// and returns the file to read it from.
    pub fn check_stream_readable(&self, n: u32, s: StreamSection) -> Result<&Tb5File> {
        let st = self.streams.get(&n).ok_or(Error::StreamNotExist { stream: n })?;
        let sections = if st.writing { st.reading.as_ref() } else { Some(&st.sections) };
        if sections.is_none_or(|x| x[s.index()] != State::Reading) {
            return Err(Error::SectionNotReadable { section: SectionRef::Stream(n, s) });
        }
        if st.writing {
            self.view_file()
        } else {
            self.committed("reading")
        }
    }

    /// `TBRW_done_stream_section`. As [`Engine::done_section`], the section
    /// is closed whatever this returns (an invalid one is dropped).
    ///
    /// Sections come in any order (guide 5.2): a data section done before
    /// the descriptor waits until the descriptor is done, and a descriptor
    /// done after data arrived must fit them (else it is the one dropped,
    /// and the data wait for another).
    pub fn done_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        let section = SectionRef::Stream(n, s);
        let st = self.streams.get_mut(&n).ok_or(Error::StreamNotExist { stream: n })?;
        if let Some(reading) = st.reading.as_mut().filter(|r| r[s.index()] == State::Reading) {
            reading[s.index()] = State::Existing;
            return Ok(());
        }
        match st.sections[s.index()] {
            State::Reading => {
                st.sections[s.index()] = State::Existing;
                return Ok(());
            }
            State::Writing => {}
            _ => return Err(Error::SectionNotExist { section }),
        }
        if s == StreamSection::Data && st.layout.is_none() {
            if let Some(why) = st.data.as_ref().and_then(|d| d.poisoned.clone()) {
                self.discard_stream_section(n, s);
                return Err(Error::UnsupportedDataSize { stream: n, what: why });
            }
            st.data_waiting = true;
            st.sections[s.index()] = State::Written;
            return Ok(());
        }
        let r = self.finish_stream_section(n, s);
        if r.is_err() {
            self.discard_stream_section(n, s);
        }
        r
    }

    fn finish_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        if s == StreamSection::Data {
            self.note_event_indices(n)?;
        }
        let st = self.streams.get_mut(&n).expect("checked by the caller");
        let pending = st.finish_section(n, s)?;
        if s == StreamSection::DataDescription {
            if let Err(e) = st.check_early_data(n) {
                st.layout = None;
                return Err(e);
            }
        }
        let out = self.out.as_mut().expect("writing implies output");
        if s == StreamSection::Data && pending.is_direct() {
            // Written where it lies: it counts once its bytes are all there.
            out.finish_data(pending)?;
        } else {
            out.submit(pending)?;
        }
        st.sections[s.index()] = State::Written;
        if s == StreamSection::DataDescription && st.data_waiting {
            st.data_waiting = false;
            if let Err(e) = self.finish_stream_section(n, StreamSection::Data) {
                let st = self.streams.get_mut(&n).expect("checked by the caller");
                st.sections[StreamSection::Data.index()] = State::Absent;
                st.data = None;
                if let Some(out) = self.out.as_mut() {
                    out.release_tail(n);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Drops a global section being written, as if it had never been opened.
    pub fn discard_section(&mut self, s: GlobalSection) {
        if self.globals[s.index()] == State::Writing {
            self.globals[s.index()] = State::Absent;
            self.builders[s.index()] = GlobalBuilder::None;
            if s == GlobalSection::VersionInfo {
                self.written_version = None;
            }
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
            StreamSection::EventDescription => {
                st.events = None;
                st.event_known = [false; 256];
            }
            StreamSection::DataDescription => {
                st.descs.clear();
                st.layout = None;
            }
            StreamSection::Data => {
                st.data = None;
                st.events_used = None;
                if let Some(out) = self.out.as_mut() {
                    out.release_tail(n);
                }
            }
            StreamSection::UserDefinedStream => st.user = None,
            StreamSection::StreamInfo => st.info = None,
        }
    }

    /// `TBRW_verify`: checks the committed content ([`Tb5File::verify`])
    /// and, in a writing session, what this session wrote with the rules
    /// the same check applies after reopening: the sections the guide's
    /// 6.2 requires exist (committed or finished in this session, also in
    /// every stream finished in this session), then what
    /// [`Engine::close`] refuses to commit (see [`Engine::check_written`]).
    pub fn verify(&self) -> Result<()> {
        if let Some(f) = &self.existing {
            f.verify()?;
        }
        if self.out.is_none() {
            return Ok(());
        }
        for g in GlobalSection::ALL {
            if g.is_required()
                && !matches!(
                    self.globals[g.index()],
                    State::Existing | State::Reading | State::Written | State::ReadingWritten
                )
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
        if let Some(found) = self.written_version.filter(|&v| v < MIN_SAMPLE_FILE_VERSION) {
            return Err(Error::IncompatibleVersion {
                path: self.path.clone(),
                found,
                min: MIN_SAMPLE_FILE_VERSION,
                max: u32::MAX,
            });
        }
        self.check_written()
    }

    /// The rule of [`Tb5File::verify`] for damage that what this session
    /// wrote can break (the others hold by construction): every legacy
    /// sample's eventIndex names an event of its stream (one that has an
    /// event section). Close refuses
    /// what breaks it. Verify's other findings are not damage and close
    /// commits them: a file without the guide's 6.2 sections is incomplete,
    /// one with a `sample_file_version` below 16 states an old version.
    pub fn check_written(&self) -> Result<()> {
        for (&n, st) in self.streams.iter().filter(|(_, st)| st.writing && st.done) {
            // Without an event section the stream is incomplete, not damaged.
            let Some(used) = st
                .events_used
                .as_ref()
                .filter(|_| st.sections[StreamSection::EventDescription.index()] == State::Written)
            else {
                continue;
            };
            if let Some(ev) = (0..256).find(|&i| used[i] && !st.event_known[i]) {
                let known = st.event_known.iter().filter(|&&k| k).count();
                return Err(Error::malformed(
                    Location {
                        file: self.path.clone(),
                        section: SectionRef::Stream(n, StreamSection::Data),
                        record: None,
                        offset: 0,
                    },
                    format!("a sample's eventIndex {ev} names no event of stream {n} ({known} events below 256)"),
                ));
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
        if let Some(g) = GlobalSection::ALL
            .into_iter()
            .find(|g| matches!(self.globals[g.index()], State::Reading | State::ReadingWritten))
        {
            return Err(Error::NotAllSectionsClosed { section: g.into() });
        }
        if let Some((&n, _)) = self.streams.iter().find(|(_, st)| !st.writing || st.reading.is_some()) {
            return Err(Error::NotAllSectionsClosed { section: SectionRef::WholeStream(n) });
        }
        Ok(())
    }

    /// The commit of `TBRW_close` (the bind layer's [`Engine::close`] calls
    /// it, then binds the streams of [`Engine::binds_at_close`]). A
    /// lifecycle error (something still open) leaves the engine as it was,
    /// so the caller can finish or abort; so does content [`Engine::verify`]
    /// would call damaged ([`Engine::check_written`]): close never commits a
    /// file its own verify rejects as damaged. An I/O error during the
    /// commit aborts.
    pub(crate) fn commit_close(&mut self) -> Result<()> {
        self.check_all_closed()?;
        self.check_written()?;
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
        let streams = self.number_of_streams();
        let Some(out) = self.out.as_mut() else { return Ok(()) };
        out.commit(self.existing.as_ref(), self.strings.first_new_id(), self.strings.new_strings(), streams)
    }

    /// `TBRW_abort_cleanup_and_close`: drops everything written in this
    /// session. A new file never appears; an existing file stays as it was.
    pub fn abort(&mut self) {
        self.cleanup();
        self.finished = true;
    }

    fn cleanup(&mut self) {
        if let Some(out) = self.out.take() {
            // A callback may still read records of the view (it may even
            // have aborted the file itself): their bytes must not go.
            out.cleanup(self.view.as_ref().is_some_and(|v| v.file.mapping_shared()));
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

#[cfg(test)]
mod session_read_tests {
    //! Reads of what a session finished (guide 5, step 3), through the engine.
    use super::*;
    use crate::model::codes::*;
    use crate::model::descriptor::{desc_type, DescEntry};
    use crate::model::module::Module;
    use crate::model::stream::StreamInfo;

    fn code<T: std::fmt::Debug>(r: Result<T>) -> u32 {
        r.expect_err("expected an error").code()
    }

    /// A stream of 8-byte ST_IP records (and a 4-byte ST_PID), `n` of them from `base`.
    fn start_stream(e: &mut Engine, s: u32, comment: &str) {
        e.writing_stream(s).unwrap();
        e.writing_stream_section(s, StreamSection::StreamInfo).unwrap();
        e.set_stream_info(s, &StreamInfo { comment: Some(comment.into()), ..Default::default() }).unwrap();
        e.done_stream_section(s, StreamSection::StreamInfo).unwrap();
        e.writing_stream_section(s, StreamSection::DataDescription).unwrap();
        for (t, size) in [(desc_type::IP, 8), (desc_type::PID, 4)] {
            e.add_data_descriptor_entry(s, &DescEntry { desc_type: t, data_size: size, ..Default::default() }).unwrap();
        }
        e.done_stream_section(s, StreamSection::DataDescription).unwrap();
        e.writing_stream_section(s, StreamSection::Data).unwrap();
    }

    fn add(e: &mut Engine, s: u32, base: u64, range: std::ops::Range<u64>) {
        for i in range {
            let mut r = (base + i).to_le_bytes().to_vec();
            r.extend_from_slice(&7u32.to_le_bytes());
            e.add_data(s, &r).unwrap();
        }
    }

    fn finish(e: &mut Engine, s: u32) {
        e.done_stream_section(s, StreamSection::Data).unwrap();
        e.done_stream(s).unwrap();
    }

    /// The records of stream `s`, read through the engine as the C API does.
    fn records(e: &mut Engine, s: u32) -> Vec<u64> {
        e.reading_stream(s).unwrap();
        e.reading_stream_section(s, StreamSection::Data).unwrap();
        e.reading_stream_section(s, StreamSection::StreamInfo).unwrap();
        let f = e.check_stream_readable(s, StreamSection::Data).unwrap();
        let d = f.stream(s).unwrap().checked_data().unwrap().unwrap();
        let v = (0..d.len()).map(|i| u64::from_le_bytes(d.record(i).unwrap()[..8].try_into().unwrap())).collect();
        let info = f.stream(s).unwrap().info().unwrap().unwrap();
        assert!(e.string(info.comment).is_ok_and(|c| c.starts_with("stream")));
        e.done_stream_section(s, StreamSection::Data).unwrap();
        e.done_stream_section(s, StreamSection::StreamInfo).unwrap();
        e.done_stream(s).unwrap();
        v
    }

    #[test]
    fn a_stream_done_before_an_earlier_one_is_read_and_the_earlier_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tb5");
        let mut e = Engine::open(&path, access::READ | access::WRITE | access::CREATE_ALWAYS).unwrap();
        start_stream(&mut e, 0, "stream 0");
        add(&mut e, 0, 0x1000, 0..200_000); // holds the tail, past one sink chunk
        start_stream(&mut e, 1, "stream 1");
        add(&mut e, 1, 0x9000, 0..50);
        finish(&mut e, 1); // waits for the tail
        assert_eq!(code(e.reading_stream(0)), TBRW_STREAM_ALREADY_IN_USE);
        assert_eq!(code(e.reading_stream(2)), TBRW_STREAM_NOT_EXIST);
        // Stream 1 is read although stream 0, before it, is not finished:
        // the view has a gap there.
        assert_eq!(records(&mut e, 1), (0x9000..0x9000 + 50).collect::<Vec<_>>());
        // Stream 0 goes on where it was, off the tail now.
        add(&mut e, 0, 0x1000, 200_000..250_000);
        finish(&mut e, 0);
        assert_eq!(records(&mut e, 0), (0x1000..0x1000 + 250_000).collect::<Vec<_>>());
        assert_eq!(records(&mut e, 1).len(), 50, "read again");
        // A module section finished after the view was made is in the next one.
        e.writing_section(GlobalSection::Module).unwrap();
        e.add_module(&Module { name: Some("late.so".into()), length: 16, ..Default::default() }).unwrap();
        e.done_section(GlobalSection::Module).unwrap();
        let f = e.readable_file(GlobalSection::Module).unwrap().unwrap();
        let m = f.modules().unwrap().unwrap().get(0).unwrap();
        assert_eq!(e.string(m.name).unwrap(), "late.so");
        e.reading_section(GlobalSection::Module).unwrap();
        assert_eq!(code(e.close()), TBRW_NOT_ALL_SECTIONS_CLOSED);
        e.done_section(GlobalSection::Module).unwrap();
        e.reading_stream(1).unwrap();
        assert_eq!(code(e.close()), TBRW_NOT_ALL_SECTIONS_CLOSED);
        e.done_stream(1).unwrap();
        e.close().unwrap();
        let t = Tb5File::open(&path).unwrap();
        t.verify().unwrap_or_else(|err| assert_eq!(err.code(), TBRW_SECTION_NOT_EXIST, "only incomplete: {err}"));
        let d = t.stream(0).unwrap().checked_data().unwrap().unwrap();
        assert_eq!(d.len(), 250_000);
        assert_eq!(d.record(249_999).unwrap()[..8], (0x1000u64 + 249_999).to_le_bytes());
    }

    #[test]
    fn without_read_permission_nothing_of_the_session_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = Engine::open(dir.path().join("w.tb5"), access::WRITE | access::CREATE_ALWAYS).unwrap();
        start_stream(&mut e, 0, "stream 0");
        add(&mut e, 0, 0, 0..3);
        finish(&mut e, 0);
        e.writing_section(GlobalSection::Module).unwrap();
        e.add_module(&Module::default()).unwrap();
        e.done_section(GlobalSection::Module).unwrap();
        assert_eq!(code(e.reading_stream(0)), TBRW_INVALID_ACCESS_PERMS);
        assert_eq!(code(e.reading_section(GlobalSection::Module)), TBRW_INVALID_ACCESS_PERMS);
        assert!(e.readable_file(GlobalSection::Module).unwrap().is_none(), "a new file has nothing committed");
        e.close().unwrap();
    }
}
