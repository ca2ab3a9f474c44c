//! [`DataSection`]: the records of one stream's data section, handed out as
//! slices of the mapped file.
//!
//! Imports the file and its directory only: the stream reader and the bind
//! view both build on it.

use super::directory::SectionEntry;
use super::file::{SharedBytes, Tb5File};
use crate::format::container;
use crate::model::error::{Error, Result};
use crate::model::section::{SectionRef, StreamSection};

/// The records of a data section: zero-copy slices of the mapped file.
#[derive(Clone, Copy)]
pub struct DataSection<'f> {
    file: &'f Tb5File,
    bytes: &'f [u8],
    record_size: usize,
    len: u64,
    offset: u64,
    stream: u32,
    time_ordered: bool,
}

impl std::fmt::Debug for DataSection<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataSection")
            .field("record_size", &self.record_size)
            .field("len", &self.len)
            .field("offset", &self.offset)
            .field("stream", &self.stream)
            .finish()
    }
}

impl<'f> DataSection<'f> {
    /// The data section that directory entry `e` of stream `stream` describes.
    pub(super) fn new(file: &'f Tb5File, e: &SectionEntry, stream: u32) -> Self {
        DataSection {
            file,
            bytes: file.raw_bytes(e),
            record_size: e.raw.record_size as usize,
            len: e.raw.count,
            offset: e.raw.offset,
            stream,
            time_ordered: e.raw.flags & container::FLAG_TIME_ORDERED != 0,
        }
    }

    /// Records of `record_size` bytes (not 0) filling `bytes`, a slice of
    /// `file`'s bytes at `offset` (Intel's layout: time ordered when this
    /// project's writer said so in the stream's information).
    pub(super) fn from_parts(
        file: &'f Tb5File,
        bytes: &'f [u8],
        record_size: usize,
        offset: u64,
        stream: u32,
        time_ordered: bool,
    ) -> Self {
        let len = (bytes.len() / record_size.max(1)) as u64;
        DataSection { file, bytes, record_size, len, offset, stream, time_ordered }
    }

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

    /// Whether the writer marked the records as in time order: the time
    /// of [`crate::RecordLayout::time_at`] never goes down from one record
    /// to the next (docs/FORMAT.md, "Directory"; `verify` checks it).
    /// `false`: not known to be.
    pub fn time_ordered(&self) -> bool {
        self.time_ordered
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

impl DataSection<'_> {
    /// Up to `max` records from `start` (fewer at the end), sharing the
    /// file's mapping instead of copying: an enumeration's chunk.
    pub fn shared_chunk(&self, start: u64, max: usize) -> Result<SharedBytes> {
        let chunk = self.chunks_from(start, max)?.next().unwrap_or(&self.bytes[self.bytes.len()..]);
        Ok(self.file.share(chunk).expect("a data section is inside its file"))
    }

    /// Tells the kernel the records from `start` on are about to be read in order.
    pub fn advise_sequential(&self, start: u64) {
        let from = (start.min(self.len) as usize) * self.record_size;
        self.file.advise_sequential(&self.bytes[from..]);
    }
}
