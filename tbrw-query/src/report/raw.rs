//! A stream's samples with addresses, counted per (process, thread,
//! module, pc) before symbolizing ([`Samples`], [`count`]), and the key a
//! grouping gives a symbolized address ([`part`]): what the reports by
//! function, line and address ([`super::functions`]), the counting under
//! function symbols (`by_symbol.rs`) and annotate share. A leaf of
//! the report module: imports neither of those.

use std::collections::HashMap;
use std::ops::Range;
use tbrw_schema::Progress;

use rustc_hash::FxHashMap as IdMap;
use tbrw::*;
use tbrw_symbols::Symbolized;

use super::{By, Key};
use crate::error::QueryError;
use crate::names;
use crate::query::Query;
use crate::walk::{Binding, Walk};

/// What samples are counted by before symbolizing: the parts a grouping
/// does not use are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RawKey {
    /// The bind's process index.
    pub process: u64,
    /// The bind's thread index.
    pub thread: u64,
    /// The module record (`None`: no module covers the pc).
    pub module: Option<u64>,
    /// The sampled address.
    pub pc: u64,
}

impl RawKey {
    /// The order of [`Counted::counts`]: by address.
    pub(crate) fn address_order(&self) -> (Option<u64>, u64, u64, u64) {
        (self.module, self.pc, self.process, self.thread)
    }

    /// The key with process and thread set to 0 where they are not kept.
    pub fn masked(self, by_process: bool, by_thread: bool) -> RawKey {
        RawKey {
            process: if by_process { self.process } else { 0 },
            thread: if by_thread { self.thread } else { 0 },
            ..self
        }
    }
}

/// A stream's samples that passed the filters, counted per [`RawKey`].
pub struct Counted {
    /// Records in the stream.
    pub records: u64,
    /// Samples that passed the filters.
    pub total: u64,
    /// Samples per key, each key once, by module record, pc, process and
    /// thread.
    pub counts: Vec<(RawKey, u64)>,
    /// The file's module table.
    pub modules: Vec<Module>,
    /// The keys of the processes and threads seen, when asked for.
    pub processes: HashMap<u64, Key>,
    /// The keys of the threads seen, when asked for.
    pub threads: HashMap<u64, Key>,
}

/// Counts the samples of `query` per (process, thread, module, pc),
/// keeping process and thread only when `by_process`/`by_thread`. The
/// stream needs an instruction pointer and must bind (a stored bind is
/// used, else one is made in memory).
pub fn count(
    file: &Tb5File,
    query: &Query,
    by_process: bool,
    by_thread: bool,
    progress: &mut dyn Progress,
) -> Result<Counted, QueryError> {
    let samples = Samples::new(file, query)?;
    let (counts, total) = samples.count_raw(by_process, by_thread, progress)?;
    let (processes, threads) = samples.keys(counts.iter().map(|(k, _)| k), by_process, by_thread);
    Ok(Counted {
        records: samples.records(),
        total,
        counts,
        modules: samples.walk.modules().to_vec(),
        processes,
        threads,
    })
}

/// A stream's samples with addresses, walked for a report by function,
/// line or address (in parts, from several threads).
pub struct Samples<'a> {
    /// The walk.
    pub walk: Walk<'a>,
    /// Per module record, whether its addresses are all passed as 0: a
    /// module whose file cannot be used names every address alike, and a
    /// grouping without addresses then needs one entry for all of them
    /// ([`Samples::collapse`]).
    collapse: Vec<bool>,
}

/// Whether a sample of `module` keeps its address under `collapse` (see
/// [`Samples::collapse`]: none is collapsed while it is empty).
#[inline]
fn whole_address(collapse: &[bool], module: Option<u64>) -> bool {
    match module {
        Some(m) => usize::try_from(m).ok().and_then(|m| collapse.get(m)) != Some(&true),
        None => collapse.is_empty(),
    }
}

/// A distinct (module, address) and its samples, in 24 bytes: what a count
/// per address holds per distinct address ([`Samples::count_packed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PackedCount {
    /// The module record + 1 (0: no module).
    pub module: u64,
    /// The address.
    pub pc: u64,
    /// The samples.
    pub samples: u64,
}

impl PackedCount {
    /// The module record.
    pub fn module(&self) -> Option<u64> {
        self.module.checked_sub(1)
    }

    /// The key, as [`RawKey::address_order`] orders it.
    fn order(&self) -> (u64, u64) {
        (self.module, self.pc)
    }
}

impl<'a> Samples<'a> {
    /// The samples of `query`. The stream needs an instruction pointer and
    /// must bind (a stored bind is used, else one is made in memory).
    pub fn new(file: &'a Tb5File, query: &Query) -> Result<Samples<'a>, QueryError> {
        let walk = Walk::open(file, query, Binding::Always)?;
        if !walk.fields().has_pc() {
            return Err(QueryError::Unsupported {
                file: file.path().display().to_string(),
                stream: query.stream,
                what: "it has no instruction pointer in its records: nothing to symbolize".into(),
            });
        }
        Ok(Samples { walk, collapse: Vec::new() })
    }

    /// Passes the addresses of the module records marked `true`, and of
    /// samples in no module, as 0 from now on (see [`Samples`]' `collapse`).
    pub fn collapse(&mut self, modules: Vec<bool>) {
        self.collapse = modules;
    }

    /// Counts the samples that pass the filters per distinct (module,
    /// address), in address order, and their number: 24 bytes per distinct
    /// address (48 while the parts' lists are merged), as
    /// `count_raw` counts without process and thread.
    pub fn count_packed(&self, progress: &mut dyn Progress) -> Result<(Vec<PackedCount>, u64), QueryError> {
        let count = |range: Range<u64>, progress: &mut dyn Progress| {
            let mut counts = Vec::new();
            let mut batch: Vec<u128> = Vec::new();
            let total = self.pass(range, progress, |k| {
                batch.push(u128::from(k.module.map_or(0, |m| m.wrapping_add(1))) << 64 | u128::from(k.pc));
                if batch.len() == RAW_BATCH {
                    counts = merge_packed(std::mem::take(&mut counts), packed_runs(&mut batch));
                }
            })?;
            Ok((merge_packed(counts, packed_runs(&mut batch)), total))
        };
        self.in_parts(self.parts(), progress, count, |a, b| match (a, b) {
            (Ok((a, n)), Ok((b, m))) => Ok((merge_packed(a, b), n + m)),
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        })
    }

    /// Records in the stream.
    pub fn records(&self) -> u64 {
        self.walk.records()
    }

    /// The threads a pass by function symbol is split over.
    pub fn parts(&self) -> usize {
        self.walk.parts()
    }

    /// The samples that pass the filters per [`RawKey`] (process and thread
    /// kept when asked), in address order, and their number. Distinct
    /// addresses can be millions, and a hash lookup per sample in a table
    /// that size is a cache miss each: each part of the stream (on the
    /// bind's threads) sorts its samples a batch at a time and counts runs,
    /// and the sorted counts are merged.
    pub(crate) fn count_raw(
        &self,
        by_process: bool,
        by_thread: bool,
        progress: &mut dyn Progress,
    ) -> Result<(Vec<(RawKey, u64)>, u64), QueryError> {
        let count = |range: Range<u64>, progress: &mut dyn Progress| {
            let mut counts = Vec::new();
            let mut batch = Vec::new();
            let total = self.pass(range, progress, |k| {
                batch.push(k.masked(by_process, by_thread));
                if batch.len() == RAW_BATCH {
                    counts = merge_counts(std::mem::take(&mut counts), runs(&mut batch));
                }
            })?;
            Ok((merge_counts(counts, runs(&mut batch)), total))
        };
        self.in_parts(self.parts(), progress, count, |a, b| match (a, b) {
            (Ok((a, n)), Ok((b, m))) => Ok((merge_counts(a, b), n + m)),
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        })
    }

    /// The samples that pass the filters per [`RawKey`] with their weights,
    /// in one pass (weights are floating-point sums: one order).
    pub(crate) fn weigh_raw(
        &self,
        by_process: bool,
        by_thread: bool,
        progress: &mut dyn Progress,
    ) -> Result<Weighed, QueryError> {
        let mut sums: IdMap<RawKey, (u64, f64)> = IdMap::default();
        let mut total_weight = 0.0;
        let fields = self.walk.fields();
        let collapse = &self.collapse;
        let total = self.walk.pass(0..self.records(), progress, |s| {
            let whole = whole_address(collapse, s.module);
            let k = RawKey {
                process: s.process.unwrap_or(0),
                thread: s.thread.unwrap_or(0),
                module: s.module,
                pc: if whole { fields.pc(s.record) } else { 0 },
            }
            .masked(by_process, by_thread);
            let e = sums.entry(k).or_default();
            e.0 += 1;
            e.1 += s.weight;
            total_weight += s.weight;
        })?;
        let mut v: Vec<(RawKey, u64, f64)> = sums.into_iter().map(|(k, (n, w))| (k, n, w)).collect();
        v.sort_unstable_by_key(|(k, _, _)| k.address_order());
        Ok((v, total, total_weight))
    }

    /// [`Walk::in_parts`] over the stream's records.
    pub fn in_parts<T: Send>(
        &self,
        parts: usize,
        progress: &mut dyn Progress,
        count: impl Fn(Range<u64>, &mut dyn Progress) -> T + Sync,
        merge: impl FnMut(T, T) -> T,
    ) -> T {
        self.walk.in_parts(parts, progress, count, merge)
    }

    /// Per module record, whether any record a pass reads
    /// ([`Walk::span`]) binds to it (filters aside): the modules a pass
    /// may ask about.
    pub(crate) fn modules_bound(&self, modules: usize) -> Vec<bool> {
        let mut used = vec![false; modules];
        let Some(view) = self.walk.bind_view() else { return used };
        let mut binds = Vec::new();
        let span = self.walk.span();
        let mut i = span.start;
        while i < span.end {
            let n = (span.end - i).min(1 << 16);
            binds.clear();
            view.data_binds(i, n as usize, &mut binds);
            for b in &binds {
                if let Some(u) = usize::try_from(b.module_index).ok().and_then(|m| used.get_mut(m)) {
                    *u = true;
                }
            }
            i += n;
        }
        used
    }

    /// Passes over records `range`: each that passes the filters goes to
    /// `sample` with its process, thread, module and pc. `progress` gets
    /// the records done in the range. Returns the samples that passed.
    pub fn pass(
        &self,
        range: Range<u64>,
        progress: &mut dyn Progress,
        mut sample: impl FnMut(RawKey),
    ) -> Result<u64, QueryError> {
        let fields = self.walk.fields();
        let collapse = &self.collapse;
        self.walk.pass(range, progress, |s| {
            let whole = whole_address(collapse, s.module);
            sample(RawKey {
                process: s.process.unwrap_or(0),
                thread: s.thread.unwrap_or(0),
                module: s.module,
                pc: if whole { fields.pc(s.record) } else { 0 },
            })
        })
    }

    /// The [`Key`]s of the processes and threads of `keys` (when asked for).
    pub(crate) fn keys<'k>(
        &self,
        keys: impl Iterator<Item = &'k RawKey>,
        by_process: bool,
        by_thread: bool,
    ) -> (HashMap<u64, Key>, HashMap<u64, Key>) {
        let mut processes = HashMap::new();
        let mut threads = HashMap::new();
        for k in keys {
            if by_process {
                processes
                    .entry(k.process)
                    .or_insert_with(|| super::process_key(k.process, &self.walk.process(k.process)));
            }
            if by_thread {
                threads
                    .entry(k.thread)
                    .or_insert_with(|| super::thread_key(Some(k.thread), &self.walk.thread(k.thread)));
            }
        }
        (processes, threads)
    }
}

/// Per distinct key its samples and weight, in address order; the samples
/// and the weight in all.
pub(crate) type Weighed = (Vec<(RawKey, u64, f64)>, u64, f64);

/// Samples a part of a count per address sorts at a time (32 bytes each).
const RAW_BATCH: usize = 1 << 18;

/// The keys of `batch` in address order with their number of samples;
/// `batch` is left empty.
fn runs(batch: &mut Vec<RawKey>) -> Vec<(RawKey, u64)> {
    // Without process and thread (the usual report), (module, pc) packs in
    // 16 bytes in the same order: half the bytes to sort, one compare.
    if batch.iter().all(|k| k.process == 0 && k.thread == 0 && k.module != Some(u64::MAX)) {
        let mut packed: Vec<u128> =
            batch.drain(..).map(|k| u128::from(k.module.map_or(0, |m| m + 1)) << 64 | u128::from(k.pc)).collect();
        packed.sort_unstable();
        let mut runs: Vec<(RawKey, u64)> = Vec::new();
        for chunk in packed.chunk_by(|a, b| a == b) {
            let (m, pc) = ((chunk[0] >> 64) as u64, chunk[0] as u64);
            let key = RawKey { process: 0, thread: 0, module: m.checked_sub(1), pc };
            runs.push((key, chunk.len() as u64));
        }
        return runs;
    }
    batch.sort_unstable_by_key(RawKey::address_order);
    let mut runs: Vec<(RawKey, u64)> = Vec::new();
    for k in batch.drain(..) {
        match runs.last_mut() {
            Some((last, n)) if *last == k => *n += 1,
            _ => runs.push((k, 1)),
        }
    }
    runs
}

/// The keys of `batch` (module + 1 and address, packed) in order with
/// their number of samples; `batch` is left empty.
fn packed_runs(batch: &mut Vec<u128>) -> Vec<PackedCount> {
    batch.sort_unstable();
    let runs = batch
        .chunk_by(|a, b| a == b)
        .map(|c| PackedCount { module: (c[0] >> 64) as u64, pc: c[0] as u64, samples: c.len() as u64 })
        .collect();
    batch.clear();
    runs
}

pub use crate::names::module_name;

/// The label of an address of `module` (`None`: no module covers it)
/// where no function is known: one spelling, [`crate::names`].
pub fn unknown_label(module: Option<&Module>) -> String {
    names::unknown_function(module.and_then(module_name).as_deref())
}

/// `function+0x1a`, or the unknown label.
pub fn function_at(s: &Symbolized, module: Option<&Module>) -> String {
    match (&s.function, s.offset) {
        (Some(f), Some(off)) => format!("{f}+{off:#x}"),
        (Some(f), None) => f.to_string(),
        (None, _) => unknown_label(module),
    }
}

/// The [`Key::Function`] of an address of `module` symbolized as `s`: what
/// `--by function` groups a sample by, and `--children` each frame.
pub fn function_key(s: &Symbolized, module: Option<&Module>) -> Key {
    Key::Function {
        module: module.and_then(module_name),
        name: s.function.as_deref().map(str::to_owned),
        unknown: s.function.is_none().then(|| unknown_label(module)),
    }
}

/// The key of grouping `by` for a sample at `k`, symbolized as `s`.
pub fn part(by: By, k: &RawKey, s: &Symbolized, counted: &Counted) -> Key {
    let module = k.module.and_then(|m| counted.modules.get(m as usize));
    match by {
        By::Process => counted.processes.get(&k.process).cloned().unwrap_or(Key::Unbound),
        By::Thread => counted.threads.get(&k.thread).cloned().unwrap_or(Key::Unbound),
        // Symbol reports group samples that can be bound: auto means module there.
        By::Module | By::Auto => match (k.module, module) {
            (Some(index), Some(m)) => {
                Key::Module { index, name: m.name.clone(), path: m.path.clone(), pid: m.associated_pid }
            }
            _ => Key::UnknownModule,
        },
        By::Function => function_key(s, module),
        By::Line => {
            let loc = s.location();
            Key::Line {
                file: loc.map(|l| l.file.to_string()),
                line: loc.and_then(|l| l.line),
                function: s.function.as_deref().map(str::to_owned),
                unknown: loc.is_none().then(|| unknown_label(module)),
            }
        }
        By::Address => Key::Address {
            module: module.and_then(module_name),
            address: k.pc,
            vaddr: s.vaddr,
            function: function_at(s, module),
        },
        By::Event | By::Task | By::Combined => Key::Unbound,
    }
}

/// Two lists of packed counts in order (each key once) as one.
fn merge_packed(a: Vec<PackedCount>, b: Vec<PackedCount>) -> Vec<PackedCount> {
    crate::sorted::merge(a, b, PackedCount::order, |x, y| x.samples += y.samples)
}

/// Two lists of counts in address order (each key once) as one.
fn merge_counts(a: Vec<(RawKey, u64)>, b: Vec<(RawKey, u64)>) -> Vec<(RawKey, u64)> {
    crate::sorted::merge(a, b, |e| e.0.address_order(), |x, y| x.1 += y.1)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Batches counted in runs and merged in any grouping give each key
        /// once, in address order, with as many samples as a map counts.
        #[test]
        fn runs_merged_count_as_a_map_does(
            keys in proptest::collection::vec((0u64..3, 0u64..2, proptest::option::of(prop_oneof![0u64..3, Just(u64::MAX - 1)]), prop_oneof![0u64..5, Just(u64::MAX)]), 0..80),
            cuts in proptest::collection::vec(0usize..80, 0..6),
        ) {
            // Half the cases without process and thread: the packed sort.
            let masked = cuts.len() % 2 == 0;
            let keys: Vec<RawKey> = keys
                .iter()
                .map(|&(process, thread, module, pc)| RawKey { process, thread, module, pc }.masked(!masked, !masked))
                .collect();
            let mut want: HashMap<RawKey, u64> = HashMap::new();
            for k in &keys {
                *want.entry(*k).or_default() += 1;
            }
            let mut want: Vec<(RawKey, u64)> = want.into_iter().collect();
            want.sort_unstable_by_key(|(k, _)| k.address_order());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(keys.len())).chain([0, keys.len()]).collect();
            cuts.sort_unstable();
            let mut got = Vec::new();
            for w in cuts.windows(2) {
                got = merge_counts(got, runs(&mut keys[w[0]..w[1]].to_vec()));
            }
            prop_assert_eq!(got, want);
        }
    }
}
