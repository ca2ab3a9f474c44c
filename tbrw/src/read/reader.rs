//! Reading: [`Tb5File`], a memory-mapped view of one committed TB5 file.
//!
//! Opening validates the header, picks the newest complete commit and
//! indexes its directory; sections are decoded on access, each checked
//! against its checksum first (except data sections, whose records are
//! handed out as slices of the mapping; [`Tb5File::verify`] checks those).
//! Nothing here writes; see [`crate::writer`] and [`crate::engine`].

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::codec;
use crate::cursor::SectionCursor;
use crate::descriptor::{DescEntry, RecordLayout};
use crate::error::{Error, Location, Result};
use crate::event::Event;
use crate::hardware::System;
use crate::module::Module;
use crate::process::{Pid, Tid};
use crate::raw::{
    self, kind, DirEntryRaw, FileHeaderRaw, ModuleRaw, PidRaw, ProcessThreadRaw, Raw, SlotRaw, StringBlockRaw, TidRaw,
};
use crate::sample::{LegacySample, SampleRecordPc};
use crate::section::{BindSection, GlobalSection, SectionRef, StreamSection};
use crate::software::Software;
use crate::stream::StreamInfo;
use crate::strings::{MapStrings, StringId, Text};
use crate::version::VersionInfo;

enum Backing {
    Map(Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

/// One block of the string table.
#[derive(Clone, Debug)]
struct StringBlock {
    first_id: u64,
    count: u64,
    /// Absolute offset of the `count + 1` u32 offsets.
    offsets_at: u64,
    /// Absolute offset of the first string byte.
    bytes_at: u64,
    bytes_len: u64,
}

/// A directory entry, checked against the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SectionEntry {
    pub(crate) raw: DirEntryRaw,
    pub(crate) section: SectionRef,
}

/// A committed TB5 file opened for reading (memory-mapped).
///
/// ```no_run
/// let file = tbrw::Tb5File::open("sample.tb5")?;
/// file.verify()?;
/// for n in 0..file.stream_count() {
///     let stream = file.stream(n)?;
///     if let Some(data) = stream.data()? {
///         println!("stream {n}: {} records of {} bytes", data.len(), data.record_size());
///     }
/// }
/// # Ok::<(), tbrw::Error>(())
/// ```
pub struct Tb5File {
    path: PathBuf,
    backing: Backing,
    generation: u64,
    active_slot: usize,
    committed_end: u64,
    entries: Vec<SectionEntry>,
    globals: [Option<usize>; 6],
    streams: Vec<[Option<usize>; 5]>,
    binds: Vec<[Option<usize>; 5]>,
    blocks: Vec<StringBlock>,
    string_count: u64,
}

impl std::fmt::Debug for Tb5File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tb5File")
            .field("path", &self.path)
            .field("generation", &self.generation)
            .field("sections", &self.entries.len())
            .field("streams", &self.streams.len())
            .finish()
    }
}

fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Whether a stored checksum matches. Fuzzing builds (`--cfg fuzzing`)
/// accept any, so the fuzzer reaches the decoders behind the checksums
/// instead of spending every input on a mismatch.
fn crc_matches(stored: u32, computed: u32) -> bool {
    cfg!(fuzzing) || stored == computed
}

impl Tb5File {
    /// Opens and maps a TB5 file.
    pub fn open(path: impl AsRef<Path>) -> Result<Tb5File> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| Error::FileOpen { path: path.to_owned(), source })?;
        let len = file.metadata().map_err(|e| Error::io(path, "stat", e))?.len();
        let backing = if len == 0 {
            Backing::Owned(Vec::new())
        } else {
            // SAFETY: the mapping is read-only. Another process truncating or
            // rewriting the file while it is mapped is outside what this
            // library can guard against (as for every mmap-based reader); this
            // library itself never changes committed bytes of a file.
            Backing::Map(unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, "mmap", e))?)
        };
        Self::parse(path.to_owned(), backing)
    }

    /// Reads a TB5 file from bytes in memory; `name` is what errors call it.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Tb5File> {
        Self::parse(name.into(), Backing::Owned(bytes))
    }

    fn loc(&self, section: SectionRef, offset: u64) -> Location {
        Location { file: self.path.clone(), section, record: None, offset }
    }

    fn parse(path: PathBuf, backing: Backing) -> Result<Tb5File> {
        let bytes = backing.bytes();
        let len = bytes.len() as u64;
        let here = |section, offset| Location { file: path.clone(), section, record: None, offset };
        if bytes.len() < 8 || bytes[..8] != raw::MAGIC {
            let what = if bytes.len() < 8 {
                format!("the file is {} bytes long, too short for the magic", bytes.len())
            } else {
                format!("magic is {:02x?}, expected {:02x?}", &bytes[..8], raw::MAGIC)
            };
            return Err(Error::NotTb5 { path, what });
        }
        if len < raw::HEADER_SIZE {
            return Err(Error::malformed(
                here(SectionRef::Header, len),
                format!("the file ends at byte {len}, inside the {}-byte header", raw::HEADER_SIZE),
            ));
        }
        let header = FileHeaderRaw::decode(bytes)
            .ok_or_else(|| Error::malformed(here(SectionRef::Header, 0), "undecodable header"))?;
        let computed = crc(&bytes[..60]);
        if !crc_matches(header.crc, computed) {
            return Err(Error::Checksum { at: Box::new(here(SectionRef::Header, 0)), stored: header.crc, computed });
        }
        if header.format_version < raw::MIN_FORMAT_VERSION || header.min_reader_version > raw::FORMAT_VERSION {
            return Err(Error::IncompatibleVersion {
                path,
                found: header.format_version,
                min: raw::MIN_FORMAT_VERSION,
                max: raw::FORMAT_VERSION,
            });
        }
        if u64::from(header.header_size) != raw::HEADER_SIZE {
            return Err(Error::malformed(
                here(SectionRef::Header, 16),
                format!("header size {} is not 128", header.header_size),
            ));
        }

        // Pick the newest slot that is completely written. A torn slot (bad
        // slot checksum) is what an interrupted commit leaves: it is skipped.
        // A slot that is intact but points at a damaged directory is
        // corruption and an error, because a commit makes its directory
        // durable before it writes the slot.
        let mut best: Option<(SlotRaw, u64)> = None;
        for at in raw::SLOT_OFFSET {
            let s = SlotRaw::decode(&bytes[at as usize..]).unwrap_or_default();
            if s.generation == 0 || !crc_matches(s.crc, crc(&bytes[at as usize..at as usize + 28])) {
                continue;
            }
            if best.as_ref().is_none_or(|(b, _)| s.generation > b.generation) {
                best = Some((s, at));
            }
        }
        let Some((slot, slot_at)) = best else {
            return Err(Error::malformed(
                here(SectionRef::Header, 64),
                "no complete commit: both commit slots are empty or torn",
            ));
        };
        let dir_end = slot.dir_offset.checked_add(u64::from(slot.dir_length));
        if slot.dir_offset < raw::HEADER_SIZE || dir_end.is_none_or(|e| e > len) {
            return Err(Error::malformed(
                here(SectionRef::Header, slot_at),
                format!(
                    "directory at byte {} ({} bytes) lies outside the {len}-byte file",
                    slot.dir_offset, slot.dir_length
                ),
            ));
        }
        if u64::from(slot.dir_length) != u64::from(slot.dir_entries) * DirEntryRaw::SIZE as u64 {
            return Err(Error::malformed(
                here(SectionRef::Header, slot_at),
                format!("directory of {} bytes cannot hold {} entries", slot.dir_length, slot.dir_entries),
            ));
        }
        let dir = &bytes[slot.dir_offset as usize..(slot.dir_offset + u64::from(slot.dir_length)) as usize];
        let computed = crc(dir);
        if !crc_matches(slot.dir_crc, computed) {
            return Err(Error::Checksum {
                at: Box::new(here(SectionRef::Directory, slot.dir_offset)),
                stored: slot.dir_crc,
                computed,
            });
        }

        let mut entries = Vec::with_capacity(slot.dir_entries as usize);
        let mut globals = [None; 6];
        let mut stream_slots: Vec<[Option<usize>; 5]> = Vec::new();
        let mut bind_slots: Vec<(u32, BindSection, usize, u64)> = Vec::new();
        let mut blocks = Vec::new();
        for i in 0..slot.dir_entries as usize {
            let at = slot.dir_offset + (i * DirEntryRaw::SIZE) as u64;
            let e = DirEntryRaw::decode(&dir[i * DirEntryRaw::SIZE..]).unwrap_or_default();
            let bad = |what: String| {
                Error::malformed(
                    Location { file: path.clone(), section: SectionRef::Directory, record: Some(i as u64), offset: at },
                    what,
                )
            };
            let end = e.offset.checked_add(e.length);
            if e.offset < raw::HEADER_SIZE
                || e.offset % raw::SECTION_ALIGN != 0
                || end.is_none_or(|x| x > slot.dir_offset)
            {
                return Err(bad(format!(
                    "section at byte {} ({} bytes) is not an aligned range between the header and the directory",
                    e.offset, e.length
                )));
            }
            let section = match e.kind {
                k if (kind::GLOBAL_BASE..kind::GLOBAL_BASE + 6).contains(&k) => {
                    let g = GlobalSection::ALL[(k - kind::GLOBAL_BASE) as usize];
                    if globals[g.index()].replace(entries.len()).is_some() {
                        return Err(bad(format!("{} appears twice", g.c_name())));
                    }
                    SectionRef::Global(g)
                }
                k if (kind::STREAM_BASE..kind::STREAM_BASE + 5).contains(&k) => {
                    let s = StreamSection::ALL[(k - kind::STREAM_BASE) as usize];
                    // A stream index cannot exceed the number of entries: this bounds the allocation.
                    if e.stream as usize >= slot.dir_entries as usize {
                        return Err(bad(format!(
                            "stream index {} with only {} directory entries",
                            e.stream, slot.dir_entries
                        )));
                    }
                    if stream_slots.len() <= e.stream as usize {
                        stream_slots.resize(e.stream as usize + 1, [None; 5]);
                    }
                    if stream_slots[e.stream as usize][s.index()].replace(entries.len()).is_some() {
                        return Err(bad(format!("stream {} {} appears twice", e.stream, s.c_name())));
                    }
                    if s == StreamSection::Data
                        && (e.record_size == 0 || e.count.checked_mul(u64::from(e.record_size)) != Some(e.length))
                    {
                        return Err(bad(format!(
                            "data section of {} bytes does not hold {} records of {} bytes",
                            e.length, e.count, e.record_size
                        )));
                    }
                    SectionRef::Stream(e.stream, s)
                }
                kind::STRING_BLOCK => {
                    let head = StringBlockRaw::decode(
                        bytes.get(e.offset as usize..end.unwrap_or(0) as usize).unwrap_or_default(),
                    )
                    .ok_or_else(|| bad("string block shorter than its head".into()))?;
                    let offsets_len = head.count.checked_add(1).and_then(|n| n.checked_mul(4));
                    let bytes_at = offsets_len.and_then(|o| o.checked_add(e.offset + StringBlockRaw::SIZE as u64));
                    match bytes_at {
                        Some(b) if b <= e.offset + e.length && head.count == e.count => blocks.push(StringBlock {
                            first_id: head.first_id,
                            count: head.count,
                            offsets_at: e.offset + StringBlockRaw::SIZE as u64,
                            bytes_at: b,
                            bytes_len: e.offset + e.length - b,
                        }),
                        _ => {
                            return Err(bad(format!(
                                "string block of {} strings does not fit its {} bytes",
                                head.count, e.length
                            )))
                        }
                    }
                    SectionRef::Strings
                }
                k if (kind::BIND_BASE..kind::BIND_BASE + 5).contains(&k) => {
                    let b = BindSection::ALL[(k - kind::BIND_BASE) as usize];
                    let size = match b {
                        BindSection::Data => raw::DataBindRaw::SIZE,
                        BindSection::Modules | BindSection::TidBinds => 8,
                        BindSection::Processes => PidRaw::SIZE,
                        BindSection::Threads => TidRaw::SIZE,
                    } as u64;
                    if e.count.checked_mul(size) != Some(e.length) {
                        return Err(bad(format!(
                            "{} of {} bytes does not hold {} entries of {size} bytes",
                            b.name(),
                            e.length,
                            e.count
                        )));
                    }
                    bind_slots.push((e.stream, b, entries.len(), at));
                    SectionRef::Bind(e.stream, b)
                }
                // Kinds from newer writers are skipped: the header's
                // min_reader_version says when skipping would be wrong.
                k => SectionRef::Unknown(k),
            };
            entries.push(SectionEntry { raw: e, section });
        }
        for (n, s) in stream_slots.iter().enumerate() {
            if s.iter().all(Option::is_none) {
                return Err(Error::malformed(
                    here(SectionRef::Directory, slot.dir_offset),
                    format!("stream {n} has no sections although stream {} exists", stream_slots.len() - 1),
                ));
            }
        }
        let mut binds = vec![[None; 5]; stream_slots.len()];
        for (stream, b, i, at) in bind_slots {
            let bad = |what: String| {
                Error::malformed(
                    Location { file: path.clone(), section: SectionRef::Directory, record: Some(i as u64), offset: at },
                    what,
                )
            };
            let sections: &mut [Option<usize>; 5] = binds
                .get_mut(stream as usize)
                .ok_or_else(|| bad(format!("{} for stream {stream}, which does not exist", b.name())))?;
            if sections[b.index()].replace(i).is_some() {
                return Err(bad(format!("stream {stream} {} appears twice", b.name())));
            }
        }
        for (n, sections) in binds.iter().enumerate() {
            if sections.iter().any(Option::is_some) && sections.iter().any(Option::is_none) {
                return Err(Error::malformed(
                    here(SectionRef::Directory, slot.dir_offset),
                    format!("stream {n} has some bind sections but not all five"),
                ));
            }
        }
        blocks.sort_by_key(|b| b.first_id);
        let mut next = 1u64;
        for b in &blocks {
            if b.first_id != next {
                return Err(Error::malformed(
                    here(SectionRef::Strings, b.offsets_at - StringBlockRaw::SIZE as u64),
                    format!("string block starts at id {} where id {next} was expected", b.first_id),
                ));
            }
            next = next
                .checked_add(b.count)
                .ok_or_else(|| Error::malformed(here(SectionRef::Strings, b.offsets_at), "string ids overflow"))?;
        }
        let file = Tb5File {
            generation: slot.generation,
            active_slot: usize::from(slot_at == raw::SLOT_OFFSET[1]),
            committed_end: slot.dir_offset + u64::from(slot.dir_length),
            entries,
            globals,
            streams: stream_slots,
            binds,
            blocks,
            string_count: next - 1,
            path,
            backing,
        };
        // String blocks are read on every string lookup: check them once here.
        for e in file.entries.iter().filter(|e| e.section == SectionRef::Strings) {
            file.checked_bytes(e)?;
        }
        Ok(file)
    }

    /// The file's path (or the name given to [`Tb5File::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The commit generation: 1 for a new file, one more for every append.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn committed_end(&self) -> u64 {
        self.committed_end
    }

    pub(crate) fn directory(&self) -> &[SectionEntry] {
        &self.entries
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.backing.bytes()
    }

    fn raw_bytes(&self, e: &SectionEntry) -> &[u8] {
        // Ranges were checked against the file length when the directory was read.
        &self.bytes()[e.raw.offset as usize..(e.raw.offset + e.raw.length) as usize]
    }

    /// The bytes of a section after checking its checksum.
    fn checked_bytes(&self, e: &SectionEntry) -> Result<&[u8]> {
        let b = self.raw_bytes(e);
        let computed = crc(b);
        if !crc_matches(e.raw.crc, computed) {
            return Err(Error::Checksum {
                at: Box::new(self.loc(e.section, e.raw.offset)),
                stored: e.raw.crc,
                computed,
            });
        }
        Ok(b)
    }

    fn cursor<'a>(&'a self, e: &'a SectionEntry) -> Result<SectionCursor<'a>> {
        Ok(SectionCursor::new(self.checked_bytes(e)?, e.raw.offset, &self.path, e.section))
    }

    fn global(&self, s: GlobalSection) -> Option<&SectionEntry> {
        self.globals[s.index()].map(|i| &self.entries[i])
    }

    pub(crate) fn bind_entry(&self, stream: u32, b: BindSection) -> Option<&SectionEntry> {
        self.binds.get(stream as usize).and_then(|x| x[b.index()]).map(|i| &self.entries[i])
    }

    /// The bytes of a bind section (checksum checked except for the per-record data binds).
    pub(crate) fn bind_bytes(&self, stream: u32, b: BindSection) -> Result<Option<&[u8]>> {
        match self.bind_entry(stream, b) {
            None => Ok(None),
            Some(e) if b == BindSection::Data => Ok(Some(self.raw_bytes(e))),
            Some(e) => self.checked_bytes(e).map(Some),
        }
    }

    pub(crate) fn stream_entry(&self, stream: u32, s: StreamSection) -> Option<&SectionEntry> {
        self.streams.get(stream as usize).and_then(|x| x[s.index()]).map(|i| &self.entries[i])
    }

    /// Whether the file has a global section.
    pub fn has_section(&self, s: GlobalSection) -> bool {
        self.globals[s.index()].is_some()
    }

    /// The hardware section.
    pub fn hardware(&self) -> Result<Option<System>> {
        self.global(GlobalSection::Hardware).map(|e| codec::decode_system(&mut self.cursor(e)?)).transpose()
    }

    /// The software section (strings as ids).
    pub fn software(&self) -> Result<Option<Software<StringId>>> {
        self.global(GlobalSection::Software).map(|e| codec::decode_software(&mut self.cursor(e)?)).transpose()
    }

    /// The version information section.
    pub fn version_info(&self) -> Result<Option<VersionInfo>> {
        self.global(GlobalSection::VersionInfo).map(|e| codec::decode_version(&mut self.cursor(e)?)).transpose()
    }

    /// The user-defined global section's bytes.
    pub fn user_defined_global(&self) -> Result<Option<&[u8]>> {
        self.global(GlobalSection::UserDefinedGlobal).map(|e| self.checked_bytes(e)).transpose()
    }

    /// The module section.
    pub fn modules(&self) -> Result<Option<ModuleTable<'_>>> {
        let Some(e) = self.global(GlobalSection::Module) else { return Ok(None) };
        let mut c = self.cursor(e)?;
        let n = c.check_count(e.raw.count, ModuleRaw::SIZE, "modules")?;
        let bytes = c.bytes(n * ModuleRaw::SIZE, "modules")?;
        c.finish("the modules")?;
        Ok(Some(ModuleTable { bytes, len: n as u64, base: e.raw.offset, file: self }))
    }

    /// The process/thread section.
    pub fn processes(&self) -> Result<Option<ProcessTable<'_>>> {
        let Some(e) = self.global(GlobalSection::ProcessThread) else { return Ok(None) };
        let mut c = self.cursor(e)?;
        let head: ProcessThreadRaw = c.read("process/thread header")?;
        let np = c.check_count(head.pid_count, PidRaw::SIZE, "processes")?;
        let pids = c.bytes(np * PidRaw::SIZE, "processes")?;
        let nt = c.check_count(head.tid_count, TidRaw::SIZE, "threads")?;
        let tids = c.bytes(nt * TidRaw::SIZE, "threads")?;
        c.finish("the threads")?;
        Ok(Some(ProcessTable { pids, tids }))
    }

    /// The number of data streams.
    pub fn stream_count(&self) -> u32 {
        self.streams.len() as u32
    }

    /// One data stream.
    pub fn stream(&self, index: u32) -> Result<StreamReader<'_>> {
        if index as usize >= self.streams.len() {
            return Err(Error::StreamNotExist { stream: index });
        }
        Ok(StreamReader { file: self, index })
    }

    /// The number of strings in the file (ids 1 to this).
    pub fn string_count(&self) -> u64 {
        self.string_count
    }

    /// The string with this id; id 0 and ids past the table are
    /// [`Error::InvalidString`].
    pub fn string(&self, id: StringId) -> Result<&str> {
        let bad = || Error::InvalidString { id: id.0 };
        if id.0 == 0 || id.0 > self.string_count {
            return Err(bad());
        }
        let bi = self.blocks.partition_point(|b| b.first_id <= id.0) - 1;
        let b = &self.blocks[bi];
        let i = id.0 - b.first_id;
        let data = self.bytes();
        let off = |k: u64| {
            let at = (b.offsets_at + 4 * k) as usize;
            u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as u64
        };
        let (start, end) = (off(i), off(i + 1));
        let loc = || self.loc(SectionRef::Strings, b.offsets_at + 4 * i);
        if start > end || end > b.bytes_len {
            return Err(Error::malformed(
                loc(),
                format!("string {} spans bytes {start}..{end} of a {}-byte block", id.0, b.bytes_len),
            ));
        }
        let s = &data[(b.bytes_at + start) as usize..(b.bytes_at + end) as usize];
        std::str::from_utf8(s).map_err(|e| Error::malformed(loc(), format!("string {} is not UTF-8: {e}", id.0)))
    }

    /// The string with this id, or `None` for id 0 ("no string").
    pub fn string_opt(&self, id: StringId) -> Result<Option<&str>> {
        if id.is_none() {
            Ok(None)
        } else {
            self.string(id).map(Some)
        }
    }

    /// Replaces every string id in `value` by its text.
    pub fn resolve<T: MapStrings<StringId>>(&self, value: T) -> Result<T::Output<Text>> {
        value.map_strings(&mut |id| self.string_opt(id).map(|s| s.map(str::to_owned)))
    }

    /// Checks the whole file: docs/FORMAT.md ("What `verify` checks") lists the checks.
    pub fn verify(&self) -> Result<()> {
        crate::verify::verify(self)
    }

    pub(crate) fn check_section_crc(&self, e: &SectionEntry) -> Result<()> {
        self.checked_bytes(e).map(|_| ())
    }

    /// Which commit slot (0 = A, 1 = B) holds the commit this view shows.
    pub(crate) fn active_slot(&self) -> usize {
        self.active_slot
    }
}

/// The module section of a file: modules decoded by index on access.
#[derive(Clone, Copy)]
pub struct ModuleTable<'f> {
    bytes: &'f [u8],
    len: u64,
    base: u64,
    file: &'f Tb5File,
}

impl<'f> ModuleTable<'f> {
    /// The number of modules.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Module `index` (strings as ids).
    pub fn get(&self, index: u64) -> Result<Module<StringId>> {
        if index >= self.len {
            return Err(Error::EntryNotFound { section: GlobalSection::Module.into(), index, len: self.len });
        }
        let at = index as usize * ModuleRaw::SIZE;
        ModuleRaw::decode(&self.bytes[at..]).map(codec::decode_module).ok_or_else(|| {
            let loc = Location { record: Some(index), ..self.file.loc(GlobalSection::Module.into(), self.base) };
            Error::malformed(loc, "undecodable module")
        })
    }

    /// Every module in order.
    pub fn iter(&self) -> impl Iterator<Item = Result<Module<StringId>>> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

/// The process/thread section of a file.
#[derive(Clone, Copy)]
pub struct ProcessTable<'f> {
    pids: &'f [u8],
    tids: &'f [u8],
}

impl ProcessTable<'_> {
    /// The number of processes.
    pub fn pid_count(&self) -> u64 {
        (self.pids.len() / PidRaw::SIZE) as u64
    }

    /// The number of threads.
    pub fn tid_count(&self) -> u64 {
        (self.tids.len() / TidRaw::SIZE) as u64
    }

    /// Process `index`, if it exists.
    pub fn pid(&self, index: u64) -> Option<Pid<StringId>> {
        let at = usize::try_from(index).ok()?.checked_mul(PidRaw::SIZE)?;
        PidRaw::decode(self.pids.get(at..)?).map(codec::decode_pid)
    }

    /// Thread `index`, if it exists.
    pub fn tid(&self, index: u64) -> Option<Tid<StringId>> {
        let at = usize::try_from(index).ok()?.checked_mul(TidRaw::SIZE)?;
        TidRaw::decode(self.tids.get(at..)?).map(codec::decode_tid)
    }

    /// Every process in order.
    pub fn pids(&self) -> impl Iterator<Item = Pid<StringId>> + '_ {
        (0..self.pid_count()).filter_map(|i| self.pid(i))
    }

    /// Every thread in order.
    pub fn tids(&self) -> impl Iterator<Item = Tid<StringId>> + '_ {
        (0..self.tid_count()).filter_map(|i| self.tid(i))
    }
}

/// One data stream of a file.
#[derive(Clone, Copy)]
pub struct StreamReader<'f> {
    file: &'f Tb5File,
    index: u32,
}

impl<'f> StreamReader<'f> {
    /// The stream's index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The file the stream belongs to.
    pub fn file(&self) -> &'f Tb5File {
        self.file
    }

    /// Whether the stream has a section.
    pub fn has_section(&self, s: StreamSection) -> bool {
        self.file.stream_entry(self.index, s).is_some()
    }

    fn entry(&self, s: StreamSection) -> Option<&'f SectionEntry> {
        self.file.stream_entry(self.index, s)
    }

    /// The stream information section.
    pub fn info(&self) -> Result<Option<StreamInfo<StringId>>> {
        self.entry(StreamSection::StreamInfo).map(|e| codec::decode_stream_info(&mut self.file.cursor(e)?)).transpose()
    }

    /// The event description section.
    pub fn events(&self) -> Result<Option<Vec<Event<StringId>>>> {
        self.entry(StreamSection::EventDescription)
            .map(|e| codec::decode_events(&mut self.file.cursor(e)?, e.raw.count))
            .transpose()
    }

    /// The data descriptor entries (with effective offsets).
    pub fn descriptor(&self) -> Result<Option<Vec<DescEntry<StringId>>>> {
        self.entry(StreamSection::DataDescription)
            .map(|e| codec::decode_descs(&mut self.file.cursor(e)?, e.raw.count))
            .transpose()
    }

    /// The record layout the data descriptor defines.
    pub fn layout(&self) -> Result<Option<RecordLayout>> {
        let Some(entries) = self.descriptor()? else { return Ok(None) };
        let e = self.entry(StreamSection::DataDescription).expect("descriptor was just read");
        RecordLayout::from_entries(&entries)
            .map(Some)
            .map_err(|err| Error::malformed(self.file.loc(e.section, e.raw.offset), err.to_string()))
    }

    /// The data section: the records, as slices of the mapped file.
    pub fn data(&self) -> Result<Option<DataSection<'f>>> {
        let Some(e) = self.entry(StreamSection::Data) else { return Ok(None) };
        Ok(Some(DataSection {
            bytes: self.file.raw_bytes(e),
            record_size: e.raw.record_size as usize,
            len: e.raw.count,
            offset: e.raw.offset,
            stream: self.index,
        }))
    }

    /// The user-defined stream section's bytes.
    pub fn user_defined(&self) -> Result<Option<&'f [u8]>> {
        self.entry(StreamSection::UserDefinedStream).map(|e| self.file.checked_bytes(e)).transpose()
    }

    /// The legacy samples of this stream (stream 0 with an
    /// `ST_LEGACY_SAMPLE_RECORD` descriptor entry), decoded on iteration.
    pub fn legacy_samples(&self) -> Result<LegacySamples<'f>> {
        let layout = self.layout()?.ok_or(Error::SectionNotExist {
            section: SectionRef::Stream(self.index, StreamSection::DataDescription),
        })?;
        let pc = layout.legacy_pc_offset().ok_or_else(|| Error::InvalidStream {
            stream: self.index,
            why: "its data descriptor has no ST_LEGACY_SAMPLE_RECORD entry".into(),
        })?;
        let data = self
            .data()?
            .ok_or(Error::SectionNotExist { section: SectionRef::Stream(self.index, StreamSection::Data) })?;
        if data.record_size() != layout.record_size() as usize {
            return Err(Error::malformed(
                self.file.loc(SectionRef::Stream(self.index, StreamSection::Data), data.offset),
                format!("records are {} bytes but the descriptor defines {}", data.record_size(), layout.record_size()),
            ));
        }
        Ok(LegacySamples { data, next: 0, pc: pc as usize, tsc: layout.tsc_offset().map(|t| t as usize) })
    }
}

/// The records of a data section: zero-copy slices of the mapped file.
#[derive(Clone, Copy, Debug)]
pub struct DataSection<'f> {
    bytes: &'f [u8],
    record_size: usize,
    len: u64,
    offset: u64,
    stream: u32,
}

impl<'f> DataSection<'f> {
    /// The number of records.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes per record.
    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// All records as one slice.
    pub fn as_bytes(&self) -> &'f [u8] {
        self.bytes
    }

    /// Absolute file offset of the first record.
    pub fn file_offset(&self) -> u64 {
        self.offset
    }

    /// Record `index`, if it exists.
    pub fn record(&self, index: u64) -> Option<&'f [u8]> {
        let start = usize::try_from(index).ok()?.checked_mul(self.record_size)?;
        self.bytes.get(start..start.checked_add(self.record_size)?)
    }

    /// Every record in order.
    pub fn records(&self) -> std::slice::ChunksExact<'f, u8> {
        self.bytes.chunks_exact(self.record_size)
    }

    /// The records from `start` on, in slices of at most `per_chunk`
    /// whole records: what the `enumerate_` functions hand to callbacks.
    /// A start past the end is [`Error::InvalidReadStart`]; a start equal
    /// to the number of records yields nothing.
    pub fn chunks_from(&self, start: u64, per_chunk: usize) -> Result<std::slice::Chunks<'f, u8>> {
        if start > self.len {
            return Err(Error::InvalidReadStart {
                section: SectionRef::Stream(self.stream, StreamSection::Data),
                start,
                len: self.len,
            });
        }
        let from = start as usize * self.record_size;
        Ok(self.bytes[from..].chunks(per_chunk.max(1).saturating_mul(self.record_size)))
    }
}

/// Iterator over the legacy samples of a stream.
#[derive(Clone, Debug)]
pub struct LegacySamples<'f> {
    data: DataSection<'f>,
    next: u64,
    pc: usize,
    tsc: Option<usize>,
}

impl LegacySamples<'_> {
    /// Continues from record `index`.
    pub fn skip_to(mut self, index: u64) -> Self {
        self.next = index;
        self
    }
}

impl Iterator for LegacySamples<'_> {
    type Item = LegacySample;

    fn next(&mut self) -> Option<LegacySample> {
        let rec = self.data.record(self.next)?;
        self.next += 1;
        let pc = SampleRecordPc::from_slice(rec.get(self.pc..)?)?;
        let tsc =
            self.tsc.and_then(|t| rec.get(t..t + 8)).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
        Some(LegacySample { pc, tsc })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.data.len().saturating_sub(self.next) as usize;
        (n, Some(n))
    }
}
