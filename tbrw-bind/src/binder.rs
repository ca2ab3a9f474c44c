//! [`Binder`]: binds samples in stream order, chunk by chunk, growing the
//! process and thread tables as pids and tids first appear.
//!
//! The result does not depend on how the stream is cut into chunks: the
//! binder carries the sample index and the tables from one chunk to the
//! next. [`bind_parallel`] splits a slice over threads and merges the
//! per-thread tables in stream order, which gives the same result again.
//!
//! Per sample the binder only compares the sample's pid and tid with the
//! last ones (else finds its thread with one probe of a small table of the
//! threads it met) and looks the ip up in one or two address spaces; the
//! pid search and the process and thread tables are consulted only for a
//! thread not met yet, or met in another process instance.

use crate::input::Sample;
use crate::map::{instance_at, Boundary, ModuleMap, PidEntry, Space};
use crate::output::{BindTables, DataBind, Process, Thread, UNKNOWN_MODULE};

/// Maps keyed by ids (pids, tids, indexes), hashed with the workspace's
/// one hasher for ids (rustc-hash's): SipHash costs more than the lookup
/// it guards, and the keys are the file's, not an attacker's table.
type IdMap<K, V> = rustc_hash::FxHashMap<K, V>;

const NONE: u64 = u64::MAX;

/// A thread the binder met, in the process instance it was last seen in:
/// what a sample of it needs besides its address.
#[derive(Clone, Copy)]
struct Seen<'m> {
    pid: u32,
    tid: u32,
    entry: Option<PidEntry>,
    /// Instance starts of `pid` (empty for most pids).
    starts: &'m [Boundary],
    instance: u32,
    pid_index: u64,
    tid_index: u64,
    space: &'m Space,
}

impl Seen<'_> {
    /// Whether `s` (the `index`th sample) is of this thread and instance.
    #[inline(always)]
    fn holds(&self, s: &Sample, index: u64) -> bool {
        self.pid == s.pid
            && self.tid == s.tid
            && (self.starts.is_empty() || instance_at(self.starts, s, index) == self.instance)
    }
}

/// The threads a binder met, by (pid, tid): an open-addressing table of
/// indexes into a list, so that a sample whose thread differs from the
/// last one's costs one probe of a small table (samples of many threads
/// interleave in a system-wide stream), and only a thread never met, or
/// met in another process instance, costs the pid search and the table
/// lookups of [`Binder::switch`].
#[derive(Clone, Default)]
struct SeenThreads<'m> {
    seen: Vec<Seen<'m>>,
    /// `(pid << 32 | tid, index into seen + 1)`; 0 is an empty slot. Its
    /// length is a power of two at least twice the threads'.
    slots: Vec<(u64, u32)>,
    /// 64 minus the bits of a slot number.
    shift: u32,
}

#[inline(always)]
fn thread_key(pid: u32, tid: u32) -> u64 {
    u64::from(pid) << 32 | u64::from(tid)
}

/// The slot a key's probe starts at in a table of `1 << (64 - shift)`
/// slots: the top bits of a multiplicative hash (its low bits depend on
/// the key's low bits only).
#[inline(always)]
fn first_slot(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl<'m> SeenThreads<'m> {
    /// The index of thread (pid, tid), if met.
    #[inline(always)]
    fn find(&self, pid: u32, tid: u32) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let key = thread_key(pid, tid);
        let mut at = first_slot(key, self.shift);
        loop {
            let (k, v) = self.slots[at];
            if v == 0 {
                return None;
            }
            if k == key {
                return Some(v as usize - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds a thread not met yet; returns its index.
    fn add(&mut self, t: Seen<'m>) -> usize {
        let i = self.seen.len();
        assert!(i < u32::MAX as usize - 1, "more than 2^32 threads");
        self.seen.push(t);
        if self.seen.len() * 2 > self.slots.len() {
            let len = (self.seen.len() * 4).next_power_of_two();
            self.shift = 64 - len.trailing_zeros();
            let slots = std::mem::replace(&mut self.slots, vec![(0, 0); len]);
            for (k, v) in slots.into_iter().filter(|&(_, v)| v != 0) {
                self.place(k, v);
            }
        } else {
            self.place(thread_key(t.pid, t.tid), i as u32 + 1);
        }
        i
    }

    fn place(&mut self, key: u64, v: u32) {
        let mask = self.slots.len() - 1;
        let mut at = first_slot(key, self.shift);
        while self.slots[at].1 != 0 {
            at = (at + 1) & mask;
        }
        self.slots[at] = (key, v);
    }
}

/// Binds samples against a [`ModuleMap`].
#[derive(Clone)]
pub struct Binder<'m> {
    map: &'m ModuleMap,
    next_index: u64,
    processes: Vec<Process>,
    /// Process index of each instance slot of the map ([`NONE`]: not yet in the table).
    instance_process: Vec<u64>,
    /// Process index of pids the modules do not name (they have instance 0 only).
    other_process: IdMap<u32, u64>,
    threads: Vec<Thread>,
    thread_index: IdMap<(u64, u32), u64>,
    /// The threads this binder met (not those of the parts it absorbed:
    /// they are met again through the tables).
    seen: SeenThreads<'m>,
    /// The index in `seen` of the last sample's thread (`usize::MAX`: none yet).
    last: usize,
    /// How many processes and threads the tables held when this binder
    /// started: a part's binder ([`Binder::fork_at`]) shares those indexes
    /// with the binder that absorbs it.
    inherited: (usize, usize),
}

/// A part's binder starts from a copy of the tables ([`Binder::fork_at`])
/// up to this many threads, else from the modules' table alone: the copy
/// saves renumbering every part's entries, but costs a copy per part.
const FORK_THREADS: usize = 1 << 16;

/// Samples per batch of [`Binder::bind_into`]: enough lookups to have
/// their blocks fetched together, few enough that the blocks asked for
/// are still in the cache when read.
const BATCH: usize = 16;

impl<'m> Binder<'m> {
    /// A binder whose first sample has index 0.
    pub fn new(map: &'m ModuleMap) -> Self {
        Self::starting_at(map, 0)
    }

    /// A binder whose first sample has index `first_index` (and whose
    /// tables start from the modules' process table).
    pub fn starting_at(map: &'m ModuleMap, first_index: u64) -> Self {
        Binder {
            map,
            next_index: first_index,
            processes: map.processes.clone(),
            instance_process: map.instances.iter().map(|i| i.process.unwrap_or(NONE)).collect(),
            other_process: IdMap::default(),
            threads: Vec::new(),
            thread_index: IdMap::default(),
            seen: SeenThreads::default(),
            last: usize::MAX,
            inherited: (map.processes.len(), 0),
        }
    }

    /// A binder for the part of the stream from sample `first_index` on,
    /// to be [absorbed](Binder::absorb) by this one after this one's own
    /// samples: it starts from a copy of this binder's tables (up to a
    /// limit, else from the modules' table), so that the processes and
    /// threads both know keep their indexes and, when the part meets no
    /// new one, absorbing it renumbers nothing.
    pub fn fork_at(&self, first_index: u64) -> Self {
        if self.threads.len() > FORK_THREADS {
            return Binder::starting_at(self.map, first_index);
        }
        Binder {
            map: self.map,
            next_index: first_index,
            processes: self.processes.clone(),
            instance_process: self.instance_process.clone(),
            other_process: self.other_process.clone(),
            threads: self.threads.clone(),
            thread_index: self.thread_index.clone(),
            seen: SeenThreads::default(),
            last: usize::MAX,
            inherited: (self.processes.len(), self.threads.len()),
        }
    }

    /// The index the next sample will have.
    pub fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Binds the next samples of the stream, appending one entry per sample to `out`.
    pub fn bind(&mut self, samples: &[Sample], out: &mut Vec<DataBind>) {
        out.reserve(samples.len());
        for s in samples {
            let d = self.bind_one(s);
            out.push(d);
        }
    }

    /// Binds the next samples of the stream into `out`, one entry per
    /// sample.
    ///
    /// Samples go in batches of 16: the first pass finds each
    /// sample's thread and the block of its address space that holds its
    /// address, and asks for that block to be fetched; the second reads
    /// the blocks. A block is a lookup's one likely cache miss, so the
    /// batch waits for its misses together rather than one after another.
    ///
    /// # Panics
    /// If `out` and `samples` differ in length.
    pub fn bind_into(&mut self, samples: &[Sample], out: &mut [DataBind]) {
        assert_eq!(samples.len(), out.len(), "one bind entry per sample");
        let map = self.map;
        // The empty space of `space_list[0]` stands for "no block".
        let none = (&map.space_list[0], u32::MAX);
        let global = !map.global.is_empty();
        for (batch, out) in samples.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let first = self.next_index;
            let mut found = [none; BATCH];
            for ((s, d), f) in batch.iter().zip(out.iter_mut()).zip(&mut found) {
                let t = self.thread_of(s);
                let last = &self.seen.seen[t];
                *d = DataBind { module_index: UNKNOWN_MODULE, pid_index: last.pid_index, tid_index: last.tid_index };
                if let Some(at) = last.space.block_of(s.ip) {
                    last.space.prefetch(at);
                    *f = (last.space, at);
                }
            }
            for (k, ((s, d), (space, at))) in batch.iter().zip(out).zip(found).enumerate() {
                let index = first + k as u64;
                let own = if at == u32::MAX { None } else { space.lookup_in(space.segment_in(at, s.ip), s, index) };
                // Most files have no global module: no call per sample then.
                let found = if global { own.or_else(|| map.global.lookup(s, index)) } else { own };
                if let Some(m) = found {
                    d.module_index = u64::from(m);
                }
            }
        }
    }

    /// Binds the next sample of the stream.
    #[inline]
    pub fn bind_one(&mut self, s: &Sample) -> DataBind {
        let index = self.next_index;
        let t = self.thread_of(s);
        let last = &self.seen.seen[t];
        let module = last.space.lookup(s, index).or_else(|| self.map.global.lookup(s, index));
        DataBind {
            module_index: module.map_or(UNKNOWN_MODULE, u64::from),
            pid_index: last.pid_index,
            tid_index: last.tid_index,
        }
    }

    /// The thread (and process instance) of the next sample, as an index
    /// into [`Binder::seen`]: the last sample's, else one met before, else
    /// [`Binder::meet`]. Advances the sample index.
    #[inline(always)]
    fn thread_of(&mut self, s: &Sample) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        // Samples mostly come in runs of one thread.
        if self.seen.seen.get(self.last).is_some_and(|l| l.holds(s, index)) {
            return self.last;
        }
        let found = self.seen.find(s.pid, s.tid);
        if let Some(i) = found.filter(|&i| self.seen.seen[i].holds(s, index)) {
            self.last = i;
            return i;
        }
        self.meet(s, index, found)
    }

    /// The sample's thread was not met (`found` is `None`), or was met in
    /// another instance of its process, which this one replaces (`found`:
    /// its index): [`Binder::switch`].
    #[cold]
    #[inline(never)]
    fn meet(&mut self, s: &Sample, index: u64, found: Option<usize>) -> usize {
        let i = match found {
            Some(i) => {
                let prev = self.seen.seen[i].entry;
                self.seen.seen[i] = self.switch(s, index, Some(prev));
                i
            }
            None => {
                let prev = self.seen.seen.get(self.last).filter(|l| l.pid == s.pid).map(|l| l.entry);
                let t = self.switch(s, index, prev);
                self.seen.add(t)
            }
        };
        self.last = i;
        i
    }

    /// A thread not met in this instance: find its process instance and
    /// its thread, adding them to the tables when new. `known`: the pid's
    /// entry, when a thread of the same pid gave it.
    #[cold]
    fn switch(&mut self, s: &Sample, index: u64, known: Option<Option<PidEntry>>) -> Seen<'m> {
        let map = self.map;
        let entry = known.unwrap_or_else(|| map.pid_entry(s.pid));
        let starts = entry.map_or(&[][..], |e| map.starts(e));
        let instance = if starts.is_empty() { 0 } else { instance_at(starts, s, index) };
        let pid_index = self.process_of(s.pid, instance, entry);
        let tid_index = *self.thread_index.entry((pid_index, s.tid)).or_insert_with(|| {
            self.threads.push(Thread { pid_index, tid: s.tid });
            self.threads.len() as u64 - 1
        });
        let space = match entry {
            Some(e) => &map.space_list[map.instances[(e.slot + instance) as usize].space as usize],
            None => &map.space_list[0],
        };
        Seen { pid: s.pid, tid: s.tid, entry, starts, instance, pid_index, tid_index, space }
    }

    /// The process index of (pid, instance), adding it to the table when new.
    fn process_of(&mut self, pid: u32, instance: u32, entry: Option<PidEntry>) -> u64 {
        let map = self.map;
        let processes = &mut self.processes;
        let mut add = |start: u64, exe_module: Option<u64>| {
            processes.push(Process { pid, instance, start, exe_module });
            processes.len() as u64 - 1
        };
        match entry {
            Some(e) => {
                let slot = (e.slot + instance) as usize;
                if self.instance_process[slot] == NONE {
                    let start = if instance == 0 { 0 } else { map.starts(e)[instance as usize - 1].at };
                    self.instance_process[slot] = add(start, map.instances[slot].exe_module);
                }
                self.instance_process[slot]
            }
            None => *self.other_process.entry(pid).or_insert_with(|| add(0, None)),
        }
    }

    /// The tables as they stand (after the samples bound so far).
    pub fn tables(&self) -> BindTables {
        BindTables {
            processes: self.processes.clone(),
            threads: self.threads.clone(),
            module_binds: self.map.module_binds.clone(),
        }
    }

    /// Ends the bind and returns the tables.
    pub fn finish(self) -> BindTables {
        BindTables { processes: self.processes, threads: self.threads, module_binds: self.map.module_binds.clone() }
    }
}

impl<'m> Binder<'m> {
    /// Takes in the work of `part`, a binder that bound the samples right
    /// after this one's (it started at [`Binder::next_index`], through
    /// [`Binder::starting_at`] or this binder's [`Binder::fork_at`]) and
    /// wrote their entries to `entries`: the
    /// processes and threads `part` met first join this binder's tables,
    /// in `part`'s order of first appearance, unless this one has them
    /// already, and `entries` are renumbered to this binder's tables. The
    /// result is what this binder would have produced binding those
    /// samples itself, which is what lets a stream be bound in parallel.
    /// Returns whether any entry changed (else `entries` are as `part`
    /// wrote them, and what was made of them stands).
    ///
    /// # Panics
    /// If `part` did not start where this binder stands, or `entries` is
    /// not one per sample `part` bound.
    pub fn absorb(&mut self, part: Binder<'m>, entries: &mut [DataBind]) -> bool {
        match self.absorb_tables(part, entries.len() as u64) {
            Some(r) => {
                r.apply(entries);
                true
            }
            None => false,
        }
    }

    /// [`Binder::absorb`] for a part whose entries the caller keeps in
    /// another form (packed, say): takes in the part's tables, `count`
    /// samples after this binder's, and returns how the part's entries
    /// are renumbered, `None` when they stay as they are.
    ///
    /// # Panics
    /// If `part` did not start where this binder stands.
    pub fn absorb_tables(&mut self, part: Binder<'m>, count: u64) -> Option<Renumbering> {
        let start = part.next_index - count;
        assert_eq!(start, self.next_index, "the part must start where this binder stands");
        let map = self.map;
        // The part's first processes and threads are this binder's, with
        // the same indexes (its tables only grow); the others are matched.
        let (base, known) = part.inherited;
        let mut pid_map: Vec<u64> = (0..base as u64).collect();
        for p in &part.processes[base..] {
            pid_map.push(self.process_of(p.pid, p.instance, map.pid_entry(p.pid)));
        }
        let mut tid_map: Vec<u64> = (0..known as u64).collect();
        for t in &part.threads[known..] {
            let pid_index = pid_map[t.pid_index as usize];
            let g = *self.thread_index.entry((pid_index, t.tid)).or_insert_with(|| {
                self.threads.push(Thread { pid_index, tid: t.tid });
                self.threads.len() as u64 - 1
            });
            tid_map.push(g);
        }
        self.next_index = part.next_index;
        // `seen` names this binder's indices and is checked against every
        // sample, so it stays usable; the part's would not be.
        let identity = |v: &[u64]| v.iter().enumerate().all(|(i, &g)| g == i as u64);
        if identity(&pid_map) && identity(&tid_map) {
            return None;
        }
        Some(Renumbering { pid_map, tid_map })
    }
}

/// How an absorbed part's entries are renumbered to the tables of the
/// binder that absorbed it ([`Binder::absorb_tables`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renumbering {
    pid_map: Vec<u64>,
    tid_map: Vec<u64>,
}

impl Renumbering {
    /// Renumbers `entries`, the part's.
    ///
    /// # Panics
    /// If an entry names a process or thread the part did not have.
    pub fn apply(&self, entries: &mut [DataBind]) {
        for d in entries {
            d.pid_index = self.pid_map[d.pid_index as usize];
            d.tid_index = self.tid_map[d.tid_index as usize];
        }
    }

    /// The absorbing binder's index of the part's thread `tid_index`.
    ///
    /// # Panics
    /// If the part had no such thread.
    pub fn thread(&self, tid_index: u64) -> u64 {
        self.tid_map[tid_index as usize]
    }
}

/// Binds `samples` (indices `0..len`) on `threads` threads. The result is
/// identical to a single [`Binder`] over the whole slice.
pub fn bind_parallel(map: &ModuleMap, samples: &[Sample], threads: usize) -> (Vec<DataBind>, BindTables) {
    let mut data = vec![DataBind::default(); samples.len()];
    let mut b = Binder::new(map);
    b.bind_parallel_into(samples, &mut data, threads);
    (data, b.finish())
}

impl<'m> Binder<'m> {
    /// Binds the next samples of the stream into `out` (one entry per
    /// sample) on up to `threads` threads: this binder takes the first
    /// part, its forks ([`Binder::fork_at`]) the others, and
    /// [`Binder::absorb`] puts their work in order. The result is identical
    /// to [`Binder::bind_into`].
    ///
    /// # Panics
    /// If `out` and `samples` differ in length.
    pub fn bind_parallel_into(&mut self, samples: &[Sample], out: &mut [DataBind], threads: usize) {
        assert_eq!(samples.len(), out.len(), "one bind entry per sample");
        let threads = threads.clamp(1, samples.len().max(1));
        if threads == 1 {
            return self.bind_into(samples, out);
        }
        let chunk = samples.len().div_ceil(threads);
        let (first, rest) = samples.split_at(chunk);
        let (first_out, rest_out) = out.split_at_mut(chunk);
        let start = self.next_index;
        let forks: Vec<Binder<'m>> =
            (1..=rest.len().div_ceil(chunk)).map(|k| self.fork_at(start + (k * chunk) as u64)).collect();
        let parts: Vec<(Binder<'m>, &mut [DataBind])> = std::thread::scope(|scope| {
            let handles: Vec<_> = rest
                .chunks(chunk)
                .zip(rest_out.chunks_mut(chunk))
                .zip(forks)
                .map(|((part, out), mut b)| {
                    scope.spawn(move || {
                        b.bind_into(part, out);
                        (b, out)
                    })
                })
                .collect();
            self.bind_into(first, first_out);
            handles.into_iter().map(|h| h.join().expect("bind thread panicked")).collect()
        });
        for (part, entries) in parts {
            self.absorb(part, entries);
        }
    }
}
