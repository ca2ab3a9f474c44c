//! What `tbrw report` computes, chosen once ([`answer`]): a [`Report`],
//! or the rows of a report by address made one at a time as they are
//! written ([`Answer::Addresses`]), and the writers of either, which write
//! the same text and JSON as [`super::write_text`] and
//! [`super::write_json`] write for the whole report.
//!
//! Imports the report's modules; `mod.rs` re-exports it.

use std::cell::RefCell;
use std::io::Write;
use tbrw_schema::Progress;

use serde::Serialize;

use super::addresses::AddressRows;
use super::{children, functions, groupings, samples, By, Key, Report, ReportOptions, Row, Weight, WeightSum};

/// What a report computed.
pub enum Answer {
    /// A report, its rows made.
    Report(Report),
    /// A report by address, its rows made as they are taken.
    Addresses(Box<AddressRows>),
}

impl Answer {
    /// The report, every row made.
    pub fn into_report(self) -> Report {
        match self {
            Answer::Report(r) => r,
            Answer::Addresses(a) => (*a).into_report(),
        }
    }

    /// Writes it as [`super::write_text`] writes the report.
    pub fn write_text(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Answer::Report(r) => super::write_text(r, out),
            Answer::Addresses(a) => {
                let header = a.header().clone();
                writeln!(out, "{}", super::heading(&header, header.by.name(), ""))?;
                super::write_rows(&header.weight, header.by.name(), a.rows(), out)
            }
        }
    }

    /// Writes it as [`super::write_json`] writes the report: the same bytes.
    pub fn write_json(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Answer::Report(r) => super::write_json(r, out),
            Answer::Addresses(a) => {
                let header = a.header().clone();
                let rows = Lazy(RefCell::new(Some(a.rows())));
                serde_json::to_writer(&mut *out, &Shape::of(&header, rows))?;
                writeln!(out)
            }
        }
    }
}

/// A [`Report`]'s JSON with its rows from elsewhere: the fields in the
/// order, and left out when absent, as the derived serializer of
/// [`Report`] does (a test compares the two).
#[derive(Serialize)]
struct Shape<'a, R: Serialize> {
    file: &'a str,
    stream: u32,
    by: By,
    records: u64,
    samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight: Option<&'a WeightSum>,
    rows: R,
    totals: &'a [Row],
    #[serde(skip_serializing_if = "Option::is_none")]
    auto: Option<&'a str>,
}

impl<'a, R: Serialize> Shape<'a, R> {
    fn of(r: &'a Report, rows: R) -> Shape<'a, R> {
        Shape {
            file: &r.file,
            stream: r.stream,
            by: r.by,
            records: r.records,
            samples: r.samples,
            weight: r.weight.as_ref(),
            rows,
            totals: &r.totals,
            auto: r.auto.as_deref(),
        }
    }
}

/// Rows serialized as a sequence, each made as the serializer takes it.
struct Lazy<I>(RefCell<Option<I>>);

impl<I: Iterator<Item = Row>> Serialize for Lazy<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rows = self.0.borrow_mut().take();
        s.collect_seq(rows.into_iter().flatten())
    }
}

/// The report `opts` asks (see [`ReportOptions`]), chosen here only:
/// perf's inclusive view (`children::report`) when `opts.children`; an
/// MTMC task stream gives the task report for `auto` (and `task` works
/// only there); a grouping naming function, line or address, or several
/// groupings, gives the report through the symbolizer
/// (`functions::answer`: a report by address as its rows, made as they
/// are written); one grouping of process, thread, module or event gives
/// the sample counts (`samples::report`). Warnings about modules without
/// symbols go to `warn`; `progress` gets records done.
pub fn answer(
    file: &tbrw::Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<Answer, crate::QueryError> {
    if opts.children {
        return children::report(file, opts, warn, progress).map(Answer::Report);
    }
    let n = opts.query.stream;
    let s = samples::stream(file, n)?;
    let is_tasks = tbrw_schema::mtmc::counters_of(&s.descriptor()?.unwrap_or_default(), file).is_some();
    let first = opts.grouping();
    if opts.by.len() > 1 || first.symbolic() {
        return functions::answer(file, opts, warn, progress);
    }
    let report = match first {
        By::Auto if !is_tasks => auto(file, opts, warn, progress),
        By::Auto | By::Task if is_tasks => {
            if opts.top == Some(0) {
                return Err(crate::QueryError::NoRowsAsked { file: file.path().display().to_string(), stream: n });
            }
            if opts.query.weight != Weight::Samples || opts.query.filters.any() {
                return Err(crate::QueryError::TaskReportFiltered {
                    file: file.path().display().to_string(),
                    stream: n,
                });
            }
            crate::tasks::task_report(file, n, opts.top)
        }
        By::Task => {
            let mut works = groupings(file, n)?;
            works.retain(|b| *b != By::Task);
            Err(crate::QueryError::GroupingUnsupported {
                file: file.path().display().to_string(),
                stream: n,
                by: By::Task,
                why: crate::error::GroupingGap::NotTaskStream,
                works,
            })
        }
        b => samples::report(file, opts, b, progress),
    };
    report.map(Answer::Report)
}

/// `--by auto` on a sample stream: by function when the modules holding
/// most of the samples (more than half) can be symbolized (their files
/// found with function symbols, symbols `tbrw symbolize` stored, or
/// kallsyms for the kernel), as perf reports by symbol; else by module;
/// streams that cannot be bound as `resolve_by` says. The
/// report's [`Report::auto`] says which and why.
fn auto(
    file: &tbrw::Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<Report, crate::QueryError> {
    let by = samples::resolve_by(file, opts.query.stream, By::Auto)?;
    if by != By::Module {
        return samples::report(file, opts, by, progress);
    }
    // Every module's count (no --top yet): what the choice weighs.
    let mut modules = samples::report(file, &ReportOptions { top: None, ..opts.clone() }, by, progress)?;
    let table = crate::stream::modules(file)?;
    let mut syms = crate::file_symbols::FileSymbols::with_config(
        file,
        &table,
        tbrw_symbols::Config { lines: false, ..opts.symbols.config() },
    )?;
    let named: u64 = modules
        .rows
        .iter()
        .filter(|r| match r.key {
            Key::Module { index, .. } => syms.can_symbolize(index),
            _ => false,
        })
        .map(|r| r.samples)
        .sum();
    if opts.top == Some(0) {
        return Err(crate::QueryError::NoRowsAsked {
            file: file.path().display().to_string(),
            stream: opts.query.stream,
        });
    }
    if named * 2 > modules.samples {
        let why = format!("{named} of {} samples are in modules whose symbols were found", modules.samples);
        let by_function = ReportOptions { by: vec![By::Function], ..opts.clone() };
        let mut r = functions::report(file, &by_function, warn, &mut |_| {})?;
        r.auto = Some(why);
        return Ok(r);
    }
    if let Some(k) = opts.top {
        modules.rows.truncate(k);
    }
    modules.auto = Some(format!(
        "{named} of {} samples are in modules whose symbols were found; a report by function names what it can",
        modules.samples
    ));
    Ok(modules)
}
