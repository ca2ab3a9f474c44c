//! The TimelineBinary `.BIN` file: 24-byte entries (handle, flags word,
//! value, time), layouts 1.0 and 1.1, read in pieces and written for tests.

use std::io::{Read, Seek, SeekFrom};

use super::{Pos, TimelineEvent};
use crate::error::{ImportError, Place};

/// The context of `.BIN` events whose core is unknown (all of a 1.0 file).
pub(crate) const UNKNOWN_CONTEXT: u32 = 0xFF;

/// How an entry's error about flags outside the version 1.1 masks ends: a
/// front end that can name the version adds how.
pub const MAYBE_VERSION_1_0: &str = "(a version 1.0 file?)";

/// The `.BIN` layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinVersion {
    /// Event type in bits 24-27 of the second word; no core index.
    V1_0,
    /// Event type in bits 0-3, core index in bits 4-11.
    V1_1,
}

impl BinVersion {
    /// Both layouts.
    pub const ALL: [BinVersion; 2] = [BinVersion::V1_0, BinVersion::V1_1];

    /// From [`BinVersion::name`].
    pub fn from_name(s: &str) -> Option<BinVersion> {
        BinVersion::ALL.into_iter().find(|v| v.name() == s)
    }

    /// `1.0` or `1.1`.
    pub fn name(self) -> &'static str {
        match self {
            BinVersion::V1_0 => "1.0",
            BinVersion::V1_1 => "1.1",
        }
    }
}

/// Detects the layout: a flags word with any bit above 0xFFF set can only
/// be 1.0 (1.1 uses bits 0-11). A file of only exit events reads the same
/// either way.
pub fn detect_bin(bytes: &[u8]) -> BinVersion {
    let above =
        bytes.chunks_exact(24).any(|e| u32::from_le_bytes(e[4..8].try_into().unwrap_or_default()) & !0xFFF != 0);
    if above {
        BinVersion::V1_0
    } else {
        BinVersion::V1_1
    }
}

/// Reads a `.BIN` timeline held in memory (`name` names it in errors).
pub fn parse_bin(bytes: &[u8], version: BinVersion, name: &str) -> Result<Vec<TimelineEvent>, ImportError> {
    whole_entries(bytes.len() as u64, name)?;
    bytes.chunks_exact(ENTRY).enumerate().map(|(i, e)| parse_entry(e, (i * ENTRY) as u64, version, name)).collect()
}

/// Bytes per `.BIN` entry.
pub(crate) const ENTRY: usize = 24;

fn whole_entries(len: u64, name: &str) -> Result<(), ImportError> {
    let left = len % ENTRY as u64;
    if left != 0 {
        return Err(ImportError::invalid(
            name,
            Place::Offset(len - left),
            format!("{len} bytes is not a whole number of 24-byte entries ({left} bytes left over)"),
        ));
    }
    Ok(())
}

/// Decodes the entry at byte `at` (`e` is its 24 bytes).
pub(crate) fn parse_entry(e: &[u8], at: u64, version: BinVersion, name: &str) -> Result<TimelineEvent, ImportError> {
    let word_at = |o: usize| u32::from_le_bytes(e[o..o + 4].try_into().unwrap_or_default());
    let (handle, word) = (word_at(0), word_at(4));
    let value = u64::from_le_bytes(e[8..16].try_into().unwrap_or_default());
    let time = i64::from_le_bytes(e[16..24].try_into().unwrap_or_default());
    if version == BinVersion::V1_1 && word & !0xFFF != 0 {
        return Err(ImportError::invalid(
            name,
            Place::Offset(at + 4),
            format!("flags {word:#010x} set bits outside the version 1.1 masks {MAYBE_VERSION_1_0}"),
        ));
    }
    let (ty, core) = match version {
        BinVersion::V1_1 => (word & 0xF, (word & 0xFF0) >> 4),
        BinVersion::V1_0 => ((word >> 24) & 0xF, UNKNOWN_CONTEXT),
    };
    let kind = match ty {
        3 => b'E',
        2 => b'R',
        1 => b'S',
        0 => b'X',
        4 => b'W',
        t => {
            return Err(ImportError::invalid(
                name,
                Place::Offset(at + 4),
                format!("event type {t} is not one the format defines (0-4)"),
            ))
        }
    };
    Ok(TimelineEvent { handle, kind, value, time, context: core, at: Pos::Byte(at) })
}

/// Called with each piece of the input and its offset; `false` stops.
type PieceFn<'a> = dyn FnMut(&[u8], u64) -> Result<bool, ImportError> + 'a;

/// Reads the `.BIN` timeline `input` (named `name` in errors) into `out`,
/// in the layout `version` (default: detected); returns the layout. See
/// [`for_each_bin_event`], which does not hold the events.
pub fn read_bin<R: Read + Seek + ?Sized>(
    input: &mut R,
    name: &str,
    version: Option<BinVersion>,
    out: &mut Vec<TimelineEvent>,
) -> Result<BinVersion, ImportError> {
    let io = |e| ImportError::io(name, e);
    let start = input.stream_position().map_err(io)?;
    let len = input.seek(SeekFrom::End(0)).map_err(io)?.saturating_sub(start);
    input.seek(SeekFrom::Start(start)).map_err(io)?;
    // The size the input claims is not trusted for a reservation (a sparse
    // file can claim terabytes): the vector grows by what was read.
    out.reserve((len / ENTRY as u64).min(1 << 20) as usize);
    for_each_bin_event(input, name, version, &mut |e| {
        out.push(e);
        Ok(())
    })
}

/// The layout of the `.BIN` timeline `input`: `version` when given, else
/// detected from every entry (one pass; the input is left where it was).
pub fn bin_version<R: Read + Seek + ?Sized>(
    input: &mut R,
    name: &str,
    version: Option<BinVersion>,
) -> Result<BinVersion, ImportError> {
    if let Some(v) = version {
        return Ok(v);
    }
    let io = |e| ImportError::io(name, e);
    let start = input.stream_position().map_err(io)?;
    let len = input.seek(SeekFrom::End(0)).map_err(io)?.saturating_sub(start);
    whole_entries(len, name)?;
    let mut v = BinVersion::V1_1;
    pieces(input, name, start, len, &mut |chunk, _| {
        if detect_bin(chunk) == BinVersion::V1_0 {
            v = BinVersion::V1_0;
            return Ok(false);
        }
        Ok(true)
    })?;
    input.seek(SeekFrom::Start(start)).map_err(io)?;
    Ok(v)
}

/// Hands each event of the `.BIN` timeline `input` (from where it stands to
/// its end) to `each`, in file order, reading a megabyte at a time: memory
/// does not depend on the file's size. Returns the layout (`version`, or
/// detected in a first pass).
pub fn for_each_bin_event<R: Read + Seek + ?Sized>(
    input: &mut R,
    name: &str,
    version: Option<BinVersion>,
    each: &mut dyn FnMut(TimelineEvent) -> Result<(), ImportError>,
) -> Result<BinVersion, ImportError> {
    let io = |e| ImportError::io(name, e);
    let start = input.stream_position().map_err(io)?;
    let len = input.seek(SeekFrom::End(0)).map_err(io)?.saturating_sub(start);
    input.seek(SeekFrom::Start(start)).map_err(io)?;
    whole_entries(len, name)?;
    let version = bin_version(input, name, version)?;
    pieces(input, name, start, len, &mut |chunk, at| {
        for (i, e) in chunk.chunks_exact(ENTRY).enumerate() {
            each(parse_entry(e, at + (i * ENTRY) as u64, version, name)?)?;
        }
        Ok(true)
    })?;
    Ok(version)
}

/// Reads `len` bytes of `input` from `start` in pieces of whole entries,
/// handing each with its offset to `each` until it says stop.
fn pieces<R: Read + Seek + ?Sized>(
    input: &mut R,
    name: &str,
    start: u64,
    len: u64,
    each: &mut PieceFn<'_>,
) -> Result<(), ImportError> {
    let io = |e| ImportError::io(name, e);
    let mut buf = vec![0u8; ENTRY * 43_690];
    input.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut at = 0u64;
    while at < len {
        let n = ((len - at) as usize).min(buf.len());
        input.read_exact(&mut buf[..n]).map_err(io)?;
        if !each(&buf[..n], at)? {
            break;
        }
        at += n as u64;
    }
    Ok(())
}

/// Writes a `.BIN` timeline (for tests and tools): 24-byte entries.
pub fn write_bin(events: &[TimelineEvent], version: BinVersion) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * 24);
    for e in events {
        let ty: u32 = match e.kind {
            b'E' => 3,
            b'R' => 2,
            b'S' => 1,
            b'X' => 0,
            _ => 4,
        };
        let word = match version {
            BinVersion::V1_1 => ty | ((e.context & 0xFF) << 4),
            BinVersion::V1_0 => ty << 24,
        };
        out.extend_from_slice(&e.handle.to_le_bytes());
        out.extend_from_slice(&word.to_le_bytes());
        out.extend_from_slice(&e.value.to_le_bytes());
        out.extend_from_slice(&e.time.to_le_bytes());
    }
    out
}
