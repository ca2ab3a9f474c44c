//! The command line's grammar: clap's types, one per subcommand, with
//! their help texts, and the options they turn into. `--help`, completions
//! and man pages are generated from these types; `main.rs` dispatches them
//! to [`crate::commands`], which holds the work.

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use tbrw_export::timeline::Lanes;
use tbrw_export::vtune_csv::Clock;
use tbrw_import::elf_profile::Layout;
use tbrw_import::winidea::BinVersion;
use tbrw_query::file_symbols::{Demangle, SymbolOptions};
use tbrw_query::report::By;
use tbrw_query::stacks::{ViewOptions, LEVELS};
use tbrw_query::time::{StreamTimes, TimeRange};
use tbrw_query::{Filters, Query, Weight};

use crate::error::CliError;

/// A value parser taking the names of `$t::ALL` (`$t::name`), so that
/// `--help` lists exactly what is accepted.
macro_rules! named {
    ($t:ty) => {
        named!($t, <$t>::ALL)
    };
    ($t:ty, $all:expr) => {
        PossibleValuesParser::new($all.map(|v| v.name()))
            .map(|s| <$t>::from_name(&s).expect("clap accepts only the listed names"))
    };
}

#[derive(Parser)]
#[command(name = "tbrw", version, about = "Inspect, verify, bind, report on, import into and export from TB5 files")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Sections and streams at a glance.
    Info {
        /// The TB5 file.
        file: PathBuf,
    },
    /// Checks a file completely (checksums, required sections, descriptors, event indices, binds).
    Verify {
        /// The TB5 file.
        file: PathBuf,
    },
    /// Binds streams and stores the result in the file (an atomic append).
    Bind {
        /// The TB5 file.
        file: PathBuf,
        /// Only this stream (default: every stream that can be bound).
        #[arg(long)]
        stream: Option<u32>,
    },
    /// Sample counts and percentages, binding in memory if the file is not bound.
    Report {
        /// The TB5 file.
        file: PathBuf,
        #[command(flatten)]
        filters: FilterArgs,
        /// What to group the samples by (auto: module for samples that can be
        /// bound, task for MTMC task streams, thread for winIDEA calls); a
        /// comma list combines groupings (`--by module,function`). function,
        /// line and address read the modules' symbols (see --symfs and
        /// docs/SYMBOLS.md).
        #[arg(long, value_parser = named!(By), value_delimiter = ',', default_value = "auto")]
        by: Vec<By>,
        /// Only the K largest rows.
        #[arg(long)]
        top: Option<usize>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// What the percentages weigh: samples, a sampler import's cputime, or energy.
        #[arg(long, value_parser = named!(Weight), default_value = "samples")]
        weight: Weight,
        /// Per function, its inclusive share (samples with it anywhere in
        /// their call stack, once per sample) beside its self share, sorted
        /// by the inclusive one, as `perf report --children`: for files with
        /// call stacks (`sampler -g`, `perf record -g`).
        #[arg(long)]
        children: bool,
        #[command(flatten)]
        symbols: SymbolArgs,
    },
    /// One function's samples per instruction (with its source lines
    /// interleaved) or per source line, with percentages of the function's
    /// samples, as perf annotate shows them.
    Annotate {
        /// The TB5 file.
        file: PathBuf,
        /// The function (as `report --by function` names it).
        #[arg(long)]
        function: String,
        #[command(flatten)]
        filters: FilterArgs,
        /// JSON instead of text (the same rows: instructions, lines, addresses).
        #[arg(long)]
        json: bool,
        /// The instruction view: each instruction of the function
        /// (x86-64, from the module's ELF file) with its samples, source
        /// lines interleaved, the three hottest marked. The default when
        /// the function has fewer sampled source lines than sampled instructions.
        #[arg(long, conflicts_with = "source")]
        asm: bool,
        /// The source-line view: samples per source line.
        #[arg(long)]
        source: bool,
        #[command(flatten)]
        symbols: SymbolArgs,
    },
    /// Stores the functions the samples hit in the TB5 file, so that reports by
    /// function still name them where the modules' files are missing.
    Symbolize {
        /// The TB5 file (changed in place, as `tbrw bind` does).
        file: PathBuf,
        #[command(flatten)]
        symbols: SymbolArgs,
    },
    /// Rewrites a TB file (this project's old layout, or any layout `info`
    /// reads) as a new file in Intel's layout, the layout every command
    /// writes (docs/FORMAT.md, "Converting a file").
    Convert {
        /// The TB file to read.
        input: PathBuf,
        /// The file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace an existing output file.
        #[arg(short, long)]
        force: bool,
    },
    /// Imports another collector's data into a new TB5 file.
    #[command(subcommand)]
    Import(Import),
    /// Exports a TB5 file to another format.
    #[command(subcommand)]
    Export(Export),
    /// Runs a program and records it straight to TB5, as `perf record`
    /// does: the `sampler` collector (docs/SAMPLER.md), with `-f` for
    /// `--force` and `-F` for the frequency. `tbrw record --help` lists its options.
    #[command(disable_help_flag = true)]
    Record {
        /// The collector's options, then the program and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
    /// Prints a completion script for a shell (`tbrw completions bash >
    /// ~/.local/share/bash-completion/completions/tbrw`; README, "Completions
    /// and man pages").
    Completions {
        /// The shell.
        #[arg(value_parser = PossibleValuesParser::new(["bash", "zsh", "fish", "elvish", "powershell"]))]
        shell: String,
    },
    /// Writes the man pages, `tbrw.1` and one per subcommand (`tbrw-report.1`,
    /// `tbrw-export-flamegraph.1`, ...), into DIR (created if missing);
    /// prints their paths.
    Man {
        /// The folder to write them in (`~/.local/share/man/man1`, say).
        dir: PathBuf,
    },
}

/// Where the modules' files are looked for: by the reports by function,
/// line or address and annotate (their symbols), and by `import perf`
/// (the unwind tables of `--call-graph dwarf` samples).
#[derive(clap::Args)]
pub(crate) struct ModuleFileArgs {
    /// A root prefixed to every module path (the profiled system's files copied here), like perf's.
    #[arg(long, value_name = "DIR")]
    pub(crate) symfs: Option<PathBuf>,
    /// A directory of separate debug files (.build-id/xx/yyyy.debug, .gnu_debuglink names);
    /// repeatable; /usr/lib/debug is searched after them.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub(crate) debug_dirs: Vec<PathBuf>,
    /// A directory searched for modules by file name (sampler imports record base names,
    /// recordings of another machine other paths); repeatable.
    #[arg(long = "search-path", value_name = "DIR")]
    pub(crate) search_paths: Vec<PathBuf>,
}

/// Where the modules' files and symbols are looked for (reports by
/// function, line or address, and annotate), and how names are shown.
#[derive(clap::Args)]
pub(crate) struct SymbolArgs {
    #[command(flatten)]
    pub(crate) files: ModuleFileArgs,
    /// The profiled machine's kallsyms, for kernel addresses (default: /proc/kallsyms).
    #[arg(long, value_name = "FILE")]
    pub(crate) kallsyms: Option<PathBuf>,
    /// No inlined functions as frames of the stacks (flame graphs, exports, --children) nor named on annotate's lines, as perf's --no-inline.
    #[arg(long)]
    pub(crate) no_inline: bool,
    /// Use JIT maps (/tmp/perf-PID.map) of any owner, and through a link; by default only
    /// regular files of this user or root are read, as perf requires.
    #[arg(long)]
    pub(crate) trust_jit_maps: bool,
    /// A warning per module file that cannot be symbolized (default: one
    /// line per kind, naming the first few).
    #[arg(long)]
    pub(crate) verbose: bool,
    /// How C++ and Rust names are shown: short as perf report shows them (Accum<32ul>::sum),
    /// full with the parameters and return type as c++filt prints them, none as the symbol tables spell them.
    #[arg(long, value_enum, value_name = "FORM", default_value = "short")]
    pub(crate) demangle: DemangleArg,
}

/// `--demangle`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum DemangleArg {
    Short,
    Full,
    None,
}

impl ModuleFileArgs {
    pub(crate) fn options(self, kallsyms: Option<PathBuf>) -> SymbolOptions {
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
    pub(crate) fn options(self) -> SymbolOptions {
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

#[derive(Subcommand)]
pub(crate) enum Import {
    /// An ELF sampler profile (plain or bzip2; `-` for standard input).
    Sampler {
        /// The profile.
        profile: PathBuf,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// The pid of the profiled process (default 1).
        #[arg(long)]
        pid: Option<u32>,
        /// The host the profile was taken on (recorded in the software section).
        #[arg(long)]
        hostname: Option<String>,
        /// The writer's layout, when the bytes fit more than one (default: detected).
        #[arg(long, value_parser = named!(Layout))]
        layout: Option<Layout>,
        /// The voltage of a current profile: records get power = current x volts.
        #[arg(long)]
        volts: Option<f64>,
    },
    /// A Linux perf.data file (`-` for standard input, pipe mode).
    Perf {
        /// The perf.data file (`-`: standard input, perf's pipe mode).
        data: PathBuf,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// Keep `--call-graph dwarf` samples' stack copies unread: their
        /// stacks hold the kernel's frames only (faster; the user frames are lost).
        #[arg(long)]
        no_unwind: bool,
        /// Where the unwinder of `--call-graph dwarf` samples finds the modules' files.
        #[command(flatten)]
        files: ModuleFileArgs,
    },
    /// An MTMC temporal profiler raw task log.
    Mtmc {
        /// The log.
        log: PathBuf,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// The pid of the profiled process (default: from a log named
        /// mtmc_raw_<address>, see docs/IMPORT.md).
        #[arg(long)]
        pid: Option<u32>,
    },
    /// A winIDEA profiler Text1 export, with its TimelineBinary `.BIN` file if there is one.
    Winidea {
        /// The Text1 export.
        export: PathBuf,
        /// The TimelineBinary file (default: EXPORT.BIN next to the export, if there is one).
        #[arg(long)]
        bin: Option<PathBuf>,
        /// The `.BIN` layout (default: detected, see docs/IMPORT.md).
        #[arg(long, value_parser = named!(BinVersion))]
        bin_version: Option<BinVersion>,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// Compare the export's STATISTICS with figures recomputed from the
        /// timeline; exit status 3 when any differ.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum Export {
    /// VTune "CSV file with external data": one file per stream in DIR.
    VtuneCsv {
        /// The TB5 file.
        file: PathBuf,
        /// The folder to write the CSV files in (created if missing).
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// Host name for the file names (default: the file's).
        #[arg(long)]
        hostname: Option<String>,
        /// Only this stream.
        #[arg(long)]
        stream: Option<u32>,
        /// The clock of nanosecond time stamps whose name does not say which
        /// one they are (e.g. a winIDEA import's session time).
        #[arg(long, value_parser = named!(Clock))]
        clock: Option<Clock>,
    },
    /// An ELF sampler profile, from a stream with the fields an import makes (`-o -`: standard output).
    Sampler {
        /// The TB5 file.
        file: PathBuf,
        /// The profile to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// The stream.
        #[arg(long, default_value_t = 0)]
        stream: u32,
        /// The layout to write (default: the one the stream was imported from, else head).
        #[arg(long, value_parser = named!(Layout))]
        layout: Option<Layout>,
    },
    /// An interactive SVG flame graph of a sample stream (`--folded`: folded-stack text).
    Flamegraph {
        #[command(flatten)]
        view: ViewArgs,
        /// The frames of each stack, outermost first: a comma list of
        /// process, thread, module, function, address.
        #[arg(long, value_parser = named!(By, LEVELS), value_delimiter = ',', default_value = "process,module,function")]
        by: Vec<By>,
        /// Write folded stacks (`frame;frame;... count` lines) instead of the SVG.
        #[arg(long)]
        folded: bool,
        /// The SVG's title (default: the file's name and the stream).
        #[arg(long)]
        title: Option<String>,
    },
    /// Google's profile.proto (gzip-compressed), for `go tool pprof`, speedscope, Perfetto.
    Pprof {
        #[command(flatten)]
        view: ViewArgs,
        /// One location per module for the addresses of modules whose files
        /// are not here (and of none), not one per address: a smaller
        /// profile, whose addresses `pprof -symbolize` can no longer name.
        #[arg(long)]
        fold_unresolved: bool,
    },
    /// The Firefox Profiler's processed format (gzip-compressed JSON), for profiler.firefox.com.
    Firefox {
        #[command(flatten)]
        view: ViewArgs,
    },
    /// An SVG timeline of an interval stream (MTMC tasks, winIDEA calls).
    Timeline {
        /// The TB5 file.
        file: PathBuf,
        /// The SVG to write (`-`: standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it exists (never an input).
        #[arg(short, long)]
        force: bool,
        /// The stream.
        #[arg(long, default_value_t = 0)]
        stream: u32,
        /// One lane per thread or per CPU.
        #[arg(long, value_parser = named!(Lanes), default_value = "thread")]
        lanes: Lanes,
        /// The width in pixels.
        #[arg(long, default_value_t = 1200)]
        width: u32,
        /// Only intervals overlapping A..B (the start field's clock values,
        /// percentages of the recording, or time since its start: as
        /// `report --time`).
        #[arg(long, value_name = "A..B")]
        time: Option<String>,
    },
    /// Parquet tables for DuckDB, Spark and the like: one dataset folder for
    /// many files (partitioned by host and run, docs/PARQUET.md).
    Parquet {
        /// The TB5 files (one run each).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The dataset folder (created; an existing one needs --force or --append).
        #[arg(short, long)]
        output: PathBuf,
        /// Replace OUTPUT if it is a dataset of this command (never one holding an input).
        #[arg(short, long, conflicts_with = "append")]
        force: bool,
        /// Add the runs to the dataset OUTPUT without rewriting it.
        #[arg(long)]
        append: bool,
        /// The host of every run (default: each file's own host name).
        #[arg(long)]
        hostname: Option<String>,
        /// Symbolize the samples: the functions table and function_id (see the symbol options).
        #[arg(long)]
        functions: bool,
        #[command(flatten)]
        symbols: SymbolArgs,
    },
}

/// The stream and the sample filters of the commands that read samples
/// (`report`, `annotate`, the viewer exports).
#[derive(clap::Args)]
pub(crate) struct FilterArgs {
    /// The stream.
    #[arg(long, default_value_t = 0)]
    pub(crate) stream: u32,
    /// Only samples of this process id.
    #[arg(long)]
    pub(crate) pid: Option<u32>,
    /// Only samples of this thread id.
    #[arg(long)]
    pub(crate) tid: Option<u32>,
    /// Only samples in modules with this name or path.
    #[arg(long)]
    pub(crate) module: Option<String>,
    /// Only samples with time in A..B, end excluded; A.. and ..B allowed.
    /// Each end: a value of the stream's clock (TSC, time stamp or record
    /// index, as `tbrw info` shows them), a percentage of the recording
    /// (10%..20%), or, on nanosecond clocks, time since its first sample
    /// (0.5s..1.5s, 250ms, 40us, 7ns).
    #[arg(long, value_name = "A..B")]
    pub(crate) time: Option<String>,
}

impl FilterArgs {
    /// The query these filters make on stream `--stream` of `file`, with `weight`.
    pub(crate) fn query(self, weight: Weight, file: &Path) -> Result<Query, CliError> {
        let time = time_range(self.time.as_deref(), file, self.stream)?;
        let filters = Filters { pid: self.pid, tid: self.tid, module: self.module, time, time_given: self.time };
        Ok(Query { stream: self.stream, filters, weight })
    }
}

/// `--time` of stream `stream` of `file` as clock values: ends relative to
/// the recording (percentages, durations) are placed on its first and last
/// sample times, read once here.
pub(crate) fn time_range(given: Option<&str>, file: &Path, stream: u32) -> Result<Option<(u64, u64)>, CliError> {
    let Some(given) = given else { return Ok(None) };
    let range: TimeRange = given.parse()?;
    let name = file.display().to_string();
    if !range.relative() {
        return Ok(Some(range.resolve(&name, stream, None)?));
    }
    let f = crate::commands::open(file)?;
    let times = StreamTimes::of(&f, stream)?;
    Ok(Some(range.resolve(&name, stream, times.as_ref())?))
}

/// The input, output, stream, filters and weight of the sample exports.
#[derive(clap::Args)]
pub(crate) struct ViewArgs {
    /// The TB5 file.
    pub(crate) file: PathBuf,
    /// The file to write (`-`: standard output).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Replace OUTPUT if it exists (never an input).
    #[arg(short, long)]
    pub(crate) force: bool,
    #[command(flatten)]
    pub(crate) filters: FilterArgs,
    /// What a sample weighs: 1, a sampler import's cputime, or energy.
    #[arg(long, value_parser = named!(Weight), default_value = "samples")]
    pub(crate) weight: Weight,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
}

impl ViewArgs {
    /// The file, the output, `--force` and the options.
    pub(crate) fn split(self) -> Result<(PathBuf, PathBuf, bool, ViewOptions), CliError> {
        let opts = ViewOptions { query: self.filters.query(self.weight, &self.file)?, symbols: self.symbols.options() };
        Ok((self.file, self.output, self.force, opts))
    }
}
