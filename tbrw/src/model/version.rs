//! The version information section (`TBRW_VERSION_INFO`).

/// `sampling_driver_version` meaning "unknown driver" (guide FAQ 7.4).
pub const UNKNOWN_DRIVER_VERSION: u32 = 0xFFFF_FFFF;

/// The lowest `sample_file_version` the TBRW API supports (0x10).
pub const MIN_SAMPLE_FILE_VERSION: u32 = 0x10;

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
