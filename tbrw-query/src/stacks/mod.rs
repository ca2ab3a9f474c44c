//! Samples with their call stacks, for the viewer exports (flame graph,
//! pprof, Firefox, Parquet) and the inclusive views: [`walk`] runs the
//! query's walk ([`crate::Walk`]) and hands out each sample with its
//! process, thread, cpu, time, weight and stack: a node of the walk's
//! [`StackTree`], where every distinct stack is interned once as
//! (parent, frame) nodes, as the file's stack table stores them (from the
//! stream's stack table, [`TableStacks`]; or, in perf imports made before
//! it, the records of the call-chain stream; else the sampled address
//! alone). Memory grows with the distinct frames and nodes, never with
//! the depth times the distinct stacks, nor with the samples. What is
//! kept of a frame ([`Detail`]: its address, what names its function, its
//! module) and the frames' names ([`Names`]) are decided in one place,
//! `names.rs`; [`stacks`] aggregates the samples per distinct stack and
//! label set (what the exports and `report --children` read).
//!
//! Imports `walk`, `stream`, `query`, `names`, `file_symbols`, `report`'s
//! `By`; no export.

pub use rustc_hash::FxHashMap as IdMap;
use tbrw::*;
use tbrw_schema::fields;
use tbrw_schema::Progress;

use crate::error::QueryError;
use crate::file_symbols::SymbolOptions;
use crate::query::Query;
use crate::report::By;
use crate::stream::{self, TimeField};
use crate::walk::{Binding, ProcessName, ThreadName, Walk};

mod flat;
mod names;
mod parts;
mod table;
mod tree;

pub use names::{inline_frames, Detail, Inlined, Named, Names, Resolution};
pub use parts::{walk_in_parts, Part, PartSample, PartsWalk};
pub use table::TableStacks;
pub use tree::{NodeId, StackTree};

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
    /// The stack: its innermost node in [`Sample::tree`].
    pub stack: NodeId,
    /// The walk's stacks.
    pub tree: &'a StackTree,
}

impl Sample<'_> {
    /// The frames, innermost (the sampled address) first, as the walk's
    /// [`Resolution`] kept them.
    pub fn frames(&self) -> impl Iterator<Item = Frame> + '_ {
        self.tree.frames_of(self.stack)
    }
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
    pub processes: IdMap<u64, ProcessName>,
    /// Per thread index seen: OS tid, pid and name.
    pub threads: IdMap<u64, ThreadName>,
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
/// in record order, with their call chains when the file has them, each
/// stack interned in `tree` with its frames kept as `res` says. `what`
/// names the export for messages. The stream needs instruction pointers
/// and must bind (a stored bind is used, else one is made in memory).
/// `progress` gets records done.
pub fn walk(
    file: &Tb5File,
    opts: &ViewOptions,
    what: &str,
    tree: &mut StackTree,
    res: &mut Resolution<'_>,
    progress: &mut dyn Progress,
    each: &mut dyn FnMut(&Sample<'_>) -> Result<(), QueryError>,
) -> Result<WalkInfo, QueryError> {
    let n = opts.query.stream;
    let w = open_walk(file, opts, what)?.with_cpu_time()?;
    let fields = w.fields();

    // The stacks of the stream's stack table, when it has one; else, in a
    // perf import made before it, the call-chain stream.
    let mut table = TableStacks::of(file, n)?;
    let mut chains = if table.is_some() { None } else { ChainStream::of(file, n)? };

    let mut info = WalkInfo {
        records: w.records(),
        modules: w.modules().to_vec(),
        chains: if table.is_some() { Some(n) } else { chains.as_ref().map(|c| c.stream) },
        time: fields.time_field.clone(),
        has_period: fields.has_period(),
        has_cputime: fields.has_cputime(),
        ..WalkInfo::default()
    };
    let mut frames: Vec<Frame> = Vec::new();
    let mut seen = SeenThreads::of(&w);
    let mut failed = None;
    let passed = w.pass(0..w.records(), progress, |s| {
        if failed.is_some() {
            return;
        }
        let k = s.index;
        let rec = s.record;
        let mut stack = None;
        if let Some(t) = table.as_mut() {
            match t.resolve(rec, k, tree, res) {
                Ok(node) => stack = node,
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            }
        }
        if let Some(c) = chains.as_mut() {
            frames.clear();
            c.frames_of(k, &mut frames);
            match res.intern(tree, &frames) {
                Ok(node) => stack = node,
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            }
        }
        let stack = match stack {
            Some(node) => node,
            None => match res.push(tree, None, Frame { module: s.module, pc: fields.pc(rec) }) {
                Ok(node) => node,
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            },
        };
        let (process, thread) = (s.process.unwrap_or(0), s.thread.unwrap_or(0));
        let (pid, tid) = seen.pid_tid(&w, &mut info.processes, &mut info.threads, process, thread);
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
            stack,
            tree,
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

/// The pid and tid of each thread index of the bind a walk met (below the
/// bind's thread count), so that the walk's maps of processes and threads
/// are looked at once per thread, not per sample (a thread is of one
/// process; samples of many processes interleave).
struct SeenThreads {
    threads: usize,
    /// Per thread index: its process index, pid and tid, once met.
    seen: Vec<Option<(u64, u32, u32)>>,
}

impl SeenThreads {
    fn of(w: &Walk<'_>) -> SeenThreads {
        let threads = w.bind_view().map_or(0, |v| usize::try_from(v.thread_count()).unwrap_or(0));
        SeenThreads { threads, seen: Vec::new() }
    }

    /// The pid and tid of bind thread `thread` of process `process`, the
    /// maps filled at a thread's first sample.
    #[inline]
    fn pid_tid(
        &mut self,
        w: &Walk<'_>,
        processes: &mut IdMap<u64, ProcessName>,
        threads: &mut IdMap<u64, ThreadName>,
        process: u64,
        thread: u64,
    ) -> (u32, u32) {
        let slot = usize::try_from(thread).ok().filter(|&t| t < self.threads);
        if let Some((_, pid, tid)) = slot.and_then(|t| self.seen.get(t).copied().flatten()).filter(|k| k.0 == process) {
            return (pid, tid);
        }
        let pid = processes.entry(process).or_insert_with(|| w.process(process)).pid;
        let tid = threads.entry(thread).or_insert_with(|| w.thread(thread)).tid;
        if let Some(t) = slot {
            if self.seen.len() <= t {
                self.seen.resize(t + 1, None);
            }
            self.seen[t] = Some((process, pid, tid));
        }
        (pid, tid)
    }
}

/// The walk of `opts.query` for stacks: the stream needs instruction
/// pointers, must bind and have records (`what` names the export).
fn open_walk<'f>(file: &'f Tb5File, opts: &ViewOptions, what: &str) -> Result<Walk<'f>, QueryError> {
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
    let w = Walk::open(file, &opts.query, Binding::Always)?;
    if w.records() == 0 {
        return Err(QueryError::Unsupported {
            file: name(),
            stream: n,
            what: format!("it has no records: nothing to {what}"),
        });
    }
    Ok(w)
}

/// A perf import's call-chain stream (files imported before the stack
/// table), walked in step with the samples: its frames are in sample
/// order, innermost first, each bound by the stream's own bind.
struct ChainStream<'f> {
    stream: u32,
    data: DataSection<'f>,
    bound: bind::Bound<'f>,
    sample: Field,
    ip: Field,
    next: u64,
    binds: Vec<DataBind>,
}

impl<'f> ChainStream<'f> {
    /// The call-chain stream of sample stream `n`, if it has one.
    fn of(file: &'f Tb5File, n: u32) -> Result<Option<ChainStream<'f>>, QueryError> {
        let Some((m, layout)) = chain_stream(file, n)? else { return Ok(None) };
        let Some(data) = file.stream(m)?.data()? else { return Ok(None) };
        for f in layout.fields() {
            if f.offset as usize + f.size as usize > data.record_size() {
                return Err(QueryError::Damaged {
                    file: file.path().display().to_string(),
                    stream: m,
                    what: format!("descriptor entry {} lies past the end of the records", f.entry),
                });
            }
        }
        let f = |t: u16| layout.find(t, None).copied();
        let (Some(sample), Some(ip)) = (f(fields::CALLCHAIN_SAMPLE), f(desc_type::IP)) else { return Ok(None) };
        let bound = bind::Bound::of(file, m)?;
        Ok(Some(ChainStream { stream: m, data, bound, sample, ip, next: 0, binds: Vec::new() }))
    }

    /// Appends the frames of sample `k` to `out`, skipping those of
    /// samples before it that were left out.
    fn frames_of(&mut self, k: u64, out: &mut Vec<Frame>) {
        let view = self.bound.view();
        while self.next < self.data.len() {
            let fr = self.data.record(self.next).unwrap_or_default();
            let of = fields::read(fr, &self.sample);
            if of > k {
                break;
            }
            if of == k {
                self.binds.clear();
                view.data_binds(self.next, 1, &mut self.binds);
                let m = self.binds.first().map_or(UNKNOWN_MODULE, |b| b.module_index);
                out.push(Frame { module: (m != UNKNOWN_MODULE).then_some(m), pc: fields::read(fr, &self.ip) });
            }
            self.next += 1;
        }
    }
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

/// What a stack's samples are kept apart by besides the stack: the parts
/// a caller does not keep ([`Keep`]) are 0 / `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels {
    /// The bind's process index.
    pub process: u64,
    /// The bind's thread index.
    pub thread: u64,
    /// The cpu.
    pub cpu: Option<u32>,
}

/// A distinct stack and label set of a [`Stacks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackKey {
    /// The labels.
    pub labels: Labels,
    /// The stack: its innermost node in [`Stacks::tree`].
    pub stack: NodeId,
}

/// Samples aggregated per distinct stack and label set: the stacks as the
/// walk's tree of nodes, and per (label set, innermost node) what its
/// samples add up to: per node, the first label set met there and its
/// totals (32 bytes a node, no hashing: a node is mostly in one label
/// set), and a map for the others.
#[derive(Debug, Default)]
pub struct Stacks {
    /// The distinct stacks.
    pub tree: StackTree,
    /// The distinct label sets, numbered as first met.
    pub labels: Vec<Labels>,
    /// Per node: its first label set's number (`u32::MAX`: none) and totals.
    first: Vec<(u32, Totals)>,
    /// (label set number, innermost node) → totals, for the later label sets of a node.
    later: IdMap<(u32, NodeId), Totals>,
    /// What the walk learned.
    pub info: WalkInfo,
}

/// "No label set" in [`Stacks`]' per-node entries.
const NO_SET: u32 = u32::MAX;

impl Stacks {
    /// The totals of (label set `set`, innermost node `stack`), made if new.
    fn entry(&mut self, set: u32, stack: NodeId) -> &mut Totals {
        let n = stack as usize;
        if n >= self.first.len() {
            self.first.resize(n + 1, (NO_SET, Totals::default()));
        }
        match self.first[n].0 {
            NO_SET => {
                self.first[n].0 = set;
                &mut self.first[n].1
            }
            s if s == set => &mut self.first[n].1,
            _ => self.later.entry((set, stack)).or_default(),
        }
    }

    /// Room for `nodes` more nodes' first label sets.
    fn reserve_nodes(&mut self, nodes: usize) {
        self.first.reserve_exact(nodes);
    }

    /// Every distinct (label set number, innermost node) with its totals:
    /// by node, the first label set met there first, then the others by
    /// label set and node (the same order every run).
    pub fn iter(&self) -> impl Iterator<Item = ((u32, NodeId), &Totals)> + '_ {
        let mut later: Vec<(&(u32, NodeId), &Totals)> = self.later.iter().collect();
        later.sort_unstable_by_key(|(k, _)| **k);
        let first =
            self.first.iter().enumerate().filter(|(_, (s, _))| *s != NO_SET).map(|(n, (s, t))| ((*s, n as NodeId), t));
        first.chain(later.into_iter().map(|(k, t)| (*k, t)))
    }

    /// Every distinct stack and label set with its totals, as [`Stacks::iter`] orders them.
    pub fn keys(&self) -> impl Iterator<Item = (StackKey, &Totals)> + '_ {
        self.iter().map(|((l, stack), t)| (StackKey { labels: self.labels[l as usize], stack }, t))
    }

    /// The number of distinct stacks and label sets.
    pub fn len(&self) -> usize {
        self.first.iter().filter(|(s, _)| *s != NO_SET).count() + self.later.len()
    }

    /// Whether no sample was aggregated.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frames of `key`'s stack, innermost first.
    pub fn frames(&self, key: &StackKey) -> impl Iterator<Item = Frame> + '_ {
        self.tree.frames_of(key.stack)
    }
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

/// Walks the stream ([`walk`]), its frames kept as `res` says, and
/// aggregates its samples per stack and the labels `keep` asks for.
pub fn stacks(
    file: &Tb5File,
    opts: &ViewOptions,
    keep: Keep,
    res: &mut Resolution<'_>,
    what: &str,
    progress: &mut dyn Progress,
) -> Result<Stacks, QueryError> {
    if let Some(st) = flat::stacks(file, opts, keep, res, what, progress)? {
        return Ok(st);
    }
    let mut tree = StackTree::new();
    let mut st = Stacks::default();
    let mut numbers: IdMap<Labels, u32> = IdMap::default();
    // Per thread index (below 2^24), its labels' number, when the cpu is
    // not kept: the labels are the thread's and its process's then.
    let mut by_thread: Vec<Option<(Labels, u32)>> = Vec::new();
    let info = walk(file, opts, what, &mut tree, res, progress, &mut |s| {
        let l = Labels {
            process: if keep.process { s.process } else { 0 },
            thread: if keep.thread { s.thread } else { 0 },
            cpu: if keep.cpu { s.cpu } else { None },
        };
        let slot = usize::try_from(s.thread).ok().filter(|&t| !keep.cpu && t < 1 << 24);
        let number = match slot.and_then(|t| by_thread.get(t).copied().flatten()).filter(|(was, _)| *was == l) {
            Some((_, n)) => n,
            None => {
                let next = st.labels.len() as u32;
                let n = *numbers.entry(l).or_insert(next);
                if n == next {
                    st.labels.push(l);
                }
                if let Some(t) = slot {
                    if by_thread.len() <= t {
                        by_thread.resize(t + 1, None);
                    }
                    by_thread[t] = Some((l, n));
                }
                n
            }
        };
        let t = st.entry(number, s.stack);
        t.samples += 1;
        t.weight += s.weight;
        t.period += s.period.unwrap_or(0);
        Ok(())
    })?;
    Ok(Stacks { tree, info, ..st })
}

/// The `--by` levels a flame graph accepts, for messages.
pub const LEVELS: [By; 5] = [By::Process, By::Thread, By::Module, By::Function, By::Address];
