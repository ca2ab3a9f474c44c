//! The small tables of a run, written once per exported file: `runs`
//! (host, source, import kind, command line, times, counts), `modules`,
//! `processes`, `threads`, `events`, `functions` and `stacks`.

use tbrw::*;

use super::schema::{TableWriter, V};
use super::streams::Functions;
use crate::error::ExportError;
use tbrw_query::stream::modules as resolved_modules;
use tbrw_schema::fields;

/// Windows FILETIME ticks (100 ns since 1601) of the Unix epoch.
const UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;

/// A stream info time as nanoseconds since the Unix epoch (`None` when unset or before 1970).
fn unix_ns(t: FileTime) -> Option<i64> {
    let ticks = t.ticks();
    (ticks > UNIX_EPOCH_TICKS).then(|| ((ticks - UNIX_EPOCH_TICKS) as i64).saturating_mul(100))
}

/// What made the file: `mtmc`, `winidea`, `perf` or `sampler` imports,
/// else `tb5` (written through the library or the C API).
pub fn import_kind(file: &Tb5File) -> Result<&'static str, ExportError> {
    if tbrw_query::file_symbols::is_sampler_import(file) {
        return Ok("sampler");
    }
    for n in 0..file.stream_count() {
        let s = file.stream(n)?;
        let descs = s.descriptor()?.unwrap_or_default();
        if tbrw_schema::mtmc::counters_of(&descs, file).is_some() {
            return Ok("mtmc");
        }
        let has = |t: u16| descs.iter().any(|d| d.desc_type == t);
        if has(fields::CALL_NET) || has(fields::WRITTEN_VALUE) {
            return Ok("winidea");
        }
        if has(fields::PERIOD) || has(fields::CALLCHAIN_SAMPLE) {
            return Ok("perf");
        }
    }
    Ok("tb5")
}

/// The host name the file records.
pub fn host_name(file: &Tb5File) -> Result<Option<String>, ExportError> {
    Ok(file.software()?.and_then(|s| s.host).and_then(|h| file.string_opt(h.name).ok().flatten().map(str::to_owned)))
}

/// One run's facts for the `runs` table.
pub struct RunRow<'a> {
    /// The host name the file records (or `--hostname`).
    pub host_name: Option<&'a str>,
    /// The TB5 file as given.
    pub source_file: &'a str,
    /// Its size.
    pub source_bytes: u64,
    /// [`import_kind`].
    pub import_kind: &'a str,
    /// First and last record time in nanoseconds.
    pub first_last_ns: (Option<i64>, Option<i64>),
    /// Rows written to `samples` and `intervals`.
    pub samples: u64,
    /// See `samples`.
    pub intervals: u64,
}

/// Writes the `runs` row of `file`.
pub fn write_run(file: &Tb5File, row: &RunRow<'_>, out: &mut TableWriter) -> Result<(), ExportError> {
    let info = match file.stream_count() {
        0 => None,
        _ => file.stream(0)?.info()?,
    };
    let command = info.as_ref().and_then(|i| file.string_opt(i.command_line).ok().flatten());
    out.push(&[
        V::S(row.host_name),
        V::S(Some(row.source_file)),
        V::I64(Some(row.source_bytes as i64)),
        V::S(Some(row.import_kind)),
        V::S(command.filter(|c| !c.is_empty())),
        V::I64(info.as_ref().and_then(|i| unix_ns(i.start_time))),
        V::I64(info.as_ref().and_then(|i| unix_ns(i.end_time))),
        V::I64(row.first_last_ns.0),
        V::I64(row.first_last_ns.1),
        V::I32(Some(file.stream_count() as i32)),
        V::I64(Some(row.samples as i64)),
        V::I64(Some(row.intervals as i64)),
    ])
}

/// Writes the module table.
pub fn write_modules(file: &Tb5File, out: &mut TableWriter) -> Result<(), ExportError> {
    for (i, m) in resolved_modules(file)?.iter().enumerate() {
        out.push(&[
            V::I32(Some(i as i32)),
            V::S(m.name.as_deref()),
            V::S(m.path.as_deref()),
            V::I64(Some(i64::from(m.associated_pid))),
            V::U64(Some(m.load_address)),
            V::U64(Some(m.length)),
        ])?;
    }
    Ok(())
}

/// Writes the process and thread tables.
pub fn write_processes(
    file: &Tb5File,
    processes: &mut TableWriter,
    threads: &mut TableWriter,
) -> Result<(), ExportError> {
    let Some(pt) = file.processes()? else { return Ok(()) };
    let string = |id: StringId| file.string_opt(id).ok().flatten();
    for p in pt.pids() {
        processes.push(&[V::I64(Some(i64::from(p.id))), V::S(string(p.name)), V::S(string(p.path))])?;
    }
    for t in pt.tids() {
        threads.push(&[
            V::I64(Some(i64::from(t.id))),
            V::I64(Some(i64::from(t.associated_pid))),
            V::S(string(t.name)),
        ])?;
    }
    Ok(())
}

/// Writes every stream's events.
pub fn write_events(file: &Tb5File, out: &mut TableWriter) -> Result<(), ExportError> {
    for n in 0..file.stream_count() {
        for e in file.stream(n)?.events()?.unwrap_or_default() {
            out.push(&[
                V::I32(Some(n as i32)),
                V::I64(Some(i64::from(e.id))),
                V::S(file.string_opt(e.name).ok().flatten()),
                V::I64(Some(e.sav as i64)),
            ])?;
        }
    }
    Ok(())
}

/// Writes the functions the symbolizer found.
pub fn write_functions(functions: &Functions, out: &mut TableWriter) -> Result<(), ExportError> {
    for (id, module, name) in &functions.rows {
        out.push(&[V::I32(Some(*id)), V::I32(*module), V::S(Some(name))])?;
    }
    Ok(())
}

/// Writes the run's stack nodes (node id = row order).
pub fn write_stacks(stacks: &super::streams::RunStacks, out: &mut TableWriter) -> Result<(), ExportError> {
    for id in 0..stacks.len() {
        let (parent, address, module, function, depth, inline_depth) = stacks.row(id);
        out.push(&[
            V::I32(Some(id as i32)),
            V::I32(parent),
            V::U64(Some(address)),
            V::I32(module),
            V::I32(function),
            V::I32(Some(depth)),
            V::I32(Some(inline_depth)),
        ])?;
    }
    Ok(())
}
