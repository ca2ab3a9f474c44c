//! The checks an output path gets before any work starts: not a folder, in
//! a folder that exists and can be written, never one of the inputs (not
//! even when replacing is allowed), and not an existing file unless the
//! caller allows replacing it. What is at the path decides the rest
//! ([`crate::work_file::plan`]): a symbolic link is replaced itself, never the file
//! it names; one planted in a shared sticky folder is refused; a character
//! device or FIFO is written into by a stream (nothing is replaced, so no
//! permission is needed, as `perf record -o /dev/null`); a block device or
//! a socket is refused. Imports `target`, `work_file` (its plan) and
//! `error`.

use std::path::Path;

use crate::error::OutputError;
use crate::work_file::{plan, Plan, Writing};

/// Whether the file at `b` is the one `a` describes (device and inode:
/// hard and symbolic links included).
pub(crate) fn same_file(a: &std::fs::Metadata, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(b).is_ok_and(|m| m.dev() == a.dev() && m.ino() == a.ino())
}

/// Checks an input path before any work: a file that can be read (`what`
/// says which kind, for the message). `-` (standard input) passes.
pub fn check_input(path: &Path, what: &str) -> Result<(), OutputError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(OutputError::InputIsFolder { path: path.to_owned(), what: what.to_owned() }),
        Ok(_) => std::fs::File::open(path).map(drop).map_err(|e| OutputError::io(path, "cannot be read", e)),
        Err(e) => Err(OutputError::io(path, "", e)),
    }
}

/// Checks an output path before any work, for an output written as
/// `writing` says, which may replace an existing file when `replace`.
/// `-` (standard output) passes.
pub fn check_output(path: &Path, inputs: &[&Path], replace: bool, writing: Writing) -> Result<(), OutputError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let is_folder = |trailing_slash| OutputError::IsFolder { path: path.to_owned(), trailing_slash };
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(is_folder(true));
    }
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_dir() {
            return Err(is_folder(false));
        }
        if let Some(i) = inputs.iter().find(|i| i.as_os_str() != "-" && same_file(&m, i)) {
            return Err(OutputError::IsInput { path: path.to_owned(), input: i.to_path_buf() });
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(OutputError::NotAFolder { path: path.to_owned(), part: dir.to_owned() }),
        Err(e) => return Err(OutputError::io(path, format!("folder {}", dir.display()), e)),
    }
    match plan(path, writing) {
        // Written into: nothing is made in the folder.
        Ok(Plan::Into) => return Ok(()),
        Ok(Plan::New) => {}
        Ok(Plan::Replace { link }) if !replace => return Err(OutputError::Exists { path: path.to_owned(), link }),
        Ok(Plan::Replace { .. }) => {}
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => return Err(is_folder(false)),
        Err(e) => return Err(OutputError::io(path, "", e)),
    }
    // An unnamed file, gone when closed: proves the folder can be written
    // without leaving anything there.
    tempfile::tempfile_in(dir)
        .map(drop)
        .map_err(|e| OutputError::io(path, format!("cannot write in folder {}", dir.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_output_needs_replace_and_an_input_is_never_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"in").unwrap();
        assert!(check_output(&b, &[&a], false, Writing::Whole).is_ok());
        std::fs::write(&b, b"old").unwrap();
        assert!(matches!(check_output(&b, &[&a], false, Writing::Whole), Err(OutputError::Exists { link: false, .. })));
        assert!(check_output(&b, &[&a], true, Writing::Whole).is_ok());
        std::os::unix::fs::symlink(&a, dir.path().join("l")).unwrap();
        let l = dir.path().join("l");
        assert!(matches!(check_output(&l, &[&a], true, Writing::Whole), Err(OutputError::IsInput { .. })));
        assert!(matches!(check_output(&l, &[], false, Writing::Whole), Err(OutputError::Exists { link: true, .. })));
        assert!(matches!(
            check_output(dir.path(), &[], true, Writing::Whole),
            Err(OutputError::IsFolder { trailing_slash: false, .. })
        ));
        let e = check_output(&dir.path().join("no/such/x"), &[], true, Writing::Whole).unwrap_err();
        assert!(matches!(&e, OutputError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound), "{e}");
        assert!(check_output(Path::new("-"), &[], false, Writing::Whole).is_ok());
    }
}
