//! `tbrw report`: sample counts per process, thread, module or event, with
//! filters, from a stored bind or one made in memory.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use tbrw::bind::BindView;
use tbrw::*;

use crate::error::CliError;

/// What to group samples by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// Process instance.
    Process,
    /// Thread.
    Thread,
    /// Module (samples no module covers: "unknown module").
    Module,
    /// Event (legacy samples' `eventIndex`).
    Event,
}

/// Report options.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// The stream.
    pub stream: u32,
    /// Grouping.
    pub by: By,
    /// Only samples of this OS pid.
    pub pid: Option<u32>,
    /// Only samples of this OS tid.
    pub tid: Option<u32>,
    /// Only samples in modules with this name (or path).
    pub module: Option<String>,
    /// Only samples with time in `start..end` (TSC, time stamp or sample index).
    pub time: Option<(u64, u64)>,
    /// Only the first K rows.
    pub top: Option<usize>,
    /// JSON output.
    pub json: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            stream: 0,
            by: By::Module,
            pid: None,
            tid: None,
            module: None,
            time: None,
            top: None,
            json: false,
        }
    }
}

/// One row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Index of the process, thread, module or event (`None`: unknown module).
    pub key: Option<u64>,
    /// What it is.
    pub label: String,
    /// Samples.
    pub samples: u64,
    /// Percent of the samples that passed the filters.
    pub percent: f64,
}

/// A report.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Samples that passed the filters.
    pub total: u64,
    /// Samples in the stream.
    pub records: u64,
    /// Rows, most samples first.
    pub rows: Vec<Row>,
}

/// Parses `A..B`, `A..` or `..B` (decimal or 0x hex).
pub fn parse_range(s: &str) -> std::result::Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("time range {s:?} is not A..B"))?;
    let num = |x: &str, default: u64| -> std::result::Result<u64, String> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(default);
        }
        match x.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => x.parse(),
        }
        .map_err(|_| format!("{x:?} in time range {s:?} is not a number"))
    };
    Ok((num(a, 0)?, num(b, u64::MAX)?))
}

/// Computes the report of a stream. `progress` gets records done.
pub fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64),
) -> std::result::Result<Report, CliError> {
    let n = opts.stream;
    let s = file.stream(n)?;
    let Some(data) = s.data()? else {
        return Err(CliError::msg(format!("{}: stream {n} has no data", file.path().display())));
    };
    let layout = s
        .layout()?
        .ok_or_else(|| CliError::msg(format!("{}: stream {n} has no data descriptor", file.path().display())))?;
    // Records that cannot be bound (no IP/PID) but name their thread (MTMC
    // tasks, winIDEA calls by context) are grouped and filtered by that
    // field directly.
    let tid_field = layout.find(desc_type::TID, None).filter(|f| f.size == 4).map(|f| f.offset as usize);
    let unbindable = layout.legacy_pc_offset().is_none()
        && (layout.find(desc_type::IP, None).is_none() || layout.find(desc_type::PID, None).is_none());
    let stored = s.bind_view()?;
    let direct_tid = unbindable && tid_field.is_some() && stored.is_none();
    let bound_filters = opts.pid.is_some() || opts.module.is_some() || (opts.tid.is_some() && !direct_tid);
    let needs_bind = match opts.by {
        By::Process | By::Module => true,
        By::Thread => !direct_tid || bound_filters,
        By::Event => bound_filters,
    };
    let memory;
    let view: Option<BindView<'_>> = match stored {
        Some(v) => Some(v),
        None if needs_bind => {
            memory = bind::bind_in_memory(file, n)?;
            Some(BindView::Memory(&memory))
        }
        None => None,
    };
    let modules: Vec<Module> = match file.modules()? {
        Some(mt) => mt.iter().map(|m| file.resolve(m?)).collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let module_filter: Option<Vec<bool>> = opts.module.as_ref().map(|want| {
        modules
            .iter()
            .map(|m| m.name.as_deref() == Some(want.as_str()) || m.path.as_deref() == Some(want.as_str()))
            .collect()
    });
    if let (Some(want), Some(f)) = (&opts.module, &module_filter) {
        if !f.contains(&true) {
            return Err(CliError::msg(format!("{}: no module is named {want:?}", file.path().display())));
        }
    }
    let pc_at = layout.legacy_pc_offset().map(|x| x as usize);
    let time_at: Option<(usize, usize)> = match (pc_at, layout.tsc_offset()) {
        (Some(_), Some(t)) => Some((t as usize, 8)),
        _ => layout
            .find(desc_type::TIME_STAMP, None)
            .filter(|f| f.size == 4 || f.size == 8)
            .map(|f| (f.offset as usize, f.size as usize)),
    };
    let events = s.events()?.unwrap_or_default();
    // Records that carry their event's id (winIDEA calls, say).
    let event_id_at =
        layout.find(crate::winidea::field_type::EVENT_ID, None).filter(|f| f.size == 4).map(|f| f.offset as usize);
    if opts.by == By::Event && pc_at.is_none() && event_id_at.is_none() && events.len() != 1 {
        return Err(CliError::msg(format!(
            "{}: stream {n} has no event index or event id in its records and {} events: --by event needs legacy records, an event id field or a single event",
            file.path().display(),
            events.len()
        )));
    }

    let mut counts: HashMap<Option<u64>, u64> = HashMap::new();
    let mut total = 0u64;
    let mut binds = Vec::new();
    let chunk = 1 << 16;
    let mut i = 0u64;
    while i < data.len() {
        let end = (i + chunk).min(data.len());
        binds.clear();
        if let Some(v) = &view {
            v.data_binds(i, (end - i) as usize, &mut binds);
        }
        for k in i..end {
            let rec = data.record(k).unwrap_or_default();
            if let Some((lo, hi)) = opts.time {
                let t = match time_at {
                    Some((at, size)) => {
                        let mut b = [0u8; 8];
                        b[..size].copy_from_slice(&rec[at..at + size]);
                        u64::from_le_bytes(b)
                    }
                    None => k,
                };
                if t < lo || t >= hi {
                    continue;
                }
            }
            let bind = binds.get((k - i) as usize).copied();
            let direct = tid_field
                .filter(|_| direct_tid)
                .map(|at| u32::from_le_bytes(rec[at..at + 4].try_into().unwrap_or_default()));
            if let (Some(want), Some(t)) = (opts.tid, direct) {
                if t != want {
                    continue;
                }
            }
            if let Some(b) = bind {
                if let Some(p) = opts.pid {
                    if view.as_ref().and_then(|v| v.process(b.pid_index)).is_none_or(|x| x.id != p) {
                        continue;
                    }
                }
                if let Some(t) = opts.tid {
                    if view.as_ref().and_then(|v| v.thread(b.tid_index)).is_none_or(|x| x.id != t) {
                        continue;
                    }
                }
                if let Some(mf) = &module_filter {
                    if b.module_index == UNKNOWN_MODULE || !mf[b.module_index as usize] {
                        continue;
                    }
                }
            }
            let key = match opts.by {
                By::Process => bind.map(|b| b.pid_index),
                By::Thread => direct.map(u64::from).or(bind.map(|b| b.tid_index)),
                By::Module => bind.and_then(|b| (b.module_index != UNKNOWN_MODULE).then_some(b.module_index)),
                By::Event => Some(match (pc_at, event_id_at) {
                    (Some(pc), _) => {
                        u64::from(SampleRecordPc::from_slice(&rec[pc..]).unwrap_or_default().event_index())
                    }
                    (None, Some(at)) => u64::from(u32::from_le_bytes(rec[at..at + 4].try_into().unwrap_or_default())),
                    (None, None) => u64::from(events[0].id),
                }),
            };
            *counts.entry(key).or_default() += 1;
            total += 1;
        }
        i = end;
        progress(i);
    }

    let threads: Vec<Tid<StringId>> = match file.processes()? {
        Some(pt) if direct_tid => pt.tids().collect(),
        _ => Vec::new(),
    };
    let label = |key: Option<u64>| -> String {
        let v = view.as_ref();
        match (opts.by, key) {
            (By::Module, None) => "unknown module".into(),
            (By::Module, Some(m)) => {
                let md = &modules[m as usize];
                format!(
                    "{} (pid {})",
                    md.name.clone().or(md.path.clone()).unwrap_or_else(|| format!("module {m}")),
                    md.associated_pid
                )
            }
            (By::Process, Some(p)) => {
                let pr = v.and_then(|v| v.process(p)).unwrap_or_default();
                let name = file.string_opt(pr.name).ok().flatten().unwrap_or("?");
                format!("pid {} {name}", pr.id)
            }
            (By::Thread, Some(t)) if direct_tid => {
                // The key is the tid itself; the thread table may name it.
                let name = threads
                    .iter()
                    .find(|th| u64::from(th.id) == t)
                    .and_then(|th| file.string_opt(th.name).ok().flatten());
                match name {
                    Some(n) => format!("tid {t} {n}"),
                    None => format!("tid {t}"),
                }
            }
            (By::Thread, Some(t)) => {
                let th = v.and_then(|v| v.thread(t)).unwrap_or_default();
                format!("tid {} (pid {})", th.id, th.associated_pid)
            }
            (By::Event, Some(e)) => events
                .iter()
                .find(|ev| u64::from(ev.id) == e)
                .and_then(|ev| file.string_opt(ev.name).ok().flatten().map(str::to_owned))
                .unwrap_or_else(|| format!("event {e}")),
            (_, None) => "?".into(),
        }
    };
    let mut rows: Vec<Row> = counts
        .into_iter()
        .map(|(key, samples)| Row {
            key,
            label: label(key),
            samples,
            percent: if total == 0 { 0.0 } else { samples as f64 * 100.0 / total as f64 },
        })
        .collect();
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.key.unwrap_or(u64::MAX).cmp(&b.key.unwrap_or(u64::MAX))));
    if let Some(k) = opts.top {
        rows.truncate(k);
    }
    Ok(Report { total, records: data.len(), rows })
}

/// Writes a report as a table or as JSON.
pub fn write_report(r: &Report, opts: &ReportOptions, path: &Path, out: &mut dyn Write) -> std::io::Result<()> {
    let by = match opts.by {
        By::Process => "process",
        By::Thread => "thread",
        By::Module => "module",
        By::Event => "event",
    };
    if opts.json {
        let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        write!(
            out,
            "{{\"file\":\"{}\",\"stream\":{},\"by\":\"{by}\",\"records\":{},\"samples\":{},\"rows\":[",
            esc(&path.display().to_string()),
            opts.stream,
            r.records,
            r.total
        )?;
        for (i, row) in r.rows.iter().enumerate() {
            let key = row.key.map_or("null".to_owned(), |k| k.to_string());
            write!(
                out,
                "{}{{\"key\":{key},\"label\":\"{}\",\"samples\":{},\"percent\":{:.2}}}",
                if i > 0 { "," } else { "" },
                esc(&row.label),
                row.samples,
                row.percent
            )?;
        }
        writeln!(out, "]}}")
    } else {
        writeln!(out, "{}: stream {}, {} of {} samples, by {by}", path.display(), opts.stream, r.total, r.records)?;
        writeln!(out, "{:>10} {:>7}  {by}", "samples", "percent")?;
        for row in &r.rows {
            writeln!(out, "{:>10} {:>6.2}%  {}", row.samples, row.percent, row.label)?;
        }
        Ok(())
    }
}
