//! Other collectors' data into TB5, and what this project adds to the
//! format:
//!
//! - [`elf_profile`]: the intrusive ELF sampler's binary profiles (the one
//!   codec, read and write) and their import;
//! - [`mtmc`]: MTMC temporal profiler task logs;
//! - [`winidea`]: winIDEA profiler exports (Text1 and the `.BIN` timeline);
//! - [`perf`]: Linux `perf.data` files (feature `perf`);
//! - [`fields`]: this project's user-defined descriptor field types
//!   (0x40xx, 0x41xx-0x43xx, 0x44xx, 0x45xx) and the one record field reader;
//! - [`module_notes`]: what a collector records about a module beyond
//!   `TBRW_MODULE` (file offset, build id), one codec;
//! - [`globals`]: descriptor entries and global sections every import
//!   writes alike.
//!
//! Importers report how far they got through [`Progress`] and fail with an
//! [`ImportError`] naming the input and the line, record or byte offset.
//! This crate knows nothing of reports, exports or the command line.

#![deny(missing_docs)]

pub mod elf_profile;
pub mod error;
pub mod fields;
pub mod globals;
pub mod lines;
pub mod module_notes;
pub mod mtmc;
#[cfg(feature = "perf")]
pub mod perf;
pub mod progress;
pub mod winidea;

pub use error::{excerpt, ImportError, Place};
pub use progress::Progress;
