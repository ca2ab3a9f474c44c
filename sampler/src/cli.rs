//! The command line: options, the checks on the output path, choosing
//! the output, and the summary printed at the end.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, ValueEnum};

use crate::pmu::Pmu;
use crate::tracer::{Config, Outcome, Tracer};

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A TB5 file (VTune's sampling-file format).
    Tb5,
    /// The original sampler's binary profile.
    Profile,
}

/// `sampler [options] -- <command> [arguments]`
#[derive(Debug, Parser)]
#[command(
    name = "sampler",
    version,
    about = "Sample a command's threads under ptrace (pc, CPU time, CPU, PMU value) and record a TB5 file",
    override_usage = "sampler [options] -- <command> [arguments]"
)]
pub struct Args {
    /// Write to this file (none: no file is written, only the summary).
    #[arg(short, long, value_name = "file")]
    pub output: Option<PathBuf>,
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
    #[arg(short, long, value_name = "hertz", default_value_t = 1000.0)]
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
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "command")]
    pub command: Vec<String>,
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
    let canon = |p: &Path| -> Option<PathBuf> {
        if let Ok(c) = p.canonicalize() {
            return Some(c);
        }
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    };
    if let (Some(exe), Some(out)) = (crate::tracer::resolve_command(command), canon(path)) {
        if exe.canonicalize().ok().as_deref() == Some(out.as_path()) {
            return Err(format!("{}: the output would overwrite the command's executable", path.display()));
        }
    }
    if path.exists() && !force {
        return Err(format!("{}: exists; give --force to overwrite it", path.display()));
    }
    Ok(())
}

fn summary(o: &Outcome, debug: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &o.stats;
    if debug {
        writeln!(out, "sampler: samples:          {} ({} thread samples)", s.ticks, s.records)?;
        writeln!(out, "sampler: reached frequency: {:.1} Hz", s.reached_hz())?;
        writeln!(out, "sampler: wall time:        {:.6} s", s.wall_ns() as f64 * 1e-9)?;
        let pct = if s.wall_ns() > 0 { s.stopped_ns as f64 * 100.0 / s.wall_ns() as f64 } else { 0.0 };
        writeln!(out, "sampler: target stopped:   {:.6} s ({pct:.1}% of wall time)", s.stopped_ns as f64 * 1e-9)?;
        writeln!(
            out,
            "sampler: threads seen:     {} in {} process instance(s)",
            o.history.threads.len(),
            o.history.processes.len()
        )?;
        writeln!(out, "sampler: modules:          {} ({} map re-reads)", o.history.modules.len(), s.map_rereads)?;
        if s.missed_ticks > 0 {
            writeln!(out, "sampler: missed ticks:     {} (a tick took longer than the period)", s.missed_ticks)?;
        }
    }
    if s.unknown_pcs > 0 {
        writeln!(out, "sampler: {} samples in no executable mapping (code freed since, or generated)", s.unknown_pcs)?;
    }
    if s.lost_samples > 0 {
        writeln!(out, "sampler: {} thread samples lost (threads ended while being read)", s.lost_samples)?;
    }
    for sig in &s.forwarded_signals {
        writeln!(out, "sampler: passed signal {sig} on to the command")?;
    }
    for n in &s.notes {
        writeln!(out, "sampler: {n}")?;
    }
    Ok(())
}

/// Runs the command line `argv`; returns the exit status (the command's,
/// or 1/2 for the sampler's own errors).
pub fn main(argv: Vec<OsString>) -> i32 {
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sampler: {e}");
            1
        }
    }
}

fn run(args: &Args) -> Result<i32, Box<dyn std::error::Error>> {
    if !(args.frequency.is_finite() && args.frequency > 0.0 && args.frequency <= 1_000_000.0) {
        return Err(format!("-f {}: give a frequency in (0, 1000000] Hz", args.frequency).into());
    }
    if let Some(o) = &args.output {
        check_output(o, &args.command[0], args.force)?;
    }
    let pmu = Pmu::open(&args.pmu)?;
    let pmu_info = pmu.as_ref().map(|p| (p.kind(), p.spec.clone()));
    let period_ns = (1e9 / args.frequency).round().max(1.0) as u64;
    let tracer = Tracer::start(&args.command, Config { period_ns, pmu })?;
    let outcome = match &args.output {
        None => tracer.run(&mut |_, _| Ok(()))?,
        Some(path) => match format_of(path, args.format) {
            Format::Tb5 => crate::tb5::record(
                path,
                tracer,
                &crate::tb5::RunInfo { command_line: shell_words(&args.command), period_ns, pmu: pmu_info },
            )?,
            Format::Profile => crate::profile::record(path, tracer, pmu_info.map(|p| p.0))?,
        },
    };
    summary(&outcome, args.debug, &mut std::io::stderr().lock())?;
    if let Some(e) = &outcome.sink_error {
        return Err(
            format!("writing the output failed, recording stopped and the command was left running: {e}").into()
        );
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

    #[test]
    fn options_as_the_seed_spells_them() {
        let a = Args::try_parse_from(["sampler", "--output=x.tb5", "-p", "dummy", "-f", "200", "-d", "--", "ls", "-l"])
            .unwrap();
        assert_eq!(a.output.as_deref(), Some(Path::new("x.tb5")));
        assert_eq!((a.pmu.as_str(), a.frequency, a.debug), ("dummy", 200.0, true));
        assert_eq!(a.command, ["ls", "-l"]);
        assert!(Args::try_parse_from(["sampler", "-o", "x"]).is_err());
        assert_eq!(format_of(Path::new("a.tb5"), None), Format::Tb5);
        assert_eq!(format_of(Path::new("a.profile"), None), Format::Profile);
        assert_eq!(format_of(Path::new("a.tb5"), Some(Format::Profile)), Format::Profile);
        assert_eq!(shell_words(&["a b".into(), "c".into(), "it's".into()]), r"'a b' c 'it'\''s'");
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
    }
}
