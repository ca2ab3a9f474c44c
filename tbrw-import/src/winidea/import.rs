//! The TB5 file of a winIDEA import: stream 0 the calls, stream 1 the data
//! writes, the contexts as the thread table.

use std::collections::BTreeSet;
use std::io::{BufReader, Read, Seek, SeekFrom, Write as _};

use tbrw::*;

use super::bin::{bin_version, for_each_bin_event, BinVersion, ENTRY, UNKNOWN_CONTEXT};
use super::check::{check, Difference};
use super::text1::{parse_text1_from, Export};
use super::timeline::{Builder, Built};
use super::TimelineEvent;
use crate::error::ImportError;
use tbrw_schema::descriptor::field;
use tbrw_schema::fields;

use crate::globals::write_globals;

/// What a winIDEA import did.
#[derive(Clone, Debug, Default)]
pub struct WinIdeaStats {
    /// Timeline events read (Text1 and `.BIN`).
    pub events: u64,
    /// Calls written.
    pub calls: u64,
    /// Data writes written.
    pub writes: u64,
    /// Calls under way when the trace begins (not written).
    pub started_before: u64,
    /// Calls still open at the end (not written).
    pub unfinished: u64,
    /// Session time of the stored time stamps' zero (the earliest event's
    /// time when that is negative, else 0).
    pub time_origin_ns: i64,
    /// The `.BIN` version read, if any.
    pub bin_version: Option<BinVersion>,
    /// Statistics figures that agree (with `--check`).
    pub agree: u64,
    /// Statistics figures that differ (with `--check`).
    pub differences: Vec<Difference>,
    /// Statistics figures a timeline cannot give: line and what.
    pub unchecked: Vec<super::Unchecked>,
}

/// Anything that reads and seeks, as a `dyn` (the `.BIN` input).
pub trait ReadSeek: Read + Seek {}

impl<T: Read + Seek + ?Sized> ReadSeek for T {}

/// The `.BIN` timeline of an import: its input (read from where it stands
/// to its end, twice when its layout is detected) and its name in errors.
pub struct BinInput<'a> {
    /// The `.BIN` bytes.
    pub input: &'a mut dyn ReadSeek,
    /// Its name, for errors.
    pub name: &'a str,
}

/// What a winIDEA import is asked besides its inputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct WinIdeaOptions {
    /// The `.BIN` layout (default: detected, with a pass of its own).
    pub bin_version: Option<BinVersion>,
    /// Compare the export's STATISTICS with the timeline's figures too
    /// (the figures are built either way, the comparison only when asked).
    pub check: bool,
}

/// Imports the Text1 export `text` (named `name` in errors and in the
/// stream's command line), and the `.BIN` timeline `bin` when there is one,
/// into `w` (the caller closes it, or drops it on error and nothing is
/// written). The export is read once, line by line. The `.BIN` is read a
/// megabyte at a time, its events merged in time order with the export's
/// TIMELINE section (an event of the section first on a tie), and calls
/// are built and written as they complete: memory holds the open calls and
/// the figures, never the events, so a `.BIN` of any size takes a bounded
/// amount (the data writes wait in a temporary file for their stream).
pub fn import_winidea(
    text: impl Read,
    name: &str,
    bin: Option<BinInput<'_>>,
    w: &mut Tb5Writer,
    opts: &WinIdeaOptions,
) -> Result<WinIdeaStats, ImportError> {
    let mut ex = parse_text1_from(BufReader::with_capacity(1 << 20, text), name)?;
    let mut stats = WinIdeaStats::default();
    let text_events = std::mem::take(&mut ex.timeline);
    let has_bin = bin.is_some();
    let bin_name = bin.as_ref().map_or(name, |b| b.name);
    // The `.BIN`'s layout and first event: the earliest time is needed
    // before any record is written.
    let mut bin = match bin {
        Some(mut b) => {
            let (version, first) = bin_start(&mut b, opts.bin_version)?;
            stats.bin_version = Some(version);
            Some((b, version, first))
        }
        None => None,
    };

    // TB5 time stamps are unsigned; winIDEA's are signed (pre-trigger events
    // are negative), so a timeline that starts before 0 is shifted to start
    // at 0 and the shift is recorded in the streams' user-defined data. The
    // events come in time order (else the build stops), so the earliest is
    // a first one.
    let first_text = text_events.iter().map(|e| e.time).min();
    let first_bin = bin.as_ref().and_then(|(_, _, f)| *f);
    let origin = first_text.into_iter().chain(first_bin).min().unwrap_or(0).min(0);
    stats.time_origin_ns = origin;

    write_globals(
        w,
        &Software {
            os: Some(Os { name: Some("embedded target (winIDEA)".into()), platform: 0x100, ..Default::default() }),
            ..Default::default()
        },
    )?;
    w.write_modules(&[])?;
    let ns = desc_subtype::TS_NANOSECONDS;
    // Stream 0: calls of functions and lines, written as they complete.
    let mut s = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("winidea calls".into()),
            command_line: Some(format!("winidea export {name}")),
            ..Default::default()
        })?
        .data_descriptor(&[
            field(desc_type::TIME_STAMP, ns, 8, "start_session_ns"),
            field(desc_type::TIME_STAMP, ns, 8, "end_session_ns"),
            field(fields::CALL_NET, 0, 8, "net_ns"),
            field(fields::CALL_GROSS, 0, 8, "gross_ns"),
            field(fields::EVENT_ID, 0, 4, "handle"),
            field(desc_type::TID, 0, 4, "context"),
        ])?;
    s.events(&events_of(&ex, &|h| h >> 28 <= 1))?;
    let mut built = BuiltRecords {
        name,
        origin,
        calls: Vec::with_capacity(1 << 20),
        // The writes' records wait in an unnamed temporary file for stream 1.
        writes: std::io::BufWriter::with_capacity(
            1 << 20,
            tempfile::tempfile().map_err(|e| ImportError::spill(name, e))?,
        ),
        failed: None,
        contexts_seen: ex.contexts.keys().copied().collect(),
        stats: &mut stats,
    };
    let tl = {
        let mut data = s.data()?;
        let mut builder = Builder::new(&ex, name, bin_name);
        let bin = bin.as_mut().map(|(b, version, _)| (b, *version));
        built.stats.events += merge(&text_events, bin, &mut builder, &mut |b| built.add(b, &mut data))?;
        if let Some(e) = built.failed.take() {
            return Err(e);
        }
        data.add(&built.calls)?;
        data.done()?;
        builder.finish(ex.total_time)
    };
    let BuiltRecords { writes, contexts_seen, .. } = built;
    stats.started_before = tl.started_before;
    stats.unfinished = tl.unfinished;
    if opts.check {
        let checked = check(&ex, &tl);
        stats.agree = checked.agree;
        stats.differences = checked.differences;
        stats.unchecked = checked.unchecked;
    }
    let contexts: Vec<String> = {
        let mut v: Vec<(&u32, &String)> = ex.contexts.iter().collect();
        v.sort();
        v.into_iter().map(|(k, n)| format!("{k:#x}={n}")).collect()
    };
    s.user_defined(format!("time_origin_ns {origin}\ncontexts {}\n", contexts.join(";")).as_bytes())?;
    s.finish()?;
    write_data_writes(w, &ex, name, origin, writes)?;
    write_contexts(w, &ex, contexts_seen, has_bin)?;
    Ok(stats)
}

/// The `.BIN`'s layout (detected unless given) and its first event's
/// time; the input is left where it stood.
fn bin_start(b: &mut BinInput<'_>, given: Option<BinVersion>) -> Result<(BinVersion, Option<i64>), ImportError> {
    let version = bin_version(b.input, b.name, given)?;
    let io = |e| ImportError::io(b.name, e);
    let start = b.input.stream_position().map_err(io)?;
    let mut first = None;
    let mut entry = [0u8; ENTRY];
    if b.input.read_exact(&mut entry).is_ok() {
        first = Some(super::bin::parse_entry(&entry, 0, version, b.name)?.time);
    }
    b.input.seek(SeekFrom::Start(start)).map_err(io)?;
    Ok((version, first))
}

/// The export's events whose handle `filter` keeps, named.
fn events_of(ex: &Export, filter: &dyn Fn(u32) -> bool) -> Vec<Event> {
    ex.order
        .iter()
        .filter(|h| filter(**h))
        .map(|h| Event { id: *h, name: Some(ex.names[h].clone()), ..Default::default() })
        .collect()
}

/// The TIMELINE section's events and the `.BIN`'s, merged in time order
/// (an event of the section first on a tie) into `builder`; how many.
fn merge(
    text_events: &[TimelineEvent],
    bin: Option<(&mut BinInput<'_>, BinVersion)>,
    builder: &mut Builder<'_>,
    emit: &mut dyn FnMut(Built),
) -> Result<u64, ImportError> {
    let mut text_at = 0;
    let mut events = 0u64;
    if let Some((b, version)) = bin {
        for_each_bin_event(b.input, b.name, Some(version), &mut |e| {
            while let Some(t) = text_events.get(text_at).filter(|t| t.time <= e.time) {
                events += 1;
                builder.push(t, emit)?;
                text_at += 1;
            }
            events += 1;
            builder.push(&e, emit)
        })?;
    }
    for t in &text_events[text_at..] {
        events += 1;
        builder.push(t, emit)?;
    }
    Ok(events)
}

/// Where the built calls and writes go as they complete: calls batched for
/// stream 0's data section, writes spilled to a temporary file for stream 1.
struct BuiltRecords<'a> {
    name: &'a str,
    /// The session time of the stored time stamps' zero.
    origin: i64,
    calls: Vec<u8>,
    writes: std::io::BufWriter<std::fs::File>,
    /// The first failure to store a record: the builder's callback cannot
    /// return one, so it waits here for the end of the merge.
    failed: Option<ImportError>,
    contexts_seen: BTreeSet<u32>,
    stats: &'a mut WinIdeaStats,
}

impl BuiltRecords<'_> {
    fn add(&mut self, built: Built, data: &mut DataSectionWriter<'_>) {
        let origin = self.origin;
        let stamp = |t: i64| -> u64 { t.wrapping_sub(origin) as u64 };
        match built {
            Built::Call(c) => {
                self.stats.calls += 1;
                self.contexts_seen.insert(c.context);
                // Written out before a record would outgrow the buffer's
                // megabyte (40-byte records do not fill it exactly: growing
                // it would copy it into two).
                if self.calls.len() + CALL_RECORD > self.calls.capacity() {
                    if self.failed.is_none() {
                        if let Err(e) = data.add(&self.calls) {
                            self.failed = Some(e.into());
                        }
                    }
                    self.calls.clear();
                }
                let calls = &mut self.calls;
                calls.extend_from_slice(&stamp(c.start).to_le_bytes());
                calls.extend_from_slice(&stamp(c.end).to_le_bytes());
                calls.extend_from_slice(&c.net.to_le_bytes());
                calls.extend_from_slice(&c.gross.to_le_bytes());
                calls.extend_from_slice(&c.handle.to_le_bytes());
                calls.extend_from_slice(&c.context.to_le_bytes());
            }
            Built::Write(wr) => {
                self.stats.writes += 1;
                self.contexts_seen.insert(wr.context);
                let mut rec = [0u8; 24];
                rec[..8].copy_from_slice(&stamp(wr.time).to_le_bytes());
                rec[8..16].copy_from_slice(&wr.value.to_le_bytes());
                rec[16..20].copy_from_slice(&wr.handle.to_le_bytes());
                rec[20..].copy_from_slice(&wr.context.to_le_bytes());
                if let Err(e) = self.writes.write_all(&rec) {
                    self.failed.get_or_insert(ImportError::spill(self.name, e));
                }
            }
        }
    }
}

/// Stream 1: the data writes, from the temporary file they waited in.
fn write_data_writes(
    w: &mut Tb5Writer,
    ex: &Export,
    name: &str,
    origin: i64,
    writes: std::io::BufWriter<std::fs::File>,
) -> Result<(), ImportError> {
    let ns = desc_subtype::TS_NANOSECONDS;
    let mut s = w
        .stream(1)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("winidea data".into()),
            ..Default::default()
        })?
        .data_descriptor(&[
            field(desc_type::TIME_STAMP, ns, 8, "time_session_ns"),
            field(fields::WRITTEN_VALUE, 0, 8, "value"),
            field(fields::EVENT_ID, 0, 4, "handle"),
            field(desc_type::TID, 0, 4, "context"),
        ])?;
    s.events(&events_of(ex, &|h| matches!(h >> 28, 2 | 4)))?;
    {
        let mut data = s.data()?;
        let mut spill = writes.into_inner().map_err(|e| ImportError::spill(name, e.into_error()))?;
        spill.seek(SeekFrom::Start(0)).map_err(|e| ImportError::spill(name, e))?;
        let mut buf = vec![0u8; 24 << 16];
        loop {
            let n = read_full(&mut spill, &mut buf).map_err(|e| ImportError::spill(name, e))?;
            if n == 0 {
                break;
            }
            data.add(&buf[..n])?;
        }
        data.done()?;
    }
    s.user_defined(format!("time_origin_ns {origin}\n").as_bytes())?;
    Ok(s.finish()?)
}

/// Contexts are the target's threads of execution: the thread table
/// names them, so the context field is an ST_TID.
fn write_contexts(w: &mut Tb5Writer, ex: &Export, seen: BTreeSet<u32>, has_bin: bool) -> Result<(), ImportError> {
    let mut pt = w.process_threads()?;
    for id in seen {
        let name = match ex.contexts.get(&id) {
            Some(n) => n.clone(),
            None if id == UNKNOWN_CONTEXT => "unknown context".to_owned(),
            None if has_bin => format!("core {id}"),
            None => format!("context {id:#x}"),
        };
        pt.add_thread(&Tid { associated_pid: 0, id, name: Some(name), ..Default::default() })?;
    }
    pt.done()?;
    Ok(())
}

/// Bytes of a call record in stream 0.
const CALL_RECORD: usize = 40;

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::error::Place;
    use crate::winidea::{write_bin, Pos, TimelineEvent};

    const EXPORT: &str = "* INFO %TOTAL_TIME%\n500\n\n* CONTEXTS %NAME%,%HANDLE%\nTASK,0x0\n\n\
        * HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,main,\n00000001,tick,\n\n\
        * STATISTICS(Functions) %HANDLE%,%VALUE%,%COUNT%\n00000000,,1\n00000001,,1\n\n\
        * TIMELINE %HANDLE%,%EVENT%,%VALUE%,%TIME%,%CONTEXT%\n00000000,E,,100,TASK\n00000001,E,,150,TASK\n\
        00000001,X,,250,TASK\n00000000,X,,400,TASK\n";

    #[test]
    fn an_export_in_memory_becomes_a_tb5_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("w.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let opts = WinIdeaOptions { check: true, ..Default::default() };
        let stats = import_winidea(EXPORT.as_bytes(), "session.txt", None, &mut w, &opts).unwrap();
        w.close().unwrap();
        assert_eq!((stats.events, stats.calls, stats.agree), (4, 2, 2));
        let f = Tb5File::open(&out).unwrap();
        assert_eq!(f.stream_count(), 2);
        let info = f.stream(0).unwrap().info().unwrap().unwrap();
        assert_eq!(f.string_opt(info.command_line).unwrap(), Some("winidea export session.txt"));
    }

    #[test]
    fn a_bin_in_memory_is_read_and_its_errors_name_it_and_the_byte() {
        let text = EXPORT.split("* TIMELINE").next().unwrap();
        let ev = |handle, kind, time| TimelineEvent { handle, kind, value: 0, time, context: 0, at: Pos::Byte(0) };
        let events = [ev(0, b'E', 100), ev(1, b'E', 150), ev(1, b'X', 250), ev(0, b'X', 400)];
        let mut bin = Cursor::new(write_bin(&events, BinVersion::V1_1));
        let dir = tempfile::tempdir().unwrap();
        let mut w = Tb5Writer::create(dir.path().join("w.tb5")).unwrap();
        let b = BinInput { input: &mut bin, name: "session.txt.BIN" };
        let stats =
            import_winidea(text.as_bytes(), "session.txt", Some(b), &mut w, &WinIdeaOptions::default()).unwrap();
        assert_eq!((stats.calls, stats.bin_version), (2, Some(BinVersion::V1_1)));
        drop(w);

        // An unknown handle in the third entry: the .BIN and the entry's byte.
        let mut bytes = write_bin(&events, BinVersion::V1_1);
        bytes[48] = 9;
        let mut w = Tb5Writer::create(dir.path().join("x.tb5")).unwrap();
        let b = BinInput { input: &mut Cursor::new(bytes), name: "session.txt.BIN" };
        let e =
            import_winidea(text.as_bytes(), "session.txt", Some(b), &mut w, &WinIdeaOptions::default()).unwrap_err();
        assert!(
            matches!(&e, ImportError::Invalid { input, place: Place::Offset(48), .. } if input == "session.txt.BIN"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "session.txt.BIN: byte 48: handle 00000009 is not in any HANDLE section");

        // A bad line of the export: its name and the line.
        let bad = EXPORT.replace("00000001,X,,250", "00000001,Q,,250");
        let e = import_winidea(bad.as_bytes(), "session.txt", None, &mut w, &WinIdeaOptions::default()).unwrap_err();
        assert!(matches!(e, ImportError::Invalid { place: Place::Line { line: 18, column: None }, .. }), "{e:?}");
    }
}
