//! What every import writes the same way: named descriptor entries, and the
//! global sections of a file whose collector says nothing about the
//! hardware or the sampling driver. The records themselves belong to each
//! importer.

use tbrw::*;

/// A named data descriptor entry (offset and access fields left to the writer).
pub fn field(desc_type: u16, subtype: u16, data_size: u32, name: impl Into<String>) -> DescEntry {
    DescEntry { desc_type, subtype, data_size, name: Some(name.into()), ..Default::default() }
}

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
