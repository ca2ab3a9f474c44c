//! The one error type of this crate and the TBRW error codes it maps to.
//!
//! Every failure names what went wrong and where: the file, the section,
//! the record index and the byte offset where they apply. [`Error::code`]
//! gives the `TBRW_*` error number of `tbrw.h` that the C layer returns.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::section::{GlobalSection, SectionRef, StreamSection};

pub use super::codes;

/// A position in a TB5 file: which file, which section, which record and
/// which byte. Displayed as `file.tb5: stream 0 TBRW_DATA_SECTION, record 7, byte 4096`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub file: PathBuf,
    /// The section.
    pub section: SectionRef,
    /// The record (entry) index inside the section, where it applies.
    pub record: Option<u64>,
    /// The absolute byte offset in the file.
    pub offset: u64,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.section)?;
        if let Some(r) = self.record {
            write!(f, ", record {r}")?;
        }
        write!(f, ", byte {}", self.offset)
    }
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused an operation on a file.
    #[error("{path}: {action}: {source}", path = .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("open", "write", "rename", ...).
        action: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file could not be opened (missing, no permission, locked).
    #[error("{path}: cannot open: {source}", path = .path.display())]
    FileOpen {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file is not a TB5 file of this library (wrong magic).
    #[error("{path}: not a TB5 file: {what}", path = .path.display())]
    NotTb5 {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        what: String,
    },
    /// The file's format version cannot be read by this library.
    #[error("{path}: format version {found} is not supported (this library reads {min} to {max})", path = .path.display())]
    IncompatibleVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// Lowest readable version.
        min: u32,
        /// Highest readable version.
        max: u32,
    },
    /// The file's bytes do not form valid TB5 content at a location.
    #[error("{at}: {what}")]
    Malformed {
        /// Where.
        at: Box<Location>,
        /// What was invalid.
        what: String,
    },
    /// A checksum did not match: the bytes were changed after writing.
    #[error("{at}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// Where the checksummed range starts.
        at: Box<Location>,
        /// The stored checksum.
        stored: u32,
        /// The checksum of the bytes found.
        computed: u32,
    },
    /// `verify()` found a required section missing.
    #[error("{path}: required section {section} is missing", path = .path.display())]
    MissingRequired {
        /// The file.
        path: PathBuf,
        /// The section.
        section: SectionRef,
    },
    /// The access mode flags are not a valid combination, or the operation
    /// needs an access the file was not opened with.
    #[error("access mode {mode:#x} does not allow {what}")]
    InvalidAccess {
        /// The flags.
        mode: u32,
        /// What was attempted.
        what: &'static str,
    },
    /// A section that exists (in the file or in this session) was opened
    /// for writing again.
    #[error("{section} already exists or is in use")]
    SectionInUse {
        /// The section.
        section: SectionRef,
    },
    /// A section that does not exist was asked for.
    #[error("{section} does not exist")]
    SectionNotExist {
        /// The section.
        section: SectionRef,
    },
    /// A section was used for writing without being opened for writing.
    #[error("{section} is not open for writing")]
    SectionNotWriteable {
        /// The section.
        section: SectionRef,
    },
    /// A section was used for reading without being opened for reading.
    #[error("{section} is not open for reading")]
    SectionNotReadable {
        /// The section.
        section: SectionRef,
    },
    /// A stream that exists was opened for writing again.
    #[error("stream {stream} already exists or is in use")]
    StreamInUse {
        /// The stream index.
        stream: u32,
    },
    /// A stream that does not exist was asked for.
    #[error("stream {stream} does not exist")]
    StreamNotExist {
        /// The stream index.
        stream: u32,
    },
    /// A stream index that cannot be used here.
    #[error("stream {stream}: {why}")]
    InvalidStream {
        /// The stream index.
        stream: u32,
        /// Why.
        why: String,
    },
    /// Close was asked while a global section was still open.
    #[error("cannot close: {section} is still open")]
    GlobalSectionNotClosed {
        /// The open section.
        section: GlobalSection,
    },
    /// A stream was finished, or the file closed, while one of the stream's
    /// sections was still open.
    #[error("stream {stream} {} is still open", .section.c_name())]
    StreamSectionNotClosed {
        /// The stream.
        stream: u32,
        /// The open section.
        section: StreamSection,
    },
    /// Close was asked while a stream was still open.
    #[error("cannot close: stream {stream} is still open")]
    StreamNotClosed {
        /// The stream.
        stream: u32,
    },
    /// Close was asked while sections opened for reading were not done.
    #[error("cannot close: {section} is still open for reading")]
    NotAllSectionsClosed {
        /// The section.
        section: SectionRef,
    },
    /// A stream that is not bound was asked for bind information.
    #[error("stream {stream} is not bound")]
    StreamNotBound {
        /// The stream.
        stream: u32,
    },
    /// A string id that names no string (0 is "no string", guide FAQ 7.6).
    #[error("string id {id} names no string")]
    InvalidString {
        /// The id.
        id: u64,
    },
    /// Data of a size the record layout does not allow.
    #[error("stream {stream}: {what}")]
    UnsupportedDataSize {
        /// The stream.
        stream: u32,
        /// What was wrong with the size.
        what: String,
    },
    /// An index past the end of a table.
    #[error("{section}: index {index} is out of range (there are {len})")]
    EntryNotFound {
        /// The table.
        section: SectionRef,
        /// The index asked for.
        index: u64,
        /// The number of entries.
        len: u64,
    },
    /// An enumeration start index past the end.
    #[error("{section}: start index {start} is past the end ({len} entries)")]
    InvalidReadStart {
        /// The table.
        section: SectionRef,
        /// The start index.
        start: u64,
        /// The number of entries.
        len: u64,
    },
    /// A value given to the API is not acceptable.
    #[error("{what}")]
    BadParameter {
        /// What was wrong.
        what: String,
    },
    /// A section was finished with nothing in it that it needs.
    #[error("{section}: nothing was written to it")]
    NoDataToWrite {
        /// The section.
        section: SectionRef,
    },
    /// Something this library does not do, such as appending to a file in
    /// Intel's layout.
    #[error("{path}: {what}", path = .path.display())]
    NotImplemented {
        /// The file.
        path: PathBuf,
        /// What is not done.
        what: String,
    },
    /// An Intel file lacks a section Intel's library requires of a sample
    /// file (its `TBRW_verify` gives 24, "Invalid sample file").
    #[error("{path}: {what}", path = .path.display())]
    InvalidSampleFile {
        /// The file.
        path: PathBuf,
        /// What is missing.
        what: String,
    },
    /// A CPU architecture entry has an invalid number of cpuids.
    #[error("{what}")]
    UnexpectedNumCpuids {
        /// What was wrong.
        what: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The `TBRW_*` error code of `tbrw.h` for this error.
    pub fn code(&self) -> u32 {
        use codes::*;
        match self {
            Error::Io { .. } => TBRW_SAM_ERROR,
            Error::FileOpen { .. } => TBRW_FILE_OPEN_FAILED,
            Error::NotTb5 { .. } => TBRW_SAMPLE_FILE_MAPPING_ERROR,
            Error::IncompatibleVersion { .. } => TBRW_INCOMPATIBLE_VERSION,
            Error::Malformed { .. } | Error::Checksum { .. } => TBRW_SAM_ERROR,
            Error::MissingRequired { .. } => TBRW_SECTION_NOT_EXIST,
            Error::InvalidSampleFile { .. } => TBRW_INVALID_SAMPLE_FILE,
            Error::NotImplemented { .. } => TBRW_NOT_IMPLEMENTED,
            Error::InvalidAccess { .. } => TBRW_INVALID_ACCESS_PERMS,
            Error::SectionInUse { .. } => TBRW_SECTION_ALREADY_IN_USE,
            Error::SectionNotExist { .. } => TBRW_SECTION_NOT_EXIST,
            Error::SectionNotWriteable { .. } => TBRW_SECTION_NOT_WRITEABLE,
            Error::SectionNotReadable { .. } => TBRW_SECTION_NOT_READABLE,
            Error::StreamInUse { .. } => TBRW_STREAM_ALREADY_IN_USE,
            Error::StreamNotExist { .. } => TBRW_STREAM_NOT_EXIST,
            Error::InvalidStream { .. } => TBRW_INVALID_STREAM,
            Error::GlobalSectionNotClosed { .. } => TBRW_GLOBAL_SECTION_NOT_CLOSED,
            Error::StreamSectionNotClosed { .. } => TBRW_STREAM_SECTION_NOT_CLOSED,
            Error::StreamNotClosed { .. } => TBRW_STREAM_NOT_CLOSED,
            Error::NotAllSectionsClosed { .. } => TBRW_NOT_ALL_SECTIONS_CLOSED,
            Error::InvalidString { .. } => TBRW_INVALID_STRING,
            Error::StreamNotBound { .. } => TBRW_STREAM_NOT_BOUND,
            Error::UnsupportedDataSize { .. } => TBRW_UNSUPPORTED_DATA_SIZE,
            Error::EntryNotFound { .. } => TBRW_ENTRY_NOT_FOUND,
            Error::InvalidReadStart { .. } => TBRW_INVALID_READ_START,
            Error::BadParameter { .. } => TBRW_BAD_PARAMETER,
            Error::NoDataToWrite { .. } => TBRW_NO_DATA_TO_WRITE,
            Error::UnexpectedNumCpuids { .. } => TBRW_UNEXPECTED_NUM_CPUIDS,
        }
    }

    pub(crate) fn io(path: &Path, action: &'static str, source: io::Error) -> Self {
        Error::Io { path: path.to_owned(), action, source }
    }

    pub(crate) fn bad(what: impl Into<String>) -> Self {
        Error::BadParameter { what: what.into() }
    }

    pub(crate) fn malformed(at: Location, what: impl Into<String>) -> Self {
        Error::Malformed { at: Box::new(at), what: what.into() }
    }
}
