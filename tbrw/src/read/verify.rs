//! [`Tb5File::verify`]: the whole-file check behind `TBRW_verify`. The top
//! of the reader: it imports the rest of it, nothing imports it.
//!
//! It checks, in this order, stopping at the first failure:
//! 1. magic, format version, header checksum and directory (done when the
//!    file is opened), and that the view is the newest commit: a newer one
//!    that does not read, passed over on open, is an error here;
//! 2. the checksum of every section, data included;
//! 3. the string table: offsets in order and inside their block, UTF-8;
//! 4. that every section decodes, and every string id in it names a string;
//! 5. the sections the guide's 6.2 requires: hardware, software, version
//!    info and modules; per stream: events, stream info, data descriptor
//!    and data;
//! 6. version info `sample_file_version` of at least 16;
//! 7. descriptors: no reserved type, every field inside the record, the
//!    data section's record size equal to the descriptor's, no legacy
//!    record outside stream 0;
//! 8. every legacy sample's `eventIndex` names an event of its stream;
//! 9. a stored bind fits its stream: one data bind per record, one module
//!    bind per module, one thread bind per thread, and every index in range;
//! 10. a stack table's parents come before their children (so every index
//!     is in range and there is no cycle), no stack has more than
//!     `MAX_STACK_DEPTH` frames, and every record's stack id names a node of
//!     its stream's table or is [`NO_STACK`].

use super::checks::{check_bind, check_ids, check_stack_ids, check_time_order};
use super::file::Tb5File;
use crate::format::raw::{DescEntryRaw, Raw};
use crate::model::descriptor::desc_type;
use crate::model::error::{Error, Location, Result};
use crate::model::sample::SampleRecordPc;
use crate::model::section::{GlobalSection, SectionRef, StreamSection};
use crate::model::strings::StringId;
use crate::model::version::MIN_SAMPLE_FILE_VERSION;

pub(crate) fn verify(file: &Tb5File) -> Result<()> {
    if file.intel().is_some() {
        return super::verify_intel::verify(file);
    }
    let path = file.path();
    let loc = |section: SectionRef, record: Option<u64>, offset: u64| Location {
        file: path.to_owned(),
        section,
        record,
        offset,
    };

    if let Some(e) = file.passed_over_error() {
        return Err(e);
    }
    for e in file.directory() {
        file.check_section_crc(e)?;
    }
    for id in 1..=file.string_count() {
        file.string(StringId(id))?;
    }

    let g = |s: GlobalSection| loc(s.into(), None, 0);
    if let Some(sw) = file.software()? {
        check_ids(file, sw, &|| g(GlobalSection::Software))?;
    }
    file.hardware()?;
    if let Some(pt) = file.processes()? {
        for (i, p) in pt.pids().enumerate() {
            check_ids(file, p, &|| loc(GlobalSection::ProcessThread.into(), Some(i as u64), 0))?;
        }
        for (i, t) in pt.tids().enumerate() {
            check_ids(file, t, &|| loc(GlobalSection::ProcessThread.into(), Some(i as u64), 0))?;
        }
    }
    if let Some(mt) = file.modules()? {
        for i in 0..mt.len() {
            check_ids(file, mt.get(i)?, &|| loc(GlobalSection::Module.into(), Some(i), 0))?;
        }
    }
    for s in GlobalSection::ALL {
        if s.is_required() && !file.has_section(s) {
            return Err(Error::MissingRequired { path: path.to_owned(), section: s.into() });
        }
    }
    if let Some(v) = file.version_info()? {
        if v.sample_file_version < MIN_SAMPLE_FILE_VERSION {
            return Err(Error::IncompatibleVersion {
                path: path.to_owned(),
                found: v.sample_file_version,
                min: MIN_SAMPLE_FILE_VERSION,
                max: u32::MAX,
            });
        }
    }

    for n in 0..file.stream_count() {
        let stream = file.stream(n)?;
        for s in StreamSection::ALL {
            if s.is_required() && !stream.has_section(s) {
                return Err(Error::MissingRequired { path: path.to_owned(), section: SectionRef::Stream(n, s) });
            }
        }
        let sref = |s| SectionRef::Stream(n, s);
        if let Some(info) = stream.info()? {
            check_ids(file, info, &|| loc(sref(StreamSection::StreamInfo), None, 0))?;
        }
        let events = stream.events()?.unwrap_or_default();
        for (i, e) in events.iter().enumerate() {
            check_ids(file, e.clone(), &|| loc(sref(StreamSection::EventDescription), Some(i as u64), 0))?;
        }
        let descs = stream.descriptor()?.unwrap_or_default();
        let desc_at = file.stream_entry(n, StreamSection::DataDescription).map_or(0, |e| e.raw.offset);
        for (i, d) in descs.iter().enumerate() {
            let at =
                || loc(sref(StreamSection::DataDescription), Some(i as u64), desc_at + (i * DescEntryRaw::SIZE) as u64);
            if desc_type::is_reserved(d.desc_type) {
                return Err(Error::malformed(at(), format!("desc_type {:#x} is reserved", d.desc_type)));
            }
            if d.desc_type == desc_type::LEGACY_SAMPLE_RECORD && n != 0 {
                return Err(Error::malformed(at(), "a legacy sample record outside stream 0"));
            }
            check_ids(file, d.clone(), &at)?;
        }
        check_bind(file, n)?;
        let table = stream.stack_table()?;
        if let Some(t) = &table {
            t.check()?;
        }
        let Some(layout) = stream.layout()? else { continue };
        let Some(data) = stream.data()? else { continue };
        check_stack_ids(file, n, &layout, &data, table.map_or(0, |t| t.len()))?;
        check_time_order(file, n, &layout, &data)?;
        for (i, d) in descs.iter().enumerate() {
            let stored_end = u64::from(d.offset) + u64::from(d.data_size);
            if !desc_type::is_extended(d.desc_type)
                && (layout.offset_of(i) != Some(d.offset) || stored_end > data.record_size() as u64)
            {
                return Err(Error::malformed(
                    loc(sref(StreamSection::DataDescription), Some(i as u64), desc_at + (i * DescEntryRaw::SIZE) as u64),
                    format!(
                        "field at bytes {}..{stored_end} does not lie where the layout puts it inside the {}-byte record",
                        d.offset,
                        data.record_size()
                    ),
                ));
            }
        }
        if data.record_size() != layout.record_size() as usize {
            return Err(Error::malformed(
                loc(sref(StreamSection::Data), None, data.file_offset()),
                format!(
                    "records are {} bytes but the data descriptor defines {}",
                    data.record_size(),
                    layout.record_size()
                ),
            ));
        }
        if let Some(pc) = layout.legacy_pc_offset() {
            let mut known = [false; 256];
            for e in &events {
                if let Ok(i) = u8::try_from(e.id) {
                    known[i as usize] = true;
                }
            }
            for (i, rec) in data.records().enumerate() {
                // The layout put the whole PC record inside the record size checked above.
                let ev = SampleRecordPc::from_slice(&rec[pc as usize..]).map_or(0, |p| p.event_index()) as usize;
                if !known[ev] {
                    return Err(Error::malformed(
                        loc(
                            sref(StreamSection::Data),
                            Some(i as u64),
                            data.file_offset() + (i * data.record_size()) as u64,
                        ),
                        format!("sample's eventIndex {ev} names no event of stream {n} ({} events)", events.len()),
                    ));
                }
            }
        }
    }
    Ok(())
}

impl Tb5File {
    /// Checks the whole file: docs/FORMAT.md ("What `verify` checks") lists the checks.
    pub fn verify(&self) -> Result<()> {
        verify(self)
    }
}
