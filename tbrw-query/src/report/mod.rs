//! `tbrw report`: what a report is (typed rows, the shape of its JSON, see
//! the README's report section) and its writers, table and JSON.
//! [`samples`] counts a stream's samples per process, thread, module or
//! event; the MTMC task report (`--by task`) is built by
//! `crate::mtmc::report` into the same [`Report`]. This module imports no
//! importer: they depend on it, not the other way round.

use std::fmt;
use std::io::Write;

use serde::{Deserialize, Serialize};

pub mod samples;

mod by_symbol;
pub mod functions;
mod rows;

pub use samples::{groupings, report, weighted_report};

/// What a sample report's percentages weigh (`--weight`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weight {
    /// Each record counts 1.
    #[default]
    Samples,
    /// Each record counts its thread's CPU time since the thread's previous
    /// sample (a sampler import's cputime delta, nanoseconds): a blocked
    /// thread is sampled but weighs nothing.
    Cputime,
    /// Each record counts power x its cputime delta (joules).
    Energy,
}

impl Weight {
    /// Every weight.
    pub const ALL: [Weight; 3] = [Weight::Samples, Weight::Cputime, Weight::Energy];

    /// From [`Weight::name`].
    pub fn from_name(s: &str) -> Option<Weight> {
        Weight::ALL.into_iter().find(|w| w.name() == s)
    }

    /// The name the command line and the JSON give it.
    pub fn name(self) -> &'static str {
        match self {
            Weight::Samples => "samples",
            Weight::Cputime => "cputime",
            Weight::Energy => "energy",
        }
    }

    /// The unit of the weight sums.
    pub fn unit(self) -> &'static str {
        match self {
            Weight::Samples => "samples",
            Weight::Cputime => "ns",
            Weight::Energy => "J",
        }
    }
}

/// The sums behind a weighted report's percentages: the total, and each
/// row's, in the order of the report's rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Weights {
    /// The weight.
    pub weight: Weight,
    /// Its unit.
    pub unit: &'static str,
    /// The sum over the samples that passed the filters.
    pub total: f64,
    /// Each row's sum.
    pub rows: Vec<f64>,
}

/// What to group a report by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// What the stream supports: module for samples that can be bound, task
    /// for MTMC task streams, thread for records with a tid field (winIDEA
    /// calls), event otherwise.
    Auto,
    /// Process instances of the bind.
    Process,
    /// Threads (of the bind, or the records' tid field when they cannot be bound).
    Thread,
    /// Modules (samples no module covers: "unknown module").
    Module,
    /// Events (legacy samples' event index, an event id field, or the only event).
    Event,
    /// MTMC tasks: duration, counter deltas, topdown; totals per thread and core.
    Task,
    /// Functions, from the modules' ELF symbol tables and DWARF (see docs/SYMBOLS.md).
    Function,
    /// Source lines (DWARF), the line of the sampled address itself.
    Line,
    /// Sampled addresses, each with its module, ELF virtual address and function.
    Address,
    /// Several groupings at once (`--by module,function`): each row's key is
    /// a [`Key::Combined`] whose parts follow the order asked.
    Combined,
}

impl By {
    /// Every grouping a command line can name (not [`By::Combined`], which
    /// a comma list makes).
    pub const ALL: [By; 9] =
        [By::Auto, By::Process, By::Thread, By::Module, By::Event, By::Task, By::Function, By::Line, By::Address];

    /// From [`By::name`] (not `combined`).
    pub fn from_name(s: &str) -> Option<By> {
        By::ALL.into_iter().find(|b| b.name() == s)
    }

    /// The name the command line and the JSON give it.
    pub fn name(self) -> &'static str {
        match self {
            By::Auto => "auto",
            By::Process => "process",
            By::Thread => "thread",
            By::Module => "module",
            By::Event => "event",
            By::Task => "task",
            By::Function => "function",
            By::Line => "line",
            By::Address => "address",
            By::Combined => "combined",
        }
    }

    /// Whether the grouping needs the modules' symbols.
    pub fn symbolic(self) -> bool {
        matches!(self, By::Function | By::Line | By::Address)
    }
}

/// Report options.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// The stream.
    pub stream: u32,
    /// Grouping.
    pub by: By,
    /// Only samples of this OS pid.
    pub pid: Option<u32>,
    /// Only samples of this OS tid.
    pub tid: Option<u32>,
    /// Only samples in modules with this name (or path).
    pub module: Option<String>,
    /// Only samples with time in `start..end` (TSC, time stamp or sample index).
    pub time: Option<(u64, u64)>,
    /// Only the first K rows.
    pub top: Option<usize>,
    /// What the percentages weigh.
    pub weight: Weight,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            stream: 0,
            by: By::Auto,
            pid: None,
            tid: None,
            module: None,
            time: None,
            top: None,
            weight: Weight::Samples,
        }
    }
}

/// What a row counts: one per kind of grouping, with the structured fields
/// of the thing (serialized with a `kind` tag, absent values as `null`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Key {
    /// A process instance of the bind.
    Process {
        /// Its index in the bind's process table (two instances may share a pid).
        index: u64,
        /// The OS pid.
        pid: u32,
        /// Its name.
        name: Option<String>,
    },
    /// A thread.
    Thread {
        /// Its index in the bind's thread table; `None` when the records'
        /// own tid field grouped them (streams that cannot be bound).
        index: Option<u64>,
        /// The OS tid.
        tid: u32,
        /// The pid of its process, when the bind says.
        pid: Option<u32>,
        /// Its name, from the thread table.
        name: Option<String>,
    },
    /// A module.
    Module {
        /// Its index in the module table.
        index: u64,
        /// Its name.
        name: Option<String>,
        /// Its path.
        path: Option<String>,
        /// The pid of the process it is loaded in.
        pid: u32,
    },
    /// Samples no module covers.
    UnknownModule,
    /// An event of the stream.
    Event {
        /// The event id.
        id: u32,
        /// Its name.
        name: Option<String>,
    },
    /// One MTMC task (a record of the stream).
    Task {
        /// The record's index.
        index: u64,
        /// The task's kernel thread id.
        tid: u32,
        /// The core it began on.
        core: u64,
        /// Its start, ns CLOCK_REALTIME.
        start_ns: u64,
    },
    /// A core's MTMC tasks.
    Core {
        /// The core id.
        core: u64,
    },
    /// Samples the bind gives no process or thread.
    Unbound,
    /// A function of a module (`--by function`).
    Function {
        /// The module's file name (`None`: no module covers the samples).
        module: Option<String>,
        /// The function, demangled; `None` when it could not be named.
        name: Option<String>,
        /// When `name` is `None`, why, as the table shows it:
        /// `[unknown in libfoo.so: no symbols]`, `[no module]`, `[kernel]`.
        unknown: Option<String>,
    },
    /// A source line (`--by line`): where the sampled address's code came
    /// from, inlined code included.
    Line {
        /// The source file, as DWARF names it; `None` without line information.
        file: Option<String>,
        /// The line.
        line: Option<u32>,
        /// The function the address is in (the outermost, not the inlined one).
        function: Option<String>,
        /// When `file` is `None`, why (`[unknown in app: no line information]`).
        unknown: Option<String>,
    },
    /// A sampled address (`--by address`).
    Address {
        /// The module's file name (`None`: no module covers it).
        module: Option<String>,
        /// The address as sampled.
        address: u64,
        /// The ELF virtual address it translates to, when the module's file was found.
        vaddr: Option<u64>,
        /// `function+0xoffset`, or why it is unknown.
        function: String,
    },
    /// Several groupings (`--by module,function`), in the order asked.
    Combined {
        /// One key per grouping.
        parts: Vec<Key>,
    },
}

impl Key {
    /// What a key that prints as one string it holds (a function's name or
    /// why it is unknown) prints, without formatting.
    pub fn printed_str(&self) -> Option<&str> {
        match self {
            Key::Function { name, unknown, .. } => Some(name.as_deref().or(unknown.as_deref()).unwrap_or("?")),
            _ => None,
        }
    }
}

impl fmt::Display for Key {
    /// The label of the table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Process { pid, name, .. } => write!(f, "pid {pid} {}", name.as_deref().unwrap_or("?")),
            Key::Thread { tid, pid, name, .. } => {
                write!(f, "tid {tid}")?;
                if let Some(p) = pid {
                    write!(f, " (pid {p})")?;
                }
                if let Some(n) = name {
                    write!(f, " {n}")?;
                }
                Ok(())
            }
            Key::Module { index, name, path, pid } => match name.as_deref().or(path.as_deref()) {
                Some(n) => write!(f, "{n} (pid {pid})"),
                None => write!(f, "module {index} (pid {pid})"),
            },
            Key::UnknownModule => f.write_str("unknown module"),
            Key::Event { id, name } => match name {
                Some(n) => f.write_str(n),
                None => write!(f, "event {id}"),
            },
            Key::Task { index, .. } => write!(f, "task {index}"),
            Key::Core { core } => write!(f, "core {core}"),
            Key::Unbound => f.write_str("?"),
            Key::Function { .. } => f.write_str(self.printed_str().unwrap_or("?")),
            Key::Line { file: None, unknown, .. } => f.write_str(unknown.as_deref().unwrap_or("?")),
            Key::Line { file: Some(file), line, function, .. } => {
                f.write_str(file)?;
                if let Some(l) = line {
                    write!(f, ":{l}")?;
                }
                match function {
                    Some(func) => write!(f, " ({func})"),
                    None => Ok(()),
                }
            }
            Key::Address { module, address, vaddr, function } => {
                write!(f, "{address:#x} {}", module.as_deref().unwrap_or("-"))?;
                if let Some(v) = vaddr {
                    write!(f, " {v:#x}")?;
                }
                write!(f, " {function}")
            }
            Key::Combined { parts } => {
                for (i, p) in parts.iter().enumerate() {
                    write!(f, "{}{p}", if i > 0 { "  " } else { "" })?;
                }
                Ok(())
            }
        }
    }
}

impl Key {
    /// The name of the grouping that makes keys of this kind (`module` for
    /// [`Key::UnknownModule`] too), for table headings.
    pub fn grouping(&self) -> &'static str {
        match self {
            Key::Process { .. } => "process",
            Key::Thread { .. } => "thread",
            Key::Module { .. } | Key::UnknownModule => "module",
            Key::Event { .. } => "event",
            Key::Task { .. } | Key::Core { .. } => "task",
            Key::Unbound => "?",
            Key::Function { .. } => "function",
            Key::Line { .. } => "line",
            Key::Address { .. } => "address",
            Key::Combined { .. } => "combined",
        }
    }
}

/// Topdown shares of a task or a group of tasks, in percent, as the MTMC
/// profiler's post-processing computes them (see docs/IMPORT.md): not
/// clamped, so a figure may be slightly negative. Level 2 is `None` when
/// the metrics readings have none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopdownPercent {
    /// The slots used.
    pub slots: u64,
    /// Level 1: retiring.
    pub retiring: f64,
    /// Level 1: bad speculation.
    pub bad_speculation: f64,
    /// Level 1: frontend bound.
    pub frontend_bound: f64,
    /// Level 1: backend bound.
    pub backend_bound: f64,
    /// Level 2: heavy operations, light operations, branch mispredicts,
    /// machine clears, fetch latency, fetch bandwidth, memory bound, core
    /// bound (in this order; names in `crate::mtmc::LEVEL2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level2: Option<Level2Percent>,
}

/// Level-2 topdown figures, in percent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level2Percent {
    /// Heavy operations.
    pub heavy_operations: f64,
    /// Light operations.
    pub light_operations: f64,
    /// Branch mispredicts.
    pub branch_mispredicts: f64,
    /// Machine clears.
    pub machine_clears: f64,
    /// Fetch latency.
    pub fetch_latency: f64,
    /// Fetch bandwidth.
    pub fetch_bandwidth: f64,
    /// Memory bound.
    pub memory_bound: f64,
    /// Core bound.
    pub core_bound: f64,
}

/// What a task row (or a task total) adds to the counts. What a task
/// lacks (no end, no counters, no topdown, no name) is left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskFigures {
    /// The task's name (the 2023 layout's user prefix); tasks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The time the task took, ns (totals: of the tasks that ended);
    /// `None` for a task with no end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// The CPU the task ended on; tasks with an end only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_end: Option<u64>,
    /// The NUMA node the task began on; tasks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u64>,
    /// Each counter's end reading minus its begin reading (signed), summed
    /// over the valid tasks; `None` when the stream has no counters or no
    /// task here is valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_deltas: Option<Vec<i64>>,
    /// The topdown breakdown, when the readings give one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topdown: Option<TopdownPercent>,
    /// Why a task's counter deltas or topdown are left out (migrated,
    /// counters reset, no end); tasks only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    /// Totals: tasks whose counter deltas were left out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub invalid_tasks: u64,
    /// The 2023 layout's integer prefix; tasks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int_prefix: Option<i64>,
    /// The 2023 layout's configuration index; tasks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_index: Option<i64>,
    /// The 2023 layout's constants; tasks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constants: Option<Vec<f64>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What the row counts.
    pub key: Key,
    /// Samples (records) in it.
    pub samples: u64,
    /// Percent of the report's samples.
    pub percent: f64,
    /// Task reports only: duration, counter deltas, topdown (boxed: the
    /// figures are four times a row's other fields, and reports by
    /// function have tens of thousands of rows to sort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Box<TaskFigures>>,
}

/// A report: what `tbrw report --json` writes, one shape for every `--by`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The file, as it was named.
    pub file: String,
    /// The stream.
    pub stream: u32,
    /// The grouping.
    pub by: By,
    /// Records in the stream.
    pub records: u64,
    /// Samples that passed the filters (the rows' percentages are of these).
    pub samples: u64,
    /// Rows: most samples first (tasks: in record order, or the longest
    /// first with `--top`).
    pub rows: Vec<Row>,
    /// Task reports: totals per thread, then per core. Empty otherwise.
    pub totals: Vec<Row>,
}

/// `part` in percent of `whole` (0 when `whole` is).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Parses `A..B`, `A..` or `..B` (decimal or 0x hex).
pub fn parse_range(s: &str) -> std::result::Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("time range {s:?} is not A..B"))?;
    let num = |x: &str, default: u64| -> std::result::Result<u64, String> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(default);
        }
        match x.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => x.parse(),
        }
        .map_err(|_| format!("{x:?} in time range {s:?} is not a number"))
    };
    Ok((num(a, 0)?, num(b, u64::MAX)?))
}

/// Writes a report as JSON, on one line.
pub fn write_json(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    writeln!(out)
}

/// Writes a sample report as a table: a heading line, then samples,
/// percent and label per row.
pub fn write_table(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let combined = match (r.by, r.rows.first().map(|row| &row.key)) {
        (By::Combined, Some(Key::Combined { parts })) => {
            Some(parts.iter().map(Key::grouping).collect::<Vec<_>>().join(","))
        }
        _ => None,
    };
    let by = combined.as_deref().unwrap_or(r.by.name());
    writeln!(out, "{}: stream {}, {} of {} samples, by {by}", r.file, r.stream, r.samples, r.records)?;
    writeln!(out, "{:>10} {:>7}  {by}", "samples", "percent")?;
    for row in &r.rows {
        writeln!(out, "{:>10} {:>6.2}%  {}", row.samples, row.percent, row.key)?;
    }
    Ok(())
}

/// Writes a weighted report as JSON: the report's shape, plus `weight`
/// (weight, unit, total) and each row's `weight` sum.
pub fn write_json_weighted(r: &Report, w: &Weights, out: &mut dyn Write) -> std::io::Result<()> {
    let mut v = serde_json::to_value(r)?;
    if let Some(rows) = v.get_mut("rows").and_then(|x| x.as_array_mut()) {
        for (row, sum) in rows.iter_mut().zip(&w.rows) {
            row["weight"] = serde_json::json!(sum);
        }
    }
    v["weight"] = serde_json::json!({ "weight": w.weight, "unit": w.unit, "total": w.total });
    serde_json::to_writer(&mut *out, &v)?;
    writeln!(out)
}

/// Writes a weighted report as a table: samples, the weight's sum, percent of it, label.
pub fn write_table_weighted(r: &Report, w: &Weights, out: &mut dyn Write) -> std::io::Result<()> {
    let by = r.by.name();
    writeln!(
        out,
        "{}: stream {}, {} of {} samples, {} {} {}, by {by}",
        r.file,
        r.stream,
        r.samples,
        r.records,
        w.total,
        w.unit,
        w.weight.name()
    )?;
    writeln!(out, "{:>10} {:>16} {:>7}  {by}", "samples", w.weight.name(), "percent")?;
    for (row, sum) in r.rows.iter().zip(&w.rows) {
        writeln!(out, "{:>10} {:>16.6e} {:>6.2}%  {}", row.samples, sum, row.percent, row.key)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_serialize_with_their_kind_and_structured_fields() {
        let k = Key::Module { index: 2, name: Some("libz.so".into()), path: None, pid: 7 };
        assert_eq!(
            serde_json::to_string(&k).unwrap(),
            r#"{"kind":"module","index":2,"name":"libz.so","path":null,"pid":7}"#
        );
        assert_eq!(k.to_string(), "libz.so (pid 7)");
        assert_eq!(serde_json::to_string(&Key::UnknownModule).unwrap(), r#"{"kind":"unknown_module"}"#);
        let t = Key::Thread { index: None, tid: 3, pid: None, name: Some("main".into()) };
        assert_eq!(t.to_string(), "tid 3 main");
        assert_eq!(serde_json::from_str::<Key>(&serde_json::to_string(&t).unwrap()).unwrap(), t);
    }

    #[test]
    fn ranges_parse_open_ended_and_hex() {
        assert_eq!(parse_range("..0x10"), Ok((0, 16)));
        assert_eq!(parse_range("5.."), Ok((5, u64::MAX)));
        assert!(parse_range("5").is_err() && parse_range("x..1").is_err());
    }
}
