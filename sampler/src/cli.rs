//! The command line: options, the output path (given or the default), the
//! checks on it, and the summary printed at the end. The same options serve
//! the `sampler` binary ([`run`]) and `tbrw record` ([`tbrw_record`]); they
//! differ only in `-f`, which is the seed's frequency in `sampler` and
//! `--force` in `tbrw record`, as in every other `tbrw` command.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use tbrw_output::work_file::Writing;
use tbrw_output::OutputError;

use crate::callstack::CallGraph;
use crate::pmu::Pmu;
use crate::tracer::{Config, Outcome, Threads, Tracer};
/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A TB5 file (VTune's sampling-file format).
    Tb5,
    /// The original sampler's binary profile.
    Profile,
}

/// The options, as `sampler` and `tbrw record` take them (see [`Flavor`]).
#[derive(Debug, Parser)]
#[command(
    name = "sampler",
    version,
    about = "Sample a command's threads under ptrace (pc, CPU time, CPU, PMU value) and record a TB5 file",
    long_about = "Sample a command's threads under ptrace (pc, CPU time, CPU, PMU value) and record a TB5 file.\n\n\
        By default a thread is sampled once per period of its own CPU time (on-CPU, as perf's cpu-clock): \
        where the CPU time went. --off-cpu samples every thread at every tick, waiting ones too. \
        See docs/SAMPLER.md.",
    override_usage = "sampler [options] [--] <command> [arguments]"
)]
pub struct Args {
    /// Write to this file (default: sampler.tb5 in the working folder, or
    /// sampler.N.tb5 when that exists).
    #[arg(short, long, value_name = "file")]
    pub output: Option<PathBuf>,
    /// Write no file, only the summary (the seed's run without -o).
    #[arg(long, conflicts_with = "output")]
    pub no_output: bool,
    /// PMU value taken with each sample: `none`, `dummy`, `rapl`,
    /// `hwmon:<chip>/<sensor>_input`, `file:<path>`.
    #[arg(
        short,
        long = "pmu-arg",
        value_name = "arg",
        default_value = "none",
        help = "PMU value taken with each sample: none, dummy, rapl, hwmon:<chip>/<sensor>_input, file:<path>"
    )]
    pub pmu: String,
    /// Target sampling frequency; the one reached is printed with -d.
    #[arg(short = 'F', long, value_name = "hertz", default_value_t = 1000.0)]
    pub frequency: f64,
    /// Print the figures of the run at the end.
    #[arg(short, long)]
    pub debug: bool,
    /// Output format (default: tb5, or profile for a file named *.profile or *.prof).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Sample every thread at every tick, waiting or not (wall-clock view,
    /// for off-CPU analysis), instead of once per period of each thread's
    /// CPU time. The profile format always does.
    #[arg(long, visible_alias = "all-threads")]
    pub off_cpu: bool,
    /// Record call stacks by frame pointers, as perf's `-g` (the same as
    /// `--call-graph fp`).
    #[arg(short = 'g', conflicts_with = "call_graph")]
    pub g: bool,
    /// Record call stacks: `fp` (frame pointers), `dwarf` (the modules'
    /// DWARF CFI over an 8 KiB copy of each stack top, for code built
    /// without frame pointers), or `none` (the default).
    #[arg(long, value_name = "mode", value_parser = clap::builder::PossibleValuesParser::new(["fp", "dwarf", "none"]))]
    pub call_graph: Option<String>,
    /// The command and its arguments (`--` before it is optional).
    #[arg(required = true, trailing_var_arg = true, num_args = 1.., value_name = "command")]
    pub command: Vec<String>,
}

/// Which program's spelling of the options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// The `sampler` binary: `-f` and `-F` are the frequency (`-f` is the seed's).
    Sampler,
    /// `tbrw record`: `-F` is the frequency (as in perf) and `-f` is
    /// `--force`, as in every `tbrw` command.
    TbrwRecord,
}

impl Flavor {
    /// The program name in usage lines and messages.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Sampler => "sampler",
            Flavor::TbrwRecord => "tbrw record",
        }
    }
}

/// Parses `argv` (the program name first) as `flavor` spells the options.
pub fn parse<I, T>(flavor: Flavor, argv: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cmd = Args::command().name(flavor.name()).bin_name(flavor.name());
    let cmd = match flavor {
        Flavor::Sampler => cmd.mut_arg("frequency", |a| a.visible_short_alias('f')),
        Flavor::TbrwRecord => {
            cmd.mut_arg("force", |a| a.short('f')).override_usage("tbrw record [options] [--] <command> [arguments]")
        }
    };
    Args::from_arg_matches(&cmd.try_get_matches_from(argv)?)
}

/// The `sampler` binary: runs the command line `argv` (the program name
/// first, as `std::env::args_os()` gives it). The exit status is the
/// command's (128 + N when signal N killed it), 1 when recording failed, 2
/// for a bad command line.
pub fn run<I, T>(argv: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    ExitCode::from(status(Flavor::Sampler, argv))
}

/// `tbrw record [options] [--] <command> [arguments]`: `args` are the
/// arguments after `record`. The same options and exit status as [`run`],
/// with `-f` for `--force` (see [`Flavor::TbrwRecord`]).
pub fn tbrw_record<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv = std::iter::once(OsString::from("tbrw record")).chain(args.into_iter().map(Into::into));
    ExitCode::from(status(Flavor::TbrwRecord, argv))
}

/// [`run`] and [`tbrw_record`] with the status as a number.
pub fn status<I, T>(flavor: Flavor, argv: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = match parse(flavor, argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match record(&args, flavor.name()) {
        // A status is 0..=255 (128 + a signal number at most).
        Ok(code) => u8::try_from(code).unwrap_or(1),
        Err(e) => {
            eprintln!("{}: {}", flavor.name(), tbrw::text::Escaped(&e.to_string()));
            1
        }
    }
}

/// The format a file name asks for.
pub fn format_of(path: &Path, given: Option<Format>) -> Format {
    given.unwrap_or_else(|| match path.extension().and_then(|e| e.to_str()) {
        Some("profile" | "prof") => Format::Profile,
        _ => Format::Tb5,
    })
}

/// Why the output cannot be `path`.
pub fn check_output(path: &Path, command: &str, force: bool) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!(
            "{}: is a folder; give a file name, such as {}",
            path.display(),
            path.join(DEFAULT_STEM.to_owned() + ".tb5").display()
        ));
    }
    // The output rules of every tbrw writer (docs/FORMAT.md, "Output
    // paths"): a link is replaced itself, never written through; a planted
    // one, a device, a FIFO or a socket is refused; the command's
    // executable is an input, never overwritten.
    let exe = crate::tracer::resolve_command(command);
    let inputs: Vec<&Path> = exe.iter().map(PathBuf::as_path).collect();
    tbrw_output::check::check_output(path, &inputs, force, Writing::Whole).map_err(|e| match e {
        OutputError::Exists { link: true, .. } => {
            format!("{e}; give --force to replace the link itself (the file it names is left as it is)")
        }
        OutputError::Exists { link: false, .. } => format!("{e}; give --force to overwrite it"),
        OutputError::IsInput { .. } => {
            format!("{}: the output would overwrite the command's executable", path.display())
        }
        e => e.to_string(),
    })
}

/// The default output's name without its extension.
pub const DEFAULT_STEM: &str = "sampler";

/// How many numbered names the default output tries before giving up.
const MAX_NUMBERED: u32 = 10_000;

/// The output when none is given: `sampler.tb5` (`sampler.profile` for the
/// profile format) in `dir`; when it exists, the first free of
/// `sampler.2.tb5`, `sampler.3.tb5`... so that no recording is lost. With
/// `force`, `sampler.tb5` itself.
pub fn default_output(dir: &Path, format: Format, force: bool) -> Result<PathBuf, String> {
    let ext = match format {
        Format::Tb5 => "tb5",
        Format::Profile => "profile",
    };
    let first = dir.join(format!("{DEFAULT_STEM}.{ext}"));
    // symlink_metadata: a dangling link is a name taken too.
    if force || first.symlink_metadata().is_err() {
        return Ok(first);
    }
    (2..=MAX_NUMBERED)
        .map(|n| dir.join(format!("{DEFAULT_STEM}.{n}.{ext}")))
        .find(|p| p.symlink_metadata().is_err())
        .ok_or_else(|| {
            format!(
                "{}: {DEFAULT_STEM}.{ext} to {DEFAULT_STEM}.{MAX_NUMBERED}.{ext} all exist; give -o or --force",
                dir.display()
            )
        })
}

fn summary(o: &Outcome, debug: bool, name: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &o.stats;
    if debug {
        writeln!(out, "{name}: samples:          {} ({} thread samples)", s.ticks, s.records)?;
        if s.idle_skipped > 0 {
            writeln!(
                out,
                "{name}: not sampled:      {} thread ticks (the thread had not used a period of CPU time)",
                s.idle_skipped
            )?;
        }
        if s.repeats > 0 {
            writeln!(
                out,
                "{name}: repeated samples: {} (a thread used several periods of CPU time between two ticks)",
                s.repeats
            )?;
        }
        if s.end_samples > 0 {
            writeln!(
                out,
                "{name}: samples at ends:   {} (CPU time threads used after their last sample)",
                s.end_samples
            )?;
        }
        if s.handler_entries > 0 || s.signal_stops > 0 {
            writeln!(
                out,
                "{name}: signal stops:     {} ticks found a thread taking a signal, not recorded then; {} stops at a handler's entry read where the signal interrupted the thread",
                s.signal_stops, s.handler_entries
            )?;
        }
        writeln!(out, "{name}: reached frequency: {:.1} Hz", s.reached_hz())?;
        writeln!(out, "{name}: wall time:        {:.6} s", s.wall_ns() as f64 * 1e-9)?;
        let pct = if s.wall_ns() > 0 { s.stopped_ns as f64 * 100.0 / s.wall_ns() as f64 } else { 0.0 };
        writeln!(out, "{name}: target stopped:   {:.6} s ({pct:.1}% of wall time)", s.stopped_ns as f64 * 1e-9)?;
        writeln!(
            out,
            "{name}: threads seen:     {} in {} process instance(s), {} renamed",
            o.history.threads.len() as u64 - s.renames,
            o.history.processes.len(),
            s.renames
        )?;
        writeln!(out, "{name}: modules:          {} ({} map re-reads)", o.history.modules.len(), s.map_rereads)?;
        if s.missed_ticks > 0 {
            writeln!(out, "{name}: missed ticks:     {} (a tick took longer than the period)", s.missed_ticks)?;
        }
    }
    if s.unknown_pcs > 0 {
        writeln!(out, "{name}: {} samples in no executable mapping (code freed since, or generated)", s.unknown_pcs)?;
    }
    if s.lost_samples > 0 {
        writeln!(out, "{name}: {} thread samples lost (threads ended while being read)", s.lost_samples)?;
    }
    for sig in &s.forwarded_signals {
        writeln!(out, "{name}: passed signal {sig} on to the command")?;
    }
    for n in &s.notes {
        // Notes name the traced program's files: escaped (tbrw::text).
        writeln!(out, "{name}: {}", tbrw::text::Escaped(n))?;
    }
    Ok(())
}

/// Records `args.command` as `args` say; the command's exit status.
pub fn record(args: &Args, name: &str) -> Result<i32, Box<dyn std::error::Error>> {
    if !(args.frequency.is_finite() && args.frequency > 0.0 && args.frequency <= 1_000_000.0) {
        return Err(format!("-F {}: give a frequency in (0, 1000000] Hz", args.frequency).into());
    }
    let output = match (&args.output, args.no_output) {
        (_, true) => None,
        (Some(o), false) => Some(o.clone()),
        // Relative to the working folder, and printed so: `sampler.tb5`.
        (None, false) => Some(default_output(Path::new(""), args.format.unwrap_or(Format::Tb5), args.force)?),
    };
    if let Some(o) = &output {
        check_output(o, &args.command[0], args.force)?;
    }
    let format = output.as_deref().map(|o| format_of(o, args.format));
    // The profile format records every thread at every sample, as the
    // seed's does; the on-CPU rule is the TB5 recording's default.
    let threads = if args.off_cpu || format == Some(Format::Profile) { Threads::All } else { Threads::OnCpu };
    let pmu = Pmu::open(&args.pmu)?;
    let pmu_info = pmu.as_ref().map(|p| (p.kind(), p.spec.clone()));
    let period_ns = (1e9 / args.frequency).round().max(1.0) as u64;
    let call_graph = match (args.g, args.call_graph.as_deref()) {
        (true, _) => CallGraph::Fp,
        (false, Some(mode)) => CallGraph::from_name(mode).unwrap_or_default(),
        (false, None) => CallGraph::None,
    };
    let tracer = Tracer::start(&args.command, Config { period_ns, pmu, threads, call_graph })?;
    let outcome = match (&output, format) {
        (Some(path), Some(Format::Tb5)) => crate::tb5::record(
            path,
            tracer,
            &crate::tb5::RunInfo {
                command_line: shell_words(&args.command),
                period_ns,
                pmu: pmu_info,
                threads,
                call_graph,
            },
        )?,
        (Some(path), Some(Format::Profile)) => crate::elf_profile::record(path, tracer, pmu_info.map(|p| p.0))?,
        _ => tracer.run(&mut |_, _| Ok(()))?,
    };
    let mut err = std::io::stderr().lock();
    summary(&outcome, args.debug, name, &mut err)?;
    if let Some(e) = &outcome.sink_error {
        return Err(
            format!("writing the output failed, recording stopped and the command was left running: {e}").into()
        );
    }
    if let Some(path) = &output {
        // As perf says where perf.data went: the name matters most when
        // it was chosen here.
        let h = &outcome.history;
        let pids: std::collections::HashSet<u32> = h.processes.iter().map(|p| p.pid).collect();
        let tids: std::collections::HashSet<(u32, u32)> = h.threads.iter().map(|t| (t.pid, t.tid)).collect();
        writeln!(
            err,
            "{name}: wrote {} ({} samples, {}; {} threads in {} processes seen)",
            path.display(),
            outcome.stats.records,
            match threads {
                Threads::OnCpu => "on-CPU",
                Threads::All => "every thread at every tick",
            },
            tids.len(),
            pids.len(),
        )?;
    }
    Ok(outcome.exit.status())
}

/// The command line as a shell would read it back.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler(args: &[&str]) -> Result<Args, clap::Error> {
        parse(Flavor::Sampler, std::iter::once("sampler").chain(args.iter().copied()))
    }

    #[test]
    fn options_as_the_seed_spells_them() {
        let a = sampler(&["--output=x.tb5", "-p", "dummy", "-f", "200", "-d", "--", "ls", "-l"]).unwrap();
        assert_eq!(a.output.as_deref(), Some(Path::new("x.tb5")));
        assert_eq!((a.pmu.as_str(), a.frequency, a.debug), ("dummy", 200.0, true));
        assert_eq!(a.command, ["ls", "-l"]);
        assert!(!a.off_cpu && !a.no_output && !a.force);
        assert!(sampler(&["-o", "x"]).is_err());
        assert_eq!(format_of(Path::new("a.tb5"), None), Format::Tb5);
        assert_eq!(format_of(Path::new("a.profile"), None), Format::Profile);
        assert_eq!(format_of(Path::new("a.tb5"), Some(Format::Profile)), Format::Profile);
        assert_eq!(shell_words(&["a b".into(), "c".into(), "it's".into()]), r"'a b' c 'it'\''s'");
    }

    #[test]
    fn perf_habits() {
        // -F as perf spells it; the command without `--`, its own options
        // left to it.
        let a = sampler(&["-F", "300", "--off-cpu", "./app", "-o", "x", "--", "y"]).unwrap();
        assert_eq!((a.frequency, a.off_cpu, a.output), (300.0, true, None));
        assert_eq!(a.command, ["./app", "-o", "x", "--", "y"]);
        assert!(sampler(&["--all-threads", "ls"]).unwrap().off_cpu);
        assert!(sampler(&["--no-output", "-o", "x", "ls"]).is_err(), "no file and a file");
        // tbrw record: -f is --force there, -F the frequency.
        let t = parse(Flavor::TbrwRecord, ["tbrw record", "-f", "-F", "50", "-o", "x.tb5", "ls"]).unwrap();
        assert_eq!((t.force, t.frequency, t.command.as_slice()), (true, 50.0, &["ls".to_owned()][..]));
        let e = parse(Flavor::TbrwRecord, ["tbrw record", "--help"]).unwrap_err();
        assert!(e.to_string().contains("tbrw record [options] [--] <command>"), "{e}");
    }

    #[test]
    fn default_output_is_numbered_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(default_output(d, Format::Tb5, false).unwrap(), d.join("sampler.tb5"));
        std::fs::write(d.join("sampler.tb5"), b"x").unwrap();
        assert_eq!(default_output(d, Format::Tb5, false).unwrap(), d.join("sampler.2.tb5"));
        assert_eq!(default_output(d, Format::Tb5, true).unwrap(), d.join("sampler.tb5"));
        std::fs::write(d.join("sampler.2.tb5"), b"x").unwrap();
        assert_eq!(default_output(d, Format::Tb5, false).unwrap(), d.join("sampler.3.tb5"));
        assert_eq!(default_output(d, Format::Profile, false).unwrap(), d.join("sampler.profile"));
    }

    #[test]
    fn output_checks() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out.tb5");
        assert!(check_output(&f, "true", false).is_ok());
        std::fs::write(&f, b"x").unwrap();
        assert!(check_output(&f, "true", false).unwrap_err().contains("--force"));
        assert!(check_output(&f, "true", true).is_ok());
        let exe = crate::tracer::resolve_command("true").unwrap();
        assert!(check_output(&exe, "true", true).unwrap_err().contains("executable"));
        let e = check_output(dir.path(), "true", true).unwrap_err();
        assert!(e.contains("is a folder; give a file name"), "{e}");
    }
}
