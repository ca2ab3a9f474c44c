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
            CliError::Msg(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

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
