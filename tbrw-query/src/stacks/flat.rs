//! Samples without call stacks (no stack table, no call-chain stream),
//! aggregated per stack and label set by sorting rather than hashing: each
//! part (on the bind's threads, as the reports count) takes a range of
//! module records, reads every record and sorts its samples' (module,
//! address, labels) a batch at a time into counted runs, so that the
//! parts' sorted counts follow one another, each held once; the tree's
//! frames and nodes are made in that order, each once, with no lookup. A
//! sample then costs no random access into tables of millions of distinct
//! addresses (a hash lookup each was most of pprof's time on 20 M samples
//! over 5 M addresses). A sample in a module kept as its one frame (by
//! module; by function where the module's file is not here) is counted in
//! place instead, per module and labels (`OneFrameCounts`): its keys are
//! few. Where every sampled module is such a frame, nothing is sorted, and
//! the parts take ranges of records instead, their counts added key by
//! key. Only for samples weighed 1 (a floating-point weight's sum depends
//! on its order: `mod.rs` sums it in record order) and without a perf
//! period (a count stays 32 bytes).
//!
//! Imports `mod.rs`'s types, `names` (the resolution), `tree`.

use std::ops::Range;
use tbrw_schema::Progress;

use tbrw::Tb5File;

use super::names::Resolution;
use super::{
    chain_stream, open_walk, Frame, IdMap, Keep, Labels, StackTree, Stacks, TableStacks, ViewOptions, WalkInfo,
};
use crate::error::QueryError;
use crate::query::Weight;
use crate::walk::{in_parts, parts_for, Walk};

/// A distinct (module + 1, address, thread or process + 1 and cpu + 1) and
/// its samples: 32 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Count {
    key: [u64; 3],
    samples: u64,
}

/// Samples a part sorts at a time (24 bytes each: 6 MiB).
const BATCH: usize = 1 << 18;

/// What a part gave: its modules' counts in key order, their samples, per
/// thread index seen its process index, and their first and last times.
struct Part {
    counts: Vec<Count>,
    samples: u64,
    threads: IdMap<u64, u64>,
    times: Option<(u64, u64)>,
    /// A cpu the key cannot hold was met.
    unfit: bool,
}

/// The stacks of `opts.query` as [`super::stacks`] makes them, when the
/// stream has no call stacks and the sums do not depend on their order;
/// `None` otherwise (the caller walks the samples in order).
pub(super) fn stacks(
    file: &Tb5File,
    opts: &ViewOptions,
    keep: Keep,
    res: &mut Resolution<'_>,
    what: &str,
    progress: &mut dyn Progress,
) -> Result<Option<Stacks>, QueryError> {
    let n = opts.query.stream;
    let w = open_walk(file, opts, what)?;
    let fields = w.fields();
    let simple = opts.query.weight == Weight::Samples
        && !fields.has_period()
        && w.modules().len() < u32::MAX as usize - 1
        && w.bind_view()
            .is_some_and(|v| v.thread_count() < u64::from(u32::MAX) && v.process_count() < u64::from(u32::MAX));
    if !simple || TableStacks::of(file, n)?.is_some() || chain_stream(file, n)?.is_some() {
        return Ok(None);
    }
    let modules = w.modules().len();
    let per_module = records_per_module(&w, modules);
    let one = collapsed_of(res, &per_module);
    // Every sampled module kept as its one frame: its samples are counted
    // in place, nothing sorted, so the parts take the records apart and
    // their counts are added up.
    let one_frames =
        per_module.iter().enumerate().all(|(k, &n)| n == 0 || one[if k == 0 { modules } else { k - 1 }].is_some());
    let parts: Vec<Result<Part, QueryError>> = match one_frames {
        true => {
            let count = |records: Range<u64>, progress: &mut dyn Progress| {
                vec![count_part(&w, keep, &one, records, 0..u64::MAX, progress)]
            };
            let parts = in_parts(w.span(), w.parts(), progress, count, |mut all, later| {
                all.extend(later);
                all
            });
            vec![parts.into_iter().collect::<Result<Vec<Part>, QueryError>>().map(added)]
        }
        // Else the parts take the modules, not the records, apart: each
        // reads every record and counts those of its modules, so that the
        // parts' counts are apart and in order one after the other (held
        // once, never merged).
        false => {
            let ranges = module_ranges(&per_module, w.parts());
            std::thread::scope(|scope| {
                let (one, w) = (&one, &w);
                let later: Vec<_> = ranges[1..]
                    .iter()
                    .map(|r| {
                        let r = r.clone();
                        scope.spawn(move || count_part(w, keep, one, w.span(), r, &mut |_| {}))
                    })
                    .collect();
                let mut all = vec![count_part(w, keep, one, w.span(), ranges[0].clone(), progress)];
                all.extend(later.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
                all
            })
        }
    };
    let parts = parts.into_iter().collect::<Result<Vec<Part>, QueryError>>()?;
    if parts.iter().any(|p| p.unfit) {
        return Ok(None);
    }
    if parts.iter().map(|p| p.samples).sum::<u64>() == 0 {
        return Err(w.nothing_matches());
    }
    Ok(Some(build(&w, keep, parts)?))
}

/// Per module record (and, last, no module): the address its frames are
/// kept at when they are the module's one frame (`res` asked in module
/// order, and only of modules some record of the walk is in).
pub(super) fn collapsed_per_module(w: &Walk<'_>, res: &mut Resolution<'_>) -> Vec<Option<u64>> {
    collapsed_of(res, &records_per_module(w, w.modules().len()))
}

/// [`collapsed_per_module`] of the records per module record + 1.
fn collapsed_of(res: &mut Resolution<'_>, per_module: &[u64]) -> Vec<Option<u64>> {
    let modules = per_module.len() - 1;
    (0..=modules)
        .map(|m| match m < modules {
            true if per_module[m + 1] > 0 => res.collapsed(Some(m as u64)),
            true => None,
            false => res.collapsed(None),
        })
        .collect()
}

/// The records a pass reads per module record + 1 (0: no module),
/// counted in parts on the bind's threads.
fn records_per_module(w: &Walk<'_>, modules: usize) -> Vec<u64> {
    let Some(view) = w.bind_view() else { return vec![0u64; modules + 1] };
    let span = w.span();
    let count = |records: Range<u64>, _: &mut dyn Progress| {
        let mut per = vec![0u64; modules + 1];
        let mut binds = Vec::new();
        let mut i = records.start;
        while i < records.end {
            let n = (records.end - i).min(1 << 16);
            binds.clear();
            view.data_binds(i, n as usize, &mut binds);
            for b in &binds {
                let at = usize::try_from(b.module_index).ok().filter(|&m| m < modules).map_or(0, |m| m + 1);
                per[at] += 1;
            }
            i += n;
        }
        per
    };
    let parts = parts_for(span.end - span.start);
    in_parts(span, parts, &mut |_| {}, count, |mut all, part| {
        all.iter_mut().zip(part).for_each(|(a, p)| *a += p);
        all
    })
}

/// Up to `parts` ranges of keys' first part (module record + 1), each
/// with about as many records.
fn module_ranges(per_module: &[u64], parts: usize) -> Vec<Range<u64>> {
    let total: u64 = per_module.iter().sum();
    let parts = parts.clamp(1, per_module.len().max(1)) as u64;
    let mut ranges = Vec::new();
    let (mut start, mut seen) = (0u64, 0u64);
    for (m, &n) in per_module.iter().enumerate() {
        seen += n;
        let m = m as u64;
        if (ranges.len() as u64) + 1 < parts && seen * parts >= total * (ranges.len() as u64 + 1) {
            ranges.push(start..m + 1);
            start = m + 1;
        }
    }
    ranges.push(start..u64::MAX);
    ranges
}

/// Parts of the records counted apart, as one: their counts added key by
/// key.
fn added(parts: Vec<Part>) -> Part {
    let mut all = Part { counts: Vec::new(), samples: 0, threads: IdMap::default(), times: None, unfit: false };
    for p in parts {
        all.counts = merge(std::mem::take(&mut all.counts), p.counts);
        all.samples += p.samples;
        all.threads.extend(p.threads);
        all.times = match (all.times, p.times) {
            (Some((a, z)), Some((b, y))) => Some((a.min(b), z.max(y))),
            (t, u) => t.or(u),
        };
        all.unfit |= p.unfit;
    }
    all
}

/// Counts the samples of `records` whose key's first part (module record
/// + 1) is in `keys` (see the module's doc).
fn count_part(
    w: &Walk<'_>,
    keep: Keep,
    one: &[Option<u64>],
    records: Range<u64>,
    keys: Range<u64>,
    progress: &mut dyn Progress,
) -> Result<Part, QueryError> {
    let fields = w.fields();
    let mut part = Part { counts: Vec::new(), samples: 0, threads: IdMap::default(), times: None, unfit: false };
    let mut batch: Vec<[u64; 3]> = Vec::new();
    let mut ones = OneFrameCounts::new(one);
    let mut threads = ThreadProcesses::default();
    let mut last_thread = None;
    w.pass(records, progress, |s| {
        let first = s.module.map_or(0, |m| m + 1);
        if !keys.contains(&first) {
            return;
        }
        part.samples += 1;
        let (process, thread) = (s.process.unwrap_or(0), s.thread.unwrap_or(0));
        if last_thread != Some(thread) {
            threads.note(thread, process);
            last_thread = Some(thread);
        }
        if let Some(t) = fields.time_stamp(s.record) {
            part.times = Some(part.times.map_or((t, t), |(a, z)| (a.min(t), z.max(t))));
        }
        let who = if keep.thread {
            thread + 1
        } else if keep.process {
            process + 1
        } else {
            0
        };
        // The cpu + 1 (0: none); u32::MAX does not fit: the caller then walks.
        let cpu = match fields.cpu(s.record).filter(|_| keep.cpu) {
            Some(u32::MAX) => {
                part.unfit = true;
                0
            }
            c => c.map_or(0, |c| u64::from(c) + 1),
        };
        let slot = s.module.map_or(one.len() - 1, |m| m as usize);
        // A module kept as its one frame is counted in place: its keys are
        // few (its process's or threads'), not worth a sort each.
        if !ones.add(slot, who << 32 | cpu) {
            batch.push([first, fields.pc(s.record), who << 32 | cpu]);
            if batch.len() == BATCH {
                part.counts = merge(std::mem::take(&mut part.counts), runs(&mut batch));
            }
        }
    })?;
    part.counts = merge(std::mem::take(&mut part.counts), runs(&mut batch));
    part.counts = merge(std::mem::take(&mut part.counts), ones.into_counts());
    part.threads = threads.into_map();
    Ok(part)
}

/// Modules above this many are all counted by sorting (the counts in
/// place take 16 bytes per module and part).
const ONE_FRAME_MODULES: usize = 1 << 22;

/// A part's samples in modules kept as their one frame, counted in place
/// per module slot (as `one` numbers them: each module record, then no
/// module): the first (who, cpu) key met there and its samples, the
/// others in a map (a module is mostly sampled in its one process).
struct OneFrameCounts<'a> {
    one: &'a [Option<u64>],
    /// Per slot: the first key met and its samples (0: none yet).
    first: Vec<(u64, u64)>,
    others: IdMap<(usize, u64), u64>,
}

impl<'a> OneFrameCounts<'a> {
    fn new(one: &'a [Option<u64>]) -> Self {
        let slots = if one.len() <= ONE_FRAME_MODULES { one.len() } else { 0 };
        OneFrameCounts { one, first: vec![(0, 0); slots], others: IdMap::default() }
    }

    /// Counts a sample of key `who` in slot `slot` if the slot's module is
    /// kept as its one frame; returns whether it did.
    #[inline]
    fn add(&mut self, slot: usize, who: u64) -> bool {
        if self.one.get(slot).copied().flatten().is_none() {
            return false;
        }
        let Some(entry) = self.first.get_mut(slot) else { return false };
        match entry {
            (_, 0) => *entry = (who, 1),
            (key, n) if *key == who => *n += 1,
            _ => *self.others.entry((slot, who)).or_default() += 1,
        }
        true
    }

    /// The counts in key order: the slots by their key's first part (no
    /// module, 0, first; then each module record + 1), each slot's keys
    /// in order.
    fn into_counts(self) -> Vec<Count> {
        let none = self.one.len() - 1;
        let mut others: Vec<((usize, u64), u64)> = self.others.into_iter().collect();
        others.sort_unstable();
        let mut out = Vec::new();
        let mut keys: Vec<(u64, u64)> = Vec::new();
        for slot in std::iter::once(none).chain(0..none) {
            let Some(&(who, n)) = self.first.get(slot).filter(|e| e.1 > 0) else { continue };
            let Some(pc) = self.one[slot] else { continue };
            keys.clear();
            keys.push((who, n));
            let from = others.partition_point(|((s, _), _)| *s < slot);
            let to = others.partition_point(|((s, _), _)| *s <= slot);
            keys.extend(others[from..to].iter().map(|&((_, w), n)| (w, n)));
            keys.sort_unstable();
            let first = if slot == none { 0 } else { slot as u64 + 1 };
            out.extend(keys.iter().map(|&(who, samples)| Count { key: [first, pc, who], samples }));
        }
        out
    }
}

/// Bind thread indexes below this are noted in a vector, not a hash.
const DENSE_THREADS: u64 = 1 << 20;

/// The process index of each thread index a part met.
#[derive(Default)]
struct ThreadProcesses {
    /// Per thread index below [`DENSE_THREADS`]: its process index + 1 (0: not met).
    dense: Vec<u64>,
    others: IdMap<u64, u64>,
}

impl ThreadProcesses {
    fn note(&mut self, thread: u64, process: u64) {
        match usize::try_from(thread).ok().filter(|_| thread < DENSE_THREADS) {
            Some(t) => {
                if self.dense.len() <= t {
                    self.dense.resize(t + 1, 0);
                }
                self.dense[t] = process.saturating_add(1);
            }
            None => {
                self.others.insert(thread, process);
            }
        }
    }

    fn into_map(self) -> IdMap<u64, u64> {
        let mut map = self.others;
        let met = self.dense.iter().enumerate().filter(|(_, &p)| p > 0);
        map.extend(met.map(|(t, &p)| (t as u64, p - 1)));
        map
    }
}

/// `batch` sorted and counted in runs; left empty.
fn runs(batch: &mut Vec<[u64; 3]>) -> Vec<Count> {
    batch.sort_unstable();
    let out = batch.chunk_by(|a, b| a == b).map(|c| Count { key: c[0], samples: c.len() as u64 }).collect();
    batch.clear();
    out
}

/// Two lists of counts in key order as one.
fn merge(a: Vec<Count>, b: Vec<Count>) -> Vec<Count> {
    crate::sorted::merge(a, b, |c| c.key, |x, y| x.samples += y.samples)
}

/// The stacks of the counts: a frame and its node per distinct (module,
/// address), in key order; the label sets numbered as first met there.
fn build(w: &Walk<'_>, keep: Keep, parts: Vec<Part>) -> Result<Stacks, QueryError> {
    let fields = w.fields();
    let times = parts.iter().filter_map(|p| p.times).reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
    let mut info = WalkInfo {
        records: w.records(),
        samples: parts.iter().map(|p| p.samples).sum(),
        modules: w.modules().to_vec(),
        chains: None,
        time: fields.time_field.clone(),
        time_range: times,
        has_period: false,
        has_cputime: fields.has_cputime(),
        ..WalkInfo::default()
    };
    let mut threads: IdMap<u64, u64> = IdMap::default();
    for p in &parts {
        threads.extend(p.threads.iter().map(|(&t, &p)| (t, p)));
    }
    for (&thread, &process) in &threads {
        info.processes.entry(process).or_insert_with(|| w.process(process));
        info.threads.entry(thread).or_insert_with(|| w.thread(thread));
    }
    let mut st = Stacks { tree: StackTree::new(), ..Stacks::default() };
    let frames: usize = parts.iter().map(|p| p.counts.chunk_by(|a, b| a.key[..2] == b.key[..2]).count()).sum();
    st.tree.reserve_roots(frames);
    st.reserve_nodes(frames);
    let mut numbers: IdMap<u64, u32> = IdMap::default();
    let mut last: Option<([u64; 2], u32)> = None;
    for c in parts.iter().flat_map(|p| &p.counts) {
        let node = match last {
            Some((k, node)) if k == [c.key[0], c.key[1]] => node,
            _ => {
                let node = st.tree.push_new_root(Frame { module: c.key[0].checked_sub(1), pc: c.key[1] })?;
                last = Some(([c.key[0], c.key[1]], node));
                node
            }
        };
        let next = st.labels.len() as u32;
        let set = *numbers.entry(c.key[2]).or_insert(next);
        if set == next {
            let who = (c.key[2] >> 32).checked_sub(1);
            let cpu = (c.key[2] & 0xFFFF_FFFF).checked_sub(1).map(|c| c as u32);
            let (process, thread) = match who {
                Some(t) if keep.thread => (threads.get(&t).copied().unwrap_or(0), t),
                Some(p) => (p, 0),
                None => (0, 0),
            };
            st.labels.push(Labels { process: if keep.process { process } else { 0 }, thread, cpu });
        }
        let t = st.entry(set, node);
        t.samples += c.samples;
        t.weight += c.samples as f64;
    }
    st.info = info;
    Ok(st)
}
