//! [`OutputError`]: why an output path was refused or an output could not
//! be put in place, and [`plain`], the words for an I/O error. The messages
//! say what was found and name no command-line option: a front (the `tbrw`
//! command, the collector) matches the variant and adds its own hint
//! ("add --force"). Imports nothing of this crate.

use std::io;
use std::path::PathBuf;

/// Why an output path was refused, or an output could not be put in place.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutputError {
    /// Something is at the path and the caller did not allow replacing it
    /// (`link`: a symbolic link, which would be replaced itself).
    Exists {
        /// The output path.
        path: PathBuf,
        /// Whether what is there is a symbolic link.
        link: bool,
    },
    /// The output is one of the inputs (the same file, through any name):
    /// never replaced.
    IsInput {
        /// The output path.
        path: PathBuf,
        /// The input it is.
        input: PathBuf,
    },
    /// A file output names a folder (or ends with '/').
    IsFolder {
        /// The output path.
        path: PathBuf,
        /// Whether the name itself ends with '/'.
        trailing_slash: bool,
    },
    /// An input names a folder (`what`: what it should name).
    InputIsFolder {
        /// The input path.
        path: PathBuf,
        /// What the caller wanted there ("a TB5 file").
        what: String,
    },
    /// A folder output names a file (`what`: what the path should name).
    IsFile {
        /// The output path.
        path: PathBuf,
        /// What the caller wanted there ("the folder to write in").
        what: String,
    },
    /// A folder output names no folder (the root, `..`, nothing).
    NamesNoFolder {
        /// The output path.
        path: PathBuf,
        /// What the caller wanted there.
        what: String,
    },
    /// A folder on the way to the output is a file.
    NotAFolder {
        /// The output path.
        path: PathBuf,
        /// The part of it that is not a folder.
        part: PathBuf,
    },
    /// A folder output is the current folder, or holds it: replacing it
    /// would leave the user's shell in a removed folder.
    HoldsCurrentFolder {
        /// The output path.
        path: PathBuf,
    },
    /// Another process made the output while this one worked: nothing was
    /// written.
    MadeMeanwhile {
        /// The output path.
        path: PathBuf,
    },
    /// Another writer, or a reader asking writers to wait, holds the
    /// output's lock.
    Locked {
        /// The output path.
        path: PathBuf,
        /// [`crate::work_file::READER_HOLDS`] or
        /// [`crate::work_file::WRITER_HOLDS`] (with how long it waited).
        why: String,
    },
    /// An I/O error at `step` of the work on the output.
    Io {
        /// The output path, as the caller gave it.
        path: PathBuf,
        /// What was being done, and where (for example "folder /data").
        step: String,
        /// The error.
        source: io::Error,
    },
}

impl OutputError {
    /// An I/O error at `step` (empty: none to name) on the output `path`.
    pub fn io(path: impl Into<PathBuf>, step: impl Into<String>, source: io::Error) -> OutputError {
        OutputError::Io { path: path.into(), step: step.into(), source }
    }

    /// The path the error is about (the output's, or an input's).
    pub fn path(&self) -> &std::path::Path {
        match self {
            OutputError::Exists { path, .. }
            | OutputError::IsInput { path, .. }
            | OutputError::IsFolder { path, .. }
            | OutputError::IsFile { path, .. }
            | OutputError::InputIsFolder { path, .. }
            | OutputError::NamesNoFolder { path, .. }
            | OutputError::NotAFolder { path, .. }
            | OutputError::HoldsCurrentFolder { path }
            | OutputError::MadeMeanwhile { path }
            | OutputError::Locked { path, .. }
            | OutputError::Io { path, .. } => path,
        }
    }
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.path().display();
        match self {
            OutputError::Exists { link: true, .. } => write!(f, "{p}: exists (a symbolic link)"),
            OutputError::Exists { link: false, .. } => write!(f, "{p}: exists"),
            OutputError::IsInput { input, .. } => {
                write!(f, "{p}: is the input {}: give another output name", input.display())
            }
            OutputError::IsFolder { trailing_slash: true, .. } => {
                write!(f, "{p}: ends with '/', which names a folder: give a file name to write")
            }
            OutputError::IsFolder { .. } => write!(f, "{p}: is a folder: give a file name to write"),
            OutputError::IsFile { .. } => write!(f, "{p}: is a file, not a folder"),
            OutputError::InputIsFolder { what, .. } => write!(f, "{p}: is a folder, not {what}"),
            OutputError::NamesNoFolder { .. } => write!(f, "{p}: names no folder"),
            OutputError::NotAFolder { part, .. } => write!(f, "{p}: {} is not a folder", part.display()),
            OutputError::HoldsCurrentFolder { .. } => write!(
                f,
                "{p}: is the current folder or holds it: the export replaces the whole folder, so give another one"
            ),
            OutputError::MadeMeanwhile { .. } => {
                write!(f, "{p}: another process made it while this export ran: nothing written")
            }
            OutputError::Locked { why, .. } => write!(f, "{p}: cannot open: {why}"),
            OutputError::Io { step, source, .. } if step.is_empty() => write!(f, "{p}: {}", plain(source)),
            OutputError::Io { step, source, .. } => write!(f, "{p}: {step}: {}", plain(source)),
        }
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutputError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The words for an I/O error on a path, without the errno noise. An error
/// this crate phrased itself (a refused link or device) keeps its words.
pub fn plain(e: &io::Error) -> String {
    use std::io::ErrorKind as K;
    if e.raw_os_error().is_none() && e.get_ref().is_some() {
        return e.to_string();
    }
    match e.kind() {
        K::NotFound => "no such file or folder".to_owned(),
        K::PermissionDenied => "permission denied".to_owned(),
        K::NotADirectory => "a part of the path before the last '/' is a file, not a folder".to_owned(),
        K::IsADirectory => "is a folder".to_owned(),
        _ => e.to_string(),
    }
}
