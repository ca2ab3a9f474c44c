//! TB5 out to the tools people use: flame graphs ([`flamegraph`]),
//! pprof ([`pprof`]), the Firefox Profiler ([`firefox`]), SVG timelines
//! ([`timeline`]), VTune's CSV ([`vtune_csv`]), the ELF sampler's profile
//! ([`elf_profile`]) and Parquet ([`parquet`]). Every export reads its
//! samples through `tbrw-query`'s one walk, so each gives the report's
//! answer; none sets up its own filters, fields or weights. Each writes to
//! a `Write` (or, for several files, a [`Folder`]); paths, `-` and atomic
//! outputs are the caller's.
//!
//! ```
//! use tbrw_query::stacks::ViewOptions;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = tbrw::Tb5File::open("../cli/tests/data/matrix/perf.tb5")?;
//! let mut out = Vec::new();
//! let summary = tbrw_export::pprof::write(&file, &ViewOptions::default(), &mut out, &mut std::io::sink(), &mut |_| {})?;
//! assert_eq!(&out[..2], &[0x1f, 0x8b], "gzip-compressed profile.proto");
//! assert_eq!(summary.samples, 987);
//! # Ok(())
//! # }
//! ```
//!
//! Cargo features take only what is needed: `flamegraph` (the SVG; folded
//! stacks need no feature), `pprof`, `firefox`, `parquet`; all on by default.

#![deny(missing_docs)]

pub mod elf_profile;
pub mod error;
#[cfg(feature = "firefox")]
pub mod firefox;
pub mod flamegraph;
pub mod folder;
#[cfg(any(feature = "pprof", feature = "firefox"))]
mod gzip;
#[cfg(feature = "parquet")]
pub mod parquet;
#[cfg(feature = "pprof")]
pub mod pprof;
pub mod timeline;
pub mod vtune_csv;

pub use error::ExportError;
pub use folder::{Folder, MemoryFolder};
