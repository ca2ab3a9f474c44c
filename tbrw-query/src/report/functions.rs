//! Sample counts per function, source line or address, alone or combined
//! with process, thread and module (`--by module,function`), through the
//! symbolizer ([`crate::file_symbols`]). Grouped by function (with process,
//! thread or module), samples are counted straight under their function
//! symbol, on the bind's threads (that counting is in `by_symbol.rs`, the
//! rows' order in `rows.rs`); otherwise, and for samples no symbol names,
//! they are first counted per distinct (process, thread, module, pc), so
//! each address is symbolized once however many samples hit it. [`count`]
//! is also what `tbrw annotate` reads.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tbrw_schema::Progress;

use tbrw::*;
use tbrw_symbols::{SymbolRef, Symbolized};

use super::addresses::AddressRows;
use super::by_symbol::{count_by_symbol, function_part, symbol_contexts, symbol_rows};
// The counting under the reports, public for the command line's `tbrw
// symbolize` and benchmarks only: not part of the front.
pub(crate) use super::raw::function_at;
#[doc(hidden)]
pub use super::raw::{count, Counted, RawKey, Samples};
use super::raw::{module_name, part};
use super::rows::{merge_sorted, sort_rows};
use super::{percent, By, Key, Report, ReportOptions, Row, WeightSum};
use crate::error::QueryError;
use crate::file_symbols::FileSymbols;
use crate::query::{Query, Weight};

use rustc_hash::FxHashMap as IdMap;

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

/// Computes a report grouped by `opts.by` (one grouping or several; at least
/// one of function, line or address, or several of any but event and
/// task). Modules that cannot be symbolized get one warning each on `warn`
/// and their samples are counted as unknown. `progress` gets records done.
///
/// Grouped by function (with process, thread or module), the samples are
/// counted on the bind's threads, in parts of 64 Ki records or more.
pub(crate) fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<Report, QueryError> {
    report_in_parts(file, opts, warn, progress, None)
}

/// [`report`], with a report by address (without a weight) left as its
/// rows to be made one at a time as they are written ([`AddressRows`]:
/// what it holds per distinct address is its count).
pub(crate) fn answer(
    file: &Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<super::Answer, QueryError> {
    if opts.by == [By::Address] && opts.query.weight == Weight::Samples {
        return Ok(super::Answer::Addresses(Box::new(AddressRows::new(file, opts, warn, progress)?)));
    }
    report(file, opts, warn, progress).map(super::Answer::Report)
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
    warn: &mut Vec<crate::Warning>,
) -> Result<(Vec<SymbolRef>, u64, u64), QueryError> {
    let query = Query { stream, ..Query::default() };
    let samples = Samples::new(file, &query)?;
    let lookups = syms.function_index(&samples.modules_bound(modules.len()));
    let names = module_name_ids(modules);
    let counted =
        count_by_symbol(&samples, &lookups, (&[By::Function], &names), (true, true), samples.parts(), &mut |_| {})?;
    counted.note_used_modules(syms);
    syms.take_warnings(warn);
    let named = counted.total - counted.rest.values().sum::<u64>();
    Ok((counted.groups().into_iter().map(|(s, _, _)| s).collect(), counted.total, named))
}

/// The per-address counts grouped as `by` asks, each group's samples and
/// weight. Distinct addresses are many and groups few: samples are first
/// summed under a cheap identity of their group (indexes and the
/// symbolizer's shared name pointers), and a group's key, with its strings,
/// is built once from one of its addresses. Equal keys of different
/// identities (two symbols of one name, say) are merged after. Symbolized
/// in address order: the warnings come out in a stable order.
fn group_addresses(
    by: &[By],
    counted: &Counted,
    mut syms: Option<&mut FileSymbols>,
    weights: Option<&[f64]>,
    names: &[usize],
) -> IdMap<Key, (u64, f64)> {
    let placeholder = Symbolized::default();
    let mut cheap: HashMap<Vec<PartId>, Group> = HashMap::new();
    for (i, &(k, n)) in counted.counts.iter().enumerate() {
        let s = syms.as_mut().map(|f| f.symbolize(k.module, k.pc));
        let id: Vec<PartId> = by.iter().map(|b| part_id(*b, &k, s.as_deref().unwrap_or(&placeholder), names)).collect();
        let w = weights.map_or(0.0, |w| w[i]);
        let g = cheap.entry(id).or_insert_with(|| (0, 0.0, k, s));
        g.0 += n;
        g.1 += w;
    }
    let mut groups: IdMap<Key, (u64, f64)> = IdMap::default();
    groups.reserve(cheap.len());
    for (n, w, k, s) in cheap.into_values() {
        let s = s.as_deref().unwrap_or(&placeholder);
        let key = match by {
            [one] => part(*one, &k, s, counted),
            many => Key::Combined { parts: many.iter().map(|b| part(*b, &k, s, counted)).collect() },
        };
        let g = groups.entry(key).or_default();
        g.0 += n;
        g.1 += w;
    }
    groups
}

/// [`report`] with a report by function's samples counted in `parts`
/// parts on as many threads (the result is the same for any count;
/// `None`: as [`report`] does). Public for the tests of that claim only.
#[doc(hidden)]
pub fn report_in_parts(
    file: &Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
    parts: Option<usize>,
) -> Result<Report, QueryError> {
    let (by, symbols) = (opts.by.as_slice(), &opts.symbols);
    if by.is_empty() {
        return Err(QueryError::NoGrouping);
    }
    if let Some(b) = by.iter().find(|b| matches!(b, By::Event | By::Task | By::Combined)) {
        return Err(QueryError::GroupingAlone { by: *b });
    }
    let (by_process, by_thread) = (by.contains(&By::Process), by.contains(&By::Thread));
    let symbolic = by.iter().any(|b| b.symbolic());
    let weighed = opts.query.weight != Weight::Samples;
    if by == [By::Address] && !weighed {
        return Ok(AddressRows::new(file, opts, warn, progress)?.into_report());
    }
    let mut samples = Samples::new(file, &opts.query)?;
    let modules = samples.walk.modules().to_vec();
    // Only `--by line` needs DWARF; parsing it is most of a cold lookup's cost.
    let config = tbrw_symbols::Config { lines: by.contains(&By::Line), ..symbols.config() };
    let mut syms = match symbolic {
        true => Some(FileSymbols::with_config(file, &modules, config)?.verbose(symbols.verbose)),
        false => None,
    };
    let names = module_name_ids(&modules);
    // Grouped by function only (with process, thread, module) and not
    // weighed: a sample whose function the symbol table has is counted
    // straight under its symbol, with no per-address result; the group's
    // key is made once after, from the symbol's name. This runs on the
    // bind's threads. The other samples are counted per distinct address
    // and symbolized after.
    let by_symbol = !weighed && by.contains(&By::Function) && !by.iter().any(|b| matches!(b, By::Line | By::Address));
    // Without addresses in the grouping, the samples of a module whose file
    // cannot be used (all its addresses alike), and those of no module,
    // are counted as one address each (the count by symbol does so itself).
    if let Some(syms) = syms.as_mut().filter(|_| !by_symbol && !by.contains(&By::Address)) {
        let bound = samples.modules_bound(modules.len());
        let uniform = (0..modules.len()).map(|m| bound[m] && syms.uniform(m as u64)).collect();
        samples.collapse(uniform);
    }
    let mut weights: Option<Vec<f64>> = None;
    let mut total_weight = 0.0;
    let (symbol_groups, contexts, counts, total) = match syms.as_mut().filter(|_| by_symbol) {
        Some(syms) => {
            let lookups = syms.function_index(&samples.modules_bound(modules.len()));
            let parts = parts.unwrap_or_else(|| samples.parts());
            let counted = count_by_symbol(&samples, &lookups, (by, &names), (by_process, by_thread), parts, progress)?;
            counted.note_used_modules(syms);
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
    let placeholder = Symbolized::default();
    let groups = group_addresses(by, &counted, syms.as_mut(), weights.as_deref(), &names);
    let row = |(key, (samples, w)): (Key, (u64, f64))| match weighed {
        false => {
            Row { key, samples, percent: percent(samples, counted.total), weight: None, task: None, children: None }
        }
        true => {
            let share = if total_weight > 0.0 { w * 100.0 / total_weight } else { 0.0 };
            Row { key, samples, percent: share, weight: Some(w), task: None, children: None }
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
    if let Some(syms) = syms.as_mut() {
        syms.take_warnings(warn);
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
        auto: None,
    })
}
