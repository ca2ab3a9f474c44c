//! Reading committed files: the memory-mapped [`Tb5File`] and its indexed
//! directory, the module and process tables, the streams with their records,
//! the stored-or-computed bind view, `verify` and the summary.
//!
//! Imports `model` and `format`; must not import `write` or `bind` (the
//! bind view holds a computed bind without knowing how it was computed).

mod bind_view;
mod directory;
mod file;
mod stack_table;
mod stream;
pub mod summary;
mod tables;
mod verify;

pub use bind_view::{BindTables, BindView, MemoryBind, PackedData, StoredData};
pub use file::{SharedBytes, Tb5File};
pub use stack_table::StackTableView;
pub use stream::{DataSection, LegacySamples, StreamReader};
pub use tables::{ModuleTable, ProcessTable};
