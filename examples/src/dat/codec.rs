//! The `.dat` dump's encoding: little-endian integers, strings as a u32
//! length (0xFFFFFFFF: none) and UTF-8 bytes, and records of
//! `tag, stream, length, payload`; [`Dec`] reads them back, every error
//! naming the file, the record and the byte.

use std::path::Path;

use tbrw::{StringId, Tb5File, Text};

use super::{DatError, MAGIC, R};

#[derive(Default)]
pub(super) struct Enc(pub(super) Vec<u8>);

impl Enc {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// u32 length (0xFFFFFFFF: no string) and UTF-8 bytes.
    pub(super) fn str(&mut self, file: &Tb5File, id: StringId) -> R {
        match file.string_opt(id)? {
            None => self.u32(u32::MAX),
            Some(s) => {
                self.u32(s.len() as u32);
                self.0.extend_from_slice(s.as_bytes());
            }
        }
        Ok(())
    }
}

/// Appends a record: its tag, stream, payload length and payload.
pub(super) fn record(out: &mut Vec<u8>, tag: u32, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&stream.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
}

/// A reader of a `.dat` record (or of the whole dump), each error naming
/// the file, the record and the byte.
pub(super) struct Dec<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
    /// Absolute offset of `b[0]` in the file.
    pub(super) base: u64,
    pub(super) file: &'a Path,
    pub(super) record: Option<(u64, u32)>,
}

impl<'a> Dec<'a> {
    pub(super) fn err(&self, what: impl Into<String>) -> DatError {
        DatError::Malformed {
            file: self.file.to_owned(),
            record: self.record,
            offset: self.base + self.at as u64,
            what: what.into(),
        }
    }
    pub(super) fn take(&mut self, n: usize, what: &str) -> R<&'a [u8]> {
        if self.b.len() - self.at < n {
            return Err(self.err(format!("{what}: needs {n} bytes, {} left", self.b.len() - self.at)));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    pub(super) fn u8(&mut self, w: &str) -> R<u8> {
        Ok(self.take(1, w)?[0])
    }
    pub(super) fn u16(&mut self, w: &str) -> R<u16> {
        Ok(u16::from_le_bytes(self.take(2, w)?.try_into().unwrap_or_default()))
    }
    pub(super) fn u32(&mut self, w: &str) -> R<u32> {
        Ok(u32::from_le_bytes(self.take(4, w)?.try_into().unwrap_or_default()))
    }
    pub(super) fn u64(&mut self, w: &str) -> R<u64> {
        Ok(u64::from_le_bytes(self.take(8, w)?.try_into().unwrap_or_default()))
    }
    pub(super) fn i64(&mut self, w: &str) -> R<i64> {
        Ok(self.u64(w)? as i64)
    }
    pub(super) fn str(&mut self, w: &str) -> R<Text> {
        let n = self.u32(w)?;
        if n == u32::MAX {
            return Ok(None);
        }
        let b = self.take(n as usize, w)?;
        std::str::from_utf8(b).map(|s| Some(s.to_owned())).map_err(|_| self.err(format!("{w}: not UTF-8")))
    }
    /// A count of items of at least `min` bytes each, checked against what is left.
    pub(super) fn count(&mut self, n: u64, min: usize, w: &str) -> R<usize> {
        match n.checked_mul(min as u64) {
            Some(x) if x <= (self.b.len() - self.at) as u64 => Ok(n as usize),
            _ => Err(self.err(format!("{n} {w} cannot fit in the {} bytes left", self.b.len() - self.at))),
        }
    }
    pub(super) fn done(&self) -> R {
        if self.at != self.b.len() {
            return Err(self.err(format!("{} unexpected bytes at the end of the record", self.b.len() - self.at)));
        }
        Ok(())
    }
}

/// Reads a dump's header (magic, version, data file name) and returns the
/// data file's name.
pub(super) fn read_header(top: &mut Dec<'_>) -> R<String> {
    if top.take(8, "magic")? != MAGIC {
        return Err(DatError::Malformed {
            file: top.file.to_owned(),
            record: None,
            offset: 0,
            what: "not a tbrw .dat file (bad magic)".into(),
        });
    }
    let version = top.u32("version")?;
    if version != 1 {
        return Err(top.err(format!("format version {version} is not supported (1 is)")));
    }
    let name_len = top.u32("data file name length")? as usize;
    let name = std::str::from_utf8(top.take(name_len, "data file name")?)
        .map_err(|_| top.err("data file name is not UTF-8"))?
        .to_owned();
    if name.contains('/') || name.is_empty() {
        return Err(top.err(format!("data file name {name:?} must be a plain file name")));
    }
    Ok(name)
}
