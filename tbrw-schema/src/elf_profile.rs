//! The TB5 stream an ELF-profile import writes (`tbrw import sampler`),
//! which the way back (`tbrw export sampler`) reads: the record's
//! descriptor ([`RecordShape`]), the PMU value's field type per magic
//! ([`magic_of`], [`value_field`]), the time field's names, and what the
//! stream's user-defined section keeps of the profile ([`Meta`]). The
//! profile format itself is `tbrw-elf-profile`'s. Imports `descriptor`,
//! `fields`, `module_notes`.

use std::collections::HashMap;

use tbrw::{desc_subtype, desc_type, DescEntry};
use tbrw_elf_profile::{Endian, Format, Layout, Magic, ProfileHeader};

use crate::descriptor::field;
use crate::fields;
use crate::module_notes::{hex, unhex};

/// Samples without threads whose time and PMU data are kept (for the
/// byte-identical way back); the current writer makes one, the first.
pub const MAX_EMPTY_KEPT: usize = 1 << 16;

/// The descriptor type and name of a profile's 8-byte PMU value of `magic`.
pub fn value_field(magic: Magic) -> (u16, &'static str) {
    match magic {
        Magic::Custom => (fields::CUSTOM_VALUE, "custom"),
        Magic::Current => (fields::CURRENT, "current"),
        Magic::Voltage => (fields::VOLTAGE, "voltage"),
        Magic::Power => (desc_type::POWER, "power"),
    }
}

/// The magic of a record field type: the PMU value field each magic writes.
pub fn magic_of(t: u16) -> Option<Magic> {
    Some(match t {
        fields::CUSTOM_VALUE => Magic::Custom,
        fields::CURRENT => Magic::Current,
        fields::VOLTAGE => Magic::Voltage,
        desc_type::POWER => Magic::Power,
        _ => return None,
    })
}

/// How the records of an import get their nanosecond time stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSource {
    /// The current writer's per-sample CLOCK_REALTIME (UTC).
    Realtime,
    /// Sample i at i × wall time / announced samples, from the run's start.
    Interpolated,
    /// Neither (a killed seed-era run: no wall time, no sample count).
    None,
}

impl TimeSource {
    /// The word the stream's section says it with.
    pub fn name(self) -> &'static str {
        match self {
            TimeSource::Realtime => "realtime",
            TimeSource::Interpolated => "interpolated",
            TimeSource::None => "none",
        }
    }
}

/// Name of the time field of a [`TimeSource::Realtime`] import.
pub const TIME_UTC: &str = "time_realtime_utc";
/// Name of the time field of a [`TimeSource::Interpolated`] import: it
/// names no clock, because none would be true.
pub const TIME_INTERPOLATED: &str = "time_since_run_start_interpolated";

/// Which fields a record has (they depend on the profile).
#[derive(Clone, Copy, Debug)]
pub struct RecordShape {
    /// How records get their time stamp.
    pub time: TimeSource,
    /// Whether records hold the thread's CPU time and its delta.
    pub cputime: bool,
    /// What the PMU values are.
    pub magic: Magic,
    /// Bytes of PMU data per sample (8: one value).
    pub pmu_size: u32,
    /// Whether records hold a power figure (current × `--volts`).
    pub power: bool,
}

impl RecordShape {
    /// The stream's descriptor.
    pub fn descriptor(&self) -> Vec<DescEntry> {
        let mut d = Vec::new();
        match self.time {
            TimeSource::Realtime => d.push(field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, TIME_UTC)),
            TimeSource::Interpolated => {
                d.push(field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, TIME_INTERPOLATED))
            }
            TimeSource::None => {}
        }
        d.push(field(desc_type::TIME_STAMP, desc_subtype::TS_SAMPLE_COUNT, 8, "sample"));
        d.push(field(desc_type::IP, desc_subtype::NONE, 8, "pc"));
        d.push(field(desc_type::PID, desc_subtype::NONE, 4, "pid"));
        d.push(field(desc_type::TID, desc_subtype::NONE, 4, "tid"));
        if self.cputime {
            d.push(field(fields::CPUTIME, desc_subtype::NONE, 8, "cputime_ns"));
            d.push(field(fields::CPUTIME_DELTA, desc_subtype::NONE, 8, "cputime_delta_ns"));
        }
        if self.pmu_size == 8 {
            let (vt, vn) = value_field(self.magic);
            d.push(field(vt, desc_subtype::NONE, 8, vn));
        } else if self.pmu_size > 0 {
            d.push(field(fields::PMU_DATA, desc_subtype::NONE, self.pmu_size, "pmu_data"));
        }
        if self.power {
            d.push(field(desc_type::POWER, desc_subtype::NONE, 8, "power_w"));
        }
        d
    }
}

/// The descriptor of a stream imported from a current-writer profile
/// with an 8-byte PMU value (the most complete record).
pub fn descriptor(magic: Magic) -> Vec<DescEntry> {
    RecordShape { time: TimeSource::Realtime, cputime: true, magic, pmu_size: 8, power: false }.descriptor()
}

/// A sample without threads, kept for the way back.
#[derive(Clone, Debug, PartialEq)]
pub struct Empty {
    /// The sample's index.
    pub index: u64,
    /// Its time, µs.
    pub time_us: u64,
    /// Its PMU data.
    pub pmu: Vec<u8>,
}

/// What the import records in the stream's user-defined section, as one
/// line of `key=value` words, then one `empty=` line per sample without
/// threads, then a note for symbolizers.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// The profile's layout, byte order and PMU-data size.
    pub format: Format,
    /// Its header.
    pub header: ProfileHeader,
    /// Whole samples imported.
    pub samples: u64,
    /// Samples announced but not there.
    pub dropped: u64,
    /// How records got their time.
    pub time: TimeSource,
    /// `--volts`, when given.
    pub volts: Option<f64>,
    /// Samples without threads (kept for the way back).
    pub empties: Vec<Empty>,
    /// Samples without threads past [`MAX_EMPTY_KEPT`].
    pub empties_lost: u64,
}

impl Meta {
    /// The section's text.
    pub fn text(&self) -> String {
        let h = &self.header;
        let mut s = format!(
            "sampler layout={} endian={} pmu_size={} magic={} wall_us={} latency_us={} samples_announced={} maps={} killed={} samples={} dropped={} time={} volts={} empties_not_kept={}\n",
            self.format.layout.name(),
            self.format.endian.name(),
            self.format.pmu_size,
            h.magic.value(),
            h.wall_us,
            h.latency_us,
            h.samples,
            h.maps,
            u8::from(h.killed),
            self.samples,
            self.dropped,
            self.time.name(),
            self.volts.map_or_else(|| "-".to_owned(), |v| v.to_string()),
            self.empties_lost,
        );
        for e in &self.empties {
            s.push_str(&format!("empty={},{},{}\n", e.index, e.time_us, hex(&e.pmu)));
        }
        s.push_str(
            "# modules: load_address is the start of the executable PT_LOAD segment and length is the map size + 1 \
             (the sampler's ends are inclusive); ELF virtual address = pc - load_address + p_vaddr of that segment\n",
        );
        s
    }

    /// A stream's user-defined section read back (`None`: not an import's).
    pub fn parse(text: &str) -> Option<Meta> {
        let mut lines = text.lines();
        let first = lines.next()?.strip_prefix("sampler ")?;
        let kv: HashMap<&str, &str> = first.split_whitespace().filter_map(|w| w.split_once('=')).collect();
        let num = |k: &str| kv.get(k).and_then(|v| v.parse::<u64>().ok());
        let layout = Layout::from_name(kv.get("layout")?)?;
        let format = Format {
            layout,
            endian: Endian::from_name(kv.get("endian")?)?,
            pmu_size: u32::try_from(num("pmu_size")?).ok()?,
        };
        let header = ProfileHeader {
            magic: Magic::from_value(u32::try_from(num("magic")?).ok()?)?,
            wall_us: num("wall_us")?,
            latency_us: num("latency_us")?,
            samples: num("samples_announced")?,
            maps: num("maps")?,
            killed: num("killed")? == 1,
        };
        let empties = lines
            .filter_map(|l| l.strip_prefix("empty="))
            .map(|e| {
                let mut p = e.split(',');
                Some(Empty { index: p.next()?.parse().ok()?, time_us: p.next()?.parse().ok()?, pmu: unhex(p.next()?)? })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Meta {
            format,
            header,
            samples: num("samples")?,
            dropped: num("dropped").unwrap_or(0),
            time: TimeSource::None,
            volts: kv.get("volts").and_then(|v| v.parse().ok()),
            empties,
            empties_lost: num("empties_not_kept").unwrap_or(0),
        })
    }
}
