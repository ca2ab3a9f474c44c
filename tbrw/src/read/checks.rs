//! Checks `verify` makes of every layout's files: the string ids of a
//! value, a stored bind against its stream and the tables, a stream's
//! time order and its stack ids. Imported by
//! `verify.rs` and `verify_intel.rs`; imports neither.

use tbrw_bind::UNKNOWN_MODULE;

use super::bind_view::BindView;
use super::file::Tb5File;
use crate::model::error::{Error, Location, Result};
use crate::model::section::{BindSection, SectionRef, StreamSection};
use crate::model::stack::{NO_STACK, STACK_ID_FIELD};
use crate::model::strings::{MapStrings, StringId};

/// Every string id of `v` names a string of `file` (`at`: where `v` is).
pub(super) fn check_ids<T: MapStrings<StringId>>(file: &Tb5File, v: T, at: &dyn Fn() -> Location) -> Result<()> {
    v.map_strings(&mut |id: StringId| {
        if file.intel().is_some() {
            super::intel::check_string(file.path(), file.bytes(), id)
        } else if id.0 > file.string_count() {
            Err(Error::malformed(
                at(),
                format!("string id {} names no string (the file has {})", id.0, file.string_count()),
            ))
        } else {
            Ok(())
        }
    })
    .map(|_| ())
}

/// A stored bind fits its stream: one data bind per record, one module bind
/// per module, one thread bind per thread, every index in range.
pub(super) fn check_bind(file: &Tb5File, n: u32) -> Result<()> {
    let Some(view) = BindView::stored(file, n)? else { return Ok(()) };
    let at = |b: BindSection, record: Option<u64>| Location {
        file: file.path().to_owned(),
        section: SectionRef::Bind(n, b),
        record,
        offset: file.bind_entry(n, b).map_or(0, |e| e.raw.offset),
    };
    let records = file.stream(n)?.data()?.map_or(0, |d| d.len());
    let modules = file.modules()?.map_or(0, |m| m.len());
    let (np, nt) = (view.process_count(), view.thread_count());
    let data_section = view.data_section().unwrap_or(BindSection::Data);
    let counts = [
        (data_section, view.len(), records, "data records"),
        (BindSection::Modules, view.module_bind_count(), modules, "modules"),
    ];
    for (b, have, want, what) in counts {
        if have != want {
            return Err(Error::malformed(at(b, None), format!("{have} entries for {want} {what}")));
        }
    }
    for i in 0..view.len() {
        let d = view.data_bind(i).unwrap_or_default();
        if (d.module_index != UNKNOWN_MODULE && d.module_index >= modules) || d.pid_index >= np || d.tid_index >= nt {
            return Err(Error::malformed(
                at(data_section, Some(i)),
                format!(
                    "bind (module {}, process {}, thread {}) is out of range ({modules} modules, {np} processes, {nt} threads)",
                    d.module_index, d.pid_index, d.tid_index
                ),
            ));
        }
    }
    for i in 0..view.module_bind_count() {
        if view.module_bind(i).is_none_or(|m| m.pid_index >= np) {
            return Err(Error::malformed(
                at(BindSection::Modules, Some(i)),
                format!("process index out of range ({np} processes)"),
            ));
        }
    }
    for i in 0..nt {
        if view.tid_bind(i).is_none_or(|t| t.pid_index >= np) {
            return Err(Error::malformed(
                at(BindSection::TidBinds, Some(i)),
                format!("process index out of range ({np} processes)"),
            ));
        }
        if let Some(t) = view.thread(i) {
            check_ids(file, t, &|| at(BindSection::Threads, Some(i)))?;
        }
    }
    for i in 0..np {
        if let Some(p) = view.process(i) {
            check_ids(file, p, &|| at(BindSection::Processes, Some(i)))?;
        }
    }
    Ok(())
}

/// A data section marked time-ordered has a time field, and no record's
/// time is below its predecessor's.
pub(super) fn check_time_order(
    file: &Tb5File,
    n: u32,
    layout: &crate::model::descriptor::RecordLayout,
    data: &super::DataSection<'_>,
) -> Result<()> {
    if !data.time_ordered() {
        return Ok(());
    }
    let at = |k: usize| Location {
        file: file.path().to_owned(),
        section: SectionRef::Stream(n, StreamSection::Data),
        record: Some(k as u64),
        offset: data.file_offset() + (k * data.record_size()) as u64,
    };
    let Some((offset, size)) = layout.time_at() else {
        return Err(Error::malformed(at(0), "marked as in time order, but its records have no time field"));
    };
    let (offset, size) = (offset as usize, size as usize);
    let mut last = 0u64;
    for (k, rec) in data.records().enumerate() {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(&rec[offset..offset + size]);
        let t = u64::from_le_bytes(b);
        if t < last {
            return Err(Error::malformed(
                at(k),
                format!("time {t} is below the previous record's {last}, but the section is marked as in time order"),
            ));
        }
        last = t;
    }
    Ok(())
}

/// Every stack id field of stream `n`'s records names one of the `nodes`
/// of its stack table, or no stack.
pub(super) fn check_stack_ids(
    file: &Tb5File,
    n: u32,
    layout: &crate::model::descriptor::RecordLayout,
    data: &super::DataSection<'_>,
    nodes: u64,
) -> Result<()> {
    let Some(f) = layout.find(STACK_ID_FIELD, None).copied() else { return Ok(()) };
    for (k, rec) in data.records().enumerate() {
        let id = f.read_le(rec).unwrap_or(0);
        if id != u64::from(NO_STACK) && id >= nodes {
            return Err(Error::malformed(
                Location {
                    file: file.path().to_owned(),
                    section: SectionRef::Stream(n, StreamSection::Data),
                    record: Some(k as u64),
                    offset: data.file_offset() + (k * data.record_size()) as u64 + u64::from(f.offset),
                },
                if nodes == 0 {
                    format!("stack id {id}, and the stream has no stack table")
                } else {
                    format!("stack id {id} names no node of the stream's stack table ({nodes} nodes)")
                },
            ));
        }
    }
    Ok(())
}
