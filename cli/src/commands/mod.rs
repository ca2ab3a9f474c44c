//! Each `tbrw` subcommand as one function: the work (through the format
//! modules) and what it prints, to writers the caller gives (standard
//! output and standard error in the binary, buffers in tests). Progress
//! goes to callbacks. Terminal concerns (argument parsing, progress bars,
//! exit codes) stay in `src/main.rs`.

use std::io::Write;
use std::path::{Path, PathBuf};

use tbrw_export::cli::Job;
use tbrw_export::parquet::ParquetOptions;
use tbrw_export::{FolderFiles, Output, OutputKind, Summary};
use tbrw_query::annotate;
use tbrw_query::report::{self, ReportOptions};

use crate::error::CliError;
pub use crate::output::open;
use crate::output::{
    check_input, check_output, check_output_folder, check_tb5_output, export_error, folder_holds, may_replace,
    write_output, written, WorkFolder,
};

mod import;

pub use import::{import_mtmc, import_perf, import_sampler, import_winidea, SamplerArgs, WinIdeaArgs};

/// How a command that completed ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// As asked.
    Success,
    /// `import winidea --check`: the file was written, but statistics differ
    /// from the timeline's (exit status 3).
    StatisticsDiffer,
}

/// `tbrw info`: sections and streams.
pub fn info(file: &Path, out: &mut dyn Write) -> Result<(), CliError> {
    let f = open(file)?;
    tbrw::summary::write_summary_with(&f, out, &mut |n, out: &mut dyn Write| stream_times(&f, n, out))
}

/// `tbrw info`'s line of a stream's first and last sample time: as clock
/// values, and as seconds from the first (nanosecond clocks), the two
/// forms `--time` takes. A stream whose records cannot be read as samples
/// (no descriptor, fields past the record) gets no line.
fn stream_times(f: &tbrw::Tb5File, n: u32, out: &mut dyn Write) -> Result<(), CliError> {
    let Ok(Some(t)) = tbrw_query::time::StreamTimes::of(f, n) else { return Ok(()) };
    let seconds = if t.nanos() { format!(" = 0 s .. {} s", secs(t.seconds(t.last))) } else { String::new() };
    writeln!(out, "    time: {} .. {} {}{seconds}", t.first, t.last, t.unit()).map_err(written)
}

/// Seconds with the digits that matter: milliseconds, or nanoseconds below one.
fn secs(s: f64) -> String {
    if s >= 1.0 || s == 0.0 {
        format!("{s:.3}")
    } else {
        format!("{s:.9}").trim_end_matches('0').to_owned()
    }
}

/// `tbrw verify`: the whole file checked.
pub fn verify(file: &Path, out: &mut dyn Write) -> Result<(), CliError> {
    open(file)?.verify()?;
    writeln!(out, "{}: ok", file.display()).map_err(written)
}

/// `tbrw convert`: `input` (any layout this project reads) rewritten as a
/// new file in Intel's layout at `output`, never over the input.
pub fn convert(input: &Path, output: &Path, force: bool, out: &mut dyn Write) -> Result<(), CliError> {
    check_tb5_output(output, &[input], force)?;
    let f = open(input)?;
    tbrw::convert(&f, output, tbrw::Durability::from_env())?;
    writeln!(out, "{}: {} streams in Intel's layout", output.display(), f.stream_count()).map_err(written)
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
        None => {
            let f = open(file)?;
            (0..f.stream_count()).filter(|&n| f.stream(n).is_ok_and(|s| s.holds_records())).collect()
        }
    };
    if let Some(n) = stream {
        report::stream(&open(file)?, n)?;
    }
    let mut w = tbrw::Tb5Writer::append(file)?;
    // Said once the binds are stored: a reader that stops reading (`| head`)
    // must not leave them unwritten.
    let mut said = Vec::new();
    let mut bound = 0;
    for n in streams {
        binding(n);
        match w.dobind(n) {
            Ok(()) => {
                bound += 1;
                said.push(format!("{}: stream {n} bound", file.display()));
            }
            Err(tbrw::Error::InvalidStream { why, .. }) if stream.is_none() => {
                said.push(format!("{}: stream {n} not bound: {why}", file.display()))
            }
            Err(e) => return Err(e.into()),
        }
    }
    if bound == 0 {
        // Nothing asked for was done: an error, whatever the reasons.
        w.abort();
        let why: Vec<&str> = said.iter().filter_map(|l| l.split_once(": ").map(|(_, r)| r)).collect();
        return Err(CliError::msg(format!("{}: nothing bound: {}", file.display(), why.join("; "))));
    }
    w.close()?;
    for l in said {
        writeln!(out, "{l}").map_err(written)?;
    }
    Ok(())
}

/// `tbrw report`: the report `opts` asks for ([`report::answer`]), as a
/// table or, with `json`, JSON. `progress` gets records done and records
/// in all; warnings about modules without symbols go to `err`.
pub fn report(
    file: &Path,
    opts: &ReportOptions,
    json: bool,
    progress: &mut dyn FnMut(u64, u64),
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let f = open(file)?;
    let records = report::stream(&f, opts.query.stream)?.data()?.map_or(0, |d| d.len());
    let mut progress = |n| progress(n, records);
    let mut warnings = Vec::new();
    let r = report::answer(&f, opts, &mut warnings, &mut progress);
    crate::warning::show(&warnings, err);
    let mut r = r?;
    if json { r.write_json(out) } else { r.write_text(out) }.map_err(written)
}

/// `tbrw annotate`: function `function`'s samples per source line (or
/// address), as text or JSON. Warnings as for [`report_symbols`].
pub fn annotate(
    file: &Path,
    opts: &tbrw_query::Query,
    function: &str,
    aopts: &annotate::AnnotateOptions,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let f = open(file)?;
    let mut warnings = Vec::new();
    let a = annotate::annotate(&f, opts, function, aopts, &mut warnings, &mut |_| {});
    crate::warning::show(&warnings, err);
    let a = a?;
    if json {
        serde_json::to_writer(&mut *out, &a).map_err(|e| written(e.into()))?;
        writeln!(out).map_err(written)
    } else {
        annotate::write_text(&a, out).map_err(written)
    }
}

/// The viewer exports' common part: checks `file` and `output` (`--force`,
/// never the input), opens `file` and writes `output` through `f`:
/// standard output for `-`, into a character device or FIFO found at
/// `output`, else atomically (nothing is left at `output` when `f` fails;
/// see [`write_output`]).
fn write_view<T>(
    file: &Path,
    output: &Path,
    force: bool,
    f: impl FnOnce(&tbrw::Tb5File, &mut dyn Write) -> Result<T, CliError>,
) -> Result<T, CliError> {
    check_input(file, "a TB5 file")?;
    check_output(output, &[file], force)?;
    let tb5 = open(file)?;
    if output.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut w = Watched { inner: stdout.lock(), broken: false };
        let r = f(&tb5, &mut w).and_then(|r| w.flush().map(|()| r).map_err(written));
        // An export may phrase a failed write into its message: what the
        // writer saw says whether the reader went away.
        return match r {
            Err(_) if w.broken => Err(written(std::io::ErrorKind::BrokenPipe.into())),
            r => r,
        };
    }
    let mut result = None;
    let mut failure = None;
    let r = write_output(output, |w| match f(&tb5, w) {
        Ok(x) => {
            result = Some(x);
            Ok(())
        }
        Err(e) => {
            let text = e.to_string();
            failure = Some(e);
            Err(std::io::Error::other(text))
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    r?;
    result.ok_or_else(|| CliError::msg(format!("{}: nothing was written", output.display())))
}

/// A writer that remembers whether a write found the reader gone (`EPIPE`).
struct Watched<W> {
    inner: W,
    broken: bool,
}

impl<W: Write> Watched<W> {
    fn seen<T>(&mut self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            self.broken |= e.kind() == std::io::ErrorKind::BrokenPipe;
        }
        r
    }
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.inner.write(buf);
        self.seen(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        self.seen(r)
    }
}

/// `tbrw export ...`: every export, run as the registry describes it
/// (tbrw-export's `registry`), under the same output rules: a file export
/// through [`write_view`] (`-`, `--force`, the lock, never the input), a
/// folder export built in a work folder and put in place whole, a Parquet
/// dataset by its own rules (it may add to one). What the export wrote is
/// said on `out` (a file's line after its name, not for `-`; a folder's
/// files one per line), what it left out on `err` after the input's name.
pub fn export(
    job: Job,
    progress: &mut dyn tbrw_export::Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let (input, output, force, export) = match job {
        Job::One { input, output, force, export } => (input, output, force, export),
        Job::Dataset { files, output, options } => {
            return export_parquet(&files, &output, &options, progress, out, err)
        }
    };
    let mut warnings = Vec::new();
    let summary = export_one(&*export, (&input, &output, force), &mut warnings, progress, out);
    crate::warning::show(&warnings, err);
    let summary = summary?;
    for note in &summary.notes {
        let note = crate::error::with_clock_option(note);
        writeln!(err, "tbrw: {}: {}", input.display(), tbrw::text::Escaped(&note)).map_err(written)?;
    }
    // The output is committed: the process ends soon, and what the export
    // built (a Firefox profile's millions of small allocations) goes back
    // with it, not freed one by one (a tenth of a large export's time), as
    // compilers and perf leave theirs.
    std::mem::forget(summary.built);
    Ok(())
}

/// One export of one input under the output rules: its summary, its
/// warnings in `warnings` (also when it fails).
fn export_one(
    export: &dyn tbrw_export::Export,
    (input, output, force): (&Path, &Path, bool),
    warnings: &mut Vec<tbrw_export::Warning>,
    progress: &mut dyn tbrw_export::Progress,
    out: &mut dyn Write,
) -> Result<Summary, CliError> {
    Ok(match export.output() {
        OutputKind::File => {
            let s =
                write_view(input, output, force, |f, w| Ok(export.export(f, Output::File(w), warnings, progress)?))?;
            if output.as_os_str() != "-" {
                writeln!(out, "{}: {}", output.display(), s.line).map_err(written)?;
            }
            s
        }
        OutputKind::Folder(files) => {
            let s = export_folder(input, output, &files, force, |f, folder| {
                export.export(f, Output::Folder(folder), warnings, progress)
            })?;
            for p in &s.files {
                writeln!(out, "{}", output.join(p).display()).map_err(written)?;
            }
            s
        }
    })
}

/// A folder export of `file` into `dir` (its files: `files`): built in a
/// work folder beside `dir` and put in its place whole (the folder rule of
/// crate::output), so that a reader of `dir` sees the old export or the
/// new one, never a mix; a failure leaves `dir` as it was.
fn export_folder(
    file: &Path,
    dir: &Path,
    files: &FolderFiles,
    force: bool,
    f: impl FnOnce(&tbrw::Tb5File, &mut WorkFolder) -> Result<Summary, tbrw_export::ExportError>,
) -> Result<Summary, CliError> {
    check_input(file, "a TB5 file")?;
    let target = check_output_folder(dir, files, force)?;
    let tb5 = open(file)?;
    let mut work = WorkFolder::create(&target)?;
    let s = f(&tb5, &mut work).map_err(|e| export_error(&work, e))?;
    work.publish(&|real| {
        let held = folder_holds(real, files).map_err(|e| CliError::io(dir, e))?;
        may_replace(dir, files, &held, force)
    })?;
    Ok(s)
}

/// `tbrw export parquet`: the runs written on `out` (one line each), the
/// symbolizer's warnings on `err`.
fn export_parquet(
    files: &[PathBuf],
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn tbrw_export::Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let mut warnings = Vec::new();
    let runs = tbrw_export::parquet::export_parquet(files, dir, opts, progress, &mut warnings);
    crate::warning::show(&warnings, err);
    let runs = runs?;
    for r in &runs {
        writeln!(
            out,
            "{}: host={} run={}: {} samples, {} intervals{} (from {})",
            dir.display(),
            r.host,
            r.run,
            r.samples,
            r.intervals,
            if opts.symbols.is_some() { format!(", {} functions", r.functions) } else { String::new() },
            r.file.display()
        )
        .map_err(written)?;
    }
    Ok(())
}
