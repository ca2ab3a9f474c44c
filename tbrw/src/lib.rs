//! Read and write TB5 files, the sampling-profile format of the VTune
//! TBRW reader/writer API (revision 2.3).
//!
//! Write a file with the typed builders of [`Tb5Writer`] (the guide's
//! open → write sections → done → close lifecycle, checked at compile time),
//! and read it back with the memory-mapped [`Tb5File`]:
//!
//! ```
//! use tbrw::*;
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("run.tb5");
//! let mut w = Tb5Writer::create(&path)?;
//! w.write_version_info(&VersionInfo {
//!     sampling_driver_version: UNKNOWN_DRIVER_VERSION,
//!     bind_version: 0,
//!     sample_file_version: MIN_SAMPLE_FILE_VERSION,
//! })?;
//! w.write_modules(&[Module {
//!     associated_pid: 0x1000,
//!     flags: ModuleFlags::LOADED | ModuleFlags::IS_EXE,
//!     load_address: 0x400000,
//!     length: 0x2000,
//!     unload_tsc: NEVER_UNLOADED,
//!     path: Some("/usr/bin/app".into()),
//!     name: Some("app".into()),
//!     ..Default::default()
//! }])?;
//!
//! // Stream 0: legacy PC samples, each followed by its TSC (guide 6.9, 6.10).
//! let mut stream = w
//!     .stream(0)?
//!     .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })?
//!     .data_descriptor(&legacy_descriptor())?;
//! stream.events(&[Event { id: 0, name: Some("CPU_CLK_UNHALTED".into()), sav: 2_000_000, ..Default::default() }])?;
//! let mut data = stream.data()?;
//! for i in 0..100u32 {
//!     let mut pc = SampleRecordPc::default();
//!     pc.set_ia32(0x400000 + i * 16, 0x246, CodeDescriptor::default());
//!     pc.pid_rec_index = 0x1000;
//!     pc.set_pid_rec_index_raw(true);
//!     data.add(&pc.to_bytes())?;
//!     data.add(&u64::from(i).to_le_bytes())?;
//! }
//! assert_eq!(data.done()?, 100);
//! stream.finish()?;
//! w.close()?; // the file appears at `path` only now
//!
//! let file = Tb5File::open(&path)?;
//! let samples: Vec<LegacySample> = file.stream(0)?.legacy_samples()?.collect();
//! assert_eq!(samples.len(), 100);
//! assert_eq!(samples[3].pc.ip(), 0x400030);
//! assert_eq!(samples[3].tsc, Some(3));
//! let module = file.resolve(file.modules()?.unwrap().get(0)?)?;
//! assert_eq!(module.name.as_deref(), Some("app"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The layers, bottom up (each a folder of `src/` that imports only the
//! layers below it; all crate-private):
//! - `model`: the value types (hardware, software, processes, modules,
//!   versions, streams, events, data descriptors, samples, strings,
//!   sections, errors, the TBRW [`codes`] and the call stacks of a stream's
//!   stack table);
//! - `format` and docs/FORMAT.md: the on-disk layouts: this project's
//!   section kinds, raw structures, container rules and codec, and Intel's
//!   raw structures and codec (`format/intel`);
//! - `read`: the memory-mapped reader ([`Tb5File`]), `verify`, [`summary`];
//! - `write`: the run-time lifecycle [`Engine`] the C API drives (TBRW error
//!   codes through [`Error::code`]), its output, and the typestate writer
//!   ([`Tb5Writer`]);
//! - [`bind`]: binding streams, stored by the engine or kept in memory;
//! - [`text`] (a leaf beside them): names from files escaped for text outputs.
//!
//! **One path per item.** Every public item is at the crate root
//! (`tbrw::Tb5File`, `tbrw::Module`), except the items of a few
//! namespaces, which are only there: [`codes`] (the TBRW codes), the
//! constant groups the guide names ([`desc_type`], [`desc_subtype`],
//! [`stream_type`], [`access`], [`access_method`], [`arch_type`],
//! [`os_family`], [`processor_mode`]), the writer's section [`kinds`],
//! [`summary`], [`bind`] (its functions; the bind tables' types are at the
//! root), [`text`] and [`work_file`] (`tbrw-output`'s, for the writers built
//! on this crate). What is stable: the crate's README says.
//!
//! [`Tb5File`] reads Intel's layouts (`"SampleF "`, `"Sample6 "`,
//! `"Sample7 "`: the files of Intel's TBRW library and VTune's sampling
//! driver) and this project's own `\x89TB5` layout, as the first 8 bytes say
//! ([`FileLayout`]); the writers write this project's layout
//! (docs/FORMAT.md).

#![deny(missing_docs)]

pub mod bind;
mod format;
mod model;
mod read;
pub mod text;
mod write;

// One public path per item: the crate root, except the namespaces below
// (the TBRW codes, the summary's functions, the binding functions, the
// names in text outputs, the output rules' work files), and the constant
// namespaces the guide names (`desc_type`, `stream_type`, ...).
pub use model::codes;
pub use read::summary;
pub use write::work_file;

use model::{descriptor, error, event, hardware, layout, module, process, sample, section, software, stack, stream};
use model::{strings, version};
use write::{engine, writer};

pub use descriptor::{desc_subtype, desc_type, DescEntry, Field, RecordLayout};
pub use engine::{access, Engine};
pub use error::{Error, Location, Result};
pub use event::{access_method, Event, EventDetail, EventFlags};
pub use hardware::{arch_type, native_arch, Cpu, CpuArch, CpuidIa32, CpuidIa64, Cpuids, Node, System};
pub use layout::FileLayout;
pub use module::{processor_mode, Module, ModuleFlags, NEVER_UNLOADED};
pub use process::{Pid, PidTidFlags, Tid};
pub use read::{
    BindTables, BindView, DataSection, LegacySamples, MemoryBind, ModuleTable, PackedData, ProcessTable, SharedBytes,
    StackTableView, StoredData, StreamReader, Tb5File,
};
pub use sample::{CodeDescriptor, LegacySample, SampleRecordPc};
pub use section::{BindSection, GlobalSection, SectionRef, StreamSection};
pub use software::{os_family, Application, Host, Os, Software};
pub use stack::{
    stack_id_entry, StackNode, MAX_STACK_DEPTH, NO_STACK, STACK_ADDRESS_FIELD, STACK_ID_FIELD, STACK_PARENT_FIELD,
};
pub use stream::{stream_type, FileTime, StreamInfo};
pub use strings::{string_to_wide, wide_to_string, MapStrings, StringId, Text};
pub use tbrw_bind::{DataBind, ModuleBind, TidBind, UNKNOWN_MODULE};
pub use version::{VersionInfo, INTEL_SAMPLE_FILE_VERSION, MIN_SAMPLE_FILE_VERSION, UNKNOWN_DRIVER_VERSION};
pub use write::{convert, Durability, StackTable, WriteLayout};
pub use writer::{
    kinds, legacy_descriptor, DataSectionWriter, HasDescriptor, HasInfo, NoDescriptor, NoInfo, SectionWriter,
    StreamWriter, Tb5Writer,
};

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The TBRW API revision this library implements (`TBRW_get_version`).
pub const API_VERSION: (u32, u32) = (2, 3);
