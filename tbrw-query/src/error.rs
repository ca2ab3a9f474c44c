//! The error of a query: which file and stream, and what cannot be
//! answered there. Imports nothing of the crate.

/// Why a query has no answer.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The file has no such stream.
    #[error("{file}: stream {stream} does not exist (the file has {})", stream_count(*.count))]
    NoStream {
        /// The file, as named.
        file: String,
        /// The stream asked for.
        stream: u32,
        /// The streams the file has.
        count: u32,
    },
    /// The filters leave no sample.
    #[error("{file}: stream {stream}: no sample matches {filters}")]
    NothingMatches {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The filters, as the command line spells them.
        filters: String,
    },
    /// The stream cannot give what was asked (a weight without its fields,
    /// a grouping without its records' fields): `what` says why and what works.
    #[error("{file}: stream {stream}: {what}")]
    Unsupported {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// Why, and what works instead.
        what: String,
    },
    /// A record or section is inconsistent with the stream's descriptor or tables.
    #[error("{file}: stream {stream}: {what}")]
    Damaged {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// What, naming the record or field.
        what: String,
    },
    /// A request that is wrong whatever the file (`--by` naming nothing, say).
    #[error("{0}")]
    Request(String),
    /// Reading the TB5 file failed.
    #[error(transparent)]
    Tb5(#[from] tbrw::Error),
    /// Anything else, already phrased.
    #[error("{0}")]
    Message(String),
}

fn stream_count(count: u32) -> String {
    match count {
        0 => "no stream".to_owned(),
        1 => "one stream, 0".to_owned(),
        c => format!("{c} streams, 0 to {}", c - 1),
    }
}

impl QueryError {
    /// An error already phrased.
    pub fn msg(m: impl Into<String>) -> QueryError {
        QueryError::Message(m.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_and_stream() {
        let e = QueryError::NoStream { file: "a.tb5".into(), stream: 3, count: 2 };
        assert_eq!(e.to_string(), "a.tb5: stream 3 does not exist (the file has 2 streams, 0 to 1)");
        let e = QueryError::NothingMatches { file: "a.tb5".into(), stream: 0, filters: "--pid 7".into() };
        assert_eq!(e.to_string(), "a.tb5: stream 0: no sample matches --pid 7");
    }
}
