//! Sample counts of a stream per process, thread, module or event, with
//! filters, from a stored bind or one made in memory.

use std::collections::HashMap;

use tbrw::bind::BindView;
use tbrw::*;

use super::{percent, By, Key, Report, ReportOptions, Row};
use crate::error::CliError;
use crate::fields::{self, read_le};

/// Computes the report of a stream. `progress` gets records done.
pub fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64),
) -> std::result::Result<Report, CliError> {
    let n = opts.stream;
    if opts.by == By::Task {
        return Err(CliError::msg("--by task is the MTMC task report, not a sample count"));
    }
    if opts.by.symbolic() || opts.by == By::Combined {
        return Err(CliError::msg(format!("--by {} needs the symbolizer: report::functions::report", opts.by.name())));
    }
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
        By::Task | By::Function | By::Line | By::Address | By::Combined => false,
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
    let event_id_at = layout.find(fields::EVENT_ID, None).filter(|f| f.size == 4).map(|f| f.offset as usize);
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
                let t = time_at.map_or(k, |(at, size)| read_le(rec, at, size));
                if t < lo || t >= hi {
                    continue;
                }
            }
            let bind = binds.get((k - i) as usize).copied();
            let direct = tid_field.filter(|_| direct_tid).map(|at| read_le(rec, at, 4) as u32);
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
                    (None, Some(at)) => read_le(rec, at, 4),
                    (None, None) => u64::from(events[0].id),
                }),
                By::Task | By::Function | By::Line | By::Address | By::Combined => None,
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
    let string = |id: StringId| file.string_opt(id).ok().flatten().map(str::to_owned);
    // The counting key is an index or id whose meaning depends on the
    // grouping; the row gets the thing it stands for.
    let typed = |key: Option<u64>| -> Key {
        let v = view.as_ref();
        match (opts.by, key) {
            (By::Module, None) => Key::UnknownModule,
            (By::Module, Some(m)) => {
                let md = &modules[m as usize];
                Key::Module { index: m, name: md.name.clone(), path: md.path.clone(), pid: md.associated_pid }
            }
            (By::Process, Some(p)) => {
                let pr = v.and_then(|v| v.process(p)).unwrap_or_default();
                Key::Process { index: p, pid: pr.id, name: string(pr.name) }
            }
            (By::Thread, Some(t)) if direct_tid => Key::Thread {
                index: None,
                tid: t as u32,
                pid: None,
                name: threads.iter().find(|th| u64::from(th.id) == t).and_then(|th| string(th.name)),
            },
            (By::Thread, Some(t)) => {
                let th = v.and_then(|v| v.thread(t)).unwrap_or_default();
                Key::Thread { index: Some(t), tid: th.id, pid: Some(th.associated_pid), name: string(th.name) }
            }
            (By::Event, Some(e)) => Key::Event {
                id: e as u32,
                name: events.iter().find(|ev| u64::from(ev.id) == e).and_then(|ev| string(ev.name)),
            },
            (_, None) | (By::Task | By::Function | By::Line | By::Address | By::Combined, _) => Key::Unbound,
        }
    };
    let mut counted: Vec<(Option<u64>, u64)> = counts.into_iter().collect();
    counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.unwrap_or(u64::MAX).cmp(&b.0.unwrap_or(u64::MAX))));
    if let Some(k) = opts.top {
        counted.truncate(k);
    }
    let rows = counted
        .into_iter()
        .map(|(key, samples)| Row { key: typed(key), samples, percent: percent(samples, total), task: None })
        .collect();
    Ok(Report {
        file: file.path().display().to_string(),
        stream: n,
        by: opts.by,
        records: data.len(),
        samples: total,
        rows,
        totals: Vec::new(),
    })
}
