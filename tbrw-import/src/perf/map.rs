//! perf's side-band records as TB5 tables: MMAP/MMAP2 as modules (held in
//! memory, one per mapping: they are few next to the samples), FORK as
//! the parent's mappings copied into a new process, COMM/FORK/EXIT as
//! process and thread events. Times are perf's sample clock in
//! nanoseconds: modules carry `TBRW_MODULE_TSC_USED`, which for this
//! importer means "on the clock of stream 0's time stamp field", the one
//! the bind compares them with.

use std::collections::HashMap;

use tbrw::*;

use crate::module_notes::{self, ModuleNote};

/// The pid TB5 gives perf's kernel mappings (perf writes -1; 0 is the
/// kernel's own pid, as `perf report --sort pid` shows its samples).
pub const KERNEL_PID: u32 = 0;

/// A module and what TB5's module record has no field for.
#[derive(Clone, Debug)]
pub struct Mapping {
    /// The module record.
    pub module: Module,
    /// perf's `pgoff`: the file offset mapped at the load address.
    pub pgoff: u64,
    /// The build id, as lowercase hex, when the record or the header has one.
    pub build_id: Option<String>,
}

/// One mapping as a perf record gives it.
#[derive(Clone, Debug)]
pub struct MmapEvent<'a> {
    /// perf's pid (-1 for the kernel).
    pub pid: i32,
    /// Start address.
    pub address: u64,
    /// Length in bytes.
    pub length: u64,
    /// File offset.
    pub pgoff: u64,
    /// The path.
    pub path: &'a str,
    /// Whether the record says the mapping is in kernel space.
    pub kernel: bool,
    /// Whether it is executable.
    pub executable: bool,
    /// The record's time (0 for mappings perf synthesized at start).
    pub time: u64,
    /// MMAP2's build id.
    pub build_id: Option<&'a [u8]>,
}

/// The short name perf's `--sort dso` shows for a path: `[kernel.kallsyms]`
/// for the kernel, `[name]` for a kernel module (dashes as underscores),
/// the file name otherwise, and pseudo-paths (`[vdso]`) as they are.
pub fn dso_name(path: &str, kernel: bool) -> String {
    if path.starts_with("[kernel.kallsyms]") {
        return "[kernel.kallsyms]".into();
    }
    if path.starts_with('[') {
        return path.into();
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    if kernel {
        if let Some(m) = file.strip_suffix(".ko").or_else(|| file.split_once(".ko.").map(|(m, _)| m)) {
            return format!("[{}]", m.replace('-', "_"));
        }
    }
    file.into()
}

/// Lowercase hex of a build id.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Default)]
struct PidState {
    /// Indices into `modules` of the process's current mappings.
    live: Vec<usize>,
    /// Whether the next executable file mapping is the executable.
    want_exe: bool,
    /// Whether the next module record is the first of a process instance.
    first: bool,
}

/// The tables being collected.
#[derive(Default)]
pub struct Tables {
    /// Modules in record order.
    pub modules: Vec<Mapping>,
    /// Process events.
    pub pids: Vec<Pid>,
    /// Thread events.
    pub tids: Vec<Tid>,
    /// Build ids from the header's build-id section, by path.
    pub header_build_ids: HashMap<String, String>,
    state: HashMap<i32, PidState>,
    names: HashMap<i32, String>,
}

impl Tables {
    fn state(&mut self, pid: i32) -> &mut PidState {
        self.state.entry(pid).or_insert_with(|| PidState { want_exe: true, first: true, ..Default::default() })
    }

    /// A mapping.
    pub fn mmap(&mut self, m: &MmapEvent) {
        let global = m.kernel || m.pid == -1;
        let mut flags = ModuleFlags::LOADED | ModuleFlags::TSC_USED;
        if global {
            flags |= ModuleFlags::GLOBAL_LOAD;
        } else {
            let st = self.state(m.pid);
            let file = m.path.starts_with('/') && m.executable;
            if st.want_exe && file {
                flags |= ModuleFlags::IS_EXE;
                st.want_exe = false;
            }
            if st.first {
                flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
                st.first = false;
            }
        }
        let build_id =
            m.build_id.map(hex).or_else(|| self.header_build_ids.get(m.path).cloned()).filter(|b| !b.is_empty());
        let module = Module {
            associated_pid: if global { KERNEL_PID } else { m.pid as u32 },
            flags,
            event_when: m.time,
            segment_type: processor_mode::BIT64,
            load_address: m.address,
            length: m.length,
            unload_tsc: NEVER_UNLOADED,
            path: Some(m.path.to_owned()),
            name: Some(dso_name(m.path, m.kernel)),
            ..Default::default()
        };
        let i = self.modules.len();
        self.modules.push(Mapping { module, pgoff: m.pgoff, build_id });
        if !global {
            self.state(m.pid).live.push(i);
        }
    }

    /// COMM: a thread's name; with `exec`, the process starts a new
    /// program, whose mappings follow.
    pub fn comm(&mut self, pid: i32, tid: i32, name: &str, exec: bool, time: u64) {
        if exec {
            let st = self.state(pid);
            st.live.clear();
            st.want_exe = true;
            st.first = true;
        }
        if pid == tid {
            let known = self.names.insert(pid, name.to_owned()).is_some();
            if exec || !known {
                self.pids.push(Pid {
                    id: pid as u32,
                    flags: PidTidFlags::CREATED | PidTidFlags::WHEN_TSC,
                    event_when: time,
                    name: Some(name.to_owned()),
                    ..Default::default()
                });
            }
        }
        self.tids.push(Tid {
            associated_pid: pid as u32,
            id: tid as u32,
            flags: PidTidFlags::CREATED | PidTidFlags::WHEN_TSC,
            event_when: time,
            name: Some(name.to_owned()),
            ..Default::default()
        });
    }

    /// FORK: a new thread, or a new process with a copy of its parent's
    /// mappings (perf's own rule: a child sees what its parent had mapped).
    pub fn fork(&mut self, pid: i32, ppid: i32, tid: i32, time: u64) {
        if pid != ppid {
            let parent: Vec<usize> = self.state.get(&ppid).map(|s| s.live.clone()).unwrap_or_default();
            let mut first = true;
            for i in parent {
                let mut m = self.modules[i].clone();
                m.module.associated_pid = pid as u32;
                m.module.event_when = time;
                m.module.flags.remove(ModuleFlags::FIRST_MODULE_REC_IN_PROCESS);
                if first {
                    m.module.flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
                    first = false;
                }
                let j = self.modules.len();
                self.modules.push(m);
                self.state(pid).live.push(j);
            }
            let st = self.state(pid);
            st.want_exe = false;
            st.first = first;
            let name = self.names.get(&ppid).cloned();
            self.pids.push(Pid {
                id: pid as u32,
                flags: PidTidFlags::CREATED | PidTidFlags::WHEN_TSC,
                event_when: time,
                name,
                ..Default::default()
            });
        }
        self.tids.push(Tid {
            associated_pid: pid as u32,
            id: tid as u32,
            flags: PidTidFlags::CREATED | PidTidFlags::WHEN_TSC,
            event_when: time,
            ..Default::default()
        });
    }

    /// EXIT of a thread (and of its process when it is the main thread).
    pub fn exit(&mut self, pid: i32, tid: i32, time: u64) {
        let done = PidTidFlags::DESTROYED | PidTidFlags::WHEN_TSC;
        if pid == tid {
            self.pids.push(Pid { id: pid as u32, flags: done, event_when: time, ..Default::default() });
            self.state.remove(&pid);
        }
        self.tids.push(Tid {
            associated_pid: pid as u32,
            id: tid as u32,
            flags: done,
            event_when: time,
            ..Default::default()
        });
    }

    /// The user-defined global section: a [`crate::module_notes`] line per
    /// module with a file offset other than 0 or a build id.
    pub fn module_notes(&self) -> String {
        let notes: Vec<(u64, ModuleNote)> = self
            .modules
            .iter()
            .enumerate()
            .filter(|(_, m)| m.pgoff != 0 || m.build_id.is_some())
            .map(|(i, m)| {
                let build_id = m.build_id.as_deref().and_then(module_notes::unhex);
                (i as u64, ModuleNote { offset: Some(m.pgoff), build_id })
            })
            .collect();
        module_notes::encode(notes.iter().map(|(i, n)| (*i, n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dso_names_are_perfs() {
        assert_eq!(dso_name("[kernel.kallsyms]_text", true), "[kernel.kallsyms]");
        assert_eq!(dso_name("/lib/modules/6.1/kernel/drivers/foo-bar.ko", true), "[foo_bar]");
        assert_eq!(dso_name("/usr/lib/x86_64-linux-gnu/libc.so.6", false), "libc.so.6");
        assert_eq!(dso_name("[vdso]", false), "[vdso]");
    }

    #[test]
    fn exec_starts_a_process_whose_first_file_mapping_is_the_exe_and_fork_copies_mappings() {
        let mut t = Tables::default();
        let ev = |path, time| MmapEvent {
            pid: 5,
            address: 0x1000,
            length: 0x1000,
            pgoff: 0x2000,
            path,
            kernel: false,
            executable: true,
            time,
            build_id: Some(&[0xab, 0x01]),
        };
        t.comm(5, 5, "prog", true, 10);
        t.mmap(&ev("/bin/prog", 11));
        t.mmap(&ev("/lib/libc.so.6", 12));
        t.fork(6, 5, 6, 20);
        let f = |i: usize| t.modules[i].module.flags;
        assert!(f(0).contains(ModuleFlags::IS_EXE | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS | ModuleFlags::TSC_USED));
        assert!(!f(1).intersects(ModuleFlags::IS_EXE | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS));
        assert_eq!(t.modules.len(), 4);
        assert_eq!((t.modules[2].module.associated_pid, t.modules[2].module.event_when), (6, 20));
        assert!(t.modules[2].module.flags.contains(ModuleFlags::IS_EXE));
        assert_eq!(t.module_notes().lines().nth(1), Some("module 0 offset=0x2000 build_id=ab01"));
        assert_eq!(t.pids.len(), 2);
    }
}
