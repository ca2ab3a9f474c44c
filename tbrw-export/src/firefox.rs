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
//! sample stream is walked twice, its stacks the walk's tree of nodes: the
//! distinct frames first (each module a library whose symbol table names
//! the addresses its symbols name; a module whose file is not here one
//! frame, its name in brackets), then the samples. Where the records carry no CPU time, the JSON has no CPU
//! delta column ([`json`]), so that the profiler shows the threads running.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;

/// The profile [`profile()`] builds, and the crate it is of.
pub use fxprof_processed_profile::{self, Profile};
use fxprof_processed_profile::{
    debugid::DebugId, CategoryColor, CategoryHandle, CpuDelta, Frame as FxFrame, FrameFlags, FrameInfo, LibraryHandle,
    LibraryInfo, MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, ProcessHandle, ReferenceTimestamp,
    SamplingInterval, StackHandle, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle, Symbol, SymbolTable,
    ThreadHandle, Timestamp,
};
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};
use tbrw::Tb5File;

use crate::error::{ExportError, Nothing};
use tbrw_query::intervals::IntervalStream;
use tbrw_query::names;
use tbrw_query::stacks::{walk, Detail, IdMap, Names, NodeId, StackTree, ViewOptions};

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
    // Build ids the collector noted: the libraries' code and debug ids.
    let notes = match file.user_defined_global()? {
        Some(b) => tbrw_schema::module_notes::decode(&String::from_utf8_lossy(b)),
        None => HashMap::new(),
    };
    // Every frame is named below (a function, else `[libfoo.so]`): the
    // profiler must not look for symbols itself (on a symbol server, for
    // libraries it cannot identify).
    p.set_symbolicated(true);
    // Pass 1: the distinct frames, so that each module becomes a library
    // with a symbol table of its named addresses before any frame is
    // interned (the profile names frames when they are interned). A
    // module whose file is not here is one frame, `[libfoo.so]`.
    let mut tree = StackTree::new();
    walk(
        file,
        opts,
        "a Firefox profile",
        &mut tree,
        &mut function_names.resolution(Detail::Function),
        &mut |_| {},
        &mut |_| Ok(()),
    )?;
    let mut ordered: Vec<u32> = (0..tree.frame_count() as u32).collect();
    ordered.sort_by_key(|&id| tree.frame(id));
    // One library per file (its path, else its name), whichever processes
    // map it: the profile takes libraries with the same description for
    // one, so the symbols of every process's mapping go into its one
    // table. Ordered: the profile gets its libraries in the same order
    // every run.
    let mut libs: BTreeMap<String, (LibraryHandle, Vec<Symbol>)> = BTreeMap::new();
    // Per module record: the library of its file.
    let mut module_lib: BTreeMap<u64, LibraryHandle> = BTreeMap::new();
    // Per frame, by its number in the tree: its profile frames'
    // `frame_infos[start..end]`, its own and then one per function
    // inlined there, outermost first.
    let mut frame_range: Vec<(u32, u32)> = vec![(0, 0); tree.frame_count()];
    let mut frame_infos: Vec<FrameInfo> = Vec::new();
    for &id in &ordered {
        let f = tree.frame(id);
        let name = function_names.function(f, warn);
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
                    let build_id = notes.get(&m).and_then(|n| n.build_id.as_deref()).filter(|b| !b.is_empty());
                    let lib = p.add_lib(LibraryInfo {
                        name: name.clone(),
                        debug_name: name,
                        path: path.clone(),
                        debug_path: path,
                        debug_id: build_id.map_or_else(DebugId::nil, debug_id),
                        code_id: build_id.map(tbrw_schema::module_notes::hex),
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
        let start = frame_infos.len() as u32;
        frame_infos.push(FrameInfo { frame, category_pair: code.into(), flags: FrameFlags::empty() });
        // Inlined functions: frames named by a label inside it (the
        // profile format's `inlineDepth`, which would tie them to the
        // address, is always 0 in what fxprof-processed-profile 0.8 writes).
        for inlined in function_names.inlined(f, warn) {
            let frame = FxFrame::Label(p.intern_string(&inlined));
            frame_infos.push(FrameInfo { frame, category_pair: code.into(), flags: FrameFlags::empty() });
        }
        frame_range[id as usize] = (start, frame_infos.len() as u32);
    }
    function_names.write_warnings(warn);
    drop(ordered);
    for (lib, symbols) in libs.values_mut() {
        // The same address in several processes' mappings: once.
        symbols.sort_by_key(|s| s.address);
        symbols.dedup_by_key(|s| s.address);
        p.set_lib_symbol_table(*lib, Arc::new(SymbolTable::new(std::mem::take(symbols))));
    }
    // Pass 2: the samples, their stacks the tree's nodes again. Each
    // distinct (thread, node) is interned in the profile once: the
    // profile's own interning hashes every frame of every sample several
    // times over, which was most of the export's time. Here a sample's
    // stack is its node, looked up once in an id-hashed map with its
    // thread, and a new one interns only the nodes its thread had not.
    let mut processes: IdMap<u64, ProcessHandle> = IdMap::default();
    // Per bind thread index: the profile's thread and its slot (the order it was added in).
    let mut threads: IdMap<u64, (ThreadHandle, u32)> = IdMap::default();
    let mut handles: IdMap<(u32, NodeId), StackHandle> = IdMap::default();
    let mut path: Vec<NodeId> = Vec::new();
    // Per thread slot: the nanoseconds of CPU time not yet in a delta.
    let mut carry: Vec<u64> = Vec::new();
    // Consecutive samples are mostly of the same thread.
    let mut last_thread: Option<(u64, ThreadHandle, u32)> = None;
    let mut t0: Option<u64> = None;
    let mut summary = FirefoxSummary::default();
    let mut res = function_names.resolution(Detail::Function);
    let info = walk(file, opts, "a Firefox profile", &mut tree, &mut res, progress, &mut |smp| {
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
        // Out to the first node this thread has, then back in.
        path.clear();
        let mut up = None;
        for n in smp.tree.path(smp.stack) {
            if let Some(&h) = handles.get(&(slot, n)) {
                up = Some(h);
                break;
            }
            path.push(n);
        }
        for &n in path.iter().rev() {
            // Pass 1 saw every frame; one it did not (none) is left out, as before.
            let (start, end) = frame_range.get(smp.tree.frame_id_of(n) as usize).copied().unwrap_or((0, 0));
            for info in &frame_infos[start as usize..end as usize] {
                let frame = p.intern_frame(thread, info.clone());
                up = Some(p.intern_stack(thread, up, frame));
            }
            if let Some(h) = up {
                handles.insert((slot, n), h);
            }
        }
        let stack = up;
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
    summary.cpu_deltas = info.has_cputime;
    Ok((p, summary))
}

fn markers(file: &Tb5File, st: &IntervalStream<'_>) -> Result<(Profile, FirefoxSummary), ExportError> {
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
    let failed = |e: std::io::Error| ExportError::write("profile", e);
    // The fastest level: about three times faster than the default on a
    // profile's JSON, and no larger (its numbers repeat a lot).
    // Compressed on a second thread while the JSON is serialized here; the
    // pipe gathers serde_json's small writes into large chunks.
    let mut gz = crate::gzip::PipedGzip::new(out, flate2::Compression::fast());
    // serde_json's error of a failed write is the writer's io::Error.
    json(&p, &summary, &mut gz).map_err(|e| ExportError::write("profile", e.into()))?;
    gz.finish().map_err(failed)?;
    Ok(summary)
}

/// The profile's JSON, as [`write()`] writes it (uncompressed). Where no CPU
/// time is known (`summary.cpu_deltas` false), the samples tables have no
/// `threadCPUDelta` column: `fxprof-processed-profile` always writes one,
/// and the profiler reads a delta of 0 as an idle thread, where a missing
/// column means "running" (its activity graph then shows each sample at
/// 100 %). `meta.sampleUnits.threadCPUDelta` stays: the profiler requires it.
pub fn json(p: &Profile, summary: &FirefoxSummary, out: &mut dyn Write) -> serde_json::Result<()> {
    use serde::Serialize;
    if summary.cpu_deltas {
        return serde_json::to_writer(out, p);
    }
    let formatter = WithoutKey::new(b"\"samples\"", b"\"threadCPUDelta\"");
    let mut ser = serde_json::Serializer::with_formatter(out, formatter);
    p.serialize(&mut ser)
}

/// A `serde_json` formatter that writes compact JSON without the entries
/// with key `drop` of the objects that are the value of a key `parent`:
/// each key is held back until it is complete, then written (with the
/// comma its object needs) or left out with its whole value.
struct WithoutKey {
    /// The keys as written, with their quotes.
    parent: &'static [u8],
    drop: &'static [u8],
    /// The key being written, held back.
    key: Option<Vec<u8>>,
    /// The key whose value is being written, until an object or array
    /// starts (which then is that value) or the value ends.
    value_of: Option<Vec<u8>>,
    /// Inside a value left out: how many arrays and objects deep.
    skipping: Option<u32>,
    /// Per open object: whether an entry was written (its next needs a
    /// comma), and whether it is the value of a key `parent`.
    objects: Vec<(bool, bool)>,
}

impl WithoutKey {
    fn new(parent: &'static [u8], drop: &'static [u8]) -> WithoutKey {
        WithoutKey { parent, drop, key: None, value_of: None, skipping: None, objects: Vec::new() }
    }
}

/// The formatter's scalar and string methods: nothing while a value is
/// left out, into the held-back key while one is written, else through.
macro_rules! pass {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $name<W: ?Sized + Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> std::io::Result<()> {
            if self.skipping.is_some() {
                return Ok(());
            }
            match &mut self.key {
                Some(k) => CompactFormatter.$name(k $(, $arg)*),
                None => CompactFormatter.$name(w $(, $arg)*),
            }
        }
    )*};
}

impl Formatter for WithoutKey {
    pass! {
        write_null();
        write_bool(v: bool);
        write_i8(v: i8);
        write_i16(v: i16);
        write_i32(v: i32);
        write_i64(v: i64);
        write_i128(v: i128);
        write_u8(v: u8);
        write_u16(v: u16);
        write_u32(v: u32);
        write_u64(v: u64);
        write_u128(v: u128);
        write_f32(v: f32);
        write_f64(v: f64);
        write_number_str(v: &str);
        begin_string();
        end_string();
        write_string_fragment(v: &str);
        write_char_escape(v: CharEscape);
        write_byte_array(v: &[u8]);
        write_raw_fragment(v: &str);
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.skipping {
            Some(depth) => {
                *depth += 1;
                Ok(())
            }
            None => {
                self.value_of = None;
                CompactFormatter.begin_array(w)
            }
        }
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.skipping {
            Some(depth) => {
                *depth -= 1;
                Ok(())
            }
            None => CompactFormatter.end_array(w),
        }
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        match self.skipping {
            Some(_) => Ok(()),
            None => CompactFormatter.begin_array_value(w, first),
        }
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match self.skipping {
            Some(_) => Ok(()),
            None => CompactFormatter.end_array_value(w),
        }
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.skipping {
            Some(depth) => {
                *depth += 1;
                Ok(())
            }
            None => {
                let in_parent = self.value_of.take().is_some_and(|k| k == self.parent);
                self.objects.push((false, in_parent));
                CompactFormatter.begin_object(w)
            }
        }
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match &mut self.skipping {
            Some(depth) => {
                *depth -= 1;
                Ok(())
            }
            None => {
                self.objects.pop();
                CompactFormatter.end_object(w)
            }
        }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, _w: &mut W, _first: bool) -> std::io::Result<()> {
        if self.skipping.is_none() {
            self.key = Some(Vec::new());
        }
        Ok(())
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        if self.skipping.is_some() {
            return Ok(());
        }
        let key = self.key.take().unwrap_or_default();
        let Some((written, in_parent)) = self.objects.last_mut() else { return w.write_all(&key) };
        if *in_parent && key == self.drop {
            self.skipping = Some(0);
            return Ok(());
        }
        // The comma goes before every entry of the object but its first written one.
        if std::mem::replace(written, true) {
            w.write_all(b",")?;
        }
        w.write_all(&key)?;
        self.value_of = Some(key);
        Ok(())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match self.skipping {
            Some(_) => Ok(()),
            None => CompactFormatter.begin_object_value(w),
        }
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match self.skipping {
            // The end of the value left out.
            Some(0) => {
                self.skipping = None;
                Ok(())
            }
            Some(_) => Ok(()),
            None => {
                self.value_of = None;
                CompactFormatter.end_object_value(w)
            }
        }
    }
}

/// An ELF build id as a Breakpad-style debug id, as the Firefox Profiler
/// and its symbol servers (samply, Mozilla's) derive it: the first 16 bytes
/// (zero-padded) read as a little-endian GUID, age 0.
pub fn debug_id(build_id: &[u8]) -> DebugId {
    let mut guid = [0u8; 16];
    let n = build_id.len().min(16);
    guid[..n].copy_from_slice(&build_id[..n]);
    DebugId::from_guid_age(&guid, 0).unwrap_or_else(|_| DebugId::nil())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn without(v: &serde_json::Value, parent: &'static [u8], key: &'static [u8]) -> String {
        use serde::Serialize;
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, WithoutKey::new(parent, key));
        v.serialize(&mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_key_is_left_out_with_its_value_where_its_object_is_a_samples_value() {
        let v = serde_json::json!({
            "threadCPUDelta": [1, 2],
            "meta": {"sampleUnits": {"time": "ms", "threadCPUDelta": "µs"}},
            "threads": [
                {"samples": {"length": 2, "threadCPUDelta": [1, {"x": [null]}], "weight": null}, "name": "a\"b\u{1}"},
                {"samples": {"threadCPUDelta": 0}, "markers": {"samples": {"threadCPUDelta": -1.5}}}
            ],
            "samples": [{"threadCPUDelta": true}],
            "samples2": {"threadCPUDelta": 1, "threadCPUDeltas": 2}
        });
        let got = without(&v, b"\"samples\"", b"\"threadCPUDelta\"");
        // serde_json's own compact writing of the same value without the
        // entries of objects that are a `samples` key's value.
        let want = serde_json::json!({
            "threadCPUDelta": [1, 2],
            "meta": {"sampleUnits": {"time": "ms", "threadCPUDelta": "µs"}},
            "threads": [
                {"samples": {"length": 2, "weight": null}, "name": "a\"b\u{1}"},
                {"samples": {}, "markers": {"samples": {}}}
            ],
            "samples": [{"threadCPUDelta": true}],
            "samples2": {"threadCPUDelta": 1, "threadCPUDeltas": 2}
        });
        assert_eq!(got, serde_json::to_string(&want).unwrap());
        // Nothing left out: the same bytes as serde_json's.
        assert_eq!(without(&v, b"\"none\"", b"\"threadCPUDelta\""), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn debug_ids_of_build_ids_read_the_first_bytes_as_a_guid() {
        let id: Vec<u8> = (1..=20).collect();
        // 01020304-0506-0708-090a-0b0c0d0e0f10, GUID byte order, age 0.
        assert_eq!(debug_id(&id).breakpad().to_string(), "0403020106050807090A0B0C0D0E0F100");
        assert_eq!(debug_id(&[0xab]).breakpad().to_string(), format!("000000AB{}0", "0".repeat(24)));
    }
}
