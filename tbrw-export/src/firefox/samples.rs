//! The Firefox profile of a sample stream: one walk of the samples, each
//! kept as its thread and its node in the walk's tree (the frames are not
//! named yet: the profile names a frame from its library's symbol table
//! when the frame is interned, so every library's table must be set
//! first); then the distinct frames named, each module a library (a
//! module whose file is not here one frame, its name in brackets); then
//! each distinct (thread, stack) interned once, in the order the samples
//! first had it, so that the profile is the one interning sample by sample
//! would give. The walk runs on the calling thread and hands its samples
//! in batches to a second thread that fills the columns
//! ([`super::batches`]): on two cores the two halves overlap.
//!
//! Imports the query layer's names, fxprof-processed-profile,
//! [`super::batches`], [`super::columns`] and [`super::text`]'s
//! `NO_STACK`; writes nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tbrw_schema::Progress;

use fxprof_processed_profile::{
    debugid::DebugId, CategoryColor, Frame as FxFrame, FrameFlags, FrameInfo, LibraryHandle, LibraryInfo, Profile,
    ReferenceTimestamp, SamplingInterval, StackHandle, Symbol, SymbolTable,
};
use tbrw::{Module, Tb5File};
use tbrw_query::names;
use tbrw_query::stacks::{walk_in_parts, Detail, IdMap, Names, NodeId, PartsWalk, StackTree, ViewOptions, WalkInfo};

use super::batches::{merge, walk_into, Parted, Walked, BATCH};
use super::columns::{render_deltas, SampleTables, ThreadSamples};
use super::text::NO_STACK;
use super::{debug_id, product, FirefoxProfile, FirefoxSummary};
use crate::error::ExportError;

/// The profile of the sample stream `opts.query.stream`.
pub(super) fn samples(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<(FirefoxProfile, FirefoxSummary), ExportError> {
    samples_walked(file, opts, warn, progress, How::Parts(None))
}

/// How the samples are walked ([`super::batches`]).
#[derive(Clone, Copy, Debug)]
enum How {
    /// In this many parts (`None`: one per bind thread) where the stream
    /// allows, else in order with batches of [`BATCH`] samples.
    Parts(Option<usize>),
    /// In order, the columns filled on a second thread from batches of
    /// this many samples (`None`: on this thread).
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests compare the walks with it"))]
    InOrder(Option<usize>),
}

/// [`samples`], walked as `how` says.
fn samples_walked(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
    how: How,
) -> Result<(FirefoxProfile, FirefoxSummary), ExportError> {
    let mut p = Profile::new(
        &product(file),
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_millis(1),
    );
    let modules = tbrw_query::stream::modules(file)?;
    let mut function_names = Names::new(file, &modules, Some(&opts.symbols))?;
    let s = file.stream(opts.query.stream)?;
    let clock_nanos = match &s.layout()? {
        Some(l) => tbrw_query::stream::time_field(file, &s, l)?.is_some_and(|t| t.nanos),
        None => false,
    };
    // Every frame is named below (a function, else `[libfoo.so]`): the
    // profiler must not look for symbols itself (on a symbol server, for
    // libraries it cannot identify).
    p.set_symbolicated(true);
    let records = s.data()?.map_or(0, |d| d.len());
    let mut tree = StackTree::new();
    let mut res = function_names.resolution(Detail::Function);
    let what = "a Firefox profile";
    let in_parts = match how {
        How::Parts(parts) => walk_in_parts(
            file,
            opts,
            what,
            &mut tree,
            &mut res,
            parts,
            progress,
            |r| Parted::new(r, clock_nanos),
            Parted::add,
        )?,
        How::InOrder(_) => None,
    };
    let (info, parts, t0) = match in_parts {
        Some(PartsWalk { info, parts }) => {
            let mut t0 = None;
            let parts = parts
                .into_iter()
                .map(|part| {
                    let (samples, first) = part.state.into_samples();
                    t0 = t0.or(first);
                    (samples, Some(part.nodes))
                })
                .collect();
            (info, parts, t0)
        }
        None => {
            let batch = match how {
                How::InOrder(batch) => batch,
                How::Parts(_) => Some(BATCH),
            };
            let (info, part, t0) = walk_into(file, opts, &mut tree, &mut res, progress, records, clock_nanos, batch)?;
            (info, vec![(part, None)], t0)
        }
    };
    drop(res);
    let zero = t0.unwrap_or(0);
    let mut w = merge(&mut p, parts, zero);
    let threads: Vec<ThreadSamples> = w.slots.iter_mut().map(|(_, s)| std::mem::take(s)).collect();
    // The time deltas' text is made on a second thread while the frames
    // are named and the stacks interned here: it needs neither.
    let (stack_of, deltas) = std::thread::scope(|scope| {
        let ahead = std::thread::Builder::new()
            .name("firefox-deltas".into())
            .spawn_scoped(scope, || render_deltas(&threads, zero))
            .ok();
        let stack_of = name_frames(&mut p, &tree, &modules, file, &mut function_names, warn).map(|frames| {
            let stack_of = intern_stacks(&mut p, &tree, &frames, &w);
            finish(&mut p, &modules, &frames.module_lib, &w, t0, &info);
            stack_of
        });
        let deltas = ahead.map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        (stack_of, deltas.unwrap_or_default())
    });
    let summary = FirefoxSummary {
        threads: threads.len(),
        samples: threads.iter().map(|s| s.len() as u64).sum(),
        markers: 0,
        cpu_deltas: info.has_cputime,
    };
    let samples = SampleTables { threads, stack_of: stack_of?, t0: zero, deltas };
    Ok((FirefoxProfile { profile: p, samples }, summary))
}

/// The profile's frames of the tree's frames.
struct Frames {
    /// Per frame, by its number in the tree: its profile frames'
    /// `infos[start..end]`, its own and then one per function inlined
    /// there, outermost first.
    range: Vec<(u32, u32)>,
    infos: Vec<FrameInfo>,
    /// Per module record: the library of its file.
    module_lib: BTreeMap<u64, LibraryHandle>,
}

/// Names every distinct frame of the tree, each module's file a library
/// whose symbol table names the addresses its frames have.
fn name_frames(
    p: &mut Profile,
    tree: &StackTree,
    modules: &[Module],
    file: &Tb5File,
    function_names: &mut Names,
    warn: &mut Vec<tbrw_query::Warning>,
) -> Result<Frames, ExportError> {
    let code = p.add_category("Code", CategoryColor::Blue);
    // Build ids the collector noted: the libraries' code and debug ids.
    let notes = match file.user_defined_global()? {
        Some(b) => tbrw_schema::module_notes::decode(&String::from_utf8_lossy(b)),
        None => HashMap::new(),
    };
    let mut ordered: Vec<u32> = (0..tree.frame_count() as u32).collect();
    ordered.sort_by_key(|&id| tree.frame(id));
    // One library per file (its path, else its name), whichever processes
    // map it: the profile takes libraries with the same description for
    // one, so the symbols of every process's mapping go into its one
    // table. Ordered: the profile gets its libraries in the same order
    // every run.
    let mut libs: BTreeMap<String, (LibraryHandle, Vec<Symbol>)> = BTreeMap::new();
    let mut frames = Frames { range: vec![(0, 0); tree.frame_count()], infos: Vec::new(), module_lib: BTreeMap::new() };
    let info = |frame| FrameInfo { frame, category_pair: code.into(), flags: FrameFlags::empty() };
    for &id in &ordered {
        let f = tree.frame(id);
        let name = function_names.function(f);
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
                frames.module_lib.insert(m, *lib);
                FxFrame::RelativeAddressFromInstructionPointer(*lib, rva)
            }
            None => {
                // No module, or one too large for the format's 32-bit offsets.
                let module = in_lib.map(|(_, md)| names::module_label(md));
                let label = name.map_or_else(|| names::unknown_function(module.as_deref()), |n| n.to_string());
                FxFrame::Label(p.intern_string(&label))
            }
        };
        let start = frames.infos.len() as u32;
        frames.infos.push(info(frame));
        // Inlined functions: frames named by a label inside it (the
        // profile format's `inlineDepth`, which would tie them to the
        // address, is always 0 in what fxprof-processed-profile 0.8 writes).
        for inlined in function_names.inlined(f) {
            frames.infos.push(info(FxFrame::Label(p.intern_string(&inlined))));
        }
        frames.range[id as usize] = (start, frames.infos.len() as u32);
    }
    function_names.take_warnings(warn);
    for (lib, symbols) in libs.values_mut() {
        // The same address in several processes' mappings: once.
        symbols.sort_by_key(|s| s.address);
        symbols.dedup_by_key(|s| s.address);
        p.set_lib_symbol_table(*lib, Arc::new(SymbolTable::new(std::mem::take(symbols))));
    }
    Ok(frames)
}

/// A profile thread's stacks as the profile numbers them: its stack table
/// is numbered in the order stacks are first interned, so a handle not
/// seen before is the next number.
#[derive(Default)]
struct StackNumbers {
    handles: Vec<StackHandle>,
    number: HashMap<StackHandle, u32>,
}

impl StackNumbers {
    fn number(&mut self, h: StackHandle) -> u32 {
        let next = self.handles.len() as u32;
        let n = *self.number.entry(h).or_insert(next);
        if n == next {
            self.handles.push(h);
        }
        n
    }
}

/// Interns each distinct (thread, node) pair's stack, first seen first;
/// returns per part, by its pair numbers, the stack's number in its
/// thread's table.
fn intern_stacks(p: &mut Profile, tree: &StackTree, frames: &Frames, w: &Walked) -> Vec<Vec<u32>> {
    let mut numbers: Vec<StackNumbers> = (0..w.slots.len()).map(|_| StackNumbers::default()).collect();
    // Per (slot, node) interned: its stack's number ([`NO_STACK`]: none).
    let mut interned: IdMap<(u32, NodeId), u32> = IdMap::default();
    let mut pair_stack: Vec<u32> = Vec::with_capacity(w.pairs.len());
    let mut path: Vec<NodeId> = Vec::new();
    for &(slot, leaf) in &w.pairs {
        let thread = w.slots[slot as usize].0;
        let numbers = &mut numbers[slot as usize];
        // Out to the first node this thread has, then back in.
        path.clear();
        let mut up: Option<u32> = None;
        for n in tree.path(leaf) {
            if let Some(&s) = interned.get(&(slot, n)) {
                up = Some(s);
                break;
            }
            path.push(n);
        }
        for &n in path.iter().rev() {
            let (start, end) = frames.range.get(tree.frame_id_of(n) as usize).copied().unwrap_or((0, 0));
            for info in &frames.infos[start as usize..end as usize] {
                let frame = p.intern_frame(thread, info.clone());
                let parent = up.filter(|&s| s != NO_STACK).map(|s| numbers.handles[s as usize]);
                up = Some(numbers.number(p.intern_stack(thread, parent, frame)));
            }
            if let Some(s) = up {
                interned.insert((slot, n), s);
            }
        }
        pair_stack.push(up.unwrap_or(NO_STACK));
    }
    w.pair_numbers.iter().map(|part| part.iter().map(|&pair| pair_stack[pair as usize]).collect()).collect()
}

/// The processes' and threads' names, the reference time, and each
/// module's library mapped in the processes of its pid.
fn finish(
    p: &mut Profile,
    modules: &[Module],
    module_lib: &BTreeMap<u64, LibraryHandle>,
    w: &Walked,
    t0: Option<u64>,
    info: &WalkInfo,
) {
    if let (Some(t), Some(tf)) = (t0, &info.time) {
        if tf.realtime {
            p.set_reference_timestamp(ReferenceTimestamp::from_millis_since_unix_epoch(t as f64 / 1e6));
        }
    }
    for (k, h) in &w.processes {
        if let Some(pr) = info.processes.get(k) {
            p.set_process_name(*h, &names::process_label(pr.pid, pr.name.as_deref()));
        }
    }
    for (k, (h, _)) in &w.threads {
        if let Some(t) = info.threads.get(k) {
            p.set_thread_name(*h, &names::thread_label(t.tid, t.name.as_deref()));
        }
    }
    // The profile's processes by pid, in the bind's process order: found
    // once, not looked for among every process for each module.
    let mut by_pid: HashMap<u32, Vec<(u64, fxprof_processed_profile::ProcessHandle)>> = HashMap::new();
    for (k, h) in &w.processes {
        if let Some(pr) = info.processes.get(k) {
            by_pid.entry(pr.pid).or_default().push((*k, *h));
        }
    }
    for mapped in by_pid.values_mut() {
        mapped.sort_unstable_by_key(|(k, _)| *k);
    }
    for (m, lib) in module_lib {
        let Some(md) = modules.get(*m as usize) else { continue };
        for &(_, ph) in by_pid.get(&md.associated_pid).into_iter().flatten() {
            p.add_lib_mapping(ph, *lib, md.load_address, md.load_address.saturating_add(md.length.max(1)), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The profile's JSON, its samples walked as `how` says.
    fn profile_json(path: &str, how: How) -> Vec<u8> {
        let file = Tb5File::open(path).unwrap();
        let opts = ViewOptions::default();
        let (p, summary) = samples_walked(&file, &opts, &mut Vec::new(), &mut |_| {}, how).unwrap();
        assert!(summary.samples > 900, "{path}: {} samples", summary.samples);
        let mut out = Vec::new();
        super::super::json(&p, &summary, &mut out).unwrap();
        out
    }

    #[test]
    fn columns_filled_on_a_second_thread_are_those_filled_on_one() {
        // perf: 987 samples of 8 threads with call chains; the collector's
        // recording has CPU times (their deltas carried per thread).
        for path in ["../cli/tests/data/matrix/perf.tb5", "../cli/tests/data/matrix/collector.tb5"] {
            let one = profile_json(path, How::InOrder(None));
            // Batches reused many times over, one of one sample, one larger
            // than the stream.
            for batch in [1, 7, 64, 1 << 20] {
                assert!(profile_json(path, How::InOrder(Some(batch))) == one, "{path}: batches of {batch}");
            }
            // Streams with call stacks or CPU times are walked in order.
            assert!(profile_json(path, How::Parts(Some(3))) == one, "{path}: in parts");
        }
    }

    /// A file of `n` samples without call stacks: two processes of three
    /// threads, a nanosecond clock that now and then goes back in one of
    /// them, addresses in a module whose file is here (this test's
    /// program), in modules whose files are not, and in none.
    fn write_flat(path: &std::path::Path, n: u64) {
        use tbrw::*;
        let module = |pid: u32, path: &str, load_address: u64, first: bool| Module {
            associated_pid: pid,
            flags: if first {
                ModuleFlags::LOADED | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS
            } else {
                ModuleFlags::LOADED
            },
            segment_type: processor_mode::BIT64,
            load_address,
            length: 0x10_0000,
            unload_tsc: NEVER_UNLOADED,
            name: Some(path.rsplit('/').next().unwrap_or(path).to_owned()),
            path: Some(path.to_owned()),
            ..Default::default()
        };
        let here = std::env::current_exe().unwrap().display().to_string();
        let entry = |t: u16, subtype: u16, size: u32| DescEntry {
            desc_type: t,
            subtype,
            data_size: size,
            ..Default::default()
        };
        let descs = [
            entry(desc_type::IP, 0, 8),
            entry(desc_type::PID, 0, 4),
            entry(desc_type::TID, 0, 4),
            entry(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8),
        ];
        let mut w = Tb5Writer::create(path).unwrap();
        w.write_modules(&[
            module(1, &here, 0x1000_0000, true),
            module(1, "/nowhere/liba.so", 0x2000_0000, false),
            module(2, "/nowhere/app", 0x1000_0000, true),
            module(2, "/nowhere/libb.so", 0x3000_0000, false),
        ])
        .unwrap();
        let mut s = w
            .stream(0)
            .unwrap()
            .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
            .unwrap()
            .data_descriptor(&descs)
            .unwrap();
        let mut d = s.data().unwrap();
        // xorshift64*
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut time = 5_000_000_000u64;
        for _ in 0..n {
            let r = next();
            let pid = 1 + (r % 2) as u32;
            let tid = pid * 10 + (r >> 8) as u32 % 3;
            let base = [0x1000_0000u64, 0x2000_0000, 0x3000_0000, 0x5000_0000][(r >> 16) as usize % 4];
            let pc = base + (r >> 24) % 0x8_0000;
            time += 250_000 * ((r >> 40) % 5) + (r >> 50) % 1000;
            // Process 2's threads now and then go back in time (their
            // tables are sorted), process 1's never.
            let stamp = match pid {
                2 if (r >> 44) % 20 == 0 => time - 3_000_000,
                _ => time,
            };
            let mut b = pc.to_le_bytes().to_vec();
            b.extend(pid.to_le_bytes());
            b.extend(tid.to_le_bytes());
            b.extend(stamp.to_le_bytes());
            d.add(&b).unwrap();
        }
        d.done().unwrap();
        s.finish().unwrap();
        w.close().unwrap();
    }

    #[test]
    fn samples_walked_in_parts_make_the_profile_of_the_walk_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("flat.tb5");
        write_flat(&path, 3000);
        let path = path.to_str().unwrap();
        let one = profile_json(path, How::InOrder(None));
        assert!(one == profile_json(path, How::InOrder(Some(64))), "in batches");
        // Functions of this program named, the other modules as modules.
        // The module whose file is here is kept by address (named
        // `[its file]`: the addresses are in no function of it), the others
        // as their one frame.
        let json: serde_json::Value = serde_json::from_slice(&one).unwrap();
        let longest = json["threads"].as_array().unwrap().iter().map(|t| t["frameTable"]["length"].as_u64().unwrap());
        assert!(longest.max().unwrap() > 100, "the present module's addresses kept apart");
        let text = String::from_utf8_lossy(&one);
        assert!(text.contains("[liba.so]") && text.contains("[libb.so]"), "modules not named");
        for parts in [1, 2, 3, 7] {
            assert!(profile_json(path, How::Parts(Some(parts))) == one, "in {parts} parts");
        }
    }
}
