//! Sample counts of a stream per process, thread, module or event, with
//! filters, from a stored bind or one made in memory.

use tbrw::*;

use super::{percent, By, Key, Report, ReportOptions, Row, Weight, Weights};
use crate::error::QueryError;
use rustc_hash::FxHashMap as IdMap;
use tbrw_import::fields::{self, read_le};

/// The sample groupings that work for stream `n`, in the order `--by auto`
/// prefers them: module and process need records that can be bound (a
/// legacy sample record, or an IP and a PID), thread a bind or a 4-byte tid
/// field, event a legacy record, an event id field or a single event.
pub fn groupings(file: &Tb5File, n: u32) -> std::result::Result<Vec<By>, QueryError> {
    let s = stream(file, n)?;
    let Some(layout) = s.layout()? else { return Ok(Vec::new()) };
    let legacy = layout.legacy_pc_offset().is_some();
    let bindable =
        legacy || (layout.find(desc_type::IP, None).is_some() && layout.find(desc_type::PID, None).is_some());
    let tid = layout.find(desc_type::TID, None).is_some_and(|f| f.size == 4);
    let event = legacy
        || layout.find(fields::EVENT_ID, None).is_some_and(|f| f.size == 4)
        || s.events()?.is_some_and(|e| e.len() == 1);
    let works = [(By::Module, bindable), (By::Process, bindable), (By::Thread, bindable || tid), (By::Event, event)];
    Ok(works.into_iter().filter(|(_, w)| *w).map(|(b, _)| b).collect())
}

/// Stream `n`, or an error naming the file and how many streams it has.
pub fn stream(file: &Tb5File, n: u32) -> std::result::Result<StreamReader<'_>, QueryError> {
    let count = file.stream_count();
    if n >= count {
        let has = match count {
            0 => "no stream".to_owned(),
            1 => "one stream, 0".to_owned(),
            c => format!("{c} streams, 0 to {}", c - 1),
        };
        return Err(QueryError::msg(format!(
            "{}: stream {n} does not exist (the file has {has})",
            file.path().display()
        )));
    }
    Ok(file.stream(n)?)
}

/// `--by` values as the command line spells them, for messages.
pub fn by_list(bys: &[By]) -> String {
    let v: Vec<String> = bys.iter().map(|b| format!("--by {}", b.name())).collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

/// Computes the report of a stream. `progress` gets records done.
/// [`By::Auto`] becomes the first of [`groupings`]; a grouping the stream
/// does not support is an error that lists those it does. Filters that
/// leave no sample are an error too (see the README's report section).
pub fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64),
) -> std::result::Result<Report, QueryError> {
    weighted_report(file, opts, progress).map(|(r, _)| r)
}

/// [`report`], with the weight sums when `opts.weight` is not the sample
/// count (the rows' percentages and order then follow the weight).
pub fn weighted_report(
    file: &Tb5File,
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64),
) -> std::result::Result<(Report, Option<Weights>), QueryError> {
    let n = opts.stream;
    if opts.by == By::Task {
        return Err(QueryError::msg("--by task is the MTMC task report, not a sample count"));
    }
    if opts.by.symbolic() || opts.by == By::Combined {
        return Err(QueryError::msg(format!(
            "--by {} needs the symbolizer: report::functions::report",
            opts.by.name()
        )));
    }
    let works = groupings(file, n)?;
    let by = match opts.by {
        By::Auto => *works.first().ok_or_else(|| {
            QueryError::msg(format!(
                "{}: stream {n} has records no report can group: no data descriptor, no bind fields, no tid field and no single event",
                file.path().display()
            ))
        })?,
        b if works.contains(&b) => b,
        b => {
            let why = if matches!(b, By::Module | By::Process | By::Thread) {
                "its records cannot be bound (no legacy sample record, or no ST_IP and ST_PID)"
            } else {
                "its records have no event index or event id and it has more than one event"
            };
            return Err(QueryError::msg(format!(
                "{}: stream {n}: --by {} does not work here: {why}; what works: {}",
                file.path().display(),
                b.name(),
                by_list(&works)
            )));
        }
    };
    let s = stream(file, n)?;
    let Some(data) = s.data()? else {
        return Err(QueryError::msg(format!("{}: stream {n} has no data", file.path().display())));
    };
    let layout = s
        .layout()?
        .ok_or_else(|| QueryError::msg(format!("{}: stream {n} has no data descriptor", file.path().display())))?;
    // Offsets and sizes come from the file: every field the count reads is
    // checked once against the records' size, so the loop below never
    // reads past a record (a file can pass open with a descriptor that
    // does not fit its data section).
    let record_size = data.record_size() as u64;
    for f in layout.fields() {
        if u64::from(f.offset) + u64::from(f.size) > record_size {
            return Err(QueryError::msg(format!(
                "{}: stream {n}: descriptor entry {} ({}) at byte {} with {} bytes lies past the end of the {record_size}-byte records",
                file.path().display(),
                f.entry,
                fields::name(f.desc_type).unwrap_or("a field"),
                f.offset,
                f.size,
            )));
        }
    }
    // Records that cannot be bound (no IP/PID) but name their thread (MTMC
    // tasks, winIDEA calls by context) are grouped and filtered by that
    // field directly.
    let tid_field = layout.find(desc_type::TID, None).filter(|f| f.size == 4).map(|f| f.offset as usize);
    let unbindable = layout.legacy_pc_offset().is_none()
        && (layout.find(desc_type::IP, None).is_none() || layout.find(desc_type::PID, None).is_none());
    let stored = s.bind_view()?;
    let direct_tid = unbindable && tid_field.is_some() && stored.is_none();
    let bound_filters = opts.pid.is_some() || opts.module.is_some() || (opts.tid.is_some() && !direct_tid);
    let needs_bind = match by {
        By::Process | By::Module => true,
        By::Thread => !direct_tid || bound_filters,
        By::Event => bound_filters,
        By::Task | By::Auto | By::Function | By::Line | By::Address | By::Combined => false,
    };
    let bound = match stored {
        Some(v) => Some(bind::Bound::Stored(v)),
        None if needs_bind => Some(bind::Bound::of(file, n)?),
        None => None,
    };
    let view = bound.as_ref().map(bind::Bound::view);
    let modules = resolved_modules(file)?;
    let module_filter = module_filter(&modules, opts.module.as_deref());
    if let (Some(want), Some(f)) = (&opts.module, &module_filter) {
        if !f.contains(&true) {
            return Err(nothing_matches(file, n, &format!("--module {want:?} (no module has that name or path)")));
        }
    }
    let pc_at = layout.legacy_pc_offset().map(|x| x as usize);
    let time_at = time_field(&layout);
    let events = s.events()?.unwrap_or_default();
    // Records that carry their event's id (winIDEA calls, say).
    let event_id_at = layout.find(fields::EVENT_ID, None).filter(|f| f.size == 4).map(|f| f.offset as usize);

    // The weight of a record: 1, its cputime delta, or power x that delta.
    let delta_at = layout.find(fields::CPUTIME_DELTA, None).filter(|f| f.size == 8).map(|f| f.offset as usize);
    let power_at = layout.find(desc_type::POWER, None).filter(|f| f.size == 8).map(|f| f.offset as usize);
    // (delta offset, power offset when energy).
    let weigh: Option<(usize, Option<usize>)> = match (opts.weight, delta_at, power_at) {
        (Weight::Samples, _, _) => None,
        (Weight::Cputime, Some(d), _) => Some((d, None)),
        (Weight::Energy, Some(d), Some(p)) => Some((d, Some(p))),
        (w, _, _) => {
            return Err(QueryError::msg(format!(
                "{}: stream {n} has no {} field: --weight {} needs a sampler import{}",
                file.path().display(),
                if delta_at.is_none() { "cputime delta" } else { "power" },
                w.name(),
                if delta_at.is_none() {
                    " with cputime (the oldest layout has none)"
                } else {
                    " with power (a power profile, or a current profile imported with --volts)"
                }
            )))
        }
    };
    // Module, process and thread indexes are below their tables' sizes.
    let dense = match (by, &view) {
        (By::Module, _) => modules.len(),
        (By::Process, Some(v)) => usize::try_from(v.process_count()).unwrap_or(0),
        (By::Thread, Some(v)) if !direct_tid => usize::try_from(v.thread_count()).unwrap_or(0),
        _ => 0,
    };
    // One part of the records counted: (counts, weights, records counted,
    // their weight). The first error in the part's order, if any.
    let count_part = |range: std::ops::Range<u64>,
                      progress: &mut dyn FnMut(u64)|
     -> Result<(Tally<u64>, Tally<f64>, u64, f64), QueryError> {
        let mut weights: Tally<f64> = Tally::new(if weigh.is_some() { dense } else { 0 });
        let mut total_weight = 0f64;
        let mut counts: Tally<u64> = Tally::new(dense);
        let mut total = 0u64;
        let mut binds = Vec::new();
        let chunk = 1 << 16;
        let mut i = range.start;
        while i < range.end {
            let end = (i + chunk).min(range.end);
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
                    if b.module_index != UNKNOWN_MODULE && b.module_index >= modules.len() as u64 {
                        return Err(QueryError::msg(format!(
                            "{}: stream {n}: record {k} is bound to module {} but the module table has {}",
                            file.path().display(),
                            b.module_index,
                            modules.len()
                        )));
                    }
                    if let Some(mf) = &module_filter {
                        if b.module_index == UNKNOWN_MODULE || !mf[b.module_index as usize] {
                            continue;
                        }
                    }
                }
                let key = match by {
                    By::Process => bind.map(|b| b.pid_index),
                    By::Thread => direct.map(u64::from).or(bind.map(|b| b.tid_index)),
                    By::Module => bind.and_then(|b| (b.module_index != UNKNOWN_MODULE).then_some(b.module_index)),
                    By::Event => Some(match (pc_at, event_id_at) {
                        (Some(pc), _) => {
                            let pc_rec = rec.get(pc..).and_then(SampleRecordPc::from_slice).unwrap_or_default();
                            u64::from(pc_rec.event_index())
                        }
                        (None, Some(at)) => read_le(rec, at, 4),
                        (None, None) => u64::from(events[0].id),
                    }),
                    By::Task | By::Auto | By::Function | By::Line | By::Address | By::Combined => None,
                };
                counts.add(key, 1);
                total += 1;
                if let Some((d, power)) = weigh {
                    let delta = read_le(rec, d, 8) as f64;
                    let x = power.map_or(delta, |p| f64::from_bits(read_le(rec, p, 8)) * delta * 1e-9);
                    weights.add(key, x);
                    total_weight += x;
                }
            }
            i = end;
            progress(i - range.start);
        }
        Ok((counts, weights, total, total_weight))
    };
    // Counts are integers: the parts' sums add up to the one-pass sums
    // whatever the split, so the records are counted in contiguous parts on
    // the bind's threads. Weights are floating-point sums, whose last bits
    // depend on the order of the additions: those are made in one pass, so
    // that a report does not depend on the machine's core count.
    let parts = if weigh.is_none() { parts_for(data.len()) } else { 1 };
    let (counts, weights, total, total_weight) = in_parts(data.len(), parts, progress, count_part, |all, part| {
        // The first error in stream order.
        match (all, part) {
            (Ok((mut c, mut w, n, x)), Ok((c2, w2, n2, x2))) => {
                c.absorb(c2);
                w.absorb(w2);
                Ok((c, w, n + n2, x + x2))
            }
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        }
    })?;

    if total == 0 && !data.is_empty() {
        let given = filters_given(opts.pid, opts.tid, opts.module.as_deref(), opts.time);
        return Err(nothing_matches(file, n, &given));
    }
    if opts.top == Some(0) {
        return Err(nothing_matches(file, n, "--top 0"));
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
        match (by, key) {
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
            (_, None) | (By::Task | By::Auto | By::Function | By::Line | By::Address | By::Combined, _) => Key::Unbound,
        }
    };
    let mut counted: Vec<(Option<u64>, u64)> = counts.counted();
    let weight_of = |k: &Option<u64>| weights.get(*k);
    counted.sort_by(|a, b| {
        weight_of(&b.0)
            .total_cmp(&weight_of(&a.0))
            .then(b.1.cmp(&a.1))
            .then(a.0.unwrap_or(u64::MAX).cmp(&b.0.unwrap_or(u64::MAX)))
    });
    if let Some(k) = opts.top {
        counted.truncate(k);
    }
    let sums: Option<Weights> = weigh.as_ref().map(|_| Weights {
        weight: opts.weight,
        unit: opts.weight.unit(),
        total: total_weight,
        rows: counted.iter().map(|(k, _)| weight_of(k)).collect(),
    });
    let share = |key: &Option<u64>, samples: u64| match weigh {
        None => percent(samples, total),
        Some(_) if total_weight > 0.0 => weight_of(key) * 100.0 / total_weight,
        Some(_) => 0.0,
    };
    let rows = counted
        .into_iter()
        .map(|(key, samples)| Row { key: typed(key), samples, percent: share(&key, samples), task: None })
        .collect();
    let r = Report {
        file: file.path().display().to_string(),
        stream: n,
        by,
        records: data.len(),
        samples: total,
        rows,
        totals: Vec::new(),
    };
    Ok((r, sums))
}

/// The parts a pass over `records` records is split into: the bind's
/// threads, one per 64 Ki records at most.
pub fn parts_for(records: u64) -> usize {
    tbrw::bind::bind_threads().min(usize::try_from(records.div_ceil(1 << 16)).unwrap_or(usize::MAX)).max(1)
}

/// Runs `count` over `parts` contiguous parts of records `0..records`, the
/// first on this thread and each other on its own, and folds the later
/// parts' results into the first's in stream order with `merge`.
/// `progress` gets the first part's records done times the number of
/// parts.
pub fn in_parts<T: Send>(
    records: u64,
    parts: usize,
    progress: &mut dyn FnMut(u64),
    count: impl Fn(std::ops::Range<u64>, &mut dyn FnMut(u64)) -> T + Sync,
    mut merge: impl FnMut(T, T) -> T,
) -> T {
    let parts = (parts as u64).clamp(1, records.max(1));
    let range = |p: u64| records * p / parts..records * (p + 1) / parts;
    let count = &count;
    std::thread::scope(|scope| {
        let later: Vec<_> = (1..parts).map(|p| scope.spawn(move || count(range(p), &mut |_| {}))).collect();
        let mut all = count(range(0), &mut |done| progress(done * parts));
        for part in later {
            match part.join() {
                Ok(part) => all = merge(all, part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}

/// Sums per counting key, added to once per record: in a vector for the
/// indexes below its size (modules, processes, threads), in a map for the
/// others; either way no SipHash per record.
struct Tally<T> {
    dense: Vec<T>,
    none: T,
    other: IdMap<u64, T>,
}

impl<T: Copy + Default + PartialEq + std::ops::AddAssign> Tally<T> {
    fn new(dense: usize) -> Tally<T> {
        Tally { dense: vec![T::default(); dense], none: T::default(), other: IdMap::default() }
    }

    #[inline]
    fn add(&mut self, key: Option<u64>, x: T) {
        let Some(k) = key else {
            self.none += x;
            return;
        };
        match usize::try_from(k).ok().and_then(|i| self.dense.get_mut(i)) {
            Some(sum) => *sum += x,
            None => *self.other.entry(k).or_default() += x,
        }
    }

    fn get(&self, key: Option<u64>) -> T {
        match key {
            None => self.none,
            Some(k) => match usize::try_from(k).ok().and_then(|i| self.dense.get(i)) {
                Some(&sum) => sum,
                None => self.other.get(&k).copied().unwrap_or_default(),
            },
        }
    }

    /// Adds the sums of `later` (a later part of the same records).
    fn absorb(&mut self, later: Tally<T>) {
        for (sum, x) in self.dense.iter_mut().zip(later.dense) {
            *sum += x;
        }
        self.none += later.none;
        for (k, x) in later.other {
            *self.other.entry(k).or_default() += x;
        }
    }

    /// The keys added to (a sum other than zero: counts) and their sums.
    fn counted(self) -> Vec<(Option<u64>, T)> {
        let zero = T::default();
        let dense = self.dense.into_iter().enumerate().filter(|&(_, n)| n != zero).map(|(i, n)| (Some(i as u64), n));
        let none = (self.none != zero).then_some((None, self.none));
        dense.chain(self.other.into_iter().map(|(k, n)| (Some(k), n))).chain(none).collect()
    }
}

/// The one error of every filter that leaves no sample (exit status 1).
pub fn nothing_matches(file: &Tb5File, n: u32, filters: &str) -> QueryError {
    QueryError::msg(format!("{}: stream {n}: no sample matches {filters}", file.path().display()))
}

/// The sample filters given, as the command line spells them (what
/// [`nothing_matches`] names when they leave no sample).
pub fn filters_given(pid: Option<u32>, tid: Option<u32>, module: Option<&str>, time: Option<(u64, u64)>) -> String {
    let mut given = Vec::new();
    if let Some(p) = pid {
        given.push(format!("--pid {p}"));
    }
    if let Some(t) = tid {
        given.push(format!("--tid {t}"));
    }
    if let Some(m) = module {
        given.push(format!("--module {m:?}"));
    }
    if let Some((lo, hi)) = time {
        given.push(format!("--time {lo}..{}", if hi == u64::MAX { String::new() } else { hi.to_string() }));
    }
    given.join(" ")
}

/// The file's modules with their strings, in table order.
pub fn resolved_modules(file: &Tb5File) -> Result<Vec<Module>> {
    match file.modules()? {
        Some(mt) => mt.iter().map(|m| file.resolve(m?)).collect(),
        None => Ok(Vec::new()),
    }
}

/// `--module NAME`: per module of `modules`, whether its name or path is
/// `want`; `None` without the filter.
pub fn module_filter(modules: &[Module], want: Option<&str>) -> Option<Vec<bool>> {
    want.map(|want| {
        modules.iter().map(|m| m.name.as_deref() == Some(want) || m.path.as_deref() == Some(want)).collect()
    })
}

/// (offset, size) of the time `--time` filters on: a legacy sample's TSC,
/// else the first 4- or 8-byte time stamp field.
pub fn time_field(layout: &RecordLayout) -> Option<(usize, usize)> {
    match (layout.legacy_pc_offset(), layout.tsc_offset()) {
        (Some(_), Some(t)) => Some((t as usize, 8)),
        _ => layout
            .find(desc_type::TIME_STAMP, None)
            .filter(|f| f.size == 4 || f.size == 8)
            .map(|f| (f.offset as usize, f.size as usize)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::Tally;

    proptest! {
        /// Against a map of every key: the same sums, each key once, keys
        /// below, at and past the dense part and none, counted in one part
        /// or two.
        #[test]
        fn a_tally_sums_as_a_map_does(
            dense in 0usize..6,
            adds in proptest::collection::vec((proptest::option::of(0u64..10), 1u64..5), 0..60),
            cut in 0usize..61,
        ) {
            // Two parts, the second absorbed into the first: as a report
            // counted on several threads sums.
            let cut = cut.min(adds.len());
            let mut tally = Tally::new(dense);
            let mut later = Tally::new(dense);
            let mut want: HashMap<Option<u64>, u64> = HashMap::new();
            for (i, &(k, x)) in adds.iter().enumerate() {
                if i < cut { tally.add(k, x) } else { later.add(k, x) }
                *want.entry(k).or_default() += x;
            }
            tally.absorb(later);
            for k in (0..12).map(Some).chain([None]) {
                prop_assert_eq!(tally.get(k), want.get(&k).copied().unwrap_or(0));
            }
            let mut got = tally.counted();
            got.sort_unstable();
            let mut want: Vec<(Option<u64>, u64)> = want.into_iter().collect();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }
}
