//! What every export is to its caller ([`Export`]): a name, the kind of
//! output it writes (one file, or a [`Folder`] of files) and one way to run
//! it on an open TB5 file, returning a [`Summary`] the caller prints. Each
//! export implements it in its own module, so that a front (the `tbrw`
//! command) applies its output rules (paths, `-`, replacing, locks) once
//! for all of them. Imports `folder`, `error` and nothing else of the crate.

use std::any::Any;
use std::io::Write;

use tbrw::Tb5File;
use tbrw_schema::Progress;

use crate::{ExportError, Folder};

/// Where an export writes.
pub enum Output<'a> {
    /// One file (or standard output): the exports whose
    /// [`Export::output`] is [`OutputKind::File`].
    File(&'a mut dyn Write),
    /// A set of files: the exports whose [`Export::output`] is
    /// [`OutputKind::Folder`].
    Folder(&'a mut dyn Folder),
}

/// The kind of output an export writes.
#[derive(Clone, Copy, Debug)]
pub enum OutputKind {
    /// One file, which may be standard output.
    File,
    /// A folder of files, which the export fills whole.
    Folder(FolderFiles),
}

/// The files a folder export writes: what a front may replace. An
/// existing folder holding only such files is an earlier export (replaced
/// on request); one holding anything else is never replaced.
#[derive(Clone, Copy, Debug)]
pub struct FolderFiles {
    /// One such file, in words (`an exported CSV file`).
    pub one: &'static str,
    /// Several, in words (`exported CSV files`).
    pub many: &'static str,
    /// Whether a file name (in the folder, not a path) is one of them.
    pub owns: fn(&str) -> bool,
}

/// What an export says once it has written its output.
#[derive(Default)]
pub struct Summary {
    /// A file export's line of what it wrote, said after the output's
    /// name (`out.svg: 12 distinct stacks`); not said when the output is
    /// standard output.
    pub line: String,
    /// A folder export's files, by name relative to the folder, in the
    /// order written.
    pub files: Vec<String>,
    /// What was left out and why, one line each, said after the input's
    /// name (`stream 1: 3 intervals with no end left out`).
    pub notes: Vec<String>,
    /// What the export built, handed back rather than freed: a caller
    /// about to exit may skip freeing it (a large Firefox profile is
    /// millions of small allocations), any other caller drops it.
    pub built: Option<Box<dyn Any>>,
}

impl std::fmt::Debug for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summary")
            .field("line", &self.line)
            .field("files", &self.files)
            .field("notes", &self.notes)
            .field("built", &self.built.is_some())
            .finish()
    }
}

/// An export with its options, ready to run on a file.
///
/// ```
/// use tbrw_export::{Export, Output, OutputKind};
/// use tbrw_export::{pprof::Pprof, tbrw::Tb5File};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let file = Tb5File::open("../cli/tests/data/matrix/perf.tb5")?;
/// let export = Pprof::default();
/// assert_eq!(export.name(), "pprof");
/// assert!(matches!(export.output(), OutputKind::File));
/// let mut out = Vec::new();
/// let summary = export.export(&file, Output::File(&mut out), &mut Vec::new(), &mut ())?;
/// assert!(summary.line.starts_with("987 samples aggregated into"), "{}", summary.line);
/// # Ok(())
/// # }
/// ```
pub trait Export {
    /// The name the export goes by: the `tbrw export` subcommand
    /// (`flamegraph`).
    fn name(&self) -> &'static str;

    /// The kind of output it writes; [`Export::export`] is given the
    /// matching [`Output`]. Most exports write one file.
    fn output(&self) -> OutputKind {
        OutputKind::File
    }

    /// Writes the export of `file` to `out`. Warnings (modules without
    /// symbols) are collected in `warn`; `progress` is told the records walked.
    fn export(
        &self,
        file: &Tb5File,
        out: Output<'_>,
        warn: &mut Vec<crate::Warning>,
        progress: &mut dyn Progress,
    ) -> Result<Summary, ExportError>;
}

/// The error of an export given the kind of output it does not write.
fn wrong_output(name: &str, wants: &str) -> ExportError {
    let why = std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("it writes {wants}"));
    ExportError::write(format!("{name} export"), why)
}

/// The file writer of an [`Output`], or the error of a folder given.
pub(crate) fn file_of<'a>(name: &str, out: Output<'a>) -> Result<&'a mut dyn Write, ExportError> {
    match out {
        Output::File(w) => Ok(w),
        Output::Folder(_) => Err(wrong_output(name, "a file")),
    }
}

/// The folder of an [`Output`], or the error of a file given.
pub(crate) fn folder_of<'a>(name: &str, out: Output<'a>) -> Result<&'a mut dyn Folder, ExportError> {
    match out {
        Output::Folder(f) => Ok(f),
        Output::File(_) => Err(wrong_output(name, "a folder")),
    }
}
