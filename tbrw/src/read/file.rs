//! [`Tb5File`]: a memory-mapped view of one committed TB5 file.
//!
//! Opening checks the header, picks the newest complete commit and indexes
//! its directory (the container rules are in `format::container`, the
//! indexing in [`super::directory`]); sections are decoded on access, each
//! checked against its checksum first (except data sections, whose records
//! are handed out as slices of the mapping; [`Tb5File::verify`] checks those).
//!
//! Another process may be appending while a file is opened (docs/FORMAT.md,
//! "Readers during appends"): the commit slots are copied out of the file
//! before its size is taken and it is mapped, so the mapping holds every
//! commit a copied slot names; a commit that still does not read (lost
//! writes) gives way to the older one.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

use super::directory::{Directory, SectionEntry};
use super::intel::{self, IntelIndex};
use crate::format::codec;
use crate::format::container;
use crate::format::cursor::SectionCursor;
use crate::format::intel::{raw as intel_raw, section_type as intel_type};
use crate::format::raw::SlotRaw;
use crate::model::error::{Error, Location, Result};
use crate::model::hardware::System;
use crate::model::layout::FileLayout;
use crate::model::section::{BindSection, GlobalSection, SectionRef, StreamSection};
use crate::model::software::Software;
use crate::model::strings::{MapStrings, StringId, Text};
use crate::model::version::VersionInfo;

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

/// A range of a file's bytes that keeps the mapping alive on its own: what
/// an enumeration hands to a callback that runs while nothing else holds
/// the file (the callback may even close it), without copying the bytes.
#[derive(Clone)]
pub struct SharedBytes {
    backing: Arc<Backing>,
    range: Range<usize>,
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.backing.bytes()[self.range.clone()]
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBytes").field("range", &self.range).finish()
    }
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
    backing: Arc<Backing>,
    generation: u64,
    active_slot: usize,
    committed_end: u64,
    dir: Directory,
    /// Why the newer commit of the two slots was passed over, when it was.
    passed_over: Option<PassedOver>,
    /// The index of an Intel file (docs/FORMAT.md "Intel's layout"); its
    /// directory above is then empty.
    intel: Option<Box<IntelIndex>>,
}

/// A newer commit whose slot is intact but whose directory or string
/// blocks do not read (see [`Tb5File::open`]).
#[derive(Debug)]
struct PassedOver {
    slot: usize,
    generation: u64,
    why: String,
}

impl std::fmt::Debug for Tb5File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tb5File")
            .field("path", &self.path)
            .field("layout", &self.layout())
            .field("generation", &self.generation)
            .field("sections", &self.dir.entries.len())
            .field("streams", &self.stream_count())
            .finish()
    }
}

impl Tb5File {
    /// Opens and maps a TB5 file: this project's layout or one of Intel's
    /// (`"SampleF "`, `"Sample6 "`, `"Sample7 "`), as its first 8 bytes say.
    ///
    /// Safe while another process appends to a file of this project's
    /// layout: the view is the newest commit whose directory and string
    /// blocks lie inside the file and whose checksums hold, else the older
    /// of the two commit slots; bytes of an append not yet committed are
    /// never looked at.
    pub fn open(path: impl AsRef<Path>) -> Result<Tb5File> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| Error::FileOpen { path: path.to_owned(), source })?;
        // The header and both commit slots are copied out first, the size
        // taken only after. A commit writes its sections and directory
        // before its slot, and a file never shrinks below a commit's end:
        // so the mapping covers every commit a copied slot names. (Sized
        // first, the mapping can miss the directory of a commit whose slot
        // lands in between: the failures of issue #29.)
        let mut head = read_head(&file, path)?;
        if let Some(layout) = crate::format::intel::layout_of(&head) {
            // An Intel file's header is rewritten in place by an append
            // (one write, its commit): it is copied whole, twice in a row
            // until both copies agree, so that it is never half old, half
            // new; the tables it names are never rewritten.
            head = read_intel_header(&file, path, layout)?;
        }
        let len = file.metadata().map_err(|e| Error::io(path, "stat", e))?.len();
        let len = usize::try_from(len).map_err(|_| Error::io(path, "mmap", std::io::ErrorKind::FileTooLarge.into()))?;
        let backing = if len == 0 {
            Backing::Owned(Vec::new())
        } else {
            // SAFETY: the mapping is read-only. Another process truncating or
            // rewriting the file while it is mapped is outside what this
            // library can guard against (as for every mmap-based reader). This
            // library never changes committed bytes of a file, and cuts off
            // only bytes past the committed end, which a view never reads
            // ([`Tb5File::bytes`] ends at its commit's end).
            Backing::Map(unsafe { MmapOptions::new().len(len).map(&file) }.map_err(|e| Error::io(path, "mmap", e))?)
        };
        Self::parse(path.to_owned(), &head, backing)
    }

    /// What a writing session has finished so far, to read before it
    /// commits: `file` (the session's output, whose header may not commit
    /// any of it yet) mapped anew, with `entries` (sections wholly written
    /// before byte `end`) as its directory. String ids of the session's new
    /// strings are not in it (the writer resolves those); its commit fields
    /// are those of no commit. Stream indexes are below `max_streams`.
    pub(crate) fn session_view(
        path: &Path,
        file: &File,
        end: u64,
        entries: &[crate::format::raw::DirEntryRaw],
        max_streams: u32,
    ) -> Result<Tb5File> {
        // SAFETY: read-only; the sections in `entries` lie before `end`, and
        // the writer never changes bytes of a section it finished. A writer
        // cutting the file below them (an abort) first checks that no
        // slice of this mapping is still handed out (`mapping_shared`).
        let map = unsafe { Mmap::map(file) }.map_err(|e| Error::io(path, "mmap", e))?;
        if (map.len() as u64) < end {
            let why = format!("the work file has {} bytes, its sections end at byte {end}", map.len());
            return Err(Error::io(path, "mmap", std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why)));
        }
        let dir = Directory::of_session(path, &map, end, entries, max_streams)?;
        // Its string blocks are the committed file's, checked when it was opened.
        Ok(Tb5File {
            path: path.to_owned(),
            backing: Arc::new(Backing::Map(map)),
            generation: 0,
            active_slot: 0,
            committed_end: end,
            dir,
            passed_over: None,
            intel: None,
        })
    }

    /// Whether slices of this file's bytes ([`SharedBytes`]) are still held
    /// somewhere (a callback's buffer), so its bytes must stay.
    pub(crate) fn mapping_shared(&self) -> bool {
        Arc::strong_count(&self.backing) > 1
    }

    /// Reads a TB5 file from bytes in memory; `name` is what errors call it.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Tb5File> {
        let head = bytes[..bytes.len().min(container::HEADER_SIZE as usize)].to_vec();
        Self::parse(name.into(), &head, Backing::Owned(bytes))
    }

    pub(crate) fn loc(&self, section: SectionRef, offset: u64) -> Location {
        Location { file: self.path.clone(), section, record: None, offset }
    }

    /// `head`: the caller's copy of the first (up to) [`container::HEADER_SIZE`]
    /// bytes, taken before `backing` was sized.
    fn parse(path: PathBuf, head: &[u8], backing: Backing) -> Result<Tb5File> {
        if let Some(layout) = crate::format::intel::layout_of(head) {
            return Self::parse_intel(path, layout, head, backing);
        }
        container::check_header(&path, head)?;
        let backing = Arc::new(backing);
        let slots = container::commit_slots(&path, head)?;
        let (newest, newest_index) = &slots[0];
        let why = match Self::at_commit(&path, &backing, newest, *newest_index) {
            Ok(file) => return Ok(file),
            Err(e) => e,
        };
        // The older commit is read only when the newer one does not; when
        // neither does, the newer one's error is the one to report.
        for (slot, index) in &slots[1..] {
            if let Ok(mut file) = Self::at_commit(&path, &backing, slot, *index) {
                file.passed_over =
                    Some(PassedOver { slot: *newest_index, generation: newest.generation, why: why.to_string() });
                return Ok(file);
            }
        }
        Err(why)
    }

    /// An Intel file: its sections indexed, nothing decoded yet.
    /// `head`: the file header as copied (the whole of it, or the first
    /// bytes of a file in memory, whose header is in `backing`).
    fn parse_intel(path: PathBuf, layout: FileLayout, head: &[u8], backing: Backing) -> Result<Tb5File> {
        // A file read from memory was given only its first bytes as `head`.
        let count = head.get(12..16).map_or(0, |c| u32::from_le_bytes(c.try_into().unwrap_or_default()));
        let whole = 16 + (count as usize).min(4096) * crate::format::intel::file_entry_size(layout);
        let header = if head.len() < whole && backing.bytes().starts_with(head) { backing.bytes() } else { head };
        let index = IntelIndex::read_with_header(&path, backing.bytes(), header, layout)?;
        let end = backing.bytes().len() as u64;
        Ok(Tb5File {
            dir: Directory::empty(),
            generation: 0,
            active_slot: 0,
            committed_end: end,
            path,
            backing: Arc::new(backing),
            passed_over: None,
            intel: Some(Box::new(index)),
        })
    }

    /// The view of the commit in slot `index`, checked: its directory and
    /// string blocks inside the file, their checksums right.
    fn at_commit(path: &Path, backing: &Arc<Backing>, slot: &SlotRaw, index: usize) -> Result<Tb5File> {
        let bytes = backing.bytes();
        let dir_bytes = container::directory_bytes(path, bytes, slot, index)?;
        let dir = Directory::read(path, bytes, slot, dir_bytes)?;
        let file = Tb5File {
            generation: slot.generation,
            active_slot: index,
            committed_end: slot.dir_offset + u64::from(slot.dir_length),
            dir,
            path: path.to_owned(),
            backing: Arc::clone(backing),
            passed_over: None,
            intel: None,
        };
        // String blocks are read on every string lookup: check them once here.
        for e in file.dir.entries.iter().filter(|e| e.section == SectionRef::Strings) {
            file.checked_bytes(e)?;
        }
        Ok(file)
    }

    /// When the newer commit of the file's two commit slots was passed over
    /// because it does not read (writes lost, damage), what is wrong with
    /// it: [`Tb5File::verify`] reports it, and an append refuses the file
    /// rather than overwrite that commit.
    pub(crate) fn passed_over_error(&self) -> Option<Error> {
        self.passed_over.as_ref().map(|p| {
            Error::malformed(
                Location {
                    file: self.path.clone(),
                    section: SectionRef::Header,
                    record: None,
                    offset: container::SLOT_OFFSET[p.slot],
                },
                format!(
                    "the newest commit (generation {}) does not read, so the file reads as the commit before it \
                     (generation {}): {}",
                    p.generation, self.generation, p.why
                ),
            )
        })
    }

    /// The file's path (or the name given to [`Tb5File::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's on-disk layout: this project's, or one of Intel's.
    pub fn layout(&self) -> FileLayout {
        self.intel.as_ref().map_or(FileLayout::Project, |i| i.layout)
    }

    /// The index of an Intel file.
    pub(crate) fn intel(&self) -> Option<&IntelIndex> {
        self.intel.as_deref()
    }

    /// The version word after an Intel file's eyecatcher (26 in VTune XE
    /// 2015's TB6 files, 27 in Intel's 2020 library's TB7); `None` for this
    /// project's layout, whose format version is the header's.
    pub fn intel_version(&self) -> Option<u32> {
        self.intel.as_ref().map(|i| i.version)
    }

    /// The commit generation: 1 for a new file, one more for every append
    /// (0 for an Intel file, which has no commits).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Which commit slot (0 = A, 1 = B) holds the commit this view shows.
    pub(crate) fn active_slot(&self) -> usize {
        self.active_slot
    }

    pub(crate) fn committed_end(&self) -> u64 {
        self.committed_end
    }

    pub(crate) fn directory(&self) -> &[SectionEntry] {
        &self.dir.entries
    }

    /// The file's bytes up to the end of this view's commit. Nothing past
    /// it belongs to the view: it is what an append in progress (or a
    /// killed one) wrote, which the next writer may cut off, so a mapping
    /// that still covers it must not be read there.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.backing.bytes()[..self.committed_end as usize]
    }

    /// `bytes` (a slice of this file's bytes) as [`SharedBytes`]; `None`
    /// when it is not inside them.
    pub(crate) fn share(&self, bytes: &[u8]) -> Option<SharedBytes> {
        let all = self.bytes();
        let start = (bytes.as_ptr() as usize).checked_sub(all.as_ptr() as usize)?;
        let end = start.checked_add(bytes.len()).filter(|&e| e <= all.len())?;
        Some(SharedBytes { backing: Arc::clone(&self.backing), range: start..end })
    }

    /// Tells the kernel that `bytes` (a slice of this file's bytes) is about
    /// to be read once, in order: read-ahead grows and pages read are
    /// dropped early. Only a hint; a file in memory ignores it.
    pub(crate) fn advise_sequential(&self, bytes: &[u8]) {
        let Backing::Map(m) = &*self.backing else { return };
        let Some(start) = (bytes.as_ptr() as usize).checked_sub(m.as_ptr() as usize) else { return };
        // madvise wants a page-aligned start; 4 KiB pages are the smallest there are.
        let aligned = start & !4095;
        let _ = m.advise_range(memmap2::Advice::Sequential, aligned, bytes.len() + (start - aligned));
    }

    pub(crate) fn raw_bytes(&self, e: &SectionEntry) -> &[u8] {
        // Ranges were checked against the file length when the directory was read.
        &self.bytes()[e.raw.offset as usize..(e.raw.offset + e.raw.length) as usize]
    }

    /// The bytes of a section after checking its checksum.
    pub(crate) fn checked_bytes(&self, e: &SectionEntry) -> Result<&[u8]> {
        let b = self.raw_bytes(e);
        let computed = crc32fast::hash(b);
        if !container::crc_matches(e.raw.crc, computed) {
            return Err(Error::Checksum {
                at: Box::new(self.loc(e.section, e.raw.offset)),
                stored: e.raw.crc,
                computed,
            });
        }
        Ok(b)
    }

    pub(crate) fn check_section_crc(&self, e: &SectionEntry) -> Result<()> {
        self.checked_bytes(e).map(|_| ())
    }

    pub(crate) fn cursor<'a>(&'a self, e: &'a SectionEntry) -> Result<SectionCursor<'a>> {
        Ok(SectionCursor::new(self.checked_bytes(e)?, e.raw.offset, &self.path, e.section))
    }

    pub(super) fn global(&self, s: GlobalSection) -> Option<&SectionEntry> {
        self.dir.global(s)
    }

    pub(crate) fn stream_entry(&self, stream: u32, s: StreamSection) -> Option<&SectionEntry> {
        self.dir.stream_entry(stream, s)
    }

    pub(crate) fn bind_entry(&self, stream: u32, b: BindSection) -> Option<&SectionEntry> {
        self.dir.bind_entry(stream, b)
    }

    pub(crate) fn stack_table_entry(&self, stream: u32) -> Option<&SectionEntry> {
        self.dir.stack_table(stream)
    }

    /// The bytes of a bind section (checksum checked except for the per-record data binds).
    pub(crate) fn bind_bytes(&self, stream: u32, b: BindSection) -> Result<Option<&[u8]>> {
        match self.bind_entry(stream, b) {
            None => Ok(None),
            Some(e) if matches!(b, BindSection::Data | BindSection::PackedData) => Ok(Some(self.raw_bytes(e))),
            Some(e) => self.checked_bytes(e).map(Some),
        }
    }

    /// Whether the file has a global section.
    pub fn has_section(&self, s: GlobalSection) -> bool {
        match self.intel() {
            Some(i) => i.has_global(s),
            None => self.global(s).is_some(),
        }
    }

    /// The hardware section.
    pub fn hardware(&self) -> Result<Option<System>> {
        if let Some(i) = self.intel() {
            return i
                .global(intel_type::SYSTEM)
                .map(|e| intel::decode_system(&self.path, &self.bytes()[e.range()], e.offset))
                .transpose();
        }
        self.global(GlobalSection::Hardware).map(|e| codec::decode_system(&mut self.cursor(e)?)).transpose()
    }

    /// The software section (strings as ids).
    pub fn software(&self) -> Result<Option<Software<StringId>>> {
        if let Some(i) = self.intel() {
            return self.intel_software(i);
        }
        self.global(GlobalSection::Software).map(|e| codec::decode_software(&mut self.cursor(e)?)).transpose()
    }

    /// An Intel file's host, OS and application sections as one software section.
    fn intel_software(&self, i: &IntelIndex) -> Result<Option<Software<StringId>>> {
        use crate::format::intel::codec::{decode_application, decode_host, decode_os};
        if !i.has_global(GlobalSection::Software) {
            return Ok(None);
        }
        let (p, b) = (&self.path, self.bytes());
        let host = i.global(intel_type::HOST).map(|e| intel::one::<intel_raw::HostRaw>(p, b, e, "TBRW_HOST"));
        let os = i.global(intel_type::OS).map(|e| intel::one::<intel_raw::OsRaw>(p, b, e, "TBRW_OS"));
        let app = i
            .global(intel_type::APPLICATION)
            .map(|e| intel::one::<intel_raw::ApplicationRaw>(p, b, e, "TBRW_APPLICATION"));
        Ok(Some(Software {
            host: host.transpose()?.map(|r| decode_host(&r)),
            os: os.transpose()?.map(|r| decode_os(&r)),
            application: app.transpose()?.map(|r| decode_application(&r)),
        }))
    }

    /// The version information section.
    pub fn version_info(&self) -> Result<Option<VersionInfo>> {
        if let Some(i) = self.intel() {
            return i
                .global(intel_type::VERSION_INFO)
                .map(|e| intel::one::<intel_raw::VersionInfoRaw>(&self.path, self.bytes(), e, "TBRW_VERSION_INFO"))
                .transpose()
                .map(|v| v.map(|r| crate::format::intel::codec::decode_version(&r)));
        }
        self.global(GlobalSection::VersionInfo).map(|e| codec::decode_version(&mut self.cursor(e)?)).transpose()
    }

    /// The user-defined global section's bytes.
    pub fn user_defined_global(&self) -> Result<Option<&[u8]>> {
        if let Some(i) = self.intel() {
            return Ok(i.global(intel_type::USER_GLOBAL).map(|e| &self.bytes()[e.range()]));
        }
        self.global(GlobalSection::UserDefinedGlobal).map(|e| self.checked_bytes(e)).transpose()
    }

    /// The symbols `tbrw symbolize` stored (opaque bytes here; the
    /// symbolizer reads them), checksum checked. Intel's layout has none.
    pub fn stored_symbols(&self) -> Result<Option<&[u8]>> {
        if let Some(i) = self.intel() {
            // A custom stream's user-defined stream section (docs/FORMAT.md,
            // "This project's sections in Intel's layout").
            let s = intel::stream_in(i, intel::Role::Symbols);
            let user = s.and_then(|s| i.stream_entry(s, StreamSection::UserDefinedStream));
            return Ok(s.map(|_| user.map_or(&[][..], |e| &self.bytes()[e.range()])));
        }
        self.dir.stored_symbols().map(|e| self.checked_bytes(e)).transpose()
    }

    /// The number of data streams.
    pub fn stream_count(&self) -> u32 {
        match self.intel() {
            Some(i) => i.streams.len() as u32,
            None => self.dir.stream_count() as u32,
        }
    }

    /// The number of strings in the file (ids 1 to this); 0 for an Intel
    /// file, whose string ids are the file offsets of their texts.
    pub fn string_count(&self) -> u64 {
        self.dir.string_count
    }

    /// The string with this id; id 0 and ids past the table are
    /// [`Error::InvalidString`]. In an Intel file the id is the file
    /// offset of a NUL-terminated UTF-8 text.
    pub fn string(&self, id: StringId) -> Result<&str> {
        if self.intel.is_some() {
            return intel::string_at(&self.path, self.bytes(), id);
        }
        let bad = || Error::InvalidString { id: id.0 };
        if id.0 == 0 || id.0 > self.dir.string_count {
            return Err(bad());
        }
        let blocks = &self.dir.blocks;
        let b = &blocks[blocks.partition_point(|b| b.first_id <= id.0) - 1];
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
}

/// The whole file header of an Intel file (its 16 bytes and every section
/// entry, at most a page's worth), copied twice in a row until the copies
/// agree: an append rewrites it with one write, so two equal copies are
/// one header, all old or all new.
fn read_intel_header(file: &File, path: &Path, layout: FileLayout) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let entry = crate::format::intel::file_entry_size(layout);
    let read = |n: usize| -> Result<Vec<u8>> {
        let mut b = vec![0u8; n];
        let mut got = 0;
        while got < n {
            match file.read_at(&mut b[got..], got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, "read", e)),
            }
        }
        b.truncate(got);
        Ok(b)
    };
    let mut last = Vec::new();
    for _ in 0..1000 {
        let start = read(16)?;
        let count = start.get(12..16).map_or(0, |c| u32::from_le_bytes(c.try_into().unwrap_or_default()));
        // The copy is bounded: a larger count is checked against the file when indexed.
        let n = 16 + (count as usize).min(4096) * entry;
        let copy = read(n)?;
        if copy == last {
            return Ok(copy);
        }
        last = copy;
    }
    Ok(last)
}

/// The first [`container::HEADER_SIZE`] bytes of `file` (fewer when it is
/// shorter), copied: the header and both commit slots.
fn read_head(file: &File, path: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; container::HEADER_SIZE as usize];
    let mut got = 0;
    while got < head.len() {
        match file.read_at(&mut head[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, "read", e)),
        }
    }
    head.truncate(got);
    Ok(head)
}
