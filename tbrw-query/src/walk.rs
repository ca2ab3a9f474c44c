//! The one sample walk under every report and export. [`Walk::open`]
//! prepares a stream for a [`Query`]: its fields ([`SampleFields`]), the
//! bind (stored, or made in memory), the module table, the module filter
//! and the weight; [`Walk::pass`] hands each sample that passes the filters
//! to a closure, with its process, thread and module, in record order, and
//! [`Walk::in_parts`] runs passes over contiguous parts on the bind's
//! threads. Names of processes and threads come from here too
//! ([`Walk::process`], [`Walk::thread`]). Nothing else in the workspace
//! reads a record's fields or applies a filter.
//!
//! A `--time` cut of records in time order (the records have no time
//! field, so the index is their time, or their data section carries the
//! writer's time order flag, docs/FORMAT.md) is a seek: the first record
//! at or after the start and the first at or after the end are found by
//! binary search ([`Walk::span`]), and passes read only the records
//! between, so the pages a cut touches follow the cut. Not when a weight
//! needs every earlier sample (a cumulative CPU time): then every record
//! is read, as without the flag. A pass checks the order it relies on and
//! reports a record out of order as damage rather than answer wrongly.
//!
//! Imports `query`, `stream`, `error`; no report, export or symbol module.

use std::ops::Range;
use tbrw_schema::Progress;

use tbrw::*;

use crate::error::QueryError;
use crate::query::{Query, Weight};
use crate::stream::{self, SampleFields, Weigher};

/// Whether a walk binds the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Always (a stored bind, else one made in memory); the stream must bind.
    Always,
    /// Only when the stream can be bound and the caller needs it; streams
    /// that cannot be bound but carry a tid field are walked by that field.
    IfBindable {
        /// The caller needs processes, threads or modules of the bind.
        needed: bool,
    },
}

/// A sample as [`Walk::pass`] hands it out.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// The record's index in the stream.
    pub index: u64,
    /// The record's bytes.
    pub record: &'a [u8],
    /// The bind's process index (`None`: the stream is walked unbound).
    pub process: Option<u64>,
    /// The bind's thread index (`None`: unbound).
    pub thread: Option<u64>,
    /// The module record covering the address (`None`: none does, or unbound).
    pub module: Option<u64>,
    /// The record's own tid field, when the stream is walked by it (it
    /// cannot be bound); the bind's threads are [`Sample::thread`].
    pub own_tid: Option<u32>,
    /// What the sample weighs ([`Query::weight`]; 1 for samples).
    pub weight: f64,
    /// The CPU time its thread used since its previous sample, ns, when
    /// asked for ([`Walk::with_cpu_time`]) and the records carry one.
    pub cpu_time: Option<u64>,
}

/// A process of the bind: OS pid and name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessName {
    /// The OS pid.
    pub pid: u32,
    /// Its name, when the file has one.
    pub name: Option<String>,
}

/// A thread: OS tid, its process's pid, and name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadName {
    /// The OS tid.
    pub tid: u32,
    /// The pid of its process, when the bind says.
    pub pid: Option<u32>,
    /// Its name, when the file has one.
    pub name: Option<String>,
}

/// A stream prepared for a query.
pub struct Walk<'f> {
    file: &'f Tb5File,
    query: Query,
    data: DataSection<'f>,
    fields: SampleFields,
    bound: Option<bind::Bound<'f>>,
    /// Records grouped and filtered by their own tid field (unbound).
    direct_tid: bool,
    modules: Vec<Module>,
    module_filter: Option<Vec<bool>>,
    weigher: Weigher,
    /// Each sample's CPU time, whatever the weight ([`Walk::with_cpu_time`]).
    cpu_weigher: Option<Weigher>,
    /// The file's thread table, for the names of unbound threads.
    threads: Vec<Tid<StringId>>,
    /// The file's named process creation records, by pid then time: the
    /// names of the bind's processes ([`Walk::process`]).
    process_records: Vec<Pid<StringId>>,
    /// The records a pass reads ([`Walk::span`]).
    span: Range<u64>,
    /// Whether `span` was found by binary search on the records' times
    /// (a pass then checks their order).
    seeks: bool,
}

impl<'f> Walk<'f> {
    /// Prepares stream `query.stream` of `file`. A weight the stream cannot
    /// give, a module filter naming no module, a stream without data or
    /// that cannot be bound when it must be, are errors naming the file
    /// and stream.
    pub fn open(file: &'f Tb5File, query: &Query, binding: Binding) -> Result<Walk<'f>, QueryError> {
        let n = query.stream;
        let name = || file.path().display().to_string();
        let s = stream::open_stream(file, n)?;
        let fields = SampleFields::of(file, n)?;
        let data = s.data()?.ok_or_else(|| QueryError::Unsupported {
            file: name(),
            stream: n,
            what: "it has no data".into(),
        })?;
        let weigher = fields.weigher(query.weight, file, n)?;
        let stored = s.bind_view()?;
        let bindable = fields.bindable() || stored.is_some();
        let direct_tid = !bindable && fields.has_tid();
        let bind_now = match binding {
            Binding::Always => true,
            Binding::IfBindable { needed } => {
                bindable
                    && (needed
                        || query.filters.pid.is_some()
                        || query.filters.module.is_some()
                        || query.filters.tid.is_some())
            }
        };
        if !bindable && binding == Binding::Always {
            return Err(QueryError::Unsupported {
                file: name(),
                stream: n,
                what: "its records cannot be bound (no legacy sample record, or no ST_IP and ST_PID)".into(),
            });
        }
        if !bindable && (query.filters.pid.is_some() || query.filters.module.is_some()) {
            return Err(QueryError::FilterNeedsBinding { file: name(), stream: n, thread: false });
        }
        if !bindable && !direct_tid && query.filters.tid.is_some() {
            return Err(QueryError::FilterNeedsBinding { file: name(), stream: n, thread: true });
        }
        let bound = match stored {
            Some(v) => Some(bind::Bound::Stored(v)),
            None if bind_now => Some(bind::Bound::of(file, n)?),
            None => None,
        };
        let modules = stream::modules(file)?;
        let module_filter = stream::module_filter(&modules, query.filters.module.as_deref());
        if let (Some(want), Some(f)) = (&query.filters.module, &module_filter) {
            if !f.contains(&true) {
                return Err(QueryError::NoSuchModule { file: name(), stream: n, module: want.clone() });
            }
        }
        let (threads, process_records) = match file.processes()? {
            Some(pt) => {
                let threads = if direct_tid { pt.tids().collect() } else { Vec::new() };
                let mut named: Vec<Pid<StringId>> = pt
                    .pids()
                    .filter(|p| !p.flags.contains(PidTidFlags::DESTROYED) && p.name != StringId::NONE)
                    .collect();
                named.sort_by_key(|p| (p.id, p.event_when));
                (threads, named)
            }
            None => (Vec::new(), Vec::new()),
        };
        let all = 0..data.len();
        let seek = query.filters.time.filter(|_| !weigher.needs_history());
        let (span, seeks) = match seek {
            Some(t) if !fields.has_time() || data.time_ordered() => (time_span(&data, &fields, t), fields.has_time()),
            _ => (all, false),
        };
        Ok(Walk {
            file,
            query: query.clone(),
            data,
            fields,
            bound,
            direct_tid,
            modules,
            module_filter,
            weigher,
            cpu_weigher: None,
            threads,
            process_records,
            span,
            seeks,
        })
    }

    /// Also hands out each sample's CPU time ([`Sample::cpu_time`]), when
    /// the records carry one, whatever the query's weight (the Firefox
    /// Profiler's CPU deltas).
    pub fn with_cpu_time(mut self) -> Result<Walk<'f>, QueryError> {
        if self.fields.has_cputime() {
            let w = self.fields.weigher(Weight::Cputime, self.file, self.query.stream)?;
            if w.needs_history() {
                (self.span, self.seeks) = (0..self.records(), false);
            }
            self.cpu_weigher = Some(w);
        }
        Ok(self)
    }

    /// The file.
    pub fn file(&self) -> &'f Tb5File {
        self.file
    }

    /// The query.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// The stream's fields.
    pub fn fields(&self) -> &SampleFields {
        &self.fields
    }

    /// The stream's records.
    pub fn data(&self) -> &DataSection<'f> {
        &self.data
    }

    /// Records in the stream.
    pub fn records(&self) -> u64 {
        self.data.len()
    }

    /// The records a pass reads: all of them, or, for a `--time` cut of
    /// records in time order, those from the first at or after the cut's
    /// start to the last before its end (binary search: O(log n) records
    /// read). Passes and parts keep inside it.
    pub fn span(&self) -> Range<u64> {
        self.span.clone()
    }

    /// The file's module table.
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// Whether the stream is walked with a bind.
    pub fn is_bound(&self) -> bool {
        self.bound.is_some()
    }

    /// Whether threads are the records' own tid field (a stream that cannot be bound).
    pub fn direct_tid(&self) -> bool {
        self.direct_tid
    }

    /// The bind, when the stream is walked with one.
    pub fn bind_view(&self) -> Option<BindView<'_>> {
        self.bound.as_ref().map(bind::Bound::view)
    }

    /// The parts a pass is split into: the bind's threads, one per 64 Ki
    /// records at most; one when samples are weighed (floating-point sums
    /// would depend on the split, and a cumulative CPU time needs each
    /// thread's samples in order).
    pub fn parts(&self) -> usize {
        if self.query.weight != Weight::Samples {
            return 1;
        }
        parts_for(self.span.end - self.span.start)
    }

    /// The error of filters that leave no sample.
    pub fn nothing_matches(&self) -> QueryError {
        QueryError::NothingMatches {
            file: self.file.path().display().to_string(),
            stream: self.query.stream,
            filters: Box::new(self.query.filters.clone()),
        }
    }

    /// Passes over records `range` (within [`Walk::span`]) in order: each
    /// sample that passes the filters goes to `each`. `progress` gets the
    /// records done in the range. Returns the samples that passed, or the
    /// first record bound to a module past the module table, or one out of
    /// time order in a section marked in time order.
    #[inline]
    pub fn pass(
        &self,
        range: Range<u64>,
        progress: &mut dyn Progress,
        mut each: impl FnMut(&Sample<'_>),
    ) -> Result<u64, QueryError> {
        let filters = &self.query.filters;
        let view = self.bind_view();
        let mut weigher = self.weigher.clone();
        let mut cpu_weigher = self.cpu_weigher.clone();
        let modules = self.modules.len() as u64;
        let mut passed = 0u64;
        let mut binds = Vec::new();
        let chunk = 1 << 16;
        let range = range.start.max(self.span.start)..range.end.min(self.span.end);
        let mut last_time = 0u64;
        let mut i = range.start;
        while i < range.end {
            let end = (i + chunk).min(range.end);
            binds.clear();
            if let Some(v) = &view {
                v.data_binds(i, (end - i) as usize, &mut binds);
            }
            for k in i..end {
                let rec = self.data.record(k).unwrap_or_default();
                let bind = binds.get((k - i) as usize);
                // A cumulative CPU time is differenced over every sample
                // of a thread, those the filters leave out included.
                // Per thread: the bind's thread instance, else the
                // record's own tid.
                let thread = || match bind {
                    Some(b) if !self.direct_tid => b.tid_index,
                    _ => self.fields.tid(rec).map_or(0, u64::from),
                };
                let weight = if weigher.is_one() { 1.0 } else { weigher.weigh(rec, thread()) };
                let cpu_time = cpu_weigher.as_mut().map(|c| c.weigh(rec, thread()) as u64);
                if let Some((lo, hi)) = filters.time {
                    let t = self.fields.time(rec, k);
                    if self.seeks {
                        if t < last_time {
                            return Err(self.out_of_order(k, t, last_time));
                        }
                        last_time = t;
                    }
                    if t < lo || t >= hi {
                        continue;
                    }
                }
                let mut sample = Sample {
                    index: k,
                    record: rec,
                    process: None,
                    thread: None,
                    module: None,
                    own_tid: None,
                    weight,
                    cpu_time,
                };
                if self.direct_tid {
                    sample.own_tid = self.fields.tid(rec);
                    if filters.tid.is_some() && sample.own_tid != filters.tid {
                        continue;
                    }
                }
                if let (Some(v), Some(b)) = (&view, bind) {
                    if let Some(p) = filters.pid {
                        if v.process(b.pid_index).is_none_or(|x| x.id != p) {
                            continue;
                        }
                    }
                    if let (Some(t), false) = (filters.tid, self.direct_tid) {
                        if v.thread(b.tid_index).is_none_or(|x| x.id != t) {
                            continue;
                        }
                    }
                    if b.module_index != UNKNOWN_MODULE && b.module_index >= modules {
                        return Err(QueryError::Damaged {
                            file: self.file.path().display().to_string(),
                            stream: self.query.stream,
                            what: format!(
                                "record {k} is bound to module {} but the module table has {modules}",
                                b.module_index
                            ),
                        });
                    }
                    let module = (b.module_index != UNKNOWN_MODULE).then_some(b.module_index);
                    if let Some(mf) = &self.module_filter {
                        if !module.is_some_and(|m| mf[m as usize]) {
                            continue;
                        }
                    }
                    sample.process = Some(b.pid_index);
                    sample.thread = Some(b.tid_index);
                    sample.module = module;
                }
                passed += 1;
                each(&sample);
            }
            progress.done(end - range.start);
            i = end;
        }
        Ok(passed)
    }

    /// Runs `count` over `parts` contiguous parts of the records, the first
    /// on this thread and each other on its own, and folds the later
    /// parts' results into the first's in stream order with `merge`.
    /// `progress` gets the first part's records done times the number of
    /// parts.
    pub fn in_parts<T: Send>(
        &self,
        parts: usize,
        progress: &mut dyn Progress,
        count: impl Fn(Range<u64>, &mut dyn Progress) -> T + Sync,
        merge: impl FnMut(T, T) -> T,
    ) -> T {
        in_parts(self.span(), parts, progress, count, merge)
    }

    /// The error of a record whose time is below its predecessor's in a
    /// data section marked in time order.
    #[cold]
    fn out_of_order(&self, k: u64, t: u64, before: u64) -> QueryError {
        QueryError::Damaged {
            file: self.file.path().display().to_string(),
            stream: self.query.stream,
            what: format!(
                "record {k} has time {t}, below the {before} of a record before it, but the data section is marked as in time order (tbrw verify checks it)"
            ),
        }
    }

    /// Process `index` of the bind, named as perf names a process: by its
    /// `comm`, the name the file's process records give its pid when the
    /// process began (the latest record at or before its start, else the
    /// pid's first), and only without one by its executable's file name
    /// (the bind's), so a script run by `/bin/sh` is `loop.sh`, not `dash`.
    pub fn process(&self, index: u64) -> ProcessName {
        let p = self.bind_view().and_then(|v| v.process(index)).unwrap_or_default();
        let start = if p.flags.contains(PidTidFlags::WHEN_TSC) { p.event_when } else { 0 };
        let name = self.recorded_process_name(p.id, start).or_else(|| self.string(p.name));
        ProcessName { pid: p.id, name }
    }

    /// The name of process `pid` begun at `start` in the file's process records.
    fn recorded_process_name(&self, pid: u32, start: u64) -> Option<String> {
        let from = self.process_records.partition_point(|r| r.id < pid);
        let to = self.process_records.partition_point(|r| r.id <= pid);
        let records = &self.process_records[from..to];
        let record = records.iter().rev().find(|r| r.event_when <= start).or(records.first())?;
        self.string(record.name)
    }

    /// Thread `index` of the bind.
    pub fn thread(&self, index: u64) -> ThreadName {
        let t = self.bind_view().and_then(|v| v.thread(index)).unwrap_or_default();
        ThreadName { tid: t.id, pid: Some(t.associated_pid), name: self.string(t.name) }
    }

    /// An unbound thread by its OS tid (the records' own tid field), named
    /// from the file's thread table.
    pub fn thread_by_tid(&self, tid: u32) -> ThreadName {
        let name = self.threads.iter().find(|t| t.id == tid).and_then(|t| self.string(t.name));
        ThreadName { tid, pid: None, name }
    }

    fn string(&self, id: StringId) -> Option<String> {
        self.file.string_opt(id).ok().flatten().map(str::to_owned)
    }
}

/// The parts a pass over `records` records is split into: the bind's
/// threads, one per 64 Ki records at most.
pub fn parts_for(records: u64) -> usize {
    tbrw::bind::bind_threads().min(usize::try_from(records.div_ceil(1 << 16)).unwrap_or(usize::MAX)).max(1)
}

/// The records `start..end` of `data` whose times can lie in `lo..hi`,
/// its records being in time order: the first at or after `lo` and the
/// first at or after `hi`, each by binary search (the pages of O(log n)
/// records read).
pub fn time_span(data: &DataSection<'_>, fields: &SampleFields, (lo, hi): (u64, u64)) -> Range<u64> {
    let time = |k: u64| fields.time(data.record(k).unwrap_or_default(), k);
    let first_at_or_after = |from: u64, t: u64| {
        let (mut a, mut b) = (from, data.len());
        while a < b {
            let m = a + (b - a) / 2;
            if time(m) < t {
                a = m + 1;
            } else {
                b = m;
            }
        }
        a
    };
    let start = first_at_or_after(0, lo);
    start..first_at_or_after(start, hi.max(lo))
}

/// Runs `count` over `parts` contiguous parts of records `records`, the
/// first on this thread and each other on its own, and folds the later
/// parts' results into the first's in stream order with `merge`.
pub fn in_parts<T: Send>(
    records: Range<u64>,
    parts: usize,
    progress: &mut dyn Progress,
    count: impl Fn(Range<u64>, &mut dyn Progress) -> T + Sync,
    mut merge: impl FnMut(T, T) -> T,
) -> T {
    let (first, n) = (records.start, records.end.saturating_sub(records.start));
    let parts = (parts as u64).clamp(1, n.max(1));
    let range = |p: u64| first + n * p / parts..first + n * (p + 1) / parts;
    let count = &count;
    std::thread::scope(|scope| {
        let later: Vec<_> = (1..parts).map(|p| scope.spawn(move || count(range(p), &mut |_| {}))).collect();
        let mut all = count(range(0), &mut |done| progress.done(done * parts));
        for part in later {
            match part.join() {
                Ok(part) => all = merge(all, part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}
