//! `tbrw export vtune-csv`: streams to VTune's "CSV file with external
//! data" (one table per file, file name `<user>-hostname-<host>.csv`).
//! What becomes which column, and how the clock is chosen: docs/EXPORT.md.
//! Here: the export's front, clocks, names and the files shared by every
//! kind of stream (module counts, per-CPU counters); `streams` writes each
//! kind of stream's own files.

mod streams;

use std::collections::HashMap;

use tbrw::*;

use crate::error::ExportError;
use crate::folder::Folder;
use streams::{export_stream, Out};
use tbrw_schema::excerpt::excerpt;
use tbrw_schema::fields::{self, read};

/// The clock of a time stamp column (its suffix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// UTC wall-clock time (column suffix `UTC`).
    Utc,
    /// Linux CLOCK_MONOTONIC_RAW (suffix `CLOCK_MONOTONIC_RAW`).
    MonotonicRaw,
    /// The time stamp counter (suffix `RDTSC`).
    Rdtsc,
    /// Windows QueryPerformanceCounter (suffix `QPC`).
    Qpc,
}

impl Clock {
    /// Every clock.
    pub const ALL: [Clock; 4] = [Clock::Utc, Clock::MonotonicRaw, Clock::Rdtsc, Clock::Qpc];

    /// The name `--clock` takes.
    pub fn name(self) -> &'static str {
        match self {
            Clock::Utc => "utc",
            Clock::MonotonicRaw => "monotonic-raw",
            Clock::Rdtsc => "rdtsc",
            Clock::Qpc => "qpc",
        }
    }

    /// From [`Clock::name`].
    pub fn from_name(s: &str) -> Option<Clock> {
        Clock::ALL.into_iter().find(|c| c.name() == s)
    }

    /// The column suffix.
    pub fn suffix(self) -> &'static str {
        match self {
            Clock::Utc => "UTC",
            Clock::MonotonicRaw => "CLOCK_MONOTONIC_RAW",
            Clock::Rdtsc => "RDTSC",
            Clock::Qpc => "QPC",
        }
    }
}

/// `ns` nanoseconds since the Unix epoch as the date-and-time text VTune
/// reads in a `.UTC` column, `YYYY-MM-DD HH:MM:SS.fffffffff` (the nine
/// fraction digits a nanosecond time stamp has).
pub fn utc_text(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (y, m, d) = civil_from_days(secs / 86_400);
    let s = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:09}", s / 3600, s / 60 % 60, s % 60, ns % 1_000_000_000)
}

/// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian):
/// days are counted in 400-year eras of 146097 days from 0000-03-01, so
/// that the leap day is the last day of each year of the count.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + u64::from(m <= 2), m, d)
}

impl Clock {
    /// A time stamp of this clock as its cell: UTC as date-and-time text,
    /// the counters (RDTSC, QPC, CLOCK_MONOTONIC_RAW) as integers.
    pub fn cell(self, v: u64) -> String {
        match self {
            Clock::Utc => utc_text(v),
            _ => v.to_string(),
        }
    }
}

/// The clock of a time-stamp field, or why it has none usable.
pub(crate) fn clock_of(f: &Field, name: &str) -> std::result::Result<Clock, String> {
    let quoted = excerpt(name);
    let lower = name.to_ascii_lowercase();
    match f.subtype {
        desc_subtype::TSC | desc_subtype::TS_CPU_CYCLES => Ok(Clock::Rdtsc),
        desc_subtype::TS_NANOSECONDS => {
            if lower.contains("utc") || lower.contains("realtime") {
                Ok(Clock::Utc)
            } else if lower.contains("monotonic") {
                Ok(Clock::MonotonicRaw)
            } else if lower.contains("qpc") {
                Ok(Clock::Qpc)
            } else {
                Err(format!(
                    "its nanosecond time stamp {quoted} does not say which clock it is (its name should contain utc, realtime, monotonic or qpc)"
                ))
            }
        }
        desc_subtype::TS_SAMPLE_COUNT => Err(format!("its time stamp {quoted} is a sample count, not a clock")),
        desc_subtype::TS_MILLISECONDS => Err(format!("its time stamp {quoted} is in milliseconds of an unnamed clock")),
        st => Err(format!("its time stamp {quoted} (subtype {st}) is not a clock VTune knows")),
    }
}

/// How a field becomes a counter column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Count,
    Inst,
}

fn counter_kind(t: u16) -> Option<(Kind, bool)> {
    // (kind, value is an f64)
    match t {
        fields::CPUTIME => Some((Kind::Count, false)),
        desc_type::PMD | desc_type::PMD_PHYSICAL => Some((Kind::Count, false)),
        fields::CURRENT | fields::VOLTAGE | fields::CUSTOM_VALUE | desc_type::POWER => Some((Kind::Inst, true)),
        _ => None,
    }
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect()
}

/// The user-defined part of a stream's file names: the stream comment's
/// first phrase (up to a `:`, `,` or `(`; the collector's comment goes on
/// with its rates and clock), sanitized, runs of `_` made one, at most 32
/// characters; `stream` when that leaves nothing. Never holds `-`, so the
/// name keeps VTune's `<user-defined>-hostname-<host>.csv` shape.
fn short_name(comment: Option<&str>) -> String {
    let phrase = comment.unwrap_or("").split([':', ',', '(']).next().unwrap_or("").trim();
    let mut name = String::new();
    for c in sanitize(phrase).chars() {
        if !(c == '_' && (name.is_empty() || name.ends_with('_'))) {
            name.push(c);
        }
    }
    let name: String = name.trim_end_matches('_').chars().take(32).collect();
    if name.is_empty() {
        "stream".to_owned()
    } else {
        name
    }
}

/// Ends a header line with the `pid` and `tid` columns of the id fields
/// present (`[pid, tid]`).
fn id_header(out: &mut dyn std::io::Write, ids: [Option<Field>; 2]) -> std::io::Result<()> {
    for (name, f) in ["pid", "tid"].into_iter().zip(ids) {
        if f.is_some() {
            write!(out, ",{name}")?;
        }
    }
    writeln!(out)
}

/// Ends a row with the values of the id fields present.
fn id_cells(out: &mut dyn std::io::Write, rec: &[u8], ids: [Option<Field>; 2]) -> std::io::Result<()> {
    for f in ids.into_iter().flatten() {
        write!(out, ",{}", read(rec, &f))?;
    }
    writeln!(out)
}

/// Options of the export.
#[derive(Clone, Debug, Default)]
pub struct CsvOptions {
    /// The host name for the file names (default: the software section's).
    pub hostname: Option<String>,
    /// Only this stream (default: every stream that can be exported).
    pub stream: Option<u32>,
    /// The clock of nanosecond time stamps whose field name does not say
    /// which clock they are on (a winIDEA import's session time, say).
    pub clock: Option<Clock>,
}

/// How a stream's reason for not being exported ends when naming the
/// clock ([`CsvOptions::clock`]) would export it: a caller with options of
/// its own can say which.
pub const NAME_THE_CLOCK: &str = "or say which clock it is";

/// What the export wrote, and which streams it left out and why.
#[derive(Clone, Debug, Default)]
pub struct CsvReport {
    /// The files written, by name.
    pub files: Vec<String>,
    /// Streams not exported, with the reason.
    pub skipped: Vec<(u32, String)>,
    /// Interval records left out because they end before they start (an
    /// MTMC task with no end has end time 0), per stream.
    pub unended: Vec<(u32, u64)>,
    /// Counter readings left out of the per-CPU counter tables because they
    /// were lower than the CPU's reading before (a `.COUNT` column must not
    /// decrease), per stream.
    pub decreasing: Vec<(u32, u64)>,
}

/// Exports the streams of `f` to CSV files in `dir`.
pub fn export_vtune_csv(
    f: &Tb5File,
    dir: &mut dyn Folder,
    opts: &CsvOptions,
) -> std::result::Result<CsvReport, ExportError> {
    let file = f.path();
    let streams: Vec<u32> = match opts.stream {
        Some(n) => {
            tbrw_query::report::stream(f, n)?;
            vec![n]
        }
        // Streams holding another's stack table or bind are not exported apart.
        None => (0..f.stream_count()).filter(|&n| f.stream(n).is_ok_and(|s| s.holds_records())).collect(),
    };
    // Every option the export lacks is named at once, before anything is
    // created on disk.
    let host = match &opts.hostname {
        Some(h) => Some(h.clone()),
        None => f.software()?.and_then(|s| s.host).and_then(|h| f.string_opt(h.name).ok().flatten().map(str::to_owned)),
    };
    let no_hostname = host.is_none();
    let clockless: Vec<(u32, String)> =
        streams.iter().filter_map(|&n| needs_clock(f, n, opts).ok().flatten().map(|why| (n, why))).collect();
    let clock = if !clockless.is_empty() && clockless.len() == streams.len() { clockless } else { Vec::new() };
    if no_hostname || !clock.is_empty() {
        return Err(ExportError::MissingOptions { file: file.display().to_string(), hostname: no_hostname, clock });
    }
    let host = host.unwrap_or_default();
    if host.is_empty() || host.contains('/') || host.contains(char::is_whitespace) {
        return Err(ExportError::HostName { host });
    }
    // The whole file is checked once a stream is known to be exported
    // (Verified): a refusal costs no pass over the data.
    let mut out = Out {
        verified: Verified { file: f, done: false },
        dir,
        host: &host,
        extra: Vec::new(),
        report: CsvReport::default(),
    };
    for n in streams {
        out.extra.clear();
        match export_stream(n, opts, &mut out)? {
            Ok(path) => {
                out.report.files.push(path);
                let extra = std::mem::take(&mut out.extra);
                out.report.files.extend(extra);
            }
            Err(why) => out.report.skipped.push((n, why)),
        }
    }
    let report = out.report;
    if opts.stream.is_some() && !report.skipped.is_empty() {
        let (n, why) = &report.skipped[0];
        return Err(ExportError::NotExported { file: file.display().to_string(), stream: *n, why: why.clone() });
    }
    if report.files.is_empty() {
        return Err(ExportError::NoStreamExported { file: file.display().to_string(), why: report.skipped });
    }
    Ok(report)
}

/// Whether stream `n`'s time stamps are nanoseconds of a clock their name
/// does not give and `--clock` is not there to say.
fn needs_clock(f: &Tb5File, n: u32, opts: &CsvOptions) -> std::result::Result<Option<String>, ExportError> {
    let s = f.stream(n)?;
    let Some(layout) = s.layout()? else { return Ok(None) };
    if opts.clock.is_some() || (layout.legacy_pc_offset().is_some() && layout.tsc_offset().is_some()) {
        return Ok(None);
    }
    let descs = s.descriptor()?.unwrap_or_default();
    let Some(t) =
        layout.fields().iter().find(|fl| fl.desc_type == desc_type::TIME_STAMP && (fl.size == 8 || fl.size == 4))
    else {
        return Ok(None);
    };
    let name = descs.get(t.entry).and_then(|d| f.string_opt(d.name).ok().flatten()).unwrap_or("");
    if t.subtype != desc_subtype::TS_NANOSECONDS {
        return Ok(None);
    }
    Ok(clock_of(t, name).err())
}

/// Writes the file `name` of `dir` with `write`, buffered.
fn write_file(
    dir: &mut dyn Folder,
    name: &str,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::result::Result<(), ExportError> {
    let io = |e| ExportError::write(name, e);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, dir.create(name).map_err(io)?);
    write(&mut out).and_then(|()| std::io::Write::flush(&mut out)).map_err(io)
}

/// The file exported, and its check ([`Tb5File::verify`]), made once,
/// before the first stream that is exported reads its data.
struct Verified<'a> {
    file: &'a Tb5File,
    done: bool,
}

impl Verified<'_> {
    fn check(&mut self) -> std::result::Result<(), ExportError> {
        if !self.done {
            self.file.verify()?;
            self.done = true;
        }
        Ok(())
    }
}

/// Columns of a table of module counts at most: the modules with the most
/// samples, the rest summed under `[other]`.
const MODULE_COLUMNS: usize = 64;

/// Rows of a table of module counts at most: the time buckets.
const MODULE_ROWS: u64 = 10_000;

/// The samples of stream `n` counted per module (by file name; `[unknown]`
/// where no module covers the address) and per time bucket, as VTune's
/// discrete values: one `NAME.COUNT` column per module, each row the
/// cumulative count at the end of its bucket (a `.COUNT` column is a
/// cumulative counter, from which VTune draws the rate). The buckets are a
/// millisecond of a nanosecond clock, wider when the recording is longer
/// than 10 s (at most [`MODULE_ROWS`] rows); 1/10,000 of the span for other
/// clocks. The samples come from the one walk of `tbrw-query`, as every
/// report counts them.
fn module_counts(
    f: &Tb5File,
    n: u32,
    dir: &mut dyn Folder,
    name: &str,
    clock: Clock,
) -> std::result::Result<(), ExportError> {
    let walk =
        tbrw_query::Walk::open(f, &tbrw_query::Query { stream: n, ..Default::default() }, tbrw_query::Binding::Always)?;
    let fields = walk.fields();
    let records = walk.records();
    // Pass 1: the time span and each module name's samples.
    let names: Vec<String> = walk.modules().iter().map(|m| sanitize(&tbrw_query::names::module_label(m))).collect();
    let mut span: Option<(u64, u64)> = None;
    let mut per_name: HashMap<&str, u64> = HashMap::new();
    walk.pass(0..records, &mut |_| {}, |smp| {
        if let Some(t) = fields.time_stamp(smp.record) {
            span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
        let label = smp.module.and_then(|m| names.get(m as usize)).map_or(tbrw_query::names::NO_MODULE, |s| s.as_str());
        *per_name.entry(label).or_default() += 1;
    })?;
    let Some((t0, t1)) = span else {
        return Err(ExportError::Unsupported {
            file: f.path().display().to_string(),
            stream: n,
            what: "its samples have no time stamp: VTune's discrete values need one".into(),
        });
    };
    let mut order: Vec<(&str, u64)> = per_name.into_iter().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let other = order.len() > MODULE_COLUMNS;
    order.truncate(if other { MODULE_COLUMNS - 1 } else { MODULE_COLUMNS });
    let column: HashMap<&str, usize> = order.iter().enumerate().map(|(i, (name, _))| (*name, i)).collect();
    let columns = order.len() + usize::from(other);
    let nanos = matches!(clock, Clock::Utc | Clock::MonotonicRaw | Clock::Qpc);
    let width =
        if nanos { (t1 - t0).div_ceil(MODULE_ROWS).max(1_000_000) } else { (t1 - t0).div_ceil(MODULE_ROWS).max(1) };
    let buckets = ((t1 - t0) / width + 1) as usize;
    // Pass 2: the counts per bucket and column.
    let mut counts = vec![0u64; buckets * columns];
    walk.pass(0..records, &mut |_| {}, |smp| {
        let Some(t) = fields.time_stamp(smp.record) else { return };
        let label = smp.module.and_then(|m| names.get(m as usize)).map_or(tbrw_query::names::NO_MODULE, |s| s.as_str());
        let c = column.get(label).copied().unwrap_or(columns - 1);
        counts[((t - t0) / width) as usize * columns + c] += 1;
    })?;
    write_file(dir, name, |out| {
        write!(out, "tsc.{}", clock.suffix())?;
        // Column names keep VTune's characters: `[unknown]` is `_unknown_`.
        for (label, _) in &order {
            write!(out, ",{}.COUNT", sanitize(label))?;
        }
        if other {
            write!(out, ",_other_.COUNT")?;
        }
        writeln!(out)?;
        // A first row of zeros at the first sample, then each bucket's end.
        let mut total = vec![0u64; columns];
        write!(out, "{}", clock.cell(t0))?;
        for _ in 0..columns {
            write!(out, ",0")?;
        }
        writeln!(out)?;
        for (b, row) in counts.chunks(columns).enumerate() {
            for (sum, x) in total.iter_mut().zip(row) {
                *sum += x;
            }
            // Saturating: time stamps near the top of the clock must not wrap.
            let end = t0.saturating_add((b as u64 + 1).saturating_mul(width));
            write!(out, "{}", clock.cell(end.min(t1.max(t0.saturating_add(1)))))?;
            for sum in &total {
                write!(out, ",{sum}")?;
            }
            writeln!(out)?;
        }
        Ok(())
    })
}

/// Counter readings taken at each interval's begin and end (MTMC tasks) as
/// one discrete table per CPU, `<base>-cpu<C>-counters-hostname-<host>.csv`:
/// the counters count everything on a CPU and are never reset, so a CPU's
/// readings in time order are cumulative, while one column mixing CPUs, or
/// bound to the task's thread, would not be. A reading is on the CPU the
/// record's first (begin) or second (end) processor-number field names;
/// without both fields nothing is written. A reading lower than the CPU's
/// reading before it is left out (counted) so that no column decreases.
/// Returns the files written and the readings left out.
#[allow(clippy::too_many_arguments)]
fn per_cpu_counters(
    layout: &RecordLayout,
    data: &DataSection<'_>,
    name_of: &dyn Fn(&Field) -> String,
    (time, end): (impl Fn(&[u8]) -> u64, Field),
    clock: Clock,
    dir: &mut dyn Folder,
    base: &str,
    host: &str,
) -> std::result::Result<(Vec<String>, u64), ExportError> {
    let pick = |which: fn(u16) -> Option<usize>| -> Vec<Field> {
        let mut v: Vec<Field> =
            layout.fields().iter().filter(|fl| which(fl.desc_type).is_some() && fl.size == 8).copied().collect();
        v.sort_by_key(|fl| which(fl.desc_type));
        v
    };
    let begins = pick(fields::counter_begin);
    let ends = pick(fields::counter_end);
    let cpus: Vec<Field> = layout
        .fields()
        .iter()
        .filter(|fl| fl.desc_type == desc_type::PROCESSOR_NUMBER && fl.size <= 8)
        .copied()
        .collect();
    if begins.is_empty() || begins.len() != ends.len() || cpus.len() < 2 {
        return Ok((Vec::new(), 0));
    }
    let names: Vec<String> = begins.iter().map(|fl| sanitize(name_of(fl).trim_end_matches("_begin"))).collect();
    // (cpu, time, record, at end): sorted, each CPU's readings are one run in time order.
    let mut rows: Vec<(u64, u64, u64, bool)> = Vec::with_capacity(data.len() as usize * 2);
    for (i, r) in data.records().enumerate() {
        let (start, stop) = (time(r), read(r, &end));
        rows.push((read(r, &cpus[0]), start, i as u64, false));
        if stop >= start {
            rows.push((read(r, &cpus[1]), stop, i as u64, true));
        }
    }
    rows.sort_unstable();
    let mut files = Vec::new();
    let mut dropped = 0;
    for run in rows.chunk_by(|a, b| a.0 == b.0) {
        let p = format!("{base}-cpu{}-counters-hostname-{host}.csv", run[0].0);
        write_file(dir, &p, |out| {
            write!(out, "tsc.{}", clock.suffix())?;
            for nm in &names {
                write!(out, ",{nm}.COUNT")?;
            }
            writeln!(out)?;
            let mut last: Option<Vec<i64>> = None;
            for &(_, t, i, at_end) in run {
                let r = data.record(i).unwrap_or_default();
                // Sign-extended readings: as signed integers.
                let v: Vec<i64> = (if at_end { &ends } else { &begins }).iter().map(|fl| read(r, fl) as i64).collect();
                if last.as_ref().is_some_and(|l| l.iter().zip(&v).any(|(a, b)| b < a)) {
                    dropped += 1;
                    continue;
                }
                write!(out, "{}", clock.cell(t))?;
                for x in &v {
                    write!(out, ",{x}")?;
                }
                writeln!(out)?;
                last = Some(v);
            }
            Ok(())
        })?;
        files.push(p);
    }
    Ok((files, dropped))
}

/// The VTune CSV export with its options, as the registry runs it
/// ([`crate::registry::Export`]): a folder of CSV files.
#[derive(Clone, Debug, Default)]
pub struct VtuneCsv {
    /// The export's options.
    pub options: CsvOptions,
}

/// Whether a file of a folder is one this export writes (`*-hostname-*.csv`).
fn exported_csv(name: &str) -> bool {
    name.ends_with(".csv") && name.contains("-hostname-")
}

impl crate::registry::Export for VtuneCsv {
    fn name(&self) -> &'static str {
        "vtune-csv"
    }

    fn output(&self) -> crate::registry::OutputKind {
        crate::registry::OutputKind::Folder(crate::registry::FolderFiles {
            one: "an exported CSV file",
            many: "exported CSV files",
            owns: exported_csv,
        })
    }

    fn export(
        &self,
        file: &Tb5File,
        out: crate::registry::Output<'_>,
        _warn: &mut Vec<crate::Warning>,
        _progress: &mut dyn tbrw_schema::Progress,
    ) -> std::result::Result<crate::registry::Summary, ExportError> {
        let r = export_vtune_csv(file, crate::registry::folder_of(self.name(), out)?, &self.options)?;
        let mut notes: Vec<String> =
            r.skipped.iter().map(|(n, why)| format!("stream {n} not exported: {why}")).collect();
        notes.extend(r.unended.iter().map(|(n, k)| format!("stream {n}: {k} intervals with no end left out")));
        notes.extend(
            r.decreasing
                .iter()
                .map(|(n, k)| format!("stream {n}: {k} counter readings lower than the CPU's reading before left out")),
        );
        Ok(crate::registry::Summary { files: r.files, notes, ..Default::default() })
    }
}

/// VTune "CSV file with external data": one file per stream in DIR.
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug)]
pub struct CsvArgs {
    /// The TB5 file.
    pub file: std::path::PathBuf,
    /// The folder to write the CSV files in (created if missing).
    #[arg(short, long)]
    pub output: std::path::PathBuf,
    /// Replace OUTPUT if it exists (never an input).
    #[arg(short, long)]
    pub force: bool,
    /// Host name for the file names (default: the file's).
    #[arg(long)]
    pub hostname: Option<String>,
    /// Only this stream.
    #[arg(long)]
    pub stream: Option<u32>,
    /// The clock of nanosecond time stamps whose name does not say which
    /// one they are (e.g. a winIDEA import's session time).
    #[arg(long, value_parser = crate::named!(Clock))]
    pub clock: Option<Clock>,
}

#[cfg(feature = "cli")]
impl crate::cli::ExportArgs for CsvArgs {
    fn job(self) -> std::result::Result<crate::cli::Job, crate::cli::ArgsError> {
        let options = CsvOptions { hostname: self.hostname, stream: self.stream, clock: self.clock };
        let export = Box::new(VtuneCsv { options });
        Ok(crate::cli::Job::One { input: self.file, output: self.output, force: self.force, export })
    }
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn file_names_take_the_comments_first_phrase() {
        let collector = "sampler: ptrace, 1000 Hz asked, 564.3 Hz reached, time stamps in ns of CLOCK_MONOTONIC_RAW";
        assert_eq!(short_name(Some(collector)), "sampler");
        assert_eq!(short_name(Some("sample run")), "sample_run");
        assert_eq!(short_name(Some("mtmc tasks (v0.1)")), "mtmc_tasks");
        assert_eq!(short_name(Some("  a -- b  ")), "a_b");
        assert_eq!(short_name(Some("::")), "stream");
        assert_eq!(short_name(None), "stream");
        let long = short_name(Some(&"x".repeat(100)));
        assert_eq!(long.len(), 32);
        assert!(!short_name(Some("my-host-hostname-x")).contains('-'));
    }
}
