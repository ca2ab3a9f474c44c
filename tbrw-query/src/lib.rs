//! The one sample walk under every `tbrw` report and export: a [`Query`]
//! (a stream, its filters, what a sample weighs) answered once, the same
//! way for the report, annotate and every export.
//!
//! ```
//! use tbrw_query::report::{self, ReportOptions};
//! use tbrw_query::{Binding, By, Query, Walk, Warning, Weight};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A recording of the `sampler` collector, with its functions stored in it.
//! // `tbrw_query::tbrw` is the `tbrw` crate these types are of.
//! let file = tbrw_query::tbrw::Tb5File::open("../cli/tests/data/matrix/collector.tb5")?;
//!
//! // The top functions by CPU time: what `tbrw report --by function --weight cputime --top 3` prints.
//! // One options struct: the query, the grouping (once), the rows, self or children.
//! let query = Query { weight: Weight::Cputime, ..Query::default() };
//! let opts = ReportOptions::new(query.clone(), &[By::Function]).top(Some(3));
//! let r = report::run(&file, &opts, &mut Vec::new(), &mut |_| {})?;
//! for row in &r.rows {
//!     println!("{:>6.2}%  {}", row.percent, row.key);
//! }
//! assert_eq!(r.rows[0].key.to_string(), "__sincos_fma");
//!
//! // Perf's inclusive view (`perf report --children`) of a perf recording
//! // with call stacks: the same call.
//! let stacks = tbrw_query::tbrw::Tb5File::open("../cli/tests/data/matrix/perf-stacks.tb5")?;
//! // What a report could do only in part comes back as values the caller
//! // collects ([`Warning`]), never as text: here the vDSO, which has no
//! // file to read symbols from.
//! let opts = ReportOptions::new(Query::default(), &[By::Function]).children(true);
//! let mut warnings: Vec<Warning> = Vec::new();
//! let inclusive = report::run(&stacks, &opts, &mut warnings, &mut |_| {})?;
//! let first = &inclusive.rows[0];
//! assert_eq!(first.key.to_string(), "start_thread");
//! assert_eq!((first.samples, first.children.as_ref().unwrap().samples), (0, 172));
//! assert!(matches!(&warnings[..], [Warning::ModuleUnusable(m)] if m.module == "[vdso]"));
//! assert_eq!(warnings[0].to_string(), "[vdso]: not a file; its samples are reported unresolved");
//!
//! // The walk itself: every sample that passes the filters, with its
//! // process, thread, module and weight.
//! let walk = Walk::open(&file, &query, Binding::Always)?;
//! let mut cpu_ns = 0.0;
//! let samples = walk.pass(0..walk.records(), &mut |_| {}, |s| cpu_ns += s.weight)?;
//! assert_eq!(samples, r.samples);
//! assert_eq!(cpu_ns, r.weight.unwrap().total);
//! # Ok(())
//! # }
//! ```
//!
//! The layers, each module importing only those above it (the modules
//! without a link are private; their items are at the crate root):
//!
//! - `query`: what a question is ([`Query`], [`Filters`], [`Weight`], [`By`]);
//!   `error`: why it has no answer ([`QueryError`]); [`names`]: the one
//!   spelling of modules, threads, processes and unknowns;
//! - [`stream`]: a stream's records read as samples (the one reader of a
//!   record's fields, and of its weight); [`time`]: `--time` ranges
//!   (clock values, percentages, seconds from the start) resolved on a stream;
//! - `walk`: the filtered pass over a stream ([`Walk`]), bound, in parts on
//!   threads;
//! - [`file_symbols`]: a file's modules handed to `tbrw-symbols` (which
//!   translation each module gets, stored symbols, one warning per kind of
//!   unusable module file); `warning`: those warnings as values
//!   ([`Warning`]): every function that can warn takes a `&mut Vec<Warning>`
//!   and pushes to it; their `Display` names no option of a front end;
//! - [`stacks`]: samples with their call chains, aggregated per stack (the
//!   viewer exports); [`intervals`]: interval streams (MTMC tasks, winIDEA calls);
//! - [`report`]: reports by process, thread, module, event, function, line,
//!   address and their combinations, and perf's inclusive view, self and
//!   children per function, all asked with one [`report::ReportOptions`]
//!   ([`report::run`]; [`report::answer`] for the report by address made
//!   row by row); [`tasks`]:
//!   the MTMC task report; [`annotate`]: one function's instructions, lines
//!   and addresses ([`disasm`]: its bytes from the ELF file, disassembled).
//!
//! **One path per item.** The front (the question, its errors and
//! warnings, the walk) is at the crate root; the linked modules above are
//! namespaces (a report's `report::run`, the stacks' `stacks::walk`, the
//! task report's `tasks::task_report`), each item public at one path only.
//! Re-exported foreign items are those the signatures hold: [`tbrw`],
//! [`tbrw_symbols`] (and its [`Unknown`]), [`Progress`],
//! `file_symbols::Config`, `file_symbols::ModuleNote`, `stacks::IdMap`.

#![deny(missing_docs)]

pub mod annotate;
pub mod disasm;
mod error;
pub mod file_symbols;
pub mod intervals;
pub mod names;
mod query;
pub mod report;
mod sorted;
pub mod stacks;
pub mod stream;
pub mod tasks;
pub mod time;
mod walk;
mod warning;

// The crates whose types the front's signatures hold: a caller needs no
// dependency of its own on them (and gets the same versions).
pub use tbrw;
pub use tbrw_symbols;

pub use error::{GroupingGap, QueryError, WeightFields};
pub use query::{By, Filters, Query, Weight};
pub use walk::{in_parts, Binding, ProcessName, Sample, ThreadName, Walk};
pub use warning::{UnusableModule, UnusableModules, Warning, EXAMPLES};
// The symbolizer's unknown-function reasons, which `Warning` holds.
pub use tbrw_symbols::Unknown;
// The one progress type of the project's libraries (importers, queries, exports).
pub use tbrw_schema::Progress;
