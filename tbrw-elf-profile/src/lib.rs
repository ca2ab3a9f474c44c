//! The binary profile format of the intrusive ELF sampler (the original
//! tool, whose profiles `tbrw import sampler` reads and `tbrw export
//! sampler` writes; this project's collector, `sampler`, writes it too with
//! `--format profile`). One codec for all of them: every writer's layout
//! ([`Layout`]), which one a file has ([`detect`], from the bytes only,
//! a killed run and bzip2 included), streamed reading ([`ProfileReader`])
//! and writing ([`write_profile`]). It knows no TB5: the conversions are
//! `tbrw-import`'s and `tbrw-export`'s.
//!
//! ```
//! use tbrw_elf_profile::{
//!     detect, open, write_profile, Format, FullSample, Layout, Magic, Next, ProfileHeader, ProfileReader,
//!     SampleHead, ThreadSample, Threads, VmMap,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A profile as the current writer lays it out: header, samples, maps.
//! let format = Format::new(Layout::Head);
//! let header = ProfileHeader { magic: Magic::Current, wall_us: 2000, latency_us: 5, samples: 1, maps: 1, killed: false };
//! let maps = [VmMap { address: 0x40_0000, size: 0x1000, label: "a.out".into() }];
//! let threads = vec![ThreadSample { tid: 42, pc: 0x40_0010, cputime: 1_000 }];
//! let mut bytes = Vec::new();
//! write_profile(&mut bytes, &format, &header, &maps, &[FullSample::with_value(1_000, 0.5, threads)])?;
//!
//! // Read back once, from anything that reads: the layout from the bytes.
//! let opened = open(&bytes[..], "run.prof")?;
//! let detected = detect(&opened, "run.prof", None)?;
//! assert_eq!(detected.format.layout, Layout::Head);
//! let after_header = &bytes[detected.format.layout.header_size() as usize..];
//! let mut reader = ProfileReader::new(after_header, "run.prof", Some(bytes.len() as u64), &detected);
//! let (mut head, mut block, mut seen) = (SampleHead::default(), Vec::new(), Vec::new());
//! while let Next::Sample = reader.next_sample(&mut head)? {
//!     // Threads come in bounded blocks.
//!     while reader.threads(&mut block)? == Threads::More {
//!         seen.append(&mut block);
//!     }
//!     seen.append(&mut block);
//! }
//! assert_eq!(seen, [ThreadSample { tid: 42, pc: 0x40_0010, cputime: 1_000 }]);
//! # Ok(())
//! # }
//! ```
//!
//! **One path per item:** every item is at the crate root. The modules
//! are private: `format` the format's data (layouts, header, maps,
//! samples, limits, the error; a leaf), `detect` which layout the bytes
//! are, `codec` streamed reading and the writers; `fixtures` (the example
//! profiles shipped in `examples/data/sampler/`) is public but hidden, for
//! the workspace's tests. Nothing allocates by a count read from the
//! input. Feature `bzip2` (default): compressed
//! profiles.

#![deny(missing_docs)]

mod codec;
mod detect;
// Public for the workspace's own tests and tools only (tbrw-cli's
// `make_sampler_fixtures` example and `sampler_fixtures` test, tbrw-import's
// tests), hidden from the docs and not part of the front: a feature would
// put test data in the crate's feature set, which the README calls stable.
#[doc(hidden)]
pub mod fixtures;
mod format;

pub use codec::{
    detect, detect_seekable, encode_header, is_bzip2, open, write_header, write_map, write_profile, write_sample,
    write_sample_head, write_thread, Detected, Opened, ProfileReader, PROBE_BYTES, SAY_WHICH_LAYOUT,
};
pub use format::*;
