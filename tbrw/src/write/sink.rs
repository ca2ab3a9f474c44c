//! Where section bytes go while a section is being written.
//!
//! The output file has one tail. The data section that claims it first
//! streams straight to it ([`Dest::Direct`]); every other open section
//! collects its bytes in memory and, past [`SPILL_MEMORY`], in an unnamed
//! temporary file next to the output (`O_TMPFILE`, so nothing is left on
//! disk whatever happens to the process; `work_file::spill_file`). Finished
//! sections are copied to the tail when it is free. Each sink keeps at most
//! one [`CHUNK`] in memory, which is what bounds the writer's memory
//! independently of the size of the data.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::work_file;
use crate::model::error::{Error, Result};

/// Bytes a sink buffers before writing them out.
pub(crate) const CHUNK: usize = 1 << 20;
/// Bytes a spilled section keeps in memory before moving to a temporary file.
pub(crate) const SPILL_MEMORY: usize = 1 << 20;

enum Dest {
    /// Written at `start` of the output file, which this sink owns the tail of.
    Direct { start: u64 },
    /// Held in `buf`.
    Memory,
    /// Moved to an unnamed temporary file; `buf` holds what is not written yet.
    Spill(File),
}

pub(crate) struct SectionSink {
    dest: Dest,
    buf: Vec<u8>,
    hasher: crc32fast::Hasher,
    /// Bytes handed out of `buf` (to the output or the spill file).
    flushed: u64,
    /// Bytes of a direct sink whose write-out to disk has been started.
    written_back: u64,
    /// Whether a direct sink starts the write-out as it goes (the commit
    /// will `fsync`: see [`super::Durability`]).
    write_back: bool,
}

/// A direct sink starts the kernel writing its bytes to disk every this
/// many bytes (see [`start_writeback`]).
const WRITEBACK: u64 = 8 << 20;

/// Starts writing `len` bytes of `file` at `offset` to disk, without
/// waiting. The commit's `fsync` (at close) must make every byte durable
/// before the commit slot is written: started early, the write-out of a
/// large section overlaps the producing of the rest, and the `fsync` waits
/// for the tail only. Advisory: a failure here is the `fsync`'s to report.
fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (libc::off64_t::try_from(offset), libc::off64_t::try_from(len)) else { return };
        // SAFETY: a plain system call on an open descriptor; no memory is passed.
        unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

impl SectionSink {
    pub(crate) fn direct(start: u64, write_back: bool) -> Self {
        SectionSink {
            dest: Dest::Direct { start },
            buf: Vec::new(),
            hasher: crc32fast::Hasher::new(),
            flushed: 0,
            written_back: 0,
            write_back,
        }
    }

    pub(crate) fn memory() -> Self {
        SectionSink {
            dest: Dest::Memory,
            buf: Vec::new(),
            hasher: crc32fast::Hasher::new(),
            flushed: 0,
            written_back: 0,
            write_back: false,
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Where a direct sink's bytes start in the output; `None` for other sinks.
    pub(crate) fn direct_start(&self) -> Option<u64> {
        match self.dest {
            Dest::Direct { start } => Some(start),
            _ => None,
        }
    }

    /// Appends bytes. `out` is the output file (used by direct sinks),
    /// `path` its target: what errors name, and where spill files go
    /// (beside it, see [`work_file::spill_file`]).
    pub(crate) fn write(&mut self, mut bytes: &[u8], out: &File, path: &Path) -> Result<()> {
        let limit = match self.dest {
            Dest::Memory => SPILL_MEMORY,
            _ => CHUNK,
        };
        while !bytes.is_empty() {
            if self.buf.capacity() == 0 {
                self.buf.reserve_exact(CHUNK.min(bytes.len().max(4096)));
            }
            let room = limit - self.buf.len();
            let take = room.min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.buf.len() == limit {
                if let Dest::Memory = self.dest {
                    // The error names the target: a temporary file's name means nothing to the user.
                    let f = work_file::spill_file(path).map_err(|e| Error::io(path, "create spill file", e))?;
                    self.dest = Dest::Spill(f);
                }
                self.flush(out, path)?;
            }
        }
        Ok(())
    }

    fn flush(&mut self, out: &File, path: &Path) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.hasher.update(&self.buf);
        match &mut self.dest {
            Dest::Direct { start } => {
                out.write_all_at(&self.buf, *start + self.flushed).map_err(|e| Error::io(path, "write", e))?;
                let done = self.flushed + self.buf.len() as u64;
                if self.write_back && done - self.written_back >= WRITEBACK {
                    start_writeback(out, *start + self.written_back, done - self.written_back);
                    self.written_back = done;
                }
            }
            Dest::Spill(f) => f.write_all(&self.buf).map_err(|e| Error::io(path, "write spill file", e))?,
            Dest::Memory => return Ok(()),
        }
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Hands every byte appended so far to `f`, in order, in pieces of at
    /// most [`CHUNK`]; the sink is not changed. `out` and `path` as in [`Self::write`].
    pub(crate) fn read_back(&self, out: &File, path: &Path, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let flushed_in = match &self.dest {
            Dest::Direct { start } => Some((out, *start)),
            Dest::Spill(file) => Some((file, 0)),
            Dest::Memory => None,
        };
        if let Some((file, base)) = flushed_in {
            let mut buf = vec![0u8; CHUNK];
            let mut at = 0u64;
            while at < self.flushed {
                let k = (self.flushed - at).min(CHUNK as u64) as usize;
                file.read_exact_at(&mut buf[..k], base + at).map_err(|e| Error::io(path, "read back", e))?;
                f(&buf[..k]);
                at += k as u64;
            }
        }
        f(&self.buf);
        Ok(())
    }

    /// Moves a direct sink off the tail: the bytes it wrote there so far
    /// (at its start in `out`) go to a spill file (or stay in memory when
    /// none were written out yet), and it goes on as a spilled sink, to be
    /// copied to the tail when finished. `dir` and `path` as in [`Self::write`].
    pub(crate) fn leave_tail(&mut self, out: &File, path: &Path) -> Result<()> {
        let Dest::Direct { start } = self.dest else { return Ok(()) };
        if self.flushed == 0 {
            self.dest = Dest::Memory;
            return Ok(());
        }
        let mut f = work_file::spill_file(path).map_err(|e| Error::io(path, "create spill file", e))?;
        let mut buf = vec![0u8; CHUNK];
        let mut at = 0u64;
        while at < self.flushed {
            let k = (self.flushed - at).min(CHUNK as u64) as usize;
            out.read_exact_at(&mut buf[..k], start + at).map_err(|e| Error::io(path, "read back", e))?;
            f.write_all(&buf[..k]).map_err(|e| Error::io(path, "write spill file", e))?;
            at += k as u64;
        }
        self.dest = Dest::Spill(f);
        Ok(())
    }

    /// Finishes a direct sink: everything is in the output. Returns (length, crc).
    pub(crate) fn finish_direct(mut self, out: &File, path: &Path) -> Result<(u64, u32)> {
        self.flush(out, path)?;
        Ok((self.flushed, self.hasher.finalize()))
    }

    /// Copies a memory or spilled sink to `at` in the output. Returns the
    /// length and the checksum state of the bytes (to be combined with others).
    pub(crate) fn copy_to(mut self, out: &File, at: u64, path: &Path) -> Result<(u64, crc32fast::Hasher)> {
        match self.dest {
            Dest::Direct { .. } => unreachable!("direct sinks are never copied"),
            Dest::Memory => {
                self.hasher.update(&self.buf);
                out.write_all_at(&self.buf, at).map_err(|e| Error::io(path, "write", e))?;
                Ok((self.buf.len() as u64, self.hasher))
            }
            Dest::Spill(_) => {
                self.flush(out, path)?;
                let Dest::Spill(mut f) = self.dest else { unreachable!() };
                f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(path, "seek spill file", e))?;
                let mut buf = vec![0u8; CHUNK];
                let mut done = 0u64;
                while done < self.flushed {
                    let n = f.read(&mut buf).map_err(|e| Error::io(path, "read spill file", e))?;
                    if n == 0 {
                        return Err(Error::io(path, "read spill file", std::io::ErrorKind::UnexpectedEof.into()));
                    }
                    out.write_all_at(&buf[..n], at + done).map_err(|e| Error::io(path, "write", e))?;
                    done += n as u64;
                }
                Ok((self.flushed, self.hasher))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_past_the_memory_limit_and_copies_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempfile_in(dir.path()).unwrap();
        let mut s = SectionSink::memory();
        let data: Vec<u8> = (0..(3 * SPILL_MEMORY + 123)).map(|i| (i * 7 + i / 251) as u8).collect();
        for piece in data.chunks(40_000) {
            s.write(piece, &out, &dir.path().join("t.tb5")).unwrap();
        }
        assert!(matches!(s.dest, Dest::Spill(_)));
        assert_eq!(s.len(), data.len() as u64);
        let (len, crc) = s.copy_to(&out, 16, dir.path()).unwrap();
        assert_eq!((len, crc.finalize()), (data.len() as u64, crc32fast::hash(&data)));
        let mut back = vec![0u8; data.len()];
        out.read_exact_at(&mut back, 16).unwrap();
        assert!(back == data);
    }

    #[test]
    fn a_direct_sink_leaves_the_tail_with_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempfile_in(dir.path()).unwrap();
        let data: Vec<u8> = (0..(CHUNK * 3 + 77)).map(|i| (i * 13 + i / 7) as u8).collect();
        for (split, start) in [(CHUNK * 2 + 5, 8u64), (10, 8)] {
            let mut s = SectionSink::direct(start, false);
            let target = dir.path().join("t.tb5");
            s.write(&data[..split], &out, &target).unwrap();
            s.leave_tail(&out, &target).unwrap();
            assert!(s.direct_start().is_none());
            // What comes next overwrites the tail; the sink keeps its bytes.
            out.write_all_at(&vec![0xEE; data.len()], start).unwrap();
            s.write(&data[split..], &out, &target).unwrap();
            assert_eq!(s.len(), data.len() as u64);
            let (len, crc) = s.copy_to(&out, 4096, dir.path()).unwrap();
            assert_eq!((len, crc.finalize()), (data.len() as u64, crc32fast::hash(&data)));
            let mut back = vec![0u8; data.len()];
            out.read_exact_at(&mut back, 4096).unwrap();
            assert!(back == data, "split at {split}");
        }
    }

    #[test]
    fn direct_sink_writes_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempfile_in(dir.path()).unwrap();
        let mut s = SectionSink::direct(8, true);
        let data: Vec<u8> = (0..(CHUNK * 2 + 5)).map(|i| i as u8).collect();
        s.write(&data, &out, &dir.path().join("t.tb5")).unwrap();
        let (len, crc) = s.finish_direct(&out, dir.path()).unwrap();
        assert_eq!((len, crc), (data.len() as u64, crc32fast::hash(&data)));
        let mut back = vec![0u8; data.len()];
        out.read_exact_at(&mut back, 8).unwrap();
        assert!(back == data);
    }

    #[test]
    fn a_spill_file_that_cannot_be_made_is_named_by_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempfile_in(dir.path()).unwrap();
        // The folder is gone by the time the section spills.
        let target = dir.path().join("gone/t.tb5");
        let mut s = SectionSink::memory();
        let e = s.write(&vec![0u8; SPILL_MEMORY + 1], &out, &target).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: create spill file: No such file or directory (os error 2)", target.display())
        );
    }
}
