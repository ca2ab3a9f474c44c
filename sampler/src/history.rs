//! What a run of the tracer gives back: each thread's samples
//! ([`ThreadSample`]), the processes, threads and modules it saw with their
//! lifetimes ([`History`]), its figures ([`Stats`]) and how the command
//! ended ([`Exit`], [`Outcome`]). Plain data: no system call here.
//!
//! Imports nothing of the crate (`tbrw_symbols`' stored symbols only).

use std::io;

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
    /// The symbols of the modules no file holds (the vDSO), read from
    /// memory, for the recording's stored symbols.
    pub images: Vec<tbrw_symbols::stored::StoredFile>,
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
    /// Samples of the CPU time threads used between their last sample and
    /// their end (exit or exec), rounded up to whole periods on-CPU: a
    /// thread that ends before its next tick is recorded too.
    pub end_samples: u64,
    /// Stops of threads at a signal handler's first instruction, read
    /// where the signal interrupted them instead.
    pub handler_entries: u64,
    /// Tick stops of threads taking a signal (at its delivery or at its
    /// handler's first instruction), not recorded on-CPU: their CPU time
    /// went to their next sample.
    pub signal_stops: u64,
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

/// The result of [`Tracer::run`](crate::tracer::Tracer::run).
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
