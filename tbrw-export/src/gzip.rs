//! Gzip compression on a second thread, for the exports whose format is
//! gzip (pprof, the Firefox Profiler).
//!
//! The export serializes on the calling thread while a worker thread
//! compresses what it has serialized so far: on a machine with a spare core
//! the two overlap, and a large profile's export takes about the longer of
//! the two instead of their sum. The output is one ordinary gzip member,
//! byte for byte what a [`flate2::write::GzEncoder`] at the same level
//! writes, so every reader of the format reads it.
//!
//! The caller's writer stays on the calling thread (it need not be `Send`):
//! the worker hands compressed bytes back, and they are written out between
//! two chunks and at [`PipedGzip::finish`]. Memory is bounded by the chunks
//! in flight (a few MiB). Holds no knowledge of any format; imports only
//! `std` and `flate2`.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Bytes serialized before a chunk goes to the worker.
const CHUNK: usize = 1 << 20;
/// Chunks waiting for the worker before the serializer waits for it.
const IN_FLIGHT: usize = 4;

/// A `Write` that gzip-compresses on a worker thread into `out`.
pub(crate) struct PipedGzip<'w> {
    out: &'w mut dyn Write,
    chunk: Vec<u8>,
    to_worker: Option<SyncSender<Vec<u8>>>,
    from_worker: Receiver<Vec<u8>>,
    worker: Option<JoinHandle<io::Result<()>>>,
    level: Compression,
}

impl<'w> PipedGzip<'w> {
    /// Starts the worker; `level` is the gzip level of the one member.
    pub(crate) fn new(out: &'w mut dyn Write, level: Compression) -> Self {
        let (to_worker, chunks) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (compressed, from_worker) = mpsc::channel::<Vec<u8>>();
        let worker = std::thread::Builder::new().name("gzip".into()).spawn(move || compress(chunks, compressed, level));
        match worker {
            Ok(worker) => PipedGzip {
                out,
                chunk: Vec::with_capacity(CHUNK),
                to_worker: Some(to_worker),
                from_worker,
                worker: Some(worker),
                level,
            },
            // No thread to be had: compress inline, as one thread would.
            Err(_) => {
                let (_, from_worker) = mpsc::channel();
                PipedGzip { out, chunk: Vec::new(), to_worker: None, from_worker, worker: None, level }
            }
        }
    }

    /// Sends the chunk serialized so far to the worker (or compresses it
    /// here when there is no worker), then writes out what is compressed.
    fn send_chunk(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        match &self.to_worker {
            Some(tx) => {
                if tx.send(chunk).is_err() {
                    // The worker stopped: its error is what finish reports.
                    return Err(self.worker_failed());
                }
            }
            None => compress_whole(chunk, self.out, self.level)?,
        }
        self.drain()
    }

    /// Writes out whatever the worker has compressed so far.
    fn drain(&mut self) -> io::Result<()> {
        while let Ok(bytes) = self.from_worker.try_recv() {
            self.out.write_all(&bytes)?;
        }
        Ok(())
    }

    /// The worker's own error, once it has stopped.
    fn worker_failed(&mut self) -> io::Error {
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            _ => io::Error::other("the gzip worker stopped"),
        }
    }

    /// Compresses the rest, ends the gzip member and writes it all out.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        if self.to_worker.is_none() {
            // Inline mode: the whole stream is compressed at once here.
            let chunk = std::mem::take(&mut self.chunk);
            return compress_whole(chunk, self.out, self.level);
        }
        if !self.chunk.is_empty() {
            self.send_chunk()?;
        }
        drop(self.to_worker.take());
        // The worker ends after the last chunk; everything it sent arrives
        // before the channel closes.
        while let Ok(bytes) = self.from_worker.recv() {
            self.out.write_all(&bytes)?;
        }
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(result)) => result?,
            Some(Err(_)) => return Err(io::Error::other("the gzip worker panicked")),
            None => {}
        }
        self.out.flush()
    }
}

/// Without a worker thread (spawning failed), the stream is collected and
/// compressed whole at the end: rare, and still correct.
fn compress_whole(chunk: Vec<u8>, out: &mut dyn Write, level: Compression) -> io::Result<()> {
    let mut gz = GzEncoder::new(out, level);
    gz.write_all(&chunk)?;
    gz.finish()?;
    Ok(())
}

/// The worker: compresses chunks in order into one gzip member and sends
/// the compressed bytes back as they come.
fn compress(chunks: Receiver<Vec<u8>>, compressed: mpsc::Sender<Vec<u8>>, level: Compression) -> io::Result<()> {
    let mut gz = GzEncoder::new(Vec::with_capacity(CHUNK), level);
    for chunk in chunks {
        gz.write_all(&chunk)?;
        let bytes = std::mem::take(gz.get_mut());
        if !bytes.is_empty() && compressed.send(bytes).is_err() {
            return Ok(()); // the serializer gave up; nothing to write to
        }
    }
    let tail = gz.finish()?;
    let _ = compressed.send(tail);
    Ok(())
}

impl Write for PipedGzip<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.to_worker.is_none() {
            self.chunk.extend_from_slice(buf);
            return Ok(buf.len());
        }
        let room = CHUNK - self.chunk.len();
        let n = buf.len().min(room);
        self.chunk.extend_from_slice(&buf[..n]);
        if self.chunk.len() == CHUNK {
            self.send_chunk()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        // A flush mid-stream would cost a sync point in the member; the
        // bytes are all written at finish.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
        out
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8 ^ (i >> 12) as u8).collect()
    }

    #[test]
    fn the_output_is_the_one_member_a_gz_encoder_writes() {
        for len in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 12_345] {
            let input = sample(len);
            let mut piped = Vec::new();
            let mut w = PipedGzip::new(&mut piped, Compression::fast());
            // Odd write sizes, as a serializer's.
            for part in input.chunks(7919) {
                w.write_all(part).unwrap();
            }
            w.finish().unwrap();
            let mut plain = GzEncoder::new(Vec::new(), Compression::fast());
            plain.write_all(&input).unwrap();
            assert_eq!(piped, plain.finish().unwrap(), "{len} bytes");
            assert_eq!(gunzip(&piped), input);
        }
    }

    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::from(io::ErrorKind::StorageFull));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_output_is_an_error_of_its_own_kind() {
        let input = sample(8 * CHUNK);
        let mut out = Full(100_000);
        let mut w = PipedGzip::new(&mut out, Compression::fast());
        let err = input
            .chunks(65_536)
            .try_for_each(|part| w.write_all(part))
            .err()
            .or_else(|| w.finish().err())
            .expect("a full disk is an error");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }
}
