//! `tbrw`: inspect, verify, bind, report on, import into and export from TB5 files.
//!
//! One file on purpose: the command line's whole grammar (clap's types, one
//! per subcommand, their help texts) and the dispatch from it to
//! [`commands`], which holds the work. `--help`, completions and man pages
//! are generated from these types, so they stay beside each other.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tbrw_export::flamegraph::FlameOptions;
use tbrw_export::timeline::{Lanes, TimelineOptions};
use tbrw_export::vtune_csv::{Clock, CsvOptions};
use tbrw_import::elf_profile::{ImportOptions, Layout, ProfileOptions};
use tbrw_import::mtmc::MtmcOptions;
use tbrw_import::winidea::BinVersion;
use tbrw_query::annotate::{AnnotateOptions, View};
use tbrw_query::file_symbols::{Demangle, SymbolOptions};
use tbrw_query::report::{By, ReportOptions};
use tbrw_query::stacks::{ViewOptions, LEVELS};
use tbrw_query::time::{StreamTimes, TimeRange};
use tbrw_query::{Filters, Query, Weight};

use crate::commands::{Outcome, ParquetMode, ParquetOptions};
use crate::error::CliError;

mod commands;
mod error;
mod output;
mod symbolize;

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
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
struct ModuleFileArgs {
    /// A root prefixed to every module path (the profiled system's files copied here), like perf's.
    #[arg(long, value_name = "DIR")]
    symfs: Option<PathBuf>,
    /// A directory of separate debug files (.build-id/xx/yyyy.debug, .gnu_debuglink names);
    /// repeatable; /usr/lib/debug is searched after them.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// A directory searched for modules by file name (sampler imports record base names,
    /// recordings of another machine other paths); repeatable.
    #[arg(long = "search-path", value_name = "DIR")]
    search_paths: Vec<PathBuf>,
}

/// Where the modules' files and symbols are looked for (reports by
/// function, line or address, and annotate), and how names are shown.
#[derive(clap::Args)]
struct SymbolArgs {
    #[command(flatten)]
    files: ModuleFileArgs,
    /// The profiled machine's kallsyms, for kernel addresses (default: /proc/kallsyms).
    #[arg(long, value_name = "FILE")]
    kallsyms: Option<PathBuf>,
    /// No inlined functions as frames of the stacks (flame graphs, exports, --children) nor named on annotate's lines, as perf's --no-inline.
    #[arg(long)]
    no_inline: bool,
    /// Use JIT maps (/tmp/perf-PID.map) of any owner, and through a link; by default only
    /// regular files of this user or root are read, as perf requires.
    #[arg(long)]
    trust_jit_maps: bool,
    /// A warning per module file that cannot be symbolized (default: one
    /// line per kind, naming the first few).
    #[arg(long)]
    verbose: bool,
    /// How C++ and Rust names are shown: short as perf report shows them (Accum<32ul>::sum),
    /// full with the parameters and return type as c++filt prints them, none as the symbol tables spell them.
    #[arg(long, value_enum, value_name = "FORM", default_value = "short")]
    demangle: DemangleArg,
}

/// `--demangle`.
#[derive(Clone, Copy, ValueEnum)]
enum DemangleArg {
    Short,
    Full,
    None,
}

impl ModuleFileArgs {
    fn options(self, kallsyms: Option<PathBuf>) -> SymbolOptions {
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
    fn options(self) -> SymbolOptions {
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
enum Import {
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
enum Export {
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
struct FilterArgs {
    /// The stream.
    #[arg(long, default_value_t = 0)]
    stream: u32,
    /// Only samples of this process id.
    #[arg(long)]
    pid: Option<u32>,
    /// Only samples of this thread id.
    #[arg(long)]
    tid: Option<u32>,
    /// Only samples in modules with this name or path.
    #[arg(long)]
    module: Option<String>,
    /// Only samples with time in A..B, end excluded; A.. and ..B allowed.
    /// Each end: a value of the stream's clock (TSC, time stamp or record
    /// index, as `tbrw info` shows them), a percentage of the recording
    /// (10%..20%), or, on nanosecond clocks, time since its first sample
    /// (0.5s..1.5s, 250ms, 40us, 7ns).
    #[arg(long, value_name = "A..B")]
    time: Option<String>,
}

impl FilterArgs {
    /// The query these filters make on stream `--stream` of `file`, with `weight`.
    fn query(self, weight: Weight, file: &Path) -> Result<Query, CliError> {
        let time = time_range(self.time.as_deref(), file, self.stream)?;
        let filters = Filters { pid: self.pid, tid: self.tid, module: self.module, time, time_given: self.time };
        Ok(Query { stream: self.stream, filters, weight })
    }
}

/// `--time` of stream `stream` of `file` as clock values: ends relative to
/// the recording (percentages, durations) are placed on its first and last
/// sample times, read once here.
fn time_range(given: Option<&str>, file: &Path, stream: u32) -> Result<Option<(u64, u64)>, CliError> {
    let Some(given) = given else { return Ok(None) };
    let range: TimeRange = given.parse()?;
    let name = file.display().to_string();
    if !range.relative() {
        return Ok(Some(range.resolve(&name, stream, None)?));
    }
    let f = commands::open(file)?;
    let times = StreamTimes::of(&f, stream)?;
    Ok(Some(range.resolve(&name, stream, times.as_ref())?))
}

/// The input, output, stream, filters and weight of the sample exports.
#[derive(clap::Args)]
struct ViewArgs {
    /// The TB5 file.
    file: PathBuf,
    /// The file to write (`-`: standard output).
    #[arg(short, long)]
    output: PathBuf,
    /// Replace OUTPUT if it exists (never an input).
    #[arg(short, long)]
    force: bool,
    #[command(flatten)]
    filters: FilterArgs,
    /// What a sample weighs: 1, a sampler import's cputime, or energy.
    #[arg(long, value_parser = named!(Weight), default_value = "samples")]
    weight: Weight,
    #[command(flatten)]
    symbols: SymbolArgs,
}

impl ViewArgs {
    /// The file, the output, `--force` and the options.
    fn split(self) -> Result<(PathBuf, PathBuf, bool, ViewOptions), CliError> {
        let opts = ViewOptions { query: self.filters.query(self.weight, &self.file)?, symbols: self.symbols.options() };
        Ok((self.file, self.output, self.force, opts))
    }
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {percent}% {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_owned());
    bar
}

/// A spinner on stderr for work without a known length (when stderr is a terminal).
fn spinner(what: &str) -> ProgressBar {
    let target =
        if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(None, target);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

fn run(cli: Cli) -> Result<Outcome, CliError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let outcome = match cli.command {
        Command::Info { file } => commands::info(&file, &mut out).map(|()| Outcome::Success),
        Command::Verify { file } => commands::verify(&file, &mut out).map(|()| Outcome::Success),
        Command::Bind { file, stream } => bind(&file, stream, &mut out),
        Command::Report { file, filters, by, top, json, weight, children, symbols } => {
            let opts = ReportOptions { query: filters.query(weight, &file)?, by: By::Auto, top };
            report(&file, &opts, &by, &symbols.options(), json, children, &mut out)
        }
        Command::Annotate { file, function, filters, json, asm, source, symbols } => {
            let query = filters.query(Weight::Samples, &file)?;
            let view = match (asm, source) {
                (true, _) => View::Asm,
                (_, true) => View::Source,
                _ => View::Auto,
            };
            let opts = AnnotateOptions { view, symbols: symbols.options() };
            let bar = spinner("annotating");
            after_bar(&bar, &mut out, |o, e| {
                commands::annotate(&file, &query, &function, &opts, json, o, e).map(|()| Outcome::Success)
            })
        }
        Command::Symbolize { file, symbols } => {
            let bar = spinner("symbolizing");
            after_bar(&bar, &mut out, |o, e| {
                symbolize::command(&file, &symbols.options(), o, e).map(|()| Outcome::Success)
            })
        }
        Command::Convert { input, output, force } => {
            commands::convert(&input, &output, force, &mut out).map(|()| Outcome::Success)
        }
        Command::Record { .. } => unreachable!("tbrw record runs before any other command"),
        Command::Completions { shell } => completions(&shell, &mut out),
        Command::Man { dir } => man_pages(&dir, &mut out),
        Command::Import(Import::Sampler { profile, output, force, pid, hostname, layout, volts }) => import_sampler(
            &profile,
            &output,
            force,
            &ImportOptions { pid, hostname },
            &ProfileOptions { layout, volts },
            &mut out,
        ),
        Command::Import(Import::Perf { data, output, force, no_unwind, files }) => {
            let symbols = files.options(None);
            let opts = tbrw_import::perf::PerfOptions {
                unwind: !no_unwind,
                // Unwinding needs the modules' unwind tables only: no
                // kernel symbols, no source lines.
                symbols: tbrw_symbols::Config {
                    kernel: tbrw_symbols::KernelSymbols::Off,
                    lines: false,
                    ..symbols.config()
                },
            };
            import_perf(&data, &output, &opts, force, &mut out)
        }
        Command::Import(Import::Mtmc { log, output, force, pid }) => import_mtmc(&log, &output, force, pid, &mut out),
        Command::Import(Import::Winidea { export, bin, bin_version, output, force, check }) => {
            import_winidea(&export, bin.as_deref(), bin_version, &output, check, force, &mut out)
        }
        Command::Export(Export::VtuneCsv { file, output, force, hostname, stream, clock }) => {
            export_vtune_csv(&file, &output, force, &CsvOptions { hostname, stream, clock }, &mut out)
        }
        Command::Export(Export::Sampler { file, output, force, stream, layout }) => {
            export_sampler(&file, stream, &output, layout, force, &mut out)
        }
        Command::Export(Export::Flamegraph { view, by, folded, title }) => {
            let (file, output, force, opts) = view.split()?;
            let fopts = FlameOptions { by, folded, title };
            let bar = spinner("exporting");
            after_bar(&bar, &mut out, |o, e| {
                commands::export_flamegraph(&file, &output, &opts, &fopts, force, o, e).map(|()| Outcome::Success)
            })
        }
        Command::Export(Export::Pprof { view, fold_unresolved }) => {
            let (file, output, force, opts) = view.split()?;
            let popts = tbrw_export::pprof::PprofOptions { fold_unresolved };
            let bar = spinner("exporting");
            after_bar(&bar, &mut out, |o, e| {
                commands::export_pprof(&file, &output, &opts, &popts, force, o, e).map(|()| Outcome::Success)
            })
        }
        Command::Export(Export::Firefox { view }) => {
            let (file, output, force, opts) = view.split()?;
            let bar = spinner("exporting");
            after_bar(&bar, &mut out, |o, e| {
                commands::export_firefox(&file, &output, &opts, force, o, e).map(|()| Outcome::Success)
            })
        }
        Command::Export(Export::Timeline { file, output, force, stream, lanes, width, time }) => {
            let time = time_range(time.as_deref(), &file, stream)?;
            let opts = TimelineOptions { stream, lanes, width, time };
            let bar = spinner("exporting");
            after_bar(&bar, &mut out, |o, e| {
                commands::export_timeline(&file, &output, &opts, force, o, e).map(|()| Outcome::Success)
            })
        }
        Command::Export(Export::Parquet { files, output, force, append, hostname, functions, symbols }) => {
            let mode = match (force, append) {
                (true, _) => ParquetMode::Force,
                (_, true) => ParquetMode::Append,
                _ => ParquetMode::New,
            };
            let opts = ParquetOptions { hostname, mode, symbols: functions.then(|| symbols.options()) };
            export_parquet(&files, &output, &opts, &mut out)
        }
    }?;
    out.flush().map_err(CliError::Output)?;
    Ok(outcome)
}

/// `tbrw completions SHELL`: clap_complete's script for the command line as defined here.
fn completions(shell: &str, out: &mut dyn Write) -> Result<Outcome, CliError> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let shell = match shell {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        "elvish" => Shell::Elvish,
        _ => Shell::PowerShell,
    };
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "tbrw", &mut text);
    out.write_all(&text).map_err(CliError::Output)?;
    Ok(Outcome::Success)
}

/// `tbrw man DIR`: one roff page per command and subcommand, named as
/// `man` finds them (`tbrw-export-flamegraph.1` for `man
/// tbrw-export-flamegraph`), each written whole before it is named.
fn man_pages(dir: &Path, out: &mut dyn Write) -> Result<Outcome, CliError> {
    use clap::CommandFactory;
    std::fs::create_dir_all(dir).map_err(|e| CliError::io(dir, e))?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut pages = Vec::new();
    fn walk(cmd: &clap::Command, name: String, pages: &mut Vec<(String, clap::Command)>) {
        // A page's title and usage name the command as typed (`tbrw-export-pprof`).
        let named = cmd.clone().name(name.clone()).bin_name(name.replace('-', " "));
        pages.push((name.clone(), named));
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, format!("{name}-{}", sub.get_name()), pages);
        }
    }
    walk(&cmd, "tbrw".to_owned(), &mut pages);
    let mut written = Vec::new();
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut roff = Vec::new();
        clap_mangen::Man::new(page).render(&mut roff).map_err(|e| CliError::io(&path, e))?;
        output::write_output(&path, |w| w.write_all(&roff))?;
        written.push(path);
    }
    for p in written {
        writeln!(out, "{}", p.display()).map_err(CliError::Output)?;
    }
    Ok(Outcome::Success)
}

fn bind(file: &Path, stream: Option<u32>, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let bar = spinner("binding");
    let r = commands::bind(file, stream, &mut |n| bar.set_message(format!("binding stream {n}")), out);
    bar.finish_and_clear();
    r.map(|()| Outcome::Success)
}

fn report(
    file: &Path,
    opts: &ReportOptions,
    by: &[By],
    symbols: &SymbolOptions,
    json: bool,
    children: bool,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let bar = progress(0, "report");
    let mut set = |done: u64, all: u64| {
        bar.set_length(all);
        bar.set_position(done);
    };
    let how = commands::ReportHow { json, children };
    after_bar(&bar, out, |o, e| {
        commands::report(file, opts, by, symbols, how, &mut set, o, e).map(|()| Outcome::Success)
    })
}

fn import_sampler(
    profile: &Path,
    output: &Path,
    force: bool,
    opts: &ImportOptions,
    popts: &ProfileOptions,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let len = std::fs::metadata(profile).map(|m| m.len()).unwrap_or(0);
    let bar = progress(len, "import");
    let mut set = |n: u64| bar.set_position(n.min(len));
    after_bar(&bar, out, |o, e| {
        let args = commands::SamplerArgs { opts, profile: popts, force };
        commands::import_sampler(profile, output, args, &mut set, o, e).map(|()| Outcome::Success)
    })
}

fn import_perf(
    data: &Path,
    output: &Path,
    opts: &tbrw_import::perf::PerfOptions,
    force: bool,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let len = std::fs::metadata(data).map(|m| m.len()).unwrap_or(0);
    let bar = progress(len, "import");
    let mut set = |n: u64| bar.set_position(n.min(len));
    after_bar(&bar, out, |o, e| {
        commands::import_perf(data, output, opts, &mut set, force, o, e).map(|()| Outcome::Success)
    })
}

fn import_mtmc(
    log: &Path,
    output: &Path,
    force: bool,
    pid: Option<u32>,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let len = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    let bar = progress(len, "import");
    let mut set = |n: u64| bar.set_position(n.min(len));
    after_bar(&bar, out, |o, e| {
        commands::import_mtmc(log, output, &MtmcOptions { pid }, force, &mut set, o, e).map(|()| Outcome::Success)
    })
}

fn import_winidea(
    export: &Path,
    bin: Option<&Path>,
    version: Option<BinVersion>,
    output: &Path,
    check: bool,
    force: bool,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let bar = spinner("importing");
    after_bar(&bar, out, |o, e| {
        commands::import_winidea(export, output, commands::WinIdeaArgs { bin, version, check, force }, o, e)
    })
}

fn export_vtune_csv(
    file: &Path,
    dir: &Path,
    force: bool,
    opts: &CsvOptions,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let bar = spinner("exporting");
    after_bar(&bar, out, |o, e| commands::export_vtune_csv(file, dir, opts, force, o, e).map(|()| Outcome::Success))
}

fn export_sampler(
    file: &Path,
    stream: u32,
    output: &Path,
    layout: Option<Layout>,
    force: bool,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let bar = spinner("exporting");
    after_bar(&bar, out, |o, _| {
        commands::export_sampler(file, stream, output, layout, force, o).map(|()| Outcome::Success)
    })
}

fn export_parquet(
    files: &[PathBuf],
    dir: &Path,
    opts: &ParquetOptions,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let bar = spinner("exporting");
    let mut set = |n: u64| bar.set_message(format!("exporting: {n} records"));
    after_bar(&bar, out, |o, e| commands::export_parquet(files, dir, opts, &mut set, o, e).map(|()| Outcome::Success))
}

/// Runs `f` with buffers for standard output and error, which are written
/// once the bar is cleared, so that no line lands in the middle of a bar.
/// Without a bar (standard error is not a terminal), `f` writes straight
/// to them, buffered: a report of millions of rows is not held whole.
fn after_bar(
    bar: &ProgressBar,
    out: &mut dyn Write,
    f: impl FnOnce(&mut dyn Write, &mut dyn Write) -> Result<Outcome, CliError>,
) -> Result<Outcome, CliError> {
    if bar.is_hidden() {
        let mut text = std::io::BufWriter::with_capacity(1 << 16, out);
        let mut notes = std::io::LineWriter::new(std::io::stderr());
        let r = f(&mut text, &mut notes);
        bar.finish_and_clear();
        let io = CliError::Output;
        notes.flush().map_err(io)?;
        text.flush().map_err(io)?;
        return r;
    }
    let (mut text, mut notes) = (Vec::new(), Vec::new());
    let r = f(&mut text, &mut notes);
    bar.finish_and_clear();
    let io = CliError::Output;
    std::io::stderr().write_all(&notes).map_err(io)?;
    out.write_all(&text).map_err(io)?;
    r
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The collector runs on the main thread before any other starts: it
    // blocks the signals it forwards to the program in this thread.
    if let Command::Record { args } = cli.command {
        return sampler::cli::tbrw_record(args);
    }
    match run(cli) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::StatisticsDiffer) => ExitCode::from(3),
        // The reader of the output went away (`| head`): the work is done
        // (outputs are printed after it), nothing is left to say.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            // Messages name files and what they hold: escaped, on one line.
            eprintln!("tbrw: {}", tbrw::text::Escaped(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}
