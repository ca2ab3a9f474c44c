//! The run-time engine: one open TB5 file and the TBRW lifecycle rules.
//!
//! [`Engine`] is what `TBRW_open` returns in the C API: every operation of
//! the guide (open a section for reading or writing, set/add into it, mark
//! it done, the same for streams and their sections, close, abort) is a
//! method here that checks the state and fails with the error the guide
//! prescribes ([`Error::code`] gives the TBRW number). The typestate facade
//! in [`crate::writer`] drives this same engine, so the rules exist once.
//!
//! This file holds the rules: which section may be opened, read, finished
//! or discarded when, and the commit; `streams` the same for streams and
//! their sections. What goes into an open section (the `set_`
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
#[cfg(test)]
mod session_read_tests;
mod streams;

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
