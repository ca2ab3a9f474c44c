//! The `tbrw` command line's work, as functions: importing ELF sampler
//! profiles, MTMC task logs and winIDEA exports, exporting to VTune's CSV
//! format and back to sampler profiles, and reports. `src/main.rs` is the argument parsing around them.

#![deny(missing_docs)]

pub mod atomic;
pub mod csv;
pub mod error;
pub mod imported;
pub mod mtmc;
pub mod report;
pub mod sampler;
pub mod sampler_tb5;
pub mod winidea;

pub use error::CliError;
