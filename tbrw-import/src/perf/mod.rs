//! `tbrw import perf`: Linux perf's `perf.data` (file mode from a `Read +
//! Seek`, pipe mode from a `Read`; zstd-compressed records included) into
//! TB5. [`read`] counts the input and locates damage; [`map`] turns perf's MMAP, COMM, FORK and EXIT
//! records into TB5 modules, processes and threads; [`stream`] is the
//! import loop and the record layouts. The mapping is in docs/IMPORT.md.

pub mod map;
pub mod read;
pub mod stream;

pub use stream::{import_perf_file, import_perf_pipe, ImportStats, CALLCHAIN_RECORD_SIZE};
