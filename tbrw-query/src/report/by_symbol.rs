//! Counting samples straight under their function symbol (reports by
//! function, alone or with process, thread or module, and what `tbrw
//! symbolize` stores): [`count_by_symbol`] on the bind's threads, module by
//! module, into [`SymbolCounts`]; then the rows of those counts
//! ([`symbol_rows`]). Holds no per-address counting and no symbolizing of
//! addresses: that is [`super::functions`].

use std::ops::Range;
use tbrw_schema::Progress;

use tbrw_symbols::{IndexedSymbol, RecentSymbols, SymbolRef, Symbolized};

use super::raw::{module_name, part, Counted, RawKey, Samples};
use super::rows::order_by_samples_and_label;
use super::{percent, By, Key, Row};
use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, ModuleFunctions};
use rustc_hash::FxHashMap as IdMap;

/// What a sample's group by function is, besides its symbol: the parts
/// `by` asks for (the module's name id for function, the indexes for
/// process, thread and module; `u64::MAX` for the others).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Context {
    name: u64,
    process: u64,
    thread: u64,
    module: u64,
}

impl Context {
    fn of(by: &[By], k: &RawKey, names: &[usize]) -> Context {
        let mut c = Context { name: u64::MAX, process: u64::MAX, thread: u64::MAX, module: u64::MAX };
        for b in by {
            match b {
                By::Function => {
                    c.name = k.module.and_then(|m| names.get(m as usize)).map_or(u64::MAX, |&n| n as u64);
                }
                By::Process => c.process = k.process,
                By::Thread => c.thread = k.thread,
                _ => c.module = k.module.unwrap_or(u64::MAX),
            }
        }
        c
    }
}

/// A pass's samples grouped by (function symbol, [`Context`]) (see
/// [`count_by_symbol`]). Contexts are numbered as they come; each symbol's
/// first context and its count sit in vectors indexed by the symbol's
/// ordinal, so the usual sample costs no hashing and touches a few bytes
/// (most symbols have one context: `--by function` has one per module
/// name). A symbol's other contexts (other threads, say) go to a map.
pub(super) struct SymbolCounts<'c> {
    by: &'c [By],
    names: &'c [usize],
    /// Per context number, one of its samples (pc 0), to build keys from.
    pub(super) contexts: Vec<RawKey>,
    context_number: IdMap<Context, u32>,
    /// Per module record, its context number when the context depends on
    /// the module alone (no process or thread in `by`).
    module_context: Option<Vec<u32>>,
    /// Per symbol ordinal: its first context (`u32::MAX`: none yet) and
    /// the samples counted there.
    first_context: Vec<u32>,
    first_count: Vec<u64>,
    /// (symbol ordinal, context number) → samples, for the others.
    later: IdMap<(u32, u32), u64>,
    /// Samples with no symbol-table function, per distinct key.
    pub(super) rest: IdMap<RawKey, u64>,
    /// Samples counted.
    pub(super) total: u64,
}

impl<'c> SymbolCounts<'c> {
    fn new(by: &'c [By], names: &'c [usize], modules: usize) -> SymbolCounts<'c> {
        let module_only = !by.iter().any(|b| matches!(b, By::Process | By::Thread));
        SymbolCounts {
            by,
            names,
            contexts: Vec::new(),
            context_number: IdMap::default(),
            module_context: module_only.then(|| vec![u32::MAX; modules]),
            first_context: Vec::new(),
            first_count: Vec::new(),
            later: IdMap::default(),
            rest: IdMap::default(),
            total: 0,
        }
    }

    /// The number of `k`'s context.
    fn context(&mut self, k: &RawKey) -> u32 {
        let slot = match (&mut self.module_context, k.module) {
            (Some(per_module), Some(m)) => per_module.get_mut(m as usize),
            _ => None,
        };
        if let Some(n) = slot.as_deref().copied().filter(|&n| n != u32::MAX) {
            return n;
        }
        let next = self.contexts.len() as u32;
        let n = *self.context_number.entry(Context::of(self.by, k, self.names)).or_insert(next);
        if n == next {
            self.contexts.push(RawKey { pc: 0, ..*k });
        }
        if let Some(slot) = slot {
            *slot = n;
        }
        n
    }

    /// Counts `n` samples of symbol `symbol` in context number `context`.
    fn add(&mut self, symbol: SymbolRef, context: u32, n: u64) {
        let o = symbol.ordinal();
        if o >= self.first_context.len() {
            self.first_context.resize(o + 1, u32::MAX);
            self.first_count.resize(o + 1, 0);
        }
        if self.first_context[o] == context {
            self.first_count[o] += n;
        } else if self.first_context[o] == u32::MAX {
            self.first_context[o] = context;
            self.first_count[o] = n;
        } else {
            *self.later.entry((o as u32, context)).or_default() += n;
        }
    }

    /// Adds the counts of a later part of the stream.
    fn absorb(&mut self, later: SymbolCounts<'_>) {
        let renumber: Vec<u32> = later.contexts.iter().map(|k| self.context(k)).collect();
        for (o, (&c, &n)) in later.first_context.iter().zip(&later.first_count).enumerate() {
            if c != u32::MAX {
                self.add(SymbolRef::from_ordinal(o as u32), renumber[c as usize], n);
            }
        }
        for ((o, c), n) in later.later {
            self.add(SymbolRef::from_ordinal(o), renumber[c as usize], n);
        }
        for (k, n) in later.rest {
            *self.rest.entry(k).or_default() += n;
        }
        self.total += later.total;
    }

    /// Every (symbol, context number, samples) counted, by symbol, then
    /// the context's process, thread and module: the same order whatever
    /// order the samples were counted in. [`SymbolCounts::contexts`] has a
    /// sample of each context.
    pub fn groups(&self) -> Vec<(SymbolRef, u32, u64)> {
        let first = self.first_context.iter().zip(&self.first_count).enumerate().filter(|(_, (&c, _))| c != u32::MAX);
        let mut groups: Vec<(SymbolRef, u32, u64)> = first
            .map(|(o, (&c, &n))| (SymbolRef::from_ordinal(o as u32), c, n))
            .chain(self.later.iter().map(|(&(o, c), &n)| (SymbolRef::from_ordinal(o), c, n)))
            .collect();
        // Without later contexts the first ones are in symbol order already.
        if !self.later.is_empty() {
            groups.sort_unstable_by_key(|&(s, c, _)| {
                let k = &self.contexts[c as usize];
                (s.ordinal(), k.process, k.thread, k.module)
            });
        }
        groups
    }

    /// Counts a sample of a module record past the batch's, or of none.
    fn add_rest(&mut self, k: RawKey) {
        *self.rest.entry(k).or_default() += 1;
    }

    /// Counts a batch of samples module by module (see [`Batch`]).
    fn count_batch(&mut self, batch: &mut Batch, lookups: &ModuleFunctions, recent: &mut RecentSymbols) {
        let Batch { modules, pcs, keys, per_module, touched, sorted } = batch;
        // A counting sort by module record: sizes, then places. Places, not
        // samples, are sorted: each module's run then reads its addresses in
        // stream order.
        for &m in modules.iter() {
            let n = &mut per_module[m as usize];
            if *n == 0 {
                touched.push(m);
            }
            *n += 1;
        }
        let mut at = 0;
        for &m in touched.iter() {
            let n = std::mem::replace(&mut per_module[m as usize], at);
            at += n;
        }
        sorted.clear();
        sorted.resize(at as usize, 0);
        for (i, &m) in modules.iter().enumerate() {
            let place = &mut per_module[m as usize];
            sorted[*place as usize] = i as u32;
            *place += 1;
        }
        let mut start = 0;
        for &m in touched.iter() {
            let end = std::mem::take(&mut per_module[m as usize]) as usize;
            let run = &sorted[start..end];
            start = end;
            // The key of sample `i`: the batch keeps whole keys only when
            // they carry a process or thread.
            let key = |i: u32| match keys.get(i as usize) {
                Some(k) => *k,
                None => RawKey { module: Some(u64::from(m)), pc: pcs[i as usize], ..RawKey::default() },
            };
            let Some(module) = lookups.module(u64::from(m)) else {
                for &i in run {
                    self.add_rest(key(i));
                }
                continue;
            };
            // A module whose file cannot be used names all its addresses
            // alike: one entry for them, not one per address.
            if module.is_uniform() {
                for &i in run {
                    self.add_rest(RawKey { pc: 0, ..key(i) });
                }
                continue;
            }
            // Without keys, every sample of the run has the run's context.
            let mut run_context = None;
            for &i in run {
                match module.function_symbol(pcs[i as usize], recent) {
                    IndexedSymbol::Found(symbol) => {
                        let c = match keys.is_empty() {
                            true => *run_context.get_or_insert_with(|| self.context(&key(i))),
                            false => self.context(&key(i)),
                        };
                        self.add(symbol, c, 1);
                    }
                    IndexedSymbol::NoSymbol | IndexedSymbol::NotIndexed => self.add_rest(key(i)),
                }
            }
        }
        touched.clear();
        modules.clear();
        pcs.clear();
        keys.clear();
    }

    /// Notes for `syms`'s warnings each module of the samples counted whose
    /// file cannot be symbolized.
    pub fn note_used_modules(&self, syms: &mut FileSymbols) {
        let mut used: Vec<u64> = self.contexts.iter().chain(self.rest.keys()).filter_map(|k| k.module).collect();
        used.sort_unstable();
        used.dedup();
        for m in used {
            syms.note_used(Some(m));
        }
    }
}

/// Samples a thread gathers before counting them module by module: the
/// symbol tables of tens of modules do not fit a core's cache together,
/// one module's do, so each lookup then hits the cache.
const BATCH: usize = 1 << 14;

/// A thread's batch of samples of module records, kept compact (12 bytes
/// a sample when keys carry no process or thread: a batch and the tables
/// of the module being counted then share a core's cache), and the room to
/// sort it by module record.
struct Batch {
    /// Per sample: its module record and address.
    modules: Vec<u32>,
    pcs: Vec<u64>,
    /// Per sample, its whole key, when keys keep a process or thread; else
    /// empty (a key is its module and address).
    keys: Vec<RawKey>,
    /// Per module record: its samples in the batch while sizing, then where
    /// its next one goes; 0 between batches.
    per_module: Vec<u32>,
    /// The module records with samples in the batch, as first seen.
    touched: Vec<u32>,
    /// Indexes of samples, grouped by module record.
    sorted: Vec<u32>,
}

impl Batch {
    fn new(modules: usize) -> Batch {
        Batch {
            modules: Vec::with_capacity(BATCH),
            pcs: Vec::with_capacity(BATCH),
            keys: Vec::new(),
            per_module: vec![0; modules],
            touched: Vec::new(),
            sorted: Vec::new(),
        }
    }

    /// Adds a sample of a module record this batch counts (below
    /// `per_module`'s length) and returns whether the batch is full; a
    /// sample of another record, or of none, is the caller's.
    fn push(&mut self, k: RawKey, keep_key: bool) -> Option<bool> {
        let m = k.module.and_then(|m| u32::try_from(m).ok()).filter(|&m| (m as usize) < self.per_module.len())?;
        self.modules.push(m);
        self.pcs.push(k.pc);
        if keep_key {
            self.keys.push(k);
        }
        Some(self.modules.len() == BATCH)
    }
}

/// Counts the samples per function symbol and [`Context`] (`by`, with
/// module name ids `names`, keys keeping process and thread as
/// `by_process` and `by_thread` say), the stream split in `parts`
/// contiguous parts on as many threads ([`Samples::in_parts`]) and the
/// parts' counts added in stream order.
pub fn count_by_symbol<'c>(
    samples: &Samples<'_>,
    lookups: &ModuleFunctions,
    (by, names): (&'c [By], &'c [usize]),
    (by_process, by_thread): (bool, bool),
    parts: usize,
    progress: &mut dyn Progress,
) -> Result<SymbolCounts<'c>, QueryError> {
    let count = |range: Range<u64>, progress: &mut dyn Progress| -> Result<SymbolCounts<'c>, QueryError> {
        let mut counts = SymbolCounts::new(by, names, names.len());
        let mut recent = RecentSymbols::default();
        let mut batch = Batch::new(names.len());
        let keep_keys = by_process || by_thread;
        let total = samples.pass(range, progress, |k| {
            let k = k.masked(by_process, by_thread);
            match batch.push(k, keep_keys) {
                Some(true) => counts.count_batch(&mut batch, lookups, &mut recent),
                Some(false) => {}
                // Samples in no module all name alike ([unknown]).
                None if k.module.is_none() => counts.add_rest(RawKey { pc: 0, ..k }),
                None => counts.add_rest(k),
            }
        })?;
        counts.count_batch(&mut batch, lookups, &mut recent);
        counts.total = total;
        Ok(counts)
    };
    samples.in_parts(parts, progress, count, |all, later| match (all, later) {
        (Ok(mut counts), Ok(later)) => {
            counts.absorb(later);
            Ok(counts)
        }
        // The first error in stream order.
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    })
}

/// The module and name of a key's function part, if it has one.
pub fn function_part(key: &Key) -> Option<(&Option<String>, &Option<String>)> {
    match key {
        Key::Function { module, name, .. } => Some((module, name)),
        Key::Combined { parts } => parts.iter().find_map(function_part),
        _ => None,
    }
}

/// The key parts of one context of [`SymbolCounts`]: its module's name (a
/// function key's module) and, for combined groupings, every part, the
/// function's without its name.
pub(super) struct ContextKey {
    pub(super) module: Option<String>,
    parts: Vec<Key>,
}

pub fn symbol_contexts(by: &[By], contexts: &[RawKey], counted: &Counted, placeholder: &Symbolized) -> Vec<ContextKey> {
    contexts
        .iter()
        .map(|k| {
            let module = k.module.and_then(|m| counted.modules.get(m as usize)).and_then(module_name);
            let parts = match by {
                [_] => Vec::new(),
                many => many
                    .iter()
                    .map(|b| match b {
                        By::Function => Key::Function { module: module.clone(), name: None, unknown: None },
                        b => part(*b, k, placeholder, counted),
                    })
                    .collect(),
            };
            ContextKey { module, parts }
        })
        .collect()
}

/// The rows of the samples counted under function symbols (`groups`, in
/// the contexts `contexts`), and whether they are sorted. Groups of one key
/// (two symbols of one name in one context) are merged on (context, name)
/// before any key is made. By function alone, where the name is the
/// label, the rows are ordered on those ids and only the first `top` are
/// made.
pub fn symbol_rows(
    syms: &FileSymbols,
    by: &[By],
    groups: &[(SymbolRef, u32, u64)],
    contexts: &[ContextKey],
    total: u64,
    top: Option<usize>,
) -> (Vec<Row>, bool) {
    let names: Vec<Option<&str>> = groups.iter().map(|g| syms.symbol_name(g.0)).collect();
    let mut at: IdMap<(u32, Option<&str>), usize> = IdMap::default();
    at.reserve(groups.len());
    let mut merged: Vec<(u32, Option<&str>, u64)> = Vec::with_capacity(groups.len());
    for (&(_, c, n), name) in groups.iter().zip(&names) {
        let i = *at.entry((c, *name)).or_insert(merged.len());
        if i == merged.len() {
            merged.push((c, *name, 0));
        }
        merged[i].2 += n;
    }
    let row = |&(c, name, samples): &(u32, Option<&str>, u64)| {
        let ctx = &contexts[c as usize];
        let function = Key::Function { module: ctx.module.clone(), name: name.map(str::to_owned), unknown: None };
        let key = match by {
            [_] => function,
            _ => Key::Combined {
                parts: ctx
                    .parts
                    .iter()
                    .map(|p| if matches!(p, Key::Function { .. }) { function.clone() } else { p.clone() })
                    .collect(),
            },
        };
        Row { key, samples, percent: percent(samples, total), weight: None, task: None, children: None }
    };
    if let [By::Function] = by {
        let order = order_by_samples_and_label(merged.len(), |i| merged[i].2, |i| merged[i].1.unwrap_or("?"));
        let n = top.map_or(order.len(), |t| t.min(order.len()));
        (order[..n].iter().map(|&i| row(&merged[i])).collect(), true)
    } else {
        (merged.iter().map(row).collect(), false)
    }
}
