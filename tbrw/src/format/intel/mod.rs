//! Intel's on-disk layout (docs/FORMAT.md, "Intel's layout"): the TB5
//! (`"SampleF "`), TB6 (`"Sample6 "`) and TB7 (`"Sample7 "`) files that
//! Intel's TBRW library and VTune's sampling driver write. The raw
//! structures are in [`raw`], the conversions to and from the model in
//! [`codec`]; walking a file's section tables is the reader's
//! (`read/intel`).
//!
//! Crate-private. Imports `model` and this layer's `raw` only; must not
//! import `read`, `write` or `bind`.

pub(crate) mod codec;
pub(crate) mod raw;

use crate::model::layout::FileLayout;
use raw::Raw;

/// The eyecatchers (bytes 0-7) and the section table each one means.
pub(crate) const EYECATCHER_TB5: &[u8; 8] = b"SampleF ";
/// TB6: `SampleFileBeginning_tb6_s`, 40-byte section entries.
pub(crate) const EYECATCHER_TB6: &[u8; 8] = b"Sample6 ";
/// TB7: the TB6 layout, written by Intel's 2020 library.
pub(crate) const EYECATCHER_TB7: &[u8; 8] = b"Sample7 ";

/// The Intel layout the first 8 bytes of a file name, if they are one of Intel's eyecatchers.
pub(crate) fn layout_of(head: &[u8]) -> Option<FileLayout> {
    match head.get(..8)? {
        h if h == EYECATCHER_TB5 => Some(FileLayout::IntelTb5),
        h if h == EYECATCHER_TB6 => Some(FileLayout::IntelTb6),
        h if h == EYECATCHER_TB7 => Some(FileLayout::IntelTb7),
        _ => None,
    }
}

/// Bytes of one entry of the file header's section table.
pub(crate) fn file_entry_size(layout: FileLayout) -> usize {
    match layout {
        FileLayout::IntelTb5 => raw::FileSectionTb5Raw::SIZE,
        _ => raw::SectionTb6Raw::SIZE,
    }
}

/// Bytes of one entry of a TBRW table (the global table and the stream tables).
pub(crate) fn table_entry_size(layout: FileLayout) -> usize {
    match layout {
        FileLayout::IntelTb5 => raw::TbrwSectionTb5Raw::SIZE,
        _ => raw::SectionTb6Raw::SIZE,
    }
}

/// Section types (`sectionType`). The legacy ones are VTune's, written
/// beside the TBRW ones; the TBRW ones sit in the global table (0x22) and
/// the stream tables (0x29).
pub(crate) mod section_type {
    // The whole table of Intel's types, as its files use them.
    #![allow(missing_docs, dead_code)]
    pub const LEGACY_SAMPLE_RECORDS: u32 = 0x01;
    pub const LEGACY_MODULES: u32 = 0x02;
    pub const LEGACY_PIDS: u32 = 0x03;
    pub const LEGACY_HEADER: u32 = 0x04;
    pub const LEGACY_TIDS: u32 = 0x07;
    pub const LEGACY_HARDWARE: u32 = 0x0C;
    pub const LEGACY_SOFTWARE: u32 = 0x0D;
    pub const LEGACY_EVENTS: u32 = 0x0E;
    pub const LEGACY_HEADER_EX: u32 = 0x10;
    pub const LEGACY_SAMPLE_RECORD_HEADER: u32 = 0x13;
    pub const LEGACY_PROCESSOR_INFO: u32 = 0x17;
    pub const LEGACY_SYS_INFO: u32 = 0x18;
    pub const SYSTEM: u32 = 0x19;
    pub const HOST: u32 = 0x1A;
    pub const OS: u32 = 0x1B;
    pub const APPLICATION: u32 = 0x1C;
    pub const PIDS: u32 = 0x1D;
    pub const TIDS: u32 = 0x1E;
    pub const MODULES: u32 = 0x1F;
    pub const USER_GLOBAL: u32 = 0x20;
    pub const VERSION_INFO: u32 = 0x21;
    pub const GLOBAL_TABLE: u32 = 0x22;
    pub const PRIVATE_INFO: u32 = 0x23;
    pub const EVENTS: u32 = 0x24;
    pub const DATA_DESCRIPTOR: u32 = 0x25;
    pub const DATA: u32 = 0x26;
    pub const USER_STREAM: u32 = 0x27;
    pub const STREAM_INFO: u32 = 0x28;
    pub const STREAM_TABLE: u32 = 0x29;
    pub const GLOBAL_DESCRIPTOR: u32 = 0x2E;
    pub const DELETED: u32 = 0xFFFE;
}

/// Bit 63 of a string field: the rest is the absolute file offset of a
/// NUL-terminated UTF-8 string. 0 is "no string".
pub(crate) const STRING_FLAG: u64 = 1 << 63;

/// The legacy sections Intel's `TBRW_verify` requires (error 24 without
/// one): sample records, modules, software, sample-record header and
/// `vtsa_sys_info`. (Its open needs the header-ex section too.)
pub(crate) const VERIFY_REQUIRES: [u32; 5] = [
    section_type::LEGACY_SAMPLE_RECORDS,
    section_type::LEGACY_MODULES,
    section_type::LEGACY_SOFTWARE,
    section_type::LEGACY_SAMPLE_RECORD_HEADER,
    section_type::LEGACY_SYS_INFO,
];
