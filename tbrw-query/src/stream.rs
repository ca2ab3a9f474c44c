//! A stream's records read as samples: which fields the records have
//! (checked once against the record size, so no read goes past a record),
//! and the one reader of each: the instruction pointer, the time `--time`
//! filters on, the cpu, a perf period, the event, a tid or pid field, and
//! what a sample weighs. Also the stream's and the module table's lookups
//! every walk starts from. Imports the query and the error, nothing else
//! of the crate.

use std::collections::HashMap;

use tbrw::*;
use tbrw_schema::fields::{self, read_le};

use crate::error::{QueryError, WeightFields};
use crate::query::Weight;

/// Stream `n` of `file`, or an error naming the file and how many streams it has.
pub fn open_stream(file: &Tb5File, n: u32) -> Result<StreamReader<'_>, QueryError> {
    let count = file.stream_count();
    if n >= count {
        return Err(QueryError::NoStream { file: file.path().display().to_string(), stream: n, count });
    }
    Ok(file.stream(n)?)
}

/// The file's modules with their strings, in table order.
pub fn modules(file: &Tb5File) -> Result<Vec<Module>, QueryError> {
    Ok(match file.modules()? {
        Some(mt) => mt.iter().map(|m| file.resolve(m?)).collect::<Result<_>>()?,
        None => Vec::new(),
    })
}

/// `--module NAME`: per module of `modules`, whether its name or path is
/// `want`; `None` without the filter.
pub(crate) fn module_filter(modules: &[Module], want: Option<&str>) -> Option<Vec<bool>> {
    want.map(|want| {
        modules.iter().map(|m| m.name.as_deref() == Some(want) || m.path.as_deref() == Some(want)).collect()
    })
}

/// The records' time stamp: which field, and what its unit is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeField {
    /// The field's name in the descriptor (`tsc` for a legacy record's TSC).
    pub name: String,
    /// Nanoseconds (`SST_TS_NANOSECONDS`).
    pub nanos: bool,
    /// Nanoseconds since the Unix epoch (the name says `realtime` or `utc`).
    pub realtime: bool,
}

/// The time field of a stream's layout with its name and unit.
pub fn time_field(
    file: &Tb5File,
    s: &StreamReader<'_>,
    layout: &RecordLayout,
) -> Result<Option<TimeField>, QueryError> {
    if layout.legacy_pc_offset().is_some() && layout.tsc_offset().is_some() {
        return Ok(Some(TimeField { name: "tsc".into(), nanos: false, realtime: false }));
    }
    let Some(f) = layout.find(desc_type::TIME_STAMP, None).filter(|f| f.size == 4 || f.size == 8) else {
        return Ok(None);
    };
    let descs = s.descriptor()?.unwrap_or_default();
    let name =
        descs.get(f.entry).and_then(|d| file.string_opt(d.name).ok().flatten()).unwrap_or("time_stamp").to_owned();
    let nanos = f.subtype == desc_subtype::TS_NANOSECONDS;
    let lower = name.to_ascii_lowercase();
    let realtime = nanos && (lower.contains("realtime") || lower.contains("utc"));
    Ok(Some(TimeField { name, nanos, realtime }))
}

/// (offset, size) of the time `--time` filters on: a legacy sample's TSC,
/// else the first 4- or 8-byte time stamp field.
/// The format's rule ([`RecordLayout::time_at`]), which a data section's
/// time order flag is about.
pub fn time_at(layout: &RecordLayout) -> Option<(usize, usize)> {
    layout.time_at().map(|(at, size)| (at as usize, size as usize))
}

/// Where each field a walk reads lies in a record.
#[derive(Clone, Debug)]
pub struct SampleFields {
    /// Bytes per record.
    pub record_size: usize,
    legacy_pc: Option<usize>,
    ip: Option<(usize, usize)>,
    pid: Option<(usize, usize)>,
    tid: Option<usize>,
    time: Option<(usize, usize)>,
    cpu: Option<(usize, usize)>,
    period: Option<(usize, usize)>,
    event_id: Option<usize>,
    single_event: Option<u32>,
    /// An Intel record's `ST_DESCRIPTOR_ID` (8 bytes): the position of its
    /// event in the stream's events (`event_ids`), as VTune writes them.
    descriptor_id: Option<usize>,
    event_ids: Vec<u32>,
    cputime_delta: Option<usize>,
    cputime: Option<usize>,
    power: Option<usize>,
    value: Option<usize>,
    written: Option<usize>,
    /// The time field's name and unit.
    pub time_field: Option<TimeField>,
}

/// The first field of `layout` that does not lie inside `record_size`-byte
/// records, said as a damaged stream's message; `None` when each does.
/// Offsets and sizes come from the file: every reader of records checks
/// them once with this, so that no read goes past a record.
pub fn field_past_records(layout: &tbrw::RecordLayout, record_size: usize) -> Option<String> {
    layout.fields().iter().find(|f| f.offset as usize + f.size as usize > record_size).map(|f| {
        format!(
            "descriptor entry {} ({}) at byte {} with {} bytes lies past the end of the {record_size}-byte records",
            f.entry,
            fields::name(f.desc_type).unwrap_or("a field"),
            f.offset,
            f.size
        )
    })
}

impl SampleFields {
    /// The fields of stream `n`, each checked against the record size.
    pub fn of(file: &Tb5File, n: u32) -> Result<SampleFields, QueryError> {
        let s = open_stream(file, n)?;
        let name = || file.path().display().to_string();
        let layout = s.layout()?.ok_or_else(|| QueryError::Unsupported {
            file: name(),
            stream: n,
            what: "it has no data descriptor".into(),
        })?;
        let record_size = match s.data()? {
            Some(d) => d.record_size(),
            None => layout.record_size() as usize,
        };
        if let Some(what) = field_past_records(&layout, record_size) {
            return Err(QueryError::Damaged { file: name(), stream: n, what });
        }
        let find = |t: u16, sizes: &[u32]| {
            layout.find(t, None).filter(|f| sizes.contains(&f.size)).map(|f| (f.offset as usize, f.size as usize))
        };
        let legacy_pc = layout.legacy_pc_offset().map(|x| x as usize);
        let events = s.events()?.unwrap_or_default();
        Ok(SampleFields {
            record_size,
            legacy_pc,
            ip: find(desc_type::IP, &[4, 8]),
            pid: find(desc_type::PID, &[4, 8]),
            tid: find(desc_type::TID, &[4]).map(|f| f.0),
            time: time_at(&layout),
            cpu: find(desc_type::PROCESSOR_NUMBER, &[1, 2, 4, 8]),
            period: find(fields::PERIOD, &[4, 8]),
            event_id: find(fields::EVENT_ID, &[4]).map(|f| f.0),
            single_event: (events.len() == 1).then(|| events[0].id),
            descriptor_id: find(desc_type::DESCRIPTOR_ID, &[8]).map(|f| f.0),
            event_ids: events.iter().map(|e| e.id).collect(),
            cputime_delta: find(fields::CPUTIME_DELTA, &[8]).map(|f| f.0),
            cputime: find(fields::CPUTIME, &[8]).map(|f| f.0),
            power: find(desc_type::POWER, &[8]).map(|f| f.0),
            value: [fields::CURRENT, fields::VOLTAGE, fields::CUSTOM_VALUE, desc_type::POWER]
                .into_iter()
                .find_map(|t| find(t, &[8]))
                .map(|f| f.0),
            written: find(fields::WRITTEN_VALUE, &[8]).map(|f| f.0),
            time_field: time_field(file, &s, &layout)?,
        })
    }

    /// Whether the records can be bound: a legacy sample record, or an IP and a PID.
    pub fn bindable(&self) -> bool {
        self.legacy_pc.is_some() || (self.ip.is_some() && self.pid.is_some())
    }

    /// Whether the records carry an instruction pointer.
    pub fn has_pc(&self) -> bool {
        self.legacy_pc.is_some() || self.ip.is_some()
    }

    /// Whether the records carry a 4-byte tid field.
    pub fn has_tid(&self) -> bool {
        self.tid.is_some()
    }

    /// Whether the records are legacy sample records.
    pub fn legacy(&self) -> bool {
        self.legacy_pc.is_some()
    }

    /// Whether the records name their event (a legacy record's event
    /// index, an event id field, or a stream of one event).
    pub fn has_event(&self) -> bool {
        self.legacy_pc.is_some()
            || self.event_id.is_some()
            || self.single_event.is_some()
            || (self.descriptor_id.is_some() && !self.event_ids.is_empty())
    }

    /// Whether the records carry a perf period.
    pub fn has_period(&self) -> bool {
        self.period.is_some()
    }

    /// Whether the records carry a thread's CPU time (cumulative or since its previous sample).
    pub fn has_cputime(&self) -> bool {
        self.cputime_delta.is_some() || self.cputime.is_some()
    }

    #[inline]
    fn legacy_record(&self, rec: &[u8]) -> Option<SampleRecordPc> {
        self.legacy_pc.and_then(|at| rec.get(at..)).and_then(SampleRecordPc::from_slice)
    }

    /// The sampled address.
    #[inline]
    pub fn pc(&self, rec: &[u8]) -> u64 {
        match (self.legacy_pc, self.ip) {
            (Some(_), _) => self.legacy_record(rec).unwrap_or_default().ip(),
            (None, Some((at, size))) => read_le(rec, at, size),
            (None, None) => 0,
        }
    }

    /// The time `--time` filters on; the record's index `k` when the records have none.
    #[inline]
    pub fn time(&self, rec: &[u8], k: u64) -> u64 {
        self.time.map_or(k, |(at, size)| read_le(rec, at, size))
    }

    /// Whether the records have a time field (else [`SampleFields::time`]
    /// is the record index).
    pub fn has_time(&self) -> bool {
        self.time.is_some()
    }

    /// The time stamp, when the records have one.
    #[inline]
    pub fn time_stamp(&self, rec: &[u8]) -> Option<u64> {
        self.time.map(|(at, size)| read_le(rec, at, size))
    }

    /// The cpu the sample was taken on, when the records say.
    #[inline]
    pub fn cpu(&self, rec: &[u8]) -> Option<u32> {
        match self.legacy_pc {
            Some(_) => Some(u32::from(self.legacy_record(rec).unwrap_or_default().cpu_num())),
            None => self.cpu.map(|(at, size)| read_le(rec, at, size) as u32),
        }
    }

    /// A perf import's period (the events the sample stands for).
    #[inline]
    pub fn period(&self, rec: &[u8]) -> Option<u64> {
        self.period.map(|(at, size)| read_le(rec, at, size))
    }

    /// The event id of the record: the id of the event its descriptor id
    /// names (VTune's records: the descriptor id is the event's position),
    /// a legacy record's event index, its event id field, or the stream's
    /// only event.
    #[inline]
    pub fn event(&self, rec: &[u8]) -> Option<u32> {
        if let Some(at) = self.descriptor_id {
            return usize::try_from(read_le(rec, at, 8)).ok().and_then(|i| self.event_ids.get(i)).copied();
        }
        match (self.legacy_pc, self.event_id) {
            (Some(_), _) => Some(u32::from(self.legacy_record(rec).unwrap_or_default().event_index())),
            (None, Some(at)) => Some(read_le(rec, at, 4) as u32),
            (None, None) => self.single_event,
        }
    }

    /// The PMU value of a sampler record: current, voltage, custom or power (f64).
    #[inline]
    pub fn pmu_value(&self, rec: &[u8]) -> Option<f64> {
        self.value.map(|at| f64::from_bits(read_le(rec, at, 8)))
    }

    /// The value a winIDEA data write wrote.
    #[inline]
    pub fn written_value(&self, rec: &[u8]) -> Option<u64> {
        self.written.map(|at| read_le(rec, at, 8))
    }

    /// The record's own tid field.
    #[inline]
    pub fn tid(&self, rec: &[u8]) -> Option<u32> {
        self.tid.map(|at| read_le(rec, at, 4) as u32)
    }

    /// The record's own pid field.
    #[inline]
    pub fn pid(&self, rec: &[u8]) -> Option<u32> {
        self.pid.map(|(at, size)| read_le(rec, at, size) as u32)
    }

    /// How a sample of this stream weighs `weight`, or an error naming the
    /// fields that weight needs.
    pub fn weigher(&self, weight: Weight, file: &Tb5File, n: u32) -> Result<Weigher, QueryError> {
        let cputime = match (self.cputime_delta, self.cputime) {
            (Some(d), _) => Some(CpuTime::Delta(d)),
            (None, Some(c)) => Some(CpuTime::Cumulative(c)),
            (None, None) => None,
        };
        let unsupported =
            |missing| QueryError::WeightNeeds { file: file.path().display().to_string(), stream: n, weight, missing };
        match weight {
            Weight::Samples => Ok(Weigher::One),
            Weight::Cputime => {
                cputime.map(|c| Weigher::Cputime(c, HashMap::new())).ok_or_else(|| unsupported(WeightFields::CpuTime))
            }
            Weight::Energy => match (cputime, self.power) {
                (Some(c), Some(p)) => Ok(Weigher::Energy(c, p, HashMap::new())),
                (None, _) => Err(unsupported(WeightFields::CpuTimeAndPower)),
                (Some(_), None) => Err(unsupported(WeightFields::Power)),
            },
        }
    }
}

/// Where a thread's CPU time is in a record.
#[derive(Clone, Copy, Debug)]
pub enum CpuTime {
    /// Since the thread's previous sample (an import's `cputime_delta`).
    Delta(usize),
    /// Cumulative (the collector's `cputime`): the walk takes differences per thread.
    Cumulative(usize),
}

/// What a sample weighs: made by [`SampleFields::weigher`], asked once per
/// sample in stream order (a cumulative CPU time keeps each thread's last
/// reading).
#[derive(Clone, Debug)]
pub enum Weigher {
    /// 1 a sample.
    One,
    /// The CPU time since the thread's previous sample, ns.
    Cputime(CpuTime, HashMap<u64, u64>),
    /// Power (the f64 at the offset) x that CPU time, joules.
    Energy(CpuTime, usize, HashMap<u64, u64>),
}

impl Weigher {
    /// Whether every sample weighs 1.
    pub fn is_one(&self) -> bool {
        matches!(self, Weigher::One)
    }

    /// Whether a sample's weight depends on the samples before it (a
    /// cumulative CPU time, differenced per thread): a walk must then read
    /// every record from the first, those the filters leave out included.
    pub fn needs_history(&self) -> bool {
        matches!(self, Weigher::Cputime(CpuTime::Cumulative(_), _) | Weigher::Energy(CpuTime::Cumulative(_), _, _))
    }

    /// The weight of `rec`, a sample of thread `thread` (any number that
    /// tells threads apart).
    #[inline]
    pub fn weigh(&mut self, rec: &[u8], thread: u64) -> f64 {
        fn cpu(c: CpuTime, last: &mut HashMap<u64, u64>, rec: &[u8], thread: u64) -> f64 {
            match c {
                CpuTime::Delta(at) => read_le(rec, at, 8) as f64,
                CpuTime::Cumulative(at) => {
                    let now = read_le(rec, at, 8);
                    // A thread's first sample costs nothing; a counter that
                    // goes back (a reused tid) restarts rather than wrapping.
                    let before = last.insert(thread, now).unwrap_or(now);
                    now.saturating_sub(before) as f64
                }
            }
        }
        match self {
            Weigher::One => 1.0,
            Weigher::Cputime(c, last) => cpu(*c, last, rec, thread),
            Weigher::Energy(c, p, last) => {
                let watts = f64::from_bits(read_le(rec, *p, 8));
                watts * cpu(*c, last, rec, thread) * 1e-9
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumulative_cputime_weighs_the_difference_per_thread() {
        let mut w = Weigher::Cputime(CpuTime::Cumulative(0), HashMap::new());
        let rec = |t: u64| t.to_le_bytes();
        assert_eq!(w.weigh(&rec(100), 1), 0.0, "a thread's first sample");
        assert_eq!(w.weigh(&rec(500), 2), 0.0);
        assert_eq!(w.weigh(&rec(130), 1), 30.0);
        assert_eq!(w.weigh(&rec(700), 2), 200.0);
        assert_eq!(w.weigh(&rec(5), 1), 0.0, "a counter going back restarts");
        let mut d = Weigher::Cputime(CpuTime::Delta(0), HashMap::new());
        assert_eq!(d.weigh(&rec(42), 1), 42.0);
    }
}
