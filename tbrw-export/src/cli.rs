//! The exports' command-line arguments (feature `cli`, which pulls in
//! clap; a library user's default build has none of it), as inferno keeps
//! its own: each export's `Args` struct sits in the export's module and
//! turns into a [`Job`] (the export with its options, its input and its
//! output), and this module holds what they share: the stream, the sample
//! filters, the weight, the symbol options ([`ViewArgs`]). The `tbrw`
//! command makes one subcommand of each `Args` and applies the output
//! rules to every [`Job`] alike. Paths are met here only as the arguments
//! name them; the exports never see one. Imports `registry` and the
//! crates below this one, never an export module.

use std::path::{Path, PathBuf};

use tbrw_query::file_symbols::{Demangle, SymbolOptions};
use tbrw_query::stacks::ViewOptions;
use tbrw_query::time::{StreamTimes, TimeRange};
use tbrw_query::{Filters, Query, QueryError, Weight};

use crate::registry::Export;

/// A value parser taking the names of `$t::ALL` (`$t::name`), so that
/// `--help` lists exactly what is accepted.
#[macro_export]
#[doc(hidden)]
macro_rules! named {
    ($t:ty) => {
        $crate::named!($t, <$t>::ALL)
    };
    ($t:ty, $all:expr) => {{
        use $crate::cli::clap::builder::TypedValueParser;
        $crate::cli::clap::builder::PossibleValuesParser::new($all.map(|v| v.name()))
            .map(|s| <$t>::from_name(&s).expect("clap accepts only the listed names"))
    }};
}

pub use clap;

/// Why arguments could not be turned into a [`Job`]: a path that is not
/// an input, a file that cannot be read, or a `--time` that does not fit
/// the stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// The input path is not a readable file.
    #[error(transparent)]
    Path(#[from] tbrw_output::OutputError),
    /// The TB5 file could not be opened.
    #[error(transparent)]
    Tb5(#[from] tbrw::Error),
    /// The time range does not parse or does not fit the stream.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// An export with what it reads and where it writes, as its arguments
/// asked.
pub enum Job {
    /// One TB5 file to a file (`-`: standard output) or a folder.
    One {
        /// The TB5 file.
        input: PathBuf,
        /// The file or folder to write.
        output: PathBuf,
        /// Replace an existing output (never an input).
        force: bool,
        /// The export with its options.
        export: Box<dyn Export>,
    },
    /// Many TB5 files into a Parquet dataset folder, which the dataset
    /// export checks, locks and publishes itself (it may add to one).
    #[cfg(feature = "parquet")]
    Dataset {
        /// The TB5 files, one run each.
        files: Vec<PathBuf>,
        /// The dataset folder.
        output: PathBuf,
        /// The dataset's options.
        options: crate::parquet::ParquetOptions,
    },
}

/// An export's arguments: one `tbrw export` subcommand.
pub trait ExportArgs: clap::Args {
    /// The job the arguments ask for. Reads the input only where an
    /// option needs it (a `--time` relative to the recording).
    fn job(self) -> Result<Job, ArgsError>;
}

/// Where the modules' files are looked for: by the reports by function,
/// line or address and annotate (their symbols), and by `import perf`
/// (the unwind tables of `--call-graph dwarf` samples).
#[derive(clap::Args, Debug)]
pub struct ModuleFileArgs {
    /// A root prefixed to every module path (the profiled system's files copied here), like perf's.
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// A directory of separate debug files (.build-id/xx/yyyy.debug, .gnu_debuglink names);
    /// repeatable; /usr/lib/debug is searched after them.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// A directory searched for modules by file name (sampler imports record base names,
    /// recordings of another machine other paths); repeatable.
    #[arg(long = "search-path", value_name = "DIR")]
    pub search_paths: Vec<PathBuf>,
}

/// Where the modules' files and symbols are looked for (reports by
/// function, line or address, and annotate), and how names are shown.
#[derive(clap::Args, Debug)]
pub struct SymbolArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub files: ModuleFileArgs,
    /// The profiled machine's kallsyms, for kernel addresses (default: /proc/kallsyms).
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// No inlined functions as frames of the stacks (flame graphs, exports, --children) nor named on annotate's lines, as perf's --no-inline.
    #[arg(long)]
    pub no_inline: bool,
    /// Use JIT maps (/tmp/perf-PID.map) of any owner, and through a link; by default only
    /// regular files of this user or root are read, as perf requires.
    #[arg(long)]
    pub trust_jit_maps: bool,
    /// A warning per module file that cannot be symbolized (default: one
    /// line per kind, naming the first few).
    #[arg(long)]
    pub verbose: bool,
    /// How C++ and Rust names are shown: short as perf report shows them (Accum<32ul>::sum),
    /// full with the parameters and return type as c++filt prints them, none as the symbol tables spell them.
    #[arg(long, value_enum, value_name = "FORM", default_value = "short")]
    pub demangle: DemangleArg,
}

/// `--demangle`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
#[allow(missing_docs)]
pub enum DemangleArg {
    Short,
    Full,
    None,
}

impl ModuleFileArgs {
    /// The symbol options of these folders, with `kallsyms`.
    pub fn options(self, kallsyms: Option<PathBuf>) -> SymbolOptions {
        SymbolOptions {
            symfs: self.symfs,
            debug_dirs: self.debug_dirs,
            search_paths: self.search_paths,
            kallsyms,
            no_inline: false,
            trust_jit_maps: false,
            verbose: false,
            demangle: Demangle::Short,
        }
    }
}

impl SymbolArgs {
    /// The symbol options these arguments ask for.
    pub fn options(self) -> SymbolOptions {
        let demangle = match self.demangle {
            DemangleArg::Short => Demangle::Short,
            DemangleArg::Full => Demangle::Full,
            DemangleArg::None => Demangle::None,
        };
        SymbolOptions {
            no_inline: self.no_inline,
            trust_jit_maps: self.trust_jit_maps,
            verbose: self.verbose,
            demangle,
            ..self.files.options(self.kallsyms)
        }
    }
}

/// The stream and the sample filters of the commands that read samples
/// (`report`, `annotate`, the viewer exports).
#[derive(clap::Args, Debug)]
pub struct FilterArgs {
    /// The stream.
    #[arg(long, default_value_t = 0)]
    pub stream: u32,
    /// Only samples of this process id.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Only samples of this thread id.
    #[arg(long)]
    pub tid: Option<u32>,
    /// Only samples in modules with this name or path.
    #[arg(long)]
    pub module: Option<String>,
    /// Only samples with time in A..B, end excluded; A.. and ..B allowed.
    /// Each end: a value of the stream's clock (TSC, time stamp or record
    /// index, as `tbrw info` shows them), a percentage of the recording
    /// (10%..20%), or, on nanosecond clocks, time since its first sample
    /// (0.5s..1.5s, 250ms, 40us, 7ns).
    #[arg(long, value_name = "A..B")]
    pub time: Option<String>,
}

impl FilterArgs {
    /// The query these filters make on stream `--stream` of `file`, with `weight`.
    pub fn query(self, weight: Weight, file: &Path) -> Result<Query, ArgsError> {
        let time = time_range(self.time.as_deref(), file, self.stream)?;
        let filters = Filters { pid: self.pid, tid: self.tid, module: self.module, time, time_given: self.time };
        Ok(Query { stream: self.stream, filters, weight })
    }
}

/// `--time` of stream `stream` of `file` as clock values: ends relative to
/// the recording (percentages, durations) are placed on its first and last
/// sample times, read once here.
pub fn time_range(given: Option<&str>, file: &Path, stream: u32) -> Result<Option<(u64, u64)>, ArgsError> {
    let Some(given) = given else { return Ok(None) };
    let range: TimeRange = given.parse()?;
    let name = file.display().to_string();
    if !range.relative() {
        return Ok(Some(range.resolve(&name, stream, None)?));
    }
    tbrw_output::check::check_input(file, "a TB5 file")?;
    let f = tbrw::Tb5File::open(file)?;
    let times = StreamTimes::of(&f, stream)?;
    Ok(Some(range.resolve(&name, stream, times.as_ref())?))
}

/// The input, output, stream, filters and weight of the sample exports.
#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// The TB5 file.
    pub file: PathBuf,
    /// The file to write (`-`: standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Replace OUTPUT if it exists (never an input).
    #[arg(short, long)]
    pub force: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub filters: FilterArgs,
    /// What a sample weighs: 1, a sampler import's cputime, or energy.
    #[arg(long, value_parser = crate::named!(Weight), default_value = "samples")]
    pub weight: Weight,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub symbols: SymbolArgs,
}

impl ViewArgs {
    /// The job of `export` on the view these arguments ask for.
    pub fn job<E: Export + 'static>(self, export: impl FnOnce(ViewOptions) -> E) -> Result<Job, ArgsError> {
        let view = ViewOptions { query: self.filters.query(self.weight, &self.file)?, symbols: self.symbols.options() };
        Ok(Job::One { input: self.file, output: self.output, force: self.force, export: Box::new(export(view)) })
    }
}
