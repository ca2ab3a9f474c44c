//! One tick of the tracer: which threads to stop (the on-CPU rule, or
//! every thread), stopping them, reading each one's pc, CPU time, CPU and
//! callers, resuming it, and the samples that gives. A thread stopped at a
//! signal handler's first instruction is read where the signal interrupted
//! it (`crate::sigframe`).
//!
//! Imports `tracer` (its state), `thread`, `sigframe`, `callstack`,
//! `procfs`, `sys`.

use std::io;

use crate::procfs::ThreadFiles;
use crate::sigframe;
use crate::sys;
use crate::thread::{Spot, SpotKind, TState};

use super::{task_state, ThreadSample, Threads, Tracer, CALLER_REREAD_TICKS};

/// When the ticks fall. Each falls at a random point of its period of a
/// fixed grid: the ticks keep the frequency on average, but a program
/// doing something at the same frequency (a 1 ms timer) is not caught at
/// the same point of it every time, as strictly periodic ticks would (the
/// share of a 1 ms timer's handler then depends on the phase the run
/// happens to start with). And a tick that comes due while the tracer
/// handles a tracee's stop (it was woken by the stop) is moved, once, to
/// a random point of the period ahead: the tracer runs then because of the
/// stop (a signal's delivery, most often), and ticking then would catch
/// the threads at those moments rather than at random ones.
#[derive(Debug)]
pub(super) struct Ticks {
    period: u64,
    /// The start of the current tick's period (0: not started).
    grid: u64,
    deadline: u64,
    postponed: bool,
}

impl Ticks {
    /// Ticks every `period` ns on average.
    pub(super) fn new(period: u64) -> Ticks {
        Ticks { period, grid: 0, deadline: 0, postponed: false }
    }

    fn random_point(&self) -> u64 {
        fastrand::u64(0..self.period)
    }

    /// When the next tick is due; the first is in the period after `now`
    /// (the command's exec).
    pub(super) fn deadline(&mut self, now: u64) -> u64 {
        if self.grid == 0 {
            self.grid = now + self.period;
            self.deadline = self.grid + self.random_point();
        }
        self.deadline
    }

    /// Moves the due tick to a random point of the period from `now`,
    /// once a tick: `false` when it was moved already.
    pub(super) fn postpone(&mut self, now: u64) -> bool {
        if std::mem::replace(&mut self.postponed, true) {
            return false;
        }
        self.deadline = now + 1 + self.random_point();
        true
    }

    /// After a tick that ended at `now`: the next one's period, skipping
    /// those already over (ticks that cannot be kept are skipped, not
    /// bunched up). Returns how many were skipped.
    pub(super) fn next(&mut self, now: u64) -> u64 {
        self.grid += self.period;
        let missed = if now > self.grid + self.period { (now - self.grid) / self.period } else { 0 };
        self.grid += missed * self.period;
        self.deadline = self.grid + self.random_point();
        self.postponed = false;
        missed
    }
}

impl Tracer {
    /// The PMU value of this moment (NaN when the reading failed), if
    /// there is a PMU source.
    pub(super) fn pmu_value(&mut self) -> Option<f64> {
        match &mut self.cfg.pmu {
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
        }
    }

    /// One tick: stop every running thread, read it, resume it. The
    /// samples are the tick's and those of the threads that ended since
    /// the previous tick, in time order.
    pub(super) fn take_tick(&mut self) -> io::Result<(Vec<ThreadSample>, Option<f64>)> {
        self.tick += 1;
        let value = self.pmu_value();
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
        self.collect_stops(&mut awaiting, &mut samples)?;
        self.stats.stopped_ns += sys::monotonic_raw_ns() - t0;
        self.stats.ticks += 1;
        samples.append(&mut self.pending);
        samples.sort_by_key(|s| s.time_ns);
        self.stats.records += samples.len() as u64;
        // After the threads run again: reading names does not stop them.
        self.check_names();
        Ok((samples, value))
    }

    /// Waits until every thread of `awaiting` has stopped (and was read
    /// into `samples`, then resumed) or is gone, handling whatever else
    /// happens meanwhile.
    fn collect_stops(&mut self, awaiting: &mut Vec<i32>, samples: &mut Vec<ThreadSample>) -> io::Result<()> {
        let mut quiet_since = sys::monotonic_raw_ns();
        while !awaiting.is_empty() {
            match sys::next_change()? {
                Some((tid, st, unreaped)) => {
                    let i = awaiting.iter().position(|&t| t == tid);
                    if let Some(i) = i {
                        awaiting.swap_remove(i);
                    }
                    let out = if i.is_some() { Some(&mut *samples) } else { None };
                    self.handle(tid, st, unreaped, out);
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

    /// The registers of stopped thread `tid` of process `pid` where it was
    /// running, and whether it stopped at a signal handler's first
    /// instruction: then the registers are those the signal interrupted.
    fn running_regs(&mut self, pid: i32, tid: i32) -> io::Result<(sys::Regs, bool)> {
        let regs = sys::regs(tid)?;
        if let Some(r) = sigframe::interrupted(pid as u32, &regs) {
            self.stats.handler_entries += 1;
            return Ok((r, true));
        }
        Ok((regs, false))
    }

    /// Reads a stopped thread into `out`: once with [`Threads::All`], once
    /// per period of CPU time it used with [`Threads::OnCpu`] (maybe not at
    /// all). `signal_stop`: this stop is a signal's delivery.
    ///
    /// On-CPU, a thread stopped as a signal is delivered to it (at the
    /// delivery, or at the handler's first instruction just after) is not
    /// recorded then: its CPU time carries to its next sample. Such stops
    /// come at the signal's moments, not at the ticks' (a delivery stop
    /// wakes the tracer, which then takes the tick that is due), and the
    /// thread is then never in its handler: recording them would take
    /// samples from the handler, the more so the more often it runs.
    pub(super) fn sample_one(&mut self, tid: i32, signal_stop: bool, out: &mut Vec<ThreadSample>) {
        let (on_cpu, period) = (self.cfg.threads == Threads::OnCpu, self.cfg.period_ns);
        let Some(t) = self.threads.get(&tid) else { return };
        let pid = t.pid;
        if t.rec.is_none() {
            return; // not started yet (before the command's exec)
        }
        let time_ns = sys::monotonic_raw_ns();
        let Ok((regs, at_entry)) = self.running_regs(pid, tid) else {
            self.stats.lost_samples += 1;
            return;
        };
        let pc = regs.pc;
        let Some(t) = self.threads.get_mut(&tid) else { return };
        if t.files.is_none() {
            t.files = ThreadFiles::open(pid, tid).ok();
        }
        // Without its CPU time (its files gone: it is ending) there is no
        // sample: a 0 would make its next sample's delta count all its
        // CPU time again.
        let Some((cputime_ns, cpu)) = t.files.as_mut().and_then(|f| Some((f.cputime()?, f.cpu().unwrap_or(0)))) else {
            self.stats.lost_samples += 1;
            return;
        };
        if on_cpu && (signal_stop || at_entry) {
            t.saw_cpu(cputime_ns);
            self.stats.signal_stops += 1;
            return;
        }
        let copies = if on_cpu { t.periods(cputime_ns, period) } else { 1 };
        if copies == 0 {
            self.stats.idle_skipped += 1;
            if t.spot.as_ref().map(|(k, _)| *k) < Some(SpotKind::Seen) {
                // Where it ran, for the CPU time it may end with unsampled.
                let mut callers = Vec::new();
                self.stacks.take(pid as u32, &regs, &mut callers);
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.saw_at(SpotKind::Seen, Spot { pc, callers });
                }
            }
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
        if let Some(t) = self.threads.get_mut(&tid) {
            t.saw_at(SpotKind::Sampled, Spot { pc, callers: callers.clone() });
        }
        let s =
            ThreadSample { time_ns, pid: pid as u32, tid: tid as u32, pc, cputime_ns, cputime_delta_ns, cpu, callers };
        // The repeats stand for CPU time already in the first one's delta.
        let repeat = ThreadSample { cputime_delta_ns: 0, ..s.clone() };
        out.push(s);
        out.extend(std::iter::repeat_n(repeat, (copies - 1) as usize));
        self.stats.repeats += copies - 1;
    }
}
