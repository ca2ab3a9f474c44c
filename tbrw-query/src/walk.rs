//! Exports to viewers (`tbrw export flamegraph|pprof|firefox|timeline`,
//! docs/EXPORT.md): what they share. [`walk`] streams a sample stream's
//! records through the report filters and hands out each sample with its
//! process, thread, cpu, time, weight and frames (the call chain from a
//! perf import's call-chain stream, else the sampled address); [`Stacks`]
//! aggregates them per distinct stack and label set, so that memory grows
//! with distinct stacks, not samples; [`Names`] symbolizes each distinct
//! address once. Interval streams (MTMC tasks, winIDEA calls) are read by
//! [`intervals`]. The four formats are in their own modules; each takes a
//! writer or an output path and never prints.

use std::collections::HashMap;
use std::hash::Hasher;
use std::io::Write;
use std::sync::Arc;

use tbrw::*;

use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};
use crate::report::samples;
use crate::report::{By, Weight};
pub use rustc_hash::FxHashMap as IdMap;
use tbrw_import::fields::{self, read_le};

/// What every sample export takes: the stream, the report filters, the weight.
#[derive(Clone, Debug, Default)]
pub struct ViewOptions {
    /// The stream.
    pub stream: u32,
    /// Only samples of this OS pid.
    pub pid: Option<u32>,
    /// Only samples of this OS tid.
    pub tid: Option<u32>,
    /// Only samples whose sampled address is in a module with this name or path.
    pub module: Option<String>,
    /// Only samples with time in `start..end` (the field `tbrw report --time` reads).
    pub time: Option<(u64, u64)>,
    /// What a sample weighs.
    pub weight: Weight,
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
    /// The weight `--weight` asked for (1 for samples).
    pub weight: f64,
    /// A perf import's period (the events the sample stands for).
    pub period: Option<u64>,
    /// The frames, innermost (the sampled address) first.
    pub frames: &'a [Frame],
}

/// The records' time stamp: which field, and what its unit is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeField {
    /// The field's name in the descriptor (`tsc` for a legacy record's TSC).
    pub name: String,
    /// Nanoseconds (`SST_TS_NANOSECONDS`).
    pub nanos: bool,
    /// Nanoseconds since the Unix epoch (the name says `realtime` or `utc`).
    pub realtime: bool,
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
    pub processes: HashMap<u64, (u32, Option<String>)>,
    /// Per thread index seen: OS tid, OS pid and name.
    pub threads: HashMap<u64, (u32, u32, Option<String>)>,
    /// The stream whose records gave the call chains.
    pub chains: Option<u32>,
    /// The time stamp field.
    pub time: Option<TimeField>,
    /// The first and last time stamps of the samples that passed.
    pub time_range: Option<(u64, u64)>,
    /// Whether the records carry a perf period.
    pub has_period: bool,
    /// Whether the records carry a cputime delta (what `--weight cputime` weighs).
    pub has_cputime: bool,
}

/// The error of a stream whose records are no samples with addresses.
fn no_samples(file: &Tb5File, n: u32, what: &str) -> QueryError {
    QueryError::msg(format!(
        "{}: stream {n} has no instruction pointer in its records, so {what} has no stacks to show; \
         for a stream of intervals (MTMC tasks, winIDEA calls) use `tbrw export timeline` or `tbrw export firefox`",
        file.path().display()
    ))
}

/// The time field of a stream's layout with its name and unit.
pub fn time_field(
    file: &Tb5File,
    s: &StreamReader<'_>,
    layout: &RecordLayout,
) -> Result<Option<TimeField>, QueryError> {
    if layout.legacy_pc_offset().is_some() && layout.tsc_offset().is_some() {
        return Ok(Some(TimeField { name: "tsc".into(), nanos: false, realtime: false }));
    }
    let Some(f) = layout.find(desc_type::TIME_STAMP, None).filter(|f| f.size == 4 || f.size == 8) else {
        return Ok(None);
    };
    let descs = s.descriptor()?.unwrap_or_default();
    let name =
        descs.get(f.entry).and_then(|d| file.string_opt(d.name).ok().flatten()).unwrap_or("time_stamp").to_owned();
    let nanos = f.subtype == desc_subtype::TS_NANOSECONDS;
    let lower = name.to_ascii_lowercase();
    let realtime = nanos && (lower.contains("realtime") || lower.contains("utc"));
    Ok(Some(TimeField { name, nanos, realtime }))
}

/// The stream of a perf import's call-chain frames for sample stream `n`:
/// only stream 0 has them (its frames name their sample's index in stream 0).
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

/// Checks that every field of `layout` lies inside the records.
fn check_fields(file: &Tb5File, n: u32, layout: &RecordLayout, record_size: u64) -> Result<(), QueryError> {
    for f in layout.fields() {
        if u64::from(f.offset) + u64::from(f.size) > record_size {
            return Err(QueryError::msg(format!(
                "{}: stream {n}: descriptor entry {} at byte {} with {} bytes lies past the end of the {record_size}-byte records",
                file.path().display(),
                f.entry,
                f.offset,
                f.size
            )));
        }
    }
    Ok(())
}

/// Streams the samples of `opts.stream` that pass the filters to `each`,
/// in record order, with their call chains when the file has them. `what`
/// names the export for messages. The stream needs instruction pointers
/// and must bind (a stored bind is used, else one is made in memory, which
/// holds a bind per record: `tbrw bind` a large file first). `progress`
/// gets records done.
pub fn walk(
    file: &Tb5File,
    opts: &ViewOptions,
    what: &str,
    progress: &mut dyn FnMut(u64),
    each: &mut dyn FnMut(&Sample<'_>) -> Result<(), QueryError>,
) -> Result<WalkInfo, QueryError> {
    let n = opts.stream;
    let name = || file.path().display().to_string();
    let s = samples::stream(file, n)?;
    let layout =
        s.layout()?.ok_or_else(|| QueryError::msg(format!("{}: stream {n} has no data descriptor", name())))?;
    let legacy_pc = layout.legacy_pc_offset().map(|x| x as usize);
    let ip = layout.find(desc_type::IP, None).filter(|f| f.size == 4 || f.size == 8).copied();
    if legacy_pc.is_none() && (ip.is_none() || layout.find(desc_type::PID, None).is_none()) {
        return Err(no_samples(file, n, what));
    }
    let data = s.data()?.ok_or_else(|| QueryError::msg(format!("{}: stream {n} has no data", name())))?;
    check_fields(file, n, &layout, data.record_size() as u64)?;
    let bound = bind::Bound::of(file, n)?;
    let view = bound.view();
    let modules = samples::resolved_modules(file)?;
    let module_filter = samples::module_filter(&modules, opts.module.as_deref());
    if let (Some(want), Some(f)) = (&opts.module, &module_filter) {
        if !f.contains(&true) {
            return Err(samples::nothing_matches(
                file,
                n,
                &format!("--module {want:?} (no module has that name or path)"),
            ));
        }
    }
    let time_at = samples::time_field(&layout);
    let time = time_field(file, &s, &layout)?;
    let cpu_at = layout.find(desc_type::PROCESSOR_NUMBER, None).filter(|f| f.size <= 8).copied();
    let period_at = layout.find(fields::PERIOD, None).filter(|f| f.size == 8).copied();
    let delta_at = layout.find(fields::CPUTIME_DELTA, None).filter(|f| f.size == 8).map(|f| f.offset as usize);
    let power_at = layout.find(desc_type::POWER, None).filter(|f| f.size == 8).map(|f| f.offset as usize);
    let weigh: Option<(usize, Option<usize>)> = match (opts.weight, delta_at, power_at) {
        (Weight::Samples, _, _) => None,
        (Weight::Cputime, Some(d), _) => Some((d, None)),
        (Weight::Energy, Some(d), Some(p)) => Some((d, Some(p))),
        (w, _, _) => {
            return Err(QueryError::msg(format!(
                "{}: stream {n} has no {} field: --weight {} needs a sampler import with {}; --weight samples works on every stream",
                name(),
                if delta_at.is_none() { "cputime delta" } else { "power" },
                w.name(),
                if delta_at.is_none() { "cputime (the oldest layout has none)" } else { "power (a power profile, or a current profile imported with --volts)" }
            )))
        }
    };

    // The call chains: a second stream walked in step (its frames are in
    // sample order, innermost first), with its own bind for the modules.
    let chain = chain_stream(file, n)?;
    let chain_reader = match &chain {
        Some((m, _)) => Some(file.stream(*m)?),
        None => None,
    };
    let chain_data = match &chain_reader {
        Some(r) => r.data()?,
        None => None,
    };
    let chain_bound = match (&chain, &chain_reader) {
        (Some((m, _)), Some(_)) => Some(bind::Bound::of(file, *m)?),
        _ => None,
    };
    let chain_view = chain_bound.as_ref().map(bind::Bound::view);
    let chain_fields = match &chain {
        Some((m, l)) => {
            if let Some(d) = &chain_data {
                check_fields(file, *m, l, d.record_size() as u64)?;
            }
            let f = |t: u16| l.find(t, None).copied();
            match (f(fields::CALLCHAIN_SAMPLE), f(desc_type::IP)) {
                (Some(sample), Some(ip)) => Some((sample, ip)),
                _ => None,
            }
        }
        None => None,
    };
    let mut next_frame = 0u64;
    let mut chain_binds = Vec::new();

    let mut info = WalkInfo {
        records: data.len(),
        modules,
        chains: chain.as_ref().map(|(m, _)| *m),
        time: time.clone(),
        has_period: period_at.is_some(),
        has_cputime: delta_at.is_some(),
        ..WalkInfo::default()
    };
    let mut frames: Vec<Frame> = Vec::new();
    let mut binds = Vec::new();
    let mut last_seen: Option<(u64, u64)> = None;
    let chunk = 1 << 16;
    let mut i = 0u64;
    while i < data.len() {
        let end = (i + chunk).min(data.len());
        binds.clear();
        view.data_binds(i, (end - i) as usize, &mut binds);
        for k in i..end {
            let rec = data.record(k).unwrap_or_default();
            let t = time_at.map(|(at, size)| read_le(rec, at, size));
            if let Some((lo, hi)) = opts.time {
                let t = t.unwrap_or(k);
                if t < lo || t >= hi {
                    continue;
                }
            }
            let b = binds.get((k - i) as usize).copied().unwrap_or_default();
            let pr = view.process(b.pid_index).map(|p| p.id);
            let th = view.thread(b.tid_index).map(|t| t.id);
            if opts.pid.is_some_and(|p| pr != Some(p)) || opts.tid.is_some_and(|t| th != Some(t)) {
                continue;
            }
            let module = (b.module_index != UNKNOWN_MODULE).then_some(b.module_index);
            if let Some(mf) = &module_filter {
                if !module.is_some_and(|m| mf.get(m as usize).copied().unwrap_or(false)) {
                    continue;
                }
            }
            let (pc, cpu) = match (legacy_pc, ip) {
                (Some(at), _) => {
                    let p = rec.get(at..).and_then(SampleRecordPc::from_slice).unwrap_or_default();
                    (p.ip(), Some(u32::from(p.cpu_num())))
                }
                (None, Some(f)) => (fields::read(rec, &f), cpu_at.map(|c| fields::read(rec, &c) as u32)),
                (None, None) => (0, None),
            };
            frames.clear();
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
                frames.push(Frame { module, pc });
            }
            let weight = match weigh {
                None => 1.0,
                Some((d, power)) => {
                    let delta = read_le(rec, d, 8) as f64;
                    power.map_or(delta, |p| f64::from_bits(read_le(rec, p, 8)) * delta * 1e-9)
                }
            };
            let sample = Sample {
                index: k,
                process: b.pid_index,
                thread: b.tid_index,
                pid: pr.unwrap_or(0),
                tid: th.unwrap_or(0),
                cpu,
                time: t,
                weight,
                period: period_at.map(|f| fields::read(rec, &f)),
                frames: &frames,
            };
            // Consecutive samples are mostly of the same thread: the maps
            // are only looked at when the thread changes.
            if last_seen != Some((b.pid_index, b.tid_index)) {
                last_seen = Some((b.pid_index, b.tid_index));
                info.processes.entry(b.pid_index).or_insert_with(|| (sample.pid, None));
                info.threads.entry(b.tid_index).or_insert_with(|| (sample.tid, sample.pid, None));
            }
            if let Some(t) = t {
                info.time_range = Some(info.time_range.map_or((t, t), |(a, z)| (a.min(t), z.max(t))));
            }
            info.samples += 1;
            each(&sample)?;
        }
        i = end;
        progress(i);
    }
    if info.samples == 0 && !data.is_empty() {
        let given = samples::filters_given(opts.pid, opts.tid, opts.module.as_deref(), opts.time);
        return Err(samples::nothing_matches(file, n, &given));
    }
    if data.is_empty() {
        return Err(QueryError::msg(format!("{}: stream {n} has no records: nothing to {what}", name())));
    }
    let string = |id: StringId| file.string_opt(id).ok().flatten().map(str::to_owned);
    for (k, v) in info.processes.iter_mut() {
        v.1 = view.process(*k).and_then(|p| string(p.name));
    }
    for (k, v) in info.threads.iter_mut() {
        if let Some(t) = view.thread(*k) {
            v.2 = string(t.name);
        }
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

/// The file name of a module record.
pub fn module_name(m: &Module) -> String {
    m.name
        .clone()
        .or_else(|| m.path.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p).to_owned()))
        .unwrap_or_else(|| "[unnamed module]".to_owned())
}

/// Function names of addresses, each distinct (module, address) looked up once.
pub struct Names {
    symbols: Option<FileSymbols>,
    cache: HashMap<Frame, Option<Arc<str>>>,
}

impl Names {
    /// A symbolizer for the file's modules; `None` leaves every function unknown.
    pub fn new(file: &Tb5File, modules: &[Module], symbols: Option<&SymbolOptions>) -> Result<Names, QueryError> {
        let symbols = match symbols {
            Some(o) => {
                // Function names only: no DWARF line tables.
                let config = tbrw_symbols::Config { lines: false, ..o.config() };
                Some(FileSymbols::with_config(file, modules, config)?)
            }
            None => None,
        };
        Ok(Names { symbols, cache: HashMap::new() })
    }

    /// The function holding `f`'s address, when its module's symbols name it.
    /// A module that cannot be symbolized gets one warning on `warn`.
    pub fn function(&mut self, f: Frame, warn: &mut dyn Write) -> Option<Arc<str>> {
        if let Some(c) = self.cache.get(&f) {
            return c.clone();
        }
        let name = self.symbols.as_mut().and_then(|s| s.symbolize(f.module, f.pc, warn).function.clone());
        self.cache.insert(f, name.clone());
        name
    }
}

/// A label safe in folded stacks and SVG text: no `;`, no line breaks.
pub fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == ';' {
                ':'
            } else if c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The `--by` levels a flame graph accepts, for messages.
pub const LEVELS: [By; 5] = [By::Process, By::Thread, By::Module, By::Function, By::Address];
