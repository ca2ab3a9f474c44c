//! The output of a writing session: where finished sections are placed,
//! the queue of sections waiting for the tail, the commit and the cleanup.
//!
//! The file has one tail. A data section being written may claim it and
//! stream straight to disk; while it holds it, other finished sections wait
//! in [`Output`]'s queue. Nothing outside this file touches the output's
//! fields: the engine and the bind layer use the methods below.
//!
//! Output never becomes visible half-written: a new file is built in a
//! [`WorkFile`] (unnamed where the filesystem allows) and put at the target
//! on commit; an append writes only past the committed end and commits by
//! rewriting one commit slot of the header (docs/FORMAT.md, "Commits").
//! Bytes a killed append left past the committed end are cut off by the
//! next writer to open the file.
//!
//! Writers of one path exclude each other with an advisory lock (`flock`)
//! on the target ([`work_file::lock_target`]): an append holds it on the
//! file it extends, a new file on the file it is going to replace, so
//! neither can silently undo the other.
//!
//! Every write, truncation and the slot of a commit is followed by a crash
//! point (`tbrw_output::crash::crash_point`: test builds stop there on request).

use std::collections::HashSet;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::durability::Durability;
use super::intel;
use super::layout::WriteLayout;
use super::sink::SectionSink;
use super::work_file::{self, LockedFile, WorkFile};
use crate::format::container::{self, NO_STREAM};
use crate::format::intel::HEADER_SIZE as INTEL_HEADER_SIZE;
use crate::format::kind::SectionKind;
use crate::format::raw::{DirEntryRaw, ProcessThreadRaw, Raw};
use crate::model::error::{Error, Result};
use crate::model::section::{GlobalSection, StreamSection};
use crate::read::Tb5File;
use tbrw_output::crash::crash_point;

/// One part of a section on its way into the output.
pub(crate) enum Part {
    Bytes(Vec<u8>),
    Sink(SectionSink),
}

/// A finished section waiting to be placed.
pub(crate) struct Pending {
    kind: SectionKind,
    stream: u32,
    parts: Vec<Part>,
    count: u64,
    record_size: u32,
    /// The directory entry's flags.
    flags: u16,
}

impl Pending {
    /// A section of stream `stream` (or [`NO_STREAM`]) holding `count` entries.
    pub(crate) fn new(kind: SectionKind, stream: u32, parts: Vec<Part>, count: u64) -> Pending {
        Pending { kind, stream, parts, count, record_size: 0, flags: 0 }
    }

    /// A global section.
    pub(crate) fn global(s: GlobalSection, parts: Vec<Part>, count: u64) -> Pending {
        Pending::new(SectionKind::Global(s), NO_STREAM, parts, count)
    }

    /// A data section of records of `record_size` bytes; `time_ordered`:
    /// the writer saw every record's time and none went back.
    pub(crate) fn data(stream: u32, sink: SectionSink, count: u64, record_size: u32, time_ordered: bool) -> Pending {
        let kind = SectionKind::Stream(StreamSection::Data);
        let flags = if time_ordered { container::FLAG_TIME_ORDERED } else { 0 };
        Pending { record_size, flags, ..Pending::new(kind, stream, vec![Part::Sink(sink)], count) }
    }
}

impl Pending {
    /// Whether this is a data section written straight at the tail.
    pub(crate) fn is_direct(&self) -> bool {
        matches!(self.parts.as_slice(), [Part::Sink(s)] if s.direct_start().is_some())
    }
}

/// The process/thread section: its head, then the processes, then the threads.
pub(crate) fn process_thread_section(pids: Part, tids: Part, np: u64, nt: u64) -> Pending {
    let head = ProcessThreadRaw { pid_count: np, tid_count: nt }.encode();
    Pending::global(GlobalSection::ProcessThread, vec![Part::Bytes(head), pids, tids], np + nt)
}

/// What a commit writes.
enum Commit {
    /// This project's `\x89TB5` layout: commit slots (a new file, or an
    /// append to a file of that layout).
    Tb5,
    /// A new file in Intel's layout: the work file turned into it in place.
    IntelNew,
    /// An append to the Intel file `target` (open for writing, locked),
    /// built in `file`, an unnamed work file.
    IntelAppend { target: LockedFile },
}

/// The output file of a writing session (see the module doc).
pub(crate) struct Output {
    /// Whether commits `fsync` (see [`Durability`]).
    durability: Durability,
    commit: Commit,
    file: LockedFile,
    /// The work file of a new file (put at `path` on commit; it holds the
    /// writer lock of the file it replaces until then); `None` when appending.
    temp: Option<WorkFile>,
    /// The target path: what errors name, where a new file goes, and
    /// beside which spill files are made.
    path: PathBuf,
    /// Next free byte.
    end: u64,
    /// The committed end when appending; the header size for a new file.
    base_end: u64,
    /// The stream whose data section owns the tail.
    tail: Option<u32>,
    pending: Vec<Pending>,
    entries: Vec<DirEntryRaw>,
    /// Committed (kind, stream) sections to leave out of the next directory.
    removed: HashSet<(u16, u32)>,
    /// Counts the changes to what the session placed, queued or removed:
    /// a view of the session ([`Output::view`]) made at another count is stale.
    revision: u64,
}

impl Output {
    /// A new file, built in a work file for `path`. The path is checked
    /// and a file it would replace locked against other writers until this
    /// one is done, first (see [`work_file::lock_target`]).
    pub(crate) fn create(path: &Path, durability: Durability, layout: WriteLayout) -> Result<Output> {
        let open_err = |source| Error::FileOpen { path: path.to_owned(), source };
        let temp = WorkFile::create_locked(work_file::lock_target(path).map_err(open_err)?).map_err(open_err)?;
        // The same open file as the work file's, locked with it: this
        // output releases the lock when it is dropped, after the commit (or
        // the appends that follow it, `into_append`).
        let file = LockedFile::holding(temp.file().try_clone().map_err(|e| Error::io(path, "open", e))?);
        file.write_all_at(&container::new_header(), 0).map_err(|e| Error::io(path, "write", e))?;
        crash_point("header written");
        // An Intel file's header takes the room the first sections leave.
        let (commit, start) = match layout {
            WriteLayout::Tb5 => (Commit::Tb5, container::HEADER_SIZE),
            WriteLayout::Intel => (Commit::IntelNew, INTEL_HEADER_SIZE),
        };
        Ok(Output::new(file, Some(temp), path, start, durability, commit))
    }

    /// An append to the file at `path`: locks it for this writer and returns
    /// it with its committed content. Bytes past the committed end (what a
    /// killed append left) are cut off here, and so are the work files a
    /// killed writer of the same target left beside it. A file whose newest
    /// commit does not read is refused: appending would overwrite it.
    pub(crate) fn append(path: &Path, durability: Durability) -> Result<(Output, Tb5File)> {
        let open_err = |source| Error::FileOpen { path: path.to_owned(), source };
        work_file::check_existing(path).map_err(open_err)?;
        let file = work_file::lock_open(path, true).map_err(open_err)?;
        crash_point("target locked");
        work_file::remove_dead(&work_file::folder_of(path), path);
        let existing = Tb5File::open(path)?;
        if existing.layout().is_intel() {
            return Output::append_intel(path, file, existing, durability);
        }
        // A newer commit that does not read (lost writes) would be cut off
        // and its slot overwritten: refused, so that `verify` can still name it.
        if let Some(e) = existing.passed_over_error() {
            return Err(e);
        }
        let end = existing.committed_end();
        file.set_len(end).map_err(|e| Error::io(path, "truncate", e))?;
        crash_point("tail cut");
        Ok((Output::new(file, None, path, end, durability, Commit::Tb5), existing))
    }

    /// An append to an Intel file (`target`, locked): the session's
    /// sections go to an unnamed work file; the commit appends Intel's
    /// sections to the target (`intel::commit_append`).
    fn append_intel(
        path: &Path,
        target: LockedFile,
        existing: Tb5File,
        durability: Durability,
    ) -> Result<(Output, Tb5File)> {
        intel::check_append(&existing)?;
        let scratch = work_file::spill_file(path).map_err(|e| Error::io(path, "create a work file for", e))?;
        let file = LockedFile::holding(scratch);
        file.write_all_at(&container::new_header(), 0).map_err(|e| Error::io(path, "write", e))?;
        let commit = Commit::IntelAppend { target };
        Ok((Output::new(file, None, path, container::HEADER_SIZE, durability, commit), existing))
    }

    fn new(
        file: LockedFile,
        temp: Option<WorkFile>,
        path: &Path,
        end: u64,
        durability: Durability,
        commit: Commit,
    ) -> Output {
        Output {
            durability,
            commit,
            file,
            temp,
            path: path.to_owned(),
            end,
            base_end: end,
            tail: None,
            pending: Vec::new(),
            entries: Vec::new(),
            removed: HashSet::new(),
            revision: 0,
        }
    }

    /// Appends bytes to a sink of a section of this output.
    pub(crate) fn write(&self, sink: &mut SectionSink, bytes: &[u8]) -> Result<()> {
        sink.write(bytes, &self.file, &self.path)
    }

    /// Hands the bytes a sink of this output holds so far to `f`, in order
    /// (the engine checks a data section's records before it is placed).
    pub(crate) fn read_back(&self, sink: &SectionSink, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        sink.read_back(&self.file, &self.path, f)
    }

    /// A sink for the data section of `stream`: straight to the tail when
    /// it is free (the stream then holds it), else in memory.
    pub(crate) fn data_sink(&mut self, stream: u32) -> Result<SectionSink> {
        if self.tail.is_some() {
            return Ok(SectionSink::memory());
        }
        self.tail = Some(stream);
        let start = container::align(self.end);
        self.zero_pad(self.end, start)?;
        self.end = start;
        Ok(SectionSink::direct(start, self.durability.syncs()))
    }

    /// Gives up the tail if `stream` holds it: nothing was placed after its
    /// direct data section, so those bytes are overwritten by what comes
    /// next (or cut off at commit). Waiting sections stay queued for the
    /// next placement.
    pub(crate) fn release_tail(&mut self, stream: u32) {
        if self.tail == Some(stream) {
            self.tail = None;
        }
    }

    /// Finishes a data section: a direct one is entered where it lies and
    /// frees the tail (placing what waited for it); one in memory is queued.
    pub(crate) fn finish_data(&mut self, p: Pending) -> Result<()> {
        let direct = match p.parts.as_slice() {
            [Part::Sink(s)] => s.direct_start(),
            _ => None,
        };
        let Some(start) = direct else { return self.submit(p) };
        let Some(Part::Sink(sink)) = p.parts.into_iter().next() else { unreachable!("matched above") };
        let (length, crc) = sink.finish_direct(&self.file, &self.path)?;
        self.revision += 1;
        crash_point("data section written");
        self.entries.push(DirEntryRaw {
            flags: p.flags,
            ..entry(p.kind, p.stream, start, length, p.count, p.record_size, crc)
        });
        self.end = start + length;
        self.tail = None;
        self.flush_pending()
    }

    /// Queues a finished section, or writes it now if the tail is free.
    pub(crate) fn submit(&mut self, p: Pending) -> Result<()> {
        self.revision += 1;
        if self.tail.is_some() {
            self.pending.push(p);
            Ok(())
        } else {
            self.flush_pending()?;
            self.place(p)
        }
    }

    /// Drops the sections of this session (queued or placed) that `drop` selects.
    pub(crate) fn remove(&mut self, drop: impl Fn(SectionKind, u32) -> bool) {
        self.revision += 1;
        self.pending.retain(|p| !drop(p.kind, p.stream));
        self.entries.retain(|e| !drop(SectionKind::from_code(e.kind), e.stream));
    }

    /// Whether this session has queued or placed a section of this kind of `stream`.
    pub(crate) fn has_section(&self, kind: SectionKind, stream: u32) -> bool {
        self.pending.iter().any(|p| p.kind == kind && p.stream == stream)
            || self.entries.iter().any(|e| e.kind == kind.code() && e.stream == stream)
    }

    /// Leaves a committed section out of the next directory.
    pub(crate) fn remove_committed(&mut self, kind: SectionKind, stream: u32) {
        self.revision += 1;
        self.removed.insert((kind.code(), stream));
    }

    /// The count of changes (see the field): equal counts, same content.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The stream whose data section holds the tail while finished sections
    /// wait for it in the queue (none wait when the tail is free).
    pub(crate) fn waiting_for(&self) -> Option<u32> {
        self.tail.filter(|_| !self.pending.is_empty())
    }

    /// Whether a section `pred` selects waits in the queue.
    pub(crate) fn is_waiting(&self, pred: impl Fn(SectionKind, u32) -> bool) -> bool {
        self.pending.iter().any(|p| pred(p.kind, p.stream))
    }

    /// Places the sections waiting for the tail now: `sink`, the direct
    /// data section that holds it, moves off it (its bytes so far to a
    /// spill file) and goes on as a section to be copied when finished.
    pub(crate) fn free_tail(&mut self, sink: &mut SectionSink) -> Result<()> {
        sink.leave_tail(&self.file, &self.path)?;
        self.tail = None;
        self.revision += 1;
        self.flush_pending()
    }

    /// The committed sections of `existing` this session did not remove and
    /// the sections this session placed that `keep` selects, as a file to
    /// read ([`Tb5File::session_view`]). Sections still queued are not in
    /// it (see [`Output::free_tail`]).
    pub(crate) fn view(
        &self,
        existing: Option<&Tb5File>,
        keep: impl Fn(SectionKind, u32) -> bool,
        max_streams: u32,
    ) -> Result<Tb5File> {
        let committed = existing.into_iter().flat_map(|e| e.directory()).map(|s| &s.raw);
        let entries: Vec<DirEntryRaw> = committed
            .filter(|e| !self.removed.contains(&(e.kind, e.stream)))
            .chain(self.entries.iter().filter(|e| keep(SectionKind::from_code(e.kind), e.stream)))
            .cloned()
            .collect();
        Tb5File::session_view(&self.path, &self.file, self.end, &entries, max_streams)
    }

    /// Whether a committed section is left out of the next directory.
    pub(crate) fn is_removed(&self, kind: SectionKind, stream: u32) -> bool {
        self.removed.contains(&(kind.code(), stream))
    }

    /// Writes a finished section at the tail (which must be free).
    fn place(&mut self, p: Pending) -> Result<()> {
        let start = container::align(self.end);
        let mut at = start;
        let mut hasher = crc32fast::Hasher::new();
        for part in p.parts {
            match part {
                Part::Bytes(b) => {
                    self.file.write_all_at(&b, at).map_err(|e| Error::io(&self.path, "write", e))?;
                    hasher.update(&b);
                    at += b.len() as u64;
                }
                Part::Sink(s) => {
                    let (len, h) = s.copy_to(&self.file, at, &self.path)?;
                    hasher.combine(&h);
                    at += len;
                }
            }
        }
        self.zero_pad(self.end, start)?;
        crash_point("section written");
        let e = entry(p.kind, p.stream, start, at - start, p.count, p.record_size, hasher.finalize());
        self.entries.push(DirEntryRaw { flags: p.flags, ..e });
        self.end = at;
        Ok(())
    }

    fn zero_pad(&self, from: u64, to: u64) -> Result<()> {
        if to > from {
            self.file
                .write_all_at(&[0u8; 8][..(to - from) as usize], from)
                .map_err(|e| Error::io(&self.path, "write", e))?;
        }
        Ok(())
    }

    fn flush_pending(&mut self) -> Result<()> {
        for p in std::mem::take(&mut self.pending) {
            self.place(p)?;
        }
        Ok(())
    }

    /// Commits: places what waits, then the new strings (`new_strings`,
    /// ids from `first_id`), then the directory (the committed entries of
    /// `existing` not removed, then this session's), makes all of it
    /// durable, and only then writes the commit slot. An append that
    /// changes nothing commits nothing.
    pub(crate) fn commit(
        &mut self,
        existing: Option<&Tb5File>,
        first_id: u64,
        new_strings: &[String],
        streams: u32,
    ) -> Result<()> {
        let unchanged = self.entries.is_empty() && self.pending.is_empty() && self.removed.is_empty();
        if self.temp.is_none() && unchanged && new_strings.is_empty() {
            return Ok(());
        }
        self.flush_pending()?;
        if !matches!(self.commit, Commit::Tb5) {
            return self.commit_intel(existing, intel::SessionStrings { first_id, new: new_strings }, streams);
        }
        if !new_strings.is_empty() {
            let [head, offsets, bytes] = container::encode_string_block(first_id, new_strings)?;
            let parts = vec![Part::Bytes(head), Part::Bytes(offsets), Part::Bytes(bytes)];
            self.place(Pending::new(SectionKind::StringBlock, NO_STREAM, parts, new_strings.len() as u64))?;
        }
        let mut dir = Vec::new();
        let mut n_entries = 0u32;
        if let Some(e) = existing {
            for s in e.directory() {
                if self.removed.contains(&(s.raw.kind, s.raw.stream)) {
                    continue;
                }
                s.raw.encode_into(&mut dir);
                n_entries += 1;
            }
        }
        for e in &self.entries {
            e.encode_into(&mut dir);
            n_entries += 1;
        }
        let path = self.path.clone();
        let dir_offset = container::align(self.end);
        self.zero_pad(self.end, dir_offset)?;
        self.file.write_all_at(&dir, dir_offset).map_err(|e| Error::io(&path, "write", e))?;
        crash_point("directory written");
        self.end = dir_offset + dir.len() as u64;
        // Bytes of a discarded data section may lie past the directory.
        self.file.set_len(self.end).map_err(|e| Error::io(&path, "truncate", e))?;
        crash_point("file cut to its end");
        // The directory and everything before it must be written (durable,
        // when asked) before the slot that points at them: that order is the
        // commit.
        if self.durability.syncs() {
            self.file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
            crash_point("synced");
        }
        let (generation, slot) = match existing {
            Some(e) => (e.generation() + 1, 1 - e.active_slot()),
            None => (1, 0),
        };
        let s = container::commit_slot(generation, dir_offset, &dir, n_entries)?;
        #[cfg(test)]
        if let Some(hook) = crash_hook::take() {
            // Tests stop here to see what a crash between the two writes leaves.
            return hook(&self.file, container::SLOT_OFFSET[slot], &s);
        }
        self.file.write_all_at(&s, container::SLOT_OFFSET[slot]).map_err(|e| Error::io(&path, "write", e))?;
        crash_point("slot written");
        if self.durability.syncs() {
            self.file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
            crash_point("slot synced");
        }
        if let Some(temp) = self.temp.take() {
            let placed = if self.durability.syncs() { temp.persist_locked() } else { temp.put_in_place_locked() };
            // The lock stays: this output's own descriptor of the same open
            // file releases it when the output is dropped.
            drop(placed.map_err(|e| Error::io(&path, "put into place", e))?.into_file());
        }
        Ok(())
    }

    /// The commit of an Intel file: what this session placed in the work
    /// file, as a file to read, written as Intel's layout (docs/FORMAT.md,
    /// "Commits in Intel's layout").
    fn commit_intel(
        &mut self,
        existing: Option<&Tb5File>,
        strings: intel::SessionStrings<'_>,
        streams: u32,
    ) -> Result<()> {
        let path = self.path.clone();
        // A new file's first sections start after the room of Intel's
        // header, which is written last: with no section at all, the work
        // file is shorter than that room, and the view maps up to `end`.
        let len = self.file.metadata().map_err(|e| Error::io(&path, "stat", e))?.len();
        if len < self.end {
            self.file.set_len(self.end).map_err(|e| Error::io(&path, "truncate", e))?;
        }
        let view = Tb5File::session_view(&path, &self.file, self.end, &self.entries, streams)?;
        match &self.commit {
            Commit::IntelNew => {
                let end = intel::commit_new(&self.file, &path, self.end, &view, streams, strings)?;
                drop(view);
                self.end = end;
                // Bytes of a discarded data section may lie past the end.
                self.file.set_len(end).map_err(|e| Error::io(&path, "truncate", e))?;
                crash_point("file cut to its end");
                // Durable before it has a name, when asked.
                if self.durability.syncs() {
                    self.file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
                    crash_point("synced");
                }
                if let Some(temp) = self.temp.take() {
                    let placed =
                        if self.durability.syncs() { temp.persist_locked() } else { temp.put_in_place_locked() };
                    drop(placed.map_err(|e| Error::io(&path, "put into place", e))?.into_file());
                }
                Ok(())
            }
            Commit::IntelAppend { target } => {
                let existing = existing.ok_or_else(|| Error::bad("an append without the file it appends to"))?;
                let session = intel::AppendSession {
                    target,
                    path: &path,
                    existing,
                    view: &view,
                    streams,
                    strings,
                    durability: self.durability,
                };
                let removed = &self.removed;
                intel::commit_append(session, &|kind, n| removed.contains(&(kind.code(), n)))
            }
            Commit::Tb5 => unreachable!("dispatched by the caller"),
        }
    }

    /// After a commit: an append to the file just committed, on the same
    /// open file, so its writer lock is held throughout and no other writer
    /// can come between the two.
    pub(crate) fn into_append(self) -> Result<(Output, Tb5File)> {
        let existing = Tb5File::open(&self.path)?;
        if existing.layout().is_intel() {
            return Output::append_intel(&self.path.clone(), self.file, existing, self.durability);
        }
        let end = existing.committed_end();
        Ok((Output::new(self.file, None, &self.path, end, self.durability, Commit::Tb5), existing))
    }

    /// Drops everything this session wrote: an append cuts the file back to
    /// its committed end (unless `keep_bytes`: a reader still holds a slice
    /// of them, which must not fault; the next writer cuts them); a new
    /// file's work file goes with it.
    pub(crate) fn cleanup(self, keep_bytes: bool) {
        if self.temp.is_none() && !keep_bytes {
            let _ = self.file.set_len(self.base_end);
        }
    }
}

fn entry(
    kind: SectionKind,
    stream: u32,
    offset: u64,
    length: u64,
    count: u64,
    record_size: u32,
    crc: u32,
) -> DirEntryRaw {
    DirEntryRaw { kind: kind.code(), flags: 0, stream, offset, length, count, record_size, crc, reserved: 0 }
}

#[cfg(test)]
pub(crate) mod crash_hook {
    //! Lets a test replace the commit-slot write (the last step of a commit)
    //! to simulate a crash around it.
    use std::cell::RefCell;
    use std::fs::File;

    type Hook = Box<dyn FnOnce(&File, u64, &[u8]) -> crate::model::error::Result<()>>;
    thread_local!(static HOOK: RefCell<Option<Hook>> = RefCell::new(None));

    pub(crate) fn set(h: Hook) {
        HOOK.with(|x| *x.borrow_mut() = Some(h));
    }
    pub(crate) fn take() -> Option<Hook> {
        HOOK.with(|x| x.borrow_mut().take())
    }
}
