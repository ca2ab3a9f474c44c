//! One line of the log: twelve comma-separated sections, some of them
//! `_`-separated lists, checked and parsed into a [`Task`].

use std::path::Path;

use crate::error::CliError;
use crate::fields::MAX_COUNTERS;

/// One task of the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Task {
    /// `[0]` kernel thread id.
    pub tid: u32,
    /// `[1]` pthread id (32-bit).
    pub pthread: u32,
    /// `[2]` start, ns CLOCK_REALTIME.
    pub start: u64,
    /// `[3]` end, ns CLOCK_REALTIME.
    pub end: u64,
    /// `[4]` parent's kernel thread id.
    pub parent_tid: u32,
    /// `[5]` parent's pthread id.
    pub parent_pthread: u32,
    /// `[6]` when the task was scheduled, ns CLOCK_REALTIME.
    pub scheduled: u64,
    /// `[7.0]`-`[7.5]`: slots, metrics, reserved at begin; slots, metrics, reserved at end.
    pub topdown: [u64; 6],
    /// `[8.0]`-`[8.2]`: number of events, core id, prefix at begin.
    pub begin_info: [u64; 3],
    /// `[9.*]`: counter readings at begin.
    pub begin: Vec<u64>,
    /// `[10.0]`-`[10.2]`: number of events, core id, prefix at end.
    pub end_info: [u64; 3],
    /// `[11.*]`: counter readings at end.
    pub end_counters: Vec<u64>,
}

pub(super) fn bad(path: &Path, line: u64, col: usize, what: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("{}: line {line}, column {}: {what}", path.display(), col + 1))
}

/// Parses one line (`line` is its 1-based number, for errors).
pub fn parse_line(text: &str, path: &Path, line: u64) -> Result<Task, CliError> {
    let mut sections: Vec<(usize, &str)> = Vec::with_capacity(13);
    let mut col = 0;
    for s in text.split(',') {
        sections.push((col, s));
        col += s.len() + 1;
    }
    if sections.len() == 13 && sections[12].1.trim().is_empty() {
        sections.pop(); // the trailing comma
    }
    if sections.len() != 12 {
        return Err(bad(path, line, 0, format!("{} comma-separated sections where 12 are expected", sections.len())));
    }
    let num = |(col, s): (usize, &str), what: &str| -> Result<u64, CliError> {
        s.trim().parse::<u64>().map_err(|_| bad(path, line, col, format!("{what} {s:?} is not an unsigned integer")))
    };
    let subs = |(col, s): (usize, &str), what: &str| -> Result<Vec<u64>, CliError> {
        if s.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut v = Vec::new();
        let mut c = col;
        for p in s.split('_') {
            v.push(num((c, p), what)?);
            c += p.len() + 1;
        }
        Ok(v)
    };
    let u32_of = |sec: (usize, &str), what: &str| -> Result<u32, CliError> {
        let v = num(sec, what)?;
        u32::try_from(v).map_err(|_| bad(path, line, sec.0, format!("{what} {v} does not fit 32 bits")))
    };
    let fixed = |sec: (usize, &str), n: usize, what: &str| -> Result<Vec<u64>, CliError> {
        let v = subs(sec, what)?;
        if v.len() != n {
            return Err(bad(
                path,
                line,
                sec.0,
                format!("{what} has {} '_'-separated values where {n} are expected", v.len()),
            ));
        }
        Ok(v)
    };
    let td = fixed(sections[7], 6, "topdown section [7]")?;
    let bi = fixed(sections[8], 3, "begin information [8]")?;
    let ei = fixed(sections[10], 3, "end information [10]")?;
    let t = Task {
        tid: u32_of(sections[0], "task tid [0]")?,
        pthread: u32_of(sections[1], "task pthread id [1]")?,
        start: num(sections[2], "start time [2]")?,
        end: num(sections[3], "end time [3]")?,
        parent_tid: u32_of(sections[4], "parent tid [4]")?,
        parent_pthread: u32_of(sections[5], "parent pthread id [5]")?,
        scheduled: num(sections[6], "scheduled time [6]")?,
        topdown: [td[0], td[1], td[2], td[3], td[4], td[5]],
        begin_info: [bi[0], bi[1], bi[2]],
        begin: subs(sections[9], "begin counter reading [9]")?,
        end_info: [ei[0], ei[1], ei[2]],
        end_counters: subs(sections[11], "end counter reading [11]")?,
    };
    if t.end < t.start {
        return Err(bad(
            path,
            line,
            sections[3].0,
            format!("the task ends ({}) before it starts ({})", t.end, t.start),
        ));
    }
    if t.begin.len() != t.end_counters.len() {
        return Err(bad(
            path,
            line,
            sections[11].0,
            format!("{} counter readings at the end but {} at the beginning", t.end_counters.len(), t.begin.len()),
        ));
    }
    if t.begin.len() > MAX_COUNTERS {
        return Err(bad(
            path,
            line,
            sections[9].0,
            format!("{} counters; at most {MAX_COUNTERS} are supported", t.begin.len()),
        ));
    }
    Ok(t)
}
