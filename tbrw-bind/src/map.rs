//! [`ModuleMap`]: the modules of a file arranged for fast lookup.
//!
//! Modules are grouped into address spaces: one per process instance (its
//! own modules) and one global space (modules flagged global). Each space
//! is cut into elementary segments at every module start and end; each
//! segment lists the modules covering it, best first (latest load, then
//! latest added). A lookup is a binary search for the segment, then the
//! first candidate loaded at the sample's time.

use std::collections::HashMap;

use crate::input::{ModuleSpec, Sample};
use crate::output::{ModuleBind, Process};

/// The start of a process instance: a later load of an executable module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub(crate) at: u64,
    pub(crate) tsc_time: bool,
}

/// Instance boundaries of one pid, in increasing `at`.
pub(crate) type Boundaries = Vec<Boundary>;

/// The instance of a pid that a time falls in: the number of boundaries at
/// or before it (each boundary compared in its own time base).
pub(crate) fn instance_at(b: &[Boundary], sample: &Sample, index: u64) -> u32 {
    let mut n = 0;
    for x in b {
        let t = match (x.tsc_time, sample.tsc) {
            (true, Some(t)) => t,
            _ => index,
        };
        n += u32::from(x.at <= t);
    }
    n
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    load: u64,
    /// Exclusive; `u64::MAX` stands for "never unloaded".
    unload: u64,
    index: u32,
    tsc_time: bool,
}

impl Candidate {
    #[inline]
    fn loaded_for(&self, sample: &Sample, index: u64) -> bool {
        let t = match (self.tsc_time, sample.tsc) {
            (true, Some(t)) => t,
            _ => index,
        };
        self.load <= t && (self.unload == u64::MAX || t < self.unload)
    }
}

/// The modules of one address space.
#[derive(Clone, Debug, Default)]
pub(crate) struct Space {
    /// Segment `i` is `[bounds[i], bounds[i + 1])`.
    bounds: Vec<u64>,
    /// Candidates of segment `i` are `cands[first[i]..first[i + 1]]`.
    first: Vec<u32>,
    cands: Vec<Candidate>,
}

impl Space {
    fn build(modules: &[ModuleSpec], members: &[u32]) -> Space {
        let mut bounds: Vec<u64> = Vec::with_capacity(members.len() * 2);
        for &i in members {
            let m = &modules[i as usize];
            if m.length > 0 {
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
            if m.length == 0 || m.end() == m.load_address {
                continue;
            }
            let c = Candidate { load: m.load_time, unload: m.unload_time, index: i, tsc_time: m.tsc_time };
            let s = bounds.partition_point(|&b| b < m.load_address);
            let e = bounds.partition_point(|&b| b < m.end());
            for seg in &mut per_seg[s..e] {
                seg.push(c);
            }
        }
        let mut first = Vec::with_capacity(segs + 1);
        let mut cands = Vec::new();
        for mut seg in per_seg {
            first.push(cands.len() as u32);
            seg.sort_unstable_by(|a, b| b.load.cmp(&a.load).then(b.index.cmp(&a.index)));
            cands.extend(seg);
        }
        first.push(cands.len() as u32);
        Space { bounds, first, cands }
    }

    /// The best module of this space covering `sample.ip` and loaded at its time.
    #[inline]
    pub(crate) fn lookup(&self, sample: &Sample, index: u64) -> Option<u32> {
        let i = self.bounds.partition_point(|&b| b <= sample.ip);
        if i == 0 || i >= self.bounds.len() {
            return None;
        }
        let seg = i - 1;
        let range = self.first[seg] as usize..self.first[seg + 1] as usize;
        self.cands[range].iter().find(|c| c.loaded_for(sample, index)).map(|c| c.index)
    }
}

/// The modules of a file, arranged for binding (see the module doc).
#[derive(Clone, Debug)]
pub struct ModuleMap {
    pub(crate) module_count: u64,
    pub(crate) boundaries: HashMap<u32, Boundaries>,
    /// Own-module spaces, by (pid, instance).
    pub(crate) spaces: HashMap<(u32, u32), u32>,
    pub(crate) space_list: Vec<Space>,
    pub(crate) global: Space,
    /// The process table as the modules define it (before any sample).
    pub(crate) processes: Vec<Process>,
    pub(crate) process_index: HashMap<(u32, u32), u64>,
    pub(crate) module_binds: Vec<ModuleBind>,
    pub(crate) exe_of: HashMap<(u32, u32), u64>,
}

impl ModuleMap {
    /// Arranges `modules` (module index = position) for lookups.
    ///
    /// # Panics
    /// If there are more than `u32::MAX` modules (the C `mrIndex` field has 20 bits).
    pub fn new(modules: &[ModuleSpec]) -> ModuleMap {
        assert!(modules.len() <= u32::MAX as usize, "more than 2^32 modules");
        // Instance boundaries: every distinct later load time of an exe, per pid.
        let mut boundaries: HashMap<u32, Boundaries> = HashMap::new();
        for m in modules.iter().filter(|m| m.exe && m.load_time > 0) {
            let b = boundaries.entry(m.pid).or_default();
            if !b.iter().any(|x| x.at == m.load_time) {
                b.push(Boundary { at: m.load_time, tsc_time: m.tsc_time });
            }
        }
        for b in boundaries.values_mut() {
            b.sort_by_key(|x| x.at);
        }
        let instance_of = |m: &ModuleSpec| -> u32 {
            boundaries.get(&m.pid).map_or(0, |b| b.iter().filter(|x| x.at <= m.load_time).count() as u32)
        };

        let mut processes = Vec::new();
        let mut process_index = HashMap::new();
        let mut exe_of = HashMap::new();
        let mut module_binds = Vec::with_capacity(modules.len());
        let mut members: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        let mut global_members = Vec::new();
        let mut space_order = Vec::new();
        for (i, m) in modules.iter().enumerate() {
            let key = (m.pid, instance_of(m));
            let pid_index = *process_index.entry(key).or_insert_with(|| {
                let start = if key.1 == 0 { 0 } else { boundaries[&m.pid][key.1 as usize - 1].at };
                processes.push(Process { pid: key.0, instance: key.1, start, exe_module: None });
                processes.len() as u64 - 1
            });
            if m.exe && !exe_of.contains_key(&key) {
                exe_of.insert(key, i as u64);
                processes[pid_index as usize].exe_module = Some(i as u64);
            }
            module_binds.push(ModuleBind { pid_index });
            if m.global {
                global_members.push(i as u32);
            } else {
                let v = members.entry(key).or_insert_with(|| {
                    space_order.push(key);
                    Vec::new()
                });
                v.push(i as u32);
            }
        }
        let mut spaces = HashMap::new();
        let mut space_list = Vec::new();
        for key in space_order {
            spaces.insert(key, space_list.len() as u32);
            space_list.push(Space::build(modules, &members[&key]));
        }
        ModuleMap {
            module_count: modules.len() as u64,
            boundaries,
            spaces,
            space_list,
            global: Space::build(modules, &global_members),
            processes,
            process_index,
            module_binds,
            exe_of,
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
}
