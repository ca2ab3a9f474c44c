//! The Firefox walk in two halves: the query layer's walk, on the calling
//! thread, numbers each sample's thread in the order threads are first
//! sampled and times the sample ([`Stamper`]: 16 bytes a sample, 16 more
//! where it has CPU time, and a [`NewThread`] at a thread's first); a
//! second thread takes them in batches and fills the profile's threads and
//! the samples' columns ([`Columns`]). On two cores the two halves
//! overlap. The halves are the same code with no second thread (no batch
//! asked, or no thread to be had), so the columns are the same either way.
//!
//! Imports the query layer's walk and names, fxprof-processed-profile, and
//! [`super::columns`]; writes nothing.

use std::sync::{mpsc, Mutex, PoisonError};

use fxprof_processed_profile::{ProcessHandle, Profile, ThreadHandle, Timestamp};
use tbrw::Tb5File;
use tbrw_query::names;
use tbrw_query::stacks::{walk, IdMap, NodeId, Resolution, Sample, StackTree, ViewOptions, WalkInfo};

use super::columns::ThreadSamples;
use super::tag;
use crate::error::ExportError;
use tbrw_schema::Progress;

/// Samples handed from the walk's thread to the columns' at a time.
pub(super) const BATCH: usize = 4096;

/// Bind thread indexes below this are found in a vector, not a hash.
const THREAD_SLOTS: usize = 1 << 16;

/// "No slot yet" in [`Stamper`]'s vector.
const NO_SLOT: u32 = u32::MAX;

/// A thread's first sample: what its profile thread is made of.
#[derive(Clone, Copy, Debug)]
pub(super) struct NewThread {
    /// Its slot: threads numbered as first sampled.
    pub(super) slot: u32,
    /// The bind's thread and process indexes.
    pub(super) thread: u64,
    pub(super) process: u64,
    pub(super) pid: u32,
    pub(super) tid: u32,
    /// The sample's time, ns since the profile's reference.
    pub(super) nanos: u64,
}

/// A sample as the columns take it (its CPU time, where it has one, in
/// [`Batch::cpu_times`]): 16 bytes, the most of what crosses between the
/// threads.
#[derive(Clone, Copy, Debug)]
struct Stamped {
    slot: u32,
    stack: NodeId,
    nanos: u64,
}

/// Record index `index` as ms, in ns, as the profile's
/// `Timestamp::from_millis_since_reference` has it: in integers where its
/// float is exact (below 2^53 ns).
#[inline]
fn index_nanos(index: u64) -> u64 {
    match index.checked_mul(1_000_000).filter(|&ns| ns < 1 << 53) {
        Some(ns) => ns,
        None => index_nanos_as_float(index),
    }
}

/// [`index_nanos`] past 2^53 ns (never met: 9 * 10^9 records), apart so
/// that the usual case is not computed as a float too.
#[cold]
fn index_nanos_as_float(index: u64) -> u64 {
    (index as f64 * 1_000_000.0) as u64
}

/// The walk's half: slots and times.
struct Stamper {
    /// Whether the time stamps are nanoseconds.
    clock_nanos: bool,
    /// The first time stamp of a nanosecond clock: the profile's zero.
    t0: Option<u64>,
    /// Per bind thread index below [`THREAD_SLOTS`]: its slot.
    slots: Vec<u32>,
    /// The same for the others.
    slot_of: IdMap<u64, u32>,
    /// The last sample's thread index and slot: consecutive samples are
    /// mostly of one thread.
    last: Option<(u64, u32)>,
    next: u32,
}

impl Stamper {
    /// The sample's slot and time; a thread's first sample adds its
    /// [`NewThread`] to `threads`.
    #[inline]
    fn stamp(&mut self, smp: &Sample<'_>, threads: &mut Vec<NewThread>) -> Stamped {
        // Nanosecond clocks give the time; other clocks (TSC, sample
        // indices) have no known rate: the record index stands for ms.
        let nanos = match smp.time.filter(|_| self.clock_nanos) {
            Some(t) => t.saturating_sub(*self.t0.get_or_insert(t)),
            // As the profile's `Timestamp::from_millis_since_reference` has
            // it: in integers where the float is exact (below 2^53).
            None => index_nanos(smp.index),
        };
        let slot = match self.last {
            Some((k, slot)) if k == smp.thread => slot,
            _ => self.slot(smp, nanos, threads),
        };
        Stamped { slot, stack: smp.stack, nanos }
    }

    fn slot(&mut self, smp: &Sample<'_>, nanos: u64, threads: &mut Vec<NewThread>) -> u32 {
        let index = usize::try_from(smp.thread).ok().filter(|&i| i < THREAD_SLOTS);
        let known = match index {
            Some(i) => self.slots.get(i).copied().filter(|&s| s != NO_SLOT),
            None => self.slot_of.get(&smp.thread).copied(),
        };
        let slot = known.unwrap_or_else(|| {
            let slot = self.next;
            self.next += 1;
            match index {
                Some(i) => {
                    if self.slots.len() <= i {
                        self.slots.resize(i + 1, NO_SLOT);
                    }
                    self.slots[i] = slot;
                }
                None => {
                    self.slot_of.insert(smp.thread, slot);
                }
            }
            threads.push(NewThread {
                slot,
                thread: smp.thread,
                process: smp.process,
                pid: smp.pid,
                tid: smp.tid,
                nanos,
            });
            slot
        });
        self.last = Some((smp.thread, slot));
        slot
    }
}

/// The samples as the walk leaves them: per profile thread (by slot, the
/// order threads were first sampled) its samples, whose stacks are still
/// numbers of distinct (slot, node) pairs, first seen first.
#[derive(Default)]
pub(super) struct Walked {
    /// Per bind process index: the profile's process.
    pub(super) processes: IdMap<u64, ProcessHandle>,
    /// Per bind thread index: the profile's thread and its slot.
    pub(super) threads: IdMap<u64, (ThreadHandle, u32)>,
    /// Per slot: the thread and its samples.
    pub(super) slots: Vec<(ThreadHandle, ThreadSamples)>,
    /// Per pair number: the slot and the node.
    pub(super) pairs: Vec<(u32, NodeId)>,
    pair_of: IdMap<(u32, NodeId), u32>,
    /// Per node: the last slot it was seen in and that pair's number, so
    /// that a node sampled in one thread needs no hash.
    last_pair: Vec<(u32, u32)>,
    /// Per slot: the nanoseconds of CPU time not yet in a delta.
    carry: Vec<u64>,
}

impl Walked {
    /// The number of the (slot, node) pair, a new one the next.
    pub(super) fn pair(&mut self, slot: u32, node: NodeId) -> u32 {
        let n = node as usize;
        if let Some(&(s, pair)) = self.last_pair.get(n) {
            if s == slot {
                return pair;
            }
        }
        let next = self.pairs.len() as u32;
        let pair = *self.pair_of.entry((slot, node)).or_insert(next);
        if pair == next {
            self.pairs.push((slot, node));
        }
        if self.last_pair.len() <= n {
            self.last_pair.resize(n + 1, (u32::MAX, 0));
        }
        self.last_pair[n] = (slot, pair);
        pair
    }

    /// Adds the profile thread of a thread's first sample (and its
    /// process, at its first thread), in slot order.
    pub(super) fn start_thread(&mut self, p: &mut Profile, n: &NewThread) {
        let at = Timestamp::from_nanos_since_reference(n.nanos);
        let process = *self.processes.entry(n.process).or_insert_with(|| p.add_process("?", n.pid, at));
        let th = p.add_thread(process, n.tid, at, n.tid == n.pid);
        p.set_thread_name(th, &names::thread_label(n.tid, None));
        tag(p, th, n.slot);
        self.threads.insert(n.thread, (th, n.slot));
        self.slots.push((th, ThreadSamples::default()));
    }

    /// The sample's CPU time as whole µs, the rest carried to its thread's
    /// next: a thread's deltas add up to its CPU time (truncating each
    /// sample's would lose up to a microsecond per sample).
    pub(super) fn cpu_delta(&mut self, slot: u32, ns: u64) -> u64 {
        let slot = slot as usize;
        if self.carry.len() <= slot {
            self.carry.resize(slot + 1, 0);
        }
        let ns = self.carry[slot].saturating_add(ns);
        self.carry[slot] = ns % 1000;
        ns / 1000
    }
}

/// The columns' half: the profile and its threads' samples.
pub(super) struct Columns {
    pub(super) w: Walked,
    pub(super) p: Profile,
    /// The stream's records.
    pub(super) records: u64,
}

/// Samples on their way from the walk to the columns.
#[derive(Default)]
struct Batch {
    /// Threads first sampled in it, in order.
    threads: Vec<NewThread>,
    samples: Vec<Stamped>,
    /// Per sample, its CPU time, from the first sample of the batch that
    /// has one on (empty while none has: streams without CPU time cost
    /// nothing here).
    cpu_times: Vec<Option<u64>>,
    /// Records walked when its last sample was: how far the stream is.
    walked: u64,
}

impl Batch {
    fn with_capacity(n: usize) -> Batch {
        Batch { threads: Vec::new(), samples: Vec::with_capacity(n), cpu_times: Vec::new(), walked: 0 }
    }

    /// Adds a sample and its CPU time.
    #[inline]
    fn push(&mut self, stamped: Stamped, cpu_time: Option<u64>) {
        if let Some(ns) = cpu_time {
            // Samples before it without one: None.
            self.cpu_times.resize(self.samples.len(), None);
            self.cpu_times.push(Some(ns));
        }
        self.samples.push(stamped);
    }

    /// Adds its threads and samples to `columns`, and empties it.
    fn fill(&mut self, columns: &mut Columns) {
        for n in self.threads.drain(..) {
            columns.w.start_thread(&mut columns.p, &n);
        }
        let w = &mut columns.w;
        for (k, s) in self.samples.drain(..).enumerate() {
            let pair = w.pair(s.slot, s.stack);
            let cpu = self.cpu_times.get(k).copied().flatten().map(|ns| w.cpu_delta(s.slot, ns));
            let samples = &mut w.slots[s.slot as usize].1;
            samples.reserve_ahead(self.walked, columns.records);
            samples.push(pair, s.nanos, cpu);
        }
        self.cpu_times.clear();
    }
}

/// The walk ([`walk`]) with its samples put in `columns`: the walk on this
/// thread, the columns filled on another from batches of `batch` samples
/// (with no `batch`, or no thread to be had, here, sample by sample).
/// Returns the walk's facts and the profile's zero time (nanosecond clocks).
#[allow(clippy::too_many_arguments)]
pub(super) fn walk_into(
    file: &Tb5File,
    opts: &ViewOptions,
    tree: &mut StackTree,
    res: &mut Resolution<'_>,
    progress: &mut dyn Progress,
    columns: &mut Columns,
    clock_nanos: bool,
    batch: Option<usize>,
) -> Result<(WalkInfo, Option<u64>), ExportError> {
    let what = "a Firefox profile";
    let mut stamper =
        Stamper { clock_nanos, t0: None, slots: Vec::new(), slot_of: IdMap::default(), last: None, next: 0 };
    let batch_len = batch.unwrap_or(1).max(1);
    // The filler holds it for its life; this thread only without a filler.
    let columns = &Mutex::new(columns);
    let info = std::thread::scope(|scope| {
        let (to_columns, batches) = mpsc::sync_channel::<Batch>(4);
        let (spent, empties) = mpsc::channel::<Batch>();
        let filler = batch.map(|_| std::thread::Builder::new().name("firefox-columns".into()));
        let filler = filler.map(|b| {
            b.spawn_scoped(scope, move || {
                let mut columns = columns.lock().unwrap_or_else(PoisonError::into_inner);
                for mut batch in batches {
                    batch.fill(&mut columns);
                    // The walk reuses the batch; it may have ended.
                    let _ = spent.send(batch);
                }
            })
        });
        let mut batch = Batch::with_capacity(batch_len);
        let Some(Ok(filler)) = filler else {
            // No second thread: each sample's columns filled here.
            let mut columns = columns.lock().unwrap_or_else(PoisonError::into_inner);
            return walk(file, opts, what, tree, res, progress, &mut |smp| {
                let stamped = stamper.stamp(smp, &mut batch.threads);
                batch.push(stamped, smp.cpu_time);
                batch.walked = smp.index + 1;
                batch.fill(&mut columns);
                Ok(())
            });
        };
        let walked = walk(file, opts, what, tree, res, progress, &mut |smp| {
            let stamped = stamper.stamp(smp, &mut batch.threads);
            batch.push(stamped, smp.cpu_time);
            if batch.samples.len() == batch_len {
                batch.walked = smp.index + 1;
                let next = empties.try_recv().unwrap_or_else(|_| Batch::with_capacity(batch_len));
                // The filler only stops when this side does.
                let _ = to_columns.send(std::mem::replace(&mut batch, next));
            }
            Ok(())
        });
        if walked.is_ok() && !batch.samples.is_empty() {
            batch.walked = walked.as_ref().map_or(0, |i| i.records);
            let _ = to_columns.send(batch);
        }
        drop(to_columns);
        if let Err(panic) = filler.join() {
            std::panic::resume_unwind(panic);
        }
        walked
    })?;
    Ok((info, stamper.t0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_indexes_are_the_nanoseconds_the_float_gives() {
        let edge = (1u64 << 53) / 1_000_000;
        let mut indexes = vec![0, 1, 2, 999, 123_456_789, u64::MAX / 1_000_000, u64::MAX / 1_000_000 + 1, u64::MAX];
        indexes.extend((edge - 3..edge + 4).chain((1..64).map(|b| 1u64 << b)));
        for index in indexes {
            assert_eq!(index_nanos(index), (index as f64 * 1_000_000.0) as u64, "index {index}");
        }
    }
}
