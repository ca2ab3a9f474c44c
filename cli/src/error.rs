//! The error of the command line: one message, naming file and place. The
//! libraries' typed errors are shown as they phrase them.

use std::fmt;
use std::path::Path;

/// Anything that stops a command.
#[derive(Debug)]
pub enum CliError {
    /// From the TB5 library.
    Tb5(tbrw::Error),
    /// From an importer.
    Import(tbrw_import::ImportError),
    /// From a report or the sample walk.
    Query(tbrw_query::QueryError),
    /// From an export.
    Export(tbrw_export::ExportError),
    /// Writing the command's output (standard output, mostly) failed.
    Output(std::io::Error),
    /// Anything else, already phrased (a path, an option).
    Msg(String),
}

impl CliError {
    /// An error with this message.
    pub fn msg(m: impl Into<String>) -> Self {
        CliError::Msg(m.into())
    }

    /// An I/O error on a file.
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        CliError::Msg(format!("{}: {e}", path.display()))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Tb5(e) => e.fmt(f),
            CliError::Import(e) => e.fmt(f),
            CliError::Query(e) => e.fmt(f),
            CliError::Export(e) => e.fmt(f),
            CliError::Output(e) => write!(f, "writing the output: {e}"),
            CliError::Msg(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Tb5(e) => Some(e),
            CliError::Import(e) => Some(e),
            CliError::Query(e) => Some(e),
            CliError::Export(e) => Some(e),
            CliError::Output(e) => Some(e),
            CliError::Msg(_) => None,
        }
    }
}

impl CliError {
    /// Whether the command stopped because the reader of its output went
    /// away (`tbrw report | head -2`): an `EPIPE` anywhere in the chain of
    /// causes. The binary then ends quietly with status 0, as `print_tb5`
    /// does: the reader took what it wanted (README, "Exit status").
    pub fn is_broken_pipe(&self) -> bool {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(x) = e {
            if x.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
                return true;
            }
            e = x.source();
        }
        false
    }
}

impl From<tbrw::Error> for CliError {
    fn from(e: tbrw::Error) -> Self {
        CliError::Tb5(e)
    }
}

impl From<tbrw_import::ImportError> for CliError {
    fn from(e: tbrw_import::ImportError) -> Self {
        CliError::Import(e)
    }
}

impl From<tbrw_import::elf_profile::ProfileError> for CliError {
    fn from(e: tbrw_import::elf_profile::ProfileError) -> Self {
        CliError::Import(e.into())
    }
}

impl From<tbrw_query::QueryError> for CliError {
    fn from(e: tbrw_query::QueryError) -> Self {
        CliError::Query(e)
    }
}

impl From<tbrw_export::ExportError> for CliError {
    fn from(e: tbrw_export::ExportError) -> Self {
        CliError::Export(e)
    }
}
