//! The binary profile of the intrusive ELF sampler (`sampler -o FILE`):
//! reading, streamed sample by sample, and writing.
//!
//! Layout (little-endian, packed): a header (u32 magic, u64 wall time,
//! u64 cpu time, u64 number of samples, u32 number of VM maps, then per map
//! u64 address, u64 size, 256-byte NUL-terminated label), then per sample a
//! f64 PMU value, a u32 thread count and per thread u32 tid, u64 pc, u64
//! cputime. The magic says what the PMU value is. Profiles may be
//! bzip2-compressed; that is recognised by content.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// What the PMU value of every sample measures (the header's magic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Magic {
    /// 0: a custom PMU value.
    Custom,
    /// 1: current.
    Current,
    /// 2: voltage.
    Voltage,
    /// 3: power.
    Power,
}

impl Magic {
    /// The header value.
    pub fn value(self) -> u32 {
        match self {
            Magic::Custom => 0,
            Magic::Current => 1,
            Magic::Voltage => 2,
            Magic::Power => 3,
        }
    }

    /// From the header value.
    pub fn from_value(v: u32) -> Option<Magic> {
        Some(match v {
            0 => Magic::Custom,
            1 => Magic::Current,
            2 => Magic::Voltage,
            3 => Magic::Power,
            _ => return None,
        })
    }

    /// The value's name: `custom`, `current`, `voltage`, `power`.
    pub fn name(self) -> &'static str {
        match self {
            Magic::Custom => "custom",
            Magic::Current => "current",
            Magic::Voltage => "voltage",
            Magic::Power => "power",
        }
    }
}

/// One VM map of the profiled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmMap {
    /// Start address.
    pub address: u64,
    /// Size in bytes.
    pub size: u64,
    /// The label (a path, or a name like `[heap]`), without its NUL.
    pub label: String,
}

/// The profile header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// What the samples' PMU values are.
    pub magic: Magic,
    /// Wall time of the run, as the sampler wrote it.
    pub wall_time: u64,
    /// Time spent in the profiler (latency), as the sampler wrote it.
    pub cpu_time: u64,
    /// Samples the header announces.
    pub samples: u64,
    /// The VM maps.
    pub maps: Vec<VmMap>,
}

/// One thread's part of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadSample {
    /// Thread id.
    pub tid: u32,
    /// Program counter.
    pub pc: u64,
    /// The thread's CPU time.
    pub cputime: u64,
}

/// One sample: the PMU value and every thread's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// The PMU value (current, voltage, power, or custom).
    pub value: f64,
    /// The threads.
    pub threads: Vec<ThreadSample>,
}

/// Bytes of a header with `maps` VM maps.
pub fn header_size(maps: u64) -> u64 {
    32 + maps * 272
}

/// A profile that cannot be read: which file, which byte (of the
/// decompressed profile when it is compressed), what is wrong.
#[derive(Debug)]
pub struct ProfileError {
    /// The file (`-` for standard input).
    pub file: PathBuf,
    /// Byte offset in the (decompressed) profile.
    pub offset: u64,
    /// The sample, when the error is in one.
    pub sample: Option<u64>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        if let Some(s) = self.sample {
            write!(f, "sample {s}, ")?;
        }
        write!(f, "byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for ProfileError {}

/// Opens a profile file (`-`: standard input), decompressing bzip2 when the
/// content starts with the bzip2 magic (`BZh1`-`BZh9`).
pub fn open(path: &Path) -> Result<(Box<dyn Read>, bool), ProfileError> {
    let err = |what: String| ProfileError { file: path.to_owned(), offset: 0, sample: None, what };
    let raw: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot open: {e}")))?;
        if meta.is_dir() {
            return Err(err("is a directory, not a profile".into()));
        }
        Box::new(std::fs::File::open(path).map_err(|e| err(format!("cannot open: {e}")))?)
    };
    let mut buf = BufReader::with_capacity(1 << 20, raw);
    let head = buf.fill_buf().map_err(|e| err(format!("cannot read: {e}")))?;
    let compressed = head.len() >= 4 && &head[..3] == b"BZh" && (b'1'..=b'9').contains(&head[3]);
    if compressed {
        Ok((Box::new(BufReader::with_capacity(1 << 20, bzip2::read::MultiBzDecoder::new(buf))), true))
    } else {
        Ok((Box::new(buf), false))
    }
}

/// Reads a profile sample by sample.
pub struct ProfileReader<R> {
    input: R,
    file: PathBuf,
    offset: u64,
    header: Header,
    read: u64,
    /// Reused buffer for thread records.
    block: Vec<u8>,
}

/// How reading a sample ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A whole sample was read.
    Sample,
    /// The profile ended cleanly after the last whole sample.
    End,
    /// The profile ended inside a sample (a killed sampler): `bytes` of it were there.
    Partial {
        /// Bytes of the incomplete sample.
        bytes: u64,
    },
}

impl<R: Read> ProfileReader<R> {
    /// Reads and checks the header. `file` is what errors call the input;
    /// `size` is the input's size when known (it bounds the map count).
    pub fn new(mut input: R, file: &Path, size: Option<u64>) -> Result<Self, ProfileError> {
        let mut offset = 0u64;
        let err = |offset: u64, what: String| ProfileError { file: file.to_owned(), offset, sample: None, what };
        let mut fixed = [0u8; 32];
        let got = read_full(&mut input, &mut fixed).map_err(|e| err(0, format!("cannot read: {e}")))?;
        if got == 0 {
            return Err(err(0, "empty file: no profile header".into()));
        }
        if got < 32 {
            return Err(err(got as u64, format!("the profile ends inside its 32-byte header (at byte {got})")));
        }
        let u32_at = |o: usize| u32::from_le_bytes(fixed[o..o + 4].try_into().unwrap_or_default());
        let u64_at = |o: usize| u64::from_le_bytes(fixed[o..o + 8].try_into().unwrap_or_default());
        let magic_value = u32_at(0);
        let magic = Magic::from_value(magic_value).ok_or_else(|| {
            err(0, format!("magic number {magic_value:#x} is not a sampler profile's (0 custom, 1 current, 2 voltage, 3 power)"))
        })?;
        let (wall_time, cpu_time, samples) = (u64_at(4), u64_at(12), u64_at(20));
        let n_maps = u64::from(u32_at(28));
        offset += 32;
        if let Some(size) = size {
            if header_size(n_maps) > size {
                return Err(err(
                    28,
                    format!(
                        "{n_maps} VM maps of 272 bytes cannot fit in the {size}-byte file (at most {})",
                        size.saturating_sub(32) / 272
                    ),
                ));
            }
        }
        // Without a known size (compressed or piped input), maps are read one by one: an
        // impossible count fails at the end of the data instead of allocating for it.
        let mut maps = Vec::with_capacity(n_maps.min(4096) as usize);
        let mut rec = [0u8; 272];
        for i in 0..n_maps {
            let got = read_full(&mut input, &mut rec).map_err(|e| err(offset, format!("cannot read: {e}")))?;
            if got < 272 {
                return Err(err(offset + got as u64, format!("the profile ends inside VM map {i} of {n_maps}")));
            }
            let address = u64::from_le_bytes(rec[0..8].try_into().unwrap_or_default());
            let size = u64::from_le_bytes(rec[8..16].try_into().unwrap_or_default());
            let raw = &rec[16..272];
            let end = raw.iter().position(|&b| b == 0).ok_or_else(|| {
                err(offset + 16, format!("the label of VM map {i} has no NUL terminator within its 256 bytes"))
            })?;
            let label = std::str::from_utf8(&raw[..end])
                .map_err(|e| {
                    err(offset + 16 + e.valid_up_to() as u64, format!("the label of VM map {i} is not UTF-8"))
                })?
                .to_owned();
            maps.push(VmMap { address, size, label });
            offset += 272;
        }
        Ok(ProfileReader {
            input,
            file: file.to_owned(),
            offset,
            header: Header { magic, wall_time, cpu_time, samples, maps },
            read: 0,
            block: Vec::new(),
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Whole samples read so far.
    pub fn samples_read(&self) -> u64 {
        self.read
    }

    /// Reads the next sample into `s`.
    pub fn next_sample(&mut self, s: &mut Sample) -> Result<Next, ProfileError> {
        let start = self.offset;
        let mut head = [0u8; 12];
        let got = read_full(&mut self.input, &mut head).map_err(|e| self.io_err(e))?;
        if got == 0 {
            return Ok(Next::End);
        }
        if got < 12 {
            self.offset += got as u64;
            return Ok(Next::Partial { bytes: got as u64 });
        }
        s.value = f64::from_le_bytes(head[0..8].try_into().unwrap_or_default());
        let n = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
        self.offset += 12;
        s.threads.clear();
        // Thread records are read in blocks; a block is at most 4096 records, so a
        // garbage count in a torn sample allocates no more than that before the data runs out.
        let mut left = n as usize;
        while left > 0 {
            let k = left.min(4096);
            self.block.resize(k * 20, 0);
            let got = read_full(&mut self.input, &mut self.block).map_err(|e| self.io_err(e))?;
            self.offset += got as u64;
            if got < k * 20 {
                return Ok(Next::Partial { bytes: self.offset - start });
            }
            s.threads.extend(self.block.chunks_exact(20).map(|t| ThreadSample {
                tid: u32::from_le_bytes(t[0..4].try_into().unwrap_or_default()),
                pc: u64::from_le_bytes(t[4..12].try_into().unwrap_or_default()),
                cputime: u64::from_le_bytes(t[12..20].try_into().unwrap_or_default()),
            }));
            left -= k;
        }
        self.read += 1;
        Ok(Next::Sample)
    }

    fn io_err(&self, e: io::Error) -> ProfileError {
        ProfileError {
            file: self.file.clone(),
            offset: self.offset,
            sample: Some(self.read),
            what: format!("cannot read: {e}"),
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Writes a profile header. Labels longer than 255 bytes are an error.
pub fn write_header(out: &mut dyn Write, h: &Header) -> io::Result<()> {
    out.write_all(&h.magic.value().to_le_bytes())?;
    out.write_all(&h.wall_time.to_le_bytes())?;
    out.write_all(&h.cpu_time.to_le_bytes())?;
    out.write_all(&h.samples.to_le_bytes())?;
    let n = u32::try_from(h.maps.len()).map_err(|_| io::Error::other("more than 2^32 VM maps"))?;
    out.write_all(&n.to_le_bytes())?;
    for m in &h.maps {
        out.write_all(&m.address.to_le_bytes())?;
        out.write_all(&m.size.to_le_bytes())?;
        let mut label = [0u8; 256];
        let b = m.label.as_bytes();
        if b.len() > 255 || b.contains(&0) {
            return Err(io::Error::other(format!("label {:?} does not fit 255 bytes without NUL", m.label)));
        }
        label[..b.len()].copy_from_slice(b);
        out.write_all(&label)?;
    }
    Ok(())
}

/// Writes one sample.
pub fn write_sample(out: &mut dyn Write, s: &Sample) -> io::Result<()> {
    out.write_all(&s.value.to_le_bytes())?;
    out.write_all(&(s.threads.len() as u32).to_le_bytes())?;
    for t in &s.threads {
        out.write_all(&t.tid.to_le_bytes())?;
        out.write_all(&t.pc.to_le_bytes())?;
        out.write_all(&t.cputime.to_le_bytes())?;
    }
    Ok(())
}
