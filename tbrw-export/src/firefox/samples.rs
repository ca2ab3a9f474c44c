//! The Firefox profile of a sample stream: one walk of the samples, each
//! kept as its thread and its node in the walk's tree (the frames are not
//! named yet: the profile names a frame from its library's symbol table
//! when the frame is interned, so every library's table must be set
//! first); then the distinct frames named, each module a library (a
//! module whose file is not here one frame, its name in brackets); then
//! each distinct (thread, stack) interned once, in the order the samples
//! first had it, so that the profile is the one interning sample by sample
//! would give.
//!
//! Imports the query layer's walk and names, fxprof-processed-profile, and
//! [`super::columns`]; writes nothing.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;
use tbrw_schema::Progress;

use fxprof_processed_profile::{
    debugid::DebugId, CategoryColor, Frame as FxFrame, FrameFlags, FrameInfo, LibraryHandle, LibraryInfo, Profile,
    ReferenceTimestamp, SamplingInterval, StackHandle, Symbol, SymbolTable, ThreadHandle, Timestamp,
};
use tbrw::{Module, Tb5File};
use tbrw_query::names;
use tbrw_query::stacks::{walk, Detail, IdMap, Names, NodeId, Sample, StackTree, ViewOptions, WalkInfo};

use super::columns::{ThreadSamples, NO_STACK};
use super::{debug_id, product, tag, FirefoxProfile, FirefoxSummary};
use crate::error::ExportError;

/// Bind thread indexes below this are found in a vector, not a hash.
const THREAD_SLOTS: usize = 1 << 16;

/// The samples as the walk leaves them: per profile thread (by slot, the
/// order threads were first sampled) its samples, whose stacks are still
/// numbers of distinct (slot, node) pairs, first seen first.
#[derive(Default)]
struct Walked {
    /// Per bind process index: the profile's process.
    processes: IdMap<u64, fxprof_processed_profile::ProcessHandle>,
    /// Per bind thread index: the profile's thread and its slot.
    threads: IdMap<u64, (ThreadHandle, u32)>,
    /// The same for the bind's first thread indexes, without a hash:
    /// samples of many threads interleave.
    thread_slots: Vec<Option<(ThreadHandle, u32)>>,
    /// The last sample's bind thread index, profile thread and slot:
    /// consecutive samples are mostly of one thread.
    last_thread: Option<(u64, ThreadHandle, u32)>,
    /// Per slot: the thread and its samples.
    slots: Vec<(ThreadHandle, ThreadSamples)>,
    /// Per pair number: the slot and the node.
    pairs: Vec<(u32, NodeId)>,
    pair_of: IdMap<(u32, NodeId), u32>,
    /// Per node: the last slot it was seen in and that pair's number, so
    /// that a node sampled in one thread needs no hash.
    last_pair: Vec<(u32, u32)>,
    /// Per slot: the nanoseconds of CPU time not yet in a delta.
    carry: Vec<u64>,
    /// The first time stamp of a nanosecond clock: the profile's zero.
    t0: Option<u64>,
}

impl Walked {
    /// The number of the (slot, node) pair, a new one the next.
    fn pair(&mut self, slot: u32, node: NodeId) -> u32 {
        let n = node as usize;
        if let Some(&(s, pair)) = self.last_pair.get(n) {
            if s == slot {
                return pair;
            }
        }
        let next = self.pairs.len() as u32;
        let pair = *self.pair_of.entry((slot, node)).or_insert(next);
        if pair == next {
            self.pairs.push((slot, node));
        }
        if self.last_pair.len() <= n {
            self.last_pair.resize(n + 1, (u32::MAX, 0));
        }
        self.last_pair[n] = (slot, pair);
        pair
    }

    /// The profile thread of the sample's thread and its slot, added (with
    /// its process) at its first sample.
    fn thread(&mut self, p: &mut Profile, smp: &Sample<'_>, at: Timestamp) -> (ThreadHandle, u32) {
        match self.last_thread {
            Some((k, th, slot)) if k == smp.thread => return (th, slot),
            _ => {}
        }
        let index = usize::try_from(smp.thread).ok().filter(|&i| i < THREAD_SLOTS);
        if let Some(Some((th, slot))) = index.and_then(|i| self.thread_slots.get(i)).copied() {
            self.last_thread = Some((smp.thread, th, slot));
            return (th, slot);
        }
        if let Some(&(th, slot)) = self.threads.get(&smp.thread) {
            self.last_thread = Some((smp.thread, th, slot));
            return (th, slot);
        }
        let slot = self.slots.len() as u32;
        let process = *self.processes.entry(smp.process).or_insert_with(|| p.add_process("?", smp.pid, at));
        let th = p.add_thread(process, smp.tid, at, smp.tid == smp.pid);
        p.set_thread_name(th, &names::thread_label(smp.tid, None));
        tag(p, th, slot);
        self.threads.insert(smp.thread, (th, slot));
        if let Some(i) = index {
            if self.thread_slots.len() <= i {
                self.thread_slots.resize(i + 1, None);
            }
            self.thread_slots[i] = Some((th, slot));
        }
        self.slots.push((th, ThreadSamples::default()));
        self.last_thread = Some((smp.thread, th, slot));
        (th, slot)
    }

    /// The sample's CPU time as whole µs, the rest carried to its thread's
    /// next: a thread's deltas add up to its CPU time (truncating each
    /// sample's would lose up to a microsecond per sample).
    fn cpu_delta(&mut self, slot: u32, ns: u64) -> u64 {
        let slot = slot as usize;
        if self.carry.len() <= slot {
            self.carry.resize(slot + 1, 0);
        }
        let ns = self.carry[slot].saturating_add(ns);
        self.carry[slot] = ns % 1000;
        ns / 1000
    }
}

/// The profile of the sample stream `opts.query.stream`.
pub(super) fn samples(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut dyn Write,
    progress: &mut dyn Progress,
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
    let mut tree = StackTree::new();
    let mut w = Walked::default();
    let mut res = function_names.resolution(Detail::Function);
    let info = walk(file, opts, "a Firefox profile", &mut tree, &mut res, progress, &mut |smp| {
        // Nanosecond clocks give the time; other clocks (TSC, sample
        // indices) have no known rate: the record index stands for ms.
        let nanos = match smp.time.filter(|_| clock_nanos) {
            Some(t) => t.saturating_sub(*w.t0.get_or_insert(t)),
            // As the profile's `Timestamp::from_millis_since_reference` has it.
            None => (smp.index as f64 * 1_000_000.0) as u64,
        };
        let (_, slot) = w.thread(&mut p, smp, Timestamp::from_nanos_since_reference(nanos));
        let pair = w.pair(slot, smp.stack);
        let cpu = smp.cpu_time.map(|ns| w.cpu_delta(slot, ns));
        w.slots[slot as usize].1.push(pair, nanos, cpu);
        Ok(())
    })?;
    drop(res);
    let frames = name_frames(&mut p, &tree, &modules, file, &mut function_names, warn)?;
    intern_stacks(&mut p, &tree, &frames, &mut w);
    finish(&mut p, &modules, &frames.module_lib, &w, &info);
    let summary = FirefoxSummary {
        threads: w.slots.len(),
        samples: w.slots.iter().map(|(_, s)| s.stacks.len() as u64).sum(),
        markers: 0,
        cpu_deltas: info.has_cputime,
    };
    let samples = w.slots.into_iter().map(|(_, s)| s).collect();
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
    warn: &mut dyn Write,
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
        for inlined in function_names.inlined(f, warn) {
            frames.infos.push(info(FxFrame::Label(p.intern_string(&inlined))));
        }
        frames.range[id as usize] = (start, frames.infos.len() as u32);
    }
    function_names.write_warnings(warn);
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

/// Interns each distinct (thread, node) pair's stack, first seen first,
/// and gives every sample its stack's number in its thread's table.
fn intern_stacks(p: &mut Profile, tree: &StackTree, frames: &Frames, w: &mut Walked) {
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
    for (_, samples) in &mut w.slots {
        for s in &mut samples.stacks {
            *s = pair_stack[*s as usize];
        }
    }
}

/// The processes' and threads' names, the reference time, and each
/// module's library mapped in the processes of its pid.
fn finish(p: &mut Profile, modules: &[Module], module_lib: &BTreeMap<u64, LibraryHandle>, w: &Walked, info: &WalkInfo) {
    if let (Some(t), Some(tf)) = (w.t0, &info.time) {
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
    for (m, lib) in module_lib {
        let Some(md) = modules.get(*m as usize) else { continue };
        let mut mapped: Vec<(&u64, &fxprof_processed_profile::ProcessHandle)> = w
            .processes
            .iter()
            .filter(|(k, _)| info.processes.get(k).is_some_and(|pr| pr.pid == md.associated_pid))
            .collect();
        mapped.sort_by_key(|(k, _)| **k);
        for (_, &ph) in mapped {
            p.add_lib_mapping(ph, *lib, md.load_address, md.load_address.saturating_add(md.length.max(1)), 0);
        }
    }
}
