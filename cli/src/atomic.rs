//! Output files that appear only when complete: written to a temporary
//! file in the target's folder, flushed, synced, then renamed over the target.

use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::CliError;

/// Writes `path` through `f`; on any error nothing is left at `path`.
pub fn write_atomically(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".tbrw-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| CliError::io(path, e))?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
        f(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| CliError::io(path, e))?;
    tmp.persist(path).map_err(|e| CliError::io(path, e.error))?;
    Ok(())
}
