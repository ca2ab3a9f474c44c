//! The intrusive ELF sampler's profiles: [`profile`] reads and writes the
//! profile format itself (every writer's layout, detection, streamed
//! reading); [`tb5`] converts profiles to TB5 (`tbrw import sampler`) and
//! back (`tbrw export sampler`); [`fixtures`] makes the example profiles
//! shipped in `examples/data/sampler/`.

mod detect;
pub mod fixtures;
pub mod profile;
pub mod tb5;

pub use profile::{
    detect, write_header, write_profile, write_sample, Detected, Endian, Format, FullSample, Header, Layout, Magic,
    Next, ProfileError, ProfileHeader, ProfileReader, Sample, SampleHead, ThreadSample, Threads, VmMap,
};
pub use tb5::{
    export_profile, export_sampler, import_profile, import_sampler, ImportOptions, ImportStats, ProfileOptions,
    TimeSource,
};
