//! Sample counts per function, source line or address, alone or combined
//! with process, thread and module (`--by module,function`), through the
//! symbolizer ([`crate::symbols`]). Samples are first counted per distinct
//! (process, thread, module, pc), so each address is symbolized once
//! however many samples hit it. [`count`] is also what `tbrw annotate` reads.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use tbrw::*;
use tbrw_symbols::{SymbolRef, Symbolized};

use super::{percent, samples, By, Key, Report, ReportOptions, Row};
use crate::error::CliError;
use crate::fields::read_le;
use crate::id_map::IdMap;
use crate::symbols::{FileSymbols, SymbolOptions};

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

/// A stream's samples that passed the filters, counted per [`RawKey`].
pub struct Counted {
    /// Records in the stream.
    pub records: u64,
    /// Samples that passed the filters.
    pub total: u64,
    /// Samples per key.
    pub counts: HashMap<RawKey, u64>,
    /// The file's module table.
    pub modules: Vec<Module>,
    /// The keys of the processes and threads seen, when asked for.
    pub processes: HashMap<u64, Key>,
    /// The keys of the threads seen, when asked for.
    pub threads: HashMap<u64, Key>,
}

/// Counts the samples of `opts.stream` that pass `opts`' filters per
/// (process, thread, module, pc), keeping process and thread only when
/// `by_process`/`by_thread`. The stream needs an instruction pointer and
/// must bind (a stored bind is used, else one is made in memory).
pub fn count(
    file: &Tb5File,
    opts: &ReportOptions,
    by_process: bool,
    by_thread: bool,
    progress: &mut dyn FnMut(u64),
) -> Result<Counted, CliError> {
    let n = opts.stream;
    let name = || file.path().display().to_string();
    let s = file.stream(n)?;
    let data = s.data()?.ok_or_else(|| CliError::msg(format!("{}: stream {n} has no data", name())))?;
    let layout = s.layout()?.ok_or_else(|| CliError::msg(format!("{}: stream {n} has no data descriptor", name())))?;
    let legacy_pc = layout.legacy_pc_offset().map(|x| x as usize);
    let ip = layout.find(desc_type::IP, None).filter(|f| f.size == 4 || f.size == 8);
    let pc_of = |rec: &[u8]| -> u64 {
        match (legacy_pc, ip) {
            (Some(at), _) => SampleRecordPc::from_slice(&rec[at..]).unwrap_or_default().ip(),
            (None, Some(f)) => read_le(rec, f.offset as usize, f.size as usize),
            (None, None) => 0,
        }
    };
    if legacy_pc.is_none() && ip.is_none() {
        return Err(CliError::msg(format!(
            "{}: stream {n} has no instruction pointer in its records: nothing to symbolize",
            name()
        )));
    }
    let bound = bind::Bound::of(file, n)?;
    let view = bound.view();
    let modules = samples::resolved_modules(file)?;
    let module_filter = samples::module_filter(&modules, opts.module.as_deref());
    if let (Some(want), Some(f)) = (&opts.module, &module_filter) {
        if !f.contains(&true) {
            return Err(CliError::msg(format!("{}: no module is named {want:?}", name())));
        }
    }
    // The same time field `report --by module` filters on.
    let time_at = samples::time_field(&layout);

    let mut counts: HashMap<RawKey, u64> = HashMap::new();
    let mut total = 0u64;
    let mut binds = Vec::new();
    let chunk = 1 << 16;
    let mut i = 0u64;
    while i < data.len() {
        let end = (i + chunk).min(data.len());
        binds.clear();
        view.data_binds(i, (end - i) as usize, &mut binds);
        for k in i..end {
            let rec = data.record(k).unwrap_or_default();
            if let Some((lo, hi)) = opts.time {
                let t = time_at.map_or(k, |(at, size)| read_le(rec, at, size));
                if t < lo || t >= hi {
                    continue;
                }
            }
            let b = binds.get((k - i) as usize).copied().unwrap_or_default();
            if opts.pid.is_some_and(|p| view.process(b.pid_index).is_none_or(|x| x.id != p))
                || opts.tid.is_some_and(|t| view.thread(b.tid_index).is_none_or(|x| x.id != t))
            {
                continue;
            }
            let module = (b.module_index != UNKNOWN_MODULE).then_some(b.module_index);
            if let Some(mf) = &module_filter {
                if !module.is_some_and(|m| mf.get(m as usize).copied().unwrap_or(false)) {
                    continue;
                }
            }
            let key = RawKey {
                process: if by_process { b.pid_index } else { 0 },
                thread: if by_thread { b.tid_index } else { 0 },
                module,
                pc: pc_of(rec),
            };
            *counts.entry(key).or_default() += 1;
            total += 1;
        }
        i = end;
        progress(i);
    }

    let string = |id: StringId| file.string_opt(id).ok().flatten().map(str::to_owned);
    let mut processes = HashMap::new();
    let mut threads = HashMap::new();
    for k in counts.keys() {
        if by_process {
            processes.entry(k.process).or_insert_with(|| {
                let pr = view.process(k.process).unwrap_or_default();
                Key::Process { index: k.process, pid: pr.id, name: string(pr.name) }
            });
        }
        if by_thread {
            threads.entry(k.thread).or_insert_with(|| {
                let th = view.thread(k.thread).unwrap_or_default();
                Key::Thread { index: Some(k.thread), tid: th.id, pid: Some(th.associated_pid), name: string(th.name) }
            });
        }
    }
    Ok(Counted { records: data.len(), total, counts, modules, processes, threads })
}

/// A group's samples, and one of its addresses with its result (what the
/// group's key is built from).
type Group = (u64, RawKey, Option<Arc<Symbolized>>);

/// The identity of a group of a report by function (and process, thread,
/// module) whose addresses the symbol table names: the parts `by` does not
/// ask for are `u64::MAX`. Plain integers, in an [`IdMap`]: this is
/// looked up once per distinct address, hundreds of thousands of times.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct SymbolGroup {
    name: usize,
    symbol: Option<SymbolRef>,
    process: u64,
    thread: u64,
    module: u64,
}

impl SymbolGroup {
    fn of(by: &[By], k: &RawKey, sym: SymbolRef, names: &[usize]) -> SymbolGroup {
        let mut g =
            SymbolGroup { name: usize::MAX, symbol: None, process: u64::MAX, thread: u64::MAX, module: u64::MAX };
        for b in by {
            match symbol_part_id(*b, k, sym, names) {
                PartId::Symbol(name, s) => (g.name, g.symbol) = (name, Some(s)),
                PartId::Index(i) if *b == By::Process => g.process = i,
                PartId::Index(i) if *b == By::Thread => g.thread = i,
                PartId::Index(i) => g.module = i,
                _ => unreachable!("symbol_part_id gives symbols and indexes"),
            }
        }
        g
    }
}

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
    /// Module name and a symbol-table function (see [`symbol_part_id`]).
    Symbol(usize, SymbolRef),
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

/// [`part_id`] for an address whose function symbol is known: the function
/// grouping is by the symbol (every address of it gets the same name).
fn symbol_part_id(by: By, k: &RawKey, sym: SymbolRef, names: &[usize]) -> PartId {
    match by {
        By::Function => {
            PartId::Symbol(k.module.and_then(|m| names.get(m as usize).copied()).unwrap_or(usize::MAX), sym)
        }
        By::Process => PartId::Index(k.process),
        By::Thread => PartId::Index(k.thread),
        _ => PartId::Index(k.module.unwrap_or(u64::MAX)),
    }
}

/// The file name of a module record, for keys.
fn module_name(m: &Module) -> Option<String> {
    m.name.clone().or_else(|| m.path.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p).to_owned()))
}

/// `function+0x1a`, or the reason it is unknown.
pub fn function_at(s: &Symbolized) -> String {
    match (&s.function, s.offset) {
        (Some(f), Some(off)) => format!("{f}+{off:#x}"),
        (Some(f), None) => f.to_string(),
        (None, _) => s.function_label(),
    }
}

fn part(by: By, k: &RawKey, s: &Symbolized, counted: &Counted) -> Key {
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
            unknown: s.function.is_none().then(|| s.function_label()),
        },
        By::Line => {
            let loc = s.location();
            Key::Line {
                file: loc.map(|l| l.file.to_string()),
                line: loc.and_then(|l| l.line),
                function: s.function.as_deref().map(str::to_owned),
                unknown: loc.is_none().then(|| s.line_label()),
            }
        }
        By::Address => Key::Address {
            module: module.and_then(module_name),
            address: k.pc,
            vaddr: s.vaddr,
            function: function_at(s),
        },
        By::Event | By::Task | By::Combined => Key::Unbound,
    }
}

/// Computes a report grouped by `by` (one grouping or several; at least
/// one of function, line or address, or several of any but event and
/// task). Modules that cannot be symbolized get one warning each on `warn`
/// and their samples are counted as unknown. `progress` gets records done.
pub fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    by: &[By],
    symbols: &SymbolOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, CliError> {
    if by.is_empty() {
        return Err(CliError::msg("--by names no grouping"));
    }
    if let Some(b) = by.iter().find(|b| matches!(b, By::Event | By::Task | By::Combined)) {
        return Err(CliError::msg(format!(
            "--by {} does not combine with others (combinations take process, thread, module, function, line, address)",
            b.name()
        )));
    }
    let counted = count(file, opts, by.contains(&By::Process), by.contains(&By::Thread), progress)?;
    let symbolic = by.iter().any(|b| b.symbolic());
    // Only `--by line` needs DWARF; parsing it is most of a cold lookup's cost.
    let config = tbrw_symbols::Config { lines: by.contains(&By::Line), ..symbols.config() };
    let mut syms = if symbolic { Some(FileSymbols::with_config(file, &counted.modules, config)?) } else { None };
    let mut raw: Vec<(&RawKey, &u64)> = counted.counts.iter().collect();
    // Symbolize in address order: the warnings come out in a stable order.
    // The keys are distinct, so an unstable sort gives the one order.
    raw.sort_unstable_by_key(|(k, _)| (k.module, k.pc, k.process, k.thread));
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
    let names = module_name_ids(&counted.modules);
    let mut cheap: HashMap<Vec<PartId>, Group> = HashMap::new();
    // Grouped by function only (with process, thread, module): an address
    // whose function the symbol table has needs no per-address result, only
    // its symbol; the group's result is made once, from its first address.
    let by_symbol = by.contains(&By::Function) && !by.iter().any(|b| matches!(b, By::Line | By::Address));
    let mut symbol_groups: IdMap<SymbolGroup, Group> = IdMap::default();
    for (k, &n) in raw {
        if by_symbol {
            if let Some(sym) = syms.as_mut().and_then(|f| f.function_symbol(k.module, k.pc, warn)) {
                match symbol_groups.get_mut(&SymbolGroup::of(by, k, sym, &names)) {
                    Some(group) => group.0 += n,
                    None => {
                        let s = syms.as_mut().map(|f| f.symbolize(k.module, k.pc, warn));
                        symbol_groups.insert(SymbolGroup::of(by, k, sym, &names), (n, *k, s));
                    }
                }
                continue;
            }
        }
        let s = syms.as_mut().map(|f| f.symbolize(k.module, k.pc, warn));
        let id: Vec<PartId> = by.iter().map(|b| part_id(*b, k, s.as_deref().unwrap_or(&placeholder), &names)).collect();
        cheap.entry(id).or_insert_with(|| (0, *k, s)).0 += n;
    }
    let mut groups: HashMap<Key, u64> = HashMap::with_capacity(cheap.len());
    for (n, k, s) in cheap.into_values().chain(symbol_groups.into_values()) {
        let s = s.as_deref().unwrap_or(&placeholder);
        let key = match by {
            [one] => part(*one, &k, s, &counted),
            many => Key::Combined { parts: many.iter().map(|b| part(*b, &k, s, &counted)).collect() },
        };
        *groups.entry(key).or_default() += n;
    }
    let mut rows: Vec<Row> = groups
        .into_iter()
        .map(|(key, samples)| Row { key, samples, percent: percent(samples, counted.total), task: None })
        .collect();
    rows.sort_by_cached_key(|r| (std::cmp::Reverse(r.samples), r.key.to_string()));
    if let Some(k) = opts.top {
        rows.truncate(k);
    }
    Ok(Report {
        file: file.path().display().to_string(),
        stream: opts.stream,
        by: match by {
            [one] => *one,
            _ => By::Combined,
        },
        records: counted.records,
        samples: counted.total,
        rows,
        totals: Vec::new(),
    })
}
