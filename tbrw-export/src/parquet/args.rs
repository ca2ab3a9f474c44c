//! `tbrw export parquet`'s arguments (feature `cli`): the dataset export
//! is not one file to one output, so its job is a `Job::Dataset`. Imports
//! `dataset` and `crate::cli`; neither imports it.

use std::path::PathBuf;

use super::dataset::{Mode, ParquetOptions};

/// Parquet tables for DuckDB, Spark and the like: one dataset folder for
/// many files (partitioned by host and run, docs/PARQUET.md).
#[derive(clap::Args, Debug)]
pub struct ParquetArgs {
    /// The TB5 files (one run each).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The dataset folder (created; an existing one needs --force or --append).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Replace OUTPUT if it is a dataset of this command (never one holding an input).
    #[arg(short, long, conflicts_with = "append")]
    pub force: bool,
    /// Add the runs to the dataset OUTPUT without rewriting it.
    #[arg(long)]
    pub append: bool,
    /// The host of every run (default: each file's own host name).
    #[arg(long)]
    pub hostname: Option<String>,
    /// Symbolize the samples: the functions table and function_id (see the symbol options).
    #[arg(long)]
    pub functions: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub symbols: crate::cli::SymbolArgs,
}

impl crate::cli::ExportArgs for ParquetArgs {
    fn job(self) -> Result<crate::cli::Job, crate::cli::ArgsError> {
        let mode = match (self.force, self.append) {
            (true, _) => Mode::Force,
            (_, true) => Mode::Append,
            _ => Mode::New,
        };
        let symbols = self.functions.then(|| self.symbols.options());
        let options = ParquetOptions { hostname: self.hostname, mode, symbols };
        Ok(crate::cli::Job::Dataset { files: self.files, output: self.output, options })
    }
}
