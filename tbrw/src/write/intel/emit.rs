//! Writing Intel's layout into a file: the [`Emitter`] (bytes placed at the
//! file's end, 8-aligned, each placement one `pwrite`), the string table
//! ([`Strings`]: every distinct text once, NUL-terminated UTF-8, a string
//! field being `0x8000000000000000 |` its offset), and section entries.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::format::container::align;
use crate::format::intel::raw::{Raw, SectionTb6Raw};
use crate::model::error::{Error, Location, Result};
use crate::model::section::SectionRef;
use crate::model::strings::StringId;

/// Makes records `[first, first + count)` of a section, `size` bytes
/// each, as the whole content of the buffer it is given: any part of the
/// section on its own. The buffer holds what this function made of an
/// earlier part, or nothing, so a maker may leave bytes it knows are
/// already right.
pub(crate) type RecordFill<'s> = Box<dyn Fn(u64, usize, &mut Vec<u8>) -> Result<()> + Sync + 's>;

/// The bytes of a section: already in the output, given, or made as they are written.
pub(crate) enum Bytes<'s> {
    /// Already in the output file at `offset` (a new file's data sections stay where the session wrote them).
    InPlace { offset: u64, len: u64 },
    /// A slice (of a source file's mapping).
    Slice(&'s [u8]),
    /// Owned bytes.
    Owned(Vec<u8>),
    /// `count` records of `size` bytes made by a function, part by part
    /// (e.g. a bind's entries).
    Records { count: u64, size: u64, make: RecordFill<'s> },
}

impl Bytes<'_> {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Bytes::InPlace { len, .. } => *len,
            Bytes::Records { count, size, .. } => count * size,
            Bytes::Slice(s) => s.len() as u64,
            Bytes::Owned(v) => v.len() as u64,
        }
    }
}

/// Writes at the end of a file.
pub(crate) struct Emitter<'a> {
    pub(crate) file: &'a File,
    pub(crate) path: &'a Path,
    /// The next free byte.
    pub(crate) end: u64,
}

/// Records of a [`Bytes::Records`] section made and written at a time
/// (2 MiB of 32-byte bind entries).
const PART_RECORDS: usize = 1 << 16;

impl Emitter<'_> {
    fn io(&self, e: std::io::Error) -> Error {
        Error::io(self.path, "write", e)
    }

    /// Zero bytes up to the next multiple of 8.
    fn align(&mut self) -> Result<()> {
        let to = align(self.end);
        if to > self.end {
            self.file.write_all_at(&[0u8; 8][..(to - self.end) as usize], self.end).map_err(|e| self.io(e))?;
        }
        self.end = to;
        Ok(())
    }

    /// Writes `bytes` at the next multiple of 8; returns where.
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<u64> {
        self.align()?;
        let at = self.end;
        self.file.write_all_at(bytes, at).map_err(|e| self.io(e))?;
        self.end = at + bytes.len() as u64;
        Ok(at)
    }

    /// Writes `len` zero bytes (the slack after a table).
    pub(crate) fn zeros(&mut self, len: u64) -> Result<()> {
        let zero = vec![0u8; len as usize];
        self.file.write_all_at(&zero, self.end).map_err(|e| self.io(e))?;
        self.end += len;
        Ok(())
    }

    /// Places `bytes`; returns where they are.
    pub(crate) fn place(&mut self, bytes: Bytes<'_>) -> Result<u64> {
        match bytes {
            Bytes::InPlace { offset, .. } => Ok(offset),
            Bytes::Slice(s) => self.put(s),
            Bytes::Owned(v) => self.put(&v),
            Bytes::Records { count, size, make } => {
                self.align()?;
                let start = self.end;
                self.write_records(start, (count, size), &make)?;
                self.end = start + count * size;
                Ok(start)
            }
        }
    }

    /// Writes `count` records of `size` bytes made by `make` at `start`,
    /// in parts of [`PART_RECORDS`] records, one buffer reused for each.
    /// (Writing each part on a second thread while the next is made was
    /// measured slower on a shared 2-core machine, docs/BIND.md.)
    fn write_records(&self, start: u64, (count, size): (u64, u64), make: &RecordFill<'_>) -> Result<()> {
        let (file, path) = (self.file, self.path);
        let mut buf = Vec::new();
        let mut first = 0;
        while first < count {
            let n = (count - first).min(PART_RECORDS as u64);
            let at = start + first * size;
            make(first, n as usize, &mut buf)?;
            if buf.len() as u64 != n * size {
                return Err(Error::malformed(
                    Location { file: path.to_owned(), section: SectionRef::Header, record: None, offset: at },
                    format!("{n} records of {size} bytes were made as {} bytes", buf.len()),
                ));
            }
            file.write_all_at(&buf, at).map_err(|e| Error::io(path, "write", e))?;
            tbrw_output::crash::crash_point("intel records part written");
            first += n;
        }
        Ok(())
    }
}

/// A section entry (`SampleFileSections_tb6_s`).
pub(crate) fn entry(section_type: u32, offset: u64, length: u64, count: u64, entry_length: u32) -> SectionTb6Raw {
    SectionTb6Raw {
        length,
        file_offset: offset,
        number_entries: count,
        entry_length,
        section_type,
        stream_number: 0,
        desc_entry_id: 0,
    }
}

/// Entries encoded as a table of `size` bytes (at least their own).
pub(crate) fn table_bytes(entries: &[SectionTb6Raw], size: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(size as usize);
    for e in entries {
        e.encode_into(&mut out);
    }
    let len = out.len().max(size as usize);
    out.resize(len, 0);
    out
}

/// What a string id of a source names in the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Str {
    /// No string (id 0).
    None,
    /// A text to store.
    Text(String),
    /// A text already stored in the output at this offset (an append keeps the file's strings).
    At(u64),
}

/// The texts placed in the output, by text and by offset.
#[derive(Debug, Default)]
pub(crate) struct Strings {
    by_text: HashMap<String, u64>,
    by_offset: HashMap<u64, String>,
}

impl Strings {
    /// Writes the texts not placed yet as one run of NUL-terminated UTF-8
    /// strings. A text holding a NUL cannot be stored in Intel's layout.
    pub(crate) fn place(&mut self, em: &mut Emitter<'_>, texts: Vec<String>) -> Result<()> {
        let mut run = Vec::new();
        let mut new = Vec::new();
        for t in texts {
            if self.by_text.contains_key(&t) || new.iter().any(|(n, _): &(String, usize)| *n == t) {
                continue;
            }
            if t.contains('\0') {
                return Err(Error::BadParameter {
                    what: format!("the text {t:?} holds a NUL character, which Intel's layout cannot store"),
                });
            }
            new.push((t, run.len()));
            let (t, _) = new.last().expect("just pushed");
            run.extend_from_slice(t.as_bytes());
            run.push(0);
        }
        if run.is_empty() {
            return Ok(());
        }
        let at = em.put(&run)?;
        for (t, pos) in new {
            self.by_offset.insert(at + pos as u64, t.clone());
            self.by_text.insert(t, at + pos as u64);
        }
        Ok(())
    }

    /// The output id of a source string.
    pub(crate) fn id(&self, s: &Str) -> StringId {
        match s {
            Str::None => StringId::NONE,
            Str::Text(t) => StringId(self.by_text[t]),
            Str::At(o) => StringId(*o),
        }
    }

    /// The text placed at an output id.
    pub(crate) fn text(&self, id: StringId) -> Option<String> {
        self.by_offset.get(&id.0).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Records` section of `count` 4-byte records, record `i` being
    /// `i` (or made wrong by `fault`), placed after 3 bytes of a file.
    fn place_records(count: u64, fault: fn(u64, usize, &mut Vec<u8>) -> Option<Result<()>>) -> (Result<u64>, Vec<u8>) {
        let file = tempfile::tempfile().unwrap();
        file.write_all_at(b"abc", 0).unwrap();
        let path = Path::new("t.tb6");
        let mut em = Emitter { file: &file, path, end: 3 };
        let make = move |first: u64, n: usize, out: &mut Vec<u8>| -> Result<()> {
            out.clear();
            if let Some(r) = fault(first, n, out) {
                return r;
            }
            out.extend((first..first + n as u64).flat_map(|i| (i as u32).to_le_bytes()));
            Ok(())
        };
        let placed = em.place(Bytes::Records { count, size: 4, make: Box::new(make) });
        if placed.is_ok() {
            assert_eq!(em.end, 8 + 4 * count, "the emitter's end is past the records");
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut bytes).unwrap();
        (placed, bytes)
    }

    #[test]
    fn records_made_in_parts_land_in_order_at_an_aligned_offset() {
        let none = |_: u64, _: usize, _: &mut Vec<u8>| None;
        for count in [0, 1, PART_RECORDS as u64, PART_RECORDS as u64 + 1, 3 * PART_RECORDS as u64 + 17] {
            let (placed, bytes) = place_records(count, none);
            assert_eq!(placed.unwrap(), 8);
            assert_eq!(&bytes[..8], b"abc\0\0\0\0\0");
            assert_eq!(bytes.len() as u64, 8 + 4 * count);
            for (i, r) in bytes[8..].chunks_exact(4).enumerate() {
                assert_eq!(u32::from_le_bytes(r.try_into().unwrap()), i as u32, "record {i} of {count}");
            }
        }
    }

    #[test]
    fn a_part_that_cannot_be_made_fails_the_placement() {
        // The third part fails: the error is the maker's.
        let failing = |first: u64, _: usize, _: &mut Vec<u8>| {
            (first == 2 * PART_RECORDS as u64).then(|| Err(Error::bad("no such bind")))
        };
        let (placed, _) = place_records(5 * PART_RECORDS as u64, failing);
        assert!(matches!(placed, Err(Error::BadParameter { ref what }) if what == "no such bind"), "{placed:?}");
        // A part of the wrong size is refused, naming the file and the offset.
        let short = |first: u64, n: usize, out: &mut Vec<u8>| {
            (first > 0).then(|| {
                out.resize(n * 4 - 1, 0);
                Ok(())
            })
        };
        let (placed, _) = place_records(2 * PART_RECORDS as u64, short);
        let e = placed.unwrap_err();
        let Error::Malformed { at, what } = &e else { panic!("{e:?}") };
        assert_eq!((at.file.as_path(), at.offset), (Path::new("t.tb6"), 8 + 4 * PART_RECORDS as u64));
        assert!(what.contains("were made as"), "{what}");
        // On one part too.
        let (placed, _) = place_records(10, |_, _, _| Some(Err(Error::bad("x"))));
        assert!(placed.is_err());
    }
}
