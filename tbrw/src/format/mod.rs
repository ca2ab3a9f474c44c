//! This project's on-disk layout (docs/FORMAT.md) in code: the raw
//! structures, the codec between them and the model, and the reading cursor.
//!
//! Crate-private. Imports only `model`; must not import `read`, `write` or
//! `bind`.

pub(crate) mod codec;
pub(crate) mod container;
pub(crate) mod cursor;
pub(crate) mod kind;
pub(crate) mod packed_bind;
pub(crate) mod raw;
pub(crate) mod stack_table;
