//! The reference implementation: the rules of docs/BIND.md applied as
//! literally as possible, one sample at a time against every module. It is
//! slow (samples × modules) and exists to check the engine against.

use crate::input::{ModuleKind, ModuleSpec, Sample};
use crate::output::{BindResult, BindTables, DataBind, ModuleBind, Process, Thread, UNKNOWN_MODULE};

fn is_load(m: &ModuleSpec) -> bool {
    m.kind == ModuleKind::Load
}

/// Whether `unload` is about `load`'s mapping: an unload without an address
/// (0) that names its module is about the loads of that path (or, without a
/// path, that name); any other is about the loads at its address.
fn same_mapping(load: &ModuleSpec, unload: &ModuleSpec) -> bool {
    if unload.load_address == 0 {
        if let Some(p) = unload.path {
            return load.path == Some(p);
        }
        if let Some(n) = unload.name {
            return load.name == Some(n);
        }
    }
    load.load_address == unload.load_address
}

/// For each module: the unload record it pairs with (for loads), or the
/// load it ends (for unloads). Unloads are taken in order of (time, index);
/// each ends the open load of its pid and time base that is about the same
/// mapping (`same_mapping`) with the latest load time at or before its own
/// time (then the largest index).
fn pairs(modules: &[ModuleSpec]) -> Vec<Option<usize>> {
    let mut paired: Vec<Option<usize>> = vec![None; modules.len()];
    let mut unloads: Vec<usize> = (0..modules.len()).filter(|&i| !is_load(&modules[i])).collect();
    unloads.sort_by_key(|&i| (modules[i].load_time, i));
    for u in unloads {
        let um = &modules[u];
        let best = (0..modules.len())
            .filter(|&j| {
                let l = &modules[j];
                is_load(l)
                    && paired[j].is_none()
                    && l.pid == um.pid
                    && same_mapping(l, um)
                    && l.tsc_time == um.tsc_time
                    && l.load_time <= um.load_time
            })
            .max_by_key(|&j| (modules[j].load_time, j));
        if let Some(j) = best {
            paired[j] = Some(u);
            paired[u] = Some(j);
        }
    }
    paired
}

/// Unload records that end no load.
pub fn unmatched_unloads(modules: &[ModuleSpec]) -> u64 {
    let p = pairs(modules);
    modules.iter().zip(&p).filter(|(m, p)| !is_load(m) && p.is_none()).count() as u64
}

/// Instance starts of `pid`, with the time base of the record that gives
/// each, sorted by time: every load time > 0 of a first-in-process load,
/// and every distinct load time > 0 of an exe load unless a
/// first-in-process load already began that instance (see `absorbed`).
fn starts(modules: &[ModuleSpec], pid: u32) -> Vec<(u64, bool)> {
    let loads = || modules.iter().filter(move |m| m.pid == pid && is_load(m));
    let firsts: Vec<u64> = loads().filter(|m| m.first_in_process).map(|m| m.load_time).collect();
    let exes: Vec<u64> = loads().filter(|m| m.exe).map(|m| m.load_time).collect();
    // An exe load at t belongs to the instance a first-in-process load at
    // f <= t began when no exe load lies in [f, t) and no other
    // first-in-process load in (f, t].
    let absorbed = |t: u64| {
        firsts
            .iter()
            .any(|&f| f <= t && !exes.iter().any(|&e| f <= e && e < t) && !firsts.iter().any(|&g| f < g && g <= t))
    };
    let mut v: Vec<(u64, bool)> = Vec::new();
    for m in loads() {
        let starts_one = m.first_in_process || (m.exe && !absorbed(m.load_time));
        if starts_one && m.load_time > 0 && !v.iter().any(|x| x.0 == m.load_time) {
            v.push((m.load_time, m.tsc_time));
        }
    }
    v.sort_by_key(|x| x.0);
    v
}

fn module_instance(modules: &[ModuleSpec], m: &ModuleSpec) -> u32 {
    starts(modules, m.pid).iter().filter(|(at, _)| *at <= m.load_time).count() as u32
}

/// A sample without a TSC cannot be placed before a TSC-timed start: it
/// counts as after it.
fn sample_instance(modules: &[ModuleSpec], s: &Sample, index: u64) -> u32 {
    starts(modules, s.pid)
        .iter()
        .filter(|(at, tsc)| match (*tsc, s.tsc) {
            (true, Some(t)) => *at <= t,
            (true, None) => true,
            (false, _) => *at <= index,
        })
        .count() as u32
}

/// Binds by the rules, naively.
pub fn bind(modules: &[ModuleSpec], samples: &[Sample]) -> BindResult {
    let mut processes: Vec<Process> = Vec::new();
    let mut threads: Vec<Thread> = Vec::new();
    let find_or_add = |processes: &mut Vec<Process>, pid: u32, instance: u32| -> u64 {
        if let Some(i) = processes.iter().position(|p| p.pid == pid && p.instance == instance) {
            return i as u64;
        }
        let start = if instance == 0 { 0 } else { starts(modules, pid)[instance as usize - 1].0 };
        let exe_module = modules
            .iter()
            .position(|m| m.pid == pid && is_load(m) && m.exe && module_instance(modules, m) == instance)
            .map(|i| i as u64);
        processes.push(Process { pid, instance, start, exe_module });
        processes.len() as u64 - 1
    };

    // Which process instance each module belongs to (computed once: it does not depend on the sample).
    let instances: Vec<u32> = modules.iter().map(|m| module_instance(modules, m)).collect();
    let mut module_binds = Vec::new();
    for (m, &inst) in modules.iter().zip(&instances) {
        module_binds.push(ModuleBind { pid_index: find_or_add(&mut processes, m.pid, inst) });
    }
    // A load's unload time: the earlier of its own and that of the unload record it pairs with.
    let paired = pairs(modules);
    let unload: Vec<u64> = modules
        .iter()
        .zip(&paired)
        .map(|(m, p)| match p {
            Some(u) if is_load(m) => m.unload_time.min(modules[*u].load_time),
            _ => m.unload_time,
        })
        .collect();

    let mut data = Vec::new();
    for (index, s) in samples.iter().enumerate() {
        let index = index as u64;
        let inst = sample_instance(modules, s, index);
        let pid_index = find_or_add(&mut processes, s.pid, inst);
        let tid_index = match threads.iter().position(|t| t.pid_index == pid_index && t.tid == s.tid) {
            Some(i) => i as u64,
            None => {
                threads.push(Thread { pid_index, tid: s.tid });
                threads.len() as u64 - 1
            }
        };
        let mut best: Option<(bool, u64, usize)> = None; // (own, load, index): larger is better
        for (i, m) in modules.iter().enumerate() {
            let covers = m.load_address <= s.ip && s.ip < m.end();
            let effective = ModuleSpec { unload_time: unload[i], ..*m };
            let loaded = m.time_of(s, index).is_none_or(|t| effective.loaded_at(t));
            let own = !m.global && m.pid == s.pid && instances[i] == inst;
            if is_load(m) && covers && loaded && (own || m.global) {
                let key = (own, m.load_time, i);
                if best.is_none_or(|b| key > b) {
                    best = Some(key);
                }
            }
        }
        let module_index = best.map_or(UNKNOWN_MODULE, |b| b.2 as u64);
        data.push(DataBind { module_index, pid_index, tid_index });
    }
    BindResult { data, tables: BindTables { processes, threads, module_binds } }
}
