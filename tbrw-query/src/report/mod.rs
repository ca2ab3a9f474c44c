//! `tbrw report`: what a report is (typed rows, the shape of its JSON, see
//! the README's report section) and its writers, table and JSON. One way
//! to ask one: a [`ReportOptions`] (the query, the grouping once, the
//! rows, self or perf's inclusive view) given to [`run`] (the whole
//! report) or [`answer`] (the report by address made row by row as it is
//! written). Under them, `samples` counts a stream's samples per
//! process, thread, module or event, `functions` per function, line or
//! address, `children` makes the inclusive view; the MTMC task report (`--by task`) is built by
//! [`crate::tasks`] into the same [`Report`] (`answer` tells an MTMC
//! task stream by `tbrw_schema::mtmc`'s layout).

use std::fmt;
use std::io::Write;
use tbrw_schema::Progress;

use serde::{Deserialize, Serialize};
use tbrw::text::Escaped;

use crate::names;
// The query's types, named here by the report's code; their one public
// path is the crate root.
pub(crate) use crate::query::{By, Query, Weight};
use crate::walk::{ProcessName, ThreadName};

mod samples;

mod addresses;
mod answer;
mod by_symbol;
mod children;
pub mod functions;
mod raw;
mod rows;

pub use addresses::AddressRows;
pub use answer::{answer, Answer};
pub use samples::{groupings, stream};

/// The total a weighted report's percentages are of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeightSum {
    /// The weight.
    pub weight: Weight,
    /// Its unit.
    pub unit: String,
    /// The sum over the samples that passed the filters.
    pub total: f64,
}

impl WeightSum {
    /// The sum `total` of `weight`.
    pub fn new(weight: Weight, total: f64) -> WeightSum {
        WeightSum { weight, unit: weight.unit().to_owned(), total }
    }
}

/// What the inclusive view is called in messages ("nothing to ..."); a
/// front end names its own command.
pub const CHILDREN: &str = "the report with children";

/// What a report is asked: the query, the grouping (given once), how many
/// rows, self or children, and where symbols are found. The one argument
/// of [`run`] and [`answer`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ReportOptions {
    /// The stream, filters and weight.
    pub query: Query,
    /// The grouping: one [`By`], or several combined (as `tbrw report
    /// --by module,function`: each row's key a [`Key::Combined`] whose
    /// parts follow this order); empty is [`By::Auto`].
    pub by: Vec<By>,
    /// Only the first K rows.
    pub top: Option<usize>,
    /// Perf's inclusive view (`perf report --children`): per function its
    /// self figures and its [`Row::children`], the samples with it anywhere
    /// in their stack. Only by function (or auto, which then means it).
    pub children: bool,
    /// Where the modules' symbols are found, for the groupings that need
    /// them (function, line, address) and the inclusive view.
    pub symbols: crate::file_symbols::SymbolOptions,
}

impl ReportOptions {
    /// The report of `query` grouped by `by` (empty: [`By::Auto`]), every
    /// row, self figures, default symbol options.
    pub fn new(query: Query, by: &[By]) -> ReportOptions {
        ReportOptions { query, by: by.to_vec(), ..ReportOptions::default() }
    }

    /// These options with only the first `top` rows.
    pub fn top(self, top: Option<usize>) -> ReportOptions {
        ReportOptions { top, ..self }
    }

    /// These options with perf's inclusive view (`children`) or self only.
    pub fn children(self, children: bool) -> ReportOptions {
        ReportOptions { children, ..self }
    }

    /// These options with `symbols` to find the modules' symbols.
    pub fn symbols(self, symbols: crate::file_symbols::SymbolOptions) -> ReportOptions {
        ReportOptions { symbols, ..self }
    }

    /// The one grouping the report is by: [`By::Auto`] for none,
    /// [`By::Combined`] for several.
    pub fn grouping(&self) -> By {
        match self.by.as_slice() {
            [] => By::Auto,
            [b] => *b,
            _ => By::Combined,
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
        /// `[libfoo.so]` for a module without a symbol there, `[unknown]` without a module (crate::names).
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
        /// When `file` is `None`, the unknown label (`[app]`, crate::names).
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
            Key::Process { pid, name, .. } => f.write_str(&names::process_label(*pid, name.as_deref())),
            Key::Thread { tid, pid, name, .. } => f.write_str(&names::thread_label_in(*tid, *pid, name.as_deref())),
            Key::Module { index, name, path, pid } => match name.as_deref().or(path.as_deref()) {
                Some(n) => write!(f, "{n} (pid {pid})"),
                None => write!(f, "module {index} (pid {pid})"),
            },
            Key::UnknownModule => f.write_str(names::NO_MODULE),
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
    /// Percent of the report's samples (of its weight, when weighted).
    pub percent: f64,
    /// The row's weight, when the report is weighted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Task reports only: duration, counter deltas, topdown (boxed: the
    /// figures are four times a row's other fields, and reports by
    /// function have tens of thousands of rows to sort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Box<TaskFigures>>,
    /// `--children` only: the samples with this function anywhere in their
    /// stack (each sample once); `samples`, `percent` and `weight` are then
    /// the function's self figures, as `--by function` gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Inclusive>,
}

/// A function's inclusive figures (`tbrw report --children`, perf's
/// "Children" column).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inclusive {
    /// Samples whose stack holds the function (once per sample).
    pub samples: u64,
    /// Percent of the report's samples (of its weight, when weighted).
    pub percent: f64,
    /// Their weight, when the report is weighted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
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
    /// Samples that passed the filters (the rows' percentages are of these
    /// unless the report is weighted).
    pub samples: u64,
    /// What the samples weigh in all, when weighted (the percentages are of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<WeightSum>,
    /// Rows: most samples first (tasks: in record order, or the longest
    /// first with `--top`).
    pub rows: Vec<Row>,
    /// Task reports: totals per thread, then per core. Empty otherwise.
    pub totals: Vec<Row>,
    /// Why `--by auto` chose [`Report::by`] (`None`: it was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<String>,
}

/// `n noun`, the noun in the plural unless `n` is 1 (`1 task`, `2 tasks`).
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A percentage with two decimals, never `-0.00`: a figure that rounds to
/// zero prints as `0.00` whatever its sign.
pub(crate) fn percent_text(v: f64) -> String {
    // -0.0 + 0.0 is +0.0.
    let r = (v * 100.0).round() / 100.0 + 0.0;
    format!("{r:.2}")
}

/// `part` in percent of `whole` (0 when `whole` is).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Writes a report as JSON, on one line.
pub fn write_json(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    writeln!(out)
}

/// Writes a sample report as a table: a heading line, then samples,
/// (the weight's sum,) percent and label per row; names from files
/// escaped ([`tbrw::text`], the JSON keeps them exact).
pub fn write_table(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let combined = match (r.by, r.rows.first().map(|row| &row.key)) {
        (By::Combined, Some(Key::Combined { parts })) => {
            Some(parts.iter().map(Key::grouping).collect::<Vec<_>>().join(","))
        }
        _ => None,
    };
    let by = combined.as_deref().unwrap_or(r.by.name());
    // As perf's header says what it sorted by: here, what the automatic
    // grouping chose and why.
    let chosen = r.auto.as_deref().map_or(String::new(), |why| format!(" (chosen automatically: {why})"));
    if r.rows.iter().any(|row| row.children.is_some()) {
        return write_children_table(r, by, out);
    }
    writeln!(out, "{}", Escaped(&heading(r, by, &chosen)))?;
    write_rows(&r.weight, by, r.rows.iter(), out)
}

/// A table's column heading and rows (see [`write_table`]).
fn write_rows<R: std::borrow::Borrow<Row>>(
    weight: &Option<WeightSum>,
    by: &str,
    rows: impl Iterator<Item = R>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match weight {
        None => {
            writeln!(out, "{:>10} {:>7}  {by}", "samples", "percent")?;
            for row in rows {
                let row = row.borrow();
                writeln!(out, "{:>10} {:>6.2}%  {}", row.samples, row.percent, Escaped(&row.key.to_string()))?;
            }
        }
        Some(w) => {
            writeln!(out, "{:>10} {:>16} {:>7}  {by}", "samples", w.weight.name(), "percent")?;
            for row in rows {
                let row = row.borrow();
                writeln!(
                    out,
                    "{:>10} {:>16} {:>6.2}%  {}",
                    row.samples,
                    quantity(row.weight.unwrap_or(0.0), w.weight),
                    row.percent,
                    Escaped(&row.key.to_string())
                )?;
            }
        }
    }
    Ok(())
}

/// A table's heading line: the file, the stream, the samples counted of
/// those read, the weight's sum when there is a weight, the grouping, then
/// `tail`.
pub(crate) fn heading(r: &Report, by: &str, tail: &str) -> String {
    let weight =
        r.weight.as_ref().map_or(String::new(), |w| format!(", {} {}", quantity(w.total, w.weight), w.weight.name()));
    format!("{}: stream {}, {} of {} samples{weight}, by {by}{tail}", r.file, r.stream, r.samples, r.records)
}

/// The table of `tbrw report --children`: as perf's `--children`, the
/// inclusive share first (the column the rows are sorted by), then self.
fn write_children_table(r: &Report, by: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let inclusive = |row: &Row| row.children.clone().unwrap_or(Inclusive { samples: 0, percent: 0.0, weight: None });
    let what = "children: samples with the function anywhere in their stack; self: with it sampled";
    writeln!(out, "{}", Escaped(&heading(r, by, &format!(" ({what})"))))?;
    match &r.weight {
        None => {
            writeln!(out, "{:>8} {:>8} {:>10} {:>10}  {by}", "children", "self", "samples", "self")?;
            for row in &r.rows {
                let c = inclusive(row);
                writeln!(
                    out,
                    "{:>7.2}% {:>7.2}% {:>10} {:>10}  {}",
                    c.percent,
                    row.percent,
                    c.samples,
                    row.samples,
                    Escaped(&row.key.to_string())
                )?;
            }
        }
        Some(w) => {
            let name = w.weight.name();
            writeln!(out, "{:>8} {:>8} {:>16} {:>16}  {by}", "children", "self", name, format!("self {name}"))?;
            for row in &r.rows {
                let c = inclusive(row);
                writeln!(
                    out,
                    "{:>7.2}% {:>7.2}% {:>16} {:>16}  {}",
                    c.percent,
                    row.percent,
                    quantity(c.weight.unwrap_or(0.0), w.weight),
                    quantity(row.weight.unwrap_or(0.0), w.weight),
                    Escaped(&row.key.to_string())
                )?;
            }
        }
    }
    Ok(())
}

/// A weight's sum in fixed notation with the unit that keeps it short:
/// CPU time in ns, µs, ms or s, energy in J, mJ, µJ or nJ (3 significant
/// decimals), sample counts as integers.
pub(crate) fn quantity(x: f64, weight: Weight) -> String {
    let (units, scale): (&[&str], f64) = match weight {
        Weight::Samples => return format!("{x:.0}"),
        // From the smallest unit up, each 1000 times the one before.
        Weight::Cputime => (&["ns", "us", "ms", "s"], 1.0),
        Weight::Energy => (&["nJ", "uJ", "mJ", "J"], 1e9),
    };
    let mut v = x * scale;
    let mut unit = units[0];
    for u in &units[1..] {
        if v.abs() < 1000.0 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    if unit == units[0] {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.3} {unit}")
    }
}

/// The key of module record `index`.
pub(crate) fn module_key(index: u64, m: &tbrw::Module) -> Key {
    Key::Module { index, name: m.name.clone(), path: m.path.clone(), pid: m.associated_pid }
}

/// The key of process `index` of the bind.
pub(crate) fn process_key(index: u64, p: &ProcessName) -> Key {
    Key::Process { index, pid: p.pid, name: p.name.clone() }
}

/// The key of a thread: `index` in the bind's table, `None` for the
/// records' own tid field.
pub fn thread_key(index: Option<u64>, t: &ThreadName) -> Key {
    Key::Thread { index, tid: t.tid, pid: t.pid, name: t.name.clone() }
}

/// The report `opts` asks: its query grouped as `opts.by` says (one
/// grouping, several combined, or [`By::Auto`]), self figures or perf's
/// inclusive view, the first `opts.top` rows; every row made (the report
/// by address made one row at a time is [`answer`]'s). Warnings about
/// modules without symbols go to `warn`; `progress` gets records done.
pub fn run(
    file: &tbrw::Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<Report, crate::QueryError> {
    answer(file, opts, warn, progress).map(Answer::into_report)
}

/// Writes a report as text: the task report's own layout, else the table.
pub fn write_text(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    if r.by == By::Task {
        crate::tasks::write_task_text(r, out)
    } else {
        write_table(r, out)
    }
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
        assert_eq!(t.to_string(), "main (tid 3)");
        assert_eq!(serde_json::from_str::<Key>(&serde_json::to_string(&t).unwrap()).unwrap(), t);
    }
}
