//! Reading Intel's layout (docs/FORMAT.md, "Intel's layout"): the index
//! of a file's sections ([`IntelIndex`], built when it is opened), and the
//! decoding of each section into the model, checked against the file.
//!
//! Opening walks the file header's section table, the TBRW global table
//! (type 0x22) and the chain of stream tables (0x29), and checks that
//! every section it keeps lies inside the file; sections are decoded on
//! access. Intel's layout has no checksums: every offset, count and length
//! is checked against the bytes before it is used, and every error names
//! the section and the byte offset.
//!
//! Imports `model` and `format::intel` only; the file (`read/file.rs`)
//! holds an index and calls the decoders here.

mod bind;
mod decode;
mod legacy;
mod system;

use std::collections::BTreeMap;
use std::path::Path;

use crate::format::intel::raw::{FileSectionTb5Raw, FileStartRaw, Raw, SectionTb6Raw, TbrwSectionTb5Raw};
use crate::format::intel::{file_entry_size, section_type as st, table_entry_size};
use crate::model::error::{Error, Location, Result};
use crate::model::layout::FileLayout;
use crate::model::section::{GlobalSection, SectionRef, StreamSection};

pub(crate) use bind::{find as find_bind, stream_in, Role};
pub(crate) use decode::*;
pub(crate) use legacy::legacy_events;
pub(crate) use system::decode_system;

/// One section of an Intel file: where it is, and where its entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntelEntry {
    pub(crate) section_type: u32,
    pub(crate) offset: u64,
    pub(crate) length: u64,
    pub(crate) number_entries: u64,
    pub(crate) entry_length: u32,
    /// The file offset of the entry that names the section (for messages).
    pub(crate) entry_at: u64,
}

impl IntelEntry {
    /// The section's byte range (checked against the file when the index was built).
    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        self.offset as usize..(self.offset + self.length) as usize
    }
}

/// The TBRW sections of one stream (its stream table).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IntelStream {
    /// Where the stream's table is, and its length.
    pub(crate) table_at: u64,
    pub(crate) table_len: u64,
    pub(crate) events: Option<IntelEntry>,
    pub(crate) descriptor: Option<IntelEntry>,
    pub(crate) data: Option<IntelEntry>,
    pub(crate) user: Option<IntelEntry>,
    pub(crate) info: Option<IntelEntry>,
}

impl IntelStream {
    pub(crate) fn get(&self, s: StreamSection) -> Option<&IntelEntry> {
        match s {
            StreamSection::EventDescription => self.events.as_ref(),
            StreamSection::DataDescription => self.descriptor.as_ref(),
            StreamSection::Data => self.data.as_ref(),
            StreamSection::UserDefinedStream => self.user.as_ref(),
            StreamSection::StreamInfo => self.info.as_ref(),
        }
    }

    fn slot(&mut self, section_type: u32) -> Option<&mut Option<IntelEntry>> {
        Some(match section_type {
            st::EVENTS => &mut self.events,
            st::DATA_DESCRIPTOR => &mut self.descriptor,
            st::DATA => &mut self.data,
            st::USER_STREAM => &mut self.user,
            st::STREAM_INFO => &mut self.info,
            _ => return None,
        })
    }
}

/// The sections of an Intel file, indexed when it is opened.
#[derive(Debug)]
pub(crate) struct IntelIndex {
    pub(crate) layout: FileLayout,
    /// The version after the eyecatcher (not checked by Intel's reader).
    pub(crate) version: u32,
    /// The file header's sections other than the global table, in table
    /// order: VTune's legacy sections.
    pub(crate) legacy: Vec<IntelEntry>,
    /// The global table's sections by type (a type given twice: the later one).
    pub(crate) globals: BTreeMap<u32, IntelEntry>,
    pub(crate) streams: Vec<IntelStream>,
    /// The global table (type 0x22) and its entry's index in the file header.
    pub(crate) global_table: Option<(IntelEntry, usize)>,
    /// The number of file header entries.
    pub(crate) header_entries: u32,
    /// What each stream holds (binds, this project's stack tables and symbols).
    pub(crate) roles: Vec<Role>,
}

/// Where errors of the index point.
struct Walk<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    /// The file header (a copy: an append rewrites it in place).
    header: &'a [u8],
    layout: FileLayout,
}

impl Walk<'_> {
    fn error(&self, section: SectionRef, record: Option<u64>, offset: u64, what: impl Into<String>) -> Error {
        Error::malformed(Location { file: self.path.to_owned(), section, record, offset }, what)
    }

    /// Entry `i` of a table whose entries start at `at` (inside the file, checked by the caller).
    fn entry(&self, at: u64, header: bool) -> IntelEntry {
        let b = if header { self.header.get(at as usize..).unwrap_or_default() } else { &self.bytes[at as usize..] };
        let e = match (self.layout, header) {
            (FileLayout::IntelTb5, true) => FileSectionTb5Raw::decode(b).map(|r| {
                (
                    u64::from(r.length),
                    u64::from(r.file_offset),
                    u64::from(r.number_entries),
                    u32::from(r.entry_length),
                    u32::from(r.section_type),
                )
            }),
            (FileLayout::IntelTb5, false) => TbrwSectionTb5Raw::decode(b)
                .map(|r| (r.length, r.file_offset, u64::from(r.number_entries), r.entry_length, r.section_type)),
            _ => SectionTb6Raw::decode(b)
                .map(|r| (r.length, r.file_offset, r.number_entries, r.entry_length, r.section_type)),
        };
        let (length, offset, number_entries, entry_length, section_type) = e.unwrap_or_default();
        IntelEntry { section_type, offset, length, number_entries, entry_length, entry_at: at }
    }

    /// Checks that `e`'s section lies inside the file.
    fn check_range(&self, e: &IntelEntry, table: SectionRef, index: u64) -> Result<()> {
        let end = e.offset.checked_add(e.length);
        if end.is_none_or(|end| end > self.bytes.len() as u64) {
            return Err(self.error(
                table,
                Some(index),
                e.entry_at,
                format!(
                    "section type {:#x} ({}) at bytes {}..{} lies outside the {}-byte file",
                    e.section_type,
                    crate::model::layout::intel_section_name(e.section_type),
                    e.offset,
                    e.offset as u128 + e.length as u128,
                    self.bytes.len()
                ),
            ));
        }
        Ok(())
    }

    /// The used entries of the table `table` (a section of `entry_size`-byte entries):
    /// empty slots (type 0) and logically deleted sections (0xFFFE) left out.
    fn table_entries(&self, table: &IntelEntry, what: SectionRef) -> Result<Vec<IntelEntry>> {
        let size = table_entry_size(self.layout) as u64;
        let mut out = Vec::new();
        for i in 0..table.length / size {
            let e = self.entry(table.offset + i * size, false);
            if matches!(e.section_type, 0 | st::DELETED) {
                continue;
            }
            self.check_range(&e, what, i)?;
            out.push(e);
        }
        Ok(out)
    }
}

impl IntelIndex {
    /// Indexes the Intel file `bytes` (whose first 8 bytes are one of
    /// Intel's eyecatchers), its file header taken from `header` (a copy
    /// made before the file was mapped).
    pub(crate) fn read_with_header(path: &Path, bytes: &[u8], header: &[u8], layout: FileLayout) -> Result<IntelIndex> {
        let w = Walk { path, bytes, header, layout };
        let start = FileStartRaw::decode(header).ok_or_else(|| {
            w.error(SectionRef::Header, None, 0, format!("a {}-byte file has no section table", bytes.len()))
        })?;
        let entry_size = file_entry_size(layout) as u64;
        let room = (bytes.len() as u64 - FileStartRaw::SIZE as u64) / entry_size;
        if u64::from(start.num_sections) > room {
            return Err(w.error(
                SectionRef::Header,
                None,
                12,
                format!(
                    "{} sections of {entry_size} bytes cannot follow the header in a {}-byte file",
                    start.num_sections,
                    bytes.len()
                ),
            ));
        }
        let mut index = IntelIndex {
            layout,
            version: start.version,
            legacy: Vec::new(),
            globals: BTreeMap::new(),
            streams: Vec::new(),
            global_table: None,
            header_entries: start.num_sections,
            roles: Vec::new(),
        };
        let mut global_table = None;
        for i in 0..u64::from(start.num_sections) {
            let e = w.entry(FileStartRaw::SIZE as u64 + i * entry_size, true);
            if matches!(e.section_type, 0 | st::DELETED) {
                continue;
            }
            w.check_range(&e, SectionRef::Header, i)?;
            if e.section_type == st::GLOBAL_TABLE {
                global_table = Some(e);
                index.global_table = Some((e, i as usize));
            } else {
                index.legacy.push(e);
            }
        }
        if let Some(table) = global_table {
            index.read_globals(&w, &table)?;
        }
        index.roles = bind::roles(path, bytes, &index);
        Ok(index)
    }

    /// The global table: the global sections, and the first stream table.
    fn read_globals(&mut self, w: &Walk<'_>, table: &IntelEntry) -> Result<()> {
        let mut first_stream = None;
        for e in w.table_entries(table, SectionRef::Intel(st::GLOBAL_TABLE))? {
            if e.section_type == st::STREAM_TABLE {
                first_stream = Some(e);
            } else {
                self.globals.insert(e.section_type, e);
            }
        }
        if let Some(t) = first_stream {
            self.read_streams(w, t)?;
        }
        Ok(())
    }

    /// The chain of stream tables: stream n's table holds its sections and
    /// the entry of stream n+1's table. Tables may not overlap, so the
    /// chain ends and the number of streams is bounded by the file's size.
    fn read_streams(&mut self, w: &Walk<'_>, first: IntelEntry) -> Result<()> {
        let mut taken: BTreeMap<u64, u64> = BTreeMap::new();
        let mut next = Some(first);
        while let Some(table) = next.take() {
            let here = SectionRef::Intel(st::STREAM_TABLE);
            let end = table.offset + table.length;
            let overlaps = taken.range(..end).next_back().is_some_and(|(_, &e)| e > table.offset);
            if table.length == 0 || overlaps {
                return Err(w.error(
                    here,
                    None,
                    table.entry_at,
                    format!(
                        "the table of stream {} at bytes {}..{end} is empty or overlaps another stream's table",
                        self.streams.len(),
                        table.offset
                    ),
                ));
            }
            taken.insert(table.offset, end);
            let mut stream = IntelStream { table_at: table.offset, table_len: table.length, ..Default::default() };
            for e in w.table_entries(&table, here)? {
                if e.section_type == st::STREAM_TABLE {
                    next = Some(e);
                } else if let Some(slot) = stream.slot(e.section_type) {
                    // A section given twice: the later entry, as Intel's reader.
                    // An empty one is no section (VTune's placeholder stream 1).
                    *slot = (e.length != 0).then_some(e);
                }
            }
            self.streams.push(stream);
        }
        Ok(())
    }

    /// The global section of type `t`.
    pub(crate) fn global(&self, t: u32) -> Option<&IntelEntry> {
        self.globals.get(&t)
    }

    /// The first legacy section of type `t` in the file header (Intel writes
    /// stream 0's sample records first).
    pub(crate) fn legacy(&self, t: u32) -> Option<&IntelEntry> {
        self.legacy.iter().find(|e| e.section_type == t)
    }

    /// Whether the file has the global section `s` (the API's identifier).
    pub(crate) fn has_global(&self, s: GlobalSection) -> bool {
        global_types(s).iter().any(|t| self.globals.contains_key(t))
    }

    pub(crate) fn stream_entry(&self, n: u32, s: StreamSection) -> Option<&IntelEntry> {
        self.streams.get(n as usize).and_then(|x| x.get(s))
    }
}

/// The section types that make up the API's global section `s`.
pub(crate) fn global_types(s: GlobalSection) -> &'static [u32] {
    match s {
        GlobalSection::Hardware => &[st::SYSTEM],
        GlobalSection::Software => &[st::HOST, st::OS, st::APPLICATION],
        GlobalSection::ProcessThread => &[st::PIDS, st::TIDS],
        GlobalSection::Module => &[st::MODULES],
        GlobalSection::UserDefinedGlobal => &[st::USER_GLOBAL],
        GlobalSection::VersionInfo => &[st::VERSION_INFO],
    }
}

/// The API's section a TBRW section type belongs to, for error locations.
pub(crate) fn section_ref(t: u32, stream: u32) -> SectionRef {
    match t {
        st::SYSTEM => GlobalSection::Hardware.into(),
        st::HOST | st::OS | st::APPLICATION => GlobalSection::Software.into(),
        st::PIDS | st::TIDS => GlobalSection::ProcessThread.into(),
        st::MODULES => GlobalSection::Module.into(),
        st::USER_GLOBAL => GlobalSection::UserDefinedGlobal.into(),
        st::VERSION_INFO => GlobalSection::VersionInfo.into(),
        st::EVENTS => SectionRef::Stream(stream, StreamSection::EventDescription),
        st::DATA_DESCRIPTOR => SectionRef::Stream(stream, StreamSection::DataDescription),
        st::DATA => SectionRef::Stream(stream, StreamSection::Data),
        st::USER_STREAM => SectionRef::Stream(stream, StreamSection::UserDefinedStream),
        st::STREAM_INFO => SectionRef::Stream(stream, StreamSection::StreamInfo),
        other => SectionRef::Intel(other),
    }
}
