//! VTune's legacy sections of a new file (docs/FORMAT.md, "The legacy
//! sections (for a writer)"), in the file header beside the global table,
//! in the order Intel's writer puts them: `vtsa_sys_info` (0x18), software
//! (0x0D), pids and tids (0x03, 0x07, when the file has processes),
//! modules (0x02), the sample-record header (0x13), stream 0's sample
//! records (0x01) and the header-ex section (0x10).
//!
//! Intel's `TBRW_verify` requires 0x01, 0x02, 0x0D, 0x13 and 0x18 to be
//! present and not empty, and its reader 0x10 to open the file; of their
//! content it reads only 0x18, for the system and the application of a
//! file stating a sample file version below 22, whose cpu entries are
//! sized by that version. So every file gets them: stream 0's records are the
//! sample records when they are legacy PC records; a file without such
//! records (or without modules) gets an 8-byte placeholder of no entries
//! there, which Intel's verify accepts.

use super::emit::{entry, Emitter};
use super::encode::Placed;
use crate::format::intel::legacy::{self as enc, SoftwareTexts, Stream0};
use crate::format::intel::raw::SectionTb6Raw;
use crate::format::intel::section_type as st;
use crate::model::descriptor::RecordLayout;
use crate::model::error::Result;
use crate::model::hardware::System;
use crate::model::strings::StringId;
use crate::model::version::INTEL_SAMPLE_FILE_VERSION;

/// Bytes of the placeholder of an empty required section.
const PLACEHOLDER: [u8; 8] = [0; 8];

/// Writes the legacy sections and adds their entries to `entries`.
pub(super) fn write(em: &mut Emitter<'_>, p: &Placed, entries: &mut Vec<SectionTb6Raw>) -> Result<()> {
    let text = |id: StringId| p.strings.text(id);
    let g = &p.globals;
    let app = g.software.as_ref().and_then(|s| s.application.as_ref());
    let empty = System::default();
    // Without a version info Intel's reader reads no system at all; its
    // own writer's entry size (72) is written then.
    let version = g.version.map_or(INTEL_SAMPLE_FILE_VERSION, |v| v.sample_file_version);
    let sys = enc::sys_info(g.system.as_ref().unwrap_or(&empty), app, version);
    let at = em.put(&sys)?;
    entries.push(entry(st::LEGACY_SYS_INFO, at, sys.len() as u64, 1, 48));

    let mut sw = SoftwareTexts::default();
    if let Some(s) = &g.software {
        if let Some(h) = &s.host {
            sw.host_name = text(h.name);
            sw.ip_address = text(h.ip_address);
        }
        if let Some(o) = &s.os {
            sw.os_name = text(o.name);
            sw.os_name_extra = text(o.name_extra);
            sw.os = [o.platform, o.major, o.minor, o.build];
        }
    }
    let b = enc::software(&sw);
    let at = em.put(&b)?;
    entries.push(entry(st::LEGACY_SOFTWARE, at, b.len() as u64, 1, b.len() as u32));

    if let Some((pids, tids)) = &g.processes {
        let b = enc::pids(pids, &text);
        let at = em.put(&b)?;
        entries.push(entry(st::LEGACY_PIDS, at, b.len() as u64, pids.len() as u64, 40));
        let b = enc::tids(tids);
        let at = em.put(&b)?;
        entries.push(entry(st::LEGACY_TIDS, at, b.len() as u64, tids.len() as u64, 40));
    }

    let modules = g.modules.as_deref().unwrap_or_default();
    let b = if modules.is_empty() { PLACEHOLDER.to_vec() } else { enc::modules(modules, &text) };
    let at = em.put(&b)?;
    entries.push(entry(st::LEGACY_MODULES, at, b.len() as u64, modules.len() as u64, 64));

    let mut s0 = Stream0::default();
    if let Some(i) = &p.stream0_info {
        s0.interval_us = i.sampling_interval_us;
        s0.duration_ms = i.sampling_duration_ms;
        s0.start = i.start_time;
        s0.end = i.end_time;
    }
    let mut records = None;
    if let Some(d) = &p.stream0 {
        s0.records = d.count;
        s0.record_size = d.record_size;
        if let Ok(layout) = RecordLayout::as_given(&d.descriptor) {
            s0.pc_offset = layout.legacy_pc_offset();
            s0.tsc_offset = layout.tsc_offset();
        }
        if s0.pc_offset.is_some() && d.len > 0 {
            records = Some(entry(st::LEGACY_SAMPLE_RECORDS, d.offset, d.len, d.count, d.record_size));
        }
    }
    let b = enc::record_header(&s0, entries.len() as u32);
    let at = em.put(&b)?;
    let mut e = entry(st::LEGACY_SAMPLE_RECORD_HEADER, at, b.len() as u64, 1, b.len() as u32);
    e.desc_entry_id = -1;
    entries.push(e);

    let records = match records {
        Some(r) => r,
        None => entry(st::LEGACY_SAMPLE_RECORDS, em.put(&PLACEHOLDER)?, PLACEHOLDER.len() as u64, 0, 0),
    };
    entries.push(records);

    let b = enc::header_ex(&s0);
    let at = em.put(&b)?;
    entries.push(entry(st::LEGACY_HEADER_EX, at, b.len() as u64, 1, b.len() as u32));
    Ok(())
}
