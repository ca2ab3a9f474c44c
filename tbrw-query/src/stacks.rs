//! Samples with their call stacks, for the viewer exports (flame graph,
//! pprof, Firefox) and the inclusive views: [`walk`] runs the query's walk
//! ([`crate::walk`]) and hands out each sample with its process, thread,
//! cpu, time, weight and frames (its stack from the stream's stack table,
//! [`TableStacks`]; or, in perf imports made before the stack table, the
//! records of the call-chain stream; else the sampled address); [`Stacks`] aggregates them
//! per distinct stack and label set, so that memory grows with distinct
//! stacks, not samples (what the exports and `report --children` read);
//! [`Names`] symbolizes each distinct address once.
//!
//! Imports `walk`, `stream`, `query`, `names`, `file_symbols`, `report`'s
//! `By`; no export.

use std::collections::HashMap;
use std::hash::Hasher;
use std::io::Write;
use std::sync::Arc;

pub use rustc_hash::FxHashMap as IdMap;
use tbrw::*;
use tbrw_import::fields;

use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};
use crate::query::Query;
use crate::report::By;
use crate::stream::{self, TimeField};
use crate::walk::{Binding, ProcessName, ThreadName, Walk};

/// What every sample export takes: the query, and where symbols are.
#[derive(Clone, Debug, Default)]
pub struct ViewOptions {
    /// The stream, filters and weight.
    pub query: Query,
    /// Where the modules' symbols are looked for.
    pub symbols: SymbolOptions,
}

/// One frame of a stack: the module record covering the address (`None`:
/// none does) and the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// The module record's index.
    pub module: Option<u64>,
    /// The address.
    pub pc: u64,
}

/// A sample as [`walk`] hands it out.
#[derive(Clone, Debug)]
pub struct Sample<'a> {
    /// The record's index in the stream.
    pub index: u64,
    /// The bind's process index.
    pub process: u64,
    /// The bind's thread index.
    pub thread: u64,
    /// The OS pid (0 when the bind has none).
    pub pid: u32,
    /// The OS tid (0 when the bind has none).
    pub tid: u32,
    /// The cpu the sample was taken on, when the records say.
    pub cpu: Option<u32>,
    /// The time stamp, when the records have one.
    pub time: Option<u64>,
    /// The weight the query asked for (1 for samples).
    pub weight: f64,
    /// A perf import's period (the events the sample stands for).
    pub period: Option<u64>,
    /// The CPU time its thread used since the thread's previous sample, ns,
    /// when the records carry a thread CPU time (whatever the weight).
    pub cpu_time: Option<u64>,
    /// The frames, innermost (the sampled address) first.
    pub frames: &'a [Frame],
}

/// What [`walk`] learned about the stream, besides the samples.
#[derive(Clone, Debug, Default)]
pub struct WalkInfo {
    /// Records in the stream.
    pub records: u64,
    /// Samples that passed the filters.
    pub samples: u64,
    /// The file's module table.
    pub modules: Vec<Module>,
    /// Per process index seen: OS pid and name.
    pub processes: HashMap<u64, ProcessName>,
    /// Per thread index seen: OS tid, pid and name.
    pub threads: HashMap<u64, ThreadName>,
    /// The stream whose records gave the call chains.
    pub chains: Option<u32>,
    /// The time stamp field.
    pub time: Option<TimeField>,
    /// The first and last time stamps of the samples that passed.
    pub time_range: Option<(u64, u64)>,
    /// Whether the records carry a perf period.
    pub has_period: bool,
    /// Whether the records carry a thread's CPU time (what `--weight cputime` weighs).
    pub has_cputime: bool,
}

/// Frames a [`TableStacks`] keeps bound, at most: past it, stacks are
/// bound sample by sample (a hostile table, every sample a new deep stack,
/// cannot make the cache grow without end).
const CACHED_FRAMES: usize = 1 << 23;

/// A sample's stack as [`TableStacks::resolve`] gives it.
#[derive(Clone, Copy, Debug)]
pub struct Resolved<'a> {
    /// The frames with their modules, innermost first.
    pub frames: &'a [Frame],
    /// Which cached binding of a stack these frames are: equal slots, equal
    /// frames (with equal modules), for as long as the [`TableStacks`]
    /// lives; `None` for frames bound for this sample alone.
    pub slot: Option<u32>,
}

/// A stream's stacks from its stack table (docs/FORMAT.md "Stack table"),
/// each frame bound to a module as the sample's own address is: with the
/// sample's pid and time (docs/FORMAT.md "Binding frames"). A (pid, stack)
/// is bound once and reused while the sample's time stays where the bind's
/// answer holds, so a sample costs one lookup, not one per frame.
pub struct TableStacks<'f> {
    file: &'f Tb5File,
    stream: u32,
    table: Option<StackTableView<'f>>,
    field: Field,
    binder: bind::FrameBinder,
    cache: IdMap<(u32, u32), (bind::Span, u32)>,
    /// Per slot: its frames' range in `arena`.
    slots: Vec<(u32, u32)>,
    arena: Vec<Frame>,
    addresses: Vec<u64>,
    scratch: Vec<Frame>,
}

impl<'f> TableStacks<'f> {
    /// The stacks of stream `n`, when its records have a stack id field
    /// (4 bytes; a stream with the field and no table is read, and each of
    /// its records naming a stack is damage).
    pub fn of(file: &'f Tb5File, n: u32) -> Result<Option<TableStacks<'f>>, QueryError> {
        let s = stream::open_stream(file, n)?;
        let Some(layout) = s.layout()? else { return Ok(None) };
        let Some(field) = layout.find(fields::STACK_ID, None).copied() else { return Ok(None) };
        if field.size != 4 {
            return Err(QueryError::Damaged {
                file: file.path().display().to_string(),
                stream: n,
                what: format!("its stack id field is {} bytes, not 4", field.size),
            });
        }
        Ok(Some(TableStacks {
            file,
            stream: n,
            table: s.stack_table()?,
            field,
            binder: bind::FrameBinder::of(file, n)?,
            cache: IdMap::default(),
            slots: Vec::new(),
            arena: Vec::new(),
            addresses: Vec::new(),
            scratch: Vec::new(),
        }))
    }

    /// The stack id of record `rec`, if it has a stack.
    #[inline]
    pub fn stack_id(&self, rec: &[u8]) -> Option<u32> {
        Some(fields::read(rec, &self.field) as u32).filter(|&id| id != NO_STACK)
    }

    /// The number of nodes of the table.
    pub fn nodes(&self) -> u64 {
        self.table.map_or(0, |t| t.len())
    }

    /// The stack of record `rec` (record `k` of the stream) with its
    /// frames' modules; `None` when the record has no stack.
    pub fn resolve(&mut self, rec: &[u8], k: u64) -> Result<Option<Resolved<'_>>, QueryError> {
        let Some(id) = self.stack_id(rec) else { return Ok(None) };
        let key = self.binder.key(rec);
        let hit = match (self.cache.get(&(key.pid, id)), key.tsc) {
            (Some(&(span, slot)), Some(t)) if span.holds(t) => Some(slot),
            _ => None,
        };
        if let Some(slot) = hit {
            let (at, len) = self.slots[slot as usize];
            return Ok(Some(Resolved { frames: &self.arena[at as usize..(at + len) as usize], slot: Some(slot) }));
        }
        let table = self.table.as_ref().ok_or_else(|| QueryError::Damaged {
            file: self.file.path().display().to_string(),
            stream: self.stream,
            what: format!("record {k} names stack {id}, and the stream has no stack table"),
        })?;
        self.addresses.clear();
        table.frames(id, &mut self.addresses)?;
        self.scratch.clear();
        let mut span = key.tsc.map(|_| bind::Span::ALWAYS);
        for &pc in &self.addresses {
            let (module, s) = self.binder.module_of(&key, k, pc);
            span = span.zip(s).map(|(a, b)| a.and(b));
            self.scratch.push(Frame { module, pc });
        }
        let Some(span) = span else { return Ok(Some(Resolved { frames: &self.scratch, slot: None })) };
        // The same frames as the slot this (pid, stack) had: only the span moves.
        if let Some((old_span, slot)) = self.cache.get_mut(&(key.pid, id)) {
            let (at, len) = self.slots[*slot as usize];
            if self.arena[at as usize..(at + len) as usize] == self.scratch[..] {
                *old_span = span;
                let slot = *slot;
                return Ok(Some(Resolved { frames: &self.arena[at as usize..(at + len) as usize], slot: Some(slot) }));
            }
        }
        if self.arena.len() + self.scratch.len() > CACHED_FRAMES {
            return Ok(Some(Resolved { frames: &self.scratch, slot: None }));
        }
        let slot = self.slots.len() as u32;
        let at = self.arena.len() as u32;
        self.arena.extend_from_slice(&self.scratch);
        self.slots.push((at, self.scratch.len() as u32));
        self.cache.insert((key.pid, id), (span, slot));
        Ok(Some(Resolved { frames: &self.arena[at as usize..], slot: Some(slot) }))
    }
}

/// The stream of a perf import's call-chain frames for sample stream `n`,
/// in files imported before the stack table: only stream 0 has them (its
/// frames name their sample's index in stream 0).
fn chain_stream(file: &Tb5File, n: u32) -> Result<Option<(u32, RecordLayout)>, QueryError> {
    if n != 0 {
        return Ok(None);
    }
    for m in 1..file.stream_count() {
        let s = file.stream(m)?;
        if let Some(l) = s.layout()? {
            let has = |t: u16| l.find(t, None).is_some();
            if has(fields::CALLCHAIN_SAMPLE) && has(fields::CALLCHAIN_DEPTH) && has(desc_type::IP) {
                return Ok(Some((m, l)));
            }
        }
    }
    Ok(None)
}

/// Whether stream `n`'s samples have call stacks: a stack id field (the
/// stack table), or, in a perf import made before it, a call-chain stream.
pub fn has_stacks(file: &Tb5File, n: u32) -> Result<bool, QueryError> {
    let s = stream::open_stream(file, n)?;
    let field = s.layout()?.is_some_and(|l| l.find(fields::STACK_ID, None).is_some());
    Ok(field || chain_stream(file, n)?.is_some())
}

/// Streams the samples of `opts.query` that pass its filters to `each`,
/// in record order, with their call chains when the file has them. `what`
/// names the export for messages. The stream needs instruction pointers
/// and must bind (a stored bind is used, else one is made in memory).
/// `progress` gets records done.
pub fn walk(
    file: &Tb5File,
    opts: &ViewOptions,
    what: &str,
    progress: &mut dyn FnMut(u64),
    each: &mut dyn FnMut(&Sample<'_>) -> Result<(), QueryError>,
) -> Result<WalkInfo, QueryError> {
    let n = opts.query.stream;
    let name = || file.path().display().to_string();
    let fields = stream::SampleFields::of(file, n)?;
    if !fields.has_pc() || !fields.bindable() {
        return Err(QueryError::Unsupported {
            file: name(),
            stream: n,
            what: format!(
                "it has no instruction pointer in its records, so {what} has no stacks to show; \
                 for a stream of intervals (MTMC tasks, winIDEA calls) use `tbrw export timeline` or `tbrw export firefox`"
            ),
        });
    }
    let w = Walk::open(file, &opts.query, Binding::Always)?.with_cpu_time()?;
    if w.records() == 0 {
        return Err(QueryError::Unsupported {
            file: name(),
            stream: n,
            what: format!("it has no records: nothing to {what}"),
        });
    }
    let fields = w.fields();

    // The stacks of the stream's stack table, when it has one; else, in a
    // perf import made before it, the call-chain stream.
    let mut table = TableStacks::of(file, n)?;
    // The call chains: a second stream walked in step (its frames are in
    // sample order, innermost first), with its own bind for the modules.
    let chain = if table.is_some() { None } else { chain_stream(file, n)? };
    let chain_reader = match &chain {
        Some((m, _)) => Some(file.stream(*m)?),
        None => None,
    };
    let chain_data = match &chain_reader {
        Some(r) => r.data()?,
        None => None,
    };
    let chain_bound = match &chain {
        Some((m, _)) => Some(bind::Bound::of(file, *m)?),
        None => None,
    };
    let chain_view = chain_bound.as_ref().map(bind::Bound::view);
    let chain_fields = match (&chain, &chain_data) {
        (Some((m, l)), Some(d)) => {
            for f in l.fields() {
                if f.offset as usize + f.size as usize > d.record_size() {
                    return Err(QueryError::Damaged {
                        file: name(),
                        stream: *m,
                        what: format!("descriptor entry {} lies past the end of the records", f.entry),
                    });
                }
            }
            let f = |t: u16| l.find(t, None).copied();
            match (f(fields::CALLCHAIN_SAMPLE), f(desc_type::IP)) {
                (Some(sample), Some(ip)) => Some((sample, ip)),
                _ => None,
            }
        }
        _ => None,
    };
    let mut next_frame = 0u64;
    let mut chain_binds = Vec::new();

    let mut info = WalkInfo {
        records: w.records(),
        modules: w.modules().to_vec(),
        chains: if table.is_some() { Some(n) } else { chain.as_ref().map(|(m, _)| *m) },
        time: fields.time_field.clone(),
        has_period: fields.has_period(),
        has_cputime: fields.has_cputime(),
        ..WalkInfo::default()
    };
    let mut frames: Vec<Frame> = Vec::new();
    // (process, thread, pid, tid) of the sample before.
    let mut last_seen: Option<(u64, u64, u32, u32)> = None;
    let mut failed = None;
    let passed = w.pass(0..w.records(), progress, |s| {
        if failed.is_some() {
            return;
        }
        let k = s.index;
        let rec = s.record;
        frames.clear();
        if let Some(t) = table.as_mut() {
            match t.resolve(rec, k) {
                Ok(Some(r)) => frames.extend_from_slice(r.frames),
                Ok(None) => {}
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            }
        }
        // This sample's frames in the chain stream, skipping those of
        // samples left out.
        if let (Some(cd), Some(cv), Some((sample_f, ip_f))) = (&chain_data, &chain_view, &chain_fields) {
            while next_frame < cd.len() {
                let fr = cd.record(next_frame).unwrap_or_default();
                let of = fields::read(fr, sample_f);
                if of > k {
                    break;
                }
                if of == k {
                    chain_binds.clear();
                    cv.data_binds(next_frame, 1, &mut chain_binds);
                    let m = chain_binds.first().map_or(UNKNOWN_MODULE, |b| b.module_index);
                    frames.push(Frame { module: (m != UNKNOWN_MODULE).then_some(m), pc: fields::read(fr, ip_f) });
                }
                next_frame += 1;
            }
        }
        if frames.is_empty() {
            frames.push(Frame { module: s.module, pc: fields.pc(rec) });
        }
        let (process, thread) = (s.process.unwrap_or(0), s.thread.unwrap_or(0));
        // Consecutive samples are mostly of the same thread: the maps are
        // only looked at when the thread changes.
        let (pid, tid) = match last_seen {
            Some((p, t, pid, tid)) if (p, t) == (process, thread) => (pid, tid),
            _ => {
                let pid = info.processes.entry(process).or_insert_with(|| w.process(process)).pid;
                let tid = info.threads.entry(thread).or_insert_with(|| w.thread(thread)).tid;
                last_seen = Some((process, thread, pid, tid));
                (pid, tid)
            }
        };
        let time = fields.time_stamp(rec);
        let sample = Sample {
            index: k,
            process,
            thread,
            pid,
            tid,
            cpu: fields.cpu(rec),
            time,
            weight: s.weight,
            period: fields.period(rec),
            cpu_time: s.cpu_time,
            frames: &frames,
        };
        if let Some(t) = time {
            info.time_range = Some(info.time_range.map_or((t, t), |(a, z)| (a.min(t), z.max(t))));
        }
        if let Err(e) = each(&sample) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    info.samples = passed;
    if passed == 0 {
        return Err(w.nothing_matches());
    }
    Ok(info)
}

/// What a stack's samples add up to.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    /// Samples.
    pub samples: u64,
    /// Their weight (`--weight`).
    pub weight: f64,
    /// Their perf periods.
    pub period: u64,
}

/// What samples are aggregated by: the parts a caller does not keep are 0 / `None`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackKey {
    /// The bind's process index.
    pub process: u64,
    /// The bind's thread index.
    pub thread: u64,
    /// The cpu.
    pub cpu: Option<u32>,
    /// The frames, innermost first.
    pub frames: Frames,
}

/// A stack's frames, innermost first. Most stacks are one sampled address:
/// kept inline, a lookup of the stack map compares keys without following
/// a pointer and a sample allocates nothing. Compared, ordered and hashed
/// as the slice of frames.
#[derive(Clone, Debug)]
pub enum Frames {
    /// The sampled address alone.
    One(Frame),
    /// A call chain.
    Chain(Box<[Frame]>),
}

impl From<&[Frame]> for Frames {
    fn from(f: &[Frame]) -> Frames {
        match f {
            [one] => Frames::One(*one),
            _ => Frames::Chain(f.into()),
        }
    }
}

impl std::ops::Deref for Frames {
    type Target = [Frame];

    fn deref(&self) -> &[Frame] {
        match self {
            Frames::One(f) => std::slice::from_ref(f),
            Frames::Chain(c) => c,
        }
    }
}

impl PartialEq for Frames {
    fn eq(&self, other: &Frames) -> bool {
        **self == **other
    }
}

impl Eq for Frames {}

impl std::hash::Hash for Frames {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (**self).hash(h);
    }
}

impl PartialOrd for Frames {
    fn partial_cmp(&self, other: &Frames) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Frames {
    fn cmp(&self, other: &Frames) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

/// Samples aggregated per distinct [`StackKey`].
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    /// Per stack.
    pub stacks: IdMap<StackKey, Totals>,
    /// What the walk learned.
    pub info: WalkInfo,
}

/// Which parts of a sample a [`Stacks`] keeps apart.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// The process.
    pub process: bool,
    /// The thread.
    pub thread: bool,
    /// The cpu.
    pub cpu: bool,
}

/// Walks the stream ([`walk`]) and aggregates its samples per stack.
pub fn stacks(
    file: &Tb5File,
    opts: &ViewOptions,
    keep: Keep,
    what: &str,
    progress: &mut dyn FnMut(u64),
) -> Result<Stacks, QueryError> {
    // Looked up once per sample: ids hashed with IdHasher, single frames inline.
    let mut map: IdMap<StackKey, Totals> = IdMap::default();
    let info = walk(file, opts, what, progress, &mut |s| {
        let key = StackKey {
            process: if keep.process { s.process } else { 0 },
            thread: if keep.thread { s.thread } else { 0 },
            cpu: if keep.cpu { s.cpu } else { None },
            frames: s.frames.into(),
        };
        let t = map.entry(key).or_default();
        t.samples += 1;
        t.weight += s.weight;
        t.period += s.period.unwrap_or(0);
        Ok(())
    })?;
    Ok(Stacks { stacks: map, info })
}

pub use crate::names::{clean, module_name};

/// Function names of addresses (and, made [`Names::with_lines`], their
/// source lines), each distinct (module, address) looked up once.
pub struct Names {
    symbols: Option<FileSymbols>,
    lines: bool,
    /// Whether [`Named::inlined`] is filled (DWARF read for it).
    inline: bool,
    cache: HashMap<Frame, Named>,
}

/// What [`Names`] knows of an address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Named {
    /// The function holding it, from the symbol tables: the name `tbrw
    /// report --by function` gives its samples.
    pub function: Option<Arc<str>>,
    /// Its source file and line, as `tbrw report --by line` gives them
    /// (only from [`Names::with_lines`]).
    pub location: Option<tbrw_symbols::SourceLocation>,
    /// The functions inlined at the address, outermost first (DWARF's
    /// inline chain), unless the symbol options say `no_inline`: frames of
    /// the stack inside `function`, as perf's `--inline` shows them.
    pub inlined: Vec<Arc<str>>,
}

impl Names {
    /// A symbolizer for the file's modules; `None` leaves every function unknown.
    pub fn new(file: &Tb5File, modules: &[Module], symbols: Option<&SymbolOptions>) -> Result<Names, QueryError> {
        let inline = symbols.is_some_and(|o| !o.no_inline);
        let symbols = match symbols {
            Some(o) => {
                // Function names, and DWARF only for the inline chains.
                let config = tbrw_symbols::Config { lines: inline, ..o.config() };
                Some(FileSymbols::with_config(file, modules, config)?)
            }
            None => None,
        };
        Ok(Names { symbols, lines: inline, inline, cache: HashMap::new() })
    }

    /// The same, reading the modules' DWARF line tables too, for
    /// [`Named::location`].
    pub fn with_lines(file: &Tb5File, modules: &[Module], symbols: &SymbolOptions) -> Result<Names, QueryError> {
        let config = tbrw_symbols::Config { lines: true, ..symbols.config() };
        Ok(Names {
            symbols: Some(FileSymbols::with_config(file, modules, config)?),
            lines: true,
            inline: !symbols.no_inline,
            cache: HashMap::new(),
        })
    }

    /// The function holding `f`'s address, when its module's symbols name it.
    /// A module that cannot be symbolized gets one warning on `warn`.
    pub fn function(&mut self, f: Frame, warn: &mut dyn Write) -> Option<Arc<str>> {
        self.lookup(f, warn).function.clone()
    }

    /// What is known of `f`'s address: its function and (with lines) its
    /// source line. A module that cannot be symbolized gets one warning on `warn`.
    pub fn lookup(&mut self, f: Frame, warn: &mut dyn Write) -> &Named {
        let (lines, inline) = (self.lines, self.inline);
        let symbols = &mut self.symbols;
        self.cache.entry(f).or_insert_with(|| {
            let Some(s) = symbols.as_mut().map(|s| s.symbolize(f.module, f.pc, warn)) else { return Named::default() };
            // With DWARF read, an address no symbol table covers takes its
            // function's name from DWARF (no offset then); the report by
            // function reads symbol tables only, and so does this name.
            let function = s.function.clone().filter(|_| !lines || s.offset.is_some());
            let inlined = match inline {
                true => s.inline_chain().filter_map(|f| f.function.clone()).collect(),
                false => Vec::new(),
            };
            Named { function, location: s.location().cloned(), inlined }
        })
    }
}

/// The `--by` levels a flame graph accepts, for messages.
pub const LEVELS: [By; 5] = [By::Process, By::Thread, By::Module, By::Function, By::Address];
