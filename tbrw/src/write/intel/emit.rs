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

/// A function handing bytes to a sink, in order (the records of a section
/// made as it is written, e.g. a bind).
pub(crate) type Fill<'s> = Box<dyn FnOnce(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> + 's>;

/// The bytes of a section: already in the output, given, or made as they are written.
pub(crate) enum Bytes<'s> {
    /// Already in the output file at `offset` (a new file's data sections stay where the session wrote them).
    InPlace { offset: u64, len: u64 },
    /// A slice (of a source file's mapping).
    Slice(&'s [u8]),
    /// Owned bytes.
    Owned(Vec<u8>),
    /// `len` bytes handed over by a function.
    Fill { len: u64, fill: Fill<'s> },
}

impl Bytes<'_> {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Bytes::InPlace { len, .. } | Bytes::Fill { len, .. } => *len,
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

/// Bytes a `Fill` is buffered in before each write.
const FILL_BUFFER: usize = 1 << 20;

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
            Bytes::Fill { len, fill } => {
                self.align()?;
                let start = self.end;
                let mut at = start;
                let mut buf: Vec<u8> = Vec::with_capacity(FILL_BUFFER);
                let (file, path) = (self.file, self.path);
                let flush = |buf: &mut Vec<u8>, at: &mut u64| -> Result<()> {
                    file.write_all_at(buf, *at).map_err(|e| Error::io(path, "write", e))?;
                    *at += buf.len() as u64;
                    buf.clear();
                    Ok(())
                };
                fill(&mut |b: &[u8]| {
                    if buf.len() + b.len() > FILL_BUFFER && !buf.is_empty() {
                        flush(&mut buf, &mut at)?;
                    }
                    if b.len() >= FILL_BUFFER {
                        file.write_all_at(b, at).map_err(|e| Error::io(path, "write", e))?;
                        at += b.len() as u64;
                    } else {
                        buf.extend_from_slice(b);
                    }
                    Ok(())
                })?;
                flush(&mut buf, &mut at)?;
                if at - start != len {
                    return Err(Error::malformed(
                        Location {
                            file: self.path.to_owned(),
                            section: SectionRef::Header,
                            record: None,
                            offset: start,
                        },
                        format!("a section said to be {len} bytes was given {}", at - start),
                    ));
                }
                self.end = at;
                Ok(start)
            }
        }
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
