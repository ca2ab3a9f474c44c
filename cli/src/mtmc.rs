//! MTMC temporal profiler raw task logs: `tbrw import mtmc LOG -o OUT.tb5`,
//! topdown decoding, and `tbrw report --by task`. Mapping and arithmetic:
//! docs/IMPORT.md.
//!
//! A line is `[0],[1],...,[11],` with `_`-separated sub-sections: task and
//! parent thread ids, start/end/scheduled times (ns, CLOCK_REALTIME),
//! topdown slots/metrics at begin and end, then per end (begin, end): the
//! number-of-events, core id and prefix fields and the counter readings.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use tbrw::*;

use crate::error::CliError;
use crate::imported::{field, write_globals};

/// Descriptor types of the MTMC fields without a TBRW type (user-defined range).
pub mod field_type {
    #![allow(missing_docs)]
    pub const PTHREAD: u16 = 0x4100;
    pub const PARENT_TID: u16 = 0x4101;
    pub const PARENT_PTHREAD: u16 = 0x4102;
    pub const SLOTS_BEGIN: u16 = 0x4110;
    pub const METRICS_BEGIN: u16 = 0x4111;
    pub const RESERVED_BEGIN: u16 = 0x4112;
    pub const SLOTS_END: u16 = 0x4113;
    pub const METRICS_END: u16 = 0x4114;
    pub const RESERVED_END: u16 = 0x4115;
    pub const EVENTS_BEGIN: u16 = 0x4120;
    pub const PREFIX_BEGIN: u16 = 0x4121;
    pub const EVENTS_END: u16 = 0x4122;
    pub const PREFIX_END: u16 = 0x4123;
    /// Counter i's reading at the task's begin: `COUNTER_BEGIN + i`.
    pub const COUNTER_BEGIN: u16 = 0x4200;
    /// Counter i's reading at the task's end: `COUNTER_END + i`.
    pub const COUNTER_END: u16 = 0x4300;
}

/// At most this many counters (the descriptor types reserved for them).
pub const MAX_COUNTERS: usize = 256;

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

fn bad(path: &Path, line: u64, col: usize, what: impl std::fmt::Display) -> CliError {
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

/// The record layout of an MTMC stream with `n` counters.
pub fn descriptor(n: usize) -> Vec<DescEntry> {
    let ns = desc_subtype::TS_NANOSECONDS;
    let mut v = vec![
        field(desc_type::TID, 0, 4, "tid"),
        field(field_type::PTHREAD, 0, 4, "pthread_id"),
        field(desc_type::TIME_STAMP, ns, 8, "start_realtime_ns"),
        field(desc_type::TIME_STAMP, ns, 8, "end_realtime_ns"),
        field(field_type::PARENT_TID, 0, 4, "parent_tid"),
        field(field_type::PARENT_PTHREAD, 0, 4, "parent_pthread_id"),
        field(desc_type::TIME_STAMP, ns, 8, "scheduled_realtime_ns"),
        field(field_type::SLOTS_BEGIN, 0, 8, "topdown_slots_begin"),
        field(field_type::METRICS_BEGIN, 0, 8, "topdown_metrics_begin"),
        field(field_type::RESERVED_BEGIN, 0, 8, "topdown_reserved_begin"),
        field(field_type::SLOTS_END, 0, 8, "topdown_slots_end"),
        field(field_type::METRICS_END, 0, 8, "topdown_metrics_end"),
        field(field_type::RESERVED_END, 0, 8, "topdown_reserved_end"),
        field(field_type::EVENTS_BEGIN, 0, 8, "events_begin"),
        field(desc_type::PROCESSOR_NUMBER, 0, 8, "core_begin"),
        field(field_type::PREFIX_BEGIN, 0, 8, "prefix_begin"),
        field(field_type::EVENTS_END, 0, 8, "events_end"),
        field(desc_type::PROCESSOR_NUMBER, 0, 8, "core_end"),
        field(field_type::PREFIX_END, 0, 8, "prefix_end"),
    ];
    for i in 0..n {
        v.push(field(field_type::COUNTER_BEGIN + i as u16, 0, 8, format!("counter{i}_begin")));
    }
    for i in 0..n {
        v.push(field(field_type::COUNTER_END + i as u16, 0, 8, format!("counter{i}_end")));
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
    let u32_at = |o: usize| u32::from_le_bytes(r[o..o + 4].try_into().unwrap_or_default());
    let u64_at = |o: usize| u64::from_le_bytes(r[o..o + 8].try_into().unwrap_or_default());
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

// ------------------------------------------------------------------ topdown

/// Level-1 and (when present) level-2 topdown fractions of a task, in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Topdown {
    /// Retiring, bad speculation, frontend bound, backend bound.
    pub level1: [f64; 4],
    /// Heavy operations, branch mispredicts, fetch latency, memory bound.
    pub level2: Option<[f64; 4]>,
    /// Slots the task used.
    pub slots: u64,
}

/// Level-1 names, in byte order of PERF_METRICS.
pub const LEVEL1: [&str; 4] = ["retiring", "bad_speculation", "frontend_bound", "backend_bound"];
/// Level-2 names, bytes 4-7.
pub const LEVEL2: [&str; 4] = ["heavy_operations", "branch_mispredicts", "fetch_latency", "memory_bound"];

/// Slots attributed to each of the 8 metric bytes by one reading: `slots × byte / 255`.
pub fn category_slots(slots: u64, metrics: u64) -> [f64; 8] {
    let mut v = [0.0; 8];
    for (i, x) in v.iter_mut().enumerate() {
        *x = slots as f64 * ((metrics >> (8 * i)) & 0xFF) as f64 / 255.0;
    }
    v
}

/// A task's own breakdown: each category's slots at the end minus at the
/// begin, over the slots the task used. `None` when the slot counter did
/// not advance (reset, overflow, or an empty task).
pub fn topdown(slots_begin: u64, metrics_begin: u64, slots_end: u64, metrics_end: u64) -> Option<Topdown> {
    let used = slots_end.checked_sub(slots_begin).filter(|&d| d > 0)?;
    let b = category_slots(slots_begin, metrics_begin);
    let e = category_slots(slots_end, metrics_end);
    let frac = |i: usize| ((e[i] - b[i]) / used as f64).clamp(0.0, 1.0);
    let level2_present = (metrics_begin >> 32) != 0 || (metrics_end >> 32) != 0;
    Some(Topdown {
        level1: [frac(0), frac(1), frac(2), frac(3)],
        level2: level2_present.then(|| [frac(4), frac(5), frac(6), frac(7)]),
        slots: used,
    })
}

/// Sums of several tasks' category slots, for per-thread and per-core totals.
#[derive(Clone, Debug, Default)]
struct Totals {
    tasks: u64,
    duration: u64,
    deltas: Vec<u64>,
    category: [f64; 8],
    slots: u64,
    level2: bool,
}

impl Totals {
    fn add(&mut self, t: &Task) {
        self.tasks += 1;
        self.duration += t.end - t.start;
        if self.deltas.len() < t.begin.len() {
            self.deltas.resize(t.begin.len(), 0);
        }
        for (i, (b, e)) in t.begin.iter().zip(&t.end_counters).enumerate() {
            self.deltas[i] = self.deltas[i].wrapping_add(e.wrapping_sub(*b));
        }
        if let Some(used) = t.topdown[3].checked_sub(t.topdown[0]).filter(|&d| d > 0) {
            let b = category_slots(t.topdown[0], t.topdown[1]);
            let e = category_slots(t.topdown[3], t.topdown[4]);
            for i in 0..8 {
                self.category[i] += e[i] - b[i];
            }
            self.slots += used;
            self.level2 |= (t.topdown[1] >> 32) != 0 || (t.topdown[4] >> 32) != 0;
        }
    }

    fn topdown_text(&self) -> String {
        if self.slots == 0 {
            return "topdown=n/a".into();
        }
        let f = |i: usize| (self.category[i] / self.slots as f64).clamp(0.0, 1.0) * 100.0;
        let mut s = LEVEL1.iter().enumerate().map(|(i, n)| format!("{n}={:.2}%", f(i))).collect::<Vec<_>>().join(" ");
        if self.level2 {
            s.push(' ');
            s.push_str(
                &LEVEL2.iter().enumerate().map(|(i, n)| format!("{n}={:.2}%", f(i + 4))).collect::<Vec<_>>().join(" "),
            );
        }
        s
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

/// `tbrw report --by task`: every task's duration, counter deltas and
/// topdown, then totals per thread and per core. `top`: only the K longest tasks.
pub fn task_report(file: &Tb5File, stream: u32, top: Option<usize>, out: &mut dyn Write) -> Result<(), CliError> {
    let s = file.stream(stream)?;
    let descs = s.descriptor()?.unwrap_or_default();
    let n = counters_of(&descs, file).ok_or_else(|| {
        CliError::msg(format!(
            "{}: stream {stream} is not an MTMC task stream: --by task needs one",
            file.path().display()
        ))
    })?;
    let Some(data) = s.data()? else {
        return Err(CliError::msg(format!("{}: stream {stream} has no data", file.path().display())));
    };
    let io = |e: std::io::Error| CliError::msg(format!("writing the output: {e}"));
    let tasks: Vec<(u64, Task)> = data.records().enumerate().map(|(i, r)| (i as u64, decode(r, n))).collect();
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    if let Some(k) = top {
        order.sort_by_key(|&i| std::cmp::Reverse(tasks[i].1.end - tasks[i].1.start));
        order.truncate(k);
    }
    writeln!(out, "{}: stream {stream}, {} tasks, {n} counters", file.path().display(), tasks.len()).map_err(io)?;
    for &i in &order {
        let (idx, t) = &tasks[i];
        let deltas: Vec<String> =
            t.begin.iter().zip(&t.end_counters).map(|(b, e)| e.wrapping_sub(*b).to_string()).collect();
        let td = match topdown(t.topdown[0], t.topdown[1], t.topdown[3], t.topdown[4]) {
            None => "topdown=n/a".to_owned(),
            Some(td) => {
                let mut s = LEVEL1
                    .iter()
                    .zip(td.level1)
                    .map(|(n, v)| format!("{n}={:.2}%", v * 100.0))
                    .collect::<Vec<_>>()
                    .join(" ");
                if let Some(l2) = td.level2 {
                    s.push(' ');
                    s.push_str(
                        &LEVEL2
                            .iter()
                            .zip(l2)
                            .map(|(n, v)| format!("{n}={:.2}%", v * 100.0))
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                }
                s
            }
        };
        writeln!(
            out,
            "task {idx}: tid={} core={} start={} duration_ns={} counter_deltas=[{}] {td}",
            t.tid,
            t.begin_info[1],
            t.start,
            t.end - t.start,
            deltas.join(",")
        )
        .map_err(io)?;
    }
    let mut by_thread: Vec<(u32, Totals)> = Vec::new();
    let mut by_core: Vec<(u64, Totals)> = Vec::new();
    for (_, t) in &tasks {
        match by_thread.iter_mut().find(|(k, _)| *k == t.tid) {
            Some((_, tot)) => tot.add(t),
            None => {
                let mut tot = Totals::default();
                tot.add(t);
                by_thread.push((t.tid, tot));
            }
        }
        match by_core.iter_mut().find(|(k, _)| *k == t.begin_info[1]) {
            Some((_, tot)) => tot.add(t),
            None => {
                let mut tot = Totals::default();
                tot.add(t);
                by_core.push((t.begin_info[1], tot));
            }
        }
    }
    for (what, rows) in [
        ("thread", by_thread.iter().map(|(k, t)| (u64::from(*k), t)).collect::<Vec<_>>()),
        ("core", by_core.iter().map(|(k, t)| (*k, t)).collect()),
    ] {
        for (k, t) in rows {
            let deltas: Vec<String> = t.deltas.iter().map(u64::to_string).collect();
            writeln!(
                out,
                "{what} {k}: tasks={} duration_ns={} counter_deltas=[{}] {}",
                t.tasks,
                t.duration,
                deltas.join(","),
                t.topdown_text()
            )
            .map_err(io)?;
        }
    }
    Ok(())
}
