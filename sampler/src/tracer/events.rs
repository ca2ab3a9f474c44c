//! The tracer's ptrace events: a task's first stop, its parent's clone or
//! fork event, an exec, a task's exit stop and its exit, and the samples
//! a thread's last CPU time gets when it ends (exit or exec).
//!
//! Events of different tasks come in no fixed order: a new thread's own
//! first stop is often reported before its parent's clone event, and a
//! short thread may have run and exited by the time that event is handled.
//! So a task is a thread or a process as `/proc` says while it lives, and
//! a parent's event naming a task that already ended
//! ([`Tracer::early_exits`]) makes nothing.
//!
//! Imports `tracer` (its state), `thread`, `procfs`, `sys`.

use crate::procfs::{self, ThreadFiles};
use crate::sys;
use crate::thread::{SpotKind, TState, Thread};

use super::{Exit, Origin, Resume, ThreadSample, Threads, Tracer};

impl Tracer {
    /// What a stop means, and how to resume the task.
    pub(super) fn on_stop(&mut self, tid: i32, sig: i32, event: i32, now: u64) -> Resume {
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
                    self.on_new_task_event(tid, new as i32, event != libc::PTRACE_EVENT_CLONE, now);
                }
                Resume::Cont(0)
            }
            libc::PTRACE_EVENT_EXEC => {
                self.on_exec(tid, now);
                Resume::Cont(0)
            }
            libc::PTRACE_EVENT_EXIT => {
                self.on_exit_stop(tid);
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

    /// A task the tracer has not seen, alive now: a new thread of a known
    /// process, or a new process (fork, vfork, clone without
    /// `CLONE_THREAD`), as `/proc` says. `false` when it is gone already
    /// (nothing is recorded of it).
    pub(super) fn new_task(&mut self, tid: i32, now: u64) -> bool {
        let pid = match procfs::tgid(tid) {
            Some(pid) => pid,
            None if !std::path::Path::new(&format!("/proc/{tid}")).exists() => return false,
            // Alive but unreadable: taken for a process of its own.
            None => tid,
        };
        if pid == tid && !self.procs.contains_key(&pid) {
            self.new_instance(pid, Origin::Fork, now);
        }
        let rec = self.procs.contains_key(&pid).then(|| self.thread_rec(pid, tid, now));
        self.threads.insert(tid, Thread::new(pid, rec, now, 0));
        true
    }

    /// The clone, fork or vfork event of `parent` that made task `new`:
    /// the task is made if its own first stop has not made it yet, and
    /// not at all when it already ended; a child of a fork starts where
    /// its parent is (its first spot, [`SpotKind::Fork`]).
    fn on_new_task_event(&mut self, parent: i32, new: i32, fork: bool, now: u64) {
        if !self.threads.contains_key(&new) {
            if self.early_exits.remove(&new) {
                return; // its whole life was handled before this event
            }
            if !self.new_task(new, now) {
                return;
            }
        }
        let origin = if fork { self.spot_of(parent) } else { None };
        if let Some(t) = self.threads.get_mut(&new) {
            t.announced = true;
            if let Some(spot) = origin {
                t.saw_at(SpotKind::Fork, spot);
            }
        }
    }

    /// The pc and callers of stopped task `tid`.
    fn spot_of(&mut self, tid: i32) -> Option<crate::thread::Spot> {
        let pid = self.threads.get(&tid)?.pid;
        let regs = sys::regs(tid).ok()?;
        let mut callers = Vec::new();
        self.stacks.take(pid as u32, &regs, &mut callers);
        Some(crate::thread::Spot { pc: regs.pc, callers })
    }

    /// A task stopped at its exit (`PTRACE_EVENT_EXIT`): it reports no
    /// more stops; where it exits is its spot when no better one was seen.
    fn on_exit_stop(&mut self, tid: i32) {
        let Some(t) = self.threads.get_mut(&tid) else { return };
        t.state = TState::Dying;
        // Its CPU time now: all it ran, but the kernel's end of its exit
        // (and the cost of this stop), which no program's own clock can
        // see either.
        if t.files.is_none() {
            t.files = ThreadFiles::open(t.pid, tid).ok();
        }
        t.exit_cpu = t.files.as_mut().and_then(ThreadFiles::cputime);
        if t.spot.as_ref().map(|(k, _)| *k) < Some(SpotKind::Exit) {
            if let Some(spot) = self.spot_of(tid) {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.saw_at(SpotKind::Exit, spot);
                }
            }
        }
    }

    /// The exec of the process of task `tid` (the thread that exec'd has
    /// the pid as its tid now): the old instance ends and the new one
    /// starts. The thread that exec'd goes on: the CPU time it used since
    /// its last sample goes to its next one, in the new program, as
    /// perf's `cpu-clock` counts a task across an exec (a fork's child
    /// that execs at once, a shell's, then has no sample of its own for
    /// the few microseconds before). Its other threads are gone (zombies
    /// whose CPU time still reads, or released): theirs is recorded, dated
    /// before the exec.
    fn on_exec(&mut self, pid: i32, now: u64) {
        if pid == self.root && !self.started {
            self.started = true;
            self.stats.start_ns = now;
            self.stats.start_realtime_ns = sys::realtime_ns();
        }
        let former = sys::event_msg(pid).map_or(pid, |m| m as i32);
        // The old instance ends 1 ns after the samples of its threads'
        // last CPU time, so that they bind to it.
        let boundary = now + 1;
        let mut goes_on = None;
        let gone: Vec<i32> = self.threads.iter().filter(|(_, t)| t.pid == pid).map(|(&k, _)| k).collect();
        for tid in gone {
            let Some(mut t) = self.threads.remove(&tid) else { continue };
            if let Some(r) = t.rec {
                self.hist.threads[r].end_ns = Some(boundary);
            }
            if tid == former {
                goes_on = Some(t);
            } else if t.rec.is_some() {
                let used = t.files.as_mut().and_then(ThreadFiles::cputime).unwrap_or(t.cpu_seen);
                self.record_end(tid, &mut t, used, now);
            }
        }
        self.end_instance(pid, boundary);
        self.new_instance(pid, Origin::Exec, boundary);
        let rec = Some(self.thread_rec(pid, pid, boundary));
        let mut files = ThreadFiles::open(pid, pid).ok();
        let cpu = files.as_mut().and_then(ThreadFiles::cputime);
        let cpu = cpu.or(goes_on.as_ref().map(|o| o.cpu_seen)).unwrap_or(0);
        let mut t = Thread::new(pid, rec, boundary, cpu);
        if let Some(old) = goes_on.filter(|o| o.rec.is_some()) {
            // Counted from its last sample (the command's own exec starts at its exec).
            t.carry_from(&old, cpu);
        }
        t.files = files;
        t.announced = true;
        self.threads.insert(pid, t);
    }

    /// Task `tid` ended (`how`); `now`: when its exit was seen, before it
    /// was reaped, so that its `/proc` files give its final CPU time.
    pub(super) fn on_exit(&mut self, tid: i32, how: Exit, now: u64) {
        if self.threads.get(&tid).is_some_and(|t| t.rec.is_some() && !t.sampled) {
            // A thread that ends before it was sampled: its name now (a
            // zombie's reads), the one it set after it started.
            self.read_name(tid, now);
        }
        let Some(mut t) = self.threads.remove(&tid) else { return };
        if t.rec.is_some() {
            // Read at its exit stop, else now (a zombie's files still read:
            // a thread killed with its process does not stop at its exit).
            if t.exit_cpu.is_none() && t.files.is_none() {
                t.files = ThreadFiles::open(t.pid, tid).ok();
            }
            let cpu = t.exit_cpu.or_else(|| t.files.as_mut().and_then(ThreadFiles::cputime)).unwrap_or(t.cpu_seen);
            self.record_end(tid, &mut t, cpu, now);
        }
        // Its samples are dated `now`: its life and its process's end after.
        let end = now + 1;
        if let Some(r) = t.rec {
            self.hist.threads[r].end_ns = Some(end);
        }
        if !t.announced {
            // Its parent's clone event is still to come: it must not make it again.
            self.early_exits.insert(tid);
        }
        if tid == t.pid {
            self.end_instance(tid, end);
        }
        if tid == self.root {
            self.exit = Some(how);
        }
    }

    /// The samples of the CPU time thread `tid` (removed from the map as
    /// `t`) used since its last sample, its CPU time being `cpu` at its
    /// end, dated `time` ([`Thread::final_copies`]): at its best spot,
    /// queued for the next call of the sink.
    fn record_end(&mut self, tid: i32, t: &mut Thread, cpu: u64, time: u64) {
        let on_cpu = self.cfg.threads == Threads::OnCpu;
        let copies = t.final_copies(cpu, self.cfg.period_ns, on_cpu);
        if copies == 0 {
            return;
        }
        let cputime_delta_ns = cpu.saturating_sub(t.cpu_at_sample);
        t.cpu_at_sample = cpu;
        let spot = t.spot.take().map(|(_, s)| s).unwrap_or_default();
        let s = ThreadSample {
            time_ns: time,
            pid: t.pid as u32,
            tid: tid as u32,
            pc: spot.pc,
            cputime_ns: cpu,
            cputime_delta_ns,
            cpu: t.files.as_mut().and_then(ThreadFiles::cpu).unwrap_or(0),
            callers: spot.callers,
        };
        let repeat = ThreadSample { cputime_delta_ns: 0, ..s.clone() };
        self.pending.push(s);
        self.pending.extend(std::iter::repeat_n(repeat, (copies - 1) as usize));
        self.stats.repeats += copies - 1;
        self.stats.end_samples += copies;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;
    use crate::callstack::CallGraph;
    use crate::tracer::Config;

    /// A parent's clone event names a task already gone (its whole life
    /// was handled before the event, or it ended unseen): nothing is made
    /// of it, no nameless process, no note; and a task that ended before
    /// its parent's event is not made again by that event, even when its
    /// tid names a live task again.
    #[test]
    fn a_task_that_ended_before_its_parents_event_makes_nothing() {
        let cfg = Config { period_ns: 1_000_000, pmu: None, threads: Threads::OnCpu, call_graph: CallGraph::None };
        let mut t = match Tracer::start(&["true".to_owned()], cfg) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("SKIPPED: {e}");
                return;
            }
        };
        let root = t.pid();
        // A thread of this test that has ended: its tid names no task now.
        // SAFETY: gettid has no preconditions.
        let gone = std::thread::spawn(|| unsafe { libc::gettid() }).join().unwrap();
        t.on_new_task_event(root, gone, false, 1);
        assert!(!t.threads.contains_key(&gone));
        assert!(t.hist.processes.is_empty() && t.hist.threads.is_empty(), "{:?}", t.hist);
        assert!(t.stats.notes.is_empty(), "{:?}", t.stats.notes);

        // A live thread (of this test) first seen by its own stop, ended
        // before its parent's event, whose tid is then a live task's.
        let (tid_tx, tid_rx) = channel();
        let (end_tx, end_rx) = channel::<()>();
        let live = std::thread::spawn(move || {
            // SAFETY: as above.
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            end_rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        assert!(t.new_task(tid, 2));
        t.on_exit(tid, Exit::Code(0), 3);
        t.on_new_task_event(root, tid, false, 4);
        assert!(!t.threads.contains_key(&tid), "made again by its parent's event");
        assert!(t.early_exits.is_empty());
        end_tx.send(()).unwrap();
        live.join().unwrap();

        let outcome = t.run(&mut |_, _| Ok(())).unwrap();
        assert_eq!(outcome.exit, Exit::Code(0));
        assert!(outcome.stats.notes.is_empty(), "{:?}", outcome.stats.notes);
    }
}
