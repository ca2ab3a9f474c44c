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
pub(crate) mod legacy;
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

/// What this project writes (docs/FORMAT.md, "Which eyecatcher and
/// version"): the `"Sample6 "` eyecatcher, under which Intel's 2020 reader
/// takes any sampling driver version (the guide's "unknown",
/// 0xFFFFFFFF, included) and which Intel's 2012 library also reads.
pub(crate) const WRITE_EYECATCHER: &[u8; 8] = EYECATCHER_TB6;
/// The version word after it: 27 (0x1b), the body's, as the 2020 library
/// and VTune XE 2016 write it (Intel's reader does not check it).
pub(crate) const WRITE_VERSION: u32 = 27;
/// Entries of the file header's section table, as Intel's writers reserve them.
pub(crate) const HEADER_ENTRIES: u32 = 20;
/// Bytes of a written TB6 file header: its 16 bytes and 20 entries.
pub(crate) const HEADER_SIZE: u64 = 16 + HEADER_ENTRIES as u64 * raw::SectionTb6Raw::SIZE as u64;
/// Bytes of the global table Intel writes (12 entries and 32 spare bytes).
pub(crate) const GLOBAL_TABLE_SIZE: u64 = 512;
/// Bytes of a stream table (8 entries).
pub(crate) const STREAM_TABLE_SIZE: u64 = 320;
/// Zero bytes written after every table: Intel's reader reads 16 entries
/// of the 512-byte global table, 128 bytes past it, which must then be
/// empty slots.
pub(crate) const TABLE_SLACK: u64 = 128;

/// The comment of a module binds stream and a thread binds stream (type 5 and 7).
pub(crate) const BIND_COMMENT: &str = "bind version 05";

/// The comment of the bind data stream (type 4) of data stream `n`.
pub(crate) fn bind_data_comment(n: u32) -> String {
    format!("{BIND_COMMENT} bound to data stream {n:04}")
}

/// The comment of the custom stream (type 8) holding the stack table of
/// data stream `n` (docs/FORMAT.md, "This project's sections in Intel's layout").
pub(crate) fn stack_table_comment(n: u32) -> String {
    format!("{STACK_TABLE_COMMENT} {n:04}")
}

/// The start of a stack table stream's comment; the stream it serves follows.
pub(crate) const STACK_TABLE_COMMENT: &str = "tbrw stack table 01 of data stream";

/// The comment of the custom stream (type 8) whose user-defined stream
/// section holds the symbols `tbrw symbolize` stored.
pub(crate) const SYMBOLS_COMMENT: &str = "tbrw stored symbols 01";

/// The data stream a stack table stream's comment names.
pub(crate) fn stack_table_of(comment: &str) -> Option<u32> {
    comment.strip_prefix(STACK_TABLE_COMMENT)?.trim().parse().ok()
}

/// The last reserved word of a stream's information (`TBRW_STREAM_INFO_EX`,
/// 0 in Intel's and VTune's files, not handed out by Intel's reader) holds
/// this project's flags of the stream, tagged: `"tbrw"` in its upper 32
/// bits, the flags in its lower.
pub(crate) const STREAM_FLAGS_TAG: u64 = 0x7462_7277 << 32;
/// Flag: every record's time is at or after its predecessor's (docs/FORMAT.md,
/// "Time order"), so a reader finds a time range by binary search.
pub(crate) const STREAM_FLAG_TIME_ORDERED: u64 = 1;

/// The flags a stream information's last reserved word holds (none without the tag).
pub(crate) fn stream_flags(word: u64) -> u64 {
    if word & 0xFFFF_FFFF_0000_0000 == STREAM_FLAGS_TAG {
        word & 0xFFFF_FFFF
    } else {
        0
    }
}
