//! The one error type of the importers: which input, where in it (line and
//! column, record, byte offset), and what is wrong there; `excerpt` (how
//! much offending input a message quotes) is `tbrw-schema`'s, re-exported.
//! Imports no module of the crate (the profile codec's `ProfileError` is
//! `tbrw-elf-profile`'s).

use std::fmt;

use tbrw_elf_profile::ProfileError;

/// Where in an input a problem lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The input as a whole (it is empty, say).
    Whole,
    /// A line of a text input (from 1), and the column (from 1) when known.
    Line {
        /// The line.
        line: u64,
        /// The column.
        column: Option<u64>,
    },
    /// A record of a binary input (from 0) at a byte offset.
    Record {
        /// The record's index.
        index: u64,
        /// The byte offset of its start.
        offset: u64,
    },
    /// A line of a text input (from 1) and a byte offset in the input: of
    /// the offending byte, or of the line's start.
    LineByte {
        /// The line.
        line: u64,
        /// The byte offset.
        offset: u64,
    },
    /// A byte offset of a binary input.
    Offset(u64),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Whole => Ok(()),
            Place::Line { line, column: None } => write!(f, "line {line}: "),
            Place::Line { line, column: Some(c) } => write!(f, "line {line}, column {c}: "),
            Place::LineByte { line, offset } => write!(f, "line {line} (byte {offset}): "),
            Place::Record { index, offset } => write!(f, "record {index} at byte offset {offset}: "),
            Place::Offset(o) => write!(f, "byte {o}: "),
        }
    }
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The input is not what the importer reads, or is damaged at `place`.
    #[error("{input}: {place}{what}")]
    Invalid {
        /// The input's name, as the caller gave it.
        input: String,
        /// Where.
        place: Place,
        /// What is wrong, in a sentence.
        what: String,
    },
    /// A line longer than any the format has, refused before it is held
    /// (so a file of one huge line costs the bound, not its size).
    #[error("{input}: line {line} (byte {offset}) is longer than {limit} bytes, {longest} (docs/IMPORT.md): it begins {begins}")]
    LineTooLong {
        /// The input's name.
        input: String,
        /// The line (from 1).
        line: u64,
        /// The byte offset of its start.
        offset: u64,
        /// The longest line accepted, in bytes.
        limit: usize,
        /// What the limit is, in words ("the longest a task line can be").
        longest: &'static str,
        /// The line's first characters, quoted as [`excerpt`] does.
        begins: String,
    },
    /// Reading the input failed.
    #[error("{input}: {source}")]
    Io {
        /// The input's name.
        input: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A temporary file the import keeps data in could not be made,
    /// written or read back.
    #[error("{input}: a temporary file: {source}")]
    Spill {
        /// The name of the input being imported.
        input: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An option that does not fit this input, in the library's words
    /// (naming no option of a front end).
    #[error("{input}: {what}")]
    Option {
        /// The input's name.
        input: String,
        /// What does not fit, in a sentence.
        what: String,
    },
    /// A supply voltage given for a profile that does not measure current.
    #[error("{input}: a supply voltage is for current profiles (magic 1); this one's PMU values are {found}")]
    VoltsNotCurrent {
        /// The input's name.
        input: String,
        /// What its PMU values are (`energy`, `of an unknown kind ...`).
        found: String,
    },
    /// A supply voltage that is not a number of volts (NaN, infinite).
    #[error("{input}: a supply voltage of {volts} is not a voltage")]
    NotAVoltage {
        /// The input's name.
        input: String,
        /// The value given.
        volts: f64,
    },
    /// An ELF-sampler profile that cannot be read.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Writing the TB5 file (or reading one back) failed.
    #[error(transparent)]
    Tb5(#[from] tbrw::Error),
}

impl ImportError {
    /// A problem at `place` of `input`.
    pub fn invalid(input: impl fmt::Display, place: Place, what: impl Into<String>) -> ImportError {
        ImportError::Invalid { input: input.to_string(), place, what: what.into() }
    }

    /// An I/O error on `input`.
    pub fn io(input: impl fmt::Display, source: std::io::Error) -> ImportError {
        ImportError::Io { input: input.to_string(), source }
    }

    /// An I/O error on a temporary file of the import of `input`.
    pub fn spill(input: impl fmt::Display, source: std::io::Error) -> ImportError {
        ImportError::Spill { input: input.to_string(), source }
    }

    /// An option that does not fit `input`.
    pub fn option(input: impl fmt::Display, what: impl Into<String>) -> ImportError {
        ImportError::Option { input: input.to_string(), what: what.into() }
    }
}

pub use tbrw_schema::excerpt::excerpt;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_read_as_the_messages_say_them() {
        let e = ImportError::invalid("a.log", Place::Line { line: 3, column: Some(7) }, "not a number");
        assert_eq!(e.to_string(), "a.log: line 3, column 7: not a number");
        let e = ImportError::invalid("p.data", Place::Record { index: 0, offset: 4000 }, "too short");
        assert_eq!(e.to_string(), "p.data: record 0 at byte offset 4000: too short");
        assert_eq!(ImportError::invalid("x", Place::Whole, "empty").to_string(), "x: empty");
        let e = ImportError::invalid("l.txt", Place::LineByte { line: 2, offset: 20 }, "not UTF-8 text");
        assert_eq!(e.to_string(), "l.txt: line 2 (byte 20): not UTF-8 text");
        assert_eq!(
            ImportError::invalid("t.BIN", Place::Offset(4), "bad flags").to_string(),
            "t.BIN: byte 4: bad flags"
        );
    }

    /// The library's words: no error about an option names the command
    /// line's (`--volts`, `--bin-version`), which the `tbrw` command adds.
    #[test]
    fn no_error_names_a_command_line_option() {
        use crate::winidea::BinVersion;
        use crate::winidea::{parse_bin, MAYBE_VERSION_1_0};
        let mut entry = [0u8; 24];
        entry[4..8].copy_from_slice(&0x0100_0001u32.to_le_bytes());
        let flags = parse_bin(&entry, BinVersion::V1_1, "t.BIN").unwrap_err();
        assert!(flags.to_string().ends_with(MAYBE_VERSION_1_0), "{flags}");
        let all = [
            ImportError::VoltsNotCurrent { input: "p.prof".into(), found: "energy".into() },
            ImportError::NotAVoltage { input: "p.prof".into(), volts: f64::NAN },
            flags,
        ];
        for e in all {
            assert!(!e.to_string().contains("--"), "{e}");
        }
    }
}
