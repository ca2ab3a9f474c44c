//! The directory of a committed file, indexed: which entry holds each
//! global, stream and bind section, and where the string blocks are.
//!
//! [`Directory::read`] indexes the entries one by one, then checks what
//! only the whole directory shows (streams without sections, bind sections
//! of missing streams, gaps in the string ids), one step each.

use std::path::Path;

use crate::format::container::{self, StringBlockLayout};
use crate::format::kind::SectionKind;
use crate::format::raw::{DirEntryRaw, Raw, SlotRaw, StringBlockRaw};
use crate::model::error::{Error, Location, Result};
use crate::model::section::{BindSection, GlobalSection, SectionRef, StreamSection};

/// A directory entry, checked against the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SectionEntry {
    pub(crate) raw: DirEntryRaw,
    pub(crate) section: SectionRef,
}

/// The sections of one stream (or one stream's bind), by identifier: entry indexes.
type Slots<const N: usize> = [Option<usize>; N];

/// The indexed directory of one commit.
#[derive(Debug)]
pub(crate) struct Directory {
    pub(crate) entries: Vec<SectionEntry>,
    globals: Slots<6>,
    streams: Vec<Slots<5>>,
    binds: Vec<Slots<6>>,
    stored_symbols: Option<usize>,
    /// Per stream with one, the entry of its stack table.
    stack_tables: Vec<(u32, usize)>,
    /// In id order, without gaps.
    pub(crate) blocks: Vec<StringBlockLayout>,
    pub(crate) string_count: u64,
}

/// A bind section seen while indexing, placed once the streams are known.
struct BindSlot {
    stream: u32,
    section: BindSection,
    entry: usize,
    at: u64,
}

/// What indexing the entries one by one collects.
struct Indexing<'p> {
    path: &'p Path,
    dir_offset: u64,
    /// Stream indexes must be below this (it bounds an allocation).
    max_streams: u32,
    dir: Directory,
    bind_slots: Vec<BindSlot>,
}

impl Indexing<'_> {
    fn new(path: &Path, dir_offset: u64, entries: u32, max_streams: u32) -> Indexing<'_> {
        Indexing {
            path,
            dir_offset,
            max_streams,
            dir: Directory {
                entries: Vec::with_capacity(entries as usize),
                globals: [None; 6],
                streams: Vec::new(),
                binds: Vec::new(),
                stored_symbols: None,
                stack_tables: Vec::new(),
                blocks: Vec::new(),
                string_count: 0,
            },
            bind_slots: Vec::new(),
        }
    }
}

impl Directory {
    /// The directory of a file without one (Intel's layout: its sections
    /// are indexed by `read/intel`).
    pub(crate) fn empty() -> Directory {
        Indexing::new(Path::new(""), 0, 0, 0).dir
    }

    /// Indexes the directory `dir` (at `slot.dir_offset`) of `file`.
    pub(crate) fn read(path: &Path, file: &[u8], slot: &SlotRaw, dir: &[u8]) -> Result<Directory> {
        // A stream index cannot exceed the number of entries.
        let mut ix = Indexing::new(path, slot.dir_offset, slot.dir_entries, slot.dir_entries);
        for i in 0..slot.dir_entries as usize {
            ix.add(i, container::dir_entry(dir, i), file)?;
        }
        ix.check_streams_have_sections()?;
        ix.place_binds()?;
        ix.check_stack_tables()?;
        ix.number_strings()?;
        Ok(ix.dir)
    }

    /// Indexes the entries of a writing session's view (see
    /// [`super::Tb5File::session_view`]): every section lies before `end`.
    /// The streams may have gaps (a stream still being written shows none
    /// of its sections), so that check is left out; `max_streams` bounds
    /// the stream indexes (the writer's own count, not read from a file).
    pub(crate) fn of_session(
        path: &Path,
        file: &[u8],
        end: u64,
        entries: &[DirEntryRaw],
        max_streams: u32,
    ) -> Result<Directory> {
        let mut ix = Indexing::new(path, end, entries.len() as u32, max_streams);
        for (i, e) in entries.iter().enumerate() {
            ix.add(i, e.clone(), file)?;
        }
        // A session may bind a stream of the file it appends to whose
        // sections are not in its own work file.
        let with_binds = entries
            .iter()
            .filter(|e| matches!(SectionKind::from_code(e.kind), SectionKind::Bind(_)))
            .map(|e| e.stream as usize + 1)
            .max();
        if let Some(n) = with_binds.filter(|&n| n > ix.dir.streams.len() && n <= max_streams as usize) {
            ix.dir.streams.resize(n, [None; 5]);
        }
        ix.place_binds()?;
        ix.number_strings()?;
        Ok(ix.dir)
    }

    pub(crate) fn global(&self, s: GlobalSection) -> Option<&SectionEntry> {
        self.globals[s.index()].map(|i| &self.entries[i])
    }

    pub(crate) fn stream_count(&self) -> usize {
        self.streams.len()
    }

    pub(crate) fn stream_entry(&self, stream: u32, s: StreamSection) -> Option<&SectionEntry> {
        self.streams.get(stream as usize).and_then(|x| x[s.index()]).map(|i| &self.entries[i])
    }

    pub(crate) fn bind_entry(&self, stream: u32, b: BindSection) -> Option<&SectionEntry> {
        self.binds.get(stream as usize).and_then(|x| x[b.index()]).map(|i| &self.entries[i])
    }

    pub(crate) fn stored_symbols(&self) -> Option<&SectionEntry> {
        self.stored_symbols.map(|i| &self.entries[i])
    }

    pub(crate) fn stack_table(&self, stream: u32) -> Option<&SectionEntry> {
        self.stack_tables.iter().find(|(n, _)| *n == stream).map(|(_, i)| &self.entries[*i])
    }
}

impl Indexing<'_> {
    fn here(&self, section: SectionRef, offset: u64) -> Location {
        Location { file: self.path.to_owned(), section, record: None, offset }
    }

    /// Indexes entry `i`.
    fn add(&mut self, i: usize, e: DirEntryRaw, file: &[u8]) -> Result<()> {
        let at = self.dir_offset + (i * DirEntryRaw::SIZE) as u64;
        let bad = |what: String| {
            Error::malformed(
                Location {
                    file: self.path.to_owned(),
                    section: SectionRef::Directory,
                    record: Some(i as u64),
                    offset: at,
                },
                what,
            )
        };
        container::check_entry_range(&e, self.dir_offset).map_err(bad)?;
        let n = self.dir.entries.len();
        let section = match SectionKind::from_code(e.kind) {
            SectionKind::Global(g) => {
                if self.dir.globals[g.index()].replace(n).is_some() {
                    return Err(bad(format!("{} appears twice", g.c_name())));
                }
                SectionRef::Global(g)
            }
            SectionKind::Stream(s) => {
                // This bounds the allocation below.
                if e.stream >= self.max_streams {
                    return Err(bad(format!(
                        "stream index {} where at most {} streams can be",
                        e.stream, self.max_streams
                    )));
                }
                let streams = &mut self.dir.streams;
                if streams.len() <= e.stream as usize {
                    streams.resize(e.stream as usize + 1, [None; 5]);
                }
                if streams[e.stream as usize][s.index()].replace(n).is_some() {
                    return Err(bad(format!("stream {} {} appears twice", e.stream, s.c_name())));
                }
                container::check_entry_count(&e).map_err(bad)?;
                SectionRef::Stream(e.stream, s)
            }
            SectionKind::StringBlock => {
                self.dir.blocks.push(container::string_block(file, &e).map_err(bad)?);
                SectionRef::Strings
            }
            SectionKind::Bind(b) => {
                container::check_entry_count(&e).map_err(bad)?;
                self.bind_slots.push(BindSlot { stream: e.stream, section: b, entry: n, at });
                SectionRef::Bind(e.stream, b)
            }
            SectionKind::StoredSymbols => {
                if self.dir.stored_symbols.replace(n).is_some() {
                    return Err(bad("the stored symbols appear twice".into()));
                }
                SectionRef::StoredSymbols
            }
            SectionKind::StackTable => {
                if self.dir.stack_tables.iter().any(|(s, _)| *s == e.stream) {
                    return Err(bad(format!("stream {} has two stack tables", e.stream)));
                }
                self.dir.stack_tables.push((e.stream, n));
                SectionRef::StackTable(e.stream)
            }
            // Kinds from newer writers are skipped: the header's
            // min_reader_version says when skipping would be wrong.
            SectionKind::Unknown(k) => SectionRef::Unknown(k),
        };
        self.dir.entries.push(SectionEntry { raw: e, section });
        Ok(())
    }

    /// Streams are numbered without gaps: every stream up to the last has a section.
    fn check_streams_have_sections(&self) -> Result<()> {
        let streams = &self.dir.streams;
        for (n, s) in streams.iter().enumerate() {
            if s.iter().all(Option::is_none) {
                return Err(Error::malformed(
                    self.here(SectionRef::Directory, self.dir_offset),
                    format!("stream {n} has no sections although stream {} exists", streams.len() - 1),
                ));
            }
        }
        Ok(())
    }

    /// Gives every bind section its stream. A stream has no bind, or the
    /// four tables and one of the two data bind sections (24-byte structs or packed).
    fn place_binds(&mut self) -> Result<()> {
        let mut binds = vec![[None; 6]; self.dir.streams.len()];
        for b in std::mem::take(&mut self.bind_slots) {
            let bad = |what: String| {
                Error::malformed(
                    Location {
                        file: self.path.to_owned(),
                        section: SectionRef::Directory,
                        record: Some(b.entry as u64),
                        offset: b.at,
                    },
                    what,
                )
            };
            let (stream, name) = (b.stream, b.section.name());
            let sections: &mut Slots<6> = binds
                .get_mut(stream as usize)
                .ok_or_else(|| bad(format!("{name} for stream {stream}, which does not exist")))?;
            if sections[b.section.index()].replace(b.entry).is_some() {
                return Err(bad(format!("stream {stream} {name} appears twice")));
            }
        }
        for (n, sections) in binds.iter().enumerate() {
            let has = |b: BindSection| sections[b.index()].is_some();
            let tables = [BindSection::Modules, BindSection::Processes, BindSection::Threads, BindSection::TidBinds];
            let data = usize::from(has(BindSection::Data)) + usize::from(has(BindSection::PackedData));
            let complete = tables.iter().all(|&b| has(b)) && data == 1;
            if sections.iter().any(Option::is_some) && !complete {
                let missing: Vec<&str> = tables.iter().filter(|&&b| !has(b)).map(|b| b.name()).collect();
                return Err(Error::malformed(
                    self.here(SectionRef::Directory, self.dir_offset),
                    format!(
                        "stream {n} has an incomplete bind: {}",
                        match (missing.is_empty(), data) {
                            (_, 2) => "both a bind data and a packed data binds section".to_string(),
                            (true, _) => "no data binds section (bind data or packed data binds)".to_string(),
                            (false, _) => format!("no {} section", missing.join(", no ")),
                        }
                    ),
                ));
            }
        }
        self.dir.binds = binds;
        Ok(())
    }

    /// A stack table belongs to a stream that exists.
    fn check_stack_tables(&self) -> Result<()> {
        for &(stream, i) in &self.dir.stack_tables {
            if stream as usize >= self.dir.streams.len() {
                return Err(Error::malformed(
                    Location {
                        file: self.path.to_owned(),
                        section: SectionRef::Directory,
                        record: Some(i as u64),
                        offset: self.dir_offset + (i * DirEntryRaw::SIZE) as u64,
                    },
                    format!("a stack table for stream {stream}, which does not exist"),
                ));
            }
        }
        Ok(())
    }

    /// Orders the string blocks and checks that their ids follow each other from 1.
    fn number_strings(&mut self) -> Result<()> {
        self.dir.blocks.sort_by_key(|b| b.first_id);
        let mut next = 1u64;
        for b in &self.dir.blocks {
            if b.first_id != next {
                return Err(Error::malformed(
                    self.here(SectionRef::Strings, b.offsets_at - StringBlockRaw::SIZE as u64),
                    format!("string block starts at id {} where id {next} was expected", b.first_id),
                ));
            }
            next = next
                .checked_add(b.count)
                .ok_or_else(|| Error::malformed(self.here(SectionRef::Strings, b.offsets_at), "string ids overflow"))?;
        }
        self.dir.string_count = next - 1;
        Ok(())
    }
}
