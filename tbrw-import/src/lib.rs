//! Other collectors' data into TB5. An importer reads its input from any
//! [`Read`](std::io::Read) (or `Read + Seek` where the format needs it) and
//! writes through a [`tbrw::Tb5Writer`] the caller created and closes: a
//! `perf.data` recorded by `perf record -e cpu-clock -- true`, imported in
//! file mode from a [`File`](std::fs::File) and in pipe mode (`perf record
//! -o -`) from a byte slice:
//!
//! ```
//! use std::fs::File;
//!
//! use tbrw_import::perf::{import_perf_file, import_perf_pipe};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("true.tb5");
//!
//! // File mode: perf's default perf.data, read with seeks.
//! let input = File::open("tests/data/true.perf.data")?;
//! let mut w = tbrw::Tb5Writer::create(&out)?;
//! let stats = import_perf_file(input, "true.perf.data", &mut w, ())?;
//! // The TB5 file appears at `out` only now; dropping `w` (on an error,
//! // say) leaves nothing there.
//! w.close()?;
//! assert_eq!((stats.samples, stats.events), (3, 1));
//!
//! // Pipe mode reads once, from anything that reads; progress (bytes read
//! // so far) goes to a closure.
//! let piped: Vec<u8> = std::fs::read("tests/data/true.pipe.perf.data")?;
//! let mut w = tbrw::Tb5Writer::create(&out)?;
//! let mut read = 0;
//! let stats = import_perf_pipe(&piped[..], "-", &mut w, |so_far| read = so_far)?;
//! w.close()?;
//! assert_eq!((stats.samples, read), (3, piped.len() as u64));
//!
//! let file = tbrw::Tb5File::open(&out)?;
//! assert_eq!(file.stream_count(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! The name given with each input names it in errors (and where the
//! format's meaning needs it, below); this crate opens no path of its own,
//! knows nothing of `-` for standard input, and keeps data only in unnamed
//! temporary files. Importers report how far they got through
//! [`Progress`] (a closure, or `()` for nothing) and fail with an
//! [`ImportError`] naming the input and the line (and column), record or
//! byte offset.
//!
//! # The importers
//!
//! - [`perf`] (feature `perf`): Linux `perf.data`,
//!   [`import_perf_file`](perf::import_perf_file) over `Read + Seek` (a
//!   pipe-format or version 1 file told by its header; a damaged file's
//!   error names the record and its offset) and
//!   [`import_perf_pipe`](perf::import_perf_pipe) over `Read`. Samples go
//!   to the file in batches as they are read, counted per event as perf
//!   counts them; call chains, `--call-graph dwarf` samples unwound with
//!   `tbrw-symbols`, wait in a temporary file.
//! - [`elf_profile`]: the intrusive ELF sampler's binary profiles (read
//!   through `tbrw-elf-profile`):
//!   [`import_profile`](elf_profile::import_profile) over `Read + Seek`
//!   probes a plain profile whole to find its layout, then reads it from
//!   its start; [`import_profile_stream`](elf_profile::import_profile_stream)
//!   over `Read` decides from the first MiB. bzip2 (feature `bzip2`) is
//!   recognised by content and read once either way.
//! - [`mtmc`]: MTMC temporal profiler task logs,
//!   [`import_mtmc`](mtmc::import_mtmc) over `Read + Seek`: every line is
//!   checked in a first pass, then the input is rewound and the records
//!   written. A log named `mtmc_raw_<address>` gives the process id, and
//!   the name is the process's name.
//! - [`winidea`]: winIDEA profiler exports,
//!   [`import_winidea`](winidea::import_winidea): the Text1 export over
//!   `Read`, and its `.BIN` timeline, when there is one, over `Read + Seek`
//!   (read twice when its layout is detected). Finding the `.BIN` next to
//!   the export is the caller's business.
//!
//! What the imports write beyond the format (field types, the sample
//! descriptor, module notes, the MTMC record layout, the ELF-profile
//! import's stream) is `tbrw-schema`'s, the profile format's codec
//! `tbrw-elf-profile`'s; both are re-exported, with `tbrw`, since the
//! importers' signatures hold their types.
//!
//! **One path per item.** [`ImportError`], [`Place`] and [`Progress`] are
//! at the crate root; each importer is a namespace ([`perf`],
//! [`elf_profile`], [`mtmc`], [`winidea`]) whose items are public there
//! only (their submodules are private). `globals` (the global sections
//! every import writes alike) is public but hidden, for the workspace's
//! tests and benchmarks.
//!
//! This crate knows nothing of reports, exports or the command line.

#![deny(missing_docs)]

pub mod elf_profile;
mod error;
// Public for the workspace's tests and benchmarks only (tbrw-cli's tests
// and benches build TB5 inputs with the global sections every import
// writes); hidden from the docs, not part of the front.
#[doc(hidden)]
pub mod globals;
mod lines;
pub mod mtmc;
#[cfg(feature = "perf")]
pub mod perf;
mod progress;
pub mod winidea;

// The crates whose types the importers' signatures hold (the writer; the
// perf import's symbol configuration): a caller needs no dependency of its
// own on them.
pub use tbrw;
pub use tbrw_elf_profile;
pub use tbrw_schema;
#[cfg(feature = "perf")]
pub use tbrw_symbols;

pub use error::{excerpt, ImportError, Place};
pub use progress::Progress;
