//! `--time` ranges: what the command line takes ([`TimeRange`]: clock
//! values, percentages of the recording, seconds from its start, open
//! ends), a stream's first and last time ([`StreamTimes`]), and the one
//! resolution of a range to the clock values the walk compares
//! ([`TimeRange::resolve`]). Imports the stream reader and the error.

use std::fmt;
use std::str::FromStr;

use tbrw::Tb5File;

use crate::error::QueryError;
use crate::stream::{open_stream, SampleFields, TimeField};

/// One end of a `--time` range, as given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimePoint {
    /// A value of the stream's time field (TSC, time stamp or record index).
    Value(u64),
    /// Percent of the way from the stream's first time to its last.
    Percent(f64),
    /// Nanoseconds after the stream's first time (given as `s`, `ms`, `us`
    /// or `ns`): nanosecond clocks only.
    After(f64),
}

/// A `--time` range: `A..B`, `A..` or `..B`, each end a [`TimePoint`]:
/// `123` or `0x7b` (a clock value), `10%`, `0.5s`, `250ms`, `40us`, `7ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeRange {
    /// The start (`None`: the first sample).
    pub start: Option<TimePoint>,
    /// The end, excluded (`None`: past the last sample).
    pub end: Option<TimePoint>,
    /// As the command line gave it.
    pub given: String,
}

impl fmt::Display for TimeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.given)
    }
}

fn point(x: &str, range: &str) -> Result<Option<TimePoint>, QueryError> {
    let x = x.trim();
    if x.is_empty() {
        return Ok(None);
    }
    let bad = || QueryError::BadTimeRange { range: range.to_owned(), value: Some(x.to_owned()) };
    let float = |v: &str| v.trim().parse::<f64>().ok().filter(|f| f.is_finite() && *f >= 0.0).ok_or_else(bad);
    if let Some(p) = x.strip_suffix('%') {
        return Ok(Some(TimePoint::Percent(float(p)?)));
    }
    // Longest suffix first: `ms` and `us` and `ns` end in `s`.
    for (suffix, ns) in [("ms", 1e6), ("us", 1e3), ("ns", 1.0), ("s", 1e9)] {
        if let Some(v) = x.strip_suffix(suffix) {
            return Ok(Some(TimePoint::After(float(v)? * ns)));
        }
    }
    match x.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => x.parse(),
    }
    .map(|v| Some(TimePoint::Value(v)))
    .map_err(|_| bad())
}

impl FromStr for TimeRange {
    type Err = QueryError;

    fn from_str(s: &str) -> Result<TimeRange, QueryError> {
        let (a, b) = s.split_once("..").ok_or_else(|| QueryError::BadTimeRange { range: s.to_owned(), value: None })?;
        Ok(TimeRange { start: point(a, s)?, end: point(b, s)?, given: s.to_owned() })
    }
}

/// A stream's times: its time field (`None`: the records have none, and
/// `--time` takes record indices) and the first and last value in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamTimes {
    /// The time field and its unit.
    pub field: Option<TimeField>,
    /// The smallest time of a record (records need not be in time order;
    /// when their data section is marked so, the first record's).
    pub first: u64,
    /// The largest.
    pub last: u64,
}

impl StreamTimes {
    /// Stream `n`'s times; `None` when it has no records.
    pub fn of(file: &Tb5File, n: u32) -> Result<Option<StreamTimes>, QueryError> {
        let s = open_stream(file, n)?;
        let Some(data) = s.data()? else { return Ok(None) };
        if data.is_empty() || s.layout()?.is_none() {
            return Ok(None);
        }
        let fields = SampleFields::of(file, n)?;
        if !fields.has_time() || data.time_ordered() {
            // In time order: the first record's and the last's, two pages read.
            let at = |k: u64| fields.time(data.record(k).unwrap_or_default(), k);
            let (first, last) = (at(0), at(data.len() - 1));
            return Ok(Some(StreamTimes { field: fields.time_field, first, last }));
        }
        let (mut first, mut last) = (u64::MAX, 0);
        for (k, rec) in data.records().enumerate() {
            let t = fields.time(rec, k as u64);
            first = first.min(t);
            last = last.max(t);
        }
        Ok(Some(StreamTimes { field: fields.time_field, first, last }))
    }

    /// Whether relative seconds make sense: a nanosecond clock.
    pub fn nanos(&self) -> bool {
        self.field.as_ref().is_some_and(|f| f.nanos)
    }

    /// The unit of the stream's times, for messages and `tbrw info`.
    pub fn unit(&self) -> String {
        match &self.field {
            None => "record indices (the records have no time field)".to_owned(),
            Some(f) if f.nanos => format!("ns ({})", f.name),
            Some(f) if f.name == "tsc" => "TSC ticks".to_owned(),
            Some(f) => format!("time stamps of unknown rate ({})", f.name),
        }
    }

    /// `t` as seconds after the first time (nanosecond clocks).
    pub fn seconds(&self, t: u64) -> f64 {
        t.saturating_sub(self.first) as f64 / 1e9
    }
}

impl TimeRange {
    /// Whether an end is relative to the stream's times (a percentage or a duration).
    pub fn relative(&self) -> bool {
        [self.start, self.end].iter().flatten().any(|p| !matches!(p, TimePoint::Value(_)))
    }

    /// The clock values `start..end` (end excluded) the range stands for in
    /// a stream with `times` (`None`: no records, so only clock values can
    /// be resolved; [`TimeRange::relative`] says whether they are needed)
    /// of file `file` (as named, for messages). An end at or past the last time includes the last
    /// sample (`50%..100%`). Seconds on a clock that is not in nanoseconds
    /// are an error naming the unit.
    pub fn resolve(&self, file: &str, stream: u32, times: Option<&StreamTimes>) -> Result<(u64, u64), QueryError> {
        let at = |p: TimePoint| -> Result<u64, QueryError> {
            let Some(t) = times else {
                return match p {
                    TimePoint::Value(v) => Ok(v),
                    _ => Err(QueryError::TimeUnplaceable {
                        range: self.to_string(),
                        file: file.to_owned(),
                        stream,
                        unit: None,
                    }),
                };
            };
            match p {
                TimePoint::Value(v) => Ok(v),
                TimePoint::Percent(pc) => {
                    let span = (t.last - t.first) as f64;
                    Ok(t.first.saturating_add((span * pc / 100.0).round() as u64))
                }
                TimePoint::After(_) if !t.nanos() => Err(QueryError::TimeUnplaceable {
                    range: self.to_string(),
                    file: file.to_owned(),
                    stream,
                    unit: Some(t.unit().to_string()),
                }),
                TimePoint::After(ns) => Ok(t.first.saturating_add(ns.round() as u64)),
            }
        };
        let lo = self.start.map(at).transpose()?.unwrap_or(0);
        let hi = match (self.end, self.end.map(at).transpose()?) {
            (Some(TimePoint::Value(_)), Some(h)) => h,
            // A relative end reaching the last time includes the last
            // sample (`50%..100%`), though ends are excluded.
            (_, Some(h)) if times.is_some_and(|t| h >= t.last) => u64::MAX,
            (_, Some(h)) => h,
            (_, None) => u64::MAX,
        };
        Ok((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> TimeRange {
        s.parse().unwrap()
    }

    #[test]
    fn ends_parse_as_values_percentages_and_durations() {
        assert_eq!(r("..0x10").end, Some(TimePoint::Value(16)));
        assert_eq!(r("5..").start, Some(TimePoint::Value(5)));
        assert_eq!(r("5..").end, None);
        assert_eq!(r("10%..20%").start, Some(TimePoint::Percent(10.0)));
        assert_eq!(r("0.5s..1.5s").end, Some(TimePoint::After(1.5e9)));
        assert_eq!(r("250ms..").start, Some(TimePoint::After(2.5e8)));
        assert_eq!(r("..40us").end, Some(TimePoint::After(4e4)));
        assert_eq!(r("7ns..").start, Some(TimePoint::After(7.0)));
        for bad in ["5", "x..1", "-1%..", "1.5..", "s..", "inf%.."] {
            assert!(bad.parse::<TimeRange>().is_err(), "{bad}");
        }
    }
}
