//! `tbrw import perf`: Linux perf's `perf.data` (file mode from a `Read +
//! Seek`, pipe mode from a `Read`; zstd-compressed records included) into
//! TB5. `read` tells the input's format, counts it and locates damage;
//! `map` turns perf's MMAP, COMM, FORK and EXIT records into TB5
//! modules, processes and threads (JIT code and cpu modes as perf sees
//! them); `events` names the events as perf does and finds a sample's
//! event by its id; `sample` reads a sample's fields; `unwind` unwinds
//! `--call-graph dwarf` samples; `stream` opens the input and `convert` is the
//! import loop, one `handle_*` method per record kind; `layout` holds the
//! record layouts. The mapping is in docs/IMPORT.md.

mod convert;
mod events;
mod layout;
mod map;
mod read;
mod sample;
mod stream;
mod unwind;

pub use convert::{ImportStats, PerfOptions};
pub use map::UNPLACED;
pub use stream::{import_perf_file, import_perf_file_with, import_perf_pipe, import_perf_pipe_with};
