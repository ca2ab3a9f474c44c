//! The input of a perf.data import: what its first bytes say it is
//! ([`detect`]: file or pipe format, version 1 or 2, byte order), the
//! header `linux-perf-data` is shown when the file's own would stop it
//! ([`Overlay`]: a version 1 header, feature sections cut short), a pipe
//! stream ended at its last whole record ([`WholeRecords`]), the bytes
//! counted for progress ([`Counting`]), and the record a failed read
//! stopped at ([`find_damage`]), so that an error names the input, the
//! record and the byte offset.

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
    if &head[0..8] != b"PERFILE2" && &head[0..8] != b"PERFFILE" {
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
        // perf's AUXTRACE and tracing-data records carry their payload
        // after the record; its size is in the record's body.
        let extra = match payload_size_field(t) {
            Some(width) if size >= RECORD_HEADER + width as u64 => {
                let mut b = [0u8; 8];
                r.read_exact(&mut b[..width]).ok()?;
                r.seek_relative(size as i64 - 8 - width as i64).ok()?;
                u64::from_le_bytes(b)
            }
            _ => {
                r.seek_relative(size as i64 - 8).ok()?;
                0
            }
        };
        if extra > 0 {
            r.seek_relative(i64::try_from(extra).ok()?).ok()?;
        }
        pos += size + extra;
        record += 1;
    }
    None
}

/// The size of perf's file header (magic, size, attr_size, the attrs,
/// data and event types sections, the feature bitmap).
pub const FILE_HEADER: usize = 104;
/// The size of a version 1 file header written before the feature bitmap.
const V1_FILE_HEADER: u64 = 72;
/// The size of the pipe header (magic, size).
pub const PIPE_HEADER: usize = 16;
/// The `perf_event_attr` sizes perf's version 1 reader accepts
/// (`PERF_ATTR_SIZE_VER0` to `VER4`), each followed by a 16-byte ids
/// section in the header's `attr_size` (`try_all_file_abis`).
const V1_ATTR_SIZES: [u64; 5] = [64, 72, 80, 96, 104];

/// What an input's first bytes say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detected {
    /// Pipe format (`perf record -o -`, `perf inject` from a pipe): a
    /// 16-byte header, then records, the attributes among them.
    pub pipe: bool,
    /// Big-endian data.
    pub big_endian: bool,
    /// perf's header version: 1 (`PERFFILE`, perf before Linux 2.6.37)
    /// or 2 (`PERFILE2`).
    pub version: u8,
}

fn word(b: &[u8], at: usize, big_endian: bool) -> u64 {
    let w: [u8; 8] = b.get(at..at + 8).and_then(|s| s.try_into().ok()).unwrap_or_default();
    if big_endian {
        u64::from_be_bytes(w)
    } else {
        u64::from_le_bytes(w)
    }
}

/// What `head`, the first bytes of an input (up to [`FILE_HEADER`]), is,
/// told as perf tells it (`check_magic_endian`): the magic gives the
/// version (and for version 2 the byte order); the header's size tells a
/// pipe (16) from a file; a version 1 file's byte order is the one in
/// which its attribute size is one perf knows. An error says why it is no
/// perf.data perf reads.
pub fn detect(head: &[u8]) -> Result<Detected, String> {
    if head.len() < PIPE_HEADER {
        return Err(match head.len() {
            0 => "it is empty: not a perf.data file".to_owned(),
            n => format!("it has {n} bytes, fewer than any perf.data header (16): cut short, or not a perf.data file"),
        });
    }
    match &head[..8] {
        b"PERFILE2" | b"2ELIFREP" => {
            let big_endian = head[0] == b'2';
            Ok(Detected { pipe: word(head, 8, big_endian) == PIPE_HEADER as u64, big_endian, version: 2 })
        }
        b"PERFFILE" => {
            for big_endian in [false, true] {
                if word(head, 8, big_endian) == PIPE_HEADER as u64 {
                    return Ok(Detected { pipe: true, big_endian, version: 1 });
                }
            }
            if head.len() < 24 {
                return Err(format!("its version 1 header is cut short: the file has {} bytes", head.len()));
            }
            for big_endian in [false, true] {
                let attr_size = word(head, 16, big_endian);
                if V1_ATTR_SIZES.iter().any(|s| s + 16 == attr_size) {
                    return Ok(Detected { pipe: false, big_endian, version: 1 });
                }
            }
            Err(format!(
                "a version 1 perf.data (PERFFILE) whose attribute size {} is none perf knows (80, 88, 96, 112, 120): \
                 perf cannot read it either",
                word(head, 16, false)
            ))
        }
        other => Err(format!(
            "not a perf.data file: it begins {:?} where perf.data begins \"PERFILE2\" (\"PERFFILE\" before Linux 2.6.37)",
            String::from_utf8_lossy(other)
        )),
    }
}

/// A file-format header's sections: (attrs offset, attrs size, data
/// offset, data size).
pub fn sections(head: &[u8], big_endian: bool) -> (u64, u64, u64, u64) {
    (word(head, 24, big_endian), word(head, 32, big_endian), word(head, 40, big_endian), word(head, 48, big_endian))
}

/// How many of the file's feature sections, in the order of their bits,
/// are whole in a file of `len` bytes: their entries in the table after
/// the data section and their contents. `head` is the (patched) header;
/// returns (whole, declared). perf reads a file whose feature sections
/// are cut short and goes without them; so does the import, with the
/// whole ones before the first cut.
pub fn whole_features<R: Read + Seek>(r: &mut R, head: &[u8], big_endian: bool, len: u64) -> (u32, u32) {
    let declared: u32 = (0..4).map(|i| word(head, 72 + 8 * i, big_endian).count_ones()).sum();
    let (_, _, data_offset, data_size) = sections(head, big_endian);
    let table = data_offset.saturating_add(data_size);
    let mut entry = [0u8; 16];
    for i in 0..declared {
        let at = table.saturating_add(16 * u64::from(i));
        let whole = at.saturating_add(16) <= len
            && r.seek(SeekFrom::Start(at)).is_ok()
            && r.read_exact(&mut entry).is_ok()
            && word(&entry, 0, big_endian).checked_add(word(&entry, 8, big_endian)).is_some_and(|end| end <= len);
        if !whole {
            return (i, declared);
        }
    }
    (declared, declared)
}

/// The header `linux-perf-data` is to see instead of the file's, when the
/// file's would stop it: a version 1 header as version 2 (its own magic
/// for its byte order, size 104; a 72-byte header has no feature bitmap,
/// and its event types section, names of tracepoints in version 1, is
/// left out), and only the first `keep` feature sections (the others are
/// cut short). `None` when the header is fine as it is.
pub fn patched_header(head: &[u8; FILE_HEADER], d: &Detected, keep: Option<u32>) -> Option<[u8; FILE_HEADER]> {
    if d.version == 2 && keep.is_none() {
        return None;
    }
    let mut h = *head;
    let put = |h: &mut [u8; FILE_HEADER], at: usize, v: u64| {
        let b = if d.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        h[at..at + 8].copy_from_slice(&b);
    };
    if d.version == 1 {
        h[..8].copy_from_slice(if d.big_endian { b"2ELIFREP" } else { b"PERFILE2" });
        if word(head, 8, d.big_endian) == V1_FILE_HEADER {
            h[72..].fill(0);
        }
        put(&mut h, 8, FILE_HEADER as u64);
        h[56..72].fill(0);
    }
    if let Some(keep) = keep {
        let mut left = keep;
        for i in 0..4 {
            let mut bits = word(&h, 72 + 8 * i, d.big_endian);
            let mut kept = 0u64;
            while bits != 0 {
                let low = bits & bits.wrapping_neg();
                if left > 0 {
                    kept |= low;
                    left -= 1;
                }
                bits &= !low;
            }
            put(&mut h, 72 + 8 * i, kept);
        }
    }
    Some(h)
}

/// A reader that shows a patched header ([`patched_header`]) in place of
/// the input's first bytes, until the first seek: `linux-perf-data` reads
/// the header from the start, then seeks to the sections, which may begin
/// inside a 72-byte version 1 header's 104 bytes and must be read as they
/// are.
pub struct Overlay<R> {
    inner: R,
    head: Option<Box<[u8; FILE_HEADER]>>,
    pos: u64,
}

impl<R> Overlay<R> {
    /// `inner` (at its start), showing `head` over its first bytes.
    pub fn new(inner: R, head: Option<[u8; FILE_HEADER]>) -> Self {
        Overlay { inner, head: head.map(Box::new), pos: 0 }
    }

    /// The reader overlaid.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: Read> Read for Overlay<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &self.head {
            for (i, b) in buf[..n].iter_mut().enumerate() {
                if let Some(&patched) = usize::try_from(self.pos + i as u64).ok().and_then(|p| h.get(p)) {
                    *b = patched;
                }
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Overlay<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.head = None;
        self.pos = self.inner.seek(to)?;
        Ok(self.pos)
    }
}

/// How a pipe-format input ended, as [`WholeRecords`] saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipeEnd {
    /// The input ended inside this record: perf reports the records
    /// before it ("unexpected end of event stream"), and so does the
    /// import.
    pub cut: Option<Damage>,
    /// A record whose size is impossible: perf stops there ("bad event
    /// header size") and reports nothing; the import fails naming it.
    pub bad: Option<Damage>,
}

/// A pipe-format stream handed on one whole record at a time, so that an
/// input cut inside a record ends, for the reader, at the record before
/// ([`PipeEnd::cut`]). A record's payload after its size (`AUXTRACE`'s
/// trace data, which may be large) is passed through as it comes, not
/// held. At most one record (64 KiB) is held.
pub struct WholeRecords<R> {
    inner: R,
    big_endian: bool,
    /// The pipe header, handed on first (patched for a version 1 stream).
    header: Option<[u8; PIPE_HEADER]>,
    buf: Vec<u8>,
    at: usize,
    /// Payload bytes still to pass through.
    payload: u64,
    /// Payload bytes still to drop: the tracing data, which
    /// `linux-perf-data` does not know follows its record and would read
    /// as records.
    drop: u64,
    /// Where dropped bytes are counted, beside the bytes handed on.
    dropped: Option<Rc<Cell<u64>>>,
    /// Where the tracing data dropped is kept (its first [`TRACING_KEPT`]
    /// bytes), for the tracepoints' names.
    tracing: Option<Rc<std::cell::RefCell<Vec<u8>>>>,
    /// The number and offset of the last record read.
    last: (u64, u64),
    /// Where the next record starts, and its number.
    offset: u64,
    record: u64,
    end: Rc<std::cell::RefCell<PipeEnd>>,
}

/// perf's `PERF_RECORD_AUXTRACE`, whose trace data follows the record.
const AUXTRACE: u32 = 71;
/// perf's `PERF_RECORD_HEADER_TRACING_DATA` (pipe mode, and files `perf
/// inject` wrote from a pipe): the tracepoints' formats follow the record.
pub const TRACING_DATA: u32 = 66;

/// How much of a pipe's tracing data is kept for the tracepoints' names:
/// their formats come first, and take some KiB; the kernel's symbols that
/// may follow them are not needed.
pub const TRACING_KEPT: u64 = 4 << 20;

/// The width of the payload size at the start of the body of a record of
/// type `t` whose payload follows it, for the records that have one:
/// AUXTRACE's `u64 size`, the tracing data's `u32 size`. The size field
/// is the payload's whole length (perf pads it to 8 bytes and counts the
/// padding), and the payload starts at the end of the record as its
/// `header.size` says: 12 bytes in perf before 3.x (no padding word), 16
/// since.
fn payload_size_field(t: u32) -> Option<usize> {
    match t {
        AUXTRACE => Some(8),
        TRACING_DATA => Some(4),
        _ => None,
    }
}

impl<R: Read> WholeRecords<R> {
    /// The stream `inner`, its 16 header bytes already read into `header`
    /// (patched as [`Detected`] requires); how it ends goes to `end`.
    pub fn new(inner: R, header: [u8; PIPE_HEADER], d: &Detected, end: Rc<std::cell::RefCell<PipeEnd>>) -> Self {
        let mut header = header;
        if d.version == 1 {
            header[..8].copy_from_slice(if d.big_endian { b"2ELIFREP" } else { b"PERFILE2" });
        }
        WholeRecords {
            inner,
            big_endian: d.big_endian,
            header: Some(header),
            buf: Vec::with_capacity(1 << 16),
            at: 0,
            payload: 0,
            drop: 0,
            dropped: None,
            tracing: None,
            last: (0, PIPE_HEADER as u64),
            offset: PIPE_HEADER as u64,
            record: 0,
            end,
        }
    }

    /// Counts the payload bytes it drops (the tracing data) into `pos`, the
    /// counter of the bytes it hands on, so that `pos` is the input's position.
    pub fn counting_dropped(mut self, pos: Rc<Cell<u64>>) -> Self {
        self.dropped = Some(pos);
        self
    }

    /// Keeps the first [`TRACING_KEPT`] bytes of the tracing data it drops
    /// in `into`.
    pub fn keeping_tracing_data(mut self, into: Rc<std::cell::RefCell<Vec<u8>>>) -> Self {
        self.tracing = Some(into);
        self
    }

    /// Reads into `buf[from..]` until it is full or the input ends; the bytes read.
    fn fill(&mut self, from: usize) -> std::io::Result<usize> {
        let mut got = from;
        while got < self.buf.len() {
            match self.inner.read(&mut self.buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(got - from)
    }

    /// Reads and drops the payload left in `drop`; at the end of the
    /// input, the record it belongs to is the one cut short.
    fn skip_dropped(&mut self) -> std::io::Result<()> {
        let want = self.drop;
        let mut from = (&mut self.inner).take(want);
        let got = match &self.tracing {
            Some(keep) => {
                let mut keep = keep.borrow_mut();
                let room = TRACING_KEPT.saturating_sub(keep.len() as u64);
                let kept = (&mut from).take(room).read_to_end(&mut keep)? as u64;
                kept + std::io::copy(&mut from, &mut std::io::sink())?
            }
            None => std::io::copy(&mut from, &mut std::io::sink())?,
        };
        self.drop -= got;
        if let Some(pos) = &self.dropped {
            pos.set(pos.get() + got);
        }
        if self.drop > 0 {
            let (record, offset) = self.last;
            let why = format!("the input ends {got} bytes into its tracing data, of {want}");
            self.end.borrow_mut().cut = Some(Damage { record, offset, record_type: Some(TRACING_DATA), why });
        }
        Ok(())
    }

    /// The next whole record into `buf`; `false` at the end of the input.
    fn next_record(&mut self) -> std::io::Result<bool> {
        let (offset, record) = (self.offset, self.record);
        let cut = |why: String| Damage { record, offset, record_type: None, why };
        self.buf.clear();
        self.buf.resize(RECORD_HEADER as usize, 0);
        self.at = 0;
        match self.fill(0)? {
            0 => {
                self.buf.clear();
                return Ok(false);
            }
            n if n < RECORD_HEADER as usize => {
                self.end.borrow_mut().cut = Some(cut(format!("the input ends {n} bytes into its header")));
                self.buf.clear();
                return Ok(false);
            }
            _ => {}
        }
        let (t, size) = if self.big_endian {
            (
                u32::from_be_bytes(self.buf[0..4].try_into().unwrap_or_default()),
                u16::from_be_bytes([self.buf[6], self.buf[7]]),
            )
        } else {
            (
                u32::from_le_bytes(self.buf[0..4].try_into().unwrap_or_default()),
                u16::from_le_bytes([self.buf[6], self.buf[7]]),
            )
        };
        let size = usize::from(size);
        if size < RECORD_HEADER as usize {
            let why = format!("its size {size} is less than its header");
            self.end.borrow_mut().bad = Some(Damage { record, offset, record_type: Some(t), why: why.clone() });
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
        }
        self.buf.resize(size, 0);
        let got = RECORD_HEADER as usize + self.fill(RECORD_HEADER as usize)?;
        if got < size {
            let why = format!("the input ends {got} bytes into it, of {size}");
            self.end.borrow_mut().cut = Some(Damage { record, offset, record_type: Some(t), why });
            self.buf.clear();
            return Ok(false);
        }
        let payload = match payload_size_field(t) {
            Some(8) if size >= 16 => word(&self.buf, 8, self.big_endian),
            Some(4) if size >= 12 => {
                let b: [u8; 4] = self.buf[8..12].try_into().unwrap_or_default();
                u64::from(if self.big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
            }
            _ => 0,
        };
        if t == TRACING_DATA {
            (self.payload, self.drop) = (0, payload);
        } else {
            (self.payload, self.drop) = (payload, 0);
        }
        self.last = (record, offset);
        self.offset = offset.saturating_add(size as u64).saturating_add(payload);
        self.record += 1;
        Ok(true)
    }
}

impl<R: Read> Read for WholeRecords<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if let Some(h) = self.header.take() {
            self.buf = h.to_vec();
            self.at = 0;
        }
        loop {
            if self.at < self.buf.len() {
                let n = out.len().min(self.buf.len() - self.at);
                out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            if self.payload > 0 {
                let want = usize::try_from(self.payload).unwrap_or(usize::MAX).min(out.len());
                let n = self.inner.read(&mut out[..want])?;
                self.payload -= n as u64;
                return Ok(n);
            }
            if self.drop > 0 {
                self.skip_dropped()?;
                if self.drop > 0 {
                    // The input ended inside the tracing data.
                    return Ok(0);
                }
            }
            if out.is_empty() || !self.next_record()? {
                return Ok(0);
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn le(v: u64) -> [u8; 8] {
        v.to_le_bytes()
    }

    #[test]
    fn formats_are_told_as_perf_tells_them() {
        let mut file = b"PERFILE2".to_vec();
        file.extend(le(104));
        assert_eq!(detect(&file), Ok(Detected { pipe: false, big_endian: false, version: 2 }));
        let mut pipe = b"PERFILE2".to_vec();
        pipe.extend(le(16));
        assert_eq!(detect(&pipe), Ok(Detected { pipe: true, big_endian: false, version: 2 }));
        let mut big = b"2ELIFREP".to_vec();
        big.extend(16u64.to_be_bytes());
        assert_eq!(detect(&big), Ok(Detected { pipe: true, big_endian: true, version: 2 }));
        // Version 1: the byte order from the attribute size.
        let mut v1 = b"PERFFILE".to_vec();
        v1.extend(le(72));
        v1.extend((104u64 + 16).to_be_bytes());
        assert_eq!(detect(&v1), Ok(Detected { pipe: false, big_endian: true, version: 1 }));
        v1[16..24].copy_from_slice(&le(200));
        assert!(detect(&v1).unwrap_err().contains("perf cannot read it either"));
        assert!(detect(b"").unwrap_err().contains("empty"));
        assert!(detect(b"PERFILE2").unwrap_err().contains("8 bytes"));
        assert!(detect(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap_err().contains("not a perf.data file"));
    }

    #[test]
    fn a_version_1_header_and_cut_features_are_patched() {
        let mut h = [0u8; FILE_HEADER];
        h[..8].copy_from_slice(b"PERFFILE");
        h[8..16].copy_from_slice(&le(72));
        h[56..64].copy_from_slice(&le(0x1234)); // event types: names in version 1
        h[72..80].copy_from_slice(&le(0xdead)); // the attrs, not features
        let d = Detected { pipe: false, big_endian: false, version: 1 };
        let p = patched_header(&h, &d, None).unwrap();
        assert_eq!(&p[..8], b"PERFILE2");
        assert_eq!(word(&p, 8, false), 104);
        assert_eq!(word(&p, 56, false), 0);
        assert!(p[72..].iter().all(|&b| b == 0));
        // Keep the first two of four feature bits.
        let mut f = [0u8; FILE_HEADER];
        f[..8].copy_from_slice(b"PERFILE2");
        f[72..80].copy_from_slice(&le(0b1011_0000));
        f[80..88].copy_from_slice(&le(1));
        let v2 = Detected { version: 2, ..d };
        assert_eq!(patched_header(&f, &v2, None), None);
        let p = patched_header(&f, &v2, Some(2)).unwrap();
        assert_eq!((word(&p, 72, false), word(&p, 80, false)), (0b0011_0000, 0));
        // The overlay shows the patch until the first seek.
        let bytes: Vec<u8> = (0..200u8).collect();
        let mut o = Overlay::new(std::io::Cursor::new(bytes), Some(p));
        let mut first = [0u8; 8];
        o.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"PERFILE2");
        o.seek(SeekFrom::Start(72)).unwrap();
        o.read_exact(&mut first).unwrap();
        assert_eq!(first[0], 72);
    }

    /// A pipe stream of three records: header, then records of 16, 24 and 8 bytes.
    fn stream() -> Vec<u8> {
        let mut s = b"PERFILE2".to_vec();
        s.extend(le(16));
        for (t, size) in [(9u32, 16u16), (3, 24), (68, 8)] {
            s.extend(t.to_le_bytes());
            s.extend(0u16.to_le_bytes());
            s.extend(size.to_le_bytes());
            s.extend(vec![0xab; usize::from(size) - 8]);
        }
        s
    }

    fn through(bytes: &[u8]) -> (std::io::Result<Vec<u8>>, PipeEnd) {
        let end = Rc::new(std::cell::RefCell::new(PipeEnd::default()));
        let d = detect(&bytes[..16]).unwrap();
        let mut w = WholeRecords::new(&bytes[16..], bytes[..16].try_into().unwrap(), &d, end.clone());
        let mut out = Vec::new();
        let r = w.read_to_end(&mut out).map(|_| out);
        let e = end.borrow().clone();
        (r, e)
    }

    /// A pipe stream with a tracing-data record (type 66) whose payload of
    /// `payload` bytes follows it, its header `header_size` bytes (12 in
    /// perf before 3.x, 16 since), between two 16-byte records.
    fn with_tracing_data(header_size: u16, payload: u32) -> (Vec<u8>, Vec<u8>) {
        let mut s = b"PERFILE2".to_vec();
        s.extend(le(16));
        let record = |s: &mut Vec<u8>, t: u32, size: u16| {
            s.extend(t.to_le_bytes());
            s.extend(0u16.to_le_bytes());
            s.extend(size.to_le_bytes());
        };
        record(&mut s, 9, 16);
        s.extend([0xab; 8]);
        record(&mut s, TRACING_DATA, header_size);
        s.extend(payload.to_le_bytes());
        s.extend(vec![0; usize::from(header_size) - 12]);
        let mut seen = s.clone();
        // The payload: bytes that would read as a record of size 0.
        s.extend(vec![0; payload as usize]);
        record(&mut s, 3, 16);
        s.extend([0xcd; 8]);
        seen.extend(&s[s.len() - 16..]);
        (s, seen)
    }

    #[test]
    fn tracing_data_is_dropped_whatever_its_header_size() {
        for header_size in [12u16, 16] {
            let (s, seen) = with_tracing_data(header_size, 40);
            let (got, end) = through(&s);
            assert_eq!((got.unwrap(), end), (seen, PipeEnd::default()), "{header_size}");
            // Counted as read, though not handed on.
            let end = Rc::new(std::cell::RefCell::new(PipeEnd::default()));
            let pos = Rc::new(Cell::new(0));
            let d = detect(&s[..16]).unwrap();
            let w = WholeRecords::new(&s[16..], s[..16].try_into().unwrap(), &d, end).counting_dropped(pos.clone());
            let mut counted = Counting::new(w, pos.clone());
            std::io::copy(&mut counted, &mut std::io::sink()).unwrap();
            assert_eq!(pos.get(), s.len() as u64);
            // Cut inside the payload: the tracing-data record is the one cut.
            let (got, end) = through(&s[..32 + usize::from(header_size) + 10]);
            assert_eq!(got.unwrap().len(), 32 + usize::from(header_size));
            let c = end.cut.unwrap();
            assert_eq!((c.record, c.offset, c.record_type), (1, 32, Some(TRACING_DATA)));
        }
    }

    #[test]
    fn the_damage_walk_steps_over_tracing_data() {
        // A file whose data section holds the pipe stream's records.
        let (s, _) = with_tracing_data(16, 40);
        let records = &s[16..];
        let mut f = b"PERFILE2".to_vec();
        f.extend(le(104));
        f.extend(le(136));
        f.extend([0; 16]);
        f.extend(le(104));
        f.extend(le(records.len() as u64));
        f.resize(104, 0);
        f.extend(records);
        let mut r = BufReader::new(std::io::Cursor::new(f.clone()));
        assert_eq!(find_damage(&mut r), None);
        // Its last record cut short is found after the payload.
        f.truncate(f.len() - 4);
        let d = find_damage(&mut BufReader::new(std::io::Cursor::new(f))).unwrap();
        assert_eq!((d.record, d.offset, d.record_type), (2, 104 + 16 + 16 + 40, Some(3)));
    }

    #[test]
    fn a_pipe_stream_ends_at_its_last_whole_record() {
        let s = stream();
        let (whole, end) = through(&s);
        assert_eq!((whole.unwrap(), end), (s.clone(), PipeEnd::default()));
        let ends = [16, 32, 56, 64];
        for cut in 16..s.len() {
            let (got, end) = through(&s[..cut]);
            let kept = *ends.iter().filter(|&&e| e <= cut).max().unwrap();
            assert_eq!(got.unwrap(), &s[..kept], "{cut}");
            // Ending between records is no cut; inside one is.
            match end.cut {
                None => assert_eq!(kept, cut),
                Some(c) => {
                    assert_ne!(kept, cut);
                    let record = ends.iter().position(|&e| e == kept).unwrap() as u64;
                    assert_eq!((c.offset, c.record), (kept as u64, record));
                }
            }
        }
        // A record of size 0: an error, and the record named.
        let mut bad = s.clone();
        bad[32 + 6..32 + 8].copy_from_slice(&0u16.to_le_bytes());
        let (got, end) = through(&bad);
        assert!(got.is_err());
        let b = end.bad.unwrap();
        assert_eq!((b.record, b.offset, b.record_type), (1, 32, Some(3)));
    }
}
