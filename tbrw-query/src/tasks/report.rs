//! `tbrw report --by task`: every task's duration, counter deltas and
//! topdown (what it has; what it lacks is left out, what is not valid is
//! said so), and totals per thread and per CPU, as a [`Report`], and the
//! text form of it.

use std::collections::HashMap;
use std::io::Write;

use tbrw::text::Escaped;
use tbrw::*;

use super::topdown::{NoTopdown, Sums, Topdown, LEVEL1, LEVEL2};
use crate::error::QueryError;
use crate::report::{counted, percent, percent_text, By, Key, Level2Percent, Report, Row, TaskFigures, TopdownPercent};
use tbrw_schema::mtmc::Task;
use tbrw_schema::mtmc::{counters_of, decode, Decoded, Shape, NAME_BASE, UNNAMED};

/// Why a task's counter deltas (and topdown) are not valid: the counters
/// belong to CPUs, so only a task that ended where it began has a delta.
fn invalid_reason(t: &Task) -> Option<String> {
    if t.end == 0 {
        Some("no end".into())
    } else if t.end < t.start {
        // The importer refuses such a task; a damaged or foreign file may still hold one.
        Some(format!("ends ({}) before it starts ({})", t.end, t.start))
    } else if t.begin_info[1] != t.end_info[1] {
        Some(format!("migrated from cpu {} to cpu {}", t.begin_info[1], t.end_info[1]))
    } else {
        None
    }
}

/// A task's duration in ns: `None` when it never ended or ends before it starts.
fn duration(t: &Task) -> Option<u64> {
    if t.end == 0 {
        None
    } else {
        t.end.checked_sub(t.start)
    }
}

/// A valid task's counter deltas: readings are sign-extended offsets, so
/// the difference is taken as signed, never as a wrapped unsigned value.
fn deltas(t: &Task) -> Vec<i64> {
    t.begin.iter().zip(&t.end_counters).map(|(b, e)| (*e as i64).wrapping_sub(*b as i64)).collect()
}

/// The topdown sums of a task, `Ok(None)` when it has no readings, `Err` when they are not valid.
fn task_sums(t: &Task) -> Result<Option<Sums>, NoTopdown> {
    match &t.topdown {
        None => Ok(None),
        Some(_) if invalid_reason(t).is_some() => Ok(None),
        Some(td) => match Sums::of(td) {
            Ok(s) => Ok(Some(s)),
            Err(NoTopdown::Reset) => Err(NoTopdown::Reset),
            Err(_) => Ok(None),
        },
    }
}

/// Fractions to the report's percentages.
fn percent_of(td: &Topdown) -> TopdownPercent {
    let p = |x: f64| x * 100.0;
    TopdownPercent {
        slots: td.slots,
        retiring: p(td.level1[0]),
        bad_speculation: p(td.level1[1]),
        frontend_bound: p(td.level1[2]),
        backend_bound: p(td.level1[3]),
        level2: td.level2.map(|l| Level2Percent {
            heavy_operations: p(l[0]),
            light_operations: p(l[1]),
            branch_mispredicts: p(l[2]),
            machine_clears: p(l[3]),
            fetch_latency: p(l[4]),
            fetch_bandwidth: p(l[5]),
            memory_bound: p(l[6]),
            core_bound: p(l[7]),
        }),
    }
}

/// Sums of several tasks, for per-thread and per-CPU totals.
#[derive(Clone, Debug, Default)]
struct Totals {
    tasks: u64,
    duration: u64,
    ended: bool,
    deltas: Option<Vec<i64>>,
    invalid: u64,
    sums: Option<Sums>,
}

impl Totals {
    fn add(&mut self, t: &Task, counters: usize) {
        self.tasks += 1;
        if let Some(d) = duration(t) {
            self.duration = self.duration.saturating_add(d);
            self.ended = true;
        }
        if invalid_reason(t).is_some() {
            self.invalid += 1;
        } else if counters > 0 {
            let d = self.deltas.get_or_insert_with(|| vec![0; counters]);
            for (a, b) in d.iter_mut().zip(deltas(t)) {
                *a = a.saturating_add(b);
            }
        }
        match task_sums(t) {
            Ok(Some(s)) => self.sums.get_or_insert_with(Sums::default).add(&s),
            Ok(None) => {}
            Err(_) => self.invalid += u64::from(invalid_reason(t).is_none()),
        }
    }

    fn figures(&self) -> TaskFigures {
        TaskFigures {
            duration_ns: self.ended.then_some(self.duration),
            counter_deltas: self.deltas.clone(),
            topdown: self.sums.and_then(|s| s.topdown().ok()).as_ref().map(percent_of),
            invalid_tasks: self.invalid,
            ..Default::default()
        }
    }
}

/// One task's figures (also the timeline's hover text, `crate::intervals`).
pub fn task_figures(t: &Task, name: Option<String>) -> TaskFigures {
    let mut invalid: Vec<String> = invalid_reason(t).into_iter().collect();
    let topdown = match task_sums(t) {
        Ok(s) => s.and_then(|s| s.topdown().ok()).as_ref().map(percent_of),
        Err(why) => {
            invalid.push(why.to_string());
            None
        }
    };
    let ex = t.extra.as_ref();
    TaskFigures {
        name,
        duration_ns: duration(t),
        cpu_end: (t.end != 0).then_some(t.end_info[1]),
        numa_node: Some(t.begin_info[2]),
        counter_deltas: (!t.begin.is_empty() && invalid_reason(t).is_none()).then(|| deltas(t)),
        topdown,
        invalid,
        invalid_tasks: 0,
        int_prefix: ex.map(|e| e.int_prefix),
        config_index: ex.map(|e| e.config),
        constants: ex.filter(|e| !e.constants.is_empty()).map(|e| e.constants.clone()),
    }
}

/// `tbrw report --by task`: every task's figures, then totals per thread
/// and per CPU (the CPU it began on). `top`: only the K longest tasks.
pub fn task_report(file: &Tb5File, stream: u32, top: Option<usize>) -> Result<Report, QueryError> {
    let s = file.stream(stream)?;
    let descs = s.descriptor()?.unwrap_or_default();
    let name = || file.path().display().to_string();
    let shape: Shape = counters_of(&descs, file).ok_or_else(|| QueryError::NotTaskStream { file: name(), stream })?;
    let Some(data) = s.data()? else {
        return Err(QueryError::NoData { file: name(), stream });
    };
    let names: HashMap<u32, String> = s
        .events()?
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.id >= NAME_BASE)
        .filter_map(|e| file.string_opt(e.name).ok().flatten().map(|n| (e.id, n.to_owned())))
        .collect();
    let tasks: Vec<Decoded> = data.records().map(|r| decode(r, shape)).collect();
    let total = tasks.len() as u64;
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    if let Some(k) = top {
        order.sort_by_key(|&i| std::cmp::Reverse(duration(&tasks[i].task).unwrap_or(0)));
        order.truncate(k);
    }
    let rows = order
        .iter()
        .map(|&i| {
            let d = &tasks[i];
            let t = &d.task;
            let name = names.get(&d.event).filter(|n| n.as_str() != UNNAMED).cloned();
            Row {
                key: Key::Task { index: i as u64, tid: t.tid, core: t.begin_info[1], start_ns: t.start },
                samples: 1,
                percent: percent(1, total),
                weight: None,
                task: Some(Box::new(task_figures(t, name))),
                children: None,
            }
        })
        .collect();
    // Totals in the order each thread and CPU first appears.
    let mut by_thread: Vec<(u32, Totals)> = Vec::new();
    let mut by_core: Vec<(u64, Totals)> = Vec::new();
    for d in &tasks {
        let t = &d.task;
        match by_thread.iter_mut().find(|(k, _)| *k == t.tid) {
            Some((_, tot)) => tot.add(t, shape.counters),
            None => {
                let mut tot = Totals::default();
                tot.add(t, shape.counters);
                by_thread.push((t.tid, tot));
            }
        }
        match by_core.iter_mut().find(|(k, _)| *k == t.begin_info[1]) {
            Some((_, tot)) => tot.add(t, shape.counters),
            None => {
                let mut tot = Totals::default();
                tot.add(t, shape.counters);
                by_core.push((t.begin_info[1], tot));
            }
        }
    }
    let threads: Vec<Tid<StringId>> = file.processes()?.map(|pt| pt.tids().collect()).unwrap_or_default();
    let name_of = |tid: u32| {
        threads.iter().find(|th| th.id == tid).and_then(|th| file.string_opt(th.name).ok().flatten().map(str::to_owned))
    };
    let pid = tasks.first().map(|d| d.pid).filter(|&p| p != 0);
    let total_row = |key: Key, t: &Totals| Row {
        key,
        samples: t.tasks,
        percent: percent(t.tasks, total),
        weight: None,
        task: Some(Box::new(t.figures())),
        children: None,
    };
    let totals = by_thread
        .iter()
        .map(|(tid, t)| total_row(Key::Thread { index: None, tid: *tid, pid, name: name_of(*tid) }, t))
        .chain(by_core.iter().map(|(core, t)| total_row(Key::Core { core: *core }, t)))
        .collect();
    Ok(Report {
        file: file.path().display().to_string(),
        stream,
        by: By::Task,
        records: data.len(),
        weight: None,
        samples: total,
        rows,
        totals,
        auto: None,
    })
}

/// The text of a task report: a heading, a line per task, then a line per
/// thread and per CPU with their totals. Each line shows what its tasks have.
pub fn write_task_text(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let counters = r
        .rows
        .iter()
        .chain(&r.totals)
        .find_map(|row| row.task.as_ref().and_then(|t| t.counter_deltas.as_ref()))
        .map_or(0, Vec::len);
    writeln!(
        out,
        "{}: stream {}, {}, {}",
        Escaped(&r.file),
        r.stream,
        counted(r.samples, "task"),
        counted(counters as u64, "counter")
    )?;
    for row in r.rows.iter().chain(&r.totals) {
        let Some(t) = &row.task else { continue };
        let mut line = match &row.key {
            Key::Task { index, tid, core, start_ns } => {
                let mut l = format!("task {index}: tid={tid} cpu={core}");
                if let Some(n) = t.numa_node {
                    l += &format!(" numa={n}");
                }
                l += &format!(" start={start_ns}");
                l
            }
            Key::Thread { tid, .. } => format!("thread {tid}: tasks={}", row.samples),
            Key::Core { core } => format!("cpu {core}: tasks={}", row.samples),
            other => format!("{other}: tasks={}", row.samples),
        };
        if let Some(n) = &t.name {
            line += &format!(" name={n:?}");
        }
        if let Some(d) = t.duration_ns {
            line += &format!(" duration_ns={d}");
        }
        if let (Some(e), Key::Task { core, .. }) = (t.cpu_end, &row.key) {
            if e != *core {
                line += &format!(" cpu_end={e}");
            }
        }
        if let Some(d) = &t.counter_deltas {
            let d: Vec<String> = d.iter().map(i64::to_string).collect();
            line += &format!(" counter_deltas=[{}]", d.join(","));
        }
        if let Some(td) = &t.topdown {
            line += &format!(" {}", topdown_text(td));
        }
        if let Some(p) = t.int_prefix {
            line += &format!(" int_prefix={p}");
        }
        if let Some(c) = t.config_index {
            line += &format!(" config={c}");
        }
        if let Some(c) = &t.constants {
            let c: Vec<String> = c.iter().map(f64::to_string).collect();
            line += &format!(" constants=[{}]", c.join(","));
        }
        if !t.invalid.is_empty() {
            line += &format!(" invalid=({})", t.invalid.join("; "));
        }
        if t.invalid_tasks > 0 {
            line += &format!(" invalid_tasks={}", t.invalid_tasks);
        }
        // Names are `Debug`-quoted above; the rest escaped as any text output's.
        writeln!(out, "{}", Escaped(&line))?;
    }
    Ok(())
}

fn topdown_text(td: &TopdownPercent) -> String {
    let level1 = [td.retiring, td.bad_speculation, td.frontend_bound, td.backend_bound];
    let mut parts: Vec<String> = LEVEL1.iter().zip(level1).map(|(n, v)| format!("{n}={}%", percent_text(v))).collect();
    if let Some(l) = &td.level2 {
        let level2 = [
            l.heavy_operations,
            l.light_operations,
            l.branch_mispredicts,
            l.machine_clears,
            l.fetch_latency,
            l.fetch_bandwidth,
            l.memory_bound,
            l.core_bound,
        ];
        parts.extend(LEVEL2.iter().zip(level2).map(|(n, v)| format!("{n}={}%", percent_text(v))));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_that_ends_before_it_starts_is_invalid_and_has_no_duration() {
        let t = Task { start: 2_000, end: 1_000, begin: vec![5], end_counters: vec![9], ..Task::default() };
        let fig = task_figures(&t, None);
        assert_eq!(fig.duration_ns, None);
        assert_eq!(fig.counter_deltas, None);
        assert_eq!(fig.invalid, vec!["ends (1000) before it starts (2000)".to_owned()]);
        let mut totals = Totals::default();
        totals.add(&t, 1);
        assert_eq!((totals.duration, totals.ended, totals.invalid), (0, false, 1));
    }
}
