//! A short, human-readable overview of a TB5 file: which sections it has,
//! and per stream the record layout, record count and events. The full
//! section-by-section dump is the `print_tb5` example's job; this is the
//! at-a-glance view.

use std::io::Write;

use super::file::Tb5File;
use crate::model::descriptor::desc_type;
use crate::model::error::{Error, Result};
use crate::model::section::{GlobalSection, StreamSection};

fn io(file: &Tb5File) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(file.path(), "write summary", e)
}

/// Writes the overview of `file` to `out`.
pub fn write_summary(file: &Tb5File, out: &mut dyn Write) -> Result<()> {
    let e = io(file);
    writeln!(out, "{}: TB5 (commit {}), {} strings", file.path().display(), file.generation(), file.string_count())
        .map_err(&e)?;
    let present: Vec<&str> = GlobalSection::ALL.iter().filter(|s| file.has_section(**s)).map(|s| s.c_name()).collect();
    writeln!(out, "global sections: {}", if present.is_empty() { "none".into() } else { present.join(", ") })
        .map_err(&e)?;
    if let Some(m) = file.modules()? {
        writeln!(out, "modules: {}", m.len()).map_err(&e)?;
    }
    if let Some(p) = file.processes()? {
        writeln!(out, "processes: {}, threads: {}", p.pid_count(), p.tid_count()).map_err(&e)?;
    }
    writeln!(out, "streams: {}", file.stream_count()).map_err(&e)?;
    for n in 0..file.stream_count() {
        let s = file.stream(n)?;
        let kind = match s.info()? {
            Some(i) => format!(
                "type {}{}",
                i.stream_type,
                file.string_opt(i.comment)?.map(|c| format!(" {c:?}")).unwrap_or_default()
            ),
            None => "no stream info".into(),
        };
        let records = match s.data()? {
            Some(d) => format!("{} records of {} bytes", d.len(), d.record_size()),
            None => "no data".into(),
        };
        let bound = if s.is_bound() { ", bound" } else { "" };
        writeln!(out, "  stream {n}: {kind}, {records}{bound}").map_err(&e)?;
        if let Some(layout) = s.layout()? {
            let descs = s.descriptor()?.unwrap_or_default();
            for f in layout.fields() {
                let name = descs.get(f.entry).map(|d| file.string_opt(d.name)).transpose()?.flatten().unwrap_or("");
                let t = desc_type::name(f.desc_type).map_or_else(|| format!("{:#06x}", f.desc_type), str::to_owned);
                writeln!(out, "    field {:>3}..{:<3} {t} {name:?}", f.offset, f.offset + f.size).map_err(&e)?;
            }
        }
        if let Some(events) = s.events()? {
            for ev in events {
                let name = file.string_opt(ev.name)?.unwrap_or("");
                // Names are quoted with their quotes escaped; ids are printed
                // in hex too, as winIDEA exports give their handles.
                writeln!(out, "    event {} ({:#x}) {name:?} sav {}", ev.id, ev.id, ev.sav).map_err(&e)?;
            }
        }
        if s.has_section(StreamSection::UserDefinedStream) {
            writeln!(out, "    user-defined: {} bytes", s.user_defined()?.map_or(0, <[u8]>::len)).map_err(&e)?;
        }
    }
    Ok(())
}
