//! Descriptor entries as this project writes them: a named entry
//! ([`field`]), and the one sample descriptor ([`SampleDescriptor`]) that
//! the perf import and the `sampler` collector both build their stream 0
//! from: ip, pid, tid and the time stamp first, the collector's own fields,
//! the CPU number, and the stack id last when samples have call stacks;
//! and the per-frame call-chain stream of old perf imports.
//! Imports nothing of the crate.

use tbrw::{desc_subtype, desc_type, stack_id_entry, DescEntry};

/// The name of a sample's stack id field (`tbrw::STACK_ID_FIELD`), in every
/// collector's stream alike.
pub const STACK_ID_NAME: &str = "stack_id";

/// The name of the CPU number field.
pub const CPU_NAME: &str = "cpu";

/// Bytes per record of [`callchain_descriptor`].
pub const CALLCHAIN_RECORD_SIZE: usize = 36;

/// A named data descriptor entry (offset and access fields left to the writer).
pub fn field(desc_type: u16, subtype: u16, data_size: u32, name: impl Into<String>) -> DescEntry {
    DescEntry { desc_type, subtype, data_size, name: Some(name.into()), ..Default::default() }
}

/// The descriptor of a sample stream, built in the one order every
/// collector of this project writes (the record layout follows it):
///
/// | entry | type | bytes |
/// |---|---|---|
/// | the sampled address, named by the collector (`ip`, `pc`) | `ST_IP` | 8 |
/// | `pid` | `ST_PID` | 4 |
/// | `tid` | `ST_TID` | 4 |
/// | the time, named after its clock | `ST_TIME_STAMP` / `SST_TS_NANOSECONDS` | 8 |
/// | the collector's own fields ([`with`](Self::with)) | | |
/// | `cpu` ([`cpu`](Self::cpu)) | `ST_PROCESSOR_NUMBER` | 2 or 4 |
/// | more of the collector's own fields | | |
/// | `stack_id` ([`finish`](Self::finish) with stacks) | `tbrw::STACK_ID_FIELD` | 4 |
#[derive(Clone, Debug, PartialEq)]
pub struct SampleDescriptor {
    entries: Vec<DescEntry>,
}

impl SampleDescriptor {
    /// The head: the sampled address named `ip_name`, pid, tid, and the
    /// time stamp in nanoseconds named `clock` (the clock it is, as the
    /// VTune CSV export reads it).
    pub fn new(ip_name: &str, clock: &str) -> SampleDescriptor {
        SampleDescriptor {
            entries: vec![
                field(desc_type::IP, desc_subtype::NONE, 8, ip_name),
                field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
                field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
                field(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, clock),
            ],
        }
    }

    /// Adds a field of the collector's own ([`crate::fields`] or a TBRW type).
    pub fn with(mut self, desc_type: u16, data_size: u32, name: impl Into<String>) -> SampleDescriptor {
        self.entries.push(field(desc_type, desc_subtype::NONE, data_size, name));
        self
    }

    /// Adds the CPU number, `width` bytes.
    pub fn cpu(self, width: u32) -> SampleDescriptor {
        self.with(desc_type::PROCESSOR_NUMBER, width, CPU_NAME)
    }

    /// The entries; with `stacks`, the records end with a stack id.
    pub fn finish(mut self, stacks: bool) -> Vec<DescEntry> {
        if stacks {
            self.entries.push(stack_id_entry(STACK_ID_NAME));
        }
        self.entries
    }
}

/// The descriptor of the per-frame stream 1 that perf imports wrote before
/// the stack table: the head of a sample (the frame's ip, its sample's pid,
/// tid and time, `clock` naming the time), then the index in stream 0 of
/// the sample whose chain the frame belongs to
/// ([`crate::fields::CALLCHAIN_SAMPLE`], 8 bytes) and the frame's depth (0
/// the sampled ip, then each caller one more;
/// [`crate::fields::CALLCHAIN_DEPTH`], 4 bytes). Nothing writes it now; the
/// query layer still reads such streams.
pub fn callchain_descriptor(clock: &str) -> Vec<DescEntry> {
    SampleDescriptor::new("ip", clock)
        .with(crate::fields::CALLCHAIN_SAMPLE, 8, "sample")
        .with(crate::fields::CALLCHAIN_DEPTH, 4, "depth")
        .finish(false)
}

#[cfg(test)]
mod tests {
    use tbrw::RecordLayout;

    use super::*;
    use crate::fields;

    #[test]
    fn the_head_cpu_and_stack_id_lie_where_the_readers_look() {
        let d = SampleDescriptor::new("pc", "time_monotonic_raw_ns")
            .with(fields::CPUTIME, 8, "cputime")
            .cpu(4)
            .finish(true);
        let types: Vec<u16> = d.iter().map(|e| e.desc_type).collect();
        assert_eq!(
            types,
            [
                desc_type::IP,
                desc_type::PID,
                desc_type::TID,
                desc_type::TIME_STAMP,
                fields::CPUTIME,
                desc_type::PROCESSOR_NUMBER,
                tbrw::STACK_ID_FIELD
            ]
        );
        let layout = RecordLayout::from_entries(&d).unwrap();
        assert_eq!(layout.record_size(), 8 + 4 + 4 + 8 + 8 + 4 + 4);
        let at = |t: u16| layout.find(t, None).map(|f| (f.offset, f.size));
        assert_eq!(at(desc_type::IP), Some((0, 8)));
        assert_eq!(at(desc_type::TIME_STAMP), Some((16, 8)));
        assert_eq!(at(desc_type::PROCESSOR_NUMBER), Some((32, 4)));
        assert_eq!(at(tbrw::STACK_ID_FIELD), Some((36, 4)));
        assert_eq!(d.last().and_then(|e| e.name.as_deref()), Some(STACK_ID_NAME));
        assert_eq!(SampleDescriptor::new("ip", "t").finish(false).len(), 4);
    }

    #[test]
    fn a_call_chain_frame_is_its_record_size() {
        let layout = RecordLayout::from_entries(&callchain_descriptor("t")).unwrap();
        assert_eq!(layout.record_size() as usize, CALLCHAIN_RECORD_SIZE);
        assert_eq!(layout.find(fields::CALLCHAIN_SAMPLE, None).map(|f| (f.offset, f.size)), Some((24, 8)));
        assert_eq!(layout.find(fields::CALLCHAIN_DEPTH, None).map(|f| (f.offset, f.size)), Some((32, 4)));
    }
}
