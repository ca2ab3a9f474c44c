//! The command line's outputs, over the workspace's output rules
//! (`tbrw-output`: checks before any work, work files, folder outputs,
//! locks, crash points): `-` for standard input and output, `--force`
//! (the rules' "replace"), the CSV folder's own rule of what it may
//! replace, and the export folders' files.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use tbrw_export::FolderFiles;
pub use tbrw_output::folder::{folder_target, FolderTarget, WorkFolder};
use tbrw_output::work_file::{Plan, WorkFile, Writing};

use crate::error::CliError;

/// A failed write of the command's output.
pub fn written(e: std::io::Error) -> CliError {
    CliError::Output(e)
}

pub use tbrw_output::plain;

/// Checks an input path before any work: it must be a file that can be
/// read (`what` says which kind, for the message). `-` (standard input)
/// passes.
pub fn check_input(path: &Path, what: &str) -> Result<(), CliError> {
    Ok(tbrw_output::check::check_input(path, what)?)
}

/// Opens a TB5 file, with [`check_input`]'s messages for bad paths.
pub fn open(file: &Path) -> Result<tbrw::Tb5File, CliError> {
    check_input(file, "a TB5 file")?;
    Ok(tbrw::Tb5File::open(file)?)
}

/// [`check_output`] for a TB5 file, which cannot go to standard output: it
/// is written beside its target and committed by a rename, so `-` is
/// refused rather than taken as a file name, and so is a device or FIFO
/// (which a stream is written into).
pub fn check_tb5_output(path: &Path, inputs: &[&Path], force: bool) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Err(CliError::msg(
            "-o -: a TB5 file cannot be written to standard output (it is committed by a rename): give a file name",
        ));
    }
    check_output_as(path, inputs, force, Writing::Whole)
}

/// Checks an output file path before any work: not a folder, in a folder
/// that exists and can be written, never one of `inputs` (not even with
/// `force`), and not an existing file unless `force`. `-` (standard
/// output) passes. What is at the path decides the rest
/// ([`tbrw_output::work_file::plan`], docs/FORMAT.md "Output paths"): a symbolic
/// link is replaced itself (with `force`), never the file it names; one
/// planted in a shared sticky folder is refused; a character device or
/// FIFO is written into (nothing is replaced, so without `force`, as
/// `perf record -o /dev/null`); a block device or a socket is refused.
pub fn check_output(path: &Path, inputs: &[&Path], force: bool) -> Result<(), CliError> {
    check_output_as(path, inputs, force, Writing::Stream)
}

/// [`check_output`] for an output written as `writing` says.
fn check_output_as(path: &Path, inputs: &[&Path], force: bool, writing: Writing) -> Result<(), CliError> {
    Ok(tbrw_output::check::check_output(path, inputs, force, writing)?)
}

/// Writes `path` through `f`. A file appears only when complete (a work
/// file put in place): on any error nothing is left at `path`. A character
/// device or FIFO at `path` (or named by a link there, as `/dev/stdout`) is
/// written into instead, and never replaced.
pub fn write_output(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    if let Ok(Plan::Into) = tbrw_output::work_file::plan(path, Writing::Stream) {
        let file = tbrw_output::work_file::open_into(path)
            .map_err(|e| CliError::msg(format!("{}: cannot open: {}", path.display(), plain(&e))))?;
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        return f(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(path, e));
    }
    // Refused as the TB5 writers refuse (`bind`, imports): a file another
    // writer holds, a path that cannot be written; before any work.
    let work = WorkFile::create(path).map_err(|source| tbrw::Error::FileOpen { path: path.to_owned(), source })?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, Writeback::new(work.file()));
        f(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(path, e))?;
    }
    work.file().sync_all().map_err(|e| CliError::io(path, e))?;
    work.persist().map_err(|e| CliError::io(path, e))?;
    Ok(())
}

/// Bytes written between two writeback starts ([`Writeback`]).
const WRITEBACK_EVERY: u64 = 8 << 20;

/// A work file being written, whose written pages the kernel is asked to
/// start writing to the disk every [`WRITEBACK_EVERY`] bytes
/// (`sync_file_range`'s `SYNC_FILE_RANGE_WRITE`, which does not wait), so
/// that the `fsync` before the file is put in place waits for the last
/// few megabytes, not for the whole output. Only a hint: the `fsync` is
/// what makes the file durable.
struct Writeback<'f> {
    file: &'f fs::File,
    written: u64,
    started: u64,
}

impl<'f> Writeback<'f> {
    fn new(file: &'f fs::File) -> Self {
        Writeback { file, written: 0, started: 0 }
    }

    /// Starts the writeback of what was written since the last start.
    fn start(&mut self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.started, self.written - self.started);
            // SAFETY: the descriptor is the open work file's; the call
            // reads no memory of this process. Its result is only a hint.
            let _ = unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    from as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
        }
        self.started = self.written;
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = (&mut &*self.file).write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_EVERY {
            self.start();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&mut &*self.file).flush()
    }
}

/// What an existing folder output holds, as far as replacing it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// Nothing.
    Empty,
    /// An output of the command (replaced with `--force`).
    Output,
    /// Something else, first name found: never replaced.
    Other(String),
}

/// What the folder output of an export writing `files` holds: its files
/// only, nothing, or anything else.
pub fn folder_holds(dir: &Path, files: &FolderFiles) -> io::Result<Held> {
    let mut held = Held::Empty;
    for e in fs::read_dir(dir)? {
        let e = e?;
        let n = e.file_name().to_string_lossy().into_owned();
        if (files.owns)(&n) && e.file_type()?.is_file() {
            held = Held::Output;
        } else {
            return Ok(Held::Other(n));
        }
    }
    Ok(held)
}

/// Whether an export writing `files` may replace `dir` holding `held`: a
/// folder holding an export only with `force`, never one holding anything
/// else (the export replaces the whole folder).
pub fn may_replace(given: &Path, files: &FolderFiles, held: &Held, force: bool) -> Result<(), CliError> {
    let p = given.display();
    match held {
        Held::Empty => Ok(()),
        Held::Output if force => Ok(()),
        Held::Output => {
            Err(CliError::msg(format!("{p}: holds {} already: add --force (-f) to replace them", files.many)))
        }
        Held::Other(n) => Err(CliError::msg(format!(
            "{p}: holds {n}, which is not {}: the export replaces the whole folder, so it \
             writes only to a new folder, an empty one or one holding an export (with --force)",
            files.one
        ))),
    }
}

/// Checks the folder output of an export writing `files` before any work
/// (see [`folder_target`] and [`may_replace`]).
pub fn check_output_folder(dir: &Path, files: &FolderFiles, force: bool) -> Result<FolderTarget, CliError> {
    let target = folder_target(dir, "the folder to write in", true)?;
    let real = target.path();
    if real.is_dir() {
        let held =
            folder_holds(&real, files).map_err(|e| CliError::msg(format!("{}: {}", dir.display(), plain(&e))))?;
        may_replace(dir, files, &held, force)?;
        target.check_not_current()?;
        tbrw_output::folder::writable(&real)
            .map_err(|e| CliError::msg(format!("{}: cannot be replaced: {}", dir.display(), plain(&e))))?;
    }
    Ok(target)
}

/// An export's error while it writes into the folder output `work`: a
/// failed write, or a table of the output that could not be written, names
/// the folder given (never the work folder the file is really in); other
/// errors (the input's) are kept as they are.
pub fn export_error(work: &WorkFolder, e: tbrw_export::ExportError) -> CliError {
    let given = work.target().given().display();
    match e {
        tbrw_export::ExportError::Write { what, source } => {
            CliError::msg(format!("{given}: writing {what}: {}", plain(&source)))
        }
        e @ tbrw_export::ExportError::Table { .. } => CliError::msg(format!("{given}/{e}")),
        e => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use tbrw::work_file;
    use tbrw_output::folder::WorkFolder;

    use super::*;

    /// The files of `export vtune-csv`.
    fn csv() -> FolderFiles {
        use tbrw_export::{Export, OutputKind};
        match tbrw_export::vtune_csv::VtuneCsv::default().output() {
            OutputKind::Folder(files) => files,
            OutputKind::File => unreachable!("vtune-csv writes a folder"),
        }
    }

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
        write_output(&p, |w| w.write_all(b"one")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        let r = write_output(&p, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("failed midway"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_output(&p, |w| w.write_all(b"two")).unwrap();
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
        assert!(write_output(dir.path(), |_| {
            called = true;
            Ok(())
        })
        .is_err());
        assert!(!called, "nothing is written for a bad target");
    }

    #[test]
    fn a_folder_is_published_whole_new_or_exchanged() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let put = |work: &WorkFolder, name: &str| std::fs::write(work.out().join(name), name).unwrap();
        let target = check_output_folder(&out, &csv(), false).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        put(&work, "a-hostname-h.csv");
        put(&work, "b-hostname-h.csv");
        assert!(!out.exists(), "nothing at the target before the export is complete");
        work.publish::<CliError>(&|_| unreachable!("nothing to replace")).unwrap();
        assert_eq!(names(&out), ["a-hostname-h.csv", "b-hostname-h.csv"]);
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(check_output_folder(&out, &csv(), false).is_err(), "an export needs --force");
        let target = check_output_folder(&out, &csv(), true).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        put(&work, "c-hostname-h.csv");
        // What is there is checked again when the new output replaces it.
        let refused = work.publish(&|real| {
            assert_eq!(folder_holds(real, &csv()).unwrap(), Held::Output);
            Err(CliError::msg("refused"))
        });
        assert!(refused.is_err());
        assert_eq!(names(&out), ["a-hostname-h.csv", "b-hostname-h.csv"]);
        let work = WorkFolder::create(&target).unwrap();
        put(&work, "c-hostname-h.csv");
        work.publish::<CliError>(&|_| Ok(())).unwrap();
        assert_eq!(names(&out), ["c-hostname-h.csv"], "the old export's files are gone");
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(names(t.path()), ["out"]);
        // A folder holding anything else is never replaced.
        std::fs::write(out.join("notes.txt"), b"mine").unwrap();
        let e = check_output_folder(&out, &csv(), true).unwrap_err().to_string();
        assert!(e.contains("holds notes.txt, which is not an exported CSV file"), "{e}");
    }
}
