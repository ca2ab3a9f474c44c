//! A short, human-readable overview of a TB5 file: which sections it has,
//! and per stream the record layout, record count and events. The full
//! section-by-section dump is the `print_tb5` example's job; this is the
//! at-a-glance view.

use std::io::Write;

use std::collections::HashMap;

use super::file::Tb5File;
use super::tables::ProcessTable;
use crate::model::descriptor::desc_type;
use crate::model::error::{Error, Result};
use crate::model::section::{GlobalSection, StreamSection};
use crate::text::{Escaped, Quoted};

fn io(file: &Tb5File) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(file.path(), "write summary", e)
}

/// Processes and threads the table records, each counted once: a table
/// holds a creation and a termination record per instance (guide 4.6), so
/// records are paired per id in table order; a termination without a
/// creation before it is an instance whose start was not recorded.
pub fn instances(table: &ProcessTable<'_>) -> (u64, u64) {
    fn count(records: impl Iterator<Item = (u64, bool)>) -> u64 {
        // Per id: whether an instance is open (created, not yet ended).
        let mut open: HashMap<u64, bool> = HashMap::new();
        let mut n = 0;
        for (id, destroyed) in records {
            let o = open.entry(id).or_default();
            match (destroyed, *o) {
                (false, _) => {
                    n += 1;
                    *o = true;
                }
                (true, true) => *o = false,
                (true, false) => n += 1,
            }
        }
        n
    }
    let pids = count(table.pids().map(|p| (u64::from(p.id), p.flags.is_destroyed())));
    let tids =
        count(table.tids().map(|t| ((u64::from(t.associated_pid) << 32) | u64::from(t.id), t.flags.is_destroyed())));
    (pids, tids)
}

/// Writes the overview of `file` to `out`.
pub fn write_summary(file: &Tb5File, out: &mut dyn Write) -> Result<()> {
    write_summary_with(file, out, &mut |_, _| Ok(()))
}

/// [`write_summary`], with lines of the caller's after each stream's
/// heading: `stream(n, out)` for stream `n` (the command line adds the
/// streams' first and last sample times, which this crate does not read).
pub fn write_summary_with<E: From<Error>>(
    file: &Tb5File,
    out: &mut dyn Write,
    stream: &mut dyn FnMut(u32, &mut dyn Write) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let e = io(file);
    let path = file.path().display().to_string();
    match (file.layout(), file.intel_version()) {
        (layout, Some(version)) => writeln!(out, "{}: {layout}, version {version}", Escaped(&path)),
        _ => writeln!(out, "{}: TB5 (commit {}), {} strings", Escaped(&path), file.generation(), file.string_count()),
    }
    .map_err(&e)?;
    let present: Vec<&str> = GlobalSection::ALL.iter().filter(|s| file.has_section(**s)).map(|s| s.c_name()).collect();
    writeln!(out, "global sections: {}", if present.is_empty() { "none".into() } else { present.join(", ") })
        .map_err(&e)?;
    if let Some(m) = file.modules()? {
        writeln!(out, "modules: {}", m.len()).map_err(&e)?;
    }
    if let Some(p) = file.processes()? {
        let (pids, tids) = instances(&p);
        writeln!(out, "processes: {pids}, threads: {tids} ({} records)", p.pid_count() + p.tid_count()).map_err(&e)?;
    }
    writeln!(out, "streams: {}", file.stream_count()).map_err(&e)?;
    for n in 0..file.stream_count() {
        let s = file.stream(n)?;
        let kind = match s.info()? {
            Some(i) => format!(
                "type {}{}",
                i.stream_type,
                file.string_opt(i.comment)?.map(|c| format!(" {}", Quoted(c))).unwrap_or_default()
            ),
            None => "no stream info".into(),
        };
        let records = match s.data()? {
            Some(d) => format!("{} records of {} bytes", d.len(), d.record_size()),
            None => "no data".into(),
        };
        let bound = if s.is_bound() { ", bound" } else { "" };
        writeln!(out, "  stream {n}: {kind}, {records}{bound}").map_err(&e)?;
        stream(n, out)?;
        if let Some(layout) = s.layout()? {
            let descs = s.descriptor()?.unwrap_or_default();
            for f in layout.fields() {
                let name = descs.get(f.entry).map(|d| file.string_opt(d.name)).transpose()?.flatten().unwrap_or("");
                let t = desc_type::name(f.desc_type).map_or_else(|| format!("{:#06x}", f.desc_type), str::to_owned);
                writeln!(out, "    field {:>3}..{:<3} {t} {}", f.offset, f.offset + f.size, Quoted(name))
                    .map_err(&e)?;
            }
        }
        if let Some(events) = s.events()? {
            for ev in events {
                let name = file.string_opt(ev.name)?.unwrap_or("");
                // Names are quoted, their quotes and control characters
                // escaped (crate::text); ids are printed in hex too, as
                // winIDEA exports give their handles.
                writeln!(out, "    event {} ({:#x}) {} sav {}", ev.id, ev.id, Quoted(name), ev.sav).map_err(&e)?;
            }
        }
        if s.has_section(StreamSection::UserDefinedStream) {
            writeln!(out, "    user-defined: {} bytes", s.user_defined()?.map_or(0, <[u8]>::len)).map_err(&e)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::process::{Pid, PidTidFlags, Tid};
    use crate::read::bind_view::BindTables;

    #[test]
    fn instances_pair_creation_and_termination_records() {
        let pid = |id, destroyed: bool| Pid {
            id,
            flags: if destroyed { PidTidFlags::DESTROYED } else { PidTidFlags::CREATED },
            ..Pid::default()
        };
        let tid = |id, destroyed: bool| Tid {
            associated_pid: 10,
            id,
            flags: if destroyed { PidTidFlags::DESTROYED } else { PidTidFlags::CREATED },
            ..Tid::default()
        };
        // One process of four threads, each started and ended (as the
        // collector writes them), and pid 10 reused by a second instance
        // whose end was not recorded; thread 5 only seen ending.
        let mut threads: Vec<_> = (1..=4).map(|t| tid(t, false)).collect();
        threads.extend((1..=4).map(|t| tid(t, true)));
        threads.push(tid(5, true));
        let tables = BindTables {
            processes: vec![pid(10, false), pid(10, true), pid(10, false)],
            threads,
            ..BindTables::default()
        };
        assert_eq!(instances(&ProcessTable::generated(&tables)), (2, 5));
    }
}
