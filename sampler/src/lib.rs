//! `sampler`: an intrusive sampling profiler for ELF programs on Linux.
//! It runs a command under ptrace, stops all of its threads at every tick
//! to read their program counters, CPU times and CPUs (with an optional
//! PMU value such as power), and records straight to a TB5 file through
//! the `tbrw` crate, or to the original tool's own binary profile.
//! How it works and what it costs: docs/SAMPLER.md.
//!
//! The layers, bottom up:
//! - [`sys`]: system-call wrappers (ptrace, wait, clocks, signals, fork);
//! - [`procfs`], [`host`], [`pmu`]: what is read from `/proc`, `/sys` and `uname`;
//! - [`buildid`]: the GNU build id of each mapped file; [`images`]: the
//!   vDSO's image, read from memory, and its symbols;
//! - [`callstack`]: a stopped thread's callers, by frame pointers or DWARF CFI;
//! - [`sigframe`]: where a thread stopped at a signal handler's entry was running;
//! - [`history`]: what a run gives back (samples, processes, threads,
//!   modules, figures); `thread`: the per-thread state and CPU-time
//!   accounting of the loop;
//! - [`tracer`]: the sampling loop; it knows no output format;
//! - [`tb5`], [`elf_profile`]: the two outputs (TB5, and the ELF profile format of `--format profile`);
//! - [`cli`]: the command line.

#![deny(missing_docs)]

pub mod buildid;
pub mod callstack;
pub mod cli;
pub mod elf_profile;
pub mod history;
pub mod host;
pub mod images;
pub mod pmu;
pub mod procfs;
pub mod sigframe;
pub mod sys;
pub mod tb5;
mod thread;
pub mod tracer;
