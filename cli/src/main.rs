//! `tbrw`: inspect, verify, bind, report on, import into and export from TB5 files.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tbrw_cli::report::{self, By, ReportOptions};
use tbrw_cli::{csv, mtmc, sampler_tb5, winidea, CliError};

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
        #[arg(long, value_enum, default_value_t = ByArg::Module)]
        by: ByArg,
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
        bin_version: Option<BinVersionArg>,
        /// The TB5 file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Compare the export's STATISTICS with figures recomputed from the
        /// timeline; exit status 3 when any differ.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum BinVersionArg {
    #[value(name = "1.0")]
    V10,
    #[value(name = "1.1")]
    V11,
}

#[derive(Clone, Copy, ValueEnum)]
enum ClockArg {
    Utc,
    MonotonicRaw,
    Rdtsc,
    Qpc,
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
        clock: Option<ClockArg>,
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

#[derive(Clone, Copy, ValueEnum)]
enum ByArg {
    Process,
    Thread,
    Module,
    Event,
    /// MTMC tasks: duration, counter deltas, topdown; totals per thread and core.
    Task,
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

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let io = |e: std::io::Error| CliError::msg(format!("writing the output: {e}"));
    match cli.command {
        Command::Info { file } => {
            let f = tbrw::Tb5File::open(&file)?;
            tbrw::summary::write_summary(&f, &mut out)?;
        }
        Command::Verify { file } => {
            tbrw::Tb5File::open(&file)?.verify()?;
            writeln!(out, "{}: ok", file.display()).map_err(io)?;
        }
        Command::Bind { file, stream } => {
            let f = tbrw::Tb5File::open(&file)?;
            let streams: Vec<u32> = match stream {
                Some(n) => vec![n],
                None => (0..f.stream_count()).collect(),
            };
            drop(f);
            let bar = spinner("binding");
            let mut w = tbrw::Tb5Writer::append(&file)?;
            for n in streams {
                bar.set_message(format!("binding stream {n}"));
                let r = w.dobind(n);
                match r {
                    Ok(()) => writeln!(out, "{}: stream {n} bound", file.display()).map_err(io)?,
                    Err(tbrw::Error::InvalidStream { why, .. }) if stream.is_none() => {
                        writeln!(out, "{}: stream {n} not bound: {why}", file.display()).map_err(io)?
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            w.close()?;
            bar.finish_and_clear();
        }
        Command::Report { file, stream, by, pid, tid, module, time, top, json } => {
            if let ByArg::Task = by {
                let f = tbrw::Tb5File::open(&file)?;
                mtmc::task_report(&f, stream, top, &mut out)?;
                out.flush().map_err(io)?;
                return Ok(ExitCode::SUCCESS);
            }
            let time = time.map(|t| report::parse_range(&t)).transpose().map_err(CliError::msg)?;
            let opts = ReportOptions {
                stream,
                by: match by {
                    ByArg::Process => By::Process,
                    ByArg::Thread => By::Thread,
                    ByArg::Module => By::Module,
                    ByArg::Event => By::Event,
                    ByArg::Task => unreachable!("handled above"),
                },
                pid,
                tid,
                module,
                time,
                top,
                json,
            };
            let f = tbrw::Tb5File::open(&file)?;
            let records = f.stream(stream)?.data()?.map_or(0, |d| d.len());
            let bar = progress(records, "report");
            let r = report::report(&f, &opts, &mut |n| bar.set_position(n))?;
            bar.finish_and_clear();
            report::write_report(&r, &opts, &file, &mut out).map_err(io)?;
        }
        Command::Import(Import::Sampler { profile, output, pid, hostname }) => {
            let len = std::fs::metadata(&profile).map(|m| m.len()).unwrap_or(0);
            let bar = progress(len, "import");
            let opts = sampler_tb5::ImportOptions { pid, hostname };
            let stats = sampler_tb5::import_sampler(&profile, &output, &opts, &mut |n| bar.set_position(n.min(len)))?;
            bar.finish_and_clear();
            writeln!(
                out,
                "{}: {} samples, {} records{}",
                output.display(),
                stats.samples,
                stats.records,
                if stats.compressed { " (from a bzip2 profile)" } else { "" }
            )
            .map_err(io)?;
            if stats.dropped > 0 {
                eprintln!(
                    "tbrw: {}: the profile announces {} samples but holds {} whole ones: {} dropped{}",
                    profile.display(),
                    stats.announced,
                    stats.samples,
                    stats.dropped,
                    if stats.partial_bytes > 0 {
                        format!(" (including a partial sample of {} bytes)", stats.partial_bytes)
                    } else {
                        String::new()
                    }
                );
            }
        }
        Command::Import(Import::Mtmc { log, output }) => {
            let len = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
            let bar = progress(len, "import");
            let stats = mtmc::import_mtmc(&log, &output, &mut |n| bar.set_position(n.min(len)))?;
            bar.finish_and_clear();
            writeln!(
                out,
                "{}: {} tasks, {} counters, {} threads",
                output.display(),
                stats.tasks,
                stats.counters,
                stats.threads
            )
            .map_err(io)?;
            if let Some((line, given, present)) = stats.events_field_mismatch {
                eprintln!(
                    "tbrw: {}: line {line}: the number-of-events field says {given} but {present} counter readings are present; kept as given (further lines not reported)",
                    log.display()
                );
            }
        }
        Command::Import(Import::Winidea { export, bin, bin_version, output, check }) => {
            let bar = spinner("importing");
            let version = bin_version.map(|v| match v {
                BinVersionArg::V10 => winidea::BinVersion::V1_0,
                BinVersionArg::V11 => winidea::BinVersion::V1_1,
            });
            // winIDEA writes the TimelineBinary next to the export, named EXPORT.BIN.
            let bin = bin.or_else(|| {
                let mut p = export.clone().into_os_string();
                p.push(".BIN");
                let p = PathBuf::from(p);
                p.is_file().then(|| {
                    eprintln!("tbrw: reading the timeline in {} too", p.display());
                    p
                })
            });
            let stats = winidea::import_winidea(&export, bin.as_deref(), version, &output);
            bar.finish_and_clear();
            let stats = stats?;
            writeln!(
                out,
                "{}: {} timeline events, {} calls, {} data writes{}",
                output.display(),
                stats.events,
                stats.calls,
                stats.writes,
                match stats.bin_version {
                    Some(winidea::BinVersion::V1_0) => " (.BIN version 1.0)",
                    Some(winidea::BinVersion::V1_1) => " (.BIN version 1.1)",
                    None => "",
                }
            )
            .map_err(io)?;
            if stats.started_before > 0 || stats.unfinished > 0 {
                eprintln!(
                    "tbrw: {}: {} calls were under way when the timeline begins and {} still open at its end; not written as calls",
                    export.display(),
                    stats.started_before,
                    stats.unfinished
                );
            }
            if check {
                writeln!(
                    out,
                    "statistics check: {} figures agree, {} differ, {} not checked",
                    stats.agree,
                    stats.differences.len(),
                    stats.unchecked.len()
                )
                .map_err(io)?;
                for d in &stats.differences {
                    writeln!(out, "  line {}: {}: export {}, timeline {}", d.line, d.what, d.export, d.timeline)
                        .map_err(io)?;
                }
                for (line, what) in &stats.unchecked {
                    writeln!(out, "  line {line}: {what}: not computable from a timeline").map_err(io)?;
                }
                if !stats.differences.is_empty() {
                    out.flush().map_err(io)?;
                    return Ok(ExitCode::from(3));
                }
            }
        }
        Command::Export(Export::VtuneCsv { file, output, hostname, stream, clock }) => {
            let bar = spinner("exporting");
            let clock = clock.map(|c| match c {
                ClockArg::Utc => csv::Clock::Utc,
                ClockArg::MonotonicRaw => csv::Clock::MonotonicRaw,
                ClockArg::Rdtsc => csv::Clock::Rdtsc,
                ClockArg::Qpc => csv::Clock::Qpc,
            });
            let r = csv::export_vtune_csv(&file, &output, &csv::CsvOptions { hostname, stream, clock });
            bar.finish_and_clear();
            let r = r?;
            for p in &r.files {
                writeln!(out, "{}", p.display()).map_err(io)?;
            }
            for (n, why) in &r.skipped {
                eprintln!("tbrw: {}: stream {n} not exported: {why}", file.display());
            }
        }
        Command::Export(Export::Sampler { file, output, stream }) => {
            let bar = spinner("exporting");
            let n = sampler_tb5::export_sampler(&file, stream, &output);
            bar.finish_and_clear();
            let n = n?;
            if output.as_os_str() != "-" {
                writeln!(out, "{}: {n} samples", output.display()).map_err(io)?;
            }
        }
    }
    out.flush().map_err(io)?;
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tbrw: {e}");
            ExitCode::FAILURE
        }
    }
}
