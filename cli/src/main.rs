//! `tbrw`: inspect, verify, bind, report on, import into and export from TB5 files.
//!
//! The dispatch of the grammar ([`args`]) to [`commands`], which holds the
//! work, with the progress bars and the exit status.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tbrw_import::elf_profile::{ImportOptions, ProfileOptions};
use tbrw_import::mtmc::MtmcOptions;
use tbrw_import::winidea::BinVersion;
use tbrw_query::annotate::{AnnotateOptions, View};
use tbrw_query::report::ReportOptions;
use tbrw_query::Weight;

use crate::args::{Cli, Command, Import};
use crate::commands::Outcome;
use crate::error::CliError;

mod args;
mod commands;
mod error;
mod output;
mod symbolize;
mod warning;

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
            let opts = ReportOptions::new(filters.query(weight, &file)?, &by)
                .top(top)
                .children(children)
                .symbols(symbols.options());
            report(&file, &opts, json, &mut out)
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
        Command::Export(export) => {
            let job = export.job()?;
            let bar = spinner("exporting");
            let mut set = |n: u64| bar.set_message(format!("exporting: {n} records"));
            after_bar(&bar, &mut out, |o, e| commands::export(job, &mut set, o, e).map(|()| Outcome::Success))
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

/// The terminal's progress bar as the libraries' [`tbrw_export::Progress`]:
/// told the work done, it shows it, never past its length.
struct BarProgress<'a>(&'a ProgressBar);

impl tbrw_export::Progress for BarProgress<'_> {
    fn done(&mut self, so_far: u64) {
        self.0.set_position(so_far.min(self.0.length().unwrap_or(u64::MAX)));
    }
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
    after_bar(&bar, out, |o, e| commands::report(file, opts, json, &mut set, o, e).map(|()| Outcome::Success))
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
    let mut set = BarProgress(&bar);
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
    let mut set = BarProgress(&bar);
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
    let mut set = BarProgress(&bar);
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
