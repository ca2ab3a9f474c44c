//! [`Binder`]: binds samples in stream order, chunk by chunk, growing the
//! process and thread tables as pids and tids first appear.
//!
//! The result does not depend on how the stream is cut into chunks: the
//! binder carries the sample index and the tables from one chunk to the
//! next. [`bind_parallel`] splits a slice over threads and merges the
//! per-thread tables in stream order, which gives the same result again.
//!
//! Per sample the binder only compares the sample's pid and tid with the
//! last ones and looks the ip up in one or two address spaces; tables are
//! consulted (and hashed, with a cheap hasher) only when the thread changes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::input::Sample;
use crate::map::{instance_at, Boundary, ModuleMap, PidEntry, Space};
use crate::output::{BindTables, DataBind, Process, Thread, UNKNOWN_MODULE};

/// A multiply-rotate hasher for the small integer keys of the tables: the
/// keys are pids and tids, not attacker-chosen, so SipHash's protection
/// buys nothing here.
#[derive(Clone, Copy, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

const NONE: u64 = u64::MAX;

/// What the binder remembers about the last thread it saw: consecutive
/// samples of one thread are the common case.
#[derive(Clone, Copy)]
struct Last<'m> {
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
    last: Option<Last<'m>>,
}

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
            last: None,
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
    /// # Panics
    /// If `out` and `samples` differ in length.
    pub fn bind_into(&mut self, samples: &[Sample], out: &mut [DataBind]) {
        assert_eq!(samples.len(), out.len(), "one bind entry per sample");
        for (s, d) in samples.iter().zip(out) {
            *d = self.bind_one(s);
        }
    }

    /// Binds the next sample of the stream.
    #[inline]
    pub fn bind_one(&mut self, s: &Sample) -> DataBind {
        let index = self.next_index;
        self.next_index += 1;
        let last = match self.last {
            Some(l)
                if l.pid == s.pid
                    && l.tid == s.tid
                    && (l.starts.is_empty() || instance_at(l.starts, s, index) == l.instance) =>
            {
                l
            }
            _ => self.switch(s, index),
        };
        let module = match last.space.lookup(s, index) {
            Some(m) => m,
            None => match self.map.global.lookup(s, index) {
                Some(m) => m,
                None => {
                    return DataBind {
                        module_index: UNKNOWN_MODULE,
                        pid_index: last.pid_index,
                        tid_index: last.tid_index,
                    }
                }
            },
        };
        DataBind { module_index: u64::from(module), pid_index: last.pid_index, tid_index: last.tid_index }
    }

    /// The sample is of another thread or process instance than the last one.
    #[cold]
    fn switch(&mut self, s: &Sample, index: u64) -> Last<'m> {
        let map = self.map;
        let entry = match self.last {
            Some(l) if l.pid == s.pid => l.entry,
            _ => map.pid_entry(s.pid),
        };
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
        let l = Last { pid: s.pid, tid: s.tid, entry, starts, instance, pid_index, tid_index, space };
        self.last = Some(l);
        l
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

/// Binds `samples` (indices `0..len`) on `threads` threads. The result is
/// identical to a single [`Binder`] over the whole slice.
pub fn bind_parallel(map: &ModuleMap, samples: &[Sample], threads: usize) -> (Vec<DataBind>, BindTables) {
    let threads = threads.clamp(1, samples.len().max(1));
    let mut data = vec![DataBind::default(); samples.len()];
    if threads == 1 {
        let mut b = Binder::new(map);
        b.bind_into(samples, &mut data);
        return (data, b.finish());
    }
    let chunk = samples.len().div_ceil(threads);
    let parts: Vec<Binder> = std::thread::scope(|scope| {
        let handles: Vec<_> = samples
            .chunks(chunk)
            .zip(data.chunks_mut(chunk))
            .enumerate()
            .map(|(k, (part, out))| {
                scope.spawn(move || {
                    let mut b = Binder::starting_at(map, (k * chunk) as u64);
                    b.bind_into(part, out);
                    b
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("bind thread panicked")).collect()
    });
    // Merge in stream order: each part's new processes and threads, in that
    // part's order of first appearance, join the global tables unless an
    // earlier part already has them. Then each part's entries are renumbered
    // in place, in parallel.
    let base = map.processes.len();
    let mut global = Binder::new(map);
    let mut renumber = Vec::with_capacity(parts.len());
    for part in &parts {
        let mut pid_map: Vec<u64> = (0..base as u64).collect();
        for p in &part.processes[base..] {
            pid_map.push(global.process_of(p.pid, p.instance, map.pid_entry(p.pid)));
        }
        let mut tid_map = Vec::with_capacity(part.threads.len());
        for t in &part.threads {
            let pid_index = pid_map[t.pid_index as usize];
            let g = *global.thread_index.entry((pid_index, t.tid)).or_insert_with(|| {
                global.threads.push(Thread { pid_index, tid: t.tid });
                global.threads.len() as u64 - 1
            });
            tid_map.push(g);
        }
        let identity = |v: &[u64]| v.iter().enumerate().all(|(i, &g)| g == i as u64);
        renumber.push((!(identity(&pid_map) && identity(&tid_map))).then_some((pid_map, tid_map)));
    }
    std::thread::scope(|scope| {
        for (out, maps) in data.chunks_mut(chunk).zip(renumber) {
            if let Some((pid_map, tid_map)) = maps {
                scope.spawn(move || {
                    for d in out {
                        d.pid_index = pid_map[d.pid_index as usize];
                        d.tid_index = tid_map[d.tid_index as usize];
                    }
                });
            }
        }
    });
    (data, global.finish())
}
