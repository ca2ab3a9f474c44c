//! The binary profile of the intrusive ELF sampler: its layouts (which
//! writer produced which bytes), reading one streamed piece at a time
//! (sample heads, blocks of threads, VM maps), and writing.
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

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What the PMU value of every sample measures (the header's magic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Magic {
    /// 0: a custom PMU value.
    Custom,
    /// 1: current, in amperes.
    Current,
    /// 2: voltage, in volts.
    Voltage,
    /// 3: power, in watts.
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

/// Which writer's layout a profile has (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Layout {
    /// The seed-era writer: 32-byte header, samples, maps at the end.
    Seed,
    /// The current writer: 36-byte header, timed samples with PMU data, maps at the end.
    Head,
    /// The oldest writer (`intrvelf`): 32-byte header, maps, samples with 12-byte threads.
    Old,
    /// The seed README's text: 32-byte header, maps, samples with 20-byte threads.
    Readme,
}

impl Layout {
    /// Every layout, in the order detection tries them.
    pub const ALL: [Layout; 4] = [Layout::Head, Layout::Seed, Layout::Readme, Layout::Old];

    /// The name `--layout` takes.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Seed => "seed",
            Layout::Head => "head",
            Layout::Old => "old",
            Layout::Readme => "readme",
        }
    }

    /// From [`Layout::name`].
    pub fn from_name(s: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == s)
    }

    /// Bytes of the header (without maps).
    pub fn header_size(self) -> u64 {
        if self == Layout::Head {
            36
        } else {
            32
        }
    }

    /// Whether the VM maps follow the samples (else they follow the header).
    pub fn maps_at_end(self) -> bool {
        matches!(self, Layout::Seed | Layout::Head)
    }

    /// Bytes of one thread record.
    pub fn thread_size(self) -> u64 {
        if self == Layout::Old {
            12
        } else {
            20
        }
    }

    /// Whether samples carry their own time.
    pub fn timed(self) -> bool {
        self == Layout::Head
    }

    /// Whether threads carry their cputime.
    pub fn has_cputime(self) -> bool {
        self != Layout::Old
    }
}

/// Byte order of a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Little-endian (x86, most ARM).
    Little,
    /// Big-endian.
    Big,
}

impl Endian {
    /// `le` or `be`.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "le",
            Endian::Big => "be",
        }
    }

    /// From [`Endian::name`].
    pub fn from_name(s: &str) -> Option<Endian> {
        match s {
            "le" => Some(Endian::Little),
            "be" => Some(Endian::Big),
            _ => None,
        }
    }

    fn u32(self, b: &[u8]) -> u32 {
        let a: [u8; 4] = b[..4].try_into().unwrap_or_default();
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    fn u64(self, b: &[u8]) -> u64 {
        let a: [u8; 8] = b[..8].try_into().unwrap_or_default();
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }

    fn put32(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    fn put64(self, v: u64) -> [u8; 8] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
}

/// A profile's layout, byte order and PMU-data size: all it takes to
/// read or write its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// The layout.
    pub layout: Layout,
    /// The byte order.
    pub endian: Endian,
    /// Bytes of PMU data per sample (8, the f64 value, for every layout
    /// but [`Layout::Head`], which says in its header).
    pub pmu_size: u32,
}

impl Format {
    /// A little-endian profile of `layout` with an 8-byte PMU value.
    pub fn new(layout: Layout) -> Format {
        Format { layout, endian: Endian::Little, pmu_size: 8 }
    }

    /// Bytes of a sample before its threads.
    pub fn sample_head_size(&self) -> u64 {
        if self.layout.timed() {
            8 + u64::from(self.pmu_size) + 4
        } else {
            12
        }
    }

    /// Bytes of the header plus, for maps-first layouts, `maps` maps.
    pub fn data_start(&self, maps: u64) -> u64 {
        self.layout.header_size() + if self.layout.maps_at_end() { 0 } else { maps.saturating_mul(MAP_SIZE) }
    }
}

/// Bytes of a VM map record.
pub const MAP_SIZE: u64 = 272;
/// Threads handed out per [`ProfileReader::threads`] call: what bounds
/// the reader's memory whatever a sample claims.
pub const THREAD_BLOCK: usize = 4096;
/// Largest PMU-data size read: a header claiming more is rejected rather
/// than allocated for.
pub const MAX_PMU_SIZE: u32 = 1 << 16;
/// Largest map count accepted when the input's size is unknown
/// (compressed or piped). Linux's default `vm.max_map_count` is 65530 and
/// the sampler keeps only executable file-backed maps, so real profiles
/// are far below it.
pub const MAX_MAPS_UNKNOWN_SIZE: u64 = 1 << 20;
/// Linux's largest thread id (`PID_MAX_LIMIT`): detection takes a thread
/// record with a tid of 0 or above this as a sign of a wrong layout.
pub const MAX_TID: u32 = 1 << 22;

/// One VM map of the profiled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmMap {
    /// Start address (of the executable segment, not the ELF load base).
    pub address: u64,
    /// Size in bytes (the sampler's tools take `address + size` as inside).
    pub size: u64,
    /// The label (a basename for the current writer), without its NUL.
    pub label: String,
}

/// The header as a profile holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileHeader {
    /// What the samples' PMU values are.
    pub magic: Magic,
    /// Wall time of the run, microseconds.
    pub wall_us: u64,
    /// The sampler's own overhead (time the target was stopped), microseconds.
    pub latency_us: u64,
    /// Samples the header announces.
    pub samples: u64,
    /// VM maps the header announces.
    pub maps: u64,
    /// The header is all zeros: a sampler killed before it wrote it.
    pub killed: bool,
}

/// The header of a [`Layout::Readme`] profile with its maps, as
/// [`write_header`] writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// What the samples' PMU values are.
    pub magic: Magic,
    /// Wall time of the run, microseconds.
    pub wall_time: u64,
    /// The sampler's overhead (latency), microseconds.
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
    /// The thread's cumulative CPU time in nanoseconds (0 in [`Layout::Old`]).
    pub cputime: u64,
}

/// One [`Layout::Readme`] sample, as [`write_sample`] writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// The PMU value (current, voltage, power, or custom).
    pub value: f64,
    /// The threads.
    pub threads: Vec<ThreadSample>,
}

/// A sample of any layout, whole (for writers and tests).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FullSample {
    /// CLOCK_REALTIME microseconds ([`Layout::Head`] only; ignored otherwise).
    pub time_us: u64,
    /// The PMU data: for 8-byte PMU data the value's bits little-endian
    /// (byte order is applied when written), otherwise the raw bytes.
    pub pmu: Vec<u8>,
    /// The threads.
    pub threads: Vec<ThreadSample>,
}

impl FullSample {
    /// A sample whose PMU data is the f64 `value`.
    pub fn with_value(time_us: u64, value: f64, threads: Vec<ThreadSample>) -> FullSample {
        FullSample { time_us, pmu: value.to_le_bytes().to_vec(), threads }
    }
}

/// The part of a sample before its threads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleHead {
    /// CLOCK_REALTIME microseconds (timed layouts only).
    pub time_us: Option<u64>,
    /// The PMU data, as in [`FullSample::pmu`].
    pub pmu: Vec<u8>,
    /// Threads the sample announces.
    pub threads: u32,
}

impl SampleHead {
    /// The PMU data as an f64, when it is 8 bytes.
    pub fn value(&self) -> Option<f64> {
        <[u8; 8]>::try_from(self.pmu.as_slice()).ok().map(f64::from_le_bytes)
    }
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

/// Bytes of the decompressed or piped input looked at before deciding
/// the layout; an input shorter than this has a known size.
pub const PROBE_BYTES: usize = 1 << 20;

/// An opened profile: its first bytes (up to [`PROBE_BYTES`]), the rest of
/// the stream, and what is known of its size.
pub struct Opened {
    /// The first bytes.
    pub prefix: Vec<u8>,
    /// Everything after `prefix`.
    pub rest: Box<dyn Read>,
    /// Whether the input was bzip2.
    pub compressed: bool,
    /// The (decompressed) size, when known: a plain file, or an input
    /// that ended within `prefix`.
    pub size: Option<u64>,
    /// A plain file that can be opened again for detection.
    pub seekable: Option<PathBuf>,
}

/// Opens a profile file (`-`: standard input), decompressing bzip2 when the
/// content starts with the bzip2 magic (`BZh1`-`BZh9`), and reads its
/// first bytes.
pub fn open(path: &Path) -> Result<Opened, ProfileError> {
    let err = |what: String| ProfileError { file: path.to_owned(), offset: 0, sample: None, what };
    let stdin = path.as_os_str() == "-";
    let (raw, mut size): (Box<dyn Read>, Option<u64>) = if stdin {
        (Box::new(io::stdin()), None)
    } else {
        let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot open: {e}")))?;
        if meta.is_dir() {
            return Err(err("is a directory, not a profile".into()));
        }
        let f = File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
        (Box::new(f), meta.is_file().then_some(meta.len()))
    };
    let mut buf = BufReader::with_capacity(1 << 20, raw);
    let head = buf.fill_buf().map_err(|e| err(format!("cannot read: {e}")))?;
    let compressed = head.len() >= 4 && &head[..3] == b"BZh" && (b'1'..=b'9').contains(&head[3]);
    let mut rest: Box<dyn Read> = if compressed {
        size = None;
        Box::new(BufReader::with_capacity(1 << 20, bzip2::read::MultiBzDecoder::new(buf)))
    } else {
        Box::new(buf)
    };
    let mut prefix = Vec::with_capacity(PROBE_BYTES.min(size.unwrap_or(PROBE_BYTES as u64) as usize));
    (&mut rest).take(PROBE_BYTES as u64).read_to_end(&mut prefix).map_err(|e| err(format!("cannot read: {e}")))?;
    if prefix.len() < PROBE_BYTES {
        size = Some(prefix.len() as u64);
    }
    let seekable = (!compressed && !stdin && size.is_some()).then(|| path.to_owned());
    Ok(Opened { prefix, rest, compressed, size, seekable })
}

/// Random access to the bytes of a profile, for detection.
trait Probe {
    /// Fills `buf` from `at`; returns how many bytes there were.
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> io::Result<usize>;
}

struct PrefixProbe<'a>(&'a [u8]);

impl Probe for PrefixProbe<'_> {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(at).unwrap_or(usize::MAX).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

/// A file read through a window, so that a forward walk costs one read per window.
struct FileProbe {
    file: File,
    window: Vec<u8>,
    start: u64,
}

impl Probe for FileProbe {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        let end = self.start + self.window.len() as u64;
        if at < self.start || at + buf.len() as u64 > end {
            self.file.seek(SeekFrom::Start(at))?;
            self.window.resize(1 << 16, 0);
            let n = read_full(&mut self.file, &mut self.window)?;
            self.window.truncate(n);
            self.start = at;
        }
        let off = (at - self.start) as usize;
        let n = buf.len().min(self.window.len().saturating_sub(off));
        buf[..n].copy_from_slice(&self.window[off..off + n]);
        Ok(n)
    }
}

/// How a profile was recognised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    /// Layout, byte order, PMU-data size.
    pub format: Format,
    /// The header.
    pub header: ProfileHeader,
    /// Other layouts that fit as well (when `--layout` chose).
    pub also: Vec<Format>,
}

/// Samples walked per candidate before taking a layout as fitting (all
/// of them when two candidates are left).
const WALK: u64 = 10_000;

/// Decides the layout and byte order of a profile from its bytes: each
/// layout's header fields are checked against the size (when known), its
/// maps parsed, and its samples walked. `forced` picks among several that
/// fit (and is checked against the bytes too).
pub fn detect(opened: &Opened, file: &Path, forced: Option<Layout>) -> Result<Detected, ProfileError> {
    let err = |offset: u64, what: String| ProfileError { file: file.to_owned(), offset, sample: None, what };
    let p = &opened.prefix;
    if p.is_empty() {
        return Err(err(0, "empty file: no profile header".into()));
    }
    if p.len() < 32 {
        return Err(err(p.len() as u64, format!("the profile ends inside its 32-byte header (at byte {})", p.len())));
    }
    let le = u32::from_le_bytes(p[0..4].try_into().unwrap_or_default());
    let be = u32::from_be_bytes(p[0..4].try_into().unwrap_or_default());
    if le > 3 && be > 3 {
        return Err(err(
            0,
            format!("magic number {le:#x} is not a sampler profile's (0 custom, 1 current, 2 voltage, 3 power)"),
        ));
    }
    let mut probe: Box<dyn Probe> = match &opened.seekable {
        Some(path) => Box::new(FileProbe {
            file: File::open(path).map_err(|e| err(0, format!("cannot open: {e}")))?,
            window: Vec::new(),
            start: 0,
        }),
        None => Box::new(PrefixProbe(p)),
    };
    let size = opened.size;
    let layouts: Vec<Layout> = Layout::ALL.to_vec();
    let mut fits: Vec<(Detected, bool, u64)> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    let killed = p[..32].iter().all(|&b| b == 0);
    for layout in layouts {
        for endian in [Endian::Little, Endian::Big] {
            let what = format!("{} {}", layout.name(), endian.name());
            let r = if killed {
                fit_killed(&mut *probe, p, size, layout, endian)
            } else {
                fit(&mut *probe, p, size, layout, endian, WALK)
            };
            match r {
                Ok(f) => fits.push(f),
                Err(why) => reasons.push(format!("as {what}: {why}")),
            }
        }
    }
    // A walk that stopped early fits weakly; when an exact fit exists, or
    // two remain, walk them completely.
    if fits.len() > 1 && !killed {
        let mut full = Vec::new();
        for (d, exact, explained) in fits.drain(..) {
            if exact {
                full.push((d, true, explained));
            } else {
                match fit(&mut *probe, p, size, d.format.layout, d.format.endian, u64::MAX) {
                    Ok(f) => full.push(f),
                    Err(why) => {
                        reasons.push(format!("as {} {}: {why}", d.format.layout.name(), d.format.endian.name()))
                    }
                }
            }
        }
        fits = full;
    }
    // A wrong layout soon meets a sample it cannot read and takes the rest
    // for a cut-off end: the layout that explains the most bytes wins.
    let most = fits.iter().map(|f| f.2).max().unwrap_or(0);
    fits.retain(|f| f.2 == most);
    if fits.is_empty() {
        let at = if killed { 32 } else { 0 };
        let head = if killed {
            "the header is all zeros (a sampler killed before writing it), and no layout's samples follow it"
        } else {
            "no sampler profile layout fits these bytes"
        };
        return Err(err(at, format!("{head}: {}", reasons.join("; "))));
    }
    let mut chosen: Vec<Detected> = fits.into_iter().map(|(d, _, _)| d).collect();
    // Killed runs: both byte orders can fit an all-zero header; prefer the one that fit.
    if let Some(l) = forced {
        let others: Vec<Format> = chosen.iter().filter(|d| d.format.layout != l).map(|d| d.format).collect();
        let Some(mut d) = chosen.into_iter().find(|d| d.format.layout == l) else {
            let fit: Vec<&str> = others.iter().map(|f| f.layout.name()).collect();
            return Err(err(
                0,
                format!(
                    "the bytes do not fit the {} layout ({}){}",
                    l.name(),
                    reasons
                        .iter()
                        .filter(|r| r.starts_with(&format!("as {} ", l.name())))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; "),
                    if fit.is_empty() { String::new() } else { format!("; they fit {}", fit.join(", ")) }
                ),
            ));
        };
        d.also = others;
        return Ok(d);
    }
    if chosen.len() > 1 {
        let names: Vec<String> =
            chosen.iter().map(|d| format!("{} ({})", d.format.layout.name(), d.format.endian.name())).collect();
        return Err(err(
            0,
            format!("the bytes fit more than one layout: {}; say which with --layout", names.join(" and ")),
        ));
    }
    Ok(chosen.remove(0))
}

fn header_of(p: &[u8], layout: Layout, e: Endian) -> Result<(ProfileHeader, u32), String> {
    let magic_value = e.u32(&p[0..4]);
    let magic = Magic::from_value(magic_value).ok_or_else(|| format!("magic {magic_value:#x} is not 0-3"))?;
    let (pmu, maps) = if layout == Layout::Head {
        if p.len() < 36 {
            return Err("the file ends inside the 36-byte header".into());
        }
        (e.u32(&p[28..32]), e.u32(&p[32..36]))
    } else {
        (8, e.u32(&p[28..32]))
    };
    let h = ProfileHeader {
        magic,
        wall_us: e.u64(&p[4..12]),
        latency_us: e.u64(&p[12..20]),
        samples: e.u64(&p[20..28]),
        maps: u64::from(maps),
        killed: false,
    };
    Ok((h, pmu))
}

/// Reads and checks one map record.
fn parse_map(rec: &[u8], e: Endian, i: u64, n: u64) -> Result<VmMap, (u64, String)> {
    let raw = &rec[16..MAP_SIZE as usize];
    let end = raw
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| (16, format!("the label of VM map {i} of {n} has no NUL terminator within its 256 bytes")))?;
    let label = std::str::from_utf8(&raw[..end])
        .map_err(|x| (16 + x.valid_up_to() as u64, format!("the label of VM map {i} of {n} is not UTF-8")))?;
    Ok(VmMap { address: e.u64(&rec[0..8]), size: e.u64(&rec[8..16]), label: label.to_owned() })
}

fn check_maps(probe: &mut dyn Probe, at: u64, n: u64, e: Endian, limit: u64) -> Result<(), String> {
    let mut rec = [0u8; MAP_SIZE as usize];
    for i in 0..n.min(limit) {
        let got = probe.read_at(at + i * MAP_SIZE, &mut rec).map_err(|x| format!("cannot read: {x}"))?;
        if got < rec.len() {
            // Beyond what can be looked at without a size: not a misfit.
            return Ok(());
        }
        parse_map(&rec, e, i, n).map_err(|(o, w)| format!("byte {}: {w}", at + i * MAP_SIZE + o))?;
    }
    Ok(())
}

/// Where a walk over the samples stopped: samples walked, the offset
/// reached, and whether the data ran out inside a sample (`cut`), exactly
/// at the end of the sample data (`ended`), or beyond what can be looked
/// at without a size (neither); and threads seen.
struct Walk {
    samples: u64,
    offset: u64,
    cut: bool,
    ended: bool,
    threads: u64,
    times: Option<(u64, u64)>,
}

/// Walks samples from `at` to `end` (the end of the sample data when
/// known), at most `limit` of them or the `announced` count. Fails on a
/// sample that cannot be there or an implausible thread.
fn walk(
    probe: &mut dyn Probe,
    fmt: &Format,
    mut at: u64,
    end: Option<u64>,
    announced: Option<u64>,
    limit: u64,
) -> Result<Walk, String> {
    let hs = fmt.sample_head_size() as usize;
    let ts = fmt.layout.thread_size();
    let mut head = vec![0u8; hs];
    let mut th = [0u8; 20];
    let mut w = Walk { samples: 0, offset: at, cut: false, ended: false, threads: 0, times: None };
    let mut last_time = 0u64;
    while announced.is_none_or(|n| w.samples < n) && w.samples < limit {
        if end == Some(at) {
            w.ended = true;
            return Ok(w);
        }
        let got = probe.read_at(at, &mut head).map_err(|x| format!("cannot read: {x}"))?;
        if got < hs {
            // Without a size, the walk ends where the bytes to look at do.
            w.cut = end.is_some() && got > 0;
            return Ok(w);
        }
        let n = u64::from(fmt.endian.u32(&head[hs - 4..]));
        if fmt.layout.timed() {
            let t = fmt.endian.u64(&head[..8]);
            if w.samples > 0 && t < last_time {
                return Err(format!("byte {at}: sample {} goes back in time", w.samples));
            }
            last_time = t;
            w.times = Some((w.times.map_or(t, |x| x.0), t));
        }
        let body = n * ts;
        if let Some(end) = end {
            if at + hs as u64 + body > end {
                if announced.is_some() && fmt.layout.maps_at_end() {
                    return Err(format!(
                        "byte {at}: sample {} claims {n} threads, more than the {} bytes left before the maps",
                        w.samples,
                        end - at - hs as u64
                    ));
                }
                w.cut = true;
                w.offset = at;
                return Ok(w);
            }
        }
        // Look at the first threads: a wrong layout or byte order shows in their tids.
        for k in 0..n.min(4) {
            let got = probe.read_at(at + hs as u64 + k * ts, &mut th[..ts as usize]).map_err(|x| x.to_string())?;
            if got < ts as usize {
                break;
            }
            let tid = fmt.endian.u32(&th[..4]);
            if tid == 0 || tid > MAX_TID {
                return Err(format!(
                    "byte {}: thread {k} of sample {} has tid {tid}, not a Linux thread id",
                    at + hs as u64 + k * ts,
                    w.samples
                ));
            }
        }
        at += hs as u64 + body;
        w.samples += 1;
        w.threads += n;
        w.offset = at;
    }
    Ok(w)
}

/// Whether `layout` in byte order `e` fits a profile with a header; the
/// result says whether the fit is exact (every sample walked) and how many
/// bytes of the profile it explains.
fn fit(
    probe: &mut dyn Probe,
    p: &[u8],
    size: Option<u64>,
    layout: Layout,
    e: Endian,
    limit: u64,
) -> Result<(Detected, bool, u64), String> {
    let (header, pmu_size) = header_of(p, layout, e)?;
    if pmu_size > MAX_PMU_SIZE {
        return Err(format!("{pmu_size} bytes of PMU data per sample is more than {MAX_PMU_SIZE}"));
    }
    let fmt = Format { layout, endian: e, pmu_size };
    let maps_bytes = header.maps * MAP_SIZE;
    let hs = layout.header_size();
    match size {
        Some(s) if hs + maps_bytes > s => {
            return Err(format!(
                "{} VM maps of 272 bytes cannot fit in the {s}-byte file (at most {})",
                header.maps,
                s.saturating_sub(hs) / MAP_SIZE
            ))
        }
        None if header.maps > MAX_MAPS_UNKNOWN_SIZE => {
            return Err(format!(
                "{} VM maps is more than the {MAX_MAPS_UNKNOWN_SIZE} accepted when the size is unknown (compressed or piped)",
                header.maps
            ))
        }
        _ => {}
    }
    let (maps_at, start, end) = if layout.maps_at_end() {
        let end = size.map(|s| s - maps_bytes);
        (end, hs, end)
    } else {
        (Some(hs), hs + maps_bytes, size)
    };
    if let Some(m) = maps_at {
        check_maps(probe, m, header.maps, e, limit)?;
    }
    let w = walk(probe, &fmt, start, end, Some(header.samples), limit)?;
    let exact = if layout.maps_at_end() {
        if w.cut {
            return Err(format!("the data ends inside sample {}", w.samples));
        }
        if end.is_some() && w.samples == header.samples && Some(w.offset) != end {
            return Err(format!(
                "the {} samples end at byte {} but the maps start at byte {}",
                header.samples,
                w.offset,
                end.unwrap_or_default()
            ));
        }
        (w.samples == header.samples, if w.samples == header.samples { size.unwrap_or(w.offset) } else { w.offset })
    } else {
        if w.samples == header.samples && size.is_some_and(|s| w.offset < s) {
            return Err(format!(
                "the {} samples end at byte {} but the file goes on to byte {}",
                header.samples,
                w.offset,
                size.unwrap_or_default()
            ));
        }
        (w.samples == header.samples || w.cut || w.ended, w.offset)
    };
    Ok((Detected { format: fmt, header, also: Vec::new() }, exact.0, exact.1))
}

/// CLOCK_REALTIME microseconds from 2000 to 2100: what a killed current
/// writer's first sample time must look like.
const PLAUSIBLE_US: std::ops::Range<u64> = 946_684_800_000_000..4_102_444_800_000_000;

/// Whether a killed run (all-zero header) of `layout` fits; the PMU-data
/// size of the current layout, zero in such a header, is found from the
/// samples: the first has no threads, and the next time follows.
fn fit_killed(
    probe: &mut dyn Probe,
    p: &[u8],
    size: Option<u64>,
    layout: Layout,
    e: Endian,
) -> Result<(Detected, bool, u64), String> {
    if !layout.maps_at_end() {
        return Err("this writer wrote its header before the samples".into());
    }
    let hs = layout.header_size();
    if p.len() < hs as usize || p[..hs as usize].iter().any(|&b| b != 0) {
        return Err(format!("the first {hs} bytes are not all zero"));
    }
    let header = ProfileHeader { magic: Magic::Custom, wall_us: 0, latency_us: 0, samples: 0, maps: 0, killed: true };
    let pmu_size = if layout == Layout::Head {
        let t = |at: u64, probe: &mut dyn Probe| -> Option<u64> {
            let mut b = [0u8; 8];
            (probe.read_at(at, &mut b).ok()? == 8).then(|| e.u64(&b))
        };
        let t0 = t(hs, probe).filter(|t| PLAUSIBLE_US.contains(t)).ok_or("no plausible time in the first sample")?;
        let mut found = None;
        for k in (0..=1024u64).step_by(4) {
            let mut n = [0u8; 4];
            if probe.read_at(hs + 8 + k, &mut n).map_err(|x| x.to_string())? < 4 {
                break;
            }
            let Some(t1) = t(hs + 12 + k, probe) else { break };
            if e.u32(&n) == 0 && (t0..t0 + 3_600_000_000).contains(&t1) {
                found = Some(k as u32);
                break;
            }
        }
        found.ok_or("no PMU-data size makes the first sample (0 threads) end where a second begins")?
    } else {
        8
    };
    let fmt = Format { layout, endian: e, pmu_size };
    let w = walk(probe, &fmt, hs, size, None, u64::MAX)?;
    if w.threads == 0 {
        return Err("not one whole sample with threads follows the header".into());
    }
    if let Some((a, b)) = w.times {
        if !PLAUSIBLE_US.contains(&a) || !PLAUSIBLE_US.contains(&b) {
            return Err("sample times are not CLOCK_REALTIME microseconds".into());
        }
    }
    Ok((Detected { format: fmt, header, also: Vec::new() }, true, w.offset))
}

/// What [`ProfileReader::next_sample`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A sample's head was read; its threads follow ([`ProfileReader::threads`]).
    Sample,
    /// The samples ended where they should.
    End,
    /// The data ended inside a sample (a killed or cut run): `bytes` of it were there.
    Partial {
        /// Bytes of the incomplete sample.
        bytes: u64,
    },
}

/// What [`ProfileReader::threads`] handed out.
#[derive(Debug, PartialEq, Eq)]
pub enum Threads {
    /// A block; more of this sample follow.
    More,
    /// The sample's last block: the sample is whole.
    Done,
    /// The data ended inside this sample: `bytes` of it were there.
    Cut {
        /// Bytes of the incomplete sample.
        bytes: u64,
    },
}

/// Reads a profile piece by piece: maps (before or after the samples, as
/// the layout says), sample heads, and each sample's threads in blocks.
pub struct ProfileReader<R> {
    input: R,
    file: PathBuf,
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
    /// says. `size` is the input's size when known.
    pub fn new(input: R, file: &Path, size: Option<u64>, detected: &Detected) -> Self {
        let f = detected.format;
        let h = detected.header;
        let samples_end = if f.layout.maps_at_end() { size.map(|s| s - h.maps * MAP_SIZE) } else { size };
        ProfileReader {
            input,
            file: file.to_owned(),
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

    fn err(&self, offset: u64, what: String) -> ProfileError {
        ProfileError { file: self.file.clone(), offset, sample: None, what }
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
                            end - self.offset
                        ),
                    ));
                }
                // The data ends inside this sample: nothing of it is kept, so
                // nothing of it needs reading.
                let bytes = end - start;
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

    fn sample_err(&self, offset: u64, what: String) -> ProfileError {
        ProfileError { file: self.file.clone(), offset, sample: Some(self.read), what }
    }

    fn io_err(&self, e: io::Error) -> ProfileError {
        self.sample_err(self.offset, format!("cannot read: {e}"))
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
