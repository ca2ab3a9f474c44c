//! VTune's legacy sections where the API exposes their content: the events
//! of stream 0 in a file without a TBRW events section (VTune's sampling
//! driver writes only the legacy events section, 0x0E; Intel's reader
//! turns it into `TBRW_EVENT`s).
//!
//! The conversion is Intel's, as its 2020 library gives it on the VTune XE
//! 2015 and 2016 files (docs/FORMAT.md, "Legacy events"): per event its
//! name and CPU name (`haswell`), sample-after value, the EBS flag, and per
//! register set two details: the MSR written with the counter's start
//! value, and the PMD reload value.

use std::path::Path;

use crate::format::cursor::SectionCursor;
use crate::format::intel::raw::{LegacyEventRaw, LegacyEventsRaw, LegacyRegSetRaw, Raw};
use crate::model::error::{Error, Location, Result};
use crate::model::event::{access_method, Event, EventDetail, EventFlags};
use crate::model::section::{SectionRef, StreamSection};
use crate::model::strings::StringId;

use super::IntelEntry;

/// The events of VTune's legacy events section `e` of the file `bytes`.
pub(crate) fn legacy_events(path: &Path, bytes: &[u8], e: &IntelEntry) -> Result<Vec<Event<StringId>>> {
    let section = &bytes[e.range()];
    let here = SectionRef::Stream(0, StreamSection::EventDescription);
    let mut c = SectionCursor::new(section, e.offset, path, here);
    let head: LegacyEventsRaw = c.read("legacy events header")?;
    let n = c.check_count(head.num_events.into(), LegacyEventRaw::SIZE, "legacy events")?;
    let mut events = Vec::with_capacity(n);
    for i in 0..n {
        c.at_record(i as u64);
        let at = e.offset + c.position() as u64;
        let raw: LegacyEventRaw = c.read("legacy event")?;
        let bad = |what: String| {
            Error::malformed(
                Location { file: path.to_owned(), section: here, record: Some(i as u64), offset: at },
                what,
            )
        };
        let name =
            text_in(section, e.offset, raw.name_offset, raw.name_length).map_err(|w| bad(format!("its name {w}")))?;
        let arch = text_in(section, e.offset, raw.object_name_offset, raw.object_name_length)
            .map_err(|w| bad(format!("its CPU name {w}")))?;
        let sets = usize::try_from(raw.num_reg_sets).unwrap_or(usize::MAX);
        let first = raw.first_reg_set_offset as usize;
        let set_bytes = sets
            .checked_mul(LegacyRegSetRaw::SIZE)
            .and_then(|len| section.get(first..first.checked_add(len)?))
            .ok_or_else(|| bad(format!("its {sets} register sets at section byte {first} lie outside the section")))?;
        let regs: Vec<LegacyRegSetRaw> =
            set_bytes.chunks_exact(LegacyRegSetRaw::SIZE).filter_map(LegacyRegSetRaw::decode).collect();
        let details = regs
            .iter()
            .flat_map(|r| {
                let detail = |method, value| EventDetail {
                    access_size_bits: 64,
                    method,
                    access: 1,
                    address: u64::from(r.register),
                    value,
                    ..Default::default()
                };
                [detail(access_method::MSR, u64::from(r.esr_value)), detail(access_method::PMD, r.esr_count)]
            })
            .collect();
        // The id's high half is the event's index (its register set's event
        // id, or its place), the low half its group.
        let index = regs.first().map_or(i as u32, |r| r.event_id);
        events.push(Event {
            id: (index << 16) | u32::from(raw.group_num),
            flags: EventFlags::EBS,
            sav: raw.event_rate,
            name,
            arch_name: arch,
            details,
        });
    }
    Ok(events)
}

/// The string id of a NUL-terminated text at `offset` (from the section
/// start, `length` bytes with its NUL) inside `section` (at file offset `base`).
fn text_in(section: &[u8], base: u64, offset: u32, length: u32) -> std::result::Result<StringId, String> {
    if length == 0 {
        return Ok(StringId::NONE);
    }
    let (start, len) = (offset as usize, length as usize);
    let text = start
        .checked_add(len)
        .and_then(|end| section.get(start..end))
        .ok_or_else(|| format!("at section bytes {start}..+{len} lies outside the section"))?;
    if !text.contains(&0) {
        return Err(format!("at section bytes {start}..+{len} has no NUL"));
    }
    Ok(StringId(base + u64::from(offset)))
}
