//! `tbrw import`: each importer with its paths, `-` for standard input,
//! the output rules and what it prints.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use tbrw_import::elf_profile::{self, ImportOptions, ProfileOptions};
use tbrw_import::{mtmc, winidea};
use tbrw_query::report::counted;

use super::Outcome;
use crate::error::CliError;
use crate::output::{check_input, check_tb5_output, plain, written};

/// What `tbrw import sampler` is told besides its paths.
#[derive(Clone, Copy, Debug)]
pub struct SamplerArgs<'a> {
    /// The stream's pid and host.
    pub opts: &'a ImportOptions,
    /// The layout and voltage.
    pub profile: &'a ProfileOptions,
    /// Replace an existing output (`--force`).
    pub force: bool,
}

/// `tbrw import sampler`. `progress` gets (decompressed) bytes read.
pub fn import_sampler(
    profile: &Path,
    output: &Path,
    args: SamplerArgs<'_>,
    progress: &mut dyn tbrw_export::Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let SamplerArgs { opts, profile: popts, force } = args;
    check_input(profile, "a sampler profile")?;
    check_tb5_output(output, &[profile], force)?;
    // A plain file is probed whole for its layout; standard input or a
    // pipe by its first bytes.
    let (input, name) = open_input(profile)?;
    let mut w = tbrw::Tb5Writer::create(output)?;
    let stats = match input {
        Input::File(f) if is_plain(&f, profile)? => {
            elf_profile::import_profile(f, &name, &mut w, opts, popts, |n| progress.done(n))?
        }
        other => elf_profile::import_profile_stream(other, &name, &mut w, opts, popts, |n| progress.done(n))?,
    };
    w.close()?;
    let layout = stats.format.map_or("?", |f| f.layout.name());
    writeln!(
        out,
        "{}: {} samples, {} records, {} VM maps ({layout} layout, {} times{}{})",
        output.display(),
        stats.samples,
        stats.records,
        stats.maps,
        match stats.time {
            Some(elf_profile::TimeSource::Realtime) => "CLOCK_REALTIME",
            Some(elf_profile::TimeSource::Interpolated) => "interpolated",
            _ => "no",
        },
        if stats.format.is_some_and(|f| f.endian == elf_profile::Endian::Big) { ", big-endian" } else { "" },
        if stats.compressed { ", from bzip2" } else { "" }
    )
    .map_err(written)?;
    if !stats.also.is_empty() {
        let also: Vec<&str> = stats.also.iter().map(|l| l.name()).collect();
        writeln!(
            err,
            "tbrw: {}: the bytes fit the {} layout too; read as {layout} as --layout says",
            profile.display(),
            also.join(", ")
        )
        .map_err(written)?;
    }
    let partial = if stats.partial_bytes > 0 {
        format!(" (a partial sample of {} bytes dropped)", stats.partial_bytes)
    } else {
        String::new()
    };
    if stats.killed {
        writeln!(
            err,
            "tbrw: {}: the run was cut short (the sampler was killed): the header and the VM maps are missing, so no module can be known and the PMU value's kind is unknown; {} whole samples kept{partial}",
            profile.display(),
            stats.samples,
        )
        .map_err(written)?;
    } else if stats.dropped > 0 {
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
    opts: &mtmc::MtmcOptions,
    force: bool,
    progress: &mut dyn tbrw_export::Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    check_input(log, "an MTMC task log")?;
    check_tb5_output(output, &[log], force)?;
    // The import reads its log twice (checked whole, then written): standard
    // input, or a file that cannot seek, is spooled to an unnamed temporary
    // file first, which goes away with the process.
    let (input, name) = open_input(log)?;
    let mut file = match input {
        Input::File(f) if is_plain(&f, log)? => f,
        other => spool(other, &name)?,
    };
    let mut w = tbrw::Tb5Writer::create(output)?;
    let stats = mtmc::import_mtmc(&mut file, &name, &mut w, opts, |n| progress.done(n))?;
    w.close()?;
    let layout = match stats.layout {
        Some(mtmc::Layout::V2023) => "2023 layout",
        _ => "v0.1 layout",
    };
    let pid = match stats.pid {
        Some((p, mtmc::PidSource::Option)) => format!("pid {p}"),
        Some((p, mtmc::PidSource::FileName)) => format!("pid {p} (from the log's name)"),
        None => "no pid (give one with --pid)".to_owned(),
    };
    writeln!(
        out,
        "{}: {}, {}{}, {}, {layout}, {pid}",
        output.display(),
        counted(stats.tasks, "task"),
        counted(stats.counters as u64, "counter"),
        if stats.topdown { " and topdown" } else { "" },
        counted(stats.threads as u64, "thread")
    )
    .map_err(written)?;
    if stats.unended > 0 || stats.migrated > 0 {
        let (u, m) = (stats.unended, stats.migrated);
        let mut what = Vec::new();
        if u > 0 {
            what.push(format!("{} {} no end", counted(u, "task"), if u == 1 { "has" } else { "have" }));
        }
        if m > 0 {
            // "1 task has no end and 2 ended ...": the noun is said once.
            let n = if u > 0 { m.to_string() } else { counted(m, "task") };
            what.push(format!("{n} ended on another CPU than {} began on", if m == 1 { "it" } else { "they" }));
        }
        let all = if u + m == 1 { "it has" } else { "they have" };
        writeln!(err, "tbrw: {}: {}: {all} no counter deltas", log.display(), what.join(" and ")).map_err(written)?;
    }
    if let Some((line, given, expected)) = stats.events_field_mismatch {
        writeln!(
            err,
            "tbrw: {}: line {line}: the number-of-events field says {given} where the readings present imply {expected}; kept as given (further lines not reported)",
            log.display()
        )
        .map_err(written)?;
    }
    Ok(())
}

/// An input as the command line names it: a file, or standard input (`-`).
enum Input {
    /// A file, opened.
    File(std::fs::File),
    /// Standard input.
    Stdin(std::io::StdinLock<'static>),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Input::File(f) => f.read(buf),
            Input::Stdin(s) => s.read(buf),
        }
    }
}

/// Opens `path` (`-`: standard input), and the name the importer gives it
/// in messages and in what it writes (`-` for standard input).
fn open_input(path: &Path) -> Result<(Input, String), CliError> {
    let name = path.display().to_string();
    if path.as_os_str() == "-" {
        return Ok((Input::Stdin(std::io::stdin().lock()), name));
    }
    let f = std::fs::File::open(path).map_err(|e| CliError::msg(format!("{name}: cannot be read: {}", plain(&e))))?;
    Ok((Input::File(f), name))
}

/// Whether an opened file is a plain file, the kind that can seek (not a
/// pipe or a device named by a path, such as `/dev/stdin` or `<(...)`).
fn is_plain(f: &std::fs::File, path: &Path) -> Result<bool, CliError> {
    Ok(f.metadata().map_err(|e| CliError::io(path, e))?.is_file())
}

/// Copies an input that cannot seek into an unnamed temporary file (gone
/// with the process), at its start, for an importer that reads twice.
fn spool(mut input: Input, name: &str) -> Result<std::fs::File, CliError> {
    let mut tmp = tempfile::tempfile().map_err(|e| CliError::msg(format!("{name}: a temporary file: {e}")))?;
    std::io::copy(&mut input, &mut tmp).map_err(|e| CliError::msg(format!("{name}: {e}")))?;
    tmp.rewind().map_err(|e| CliError::msg(format!("{name}: a temporary file: {e}")))?;
    Ok(tmp)
}

/// What `import winidea` is given besides the export and the output.
#[derive(Clone, Copy, Debug, Default)]
pub struct WinIdeaArgs<'a> {
    /// The `.BIN` timeline (default: `EXPORT.BIN` next to the export, if there is one).
    pub bin: Option<&'a Path>,
    /// The `.BIN` layout (default: detected).
    pub version: Option<winidea::BinVersion>,
    /// Compare the export's STATISTICS with the timeline's figures.
    pub check: bool,
    /// Replace an existing output.
    pub force: bool,
}

/// `tbrw import winidea`. Without `bin`, `EXPORT.BIN` next to the export
/// is read when there is one. With `check`, the statistics check is
/// printed and differences give [`Outcome::StatisticsDiffer`].
pub fn import_winidea(
    export: &Path,
    output: &Path,
    args: WinIdeaArgs<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, CliError> {
    let WinIdeaArgs { bin, version, check, force } = args;
    check_input(export, "a winIDEA Text1 export")?;
    if let Some(b) = bin {
        check_input(b, "a winIDEA .BIN timeline")?;
    }
    // winIDEA writes the TimelineBinary next to the export, named EXPORT.BIN.
    let found: Option<PathBuf> = match bin {
        Some(_) => None,
        None if export.as_os_str() == "-" => None,
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
    let bin = bin.or(found.as_deref());
    let inputs: Vec<&Path> = [Some(export), bin].into_iter().flatten().collect();
    check_tb5_output(output, &inputs, force)?;
    if export.as_os_str() == "-" && bin.is_some_and(|b| b.as_os_str() == "-") {
        return Err(CliError::msg("the export and the .BIN cannot both be standard input (-)"));
    }
    let (text, name) = open_input(export)?;
    // The .BIN is read in pieces, twice when its layout is detected: one
    // that cannot seek (standard input, a pipe) is spooled first.
    let mut bin_file = match bin {
        Some(b) => {
            let (input, bin_name) = open_input(b)?;
            let file = match input {
                Input::File(f) if is_plain(&f, b)? => f,
                other => spool(other, &bin_name)?,
            };
            Some((file, bin_name))
        }
        None => None,
    };
    let bin_input = bin_file.as_mut().map(|(f, n)| winidea::BinInput { input: f, name: n.as_str() });
    let mut w = tbrw::Tb5Writer::create(output)?;
    let opts = winidea::WinIdeaOptions { bin_version: version, check };
    let stats = winidea::import_winidea(text, &name, bin_input, &mut w, &opts)?;
    w.close()?;
    writeln!(
        out,
        "{}: {}, {}, {}{}",
        output.display(),
        counted(stats.events as u64, "timeline event"),
        counted(stats.calls as u64, "call"),
        counted(stats.writes as u64, "data write"),
        stats.bin_version.map_or(String::new(), |v| format!(" (.BIN version {})", v.name()))
    )
    .map_err(written)?;
    if stats.started_before > 0 || stats.unfinished > 0 {
        let (before, open) = (stats.started_before as u64, stats.unfinished as u64);
        writeln!(
            err,
            "tbrw: {}: {} {} under way when the timeline begins and {open} still open at its end; not written as calls",
            export.display(),
            counted(before, "call"),
            if before == 1 { "was" } else { "were" },
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
        stats.unchecked.iter().map(|u| u.count).sum::<u64>()
    )
    .map_err(written)?;
    for d in &stats.differences {
        writeln!(out, "  line {}: {}: export {}, timeline {}", d.line, d.what, d.export, d.timeline)
            .map_err(written)?;
    }
    for u in &stats.unchecked {
        let rows = if u.count == 1 { "1 figure".to_owned() } else { format!("{} figures", u.count) };
        writeln!(out, "  {}: {rows} (first at line {}) not computable from a timeline", u.figure, u.first_line)
            .map_err(written)?;
    }
    Ok(if stats.differences.is_empty() { Outcome::Success } else { Outcome::StatisticsDiffer })
}

/// `tbrw import perf`: a perf.data file (`-`: standard input, read in pipe
/// mode; a file in pipe format is told by its header) into a new TB5 file;
/// skipped record types, lost samples, and what perf's own reading would
/// also leave out are noted on `err`.
pub fn import_perf(
    data: &Path,
    output: &Path,
    opts: &tbrw_import::perf::PerfOptions,
    progress: &mut dyn tbrw_export::Progress,
    force: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    check_input(data, "a perf.data file")?;
    check_tb5_output(output, &[data], force)?;
    // File mode needs seeks; standard input, or a pipe named by a path
    // (`<(perf record -o - ...)`), is read in pipe mode.
    let (input, name) = open_input(data)?;
    let mut w = tbrw::Tb5Writer::create(output)?;
    let stats = match input {
        Input::File(f) if is_plain(&f, data)? => {
            tbrw_import::perf::import_perf_file_with(f, &name, &mut w, opts, |n| progress.done(n))?
        }
        other => tbrw_import::perf::import_perf_pipe_with(other, &name, &mut w, opts, |n| progress.done(n))?,
    };
    w.close()?;
    let unwound = if stats.unwound > 0 {
        format!(" ({} samples unwound from their stack copies)", stats.unwound)
    } else {
        String::new()
    };
    writeln!(
        out,
        "{}: {} of {}, {}, {}{unwound}",
        output.display(),
        counted(stats.samples, "sample"),
        counted(stats.events as u64, "event"),
        counted(stats.modules as u64, "module"),
        counted(stats.frames, "call-chain frame")
    )
    .map_err(written)?;
    let shown = data.display();
    if stats.skipped > 0 || stats.lost > 0 {
        writeln!(
            err,
            "tbrw: {shown}: {} of types the import does not use skipped; perf lost {}",
            counted(stats.skipped, "record"),
            counted(stats.lost, "sample")
        )
        .map_err(written)?;
    }
    if let Some(cut) = &stats.cut {
        writeln!(
            err,
            "tbrw: {shown}: the input ends inside record {} (at byte {}: {}): the records before it are imported, as perf reports them",
            cut.record, cut.offset, cut.why
        )
        .map_err(written)?;
    }
    if let Some((whole, declared)) = stats.features_cut {
        writeln!(
            err,
            "tbrw: {shown}: {} of its {declared} header feature sections are cut short and left out, as perf leaves them out (host, command line or build ids may be missing)",
            declared - whole
        )
        .map_err(written)?;
    }
    if stats.unplaced > 0 {
        writeln!(
            err,
            "tbrw: {shown}: {} samples were taken in a cpu mode whose mappings do not hold their address (a user-mode sample at a kernel address, say): [unknown], as perf shows them",
            stats.unplaced
        )
        .map_err(written)?;
    }
    if stats.unknown_ids > 0 {
        writeln!(
            err,
            "tbrw: {shown}: {} group-read values have an id no event of the file has: not counted, as perf does not count them",
            stats.unknown_ids
        )
        .map_err(written)?;
    }
    for missing in &stats.unwind_missing {
        // Module paths from the recording: escaped.
        let missing = tbrw::text::Escaped(missing);
        writeln!(err, "tbrw: warning: {missing}; its frames of --call-graph dwarf samples unwind by frame pointers")
            .map_err(written)?;
    }
    Ok(())
}
