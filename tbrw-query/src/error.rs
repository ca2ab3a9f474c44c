//! The error of a query: which file and stream, and what cannot be
//! answered there. Imports only `query`'s `By` (for the variants about
//! a grouping). A caller with options of
//! its own (the `tbrw` command) matches the variants about what was asked
//! ([`QueryError::NotTaskStream`], [`QueryError::NoCallStacks`],
//! [`QueryError::NoIntervals`]) to say which of its options to change.

/// Why a query has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A report asked for no rows (its `top` is 0).
    #[error("{file}: stream {stream}: no rows were asked for (the first 0)")]
    NoRowsAsked {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
    },
    /// A report asked with several groupings, none of them named (an
    /// empty list means auto only to [`crate::report::run`]'s options).
    #[error("no grouping was named")]
    NoGrouping,
    /// A grouping that makes a report of its own was combined with others.
    #[error(
        "grouping by {} does not combine with others (combinations take process, thread, module, function, line, address)",
        .by.name()
    )]
    GroupingAlone {
        /// The grouping.
        by: crate::query::By,
    },
    /// Perf's inclusive view (children) was asked by something other than function.
    #[error(
        "the inclusive view (children) is by function only, as perf's by symbol, not by {}",
        .by.iter().map(|b| b.name()).collect::<Vec<_>>().join(",")
    )]
    ChildrenByFunctionOnly {
        /// The groupings asked.
        by: Vec<crate::query::By>,
    },
    /// A grouping the sample counts do not make (task, function, line,
    /// address, combined) reached them.
    #[error("grouping by {} is not a count of samples by process, thread, module or event", .by.name())]
    NotASampleCount {
        /// The grouping.
        by: crate::query::By,
    },
    /// A time range that does not read as one (see [`crate::time`]).
    #[error("{}", match .value {
        Some(v) => format!("{v:?} in time range {range:?} is not a number, N%, or N with s, ms, us or ns"),
        None => format!("time range {range:?} is not A..B (A.. and ..B allowed)"),
    })]
    BadTimeRange {
        /// The range, as given.
        range: String,
        /// Its end that is not a number; `None`: it is not `A..B`.
        value: Option<String>,
    },
    /// Reading the TB5 file failed.
    #[error(transparent)]
    Tb5(#[from] tbrw::Error),
    /// The stream has no data descriptor: its records have no fields.
    #[error("{file}: stream {stream} has no data descriptor")]
    NoDescriptor {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
    },
    /// The stream has no data section.
    #[error("{file}: stream {stream} has no data")]
    NoData {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
    },
    /// The task report was asked of a stream that is not an MTMC task stream.
    #[error("{file}: stream {stream} is not an MTMC task stream: the task report needs one")]
    NotTaskStream {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
    },
    /// A report with callers' totals (children) was asked of a stream
    /// whose samples have no call stacks.
    #[error("{file}: stream {stream}: its samples have no call stacks, which a report with children needs")]
    NoCallStacks {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
    },
    /// Intervals were asked of a stream whose records are not intervals
    /// (a start and an end time stamp, as MTMC tasks and winIDEA calls have).
    #[error(
        "{file}: stream {stream} has no intervals (records with a start and an end time stamp, as MTMC tasks and winIDEA calls have), so {what} has nothing to draw; {}",
        if *samples { "the sample exports (flame graph, pprof, Firefox) show its samples" } else { "no export of this project draws it" }
    )]
    NoIntervals {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// What asked for intervals (`the timeline`).
        what: String,
        /// Whether its records are samples (that the sample exports show).
        samples: bool,
    },
    /// No sample of the stream is in the function asked for.
    #[error("{file}: no sample of stream {stream} is in a function named {function:?}")]
    NoSampleIn {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The function's name, as asked.
        function: String,
    },
    /// A call stack deeper than any the walk follows.
    #[error("stack {stack} has more than {limit} frames")]
    StackTooDeep {
        /// The stack's id.
        stack: u32,
        /// The deepest stack followed.
        limit: usize,
    },
    /// More than the walk's numbers can count.
    #[error("more than {limit} {what} in one walk")]
    TooMany {
        /// What (`distinct frames or stack nodes`).
        what: &'static str,
        /// The limit, as a reader writes it (`2^32 - 1`).
        limit: &'static str,
    },
}

fn stream_count(count: u32) -> String {
    match count {
        0 => "no stream".to_owned(),
        1 => "one stream, 0".to_owned(),
        c => format!("{c} streams, 0 to {}", c - 1),
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
