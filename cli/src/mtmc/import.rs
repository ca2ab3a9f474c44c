//! The TB5 stream of an MTMC import (one record per task, the counters as
//! events, the tasks' threads in the thread table), and its records read back.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use tbrw::*;

use super::log::{bad, parse_line, Task};
use crate::error::CliError;
use crate::fields::{self, read_le};
use crate::imported::{field, write_globals};

/// The record layout of an MTMC stream with `n` counters.
pub fn descriptor(n: usize) -> Vec<DescEntry> {
    let ns = desc_subtype::TS_NANOSECONDS;
    let mut v = vec![
        field(desc_type::TID, 0, 4, "tid"),
        field(fields::PTHREAD, 0, 4, "pthread_id"),
        field(desc_type::TIME_STAMP, ns, 8, "start_realtime_ns"),
        field(desc_type::TIME_STAMP, ns, 8, "end_realtime_ns"),
        field(fields::PARENT_TID, 0, 4, "parent_tid"),
        field(fields::PARENT_PTHREAD, 0, 4, "parent_pthread_id"),
        field(desc_type::TIME_STAMP, ns, 8, "scheduled_realtime_ns"),
        field(fields::TOPDOWN_SLOTS_BEGIN, 0, 8, "topdown_slots_begin"),
        field(fields::TOPDOWN_METRICS_BEGIN, 0, 8, "topdown_metrics_begin"),
        field(fields::TOPDOWN_RESERVED_BEGIN, 0, 8, "topdown_reserved_begin"),
        field(fields::TOPDOWN_SLOTS_END, 0, 8, "topdown_slots_end"),
        field(fields::TOPDOWN_METRICS_END, 0, 8, "topdown_metrics_end"),
        field(fields::TOPDOWN_RESERVED_END, 0, 8, "topdown_reserved_end"),
        field(fields::EVENTS_BEGIN, 0, 8, "events_begin"),
        field(desc_type::PROCESSOR_NUMBER, 0, 8, "core_begin"),
        field(fields::PREFIX_BEGIN, 0, 8, "prefix_begin"),
        field(fields::EVENTS_END, 0, 8, "events_end"),
        field(desc_type::PROCESSOR_NUMBER, 0, 8, "core_end"),
        field(fields::PREFIX_END, 0, 8, "prefix_end"),
    ];
    for i in 0..n {
        v.push(field(fields::COUNTER_BEGIN + i as u16, 0, 8, format!("counter{i}_begin")));
    }
    for i in 0..n {
        v.push(field(fields::COUNTER_END + i as u16, 0, 8, format!("counter{i}_end")));
    }
    v
}

/// Bytes per record with `n` counters.
pub fn record_size(n: usize) -> usize {
    4 + 4 + 8 + 8 + 4 + 4 + 8 + 6 * 8 + 6 * 8 + 16 * n
}

fn encode(t: &Task, out: &mut Vec<u8>) {
    out.extend_from_slice(&t.tid.to_le_bytes());
    out.extend_from_slice(&t.pthread.to_le_bytes());
    out.extend_from_slice(&t.start.to_le_bytes());
    out.extend_from_slice(&t.end.to_le_bytes());
    out.extend_from_slice(&t.parent_tid.to_le_bytes());
    out.extend_from_slice(&t.parent_pthread.to_le_bytes());
    out.extend_from_slice(&t.scheduled.to_le_bytes());
    for v in t.topdown.iter().chain(&t.begin_info).chain(&t.end_info).chain(&t.begin).chain(&t.end_counters) {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Decodes a record of a stream with `n` counters.
pub fn decode(r: &[u8], n: usize) -> Task {
    let u32_at = |o: usize| read_le(r, o, 4) as u32;
    let u64_at = |o: usize| read_le(r, o, 8);
    let base = 40;
    let arr = |k: usize| u64_at(base + 8 * k);
    Task {
        tid: u32_at(0),
        pthread: u32_at(4),
        start: u64_at(8),
        end: u64_at(16),
        parent_tid: u32_at(24),
        parent_pthread: u32_at(28),
        scheduled: u64_at(32),
        topdown: [arr(0), arr(1), arr(2), arr(3), arr(4), arr(5)],
        begin_info: [arr(6), arr(7), arr(8)],
        end_info: [arr(9), arr(10), arr(11)],
        begin: (0..n).map(|i| arr(12 + i)).collect(),
        end_counters: (0..n).map(|i| arr(12 + n + i)).collect(),
    }
}

/// What an MTMC import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MtmcStats {
    /// Tasks imported.
    pub tasks: u64,
    /// Counters per task.
    pub counters: usize,
    /// Blank lines skipped.
    pub blank_lines: u64,
    /// The first line whose number-of-events field [8.0] differs from the
    /// readings present: (line, field value, readings).
    pub events_field_mismatch: Option<(u64, u64, usize)>,
    /// Distinct threads (task and parent tids).
    pub threads: usize,
}

/// Imports an MTMC raw log into a new TB5 file.
pub fn import_mtmc(input: &Path, output: &Path, progress: &mut dyn FnMut(u64)) -> Result<MtmcStats, CliError> {
    let meta = std::fs::metadata(input).map_err(|e| CliError::io(input, e))?;
    if meta.is_dir() {
        return Err(CliError::msg(format!("{}: is a directory, not a task log", input.display())));
    }
    let f = std::fs::File::open(input).map_err(|e| CliError::io(input, e))?;
    let reader = BufReader::with_capacity(1 << 20, f);
    let mut stats = MtmcStats::default();
    let mut w = Tb5Writer::create(output)?;
    write_globals(
        &mut w,
        &Software {
            os: Some(Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() }),
            ..Default::default()
        },
    )?;
    w.write_modules(&[])?;
    let mut st = State::default();
    let mut lines = reader.split(b'\n').enumerate();
    let mut next_task = |stats: &mut MtmcStats, bytes: &mut u64| -> Result<Option<(u64, Task)>, CliError> {
        for (i, line) in lines.by_ref() {
            let lineno = i as u64 + 1;
            let line = line.map_err(|e| CliError::io(input, e))?;
            *bytes += line.len() as u64 + 1;
            let text =
                std::str::from_utf8(&line).map_err(|e| bad(input, lineno, e.valid_up_to(), "the line is not UTF-8"))?;
            let text = text.trim_end_matches('\r');
            if text.trim().is_empty() {
                stats.blank_lines += 1;
                continue;
            }
            return parse_line(text, input, lineno).map(|t| Some((lineno, t)));
        }
        Ok(None)
    };
    let mut bytes = 0u64;
    let Some((first_line, first)) = next_task(&mut stats, &mut bytes)? else {
        return Err(CliError::msg(format!("{}: line 1, column 1: the log holds no task", input.display())));
    };
    let n = first.begin.len();
    let mut s = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("mtmc tasks".into()),
            command_line: Some(format!("mtmc log {}", input.display())),
            ..Default::default()
        })?
        .data_descriptor(&descriptor(n))?;
    let events: Vec<Event> =
        (0..n).map(|i| Event { id: i as u32, name: Some(format!("counter{i}")), ..Default::default() }).collect();
    s.events(&events)?;
    {
        let mut data = s.data()?;
        st.take(first_line, &first, n, &mut stats, input)?;
        encode(&first, &mut st.batch);
        while let Some((lineno, t)) = next_task(&mut stats, &mut bytes)? {
            st.take(lineno, &t, n, &mut stats, input)?;
            encode(&t, &mut st.batch);
            if st.batch.len() >= 1 << 20 {
                data.add(&st.batch)?;
                st.batch.clear();
                progress(bytes);
            }
        }
        data.add(&st.batch)?;
        data.done()?;
    }
    s.finish()?;
    stats.counters = n;
    stats.threads = st.threads.len();
    let mut pt = w.process_threads()?;
    for (tid, p) in &st.threads {
        pt.add_thread(&Tid {
            associated_pid: 0,
            id: *tid,
            name: Some(format!("pthread {p:#x}")),
            ..Default::default()
        })?;
    }
    pt.done()?;
    w.close()?;
    progress(bytes);
    Ok(stats)
}

/// What the import keeps while it streams the log.
#[derive(Default)]
struct State {
    threads: Vec<(u32, u32)>,
    seen: HashMap<u32, ()>,
    batch: Vec<u8>,
}

impl State {
    /// Checks a task against the lines before it and notes its threads.
    fn take(&mut self, lineno: u64, t: &Task, n: usize, stats: &mut MtmcStats, input: &Path) -> Result<(), CliError> {
        if t.begin.len() != n {
            return Err(bad(
                input,
                lineno,
                0,
                format!("{} counter readings where the lines before have {n}", t.begin.len()),
            ));
        }
        if stats.events_field_mismatch.is_none() && (t.begin_info[0] != n as u64 || t.end_info[0] != n as u64) {
            stats.events_field_mismatch = Some((lineno, t.begin_info[0], n));
        }
        for (tid, p) in [(t.tid, t.pthread), (t.parent_tid, t.parent_pthread)] {
            if self.seen.insert(tid, ()).is_none() {
                self.threads.push((tid, p));
            }
        }
        stats.tasks += 1;
        Ok(())
    }
}

/// The number of counters of an MTMC stream, or why it is not one.
pub fn counters_of(descs: &[DescEntry<StringId>], file: &Tb5File) -> Option<usize> {
    let names: Vec<&str> = descs.iter().map(|d| file.string_opt(d.name).ok().flatten().unwrap_or("")).collect();
    if names.len() < 19
        || names[..4] != ["tid", "pthread_id", "start_realtime_ns", "end_realtime_ns"]
        || names[7] != "topdown_slots_begin"
    {
        return None;
    }
    let n = (names.len() - 19) / 2;
    (descs.len() == 19 + 2 * n).then_some(n)
}
