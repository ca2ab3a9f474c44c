//! Checks `verify` makes of every layout's files: the string ids of a
//! value, and a stored bind against its stream and the tables. Imported by
//! `verify.rs` and `verify_intel.rs`; imports neither.

use tbrw_bind::UNKNOWN_MODULE;

use super::bind_view::BindView;
use super::file::Tb5File;
use crate::model::error::{Error, Location, Result};
use crate::model::section::{BindSection, SectionRef};
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
