//! `tbrw export firefox`: the Firefox Profiler's processed format (through
//! `fxprof-processed-profile`), gzip-compressed JSON that
//! profiler.firefox.com opens. A sample stream becomes one profiler thread
//! per TB5 thread with its samples, their time stamps and stacks (function
//! names where the modules' symbols give them), and the modules as
//! libraries; an interval stream (MTMC tasks, winIDEA calls) becomes one
//! thread per thread or context with a marker per interval. The profile
//! holds a sample per sample (the format is a timeline), interned stacks
//! and frames: memory grows with the samples by about 40 bytes each (its
//! time, stack, CPU delta and weight; docs/EXPORT.md "Large inputs"). A
//! sample stream is walked twice: the distinct frames first (each module a
//! library whose symbol table names the addresses its symbols name), then
//! the samples.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;

use fxprof_processed_profile::{
    debugid::DebugId, CategoryColor, CategoryHandle, CpuDelta, Frame as FxFrame, FrameFlags, FrameInfo, LibraryHandle,
    LibraryInfo, MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, ProcessHandle, Profile, ReferenceTimestamp,
    SamplingInterval, StackHandle, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle, Symbol, SymbolTable,
    ThreadHandle, Timestamp,
};
use tbrw::Tb5File;

use crate::error::ExportError;
use tbrw_query::intervals::IntervalStream;
use tbrw_query::names;
use tbrw_query::stacks::{walk, Frame, IdMap, Names, ViewOptions};

/// What an export put in the profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirefoxSummary {
    /// Profiler threads.
    pub threads: usize,
    /// Samples.
    pub samples: u64,
    /// Markers (intervals).
    pub markers: u64,
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

/// The profile of `opts.stream`: samples for a sample stream, markers for
/// an interval stream. Warnings (modules without symbols) go to `warn`.
pub fn profile(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<(Profile, FirefoxSummary), ExportError> {
    match IntervalStream::open(file, opts.query.stream, "") {
        Ok(st) => markers(file, &st),
        Err(_) => samples(file, opts, warn, progress),
    }
}

fn samples(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<(Profile, FirefoxSummary), ExportError> {
    let mut p = Profile::new(
        &product(file),
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_millis(1),
    );
    let modules = tbrw_query::stream::modules(file)?;
    let mut function_names = Names::new(file, &modules, Some(&opts.symbols))?;
    let s = file.stream(opts.query.stream)?;
    let layout = s.layout()?;
    let clock_nanos = match &layout {
        Some(l) => tbrw_query::stream::time_field(file, &s, l)?.is_some_and(|t| t.nanos),
        None => false,
    };
    let code = p.add_category("Code", CategoryColor::Blue);
    // Pass 1: the distinct frames, so that each module becomes a library
    // with a symbol table of its named addresses before any frame is
    // interned (the profile names frames when they are interned).
    let mut distinct: IdMap<Frame, ()> = IdMap::default();
    walk(file, opts, "a Firefox profile", &mut |_| {}, &mut |smp| {
        for f in smp.frames {
            distinct.insert(*f, ());
        }
        Ok(())
    })?;
    let mut ordered: Vec<Frame> = distinct.into_keys().collect();
    ordered.sort();
    // One library per file (its path, else its name), whichever processes
    // map it: the profile takes libraries with the same description for
    // one, so the symbols of every process's mapping go into its one
    // table. Ordered: the profile gets its libraries in the same order
    // every run.
    let mut libs: BTreeMap<String, (LibraryHandle, Vec<Symbol>)> = BTreeMap::new();
    // Per module record: the library of its file.
    let mut module_lib: BTreeMap<u64, LibraryHandle> = BTreeMap::new();
    // Per frame, by its index in `ordered` (the frame's id below).
    let mut frame_info: Vec<FrameInfo> = Vec::with_capacity(ordered.len());
    for f in &ordered {
        let name = function_names.function(*f, warn);
        let in_lib = f.module.and_then(|m| modules.get(m as usize).map(|md| (m, md)));
        let frame = match in_lib
            .and_then(|(m, md)| u32::try_from(f.pc.wrapping_sub(md.load_address)).ok().map(|rva| (m, md, rva)))
        {
            Some((m, md, rva)) => {
                let file_name = names::module_label(md);
                let key = md.path.clone().unwrap_or_else(|| file_name.clone());
                let (lib, symbols) = libs.entry(key).or_insert_with(|| {
                    let name = file_name;
                    let path = md.path.clone().unwrap_or_else(|| name.clone());
                    let lib = p.add_lib(LibraryInfo {
                        name: name.clone(),
                        debug_name: name,
                        path: path.clone(),
                        debug_path: path,
                        debug_id: DebugId::nil(),
                        code_id: None,
                        arch: None,
                        symbol_table: None,
                    });
                    (lib, Vec::new())
                });
                // An address without a function is named as every output
                // names it (`[libfoo.so]`), not left as a bare address.
                let label = name.map_or_else(|| names::in_module(&names::module_label(md)), |f| f.to_string());
                symbols.push(Symbol { address: rva, size: Some(1), name: label });
                module_lib.insert(m, *lib);
                FxFrame::RelativeAddressFromInstructionPointer(*lib, rva)
            }
            None => {
                // No module, or one too large for the format's 32-bit offsets.
                let module = in_lib.map(|(_, md)| names::module_label(md));
                let label = name.map_or_else(|| names::unknown_function(module.as_deref()), |n| n.to_string());
                FxFrame::Label(p.intern_string(&label))
            }
        };
        frame_info.push(FrameInfo { frame, category_pair: code.into(), flags: FrameFlags::empty() });
    }
    let frame_id: IdMap<Frame, u32> = ordered.iter().enumerate().map(|(i, f)| (*f, i as u32)).collect();
    drop(ordered);
    for (lib, symbols) in libs.values_mut() {
        // The same address in several processes' mappings: once.
        symbols.sort_by_key(|s| s.address);
        symbols.dedup_by_key(|s| s.address);
        p.set_lib_symbol_table(*lib, Arc::new(SymbolTable::new(std::mem::take(symbols))));
    }
    // Pass 2: the samples. Each distinct (thread, stack) is interned in
    // the profile once: the profile's own interning hashes every frame of
    // every sample several times over, which was most of the export's
    // time. Here a stack is a path of nodes, each (thread, parent node,
    // frame id) looked up once in an id-hashed map; the node holds the
    // profile's handle.
    let mut processes: IdMap<u64, ProcessHandle> = IdMap::default();
    // Per bind thread index: the profile's thread and its slot (the order it was added in).
    let mut threads: IdMap<u64, (ThreadHandle, u32)> = IdMap::default();
    let mut nodes: IdMap<(u32, u32, u32), u32> = IdMap::default();
    let mut handles: Vec<StackHandle> = Vec::new();
    // Per thread slot: the nanoseconds of CPU time not yet in a delta.
    let mut carry: Vec<u64> = Vec::new();
    // Consecutive samples are mostly of the same thread.
    let mut last_thread: Option<(u64, ThreadHandle, u32)> = None;
    let mut t0: Option<u64> = None;
    let mut summary = FirefoxSummary::default();
    let info = walk(file, opts, "a Firefox profile", progress, &mut |smp| {
        // Nanosecond clocks give the time; other clocks (TSC, sample
        // indices) have no known rate: the record index stands for ms.
        let at = match smp.time.filter(|_| clock_nanos) {
            Some(t) => {
                let base = *t0.get_or_insert(t);
                Timestamp::from_nanos_since_reference(t.saturating_sub(base))
            }
            None => Timestamp::from_millis_since_reference(smp.index as f64),
        };
        let (thread, slot) = match last_thread {
            Some((k, h, slot)) if k == smp.thread => (h, slot),
            _ => {
                let slot = threads.len() as u32;
                let (h, slot) = *threads.entry(smp.thread).or_insert_with(|| {
                    let process = *processes.entry(smp.process).or_insert_with(|| p.add_process("?", smp.pid, at));
                    let th = p.add_thread(process, smp.tid, at, smp.tid == smp.pid);
                    p.set_thread_name(th, &names::thread_label(smp.tid, None));
                    (th, slot)
                });
                last_thread = Some((smp.thread, h, slot));
                (h, slot)
            }
        };
        let mut parent = u32::MAX;
        for f in smp.frames.iter().rev() {
            // Pass 1 saw every frame; one it did not (none) is left out, as before.
            let Some(&id) = frame_id.get(f) else { continue };
            let next = handles.len() as u32;
            let node = *nodes.entry((slot, parent, id)).or_insert(next);
            if node == next {
                let up = (parent != u32::MAX).then(|| handles[parent as usize]);
                let frame = p.intern_frame(thread, frame_info[id as usize].clone());
                handles.push(p.intern_stack(thread, up, frame));
            }
            parent = node;
        }
        let stack = (parent != u32::MAX).then(|| handles[parent as usize]);
        // The profile keeps whole microseconds: each thread carries the
        // nanoseconds a delta leaves over into its next one, so that a
        // thread's deltas add up to its cputime (truncating each sample's
        // would lose up to a microsecond per sample).
        let cpu = match smp.cpu_time {
            Some(ns) => {
                let slot = slot as usize;
                if carry.len() <= slot {
                    carry.resize(slot + 1, 0);
                }
                let ns = carry[slot].saturating_add(ns);
                carry[slot] = ns % 1000;
                CpuDelta::from_nanos(ns - ns % 1000)
            }
            None => CpuDelta::ZERO,
        };
        p.add_sample(thread, at, stack, cpu, 1);
        summary.samples += 1;
        Ok(())
    })?;
    if let (Some(t), Some(tf)) = (t0, &info.time) {
        if tf.realtime {
            p.set_reference_timestamp(ReferenceTimestamp::from_millis_since_unix_epoch(t as f64 / 1e6));
        }
    }
    for (k, h) in &processes {
        if let Some(pr) = info.processes.get(k) {
            p.set_process_name(*h, &names::process_label(pr.pid, pr.name.as_deref()));
        }
    }
    for (k, (h, _)) in &threads {
        if let Some(t) = info.threads.get(k) {
            p.set_thread_name(*h, &names::thread_label(t.tid, t.name.as_deref()));
        }
    }
    // Each module record's library mapped in the processes of its pid.
    for (m, lib) in &module_lib {
        let Some(md) = modules.get(*m as usize) else { continue };
        let mut mapped: Vec<(&u64, &ProcessHandle)> = processes
            .iter()
            .filter(|(k, _)| info.processes.get(k).is_some_and(|pr| pr.pid == md.associated_pid))
            .collect();
        mapped.sort_by_key(|(k, _)| **k);
        for (_, &ph) in mapped {
            p.add_lib_mapping(ph, *lib, md.load_address, md.load_address.saturating_add(md.length.max(1)), 0);
        }
    }
    summary.threads = threads.len();
    Ok((p, summary))
}

fn markers(file: &Tb5File, st: &IntervalStream<'_>) -> Result<(Profile, FirefoxSummary), ExportError> {
    let n = st.data.len();
    let t0 = (0..n).map(|k| st.interval(k)).map(|iv| iv.start).min();
    let Some(t0) = t0 else {
        return Err(ExportError::msg(format!(
            "{}: stream {}: no interval: nothing to show",
            file.path().display(),
            st.n
        )));
    };
    let reference = if st.clock.realtime {
        ReferenceTimestamp::from_millis_since_unix_epoch(t0 as f64 / 1e6)
    } else {
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0)
    };
    let mut p = Profile::new(&product(file), reference, SamplingInterval::from_millis(1));
    let pid = st.pid.unwrap_or(0);
    let process = p.add_process(&st.comment, pid, Timestamp::from_nanos_since_reference(0));
    let mut threads: HashMap<Option<u32>, ThreadHandle> = HashMap::new();
    let mut summary = FirefoxSummary::default();
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
    Ok((p, summary))
}

/// The main thread of a process is the one whose tid is the pid. Records
/// without a pid (a winIDEA import's contexts) have no main thread: the
/// profiler would show it under the process's name, hiding the context's.
fn is_main(tid: u32, pid: Option<u32>) -> bool {
    pid == Some(tid)
}

/// Writes the profile as gzip-compressed JSON.
pub fn write(
    file: &Tb5File,
    opts: &ViewOptions,
    out: &mut dyn Write,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<FirefoxSummary, ExportError> {
    let (p, summary) = profile(file, opts, warn, progress)?;
    let failed = |e: std::io::Error| ExportError::msg(format!("writing the profile: {e}"));
    // The fastest level: about three times faster than the default on a
    // profile's JSON, and no larger (its numbers repeat a lot).
    let gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
    // serde_json writes a few bytes at a time, and each write into the
    // encoder costs a pass over its 32 KiB output buffer: buffered, the
    // encoder gets large writes (this was most of a large export's time).
    let mut w = std::io::BufWriter::with_capacity(1 << 20, gz);
    serde_json::to_writer(&mut w, &p).map_err(|e| ExportError::msg(format!("writing the profile: {e}")))?;
    let gz = w.into_inner().map_err(|e| failed(e.into_error()))?;
    gz.finish().map_err(failed)?;
    Ok(summary)
}
