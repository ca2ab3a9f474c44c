//! This project's vocabulary on top of TB5: what its collectors, importers,
//! reports and exports agree on, beyond the format itself. The collector
//! (`sampler`) and the importers (`tbrw-import`) write it; the query layer
//! (`tbrw-query`) and the exports (`tbrw-export`) read it; none of them
//! depends on another for it.
//!
//! ```
//! use tbrw_schema::descriptor::SampleDescriptor;
//! use tbrw_schema::fields;
//! use tbrw_schema::module_notes::{self, ModuleNote};
//!
//! // A sample stream's descriptor as every collector of this project
//! // lays it out: ip, pid, tid, time, own fields, cpu, stack id.
//! let entries = SampleDescriptor::new("ip", "time_CLOCK_MONOTONIC")
//!     .with(fields::PERIOD, 8, "period")
//!     .cpu(4)
//!     .finish(false);
//! let layout = tbrw::RecordLayout::from_entries(&entries).unwrap();
//! let period = *layout.find(fields::PERIOD, None).unwrap();
//! assert_eq!(fields::name(period.desc_type), Some("period"));
//!
//! // The one field reader: a record's field, never past its end.
//! let mut record = vec![0u8; layout.record_size() as usize];
//! record[period.offset as usize..][..8].copy_from_slice(&250_000u64.to_le_bytes());
//! assert_eq!(fields::read(&record, &period), 250_000);
//!
//! // A module's file offset and build id, as the global section holds them.
//! let note = ModuleNote { offset: Some(0x1000), build_id: Some(vec![0x9f, 0x86]) };
//! let text = module_notes::encode([(3, &note)]);
//! assert_eq!(text, "module notes\nmodule 3 offset=0x1000 build_id=9f86\n");
//! assert_eq!(module_notes::decode(&text)[&3], note);
//! ```
//!
//! # What it holds
//!
//! - [`fields`]: this project's user-defined descriptor field types
//!   (0x40xx ELF-profile imports and the collector, 0x41xx-0x43xx MTMC,
//!   0x44xx winIDEA, 0x45xx perf) with their names, and the one record
//!   field reader ([`fields::read_le`], [`fields::read`]);
//! - [`descriptor`]: named descriptor entries and the one sample descriptor
//!   ([`descriptor::SampleDescriptor`]) the perf import and the collector
//!   both build stream 0 from;
//! - [`module_notes`]: what a collector records about a module beyond
//!   `TBRW_MODULE` (file offset, build id), one writer and one reader;
//! - [`mtmc`]: the record layout of an MTMC task stream, its one encoder
//!   and decoder;
//! - [`elf_profile`]: the stream an ELF-profile import writes and its
//!   export reads back (descriptor, PMU value types, what the stream keeps
//!   of the profile);
//! - [`excerpt`](mod@excerpt): how much of an offending input a message quotes;
//! - [`Progress`] (at the root; its module is private): how long work tells
//!   its caller how far it got; the one progress type of the importers, the
//!   query layer and the exports (here because this is the lowest crate all
//!   of them depend on, and `tbrw`, the format library under the C API, has
//!   no such work).
//!
//! **One path per item.** The modules above are namespaces (a field's
//! code is `fields::STACK_ID`, MTMC's encoder `mtmc::encode`, the module
//! notes' `module_notes::decode`: the same word means another thing in
//! another module); each item is public at one path, and the re-export
//! [`tbrw`] is the format crate this crate's signatures hold.
//!
//! It depends on `tbrw` and the profile codec `tbrw-elf-profile` only, and knows nothing of importers, reports,
//! exports or the command line.

#![deny(missing_docs)]

pub mod descriptor;
pub mod elf_profile;
pub mod excerpt;
pub mod fields;
pub mod module_notes;
pub mod mtmc;
mod progress;

// The format crate whose types this crate's signatures hold.
pub use tbrw;

pub use progress::Progress;
