//! The data description section (`TBRW_SAMPREC_DESC_ENTRY`) and the record
//! layout it defines.
//!
//! A data descriptor is an ordered list of entries, each naming one field of
//! the fixed-size data record. [`RecordLayout::from_entries`] turns it into
//! the effective field offsets and the record size, using this project's
//! layout rule (docs/FORMAT.md, "Record layout"):
//!
//! * entries of the extended types (0x2000-0x2FFF) are computed values and
//!   take no bytes of the record;
//! * the first byte-carrying entry is placed at its `desc_offset`;
//! * a later byte-carrying entry with `desc_offset` 0 is placed right after
//!   the fields before it (this is how the guide's example, which gives the
//!   PC record and the TSC both offset 0, comes out as PC at 0 and TSC at 32);
//! * any other offset is taken as given;
//! * the record size is the end of the furthest field.

use super::error::{Error, Result};
use super::strings::{MapStrings, Text};

/// `desc_type` values (`ST_*` of `samprec_shared.h`).
pub mod desc_type {
    #![allow(missing_docs)]
    pub const NONE: u16 = 0;
    pub const LEGACY_SAMPLE_RECORD: u16 = 1;
    pub const IP: u16 = 2;
    pub const PID: u16 = 3;
    pub const TID: u16 = 4;
    pub const PROCESSOR_NUMBER: u16 = 5;
    pub const PROCESSOR_STATUS: u16 = 6;
    pub const TIME_STAMP: u16 = 7;
    pub const POWER: u16 = 8;
    pub const INTERRUPT_FAULT_ADDR: u16 = 9;
    pub const IEAR: u16 = 10;
    pub const DEAR: u16 = 11;
    pub const BRANCH_TRACE: u16 = 12;
    pub const INST_TRACE: u16 = 13;
    pub const PMD: u16 = 14;
    pub const IEAR_PHYSICAL: u16 = 15;
    pub const DEAR_PHYSICAL: u16 = 16;
    pub const BRANCH_TRACE_PHYSICAL: u16 = 17;
    pub const INST_TRACE_PHYSICAL: u16 = 18;
    pub const PMD_PHYSICAL: u16 = 19;
    pub const PEBS_MACHINE_STATE: u16 = 20;
    pub const UNCORE_TAG_NUMBER: u16 = 21;
    pub const DEAR_INFO: u16 = 22;
    pub const LEGACY_UNKNOWN: u16 = 23;
    // Types 24-33 are Intel's later ones (its 2012 library's DWARF); VTune's
    // records begin with an ST_DESCRIPTOR_ID (docs/FORMAT.md, "Records").
    pub const UNCORE_CORE_ID: u16 = 24;
    pub const UNCORE_PACKAGE_ID: u16 = 25;
    pub const DEAR_INFO_EX: u16 = 26;
    pub const GFX_EVENT_COUNT: u16 = 27;
    pub const CS_EVENT_COUNT: u16 = 28;
    pub const EVENT_COUNT: u16 = 29;
    pub const EM_GROUP_ID: u16 = 30;
    pub const DESCRIPTOR_ID: u16 = 31;
    pub const LEGACY_MODULE_RECORD: u16 = 32;
    pub const MODULE_RECORD: u16 = 33;
    /// First extended (computed, not stored) type.
    pub const START_EXT_SAMPLE_REC_ENTRIES: u16 = 0x2000;
    /// Last extended type.
    pub const END_EXT_SAMPLE_REC_ENTRIES: u16 = 0x2FFF;
    /// First user-defined type (never interpreted).
    pub const START_USER_DEFINED: u16 = 0x4000;
    /// Last user-defined type.
    pub const END_USER_DEFINED: u16 = 0x7FFF;
    /// First reserved type: using one is an error.
    pub const RESERVED_START: u16 = 0x8000;
    /// Last reserved type.
    pub const RESERVED_END: u16 = 0xFFFF;

    /// Names of the stored types 0..=23, by value.
    pub const STORED_NAMES: [&str; 34] = [
        "ST_NONE",
        "ST_LEGACY_SAMPLE_RECORD",
        "ST_IP",
        "ST_PID",
        "ST_TID",
        "ST_PROCESSOR_NUMBER",
        "ST_PROCESSOR_STATUS",
        "ST_TIME_STAMP",
        "ST_POWER",
        "ST_INTERRUPT_FAULT_ADDR",
        "ST_IEAR",
        "ST_DEAR",
        "ST_BRANCH_TRACE",
        "ST_INST_TRACE",
        "ST_PMD",
        "ST_IEAR_PHYSICAL",
        "ST_DEAR_PHYSICAL",
        "ST_BRANCH_TRACE_PHYSICAL",
        "ST_INST_TRACE_PHYSICAL",
        "ST_PMD_PHYSICAL",
        "ST_PEBS_MACHINE_STATE",
        "ST_UNCORE_TAG_NUMBER",
        "ST_DEAR_INFO",
        "ST_LEGACY_UNKNOWN",
        "ST_UNCORE_CORE_ID",
        "ST_UNCORE_PACKAGE_ID",
        "ST_DEAR_INFO_EX",
        "ST_GFX_EVENT_COUNT",
        "ST_CS_EVENT_COUNT",
        "ST_EVENT_COUNT",
        "ST_EM_GROUP_ID",
        "ST_DESCRIPTOR_ID",
        "ST_LEGACY_MODULE_RECORD",
        "ST_MODULE_RECORD",
    ];

    /// Names of the extended types from 0x2000, in value order.
    pub const EXTENDED_NAMES: [&str; 40] = [
        "ST_PROCESS",
        "ST_PROCESS_PATH",
        "ST_PROCESS_IDX",
        "ST_THREAD",
        "ST_THREAD_IDX",
        "ST_MODULE",
        "ST_MODULE_PATH",
        "ST_MODULE_LOAD_ADDRESS",
        "ST_MODULE_IDX",
        "ST_SEG_NAME",
        "ST_SEG_NUM",
        "ST_SEG_OFFSET",
        "ST_SEG_TYPE",
        "ST_EVENT",
        "ST_EVENT_ID",
        "ST_EVENT_IDX",
        "ST_CORE",
        "ST_HARDWARE_THREAD",
        "ST_PACKAGE",
        "ST_FUNCTION",
        "ST_FN_RVA",
        "ST_FN_SIZE",
        "ST_FUNCTION_FULL_NAME",
        "ST_FN_SEG_OFFSET",
        "ST_CLASS",
        "ST_RVA",
        "ST_FNID_SUM",
        "ST_FNID_AVG",
        "ST_FNID_MIN",
        "ST_FNID_MAX",
        "ST_SAMPLES",
        "ST_SAMPLE_IDX",
        "ST_WALL_CLOCK",
        "ST_EVENT_COUNTS",
        "ST_PERCENTAGE_TOTAL",
        "ST_PERCENTAGE_SEL",
        "ST_ANNOTATION",
        "ST_CS",
        "ST_MODE",
        "ST_POST_PROCESS_LAST",
    ];

    /// Whether values of this type are computed rather than stored in records.
    pub fn is_extended(t: u16) -> bool {
        (START_EXT_SAMPLE_REC_ENTRIES..=END_EXT_SAMPLE_REC_ENTRIES).contains(&t)
    }

    /// Whether this type is user-defined.
    pub fn is_user_defined(t: u16) -> bool {
        (START_USER_DEFINED..=END_USER_DEFINED).contains(&t)
    }

    /// Whether this type is reserved (an error to use).
    pub fn is_reserved(t: u16) -> bool {
        t >= RESERVED_START
    }

    /// The header's name of a type, where it has one.
    pub fn name(t: u16) -> Option<&'static str> {
        if let Some(n) = STORED_NAMES.get(t as usize) {
            return Some(n);
        }
        t.checked_sub(START_EXT_SAMPLE_REC_ENTRIES).and_then(|i| EXTENDED_NAMES.get(i as usize).copied())
    }
}

/// `desc_subtype` values (`SST_*` of `samprec_shared.h`).
pub mod desc_subtype {
    #![allow(missing_docs)]
    pub const NONE: u16 = 0;
    pub const BLANK_SPACE: u16 = 1;
    pub const TS_MILLISECONDS: u16 = 2;
    pub const TS_CPU_CYCLES: u16 = 3;
    pub const TS_FSB_CYCLES: u16 = 4;
    pub const TS_OTHER: u16 = 5;
    pub const TS_SAMPLE_COUNT: u16 = 6;
    pub const TS_NANOSECONDS: u16 = 7;
    pub const LBR_TOS: u16 = 8;
    pub const LBR_FROM: u16 = 9;
    pub const LBR_TO: u16 = 10;
    pub const LBR_FROM_TO: u16 = 11;
    pub const LBR_OTHER: u16 = 12;
    pub const IEAR_CONFIG: u16 = 13;
    pub const IEAR_INST_ADDR: u16 = 14;
    pub const IEAR_LATENCY: u16 = 15;
    pub const DEAR_CONFIG: u16 = 16;
    pub const DEAR_INST_ADDR: u16 = 17;
    pub const DEAR_LATENCY: u16 = 18;
    pub const DEAR_DATA_ADDR: u16 = 19;
    pub const BTB_CONFIG: u16 = 20;
    pub const BTB_INDEX: u16 = 21;
    pub const BTB_EXTENSION: u16 = 22;
    pub const BTB_DATA: u16 = 23;
    pub const IPEAR_CONFIG: u16 = 24;
    pub const IPEAR_INDEX: u16 = 25;
    pub const IPEAR_EXTENSION: u16 = 26;
    pub const IPEAR_DATA: u16 = 27;
    pub const IIP: u16 = 28;
    pub const IPSR: u16 = 29;
    pub const EIP: u16 = 30;
    pub const EFLAGS: u16 = 31;
    pub const TSC: u16 = 32;
    pub const ITC: u16 = 33;
    pub const RAW: u16 = 34;
    pub const PSTATE: u16 = 35;
    pub const IA32_PERF_STATUS: u16 = 36;
    pub const THERMAL: u16 = 37;
    pub const IFA: u16 = 38;
    /// `SST_LBR_FROM_TO_0`; `_1`..`_3` follow.
    pub const LBR_FROM_TO_0: u16 = 39;
    /// `SST_LBR_FROM_0`; `_1`..`_15` follow.
    pub const LBR_FROM_0: u16 = 43;
    /// `SST_LBR_TO_0`; `_1`..`_15` follow.
    pub const LBR_TO_0: u16 = 59;
    /// `SST_BTB_DATA_0`; `_1`..`_15` follow.
    pub const BTB_DATA_0: u16 = 75;
    /// `SST_IPEAR_DATA_0`; `_1`..`_15` follow.
    pub const IPEAR_DATA_0: u16 = 91;
    pub const PEBS_EFLAGS: u16 = 107;
    pub const PEBS_LINEARIP: u16 = 108;
    /// `SST_PEBS_RAX`; RBX, RCX, RDX, RSI, RDI, RBP, RSP, R8..R15 follow.
    pub const PEBS_RAX: u16 = 109;
    pub const RESERVED_START: u16 = 0xC000;
    pub const RESERVED_END: u16 = 0xFFFF;
}

/// One data descriptor entry (`TBRW_SAMPREC_DESC_ENTRY`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescEntry<S = Text> {
    /// `desc_offset`: byte offset of the field in the record (see the
    /// module doc for how 0 is read; the file stores the effective offset).
    pub offset: u32,
    /// `desc_type`, see [`desc_type`].
    pub desc_type: u16,
    /// `desc_subtype` (the guide spells it `desc_sub_type`), see [`desc_subtype`].
    pub subtype: u16,
    /// `desc_data_size`: size of the field in bytes.
    pub data_size: u32,
    /// `desc_access_offset`: MSR number or memory offset.
    pub access_offset: u64,
    /// `desc_access_type`: 0 read, 1 write.
    pub access_type: u8,
    /// `desc_access_method`: 0 register, 1 memory.
    pub access_method: u8,
    /// `desc_sample_flag`.
    pub sample_flag: u8,
    /// `reserved0`.
    pub reserved0: u8,
    /// `reserved1`.
    pub reserved1: u32,
    /// `desc_name`: human-readable name.
    pub name: S,
}

impl<S> MapStrings<S> for DescEntry<S> {
    type Output<T> = DescEntry<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<DescEntry<T>, E> {
        Ok(DescEntry {
            offset: self.offset,
            desc_type: self.desc_type,
            subtype: self.subtype,
            data_size: self.data_size,
            access_offset: self.access_offset,
            access_type: self.access_type,
            access_method: self.access_method,
            sample_flag: self.sample_flag,
            reserved0: self.reserved0,
            reserved1: self.reserved1,
            name: f(self.name)?,
        })
    }
}

/// The field of one byte-carrying descriptor entry inside a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Index of the entry in the descriptor.
    pub entry: usize,
    /// `desc_type` of the entry.
    pub desc_type: u16,
    /// `desc_subtype` of the entry.
    pub subtype: u16,
    /// Effective byte offset in the record.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

impl Field {
    /// The field's value in `record` (a whole record) as a little-endian
    /// unsigned number. `None` when the field is wider than 8 bytes or does
    /// not lie inside `record`.
    #[inline]
    pub fn read_le(&self, record: &[u8]) -> Option<u64> {
        let size = usize::try_from(self.size).ok().filter(|s| *s <= 8)?;
        let at = usize::try_from(self.offset).ok()?;
        let bytes = record.get(at..at.checked_add(size)?)?;
        // The usual widths as one load each, not a copy of `size` bytes.
        Some(match size {
            8 => u64::from_le_bytes(bytes.try_into().ok()?),
            4 => u64::from(u32::from_le_bytes(bytes.try_into().ok()?)),
            _ => {
                let mut b = [0u8; 8];
                b[..size].copy_from_slice(bytes);
                u64::from_le_bytes(b)
            }
        })
    }
}

/// The layout of a data record, derived from a data descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLayout {
    record_size: u32,
    /// Effective offset of every entry, by entry index.
    offsets: Vec<u32>,
    fields: Vec<Field>,
    /// Sorted, deduplicated field starts and ends, plus 0 and the record size.
    boundaries: Vec<u32>,
}

/// Size of `TBRW_SampleRecordPC`.
pub const LEGACY_PC_SIZE: u32 = 32;
/// Size of `TBRW_SampleRecordTSC`.
pub const LEGACY_TSC_SIZE: u32 = 8;

impl RecordLayout {
    /// Derives the layout of `entries` (see the module doc for the rule).
    ///
    /// Fails on a reserved type and on a field reaching past 4 GiB.
    pub fn from_entries<S>(entries: &[DescEntry<S>]) -> Result<RecordLayout> {
        let mut offsets = Vec::with_capacity(entries.len());
        let mut fields = Vec::new();
        let mut end: u32 = 0;
        for (i, e) in entries.iter().enumerate() {
            if desc_type::is_reserved(e.desc_type) {
                return Err(Error::bad(format!("data descriptor entry {i}: desc_type {:#x} is reserved", e.desc_type)));
            }
            if desc_type::is_extended(e.desc_type) {
                offsets.push(e.offset);
                continue;
            }
            let offset = if !fields.is_empty() && e.offset == 0 { end } else { e.offset };
            let field_end = offset
                .checked_add(e.data_size)
                .ok_or_else(|| Error::bad(format!("data descriptor entry {i}: field ends past 4 GiB")))?;
            end = end.max(field_end);
            offsets.push(offset);
            fields.push(Field { entry: i, desc_type: e.desc_type, subtype: e.subtype, offset, size: e.data_size });
        }
        let mut boundaries: Vec<u32> = vec![0, end];
        for f in &fields {
            boundaries.push(f.offset);
            boundaries.push(f.offset + f.size);
        }
        boundaries.sort_unstable();
        boundaries.dedup();
        Ok(RecordLayout { record_size: end, offsets, fields, boundaries })
    }

    /// Derives the layout of `entries` as Intel's layout gives them
    /// (docs/FORMAT.md, "Records"): every offset as stored, every entry
    /// with a size takes bytes (Intel's bind streams store extended types
    /// such as ST_MODULE_IDX), and the record size is the furthest end.
    ///
    /// VTune's records begin with an `ST_DESCRIPTOR_ID`, the position of
    /// their descriptor: each `ST_DESCRIPTOR_ID` entry starts one, and a
    /// record's fields are its descriptor's. The layout is the first
    /// descriptor's; the others must define records of the same size
    /// (records of different sizes in one stream are refused, naming the
    /// descriptors).
    pub fn as_given<S>(entries: &[DescEntry<S>]) -> Result<RecordLayout> {
        let starts: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(i, e)| *i == 0 || e.desc_type == desc_type::DESCRIPTOR_ID)
            .map(|(i, _)| i)
            .collect();
        let group_end = |g: usize| starts.get(g + 1).copied().unwrap_or(entries.len());
        let mut layouts = Vec::with_capacity(starts.len());
        for (g, &start) in starts.iter().enumerate() {
            let mut fields = Vec::new();
            let mut end = 0u32;
            for (i, e) in entries.iter().enumerate().take(group_end(g)).skip(start) {
                if desc_type::is_reserved(e.desc_type) {
                    return Err(Error::bad(format!(
                        "data descriptor entry {i}: desc_type {:#x} is reserved",
                        e.desc_type
                    )));
                }
                let field_end = e
                    .offset
                    .checked_add(e.data_size)
                    .ok_or_else(|| Error::bad(format!("data descriptor entry {i}: field ends past 4 GiB")))?;
                end = end.max(field_end);
                // Extended types carry bytes only in Intel's bind streams, where they have a size.
                if !desc_type::is_extended(e.desc_type) || e.data_size > 0 {
                    let f = Field {
                        entry: i,
                        desc_type: e.desc_type,
                        subtype: e.subtype,
                        offset: e.offset,
                        size: e.data_size,
                    };
                    fields.push(f);
                }
            }
            layouts.push((end, fields));
        }
        let (record_size, fields) = layouts.first().cloned().unwrap_or_default();
        if let Some((g, (size, _))) = layouts.iter().enumerate().find(|(_, (size, _))| *size != record_size) {
            return Err(Error::bad(format!(
                "descriptor {g} (from entry {}) defines {size}-byte records where descriptor 0 defines \
                 {record_size}-byte ones: records of different sizes in one stream are not supported",
                starts[g]
            )));
        }
        let mut boundaries: Vec<u32> = vec![0, record_size];
        for f in &fields {
            boundaries.push(f.offset);
            boundaries.push(f.offset + f.size);
        }
        boundaries.sort_unstable();
        boundaries.dedup();
        Ok(RecordLayout { record_size, offsets: entries.iter().map(|e| e.offset).collect(), fields, boundaries })
    }

    /// The size of one record in bytes.
    pub fn record_size(&self) -> u32 {
        self.record_size
    }

    /// The effective offset of entry `i` (as stored in the file).
    pub fn offset_of(&self, i: usize) -> Option<u32> {
        self.offsets.get(i).copied()
    }

    /// The byte-carrying fields, in descriptor order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The first field of a type (and subtype, if given).
    pub fn find(&self, desc_type: u16, subtype: Option<u16>) -> Option<&Field> {
        self.fields.iter().find(|f| f.desc_type == desc_type && subtype.is_none_or(|s| s == f.subtype))
    }

    /// Offset of the `TBRW_SampleRecordPC` field (an `ST_LEGACY_SAMPLE_RECORD`
    /// entry of at least 32 bytes), if the record has one.
    pub fn legacy_pc_offset(&self) -> Option<u32> {
        self.fields
            .iter()
            .find(|f| f.desc_type == desc_type::LEGACY_SAMPLE_RECORD && f.size >= LEGACY_PC_SIZE)
            .map(|f| f.offset)
    }

    /// Offset of an 8-byte `ST_TIME_STAMP` / `SST_TSC` field, if there is one.
    pub fn tsc_offset(&self) -> Option<u32> {
        self.fields
            .iter()
            .find(|f| {
                f.desc_type == desc_type::TIME_STAMP && f.subtype == desc_subtype::TSC && f.size == LEGACY_TSC_SIZE
            })
            .map(|f| f.offset)
    }

    /// (offset, size) of the time readers cut and order records by: a
    /// legacy sample's TSC (after a PC record), else the first
    /// `ST_TIME_STAMP` field when it has 4 or 8 bytes; `None` when the
    /// records have none (a record's index is then its time). The time a
    /// data section's "time order" flag (docs/FORMAT.md, "Directory") is about.
    pub fn time_at(&self) -> Option<(u32, u32)> {
        match (self.legacy_pc_offset(), self.tsc_offset()) {
            (Some(_), Some(t)) => Some((t, LEGACY_TSC_SIZE)),
            _ => self
                .find(desc_type::TIME_STAMP, None)
                .filter(|f| f.size == 4 || f.size == 8)
                .map(|f| (f.offset, f.size)),
        }
    }

    /// Whether a record may be cut at byte `pos` (0..=record size) when it
    /// arrives in pieces: only at the start or end of a field.
    pub fn is_boundary(&self, pos: u32) -> bool {
        self.boundaries.binary_search(&pos).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(t: u16, st: u16, offset: u32, size: u32) -> DescEntry {
        DescEntry { desc_type: t, subtype: st, offset, data_size: size, ..Default::default() }
    }

    #[test]
    fn guide_example_both_offset_zero() {
        let l = RecordLayout::from_entries(&[
            entry(desc_type::LEGACY_SAMPLE_RECORD, desc_subtype::NONE, 0, 32),
            entry(desc_type::TIME_STAMP, desc_subtype::TSC, 0, 8),
        ])
        .unwrap();
        assert_eq!(l.record_size(), 40);
        assert_eq!(l.offset_of(1), Some(32));
        assert_eq!(l.legacy_pc_offset(), Some(0));
        assert_eq!(l.tsc_offset(), Some(32));
        for p in [0, 32, 40] {
            assert!(l.is_boundary(p));
        }
        assert!(!l.is_boundary(8));
    }

    #[test]
    fn explicit_offsets_kept_and_gaps_allowed() {
        let l = RecordLayout::from_entries(&[
            entry(desc_type::IP, 0, 8, 8),
            entry(desc_type::PID, 0, 0, 4),
            entry(desc_type::TID, 0, 24, 4),
            entry(0x2005, 0, 0, 0),
        ])
        .unwrap();
        // entry 1 has offset 0 after a field: appended at 16.
        assert_eq!((l.offset_of(0), l.offset_of(1), l.offset_of(2)), (Some(8), Some(16), Some(24)));
        assert_eq!(l.record_size(), 28);
        assert_eq!(l.fields().len(), 3);
    }

    #[test]
    fn fields_read_little_endian_values_inside_the_record() {
        let l = RecordLayout::from_entries(&[entry(desc_type::IP, 0, 0, 8), entry(desc_type::PID, 0, 0, 4)]).unwrap();
        let mut rec = 0x1122_3344_5566_7788u64.to_le_bytes().to_vec();
        rec.extend_from_slice(&0xAABB_CCDDu32.to_le_bytes());
        let [ip, pid] = [l.fields()[0], l.fields()[1]];
        assert_eq!((ip.read_le(&rec), pid.read_le(&rec)), (Some(0x1122_3344_5566_7788), Some(0xAABB_CCDD)));
        assert_eq!(pid.read_le(&rec[..11]), None, "a record too short for the field");
        let wide = Field { size: 9, ..ip };
        assert_eq!(wide.read_le(&[0; 16]), None, "wider than 8 bytes");
    }

    #[test]
    fn reserved_type_rejected() {
        assert!(RecordLayout::from_entries(&[entry(0x8000, 0, 0, 4)]).is_err());
        assert!(RecordLayout::from_entries(&[entry(1, 0, u32::MAX, 4)]).is_err());
    }
}
