//! TB5 out to the tools people use: flame graphs ([`flamegraph`]),
//! pprof ([`pprof`]), the Firefox Profiler ([`firefox`]), SVG timelines
//! ([`timeline`]), VTune's CSV ([`vtune_csv`]), the ELF sampler's profile
//! ([`elf_profile`]) and Parquet (`parquet`, feature `parquet`). Every export reads its
//! samples through `tbrw-query`'s one walk, so each gives the report's
//! answer; none sets up its own filters, fields or weights. Each writes to
//! a `Write` (or, for several files, a [`Folder`]); paths, `-` and atomic
//! outputs are the caller's.
//!
//! ```
//! // The file's and the query's types come re-exported: this crate is the
//! // only dependency an export needs.
//! use tbrw_export::{tbrw::Tb5File, ViewOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = Tb5File::open("../cli/tests/data/matrix/perf.tb5")?;
//! let mut out = Vec::new();
//! let summary = tbrw_export::pprof::write(&file, &ViewOptions::default(), &mut out, &mut Vec::new(), &mut |_| {})?;
//! assert_eq!(&out[..2], &[0x1f, 0x8b], "gzip-compressed profile.proto");
//! assert_eq!(summary.samples, 987);
//! # Ok(())
//! # }
//! ```
//!
//! Cargo features take only what is needed: `flamegraph` (the SVG; folded
//! stacks need no feature), `pprof`, `firefox` (the default features, the
//! light exports) and `parquet` (arrow-rs: opt-in).
//!
//! **One path per item.** What every export shares is at the crate root:
//! [`Export`] and its [`Output`], [`OutputKind`], [`Summary`],
//! [`FolderFiles`]; [`Folder`], [`MemoryFolder`]; [`ExportError`],
//! [`Nothing`]; and the foreign types the signatures hold ([`tbrw`],
//! [`tbrw_query`], [`ViewOptions`], [`Warning`], [`Progress`]). Each
//! export is a namespace of its own (its `write`, options and summary:
//! `pprof::write`, `flamegraph::write`), and `cli` (feature `cli`) holds
//! the command line's arguments. Every item is public at one path only.

#![deny(missing_docs)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod elf_profile;
mod error;
#[cfg(feature = "firefox")]
pub mod firefox;
pub mod flamegraph;
mod folder;
#[cfg(any(feature = "pprof", feature = "firefox"))]
mod gzip;
#[cfg(feature = "parquet")]
pub mod parquet;
#[cfg(feature = "pprof")]
pub mod pprof;
mod registry;
pub mod timeline;
pub mod vtune_csv;

// The crates whose types the exports' signatures hold (the file, the
// query's options): a caller needs no dependency of its own on them.
pub use tbrw;
pub use tbrw_query;
pub use tbrw_query::stacks::ViewOptions;
/// The warnings the exports hand to their caller: the query layer's (an export adds none).
pub use tbrw_query::Warning;

pub use error::{ExportError, Nothing};
pub use folder::{Folder, MemoryFolder};
pub use registry::{Export, FolderFiles, Output, OutputKind, Summary};
// The one progress type of the project's libraries (importers, queries, exports).
pub use tbrw_schema::Progress;
