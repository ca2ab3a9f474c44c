//! `libtbrw`: the TBRW C API (guide chapter 9, `tbrw.h`) over the `tbrw`
//! crate, as a drop-in for C and C++ collectors.
//!
//! `cargo build --release -p tbrw-sys` leaves `target/release/libtbrw.so`
//! (soname `libtbrw.so.0`) and `target/release/libtbrw.a`; the headers are
//! in `tbrw-sys/include`. A C program builds with
//! `cc prog.c -Itbrw-sys/include -Ltarget/release -ltbrw`.
//!
//! - [`ctypes`]: the C structures, with their sizes and offsets asserted;
//! - `handle`: handles, the panic boundary, error codes;
//! - `convert`: C structures to and from the model, the `get_` buffer protocol;
//! - `api`: the exported functions.
//!
//! Conventions the guide leaves open are listed in the README ("The C API").

#![deny(missing_docs)]

mod api;
mod convert;
pub mod ctypes;
mod handle;
mod messages;

pub use api::*;
