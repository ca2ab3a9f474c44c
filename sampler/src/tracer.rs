//! The ptrace sampling loop: one tracer thread that starts the command
//! seized, follows its threads, forks and execs, and at every tick stops
//! the traced threads, reads their pc, CPU time and CPU, and resumes them.
//! Which threads a tick stops and records is [`Threads`]: by default a
//! thread gets one sample per period of the CPU time it used (on-CPU
//! sampling, as perf's `cpu-clock` counts), else every thread is recorded at
//! every tick (the seed's wall-clock view).
//!
//! It knows nothing of output formats: samples go to a callback, and what
//! was seen (processes, threads, modules with their lifetimes) comes back
//! in [`History`]. All ptrace and wait calls happen on the thread that
//! calls [`Tracer::run`], as ptrace requires.
//!
//! The stops, ptrace events and ticks of the loop share the per-process
//! state, kept here with the loop, the names and the modules; the ptrace
//! events are `events`', one tick `tick`'s; what it keeps per thread and
//! the accounting of a thread's CPU time are `thread`'s, what a run gives
//! back `history`'s.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::io;

use crate::buildid::BuildIds;
use crate::callstack::{CallGraph, Stacks};
use crate::images::Images;
use crate::pmu::Pmu;
use crate::procfs::{self, Mapping};
use crate::sys::{self, Status};
use crate::thread::{TState, Thread, NAME_EVERY_NS};

mod events;
mod tick;

pub use crate::history::*;

/// Why the command could not be started.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

#[derive(Debug)]
struct Proc {
    rec: usize,
    maps: Vec<(Mapping, Option<usize>)>,
    reread_tick: u64,
    /// The tick a caller outside the known mappings last had them reread.
    caller_reread_tick: u64,
    modules: usize,
}

/// Ticks between rereads of a process's maps for callers no mapping holds:
/// the first reread finds the libraries mapped after the exec (the
/// loader's work); a frame-pointer chain through code built without them
/// gives addresses no mapping holds at every tick, which must not cost a
/// read of the maps each time.
const CALLER_REREAD_TICKS: u64 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    Cont(i32),
    Listen,
}

/// What to sample with.
#[derive(Debug)]
pub struct Config {
    /// Nanoseconds between ticks.
    pub period_ns: u64,
    /// The PMU value source, if any.
    pub pmu: Option<Pmu>,
    /// Which threads a tick samples.
    pub threads: Threads,
    /// Call stacks: none, frame pointers, DWARF.
    pub call_graph: CallGraph,
}

/// The sample callback: the thread samples of one tick and its PMU value.
pub type Sink<'a> = dyn FnMut(&[ThreadSample], Option<f64>) -> io::Result<()> + 'a;

/// How long a sampler-received signal waits to be seen reaching the
/// command (from the terminal, say) before the sampler sends it itself.
const FORWARD_AFTER_NS: u64 = 200_000_000;

/// The tracer of one command.
#[derive(Debug)]
pub struct Tracer {
    cfg: Config,
    root: i32,
    threads: HashMap<i32, Thread>,
    procs: HashMap<i32, Proc>,
    hist: History,
    stats: Stats,
    exit: Option<Exit>,
    started: bool,
    /// A signal the sampler received and when, not yet seen at the command.
    pending_signal: Option<(i32, u64)>,
    /// Last time the command's process got each signal.
    seen_signal: HashMap<i32, u64>,
    tick: u64,
    build_ids: BuildIds,
    images: Images,
    stacks: Stacks,
    /// Tasks that ended before their parent's clone or fork event was
    /// handled (their own first stop came first): the event, when it
    /// comes, makes nothing.
    early_exits: HashSet<i32>,
    /// Samples of threads that ended since the last tick (their last CPU
    /// time), for the next call of the sink.
    pending: Vec<ThreadSample>,
}

/// Finds `cmd` as `execvp` would (a name without `/` is searched in `PATH`).
pub fn resolve_command(cmd: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &std::path::Path| {
        std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if cmd.contains('/') {
        let p = std::path::PathBuf::from(cmd);
        return exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).map(|d| d.join(cmd)).find(|p| exec(p))
}

impl Tracer {
    /// Starts `argv` seized and held before its `execve`; [`run`](Tracer::run)
    /// lets it go. Signals the sampler watches are blocked from here on in
    /// the calling thread.
    pub fn start(argv: &[String], cfg: Config) -> Result<Tracer, StartError> {
        let cmd = argv.first().ok_or_else(|| StartError("no command given".into()))?;
        let path =
            resolve_command(cmd).ok_or_else(|| StartError(format!("{cmd}: command not found or not executable")))?;
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| StartError(format!("{cmd}: a NUL in the path")))?;
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| StartError("a NUL in an argument".into()))?;
        let old_mask = sys::block_watched().map_err(|e| StartError(format!("blocking signals: {e}")))?;
        let child = sys::spawn_held(&cpath, &cargs, &old_mask).map_err(|e| StartError(format!("fork: {e}")))?;
        let pid = child.pid;
        if let Err(e) = sys::seize(pid) {
            drop(child); // the child exits without exec
            let _ = sys::wait_any(false);
            let why = if matches!(e.raw_os_error(), Some(libc::EPERM)) {
                ": ptrace is refused here (see kernel.yama.ptrace_scope, or a seccomp filter of the container, \
                 or a missing CAP_SYS_PTRACE)"
            } else {
                ""
            };
            return Err(StartError(format!("ptrace(PTRACE_SEIZE) of the command: {e}{why}")));
        }
        child.release().map_err(|e| StartError(format!("starting the command: {e}")))?;
        let mut threads = HashMap::new();
        // Not a record yet: the command starts at its exec, which replaces this entry.
        let mut first = Thread::new(pid, None, 0, 0);
        first.announced = true;
        threads.insert(pid, first);
        let stacks = Stacks::new(cfg.call_graph);
        Ok(Tracer {
            cfg,
            root: pid,
            threads,
            procs: HashMap::new(),
            hist: History::default(),
            stats: Stats::default(),
            exit: None,
            started: false,
            pending_signal: None,
            seen_signal: HashMap::new(),
            tick: 0,
            build_ids: BuildIds::default(),
            images: Images::default(),
            stacks,
            early_exits: HashSet::new(),
            pending: Vec::new(),
        })
    }

    /// The command's pid.
    pub fn pid(&self) -> i32 {
        self.root
    }

    /// Traces until the command exits, calling `sink` at every tick.
    /// Processes it started that outlive it are detached and left running.
    pub fn run(mut self, sink: &mut Sink<'_>) -> io::Result<Outcome> {
        let mut ticks = tick::Ticks::new(self.cfg.period_ns);
        // Whether the last wait ended because a tracee changed (SIGCHLD).
        let mut woke_by_tracee = false;
        let mut sink_error = None;
        while self.exit.is_none() {
            self.drain()?;
            if self.exit.is_some() {
                break;
            }
            let now = sys::monotonic_raw_ns();
            self.check_forward(now);
            if !self.started {
                if let Some(s) = sys::wait_signal(50_000_000) {
                    self.on_sampler_signal(s);
                }
                continue;
            }
            let deadline = ticks.deadline(now);
            if now < deadline {
                let got = sys::wait_signal(deadline - now);
                woke_by_tracee = got == Some(libc::SIGCHLD);
                if let Some(s) = got {
                    self.on_sampler_signal(s);
                }
                continue;
            }
            if woke_by_tracee && ticks.postpone(now) {
                continue;
            }
            let (samples, value) = self.take_tick()?;
            if let Err(e) = sink(&samples, value) {
                sink_error = Some(e);
                break;
            }
            self.stats.missed_ticks += ticks.next(sys::monotonic_raw_ns());
        }
        if sink_error.is_none() && !self.pending.is_empty() {
            // The last CPU time of the threads that ended after the last
            // tick (the command's among them).
            let mut rest = std::mem::take(&mut self.pending);
            rest.sort_by_key(|s| s.time_ns);
            self.stats.records += rest.len() as u64;
            let value = self.pmu_value();
            if let Err(e) = sink(&rest, value) {
                sink_error = Some(e);
            }
        }
        let end = sys::monotonic_raw_ns();
        self.stats.end_ns = end;
        self.stats.end_realtime_ns = sys::realtime_ns();
        if !self.started {
            return Err(io::Error::other(match self.exit {
                Some(Exit::Code(c)) => format!("the command did not start (exit status {c} before its exec)"),
                Some(Exit::Signal(s)) => format!("the command was killed by signal {s} before its exec"),
                None => "recording failed before the command started".to_owned(),
            }));
        }
        self.detach_all(end);
        for p in &mut self.hist.processes {
            if p.end_ns.is_none() {
                p.end_ns = Some(end);
            }
        }
        for why in std::mem::take(&mut self.build_ids.problems) {
            self.stats.notes.push(format!("build id not recorded: {why}"));
        }
        let images = std::mem::take(&mut self.images);
        self.stats.notes.extend(images.problems.iter().cloned());
        self.hist.images = images.into_stored();
        let exit = match self.exit {
            Some(e) => e,
            None => Exit::Code(0),
        };
        Ok(Outcome { exit, history: self.hist, stats: self.stats, sink_error })
    }

    fn on_sampler_signal(&mut self, s: i32) {
        if s == libc::SIGCHLD {
            return;
        }
        let now = sys::monotonic_raw_ns();
        let recently = self.seen_signal.get(&s).is_some_and(|&t| now.saturating_sub(t) < FORWARD_AFTER_NS);
        if !recently {
            self.pending_signal = Some((s, now));
        }
    }

    fn check_forward(&mut self, now: u64) {
        if let Some((s, t)) = self.pending_signal {
            if now.saturating_sub(t) >= FORWARD_AFTER_NS {
                self.pending_signal = None;
                if sys::kill(self.root, s).is_ok() {
                    self.stats.forwarded_signals.push(s);
                }
            }
        }
    }

    /// Handles every change already waiting.
    fn drain(&mut self) -> io::Result<()> {
        while let Some((tid, st, unreaped)) = sys::next_change()? {
            self.handle(tid, st, unreaped, None);
        }
        Ok(())
    }

    /// Handles one change (an exit `unreaped` is reaped once handled);
    /// when `sample` is given and `tid` is stopped, reads the thread before
    /// resuming it.
    fn handle(&mut self, tid: i32, st: Status, unreaped: bool, sample: Option<&mut Vec<ThreadSample>>) {
        let now = sys::monotonic_raw_ns();
        let how = match st {
            Status::Exited(c) => Exit::Code(c),
            Status::Killed(s) => Exit::Signal(s),
            Status::Stopped { sig, event } => {
                let r = self.on_stop(tid, sig, event, now);
                if let Some(out) = sample {
                    // A thread at its exit is not sampled: its end is (`on_exit`).
                    if event != libc::PTRACE_EVENT_EXIT {
                        self.sample_one(tid, event == 0, out);
                    }
                }
                let res = match r {
                    Resume::Cont(s) => sys::cont(tid, s),
                    Resume::Listen => sys::listen(tid),
                };
                if res.is_err() {
                    // ESRCH: it died meanwhile; its exit comes next.
                    self.set_state(tid, TState::Dying);
                }
                return;
            }
        };
        self.on_exit(tid, how, now);
        if unreaped {
            // Gone already (ECHILD) if something else reaped it.
            let _ = sys::reap(tid);
        }
    }

    fn set_state(&mut self, tid: i32, s: TState) {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.state = s;
        }
    }

    fn thread_rec(&mut self, pid: i32, tid: i32, now: u64) -> usize {
        let name = procfs::comm(pid, tid).unwrap_or_default();
        self.new_thread_rec(pid, tid, name, now)
    }

    fn new_thread_rec(&mut self, pid: i32, tid: i32, name: String, now: u64) -> usize {
        self.hist.threads.push(ThreadRec { pid: pid as u32, tid: tid as u32, name, start_ns: now, end_ns: None });
        self.hist.threads.len() - 1
    }

    /// Reads the name of thread `tid` again and records a change: in place
    /// while its record has no sample (a name set right after the thread
    /// started), else as a new record from `now`.
    fn read_name(&mut self, tid: i32, now: u64) {
        let Some(t) = self.threads.get_mut(&tid) else { return };
        t.name_read_ns = now;
        let (Some(r), Some(name)) = (t.rec, procfs::comm(t.pid, tid)) else { return };
        if self.hist.threads[r].name == name {
            return;
        }
        let pid = t.pid;
        if tid == pid {
            // A process is named as perf names it: by its main thread's
            // name (`comm`), the latest one.
            if let Some(p) = self.procs.get(&pid) {
                self.hist.processes[p.rec].name.clone_from(&name);
            }
        }
        let Some(t) = self.threads.get(&tid) else { return };
        if !t.rec_sampled {
            self.hist.threads[r].name = name;
            return;
        }
        self.hist.threads[r].end_ns = Some(now);
        let new = self.new_thread_rec(pid, tid, name, now);
        let t = self.threads.get_mut(&tid).expect("present");
        t.rec = Some(new);
        t.rec_sampled = false;
        self.stats.renames += 1;
    }

    /// Reads again the names of the live threads not read for a second.
    fn check_names(&mut self) {
        let now = sys::monotonic_raw_ns();
        let due: Vec<i32> = self
            .threads
            .iter()
            .filter(|(_, t)| t.rec.is_some() && t.state != TState::Dying)
            .filter(|(_, t)| now.saturating_sub(t.name_read_ns) >= NAME_EVERY_NS)
            .map(|(&tid, _)| tid)
            .collect();
        for tid in due {
            self.read_name(tid, now);
        }
    }

    /// Starts a process instance of `pid`: its record, and its modules
    /// from the maps read now.
    fn new_instance(&mut self, pid: i32, origin: Origin, now: u64) {
        let path = procfs::exe(pid).unwrap_or_default();
        self.hist.processes.push(ProcRec {
            pid: pid as u32,
            name: procfs::comm(pid, pid).unwrap_or_default(),
            path,
            start_ns: now,
            end_ns: None,
            origin,
        });
        let rec = self.hist.processes.len() - 1;
        self.procs.insert(
            pid,
            Proc { rec, maps: Vec::new(), reread_tick: u64::MAX, caller_reread_tick: u64::MAX, modules: 0 },
        );
        self.reread_maps(pid, now);
    }

    /// Brings the modules of `pid` up to date with its maps: new mappings
    /// are loaded at `at`, vanished ones unloaded at `at`.
    fn reread_maps(&mut self, pid: i32, at: u64) {
        let maps = match procfs::read_maps(pid) {
            Ok(m) => m,
            Err(e) => {
                // A process that has ended has no maps to read: not worth a word.
                if procfs::task_alive(pid) {
                    self.stats.notes.push(format!("could not read the maps of process {pid}: {e}"));
                }
                return;
            }
        };
        let Some(proc) = self.procs.get_mut(&pid) else { return };
        let exe = self.hist.processes[proc.rec].path.clone();
        let mut old = std::mem::take(&mut proc.maps);
        for (m, rec) in &old {
            if !maps.contains(m) {
                if let Some(r) = rec {
                    self.hist.modules[*r].unload_ns = Some(at);
                    self.stacks.remove_module(pid as u32, m.start);
                }
            }
        }
        // The executable first, so that it is the instance's first module.
        let mut order: Vec<&Mapping> = maps.iter().collect();
        order.sort_by_key(|m| m.path != exe);
        let mut new = Vec::with_capacity(maps.len());
        for m in order {
            if let Some(i) = old.iter().position(|(o, _)| o == m) {
                new.push(old.swap_remove(i));
                continue;
            }
            let rec = m.is_module().then(|| {
                let build_id = if Images::wanted(m) { self.images.of(pid, m) } else { self.build_ids.of(pid, m) };
                self.hist.modules.push(ModRec {
                    pid: pid as u32,
                    path: m.path.clone(),
                    start: m.start,
                    len: m.end - m.start,
                    offset: m.offset,
                    load_ns: at,
                    unload_ns: None,
                    build_id,
                    is_exe: !exe.is_empty() && m.path == exe,
                    first: proc.modules == 0,
                });
                // The mapped file itself, even if replaced at its path since.
                let file = format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end);
                let file = if std::fs::metadata(&file).is_ok() { file } else { m.path.clone() };
                self.stacks.add_module(pid as u32, &file, m.offset, m.start..m.end);
                proc.modules += 1;
                self.hist.modules.len() - 1
            });
            new.push((m.clone(), rec));
        }
        new.sort_by_key(|(m, _)| m.start);
        proc.maps = new;
    }

    fn end_instance(&mut self, pid: i32, now: u64) {
        self.stacks.remove_process(pid as u32);
        if let Some(p) = self.procs.remove(&pid) {
            self.hist.processes[p.rec].end_ns = Some(now);
            for (_, rec) in p.maps {
                if let Some(r) = rec {
                    self.hist.modules[r].unload_ns.get_or_insert(now);
                }
            }
        }
    }

    /// Leaves every task still traced running on its own.
    fn detach_all(&mut self, now: u64) {
        // Tasks whose exit was not seen (a process's threads when its
        // exec or exit_group ended them) are not running: their records end now.
        let gone: Vec<i32> =
            self.threads.keys().copied().filter(|&tid| task_state(tid).is_none_or(|c| c == 'Z' || c == 'X')).collect();
        for tid in gone {
            if let Some(r) = self.threads.remove(&tid).and_then(|t| t.rec) {
                self.hist.threads[r].end_ns.get_or_insert(now);
            }
        }
        if self.threads.is_empty() {
            return;
        }
        let mut pids: Vec<i32> = self.threads.values().map(|t| t.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        self.stats.notes.push(format!(
            "{} process(es) started by the command outlived it and were left running untraced: {:?}",
            pids.len(),
            pids
        ));
        let mut awaiting: Vec<i32> = Vec::new();
        for (&tid, t) in &self.threads {
            match t.state {
                TState::Running if sys::interrupt(tid).is_ok() => awaiting.push(tid),
                TState::Listening => {
                    let _ = sys::detach(tid, 0);
                }
                _ => {}
            }
        }
        let deadline = sys::monotonic_raw_ns() + 1_000_000_000;
        while !awaiting.is_empty() && sys::monotonic_raw_ns() < deadline {
            match sys::wait_any(true) {
                Ok(Some((tid, Status::Stopped { sig, event }))) => {
                    let sig = if event == 0 { sig } else { 0 };
                    if sys::detach(tid, sig).is_err() {
                        let _ = sys::cont(tid, sig);
                    }
                    awaiting.retain(|&t| t != tid);
                }
                Ok(Some((tid, _))) => awaiting.retain(|&t| t != tid),
                Ok(None) => {
                    sys::wait_signal(10_000_000);
                }
                Err(_) => break,
            }
        }
        for (_, t) in self.threads.drain() {
            if let Some(r) = t.rec {
                self.hist.threads[r].end_ns.get_or_insert(now);
            }
        }
    }
}

/// The state letter of a task (`R`, `S`, `Z`...), `None` if it is gone.
fn task_state(tid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
    s[s.rfind(')')? + 1..].split_whitespace().next()?.chars().next()
}
