//! [`Binder`]: binds samples in stream order, chunk by chunk, growing the
//! process and thread tables as pids and tids first appear.
//!
//! The result does not depend on how the stream is cut into chunks: the
//! binder carries the sample index and the tables from one chunk to the
//! next. [`bind_parallel`] splits a slice over threads and merges the
//! per-thread tables in stream order, which gives the same result again.

use std::collections::HashMap;

use crate::input::Sample;
use crate::map::{instance_at, ModuleMap};
use crate::output::{BindTables, DataBind, Process, Thread, UNKNOWN_MODULE};

/// What the binder remembers about the last thread it saw: consecutive
/// samples of one thread are the common case.
#[derive(Clone, Copy)]
struct Last<'m> {
    /// Instance boundaries of `pid` (empty for most pids).
    boundaries: &'m [crate::map::Boundary],
    pid: u32,
    tid: u32,
    instance: u32,
    pid_index: u64,
    tid_index: u64,
    space: Option<u32>,
}

/// Binds samples against a [`ModuleMap`].
#[derive(Clone)]
pub struct Binder<'m> {
    map: &'m ModuleMap,
    next_index: u64,
    processes: Vec<Process>,
    process_index: HashMap<(u32, u32), u64>,
    threads: Vec<Thread>,
    thread_index: HashMap<(u64, u32), u64>,
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
            process_index: map.process_index.clone(),
            threads: Vec::new(),
            thread_index: HashMap::new(),
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

    /// Binds the next sample of the stream.
    #[inline]
    pub fn bind_one(&mut self, s: &Sample) -> DataBind {
        let index = self.next_index;
        self.next_index += 1;
        let map = self.map;
        let boundaries: &'m [crate::map::Boundary] = match self.last {
            Some(l) if l.pid == s.pid => l.boundaries,
            _ => map.boundaries.get(&s.pid).map_or(&[], Vec::as_slice),
        };
        let instance = if boundaries.is_empty() { 0 } else { instance_at(boundaries, s, index) };
        let last = match self.last {
            Some(l) if l.pid == s.pid && l.tid == s.tid && l.instance == instance => l,
            _ => {
                let key = (s.pid, instance);
                let pid_index = match self.process_index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let start = if instance == 0 { 0 } else { map.boundaries[&s.pid][instance as usize - 1].at };
                        let exe_module = map.exe_of.get(&key).copied();
                        self.processes.push(Process { pid: s.pid, instance, start, exe_module });
                        let i = self.processes.len() as u64 - 1;
                        self.process_index.insert(key, i);
                        i
                    }
                };
                let tid_index = *self.thread_index.entry((pid_index, s.tid)).or_insert_with(|| {
                    self.threads.push(Thread { pid_index, tid: s.tid });
                    self.threads.len() as u64 - 1
                });
                let l = Last {
                    boundaries,
                    pid: s.pid,
                    tid: s.tid,
                    instance,
                    pid_index,
                    tid_index,
                    space: map.spaces.get(&key).copied(),
                };
                self.last = Some(l);
                l
            }
        };
        let own = last.space.and_then(|sp| map.space_list[sp as usize].lookup(s, index));
        let module = own.or_else(|| map.global.lookup(s, index)).map_or(UNKNOWN_MODULE, u64::from);
        DataBind { module_index: module, pid_index: last.pid_index, tid_index: last.tid_index }
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
    if threads == 1 {
        let mut b = Binder::new(map);
        let mut out = Vec::new();
        b.bind(samples, &mut out);
        return (out, b.finish());
    }
    let chunk = samples.len().div_ceil(threads);
    let parts: Vec<(Vec<DataBind>, Binder)> = std::thread::scope(|scope| {
        let handles: Vec<_> = samples
            .chunks(chunk)
            .enumerate()
            .map(|(k, part)| {
                scope.spawn(move || {
                    let mut b = Binder::starting_at(map, (k * chunk) as u64);
                    let mut out = Vec::new();
                    b.bind(part, &mut out);
                    (out, b)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("bind thread panicked")).collect()
    });
    // Merge in stream order: each part's new processes and threads, in that
    // part's order of first appearance, join the global tables unless an
    // earlier part already has them.
    let base = map.processes.len();
    let mut global = Binder::new(map);
    let mut data = Vec::with_capacity(samples.len());
    for (out, part) in parts {
        let mut pid_map: Vec<u64> = (0..base as u64).collect();
        for p in &part.processes[base..] {
            let key = (p.pid, p.instance);
            let g = *global.process_index.entry(key).or_insert_with(|| {
                global.processes.push(*p);
                global.processes.len() as u64 - 1
            });
            pid_map.push(g);
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
        data.extend(out.into_iter().map(|d| DataBind {
            module_index: d.module_index,
            pid_index: pid_map[d.pid_index as usize],
            tid_index: tid_map[d.tid_index as usize],
        }));
    }
    (data, global.finish())
}
