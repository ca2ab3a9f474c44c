//! Gzip compression on worker threads, for the exports whose format is
//! gzip (pprof, the Firefox Profiler).
//!
//! The export serializes on the calling thread while workers compress what
//! it has serialized so far, each a 1 MiB block of its own (pigz's way):
//! on a machine with spare cores the serializing and the compressing
//! overlap, and the compressing is spread over the cores, so a large
//! profile's export no longer waits for one thread's deflate after its
//! JSON is written. Each block is raw deflate ended by a sync flush
//! (byte-aligned, not final); the blocks, in order, then an empty final
//! block, make the one deflate stream of one ordinary gzip member, whose
//! CRC-32 is the blocks' CRCs combined. Every reader of the format reads
//! it; the bytes do not depend on the number of workers. Each block starts
//! with an empty window: the output is a few hundred bytes per MiB larger
//! than one stream's.
//!
//! The caller's writer stays on the calling thread (it need not be `Send`):
//! the workers hand compressed blocks back, and they are written out in
//! order between two blocks and at [`PipedGzip::finish`]. Memory is bounded
//! by the blocks in flight (a few MiB per worker). Holds no knowledge of
//! any format; imports only `std`, `flate2` and `crc32fast`.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use flate2::write::DeflateEncoder;
use flate2::Compression;

/// The deflate level of the exports' gzip (pprof, Firefox), samply's: with
/// the zlib-rs backend as fast as level 1 on a large profile, where level 1
/// (its "quick" strategy) is half as large again; 12 % smaller than
/// miniz_oxide's level 1 on a Firefox profile, as large on pprof's.
pub(crate) const LEVEL: u32 = 2;

/// Bytes serialized before a block goes to the workers.
const CHUNK: usize = 1 << 20;
/// The most worker threads (gzip's fastest level outruns a serializer on
/// a few cores).
const MAX_WORKERS: usize = 4;
/// Blocks sent and not yet written out, per worker, before the serializer
/// waits for the oldest.
const IN_FLIGHT_PER_WORKER: usize = 2;

/// A block compressed: its deflate bytes (sync-flushed), and the CRC-32
/// state of its uncompressed bytes.
struct Block {
    deflated: Vec<u8>,
    crc: crc32fast::Hasher,
}

/// A `Write` that gzip-compresses on worker threads into `out`.
pub(crate) struct PipedGzip<'w> {
    out: &'w mut dyn Write,
    level: Compression,
    chunk: Vec<u8>,
    to_workers: Option<SyncSender<(u64, Vec<u8>)>>,
    from_workers: Receiver<(u64, io::Result<Block>)>,
    workers: Vec<JoinHandle<()>>,
    /// Blocks sent so far (the next block's number).
    sent: u64,
    /// The next block to write out, and those come back before it.
    next: u64,
    waiting: BTreeMap<u64, io::Result<Block>>,
    /// The CRC-32 and length of what was written out.
    crc: crc32fast::Hasher,
    /// Whether the gzip header is out.
    started: bool,
}

impl<'w> PipedGzip<'w> {
    /// Starts the workers; `level` is the deflate level of every block.
    pub(crate) fn new(out: &'w mut dyn Write, level: Compression) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::with_workers(out, level, cores.clamp(1, MAX_WORKERS))
    }

    /// The same with `workers` threads (0: every block compressed on the
    /// calling thread, as when no thread can be had).
    fn with_workers(out: &'w mut dyn Write, level: Compression, workers: usize) -> Self {
        let (to_workers, blocks) = mpsc::sync_channel::<(u64, Vec<u8>)>(workers * IN_FLIGHT_PER_WORKER);
        let (compressed, from_workers) = mpsc::channel();
        let blocks = Arc::new(Mutex::new(blocks));
        let mut handles = Vec::new();
        for k in 0..workers {
            let (blocks, compressed) = (Arc::clone(&blocks), compressed.clone());
            let spawned =
                std::thread::Builder::new().name(format!("gzip-{k}")).spawn(move || work(&blocks, &compressed, level));
            match spawned {
                Ok(h) => handles.push(h),
                // Fewer threads than asked: those there are do the work.
                Err(_) => break,
            }
        }
        PipedGzip {
            out,
            level,
            chunk: Vec::with_capacity(CHUNK),
            to_workers: (!handles.is_empty()).then_some(to_workers),
            from_workers,
            workers: handles,
            sent: 0,
            next: 0,
            waiting: BTreeMap::new(),
            crc: crc32fast::Hasher::new(),
            started: false,
        }
    }

    /// Blocks sent and not yet written out at most.
    fn in_flight_limit(&self) -> u64 {
        (self.workers.len().max(1) * IN_FLIGHT_PER_WORKER) as u64
    }

    /// Sends the block serialized so far to the workers (or compresses it
    /// here without them), then writes out what is compressed, waiting for
    /// the oldest block while too many are in flight.
    fn send_chunk(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        let number = self.sent;
        self.sent += 1;
        match &self.to_workers {
            Some(tx) => {
                if tx.send((number, chunk)).is_err() {
                    return Err(io::Error::other("the gzip workers stopped"));
                }
            }
            None => {
                let block = deflate_block(&chunk, self.level);
                self.waiting.insert(number, block);
            }
        }
        self.write_ready(self.in_flight_limit())
    }

    /// Writes out the blocks in order as they come back, waiting until at
    /// most `in_flight` sent blocks are not written out.
    fn write_ready(&mut self, in_flight: u64) -> io::Result<()> {
        loop {
            while let Ok((k, block)) = self.from_workers.try_recv() {
                self.waiting.insert(k, block);
            }
            while let Some(block) = self.waiting.remove(&self.next) {
                self.write_block(block?)?;
                self.next += 1;
            }
            if self.sent - self.next <= in_flight {
                return Ok(());
            }
            match self.from_workers.recv() {
                Ok((k, block)) => {
                    self.waiting.insert(k, block);
                }
                Err(_) => return Err(io::Error::other("the gzip workers stopped")),
            }
        }
    }

    /// Writes the header (first) and a compressed block.
    fn write_block(&mut self, block: Block) -> io::Result<()> {
        self.start()?;
        self.out.write_all(&block.deflated)?;
        self.crc.combine(&block.crc);
        Ok(())
    }

    /// The gzip header, as flate2's `GzEncoder` writes it: no name, no
    /// time, the extra flags of the level, an unknown OS.
    fn start(&mut self) -> io::Result<()> {
        if !self.started {
            let xfl = match self.level.level() {
                0..=1 => 4,
                9 => 2,
                _ => 0,
            };
            self.out.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 255])?;
            self.started = true;
        }
        Ok(())
    }

    /// Compresses the rest, ends the gzip member and writes it all out.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        if !self.chunk.is_empty() {
            self.send_chunk()?;
        }
        self.write_ready(0)?;
        drop(self.to_workers.take());
        for h in std::mem::take(&mut self.workers) {
            if h.join().is_err() {
                return Err(io::Error::other("a gzip worker panicked"));
            }
        }
        self.start()?;
        // The final block: fixed Huffman codes, no data (BFINAL 1, BTYPE 01,
        // end of block), then the trailer.
        self.out.write_all(&[0x03, 0x00])?;
        self.out.write_all(&self.crc.clone().finalize().to_le_bytes())?;
        self.out.write_all(&(self.crc.total_len() as u32).to_le_bytes())?;
        self.out.flush()
    }
}

/// A worker: compresses blocks until the serializer is done.
fn work(blocks: &Mutex<Receiver<(u64, Vec<u8>)>>, compressed: &Sender<(u64, io::Result<Block>)>, level: Compression) {
    loop {
        // The lock is held only to take the next block.
        let next = match blocks.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((k, chunk)) = next else { return };
        if compressed.send((k, deflate_block(&chunk, level))).is_err() {
            return; // the serializer gave up
        }
    }
}

/// `chunk` as raw deflate ended by a sync flush, and its CRC-32.
fn deflate_block(chunk: &[u8], level: Compression) -> io::Result<Block> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(chunk);
    let mut enc = DeflateEncoder::new(Vec::with_capacity(chunk.len() / 2 + 64), level);
    enc.write_all(chunk)?;
    // A sync flush: the block ends byte-aligned, not final.
    enc.flush()?;
    let deflated = std::mem::take(enc.get_mut());
    Ok(Block { deflated, crc })
}

impl Write for PipedGzip<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.chunk.len();
        let n = buf.len().min(room);
        self.chunk.extend_from_slice(&buf[..n]);
        if self.chunk.len() == CHUNK {
            self.send_chunk()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        // A flush mid-stream would cost a block; the bytes are all written
        // at finish.
        Ok(())
    }
}

#[cfg(test)]
#[path = "gzip_tests.rs"]
mod tests;
