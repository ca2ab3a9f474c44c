//! The model: the public value types of a TB5 file, free of any byte layout
//! except the legacy sample record's (which the guide fixes in C).
//!
//! Must not import `format`, `read`, `write` or `bind`: everything else is
//! built on these types.

pub mod codes;
pub mod descriptor;
pub mod error;
pub mod event;
pub mod hardware;
pub mod layout;
pub mod module;
pub mod process;
pub mod sample;
pub mod section;
pub mod software;
pub mod stack;
pub mod stream;
pub mod strings;
pub mod version;
