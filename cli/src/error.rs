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

/// The longest piece of offending input an error message quotes.
pub const EXCERPT_CHARS: usize = 80;

/// `text` as an error message quotes it: whole when short, otherwise its
/// first [`EXCERPT_CHARS`] characters and its length, so a 100 MB line never
/// becomes a 100 MB message.
pub fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(EXCERPT_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &text[..cut], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_keeps_short_text_and_cuts_long_text() {
        assert_eq!(excerpt("12,ab"), "\"12,ab\"");
        let long = "7".repeat(100_000_000 / 1000);
        let e = excerpt(&long);
        assert!(e.len() < EXCERPT_CHARS + 40, "{e}");
        assert!(e.ends_with("... (100000 bytes)"), "{e}");
        // A cut never splits a character.
        let wide = "é".repeat(200);
        assert!(excerpt(&wide).starts_with("\"éé"));
    }
}
