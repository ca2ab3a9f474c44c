//! `verify` of a file in Intel's layout (docs/FORMAT.md, "What `verify`
//! checks"). A top module of the reader, beside `verify.rs`.
//!
//! In this order, stopping at the first failure:
//! 1. Intel's own rule: the legacy sections its `TBRW_verify` requires
//!    (sample records, modules, software, sample-record header,
//!    `vtsa_sys_info`); a file without one is error 24 there and here;
//! 2. the section tables (checked when the file was opened);
//! 3. every section decodes, and every string in it is a NUL-terminated
//!    UTF-8 text inside the file;
//! 4. per stream: its records are whole records of the descriptor's size,
//!    and the section's entry count is theirs, unless it is the count
//!    Intel's writer stores by mistake (stream 0's, in a stream of type 2,
//!    3 or 8 of a file whose stream 0 holds legacy sample records);
//! 5. a stored bind (VTune's or `TBRW_dobind`'s bind streams) fits its
//!    stream and the tables: one entry per record, module and thread, and
//!    every index in range;
//! 6. this project's stack table of a stream (a custom stream): parents
//!    before children, no stack too deep, every record's stack id a node;
//!    records this project's writer said are in time order are.

use super::checks::{check_bind, check_ids, check_stack_ids, check_time_order};
use super::file::Tb5File;
use crate::format::intel::VERIFY_REQUIRES;
use crate::model::error::{Error, Location, Result};
use crate::model::layout::intel_section_name;
use crate::model::section::{GlobalSection, SectionRef, StreamSection};
use crate::model::stream::stream_type;

pub(super) fn verify(file: &Tb5File) -> Result<()> {
    let Some(index) = file.intel() else { return Ok(()) };
    let path = file.path();
    for t in VERIFY_REQUIRES {
        if index.legacy(t).is_none() {
            return Err(Error::InvalidSampleFile {
                path: path.to_owned(),
                what: format!(
                    "Intel's library requires the legacy section type {t:#x} ({}), which the file lacks",
                    intel_section_name(t)
                ),
            });
        }
    }
    let loc = |section: SectionRef, record: Option<u64>| Location { file: path.to_owned(), section, record, offset: 0 };
    file.hardware()?;
    file.version_info()?;
    file.user_defined_global()?;
    if let Some(sw) = file.software()? {
        check_ids(file, sw, &|| loc(GlobalSection::Software.into(), None))?;
    }
    if let Some(pt) = file.processes()? {
        for (i, p) in pt.pids().enumerate() {
            check_ids(file, p, &|| loc(GlobalSection::ProcessThread.into(), Some(i as u64)))?;
        }
        for (i, t) in pt.tids().enumerate() {
            check_ids(file, t, &|| loc(GlobalSection::ProcessThread.into(), Some(i as u64)))?;
        }
    }
    if let Some(mt) = file.modules()? {
        for i in 0..mt.len() {
            check_ids(file, mt.get(i)?, &|| loc(GlobalSection::Module.into(), Some(i)))?;
        }
    }
    for n in 0..file.stream_count() {
        verify_stream(file, n)?;
    }
    Ok(())
}

/// Whether stream 0 holds legacy sample records (the case of Intel's
/// writer's wrong count).
fn stream0_is_legacy(file: &Tb5File) -> Result<bool> {
    let Ok(s) = file.stream(0) else { return Ok(false) };
    Ok(s.layout()?.is_some_and(|l| l.legacy_pc_offset().is_some()))
}

fn verify_stream(file: &Tb5File, n: u32) -> Result<()> {
    let stream = file.stream(n)?;
    let at = |s: StreamSection, record: Option<u64>| Location {
        file: file.path().to_owned(),
        section: SectionRef::Stream(n, s),
        record,
        offset: 0,
    };
    let info = stream.info()?;
    if let Some(i) = &info {
        check_ids(file, i.clone(), &|| at(StreamSection::StreamInfo, None))?;
    }
    for (i, e) in stream.events()?.unwrap_or_default().into_iter().enumerate() {
        check_ids(file, e, &|| at(StreamSection::EventDescription, Some(i as u64)))?;
    }
    for (i, d) in stream.descriptor()?.unwrap_or_default().into_iter().enumerate() {
        check_ids(file, d, &|| at(StreamSection::DataDescription, Some(i as u64)))?;
    }
    stream.user_defined()?;
    if let Some(data) = stream.data()? {
        let entry = file.intel().and_then(|i| i.stream_entry(n, StreamSection::Data)).copied();
        let stored = entry.map_or(0, |e| e.number_entries);
        if stored != data.len() {
            let bug_count = file.stream(0)?.data()?.map_or(0, |d| d.len());
            let bug_type = info.as_ref().is_some_and(|i| {
                matches!(i.stream_type, stream_type::AGGREGATED | stream_type::BOOKMARK | stream_type::CUSTOM)
            });
            if !(bug_type && stored == bug_count && stream0_is_legacy(file)?) {
                return Err(Error::malformed(
                    Location { offset: entry.map_or(0, |e| e.entry_at), ..at(StreamSection::Data, None) },
                    format!(
                        "the section entry says {stored} records, its {} bytes hold {} of {} bytes",
                        data.as_bytes().len(),
                        data.len(),
                        data.record_size()
                    ),
                ));
            }
        }
    }
    check_bind(file, n)?;
    // This project's stack table (a custom stream naming this stream): its
    // nodes, and every record's stack id.
    let table = stream.stack_table()?;
    if let Some(t) = &table {
        t.check()?;
    }
    if let (Some(layout), Some(data)) = (stream.layout()?, stream.data()?) {
        check_stack_ids(file, n, &layout, &data, table.map_or(0, |t| t.len()))?;
        check_time_order(file, n, &layout, &data)?;
    }
    Ok(())
}
