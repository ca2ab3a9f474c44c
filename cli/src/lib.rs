//! The `tbrw` command line's work, as functions: importing ELF sampler
//! profiles, MTMC task logs and winIDEA exports, exporting to VTune's CSV
//! format, back to sampler profiles, to viewers (flame graphs, pprof,
//! the Firefox Profiler, timelines) and to Parquet datasets, reports, and
//! symbols stored in the file ([`symbolize`]). [`commands`] is each
//! subcommand with its output; `src/main.rs` is the argument parsing and
//! progress bars around them.

#![deny(missing_docs)]

pub mod annotate;
pub mod atomic;
pub mod commands;
pub mod csv;
pub mod error;
pub mod fields;
pub mod id_map;
pub mod imported;
pub mod lines;
pub mod mtmc;
pub mod parquet;
pub mod perf;
pub mod report;
pub mod sampler;
pub mod symbolize;
pub mod symbols;
pub mod view;
pub mod winidea;

pub use error::CliError;
