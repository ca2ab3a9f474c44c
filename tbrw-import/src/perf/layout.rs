//! Stream 0's record as the perf import writes it: the descriptor (its
//! fields and their widths, [`Widths`]), the events made from perf's
//! attributes, the time stamp field named after perf's clock, and the
//! descriptor of the per-frame stream 1 that imports wrote before the
//! stack table. The import loop ([`super::stream`]) encodes records in
//! this layout; it must not import the loop.

use linux_perf_data::AttributeDescription;
use linux_perf_event_reader::{PerfClock, PerfEventType, SamplingPolicy};
use tbrw::*;

use tbrw_schema::descriptor::SampleDescriptor;
use tbrw_schema::fields;

/// The name of the time stamp field: perf's clock, so that `tbrw export
/// vtune-csv` finds the clock VTune should use.
pub fn clock_name(clock: &PerfClock) -> String {
    use linux_perf_event_reader::ClockId;
    match clock {
        // perf's default clock is the kernel's local clock: nanoseconds
        // since boot, never set back, i.e. a monotonic clock.
        PerfClock::Default => "time_perf_clock_monotonic".into(),
        PerfClock::ClockId(ClockId::Monotonic) => "time_CLOCK_MONOTONIC".into(),
        PerfClock::ClockId(ClockId::MonotonicRaw) => "time_CLOCK_MONOTONIC_RAW".into(),
        PerfClock::ClockId(ClockId::Realtime) => "time_CLOCK_REALTIME".into(),
        PerfClock::ClockId(c) => format!("time_clock_{c:?}"),
    }
}

/// The TB5 event of perf's attribute `i`, named `name`.
pub(crate) fn event_of(i: usize, a: &AttributeDescription, name: String) -> Event {
    let sav = match a.attr.sampling_policy {
        SamplingPolicy::Period(p) => p.get(),
        SamplingPolicy::Frequency(f) => f,
        SamplingPolicy::NoSampling => 0,
    };
    let flags = match a.attr.type_ {
        PerfEventType::Software(_) => EventFlags::TBS,
        _ => EventFlags::EBS,
    };
    Event { id: i as u32, flags, sav, name: Some(name), ..Default::default() }
}

/// The widths of stream 0's fields that depend on the recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Widths {
    /// Bytes of `period`: 4 when every event's period fits 32 bits (see [`period_width`]), else 8.
    pub period: u32,
    /// Bytes of `cpu`: 2 when the header says the machine has at most 65,536 CPUs, else 4.
    pub cpu: u32,
}

/// 4 when no sample of `attrs` can have a period of 32 bits or more: a
/// fixed period (`-c N`) below 2^32, or a software clock (`cpu-clock`,
/// `task-clock`, the default without a PMU) sampled by frequency, whose
/// period the kernel fixes at 10^9 / frequency ns (at most 10^9); else 8
/// (a hardware event by frequency: the kernel's period adapts to the
/// event's rate).
pub fn period_width(attrs: &[AttributeDescription]) -> u32 {
    use linux_perf_event_reader::SoftwareCounterType;
    let narrow = |a: &AttributeDescription| match (a.attr.sampling_policy, a.attr.type_) {
        (SamplingPolicy::Period(p), _) => p.get() <= u64::from(u32::MAX),
        (SamplingPolicy::NoSampling, _) => true,
        (
            SamplingPolicy::Frequency(f),
            PerfEventType::Software(SoftwareCounterType::CpuClock | SoftwareCounterType::TaskClock),
        ) => f >= 1,
        (SamplingPolicy::Frequency(_), _) => false,
    };
    if attrs.iter().all(narrow) {
        4
    } else {
        8
    }
}

/// Stream 0's descriptor: the standard sample descriptor with perf's
/// period, the CPU number, the event id with several events and the stack
/// id with call chains.
pub fn descriptor(clock: &str, several_events: bool, stacks: bool, w: Widths) -> Vec<DescEntry> {
    let mut d = SampleDescriptor::new("ip", clock).with(fields::PERIOD, w.period, "period").cpu(w.cpu);
    if several_events {
        d = d.with(fields::EVENT_ID, 4, "event_id");
    }
    d.finish(stacks)
}
