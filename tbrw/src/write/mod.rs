//! Writing: the lifecycle engine, where section bytes go, and the typestate
//! facade.
//!
//! Imports `model`, `format` and `read` (an append starts from the committed
//! file); must not import `bind`.

#[cfg(test)]
mod crash_tests;
pub mod engine;
pub(crate) mod sink;
pub mod writer;
