//! The command line's grammar: clap's types, one per subcommand, with
//! their help texts, and the options they turn into (the exports' own
//! arguments and the shared filter and symbol arguments come from
//! tbrw-export's `cli` feature). `--help`, completions
//! and man pages are generated from these types; `main.rs` dispatches them
//! to [`crate::commands`], which holds the work.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Parser, Subcommand};
use tbrw_export::cli::{ArgsError, ExportArgs, FilterArgs, Job, ModuleFileArgs, SymbolArgs};
use tbrw_import::elf_profile::Layout;
use tbrw_import::winidea::BinVersion;
use tbrw_query::By;
use tbrw_query::Weight;

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
        #[arg(long, value_parser = tbrw_export::named!(By), value_delimiter = ',', default_value = "auto")]
        by: Vec<By>,
        /// Only the K largest rows.
        #[arg(long)]
        top: Option<usize>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// What the percentages weigh: samples, a sampler import's cputime, or energy.
        #[arg(long, value_parser = tbrw_export::named!(Weight), default_value = "samples")]
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
        #[arg(long, value_parser = tbrw_export::named!(Layout))]
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
        #[arg(long, value_parser = tbrw_export::named!(BinVersion))]
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

/// The registry of exports, one line each: the `tbrw export` subcommands
/// (each export's arguments and help text sit in its module of
/// tbrw-export, feature `cli`) and their jobs, which `main.rs` runs
/// through one function.
macro_rules! exports {
    ($($name:ident($args:ty),)*) => {
        #[derive(Subcommand)]
        pub(crate) enum Export {
            $($name($args),)*
        }

        impl Export {
            /// The export, its input and its output, as the arguments ask.
            pub(crate) fn job(self) -> Result<Job, ArgsError> {
                match self {
                    $(Export::$name(args) => args.job(),)*
                }
            }
        }
    };
}

exports! {
    VtuneCsv(tbrw_export::vtune_csv::CsvArgs),
    Sampler(tbrw_export::elf_profile::SamplerArgs),
    Flamegraph(tbrw_export::flamegraph::FlamegraphArgs),
    Pprof(tbrw_export::pprof::PprofArgs),
    Firefox(tbrw_export::firefox::FirefoxArgs),
    Timeline(tbrw_export::timeline::TimelineArgs),
    Parquet(tbrw_export::parquet::ParquetArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Each `tbrw export` subcommand runs the export of its own name.
    #[test]
    fn each_export_subcommand_is_its_export() {
        let cli = Cli::command();
        let export = cli.find_subcommand("export").expect("tbrw export");
        let names: Vec<&str> = export.get_subcommands().map(|c| c.get_name()).collect();
        assert_eq!(names, ["vtune-csv", "sampler", "flamegraph", "pprof", "firefox", "timeline", "parquet"]);
        for name in names {
            let parsed = Cli::try_parse_from(["tbrw", "export", name, "in.tb5", "-o", "out"]).unwrap();
            let Command::Export(e) = parsed.command else { panic!("{name}: not an export") };
            match e.job().unwrap() {
                Job::One { input, output, force, export } => {
                    assert_eq!(export.name(), name);
                    assert_eq!((input.to_str(), output.to_str(), force), (Some("in.tb5"), Some("out"), false));
                }
                Job::Dataset { files, .. } => assert_eq!((name, files.len()), ("parquet", 1)),
            }
        }
    }
}
