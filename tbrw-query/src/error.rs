//! The error of a query: which file and stream, and what cannot be
//! answered there. Imports only `query`'s `By`, `Filters` and `Weight`
//! (for the variants about what was asked). Messages are in the library's
//! words and name no option of a front end; a caller with options of its
//! own (the `tbrw` command) matches the variants about what was asked
//! ([`QueryError::NothingMatches`], [`QueryError::WeightNeeds`],
//! [`QueryError::GroupingUnsupported`], [`QueryError::TimeUnplaceable`],
//! [`QueryError::NoCallStacks`], ...) to say which of its options to change.

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
    #[error("{file}: stream {stream}: no sample passes the filters ({filters})")]
    NothingMatches {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The filters given (boxed: the error stays small).
        filters: Box<crate::query::Filters>,
    },
    /// The module filter names no module of the file.
    #[error("{file}: stream {stream}: no module has the name or path {module:?} that the module filter asks for")]
    NoSuchModule {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The module's name or path, as given.
        module: String,
    },
    /// A filter by process or module (or by thread, `thread`) on records
    /// that cannot be bound to processes and modules.
    #[error("{file}: stream {stream}: {}", if *.thread {
        "filtering by thread needs records that can be bound or that carry a tid field"
    } else {
        "filtering by process or module needs records that can be bound (a legacy sample record, or ST_IP and ST_PID)"
    })]
    FilterNeedsBinding {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The filter is by thread (else by process or module).
        thread: bool,
    },
    /// A weight whose fields the stream's records lack.
    #[error(
        "{file}: stream {stream}: weighing samples by {} needs {}, which its records do not have; \
         counting samples works on every stream",
        .weight.name(), .missing.describe("a supply voltage")
    )]
    WeightNeeds {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The weight asked.
        weight: crate::query::Weight,
        /// The fields missing.
        missing: WeightFields,
    },
    /// A time range given in percentages or seconds that the stream's
    /// clock cannot place.
    #[error("{file}: stream {stream}: the time range {range}: {}", match .unit {
        None => "it has no records to measure from; give clock values".to_owned(),
        Some(u) => format!("its times are {u}, not nanoseconds, so seconds cannot be placed; give percentages (10%..20%) or values of that unit"),
    })]
    TimeUnplaceable {
        /// The range, as given.
        range: String,
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The unit of the stream's times; `None`: it has no records.
        unit: Option<String>,
    },
    /// A grouping the stream's records do not give.
    #[error("{file}: stream {stream}: {}; what works: {}", .why.describe(&format!("grouping by {}", .by.name())), by_list(.works))]
    GroupingUnsupported {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
        /// The grouping asked.
        by: crate::query::By,
        /// Why it does not work.
        why: GroupingGap,
        /// The groupings that work.
        works: Vec<crate::query::By>,
    },
    /// The task report asked with a filter or a weight: each of its rows
    /// is one task.
    #[error("{file}: stream {stream}: the task report of an MTMC stream takes no filter and no weight: each row is one task")]
    TaskReportFiltered {
        /// The file.
        file: String,
        /// The stream.
        stream: u32,
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

/// The fields a weight needs that a stream lacks ([`QueryError::WeightNeeds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WeightFields {
    /// A thread CPU time field.
    CpuTime,
    /// A thread CPU time field and a power field.
    CpuTimeAndPower,
    /// A power field.
    Power,
}

impl WeightFields {
    /// What is missing; `volts` names how a current profile gets its
    /// power (a front end names its option).
    pub fn describe(self, volts: &str) -> String {
        const CPUTIME: &str = "a thread CPU time field (cputime_delta 0x4004 or cputime 0x4000: the sampler's recordings and imports of its profiles have one)";
        match self {
            WeightFields::CpuTime => CPUTIME.to_owned(),
            WeightFields::CpuTimeAndPower => format!("{CPUTIME} and a power field (ST_POWER)"),
            WeightFields::Power => {
                format!("a power field (ST_POWER: a power profile, or a current profile imported with {volts})")
            }
        }
    }
}

/// Why a grouping does not work on a stream ([`QueryError::GroupingUnsupported`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupingGap {
    /// Its records cannot be bound (by process, thread or module).
    Unbindable,
    /// Its records have no event index or id, and it has several events.
    NoEvent,
    /// It is not an MTMC task stream (by task).
    NotTaskStream,
}

impl GroupingGap {
    /// Why `asked` (`grouping by task`) does not work, in one clause.
    pub fn describe(self, asked: &str) -> String {
        match self {
            GroupingGap::Unbindable => format!(
                "{asked} does not work here: its records cannot be bound (no legacy sample record, or no ST_IP and ST_PID)"
            ),
            GroupingGap::NoEvent => format!(
                "{asked} does not work here: its records have no event index or event id and it has more than one event"
            ),
            GroupingGap::NotTaskStream => format!("it is not an MTMC task stream, which {asked} needs"),
        }
    }
}

/// Groupings by name (`thread, event`; `none`), for messages; a front end
/// spells them with its own option.
pub(crate) fn by_list(bys: &[crate::query::By]) -> String {
    let v: Vec<&str> = bys.iter().map(|b| b.name()).collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
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
        let filters = crate::query::Filters { pid: Some(7), ..Default::default() };
        let e = QueryError::NothingMatches { file: "a.tb5".into(), stream: 0, filters: Box::new(filters) };
        assert_eq!(e.to_string(), "a.tb5: stream 0: no sample passes the filters (pid 7)");
    }

    /// Every error about what was asked, in the library's words: none
    /// names an option of the command line (`--pid`, `--by`, `--weight`,
    /// `--time`, `--volts`), which the `tbrw` command adds itself.
    #[test]
    fn no_error_names_a_command_line_option() {
        use crate::query::{By, Filters, Weight};
        let (file, stream) = (String::from("a.tb5"), 0);
        let filters = Filters {
            pid: Some(7),
            tid: Some(8),
            module: Some("libc.so.6".into()),
            time: Some((1, 9)),
            time_given: Some("10%..20%".into()),
        };
        let mut all = vec![
            QueryError::NothingMatches { file: file.clone(), stream, filters: Box::new(filters) },
            QueryError::NoSuchModule { file: file.clone(), stream, module: "x.so".into() },
            QueryError::FilterNeedsBinding { file: file.clone(), stream, thread: false },
            QueryError::FilterNeedsBinding { file: file.clone(), stream, thread: true },
            QueryError::TimeUnplaceable { file: file.clone(), stream, range: "1s..".into(), unit: None },
            QueryError::TimeUnplaceable {
                file: file.clone(),
                stream,
                range: "1s..".into(),
                unit: Some("ticks".into()),
            },
            QueryError::TaskReportFiltered { file: file.clone(), stream },
            QueryError::NoRowsAsked { file: file.clone(), stream },
            QueryError::NoGrouping,
            QueryError::GroupingAlone { by: By::Task },
            QueryError::ChildrenByFunctionOnly { by: vec![By::Module] },
            QueryError::NotASampleCount { by: By::Line },
            QueryError::BadTimeRange { range: "x".into(), value: None },
            QueryError::NotTaskStream { file: file.clone(), stream },
            QueryError::NoCallStacks { file: file.clone(), stream },
            QueryError::NoIntervals { file: file.clone(), stream, what: "the timeline".into(), samples: true },
        ];
        for weight in Weight::ALL {
            for missing in [WeightFields::CpuTime, WeightFields::CpuTimeAndPower, WeightFields::Power] {
                all.push(QueryError::WeightNeeds { file: file.clone(), stream, weight, missing });
            }
        }
        for why in [GroupingGap::Unbindable, GroupingGap::NoEvent, GroupingGap::NotTaskStream] {
            let works = vec![By::Thread, By::Event];
            all.push(QueryError::GroupingUnsupported { file: file.clone(), stream, by: By::Module, why, works });
        }
        for e in all {
            assert!(!e.to_string().contains("--"), "{e}");
        }
    }
}
