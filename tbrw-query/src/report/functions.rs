//! Sample counts per function, source line or address, alone or combined
//! with process, thread and module (`--by module,function`), through the
//! symbolizer ([`crate::symbols`]). Grouped by function (with process,
//! thread or module), samples are counted straight under their function
//! symbol, on the bind's threads (that counting is in `by_symbol.rs`, the
//! rows' order in `rows.rs`); otherwise, and for samples no symbol names,
//! they are first counted per distinct (process, thread, module, pc), so
//! each address is symbolized once however many samples hit it. [`count`]
//! is also what `tbrw annotate` reads.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use tbrw::*;
use tbrw_symbols::{SymbolRef, Symbolized};

use super::by_symbol::{count_by_symbol, function_part, symbol_contexts, symbol_rows};
use super::rows::{merge_sorted, sort_rows};
use super::{percent, By, Key, Report, ReportOptions, Row, WeightSum};
use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};
use crate::names;
use crate::query::{Query, Weight};
use crate::walk::{Binding, Walk};
use rustc_hash::FxHashMap as IdMap;

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
    fn address_order(&self) -> (Option<u64>, u64, u64, u64) {
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
    progress: &mut dyn FnMut(u64),
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
        Ok(Samples { walk })
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
    fn count_raw(
        &self,
        by_process: bool,
        by_thread: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Vec<(RawKey, u64)>, u64), QueryError> {
        let count = |range: Range<u64>, progress: &mut dyn FnMut(u64)| {
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
    fn weigh_raw(
        &self,
        by_process: bool,
        by_thread: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Vec<(RawKey, u64, f64)>, u64, f64), QueryError> {
        let mut sums: IdMap<RawKey, (u64, f64)> = IdMap::default();
        let mut total_weight = 0.0;
        let fields = self.walk.fields();
        let total = self.walk.pass(0..self.records(), progress, |s| {
            let k = RawKey {
                process: s.process.unwrap_or(0),
                thread: s.thread.unwrap_or(0),
                module: s.module,
                pc: fields.pc(s.record),
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
        progress: &mut dyn FnMut(u64),
        count: impl Fn(Range<u64>, &mut dyn FnMut(u64)) -> T + Sync,
        merge: impl FnMut(T, T) -> T,
    ) -> T {
        self.walk.in_parts(parts, progress, count, merge)
    }

    /// Per module record, whether any record binds to it (filters aside):
    /// the modules a pass may ask about.
    fn modules_bound(&self, modules: usize) -> Vec<bool> {
        let mut used = vec![false; modules];
        let Some(view) = self.walk.bind_view() else { return used };
        let mut binds = Vec::new();
        let mut i = 0;
        while i < self.records() {
            let n = (self.records() - i).min(1 << 16);
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
        progress: &mut dyn FnMut(u64),
        mut sample: impl FnMut(RawKey),
    ) -> Result<u64, QueryError> {
        let fields = self.walk.fields();
        self.walk.pass(range, progress, |s| {
            sample(RawKey {
                process: s.process.unwrap_or(0),
                thread: s.thread.unwrap_or(0),
                module: s.module,
                pc: fields.pc(s.record),
            })
        })
    }

    /// The [`Key`]s of the processes and threads of `keys` (when asked for).
    fn keys<'k>(
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

/// Two lists of counts in address order (each key once) as one.
fn merge_counts(a: Vec<(RawKey, u64)>, b: Vec<(RawKey, u64)>) -> Vec<(RawKey, u64)> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.address_order().cmp(&y.0.address_order()) {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => {
                    let (k, n) = a.next().unwrap_or_default();
                    let m = b.next().map_or(0, |y| y.1);
                    Some((k, n + m))
                }
            },
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    out
}

/// A group's samples, and one of its addresses with its result (what the
/// group's key is built from).
type Group = (u64, f64, RawKey, Option<Arc<Symbolized>>);

/// What a sample's group is known by before its [`Key`] is built: per
/// grouping, the indexes and shared-name pointers the key is made from.
#[derive(Clone, PartialEq, Eq, Hash)]
enum PartId {
    /// A process, thread or module index (`u64::MAX`: none).
    Index(u64),
    /// Module name (an id of [`module_name_ids`]), function name (the
    /// symbolizer's shared string, by address), or the unknown label.
    Function(usize, usize, Option<String>),
    /// Source file (shared string, by address), line, function, or the unknown label.
    Line(usize, Option<u32>, usize, Option<String>),
    /// Module name, sampled address and the ELF address it became.
    Address(usize, u64, Option<u64>),
}

/// Per module record, an id of its file name (equal names, equal ids),
/// as [`Key::Function`] and [`Key::Address`] group by name.
fn module_name_ids(modules: &[Module]) -> Vec<usize> {
    let mut ids: HashMap<Option<String>, usize> = HashMap::new();
    modules
        .iter()
        .map(|m| {
            let next = ids.len();
            *ids.entry(module_name(m)).or_insert(next)
        })
        .collect()
}

fn arc_id<T: ?Sized>(a: Option<&Arc<T>>) -> usize {
    a.map_or(0, |a| Arc::as_ptr(a) as *const u8 as usize)
}

fn part_id(by: By, k: &RawKey, s: &Symbolized, names: &[usize]) -> PartId {
    let module_name = k.module.and_then(|m| names.get(m as usize).copied()).unwrap_or(usize::MAX);
    match by {
        By::Process => PartId::Index(k.process),
        By::Thread => PartId::Index(k.thread),
        By::Function => {
            PartId::Function(module_name, arc_id(s.function.as_ref()), s.function.is_none().then(|| s.function_label()))
        }
        By::Line => {
            let loc = s.location();
            PartId::Line(
                arc_id(loc.map(|l| &l.file)),
                loc.and_then(|l| l.line),
                arc_id(s.function.as_ref()),
                loc.is_none().then(|| s.line_label()),
            )
        }
        By::Address => PartId::Address(module_name, k.pc, s.vaddr),
        By::Module | By::Auto | By::Event | By::Task | By::Combined => PartId::Index(k.module.unwrap_or(u64::MAX)),
    }
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
        By::Function => Key::Function {
            module: module.and_then(module_name),
            name: s.function.as_deref().map(str::to_owned),
            unknown: s.function.is_none().then(|| unknown_label(module)),
        },
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

/// Computes a report grouped by `by` (one grouping or several; at least
/// one of function, line or address, or several of any but event and
/// task). Modules that cannot be symbolized get one warning each on `warn`
/// and their samples are counted as unknown. `progress` gets records done.
///
/// Grouped by function (with process, thread or module), the samples are
/// counted on the bind's threads, in parts of 64 Ki records or more.
pub fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    by: &[By],
    symbols: &SymbolOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, QueryError> {
    report_in_parts(file, opts, by, symbols, warn, progress, None)
}

/// The function symbols the samples of `stream` hit (the file's
/// `modules`, looked up in `syms`; warnings on `warn`), counted on the
/// bind's threads, with (samples, samples in those functions): what
/// `tbrw symbolize` stores.
pub fn symbols_hit(
    file: &Tb5File,
    stream: u32,
    modules: &[Module],
    syms: &mut FileSymbols,
    warn: &mut dyn Write,
) -> Result<(Vec<SymbolRef>, u64, u64), QueryError> {
    let query = Query { stream, ..Query::default() };
    let samples = Samples::new(file, &query)?;
    let lookups = syms.function_index(&samples.modules_bound(modules.len()));
    let names = module_name_ids(modules);
    let counted =
        count_by_symbol(&samples, &lookups, (&[By::Function], &names), (true, true), samples.parts(), &mut |_| {})?;
    counted.warn_unusable(syms, warn);
    let named = counted.total - counted.rest.values().sum::<u64>();
    Ok((counted.groups().into_iter().map(|(s, _, _)| s).collect(), counted.total, named))
}

/// [`report`] with a report by function's samples counted in `parts`
/// parts on as many threads (the result is the same for any count;
/// `None`: as [`report`] does).
pub fn report_in_parts(
    file: &Tb5File,
    opts: &ReportOptions,
    by: &[By],
    symbols: &SymbolOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
    parts: Option<usize>,
) -> Result<Report, QueryError> {
    if by.is_empty() {
        return Err(QueryError::Request("--by names no grouping".into()));
    }
    if let Some(b) = by.iter().find(|b| matches!(b, By::Event | By::Task | By::Combined)) {
        return Err(QueryError::Request(format!(
            "--by {} does not combine with others (combinations take process, thread, module, function, line, address)",
            b.name()
        )));
    }
    let (by_process, by_thread) = (by.contains(&By::Process), by.contains(&By::Thread));
    let symbolic = by.iter().any(|b| b.symbolic());
    let weighed = opts.query.weight != Weight::Samples;
    let samples = Samples::new(file, &opts.query)?;
    let modules = samples.walk.modules().to_vec();
    // Only `--by line` needs DWARF; parsing it is most of a cold lookup's cost.
    let config = tbrw_symbols::Config { lines: by.contains(&By::Line), ..symbols.config() };
    let mut syms = if symbolic { Some(FileSymbols::with_config(file, &modules, config)?) } else { None };
    let names = module_name_ids(&modules);
    // Grouped by function only (with process, thread, module) and not
    // weighed: a sample whose function the symbol table has is counted
    // straight under its symbol, with no per-address result; the group's
    // key is made once after, from the symbol's name. This runs on the
    // bind's threads. The other samples are counted per distinct address
    // and symbolized after.
    let by_symbol = !weighed && by.contains(&By::Function) && !by.iter().any(|b| matches!(b, By::Line | By::Address));
    let mut weights: Option<Vec<f64>> = None;
    let mut total_weight = 0.0;
    let (symbol_groups, contexts, counts, total) = match syms.as_mut().filter(|_| by_symbol) {
        Some(syms) => {
            let lookups = syms.function_index(&samples.modules_bound(modules.len()));
            let parts = parts.unwrap_or_else(|| samples.parts());
            let counted = count_by_symbol(&samples, &lookups, (by, &names), (by_process, by_thread), parts, progress)?;
            counted.warn_unusable(syms, warn);
            let groups = counted.groups();
            let mut rest: Vec<(RawKey, u64)> = counted.rest.into_iter().collect();
            rest.sort_unstable_by_key(|(k, _)| k.address_order());
            (groups, counted.contexts, rest, counted.total)
        }
        None if weighed => {
            let (sums, total, w) = samples.weigh_raw(by_process, by_thread, progress)?;
            total_weight = w;
            weights = Some(sums.iter().map(|s| s.2).collect());
            (Vec::new(), Vec::new(), sums.into_iter().map(|(k, n, _)| (k, n)).collect(), total)
        }
        None => {
            let (counts, total) = samples.count_raw(by_process, by_thread, progress)?;
            (Vec::new(), Vec::new(), counts, total)
        }
    };
    if total == 0 && samples.records() > 0 {
        return Err(samples.walk.nothing_matches());
    }
    let (processes, threads) = samples.keys(counts.iter().map(|(k, _)| k).chain(&contexts), by_process, by_thread);
    let counted = Counted { records: samples.records(), total, counts, modules, processes, threads };
    let placeholder = Symbolized {
        module: None,
        vaddr: None,
        file_used: None,
        function: None,
        offset: None,
        frames: Vec::new(),
        unknown: None,
    };
    // Distinct addresses are many and groups few: samples are first summed
    // under a cheap identity of their group (indexes and the symbolizer's
    // shared name pointers), and a group's key, with its strings, is built
    // once from one of its addresses. Equal keys of different identities
    // (two symbols of one name, say) are merged after.
    // Symbolized in address order: the warnings come out in a stable order.
    let mut cheap: HashMap<Vec<PartId>, Group> = HashMap::new();
    for (i, &(k, n)) in counted.counts.iter().enumerate() {
        let s = syms.as_mut().map(|f| f.symbolize(k.module, k.pc, warn));
        let id: Vec<PartId> =
            by.iter().map(|b| part_id(*b, &k, s.as_deref().unwrap_or(&placeholder), &names)).collect();
        let w = weights.as_ref().map_or(0.0, |w| w[i]);
        let g = cheap.entry(id).or_insert_with(|| (0, 0.0, k, s));
        g.0 += n;
        g.1 += w;
    }
    let mut groups: IdMap<Key, (u64, f64)> = IdMap::default();
    groups.reserve(cheap.len());
    for (n, w, k, s) in cheap.into_values() {
        let s = s.as_deref().unwrap_or(&placeholder);
        let key = match by {
            [one] => part(*one, &k, s, &counted),
            many => Key::Combined { parts: many.iter().map(|b| part(*b, &k, s, &counted)).collect() },
        };
        let g = groups.entry(key).or_default();
        g.0 += n;
        g.1 += w;
    }
    let row = |(key, (samples, w)): (Key, (u64, f64))| match weighed {
        false => Row { key, samples, percent: percent(samples, counted.total), weight: None, task: None },
        true => {
            let share = if total_weight > 0.0 { w * 100.0 / total_weight } else { 0.0 };
            Row { key, samples, percent: share, weight: Some(w), task: None }
        }
    };
    let mut rows: Vec<Row> = groups.into_iter().map(row).collect();
    let named = match &syms {
        Some(syms) if !symbol_groups.is_empty() => {
            let contexts = symbol_contexts(by, &contexts, &counted, &placeholder);
            // A key of the per-address groups that names a function of a
            // module the symbol groups have could be one of theirs (a
            // kernel module named like a user one, say): then every key
            // is merged through a map.
            let modules: HashSet<&Option<String>> = contexts.iter().map(|c| &c.module).collect();
            let apart =
                !rows.iter().any(|r| function_part(&r.key).is_some_and(|(m, n)| n.is_some() && modules.contains(m)));
            let top = opts.top.filter(|_| apart);
            Some((symbol_rows(syms, by, &symbol_groups, &contexts, counted.total, top), apart))
        }
        _ => None,
    };
    rows = match named {
        // Both ordered: merged in order, a per-address row first on a tie.
        Some(((named, true), true)) => {
            sort_rows(&mut rows);
            merge_sorted(rows, named)
        }
        Some(((named, false), true)) => {
            rows.extend(named);
            sort_rows(&mut rows);
            rows
        }
        Some(((named, _), false)) => {
            let mut all: IdMap<Key, (u64, f64)> = IdMap::default();
            for r in rows.into_iter().chain(named) {
                all.entry(r.key).or_default().0 += r.samples;
            }
            let mut rows: Vec<Row> = all.into_iter().map(row).collect();
            sort_rows(&mut rows);
            rows
        }
        None => {
            sort_rows(&mut rows);
            rows
        }
    };
    if let Some(k) = opts.top {
        rows.truncate(k);
    }
    Ok(Report {
        file: file.path().display().to_string(),
        stream: opts.query.stream,
        by: match by {
            [one] => *one,
            _ => By::Combined,
        },
        records: counted.records,
        samples: counted.total,
        weight: weighed.then(|| WeightSum::new(opts.query.weight, total_weight)),
        rows,
        totals: Vec::new(),
    })
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
