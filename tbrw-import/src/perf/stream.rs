//! The perf import's entry points: a perf.data file (read with seeks) or
//! pipe (read once) opened, its header checked and damage located, then
//! handed to [`super::convert`], which writes stream 0 and the global
//! sections.
//!
//! Stream 0 record (little-endian): `ip` u64, `pid` u32, `tid` u32, time
//! u64 (ns, field named after perf's clock), `period` u32 or u64, `cpu`
//! u16 or u32 ([`super::layout::Widths`]), `event_id` u32 when the recording has several
//! events, and `stack_id` u32 when samples carry call chains (a node of the
//! stack table, docs/FORMAT.md "Stack table"). Imports before the stack
//! table wrote each frame as a 36-byte record of a stream 1
//! ([`super::layout::callchain_descriptor`]); readers still read those.

use std::cell::{Cell, RefCell};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::rc::Rc;

use linux_perf_data::PerfFileReader;
use tbrw::Tb5Writer;

use super::convert::{convert, ImportStats, PerfOptions, SideBand, Stop};
use super::events::attr_section_ids;
use super::read::{self, Counting, Detected, Overlay, PipeEnd, WholeRecords, FILE_HEADER, PIPE_HEADER};
use crate::error::{ImportError, Place};
use crate::progress::Progress;

/// Imports the perf.data file `input` (file mode: perf's default
/// `perf.data`, which starts at byte 0 of `input` and is read with seeks)
/// into `w`; `name` names it in errors and in stream 0's comment, and
/// `progress` gets the bytes read so far. The caller closes `w`, or drops
/// it on error and nothing is written. A damaged file's error names the
/// record and its byte offset. A pipe-format file (saved from `perf
/// record -o -`, or written by `perf inject` from a pipe) is told by its
/// header and read in pipe mode; a version 1 header (`PERFFILE`) is read
/// as perf reads it.
pub fn import_perf_file<R: Read + Seek>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    import_perf_file_with(input, name, w, &PerfOptions::default(), progress)
}

/// [`import_perf_file`] with options.
pub fn import_perf_file_with<R: Read + Seek>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &PerfOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let io = |e| ImportError::io(name, e);
    let mut input = BufReader::with_capacity(1 << 20, input);
    let len = input.seek(SeekFrom::End(0)).map_err(io)?;
    input.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = [0u8; FILE_HEADER];
    let n = read_full(&mut input, &mut head).map_err(io)?;
    let d = read::detect(&head[..n]).map_err(|what| ImportError::invalid(name, Place::Whole, what))?;
    if d.pipe {
        input.seek(SeekFrom::Start(PIPE_HEADER as u64)).map_err(io)?;
        let header: [u8; PIPE_HEADER] = head[..PIPE_HEADER].try_into().unwrap_or_default();
        return pipe(input, header, &d, name, w, opts, progress);
    }
    if n < FILE_HEADER {
        let what = format!("its header is cut short: the file has {len} bytes, perf's header {FILE_HEADER}");
        return Err(ImportError::invalid(name, Place::Whole, what));
    }
    let (_, _, data_offset, data_size) = read::sections(&head, d.big_endian);
    if data_size == 0 {
        // What `perf record` leaves when it is killed: the header it wrote
        // at the start, before it knew the data's size.
        let what = format!(
            "the recording was not finished: its header says the data section (at byte {data_offset}) is empty, \
             which `perf record` leaves when it is killed before it ends; perf cannot read it either"
        );
        return Err(ImportError::invalid(name, Place::Whole, what));
    }
    // Feature sections cut short (the file was copied or written only in
    // part) are left out, as perf leaves them out; a cut data section is
    // the reader's error, located below.
    let base = read::patched_header(&head, &d, None);
    let h = base.unwrap_or(head);
    let (whole, declared) = if data_offset.saturating_add(data_size) <= len {
        read::whole_features(&mut input, &h, d.big_endian, len)
    } else {
        (0, 0)
    };
    // The attribute section's ids: perf's own way to a sample's event where
    // no EVENT_DESC lists them (simpleperf writes none).
    let section_ids = attr_section_ids(&mut input, &h, d.big_endian, len);
    let v2 = Detected { version: 2, ..d };
    let patch = if whole < declared { read::patched_header(&h, &v2, Some(whole)) } else { base };
    input.seek(SeekFrom::Start(0)).map_err(io)?;

    let pos = Rc::new(Cell::new(0u64));
    let mut r = Counting::new(Overlay::new(input, patch), pos.clone());
    // The reader takes the input by `&mut`, so that after a failed read the
    // same input can be walked for the damaged record.
    let done = match PerfFileReader::parse_file(&mut r) {
        Ok(PerfFileReader { mut perf_file, mut record_iter }) => {
            let side = SideBand { pos: pos.clone(), section_ids, tracing: None };
            convert(name, w, &mut perf_file, &mut record_iter, &side, opts, progress)
        }
        Err(e) => Err(Stop::Read(e)),
    };
    let mut stats = done.map_err(|stop| match stop {
        Stop::Read(e) => {
            let read = pos.get();
            read::read_error(name, &e, read, read::find_damage(r.get_mut().get_mut()))
        }
        Stop::Import(e) => e,
    })?;
    stats.features_cut = (whole < declared).then_some((whole, declared));
    Ok(stats)
}

/// Reads into `buf` until it is full or the input ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Imports a perf.data stream in pipe mode (`perf record -o -`), read
/// once from `input` to its end, into `w`; as [`import_perf_file`]
/// otherwise. The end of the input ends the data, as it does for perf:
/// an input that ends inside a record gives the records before it
/// ([`ImportStats::cut`]).
pub fn import_perf_pipe<R: Read>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    import_perf_pipe_with(input, name, w, &PerfOptions::default(), progress)
}

/// [`import_perf_pipe`] with options.
pub fn import_perf_pipe_with<R: Read>(
    mut input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &PerfOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let mut header = [0u8; PIPE_HEADER];
    let n = read_full(&mut input, &mut header).map_err(|e| ImportError::io(name, e))?;
    let d = read::detect(&header[..n]).map_err(|what| ImportError::invalid(name, Place::Whole, what))?;
    if !d.pipe {
        let what = "a perf.data in file format, which is read with seeks: give its path, not a pipe";
        return Err(ImportError::invalid(name, Place::Whole, what));
    }
    pipe(input, header, &d, name, w, opts, progress)
}

/// The pipe-mode import of `input`, positioned after its 16-byte
/// `header`.
fn pipe<R: Read>(
    input: R,
    header: [u8; PIPE_HEADER],
    d: &Detected,
    name: &str,
    w: &mut Tb5Writer,
    opts: &PerfOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let pos = Rc::new(Cell::new(0u64));
    let end = Rc::new(RefCell::new(PipeEnd::default()));
    let tracing = Rc::new(RefCell::new(Vec::new()));
    let whole = WholeRecords::new(BufReader::with_capacity(1 << 20, input), header, d, end.clone())
        .counting_dropped(pos.clone())
        .keeping_tracing_data(tracing.clone());
    let r = Counting::new(whole, pos.clone());
    let done = match PerfFileReader::parse_pipe(r) {
        Ok(PerfFileReader { mut perf_file, mut record_iter }) => {
            let side = SideBand { pos: pos.clone(), section_ids: Vec::new(), tracing: Some(tracing) };
            convert(name, w, &mut perf_file, &mut record_iter, &side, opts, progress)
        }
        Err(e) => Err(Stop::Read(e)),
    };
    let mut stats = done.map_err(|stop| match stop {
        Stop::Read(e) => read::read_error(name, &e, pos.get(), end.borrow().bad.clone()),
        Stop::Import(e) => e,
    })?;
    stats.cut = end.borrow().cut.clone();
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use tbrw::Tb5File;

    /// `perf record -e cpu-clock -c 200000 -- true`, in file and in pipe mode.
    const FILE: &[u8] = include_bytes!("../../tests/data/true.perf.data");
    const PIPE: &[u8] = include_bytes!("../../tests/data/true.pipe.perf.data");

    /// A reader that cannot seek and hands out at most 7 bytes a call, as
    /// a pipe may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn stream0(path: &std::path::Path) -> (String, u64) {
        let f = Tb5File::open(path).unwrap();
        let s = f.stream(0).unwrap();
        let comment = f.string_opt(s.info().unwrap().unwrap().comment).unwrap().unwrap_or_default().to_owned();
        (comment, s.data().unwrap().map_or(0, |d| d.len()))
    }

    #[test]
    fn pipe_mode_reads_a_reader_that_cannot_seek() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pipe.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let mut last = 0;
        let stats = import_perf_pipe(Trickle(PIPE), "-", &mut w, |n| last = n).unwrap();
        w.close().unwrap();
        assert_eq!((stats.samples, stats.events, stats.bytes, last), (3, 1, PIPE.len() as u64, PIPE.len() as u64));
        let (comment, records) = stream0(&out);
        assert!(comment.starts_with("perf.data -; cpu "), "{comment}");
        assert_eq!(records, 3);
    }

    #[test]
    fn file_mode_reads_a_cursor_and_names_a_damaged_record() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("file.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let stats = import_perf_file(Cursor::new(FILE), "true.perf.data", &mut w, ()).unwrap();
        w.close().unwrap();
        assert_eq!((stats.samples, stats.modules), (3, 5));
        assert_eq!(stream0(&out).1, 3);

        // Cut inside the data section (perf's header says where it is): the
        // walk over the same input finds the record cut short.
        let data_end = u64::from_le_bytes(FILE[40..48].try_into().unwrap()) + 200;
        let cut = &FILE[..data_end as usize];
        let mut w = Tb5Writer::create(dir.path().join("cut.tb5")).unwrap();
        let e = import_perf_file(Cursor::new(cut), "cut.data", &mut w, ()).unwrap_err();
        match &e {
            ImportError::Invalid { input, place: Place::Record { offset, .. }, what } => {
                assert_eq!(input, "cut.data");
                assert!(*offset < data_end && what.contains("cut short"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        // A file-format header on a stream, and garbage, are refused with why.
        let e = import_perf_pipe(&b"PERFILE2 and then nothing a pipe header has"[..], "-", &mut w, ()).unwrap_err();
        assert!(e.to_string().contains("file format"), "{e}");
        let e = import_perf_pipe(&b"GIF89a and then some more"[..], "-", &mut w, ()).unwrap_err();
        assert!(e.to_string().contains("not a perf.data file"), "{e}");
    }
}
