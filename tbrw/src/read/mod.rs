//! Reading committed files: the memory-mapped [`Tb5File`] and its indexed
//! directory, the module and process tables, the streams with their records,
//! the stored-or-computed bind view, `verify` and the summary.
//!
//! Imports `model` and `format`; must not import `write` or `bind` (the
//! bind view holds a computed bind without knowing how it was computed).
//! Inside, `file.rs` (the mapping and its directory) imports none of the
//! others: the tables, the streams and `verify` add their methods to
//! [`Tb5File`] in their own files, so that no module imports one that
//! imports it (`cli/tests/layout.rs`).

mod bind_view;
mod checks;
mod data_section;
mod directory;
mod file;
pub(crate) mod intel;
mod stack_table;
mod stream;
pub mod summary;
mod tables;
mod verify;
mod verify_intel;

pub use bind_view::{BindTables, BindView, MemoryBind, PackedData, StoredData};
pub use data_section::DataSection;
pub use file::{SharedBytes, Tb5File};
pub use stack_table::StackTableView;
pub use stream::{LegacySamples, StreamReader};
pub use tables::{ModuleTable, ProcessTable};
