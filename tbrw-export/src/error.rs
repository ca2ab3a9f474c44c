//! The error of an export: the query's, the output's, or a stream the
//! format cannot show. Imports nothing of the crate.

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The samples could not be read or grouped.
    #[error(transparent)]
    Query(#[from] tbrw_query::QueryError),
    /// Reading the TB5 file failed.
    #[error(transparent)]
    Tb5(#[from] tbrw::Error),
    /// Writing the output failed.
    #[error("writing the {what}: {source}")]
    Write {
        /// What was being written (`flame graph`, `profile`, a table's name).
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The format cannot show this stream: `what` says why and which export can.
    #[error("{file}: stream {stream}: {what}")]
    Unsupported {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// Why, and what to use instead.
        what: String,
    },
    /// Anything else, already phrased.
    #[error("{0}")]
    Message(String),
}

impl ExportError {
    /// An error already phrased.
    pub fn msg(m: impl Into<String>) -> ExportError {
        ExportError::Message(m.into())
    }

    /// A failed write of `what`.
    pub fn write(what: impl Into<String>, source: std::io::Error) -> ExportError {
        ExportError::Write { what: what.into(), source }
    }
}
