//! winIDEA profiler exports to TB5: `tbrw import winidea EXPORT.txt [--bin
//! FILE] -o OUT.tb5 [--check]`. Mapping, call model and the statistics
//! check: docs/IMPORT.md.
//!
//! The private modules, whose items are here:
//!
//! - `text1`: the Text1 text format (INFO, CONTEXTS, HANDLE, STATISTICS,
//!   TIMELINE sections: [`parse_text1`]);
//! - `bin`: the TimelineBinary `.BIN` file (versions 1.0 and 1.1:
//!   [`read_bin`]);
//! - `timeline`: calls, data writes and their statistics from the events
//!   ([`build`]);
//! - `check`: the export's STATISTICS against the timeline's figures
//!   ([`check()`]);
//! - `import`: the TB5 file written from them ([`import_winidea`]).
//!
//! The events both inputs give, [`TimelineEvent`], are defined here.

mod bin;
mod check;
mod import;
mod text1;
mod timeline;

pub use bin::{
    bin_version, detect_bin, for_each_bin_event, parse_bin, read_bin, write_bin, BinVersion, MAYBE_VERSION_1_0,
};
pub use check::{check, CheckResult, Difference, Unchecked};
pub use import::{import_winidea, BinInput, ReadSeek, WinIdeaOptions, WinIdeaStats};
pub use text1::{parse_text1, Export, StatRow, MAX_LINE};
pub use timeline::{build, Builder, Built, Call, Figures, Series, Timeline, Write};

/// One event of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    /// The area handle.
    pub handle: u32,
    /// `E`, `S`, `R`, `X` or `W`.
    pub kind: u8,
    /// The value (data writes, states).
    pub value: u64,
    /// Nanoseconds (session time).
    pub time: i64,
    /// The context (Text1 `%CONTEXT%`, or the core index of a `.BIN` 1.1).
    pub context: u32,
    /// Where it was read, for errors: a line (Text1) or byte offset (`.BIN`).
    pub at: Pos,
}

/// A place in the input, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    /// A line of the Text1 file.
    Line(u64),
    /// A byte offset of the `.BIN` file.
    Byte(u64),
}

impl Pos {
    /// The place an error names.
    pub fn place(self) -> crate::error::Place {
        match self {
            Pos::Line(line) => crate::error::Place::Line { line, column: None },
            Pos::Byte(b) => crate::error::Place::Offset(b),
        }
    }
}
