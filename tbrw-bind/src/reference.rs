//! The reference implementation: the rules of docs/BIND.md applied as
//! literally as possible, one sample at a time against every module. It is
//! slow (samples × modules) and exists to check the engine against.

use crate::input::{ModuleSpec, Sample};
use crate::output::{BindResult, BindTables, DataBind, ModuleBind, Process, Thread, UNKNOWN_MODULE};

/// Later loads of executables of `pid`: distinct load times > 0, with the
/// time base of the first such module (by index), sorted by time.
fn starts(modules: &[ModuleSpec], pid: u32) -> Vec<(u64, bool)> {
    let mut v: Vec<(u64, bool)> = Vec::new();
    for m in modules {
        if m.pid == pid && m.exe && m.load_time > 0 && !v.iter().any(|x| x.0 == m.load_time) {
            v.push((m.load_time, m.tsc_time));
        }
    }
    v.sort_by_key(|x| x.0);
    v
}

fn module_instance(modules: &[ModuleSpec], m: &ModuleSpec) -> u32 {
    starts(modules, m.pid).iter().filter(|(at, _)| *at <= m.load_time).count() as u32
}

fn sample_instance(modules: &[ModuleSpec], s: &Sample, index: u64) -> u32 {
    starts(modules, s.pid)
        .iter()
        .filter(|(at, tsc)| {
            let t = if *tsc && s.tsc.is_some() { s.tsc.unwrap_or(0) } else { index };
            *at <= t
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
            .position(|m| m.pid == pid && m.exe && module_instance(modules, m) == instance)
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
            let loaded = m.loaded_at(m.time_of(s, index));
            let own = !m.global && m.pid == s.pid && instances[i] == inst;
            if covers && loaded && (own || m.global) {
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
