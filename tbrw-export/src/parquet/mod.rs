//! `tbrw export parquet FILE... -o DIR`: TB5 files as a star schema of
//! Parquet tables that DuckDB, Spark, Trino or DataFusion read in place,
//! partitioned hive-style by host and run (`DIR/TABLE/host=H/run=R/TABLE.parquet`).
//! The front: [`export_parquet`] exports files into a dataset folder by the
//! folder rules (a new dataset, one replaced, runs added, as [`Mode`] says;
//! built beside it and put in place whole; [`DatasetError`]);
//! [`export_run`] writes one run's files into a [`Folder`]. The private
//! submodules do the work: `schema` holds the tables' columns and the batch
//! writer, `streams` turns streams into `samples` and `intervals` rows
//! (`sort` puts the records of a stream out of time order in it), `tables`
//! writes the small tables and the run's `stacks`, `dataset` the folder.
//! The schema and example queries: docs/PARQUET.md.

#[cfg(feature = "cli")]
mod args;
mod dataset;
mod schema;
mod sort;
mod streams;
mod tables;

// The front of the Parquet export, each item at its one public path (the
// submodules are private: the tables' columns, the sort, the rows, the
// small tables are how it is done, not what a caller asks for).
#[cfg(feature = "cli")]
pub use args::ParquetArgs;
pub use dataset::{export_parquet, DatasetError, Mode, ParquetOptions, Run};

use tbrw_schema::Progress;

use crate::error::ExportError;
use crate::folder::Folder;
use schema::TableWriter;
use streams::{Destination, Functions, Symbols};
use tbrw_query::file_symbols::{FileSymbols, SymbolOptions};

/// One run to export: where it came from and its partition.
#[derive(Clone, Debug)]
pub struct RunSource<'a> {
    /// The TB5 file's name, as the `runs` table records it (an absolute path, say).
    pub source_file: &'a str,
    /// Its size in bytes.
    pub source_bytes: u64,
    /// The host's name as the `runs` table records it (default: the file's own).
    pub host_name: Option<&'a str>,
    /// The host partition value (the host name as a path component:
    /// letters, digits, `.`, `-`, `_` kept, anything else `_`).
    pub host: &'a str,
    /// The run partition value, unique in the dataset for this host.
    pub run: &'a str,
}

/// The rows one run added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunRows {
    /// Rows in `samples`.
    pub samples: u64,
    /// Rows in `intervals`.
    pub intervals: u64,
    /// Rows in `functions`.
    pub functions: u64,
}

/// A partition value as a path component: letters, digits, `.`, `-` and
/// `_` kept, anything else `_`; no leading `.` or `_` (engines take those
/// names for hidden files); `unknown` when nothing is left.
pub(crate) fn partition_value(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' })
        .collect();
    let v = v.trim_start_matches(['.', '_']);
    if v.is_empty() {
        "unknown".to_owned()
    } else {
        v.to_owned()
    }
}

/// The file of `table` in partition (`host`, `run`) of a dataset:
/// `host=H/run=R/TABLE.parquet`. Every table of a run is in the run's one
/// folder, so that a run is added to a dataset by one rename, whole.
pub(crate) fn table_file(table: &str, host: &str, run: &str) -> String {
    format!("host={host}/run={run}/{table}.parquet")
}

/// The host name a file records (its software section), if any.
pub(crate) fn host_name(file: &tbrw::Tb5File) -> Result<Option<String>, ExportError> {
    tables::host_name(file)
}

/// Records sorted in memory at a time: [`sort::CHUNK_RECORDS`], or the
/// positive number in [`sort::CHUNK_VAR`].
pub(crate) fn sort_chunk() -> Result<usize, ExportError> {
    match std::env::var(sort::CHUNK_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(sort::CHUNK_RECORDS),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ExportError::Environment { var: sort::CHUNK_VAR, value: v }),
        },
        Err(std::env::VarError::NotUnicode(v)) => {
            Err(ExportError::Environment { var: sort::CHUNK_VAR, value: v.to_string_lossy().into_owned() })
        }
    }
}

/// Writes the tables of one run of `file` into `folder` (every table's
/// file of partition `run.host`/`run.run`), symbolizing samples when
/// `symbols` says where to look. `progress` gets records done; symbolizer
/// warnings go to `warn`.
pub fn export_run(
    file: &tbrw::Tb5File,
    run: &RunSource<'_>,
    folder: &mut dyn Folder,
    symbols: Option<&SymbolOptions>,
    progress: &mut dyn Progress,
    warn: &mut Vec<tbrw_query::Warning>,
) -> Result<RunRows, ExportError> {
    let sort_chunk = sort_chunk()?;
    let mut open = |t: &'static str, cols: &'static [schema::Column]| -> Result<TableWriter, ExportError> {
        let name = table_file(t, run.host, run.run);
        let w = folder.create(&name).map_err(|e| ExportError::write(&name, e))?;
        TableWriter::new(&name, w, cols)
    };
    let mut samples = open("samples", schema::SAMPLES)?;
    let mut intervals = open("intervals", schema::INTERVALS)?;
    let mut functions = Functions::default();
    let mut stacks = streams::RunStacks::default();
    let modules = tbrw_query::stream::modules(file)?;
    let mut first_last: (Option<i64>, Option<i64>) = (None, None);
    for n in 0..file.stream_count() {
        let written = match streams::destination(file, n)? {
            Destination::Samples => {
                let mut sy = match symbols {
                    Some(o) => Some(Symbols {
                        file: FileSymbols::new(file, &modules, o)?.verbose(o.verbose),
                        functions: &mut functions,
                        inline: !o.no_inline,
                        warn: &mut *warn,
                    }),
                    None => None,
                };
                let written =
                    streams::write_samples(file, n, &mut samples, sy.as_mut(), sort_chunk, &mut stacks, progress);
                if let Some(sy) = sy.as_mut() {
                    sy.file.take_warnings(sy.warn);
                }
                written?
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
    let mut t = open("stacks", schema::STACKS)?;
    tables::write_stacks(&stacks, &mut t)?;
    t.close()?;
    let mut t = open("functions", schema::FUNCTIONS)?;
    tables::write_functions(&functions, &mut t)?;
    let function_rows = t.close()?;
    let mut t = open("runs", schema::RUNS)?;
    let row = tables::RunRow {
        host_name: run.host_name,
        source_file: run.source_file,
        source_bytes: run.source_bytes,
        import_kind: tables::import_kind(file)?,
        first_last_ns: first_last,
        samples: sample_rows,
        intervals: interval_rows,
    };
    tables::write_run(file, &row, &mut t)?;
    t.close()?;
    Ok(RunRows { samples: sample_rows, intervals: interval_rows, functions: function_rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_plain_path_components() {
        assert_eq!(partition_value("perfbox"), "perfbox");
        assert_eq!(partition_value("a b/c=d"), "a_b_c_d");
        assert_eq!(partition_value("._hidden"), "hidden");
        assert_eq!(partition_value(""), "unknown");
        assert_eq!(partition_value("..."), "unknown");
    }
}
