//! The ELF sampler's profile format as data: what the header says
//! ([`Magic`], [`ProfileHeader`], the legacy [`Header`]), which writer's
//! bytes they are ([`Layout`], [`Endian`], [`Format`]), a VM map, a
//! sample and its threads, the limits a reader keeps to, and the error of
//! a profile that cannot be read. A leaf of the codec: detection
//! (`detect.rs`) and the reader and writers (`codec.rs`) take these from
//! here; it imports neither.

use std::fmt;
use std::io::{self, Read};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

    pub(crate) fn u32(self, b: &[u8]) -> u32 {
        let a: [u8; 4] = b[..4].try_into().unwrap_or_default();
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    pub(crate) fn u64(self, b: &[u8]) -> u64 {
        let a: [u8; 8] = b[..8].try_into().unwrap_or_default();
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }

    pub(crate) fn put32(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    pub(crate) fn put64(self, v: u64) -> [u8; 8] {
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
/// Threads handed out per [`ProfileReader::threads`](crate::codec::ProfileReader::threads) call: what bounds
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
/// [`write_header`](crate::codec::write_header) writes it.
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

/// One [`Layout::Readme`] sample, as [`write_sample`](crate::codec::write_sample) writes it.
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

/// A profile that cannot be read: which input, which byte (of the
/// decompressed profile when it is compressed), what is wrong.
#[derive(Debug)]
pub struct ProfileError {
    /// The input's name, as the caller gave it.
    pub input: String,
    /// Byte offset in the (decompressed) profile.
    pub offset: u64,
    /// The sample, when the error is in one.
    pub sample: Option<u64>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.input)?;
        if let Some(s) = self.sample {
            write!(f, "sample {s}, ")?;
        }
        write!(f, "byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for ProfileError {}

/// What [`ProfileReader::next_sample`](crate::codec::ProfileReader::next_sample) found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A sample's head was read; its threads follow ([`ProfileReader::threads`](crate::codec::ProfileReader::threads)).
    Sample,
    /// The samples ended where they should.
    End,
    /// The data ended inside a sample (a killed or cut run): `bytes` of it were there.
    Partial {
        /// Bytes of the incomplete sample.
        bytes: u64,
    },
}

/// What [`ProfileReader::threads`](crate::codec::ProfileReader::threads) handed out.
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

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
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
