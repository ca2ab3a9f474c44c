//! A bounds-checked reading cursor over the bytes of one section.
//!
//! Nothing here panics: every read checks the bytes left, and every count
//! read from the file is checked against the bytes left before anything is
//! allocated for it. Errors carry the file, section, record and the absolute
//! byte offset.

use std::path::Path;

use super::raw::Raw;
use crate::model::error::{Error, Location, Result};
use crate::model::section::SectionRef;

pub(crate) struct SectionCursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Absolute file offset of `data[0]`.
    base: u64,
    file: &'a Path,
    section: SectionRef,
    record: Option<u64>,
}

impl<'a> SectionCursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: u64, file: &'a Path, section: SectionRef) -> Self {
        SectionCursor { data, pos: 0, base, file, section, record: None }
    }

    /// Sets the record index that errors name from now on.
    pub(crate) fn at_record(&mut self, record: u64) {
        self.record = Some(record);
    }

    pub(crate) fn location(&self) -> Location {
        Location {
            file: self.file.to_owned(),
            section: self.section,
            record: self.record,
            offset: self.base + self.pos as u64,
        }
    }

    pub(crate) fn error(&self, what: impl Into<String>) -> Error {
        Error::malformed(self.location(), what)
    }

    /// Bytes read so far (the offset from the section start).
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn read<T: Raw>(&mut self, what: &str) -> Result<T> {
        let bytes = self.bytes(T::SIZE, what)?;
        T::decode(bytes).ok_or_else(|| self.error(format!("cannot decode {what}")))
    }

    pub(crate) fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!("{what} needs {n} bytes but only {} are left", self.remaining())));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Checks that `count` items of at least `min_each` bytes can still be
    /// in the section, and returns `count` as a `usize` safe to allocate for.
    pub(crate) fn check_count(&self, count: u64, min_each: usize, what: &str) -> Result<usize> {
        let need = count.checked_mul(min_each as u64);
        match need {
            Some(n) if n <= self.remaining() as u64 => Ok(count as usize),
            _ => Err(self.error(format!(
                "{count} {what} of at least {min_each} bytes each cannot fit in the {} bytes left",
                self.remaining()
            ))),
        }
    }

    pub(crate) fn finish(&self, what: &str) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.error(format!("{} unexpected bytes after {what}", self.remaining())));
        }
        Ok(())
    }
}
