//! The TB5 stream of an MTMC import (one record per task, the counters and
//! the task names as events, the tasks' threads in the thread table, the
//! process named after the log), and its records read back. The log is
//! read twice: once to check every line and collect what must precede the
//! records (task names, the record shape), once to write them; memory is
//! a constant plus what the output holds.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use tbrw::*;

use tbrw_schema::mtmc::{descriptor, encode, Shape, NAME_BASE, UNNAMED};

use super::log::{bad, parse_line, read_line, Layout, LineRead, Task, MAX_LINE};
use crate::error::{excerpt, ImportError, Place};
use crate::globals::write_globals;
use crate::progress::Progress;

/// Options of an MTMC import.
#[derive(Clone, Debug, Default)]
pub struct MtmcOptions {
    /// The process id; default: from a log named `mtmc_raw_<address>`.
    pub pid: Option<u32>,
}

/// What an MTMC import did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MtmcStats {
    /// Tasks imported.
    pub tasks: u64,
    /// Counters per task.
    pub counters: usize,
    /// Constants per task (2023 layout).
    pub constants: usize,
    /// The layout of the lines (`None` only for an empty log, which is an error).
    pub layout: Option<Layout>,
    /// Whether the lines carry topdown readings.
    pub topdown: bool,
    /// Blank lines skipped.
    pub blank_lines: u64,
    /// The first line whose number-of-events field [8.0] differs from the
    /// readings it implies (readings, plus 3 with v0.1 topdown): (line, field value, expected).
    pub events_field_mismatch: Option<(u64, u64, u64)>,
    /// Distinct threads (task and parent tids; a parent tid of 0 is none).
    pub threads: usize,
    /// Distinct task names.
    pub names: usize,
    /// Tasks with no end (end time 0).
    pub unended: u64,
    /// Tasks that ended on another CPU than they began on (no counter deltas).
    pub migrated: u64,
    /// The process id given to the tasks, and where it came from.
    pub pid: Option<(u32, PidSource)>,
}

/// Where the process id of an import came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidSource {
    /// `--pid`.
    Option,
    /// The log's name `mtmc_raw_<address>`: the address's low 32 bits.
    FileName,
}

/// The address of a log named `mtmc_raw_<address>` (the profiler writes
/// the decimal address of its profiler object, a signed 64-bit integer).
/// `name` may be a path: its last `/`-separated part is the file name.
pub fn address_of(name: &str) -> Option<i64> {
    let digits = file_name(name).strip_prefix("mtmc_raw_")?;
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The last `/`-separated part of an input's name.
fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Reads the log's tasks in order, with their line numbers; blank lines are counted in `blank`.
struct Lines<'a, R> {
    input: &'a str,
    reader: R,
    buf: Vec<u8>,
    line: u64,
    bytes: u64,
    blank: u64,
}

impl<'a, R: BufRead> Lines<'a, R> {
    fn new(input: &'a str, reader: R) -> Self {
        Lines { input, reader, buf: Vec::with_capacity(4096), line: 0, bytes: 0, blank: 0 }
    }

    fn next_task(&mut self) -> Result<Option<(u64, Task)>, ImportError> {
        loop {
            let at = self.bytes;
            let (found, n) = read_line(&mut self.reader, &mut self.buf).map_err(|e| ImportError::io(self.input, e))?;
            self.bytes += n;
            self.line += 1;
            match found {
                LineRead::Eof => return Ok(None),
                LineRead::TooLong => {
                    let text = String::from_utf8_lossy(&self.buf[..self.buf.len().min(200)]);
                    return Err(ImportError::LineTooLong {
                        input: self.input.to_owned(),
                        line: self.line,
                        offset: at,
                        limit: MAX_LINE,
                        longest: "the longest a task line can be",
                        begins: excerpt(&text),
                    });
                }
                LineRead::Line => {}
            }
            let text = std::str::from_utf8(&self.buf)
                .map_err(|e| bad(self.input, self.line, e.valid_up_to(), "the line is not UTF-8"))?;
            let text = text.trim_end_matches('\r');
            if text.trim().is_empty() {
                self.blank += 1;
                continue;
            }
            return parse_line(text, self.input, self.line).map(|t| Some((self.line, t)));
        }
    }
}

/// What the first pass learns: everything that precedes the records.
#[derive(Default)]
struct Survey {
    shape: Shape,
    layout: Option<Layout>,
    names: HashMap<String, u32>,
    name_order: Vec<String>,
    threads: Vec<(u32, u32)>,
    seen: HashMap<u32, ()>,
}

impl Survey {
    fn name_of(t: &Task) -> &str {
        match &t.extra {
            Some(e) if !e.prefix.is_empty() => &e.prefix,
            _ => UNNAMED,
        }
    }

    /// Checks a task against the lines before it and notes its threads and name.
    fn take(&mut self, lineno: u64, t: &Task, stats: &mut MtmcStats, input: &str) -> Result<(), ImportError> {
        let shape = Shape { counters: t.begin.len(), constants: t.extra.as_ref().map_or(0, |e| e.constants.len()) };
        match self.layout {
            None => {
                self.layout = Some(t.layout());
                self.shape = shape;
            }
            Some(l) if l != t.layout() => {
                return Err(bad(
                    input,
                    lineno,
                    0,
                    format!("a {:?} line where the lines before have the {l:?} layout", t.layout()),
                ));
            }
            Some(_) => {}
        }
        if shape.counters != self.shape.counters {
            return Err(bad(
                input,
                lineno,
                0,
                format!("{} counter readings where the lines before have {}", shape.counters, self.shape.counters),
            ));
        }
        if shape.constants != self.shape.constants {
            return Err(bad(
                input,
                lineno,
                0,
                format!("{} constants where the lines before have {}", shape.constants, self.shape.constants),
            ));
        }
        let expected = t.announced_readings();
        if stats.events_field_mismatch.is_none() && (t.begin_info[0] != expected || t.end_info[0] != expected) {
            stats.events_field_mismatch = Some((lineno, t.begin_info[0], expected));
        }
        for (tid, p) in [(t.tid, t.pthread), (t.parent_tid, t.parent_pthread)] {
            if tid != 0 && self.seen.insert(tid, ()).is_none() {
                self.threads.push((tid, p));
            }
        }
        let name = Self::name_of(t);
        if !self.names.contains_key(name) {
            self.names.insert(name.to_owned(), NAME_BASE + self.name_order.len() as u32);
            self.name_order.push(name.to_owned());
        }
        stats.tasks += 1;
        stats.topdown |= t.topdown.is_some();
        stats.unended += u64::from(t.end == 0);
        stats.migrated += u64::from(t.end != 0 && t.begin_info[1] != t.end_info[1]);
        Ok(())
    }
}

/// Imports the MTMC raw log `input`, from where it stands to its end,
/// into `w` (the caller closes it; on error nothing of the log is in a
/// file, as the caller drops the writer). `name` names the log in errors,
/// in the stream's command line and as the process's name; a log named
/// `mtmc_raw_<address>` gives the pid when `opts` has none. The log is
/// read twice, every line checked before anything is written, so the
/// input must seek (a pipe can be spooled to an unnamed temporary file
/// first). `progress` gets half the bytes of the first pass, then half of
/// both passes: the bytes of input read, spread over the two passes.
pub fn import_mtmc<R: Read + Seek>(
    mut input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &MtmcOptions,
    mut progress: impl Progress,
) -> Result<MtmcStats, ImportError> {
    let start = input.stream_position().map_err(|e| ImportError::io(name, e))?;
    let mut stats = MtmcStats::default();
    let mut survey = Survey::default();
    let mut lines = Lines::new(name, BufReader::with_capacity(1 << 20, &mut input));
    while let Some((lineno, t)) = lines.next_task()? {
        survey.take(lineno, &t, &mut stats, name)?;
        if lineno % 65536 == 0 {
            progress.done(lines.bytes / 2);
        }
    }
    if stats.tasks == 0 {
        return Err(ImportError::invalid(name, Place::Line { line: 1, column: Some(1) }, "the log holds no task"));
    }
    stats.blank_lines = lines.blank;
    let first_pass = lines.bytes;
    stats.counters = survey.shape.counters;
    stats.constants = survey.shape.constants;
    stats.layout = survey.layout;
    stats.threads = survey.threads.len();
    stats.names = survey.name_order.len();
    stats.pid = match (opts.pid, address_of(name)) {
        (Some(p), _) => Some((p, PidSource::Option)),
        // The profiler names its log after its object's address; the
        // post-processing takes that for the process: its low 32 bits fit a TB5 pid.
        (None, Some(a)) => Some((a as u64 as u32, PidSource::FileName)),
        (None, None) => None,
    };
    let pid = stats.pid.map_or(0, |(p, _)| p);
    let shape = survey.shape;

    // The first pass's reader is done with: the second reads from the start again.
    drop(lines);
    input.seek(SeekFrom::Start(start)).map_err(|e| ImportError::io(name, e))?;
    write_globals(
        w,
        &Software {
            os: Some(Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() }),
            ..Default::default()
        },
    )?;
    w.write_modules(&[])?;
    let mut s = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("mtmc tasks".into()),
            command_line: Some(format!("mtmc log {name}")),
            ..Default::default()
        })?
        .data_descriptor(&descriptor(shape))?;
    let events: Vec<Event> = (0..shape.counters)
        .map(|i| Event { id: i as u32, name: Some(format!("counter{i}")), ..Default::default() })
        .chain(survey.name_order.iter().enumerate().map(|(k, n)| Event {
            id: NAME_BASE + k as u32,
            name: Some(n.clone()),
            ..Default::default()
        }))
        .collect();
    s.events(&events)?;
    {
        let mut data = s.data()?;
        let mut batch = Vec::with_capacity(1 << 20);
        let mut lines = Lines::new(name, BufReader::with_capacity(1 << 20, &mut input));
        while let Some((_, t)) = lines.next_task()? {
            let event = survey.names.get(Survey::name_of(&t)).copied().unwrap_or(NAME_BASE);
            encode(&t, pid, event, &mut batch);
            if batch.len() >= 1 << 20 {
                data.add(&batch)?;
                batch.clear();
                progress.done((first_pass + lines.bytes) / 2);
            }
        }
        data.add(&batch)?;
        data.done()?;
    }
    s.finish()?;
    let mut pt = w.process_threads()?;
    if let Some((p, _)) = stats.pid {
        // The log's file name, as the post-processing names the process.
        let name = Some(file_name(name).to_owned());
        pt.add_process(&Pid { id: p, name, ..Default::default() })?;
    }
    for (tid, p) in &survey.threads {
        pt.add_thread(&Tid {
            associated_pid: pid,
            id: *tid,
            name: Some(format!("pthread {p:#x}")),
            ..Default::default()
        })?;
    }
    pt.done()?;
    progress.done(first_pass);
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use tbrw_schema::mtmc::counters_of;

    use super::*;

    /// Two tasks of two threads, v0.1 layout, two counters.
    const LOG: &str = "4100,1602152192,1662113994732217088,1662113994733739014,4099,1241265920,1662113994732206443,,2_3_0,1731201101_3690717719,2_3_0,1734269057_3691050936,\n\
        4101,1610544896,1662113994733800000,1662113994734100000,4100,1602152192,1662113994733790000,,2_7_0,231201101_690717719,2_7_0,231401101_690917719,\n";

    #[test]
    fn a_log_in_memory_becomes_a_tb5_file_named_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("tasks.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let mut seen = Vec::new();
        // From the middle of a reader: the log starts where the input stands.
        let mut input = Cursor::new(format!("not the log\n{LOG}").into_bytes());
        input.set_position(12);
        let stats =
            import_mtmc(&mut input, "logs/mtmc_raw_4242", &mut w, &MtmcOptions::default(), |n| seen.push(n)).unwrap();
        w.close().unwrap();
        assert_eq!((stats.tasks, stats.counters, stats.threads), (2, 2, 3));
        assert_eq!(stats.pid, Some((4242, PidSource::FileName)));
        assert_eq!(seen.last(), Some(&(LOG.len() as u64)), "both passes: the bytes of one");

        let f = Tb5File::open(&out).unwrap();
        let descs = f.stream(0).unwrap().descriptor().unwrap().unwrap();
        let shape = counters_of(&descs, &f).expect("an MTMC stream");
        assert_eq!(shape, Shape { counters: 2, constants: 0 });
        let info = f.stream(0).unwrap().info().unwrap().unwrap();
        assert_eq!(f.string_opt(info.command_line).unwrap(), Some("mtmc log logs/mtmc_raw_4242"));
        let pt = f.processes().unwrap().unwrap();
        let names: Vec<&str> = pt.pids().map(|p| f.string(p.name).unwrap()).collect();
        assert_eq!(names, ["mtmc_raw_4242"]);
    }

    #[test]
    fn a_bad_line_is_named_with_its_line_and_column_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("tasks.tb5");
        let mut w = Tb5Writer::create(&out).unwrap();
        let bad = LOG.replacen("4101,1610544896", "4101,16105x4896", 1);
        let e = import_mtmc(Cursor::new(bad), "tasks.log", &mut w, &MtmcOptions::default(), ()).unwrap_err();
        match &e {
            ImportError::Invalid { input, place: Place::Line { line: 2, column: Some(6) }, what } => {
                assert_eq!(input, "tasks.log");
                assert!(what.contains("\"16105x4896\" is not an unsigned integer"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().starts_with("tasks.log: line 2, column 6: task pthread id [1]"), "{e}");
        drop(w);
        assert!(!out.exists(), "a dropped writer leaves nothing");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_line_too_long_is_named_with_its_byte_offset() {
        let mut text = LOG.to_owned();
        text.push_str(&"1".repeat(MAX_LINE + 1));
        let dir = tempfile::tempdir().unwrap();
        let mut w = Tb5Writer::create(dir.path().join("o.tb5")).unwrap();
        let e = import_mtmc(Cursor::new(text), "t.log", &mut w, &MtmcOptions::default(), ()).unwrap_err();
        match e {
            ImportError::LineTooLong { line: 3, offset, limit: MAX_LINE, .. } => assert_eq!(offset, LOG.len() as u64),
            other => panic!("{other:?}"),
        }
    }
}
