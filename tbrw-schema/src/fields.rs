//! This project's user-defined descriptor field types (TBRW leaves
//! 0x4000-0x7FFF to applications), in one registry that the collector,
//! importers, reports and exports share, and the one reader of a record's
//! field that they all go through. A leaf.
//!
//! Ranges: 0x40xx ELF profiles (imported, and the `sampler` collector's
//! records), 0x41xx MTMC tasks (0x4130 + i their
//! constants, 0x4200 + i and 0x4300 + i their counters), 0x44xx winIDEA
//! calls and writes, 0x45xx perf.data imports. The
//! meaning of each is in docs/IMPORT.md.

use tbrw::{desc_type, Field};

/// The thread's CPU time (`cputime` of an ELF profile, and of the collector), a cumulative counter (8 bytes).
pub const CPUTIME: u16 = 0x4000;
/// A current reading: an ELF profile's PMU value under magic 1 (f64).
pub const CURRENT: u16 = 0x4001;
/// A voltage reading: an ELF profile's PMU value under magic 2 (f64).
pub const VOLTAGE: u16 = 0x4002;
/// A custom PMU value: an ELF profile's value under magic 0 (f64).
pub const CUSTOM_VALUE: u16 = 0x4003;
/// A thread's CPU time since its previous sample in nanoseconds (8 bytes;
/// 0 for its first sample): what `--weight cputime` weighs by.
pub const CPUTIME_DELTA: u16 = 0x4004;
/// An ELF profile's PMU data when it is not one 8-byte value: its raw
/// bytes, as many as the profile's PMU-data size.
pub const PMU_DATA: u16 = 0x4005;

/// An MTMC task's 32-bit pthread id.
pub const PTHREAD: u16 = 0x4100;
/// The kernel thread id of an MTMC task's parent.
pub const PARENT_TID: u16 = 0x4101;
/// The pthread id of an MTMC task's parent.
pub const PARENT_PTHREAD: u16 = 0x4102;
/// The topdown slots counter at an MTMC task's begin.
pub const TOPDOWN_SLOTS_BEGIN: u16 = 0x4110;
/// The topdown metrics register at an MTMC task's begin.
pub const TOPDOWN_METRICS_BEGIN: u16 = 0x4111;
/// The reserved topdown value at an MTMC task's begin.
pub const TOPDOWN_RESERVED_BEGIN: u16 = 0x4112;
/// The topdown slots counter at an MTMC task's end.
pub const TOPDOWN_SLOTS_END: u16 = 0x4113;
/// The topdown metrics register at an MTMC task's end.
pub const TOPDOWN_METRICS_END: u16 = 0x4114;
/// The reserved topdown value at an MTMC task's end.
pub const TOPDOWN_RESERVED_END: u16 = 0x4115;
/// The number-of-events field at an MTMC task's begin.
pub const EVENTS_BEGIN: u16 = 0x4120;
/// The prefix field at an MTMC task's begin.
pub const PREFIX_BEGIN: u16 = 0x4121;
/// The number-of-events field at an MTMC task's end.
pub const EVENTS_END: u16 = 0x4122;
/// The prefix field at an MTMC task's end.
pub const PREFIX_END: u16 = 0x4123;
/// INT_MISC.UOP_DROPPING at an MTMC task's begin (what the v0.1 layout
/// writes as `[7.2]`, 48 bits, reset with the topdown counters).
pub const TOPDOWN_UOP_DROP_BEGIN: u16 = 0x4116;
/// INT_MISC.UOP_DROPPING at an MTMC task's end (`[7.5]`).
pub const TOPDOWN_UOP_DROP_END: u16 = 0x4117;
/// The NUMA node at an MTMC task's begin: RDTSCP's TSC_AUX >> 12 (`[8.2]`).
pub const NUMA_NODE_BEGIN: u16 = 0x4124;
/// The NUMA node at an MTMC task's end (`[10.2]`).
pub const NUMA_NODE_END: u16 = 0x4125;
/// Flags of an MTMC task record (which layout the line had, what it holds).
pub const MTMC_FLAGS: u16 = 0x4126;
/// An MTMC task's integer prefix (2023 layout; signed, 8 bytes).
pub const INT_PREFIX: u16 = 0x4127;
/// An MTMC task's configuration (multiplexing group) index (2023 layout; signed, 8 bytes).
pub const CONFIG_INDEX: u16 = 0x4128;
/// Constant i of an MTMC task (2023 layout; f64): `CONSTANT + i`.
pub const CONSTANT: u16 = 0x4130;
/// Constants per record at most: the types reserved from [`CONSTANT`].
pub const MAX_CONSTANTS: usize = 0x10;
/// Counter i's reading at an MTMC task's begin: `COUNTER_BEGIN + i`.
pub const COUNTER_BEGIN: u16 = 0x4200;
/// Counter i's reading at an MTMC task's end: `COUNTER_END + i`.
pub const COUNTER_END: u16 = 0x4300;
/// Counters per record at most: the types reserved for each of begin and end.
pub const MAX_COUNTERS: usize = 0x100;

/// Net time of a winIDEA call in nanoseconds (8 bytes).
pub const CALL_NET: u16 = 0x4400;
/// Gross time of a winIDEA call in nanoseconds (8 bytes).
pub const CALL_GROSS: u16 = 0x4401;
/// The record's event id: the `event_id` of the stream's event that names
/// the record (4 bytes; for winIDEA the area handle). `tbrw report --by
/// event` and `tbrw export vtune-csv` honour it on any stream.
pub const EVENT_ID: u16 = 0x4402;
/// The value a winIDEA data write wrote (8 bytes).
pub const WRITTEN_VALUE: u16 = 0x4405;

/// The period of a perf sample: the events it stands for (8 bytes).
pub const PERIOD: u16 = 0x4500;
/// A call-chain frame's sample: the index in stream 0 of the sample whose
/// chain it belongs to (8 bytes).
pub const CALLCHAIN_SAMPLE: u16 = 0x4501;
/// A call-chain frame's depth: 0 for the sampled ip's frame, then each
/// caller one more (4 bytes).
pub const CALLCHAIN_DEPTH: u16 = 0x4502;
/// A sample's call stack: a node of its stream's stack table (4 bytes;
/// `tbrw::NO_STACK` for none). The format's own type (`tbrw::STACK_ID_FIELD`,
/// docs/FORMAT.md "Stack table"): `tbrw verify` checks it.
pub const STACK_ID: u16 = tbrw::STACK_ID_FIELD;

/// Every single-code type of the registry with its name (the counter
/// ranges are named by [`name`]).
pub const REGISTRY: &[(u16, &str)] = &[
    (CPUTIME, "cputime"),
    (CURRENT, "current"),
    (VOLTAGE, "voltage"),
    (CUSTOM_VALUE, "custom"),
    (CPUTIME_DELTA, "cputime_delta"),
    (PMU_DATA, "pmu_data"),
    (PTHREAD, "pthread_id"),
    (PARENT_TID, "parent_tid"),
    (PARENT_PTHREAD, "parent_pthread_id"),
    (TOPDOWN_SLOTS_BEGIN, "topdown_slots_begin"),
    (TOPDOWN_METRICS_BEGIN, "topdown_metrics_begin"),
    (TOPDOWN_RESERVED_BEGIN, "topdown_reserved_begin"),
    (TOPDOWN_SLOTS_END, "topdown_slots_end"),
    (TOPDOWN_METRICS_END, "topdown_metrics_end"),
    (TOPDOWN_RESERVED_END, "topdown_reserved_end"),
    (EVENTS_BEGIN, "events_begin"),
    (PREFIX_BEGIN, "prefix_begin"),
    (EVENTS_END, "events_end"),
    (PREFIX_END, "prefix_end"),
    (TOPDOWN_UOP_DROP_BEGIN, "topdown_uop_drop_begin"),
    (TOPDOWN_UOP_DROP_END, "topdown_uop_drop_end"),
    (NUMA_NODE_BEGIN, "numa_node_begin"),
    (NUMA_NODE_END, "numa_node_end"),
    (MTMC_FLAGS, "mtmc_flags"),
    (INT_PREFIX, "int_prefix"),
    (CONFIG_INDEX, "config_index"),
    (CALL_NET, "net_ns"),
    (CALL_GROSS, "gross_ns"),
    (EVENT_ID, "event_id"),
    (WRITTEN_VALUE, "value"),
    (PERIOD, "period"),
    (CALLCHAIN_SAMPLE, "callchain_sample"),
    (CALLCHAIN_DEPTH, "callchain_depth"),
    (STACK_ID, "stack_id"),
];

/// The name of one of this project's field types, TBRW's name for a
/// standard one, or `None`.
pub fn name(t: u16) -> Option<&'static str> {
    if let Some(n) = desc_type::name(t) {
        return Some(n);
    }
    if let Some((_, n)) = REGISTRY.iter().find(|(c, _)| *c == t) {
        return Some(n);
    }
    if (CONSTANT..CONSTANT + MAX_CONSTANTS as u16).contains(&t) {
        Some("constant")
    } else if (COUNTER_BEGIN..COUNTER_END).contains(&t) {
        Some("counter_begin")
    } else if (COUNTER_END..COUNTER_END + MAX_COUNTERS as u16).contains(&t) {
        Some("counter_end")
    } else {
        None
    }
}

/// Whether `t` is counter i's reading at a task's begin (`Some(i)`).
pub fn counter_begin(t: u16) -> Option<usize> {
    (COUNTER_BEGIN..COUNTER_END).contains(&t).then(|| usize::from(t - COUNTER_BEGIN))
}

/// Whether `t` is an MTMC task's constant i (`Some(i)`).
pub fn constant(t: u16) -> Option<usize> {
    (CONSTANT..CONSTANT + MAX_CONSTANTS as u16).contains(&t).then(|| usize::from(t - CONSTANT))
}

/// Whether `t` is counter i's reading at a task's end (`Some(i)`).
pub fn counter_end(t: u16) -> Option<usize> {
    (COUNTER_END..COUNTER_END + MAX_COUNTERS as u16).contains(&t).then(|| usize::from(t - COUNTER_END))
}

/// The little-endian unsigned value of `size` bytes at `at` of a record
/// (at most 8 bytes; sizes above 8 read the first 8). A field that
/// reaches past the record reads as 0: layouts are checked when a stream
/// is opened, so only a damaged record gets there, and a report on it
/// should not panic. Inlined: every walk reads several fields per record.
#[inline]
pub fn read_le(rec: &[u8], at: usize, size: usize) -> u64 {
    let size = size.min(8);
    let Some(bytes) = at.checked_add(size).and_then(|end| rec.get(at..end)) else {
        return 0;
    };
    // The usual sizes as fixed-size loads: a copy of a size known only at
    // run time is a call to memcpy per field, per record.
    match *bytes {
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        _ => {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(bytes);
            u64::from_le_bytes(b)
        }
    }
}

/// [`read_le`] of a descriptor's field.
#[inline]
pub fn read(rec: &[u8], f: &Field) -> u64 {
    read_le(rec, f.offset as usize, f.size as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_is_user_defined_and_has_no_duplicates() {
        let mut codes: Vec<u16> = REGISTRY.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), REGISTRY.len());
        for &c in &codes {
            assert!(desc_type::is_user_defined(c), "{c:#x}");
            assert!(counter_begin(c).is_none() && counter_end(c).is_none(), "{c:#x} is in a counter range");
            assert!(constant(c).is_none(), "{c:#x} is in the constant range");
        }
        assert!(desc_type::is_user_defined(COUNTER_END + MAX_COUNTERS as u16 - 1));
        assert_eq!((counter_begin(0x4203), counter_end(0x4203)), (Some(3), None));
        assert_eq!((counter_end(0x43FF), counter_end(0x4400)), (Some(255), None));
        assert_eq!(name(EVENT_ID), Some("event_id"));
        assert_eq!(name(STACK_ID), Some("stack_id"));
        assert_eq!(STACK_ID, 0x4503);
        assert_eq!(name(0x4301), Some("counter_end"));
        assert_eq!(name(0x4600), None);
        assert_eq!((constant(CONSTANT + 15), constant(CONSTANT + 16)), (Some(15), None));
        assert_eq!(name(CONSTANT + 2), Some("constant"));
    }

    #[test]
    fn read_le_takes_the_field_and_never_reads_past_the_record() {
        let rec = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        assert_eq!(read_le(&rec, 0, 4), 0x0403_0201);
        assert_eq!(read_le(&rec, 2, 8), 0x0A09_0807_0605_0403);
        assert_eq!(read_le(&rec, 2, 16), 0x0A09_0807_0605_0403);
        assert_eq!(read_le(&rec, 9, 1), 10);
        assert_eq!(read_le(&rec, 8, 4), 0, "past the end");
        assert_eq!(read_le(&rec, usize::MAX, 4), 0);
    }

    #[test]
    fn read_le_of_every_size_and_place_is_the_bytes_little_endian() {
        let rec: Vec<u8> = (0..24u8).map(|b| b.wrapping_mul(37) ^ 0xA5).collect();
        for at in 0..=rec.len() + 1 {
            for size in 0..=10 {
                let want = match rec.get(at..at + size.min(8)) {
                    Some(bytes) => bytes.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b)),
                    None => 0,
                };
                assert_eq!(read_le(&rec, at, size), want, "{size} bytes at {at}");
            }
        }
    }
}
