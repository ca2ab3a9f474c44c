//! The one sample walk under every `tbrw` report and export.
//!
//! placeholder doc

#![deny(missing_docs)]

pub mod annotate;
pub mod error;
pub mod file_symbols;
pub mod intervals;
pub mod report;
pub mod tasks;
pub mod walk;

pub use error::QueryError;
