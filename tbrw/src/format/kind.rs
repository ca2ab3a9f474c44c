//! The `kind` of a directory entry: which section it is, as one enum.
//!
//! The numbers (docs/FORMAT.md, "Directory"): global sections are
//! `0x0001 + TBRW_SECTION_IDENTIFIER`, stream sections
//! `0x0100 + TBRW_STREAM_SECTION_IDENTIFIER`, string blocks `0x0200`, bind
//! sections `0x0300 + BindSection`, the stored symbols `0x0400` (this
//! project's: `tbrw symbolize`), a stream's stack table `0x0500`. Only this file does that arithmetic.

use crate::model::section::{BindSection, GlobalSection, StreamSection};

const GLOBAL_BASE: u16 = 0x0001;
const STREAM_BASE: u16 = 0x0100;
const STRING_BLOCK: u16 = 0x0200;
const BIND_BASE: u16 = 0x0300;
const STORED_SYMBOLS: u16 = 0x0400;
const STACK_TABLE: u16 = 0x0500;

/// What a directory entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SectionKind {
    Global(GlobalSection),
    Stream(StreamSection),
    StringBlock,
    Bind(BindSection),
    /// The symbols `tbrw symbolize` stored (one per file, no stream).
    StoredSymbols,
    /// A stream's stack table (docs/FORMAT.md "Stack table").
    StackTable,
    /// A kind from a newer writer: skipped by readers.
    Unknown(u16),
}

impl SectionKind {
    /// The number stored in the directory.
    pub(crate) fn code(self) -> u16 {
        match self {
            SectionKind::Global(g) => GLOBAL_BASE + g as u16,
            SectionKind::Stream(s) => STREAM_BASE + s as u16,
            SectionKind::StringBlock => STRING_BLOCK,
            SectionKind::Bind(b) => BIND_BASE + b as u16,
            SectionKind::StoredSymbols => STORED_SYMBOLS,
            SectionKind::StackTable => STACK_TABLE,
            SectionKind::Unknown(k) => k,
        }
    }

    /// The kind a stored number names.
    pub(crate) fn from_code(code: u16) -> SectionKind {
        // Below its base a subtraction wraps to an index past every table.
        let nth = |base: u16| usize::from(code.wrapping_sub(base));
        if let Some(g) = GlobalSection::ALL.get(nth(GLOBAL_BASE)) {
            SectionKind::Global(*g)
        } else if let Some(s) = StreamSection::ALL.get(nth(STREAM_BASE)) {
            SectionKind::Stream(*s)
        } else if code == STRING_BLOCK {
            SectionKind::StringBlock
        } else if code == STORED_SYMBOLS {
            SectionKind::StoredSymbols
        } else if code == STACK_TABLE {
            SectionKind::StackTable
        } else if let Some(b) = BindSection::ALL.get(nth(BIND_BASE)) {
            SectionKind::Bind(*b)
        } else {
            SectionKind::Unknown(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_the_documented_numbers() {
        let mut all: Vec<SectionKind> = GlobalSection::ALL.into_iter().map(SectionKind::Global).collect();
        all.extend(StreamSection::ALL.map(SectionKind::Stream));
        all.push(SectionKind::StringBlock);
        all.push(SectionKind::StoredSymbols);
        all.push(SectionKind::StackTable);
        all.extend(BindSection::ALL.map(SectionKind::Bind));
        for k in all {
            assert_eq!(SectionKind::from_code(k.code()), k);
        }
        assert_eq!(SectionKind::Global(GlobalSection::VersionInfo).code(), 0x0006);
        assert_eq!(SectionKind::Stream(StreamSection::StreamInfo).code(), 0x0104);
        assert_eq!(SectionKind::Bind(BindSection::TidBinds).code(), 0x0304);
        assert_eq!(SectionKind::Bind(BindSection::PackedData).code(), 0x0305);
        assert_eq!(SectionKind::StoredSymbols.code(), 0x0400);
        assert_eq!(SectionKind::StackTable.code(), 0x0500);
        for unknown in [0x0000, 0x0007, 0x0105, 0x0201, 0x0306, 0x0401, 0x0501, 0xFFFF] {
            assert_eq!(SectionKind::from_code(unknown), SectionKind::Unknown(unknown));
        }
    }
}
