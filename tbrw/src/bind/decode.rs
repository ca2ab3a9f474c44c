//! Decoding data records into the samples a bind needs (ip, pid, tid,
//! tsc), through the stream's record layout: the guide's PC record read in
//! place (the four words binding needs, their bits read by [`SampleRecordPc`]), other
//! records through the descriptor's fields ([`Field::read_le`]).

use tbrw_bind::Sample;

use crate::model::descriptor::{desc_subtype, desc_type, Field, RecordLayout};
use crate::model::error::{Error, Result};
use crate::model::sample::SampleRecordPc;
use crate::model::section::{SectionRef, StreamSection};
use crate::read::{StreamReader, Tb5File};

/// How to get (ip, pid, tid, tsc) out of a record of a stream.
#[derive(Debug)]
pub(super) enum Decoder {
    /// `TBRW_SampleRecordPC` at `pc`, TSC at `tsc`; `pid_of_index` maps a
    /// `pidRecIndex` that is not raw to its process.
    Legacy { pc: usize, tsc: Option<usize>, pid_of_index: Vec<u32> },
    /// `ST_IP`, `ST_PID`, optional `ST_TID` and `ST_TIME_STAMP` fields.
    Fields { ip: Field, pid: Field, tid: Option<Field>, tsc: Option<Field> },
}

/// Where a record layout keeps what a bind reads; the error says why a
/// layout cannot be bound. Checked before any record is read, so that
/// `dobind` on a stream still being written can refuse at once.
#[derive(Debug)]
pub(super) enum Plan {
    /// `TBRW_SampleRecordPC` at `pc`, TSC at `tsc`.
    Legacy { pc: usize, tsc: Option<usize> },
    /// `ST_IP`, `ST_PID`, optional `ST_TID` and `ST_TIME_STAMP` fields.
    Fields { ip: Field, pid: Field, tid: Option<Field>, tsc: Option<Field> },
}

impl Plan {
    pub(super) fn for_layout(n: u32, layout: &RecordLayout) -> Result<Plan> {
        if let Some(pc) = layout.legacy_pc_offset() {
            return Ok(Plan::Legacy { pc: pc as usize, tsc: layout.tsc_offset().map(|t| t as usize) });
        }
        let field = |t: u16, what: &str| -> Result<Option<Field>> {
            let candidates: Vec<&Field> = layout.fields().iter().filter(|f| f.desc_type == t).collect();
            let f = candidates
                .iter()
                .find(|f| t != desc_type::TIME_STAMP || f.subtype == desc_subtype::TSC)
                .or(candidates.first());
            match f {
                None => Ok(None),
                Some(f) if f.size == 4 || f.size == 8 => Ok(Some(**f)),
                Some(f) => Err(Error::InvalidStream {
                    stream: n,
                    why: format!("its {what} field is {} bytes; binding reads 4- or 8-byte fields", f.size),
                }),
            }
        };
        let ip = field(desc_type::IP, "ST_IP")?;
        let pid = field(desc_type::PID, "ST_PID")?;
        match (ip, pid) {
            (Some(ip), Some(pid)) => Ok(Plan::Fields {
                ip,
                pid,
                tid: field(desc_type::TID, "ST_TID")?,
                tsc: field(desc_type::TIME_STAMP, "ST_TIME_STAMP")?,
            }),
            _ => Err(Error::InvalidStream {
                stream: n,
                why: format!(
                    "it cannot be bound: its data descriptor has {} (binding needs an ST_LEGACY_SAMPLE_RECORD, or ST_IP and ST_PID)",
                    match (ip, pid) {
                        (None, None) => "neither ST_IP nor ST_PID",
                        (None, _) => "no ST_IP",
                        _ => "no ST_PID",
                    }
                ),
            }),
        }
    }
}

impl Decoder {
    pub(super) fn for_stream(file: &Tb5File, s: &StreamReader<'_>) -> Result<Decoder> {
        let n = s.index();
        let layout = s
            .layout()?
            .ok_or(Error::SectionNotExist { section: SectionRef::Stream(n, StreamSection::DataDescription) })?;
        Ok(match Plan::for_layout(n, &layout)? {
            Plan::Legacy { pc, tsc } => {
                let pid_of_index = match file.processes()? {
                    Some(pt) => pt.pids().map(|p| p.id).collect(),
                    None => Vec::new(),
                };
                Decoder::Legacy { pc, tsc, pid_of_index }
            }
            Plan::Fields { ip, pid, tid, tsc } => Decoder::Fields { ip, pid, tid, tsc },
        })
    }

    /// The sample of one record. The caller hands whole records of the
    /// layout's size, so every field is inside; a field that is not reads as 0.
    #[inline]
    pub(super) fn decode(&self, rec: &[u8]) -> Sample {
        match self {
            Decoder::Legacy { pc, tsc, pid_of_index } => {
                // The four words binding needs, read in place (what
                // `LegacySample::from_record` gives for them, without
                // decoding the rest of the PC record).
                let Some(b) = rec.get(*pc..).and_then(<[u8]>::first_chunk::<{ SampleRecordPc::SIZE }>) else {
                    // Too short for a PC record: a sample of nothing.
                    let pid = pid_of_index.first().copied().unwrap_or(0);
                    return Sample { ip: 0, pid, tid: 0, tsc: None };
                };
                let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
                let word0 = u64::from(word(0)) | u64::from(word(4)) << 32;
                let (tid, raw, bits) = (word(20), word(24), word(28));
                let probe = SampleRecordPc { word0, bit_fields2: bits, ..Default::default() };
                let pid = if probe.pid_rec_index_raw() {
                    raw
                } else {
                    pid_of_index.get(raw as usize).copied().unwrap_or(raw)
                };
                let tsc = tsc.and_then(|t| rec.get(t..)?.first_chunk::<8>().map(|x| u64::from_le_bytes(*x)));
                Sample { ip: probe.ip(), pid, tid, tsc }
            }
            Decoder::Fields { ip, pid, tid, tsc } => {
                let read = |f: &Field| f.read_le(rec).unwrap_or(0);
                Sample {
                    ip: read(ip),
                    pid: read(pid) as u32,
                    tid: tid.as_ref().map_or(0, |t| read(t) as u32),
                    tsc: tsc.as_ref().map(read),
                }
            }
        }
    }
}
