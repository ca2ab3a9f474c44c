//! `tbrw report --by task`: every task's duration, counter deltas and
//! topdown, and totals per thread and per core, as a [`Report`], and the
//! text form of it.

use std::io::Write;

use tbrw::*;

use super::import::{counters_of, decode};
use super::log::Task;
use super::topdown::{category_slots, topdown, LEVEL1, LEVEL2};
use crate::error::CliError;
use crate::report::{percent, By, Key, Report, Row, TaskFigures, TopdownPercent};

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

    fn figures(&self) -> TaskFigures {
        let topdown = (self.slots > 0).then(|| {
            let f = |i: usize| (self.category[i] / self.slots as f64).clamp(0.0, 1.0);
            shares(self.slots, [f(0), f(1), f(2), f(3)], self.level2.then(|| [f(4), f(5), f(6), f(7)]))
        });
        TaskFigures { duration_ns: self.duration, counter_deltas: self.deltas.clone(), topdown }
    }
}

/// Fractions in [0, 1] to the report's percentages.
fn shares(slots: u64, level1: [f64; 4], level2: Option<[f64; 4]>) -> TopdownPercent {
    let l2 = |i: usize| level2.map(|l| l[i] * 100.0);
    TopdownPercent {
        slots,
        retiring: level1[0] * 100.0,
        bad_speculation: level1[1] * 100.0,
        frontend_bound: level1[2] * 100.0,
        backend_bound: level1[3] * 100.0,
        heavy_operations: l2(0),
        branch_mispredicts: l2(1),
        fetch_latency: l2(2),
        memory_bound: l2(3),
    }
}

/// `tbrw report --by task`: every task's duration, counter deltas and
/// topdown, then totals per thread and per core. `top`: only the K longest tasks.
pub fn task_report(file: &Tb5File, stream: u32, top: Option<usize>) -> Result<Report, CliError> {
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
    let tasks: Vec<Task> = data.records().map(|r| decode(r, n)).collect();
    let total = tasks.len() as u64;
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    if let Some(k) = top {
        order.sort_by_key(|&i| std::cmp::Reverse(tasks[i].end - tasks[i].start));
        order.truncate(k);
    }
    let rows = order
        .iter()
        .map(|&i| {
            let t = &tasks[i];
            let td = topdown(t.topdown[0], t.topdown[1], t.topdown[3], t.topdown[4])
                .map(|td| shares(td.slots, td.level1, td.level2));
            Row {
                key: Key::Task { index: i as u64, tid: t.tid, core: t.begin_info[1], start_ns: t.start },
                samples: 1,
                percent: percent(1, total),
                task: Some(TaskFigures {
                    duration_ns: t.end - t.start,
                    counter_deltas: t.begin.iter().zip(&t.end_counters).map(|(b, e)| e.wrapping_sub(*b)).collect(),
                    topdown: td,
                }),
            }
        })
        .collect();
    // Totals in the order each thread and core first appears.
    let mut by_thread: Vec<(u32, Totals)> = Vec::new();
    let mut by_core: Vec<(u64, Totals)> = Vec::new();
    for t in &tasks {
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
    let names: Vec<Tid<StringId>> = file.processes()?.map(|pt| pt.tids().collect()).unwrap_or_default();
    let name_of = |tid: u32| {
        names.iter().find(|th| th.id == tid).and_then(|th| file.string_opt(th.name).ok().flatten().map(str::to_owned))
    };
    let total_row =
        |key: Key, t: &Totals| Row { key, samples: t.tasks, percent: percent(t.tasks, total), task: Some(t.figures()) };
    let totals = by_thread
        .iter()
        .map(|(tid, t)| total_row(Key::Thread { index: None, tid: *tid, pid: None, name: name_of(*tid) }, t))
        .chain(by_core.iter().map(|(core, t)| total_row(Key::Core { core: *core }, t)))
        .collect();
    Ok(Report {
        file: file.path().display().to_string(),
        stream,
        by: By::Task,
        records: data.len(),
        samples: total,
        rows,
        totals,
    })
}

/// The text of a task report: a heading, a line per task, then a line per
/// thread and per core with their totals.
pub fn write_task_text(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let counters =
        r.rows.iter().chain(&r.totals).find_map(|row| row.task.as_ref()).map_or(0, |t| t.counter_deltas.len());
    writeln!(out, "{}: stream {}, {} tasks, {counters} counters", r.file, r.stream, r.samples)?;
    for row in r.rows.iter().chain(&r.totals) {
        let Some(t) = &row.task else { continue };
        match &row.key {
            Key::Task { index, tid, core, start_ns } => {
                write!(out, "task {index}: tid={tid} core={core} start={start_ns} duration_ns={}", t.duration_ns)?
            }
            Key::Thread { tid, .. } => {
                write!(out, "thread {tid}: tasks={} duration_ns={}", row.samples, t.duration_ns)?
            }
            Key::Core { core } => write!(out, "core {core}: tasks={} duration_ns={}", row.samples, t.duration_ns)?,
            other => write!(out, "{other}: tasks={} duration_ns={}", row.samples, t.duration_ns)?,
        }
        let deltas: Vec<String> = t.counter_deltas.iter().map(u64::to_string).collect();
        writeln!(out, " counter_deltas=[{}] {}", deltas.join(","), topdown_text(t.topdown.as_ref()))?;
    }
    Ok(())
}

fn topdown_text(td: Option<&TopdownPercent>) -> String {
    let Some(td) = td else { return "topdown=n/a".into() };
    let level1 = [td.retiring, td.bad_speculation, td.frontend_bound, td.backend_bound];
    let mut parts: Vec<String> = LEVEL1.iter().zip(level1).map(|(n, v)| format!("{n}={v:.2}%")).collect();
    let level2 = [td.heavy_operations, td.branch_mispredicts, td.fetch_latency, td.memory_bound];
    parts.extend(LEVEL2.iter().zip(level2).filter_map(|(n, v)| v.map(|v| format!("{n}={v:.2}%"))));
    parts.join(" ")
}
