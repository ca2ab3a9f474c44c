//! The binary profile of the intrusive ELF sampler: its layouts (which
//! writer produced which bytes), reading one streamed piece at a time
//! (sample heads, blocks of threads, VM maps), and writing. Which layout
//! a file has is decided in `detect.rs`.
//!
//! The layouts, all packed, in the byte order of the machine that wrote
//! them (docs/IMPORT.md has the full table):
//!
//! * [`Layout::Head`], the current writer: a 36-byte header (u32 magic, u64
//!   wall time, u64 latency, u64 sample count, u32 PMU-data size, u32 map
//!   count), samples (u64 CLOCK_REALTIME microseconds, the PMU data, u32
//!   thread count, threads of u32 tid, u64 pc, u64 cputime), then the maps
//!   (u64 address, u64 size, char\[256\] label).
//! * [`Layout::Seed`], the seed-era writer: a 32-byte header (no PMU-data
//!   size), samples of an f64 PMU value, the thread count and 20-byte
//!   threads, then the maps.
//! * [`Layout::Old`], the oldest writer (`intrvelf`): the 32-byte header,
//!   the maps, then samples with 12-byte threads (tid, pc; no cputime).
//! * [`Layout::Readme`], what the seed README's text shows: the 32-byte
//!   header, the maps, then samples with 20-byte threads.
//!
//! Which layout and byte order a profile has is found from its bytes
//! ([`detect`]), never from its name. Nothing here allocates by a count
//! read from the input: threads come in blocks of at most
//! [`THREAD_BLOCK`], maps one at a time, and counts are checked against the
//! bytes left whenever the size is known. This module does not know TB5.

use std::io::{self, Read, Write};

use crate::detect::parse_map;
pub use crate::detect::{detect, detect_seekable, is_bzip2, open, Detected, Opened, PROBE_BYTES, SAY_WHICH_LAYOUT};
pub use crate::format::*;

/// Reads a profile piece by piece: maps (before or after the samples, as
/// the layout says), sample heads, and each sample's threads in blocks.
pub struct ProfileReader<R> {
    input: R,
    name: String,
    offset: u64,
    format: Format,
    header: ProfileHeader,
    /// The end of the sample data when known.
    samples_end: Option<u64>,
    read: u64,
    maps_read: u64,
    threads_left: u64,
    sample_start: u64,
    block: Vec<u8>,
}

impl<R: Read> ProfileReader<R> {
    /// A reader of `input` (positioned after the header) as `detected`
    /// says; `name` names it in errors. `size` is the input's size when known.
    pub fn new(input: R, name: &str, size: Option<u64>, detected: &Detected) -> Self {
        let f = detected.format;
        let h = detected.header;
        let samples_end = if f.layout.maps_at_end() { size.map(|s| s - h.maps * MAP_SIZE) } else { size };
        ProfileReader {
            input,
            name: name.to_owned(),
            offset: f.layout.header_size(),
            format: f,
            header: h,
            samples_end,
            read: 0,
            maps_read: 0,
            threads_left: 0,
            sample_start: 0,
            block: Vec::new(),
        }
    }

    /// The header.
    pub fn header(&self) -> &ProfileHeader {
        &self.header
    }

    /// The format.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Whole samples read so far.
    pub fn samples_read(&self) -> u64 {
        self.read
    }

    pub(crate) fn err(&self, offset: u64, what: String) -> ProfileError {
        ProfileError { input: self.name.clone(), offset, sample: None, what }
    }

    /// The next VM map, or `None` when all the header announces are read.
    /// Call before the samples for maps-first layouts, after them otherwise.
    pub fn next_map(&mut self) -> Result<Option<VmMap>, ProfileError> {
        let n = self.header.maps;
        if self.maps_read == n {
            return Ok(None);
        }
        let mut rec = [0u8; MAP_SIZE as usize];
        let got =
            read_full(&mut self.input, &mut rec).map_err(|e| self.err(self.offset, format!("cannot read: {e}")))?;
        if got < rec.len() {
            return Err(
                self.err(self.offset + got as u64, format!("the profile ends inside VM map {} of {n}", self.maps_read))
            );
        }
        let m =
            parse_map(&rec, self.format.endian, self.maps_read, n).map_err(|(o, w)| self.err(self.offset + o, w))?;
        self.offset += MAP_SIZE;
        self.maps_read += 1;
        Ok(Some(m))
    }

    /// Reads the next sample's head into `s`. Threads of the previous
    /// sample not taken are skipped.
    pub fn next_sample(&mut self, s: &mut SampleHead) -> Result<Next, ProfileError> {
        let mut sink = Vec::new();
        while self.threads_left > 0 {
            if let Threads::Cut { bytes } = self.threads(&mut sink)? {
                return Ok(Next::Partial { bytes });
            }
        }
        let complete = !self.header.killed && self.format.layout.maps_at_end();
        if complete && self.read == self.header.samples {
            return Ok(Next::End);
        }
        if self.samples_end == Some(self.offset) {
            return Ok(Next::End);
        }
        let start = self.offset;
        let hs = self.format.sample_head_size() as usize;
        self.block.resize(hs, 0);
        let got = read_full(&mut self.input, &mut self.block).map_err(|e| self.io_err(e))?;
        self.offset += got as u64;
        if got == 0 && !complete {
            return Ok(Next::End);
        }
        if got < hs {
            if complete {
                return Err(self.sample_err(start, format!("the profile ends inside sample {}'s head", self.read)));
            }
            return Ok(Next::Partial { bytes: got as u64 });
        }
        let e = self.format.endian;
        let b = &self.block;
        if self.format.layout.timed() {
            s.time_us = Some(e.u64(&b[..8]));
            s.pmu.clear();
            s.pmu.extend_from_slice(&b[8..hs - 4]);
        } else {
            s.time_us = None;
            s.pmu.clear();
            s.pmu.extend_from_slice(&b[..8]);
        }
        if s.pmu.len() == 8 && e == Endian::Big {
            s.pmu.reverse();
        }
        s.threads = e.u32(&b[hs - 4..]);
        let body = u64::from(s.threads) * self.format.layout.thread_size();
        if let Some(end) = self.samples_end {
            if self.offset + body > end {
                if complete {
                    return Err(self.sample_err(
                        start,
                        format!(
                            "sample {} claims {} threads, more than the {} bytes left before the maps",
                            self.read,
                            s.threads,
                            // The head itself may have run past the end (into the maps).
                            end.saturating_sub(self.offset)
                        ),
                    ));
                }
                // The data ends inside this sample: nothing of it is kept, so
                // nothing of it needs reading.
                let bytes = end.saturating_sub(start);
                self.offset = end;
                return Ok(Next::Partial { bytes });
            }
        }
        self.threads_left = u64::from(s.threads);
        self.sample_start = start;
        if self.threads_left == 0 {
            self.read += 1;
        }
        Ok(Next::Sample)
    }

    /// The next block (at most [`THREAD_BLOCK`]) of the current sample's
    /// threads, into `out` (cleared first).
    pub fn threads(&mut self, out: &mut Vec<ThreadSample>) -> Result<Threads, ProfileError> {
        out.clear();
        if self.threads_left == 0 {
            return Ok(Threads::Done);
        }
        let ts = self.format.layout.thread_size() as usize;
        let k = (self.threads_left as usize).min(THREAD_BLOCK);
        self.block.resize(k * ts, 0);
        let got = read_full(&mut self.input, &mut self.block).map_err(|e| self.io_err(e))?;
        self.offset += got as u64;
        if got < k * ts {
            self.threads_left = 0;
            let bytes = self.offset - self.sample_start;
            if !self.header.killed && self.format.layout.maps_at_end() {
                return Err(self.sample_err(self.offset, format!("the profile ends inside sample {}", self.read)));
            }
            return Ok(Threads::Cut { bytes });
        }
        let e = self.format.endian;
        let cputime = self.format.layout.has_cputime();
        out.extend(self.block.chunks_exact(ts).map(|t| ThreadSample {
            tid: e.u32(&t[0..4]),
            pc: e.u64(&t[4..12]),
            cputime: if cputime { e.u64(&t[12..20]) } else { 0 },
        }));
        self.threads_left -= k as u64;
        if self.threads_left == 0 {
            self.read += 1;
            Ok(Threads::Done)
        } else {
            Ok(Threads::More)
        }
    }

    pub(crate) fn sample_err(&self, offset: u64, what: String) -> ProfileError {
        ProfileError { input: self.name.clone(), offset, sample: Some(self.read), what }
    }

    pub(crate) fn io_err(&self, e: io::Error) -> ProfileError {
        self.sample_err(self.offset, format!("cannot read: {e}"))
    }
}

/// The header's bytes (32 or 36 as the layout says).
pub fn encode_header(f: &Format, h: &ProfileHeader) -> io::Result<Vec<u8>> {
    let e = f.endian;
    let mut out = Vec::with_capacity(36);
    if h.killed {
        out.resize(f.layout.header_size() as usize, 0);
        return Ok(out);
    }
    out.extend_from_slice(&e.put32(h.magic.value()));
    out.extend_from_slice(&e.put64(h.wall_us));
    out.extend_from_slice(&e.put64(h.latency_us));
    out.extend_from_slice(&e.put64(h.samples));
    if f.layout == Layout::Head {
        out.extend_from_slice(&e.put32(f.pmu_size));
    }
    let n = u32::try_from(h.maps).map_err(|_| io::Error::other("more than 2^32 VM maps"))?;
    out.extend_from_slice(&e.put32(n));
    Ok(out)
}

/// Writes one map. Labels longer than 255 bytes or holding a NUL are an error.
pub fn write_map(out: &mut dyn Write, f: &Format, m: &VmMap) -> io::Result<()> {
    out.write_all(&f.endian.put64(m.address))?;
    out.write_all(&f.endian.put64(m.size))?;
    let mut label = [0u8; 256];
    let b = m.label.as_bytes();
    if b.len() > 255 || b.contains(&0) {
        return Err(io::Error::other(format!("label {:?} does not fit 255 bytes without NUL", m.label)));
    }
    label[..b.len()].copy_from_slice(b);
    out.write_all(&label)
}

/// Writes a sample's head: time (timed layouts), PMU data, thread count.
pub fn write_sample_head(out: &mut dyn Write, f: &Format, time_us: u64, pmu: &[u8], threads: u32) -> io::Result<()> {
    if pmu.len() != f.pmu_size as usize {
        return Err(io::Error::other(format!("{} bytes of PMU data where the profile has {}", pmu.len(), f.pmu_size)));
    }
    if f.layout.timed() {
        out.write_all(&f.endian.put64(time_us))?;
    }
    if pmu.len() == 8 {
        let v = u64::from_le_bytes(pmu.try_into().unwrap_or_default());
        out.write_all(&f.endian.put64(v))?;
    } else {
        out.write_all(pmu)?;
    }
    out.write_all(&f.endian.put32(threads))
}

/// Writes one thread record (12 or 20 bytes as the layout says).
pub fn write_thread(out: &mut dyn Write, f: &Format, t: &ThreadSample) -> io::Result<()> {
    out.write_all(&f.endian.put32(t.tid))?;
    out.write_all(&f.endian.put64(t.pc))?;
    if f.layout.has_cputime() {
        out.write_all(&f.endian.put64(t.cputime))?;
    }
    Ok(())
}

/// Writes a whole profile of any format: header, maps and samples where
/// the layout puts them. The header's map count is `maps.len()`.
pub fn write_profile(
    out: &mut dyn Write,
    f: &Format,
    h: &ProfileHeader,
    maps: &[VmMap],
    samples: &[FullSample],
) -> io::Result<()> {
    let h = ProfileHeader { maps: if h.killed { 0 } else { maps.len() as u64 }, ..*h };
    out.write_all(&encode_header(f, &h)?)?;
    let write_maps = |out: &mut dyn Write| -> io::Result<()> {
        if h.killed {
            return Ok(());
        }
        maps.iter().try_for_each(|m| write_map(out, f, m))
    };
    if !f.layout.maps_at_end() {
        write_maps(out)?;
    }
    for s in samples {
        let n = u32::try_from(s.threads.len()).map_err(|_| io::Error::other("more than 2^32 threads"))?;
        write_sample_head(out, f, s.time_us, &s.pmu, n)?;
        for t in &s.threads {
            write_thread(out, f, t)?;
        }
    }
    if f.layout.maps_at_end() {
        write_maps(out)?;
    }
    Ok(())
}

/// Writes a [`Layout::Readme`] profile's header and maps (little-endian).
pub fn write_header(out: &mut dyn Write, h: &Header) -> io::Result<()> {
    let f = Format::new(Layout::Readme);
    let ph = ProfileHeader {
        magic: h.magic,
        wall_us: h.wall_time,
        latency_us: h.cpu_time,
        samples: h.samples,
        maps: h.maps.len() as u64,
        killed: false,
    };
    out.write_all(&encode_header(&f, &ph)?)?;
    h.maps.iter().try_for_each(|m| write_map(out, &f, m))
}

/// Writes one [`Layout::Readme`] sample (little-endian).
pub fn write_sample(out: &mut dyn Write, s: &Sample) -> io::Result<()> {
    let f = Format::new(Layout::Readme);
    write_sample_head(out, &f, 0, &s.value.to_le_bytes(), s.threads.len() as u32)?;
    s.threads.iter().try_for_each(|t| write_thread(out, &f, t))
}
