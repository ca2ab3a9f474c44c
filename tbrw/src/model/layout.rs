//! Which on-disk layout a file has: this project's `\x89TB5` layout, or
//! one of Intel's three (docs/FORMAT.md). The first 8 bytes of a file say
//! which; the reader reads all four.

use std::fmt;

/// The on-disk layout of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileLayout {
    /// This project's layout (`\x89TB5\r\n\x1a\n`): commits, checksums, a directory.
    Project,
    /// Intel's TB5 (`"SampleF "`): 20-byte file section entries, 32-byte table entries.
    IntelTb5,
    /// Intel's TB6 (`"Sample6 "`), as VTune's sampling driver and Intel's 2012 library write it.
    IntelTb6,
    /// Intel's TB7 (`"Sample7 "`), as Intel's 2020 library writes it: the TB6 layout.
    IntelTb7,
}

impl FileLayout {
    /// Whether this is one of Intel's layouts.
    pub fn is_intel(self) -> bool {
        !matches!(self, FileLayout::Project)
    }

    /// The file version Intel's library reports for it (`TBRW_get_tb_file_version`):
    /// 5, 6 or 7; `None` for this project's layout.
    pub fn tb_version(self) -> Option<u32> {
        match self {
            FileLayout::Project => None,
            FileLayout::IntelTb5 => Some(5),
            FileLayout::IntelTb6 => Some(6),
            FileLayout::IntelTb7 => Some(7),
        }
    }
}

impl fmt::Display for FileLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileLayout::Project => "TB5 (this project's layout)",
            FileLayout::IntelTb5 => "Intel TB5 (\"SampleF \")",
            FileLayout::IntelTb6 => "Intel TB6 (\"Sample6 \")",
            FileLayout::IntelTb7 => "Intel TB7 (\"Sample7 \")",
        })
    }
}

/// The name of an Intel section type (`sectionType`) in messages.
pub fn intel_section_name(section_type: u32) -> &'static str {
    match section_type {
        0x01 => "legacy sample records",
        0x02 => "legacy modules",
        0x03 => "legacy pids",
        0x04 => "legacy header",
        0x07 => "legacy tids",
        0x0C => "legacy hardware",
        0x0D => "legacy software",
        0x0E => "legacy events",
        0x10 => "legacy header-ex",
        0x13 => "legacy sample record header",
        0x17 => "legacy processor info",
        0x18 => "legacy vtsa_sys_info",
        0x19 => "TBRW system",
        0x1A => "TBRW host",
        0x1B => "TBRW os",
        0x1C => "TBRW application",
        0x1D => "TBRW pids",
        0x1E => "TBRW tids",
        0x1F => "TBRW modules",
        0x20 => "TBRW user-defined global",
        0x21 => "TBRW version info",
        0x22 => "TBRW global table",
        0x23 => "TBRW private info",
        0x24 => "TBRW events",
        0x25 => "TBRW data descriptor",
        0x26 => "TBRW data",
        0x27 => "TBRW user-defined stream",
        0x28 => "TBRW stream info",
        0x29 => "TBRW stream table",
        0x2E => "TBRW global descriptor",
        0xFFFE => "logically deleted",
        _ => "unknown",
    }
}
