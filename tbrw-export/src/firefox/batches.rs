//! The Firefox walk's samples, collected per part of the walk and merged.
//!
//! A stream without call stacks or CPU times is walked in parts
//! ([`tbrw_query::stacks::walk_in_parts`]), each on its own thread, doing
//! all of a sample's work: its thread numbered in the order the part first
//! samples it, its time ([`Stamper`]), and its (thread, frame) pair
//! numbered and put in the thread's columns ([`PartSamples`]). Any other
//! stream is walked in order ([`tbrw_query::stacks::walk`]) as one part:
//! the walk and the stamping on the calling thread, which hands samples in
//! batches to a second thread that fills the columns, so that on two cores
//! the two halves overlap; with no second thread, the same code fills
//! them sample by sample. [`merge`] then makes the profile's processes and
//! threads, part after part, numbering threads and pairs in the order the
//! records first have them: the profile is the one a walk in order makes,
//! whatever the parts.
//!
//! Imports the query layer's walks and names, fxprof-processed-profile,
//! and [`super::columns`]; writes nothing.

use std::ops::Range;
use std::sync::{mpsc, Mutex, PoisonError};

use fxprof_processed_profile::{ProcessHandle, Profile, ThreadHandle, Timestamp};
use tbrw::Tb5File;
use tbrw_query::names;
use tbrw_query::stacks::{walk, IdMap, NodeId, PartSample, Resolution, StackTree, ViewOptions, WalkInfo};

use super::columns::{Segment, ThreadSamples};
use super::tag;
use crate::error::ExportError;
use tbrw_schema::Progress;

/// Samples handed from the walk's thread to the columns' at a time.
pub(super) const BATCH: usize = 4096;

/// Bind thread indexes below this are found in a vector, not a hash.
const THREAD_SLOTS: usize = 1 << 16;

/// "No slot yet" in [`Stamper`]'s vector.
const NO_SLOT: u32 = u32::MAX;

/// A thread's first sample in a part: what its profile thread is made of.
#[derive(Clone, Copy, Debug)]
pub(super) struct NewThread {
    /// The bind's thread and process indexes.
    thread: u64,
    process: u64,
    pid: u32,
    tid: u32,
    /// The sample's time: ns, the profile's zero not yet subtracted.
    time: u64,
}

/// A sample as the columns take it (its CPU time, where it has one, in
/// [`Batch::cpu_times`]): 16 bytes, the most of what crosses between the
/// threads.
#[derive(Clone, Copy, Debug)]
struct Stamped {
    slot: u32,
    frame: u32,
    time: u64,
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

/// A part's thread slots and times.
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

/// The fields of a sample [`Stamper`] reads.
struct Sampled {
    index: u64,
    thread: u64,
    process: u64,
    pid: u32,
    tid: u32,
    time: Option<u64>,
}

impl Stamper {
    fn new(clock_nanos: bool) -> Stamper {
        Stamper { clock_nanos, t0: None, slots: Vec::new(), slot_of: IdMap::default(), last: None, next: 0 }
    }

    /// The sample's slot and time (ns, the profile's zero not yet
    /// subtracted); a thread's first sample adds its [`NewThread`] to
    /// `threads`.
    #[inline]
    fn stamp(&mut self, smp: &Sampled, threads: &mut Vec<NewThread>) -> (u32, u64) {
        // Nanosecond clocks give the time; other clocks (TSC, sample
        // indices) have no known rate: the record index stands for ms.
        let time = match smp.time.filter(|_| self.clock_nanos) {
            Some(t) => {
                self.t0.get_or_insert(t);
                t
            }
            // As the profile's `Timestamp::from_millis_since_reference` has
            // it: in integers where the float is exact (below 2^53).
            None => index_nanos(smp.index),
        };
        let slot = match self.last {
            Some((k, slot)) if k == smp.thread => slot,
            _ => self.slot(smp, time, threads),
        };
        (slot, time)
    }

    fn slot(&mut self, smp: &Sampled, time: u64, threads: &mut Vec<NewThread>) -> u32 {
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
            threads.push(NewThread { thread: smp.thread, process: smp.process, pid: smp.pid, tid: smp.tid, time });
            slot
        });
        self.last = Some((smp.thread, slot));
        slot
    }
}

/// A part's samples as its walk leaves them: per thread slot (the order
/// the part first sampled its threads) the thread's first sample and its
/// samples, whose stacks are numbers of the part's distinct (slot, frame)
/// pairs, first seen first. A frame is a node of the walk's tree, or in a
/// walk in parts the part's frame number.
#[derive(Default)]
pub(super) struct PartSamples {
    threads: Vec<(NewThread, Segment)>,
    /// Per pair number: the slot and the frame.
    pairs: Vec<(u32, u32)>,
    pair_of: IdMap<(u32, u32), u32>,
    /// Per frame: the last slot it was seen in and that pair's number, so
    /// that a frame sampled in one thread needs no hash.
    last_pair: Vec<(u32, u32)>,
    /// Per slot: the nanoseconds of CPU time not yet in a delta.
    carry: Vec<u64>,
}

impl PartSamples {
    /// The number of the (slot, frame) pair, a new one the next.
    #[inline]
    fn pair(&mut self, slot: u32, frame: u32) -> u32 {
        let n = frame as usize;
        if let Some(&(s, pair)) = self.last_pair.get(n) {
            if s == slot {
                return pair;
            }
        }
        let next = self.pairs.len() as u32;
        let pair = *self.pair_of.entry((slot, frame)).or_insert(next);
        if pair == next {
            self.pairs.push((slot, frame));
        }
        if self.last_pair.len() <= n {
            self.last_pair.resize(n + 1, (u32::MAX, 0));
        }
        self.last_pair[n] = (slot, pair);
        pair
    }

    /// The sample's CPU time as whole µs, the rest carried to its thread's
    /// next: a thread's deltas add up to its CPU time (truncating each
    /// sample's would lose up to a microsecond per sample).
    fn cpu_delta(&mut self, slot: u32, ns: u64) -> u64 {
        let slot = slot as usize;
        if self.carry.len() <= slot {
            self.carry.resize(slot + 1, 0);
        }
        let ns = self.carry[slot].saturating_add(ns);
        self.carry[slot] = ns % 1000;
        ns / 1000
    }

    /// Adds the threads first sampled.
    fn start_threads(&mut self, threads: impl Iterator<Item = NewThread>) {
        self.threads.extend(threads.map(|n| (n, Segment::default())));
    }

    /// Adds a sample, its CPU time in ns; `walked` of the part's `records`
    /// are read.
    #[inline]
    fn add(&mut self, s: Stamped, cpu_time: Option<u64>, walked: u64, records: u64) {
        let pair = self.pair(s.slot, s.frame);
        let cpu = cpu_time.map(|ns| self.cpu_delta(s.slot, ns));
        if let Some((_, segment)) = self.threads.get_mut(s.slot as usize) {
            segment.reserve_ahead(walked, records);
            segment.push(pair, s.time, cpu);
        }
    }
}

/// A part of a walk in parts: its stamper and its samples.
pub(super) struct Parted {
    stamper: Stamper,
    samples: PartSamples,
    new_threads: Vec<NewThread>,
    records: Range<u64>,
}

impl Parted {
    /// The state of the part of records `records`.
    pub(super) fn new(records: &Range<u64>, clock_nanos: bool) -> Parted {
        Parted {
            stamper: Stamper::new(clock_nanos),
            samples: PartSamples::default(),
            new_threads: Vec::new(),
            records: records.clone(),
        }
    }

    /// Adds a sample of the part.
    #[inline]
    pub(super) fn add(&mut self, s: &PartSample) {
        let sampled =
            Sampled { index: s.index, thread: s.thread, process: s.process, pid: s.pid, tid: s.tid, time: s.time };
        let (slot, time) = self.stamper.stamp(&sampled, &mut self.new_threads);
        if !self.new_threads.is_empty() {
            self.samples.start_threads(self.new_threads.drain(..));
        }
        let walked = s.index.saturating_sub(self.records.start) + 1;
        let records = self.records.end.saturating_sub(self.records.start);
        self.samples.add(Stamped { slot, frame: s.frame, time }, None, walked, records);
    }

    /// Its samples, and its nanosecond clock's first time stamp.
    pub(super) fn into_samples(self) -> (PartSamples, Option<u64>) {
        (self.samples, self.stamper.t0)
    }
}

/// The profile's processes and threads and the samples of every part,
/// merged: threads and (thread, node) pairs numbered in the order the
/// records first have them.
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
    /// Per part: its pair numbers' numbers here.
    pub(super) pair_numbers: Vec<Vec<u32>>,
}

impl Walked {
    /// The slot of a thread's first sample in a part, the profile's thread
    /// (and its process, at its first thread) added if it is new.
    fn slot(&mut self, p: &mut Profile, n: &NewThread, t0: u64) -> u32 {
        if let Some(&(_, slot)) = self.threads.get(&n.thread) {
            return slot;
        }
        let slot = self.slots.len() as u32;
        let at = Timestamp::from_nanos_since_reference(n.time.saturating_sub(t0));
        let process = *self.processes.entry(n.process).or_insert_with(|| p.add_process("?", n.pid, at));
        let th = p.add_thread(process, n.tid, at, n.tid == n.pid);
        p.set_thread_name(th, &names::thread_label(n.tid, None));
        tag(p, th, slot);
        self.threads.insert(n.thread, (th, slot));
        self.slots.push((th, ThreadSamples::default()));
        slot
    }
}

/// The parts' samples as one profile's: each part's threads and pairs, in
/// part order, as the profile's (its frames the nodes `nodes` gives, or
/// nodes already). `t0` is the profile's zero.
pub(super) fn merge(p: &mut Profile, parts: Vec<(PartSamples, Option<Vec<NodeId>>)>, t0: u64) -> Walked {
    let mut w = Walked::default();
    let mut pair_of: IdMap<(u32, NodeId), u32> = IdMap::default();
    for (q, (part, nodes)) in parts.into_iter().enumerate() {
        let slots: Vec<u32> = part
            .threads
            .into_iter()
            .map(|(n, mut segment)| {
                let slot = w.slot(p, &n, t0);
                segment.part = q as u32;
                w.slots[slot as usize].1.segments.push(segment);
                slot
            })
            .collect();
        let numbers = part
            .pairs
            .iter()
            .map(|&(slot, frame)| {
                let node = nodes.as_ref().map_or(frame, |n| n[frame as usize]);
                let pair = (slots[slot as usize], node);
                let next = w.pairs.len() as u32;
                let number = *pair_of.entry(pair).or_insert(next);
                if number == next {
                    w.pairs.push(pair);
                }
                number
            })
            .collect();
        w.pair_numbers.push(numbers);
    }
    w
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

    /// Adds its threads and samples to `part` (of a stream of `records`),
    /// and empties it.
    fn fill(&mut self, part: &mut PartSamples, records: u64) {
        part.start_threads(self.threads.drain(..));
        for (k, s) in self.samples.drain(..).enumerate() {
            part.add(s, self.cpu_times.get(k).copied().flatten(), self.walked, records);
        }
        self.cpu_times.clear();
    }
}

/// The walk in order ([`walk`]) as one part: the walk on this thread, the
/// columns filled on another from batches of `batch` samples (with no
/// `batch`, or no thread to be had, here, sample by sample). Returns the
/// walk's facts, the part's samples and the profile's zero time
/// (nanosecond clocks).
#[allow(clippy::too_many_arguments)]
pub(super) fn walk_into(
    file: &Tb5File,
    opts: &ViewOptions,
    tree: &mut StackTree,
    res: &mut Resolution<'_>,
    progress: &mut dyn Progress,
    records: u64,
    clock_nanos: bool,
    batch: Option<usize>,
) -> Result<(WalkInfo, PartSamples, Option<u64>), ExportError> {
    let what = "a Firefox profile";
    let mut stamper = Stamper::new(clock_nanos);
    let batch_len = batch.unwrap_or(1).max(1);
    let mut part = PartSamples::default();
    // The filler holds it for its life; this thread only without a filler.
    let mutex = Mutex::new(&mut part);
    let filled = &mutex;
    let stamp = |stamper: &mut Stamper, smp: &tbrw_query::stacks::Sample<'_>, batch: &mut Batch| {
        let sampled = Sampled {
            index: smp.index,
            thread: smp.thread,
            process: smp.process,
            pid: smp.pid,
            tid: smp.tid,
            time: smp.time,
        };
        let (slot, time) = stamper.stamp(&sampled, &mut batch.threads);
        batch.push(Stamped { slot, frame: smp.stack, time }, smp.cpu_time);
    };
    let info = std::thread::scope(|scope| {
        let (to_columns, batches) = mpsc::sync_channel::<Batch>(4);
        let (spent, empties) = mpsc::channel::<Batch>();
        let filler = batch.map(|_| std::thread::Builder::new().name("firefox-columns".into()));
        let filler = filler.map(|b| {
            b.spawn_scoped(scope, move || {
                let mut part = filled.lock().unwrap_or_else(PoisonError::into_inner);
                for mut batch in batches {
                    batch.fill(&mut part, records);
                    // The walk reuses the batch; it may have ended.
                    let _ = spent.send(batch);
                }
            })
        });
        let mut batch = Batch::with_capacity(batch_len);
        let Some(Ok(filler)) = filler else {
            // No second thread: each sample's columns filled here.
            let mut part = filled.lock().unwrap_or_else(PoisonError::into_inner);
            return walk(file, opts, what, tree, res, progress, &mut |smp| {
                stamp(&mut stamper, smp, &mut batch);
                batch.walked = smp.index + 1;
                batch.fill(&mut part, records);
                Ok(())
            });
        };
        let walked = walk(file, opts, what, tree, res, progress, &mut |smp| {
            stamp(&mut stamper, smp, &mut batch);
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
    });
    Ok((info?, part, stamper.t0))
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
