//! Reading committed files: the memory-mapped file, its tables and streams,
//! `verify` and the summary.
//!
//! Imports `model` and `format`; must not import `write` or `bind`.

pub mod reader;
pub mod summary;
pub(crate) mod verify;
