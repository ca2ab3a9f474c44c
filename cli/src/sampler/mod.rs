//! The intrusive ELF sampler's profiles: [`profile`] reads and writes the
//! profile format itself; [`tb5`] converts profiles to TB5 (`tbrw import
//! sampler`) and back (`tbrw export sampler`).

pub mod profile;
pub mod tb5;

pub use profile::{
    write_header, write_sample, Header, Magic, Next, ProfileError, ProfileReader, Sample, ThreadSample, VmMap,
};
pub use tb5::{export_sampler, import_sampler, ImportOptions, ImportStats};
