//! perf's side-band records as TB5 tables: MMAP/MMAP2 as modules (held in
//! memory, one per mapping: they are few next to the samples), FORK as
//! the parent's mappings copied into a new process, COMM/FORK/EXIT as
//! process and thread events. Times are perf's sample clock in
//! nanoseconds: modules carry `TBRW_MODULE_TSC_USED`, which for this
//! importer means "on the clock of stream 0's time stamp field", the one
//! the bind compares them with.
//!
//! Two of perf's rules are applied here, where the mappings are known:
//! anonymous executable memory is JIT code, named as perf names it
//! ([`jit_map`]), and a sample's cpu mode decides which mappings can take
//! it ([`Tables::placed_as_perf`]).

use std::collections::HashMap;

use tbrw::*;

use tbrw_schema::module_notes::{self, ModuleNote};

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
    /// MMAP2's `flags` (`MAP_*`; 0 for MMAP).
    pub flags: u32,
}

/// `MAP_HUGETLB`: perf takes anonymous huge pages for anonymous memory.
const MAP_HUGETLB: u32 = 0x40000;

/// The perf map perf reads for an executable mapping of `path` in process
/// `pid` when the mapping is JIT code, as `map__new` decides: anonymous
/// memory (`//anon`, `/dev/zero`, `/anon_hugepage`, huge pages) or memory
/// of no file (`[stack…`, `/SYSV…`, `[heap]`), executable. perf names its
/// module `[JIT] tid <pid>` (`dso__set_basename`) and looks its symbols up
/// in `/tmp/perf-<pid>.map`, at absolute addresses.
pub fn jit_map(pid: i32, path: &str, executable: bool, flags: u32) -> Option<String> {
    let anon = path == "//anon"
        || path.starts_with("/dev/zero")
        || path.starts_with("/anon_hugepage")
        || flags & MAP_HUGETLB != 0;
    let no_file = path.starts_with("[stack") || path.starts_with("/SYSV") || path == "[heap]";
    ((anon || no_file) && executable).then(|| format!("/tmp/perf-{pid}.map"))
}

/// The address a sample gets when perf places it in no mapping because
/// of its cpu mode (a user-mode sample at a kernel address, say): no
/// module covers it (docs/BIND.md: a range never covers 2^64 - 1), so it
/// binds to `[unknown]` in every output, as perf shows it.
pub const UNPLACED: u64 = u64::MAX;

/// perf's `PERF_RECORD_MISC_CPUMODE_*` values (the record's `misc & 7`).
pub mod cpumode {
    /// The kernel.
    pub const KERNEL: u16 = 1;
    /// User space.
    pub const USER: u16 = 2;
}

/// Address ranges, sorted and merged, for "is this address in one of
/// them" in a binary search.
#[derive(Clone, Debug, Default)]
struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    fn add(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        self.0.push((start, end));
        self.0.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.0.len());
        for &(s, e) in &self.0 {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.0 = merged;
    }

    fn contains(&self, a: u64) -> bool {
        let i = self.0.partition_point(|&(s, _)| s <= a);
        i > 0 && a < self.0[i - 1].1
    }
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

/// The kernel's file as perf finds it in the header's build-id section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDso {
    /// The name perf's `--sort dso` shows for the kernel's mappings.
    pub name: String,
    /// Its build id (lowercase hex).
    pub build_id: String,
}

/// The kernel perf's `machine__process_kernel_mmap_event` takes for the
/// kernel's mappings: the first kernel-mode entry of the build-id section
/// (`BUILD_ID` feature: `perf_event_header`, pid, 24-byte build id,
/// padded path, each) that is no kernel module; its name `[kernel.vmlinux]`
/// when its path has "vmlinux" in it (`/tmp/vmlinux`, perf's
/// `dso__set_short_name`), else the path's file name (`[kernel.kallsyms]`
/// as it is). `None` where the section has none: `[kernel.kallsyms]`.
pub fn kernel_dso(section: &[u8], big_endian: bool) -> Option<KernelDso> {
    const PATH_AT: usize = 8 + 4 + 24;
    let mut at = 0usize;
    while let Some(h) = section.get(at..at + 8) {
        let misc = if big_endian { u16::from_be_bytes([h[4], h[5]]) } else { u16::from_le_bytes([h[4], h[5]]) };
        let size =
            usize::from(if big_endian { u16::from_be_bytes([h[6], h[7]]) } else { u16::from_le_bytes([h[6], h[7]]) });
        let record = section.get(at..at.checked_add(size)?).filter(|_| size >= PATH_AT)?;
        at += size;
        if misc & 7 != cpumode::KERNEL {
            continue;
        }
        let raw = &record[PATH_AT..];
        let path = String::from_utf8_lossy(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())]).into_owned();
        let module = path.ends_with(".ko")
            || path.contains(".ko.")
            || (path.starts_with('[') && !path.starts_with("[kernel.kallsyms]") && !path.starts_with("[guest.kernel"));
        if module {
            continue;
        }
        // The id's size after it where perf says so (PERF_RECORD_MISC_BUILD_ID_SIZE);
        // else up to its last 4 bytes not zero, as linux-perf-data reads it.
        let id = &record[12..32];
        let id_len = if misc & (1 << 15) != 0 {
            usize::from(record[32]).min(20)
        } else {
            id.chunks(4).rposition(|c| c.iter().any(|&b| b != 0)).map_or(0, |i| 4 * i + 4)
        };
        let name = if path.contains("vmlinux") { "[kernel.vmlinux]".to_owned() } else { dso_name(&path, true) };
        return Some(KernelDso { name, build_id: hex(&id[..id_len]) });
    }
    None
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
    /// The lowest start and highest end of `live`: most addresses of
    /// another mode are outside, which needs no look at `live`.
    span: (u64, u64),
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
    /// The kernel as the header's build-id section names it ([`kernel_dso`]).
    pub kernel_dso: Option<KernelDso>,
    state: HashMap<i32, PidState>,
    names: HashMap<i32, String>,
    /// The kernel's mappings (global modules).
    kernel: Ranges,
}

impl Tables {
    fn state(&mut self, pid: i32) -> &mut PidState {
        self.state.entry(pid).or_insert_with(|| PidState {
            want_exe: true,
            first: true,
            span: (u64::MAX, 0),
            ..Default::default()
        })
    }

    /// Whether a sample of process `pid` at `ip`, taken in cpu mode
    /// `mode`, binds where perf places it. perf looks a user-mode sample
    /// up in the process's mappings only, a kernel-mode one in the
    /// kernel's only, and places a sample of any other mode (hypervisor,
    /// guest, unknown) nowhere (`thread__find_map`); the bind looks in the
    /// process's mappings, then the kernel's (docs/BIND.md). They differ
    /// for a user-mode sample at a kernel address (the 32-bit ARM kuser
    /// helpers at 0xffff0fa0, say) and a kernel-mode one at a user
    /// address: perf puts those in `[unknown]`, and the caller gives them
    /// [`UNPLACED`]. (A kernel-mode sample at an address both a user and a
    /// kernel mapping hold would differ too; no machine maps one address
    /// both ways.)
    pub fn placed_as_perf(&self, pid: i32, ip: u64, mode: u16) -> bool {
        let in_process = || {
            self.state.get(&pid).is_some_and(|st| {
                ip >= st.span.0
                    && ip < st.span.1
                    && st.live.iter().any(|&i| {
                        let m = &self.modules[i].module;
                        ip >= m.load_address && ip - m.load_address < m.length
                    })
            })
        };
        match mode {
            cpumode::USER => !self.kernel.contains(ip) || in_process(),
            cpumode::KERNEL => !in_process(),
            _ => !self.kernel.contains(ip) && !in_process(),
        }
    }

    /// A mapping.
    pub fn mmap(&mut self, m: &MmapEvent) {
        let global = m.kernel || m.pid == -1;
        let mut flags = ModuleFlags::LOADED | ModuleFlags::TSC_USED;
        let jit = if global { None } else { jit_map(m.pid, m.path, m.executable, m.flags) };
        if global {
            flags |= ModuleFlags::GLOBAL_LOAD;
            self.kernel.add(m.address, m.address.saturating_add(m.length));
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
        let kernel_dso = self.kernel_dso.as_ref().filter(|_| m.kernel && m.path.starts_with("[kernel.kallsyms]"));
        let build_id = m
            .build_id
            .map(hex)
            .or_else(|| self.header_build_ids.get(m.path).cloned())
            .or_else(|| kernel_dso.map(|k| k.build_id.clone()))
            .filter(|b| !b.is_empty());
        // JIT code: the module is the perf map, named as perf names it, and
        // its addresses are absolute (no file offset to note).
        let (path, name, pgoff, build_id) = match jit {
            Some(map) => (map, format!("[JIT] tid {}", m.pid), 0, None),
            None => {
                let name = kernel_dso.map_or_else(|| dso_name(m.path, m.kernel), |k| k.name.clone());
                (m.path.to_owned(), name, m.pgoff, build_id)
            }
        };
        let module = Module {
            associated_pid: if global { KERNEL_PID } else { m.pid as u32 },
            flags,
            event_when: m.time,
            segment_type: processor_mode::BIT64,
            load_address: m.address,
            length: m.length,
            unload_tsc: NEVER_UNLOADED,
            path: Some(path),
            name: Some(name),
            ..Default::default()
        };
        let i = self.modules.len();
        self.modules.push(Mapping { module, pgoff, build_id });
        if !global {
            let st = self.state(m.pid);
            st.live.push(i);
            st.span = (st.span.0.min(m.address), st.span.1.max(m.address.saturating_add(m.length)));
        }
    }

    /// COMM: a thread's name; with `exec`, the process starts a new
    /// program, whose mappings follow.
    pub fn comm(&mut self, pid: i32, tid: i32, name: &str, exec: bool, time: u64) {
        if exec {
            let st = self.state(pid);
            st.live.clear();
            st.span = (u64::MAX, 0);
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
            let (parent, span) =
                self.state.get(&ppid).map(|s| (s.live.clone(), s.span)).unwrap_or((Vec::new(), (u64::MAX, 0)));
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
            st.span = (st.span.0.min(span.0), st.span.1.max(span.1));
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

    /// The user-defined global section: a [`tbrw_schema::module_notes`] line per
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
        // The kernel as the build-id section names it: perf's first kernel,
        // not module, entry.
        let entry = |misc: u16, path: &str, id: u8| {
            let mut r = Vec::new();
            let padded = (path.len() + 1).next_multiple_of(64);
            r.extend(67u32.to_le_bytes());
            r.extend(misc.to_le_bytes());
            r.extend(((8 + 4 + 24 + padded) as u16).to_le_bytes());
            r.extend((-1i32).to_le_bytes());
            r.extend([id; 20]);
            r.extend([0; 4]);
            r.extend(path.as_bytes());
            r.resize(r.len() + padded - path.len(), 0);
            r
        };
        let section =
            |entries: &[(u16, &str, u8)]| -> Vec<u8> { entries.iter().flat_map(|&(m, p, i)| entry(m, p, i)).collect() };
        let user = cpumode::USER;
        let k = cpumode::KERNEL;
        let vmlinux = section(&[(user, "/usr/lib/libc.so.6", 1), (k, "[e1000e]", 2), (k, "/tmp/vmlinux", 3)]);
        assert_eq!(
            kernel_dso(&vmlinux, false),
            Some(KernelDso { name: "[kernel.vmlinux]".into(), build_id: "03".repeat(20) })
        );
        let kallsyms = section(&[(k, "/lib/modules/x/foo.ko", 2), (k, "[kernel.kallsyms]", 4)]);
        assert_eq!(kernel_dso(&kallsyms, false).unwrap().name, "[kernel.kallsyms]");
        assert_eq!(kernel_dso(&section(&[(k, "/boot/kimage", 5)]), false).unwrap().name, "kimage");
        assert_eq!(kernel_dso(&section(&[(user, "/bin/true", 5)]), false), None);
        // Cut anywhere: no panic.
        for cut in 0..vmlinux.len() {
            let _ = kernel_dso(&vmlinux[..cut], false);
        }
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
            flags: 0,
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

    #[test]
    fn anonymous_executable_memory_is_jit_code_named_as_perf_names_it() {
        assert_eq!(jit_map(42, "//anon", true, 0).as_deref(), Some("/tmp/perf-42.map"));
        assert_eq!(jit_map(42, "[heap]", true, 0).as_deref(), Some("/tmp/perf-42.map"));
        assert_eq!(jit_map(42, "/memfd:x", true, MAP_HUGETLB).as_deref(), Some("/tmp/perf-42.map"));
        assert_eq!(jit_map(42, "//anon", false, 0), None);
        assert_eq!(jit_map(42, "/usr/lib/libc.so.6", true, 0), None);
        let mut t = Tables::default();
        t.mmap(&MmapEvent {
            pid: 42,
            address: 0x7f00_0000_0000,
            length: 0x1000,
            pgoff: 0x7f00_0000,
            path: "//anon",
            kernel: false,
            executable: true,
            time: 5,
            build_id: None,
            flags: 0,
        });
        let m = &t.modules[0];
        assert_eq!(m.module.path.as_deref(), Some("/tmp/perf-42.map"));
        assert_eq!(m.module.name.as_deref(), Some("[JIT] tid 42"));
        // Absolute addresses: no offset note.
        assert_eq!(m.pgoff, 0);
    }

    #[test]
    fn cpu_modes_place_samples_as_perf_does() {
        let mut t = Tables::default();
        let ev = |pid, address, path, kernel| MmapEvent {
            pid,
            address,
            length: 0x1000,
            pgoff: 0,
            path,
            kernel,
            executable: true,
            time: 0,
            build_id: None,
            flags: 0,
        };
        t.mmap(&ev(-1, 0xffff_0000, "[kernel.kallsyms]_text", true));
        t.mmap(&ev(7, 0x1000, "/bin/x", false));
        let (user, kernel, hv) = (cpumode::USER, cpumode::KERNEL, 3);
        // In their own mode's mappings, or in none: as the bind says.
        assert!(t.placed_as_perf(7, 0x1100, user));
        assert!(t.placed_as_perf(7, 0xffff_0fa0, kernel));
        assert!(t.placed_as_perf(7, 0x9000, user));
        assert!(t.placed_as_perf(8, 0xffff_0fa0, kernel));
        // User mode at a kernel address, kernel mode at a user one: unplaced.
        assert!(!t.placed_as_perf(7, 0xffff_0fa0, user));
        assert!(!t.placed_as_perf(7, 0x1100, kernel));
        // Hypervisor (or guest, or unknown) mode: nowhere.
        assert!(!t.placed_as_perf(7, 0x1100, hv));
        assert!(t.placed_as_perf(7, 0x9000, hv));
        // A fork's child has its parent's mappings; an exec none.
        t.fork(9, 7, 9, 1);
        assert!(!t.placed_as_perf(9, 0x1100, kernel));
        t.comm(9, 9, "y", true, 2);
        assert!(t.placed_as_perf(9, 0x1100, kernel));
    }
}
