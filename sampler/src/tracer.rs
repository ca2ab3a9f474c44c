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
//! One file on purpose: the stops, ptrace events and ticks of the loop share
//! the per-thread and per-process state, whose invariants are easier to keep
//! in one place than spread over files.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;

use crate::buildid::BuildIds;
use crate::callstack::{CallGraph, Stacks};
use crate::pmu::Pmu;
use crate::procfs::{self, Mapping, ThreadFiles};
use crate::sys::{self, Status};

/// One thread's state at one tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadSample {
    /// When it was read, nanoseconds of `CLOCK_MONOTONIC_RAW`.
    pub time_ns: u64,
    /// Its process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Program counter.
    pub pc: u64,
    /// Cumulative CPU time, nanoseconds.
    pub cputime_ns: u64,
    /// CPU time since the thread's previous sample (since it started, or
    /// since its exec, for its first), nanoseconds; 0 for the repeats of a
    /// sample that stands for several periods ([`Threads::OnCpu`]).
    pub cputime_delta_ns: u64,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// Its callers' return addresses, innermost first, with `--call-graph`
    /// (empty without).
    pub callers: Vec<u64>,
}

/// Which threads a tick samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// On-CPU, as perf's `cpu-clock` counts: one sample per period of the
    /// CPU time a thread used. At each tick a thread is stopped only when
    /// it is running (or waiting for a CPU) or has used a period of CPU
    /// time since its previous sample; it is then recorded once per whole
    /// period it used, with the pc where it stopped, and the rest carries
    /// over. A thread that did not run is never recorded.
    #[default]
    OnCpu,
    /// Every thread at every tick, waiting or not (the seed's full
    /// profile; for off-CPU analysis).
    All,
}

/// How a process instance began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An `execve` (the command itself, or any later exec).
    Exec,
    /// A fork or vfork of a traced process.
    Fork,
}

/// A process instance: a pid from one exec (or fork) to the next exec or
/// its exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcRec {
    /// Its pid.
    pub pid: u32,
    /// The executable.
    pub path: String,
    /// Its name (`comm`).
    pub name: String,
    /// Start, ns `CLOCK_MONOTONIC_RAW`.
    pub start_ns: u64,
    /// End (exit or exec), if seen.
    pub end_ns: Option<u64>,
    /// How it began.
    pub origin: Origin,
}

/// A thread of a process instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadRec {
    /// Its process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Its name (`comm`): when first seen (clone, exec), replaced by the
    /// one read at its first sample. A later change of name ends this
    /// record and starts another for the same tid with the new name.
    pub name: String,
    /// Start (first seen, or the time a new name was seen), ns.
    pub start_ns: u64,
    /// End (exit, exec, or the time a new name was seen), if seen.
    pub end_ns: Option<u64>,
}

/// An executable mapping of a process instance, from load to unload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModRec {
    /// Its process.
    pub pid: u32,
    /// The file, or a pseudo name like `[vdso]`.
    pub path: String,
    /// Load address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// Offset of the mapping in the file.
    pub offset: u64,
    /// When it was first seen, ns.
    pub load_ns: u64,
    /// When it was seen gone (unmapped, exec, exit).
    pub unload_ns: Option<u64>,
    /// The GNU build id of the mapped file, when it could be read.
    pub build_id: Option<Vec<u8>>,
    /// Whether it maps the process's executable.
    pub is_exe: bool,
    /// Whether it is the first module record of its process instance.
    pub first: bool,
}

/// Everything the run saw, for the process and module sections.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Process instances, in order of appearance.
    pub processes: Vec<ProcRec>,
    /// Threads, in order of appearance.
    pub threads: Vec<ThreadRec>,
    /// Modules, in order of appearance.
    pub modules: Vec<ModRec>,
}

/// Figures of the run (`-d`).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Ticks taken.
    pub ticks: u64,
    /// Thread samples taken.
    pub records: u64,
    /// Thread ticks not sampled because the thread had not used a period of
    /// CPU time since its previous sample ([`Threads::OnCpu`]).
    pub idle_skipped: u64,
    /// Samples that repeat the one before, for a thread that used several
    /// periods of CPU time between two ticks ([`Threads::OnCpu`], late ticks).
    pub repeats: u64,
    /// Thread records started because a thread took a new name.
    pub renames: u64,
    /// Ticks skipped because the previous one ended too late.
    pub missed_ticks: u64,
    /// Total time the target was stopped by the sampler, ns.
    pub stopped_ns: u64,
    /// Start of the command (its exec), ns `CLOCK_MONOTONIC_RAW`.
    pub start_ns: u64,
    /// End of the command, ns.
    pub end_ns: u64,
    /// Start, ns `CLOCK_REALTIME`.
    pub start_realtime_ns: u64,
    /// End, ns `CLOCK_REALTIME`.
    pub end_realtime_ns: u64,
    /// Re-reads of a process's maps for a pc in no known mapping.
    pub map_rereads: u64,
    /// Samples whose pc was in no executable mapping even after a re-read.
    pub unknown_pcs: u64,
    /// Threads that could not be read at a tick (they vanished).
    pub lost_samples: u64,
    /// Signals the sampler received and passed on to the command.
    pub forwarded_signals: Vec<i32>,
    /// What could not be followed (said in the summary).
    pub notes: Vec<String>,
}

impl Stats {
    /// Wall time of the command, ns.
    pub fn wall_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Ticks per second actually reached.
    pub fn reached_hz(&self) -> f64 {
        let w = self.wall_ns();
        if w == 0 {
            0.0
        } else {
            self.ticks as f64 * 1e9 / w as f64
        }
    }
}

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `exit(code)`.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
}

impl Exit {
    /// The shell's convention: the code, or 128 + the signal.
    pub fn status(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
}

/// The result of [`Tracer::run`].
#[derive(Debug)]
pub struct Outcome {
    /// How the command ended.
    pub exit: Exit,
    /// What was seen.
    pub history: History,
    /// Figures.
    pub stats: Stats,
    /// The error that ended recording early (the command then ran on, detached).
    pub sink_error: Option<io::Error>,
}

/// Why the command could not be started.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TState {
    Running,
    /// In a group-stop (SIGSTOP, ^Z): not running, not sampled.
    Listening,
    /// Exiting: reports no more stops; its exit is still to come.
    Dying,
}

/// How often a live thread's name is read again.
const NAME_EVERY_NS: u64 = 1_000_000_000;

#[derive(Debug)]
struct Thread {
    pid: i32,
    state: TState,
    files: Option<ThreadFiles>,
    /// Its current record in `History::threads` (`None` before the command's exec).
    rec: Option<usize>,
    /// Whether it has been sampled (its name is read again then).
    sampled: bool,
    /// Whether its current record has a sample: a new name then starts a
    /// new record, else it replaces the record's name.
    rec_sampled: bool,
    /// When its name was last read, ns.
    name_read_ns: u64,
    /// Cumulative CPU time at its previous sample, or at its start.
    cpu_at_sample: u64,
    /// The latest reading of its cumulative CPU time (on-CPU mode).
    cpu_seen: u64,
    /// CPU time used and not yet recorded, less than a period after each
    /// sample (on-CPU mode).
    credit: u64,
    /// Its switch-in count when it was last seen asleep (not in state `R`):
    /// while that count and its CPU time stay the same, it has not run
    /// since, so its state need not be read again (on-CPU mode).
    asleep_at: Option<u64>,
}

/// A thread's samples for `periods` of CPU time used are this many at most:
/// beyond, the tracer was held up for seconds, and what the thread did then
/// is not known anyway.
const MAX_REPEATS: u64 = 10_000;

impl Thread {
    /// A thread first seen at `now`, with `cpu_ns` of CPU time then: 0 for
    /// a new task (a clone or fork starts at 0), the reading at an exec.
    fn new(pid: i32, rec: Option<usize>, now: u64, cpu_ns: u64) -> Thread {
        Thread {
            pid,
            state: TState::Running,
            files: None,
            rec,
            sampled: false,
            rec_sampled: false,
            name_read_ns: now,
            cpu_at_sample: cpu_ns,
            cpu_seen: cpu_ns,
            credit: 0,
            asleep_at: None,
        }
    }

    /// Adds what a CPU time reading shows used since the previous one.
    fn saw_cpu(&mut self, now: u64) {
        self.credit = self.credit.saturating_add(now.saturating_sub(self.cpu_seen));
        self.cpu_seen = self.cpu_seen.max(now);
    }

    /// Whether the on-CPU rule stops thread `tid` at this tick: it is
    /// running or waiting for a CPU (state `R`), or the CPU time it used
    /// since its previous sample reaches a period.
    ///
    /// The kernel brings a running thread's CPU time in `/proc` up to date
    /// only at its scheduler ticks (every 4 ms at `HZ=250`), at switches and
    /// when the thread reads its own CPU clock; the stop brings it up to
    /// date, so how many periods a thread used is decided on the reading
    /// taken once it has stopped ([`Thread::periods`]). Stopping on a grown
    /// reading alone would sample a busy thread at most `HZ` times a second,
    /// and mostly just after it read its CPU clock.
    ///
    /// Not stopping the others matters: the stop itself costs a sleeping
    /// thread a few µs of CPU time, which would make it look busy at every
    /// tick. A sleeping thread is stopped only once it has used a whole
    /// period, so the stops add less than 1 % to its samples.
    fn should_stop(&mut self, tid: i32, period_ns: u64) -> bool {
        if self.files.is_none() {
            self.files = ThreadFiles::open(self.pid, tid).ok();
        }
        let Some(files) = self.files.as_mut() else { return true };
        // Unreadable CPU time: sampled, as every thread is in the seed.
        let Some((now, runs)) = files.cputime_runs() else { return true };
        let unchanged = now <= self.cpu_seen;
        self.saw_cpu(now);
        if self.credit >= period_ns {
            return true;
        }
        // Asleep at the last look and not switched in since: asleep still
        // (a thread with many idle threads pays one read per idle thread).
        if unchanged && self.asleep_at == Some(runs) {
            return false;
        }
        let runnable = self.files.as_mut().and_then(ThreadFiles::runnable) == Some(true);
        self.asleep_at = (!runnable).then_some(runs);
        runnable
    }

    /// The samples a stopped thread gets for its CPU time read `now` (up to
    /// date): one per whole period used since its previous sample; the
    /// rest carries over. More than one when the ticks fell behind, so that
    /// the count stays the CPU time divided by the period whatever the
    /// frequency reached, as with perf's `cpu-clock`. The pc of them all is
    /// where the thread stopped; for a thread that was waiting for a CPU,
    /// where it was preempted (docs/SAMPLER.md, "Limits").
    fn periods(&mut self, now: u64, period_ns: u64) -> u64 {
        self.saw_cpu(now);
        let n = self.credit / period_ns;
        self.credit -= n * period_ns;
        if n > MAX_REPEATS {
            self.credit = 0;
        }
        n.min(MAX_REPEATS)
    }
}

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
    stacks: Stacks,
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
        threads.insert(pid, Thread::new(pid, None, 0, 0));
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
            stacks,
        })
    }

    /// The command's pid.
    pub fn pid(&self) -> i32 {
        self.root
    }

    /// Traces until the command exits, calling `sink` at every tick.
    /// Processes it started that outlive it are detached and left running.
    pub fn run(mut self, sink: &mut Sink<'_>) -> io::Result<Outcome> {
        let mut deadline = 0u64;
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
            if deadline == 0 {
                // The command's exec: the first tick is one period later.
                deadline = now + self.cfg.period_ns;
            }
            if now < deadline {
                if let Some(s) = sys::wait_signal(deadline - now) {
                    self.on_sampler_signal(s);
                }
                continue;
            }
            let (samples, value) = self.take_tick()?;
            if let Err(e) = sink(&samples, value) {
                sink_error = Some(e);
                break;
            }
            deadline += self.cfg.period_ns;
            let after = sys::monotonic_raw_ns();
            if after > deadline {
                // Ticks that cannot be kept are skipped, not bunched up.
                let missed = (after - deadline) / self.cfg.period_ns + 1;
                self.stats.missed_ticks += missed;
                deadline += missed * self.cfg.period_ns;
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
        while let Some((tid, st)) = sys::wait_any(true)? {
            self.handle(tid, st, None);
        }
        Ok(())
    }

    /// Handles one change; when `sample` is given and `tid` is stopped,
    /// reads the thread before resuming it.
    fn handle(&mut self, tid: i32, st: Status, sample: Option<&mut Vec<ThreadSample>>) -> bool {
        let now = sys::monotonic_raw_ns();
        match st {
            Status::Exited(c) => {
                self.on_exit(tid, Exit::Code(c), now);
                false
            }
            Status::Killed(s) => {
                self.on_exit(tid, Exit::Signal(s), now);
                false
            }
            Status::Stopped { sig, event } => {
                let r = self.on_stop(tid, sig, event, now);
                if let Some(out) = sample {
                    self.sample_one(tid, out);
                }
                let res = match r {
                    Resume::Cont(s) => sys::cont(tid, s),
                    Resume::Listen => sys::listen(tid),
                };
                if res.is_err() {
                    // ESRCH: it died meanwhile; its exit comes next.
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.state = TState::Dying;
                    }
                }
                true
            }
        }
    }

    fn on_stop(&mut self, tid: i32, sig: i32, event: i32, now: u64) -> Resume {
        if !self.threads.contains_key(&tid) {
            self.new_task(tid, now);
        }
        match event {
            libc::PTRACE_EVENT_STOP => {
                if matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) {
                    self.set_state(tid, TState::Listening);
                    Resume::Listen
                } else {
                    self.set_state(tid, TState::Running);
                    Resume::Cont(0)
                }
            }
            libc::PTRACE_EVENT_CLONE | libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                if let Ok(new) = sys::event_msg(tid) {
                    let new = new as i32;
                    if !self.threads.contains_key(&new) {
                        self.new_task(new, now);
                    }
                }
                Resume::Cont(0)
            }
            libc::PTRACE_EVENT_EXEC => {
                self.on_exec(tid, now);
                Resume::Cont(0)
            }
            0 => {
                if self.threads.get(&tid).is_some_and(|t| t.pid == self.root) {
                    self.seen_signal.insert(sig, now);
                    if self.pending_signal.is_some_and(|(s, _)| s == sig) {
                        self.pending_signal = None;
                    }
                }
                Resume::Cont(sig)
            }
            _ => Resume::Cont(0),
        }
    }

    fn set_state(&mut self, tid: i32, s: TState) {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.state = s;
        }
    }

    /// A task the tracer has not seen: a new thread of a known process, or
    /// a new process (fork, vfork, clone without `CLONE_THREAD`).
    fn new_task(&mut self, tid: i32, now: u64) {
        let pid = procfs::tgid(tid).unwrap_or(tid);
        if pid == tid && !self.procs.contains_key(&pid) {
            self.new_instance(pid, Origin::Fork, now);
        }
        let rec = self.procs.contains_key(&pid).then(|| self.thread_rec(pid, tid, now));
        self.threads.insert(tid, Thread::new(pid, rec, now, 0));
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
        if !t.rec_sampled {
            self.hist.threads[r].name = name;
            return;
        }
        let pid = t.pid;
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
                self.stats.notes.push(format!("could not read the maps of process {pid}: {e}"));
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
                let build_id = self.build_ids.of(pid, m);
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

    fn on_exec(&mut self, pid: i32, now: u64) {
        if pid == self.root && !self.started {
            self.started = true;
            self.stats.start_ns = now;
            self.stats.start_realtime_ns = sys::realtime_ns();
        }
        // Every other thread of the process is gone; the one that exec'd
        // now has the pid as its tid.
        let gone: Vec<i32> = self.threads.iter().filter(|(_, t)| t.pid == pid).map(|(&k, _)| k).collect();
        for tid in gone {
            if let Some(t) = self.threads.remove(&tid) {
                if let Some(r) = t.rec {
                    self.hist.threads[r].end_ns = Some(now);
                }
            }
        }
        self.end_instance(pid, now);
        self.new_instance(pid, Origin::Exec, now);
        let rec = Some(self.thread_rec(pid, pid, now));
        // An exec keeps the task's CPU time: what it used before is not
        // the new program's, so its first sample counts from here.
        let mut files = ThreadFiles::open(pid, pid).ok();
        let cpu = files.as_mut().and_then(ThreadFiles::cputime).unwrap_or(0);
        let mut t = Thread::new(pid, rec, now, cpu);
        t.files = files;
        self.threads.insert(pid, t);
    }

    fn on_exit(&mut self, tid: i32, how: Exit, now: u64) {
        let Some(t) = self.threads.remove(&tid) else { return };
        if let Some(r) = t.rec {
            self.hist.threads[r].end_ns = Some(now);
        }
        if tid == t.pid {
            self.end_instance(tid, now);
        }
        if tid == self.root {
            self.exit = Some(how);
        }
    }

    /// Reads a stopped thread into `out`: once with [`Threads::All`], once
    /// per period of CPU time it used with [`Threads::OnCpu`] (maybe not at
    /// all).
    fn sample_one(&mut self, tid: i32, out: &mut Vec<ThreadSample>) {
        let (on_cpu, period) = (self.cfg.threads == Threads::OnCpu, self.cfg.period_ns);
        let Some(t) = self.threads.get_mut(&tid) else { return };
        let pid = t.pid;
        if t.rec.is_none() {
            return; // not started yet (before the command's exec)
        }
        let time_ns = sys::monotonic_raw_ns();
        let Ok(regs) = sys::regs(tid) else {
            self.stats.lost_samples += 1;
            return;
        };
        let pc = regs.pc;
        if t.files.is_none() {
            t.files = ThreadFiles::open(pid, tid).ok();
        }
        let (cputime_ns, cpu) = match &mut t.files {
            Some(f) => (f.cputime().unwrap_or(0), f.cpu().unwrap_or(0)),
            None => (0, 0),
        };
        let copies = if on_cpu { t.periods(cputime_ns, period) } else { 1 };
        if copies == 0 {
            self.stats.idle_skipped += 1;
            return;
        }
        let cputime_delta_ns = cputime_ns.saturating_sub(t.cpu_at_sample);
        t.cpu_at_sample = cputime_ns;
        let first = !std::mem::replace(&mut t.sampled, true);
        if first {
            // Most threads are named (pthread_setname_np) just after they
            // start: the name at the first sample is the one to show.
            self.read_name(tid, time_ns);
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.rec_sampled = true;
        }
        let tick = self.tick;
        if let Some(p) = self.procs.get(&pid) {
            if !p.maps.iter().any(|(m, _)| m.contains(pc)) {
                // A mapping made since the last read (dlopen), at most once a tick.
                if p.reread_tick != tick {
                    self.procs.get_mut(&pid).expect("present").reread_tick = tick;
                    self.stats.map_rereads += 1;
                    self.reread_maps(pid, time_ns);
                }
                if !self.procs[&pid].maps.iter().any(|(m, _)| m.contains(pc)) {
                    self.stats.unknown_pcs += copies;
                }
            }
        }
        let mut callers = Vec::new();
        self.stacks.take(pid as u32, &regs, &mut callers);
        // Callers in libraries mapped since the maps were read (most are
        // mapped by the loader after the exec, and only a sampled pc in
        // one has them read): read again, and the stack taken again (the
        // DWARF unwinder goes on through the modules now known).
        if let Some(p) = self.procs.get(&pid) {
            let unknown = callers.iter().any(|&c| !p.maps.iter().any(|(m, _)| m.contains(c)));
            let due = p.caller_reread_tick == u64::MAX || tick >= p.caller_reread_tick + CALLER_REREAD_TICKS;
            if unknown && due && p.reread_tick != tick {
                let p = self.procs.get_mut(&pid).expect("present");
                p.caller_reread_tick = tick;
                p.reread_tick = tick;
                self.stats.map_rereads += 1;
                let known = p.maps.len();
                self.reread_maps(pid, time_ns);
                if self.procs.get(&pid).is_some_and(|p| p.maps.len() != known) {
                    self.stacks.take(pid as u32, &regs, &mut callers);
                }
            }
        }
        let s =
            ThreadSample { time_ns, pid: pid as u32, tid: tid as u32, pc, cputime_ns, cputime_delta_ns, cpu, callers };
        // The repeats stand for CPU time already in the first one's delta.
        let repeat = ThreadSample { cputime_delta_ns: 0, ..s.clone() };
        out.push(s);
        out.extend(std::iter::repeat_n(repeat, (copies - 1) as usize));
        self.stats.repeats += copies - 1;
    }

    /// One tick: stop every running thread, read it, resume it.
    fn take_tick(&mut self) -> io::Result<(Vec<ThreadSample>, Option<f64>)> {
        self.tick += 1;
        let value = match &mut self.cfg.pmu {
            Some(p) => match p.read() {
                Ok(v) => Some(v),
                Err(e) => {
                    if self.stats.notes.len() < 16 {
                        self.stats.notes.push(format!("PMU reading failed: {e}"));
                    }
                    Some(f64::NAN)
                }
            },
            None => None,
        };
        let (on_cpu, period) = (self.cfg.threads == Threads::OnCpu, self.cfg.period_ns);
        // Which threads to stop is decided before the first stop, so that
        // the stopped ones do not wait while the others' files are read.
        let mut chosen: Vec<i32> = Vec::new();
        for (&tid, t) in &mut self.threads {
            if t.state != TState::Running || t.rec.is_none() {
                continue;
            }
            if on_cpu && !t.should_stop(tid, period) {
                self.stats.idle_skipped += 1;
                continue;
            }
            chosen.push(tid);
        }
        let t0 = sys::monotonic_raw_ns();
        let mut awaiting: Vec<i32> = chosen.into_iter().filter(|&tid| sys::interrupt(tid).is_ok()).collect();
        let mut samples = Vec::with_capacity(awaiting.len());
        self.collect_stops(&mut awaiting, Some(&mut samples))?;
        self.stats.stopped_ns += sys::monotonic_raw_ns() - t0;
        self.stats.ticks += 1;
        self.stats.records += samples.len() as u64;
        // After the threads run again: reading names does not stop them.
        self.check_names();
        Ok((samples, value))
    }

    /// Waits until every thread of `awaiting` has stopped (and was read
    /// into `samples`, then resumed) or is gone, handling whatever else
    /// happens meanwhile.
    fn collect_stops(
        &mut self,
        awaiting: &mut Vec<i32>,
        mut samples: Option<&mut Vec<ThreadSample>>,
    ) -> io::Result<()> {
        let mut quiet_since = sys::monotonic_raw_ns();
        while !awaiting.is_empty() {
            match sys::wait_any(true)? {
                Some((tid, st)) => {
                    let i = awaiting.iter().position(|&t| t == tid);
                    if let Some(i) = i {
                        awaiting.swap_remove(i);
                    }
                    let out = if i.is_some() { samples.as_deref_mut() } else { None };
                    self.handle(tid, st, out);
                    quiet_since = sys::monotonic_raw_ns();
                }
                None => {
                    if let Some(s) = sys::wait_signal(20_000_000) {
                        self.on_sampler_signal(s);
                    }
                    // A thread in exit (a zombie leader waiting for its
                    // threads) takes the interrupt but never stops.
                    if sys::monotonic_raw_ns() - quiet_since > 20_000_000 {
                        awaiting.retain(|&tid| {
                            let dying = task_state(tid).is_none_or(|c| c == 'Z' || c == 'X');
                            if dying {
                                if let Some(t) = self.threads.get_mut(&tid) {
                                    t.state = TState::Dying;
                                }
                            }
                            !dying
                        });
                        quiet_since = sys::monotonic_raw_ns();
                    }
                }
            }
        }
        Ok(())
    }

    /// Leaves every task still traced running on its own.
    fn detach_all(&mut self, now: u64) {
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::*;

    fn thread_cputime_ns() -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid out pointer; this clock always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// A thread of this process, blocked, then busy for 30 ms of CPU time:
    /// not stopped while it blocks (its state read once), stopped while it
    /// runs, and then recorded once per millisecond of the CPU time it used.
    #[test]
    fn the_on_cpu_rule_on_a_thread_of_this_process() {
        let pid = std::process::id() as i32;
        let (tid_tx, tid_rx) = channel();
        let (go_tx, go_rx) = channel::<()>();
        let (done_tx, done_rx) = channel::<()>();
        let worker = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            go_rx.recv().unwrap();
            let start = thread_cputime_ns();
            let mut x = 0u64;
            while thread_cputime_ns() < start + 30_000_000 {
                for i in 0..10_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
            }
            done_tx.send(()).unwrap();
            go_rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50)); // blocked in recv by now
        let start_cpu = ThreadFiles::open(pid, tid).unwrap().cputime().unwrap();
        let mut t = Thread::new(pid, Some(0), 0, start_cpu);
        let period = 1_000_000;
        assert!(!t.should_stop(tid, period), "blocked");
        let runs = t.asleep_at.expect("seen asleep");
        assert!(!t.should_stop(tid, period), "still blocked");
        assert_eq!(t.asleep_at, Some(runs));
        go_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        // With a period it has not used yet: stopped because it runs (its
        // switch-in since it was seen asleep says to read its state again).
        assert!(t.should_stop(tid, 1_000_000_000), "busy");
        done_rx.recv().unwrap();
        let used = ThreadFiles::open(pid, tid).unwrap().cputime().unwrap() - start_cpu;
        let n = t.periods(start_cpu + used, period);
        assert_eq!(n, used / period, "{used} ns used");
        assert!((30..40).contains(&n) && t.credit < period, "{n} periods, {} ns over", t.credit);
        assert_eq!(t.periods(start_cpu + used, period), 0, "nothing used since");
        go_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
