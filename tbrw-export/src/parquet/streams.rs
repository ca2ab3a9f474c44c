//! A run's streams as rows: which table each stream goes to (interval
//! streams — MTMC tasks, records with a start and an end time stamp — to
//! `intervals`, every other stream with data to `samples`), the time and
//! clock of its records, and the two writers: samples in time order (read
//! in place when the stream already is, else through the external sort of
//! [`super::sort`], in bounded memory), with pid, tid and module from the
//! bind (stored, or made in memory as `tbrw report` does), the function from the
//! symbolizer when asked and the stack (a node of the run's `stacks`
//! table, [`RunStacks`]); intervals in record order, MTMC tasks with the
//! figures of `tbrw report --by task`.

use std::collections::HashMap;
use tbrw_schema::Progress;

use tbrw::*;

use super::schema::{TableWriter, V};
use crate::error::ExportError;
use crate::vtune_csv::clock_of;
use tbrw_query::file_symbols::FileSymbols;
use tbrw_query::stacks::{inline_frames, NodeId, Resolution, StackTree, TableStacks};
use tbrw_query::stream::SampleFields;
use tbrw_query::stream::{modules as resolved_modules, time_at as time_field};
use tbrw_query::Weight;
use tbrw_schema::fields::{self, read_le};
use tbrw_schema::mtmc;

/// Where a stream goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Records with one time: `samples`.
    Samples,
    /// Records with a start and an end: `intervals`.
    Intervals,
    /// No descriptor, no data, or a stream holding another's stack table or bind: nowhere.
    Nothing,
}

/// The table stream `n` goes to.
pub fn destination(file: &Tb5File, n: u32) -> Result<Destination, ExportError> {
    let s = file.stream(n)?;
    // A stream holding another's stack table or bind is read through that stream.
    if !s.holds_records() {
        return Ok(Destination::Nothing);
    }
    let (Some(layout), Some(data)) = (s.layout()?, s.data()?) else { return Ok(Destination::Nothing) };
    if data.is_empty() {
        return Ok(Destination::Nothing);
    }
    if mtmc::counters_of(&s.descriptor()?.unwrap_or_default(), file).is_some() {
        return Ok(Destination::Intervals);
    }
    Ok(if interval_fields(&layout).is_some() { Destination::Intervals } else { Destination::Samples })
}

/// The start and end fields of an interval record: the first two 4- or
/// 8-byte time stamps, of the same subtype (not a legacy sample's TSC).
fn interval_fields(layout: &RecordLayout) -> Option<(Field, Field)> {
    if layout.legacy_pc_offset().is_some() {
        return None;
    }
    let mut t = layout.fields().iter().filter(|f| f.desc_type == desc_type::TIME_STAMP && (f.size == 4 || f.size == 8));
    let (a, b) = (t.next()?, t.next()?);
    (a.subtype == b.subtype).then_some((*a, *b))
}

/// How a stream's records are timed.
#[derive(Clone, Debug)]
pub struct Timing {
    /// (offset, size) of the time field; `None`: the record index is the time.
    pub at: Option<(usize, usize)>,
    /// The clock's name (docs/PARQUET.md lists them).
    pub clock: String,
    /// Nanoseconds per unit of the field, when it is a time in ns or ms.
    pub ns_per_unit: Option<i64>,
}

impl Timing {
    /// The time of record `k`, and in nanoseconds when the clock has them.
    pub fn of(&self, rec: &[u8], k: u64) -> (i64, Option<i64>) {
        let t = self.at.map_or(k, |(at, size)| read_le(rec, at, size)) as i64;
        (t, self.ns_per_unit.map(|m| t.saturating_mul(m)))
    }
}

/// The timing of time field `f` (named `name`).
fn timing_of(f: &Field, name: &str) -> Timing {
    let at = Some((f.offset as usize, f.size as usize));
    let (clock, ns) = match f.subtype {
        desc_subtype::TSC | desc_subtype::TS_CPU_CYCLES => ("RDTSC".to_owned(), None),
        desc_subtype::TS_NANOSECONDS => {
            (clock_of(f, name).map_or_else(|_| name.to_owned(), |c| c.suffix().to_owned()), Some(1))
        }
        desc_subtype::TS_MILLISECONDS => (format!("{name} (ms)"), Some(1_000_000)),
        desc_subtype::TS_SAMPLE_COUNT => ("sample_count".to_owned(), None),
        st => (format!("{name} (subtype {st})"), None),
    };
    Timing { at, clock, ns_per_unit: ns }
}

/// The timing of stream `s`'s records: the field `tbrw report --time`
/// filters on.
pub fn timing(file: &Tb5File, s: &StreamReader<'_>, layout: &RecordLayout) -> Result<Timing, ExportError> {
    let descs = s.descriptor()?.unwrap_or_default();
    let name_of = |f: &Field| {
        descs.get(f.entry).and_then(|d| file.string_opt(d.name).ok().flatten()).unwrap_or("time").to_owned()
    };
    if let (Some(_), Some(t)) = (layout.legacy_pc_offset(), layout.tsc_offset()) {
        return Ok(Timing { at: Some((t as usize, 8)), clock: "RDTSC".into(), ns_per_unit: None });
    }
    let Some((at, size)) = time_field(layout) else {
        return Ok(Timing { at: None, clock: "record_index".into(), ns_per_unit: None });
    };
    let f = layout
        .fields()
        .iter()
        .find(|f| f.desc_type == desc_type::TIME_STAMP && f.offset as usize == at && f.size as usize == size)
        .copied();
    Ok(f.map_or(Timing { at: Some((at, size)), clock: "time".into(), ns_per_unit: None }, |f| {
        timing_of(&f, &name_of(&f))
    }))
}

/// Checks that every field of stream `n` lies inside its records, so that
/// no read below goes past one.
fn check_fields(file: &Tb5File, n: u32, layout: &RecordLayout, record_size: usize) -> Result<(), ExportError> {
    match tbrw_query::stream::field_past_records(layout, record_size) {
        Some(what) => Err(ExportError::Damaged { file: file.path().display().to_string(), stream: n, what }),
        None => Ok(()),
    }
}

/// Functions found by the symbolizer, numbered as they are first met.
#[derive(Default)]
pub struct Functions {
    ids: HashMap<(Option<u64>, String), i32>,
    /// (function id, module id, name), in id order.
    pub rows: Vec<(i32, Option<i32>, String)>,
}

impl Functions {
    fn id(&mut self, module: Option<u64>, name: &str) -> i32 {
        if let Some(id) = self.ids.get(&(module, name.to_owned())) {
            return *id;
        }
        let id = self.rows.len() as i32;
        self.ids.insert((module, name.to_owned()), id);
        self.rows.push((id, module.map(|m| m as i32), name.to_owned()));
        id
    }
}

/// The run's `stacks` table: the stacks of every stream's stack table with
/// their frames' modules (bound as `tbrw-query`'s stacks bind them), as a
/// prefix tree of (parent, address, module) nodes. A node of a TB5 stack
/// table shared by two processes whose frames there lie in different
/// modules becomes two nodes here, so that every row has one module. Memory
/// grows with the distinct nodes (about 30 bytes each: the columns, and an
/// index of node numbers hashed from them), never with the samples: a
/// sample costs one lookup of its (pid, stack) binding in the stream's
/// walk tree ([`TableStacks`]), and each node of that tree is turned into
/// a node here once.
#[derive(Default)]
pub struct RunStacks {
    parent: Vec<u32>,
    address: Vec<u64>,
    module: Vec<u32>,
    function: Vec<u32>,
    depth: Vec<u16>,
    /// 0 for a frame's own function; k for the k-th function inlined at
    /// its address (outermost first), a row under the one before it.
    inline_depth: Vec<u16>,
    index: hashbrown::HashTable<u32>,
    /// Per node of the current stream's [`StackTree`]: its node here.
    tree_node: Vec<u32>,
}

/// "None" in [`RunStacks`]' u32 columns.
const NONE: u32 = u32::MAX;
/// A node of [`RunStacks::tree_node`] not turned into a node here yet.
const NO_LEAF: u32 = u32::MAX;

#[inline]
fn node_hash(parent: u32, address: u64, module: u32, inline_depth: u16) -> u64 {
    let h = (address ^ (u64::from(parent) << 32 | u64::from(module)).rotate_left(17) ^ u64::from(inline_depth))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 31)
}

impl RunStacks {
    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Node `i`: (parent, address, module, function, depth, inline depth).
    pub fn row(&self, i: usize) -> (Option<i32>, u64, Option<i32>, Option<i32>, i32, i32) {
        let opt = |v: u32| (v != NONE).then_some(v as i32);
        (
            opt(self.parent[i]),
            self.address[i],
            opt(self.module[i]),
            self.function.get(i).copied().and_then(opt),
            i32::from(self.depth[i]),
            i32::from(self.inline_depth[i]),
        )
    }

    /// The node here of the stack ending at `leaf` in `tree`: its nodes
    /// from the outermost one not turned into a node here yet interned,
    /// the function of each new node from `symbols` when given.
    fn node_of(
        &mut self,
        tree: &StackTree,
        leaf: NodeId,
        symbols: &mut Option<&mut Symbols<'_>>,
    ) -> Result<u32, ExportError> {
        let mut path = Vec::new();
        let mut parent = NONE;
        for n in tree.path(leaf) {
            match self.tree_node.get(n as usize).copied().filter(|&l| l != NO_LEAF) {
                Some(l) => {
                    parent = l;
                    break;
                }
                None => path.push(n),
            }
        }
        for &n in path.iter().rev() {
            let f = tree.node_frame(n);
            parent = self.intern(parent, f, symbols)?;
            if self.tree_node.len() <= n as usize {
                self.tree_node.resize(n as usize + 1, NO_LEAF);
            }
            self.tree_node[n as usize] = parent;
        }
        Ok(parent)
    }

    /// The node of frame `f` under `parent`, made if new; with symbols, and
    /// unless `--no-inline`, a row under it per function inlined at its
    /// address (outermost first): the innermost of them.
    fn intern(
        &mut self,
        parent: u32,
        f: tbrw_query::stacks::Frame,
        symbols: &mut Option<&mut Symbols<'_>>,
    ) -> Result<u32, ExportError> {
        // Module indexes are below 2^32 - 1 in any file a bind reads.
        let module = f.module.map_or(NONE, |m| u32::try_from(m).unwrap_or(NONE - 1));
        let (function, inlined) = match symbols {
            Some(sy) => {
                let found = sy.file.symbolize(f.module, f.pc);
                let function = found.function.as_deref().map_or(NONE, |name| sy.functions.id(f.module, name) as u32);
                let inlined = match sy.inline {
                    true => {
                        inline_frames(&found).iter().map(|i| sy.functions.id(f.module, &i.function) as u32).collect()
                    }
                    false => Vec::new(),
                };
                (function, inlined)
            }
            None => (NONE, Vec::new()),
        };
        let mut at = self.row_of(parent, f.pc, module, 0, function, symbols.is_some())?;
        for (k, function) in (1u16..).zip(inlined) {
            at = self.row_of(at, f.pc, module, k, function, true)?;
        }
        Ok(at)
    }

    /// The row (parent, address, module, inline depth), made if new with
    /// `function` (kept when `functions`).
    fn row_of(
        &mut self,
        parent: u32,
        address: u64,
        module: u32,
        inline_depth: u16,
        function: u32,
        functions: bool,
    ) -> Result<u32, ExportError> {
        let h = node_hash(parent, address, module, inline_depth);
        let (pa, ad, mo, il) = (&self.parent, &self.address, &self.module, &self.inline_depth);
        let same = |&i: &u32| {
            let i = i as usize;
            pa[i] == parent && ad[i] == address && mo[i] == module && il[i] == inline_depth
        };
        if let Some(&id) = self.index.find(h, same) {
            return Ok(id);
        }
        let next = u32::try_from(self.len())
            .ok()
            .filter(|&n| n <= i32::MAX as u32)
            .ok_or(ExportError::TooMany { what: "stack nodes", limit: "2^31" })?;
        let depth = if parent == NONE { 0 } else { self.depth[parent as usize].saturating_add(1) };
        self.parent.push(parent);
        self.address.push(address);
        self.module.push(module);
        if functions {
            self.function.resize(next as usize, NONE);
            self.function.push(function);
        }
        // A TB5 stack has at most 65,536 frames (and their inlined ones):
        // past u16, the depth stays at its largest.
        self.depth.push(depth);
        self.inline_depth.push(inline_depth);
        let (pa, ad, mo, il) = (&self.parent, &self.address, &self.module, &self.inline_depth);
        self.index.insert_unique(h, next, |&i| {
            let i = i as usize;
            node_hash(pa[i], ad[i], mo[i], il[i])
        });
        Ok(next)
    }
}

/// What writing a stream gave.
#[derive(Clone, Copy, Debug, Default)]
pub struct Written {
    /// Rows written.
    pub rows: u64,
    /// The first and last time in nanoseconds, when the clock has them.
    pub first_ns: Option<i64>,
    /// See `first_ns`.
    pub last_ns: Option<i64>,
}

impl Written {
    fn saw(&mut self, ns: Option<i64>) {
        if let Some(t) = ns {
            self.first_ns = Some(self.first_ns.map_or(t, |f| f.min(t)));
            self.last_ns = Some(self.last_ns.map_or(t, |l| l.max(t)));
        }
    }
}

/// The symbolizer and what it found, when functions are asked for.
pub struct Symbols<'a> {
    /// The file's symbolizer.
    pub file: FileSymbols,
    /// Functions numbered so far.
    pub functions: &'a mut Functions,
    /// Whether the functions inlined at a frame's address are rows of
    /// `stacks` (not `--no-inline`).
    pub inline: bool,
    /// Where its warnings go.
    pub warn: &'a mut Vec<tbrw_query::Warning>,
}

/// Writes stream `n`'s records to `samples`, in time order (sorting
/// `sort_chunk` records at a time in memory when the stream is not in it,
/// see [`super::sort`]). `progress` gets records done.
pub fn write_samples(
    file: &Tb5File,
    n: u32,
    out: &mut TableWriter,
    mut symbols: Option<&mut Symbols<'_>>,
    sort_chunk: usize,
    run_stacks: &mut RunStacks,
    progress: &mut dyn Progress,
) -> Result<Written, ExportError> {
    let s = file.stream(n)?;
    let name = || file.path().display().to_string();
    let mut table = TableStacks::of(file, n)?;
    // The stream's stacks as the walk's tree: each node turned into a
    // node of the run's table once.
    let mut tree = StackTree::new();
    let mut keep = Resolution::addresses();
    run_stacks.tree_node.clear();
    let (Some(layout), Some(data)) = (s.layout()?, s.data()?) else { return Ok(Written::default()) };
    check_fields(file, n, &layout, data.record_size())?;
    let timing = timing(file, &s, &layout)?;
    // The fields and the CPU time are read as every report reads them.
    let fields = SampleFields::of(file, n)?;
    let cputime = if fields.has_cputime() { Some(fields.weigher(Weight::Cputime, file, n)?) } else { None };
    let mut cputime = cputime;
    let bindable = fields.bindable();
    let bound = match s.bind_view()? {
        Some(v) => Some(bind::Bound::Stored(v)),
        None if bindable => Some(bind::Bound::Made(bind::bind_in_memory(file, n)?)),
        None => None,
    };
    let view = bound.as_ref().map(bind::Bound::view);
    let module_count = resolved_modules(file)?.len() as u64;

    // Time order: the records as they are when they already are in it (one
    // pass, binds read in runs), else the keys sorted in bounded memory.
    let len = data.len();
    let time_at = |k: u64| data.record(k).map_or(0, |r| timing.of(r, k).0);
    let sorted = timing.at.is_none() || (1..len).all(|k| time_at(k - 1) <= time_at(k));
    let spill_error = |source: std::io::Error| ExportError::WorkFiles {
        file: name().to_string(),
        stream: n,
        records: len,
        dir: std::env::temp_dir(),
        source,
    };
    let mut order =
        if sorted { None } else { Some(super::sort::time_order(len, sort_chunk, time_at).map_err(spill_error)?) };

    let mut w = Written::default();
    let mut row = |k: u64, b: Option<DataBind>| -> Result<(), ExportError> {
        let rec = data.record(k).unwrap_or_default();
        let (t, t_ns) = timing.of(rec, k);
        w.saw(t_ns);
        let bv = view.as_ref();
        let os_pid = b
            .and_then(|b| bv.and_then(|v| v.process(b.pid_index)).map(|p| i64::from(p.id)))
            .or(fields.pid(rec).map(i64::from));
        let os_tid = b
            .and_then(|b| bv.and_then(|v| v.thread(b.tid_index)).map(|p| i64::from(p.id)))
            .or(fields.tid(rec).map(i64::from));
        let module = b.map(|b| b.module_index).filter(|m| *m != UNKNOWN_MODULE);
        if let Some(m) = module.filter(|m| *m >= module_count) {
            return Err(ExportError::Damaged {
                file: name().to_string(),
                stream: n,
                what: format!("record {k} is bound to module {m} but the module table has {module_count}"),
            });
        }
        let address = fields.has_pc().then(|| fields.pc(rec));
        let function = match (&mut symbols, address) {
            (Some(sy), Some(a)) if b.is_some() => {
                let found = sy.file.symbolize(module, a);
                found.function.as_deref().map(|f| sy.functions.id(module, f))
            }
            _ => None,
        };
        let stack = match table.as_mut().map(|t| t.resolve(rec, k, &mut tree, &mut keep)).transpose()?.flatten() {
            None => None,
            Some(leaf) => Some(run_stacks.node_of(&tree, leaf, &mut symbols)?),
        };
        // The thread a cumulative CPU time is per: the bind's thread
        // instance, else the record's own tid (as the walk counts it).
        let thread = b.map(|b| b.tid_index).or(fields.tid(rec).map(u64::from)).unwrap_or(0);
        out.push(&[
            V::I32(Some(n as i32)),
            V::I64(Some(k as i64)),
            V::I64(Some(t)),
            V::I64(t_ns),
            V::S(Some(&timing.clock)),
            V::I64(os_pid),
            V::I64(os_tid),
            V::I32(fields.cpu(rec).map(|c| c as i32)),
            V::U64(address),
            V::I32(module.map(|m| m as i32)),
            V::I32(function),
            V::I64(fields.event(rec).map(i64::from)),
            V::I64(cputime.as_mut().map(|c| c.weigh(rec, thread) as i64)),
            V::F64(fields.pmu_value(rec)),
            V::I64(fields.period(rec).map(|p| p as i64)),
            V::I64(fields.written_value(rec).map(|v| v as i64)),
            V::I32(stack.map(|l| l as i32)),
        ])?;
        w.rows += 1;
        Ok(())
    };

    let chunk = 1u64 << 16;
    match &mut order {
        None => {
            let mut binds = Vec::new();
            let mut i = 0u64;
            while i < len {
                let end = (i + chunk).min(len);
                binds.clear();
                if let Some(v) = &view {
                    v.data_binds(i, (end - i) as usize, &mut binds);
                }
                for k in i..end {
                    row(k, view.as_ref().and_then(|_| binds.get((k - i) as usize).copied()))?;
                }
                i = end;
                progress.done(i);
            }
        }
        Some(order) => {
            let mut done = 0u64;
            while let Some((_, k)) = order.next_key().map_err(spill_error)? {
                row(k, view.as_ref().and_then(|v| v.data_bind(k)))?;
                done += 1;
                if done.is_multiple_of(chunk) {
                    progress.done(done);
                }
            }
            progress.done(done);
        }
    }
    Ok(w)
}

/// Writes stream `n`'s records to `intervals`, in record order.
pub fn write_intervals(
    file: &Tb5File,
    n: u32,
    out: &mut TableWriter,
    progress: &mut dyn Progress,
) -> Result<Written, ExportError> {
    let s = file.stream(n)?;
    let (Some(layout), Some(data)) = (s.layout()?, s.data()?) else { return Ok(Written::default()) };
    check_fields(file, n, &layout, data.record_size())?;
    let descs = s.descriptor()?.unwrap_or_default();
    let events = s.events()?.unwrap_or_default();
    let names: HashMap<u32, String> =
        events.iter().filter_map(|e| file.string_opt(e.name).ok().flatten().map(|s| (e.id, s.to_owned()))).collect();
    let shape = mtmc::counters_of(&descs, file);
    let name_of = |f: &Field| {
        descs.get(f.entry).and_then(|d| file.string_opt(d.name).ok().flatten()).unwrap_or("time").to_owned()
    };
    let (start_f, end_f) = interval_fields(&layout).ok_or_else(|| ExportError::Unsupported {
        file: file.path().display().to_string(),
        stream: n,
        what: "it has no start and end time stamps".into(),
    })?;
    let timing = timing_of(&start_f, &name_of(&start_f));
    let field = |t: u16, sizes: &[u32]| layout.find(t, None).filter(|f| sizes.contains(&f.size)).copied();
    let (pid, tid, event) = (field(desc_type::PID, &[4]), field(desc_type::TID, &[4]), field(fields::EVENT_ID, &[4]));
    let cpu = field(desc_type::PROCESSOR_NUMBER, &[1, 2, 4, 8]);
    let (net, gross) = (field(fields::CALL_NET, &[8]), field(fields::CALL_GROSS, &[8]));
    let mut w = Written::default();
    for (k, rec) in data.records().enumerate() {
        let start = fields::read(rec, &start_f) as i64;
        let end_raw = fields::read(rec, &end_f) as i64;
        let ns = |t: i64| timing.ns_per_unit.map(|m| t.saturating_mul(m));
        let event_id = event.map(|f| fields::read(rec, &f) as u32);
        let mut figures = None;
        let mut task_core = None;
        let end = match shape {
            Some(sh) => {
                let d = mtmc::decode(rec, sh);
                task_core = Some(d.task.begin_info[1] as i32);
                let f = tbrw_query::tasks::task_figures(&d.task, None);
                let end = (d.task.end != 0).then_some(end_raw);
                figures = Some(f);
                end
            }
            None => Some(end_raw),
        };
        w.saw(ns(start));
        w.saw(end.and_then(ns));
        let name = event_id.and_then(|e| names.get(&e)).map(String::as_str);
        let fig = figures.as_ref();
        let td = fig.and_then(|f| f.topdown.as_ref());
        let l2 = td.and_then(|t| t.level2.as_ref());
        let invalid = fig.filter(|f| !f.invalid.is_empty()).map(|f| f.invalid.join("; "));
        out.push(&[
            V::I32(Some(n as i32)),
            V::I64(Some(k as i64)),
            V::I64(Some(start)),
            V::I64(end),
            V::I64(ns(start)),
            V::I64(end.and_then(ns)),
            V::S(Some(&timing.clock)),
            V::I64(match fig {
                Some(f) => f.duration_ns.map(|d| d as i64),
                None => end.filter(|e| *e >= start).and_then(|e| ns(e - start)),
            }),
            V::S(name.filter(|n| shape.is_none() || *n != mtmc::UNNAMED)),
            V::I64(event_id.map(i64::from)),
            V::I64(pid.map(|f| fields::read(rec, &f) as i64)),
            V::I64(tid.map(|f| fields::read(rec, &f) as i64)),
            V::I32(task_core.or(cpu.map(|f| fields::read(rec, &f) as i32))),
            V::I32(fig.and_then(|f| f.cpu_end).map(|c| c as i32)),
            V::I64(net.map(|f| fields::read(rec, &f) as i64)),
            V::I64(gross.map(|f| fields::read(rec, &f) as i64)),
            V::L(fig.and_then(|f| f.counter_deltas.as_deref())),
            V::I64(td.map(|t| t.slots as i64)),
            V::F64(td.map(|t| t.retiring)),
            V::F64(td.map(|t| t.bad_speculation)),
            V::F64(td.map(|t| t.frontend_bound)),
            V::F64(td.map(|t| t.backend_bound)),
            V::F64(l2.map(|l| l.heavy_operations)),
            V::F64(l2.map(|l| l.light_operations)),
            V::F64(l2.map(|l| l.branch_mispredicts)),
            V::F64(l2.map(|l| l.machine_clears)),
            V::F64(l2.map(|l| l.fetch_latency)),
            V::F64(l2.map(|l| l.fetch_bandwidth)),
            V::F64(l2.map(|l| l.memory_bound)),
            V::F64(l2.map(|l| l.core_bound)),
            V::S(invalid.as_deref()),
        ])?;
        w.rows += 1;
        if k % (1 << 16) == 0 {
            progress.done(k as u64);
        }
    }
    progress.done(data.len());
    Ok(w)
}
