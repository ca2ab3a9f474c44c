//! `libtbrw`: the TBRW C API (guide chapter 9, `tbrw.h`) over the `tbrw`
//! crate, as a drop-in for C and C++ collectors.
//!
//! `cargo build --release -p tbrw-sys` leaves `target/release/libtbrw.so`
//! (soname `libtbrw.so.0`, with a `libtbrw.so.0` link beside it made by
//! `build.rs`) and `target/release/libtbrw.a`; the headers are in
//! `tbrw-sys/include`. `make -C tbrw-sys install PREFIX=...` installs the
//! library, the headers and `tbrw.pc` (see the `Makefile`).
//!
//! - [`ctypes`]: the C structures, with their sizes and offsets asserted;
//! - `handle`: handles, the panic boundary, error codes;
//! - `convert`: C structures and strings to and from the model, the `get_`
//!   buffer protocol;
//! - `messages`: the text of each error code;
//! - `callback`: which calling convention a callback argument follows (the
//!   function, or a pointer to a function pointer as Intel's headers pass);
//! - `api`: the exported functions, one module per group of chapter 9.
//!
//! Conventions the guide leaves open are listed in the README ("The C API").

#![deny(missing_docs)]

mod api;
mod callback;
mod convert;
pub mod ctypes;
mod handle;
mod messages;

pub use api::*;
