//! The TBRW guide's example programs over the `tbrw` crate: `print_tb5`,
//! `tbrw_reader`, `tbrw_writer` (guide chapter 2), and the generator of
//! the shipped `examples/data/sample.tb5`. The binaries in `src/bin` are
//! thin `main`s over these modules (`cmdline` holds what their command
//! lines share); the C versions of the three programs are in `examples/c/`.

#![deny(missing_docs)]

pub mod cmdline;
pub mod dat;
mod json;
pub mod print;
pub mod sample;
