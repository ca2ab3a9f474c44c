//! The intrusive ELF sampler's binary profiles: [`profile`] is the one
//! codec of the format (every writer's layout, detection, streamed reading,
//! writing), which the `sampler` collector's `--format profile` also
//! writes through; [`import`] converts a profile into TB5 (`tbrw import
//! sampler`); [`fixtures`] makes the example profiles shipped in
//! `examples/data/sampler/`. The way back to a profile is
//! `tbrw_export::elf_profile`.

mod detect;
pub mod fixtures;
pub mod format;
pub mod import;
pub mod profile;

pub use import::{import_profile, import_profile_stream, ImportOptions, ImportStats, Meta, ProfileOptions, TimeSource};
pub use profile::{
    detect, open, write_header, write_profile, write_sample, Detected, Endian, Format, FullSample, Header, Layout,
    Magic, Next, Opened, ProfileError, ProfileHeader, ProfileReader, Sample, SampleHead, ThreadSample, Threads, VmMap,
};
