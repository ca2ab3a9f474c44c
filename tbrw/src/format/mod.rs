//! The on-disk layouts (docs/FORMAT.md) in code: this project's raw
//! structures, the codec between them and the model, and the reading
//! cursor; Intel's layout in `intel/` beside them.
//!
//! Crate-private. Imports only `model`; must not import `read`, `write` or
//! `bind`.

pub(crate) mod codec;
pub(crate) mod container;
pub(crate) mod cursor;
pub(crate) mod intel;
pub(crate) mod kind;
pub(crate) mod packed_bind;
pub(crate) mod raw;
pub(crate) mod stack_table;
