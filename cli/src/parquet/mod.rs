//! `tbrw export parquet FILE... -o DIR`: TB5 files as a star schema of
//! Parquet tables that DuckDB, Spark, Trino or DataFusion read in place,
//! partitioned hive-style by host and run (`DIR/TABLE/host=H/run=R/TABLE.parquet`).
//! [`schema`] holds the tables' columns and the batch writer, [`streams`]
//! turns streams into `samples` and `intervals` rows ([`sort`] puts the
//! records of a stream out of time order in it), [`tables`] writes the
//! small tables, [`dataset`] the folder rules (`--force`, `--append`,
//! staging, run ids). The schema and example queries: docs/PARQUET.md.

pub mod dataset;
pub mod schema;
pub mod sort;
pub mod streams;
pub mod tables;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use dataset::Mode;

use crate::error::CliError;
use crate::symbols::{FileSymbols, SymbolOptions};
use schema::TableWriter;
use streams::{Destination, Functions, Symbols};

/// Options of the export.
#[derive(Clone, Debug, Default)]
pub struct ParquetOptions {
    /// The host of every run (default: each file's own host name).
    pub hostname: Option<String>,
    /// New folder, `--force` or `--append`.
    pub mode: Mode,
    /// Symbolize samples (the `functions` table and `function_id`), with these options.
    pub symbols: Option<SymbolOptions>,
}

/// One exported run.
#[derive(Clone, Debug)]
pub struct Run {
    /// The TB5 file.
    pub file: PathBuf,
    /// Its host partition value.
    pub host: String,
    /// Its run id.
    pub run: String,
    /// Rows in `samples`.
    pub samples: u64,
    /// Rows in `intervals`.
    pub intervals: u64,
    /// Rows in `functions`.
    pub functions: u64,
}

/// Exports `files` to the dataset `dir`. `progress` gets records done in the
/// file being exported; symbolizer warnings go to `warn`. Nothing is left in
/// `dir` (nor next to it) when it fails.
pub fn export_parquet(
    files: &[PathBuf],
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(u64),
    warn: &mut dyn Write,
) -> Result<Vec<Run>, CliError> {
    if files.is_empty() {
        return Err(CliError::msg("no TB5 file to export"));
    }
    for f in files {
        crate::commands::check_input(f, "a TB5 file")?;
    }
    dataset::check(dir, files, opts.mode)?;
    let sort_chunk = sort_chunk()?;
    // Every file is opened and checked before anything is written.
    let opened: Vec<tbrw::Tb5File> = files.iter().map(|f| crate::commands::open(f)).collect::<Result<_, _>>()?;
    let mut staging = dataset::Staging::create(dir, opts.mode)?;
    let mut runs = Vec::new();
    for (path, file) in files.iter().zip(&opened) {
        runs.push(export_run(path, file, &mut staging, opts, sort_chunk, progress, warn)?);
    }
    staging.commit()?;
    Ok(runs)
}

/// Records sorted in memory at a time: [`sort::CHUNK_RECORDS`], or the
/// positive number in [`sort::CHUNK_VAR`].
fn sort_chunk() -> Result<usize, CliError> {
    match std::env::var(sort::CHUNK_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(sort::CHUNK_RECORDS),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(CliError::msg(format!("{}={v:?}: not a positive number of records", sort::CHUNK_VAR))),
        },
        Err(e) => Err(CliError::msg(format!("{}: {e}", sort::CHUNK_VAR))),
    }
}

fn export_run(
    path: &Path,
    file: &tbrw::Tb5File,
    staging: &mut dataset::Staging,
    opts: &ParquetOptions,
    sort_chunk: usize,
    progress: &mut dyn FnMut(u64),
    warn: &mut dyn Write,
) -> Result<Run, CliError> {
    let recorded = tables::host_name(file)?;
    let host_name = opts.hostname.clone().or(recorded);
    let host = dataset::partition_value(host_name.as_deref().unwrap_or(""));
    let stem = path.file_stem().map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
    let run = staging.run_id(&host, &stem);
    let mut open = |t: &'static str, cols: &'static [schema::Column]| -> Result<TableWriter, CliError> {
        TableWriter::create(&staging.table_file(t, &host, &run)?, cols)
    };
    let mut samples = open("samples", schema::SAMPLES)?;
    let mut intervals = open("intervals", schema::INTERVALS)?;
    let mut functions = Functions::default();
    let modules = crate::report::samples::resolved_modules(file)?;
    let mut first_last: (Option<i64>, Option<i64>) = (None, None);
    for n in 0..file.stream_count() {
        let written = match streams::destination(file, n)? {
            Destination::Samples => {
                let mut sy = match &opts.symbols {
                    Some(o) => Some(Symbols {
                        file: FileSymbols::new(file, &modules, o)?,
                        functions: &mut functions,
                        warn: &mut *warn,
                    }),
                    None => None,
                };
                streams::write_samples(file, n, &mut samples, sy.as_mut(), sort_chunk, progress)?
            }
            Destination::Intervals => streams::write_intervals(file, n, &mut intervals, progress)?,
            Destination::Nothing => continue,
        };
        first_last.0 = match (first_last.0, written.first_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        first_last.1 = match (first_last.1, written.last_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    let sample_rows = samples.close()?;
    let interval_rows = intervals.close()?;
    let mut t = open("modules", schema::MODULES)?;
    tables::write_modules(file, &mut t)?;
    t.close()?;
    let (mut p, mut th) = (open("processes", schema::PROCESSES)?, open("threads", schema::THREADS)?);
    tables::write_processes(file, &mut p, &mut th)?;
    p.close()?;
    th.close()?;
    let mut t = open("events", schema::EVENTS)?;
    tables::write_events(file, &mut t)?;
    t.close()?;
    let mut t = open("functions", schema::FUNCTIONS)?;
    tables::write_functions(&functions, &mut t)?;
    let function_rows = t.close()?;
    let source = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut t = open("runs", schema::RUNS)?;
    let row = tables::RunRow {
        host_name: host_name.as_deref(),
        source_file: &source.display().to_string(),
        source_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        import_kind: tables::import_kind(file)?,
        first_last_ns: first_last,
        samples: sample_rows,
        intervals: interval_rows,
    };
    tables::write_run(file, &row, &mut t)?;
    t.close()?;
    Ok(Run {
        file: path.to_path_buf(),
        host,
        run,
        samples: sample_rows,
        intervals: interval_rows,
        functions: function_rows,
    })
}
