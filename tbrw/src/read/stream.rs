//! One data stream of a committed file: [`Tb5File::stream`] and
//! [`StreamReader`] for its sections, [`LegacySamples`] for the guide's PC
//! records of stream 0. The records themselves are a
//! [`DataSection`](super::DataSection) (`data_section.rs`).
//!
//! Imports the file, its data sections, stack tables and bind view; none of
//! those imports this.

use super::bind_view::BindView;
use super::data_section::DataSection;
use super::directory::SectionEntry;
use super::file::Tb5File;
use super::intel::{self, IntelEntry};
use crate::format::codec;
use crate::format::intel::section_type as intel_type;
use crate::model::descriptor::{DescEntry, RecordLayout};
use crate::model::error::{Error, Result};
use crate::model::event::Event;
use crate::model::sample::LegacySample;
use crate::model::section::{BindSection, SectionRef, StreamSection};
use crate::model::stream::StreamInfo;
use crate::model::strings::StringId;

/// One data stream of a file.
#[derive(Clone, Copy)]
pub struct StreamReader<'f> {
    file: &'f Tb5File,
    index: u32,
}

impl<'f> StreamReader<'f> {
    pub(crate) fn new(file: &'f Tb5File, index: u32) -> Self {
        StreamReader { file, index }
    }

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
        match self.file.intel() {
            Some(_) => self.intel_entry(s).is_some(),
            None => self.file.stream_entry(self.index, s).is_some(),
        }
    }

    /// Whether the stream holds records of its own (samples, tasks, calls):
    /// false for the streams of a file in Intel's layout that hold another
    /// stream's bind (Intel's three bind streams), its stack table or the
    /// stored symbols (docs/FORMAT.md, "This project's sections in Intel's
    /// layout"). Exports and commands that walk every stream skip those.
    pub fn holds_records(&self) -> bool {
        self.file.intel().is_none_or(|i| i.roles.get(self.index as usize).is_none_or(|r| *r == intel::Role::Data))
    }

    fn entry(&self, s: StreamSection) -> Option<&'f SectionEntry> {
        self.file.stream_entry(self.index, s)
    }

    /// The section `s` of a stream of an Intel file. Stream 0's events are
    /// VTune's legacy events section when it has no TBRW one.
    fn intel_entry(&self, s: StreamSection) -> Option<&'f IntelEntry> {
        let i = self.file.intel()?;
        i.stream_entry(self.index, s).or_else(|| {
            (s == StreamSection::EventDescription && self.index == 0).then(|| i.legacy(intel_type::LEGACY_EVENTS))?
        })
    }

    /// The stream information section.
    pub fn info(&self) -> Result<Option<StreamInfo<StringId>>> {
        if self.file.intel().is_some() {
            let e = self.intel_entry(StreamSection::StreamInfo);
            return e.map(|e| intel::stream_info(self.file.path(), self.file.bytes(), e, self.index)).transpose();
        }
        self.entry(StreamSection::StreamInfo).map(|e| codec::decode_stream_info(&mut self.file.cursor(e)?)).transpose()
    }

    /// The event description section.
    pub fn events(&self) -> Result<Option<Vec<Event<StringId>>>> {
        if self.file.intel().is_some() {
            let (p, b) = (self.file.path(), self.file.bytes());
            return self
                .intel_entry(StreamSection::EventDescription)
                .map(|e| match e.section_type {
                    intel_type::LEGACY_EVENTS => intel::legacy_events(p, b, e),
                    _ => intel::events(p, b, e, self.index),
                })
                .transpose();
        }
        self.entry(StreamSection::EventDescription)
            .map(|e| codec::decode_events(&mut self.file.cursor(e)?, e.raw.count))
            .transpose()
    }

    /// The data descriptor entries (with effective offsets).
    pub fn descriptor(&self) -> Result<Option<Vec<DescEntry<StringId>>>> {
        if self.file.intel().is_some() {
            let e = self.intel_entry(StreamSection::DataDescription);
            return e.map(|e| intel::descriptor(self.file.path(), self.file.bytes(), e, self.index)).transpose();
        }
        self.entry(StreamSection::DataDescription)
            .map(|e| codec::decode_descs(&mut self.file.cursor(e)?, e.raw.count))
            .transpose()
    }

    /// The record layout the data descriptor defines (Intel's files: the
    /// offsets as stored, see [`RecordLayout::as_given`]).
    pub fn layout(&self) -> Result<Option<RecordLayout>> {
        let Some(entries) = self.descriptor()? else { return Ok(None) };
        let (layout, at) = match self.intel_entry(StreamSection::DataDescription) {
            Some(e) => (RecordLayout::as_given(&entries), e.offset),
            None => {
                let e = self.entry(StreamSection::DataDescription).expect("descriptor was just read");
                (RecordLayout::from_entries(&entries), e.raw.offset)
            }
        };
        let section = SectionRef::Stream(self.index, StreamSection::DataDescription);
        layout.map(Some).map_err(|err| Error::malformed(self.file.loc(section, at), err.to_string()))
    }

    /// The data section: the records, as slices of the mapped file.
    pub fn data(&self) -> Result<Option<DataSection<'f>>> {
        if self.file.intel().is_some() {
            return self.intel_data();
        }
        let Some(e) = self.entry(StreamSection::Data) else { return Ok(None) };
        Ok(Some(DataSection::new(self.file, e, self.index)))
    }

    /// An Intel file's data section. The records are as many as its length
    /// holds: Intel's writer can store a wrong entry count (docs/FORMAT.md,
    /// "Intel's writer's count"); the length is what was written.
    ///
    /// A stream with a data descriptor and no data section has no records:
    /// Intel's layout has no section of no bytes, so a stream written with
    /// no records has none (docs/FORMAT.md, "What Intel's layout cannot
    /// hold"), where this project's layout kept an empty one; it reads as
    /// an empty data section, as it did there (the C API, which asks
    /// [`has_section`](Self::has_section), still finds no section, as
    /// Intel's library does).
    fn intel_data(&self) -> Result<Option<DataSection<'f>>> {
        let Some(e) = self.intel_entry(StreamSection::Data) else {
            let Some(layout) = self.layout()? else { return Ok(None) };
            let size = (layout.record_size() as usize).max(1);
            return Ok(Some(DataSection::from_parts(self.file, &[], size, 0, self.index, false)));
        };
        let section = SectionRef::Stream(self.index, StreamSection::Data);
        let size = self.layout()?.map_or(0, |l| l.record_size() as u64);
        if size == 0 || e.length % size != 0 {
            return Err(Error::malformed(
                self.file.loc(section, e.offset),
                match size {
                    0 => format!("{} bytes of records, and no data descriptor defines a record", e.length),
                    _ => format!("{} bytes are not whole {size}-byte records", e.length),
                },
            ));
        }
        let bytes = &self.file.bytes()[e.range()];
        let ordered = self.intel_entry(StreamSection::StreamInfo).is_some_and(|i| {
            intel::stream_flags(self.file.bytes(), i) & crate::format::intel::STREAM_FLAG_TIME_ORDERED != 0
        });
        Ok(Some(DataSection::from_parts(self.file, bytes, size as usize, e.offset, self.index, ordered)))
    }

    /// The data section after checking it against the data descriptor:
    /// records of the descriptor's size, as many as the directory says.
    /// What the enumerations hand out, so that a callback never gets a
    /// record count that does not match its bytes or the record layout.
    pub fn checked_data(&self) -> Result<Option<DataSection<'f>>> {
        let Some(d) = self.data()? else { return Ok(None) };
        let want = self.layout()?.map(|l| l.record_size() as usize);
        let fits = d.len().checked_mul(d.record_size() as u64) == Some(d.as_bytes().len() as u64);
        if want != Some(d.record_size()) || !fits {
            return Err(Error::malformed(
                self.file.loc(SectionRef::Stream(self.index, StreamSection::Data), d.file_offset()),
                format!(
                    "{} records of {} bytes in {} bytes, but the data descriptor defines {}",
                    d.len(),
                    d.record_size(),
                    d.as_bytes().len(),
                    want.map_or("no record".to_owned(), |w| format!("{w}-byte records")),
                ),
            ));
        }
        Ok(Some(d))
    }

    /// The user-defined stream section's bytes.
    pub fn user_defined(&self) -> Result<Option<&'f [u8]>> {
        if self.file.intel().is_some() {
            return Ok(self.intel_entry(StreamSection::UserDefinedStream).map(|e| &self.file.bytes()[e.range()]));
        }
        self.entry(StreamSection::UserDefinedStream).map(|e| self.file.checked_bytes(e)).transpose()
    }

    /// Whether the stream has a stored bind.
    pub fn is_bound(&self) -> bool {
        if let Some(i) = self.file.intel() {
            return intel::find_bind(i, self.index).is_some();
        }
        self.file.bind_entry(self.index, BindSection::Modules).is_some()
    }

    /// The stream's stack table (docs/FORMAT.md "Stack table"), if it has one.
    pub fn stack_table(&self) -> Result<Option<super::StackTableView<'f>>> {
        super::StackTableView::of(self.file, self.index)
    }

    /// The stored bind of the stream, if it has one.
    pub fn bind_view(&self) -> Result<Option<BindView<'f>>> {
        BindView::stored(self.file, self.index)
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
                self.file.loc(SectionRef::Stream(self.index, StreamSection::Data), data.file_offset()),
                format!("records are {} bytes but the descriptor defines {}", data.record_size(), layout.record_size()),
            ));
        }
        Ok(LegacySamples { data, next: 0, pc: pc as usize, tsc: layout.tsc_offset().map(|t| t as usize) })
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

impl Iterator for LegacySamples<'_> {
    type Item = LegacySample;

    fn next(&mut self) -> Option<LegacySample> {
        let rec = self.data.record(self.next)?;
        self.next += 1;
        LegacySample::from_record(rec, self.pc, self.tsc)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.data.len().saturating_sub(self.next) as usize;
        (n, Some(n))
    }
}

/// The streams of a file.
impl Tb5File {
    /// One data stream.
    pub fn stream(&self, index: u32) -> Result<StreamReader<'_>> {
        if index >= self.stream_count() {
            return Err(Error::StreamNotExist { stream: index });
        }
        Ok(StreamReader::new(self, index))
    }
}
