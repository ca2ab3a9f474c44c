//! The samples tables of a Firefox profile, kept outside
//! `fxprof-processed-profile`'s `Profile` and written into its JSON.
//!
//! `fxprof-processed-profile` keeps 36 bytes per sample (its time, its stack index as an
//! `Option<usize>`, a CPU delta and a weight) and writes them through serde
//! one value at a time: on millions of samples, half the export's memory
//! and much of its time. Here a profile thread's samples are columns of
//! what the stream has ([`Segment`]): the stack's number (4 bytes), the
//! time as the step from the thread's sample before (4; 12 where a step is
//! 4.3 s or more, or back in time), and the CPU delta (8) only where the
//! stream has CPU time. A
//! thread's samples are one segment per part of the walk that met the
//! thread, in record order ([`ThreadSamples`]); a segment's stack numbers
//! are its part's, which [`SampleTables::stack_of`] turns into the
//! thread's stack indexes as the table is written.
//!
//! A table is written ([`SampleTables::write_table`], called by
//! [`super::formatter`] in place of the library's samples table) as the
//! library writes its table (its keys, in its order; samples out of time
//! order sorted as it sorts them) but for three things, each the same
//! profile to the profiler: `weight` is `null` (every sample weighs 1;
//! `null` is what the profiler's upgraders give a table without weights),
//! a whole number of ms is written without `.0` (the same JSON number),
//! and there is no `threadCPUDelta` column where the stream has no CPU
//! time (the profiler reads a delta of 0 as an idle thread, where a
//! missing column means "running", its activity graph then at 100 %). The
//! numbers are written by [`super::text`].
//!
//! Holds no TB5 knowledge; imports `super::text`.

use std::io::{self, Write};

use super::text::{DeltaTexts, Text, NO_STACK};

/// A step in [`Segment::steps`] that is none: the time is the next of
/// [`Segment::far`].
const FAR: u32 = u32::MAX;

/// A part of the walk's samples of one profile thread, in record order.
#[derive(Debug, Default, Clone)]
pub(super) struct Segment {
    /// The part of the walk (its table in [`SampleTables::stack_of`]).
    pub(super) part: u32,
    /// Per sample, its stack's number in its part.
    pub(super) stacks: Vec<u32>,
    /// Per sample, its time (ns, [`SampleTables::t0`] not yet subtracted)
    /// as the step from the sample before's (the first's from 0), 4 bytes
    /// where the time is ahead by less than [`FAR`] ns (4.3 s); else
    /// [`FAR`] and the time in `far`.
    steps: Vec<u32>,
    /// The times no step reaches, in order.
    far: Vec<u64>,
    /// The last time added.
    last: u64,
    /// Per sample, the CPU time its thread used since its previous sample,
    /// whole µs. Empty until a sample has one; samples past its end have 0.
    pub(super) cpu_deltas: Vec<u64>,
}

impl Segment {
    /// Room for the samples this thread will likely have, when its columns
    /// are full: its share of the records walked so far (`walked` of
    /// `records`) carried to the end, so that a thread sampled at a steady
    /// rate is moved once or twice instead of at every doubling. The
    /// threads' shares add up to the records: together they reserve no
    /// more than the stream's record count beyond what they hold.
    pub(super) fn reserve_ahead(&mut self, walked: u64, records: u64) {
        if self.stacks.len() < self.stacks.capacity() {
            return;
        }
        let len = self.stacks.len() as u64;
        let projected = u128::from(len + 1) * u128::from(records) / u128::from(walked.max(1));
        let more = usize::try_from(projected.saturating_sub(u128::from(len))).unwrap_or(0);
        // At least what a doubling gives: a thread early in a burst.
        let more = more.max(self.stacks.len()).max(16);
        self.stacks.reserve_exact(more);
        self.steps.reserve_exact(more);
    }

    /// Adds a sample; `cpu_delta` in µs, when the sample has CPU time.
    #[inline]
    pub(super) fn push(&mut self, stack: u32, time: u64, cpu_delta: Option<u64>) {
        if let Some(d) = cpu_delta {
            // Samples before the first with CPU time have a delta of 0.
            self.cpu_deltas.resize(self.stacks.len(), 0);
            self.cpu_deltas.push(d);
        }
        self.stacks.push(stack);
        match time.checked_sub(self.last).and_then(|d| u32::try_from(d).ok()).filter(|&d| d != FAR) {
            Some(step) => self.steps.push(step),
            None => {
                self.steps.push(FAR);
                self.far.push(time);
            }
        }
        self.last = time;
    }

    /// Its samples' times, in order.
    pub(super) fn times(&self) -> impl Iterator<Item = u64> + '_ {
        let mut far = self.far.iter();
        let mut time = 0u64;
        self.steps.iter().map(move |&step| {
            time = match step {
                FAR => far.next().copied().unwrap_or(0),
                step => time + u64::from(step),
            };
            time
        })
    }
}

/// One profile thread's samples: its segments, in record order.
#[derive(Debug, Default, Clone)]
pub(super) struct ThreadSamples {
    pub(super) segments: Vec<Segment>,
}

impl ThreadSamples {
    /// Its samples.
    pub(super) fn len(&self) -> usize {
        self.segments.iter().map(|s| s.stacks.len()).sum()
    }
}

/// Every profile thread's samples, and what their numbers stand for.
#[derive(Debug, Default)]
pub(super) struct SampleTables {
    /// Per thread slot, its samples.
    pub(super) threads: Vec<ThreadSamples>,
    /// Per part of the walk, by a stack number its segments hold: the
    /// stack's index in the thread's stack table ([`NO_STACK`]: none).
    pub(super) stack_of: Vec<Vec<u32>>,
    /// Subtracted from every time (saturating): a nanosecond clock's first
    /// time stamp, the profile's zero.
    pub(super) t0: u64,
    /// Per thread slot, its `timeDeltas` values as text when made ahead
    /// ([`render_deltas`]; the table writes it as it is).
    pub(super) deltas: Vec<Option<Vec<u8>>>,
}

/// Whether a thread's samples are in time order (the profile's zero
/// subtracted): the library writes such a table as its samples were added.
fn in_time_order(thread: &ThreadSamples, t0: u64) -> bool {
    let mut previous = 0u64;
    thread.segments.iter().flat_map(Segment::times).all(|t| {
        let t = t.saturating_sub(t0);
        t >= std::mem::replace(&mut previous, t)
    })
}

/// The time deltas of a thread whose samples are in time order, as the
/// table's `timeDeltas` values.
fn write_deltas(thread: &ThreadSamples, t0: u64, out: &mut Text<'_>) -> io::Result<()> {
    let (mut texts, mut previous) = (DeltaTexts::new(), 0u64);
    for s in &thread.segments {
        for t in s.times() {
            let t = t.saturating_sub(t0);
            out.room()?;
            texts.write(out, t.wrapping_sub(std::mem::replace(&mut previous, t)));
        }
    }
    out.end_column(thread.len() > 0);
    Ok(())
}

/// The `timeDeltas` values of each thread whose samples are in time order
/// (`t0` the profile's zero), made ahead of the JSON (on a thread of
/// their own while the frames are named): what
/// [`SampleTables::write_table`] would write, as text.
pub(super) fn render_deltas(threads: &[ThreadSamples], t0: u64) -> Vec<Option<Vec<u8>>> {
    threads
        .iter()
        .map(|thread| {
            if !in_time_order(thread, t0) {
                return None;
            }
            let mut text = Vec::with_capacity(thread.len() * 4);
            let mut out = Text::new(&mut text);
            // Writing to a Vec does not fail.
            write_deltas(thread, t0, &mut out).and_then(|()| out.flush()).ok()?;
            Some(text)
        })
        .collect()
}

impl SampleTables {
    /// Empty tables for `slots` threads (a profile of markers).
    pub(super) fn empty(slots: usize) -> SampleTables {
        SampleTables { threads: vec![ThreadSamples::default(); slots], ..SampleTables::default() }
    }

    /// The stack index of number `n` of part `part`.
    #[inline]
    fn stack(&self, part: u32, n: u32) -> u32 {
        self.stack_of.get(part as usize).and_then(|t| t.get(n as usize)).copied().unwrap_or(NO_STACK)
    }

    /// Writes thread `slot`'s table as `fxprof-processed-profile` 0.8
    /// writes its `SampleTable`, but for the weights (all 1: `null`) and
    /// with the `threadCPUDelta` column only when `cpu_deltas`. Samples out
    /// of time order are written in time order, sorted as the crate sorts
    /// them.
    pub(super) fn write_table(&self, slot: usize, w: &mut dyn Write, cpu_deltas: bool) -> io::Result<()> {
        let Some(thread) = self.threads.get(slot) else { return Ok(()) };
        let t0 = self.t0;
        let n = thread.len();
        let mut out = Text::new(w);
        out.raw(format!("{{\"length\":{n},\"weightType\":\"samples\",\"stack\":[").as_bytes())?;
        // The crate's order: as added while their times do not decrease.
        let rendered = self.deltas.get(slot).and_then(Option::as_ref);
        if rendered.is_none() && !in_time_order(thread, t0) {
            return self.write_sorted(thread, out, cpu_deltas);
        }
        for s in &thread.segments {
            let table = self.stack_of.get(s.part as usize).map_or(&[][..], Vec::as_slice);
            for &number in &s.stacks {
                out.room()?;
                out.stack(table.get(number as usize).copied().unwrap_or(NO_STACK));
            }
        }
        out.end_column(n > 0);
        out.raw(b"],\"timeDeltas\":[")?;
        match rendered {
            Some(text) => out.raw(text)?,
            None => write_deltas(thread, t0, &mut out)?,
        }
        out.raw(b"]")?;
        out.weights_and_deltas(cpu_deltas, thread.segments.iter().map(|s| (s.stacks.len(), &s.cpu_deltas[..])))?;
        out.flush()
    }

    /// [`SampleTables::write_table`]'s columns of a thread whose samples
    /// are out of time order: sorted by time as the crate sorts them.
    fn write_sorted(&self, thread: &ThreadSamples, mut out: Text<'_>, cpu_deltas: bool) -> io::Result<()> {
        let mut stacks = Vec::new();
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        for s in &thread.segments {
            stacks.extend(s.stacks.iter().map(|&n| self.stack(s.part, n)));
            times.extend(s.times().map(|t| t.saturating_sub(self.t0)));
            cpu.extend((0..s.stacks.len()).map(|k| s.cpu_deltas.get(k).copied().unwrap_or(0)));
        }
        let mut order: Vec<usize> = (0..times.len()).collect();
        order.sort_unstable_by_key(|&i| times[i]);
        for &k in &order {
            out.room()?;
            out.stack(stacks[k]);
        }
        out.end_column(!order.is_empty());
        out.raw(b"],\"timeDeltas\":[")?;
        let (mut texts, mut previous) = (DeltaTexts::new(), 0u64);
        for &k in &order {
            out.room()?;
            texts.write(&mut out, times[k].wrapping_sub(std::mem::replace(&mut previous, times[k])));
        }
        out.end_column(!order.is_empty());
        out.raw(b"]")?;
        let sorted: Vec<u64> = order.iter().map(|&k| cpu[k]).collect();
        out.weights_and_deltas(cpu_deltas, std::iter::once((sorted.len(), &sorted[..])))?;
        out.flush()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use fxprof_processed_profile::{
        CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, Profile, ReferenceTimestamp, SamplingInterval,
        Timestamp,
    };

    /// A small deterministic generator (xorshift64*).
    pub(in crate::firefox) struct Rng(pub(in crate::firefox) u64);

    impl Rng {
        pub(in crate::firefox) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Two profiles of the same threads and stacks: `reference` with its
    /// samples in the crate's tables, `ours` with the same samples as
    /// columns, whatever their order in time.
    fn profiles(rng: &mut Rng, cpu: bool) -> (Profile, super::super::FirefoxProfile) {
        let new = || {
            Profile::new("t", ReferenceTimestamp::from_millis_since_unix_epoch(0.0), SamplingInterval::from_millis(1))
        };
        let (mut reference, mut ours) = (new(), new());
        let mut columns = Vec::new();
        let at = Timestamp::from_millis_since_reference(0.0);
        let processes = [reference.add_process("p", 7, at), ours.add_process("p", 7, at)];
        // Slot 0 is not its process's main thread, slot 1 is: the crate
        // writes slot 1 first.
        for (slot, tid) in [(0u32, 8u32), (1, 7)] {
            let mut threads = Vec::new();
            for (p, process) in [(&mut reference, processes[0]), (&mut ours, processes[1])] {
                let th = p.add_thread(process, tid, at, tid == 7);
                let mut stacks = Vec::new();
                for f in ["a", "b", "c"] {
                    let name = p.intern_string(f);
                    let info = FrameInfo {
                        frame: Frame::Label(name),
                        category_pair: CategoryHandle::OTHER.into(),
                        flags: FrameFlags::empty(),
                    };
                    let frame = p.intern_frame(th, info);
                    let parent = stacks.last().copied();
                    stacks.push(p.intern_stack(th, parent, frame));
                }
                threads.push((th, stacks));
            }
            let (th, stacks) = threads.remove(0);
            super::super::tag(&mut ours, threads[0].0, slot);
            let mut samples = Segment::default();
            // Times mostly rising with repeated steps, sometimes back.
            let mut t = 0u64;
            for k in 0..200 {
                t = match rng.next() % 10 {
                    0 => t.saturating_sub(rng.next() % 3_000_000),
                    1..=4 => t + 1_000_000,
                    _ => t + rng.next() % 2_000_000,
                };
                let stack = (rng.next() % 4) as usize;
                let delta = (!rng.next().is_multiple_of(5)).then(|| rng.next() % 2000);
                let handle = stacks.get(stack).copied();
                let fx_delta = CpuDelta::from_micros(delta.unwrap_or(0));
                reference.add_sample(th, Timestamp::from_nanos_since_reference(t), handle, fx_delta, 1);
                let index = if stack < 3 { stack as u32 } else { NO_STACK };
                samples.push(index, t, delta.filter(|_| cpu || k % 2 == 0));
            }
            columns.push(ThreadSamples { segments: vec![samples] });
        }
        // Part 0's numbers are the stack indexes.
        let tables = SampleTables { threads: columns, stack_of: vec![vec![0, 1, 2]], t0: 0, deltas: Vec::new() };
        (reference, super::super::FirefoxProfile { profile: ours, samples: tables })
    }

    #[test]
    fn the_columns_are_the_crates_samples_tables_without_weights() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for cpu in [true, false] {
            let (reference, ours) = profiles(&mut rng, cpu);
            let summary = super::super::FirefoxSummary { cpu_deltas: cpu, ..Default::default() };
            let mut text = Vec::new();
            super::super::json(&ours, &summary, &mut text).unwrap();
            let mut got: serde_json::Value = serde_json::from_slice(&text).unwrap();
            let mut want = serde_json::to_value(&reference).unwrap();
            // Whole ms are written without `.0`: the same numbers.
            for v in [&mut got, &mut want] {
                for t in v["threads"].as_array_mut().unwrap() {
                    let deltas = t["samples"]["timeDeltas"].as_array().unwrap();
                    let ms: Vec<f64> = deltas.iter().map(|d| d.as_f64().unwrap()).collect();
                    t["samples"]["timeDeltas"] = serde_json::json!(ms);
                }
            }
            for t in want["threads"].as_array_mut().unwrap() {
                let samples = t["samples"].as_object_mut().unwrap();
                assert!(samples["weight"].as_array().unwrap().iter().all(|w| w == 1));
                samples.insert("weight".into(), serde_json::Value::Null);
                if !cpu {
                    samples.remove("threadCPUDelta");
                }
            }
            assert_eq!(got, want, "cpu deltas: {cpu}");
            assert_eq!(got["threads"][0]["tid"], "7", "the crate's order");
            // The text is serde_json's compact text of the same value,
            // key order kept: the crate's keys in its order.
            let samples = &text[text.windows(10).position(|w| w == b"\"samples\":").unwrap()..];
            assert!(samples.starts_with(b"\"samples\":{\"length\":200,\"weightType\":\"samples\",\"stack\":["));
        }
    }
}
