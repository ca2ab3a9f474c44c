//! Section identifiers: the global and per-stream sections of a TB5 file.
//!
//! These mirror `TBRW_SECTION_IDENTIFIER` and `TBRW_STREAM_SECTION_IDENTIFIER`
//! (their numeric values are the C values). The on-disk section kinds that
//! carry them are in the crate's `format` layer; this module knows nothing
//! about bytes.

use std::fmt;

/// A global section (`TBRW_SECTION_IDENTIFIER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum GlobalSection {
    /// `TBRW_HARDWARE_SECTION` (0): system, nodes, cpus, architectures, cpuids.
    Hardware = 0,
    /// `TBRW_SOFTWARE_SECTION` (1): host, OS, application.
    Software = 1,
    /// `TBRW_PROCESS_THREAD_SECTION` (2): processes and threads.
    ProcessThread = 2,
    /// `TBRW_MODULE_SECTION` (3): loaded modules.
    Module = 3,
    /// `TBRW_USER_DEFINED_GLOBAL_SECTION` (4): free-form bytes.
    UserDefinedGlobal = 4,
    /// `TBRW_VERSION_INFO_SECTION` (5): driver, bind and file versions.
    VersionInfo = 5,
}

impl GlobalSection {
    /// Every global section, in identifier order.
    pub const ALL: [GlobalSection; 6] = [
        GlobalSection::Hardware,
        GlobalSection::Software,
        GlobalSection::ProcessThread,
        GlobalSection::Module,
        GlobalSection::UserDefinedGlobal,
        GlobalSection::VersionInfo,
    ];

    /// The section for a C identifier value, if there is one.
    pub fn from_u32(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The C name of the section identifier.
    pub fn c_name(self) -> &'static str {
        match self {
            GlobalSection::Hardware => "TBRW_HARDWARE_SECTION",
            GlobalSection::Software => "TBRW_SOFTWARE_SECTION",
            GlobalSection::ProcessThread => "TBRW_PROCESS_THREAD_SECTION",
            GlobalSection::Module => "TBRW_MODULE_SECTION",
            GlobalSection::UserDefinedGlobal => "TBRW_USER_DEFINED_GLOBAL_SECTION",
            GlobalSection::VersionInfo => "TBRW_VERSION_INFO_SECTION",
        }
    }

    /// Whether the guide (6.2) requires this section in a file VTune can open.
    pub fn is_required(self) -> bool {
        matches!(
            self,
            GlobalSection::Hardware | GlobalSection::Software | GlobalSection::VersionInfo | GlobalSection::Module
        )
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A section of a data stream (`TBRW_STREAM_SECTION_IDENTIFIER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum StreamSection {
    /// `TBRW_EVENT_DESCRIPTION_SECTION` (0): the events that triggered samples.
    EventDescription = 0,
    /// `TBRW_DATA_DESCRIPTION_SECTION` (1): the data descriptor (record layout).
    DataDescription = 1,
    /// `TBRW_DATA_SECTION` (2): the fixed-size data records.
    Data = 2,
    /// `TBRW_USER_DEFINED_STREAM_SECTION` (3): free-form bytes.
    UserDefinedStream = 3,
    /// `TBRW_STREAM_INFO_SECTION` (4): type, times, command line, comment.
    StreamInfo = 4,
}

impl StreamSection {
    /// Every stream section, in identifier order.
    pub const ALL: [StreamSection; 5] = [
        StreamSection::EventDescription,
        StreamSection::DataDescription,
        StreamSection::Data,
        StreamSection::UserDefinedStream,
        StreamSection::StreamInfo,
    ];

    /// The section for a C identifier value, if there is one.
    pub fn from_u32(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The C name of the section identifier.
    pub fn c_name(self) -> &'static str {
        match self {
            StreamSection::EventDescription => "TBRW_EVENT_DESCRIPTION_SECTION",
            StreamSection::DataDescription => "TBRW_DATA_DESCRIPTION_SECTION",
            StreamSection::Data => "TBRW_DATA_SECTION",
            StreamSection::UserDefinedStream => "TBRW_USER_DEFINED_STREAM_SECTION",
            StreamSection::StreamInfo => "TBRW_STREAM_INFO_SECTION",
        }
    }

    /// Whether the guide (6.2) requires this section in every stream.
    pub fn is_required(self) -> bool {
        !matches!(self, StreamSection::UserDefinedStream)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The sections a bind adds to a stream (this project's own; the C API
/// reaches them through the `bind_` functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum BindSection {
    /// One `DATA_BIND_STRUCT` per data record (what binds stored before
    /// [`BindSection::PackedData`] hold; still read).
    Data = 0,
    /// One `MODULE_BIND_STRUCT` per module.
    Modules = 1,
    /// The generated process table (`TBRW_PID` records).
    Processes = 2,
    /// The generated thread table (`TBRW_TID` records).
    Threads = 3,
    /// One `TID_BIND_STRUCT` per thread.
    TidBinds = 4,
    /// The module and thread index of each data record, packed in the
    /// narrowest widths (docs/FORMAT.md): what `dobind` stores. A stored
    /// bind has this section or [`BindSection::Data`], not both.
    PackedData = 5,
}

impl BindSection {
    /// Every bind section, in identifier order.
    pub const ALL: [BindSection; 6] = [
        BindSection::Data,
        BindSection::Modules,
        BindSection::Processes,
        BindSection::Threads,
        BindSection::TidBinds,
        BindSection::PackedData,
    ];

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            BindSection::Data => "bind data",
            BindSection::Modules => "module binds",
            BindSection::Processes => "bound processes",
            BindSection::Threads => "bound threads",
            BindSection::TidBinds => "thread binds",
            BindSection::PackedData => "packed data binds",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Where in a file something is: used by errors to say what failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectionRef {
    /// The fixed file header and its commit slots.
    Header,
    /// The section directory.
    Directory,
    /// A string table block.
    Strings,
    /// A global section.
    Global(GlobalSection),
    /// A section of a data stream.
    Stream(u32, StreamSection),
    /// A whole data stream.
    WholeStream(u32),
    /// A bind section of a stream.
    Bind(u32, BindSection),
    /// The symbols `tbrw symbolize` stored.
    StoredSymbols,
    /// The stack table of a stream.
    StackTable(u32),
    /// A section kind this library does not know (from a newer writer).
    Unknown(u16),
    /// A section of Intel's layout by its `sectionType` (its section
    /// tables, and the legacy sections the API has no identifier for).
    Intel(u32),
}

impl fmt::Display for SectionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SectionRef::Header => f.write_str("file header"),
            SectionRef::Directory => f.write_str("section directory"),
            SectionRef::Strings => f.write_str("string table"),
            SectionRef::Global(s) => write!(f, "{}", s.c_name()),
            SectionRef::Stream(n, s) => write!(f, "stream {n} {}", s.c_name()),
            SectionRef::WholeStream(n) => write!(f, "stream {n}"),
            SectionRef::Bind(n, b) => write!(f, "stream {n} {}", b.name()),
            SectionRef::StoredSymbols => f.write_str("stored symbols"),
            SectionRef::StackTable(n) => write!(f, "stream {n} stack table"),
            SectionRef::Unknown(k) => write!(f, "unknown section kind {k:#x}"),
            SectionRef::Intel(t) => write!(f, "section type {t:#x} ({})", super::layout::intel_section_name(*t)),
        }
    }
}

impl From<GlobalSection> for SectionRef {
    fn from(s: GlobalSection) -> Self {
        SectionRef::Global(s)
    }
}

impl fmt::Display for GlobalSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.c_name())
    }
}

impl fmt::Display for StreamSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.c_name())
    }
}
