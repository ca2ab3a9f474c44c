//! Outputs that appear whole or not at all: the output rules of the tbrw
//! workspace, in one place, with no knowledge of the TB5 format. The
//! `tbrw` crate's writer, its C API, the `tbrw` command and the collector
//! all write through it.
//!
//! ```
//! use std::io::Write;
//! use std::path::Path;
//! use tbrw_output::{check, work_file::{WorkFile, Writing}, OutputError};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let input = dir.path().join("in.txt");
//! std::fs::write(&input, "input")?;
//! let out = dir.path().join("report.txt");
//!
//! // Before any work: the path can take a new file, and is not an input.
//! check::check_output(&out, &[&input], false, Writing::Whole)?;
//! // The file is built unnamed and appears under its name only when complete.
//! let work = WorkFile::create(&out)?;
//! work.file().write_all(b"complete")?;
//! work.file().sync_all()?;
//! work.persist()?;
//! assert_eq!(std::fs::read_to_string(&out)?, "complete");
//!
//! // It exists now: replacing it must be asked for, and an input never is.
//! let again = check::check_output(&out, &[&input], false, Writing::Whole);
//! assert!(matches!(again, Err(OutputError::Exists { link: false, .. })));
//! let input_as_output = check::check_output(&input, &[&input], true, Writing::Whole);
//! assert!(matches!(input_as_output, Err(OutputError::IsInput { .. })));
//! # let _ = Path::new("");
//! # Ok(())
//! # }
//! ```
//!
//! - [`work_file`]: what may be at an output path and what a writer does
//!   with it ([`work_file::plan`]: a link is replaced itself, never
//!   followed; one planted in a shared sticky folder is refused; a device
//!   or FIFO is written into by a stream, never replaced; the rules live in
//!   the private `target` module), a file built in a work file and put in
//!   place whole, the writer lock of a path, the removal of dead writers'
//!   work files;
//! - [`folder`]: a folder output built beside its target and put in place
//!   in one step;
//! - [`check`]: the checks of input and output paths before any work (an
//!   existing output is replaced only on request, an input never);
//! - [`crash`]: the crash points of test builds;
//! - [`OutputError`]: why an output was refused, in words that name no
//!   command-line option (a front adds its own hint).
//!
//! The rules are in the repository's `docs/FORMAT.md` ("Output paths").
//!
//! **One path per item.** The modules above are the crate's namespaces
//! (each a step of an output's life, named at the call: `check::check_output`,
//! `work_file::WorkFile`, `folder::WorkFolder`, `crash::crash_point`); each
//! item is public at one path only, and [`OutputError`] and [`plain`] are at
//! the root.
#![deny(missing_docs)]

pub mod check;
pub mod crash;
mod error;
pub mod folder;
mod target;
pub mod work_file;

pub use error::{plain, OutputError};
