//! The input of a perf.data import counted for progress, and locating the
//! record a failed read stopped at (file mode: the input seeks), so that
//! an error names the input, the record and the byte offset.

use std::cell::Cell;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::rc::Rc;

use crate::error::{ImportError, Place};

/// A reader that counts the bytes taken from it (its position, for files).
pub struct Counting<R> {
    inner: R,
    pos: Rc<Cell<u64>>,
}

impl<R> Counting<R> {
    /// `inner`, counted into `pos`.
    pub fn new(inner: R, pos: Rc<Cell<u64>>) -> Self {
        Counting { inner, pos }
    }

    /// The reader counted.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos.set(self.pos.get() + n as u64);
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let p = self.inner.seek(to)?;
        self.pos.set(p);
        Ok(p)
    }
}

/// Where a walk over the data section's record headers found damage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The record's number in file order (0 = the first of the data section).
    pub record: u64,
    /// Its byte offset in the file.
    pub offset: u64,
    /// Its type, when its header could be read.
    pub record_type: Option<u32>,
    /// What is wrong.
    pub why: String,
}

/// Size of perf's file header up to and including the data section's
/// offset and size (magic, size, attr_size, attrs, data).
const HEADER_TO_DATA: usize = 56;
/// Size of a record header (`perf_event_header`).
const RECORD_HEADER: u64 = 8;

/// Walks the record headers of the data section of the perf.data file
/// `r` (little-endian files; the file starts at byte 0 of `r`, as file
/// mode reads it) and returns the first record that is cut short or has
/// an impossible size. `None` when every record fits, or when the input
/// is not one this walk can read (the reader's error then stands).
pub fn find_damage<R: Read + Seek>(r: &mut BufReader<R>) -> Option<Damage> {
    let len = r.seek(SeekFrom::End(0)).ok()?;
    r.seek(SeekFrom::Start(0)).ok()?;
    let mut head = [0u8; HEADER_TO_DATA];
    r.read_exact(&mut head).ok()?;
    if &head[0..8] != b"PERFILE2" {
        return None;
    }
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let (data_offset, data_size) = (u64_at(&head, 40), u64_at(&head, 48));
    let end = data_offset.saturating_add(data_size);
    r.seek(SeekFrom::Start(data_offset)).ok()?;
    let (mut pos, mut record) = (data_offset, 0u64);
    let mut h = [0u8; RECORD_HEADER as usize];
    while pos < end {
        if pos + RECORD_HEADER > len {
            return Some(Damage {
                record,
                offset: pos,
                record_type: None,
                why: format!("its header is cut short: the file ends at byte {len}"),
            });
        }
        r.read_exact(&mut h).ok()?;
        let t = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes"));
        let size = u64::from(u16::from_le_bytes(h[6..8].try_into().expect("2 bytes")));
        if size < RECORD_HEADER {
            return Some(Damage {
                record,
                offset: pos,
                record_type: Some(t),
                why: format!("its size {size} is less than its header"),
            });
        }
        if pos + size > len {
            return Some(Damage {
                record,
                offset: pos,
                record_type: Some(t),
                why: format!("it is cut short: it needs {size} bytes, the file has {} left", len - pos),
            });
        }
        // perf's AUXTRACE records carry their payload after the record.
        let extra = if t == 71 {
            let mut b = [0u8; 8];
            r.read_exact(&mut b).ok()?;
            r.seek_relative(size as i64 - 16).ok()?;
            u64::from_le_bytes(b)
        } else {
            r.seek_relative(size as i64 - 8).ok()?;
            0
        };
        if extra > 0 {
            r.seek_relative(i64::try_from(extra).ok()?).ok()?;
        }
        pos += size + extra;
        record += 1;
    }
    None
}

/// The error of a failed read of the input `name`: the damaged record
/// when a walk over it found one (`damage`, file mode only), else the
/// reader's own message at the byte where reading stopped.
pub fn read_error(name: &str, e: &linux_perf_data::Error, read: u64, damage: Option<Damage>) -> ImportError {
    match damage {
        Some(d) => {
            let what = match d.record_type {
                Some(t) => format!("type {t}: {}", d.why),
                None => d.why,
            };
            ImportError::invalid(name, Place::Record { index: d.record, offset: d.offset }, what)
        }
        None => ImportError::invalid(name, Place::Offset(read), format!("{e} (where reading stopped)")),
    }
}
