//! Each `tbrw` subcommand as one function: the work (through the format
//! modules) and what it prints, to writers the caller gives (standard
//! output and standard error in the binary, buffers in tests). Progress
//! goes to callbacks. Terminal concerns (argument parsing, progress bars,
//! exit codes) stay in `src/main.rs`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::csv::{self, CsvOptions};
use crate::error::CliError;
use crate::report::{self, By, ReportOptions};
use crate::sampler::{self, ImportOptions};
use crate::{mtmc, winidea};

/// How a command that completed ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// As asked.
    Success,
    /// `import winidea --check`: the file was written, but statistics differ
    /// from the timeline's (exit status 3).
    StatisticsDiffer,
}

fn written(e: std::io::Error) -> CliError {
    CliError::msg(format!("writing the output: {e}"))
}

/// `tbrw info`: sections and streams.
pub fn info(file: &Path, out: &mut dyn Write) -> Result<(), CliError> {
    let f = tbrw::Tb5File::open(file)?;
    tbrw::summary::write_summary(&f, out)?;
    Ok(())
}

/// `tbrw verify`: the whole file checked.
pub fn verify(file: &Path, out: &mut dyn Write) -> Result<(), CliError> {
    tbrw::Tb5File::open(file)?.verify()?;
    writeln!(out, "{}: ok", file.display()).map_err(written)
}

/// `tbrw bind`: binds `stream`, or every stream that can be bound (saying
/// which cannot and why), and appends the binds. `binding` is told each
/// stream as it starts.
pub fn bind(
    file: &Path,
    stream: Option<u32>,
    binding: &mut dyn FnMut(u32),
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let streams: Vec<u32> = match stream {
        Some(n) => vec![n],
        None => (0..tbrw::Tb5File::open(file)?.stream_count()).collect(),
    };
    let mut w = tbrw::Tb5Writer::append(file)?;
    for n in streams {
        binding(n);
        match w.dobind(n) {
            Ok(()) => writeln!(out, "{}: stream {n} bound", file.display()).map_err(written)?,
            Err(tbrw::Error::InvalidStream { why, .. }) if stream.is_none() => {
                writeln!(out, "{}: stream {n} not bound: {why}", file.display()).map_err(written)?
            }
            Err(e) => return Err(e.into()),
        }
    }
    w.close()?;
    Ok(())
}

/// `tbrw report`: a table, or JSON when `json`. `progress` gets records
/// done and records in all (sample reports only).
pub fn report(
    file: &Path,
    opts: &ReportOptions,
    json: bool,
    progress: &mut dyn FnMut(u64, u64),
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let f = tbrw::Tb5File::open(file)?;
    let r = if opts.by == By::Task {
        mtmc::task_report(&f, opts.stream, opts.top)?
    } else {
        let records = f.stream(opts.stream)?.data()?.map_or(0, |d| d.len());
        report::report(&f, opts, &mut |n| progress(n, records))?
    };
    match (json, opts.by) {
        (true, _) => report::write_json(&r, out),
        (false, By::Task) => mtmc::write_task_text(&r, out),
        (false, _) => report::write_table(&r, out),
    }
    .map_err(written)
}

/// `tbrw import sampler`. `progress` gets (decompressed) bytes read.
pub fn import_sampler(
    profile: &Path,
    output: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(u64),
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let stats = sampler::import_sampler(profile, output, opts, progress)?;
    writeln!(
        out,
        "{}: {} samples, {} records{}",
        output.display(),
        stats.samples,
        stats.records,
        if stats.compressed { " (from a bzip2 profile)" } else { "" }
    )
    .map_err(written)?;
    if stats.dropped > 0 {
        let partial = if stats.partial_bytes > 0 {
            format!(" (including a partial sample of {} bytes)", stats.partial_bytes)
        } else {
            String::new()
        };
        writeln!(
            err,
            "tbrw: {}: the profile announces {} samples but holds {} whole ones: {} dropped{partial}",
            profile.display(),
            stats.announced,
            stats.samples,
            stats.dropped,
        )
        .map_err(written)?;
    }
    Ok(())
}

/// `tbrw import mtmc`. `progress` gets bytes read.
pub fn import_mtmc(
    log: &Path,
    output: &Path,
    progress: &mut dyn FnMut(u64),
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let stats = mtmc::import_mtmc(log, output, progress)?;
    writeln!(
        out,
        "{}: {} tasks, {} counters, {} threads",
        output.display(),
        stats.tasks,
        stats.counters,
        stats.threads
    )
    .map_err(written)?;
    if let Some((line, given, present)) = stats.events_field_mismatch {
        writeln!(
            err,
            "tbrw: {}: line {line}: the number-of-events field says {given} but {present} counter readings are present; kept as given (further lines not reported)",
            log.display()
        )
        .map_err(written)?;
    }
    Ok(())
}

/// `tbrw import winidea`. Without `bin`, `EXPORT.BIN` next to the export
/// is read when there is one. With `check`, the statistics check is
/// printed and differences give [`Outcome::StatisticsDiffer`].
pub fn import_winidea(
    export: &Path,
    bin: Option<&Path>,
    version: Option<winidea::BinVersion>,
    output: &Path,
    check: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, CliError> {
    // winIDEA writes the TimelineBinary next to the export, named EXPORT.BIN.
    let found: Option<PathBuf> = match bin {
        Some(_) => None,
        None => {
            let mut p = export.as_os_str().to_owned();
            p.push(".BIN");
            let p = PathBuf::from(p);
            if p.is_file() {
                writeln!(err, "tbrw: reading the timeline in {} too", p.display()).map_err(written)?;
                Some(p)
            } else {
                None
            }
        }
    };
    let stats = winidea::import_winidea(export, bin.or(found.as_deref()), version, output)?;
    writeln!(
        out,
        "{}: {} timeline events, {} calls, {} data writes{}",
        output.display(),
        stats.events,
        stats.calls,
        stats.writes,
        stats.bin_version.map_or(String::new(), |v| format!(" (.BIN version {})", v.name()))
    )
    .map_err(written)?;
    if stats.started_before > 0 || stats.unfinished > 0 {
        writeln!(
            err,
            "tbrw: {}: {} calls were under way when the timeline begins and {} still open at its end; not written as calls",
            export.display(),
            stats.started_before,
            stats.unfinished
        )
        .map_err(written)?;
    }
    if !check {
        return Ok(Outcome::Success);
    }
    writeln!(
        out,
        "statistics check: {} figures agree, {} differ, {} not checked",
        stats.agree,
        stats.differences.len(),
        stats.unchecked.len()
    )
    .map_err(written)?;
    for d in &stats.differences {
        writeln!(out, "  line {}: {}: export {}, timeline {}", d.line, d.what, d.export, d.timeline)
            .map_err(written)?;
    }
    for (line, what) in &stats.unchecked {
        writeln!(out, "  line {line}: {what}: not computable from a timeline").map_err(written)?;
    }
    Ok(if stats.differences.is_empty() { Outcome::Success } else { Outcome::StatisticsDiffer })
}

/// `tbrw export vtune-csv`: the files written on `out`, streams left out on `err`.
pub fn export_vtune_csv(
    file: &Path,
    dir: &Path,
    opts: &CsvOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let r = csv::export_vtune_csv(file, dir, opts)?;
    for p in &r.files {
        writeln!(out, "{}", p.display()).map_err(written)?;
    }
    for (n, why) in &r.skipped {
        writeln!(err, "tbrw: {}: stream {n} not exported: {why}", file.display()).map_err(written)?;
    }
    Ok(())
}

/// `tbrw export sampler`: the profile to `output` (`-`: standard output,
/// and then nothing else is printed).
pub fn export_sampler(file: &Path, stream: u32, output: &Path, out: &mut dyn Write) -> Result<(), CliError> {
    let n = sampler::export_sampler(file, stream, output)?;
    if output.as_os_str() != "-" {
        writeln!(out, "{}: {n} samples", output.display()).map_err(written)?;
    }
    Ok(())
}

/// `tbrw import perf`: a perf.data file (`-`: standard input) into a new
/// TB5 file; skipped record types and lost samples are noted on `err`.
pub fn import_perf(
    data: &Path,
    output: &Path,
    progress: &mut dyn FnMut(u64),
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let stats = crate::perf::import_perf(data, output, progress)?;
    writeln!(
        out,
        "{}: {} samples of {} events, {} modules, {} call-chain frames",
        output.display(),
        stats.samples,
        stats.events,
        stats.modules,
        stats.frames
    )
    .map_err(written)?;
    if stats.skipped > 0 || stats.lost > 0 {
        writeln!(
            err,
            "tbrw: {}: {} records of types the import does not use skipped; perf lost {} samples",
            data.display(),
            stats.skipped,
            stats.lost
        )
        .map_err(written)?;
    }
    Ok(())
}
