//! The error of an export: the query's, the output's, a stream the format
//! cannot show, or options that do not fit. Imports nothing of the crate.
//! Messages name no option of the command line: a caller that has options
//! of its own (the `tbrw` command) matches the variants that are about
//! options ([`ExportError::FrameKinds`], [`ExportError::MissingOptions`],
//! [`ExportError::NoCpuField`], [`Nothing`]) and says it in its own terms.

use std::fmt;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The samples could not be read or grouped.
    #[error(transparent)]
    Query(#[from] tbrw_query::QueryError),
    /// Reading the TB5 file failed.
    #[error(transparent)]
    Tb5(#[from] tbrw::Error),
    /// Writing the output failed: the operating system's error, kept as
    /// the source (its [`kind`](std::io::Error::kind) says a full disk, a
    /// closed pipe).
    #[error("writing the {what}: {source}")]
    Write {
        /// What was being written (`flame graph`, `profile`, `timeline`).
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A table of a Parquet output could not be written.
    #[error("{file}: writing Parquet: {source}")]
    Table {
        /// The table's file, relative to the output folder.
        file: String,
        /// The Parquet writer's error (an I/O error among its causes when
        /// writing failed).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The profile could not be encoded or decoded (not an I/O failure).
    #[error("{what} the profile: {source}")]
    Encode {
        /// `encoding` or `decoding`.
        what: &'static str,
        /// The encoder's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Sorting a stream's records by time in work files (bounded memory)
    /// failed.
    #[error("{file}: stream {stream}: sorting its {records} records by time in work files of {}: {source}", dir.display())]
    WorkFiles {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// Its records.
        records: u64,
        /// The folder of the work files.
        dir: std::path::PathBuf,
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
    /// A record or table of the stream contradicts another.
    #[error("{file}: stream {stream}: {what}")]
    Damaged {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// What, naming the record or field.
        what: String,
    },
    /// The stream gives nothing to draw or show.
    #[error("{file}: stream {stream}: {why}")]
    Nothing {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// Why.
        why: Nothing,
    },
    /// A flame graph's frame kinds are none (`given` is `None`), or one
    /// of them is no frame kind of a flame graph.
    #[error("{}", frame_kinds(*given, kinds))]
    FrameKinds {
        /// The grouping given that is no frame kind.
        given: Option<tbrw_query::By>,
        /// The frame kinds there are.
        kinds: Vec<tbrw_query::By>,
    },
    /// The export needs what neither the options nor the file give.
    #[error("{file}: {}", missing(*hostname, clock))]
    MissingOptions {
        /// The file.
        file: String,
        /// A host name is needed: the file records none.
        hostname: bool,
        /// A clock is needed, for these streams (each with why), which
        /// are all the streams to export.
        clock: Vec<(u32, String)>,
    },
    /// The host name cannot be part of a file name.
    #[error("host name {} cannot be part of a file name", tbrw_schema::excerpt::excerpt(host))]
    HostName {
        /// The host name.
        host: String,
    },
    /// A timeline by CPU of intervals that have no CPU field.
    #[error(
        "{file}: stream {stream}: its intervals have no CPU field: lanes by CPU do not work here, lanes by thread do"
    )]
    NoCpuField {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
    },
    /// The one stream asked for cannot be exported.
    #[error("{file}: stream {stream} cannot be exported: {why}")]
    NotExported {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// Why.
        why: String,
    },
    /// No stream of the file can be exported.
    #[error("{file}: no stream can be exported ({})", streams_why(why))]
    NoStreamExported {
        /// The file.
        file: String,
        /// Each stream, and why it cannot.
        why: Vec<(u32, String)>,
    },
    /// An environment variable the export reads holds no value it takes.
    #[error("{var}={value:?}: not a positive number of records")]
    Environment {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// More than a format's numbers can count.
    #[error("more than {limit} {what} in one run")]
    TooMany {
        /// What (`stack nodes`).
        what: &'static str,
        /// The limit, as a reader would write it (`2^31`).
        limit: &'static str,
    },
    /// An export this build leaves out (a cargo feature of tbrw-export).
    #[error("this build {what} (feature `{feature}` of tbrw-export)")]
    NotBuilt {
        /// The feature.
        feature: &'static str,
        /// What is missing, and what to do instead.
        what: &'static str,
    },
}

/// Why a stream gives nothing to draw or show.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nothing {
    /// Every sample weighs 0 by this weight.
    ZeroWeight(tbrw_query::Weight),
    /// No interval ends in the time range asked for.
    NoIntervalInTime,
    /// No interval ends.
    NoEndedInterval,
    /// The stream has no interval.
    NoInterval,
}

impl fmt::Display for Nothing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nothing::ZeroWeight(w) => write!(f, "every sample weighs 0 by the weight {}: nothing to draw", w.name()),
            Nothing::NoIntervalInTime => f.write_str("no interval in the time range: nothing to draw"),
            Nothing::NoEndedInterval => f.write_str("no interval that ends: nothing to draw"),
            Nothing::NoInterval => f.write_str("no interval: nothing to show"),
        }
    }
}

fn frame_kinds(given: Option<tbrw_query::By>, kinds: &[tbrw_query::By]) -> String {
    let kinds: Vec<&str> = kinds.iter().map(|b| b.name()).collect();
    let kinds = kinds.join(", ");
    match given {
        None => format!("no frame kind given: give some of {kinds}"),
        Some(b) => format!("{} is not a flame graph frame: the frames are {kinds}", b.name()),
    }
}

fn missing(hostname: bool, clock: &[(u32, String)]) -> String {
    let mut needs = Vec::new();
    if hostname {
        needs.push("a host name (the file records none)".to_owned());
    }
    if !clock.is_empty() {
        needs.push(format!("a clock ({})", streams_why(clock)));
    }
    format!("give {}", needs.join(" and "))
}

/// `stream N: why` for each, joined by `; `.
pub(crate) fn streams_why(why: &[(u32, String)]) -> String {
    why.iter().map(|(n, w)| format!("stream {n}: {w}")).collect::<Vec<_>>().join("; ")
}

impl ExportError {
    /// A failed write of `what`.
    pub fn write(what: impl Into<String>, source: std::io::Error) -> ExportError {
        ExportError::Write { what: what.into(), source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbrw_query::By;

    /// The library's words: no error of an export names an option of the
    /// command line (`--by`, `--clock`, `--lanes`), which the `tbrw`
    /// command adds itself; nor does a query error an export passes on.
    #[test]
    fn no_error_names_a_command_line_option() {
        let (file, stream) = (String::from("a.tb5"), 1);
        let filters = tbrw_query::Filters { pid: Some(7), ..Default::default() };
        let mut all = vec![
            ExportError::Query(tbrw_query::QueryError::NothingMatches {
                file: file.clone(),
                stream,
                filters: Box::new(filters),
            }),
            ExportError::write("profile", std::io::Error::other("disk full")),
            ExportError::FrameKinds { given: None, kinds: vec![By::Thread, By::Function] },
            ExportError::FrameKinds { given: Some(By::Line), kinds: vec![By::Thread] },
            ExportError::MissingOptions { file: file.clone(), hostname: true, clock: vec![(0, "no clock".into())] },
            ExportError::HostName { host: "a/b".into() },
            ExportError::NoCpuField { file: file.clone(), stream },
            ExportError::Environment { var: "TBRW_ROWS", value: "x".into() },
        ];
        let weights = tbrw_query::Weight::ALL.map(Nothing::ZeroWeight);
        for why in weights.into_iter().chain([Nothing::NoIntervalInTime, Nothing::NoEndedInterval, Nothing::NoInterval])
        {
            all.push(ExportError::Nothing { file: file.clone(), stream, why });
        }
        for e in all {
            assert!(!e.to_string().contains("--"), "{e}");
        }
    }
}
