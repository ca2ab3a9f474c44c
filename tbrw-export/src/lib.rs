//! TB5 out to the tools people use.
//!
//! placeholder

#![deny(missing_docs)]

pub mod elf_profile;
pub mod error;
#[cfg(feature = "firefox")]
pub mod firefox;
pub mod flamegraph;
pub mod folder;
#[cfg(feature = "parquet")]
pub mod parquet;
#[cfg(feature = "pprof")]
pub mod pprof;
pub mod timeline;
pub mod vtune_csv;

pub use error::ExportError;
pub use folder::{Folder, MemoryFolder};
