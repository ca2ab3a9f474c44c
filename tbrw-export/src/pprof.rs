//! `tbrw export pprof`: a sample stream as Google's profile.proto
//! (`github.com/google/pprof/proto/profile.proto`), gzip-compressed. The
//! message types are declared here with `prost`'s derive macros (no protoc
//! at build time). Samples are aggregated per stack and label set (pid,
//! tid, cpu), so the profile grows with distinct stacks, not samples, and
//! written a field at a time as they are encoded, so the export holds no
//! message per sample or location (`encode`). What
//! `go tool pprof` shows of it is what `tbrw report` counts: the same
//! functions (flat), threads, source lines (`-lines`, `-list`), the
//! program named first, values and period in their units (docs/EXPORT.md).

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::sync::Arc;
use tbrw_schema::Progress;

use tbrw::Tb5File;

use crate::error::ExportError;
use tbrw_query::names;
use tbrw_query::stacks::{stacks, Detail, IdMap, Keep, Names, Stacks, ViewOptions};
use tbrw_query::Weight;
use tbrw_symbols::{SourceLocation, Symbolized};

/// `Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// The mappings (modules).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// The locations (distinct addresses).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// The functions.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string; `string_table[0]` is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Frames to drop (a regular expression's string index).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Frames to keep.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile was taken, ns since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long it took, ns.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What the period counts.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Events between samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-text comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type shown by default (string index of its type).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `ValueType`: a type and its unit (string indices).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// E.g. "samples".
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// E.g. "count".
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The stack, innermost location first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Its key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// A string value (string index).
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// A numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// The numeric value's unit (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// `Mapping`: a module.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The load address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// The end, exclusive.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// The file offset mapped at `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The file (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The build id as hex (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Whether locations in it have function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Whether they have file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Whether they have line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Whether they have inlined frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// `Location`: a distinct address.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its mapping (0: none).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Its functions (one, when symbols name it).
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Whether several functions were folded into one.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// `Line`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// The function.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The source line (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// The column (0: unknown).
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Its name as the system knows it (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Its source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// Its first line.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// The string table under construction.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// What a stream's events count, for the values of a perf period field
/// and the profile's period.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Counted {
    /// perf's software clocks (`cpu-clock`, `task-clock`): a period is
    /// nanoseconds of CPU time.
    CpuTime,
    /// One event (its name without perf's modifiers): a period is a count of it.
    Event(String),
    /// Several events: counts of different things.
    Events,
}

impl Counted {
    fn of(events: &[tbrw::Event]) -> Option<Counted> {
        let names: BTreeSet<&str> =
            events.iter().map(|e| e.name.as_deref().unwrap_or("events").split(':').next().unwrap_or("")).collect();
        let clock = |n: &&str| matches!(*n, "cpu-clock" | "task-clock");
        match names.len() {
            0 => None,
            _ if names.iter().all(clock) => Some(Counted::CpuTime),
            1 => names.first().map(|n| Counted::Event((*n).to_owned())),
            _ => Some(Counted::Events),
        }
    }
}

/// The sample types, the default one and the period of a stream's profile:
/// `samples`/`count` first; the weight asked for; a perf period field's
/// sums in their unit (`cpu`/`nanoseconds` for perf's clocks, else the
/// event's name and `count`). The period is the mean of the samples'
/// periods (perf's `-F` varies it), else the sample-after value of the
/// stream's events when they are counted by event (the guide's `EBS`:
/// samples every that many occurrences); time-based events' values have
/// no unit the format states, so they give none.
struct ValueTypes {
    types: Vec<(String, &'static str)>,
    period: Option<((String, &'static str), i64)>,
}

fn value_types(
    file: &Tb5File,
    opts: &ViewOptions,
    info: &tbrw_query::stacks::WalkInfo,
    totals: (u64, u64),
) -> Result<ValueTypes, ExportError> {
    let events = match file.stream(opts.query.stream)?.events()? {
        Some(e) => e.into_iter().map(|e| file.resolve(e)).collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let mut types = vec![("samples".to_owned(), "count")];
    match opts.query.weight {
        Weight::Samples => {}
        Weight::Energy => types.push(("energy".to_owned(), "nanojoules")),
        Weight::Cputime => types.push(("cpu".to_owned(), "nanoseconds")),
    }
    let counted = Counted::of(&events);
    let mut period = None;
    if info.has_period {
        let t = match counted.unwrap_or(Counted::Events) {
            // `cpu` is taken by --weight cputime's values: then the clock's own name.
            Counted::CpuTime if types.iter().any(|t| t.0 == "cpu") => ("cpu-clock".to_owned(), "nanoseconds"),
            Counted::CpuTime => ("cpu".to_owned(), "nanoseconds"),
            Counted::Event(name) => (name, "count"),
            Counted::Events => ("events".to_owned(), "count"),
        };
        let (samples, periods) = totals;
        if samples > 0 {
            period = Some((t.clone(), (periods as f64 / samples as f64).round() as i64));
        }
        types.push(t);
    } else if let (Some(c), Some(first)) = (counted, events.first()) {
        let by_event = events.iter().all(|e| e.flags.contains(tbrw::EventFlags::EBS) && e.sav == first.sav);
        if by_event && first.sav > 0 {
            let name = match c {
                Counted::Event(name) => name,
                _ => "events".to_owned(),
            };
            period = Some(((name, "count"), first.sav as i64));
        }
    }
    Ok(ValueTypes { types, period })
}

/// The mapping pprof names the profile after (its `File:` line, and the
/// binary `-list` and `-disasm` start from): the executable
/// (`TBRW_MODULE_IS_EXE`) with the most samples, else the most sampled
/// module that is not the kernel's.
fn main_module(modules: &[tbrw::Module], leaf_samples: &[u64]) -> Option<usize> {
    let busiest = |exe: bool| {
        (0..modules.len())
            .filter(|&i| leaf_samples[i] > 0)
            .filter(|&i| {
                let m = &modules[i];
                if exe {
                    m.flags.contains(tbrw::ModuleFlags::IS_EXE)
                } else {
                    !m.flags.contains(tbrw::ModuleFlags::GLOBAL_LOAD) && !names::module_label(m).starts_with('[')
                }
            })
            // The lowest index among equals: the same choice every run.
            .max_by_key(|&i| (leaf_samples[i], std::cmp::Reverse(i)))
    };
    busiest(true).or_else(|| busiest(false))
}

/// What [`write()`] can be asked besides the view.
#[derive(Clone, Copy, Debug, Default)]
pub struct PprofOptions {
    /// One location per module for the addresses of a module whose file
    /// is not here (and for those in no module), rather than one per
    /// address: a smaller profile, which `pprof -symbolize` can no longer
    /// name (`--fold-unresolved`).
    pub fold_unresolved: bool,
}

/// What a profile holds, as [`write()`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PprofSummary {
    /// The samples (the sum of the first value of every `Sample`).
    pub samples: i64,
    /// The `Sample`s: distinct stacks and label sets.
    pub stacks: usize,
    /// The `Location`s.
    pub locations: usize,
    /// The `Function`s.
    pub functions: usize,
    /// The `Mapping`s.
    pub mappings: usize,
}

/// The stream's profile, whole. Warnings (modules without symbols) go to `warn`.
pub fn profile(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<Profile, ExportError> {
    use prost::Message;
    let mut bytes = Vec::new();
    encode(file, opts, &PprofOptions::default(), &mut bytes, warn, progress)?;
    Profile::decode(bytes.as_slice()).map_err(|e| ExportError::Encode { what: "decoding", source: e.into() })
}

/// Writes the stream's profile, gzip-compressed.
pub fn write(
    file: &Tb5File,
    opts: &ViewOptions,
    out: &mut dyn Write,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<PprofSummary, ExportError> {
    write_with(file, opts, &PprofOptions::default(), out, warn, progress)
}

/// [`write()`] with the options of [`PprofOptions`].
pub fn write_with(
    file: &Tb5File,
    opts: &ViewOptions,
    popts: &PprofOptions,
    out: &mut dyn Write,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<PprofSummary, ExportError> {
    let failed = |e: std::io::Error| ExportError::write("profile", e);
    // A fast level (crate::gzip::LEVEL), as Go's runtime/pprof writes
    // its profiles at its fastest (the default level was half of a large
    // export's time), compressed in blocks on worker threads while the
    // profile is encoded here.
    let mut gz = crate::gzip::PipedGzip::new(out, flate2::Compression::new(crate::gzip::LEVEL));
    let summary = encode(file, opts, popts, &mut gz, warn, progress)?;
    gz.finish().map_err(failed)?;
    Ok(summary)
}

/// The pprof export with its options, as the registry runs it ([`crate::registry::Export`]).
#[derive(Clone, Debug, Default)]
pub struct Pprof {
    /// The samples exported.
    pub view: ViewOptions,
    /// The profile's options.
    pub options: PprofOptions,
}

impl crate::registry::Export for Pprof {
    fn name(&self) -> &'static str {
        "pprof"
    }

    fn export(
        &self,
        file: &Tb5File,
        out: crate::registry::Output<'_>,
        warn: &mut Vec<crate::Warning>,
        progress: &mut dyn Progress,
    ) -> Result<crate::registry::Summary, ExportError> {
        let out = crate::registry::file_of(self.name(), out)?;
        let p = write_with(file, &self.view, &self.options, out, warn, progress)?;
        let line = format!(
            "{} samples aggregated into {} stacks, {} locations, {} functions, {} mappings",
            p.samples, p.stacks, p.locations, p.functions, p.mappings
        );
        Ok(crate::registry::Summary { line, ..Default::default() })
    }
}

/// Google's profile.proto (gzip-compressed), for `go tool pprof`, speedscope, Perfetto.
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug)]
pub struct PprofArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub view: crate::cli::ViewArgs,
    /// One location per module for the addresses of modules whose files are not here (and of none),
    /// not one per address: a smaller profile, whose addresses `pprof -symbolize` can no longer name.
    #[arg(long)]
    pub fold_unresolved: bool,
}

#[cfg(feature = "cli")]
impl crate::cli::ExportArgs for PprofArgs {
    fn job(self) -> Result<crate::cli::Job, crate::cli::ArgsError> {
        let options = PprofOptions { fold_unresolved: self.fold_unresolved };
        self.view.job(|view| Pprof { view, options })
    }
}

/// One field of the `Profile` message: its key and its encoded value.
fn field<M: prost::Message>(tag: u32, m: &M, scratch: &mut Vec<u8>, out: &mut dyn Write) -> std::io::Result<()> {
    scratch.clear();
    prost::encoding::message::encode(tag, m, scratch);
    out.write_all(scratch)
}

/// Writes the stream's `Profile` message (not compressed) to `out`, a
/// field at a time: profile.proto's fields may come in any order and a
/// repeated field's elements one by one, so no `Sample` or `Location` is
/// held, only the walk's stacks (its tree of nodes and distinct frames, a
/// frame a location) and their totals, and the functions, mappings and
/// strings. A location costs its distinct frame (16 bytes, and its index),
/// not a message. The fields: the sample types, the samples, the
/// locations, the mappings (once the locations said which have source
/// lines), the functions, then the profile's scalars and its strings.
fn encode(
    file: &Tb5File,
    opts: &ViewOptions,
    popts: &PprofOptions,
    out: &mut dyn Write,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<PprofSummary, ExportError> {
    let io = |e: std::io::Error| ExportError::write("profile", e);
    let modules = tbrw_query::stream::modules(file)?;
    // Function names and source lines: what the report by function and by line say.
    let mut function_names = Names::with_lines(file, &modules, &opts.symbols)?;
    let detail = if popts.fold_unresolved { Detail::Function } else { Detail::Address };
    let keep = Keep { process: true, thread: true, cpu: true };
    let st = stacks(file, opts, keep, &mut function_names.resolution(detail), "pprof", progress)?;
    let mut strings = Strings::new();
    let mut scratch = Vec::new();

    let totals = st.iter().fold((0u64, 0u64), |(n, per), (_, t)| (n + t.samples, per + t.period));
    let types = value_types(file, opts, &st.info, totals)?;
    let mut default_sample_type = 0;
    for (t, u) in &types.types {
        let vt = ValueType { r#type: strings.get(t), unit: strings.get(u) };
        default_sample_type = vt.r#type;
        field(1, &vt, &mut scratch, out).map_err(io)?;
    }
    let samples = write_samples(&st, opts.query.weight, &mut strings, &mut scratch, out).map_err(io)?;
    let (mut mappings, mapping_of) = mappings(file, &st, &mut strings)?;
    let mut locations = Locations {
        strings: &mut strings,
        mappings: &mut mappings,
        function_of: HashMap::new(),
        functions: Vec::new(),
        last: IdMap::default(),
    };
    locations.write(&st, &mapping_of, &mut function_names, &mut scratch, out).map_err(io)?;
    let functions = std::mem::take(&mut locations.functions);
    function_names.take_warnings(warn);
    for m in &mappings {
        field(3, m, &mut scratch, out).map_err(io)?;
    }
    for f in &functions {
        field(5, f, &mut scratch, out).map_err(io)?;
    }
    let tail = tail(file, opts, popts, &st.info, &types, default_sample_type, strings);
    scratch.clear();
    prost::Message::encode(&tail, &mut scratch)
        .map_err(|e| ExportError::Encode { what: "encoding", source: e.into() })?;
    out.write_all(&scratch).map_err(io)?;
    Ok(PprofSummary {
        samples,
        stacks: st.len(),
        locations: st.tree.frame_count(),
        functions: functions.len(),
        mappings: mappings.len(),
    })
}

/// Writes a `Sample` per stack and label set: its locations (a frame's
/// number + 1), values and labels. Returns the samples.
fn write_samples(
    st: &Stacks,
    weight: Weight,
    strings: &mut Strings,
    scratch: &mut Vec<u8>,
    out: &mut dyn Write,
) -> std::io::Result<i64> {
    let info = &st.info;
    // Numeric labels carry a unit: pprof drops a numeric label that has
    // neither a value nor a unit, so cpu 0 (pid 0, tid 0) would vanish.
    // The unit is the key, the unit pprof itself assumes for a unitless
    // key, so values print as plain numbers.
    let pid_key = strings.get("pid");
    let tid_key = strings.get("tid");
    let cpu_key = strings.get("cpu");
    let thread_key = strings.get("thread");
    // Per label set, its labels.
    let labels: Vec<Vec<Label>> = st
        .labels
        .iter()
        .map(|l| {
            let pid = info.processes.get(&l.process).map_or(0, |p| p.pid);
            let thread = info.threads.get(&l.thread);
            let mut label = vec![
                Label { key: pid_key, str: 0, num: i64::from(pid), num_unit: pid_key },
                Label { key: tid_key, str: 0, num: i64::from(thread.map_or(0, |t| t.tid)), num_unit: tid_key },
            ];
            if let Some(name) = thread.and_then(|t| t.name.as_deref()) {
                let v = strings.get(name);
                label.push(Label { key: thread_key, str: v, num: 0, num_unit: 0 });
            }
            if let Some(c) = l.cpu {
                label.push(Label { key: cpu_key, str: 0, num: i64::from(c), num_unit: cpu_key });
            }
            label
        })
        .collect();
    let mut sample = Sample::default();
    let mut samples = 0;
    for ((set, stack), totals) in st.iter() {
        sample.location_id.clear();
        sample.location_id.extend(st.tree.path(stack).map(|n| u64::from(st.tree.frame_id_of(n)) + 1));
        sample.label.clone_from(&labels[set as usize]);
        sample.value.clear();
        sample.value.push(totals.samples as i64);
        match weight {
            Weight::Samples => {}
            Weight::Energy => sample.value.push((totals.weight * 1e9).round() as i64),
            Weight::Cputime => sample.value.push(totals.weight.round() as i64),
        }
        if info.has_period {
            sample.value.push(totals.period as i64);
        }
        samples += totals.samples as i64;
        field(2, &sample, scratch, out)?;
    }
    Ok(samples)
}

/// The mappings: the modules the frames are in, with what the collector
/// noted about them; the program first. And per module record, its
/// mapping's index.
fn mappings(
    file: &Tb5File,
    st: &Stacks,
    strings: &mut Strings,
) -> Result<(Vec<Mapping>, HashMap<u64, usize>), ExportError> {
    let info = &st.info;
    let notes = match file.user_defined_global()? {
        Some(b) => tbrw_schema::module_notes::decode(&String::from_utf8_lossy(b)),
        None => HashMap::new(),
    };
    let mut used: Vec<bool> = vec![false; info.modules.len()];
    for id in 0..st.tree.frame_count() as u32 {
        if let Some(u) = st.tree.frame(id).module.and_then(|m| used.get_mut(m as usize)) {
            *u = true;
        }
    }
    let mut leaf_samples: Vec<u64> = vec![0; info.modules.len()];
    for ((_, leaf), t) in st.iter() {
        if let Some(n) = st.tree.node_frame(leaf).module.and_then(|m| leaf_samples.get_mut(m as usize)) {
            *n += t.samples;
        }
    }
    let first = main_module(&info.modules, &leaf_samples);
    let order = first.into_iter().chain((0..info.modules.len()).filter(|&i| Some(i) != first));
    let mut mapping_of: HashMap<u64, usize> = HashMap::new();
    let mut mappings: Vec<Mapping> = Vec::new();
    for i in order {
        if !used[i] {
            continue;
        }
        let m = &info.modules[i];
        let note = notes.get(&(i as u64));
        let file_name = m.path.clone().unwrap_or_else(|| names::module_label(m));
        let build_id = note.and_then(|n| n.build_id.as_deref()).map(tbrw_schema::module_notes::hex).unwrap_or_default();
        mapping_of.insert(i as u64, mappings.len());
        mappings.push(Mapping {
            id: mappings.len() as u64 + 1,
            memory_start: m.load_address,
            memory_limit: m.load_address.saturating_add(m.length),
            file_offset: note.and_then(|n| n.offset).unwrap_or(0),
            filename: strings.get(&file_name),
            build_id: strings.get(&build_id),
            // Every location has its function (named, or `[libfoo.so]`):
            // pprof does not look for the file to name them itself, which
            // could name them otherwise than the report (`-symbolize=force`
            // still makes it).
            has_functions: true,
            has_filenames: false,
            has_line_numbers: false,
            has_inline_frames: false,
        });
    }
    Ok((mappings, mapping_of))
}

/// The locations as they are written: their functions, per (name, mapping
/// file, source file), and the mappings they say have source lines.
struct Locations<'a> {
    strings: &'a mut Strings,
    mappings: &'a mut Vec<Mapping>,
    function_of: HashMap<(String, i64, i64), u64>,
    functions: Vec<Function>,
    /// Per module record, the last symbolizer result and the function and
    /// line it gave: every address of a module whose file is not here has
    /// the same result, found once.
    last: IdMap<Option<u64>, Known>,
}

impl Locations<'_> {
    /// Writes a `Location` per distinct frame, in the order first met.
    fn write(
        &mut self,
        st: &Stacks,
        mapping_of: &HashMap<u64, usize>,
        function_names: &mut Names,
        scratch: &mut Vec<u8>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        for id in 0..st.tree.frame_count() as u32 {
            let f = st.tree.frame(id);
            let mapping = f.module.and_then(|m| mapping_of.get(&m).copied());
            // Its lines: each function inlined there, innermost first,
            // then the function it was compiled into (how pprof carries
            // inlining); one line with `--no-inline`.
            let line = self.lines(f, mapping, &st.info, function_names);
            if let (Some(i), true) = (mapping, line.len() > 1) {
                self.mappings[i].has_inline_frames = true;
            }
            let mapping_id = mapping.map_or(0, |i| i as u64 + 1);
            let loc = Location { id: u64::from(id) + 1, mapping_id, address: f.pc, line, is_folded: false };
            field(4, &loc, scratch, out)?;
        }
        Ok(())
    }

    /// The lines of frame `f` (in mapping `mapping`): the functions
    /// inlined at its address, innermost first, each with its source line,
    /// then its function with the line of the call site there (with no
    /// inline frames: the address's own line).
    fn lines(
        &mut self,
        f: tbrw_query::stacks::Frame,
        mapping: Option<usize>,
        info: &tbrw_query::stacks::WalkInfo,
        function_names: &mut Names,
    ) -> Vec<Line> {
        let uniform = function_names.uniform(f.module);
        if let Some((_, lines)) = self.last.get(&f.module).filter(|_| uniform) {
            return lines.clone();
        }
        let s = function_names.symbolized(f);
        if let (Some(s), Some((Some(was), lines))) = (&s, self.last.get(&f.module)) {
            if Arc::ptr_eq(s, was) {
                return lines.clone();
            }
        }
        // Every location has a function: its name, or the one spelling of
        // an unknown one (`[liba.so]`, `[unknown]`).
        let module = f.module.and_then(|m| info.modules.get(m as usize));
        let named = s.as_deref().map(|s| function_names.named(s)).unwrap_or_default();
        let inlined = s.as_deref().map(|s| function_names.inline_frames(s)).unwrap_or_default();
        let func: String = match &named.function {
            Some(n) => n.to_string(),
            None => names::unknown_function(module.map(names::module_label).as_deref()),
        };
        let mut lines = Vec::with_capacity(inlined.len() + 1);
        for i in inlined.iter().rev() {
            lines.push(self.line(&i.function, i.location.as_ref(), mapping));
        }
        // The call site in the function, below its inlined ones.
        let own = match inlined.is_empty() {
            true => named.location.as_ref(),
            false => s.as_deref().and_then(|s| s.frames.last()).and_then(|f| f.location.as_ref()),
        };
        lines.push(self.line(&func, own, mapping));
        self.last.insert(f.module, (s, lines.clone()));
        lines
    }

    /// The line of function `func` at `location`, its function numbered
    /// once per (name, mapping file, source file).
    fn line(&mut self, func: &str, location: Option<&SourceLocation>, mapping: Option<usize>) -> Line {
        let (source, line_no) = match location {
            Some(l) => (self.strings.get(&l.file), l.line.map_or(0, i64::from)),
            None => (0, 0),
        };
        let filename = mapping.map_or(0, |i| self.mappings[i].filename);
        if let (Some(i), true) = (mapping, source != 0) {
            self.mappings[i].has_filenames = true;
            self.mappings[i].has_line_numbers |= line_no != 0;
        }
        let n = self.functions.len() as u64 + 1;
        let fid = *self.function_of.entry((func.to_owned(), filename, source)).or_insert(n);
        if fid == n {
            let name = self.strings.get(func);
            self.functions.push(Function { id: fid, name, system_name: name, filename: source, start_line: 0 });
        }
        Line { function_id: fid, line: line_no, column: 0 }
    }
}

/// The profile's own fields and its strings (all of them known now).
fn tail(
    file: &Tb5File,
    opts: &ViewOptions,
    popts: &PprofOptions,
    info: &tbrw_query::stacks::WalkInfo,
    types: &ValueTypes,
    default_sample_type: i64,
    mut strings: Strings,
) -> Profile {
    let mut tail = Profile { default_sample_type, ..Profile::default() };
    if let Some(((t, u), period)) = &types.period {
        tail.period_type = Some(ValueType { r#type: strings.get(t), unit: strings.get(u) });
        tail.period = *period;
    }
    if let (Some(tf), Some((a, z))) = (&info.time, info.time_range) {
        if tf.nanos {
            if tf.realtime {
                tail.time_nanos = a as i64;
            }
            tail.duration_nanos = (z - a) as i64;
        }
    }
    // The file's name, not the path it was read from: the same file gives
    // the same profile wherever it lies.
    let name =
        file.path().file_name().map_or_else(|| file.path().display().to_string(), |f| f.to_string_lossy().into());
    let comment = format!("{name}, stream {}", opts.query.stream);
    tail.comment.push(strings.get(&comment));
    if let Some(m) = info.chains {
        tail.comment.push(strings.get(&format!("call chains from stream {m}")));
    }
    if popts.fold_unresolved {
        tail.comment.push(strings.get("addresses of modules whose files were not found folded into one per module"));
    }
    tail.string_table = strings.table;
    tail
}

/// A module's last symbolizer result, and the lines it gave.
type Known = (Option<Arc<Symbolized>>, Vec<Line>);
