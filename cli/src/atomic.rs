//! Output files that appear only when complete: written to a work file for
//! the target (unnamed where the filesystem allows, see
//! [`tbrw::work_file`]), flushed, synced, then put at the target. The target
//! is checked before any work, so a bad `-o` fails at once; a killed
//! command leaves nothing behind.

use std::io::{BufWriter, Write};
use std::path::Path;

use tbrw::work_file::{self, WorkFile};

use crate::error::CliError;

/// Checks that a new file can be put at `path` (not a directory, folder
/// present and writable), before any work is done for it.
pub fn check_output(path: &Path) -> Result<(), CliError> {
    work_file::check_target(path).map_err(|e| CliError::io(path, e))
}

/// Writes `path` through `f`; on any error nothing is left at `path`.
pub fn write_atomically(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    let work = WorkFile::create(path).map_err(|e| CliError::io(path, e))?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, work.file());
        f(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(path, e))?;
    }
    work.file().sync_all().map_err(|e| CliError::io(path, e))?;
    work.persist().map_err(|e| CliError::io(path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    #[test]
    fn complete_output_replaces_the_target_and_a_failure_leaves_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_atomically(&p, |w| w.write_all(b"one")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        let r = write_atomically(&p, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("failed midway"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_atomically(&p, |w| w.write_all(b"two")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["out.csv"]);
    }

    #[test]
    fn a_directory_or_missing_folder_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_output(dir.path()).is_err());
        assert!(check_output(&dir.path().join("no/such/out.csv")).is_err());
        assert!(check_output(&dir.path().join("out.csv")).is_ok());
        let mut called = false;
        assert!(write_atomically(dir.path(), |_| {
            called = true;
            Ok(())
        })
        .is_err());
        assert!(!called, "nothing is written for a bad target");
    }
}
