//! `tbrw export firefox`: the Firefox Profiler's processed format (through
//! `fxprof-processed-profile`), JSON that profiler.firefox.com opens,
//! gzip-compressed or plain ([`Encoding`]: the command line chooses by
//! the output's name, as samply does). A sample stream becomes one profiler thread
//! per TB5 thread with its samples, their time stamps and stacks (function
//! names where the modules' symbols give them), and the modules as
//! libraries (`samples.rs`); an interval stream (MTMC tasks, winIDEA calls)
//! becomes one thread per thread or context with a marker per interval.
//! The profile holds a sample per sample (the format is a timeline): its
//! stack index, its time, and its CPU delta where the stream has CPU time,
//! 8 to 16 bytes each, in columns of the export's own (`columns.rs`) that
//! the JSON writes in place of fxprof-processed-profile's samples tables
//! (each sample weighing 1, their `weight` is `null`); the stacks and
//! frames are interned (docs/EXPORT.md "Memory"). Where the records carry
//! no CPU time, the JSON has no CPU delta column ([`json`]), so that the
//! profiler shows the threads running.
//!
//! Imports the query layer, `tbrw-import`'s module notes,
//! fxprof-processed-profile and serde_json; writes only to the `Write`
//! it is given.

mod batches;
mod columns;
mod formatter;
mod samples;
mod text;

use std::collections::HashMap;
use std::io::Write;
use tbrw_schema::Progress;

/// The crate the profile is built with.
pub use fxprof_processed_profile;
use fxprof_processed_profile::{
    debugid::DebugId, CategoryHandle, CpuDelta, MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, Profile,
    ReferenceTimestamp, SamplingInterval, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle, ThreadHandle,
    Timestamp,
};
use tbrw::Tb5File;

use crate::error::{ExportError, Nothing};
use columns::SampleTables;
use formatter::SamplesFormatter;
use tbrw_query::intervals::IntervalStream;
use tbrw_query::stacks::ViewOptions;

/// What an export put in the profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirefoxSummary {
    /// Profiler threads.
    pub threads: usize,
    /// Samples.
    pub samples: u64,
    /// Markers (intervals).
    pub markers: u64,
    /// Whether the samples carry CPU deltas (the stream has a thread CPU
    /// time field). Without, [`write()`] leaves the `threadCPUDelta` column
    /// out, and the profiler takes every sample as running.
    pub cpu_deltas: bool,
}

/// An interval as a marker: its name and its figures as one text field.
#[derive(Debug, Clone)]
struct IntervalMarker {
    name: StringHandle,
    figures: StringHandle,
}

impl StaticSchemaMarker for IntervalMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "TB5Interval";
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const TOOLTIP_LABEL: Option<&'static str> = Some("{marker.name}: {marker.data.figures}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name} {marker.data.figures}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[StaticSchemaMarkerField {
        key: "figures",
        label: "Figures",
        format: MarkerFieldFormat::String,
        flags: MarkerFieldFlags::SEARCHABLE,
    }];

    fn name(&self, _profile: &mut Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _profile: &mut Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }

    fn string_field_value(&self, _field_index: u32) -> StringHandle {
        self.figures
    }

    fn number_field_value(&self, _field_index: u32) -> f64 {
        0.0
    }
}

fn product(file: &Tb5File) -> String {
    file.path().file_name().map_or_else(|| file.path().display().to_string(), |f| f.to_string_lossy().into())
}

/// A Firefox profile: fxprof-processed-profile's `Profile` (threads,
/// stacks, frames, libraries, markers) and its threads' samples, which
/// only [`json`] puts together.
#[derive(Debug)]
pub struct FirefoxProfile {
    profile: Profile,
    /// Per thread slot (the tag of its placeholder sample): its samples.
    samples: SampleTables,
}

/// Marks a profile thread's samples table as that of `slot`: one
/// placeholder sample whose weight is the slot, which [`json`] replaces by
/// the slot's samples (fxprof orders the threads in its JSON its own way).
fn tag(p: &mut Profile, thread: ThreadHandle, slot: u32) {
    let weight = i32::try_from(slot).unwrap_or(i32::MAX);
    p.add_sample(thread, Timestamp::from_nanos_since_reference(0), None, CpuDelta::ZERO, weight);
}

/// The profile of `opts.stream`: samples for a sample stream, markers for
/// an interval stream. Warnings (modules without symbols) go to `warn`.
pub fn profile(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<(FirefoxProfile, FirefoxSummary), ExportError> {
    match IntervalStream::open(file, opts.query.stream, "") {
        Ok(st) => markers(file, &st),
        Err(_) => samples::samples(file, opts, warn, progress),
    }
}

fn markers(file: &Tb5File, st: &IntervalStream<'_>) -> Result<(FirefoxProfile, FirefoxSummary), ExportError> {
    let n = st.data.len();
    let t0 = (0..n).map(|k| st.interval(k)).map(|iv| iv.start).min();
    let Some(t0) = t0 else {
        return Err(ExportError::Nothing {
            file: file.path().display().to_string(),
            stream: st.n,
            why: Nothing::NoInterval,
        });
    };
    let reference = if st.clock.realtime {
        ReferenceTimestamp::from_millis_since_unix_epoch(t0 as f64 / 1e6)
    } else {
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0)
    };
    let mut p = Profile::new(&product(file), reference, SamplingInterval::from_millis(1));
    // No frames to name.
    p.set_symbolicated(true);
    let pid = st.pid.unwrap_or(0);
    let process = p.add_process(&st.comment, pid, Timestamp::from_nanos_since_reference(0));
    let mut threads: HashMap<Option<u32>, ThreadHandle> = HashMap::new();
    let mut summary = FirefoxSummary::default();
    let mut slots = 0usize;
    let at = |t: u64| {
        if st.clock.nanos {
            Timestamp::from_nanos_since_reference(t.saturating_sub(t0))
        } else {
            Timestamp::from_millis_since_reference(t.saturating_sub(t0) as f64)
        }
    };
    for k in 0..n {
        let iv = st.interval(k);
        let thread = *threads.entry(iv.tid).or_insert_with(|| {
            let tid = iv.tid.unwrap_or(0);
            let th = p.add_thread(process, tid, Timestamp::from_nanos_since_reference(0), is_main(tid, st.pid));
            let name = match iv.tid {
                Some(t) => st.lane_name(t),
                None => st.comment.clone(),
            };
            p.set_thread_name(th, &name);
            p.set_thread_show_markers_in_timeline(th, true);
            // No samples: an empty table.
            tag(&mut p, th, slots as u32);
            slots += 1;
            th
        });
        let mut figures: Vec<String> = st.figures(k).into_iter().map(|(l, v)| format!("{l} {v}")).collect();
        // An interval with no end (an MTMC task still running when the log
        // ended) is shown where it began, as every report counts it.
        let timing = match iv.ended() {
            true => MarkerTiming::Interval(at(iv.start), at(iv.end)),
            false => {
                figures.push("no end".to_owned());
                MarkerTiming::Instant(at(iv.start))
            }
        };
        let name = p.intern_string(st.name(&iv));
        let figures = p.intern_string(&figures.join(", "));
        p.add_marker(thread, timing, IntervalMarker { name, figures });
        summary.markers += 1;
    }
    summary.threads = threads.len();
    let samples = SampleTables::empty(slots);
    Ok((FirefoxProfile { profile: p, samples }, summary))
}

/// The main thread of a process is the one whose tid is the pid. Records
/// without a pid (a winIDEA import's contexts) have no main thread: the
/// profiler would show it under the process's name, hiding the context's.
fn is_main(tid: u32, pid: Option<u32>) -> bool {
    pid == Some(tid)
}

/// Writes the profile as gzip-compressed JSON: [`profile()`], then
/// [`write_profile()`].
pub fn write(
    file: &Tb5File,
    opts: &ViewOptions,
    out: &mut dyn Write,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<FirefoxSummary, ExportError> {
    let (p, summary) = profile(file, opts, warn, progress)?;
    write_profile(&p, &summary, out)?;
    Ok(summary)
}

/// Writes a profile [`profile()`] made as gzip-compressed JSON. A caller
/// that ends its process soon after may keep the profile from being
/// dropped (`std::mem::forget`): its millions of small allocations are
/// then given back with the process, not freed one by one.
pub fn write_profile(p: &FirefoxProfile, summary: &FirefoxSummary, out: &mut dyn Write) -> Result<(), ExportError> {
    let failed = |e: std::io::Error| ExportError::write("profile", e);
    // Samply's level (crate::gzip::LEVEL), compressed in 1 MiB blocks on worker threads while the JSON is
    // serialized here; the pipe gathers serde_json's small writes into the
    // blocks.
    let mut gz = crate::gzip::PipedGzip::new(out, flate2::Compression::new(crate::gzip::LEVEL));
    // serde_json's error of a failed write is the writer's io::Error.
    json(p, summary, &mut gz).map_err(|e| ExportError::write("profile", e.into()))?;
    gz.finish().map_err(failed)?;
    Ok(())
}

/// The profile's JSON, as [`write()`] writes it (uncompressed): compact,
/// each thread's samples written from this crate's columns. Where no CPU
/// time is known (`summary.cpu_deltas` false), the samples tables have no
/// `threadCPUDelta` column: the profiler reads a delta of 0 as an idle
/// thread, where a missing column means "running" (its activity graph
/// then shows each sample at 100 %). `meta.sampleUnits.threadCPUDelta`
/// stays: the profiler requires it.
pub fn json(p: &FirefoxProfile, summary: &FirefoxSummary, out: &mut dyn Write) -> serde_json::Result<()> {
    use serde::Serialize;
    let formatter = SamplesFormatter::new(&p.samples, summary.cpu_deltas);
    let mut ser = serde_json::Serializer::with_formatter(out, formatter);
    p.profile.serialize(&mut ser)
}

/// An ELF build id as a Breakpad-style debug id, as the Firefox Profiler
/// and its symbol servers (samply, Mozilla's) derive it: the first 16 bytes
/// (zero-padded) read as a little-endian GUID, age 0.
pub(crate) fn debug_id(build_id: &[u8]) -> DebugId {
    let mut guid = [0u8; 16];
    let n = build_id.len().min(16);
    guid[..n].copy_from_slice(&build_id[..n]);
    DebugId::from_guid_age(&guid, 0).unwrap_or_else(|_| DebugId::nil())
}

/// How the profile's JSON is written out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// Gzip-compressed ([`write_profile()`]).
    #[default]
    Gzip,
    /// Plain JSON ([`json()`]): larger, and no time spent compressing.
    Plain,
}

impl Encoding {
    /// The encoding samply chooses for an output file: gzip where its name
    /// ends in `.gz`, plain JSON otherwise. The profiler loads either.
    pub fn of_file_name(name: &std::path::Path) -> Encoding {
        match name.extension().is_some_and(|e| e == "gz") {
            true => Encoding::Gzip,
            false => Encoding::Plain,
        }
    }
}

/// The Firefox export with its options, as the registry runs it
/// ([`crate::registry::Export`]). The profile built comes back in the
/// summary ([`crate::registry::Summary::built`]).
#[derive(Clone, Debug, Default)]
pub struct Firefox {
    /// The samples exported.
    pub view: ViewOptions,
    /// Gzip (the default) or plain JSON.
    pub encoding: Encoding,
}

impl crate::registry::Export for Firefox {
    fn name(&self) -> &'static str {
        "firefox"
    }

    fn export(
        &self,
        file: &Tb5File,
        out: crate::registry::Output<'_>,
        warn: &mut Vec<crate::Warning>,
        progress: &mut dyn Progress,
    ) -> Result<crate::registry::Summary, ExportError> {
        let out = crate::registry::file_of(self.name(), out)?;
        let (p, s) = profile(file, &self.view, warn, progress)?;
        match self.encoding {
            Encoding::Gzip => write_profile(&p, &s, out)?,
            Encoding::Plain => {
                let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
                json(&p, &s, &mut out).map_err(|e| ExportError::write("profile", e.into()))?;
                out.flush().map_err(|e| ExportError::write("profile", e))?;
            }
        }
        let line = format!("{} threads, {} samples, {} markers", s.threads, s.samples, s.markers);
        Ok(crate::registry::Summary { line, built: Some(Box::new(p)), ..Default::default() })
    }
}

/// The Firefox Profiler's processed format, for profiler.firefox.com: gzip-compressed JSON where OUTPUT ends in .gz
/// (or is -), plain JSON otherwise, as samply writes it.
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug)]
pub struct FirefoxArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub view: crate::cli::ViewArgs,
}

#[cfg(feature = "cli")]
impl crate::cli::ExportArgs for FirefoxArgs {
    fn job(self) -> Result<crate::cli::Job, crate::cli::ArgsError> {
        // Standard output stays gzip: there is no name to go by.
        let encoding = match self.view.output.as_os_str() == "-" {
            true => Encoding::Gzip,
            false => Encoding::of_file_name(&self.view.output),
        };
        self.view.job(|view| Firefox { view, encoding })
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_ids_of_build_ids_read_the_first_bytes_as_a_guid() {
        let id: Vec<u8> = (1..=20).collect();
        // 01020304-0506-0708-090a-0b0c0d0e0f10, GUID byte order, age 0.
        assert_eq!(debug_id(&id).breakpad().to_string(), "0403020106050807090A0B0C0D0E0F100");
        assert_eq!(debug_id(&[0xab]).breakpad().to_string(), format!("000000AB{}0", "0".repeat(24)));
    }
}
