//! The record layout of an MTMC task stream (one record per task): the
//! task as the log gives it ([`Task`]), its descriptor and record size for
//! a [`Shape`], the one encoder (the import's) and the one decoder (the
//! task report's, the exports'), and how a stream is recognised as one
//! ([`counters_of`]). Reading the log is the importer's (`tbrw-import`'s
//! `mtmc`). Imports `fields` and `descriptor`.

use tbrw::*;

use crate::descriptor::field;
use crate::fields::{self, read_le};

/// Which layout a line has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The documented one (v0.1): twelve sections, a trailing comma; `[7]`
    /// holds the topdown readings when topdown is on, else is empty.
    V01,
    /// The profiler since 2023: `[7]` always six zeros, `[9]`/`[11]` every
    /// reading, then an integer prefix, the user prefix, the configuration
    /// index and `_`-separated constants, no trailing comma.
    V2023,
}

/// What only the 2023 layout has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra {
    /// `[12]`: the integer prefix (signed).
    pub int_prefix: i64,
    /// `[13]`: the user prefix string (the task's name; may be empty).
    pub prefix: String,
    /// `[14]`: the configuration (multiplexing group) index.
    pub config: i64,
    /// `[15]`: the constants the configuration asked for (TSC frequency in
    /// Hz, duration in ms, ...; -1 for one the profiler did not know).
    pub constants: Vec<f64>,
}

/// One task of the log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Task {
    /// `[0]` kernel thread id.
    pub tid: u32,
    /// `[1]` pthread id (32-bit).
    pub pthread: u32,
    /// `[2]` start, ns CLOCK_REALTIME.
    pub start: u64,
    /// `[3]` end, ns CLOCK_REALTIME; 0 for a task that never ended.
    pub end: u64,
    /// `[4]` parent's kernel thread id (0: no parent recorded).
    pub parent_tid: u32,
    /// `[5]` parent's pthread id.
    pub parent_pthread: u32,
    /// `[6]` when the task was scheduled, ns CLOCK_REALTIME.
    pub scheduled: u64,
    /// `[7.0]`-`[7.5]`: slots, PERF_METRICS, INT_MISC.UOP_DROPPING at begin,
    /// then the same at end (raw 48-bit values, reset at each task start).
    /// `None` when topdown was off (`[7]` empty) or the line has six zeros.
    pub topdown: Option<[u64; 6]>,
    /// `[8.0]`-`[8.2]`: number of events read (topdown ones included), CPU
    /// number and NUMA node (RDTSCP's TSC_AUX >> 12) at begin.
    pub begin_info: [u64; 3],
    /// `[9.*]`: counter readings at begin (sign-extended, never reset).
    pub begin: Vec<u64>,
    /// `[10.0]`-`[10.2]`: as `[8]`, at end.
    pub end_info: [u64; 3],
    /// `[11.*]`: counter readings at end.
    pub end_counters: Vec<u64>,
    /// The 2023 layout's sections `[12]`-`[15]`.
    pub extra: Option<Extra>,
}

impl Task {
    /// The layout the task's line had.
    pub fn layout(&self) -> Layout {
        if self.extra.is_some() {
            Layout::V2023
        } else {
            Layout::V01
        }
    }

    /// The readings the number-of-events field `[8.0]` should announce:
    /// it counts the three topdown events too when the v0.1 layout carries them.
    pub fn announced_readings(&self) -> u64 {
        let topdown = if self.layout() == Layout::V01 && self.topdown.is_some() { 3 } else { 0 };
        self.begin.len() as u64 + topdown
    }
}

/// How many counters and constants each record of a stream holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Counter readings at each end.
    pub counters: usize,
    /// Constants (2023 layout).
    pub constants: usize,
}

/// Record flag: the line had topdown readings in section `[7]`.
pub const FLAG_TOPDOWN: u64 = 1;
/// Record flag: the line had the 2023 layout (integer prefix, name,
/// configuration index and constants are meaningful).
pub const FLAG_2023: u64 = 2;
/// The event id of the first task name; counters are events 0..n.
pub const NAME_BASE: u32 = 0x1_0000;
/// The name of tasks whose line gives none (v0.1, or an empty user prefix).
pub const UNNAMED: &str = "mtmc_task";

/// The record layout of an MTMC stream.
pub fn descriptor(shape: Shape) -> Vec<DescEntry> {
    let ns = desc_subtype::TS_NANOSECONDS;
    let mut v = vec![
        field(desc_type::PID, 0, 4, "pid"),
        field(desc_type::TID, 0, 4, "tid"),
        field(fields::PTHREAD, 0, 4, "pthread_id"),
        field(fields::PARENT_TID, 0, 4, "parent_tid"),
        field(fields::PARENT_PTHREAD, 0, 4, "parent_pthread_id"),
        field(fields::EVENT_ID, 0, 4, "name_event_id"),
        field(fields::MTMC_FLAGS, 0, 8, "mtmc_flags"),
        field(desc_type::TIME_STAMP, ns, 8, "start_realtime_ns"),
        field(desc_type::TIME_STAMP, ns, 8, "end_realtime_ns"),
        field(desc_type::TIME_STAMP, ns, 8, "scheduled_realtime_ns"),
        field(desc_type::PROCESSOR_NUMBER, 0, 8, "cpu_begin"),
        field(fields::NUMA_NODE_BEGIN, 0, 8, "numa_node_begin"),
        field(fields::EVENTS_BEGIN, 0, 8, "events_begin"),
        field(desc_type::PROCESSOR_NUMBER, 0, 8, "cpu_end"),
        field(fields::NUMA_NODE_END, 0, 8, "numa_node_end"),
        field(fields::EVENTS_END, 0, 8, "events_end"),
        field(fields::TOPDOWN_SLOTS_BEGIN, 0, 8, "topdown_slots_begin"),
        field(fields::TOPDOWN_METRICS_BEGIN, 0, 8, "topdown_metrics_begin"),
        field(fields::TOPDOWN_UOP_DROP_BEGIN, 0, 8, "topdown_uop_drop_begin"),
        field(fields::TOPDOWN_SLOTS_END, 0, 8, "topdown_slots_end"),
        field(fields::TOPDOWN_METRICS_END, 0, 8, "topdown_metrics_end"),
        field(fields::TOPDOWN_UOP_DROP_END, 0, 8, "topdown_uop_drop_end"),
        field(fields::INT_PREFIX, 0, 8, "int_prefix"),
        field(fields::CONFIG_INDEX, 0, 8, "config_index"),
    ];
    for i in 0..shape.constants {
        v.push(field(fields::CONSTANT + i as u16, 0, 8, format!("constant{i}")));
    }
    for i in 0..shape.counters {
        v.push(field(fields::COUNTER_BEGIN + i as u16, 0, 8, format!("counter{i}_begin")));
    }
    for i in 0..shape.counters {
        v.push(field(fields::COUNTER_END + i as u16, 0, 8, format!("counter{i}_end")));
    }
    v
}

/// Entries of the descriptor before the constants.
const FIXED_ENTRIES: usize = 24;
/// Bytes of the record before the constants.
const FIXED_BYTES: usize = 6 * 4 + 18 * 8;

/// Bytes per record.
pub fn record_size(shape: Shape) -> usize {
    FIXED_BYTES + 8 * shape.constants + 16 * shape.counters
}

/// One record read back: the task (its `extra.prefix` left empty: the
/// name is the record's event), the process id and the name's event id.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The task.
    pub task: Task,
    /// The process id of the record.
    pub pid: u32,
    /// The event id naming the task.
    pub event: u32,
}

/// Appends the record of task `t` of process `pid`, named by event
/// `event`, to `out`.
pub fn encode(t: &Task, pid: u32, event: u32, out: &mut Vec<u8>) {
    let mut flags = 0;
    if t.topdown.is_some() {
        flags |= FLAG_TOPDOWN;
    }
    if t.extra.is_some() {
        flags |= FLAG_2023;
    }
    for v in [pid, t.tid, t.pthread, t.parent_tid, t.parent_pthread, event] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let ex = t.extra.as_ref();
    let fixed = [flags, t.start, t.end, t.scheduled]
        .into_iter()
        .chain([t.begin_info[1], t.begin_info[2], t.begin_info[0], t.end_info[1], t.end_info[2], t.end_info[0]])
        .chain(t.topdown.unwrap_or_default())
        .chain([ex.map_or(0, |e| e.int_prefix as u64), ex.map_or(0, |e| e.config as u64)])
        .chain(ex.map(|e| e.constants.iter().map(|c| c.to_bits()).collect::<Vec<_>>()).unwrap_or_default())
        .chain(t.begin.iter().copied())
        .chain(t.end_counters.iter().copied());
    for v in fixed {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Decodes a record of a stream of this shape.
pub fn decode(r: &[u8], shape: Shape) -> Decoded {
    let u32_at = |o: usize| read_le(r, o, 4) as u32;
    let at = |k: usize| read_le(r, 24 + 8 * k, 8);
    let flags = at(0);
    let n = shape.counters;
    let c = shape.constants;
    let task = Task {
        tid: u32_at(4),
        pthread: u32_at(8),
        start: at(1),
        end: at(2),
        parent_tid: u32_at(12),
        parent_pthread: u32_at(16),
        scheduled: at(3),
        topdown: (flags & FLAG_TOPDOWN != 0).then(|| [at(10), at(11), at(12), at(13), at(14), at(15)]),
        begin_info: [at(6), at(4), at(5)],
        end_info: [at(9), at(7), at(8)],
        extra: (flags & FLAG_2023 != 0).then(|| Extra {
            int_prefix: at(16) as i64,
            prefix: String::new(),
            config: at(17) as i64,
            constants: (0..c).map(|i| f64::from_bits(at(18 + i))).collect(),
        }),
        begin: (0..n).map(|i| at(18 + c + i)).collect(),
        end_counters: (0..n).map(|i| at(18 + c + n + i)).collect(),
    };
    Decoded { task, pid: u32_at(0), event: u32_at(20) }
}

/// The shape of an MTMC stream, or `None` when the descriptor is not one.
pub fn counters_of(descs: &[DescEntry<StringId>], file: &Tb5File) -> Option<Shape> {
    if descs.len() < FIXED_ENTRIES {
        return None;
    }
    let constants = descs.iter().filter(|d| fields::constant(d.desc_type).is_some()).count();
    let counters = descs.iter().filter(|d| fields::counter_begin(d.desc_type).is_some()).count();
    let shape = Shape { counters, constants };
    let want = descriptor(shape);
    let same = want.len() == descs.len()
        && want.iter().zip(descs).all(|(w, d)| {
            w.desc_type == d.desc_type
                && w.data_size == d.data_size
                && file.string_opt(d.name).ok().flatten() == w.name.as_deref()
        });
    same.then_some(shape)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn task() -> impl Strategy<Value = Task> {
        (0usize..4, 0usize..3, any::<bool>(), any::<bool>(), any::<[u64; 4]>(), any::<[u32; 4]>()).prop_flat_map(
            |(n, c, topdown, v2023, times, ids)| {
                (
                    proptest::collection::vec(any::<u64>(), 2 * n),
                    proptest::collection::vec(any::<f64>().prop_filter("NaN", |f| !f.is_nan()), c),
                    any::<[u64; 12]>(),
                    any::<(i64, i64)>(),
                )
                    .prop_map(move |(counters, constants, more, (int_prefix, config))| Task {
                        tid: ids[0],
                        pthread: ids[1],
                        start: times[0],
                        end: times[1],
                        parent_tid: ids[2],
                        parent_pthread: ids[3],
                        scheduled: times[2],
                        topdown: topdown.then(|| [more[0], more[1], more[2], more[3], more[4], more[5]]),
                        begin_info: [more[6], more[7], more[8]],
                        end_info: [more[9], more[10], more[11]],
                        begin: counters[..n].to_vec(),
                        end_counters: counters[n..].to_vec(),
                        extra: v2023.then(|| Extra {
                            int_prefix,
                            prefix: String::new(),
                            config,
                            constants: constants.clone(),
                        }),
                    })
            },
        )
    }

    proptest! {
        /// The import's encoder and the readers' decoder agree, at the
        /// record size the descriptor gives.
        #[test]
        fn a_task_reads_back_as_written(t in task(), pid in any::<u32>(), event in any::<u32>()) {
            let shape = Shape { counters: t.begin.len(), constants: t.extra.as_ref().map_or(0, |e| e.constants.len()) };
            let mut rec = Vec::new();
            encode(&t, pid, event, &mut rec);
            prop_assert_eq!(rec.len(), record_size(shape));
            let layout = RecordLayout::from_entries(&descriptor(shape)).unwrap();
            prop_assert_eq!(layout.record_size() as usize, rec.len());
            let back = decode(&rec, shape);
            let want = t.clone();
            prop_assert_eq!(back, Decoded { task: want, pid, event });
        }
    }
}
