//! [`ModuleMap`]: the modules of a file arranged for fast lookup.
//!
//! Built once per bind, before any sample: unload records are paired with
//! the loads they end, each pid's process-instance starts are found, and
//! the loads are grouped into address spaces: one per process instance
//! (its own modules) and one global space (modules flagged global). Each
//! space is cut into elementary segments at every module start and end;
//! each segment lists the modules covering it, best first (latest load,
//! then latest added). The segments are kept four to a cache-line block
//! (their starts and answers together), and the space is cut into as many
//! equal buckets as it has blocks: a lookup reads its bucket's entry,
//! searches the blocks the bucket spans (mostly one), reads that block,
//! then takes the first candidate loaded at the sample's time.
//!
//! Pids are resolved through a sorted table (a binary search when the pid
//! changes), and each pid's instances are consecutive slots of a dense
//! table: nothing here hashes per sample.

use std::collections::BTreeSet;

use crate::input::{ModuleKind, ModuleSpec, Sample, NEVER};
use crate::output::{ModuleBind, Process};

/// The start of a process instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub(crate) at: u64,
    pub(crate) tsc_time: bool,
}

/// The instance of a pid that a sample falls in: the number of starts at
/// or before its time, each compared in its own time base. A sample
/// without a TSC cannot be placed before a TSC-timed start, so it counts
/// as after it.
#[inline]
pub(crate) fn instance_at(b: &[Boundary], sample: &Sample, index: u64) -> u32 {
    let mut n = 0;
    for x in b {
        let after = match (x.tsc_time, sample.tsc) {
            (true, Some(t)) => x.at <= t,
            (true, None) => true,
            (false, _) => x.at <= index,
        };
        n += u32::from(after);
    }
    n
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    load: u64,
    /// Exclusive; [`NEVER`] stands for "never unloaded".
    unload: u64,
    index: u32,
    tsc_time: bool,
}

impl Candidate {
    #[inline(always)]
    fn loaded_for(&self, sample: &Sample, index: u64) -> bool {
        let t = if self.tsc_time {
            match sample.tsc {
                Some(t) => t,
                // Without a time stamp, time cannot exclude the module.
                None => return true,
            }
        } else {
            index
        };
        self.load <= t && (t < self.unload || self.unload == NEVER)
    }
}

/// Asks the CPU to fetch the cache line of `value`, without waiting for it.
#[inline(always)]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache: it reads nothing the
    // program sees and never faults; the pointer comes from a reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// One elementary segment, in 8 bytes so that a space's segments stay in
/// cache: either the module that wins it at every time (its best candidate
/// is loaded from before collection and never unloaded), or a range of
/// `Space::cands`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    /// The module index when `end` is [`ALWAYS`], else the start of the range.
    start: u32,
    end: u32,
}

const ALWAYS: u32 = u32::MAX;

/// Segments per [`Block`].
const BLOCK: usize = 4;

/// [`BLOCK`] consecutive segments, their starts and their answers in one
/// cache line: a lookup finds its block in [`Space::top`] (small, so it
/// stays in cache) and then waits for this one line, where a binary search
/// of the bounds and then a read of the segment would wait for one load
/// after another (a lookup's time is that latency).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Block {
    /// Segment `k` of the block starts at `starts[k]`; a slot past the last
    /// segment holds `u64::MAX`, which no address in the space reaches.
    starts: [u64; BLOCK],
    segments: [Segment; BLOCK],
}

/// The modules of one address space.
#[derive(Clone, Debug, Default)]
pub(crate) struct Space {
    /// The space's addresses: `[lo, hi)` (empty when `lo == hi`).
    lo: u64,
    hi: u64,
    /// The start of each block (`blocks[k].starts[0]`).
    top: Vec<u64>,
    /// The space cut into equal buckets of `1 << shift` addresses from
    /// `lo`: the address `lo + (k << shift)` lies in block `buckets[k]`, so
    /// an address of bucket k lies in a block from `buckets[k]` to
    /// `buckets[k + 1]`, mostly the first: one load of this short table
    /// instead of a search of `top`.
    buckets: Vec<u32>,
    shift: u32,
    /// The segments, cut at every module start and end, in address order.
    blocks: Vec<Block>,
    /// Candidates of the segments that need a time check, best first.
    cands: Vec<Candidate>,
}

/// [`Space::buckets`] and [`Space::shift`] for blocks starting at `top`
/// over `[lo, hi)`: as many buckets as blocks (to the next power of two),
/// each of the same power-of-two width.
fn bucket_table(top: &[u64], lo: u64, hi: u64) -> (Vec<u32>, u32) {
    let want = top.len().next_power_of_two() as u32;
    let span_bits = 64 - (hi - lo - 1).leading_zeros();
    let shift = span_bits.saturating_sub(want.trailing_zeros()).min(63);
    let count = (((hi - lo - 1) >> shift) + 2) as usize;
    let buckets = (0..count)
        .map(|k| {
            let at = u128::from(lo) + ((k as u128) << shift);
            let at = u64::try_from(at).unwrap_or(u64::MAX);
            // top[0] = lo <= at.
            (top.partition_point(|&x| x <= at) - 1) as u32
        })
        .collect();
    (buckets, shift)
}

impl Space {
    fn build(modules: &[ModuleSpec], unload: &[u64], members: &[u32]) -> Space {
        let mut bounds: Vec<u64> = Vec::with_capacity(members.len() * 2);
        for &i in members {
            let m = &modules[i as usize];
            if m.end() > m.load_address {
                bounds.push(m.load_address);
                bounds.push(m.end());
            }
        }
        bounds.sort_unstable();
        bounds.dedup();
        if bounds.len() < 2 {
            return Space::default();
        }
        let segs = bounds.len() - 1;
        let mut per_seg: Vec<Vec<Candidate>> = vec![Vec::new(); segs];
        for &i in members {
            let m = &modules[i as usize];
            if m.end() <= m.load_address {
                continue;
            }
            let c = Candidate { load: m.load_time, unload: unload[i as usize], index: i, tsc_time: m.tsc_time };
            let s = bounds.partition_point(|&b| b < m.load_address);
            let e = bounds.partition_point(|&b| b < m.end());
            for seg in &mut per_seg[s..e] {
                seg.push(c);
            }
        }
        let mut segments = Vec::with_capacity(segs);
        let mut cands = Vec::new();
        for mut seg in per_seg {
            seg.sort_unstable_by(|a, b| b.load.cmp(&a.load).then(b.index.cmp(&a.index)));
            // Loaded at every time, with or without a TSC: nothing behind it can win.
            match seg.first() {
                Some(c) if c.load == 0 && c.unload == NEVER => segments.push(Segment { start: c.index, end: ALWAYS }),
                _ => {
                    let start = cands.len() as u32;
                    cands.extend(seg);
                    assert!(cands.len() < ALWAYS as usize, "too many (segment, module) pairs");
                    segments.push(Segment { start, end: cands.len() as u32 });
                }
            }
        }
        let blocks: Vec<Block> = bounds[..segs]
            .chunks(BLOCK)
            .zip(segments.chunks(BLOCK))
            .map(|(starts, segs)| {
                let mut b = Block { starts: [u64::MAX; BLOCK], segments: [Segment { start: 0, end: ALWAYS }; BLOCK] };
                b.starts[..starts.len()].copy_from_slice(starts);
                b.segments[..segs.len()].copy_from_slice(segs);
                b
            })
            .collect();
        let top: Vec<u64> = blocks.iter().map(|b| b.starts[0]).collect();
        let (lo, hi) = (bounds[0], bounds[segs]);
        let (buckets, shift) = bucket_table(&top, lo, hi);
        Space { lo, hi, top, buckets, shift, blocks, cands }
    }

    /// The block `ip` falls in, if any: read from the small bucket and top
    /// tables only, so a batch of lookups can find its blocks first and
    /// have them fetched together ([`Space::prefetch`]).
    #[inline]
    pub(crate) fn block_of(&self, ip: u64) -> Option<u32> {
        // Also rejects an empty space (lo == hi).
        if ip < self.lo || ip >= self.hi {
            return None;
        }
        // The block is the last one starting at or before ip (top[0] = lo
        // <= ip), among those its bucket spans.
        let k = ((ip - self.lo) >> self.shift) as usize;
        let (first, last) = (self.buckets[k] as usize, self.buckets[k + 1] as usize);
        Some((first + self.top[first + 1..=last].partition_point(|&x| x <= ip)) as u32)
    }

    /// Asks the CPU to fetch block `at` into the cache, without waiting:
    /// the block is a lookup's one likely cache miss, and a batch that
    /// asks for all its blocks before reading any waits for them once.
    #[inline(always)]
    pub(crate) fn prefetch(&self, at: u32) {
        prefetch(&self.blocks[at as usize]);
    }

    /// The segment of block `at` (from [`Space::block_of`]) that holds `ip`.
    #[inline]
    pub(crate) fn segment_in(&self, at: u32, ip: u64) -> Segment {
        let block = &self.blocks[at as usize];
        let within = block.starts.iter().filter(|&&x| x <= ip).count();
        block.segments[within - 1]
    }

    /// The best module of segment `seg` (from [`Space::segment_in`] of
    /// `sample.ip`) loaded at the sample's time.
    #[inline]
    pub(crate) fn lookup_in(&self, seg: Segment, sample: &Sample, index: u64) -> Option<u32> {
        if seg.end == ALWAYS {
            return Some(seg.start);
        }
        self.cands[seg.start as usize..seg.end as usize].iter().find(|c| c.loaded_for(sample, index)).map(|c| c.index)
    }

    /// Whether it holds no module.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.lo == self.hi
    }

    /// The segment `ip` falls in, if any.
    #[inline]
    fn segment_at(&self, ip: u64) -> Option<Segment> {
        Some(self.segment_in(self.block_of(ip)?, ip))
    }

    /// The best module of this space covering `sample.ip` and loaded at its time.
    #[inline]
    pub(crate) fn lookup(&self, sample: &Sample, index: u64) -> Option<u32> {
        self.lookup_in(self.segment_at(sample.ip)?, sample, index)
    }
}

/// A pid that appears in the modules.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PidEntry {
    /// Its instance starts: `boundaries[starts.0..starts.1]`.
    pub(crate) starts: (u32, u32),
    /// Slot of its instance 0 in `instances`; instance k is at `slot + k`.
    pub(crate) slot: u32,
}

/// One process instance of a pid that appears in the modules.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instance {
    /// Its own modules: an index into `space_list`.
    pub(crate) space: u32,
    /// Its first exe load, by index.
    pub(crate) exe_module: Option<u64>,
    /// Its index in the modules' process table, if modules name it.
    pub(crate) process: Option<u64>,
}

/// The modules of a file, arranged for binding (see the module doc).
#[derive(Clone, Debug)]
pub struct ModuleMap {
    pub(crate) module_count: u64,
    /// The distinct pids of the modules, sorted; `pid_entries` in the same order.
    pub(crate) pids: Vec<u32>,
    pub(crate) pid_entries: Vec<PidEntry>,
    pub(crate) boundaries: Vec<Boundary>,
    pub(crate) instances: Vec<Instance>,
    /// `space_list[0]` is empty: the space of an instance without own modules.
    pub(crate) space_list: Vec<Space>,
    pub(crate) global: Space,
    /// The process table as the modules define it (before any sample).
    pub(crate) processes: Vec<Process>,
    pub(crate) module_binds: Vec<ModuleBind>,
    unmatched_unloads: u64,
}

/// Instance starts of one pid's loads (`loads` in module order): every
/// positive load time of a first-in-process load, and every distinct
/// positive load time of an exe load except the first exe load after a
/// first-in-process one (that exe belongs to the instance the first record
/// began).
fn starts_of(modules: &[ModuleSpec], loads: &[u32]) -> Vec<Boundary> {
    // (time, exe-only record, index): at one time, first-in-process records come first.
    let mut events: Vec<(u64, bool, u32)> = loads
        .iter()
        .map(|&i| (modules[i as usize].load_time, !modules[i as usize].first_in_process, i))
        .filter(|&(_, exe_only, i)| !exe_only || modules[i as usize].exe)
        .collect();
    events.sort_unstable();
    let mut out: Vec<Boundary> = Vec::new();
    let mut push = |at: u64, tsc_time: bool| {
        if at > 0 && out.last().is_none_or(|b| b.at != at) {
            out.push(Boundary { at, tsc_time });
        }
    };
    // The current instance was begun by a first-in-process record and has no exe yet.
    let mut absorbing = false;
    let mut last_exe: Option<u64> = None;
    let mut last_first: Option<u64> = None;
    for (at, exe_only, i) in events {
        let m = &modules[i as usize];
        if !exe_only {
            push(at, m.tsc_time);
            // Several first records at one time begin one instance, which has an exe if any of them is one.
            absorbing = !m.exe && (last_first != Some(at) || absorbing);
            last_first = Some(at);
            if m.exe {
                last_exe = Some(at);
            }
        } else if last_exe != Some(at) {
            last_exe = Some(at);
            if absorbing {
                absorbing = false;
            } else {
                push(at, m.tsc_time);
            }
        }
    }
    out
}

/// What an unload record looks for in the loads (docs/BIND.md, "Pairing").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Mapping {
    /// The load at this address: an unload with an address, or one that
    /// names no module.
    Address(u64),
    /// A load of the module with this path (an unload without an address).
    Path(u64),
    /// A load of the module with this name (an unload without an address or path).
    Name(u64),
}

fn unload_looks_for(m: &ModuleSpec) -> Mapping {
    match (m.load_address, m.path, m.name) {
        (0, Some(p), _) => Mapping::Path(p),
        (0, None, Some(n)) => Mapping::Name(n),
        (a, _, _) => Mapping::Address(a),
    }
}

/// For each load, the time of the unload record that ends it, if any; and
/// the number of unload records that end no load.
///
/// The open loads are indexed by (pid, time base, address) and, when some
/// unload is without an address, also by path and by name: a load ended
/// through one index stays in the others and is skipped there when met.
fn pair_unloads(modules: &[ModuleSpec]) -> (Vec<u64>, u64) {
    type Open = rustc_hash::FxHashMap<(u32, bool, Mapping), BTreeSet<(u64, u32)>>;
    let mut unloads: Vec<(u64, u32)> = (modules.iter().enumerate())
        .filter(|(_, m)| m.kind == ModuleKind::Unload)
        .map(|(i, m)| (m.load_time, i as u32))
        .collect();
    // Most files have no unload records (a load's record says when it
    // ends): then no load needs indexing.
    if unloads.is_empty() {
        return (vec![NEVER; modules.len()], 0);
    }
    let by_module =
        modules.iter().any(|m| m.kind == ModuleKind::Unload && !matches!(unload_looks_for(m), Mapping::Address(_)));
    let mut open = Open::default();
    for (i, m) in modules.iter().enumerate() {
        match m.kind {
            ModuleKind::Load => {
                let at = (m.load_time, i as u32);
                open.entry((m.pid, m.tsc_time, Mapping::Address(m.load_address))).or_default().insert(at);
                if by_module {
                    if let Some(p) = m.path {
                        open.entry((m.pid, m.tsc_time, Mapping::Path(p))).or_default().insert(at);
                    }
                    if let Some(n) = m.name {
                        open.entry((m.pid, m.tsc_time, Mapping::Name(n))).or_default().insert(at);
                    }
                }
            }
            ModuleKind::Unload => {}
        }
    }
    unloads.sort_unstable();
    let mut ends = vec![NEVER; modules.len()];
    let mut ended = vec![false; modules.len()];
    let mut unmatched = 0;
    for (t, u) in unloads {
        let m = &modules[u as usize];
        let hit = open.get_mut(&(m.pid, m.tsc_time, unload_looks_for(m))).and_then(|set| loop {
            // The latest load at or before t, then the largest index, that no earlier unload ended.
            let &latest = set.range(..=(t, u32::MAX)).next_back()?;
            set.remove(&latest);
            if !ended[latest.1 as usize] {
                break Some(latest.1);
            }
        });
        match hit {
            Some(l) => {
                ended[l as usize] = true;
                ends[l as usize] = t;
            }
            None => unmatched += 1,
        }
    }
    (ends, unmatched)
}

impl ModuleMap {
    /// Arranges `modules` (module index = position) for lookups.
    ///
    /// # Panics
    /// If there are more than `u32::MAX` modules (the C `mrIndex` field has 20 bits).
    pub fn new(modules: &[ModuleSpec]) -> ModuleMap {
        assert!(modules.len() <= u32::MAX as usize, "more than 2^32 modules");
        let (ends, unmatched_unloads) = pair_unloads(modules);
        let unload: Vec<u64> = modules.iter().zip(&ends).map(|(m, &e)| m.unload_time.min(e)).collect();

        let mut pids: Vec<u32> = modules.iter().map(|m| m.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let slot_of_pid = |pid: u32| pids.binary_search(&pid).expect("pid of a module");
        let mut loads_of: Vec<Vec<u32>> = vec![Vec::new(); pids.len()];
        for (i, m) in modules.iter().enumerate() {
            if m.kind == ModuleKind::Load && (m.exe || m.first_in_process) {
                loads_of[slot_of_pid(m.pid)].push(i as u32);
            }
        }
        let mut boundaries = Vec::new();
        let mut pid_entries = Vec::with_capacity(pids.len());
        let mut slots = 0u32;
        for loads in &loads_of {
            let b = starts_of(modules, loads);
            let s = boundaries.len() as u32;
            boundaries.extend_from_slice(&b);
            pid_entries.push(PidEntry { starts: (s, boundaries.len() as u32), slot: slots });
            slots += b.len() as u32 + 1;
        }
        let mut instances = vec![Instance { space: 0, exe_module: None, process: None }; slots as usize];

        let mut processes = Vec::new();
        let mut module_binds = Vec::with_capacity(modules.len());
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); slots as usize];
        let mut space_order: Vec<usize> = Vec::new();
        let mut global_members = Vec::new();
        for (i, m) in modules.iter().enumerate() {
            let e = pid_entries[slot_of_pid(m.pid)];
            let b = &boundaries[e.starts.0 as usize..e.starts.1 as usize];
            let instance = b.iter().filter(|x| x.at <= m.load_time).count() as u32;
            let slot = (e.slot + instance) as usize;
            let pid_index = *instances[slot].process.get_or_insert_with(|| {
                let start = if instance == 0 { 0 } else { b[instance as usize - 1].at };
                processes.push(Process { pid: m.pid, instance, start, exe_module: None });
                processes.len() as u64 - 1
            });
            module_binds.push(ModuleBind { pid_index });
            if m.kind == ModuleKind::Unload {
                continue;
            }
            if m.exe && instances[slot].exe_module.is_none() {
                instances[slot].exe_module = Some(i as u64);
                processes[pid_index as usize].exe_module = Some(i as u64);
            }
            if m.global {
                global_members.push(i as u32);
            } else {
                if members[slot].is_empty() {
                    space_order.push(slot);
                }
                members[slot].push(i as u32);
            }
        }
        let mut space_list = vec![Space::default()];
        for slot in space_order {
            instances[slot].space = space_list.len() as u32;
            space_list.push(Space::build(modules, &unload, &members[slot]));
        }
        ModuleMap {
            module_count: modules.len() as u64,
            pids,
            pid_entries,
            boundaries,
            instances,
            space_list,
            global: Space::build(modules, &unload, &global_members),
            processes,
            module_binds,
            unmatched_unloads,
        }
    }

    /// The number of modules.
    pub fn module_count(&self) -> u64 {
        self.module_count
    }

    /// The process table as the modules alone define it.
    pub fn module_processes(&self) -> &[Process] {
        &self.processes
    }

    /// How many process instances `pid` can have: one, plus one per
    /// instance start its modules record (docs/BIND.md, "Processes: pid
    /// reuse"). A bind has at most this many threads of one (pid, tid).
    pub fn instances_of(&self, pid: u32) -> u64 {
        self.pid_entry(pid).map_or(1, |e| self.starts(e).len() as u64 + 1)
    }

    /// The unload records that end no load (docs/BIND.md): they are ignored.
    pub fn unmatched_unloads(&self) -> u64 {
        self.unmatched_unloads
    }

    /// The entry of `pid`, if the modules name it.
    #[inline]
    pub(crate) fn pid_entry(&self, pid: u32) -> Option<PidEntry> {
        self.pids.binary_search(&pid).ok().map(|i| self.pid_entries[i])
    }

    /// The instance starts of a pid entry.
    #[inline]
    pub(crate) fn starts(&self, e: PidEntry) -> &[Boundary] {
        &self.boundaries[e.starts.0 as usize..e.starts.1 as usize]
    }
}

/// The times (TSC values) `[from, until)` over which a lookup's answer
/// holds for the same pid and address: what lets a reader that binds many
/// samples' frames (a stack table's nodes, docs/FORMAT.md) look each
/// (pid, stack) up once and reuse the answer while a sample's time is
/// inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first time the answer holds.
    pub from: u64,
    /// The first time after `from` it may not hold ([`NEVER`]: never changes).
    pub until: u64,
}

impl Span {
    /// Every time.
    pub const ALWAYS: Span = Span { from: 0, until: NEVER };

    /// Whether `t` is inside.
    #[inline]
    pub fn holds(&self, t: u64) -> bool {
        self.from <= t && (t < self.until || self.until == NEVER)
    }

    /// The times both hold.
    #[inline]
    pub fn and(self, o: Span) -> Span {
        Span { from: self.from.max(o.from), until: self.until.min(o.until) }
    }

    fn before(&mut self, t: u64) {
        self.until = self.until.min(t);
    }

    fn after(&mut self, t: u64) {
        self.from = self.from.max(t);
    }
}

impl Space {
    /// [`Space::lookup`] for a sample with a TSC `t`, with the span of TSC
    /// times its answer holds over; `None` when a candidate is timed in
    /// sample counts (its answer depends on the sample's index).
    fn lookup_span(&self, ip: u64, t: u64) -> Option<(Option<u32>, Span)> {
        let Some(seg) = self.segment_at(ip) else { return Some((None, Span::ALWAYS)) };
        if seg.end == ALWAYS {
            return Some((Some(seg.start), Span::ALWAYS));
        }
        let mut span = Span::ALWAYS;
        // Candidates best first: each one before the winner is not loaded
        // at t, and would win from its load (if later) or did until its
        // unload (if earlier); the winner holds while it is loaded.
        for c in &self.cands[seg.start as usize..seg.end as usize] {
            if !c.tsc_time {
                return None;
            }
            let loaded = c.load <= t && (t < c.unload || c.unload == NEVER);
            if loaded {
                span.after(c.load);
                if c.unload != NEVER {
                    span.before(c.unload);
                }
                return Some((Some(c.index), span));
            }
            if c.load > t {
                span.before(c.load);
            } else {
                span.after(c.unload);
            }
        }
        Some((None, span))
    }
}

impl Space {
    /// The answer for `ip` of a sample without a TSC, when it is the same
    /// at every sample index: the candidate that wins is timed in TSC
    /// (without a time stamp, time cannot exclude it). `None` when a
    /// candidate timed in sample counts comes first.
    fn lookup_timeless(&self, ip: u64) -> Option<Option<u32>> {
        let Some(seg) = self.segment_at(ip) else { return Some(None) };
        if seg.end == ALWAYS {
            return Some(Some(seg.start));
        }
        match self.cands[seg.start as usize..seg.end as usize].first() {
            None => Some(None),
            Some(c) if c.tsc_time => Some(Some(c.index)),
            Some(_) => None,
        }
    }
}

impl ModuleMap {
    /// The module the bind gives `sample` (its ip in its pid's process
    /// instance at its time, docs/BIND.md; `None`: no module), as
    /// [`crate::Binder`] does, with the span of TSC times over which the
    /// answer is the same for the same pid and ip. The span is `None` when
    /// a module or process start it depends on is timed in sample counts:
    /// then the answer holds for this sample alone. A sample without a
    /// TSC whose answer does not depend on its index (every start and
    /// module it depends on timed in TSC) gets [`Span::ALWAYS`]: the same
    /// pid and ip without a TSC get the same answer at any index.
    pub fn module_at(&self, sample: &Sample, index: u64) -> (Option<u32>, Option<Span>) {
        // Whether the process instance is the same at every index for a
        // sample without a TSC (each start timed in TSC has passed).
        let mut timeless_instance = true;
        let (space, mut span) = match self.pid_entry(sample.pid) {
            None => (&self.space_list[0], Some(Span::ALWAYS)),
            Some(e) => {
                let starts = self.starts(e);
                timeless_instance = starts.iter().all(|b| b.tsc_time);
                let instance = instance_at(starts, sample, index);
                let slot = self.instances[(e.slot + instance) as usize];
                // The instance holds between its start and the next one's.
                let span = match sample.tsc {
                    Some(_) if starts.iter().all(|b| b.tsc_time) => {
                        let i = instance as usize;
                        Some(Span {
                            from: if i == 0 { 0 } else { starts[i - 1].at },
                            until: starts.get(i).map_or(NEVER, |b| b.at),
                        })
                    }
                    _ => None,
                };
                (&self.space_list[slot.space as usize], span)
            }
        };
        let Some(t) = sample.tsc else {
            let module = space.lookup(sample, index).or_else(|| self.global.lookup(sample, index));
            let timeless = timeless_instance
                && match space.lookup_timeless(sample.ip) {
                    Some(Some(_)) => true,
                    Some(None) => self.global.lookup_timeless(sample.ip).is_some(),
                    None => false,
                };
            return (module, timeless.then_some(Span::ALWAYS));
        };
        let own = space.lookup_span(sample.ip, t);
        let (module, s) = match own {
            Some((Some(m), s)) => (Some(m), Some(s)),
            Some((None, s)) => match self.global.lookup_span(sample.ip, t) {
                Some((m, g)) => (m, Some(s.and(g))),
                None => (self.global.lookup(sample, index), None),
            },
            None => (space.lookup(sample, index).or_else(|| self.global.lookup(sample, index)), None),
        };
        span = match (span, s) {
            (Some(a), Some(b)) => Some(a.and(b)),
            _ => None,
        };
        (module, span)
    }
}
