//! The walk of a stream without call stacks in parts, sample by sample:
//! for outputs that keep every sample in record order (the Firefox
//! Profiler's timeline), where [`super::walk`] would hand each out on one
//! thread. Each part (on the bind's threads, as the reports count) reads a
//! contiguous range of records and numbers the frames its samples have,
//! first met first, without the walk's tree: an address in a module whose
//! addresses all name alike is the module's one frame, found by the
//! module; any other is found by a hash of the part's own. The parts'
//! frames then become the tree's roots, part after part, so that the tree
//! is the one [`super::walk`] makes (its nodes numbered in the order the
//! records first have them), and each part's caller state learns its
//! frames' nodes ([`Part::nodes`]).
//!
//! Only for streams with neither call stacks nor CPU times (a thread's
//! cumulative CPU time is differenced over its samples in record order).
//!
//! Imports `mod.rs`'s types, `flat` (which modules are collapsed),
//! `names` (the resolution), `tree` and `walk`.

use std::ops::Range;
use tbrw_schema::Progress;

use tbrw::Tb5File;

use super::flat::collapsed_per_module;
use super::names::Resolution;
use super::{
    chain_stream, open_walk, Frame, IdMap, NodeId, SeenThreads, StackTree, TableStacks, ViewOptions, WalkInfo,
};
use crate::error::QueryError;
use crate::stream::SampleFields;
use crate::walk::{in_parts, parts_for, ProcessName, ThreadName};

/// A sample as [`walk_in_parts`] hands it to its part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSample {
    /// The record's index in the stream.
    pub index: u64,
    /// The bind's process index.
    pub process: u64,
    /// The bind's thread index.
    pub thread: u64,
    /// The OS pid (0 when the bind has none).
    pub pid: u32,
    /// The OS tid (0 when the bind has none).
    pub tid: u32,
    /// The time stamp, when the records have one.
    pub time: Option<u64>,
    /// Its frame (as the walk's [`Resolution`] keeps it): the frame's
    /// number among those its part met, first met first; its node is
    /// [`Part::nodes`]`[frame]`.
    pub frame: u32,
}

/// A part of [`walk_in_parts`]: its records, what the caller made of its
/// samples, and its frames' nodes.
#[derive(Debug)]
pub struct Part<S> {
    /// The records it read.
    pub records: Range<u64>,
    /// The caller's state, after each of the part's samples.
    pub state: S,
    /// Per frame number of the part's samples, the frame's node (a root)
    /// in the walk's tree.
    pub nodes: Vec<NodeId>,
}

/// What [`walk_in_parts`] gives: the walk's facts and its parts, in
/// record order.
#[derive(Debug)]
pub struct PartsWalk<S> {
    /// The walk's facts, as [`super::walk`] gives them.
    pub info: WalkInfo,
    /// The parts, in record order.
    pub parts: Vec<Part<S>>,
}

/// What a part found besides the caller's state.
struct Found<S> {
    records: Range<u64>,
    state: S,
    /// Its frames, by number.
    frames: Vec<Frame>,
    processes: IdMap<u64, ProcessName>,
    threads: IdMap<u64, ThreadName>,
    samples: u64,
    time_range: Option<(u64, u64)>,
}

/// "No frame yet" in a part's frame per module.
const NO_FRAME: u32 = u32::MAX;

/// Walks the samples of `opts.query` that pass its filters in `parts`
/// contiguous parts of the records (`None`: one per bind thread, as the
/// reports count), each on its own thread: `new_part` makes a part's state
/// from its records, and `each` gets the part's samples in record order.
/// Frames are kept as `res` says, and become roots of `tree`. Returns the
/// walk's facts and the parts in record order; `None` where the stream has
/// call stacks or CPU times (walk it with [`super::walk`]). Errors as
/// [`super::walk`]: the first in record order.
#[allow(clippy::too_many_arguments)]
pub fn walk_in_parts<S: Send>(
    file: &Tb5File,
    opts: &ViewOptions,
    what: &str,
    tree: &mut StackTree,
    res: &mut Resolution<'_>,
    parts: Option<usize>,
    progress: &mut dyn Progress,
    new_part: impl Fn(&Range<u64>) -> S + Sync,
    each: impl Fn(&mut S, &PartSample) + Sync,
) -> Result<Option<PartsWalk<S>>, QueryError> {
    let n = opts.query.stream;
    // Decided before the walk binds the stream: the walk in order would
    // bind it again.
    if SampleFields::of(file, n)?.has_cputime()
        || TableStacks::of(file, n)?.is_some()
        || chain_stream(file, n)?.is_some()
    {
        return Ok(None);
    }
    let w = open_walk(file, opts, what)?;
    let fields = w.fields();
    let span = w.span();
    if span.end - span.start >= u64::from(NO_FRAME) {
        return Ok(None);
    }
    let modules = w.modules().len();
    // Per module record (and, last, no module): the address of its one
    // frame, where its addresses all are that frame.
    let one = collapsed_per_module(&w, res);
    let part = |records: Range<u64>, progress: &mut dyn Progress| -> Result<Vec<Found<S>>, QueryError> {
        let mut found = Found {
            records: records.clone(),
            state: new_part(&records),
            frames: Vec::new(),
            processes: IdMap::default(),
            threads: IdMap::default(),
            samples: 0,
            time_range: None,
        };
        let mut module_frame = vec![NO_FRAME; one.len()];
        let mut frame_of: IdMap<Frame, u32> = IdMap::default();
        let mut seen = SeenThreads::of(&w);
        let passed = w.pass(records, progress, |s| {
            let slot = s.module.map_or(modules, |m| usize::try_from(m).unwrap_or(modules).min(modules));
            let frames = &mut found.frames;
            let frame = match one.get(slot).copied().flatten() {
                Some(pc) => match module_frame[slot] {
                    NO_FRAME => {
                        let number = frames.len() as u32;
                        frames.push(Frame { module: s.module, pc });
                        module_frame[slot] = number;
                        number
                    }
                    number => number,
                },
                None => {
                    let f = Frame { module: s.module, pc: fields.pc(s.record) };
                    *frame_of.entry(f).or_insert_with(|| {
                        frames.push(f);
                        frames.len() as u32 - 1
                    })
                }
            };
            let (process, thread) = (s.process.unwrap_or(0), s.thread.unwrap_or(0));
            let (pid, tid) = seen.pid_tid(&w, &mut found.processes, &mut found.threads, process, thread);
            let time = fields.time_stamp(s.record);
            if let Some(t) = time {
                found.time_range = Some(found.time_range.map_or((t, t), |(a, z)| (a.min(t), z.max(t))));
            }
            let sample = PartSample { index: s.index, process, thread, pid, tid, time, frame };
            each(&mut found.state, &sample);
        })?;
        found.samples = passed;
        Ok(vec![found])
    };
    let parts = parts.unwrap_or_else(|| parts_for(span.end - span.start));
    let found = in_parts(span, parts, progress, part, |all, later| match (all, later) {
        (Ok(mut all), Ok(later)) => {
            all.extend(later);
            Ok(all)
        }
        // The first error in record order.
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    })?;
    let mut info = WalkInfo {
        records: w.records(),
        modules: w.modules().to_vec(),
        chains: None,
        time: fields.time_field.clone(),
        has_period: fields.has_period(),
        has_cputime: false,
        ..WalkInfo::default()
    };
    let mut out = Vec::with_capacity(found.len());
    for f in found {
        info.samples += f.samples;
        info.processes.extend(f.processes);
        info.threads.extend(f.threads);
        if let Some((a, z)) = f.time_range {
            info.time_range = Some(info.time_range.map_or((a, z), |(x, y)| (x.min(a), y.max(z))));
        }
        // As `Resolution::push` makes an outermost frame's node.
        let nodes = f.frames.iter().map(|&frame| tree.push(None, frame)).collect::<Result<Vec<_>, _>>()?;
        out.push(Part { records: f.records, state: f.state, nodes });
    }
    if info.samples == 0 {
        return Err(w.nothing_matches());
    }
    Ok(Some(PartsWalk { info, parts: out }))
}
