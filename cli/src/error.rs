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
    /// An output path refused, or an output that could not be put in place.
    Path(tbrw_output::OutputError),
    /// A Parquet dataset not written.
    Dataset(tbrw_export::parquet::DatasetError),
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
            CliError::Import(e) => f.write_str(&import_in_options(e)),
            CliError::Query(e) => match query_in_options(e) {
                Some(m) => f.write_str(&m),
                None => e.fmt(f),
            },
            CliError::Export(tbrw_export::ExportError::Query(e)) => match query_in_options(e) {
                Some(m) => f.write_str(&m),
                None => e.fmt(f),
            },
            CliError::Export(e) => match export_in_options(e) {
                Some(m) => f.write_str(&m),
                None => e.fmt(f),
            },
            CliError::Output(e) => write!(f, "writing the output: {e}"),
            CliError::Path(e) => f.write_str(&output_in_options(e)),
            CliError::Dataset(e) => f.write_str(&dataset_in_options(e)),
            CliError::Msg(m) => f.write_str(m),
        }
    }
}

impl From<tbrw_export::cli::ArgsError> for CliError {
    fn from(e: tbrw_export::cli::ArgsError) -> Self {
        use tbrw_export::cli::ArgsError as A;
        match e {
            A::Path(e) => CliError::Path(e),
            A::Tb5(e) => CliError::Tb5(e),
            A::Query(e) => CliError::Query(e),
            // A kind of error added later: its own words.
            e => CliError::Msg(e.to_string()),
        }
    }
}

impl From<tbrw_output::OutputError> for CliError {
    fn from(e: tbrw_output::OutputError) -> Self {
        CliError::Path(e)
    }
}

impl From<tbrw_export::parquet::DatasetError> for CliError {
    fn from(e: tbrw_export::parquet::DatasetError) -> Self {
        use tbrw_export::parquet::DatasetError as D;
        match e {
            D::Output(e) => CliError::Path(e),
            D::Export(e) => CliError::Export(e),
            e => CliError::Dataset(e),
        }
    }
}

/// An importer's error, with the option that changes it (the library
/// names none).
fn import_in_options(e: &tbrw_import::ImportError) -> String {
    use tbrw_import::ImportError as I;
    let profile_layout = tbrw_elf_profile::SAY_WHICH_LAYOUT;
    let bin_version = tbrw_import::winidea::MAYBE_VERSION_1_0;
    match e {
        I::VoltsNotCurrent { input, found } => {
            format!("{input}: --volts is for current profiles (magic 1); this one's PMU values are {found}")
        }
        I::NotAVoltage { input, volts } => format!("{input}: --volts {volts} is not a voltage"),
        I::Profile(p) if p.what.ends_with(profile_layout) => {
            e.to_string().replace(profile_layout, "say which with --layout")
        }
        I::Invalid { what, .. } if what.ends_with(bin_version) => {
            e.to_string().replace(bin_version, "(a version 1.0 file? --bin-version 1.0)")
        }
        e => e.to_string(),
    }
}

/// A dataset's refusal, with the options that change it.
fn dataset_in_options(e: &tbrw_export::parquet::DatasetError) -> String {
    use tbrw_export::parquet::DatasetError as D;
    match e {
        D::Exists { .. } => format!("{e}: add --append to add runs to it, or --force (-f) to replace it"),
        D::NotADataset { .. } => format!("{e}: neither --append nor --force writes into it"),
        D::OtherVersion { .. } => format!("{e}: --append cannot add to it (--force replaces it)"),
        D::HoldsInput { .. } => format!("{e} (not even --force replaces an input)"),
        D::MadeMeanwhile { .. } => format!("{e} (--append adds to it, --force replaces it)"),
        _ => e.to_string(),
    }
}

/// An output rule's refusal, with the option that changes it (the library
/// names none).
fn output_in_options(e: &tbrw_output::OutputError) -> String {
    use tbrw_output::OutputError as O;
    match e {
        O::Exists { link: true, .. } => {
            format!("{e}: add --force (-f) to replace the link itself (the file it names is left as it is)")
        }
        O::Exists { link: false, .. } => format!("{e}: add --force (-f) to replace it"),
        O::IsInput { .. } => format!("{e} (not even --force replaces an input)"),
        O::IsFile { what, .. } | O::NamesNoFolder { what, .. } => format!("{e}: -o names {what}"),
        _ => e.to_string(),
    }
}

/// A stream's reason for not being exported (vtune-csv), with the option
/// that names its clock when naming one would export it.
pub fn with_clock_option(why: &str) -> String {
    match why.strip_suffix(tbrw_export::vtune_csv::NAME_THE_CLOCK) {
        Some(head) => format!("{head}or say which with --clock"),
        None => why.to_owned(),
    }
}

/// A query's error about what was asked, said with the command line's
/// options and commands (the library names none).
fn query_in_options(e: &tbrw_query::QueryError) -> Option<String> {
    use tbrw_query::QueryError as Q;
    Some(match e {
        Q::NoGrouping => "--by names no grouping".to_owned(),
        Q::NoRowsAsked { file, stream } => format!("{file}: stream {stream}: no sample matches --top 0"),
        Q::GroupingAlone { by } => format!(
            "--by {} does not combine with others (combinations take process, thread, module, function, line, address)",
            by.name()
        ),
        Q::ChildrenByFunctionOnly { by } => format!(
            "--children reports by function only (as perf's --children --sort sym), not --by {}",
            by.iter().map(|b| b.name()).collect::<Vec<_>>().join(",")
        ),
        Q::NothingMatches { file, stream, filters } => {
            format!("{file}: stream {stream}: no sample matches {}", filters_in_options(filters))
        }
        Q::NoSuchModule { file, stream, module } => {
            format!("{file}: stream {stream}: no sample matches --module {module:?} (no module has that name or path)")
        }
        Q::FilterNeedsBinding { file, stream, thread: false } => format!(
            "{file}: stream {stream}: --pid and --module need records that can be bound (a legacy sample record, or ST_IP and ST_PID)"
        ),
        Q::FilterNeedsBinding { file, stream, thread: true } => {
            format!("{file}: stream {stream}: --tid needs records that can be bound or that carry a tid field")
        }
        Q::WeightNeeds { file, stream, weight, missing } => format!(
            "{file}: stream {stream}: --weight {} needs {}, which its records do not have; --weight samples works on every stream",
            weight.name(),
            missing.describe("--volts")
        ),
        Q::TimeUnplaceable { file, stream, .. } => {
            e.to_string().replacen(&format!("{file}: stream {stream}: the time range "), &format!("{file}: stream {stream}: --time "), 1)
        }
        Q::GroupingUnsupported { file, stream, by, why, works } => format!(
            "{file}: stream {stream}: {}; what works: {}",
            why.describe(&format!("--by {}", by.name())),
            by_list(works)
        ),
        Q::TaskReportFiltered { file, stream } => format!(
            "{file}: stream {stream}: the task report of an MTMC stream takes no filter and no --weight: each row is one task"
        ),
        Q::Unsupported { what, .. } if what.contains(tbrw_query::report::CHILDREN) => {
            e.to_string().replace(tbrw_query::report::CHILDREN, "report --children")
        }
        Q::NotTaskStream { file, stream } => {
            format!("{file}: stream {stream} is not an MTMC task stream: --by task needs one")
        }
        Q::NoCallStacks { file, stream } => format!(
            "{file}: stream {stream}: its samples have no call stacks, which --children needs: record with \
             `sampler -g` (`--call-graph fp` or `dwarf`, also `tbrw record`), or import a `perf record -g` recording"
        ),
        Q::NoIntervals { file, stream, what, samples } => {
            let works = match samples {
                true => "`tbrw export flamegraph`, `pprof` or `firefox` show its samples",
                false => "no export of this project draws it",
            };
            format!(
                "{file}: stream {stream} has no intervals (records with a start and an end time stamp, as MTMC \
                 tasks and winIDEA calls have), so {what} has nothing to draw; {works}"
            )
        }
        _ => return None,
    })
}

/// Groupings as `--by` values (`--by thread, --by event`; `none`).
fn by_list(bys: &[tbrw_query::By]) -> String {
    let v: Vec<String> = bys.iter().map(|b| format!("--by {}", b.name())).collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

/// The filters as the options that give them (`--pid 3 --module "libc.so.6" --time 5..`).
fn filters_in_options(f: &tbrw_query::Filters) -> String {
    let given: Vec<String> = f.given().into_iter().map(|(name, value)| format!("--{name} {value}")).collect();
    given.join(" ")
}

/// An export's error about what its options give, said with the command
/// line's options (the library names none).
fn export_in_options(e: &tbrw_export::ExportError) -> Option<String> {
    use tbrw_export::{ExportError as E, Nothing};
    let streams = |why: &[(u32, String)]| -> String {
        why.iter().map(|(n, w)| format!("stream {n}: {w}")).collect::<Vec<_>>().join("; ")
    };
    Some(match e {
        E::FrameKinds { given: None, .. } => {
            "--by names no frame: give some of process, thread, module, function, address".to_owned()
        }
        E::FrameKinds { given: Some(b), kinds } => {
            format!("--by {} is not a flame graph frame: the frames are {}", b.name(), by_list(kinds))
        }
        E::MissingOptions { file, hostname, clock } => {
            let mut give = Vec::new();
            if *hostname {
                give.push("--hostname H (the file records no host name)".to_owned());
            }
            if !clock.is_empty() {
                give.push(format!("--clock C ({})", streams(clock)));
            }
            format!("{file}: give {}", give.join(" and "))
        }
        E::NoCpuField { file, stream } => format!(
            "{file}: stream {stream}: its intervals have no CPU field: --lanes cpu does not work here, --lanes thread does"
        ),
        E::Nothing { file, stream, why: Nothing::ZeroWeight(w) } => {
            format!("{file}: stream {stream}: every sample weighs 0 with --weight {}: nothing to draw", w.name())
        }
        E::NotExported { file, stream, why } => {
            format!("{file}: stream {stream} cannot be exported: {}", with_clock_option(why))
        }
        E::Nothing { file, stream, why: Nothing::NoIntervalInTime } => {
            format!("{file}: stream {stream}: no interval in the --time range: nothing to draw")
        }
        _ => return None,
    })
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Tb5(e) => Some(e),
            CliError::Import(e) => Some(e),
            CliError::Query(e) => Some(e),
            CliError::Export(e) => Some(e),
            CliError::Output(e) => Some(e),
            CliError::Path(e) => Some(e),
            CliError::Dataset(e) => Some(e),
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
