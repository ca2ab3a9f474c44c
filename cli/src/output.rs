//! The command line's output rules, in one place: input and output paths
//! checked before any work (`--force`, never an input, folders said
//! plainly), files that appear only when complete (a work file for the
//! target, unnamed where the filesystem allows, see [`tbrw::work_file`]),
//! and folders of files ([`DirFolder`]) for the exports that write several.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tbrw::work_file::WorkFile;

use crate::error::CliError;

/// A failed write of the command's output.
pub fn written(e: std::io::Error) -> CliError {
    CliError::msg(format!("writing the output: {e}"))
}

/// The word for an I/O error on a path, without the errno noise.
pub fn plain(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => "no such file or folder".to_owned(),
        K::PermissionDenied => "permission denied".to_owned(),
        K::NotADirectory => "a part of the path before the last '/' is a file, not a folder".to_owned(),
        K::IsADirectory => "is a folder".to_owned(),
        _ => e.to_string(),
    }
}

/// Checks an input path before any work: it must be a file that can be
/// read (`what` says which kind, for the message). `-` (standard input)
/// passes.
pub fn check_input(path: &Path, what: &str) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(CliError::msg(format!("{}: is a folder, not {what}", path.display()))),
        Ok(_) => std::fs::File::open(path)
            .map(drop)
            .map_err(|e| CliError::msg(format!("{}: cannot be read: {}", path.display(), plain(&e)))),
        Err(e) => Err(CliError::msg(format!("{}: {}", path.display(), plain(&e)))),
    }
}

/// Opens a TB5 file, with [`check_input`]'s messages for bad paths.
pub fn open(file: &Path) -> Result<tbrw::Tb5File, CliError> {
    check_input(file, "a TB5 file")?;
    Ok(tbrw::Tb5File::open(file)?)
}

/// The same file (device and inode: hard and symbolic links included).
pub fn same_file(a: &std::fs::Metadata, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(b).is_ok_and(|m| m.dev() == a.dev() && m.ino() == a.ino())
}

/// Checks an output file path before any work: not a folder, in a folder
/// that exists and can be written, never one of `inputs` (not even with
/// `force`), and not an existing file unless `force`. `-` (standard
/// output) passes.
pub fn check_output(path: &Path, inputs: &[&Path], force: bool) -> Result<(), CliError> {
    let p = path.display();
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(CliError::msg(format!("{p}: ends with '/', which names a folder: give a file name to write")));
    }
    if let Ok(m) = std::fs::symlink_metadata(path).and_then(|_| std::fs::metadata(path)) {
        if m.is_dir() {
            return Err(CliError::msg(format!("{p}: is a folder: give a file name to write")));
        }
        if let Some(i) = inputs.iter().find(|i| i.as_os_str() != "-" && same_file(&m, i)) {
            return Err(CliError::msg(format!(
                "{p}: is the input {}: give another output name (not even --force replaces an input)",
                i.display()
            )));
        }
        if !force {
            return Err(CliError::msg(format!("{p}: exists: add --force (-f) to replace it")));
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(CliError::msg(format!("{p}: {} is not a folder", dir.display()))),
        Err(e) => return Err(CliError::msg(format!("{p}: folder {}: {}", dir.display(), plain(&e)))),
    }
    // An unnamed file, gone when closed: proves the folder can be written
    // without leaving anything there.
    tempfile::tempfile_in(dir)
        .map(drop)
        .map_err(|e| CliError::msg(format!("{p}: cannot write in folder {}: {}", dir.display(), plain(&e))))
}

/// Checks the folder of `export vtune-csv` before any work: a folder or
/// nothing yet (created then), not a file; one that holds CSV files of an
/// export (`*-hostname-*.csv`) needs `force`.
pub fn check_output_folder(dir: &Path, force: bool) -> Result<(), CliError> {
    let p = dir.display();
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            Err(CliError::msg(format!("{p}: is a file, not a folder: -o names the folder to write in")))
        }
        Ok(_) => {
            let rd = std::fs::read_dir(dir).map_err(|e| CliError::msg(format!("{p}: {}", plain(&e))))?;
            let exported = rd.flatten().any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.ends_with(".csv") && n.contains("-hostname-")
            });
            if exported && !force {
                return Err(CliError::msg(format!(
                    "{p}: holds exported CSV files already: add --force (-f) to replace them"
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError::msg(format!("{p}: {}", plain(&e)))),
    }
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

/// The files of a folder export, written into `root` (folders made as needed).
pub struct DirFolder {
    root: PathBuf,
}

impl DirFolder {
    /// Files go into `root`, which is created if missing.
    pub fn new(root: &Path) -> Result<DirFolder, CliError> {
        std::fs::create_dir_all(root).map_err(|e| CliError::io(root, e))?;
        Ok(DirFolder { root: root.to_path_buf() })
    }
}

impl tbrw_export::Folder for DirFolder {
    fn create(&mut self, name: &str) -> std::io::Result<Box<dyn Write + Send>> {
        let path = self.root.join(name);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        Ok(Box::new(std::fs::File::create(path)?))
    }
}

#[cfg(test)]
mod tests {
    use tbrw::work_file;

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
        assert!(work_file::check_target(dir.path()).is_err());
        assert!(work_file::check_target(&dir.path().join("no/such/out.csv")).is_err());
        assert!(work_file::check_target(&dir.path().join("out.csv")).is_ok());
        let mut called = false;
        assert!(write_atomically(dir.path(), |_| {
            called = true;
            Ok(())
        })
        .is_err());
        assert!(!called, "nothing is written for a bad target");
    }
}
