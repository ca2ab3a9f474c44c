//! What the tracer keeps per traced thread ([`Thread`]): its state, its
//! `/proc` files, its record in the history, and the accounting of its
//! CPU time: which ticks stop it under the on-CPU rule, how many samples
//! a stop gives, the CPU time carried to its next sample, and the samples
//! its last CPU time gets when it ends ([`Thread::final_copies`]), with
//! where to put them ([`Spot`]).
//!
//! Imports `procfs`.

use crate::procfs::ThreadFiles;

/// Where a thread was seen: a pc and its callers (innermost first, empty
/// without call stacks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spot {
    pub(crate) pc: u64,
    pub(crate) callers: Vec<u64>,
}

/// How a [`Spot`] was seen, worst first: a better one replaces a worse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SpotKind {
    /// The parent's pc at the fork (a child starts there, in a copy of
    /// the parent's memory).
    Fork,
    /// Where it stopped at its exit.
    Exit,
    /// Where a tick stopped it without recording it (less than a period used).
    Seen,
    /// Its last sample.
    Sampled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TState {
    Running,
    /// In a group-stop (SIGSTOP, ^Z): not running, not sampled.
    Listening,
    /// Exiting: reports no more stops; its exit is still to come.
    Dying,
}

/// How often a live thread's name is read again.
pub(crate) const NAME_EVERY_NS: u64 = 1_000_000_000;

#[derive(Debug)]
pub(crate) struct Thread {
    pub(crate) pid: i32,
    pub(crate) state: TState,
    pub(crate) files: Option<ThreadFiles>,
    /// Its current record in `History::threads` (`None` before the command's exec).
    pub(crate) rec: Option<usize>,
    /// Whether it has been sampled (its name is read again then).
    pub(crate) sampled: bool,
    /// Whether its current record has a sample: a new name then starts a
    /// new record, else it replaces the record's name.
    pub(crate) rec_sampled: bool,
    /// When its name was last read, ns.
    pub(crate) name_read_ns: u64,
    /// Cumulative CPU time at its previous sample, or at its start.
    pub(crate) cpu_at_sample: u64,
    /// The latest reading of its cumulative CPU time (on-CPU mode).
    pub(crate) cpu_seen: u64,
    /// CPU time used and not yet recorded, less than a period after each
    /// sample (on-CPU mode).
    pub(crate) credit: u64,
    /// Its switch-in count when it was last seen asleep (not in state `R`):
    /// while that count and its CPU time stay the same, it has not run
    /// since, so its state need not be read again (on-CPU mode).
    pub(crate) asleep_at: Option<u64>,
    /// Whether its creation was seen at its parent (the clone or fork
    /// event), or it is the command or an exec'd thread: a task whose own
    /// first stop comes first is not yet.
    pub(crate) announced: bool,
    /// Where the CPU time it used since its last sample is put when it
    /// ends ([`Thread::final_copies`]): the best spot seen.
    pub(crate) spot: Option<(SpotKind, Spot)>,
    /// Its CPU time at its exit stop (`PTRACE_EVENT_EXIT`).
    pub(crate) exit_cpu: Option<u64>,
}

/// A thread's samples for `periods` of CPU time used are this many at most:
/// beyond, the tracer was held up for seconds, and what the thread did then
/// is not known anyway.
const MAX_REPEATS: u64 = 10_000;

impl Thread {
    /// A thread first seen at `now`, with `cpu_ns` of CPU time then: 0 for
    /// a new task (a clone or fork starts at 0), the reading at an exec.
    pub(crate) fn new(pid: i32, rec: Option<usize>, now: u64, cpu_ns: u64) -> Thread {
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
            announced: false,
            spot: None,
            exit_cpu: None,
        }
    }

    /// Takes over the CPU time `old` (the same task before its exec) used
    /// since its last sample and not yet counted, `cpu` being the task's
    /// CPU time now.
    pub(crate) fn carry_from(&mut self, old: &Thread, cpu: u64) {
        self.cpu_at_sample = old.cpu_at_sample.min(cpu);
        self.cpu_seen = old.cpu_seen.min(cpu);
        self.credit = old.credit;
        self.saw_cpu(cpu);
    }

    /// Keeps `spot` as where its last CPU time goes, unless a better kind
    /// was seen.
    pub(crate) fn saw_at(&mut self, kind: SpotKind, spot: Spot) {
        if self.spot.as_ref().is_none_or(|(k, _)| *k <= kind) {
            self.spot = Some((kind, spot));
        }
    }

    /// The samples a thread gets at its end (exit, or exec: the CPU time
    /// before it is the old program's) for its CPU time `now`: on-CPU,
    /// one per period of the CPU time used and not yet counted, rounded
    /// up, so that a thread's samples are its CPU time divided by the
    /// period, rounded up, and a thread that used less than a period still
    /// has one; every thread at every tick (`on_cpu` false), one when it
    /// used CPU time since its last sample. Either way the first carries
    /// the CPU time since its previous sample as its delta, so the deltas
    /// of a thread add up to its CPU time.
    pub(crate) fn final_copies(&mut self, now: u64, period_ns: u64, on_cpu: bool) -> u64 {
        self.saw_cpu(now);
        let n = if on_cpu { self.credit.div_ceil(period_ns) } else { u64::from(now > self.cpu_at_sample) };
        self.credit = 0;
        n.min(MAX_REPEATS)
    }

    /// Adds what a CPU time reading shows used since the previous one.
    pub(crate) fn saw_cpu(&mut self, now: u64) {
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
    pub(crate) fn should_stop(&mut self, tid: i32, period_ns: u64) -> bool {
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
    pub(crate) fn periods(&mut self, now: u64, period_ns: u64) -> u64 {
        self.saw_cpu(now);
        let n = self.credit / period_ns;
        self.credit -= n * period_ns;
        if n > MAX_REPEATS {
            self.credit = 0;
        }
        n.min(MAX_REPEATS)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::*;

    /// A thread's samples over its life, its CPU time read at each of its
    /// stops (`readings`, growing) and at its end: per period used,
    /// rounded up, whatever the stops; and their deltas add up to it.
    fn life(readings: &[u64], end: u64, period: u64, on_cpu: bool) -> (u64, u64) {
        let mut t = Thread::new(1, Some(0), 0, 0);
        let (mut samples, mut weight) = (0, 0);
        for &r in readings {
            let n = if on_cpu { t.periods(r, period) } else { 1 };
            if n > 0 {
                samples += n;
                weight += r - t.cpu_at_sample;
                t.cpu_at_sample = r;
            }
        }
        let n = t.final_copies(end, period, on_cpu);
        if n > 0 {
            samples += n;
            weight += end - t.cpu_at_sample;
        }
        (samples, weight)
    }

    #[test]
    fn a_thread_s_samples_are_its_cpu_time_rounded_up() {
        let p = 1_000_000;
        // Shorter than a period: one sample, all its CPU time.
        assert_eq!(life(&[], 300_000, p, true), (1, 300_000));
        assert_eq!(life(&[100_000, 200_000], 300_000, p, true), (1, 300_000));
        // None used: none.
        assert_eq!(life(&[], 0, p, true), (0, 0));
        // 2.5 periods, sampled at 1.2 and 2.1: 3 samples.
        assert_eq!(life(&[1_200_000, 2_100_000], 2_500_000, p, true), (3, 2_500_000));
        // Exactly 2 periods: 2.
        assert_eq!(life(&[1_000_000], 2_000_000, p, true), (2, 2_000_000));
        // Every thread at every tick: one more at its end when it ran since.
        assert_eq!(life(&[100, 200], 300, p, false), (3, 300));
        assert_eq!(life(&[100, 300], 300, p, false), (2, 300));
        // Any stops: ceil of its CPU time.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let end = seed % 20_000_000;
            let mut readings: Vec<u64> = (0..seed % 30).map(|i| (seed >> i) % (end + 1)).collect();
            readings.sort_unstable();
            assert_eq!(life(&readings, end, p, true), (end.div_ceil(p), end), "{readings:?} {end}");
        }
    }

    /// An exec goes on counting the task's CPU time from its last sample.
    #[test]
    fn an_exec_carries_the_cpu_time_not_yet_sampled() {
        let p = 1_000_000;
        let mut old = Thread::new(1, Some(0), 0, 0);
        assert_eq!(old.periods(1_300_000, p), 1);
        old.cpu_at_sample = 1_300_000;
        old.saw_cpu(1_500_000);
        let mut new = Thread::new(1, Some(1), 0, 1_500_000);
        new.carry_from(&old, 1_500_000);
        assert_eq!((new.cpu_at_sample, new.credit), (1_300_000, 500_000));
        assert_eq!(new.final_copies(1_900_000, p, true), 1);
    }

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
