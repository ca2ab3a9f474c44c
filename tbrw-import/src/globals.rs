//! What every import writes the same way: the global sections of a file
//! whose collector says nothing about the hardware or the sampling driver.
//! Descriptor entries are `tbrw_schema::descriptor`'s; the records belong
//! to each importer.

use tbrw::*;

/// Writes the hardware section (a system with no nodes), `software`, and
/// version info with the driver unknown and the oldest sample file version.
pub fn write_globals(w: &mut Tb5Writer, software: &Software) -> Result<()> {
    w.write_hardware(&System::default())?;
    w.write_software(software)?;
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        sample_file_version: MIN_SAMPLE_FILE_VERSION,
    })
}
