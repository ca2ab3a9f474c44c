//! The version information section (`TBRW_VERSION_INFO`).

/// `sampling_driver_version` meaning "unknown driver" (guide FAQ 7.4).
pub const UNKNOWN_DRIVER_VERSION: u32 = 0xFFFF_FFFF;

/// The lowest `sample_file_version` the TBRW API supports (0x10).
pub const MIN_SAMPLE_FILE_VERSION: u32 = 0x10;

/// The `sample_file_version` Intel's 2020 library and VTune XE 2016 write
/// (27). Below 22 Intel's 2020 reader takes a file's system from its legacy
/// section, where a cpu's `native` is derived from its architecture; from
/// 22 it reads the system as written (docs/FORMAT.md, "The system of a
/// file stating a version below 22").
pub const INTEL_SAMPLE_FILE_VERSION: u32 = 27;

/// `TBRW_VERSION_INFO`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionInfo {
    /// `sampling_driver_version` ([`UNKNOWN_DRIVER_VERSION`] when unknown).
    pub sampling_driver_version: u32,
    /// `bind_version`.
    pub bind_version: u32,
    /// `sample_file_version`.
    pub sample_file_version: u32,
}
