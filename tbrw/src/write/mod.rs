//! Writing: the lifecycle engine (its rules in `engine`, the content of
//! open sections in `engine::content`), the output with its placement,
//! queue, commit and cleanup (`output`, the only code that touches the
//! output file), what a commit waits for (`durability`), the section sinks, the work file a new output is built in
//! (`work_file`: the `tbrw-output` crate's, re-exported), the string interner and the typestate
//! facade (`writer`); Intel's layout, what a commit writes by default
//! (`intel`), and any readable file rewritten in it (`convert`).
//!
//! Imports `model`, `format` and `read` (an append starts from the
//! committed file); must not import `bind`.

mod convert;
#[cfg(test)]
mod crash_tests;
mod durability;
pub mod engine;
pub(crate) mod intel;
mod interner;
mod layout;
pub(crate) mod output;
pub(crate) mod sink;
mod stack_table;
mod stored_symbols;
/// Work files, writer locks and the rules of output paths: the
/// `tbrw-output` crate's (re-exported for the writers built on this one).
pub use tbrw_output::work_file;
pub mod writer;

pub use convert::convert;
pub use durability::Durability;
pub use layout::WriteLayout;
pub use stack_table::StackTable;
