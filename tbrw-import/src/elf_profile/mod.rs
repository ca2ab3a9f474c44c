//! `tbrw import sampler`: the intrusive ELF sampler's binary profiles into
//! TB5 ([`import_profile`], [`import_profile_stream`]). The profile format (the one codec, which the `sampler`
//! collector's `--format profile` also writes through) is the crate
//! `tbrw-elf-profile`; the stream written here is `tbrw_schema::elf_profile`'s;
//! the way back to a profile is `tbrw_export::elf_profile`.

mod import;

pub use import::{import_profile, import_profile_stream, ImportOptions, ImportStats, ProfileOptions, DEFAULT_PID};
// What the import's options and statistics hold.
pub use tbrw_elf_profile::{Endian, Format, Layout, ProfileError};
pub use tbrw_schema::elf_profile::TimeSource;
