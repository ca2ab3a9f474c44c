//! The error of the command line: one message, naming file and place.

use std::fmt;
use std::path::Path;

use crate::sampler::ProfileError;

/// Anything that stops a command.
#[derive(Debug)]
pub enum CliError {
    /// From the TB5 library.
    Tb5(tbrw::Error),
    /// A sampler profile that cannot be read.
    Profile(ProfileError),
    /// Anything else, already phrased.
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
            CliError::Profile(e) => e.fmt(f),
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

impl From<ProfileError> for CliError {
    fn from(e: ProfileError) -> Self {
        CliError::Profile(e)
    }
}
