//! The one sample walk under every `tbrw` report and export.
//!
//! placeholder doc

#![deny(missing_docs)]

pub mod annotate;
pub mod error;
pub mod file_symbols;
pub mod intervals;
pub mod names;
pub mod query;
pub mod report;
pub mod stacks;
pub mod stream;
pub mod tasks;
pub mod walk;

pub use error::QueryError;
pub use query::{Filters, Query, Weight};
pub use walk::{Binding, Sample, Walk};
