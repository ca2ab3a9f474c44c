//! `tbrw`: inspect, verify, bind, report on, import into and export from TB5 files.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tbrw_cli::commands::{self, Outcome};
use tbrw_cli::csv::{Clock, CsvOptions};
use tbrw_cli::report::{self, By, ReportOptions};
use tbrw_cli::sampler::ImportOptions;
use tbrw_cli::winidea::BinVersion;
use tbrw_cli::CliError;

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
        /// The stream.
        #[arg(long, default_value_t = 0)]
        stream: u32,
        /// What to group the samples by.
        #[arg(long, value_enum, default_value_t = By::Module)]
        by: By,
        /// Only samples of this process id.
        #[arg(long)]
        pid: Option<u32>,
        /// Only samples of this thread id.
        #[arg(long)]
        tid: Option<u32>,
        /// Only samples in modules with this name or path.
        #[arg(long)]
        module: Option<String>,
        /// Only samples with time in A..B (TSC, time stamp or sample index; A.. and ..B allowed).
        #[arg(long)]
        time: Option<String>,
        /// Only the K largest rows.
        #[arg(long)]
        top: Option<usize>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Imports another collector's data into a new TB5 file.
    #[command(subcommand)]
    Import(Import),
    /// Exports a TB5 file to another format.
    #[command(subcommand)]
    Export(Export),
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
        /// The pid of the profiled process (default 1).
        #[arg(long)]
        pid: Option<u32>,
        /// The host the profile was taken on (recorded in the software section).
        #[arg(long)]
        hostname: Option<String>,
    },
    /// A Linux perf.data file (`-` for standard input, pipe mode).
    Perf {
        /// The perf.data file.
        data: PathBuf,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// An MTMC temporal profiler raw task log.
    Mtmc {
        /// The log.
        log: PathBuf,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// A winIDEA profiler Text1 export, with its TimelineBinary `.BIN` file if there is one.
    Winidea {
        /// The Text1 export.
        export: PathBuf,
        /// The TimelineBinary file (default: EXPORT.BIN next to the export, if there is one).
        #[arg(long)]
        bin: Option<PathBuf>,
        /// The `.BIN` layout (default: detected, see docs/IMPORT.md).
        #[arg(long, value_enum)]
        bin_version: Option<BinVersion>,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
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
        /// Host name for the file names (default: the file's).
        #[arg(long)]
        hostname: Option<String>,
        /// Only this stream.
        #[arg(long)]
        stream: Option<u32>,
        /// The clock of nanosecond time stamps whose name does not say which
        /// one they are (e.g. a winIDEA import's session time).
        #[arg(long, value_enum)]
        clock: Option<Clock>,
    },
    /// An ELF sampler profile, from a stream with the fields an import makes (`-o -`: standard output).
    Sampler {
        /// The TB5 file.
        file: PathBuf,
        /// The profile to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The stream.
        #[arg(long, default_value_t = 0)]
        stream: u32,
    },
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
        Command::Report { file, stream, by, pid, tid, module, time, top, json } => {
            let time = time.map(|t| report::parse_range(&t)).transpose().map_err(CliError::msg)?;
            let opts = ReportOptions { stream, by, pid, tid, module, time, top };
            report(&file, &opts, json, &mut out)
        }
        Command::Import(Import::Sampler { profile, output, pid, hostname }) => {
            import_sampler(&profile, &output, &ImportOptions { pid, hostname }, &mut out)
        }
        Command::Import(Import::Perf { data, output }) => import_perf(&data, &output, &mut out),
        Command::Import(Import::Mtmc { log, output }) => import_mtmc(&log, &output, &mut out),
        Command::Import(Import::Winidea { export, bin, bin_version, output, check }) => {
            import_winidea(&export, bin.as_deref(), bin_version, &output, check, &mut out)
        }
        Command::Export(Export::VtuneCsv { file, output, hostname, stream, clock }) => {
            export_vtune_csv(&file, &output, &CsvOptions { hostname, stream, clock }, &mut out)
        }
        Command::Export(Export::Sampler { file, output, stream }) => export_sampler(&file, stream, &output, &mut out),
    }?;
    out.flush().map_err(|e| CliError::msg(format!("writing the output: {e}")))?;
    Ok(outcome)
}

fn bind(file: &Path, stream: Option<u32>, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let bar = spinner("binding");
    let r = commands::bind(file, stream, &mut |n| bar.set_message(format!("binding stream {n}")), out);
    bar.finish_and_clear();
    r.map(|()| Outcome::Success)
}

fn report(file: &Path, opts: &ReportOptions, json: bool, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let bar = progress(0, "report");
    let mut set = |done: u64, all: u64| {
        bar.set_length(all);
        bar.set_position(done);
    };
    after_bar(&bar, out, |o, _| commands::report(file, opts, json, &mut set, o).map(|()| Outcome::Success))
}

fn import_sampler(
    profile: &Path,
    output: &Path,
    opts: &ImportOptions,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let len = std::fs::metadata(profile).map(|m| m.len()).unwrap_or(0);
    let bar = progress(len, "import");
    let mut set = |n: u64| bar.set_position(n.min(len));
    after_bar(&bar, out, |o, e| {
        commands::import_sampler(profile, output, opts, &mut set, o, e).map(|()| Outcome::Success)
    })
}

fn import_perf(data: &Path, output: &Path, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let len = std::fs::metadata(data).map(|m| m.len()).unwrap_or(0);
    let bar = progress(len, "import");
    let mut set = |n: u64| bar.set_position(n.min(len));
    after_bar(&bar, out, |o, e| commands::import_perf(data, output, &mut set, o, e).map(|()| Outcome::Success))
}

fn import_mtmc(log: &Path, output: &Path, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let len = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    let bar = progress(len, "import");
    let mut set = |n: u64| bar.set_position(n.min(len));
    after_bar(&bar, out, |o, e| commands::import_mtmc(log, output, &mut set, o, e).map(|()| Outcome::Success))
}

fn import_winidea(
    export: &Path,
    bin: Option<&Path>,
    version: Option<BinVersion>,
    output: &Path,
    check: bool,
    out: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let bar = spinner("importing");
    after_bar(&bar, out, |o, e| commands::import_winidea(export, bin, version, output, check, o, e))
}

fn export_vtune_csv(file: &Path, dir: &Path, opts: &CsvOptions, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let bar = spinner("exporting");
    after_bar(&bar, out, |o, e| commands::export_vtune_csv(file, dir, opts, o, e).map(|()| Outcome::Success))
}

fn export_sampler(file: &Path, stream: u32, output: &Path, out: &mut dyn Write) -> Result<Outcome, CliError> {
    let bar = spinner("exporting");
    after_bar(&bar, out, |o, _| commands::export_sampler(file, stream, output, o).map(|()| Outcome::Success))
}

/// Runs `f` with buffers for standard output and error, which are written
/// once the bar is cleared, so that no line lands in the middle of a bar.
fn after_bar(
    bar: &ProgressBar,
    out: &mut dyn Write,
    f: impl FnOnce(&mut dyn Write, &mut dyn Write) -> Result<Outcome, CliError>,
) -> Result<Outcome, CliError> {
    let (mut text, mut notes) = (Vec::new(), Vec::new());
    let r = f(&mut text, &mut notes);
    bar.finish_and_clear();
    let io = |e: std::io::Error| CliError::msg(format!("writing the output: {e}"));
    std::io::stderr().write_all(&notes).map_err(io)?;
    out.write_all(&text).map_err(io)?;
    r
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::StatisticsDiffer) => ExitCode::from(3),
        Err(e) => {
            eprintln!("tbrw: {e}");
            ExitCode::FAILURE
        }
    }
}
