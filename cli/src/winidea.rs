//! winIDEA profiler exports: the Text1 text format (INFO, CONTEXTS,
//! HANDLE, STATISTICS, TIMELINE sections) and the TimelineBinary `.BIN`
//! file (versions 1.0 and 1.1): `tbrw import winidea EXPORT.txt [--bin FILE]
//! -o OUT.tb5 [--check]`. Mapping, call model and the statistics check:
//! docs/IMPORT.md.

use std::collections::HashMap;
use std::path::Path;

use tbrw::*;

use crate::error::CliError;
use crate::imported::{field, write_globals};

/// Descriptor types of the winIDEA fields (user-defined range).
pub mod field_type {
    /// Net time of a call in nanoseconds (8 bytes).
    pub const NET: u16 = 0x4400;
    /// Gross time of a call in nanoseconds (8 bytes).
    pub const GROSS: u16 = 0x4401;
    /// The record's event id: the `event_id` of the stream's event that
    /// names it (4 bytes). For winIDEA the area handle. `tbrw report --by
    /// event` and `tbrw export vtune-csv` use it for any stream.
    pub const EVENT_ID: u16 = 0x4402;
    /// The value written (8 bytes).
    pub const VALUE: u16 = 0x4405;
}

/// One event of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    /// The area handle.
    pub handle: u32,
    /// `E`, `S`, `R`, `X` or `W`.
    pub kind: u8,
    /// The value (data writes, states).
    pub value: u64,
    /// Nanoseconds (session time).
    pub time: i64,
    /// The context (Text1 `%CONTEXT%`, or the core index of a `.BIN` 1.1).
    pub context: u32,
    /// Where it was read, for errors: a line (Text1) or byte offset (`.BIN`).
    pub at: Pos,
}

/// A place in the input, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    /// A line of the Text1 file.
    Line(u64),
    /// A byte offset of the `.BIN` file.
    Byte(u64),
}

/// One STATISTICS row of the export.
#[derive(Clone, Debug, PartialEq)]
pub struct StatRow {
    /// `Functions` or `Data`.
    pub class: String,
    /// The CONTEXT(...) of the section, if any.
    pub context: Option<String>,
    /// The handle.
    pub handle: u32,
    /// The value column (line number, state value), if any.
    pub value: Option<u64>,
    /// Every numeric column by macro name (COUNT, T.NET, ...).
    pub figures: Vec<(String, i64)>,
    /// The line.
    pub line: u64,
}

/// A parsed Text1 export.
#[derive(Clone, Debug, Default)]
pub struct Export {
    /// INFO TOTAL_TIME.
    pub total_time: Option<i64>,
    /// Context handle to name.
    pub contexts: HashMap<u32, String>,
    /// Area handle to display name (functions; lines as `function:line: source`; variables).
    pub names: HashMap<u32, String>,
    /// Handles in the order the HANDLE sections list them.
    pub order: Vec<u32>,
    /// STATISTICS rows.
    pub stats: Vec<StatRow>,
    /// TIMELINE rows.
    pub timeline: Vec<TimelineEvent>,
}

fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// Splits a row on commas outside double quotes.
fn split_row(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A section header: `* NAME(ARG) [CONTEXT(ctx)] %A%,%B%,...`.
struct Header {
    name: String,
    arg: Option<String>,
    context: Option<String>,
    columns: Vec<String>,
}

fn parse_header(line: &str) -> Option<Header> {
    let rest = line.strip_prefix('*')?.trim_start();
    let macros_at = rest.find('%').unwrap_or(rest.len());
    let (head, macros) = rest.split_at(macros_at);
    let head = head.trim();
    let (word, after) = match head.find(|c: char| c == '(' || c.is_whitespace()) {
        Some(i) => head.split_at(i),
        None => (head, ""),
    };
    let mut arg = None;
    let mut context = None;
    let mut after = after.trim();
    if let Some(a) = after.strip_prefix('(') {
        let close = a.find(')')?;
        arg = Some(a[..close].to_owned());
        after = a[close + 1..].trim();
    }
    if let Some(c) = after.strip_prefix("CONTEXT(") {
        let close = c.rfind(')')?;
        context = Some(c[..close].to_owned());
    }
    let columns = macros.split(',').map(|m| m.trim().trim_matches('%').to_owned()).filter(|m| !m.is_empty()).collect();
    Some(Header { name: word.to_owned(), arg, context, columns })
}

/// Parses a Text1 export.
pub fn parse_text1(text: &str, path: &Path) -> Result<Export, CliError> {
    parse_text1_from(text.as_bytes(), path)
}

/// Parses a Text1 export line by line from `input` (the whole file is
/// never held in memory; the timeline rows are).
pub fn parse_text1_from(input: impl std::io::BufRead, path: &Path) -> Result<Export, CliError> {
    let mut ex = Export::default();
    let mut header: Option<Header> = None;
    let mut current_function: Option<String> = None;
    let mut current_variable: Option<String> = None;
    let mut context_by_name: HashMap<String, u32> = HashMap::new();
    let mut offset = 0u64;
    for (i, raw) in input.split(b'\n').enumerate() {
        let lineno = i as u64 + 1;
        let raw = raw.map_err(|e| CliError::io(path, e))?;
        let line_at = offset;
        offset += raw.len() as u64 + 1;
        let line = std::str::from_utf8(&raw).map_err(|e| {
            CliError::msg(format!(
                "{}: line {lineno} (byte {}): not UTF-8 text",
                path.display(),
                line_at + e.valid_up_to() as u64
            ))
        })?;
        let line = line.trim_end_matches('\r');
        let bad = |what: String| CliError::msg(format!("{}: line {lineno}: {what}", path.display()));
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('*') {
            let h = parse_header(line).ok_or_else(|| bad(format!("malformed section header {line:?}")))?;
            if h.columns.is_empty() {
                return Err(bad(format!("section header {line:?} names no %MACRO% columns")));
            }
            header = Some(h);
            continue;
        }
        let Some(h) = &header else { return Err(bad("data before the first section header".into())) };
        let mut cells = split_row(line.trim_start());
        let name_col = h.columns.iter().position(|c| c == "NAME");
        if cells.len() > h.columns.len() {
            // A NAME with commas (a source line): the surplus belongs to it.
            let Some(nc) = name_col else {
                return Err(bad(format!("{} fields where the header has {} columns", cells.len(), h.columns.len())));
            };
            let surplus = cells.len() - h.columns.len();
            let merged = cells[nc..=nc + surplus].join(",");
            cells.splice(nc..=nc + surplus, [merged]);
        }
        if cells.len() < h.columns.len() {
            return Err(bad(format!(
                "{} fields where the header has {} columns ({})",
                cells.len(),
                h.columns.len(),
                h.columns.join(",")
            )));
        }
        let get = |m: &str| h.columns.iter().position(|c| c == m).map(|i| cells[i].trim());
        let num = |m: &str| -> Result<Option<i64>, CliError> {
            match get(m) {
                None | Some("") => Ok(None),
                Some(v) => v.parse::<i64>().map(Some).map_err(|_| bad(format!("%{m}% {v:?} is not a number"))),
            }
        };
        let handle = |m: &str| -> Result<u32, CliError> {
            let v = get(m).ok_or_else(|| bad(format!("no %{m}% column")))?;
            hex(v)
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(|| bad(format!("%{m}% {v:?} is not a 32-bit hexadecimal handle")))
        };
        match (h.name.as_str(), h.arg.as_deref()) {
            ("INFO", _) => ex.total_time = num("TOTAL_TIME")?,
            ("CONTEXTS", _) => {
                let name = get("NAME").unwrap_or("").to_owned();
                let hd = handle("HANDLE")?;
                context_by_name.insert(name.clone(), hd);
                ex.contexts.insert(hd, name);
            }
            ("HANDLE", Some(_)) => {
                let hd = handle("HANDLE")?;
                let name = get("NAME").unwrap_or("").to_owned();
                let value = get("VALUE").and_then(|v| v.parse::<u64>().ok().or_else(|| hex(v)));
                let display = match hd >> 28 {
                    0 => {
                        current_function = Some(name.clone());
                        name
                    }
                    1 => format!(
                        "{}:{}: {}",
                        current_function.as_deref().unwrap_or("?"),
                        value.map_or(String::new(), |v| v.to_string()),
                        name
                    ),
                    2 | 4 => {
                        current_variable = Some(name.clone());
                        name
                    }
                    3 | 5 => current_variable.clone().unwrap_or_default(),
                    n => {
                        return Err(bad(format!("handle {hd:08X} has area type {n}, not one the format defines (0-5)")))
                    }
                };
                if !ex.names.contains_key(&hd) {
                    ex.order.push(hd);
                }
                ex.names.entry(hd).or_insert(display);
            }
            ("STATISTICS", class) => {
                let hd = handle("HANDLE")?;
                let value = get("VALUE")
                    .filter(|v| !v.is_empty())
                    .map(|v| {
                        v.parse::<u64>()
                            .ok()
                            .or_else(|| hex(v))
                            .ok_or_else(|| bad(format!("%VALUE% {v:?} is not a number")))
                    })
                    .transpose()?;
                let mut figures = Vec::new();
                for c in &h.columns {
                    if c == "COUNT" || c.starts_with("T.") {
                        if let Some(v) = num(c)? {
                            figures.push((c.clone(), v));
                        }
                    }
                }
                ex.stats.push(StatRow {
                    class: class.unwrap_or("").to_owned(),
                    context: h.context.clone(),
                    handle: hd,
                    value,
                    figures,
                    line: lineno,
                });
            }
            ("TIMELINE", _) => {
                let hd = handle("HANDLE")?;
                let ev = get("EVENT").ok_or_else(|| bad("no %EVENT% column".into()))?;
                let kind = match ev {
                    "E" | "S" | "R" | "X" | "W" => ev.as_bytes()[0],
                    other => return Err(bad(format!("event {other:?} is not E, S, R, X or W"))),
                };
                let value = match get("VALUE") {
                    None | Some("") => 0,
                    Some(v) => hex(v).ok_or_else(|| bad(format!("%VALUE% {v:?} is not hexadecimal")))?,
                };
                let time = num("TIME")?.ok_or_else(|| bad("no time".into()))?;
                let context = match get("CONTEXT") {
                    None | Some("") => 0,
                    Some(c) => match context_by_name.get(c) {
                        Some(k) => *k,
                        None => hex(c)
                            .and_then(|x| u32::try_from(x).ok())
                            .ok_or_else(|| bad(format!("unknown context {c:?}")))?,
                    },
                };
                ex.timeline.push(TimelineEvent { handle: hd, kind, value, time, context, at: Pos::Line(lineno) });
            }
            ("HANDLE", None) => {
                return Err(bad("a HANDLE section needs its class: HANDLE(Functions) or HANDLE(Data)".into()))
            }
            (other, _) => return Err(bad(format!("unknown section {other:?}"))),
        }
    }
    Ok(ex)
}

/// The context of `.BIN` events whose core is unknown (all of a 1.0 file).
pub const UNKNOWN_CONTEXT: u32 = 0xFF;

/// The `.BIN` layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinVersion {
    /// Event type in bits 24-27 of the second word; no core index.
    V1_0,
    /// Event type in bits 0-3, core index in bits 4-11.
    V1_1,
}

/// Detects the layout: a flags word with any bit above 0xFFF set can only
/// be 1.0 (1.1 uses bits 0-11). A file of only exit events reads the same
/// either way.
pub fn detect_bin(bytes: &[u8]) -> BinVersion {
    let above =
        bytes.chunks_exact(24).any(|e| u32::from_le_bytes(e[4..8].try_into().unwrap_or_default()) & !0xFFF != 0);
    if above {
        BinVersion::V1_0
    } else {
        BinVersion::V1_1
    }
}

/// Reads a `.BIN` timeline.
pub fn parse_bin(bytes: &[u8], version: BinVersion, path: &Path) -> Result<Vec<TimelineEvent>, CliError> {
    whole_entries(bytes.len() as u64, path)?;
    bytes.chunks_exact(ENTRY).enumerate().map(|(i, e)| parse_entry(e, (i * ENTRY) as u64, version, path)).collect()
}

/// Bytes per `.BIN` entry.
const ENTRY: usize = 24;

fn whole_entries(len: u64, path: &Path) -> Result<(), CliError> {
    let left = len % ENTRY as u64;
    if left != 0 {
        return Err(CliError::msg(format!(
            "{}: byte {}: {len} bytes is not a whole number of 24-byte entries ({left} bytes left over)",
            path.display(),
            len - left,
        )));
    }
    Ok(())
}

/// Decodes the entry at byte `at` (`e` is its 24 bytes).
fn parse_entry(e: &[u8], at: u64, version: BinVersion, path: &Path) -> Result<TimelineEvent, CliError> {
    let word_at = |o: usize| u32::from_le_bytes(e[o..o + 4].try_into().unwrap_or_default());
    let (handle, word) = (word_at(0), word_at(4));
    let value = u64::from_le_bytes(e[8..16].try_into().unwrap_or_default());
    let time = i64::from_le_bytes(e[16..24].try_into().unwrap_or_default());
    if version == BinVersion::V1_1 && word & !0xFFF != 0 {
        return Err(CliError::msg(format!(
            "{}: byte {}: flags {word:#010x} set bits outside the version 1.1 masks (a version 1.0 file? --bin-version 1.0)",
            path.display(),
            at + 4
        )));
    }
    let (ty, core) = match version {
        BinVersion::V1_1 => (word & 0xF, (word & 0xFF0) >> 4),
        BinVersion::V1_0 => ((word >> 24) & 0xF, UNKNOWN_CONTEXT),
    };
    let kind = match ty {
        3 => b'E',
        2 => b'R',
        1 => b'S',
        0 => b'X',
        4 => b'W',
        t => {
            return Err(CliError::msg(format!(
                "{}: byte {}: event type {t} is not one the format defines (0-4)",
                path.display(),
                at + 4
            )))
        }
    };
    Ok(TimelineEvent { handle, kind, value, time, context: core, at: Pos::Byte(at) })
}

/// Called with each piece of a file and its offset; `false` stops.
type PieceFn<'a> = dyn FnMut(&[u8], u64) -> Result<bool, CliError> + 'a;

/// Reads a `.BIN` file in 1 MiB pieces (no copy of the whole file in
/// memory), detecting the layout first with a pass of its own when
/// `version` is `None`. Events are appended to `out`.
pub fn read_bin_file(
    path: &Path,
    version: Option<BinVersion>,
    out: &mut Vec<TimelineEvent>,
) -> Result<BinVersion, CliError> {
    use std::io::{Read, Seek};
    let mut f = std::fs::File::open(path).map_err(|e| CliError::io(path, e))?;
    let len = f.metadata().map_err(|e| CliError::io(path, e))?.len();
    whole_entries(len, path)?;
    let mut buf = vec![0u8; ENTRY * 43_690];
    let mut pieces = |f: &mut std::fs::File, each: &mut PieceFn<'_>| -> Result<(), CliError> {
        f.rewind().map_err(|e| CliError::io(path, e))?;
        let mut at = 0u64;
        while at < len {
            let n = ((len - at) as usize).min(buf.len());
            f.read_exact(&mut buf[..n]).map_err(|e| CliError::io(path, e))?;
            if !each(&buf[..n], at)? {
                break;
            }
            at += n as u64;
        }
        Ok(())
    };
    let version = match version {
        Some(v) => v,
        None => {
            let mut v = BinVersion::V1_1;
            pieces(&mut f, &mut |chunk, _| {
                if detect_bin(chunk) == BinVersion::V1_0 {
                    v = BinVersion::V1_0;
                    return Ok(false);
                }
                Ok(true)
            })?;
            v
        }
    };
    // The file's size is the justification for this reservation.
    out.reserve((len / ENTRY as u64) as usize);
    pieces(&mut f, &mut |chunk, at| {
        for (i, e) in chunk.chunks_exact(ENTRY).enumerate() {
            out.push(parse_entry(e, at + (i * ENTRY) as u64, version, path)?);
        }
        Ok(true)
    })?;
    Ok(version)
}

/// One call of a function or line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Handle.
    pub handle: u32,
    /// Context.
    pub context: u32,
    /// Entry time.
    pub start: i64,
    /// Exit time.
    pub end: i64,
    /// Time running (not suspended).
    pub net: i64,
    /// Time any area of the same context ran between entry and exit
    /// (the call and its callees, not other contexts).
    pub gross: i64,
}

/// A data write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The variable's handle (area type 2 or 4).
    pub handle: u32,
    /// Context.
    pub context: u32,
    /// Time.
    pub time: i64,
    /// Value written.
    pub value: u64,
}

/// Count, sum, minimum and maximum of a series of durations, kept as they
/// come so that statistics need no memory per call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Series {
    /// Values added.
    pub n: u64,
    /// Their sum (i128: no overflow for any number of 63-bit values).
    pub sum: i128,
    /// The smallest (0 when empty, as winIDEA shows).
    pub min: i64,
    /// The largest (0 when empty).
    pub max: i64,
}

impl Series {
    fn add(&mut self, v: i64) {
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        self.sum += i128::from(v);
    }

    /// The sum, saturated to an i64.
    pub fn total(&self) -> i64 {
        self.sum.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The mean rounded down and rounded up (equal when exact; 0 when empty).
    pub fn mean_range(&self) -> (i64, i64) {
        if self.n == 0 {
            return (0, 0);
        }
        let n = i128::from(self.n);
        let lo = self.sum.div_euclid(n);
        let hi = if self.sum.rem_euclid(n) == 0 { lo } else { lo + 1 };
        (lo as i64, hi as i64)
    }
}

/// The statistics the timeline gives for one (context, handle), one handle
/// over all contexts, a variable or a state value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Entries (functions) or writes (data).
    pub count: i64,
    /// Total net time (functions) or time in the state (data states).
    pub net: i64,
    /// Net times of complete calls.
    pub nets: Series,
    /// Gross times of complete calls.
    pub gross: Series,
    /// Call times (entry to exit) of complete calls.
    pub call: Series,
    /// Times between successive entries.
    pub periods: Series,
    /// The latest entry, for the next period.
    pub last_entry: Option<i64>,
}

impl Figures {
    fn enter(&mut self, t: i64) {
        self.count += 1;
        if let Some(p) = self.last_entry.replace(t) {
            self.periods.add(t - p);
        }
    }
    fn ran(&mut self, d: i64) {
        self.net = self.net.saturating_add(d);
    }
    fn completed(&mut self, net: i64, gross: i64, call: i64) {
        self.nets.add(net);
        self.gross.add(gross);
        self.call.add(call);
    }
}

/// What building calls found.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Complete calls, in exit order.
    pub calls: Vec<Call>,
    /// Data writes, in time order.
    pub writes: Vec<Write>,
    /// Statistics per (context, handle) for functions and lines.
    pub functions: HashMap<(u32, u32), Figures>,
    /// Statistics per handle over all contexts (winIDEA's "neutral" view).
    pub neutral: HashMap<u32, Figures>,
    /// Statistics per (variable handle) and per (state handle, value) for data.
    pub data: HashMap<(u32, Option<u64>), Figures>,
    /// Calls under way when the trace begins (first event R, S or X), not written as intervals.
    pub started_before: u64,
    /// Calls still open at the end, not written as intervals.
    pub unfinished: u64,
}

#[derive(Clone, Copy)]
struct Open {
    start: Option<i64>,
    running_since: Option<i64>,
    net: i64,
    /// The context's active time at entry.
    active_at_entry: i64,
}

/// When a context has something running, and for how long it has so far.
#[derive(Clone, Copy, Default)]
struct ContextClock {
    running: u32,
    since: i64,
    total: i64,
}

impl ContextClock {
    fn at(&self, t: i64) -> i64 {
        self.total.saturating_add(if self.running > 0 { t - self.since } else { 0 })
    }
    fn start(&mut self, t: i64) {
        if self.running == 0 {
            self.since = t;
        }
        self.running += 1;
    }
    fn stop(&mut self, t: i64) {
        self.running = self.running.saturating_sub(1);
        if self.running == 0 {
            self.total = self.total.saturating_add(t - self.since);
        }
    }
}

/// The largest time stamp magnitude accepted (2^62 - 1 ns, 146 years).
pub const MAX_TIME_NS: u64 = (1 << 62) - 1;

/// Builds calls and statistics from the timeline. Unknown handles are an
/// error (with the line or byte); time going backwards is an error.
pub fn build(ex: &Export, events: &[TimelineEvent], path: &Path, end_time: Option<i64>) -> Result<Timeline, CliError> {
    let mut tl = Timeline::default();
    let mut stacks: HashMap<(u32, u32), Vec<Open>> = HashMap::new();
    let mut clocks: HashMap<u32, ContextClock> = HashMap::new();
    let mut last_time = i64::MIN;
    let mut last_write: HashMap<u32, (i64, u64)> = HashMap::new();
    let at = |p: Pos| match p {
        Pos::Line(l) => format!("line {l}"),
        Pos::Byte(b) => format!("byte {b}"),
    };
    for e in events {
        if !ex.names.contains_key(&e.handle) {
            return Err(CliError::msg(format!(
                "{}: {}: handle {:08X} is not in any HANDLE section",
                path.display(),
                at(e.at),
                e.handle
            )));
        }
        // Within this range every difference of two times fits an i64.
        if e.time.unsigned_abs() > MAX_TIME_NS {
            return Err(CliError::msg(format!(
                "{}: {}: time {} ns is 2^62 ns (146 years) or more from the session's zero",
                path.display(),
                at(e.at),
                e.time
            )));
        }
        if e.time < last_time {
            return Err(CliError::msg(format!(
                "{}: {}: time {} goes back from {last_time}",
                path.display(),
                at(e.at),
                e.time
            )));
        }
        last_time = e.time;
        let area = e.handle >> 28;
        let is_data = matches!(area, 2..=5);
        if e.kind == b'W' || (is_data && e.kind == b'E') {
            // A write: to the variable (W on the variable's handle) or entering a state (E on the state handle).
            let var = if area == 3 || area == 5 { e.handle - (1 << 28) } else { e.handle };
            let state = var + (1 << 28);
            if let Some((t0, v0)) = last_write.insert(var, (e.time, e.value)) {
                let fig = tl.data.entry((state, Some(v0))).or_default();
                fig.net = fig.net.saturating_add(e.time - t0);
            }
            tl.data.entry((var, None)).or_default().count += 1;
            tl.data.entry((state, Some(e.value))).or_default().count += 1;
            tl.writes.push(Write { handle: var, context: e.context, time: e.time, value: e.value });
            continue;
        }
        if is_data {
            continue; // exits of states: the next write closes them
        }
        let key = (e.context, e.handle);
        let stack = stacks.entry(key).or_default();
        let clock = clocks.entry(e.context).or_default();
        let fig = tl.functions.entry(key).or_default();
        let all = tl.neutral.entry(e.handle).or_default();
        match e.kind {
            b'E' => {
                fig.enter(e.time);
                all.enter(e.time);
                let active_at_entry = clock.at(e.time);
                clock.start(e.time);
                stack.push(Open { start: Some(e.time), running_since: Some(e.time), net: 0, active_at_entry });
            }
            b'S' => match stack.last_mut() {
                Some(o) => {
                    if let Some(r) = o.running_since.take() {
                        o.net += e.time - r;
                        fig.ran(e.time - r);
                        all.ran(e.time - r);
                        clock.stop(e.time);
                    }
                }
                None => {
                    tl.started_before += 1;
                    stack.push(Open { start: None, running_since: None, net: 0, active_at_entry: 0 });
                }
            },
            b'R' => match stack.last_mut() {
                Some(o) => {
                    if o.running_since.is_none() {
                        o.running_since = Some(e.time);
                        clock.start(e.time);
                    }
                }
                None => {
                    tl.started_before += 1;
                    clock.start(e.time);
                    stack.push(Open { start: None, running_since: Some(e.time), net: 0, active_at_entry: 0 });
                }
            },
            _ => {
                // X
                match stack.pop() {
                    Some(mut o) => {
                        if let Some(r) = o.running_since {
                            o.net += e.time - r;
                            fig.ran(e.time - r);
                            all.ran(e.time - r);
                            clock.stop(e.time);
                        }
                        if let Some(s) = o.start {
                            let gross = clock.at(e.time) - o.active_at_entry;
                            fig.completed(o.net, gross, e.time - s);
                            all.completed(o.net, gross, e.time - s);
                            tl.calls.push(Call {
                                handle: e.handle,
                                context: e.context,
                                start: s,
                                end: e.time,
                                net: o.net,
                                gross,
                            });
                        }
                    }
                    None => tl.started_before += 1, // an exit whose entry came before the trace
                }
            }
        }
    }
    // States last until the end of the session.
    let end = end_time.unwrap_or(last_time).clamp(-(MAX_TIME_NS as i64), MAX_TIME_NS as i64);
    for (var, (t0, v0)) in last_write {
        let fig = tl.data.entry((var + (1 << 28), Some(v0))).or_default();
        fig.net = fig.net.saturating_add(end.max(t0) - t0);
    }
    // Calls still running at the end ran until then, as states last.
    for ((ctx, h), stack) in &stacks {
        for o in stack {
            if let Some(r) = o.running_since {
                tl.functions.entry((*ctx, *h)).or_default().ran(end.max(r) - r);
                tl.neutral.entry(*h).or_default().ran(end.max(r) - r);
            }
        }
    }
    tl.unfinished = stacks.values().map(|s| s.iter().filter(|o| o.start.is_some()).count() as u64).sum();
    Ok(tl)
}

/// One difference between the export's statistics and the timeline's.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// The STATISTICS row's line.
    pub line: u64,
    /// What, e.g. `00000000 T.NET`.
    pub what: String,
    /// The export's figure.
    pub export: i64,
    /// The timeline's figure (an inexact average: rounded down).
    pub timeline: i64,
}

/// A figure recomputed from the timeline, as the range of values that
/// agree with it: one value, or for an inexact average the mean rounded
/// down and up (the document does not say how winIDEA rounds).
fn figure(f: &Figures, name: &str) -> Option<(i64, i64)> {
    let one = |v: i64| Some((v, v));
    match name {
        "COUNT" => one(f.count),
        "T.NET" => one(f.net),
        "T.GROSS" => one(f.gross.total()),
        "T.CALL" => one(f.call.total()),
        _ => {
            let (cat, which) = name.strip_prefix("T.")?.split_once('.')?;
            let series = match cat {
                "NET" => &f.nets,
                "GROSS" => &f.gross,
                "CALL" => &f.call,
                "PERIOD" => &f.periods,
                _ => return None,
            };
            match which {
                "MIN" => one(series.min),
                "MAX" => one(series.max),
                "AVG" => Some(series.mean_range()),
                _ => None,
            }
        }
    }
}

/// The outcome of [`check`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckResult {
    /// Figures that agree.
    pub agree: u64,
    /// Figures that differ.
    pub differences: Vec<Difference>,
    /// Figures a timeline cannot give (T.OUTSIDE...): line and what.
    pub unchecked: Vec<(u64, String)>,
}

/// Recomputes every STATISTICS figure from the timeline and lists where
/// they differ. Rows of a CONTEXT are compared with that context's calls;
/// rows without one with all contexts together. An average agrees when it
/// is the exact mean rounded either way.
pub fn check(ex: &Export, tl: &Timeline) -> CheckResult {
    let mut result = CheckResult::default();
    for row in &ex.stats {
        let fig = if row.class.eq_ignore_ascii_case("Data") || matches!(row.handle >> 28, 2..=5) {
            let key = if row.handle >> 28 == 3 || row.handle >> 28 == 5 {
                (row.handle, row.value)
            } else {
                (row.handle, None)
            };
            tl.data.get(&key)
        } else {
            match &row.context {
                None => tl.neutral.get(&row.handle),
                // A CONTEXT the CONTEXTS section does not list has no calls.
                Some(c) => {
                    ex.contexts.iter().find(|(_, n)| *n == c).and_then(|(k, _)| tl.functions.get(&(*k, row.handle)))
                }
            }
        };
        let none = Figures::default();
        let fig = fig.unwrap_or(&none);
        for (name, value) in &row.figures {
            let what =
                format!("{:08X}{} {name}", row.handle, row.value.map_or(String::new(), |v| format!(" value {v}")));
            let Some((lo, hi)) = figure(fig, name) else {
                result.unchecked.push((row.line, what));
                continue;
            };
            if (lo..=hi).contains(value) {
                result.agree += 1;
            } else {
                result.differences.push(Difference { line: row.line, what, export: *value, timeline: lo });
            }
        }
    }
    result
}

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
    pub unchecked: Vec<(u64, String)>,
}

/// Imports a Text1 export (and its `.BIN` timeline, if given) into a new TB5 file.
pub fn import_winidea(
    text: &Path,
    bin: Option<&Path>,
    version: Option<BinVersion>,
    output: &Path,
) -> Result<WinIdeaStats, CliError> {
    let meta = std::fs::metadata(text).map_err(|e| CliError::io(text, e))?;
    if meta.is_dir() {
        return Err(CliError::msg(format!("{}: is a directory, not an export", text.display())));
    }
    let file = std::fs::File::open(text).map_err(|e| CliError::io(text, e))?;
    let mut ex = parse_text1_from(std::io::BufReader::with_capacity(1 << 20, file), text)?;
    let mut stats = WinIdeaStats::default();
    let mut events = std::mem::take(&mut ex.timeline);
    if let Some(b) = bin {
        let had = events.len();
        stats.bin_version = Some(read_bin_file(b, version, &mut events)?);
        if had > 0 {
            // Both a TIMELINE section and a .BIN: one time order (stable, so
            // equal times keep the text's events first).
            events.sort_by_key(|e| e.time);
        }
    }
    stats.events = events.len() as u64;
    let tl = build(&ex, &events, bin.unwrap_or(text), ex.total_time)?;
    stats.started_before = tl.started_before;
    stats.unfinished = tl.unfinished;
    let checked = check(&ex, &tl);
    stats.agree = checked.agree;
    stats.differences = checked.differences;
    stats.unchecked = checked.unchecked;

    // TB5 time stamps are unsigned; winIDEA's are signed (pre-trigger events
    // are negative), so a timeline that starts before 0 is shifted to start
    // at 0 and the shift is recorded in the streams' user-defined data.
    let origin = events.iter().map(|e| e.time).min().unwrap_or(0).min(0);
    let stamp = |t: i64| -> u64 { t.wrapping_sub(origin) as u64 };
    stats.time_origin_ns = origin;

    let mut w = Tb5Writer::create(output)?;
    write_globals(
        &mut w,
        &Software {
            os: Some(Os { name: Some("embedded target (winIDEA)".into()), platform: 0x100, ..Default::default() }),
            ..Default::default()
        },
    )?;
    w.write_modules(&[])?;
    let name_events = |filter: &dyn Fn(u32) -> bool| -> Vec<Event> {
        ex.order
            .iter()
            .filter(|h| filter(**h))
            .map(|h| Event { id: *h, name: Some(ex.names[h].clone()), ..Default::default() })
            .collect()
    };
    let ns = desc_subtype::TS_NANOSECONDS;
    // Stream 0: calls of functions and lines.
    let mut s = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("winidea calls".into()),
            command_line: Some(format!("winidea export {}", text.display())),
            ..Default::default()
        })?
        .data_descriptor(&[
            field(desc_type::TIME_STAMP, ns, 8, "start_session_ns"),
            field(desc_type::TIME_STAMP, ns, 8, "end_session_ns"),
            field(field_type::NET, 0, 8, "net_ns"),
            field(field_type::GROSS, 0, 8, "gross_ns"),
            field(field_type::EVENT_ID, 0, 4, "handle"),
            field(desc_type::TID, 0, 4, "context"),
        ])?;
    s.events(&name_events(&|h| h >> 28 <= 1))?;
    {
        let mut data = s.data()?;
        let mut buf = Vec::with_capacity(tl.calls.len() * 40);
        for c in &tl.calls {
            buf.extend_from_slice(&stamp(c.start).to_le_bytes());
            buf.extend_from_slice(&stamp(c.end).to_le_bytes());
            buf.extend_from_slice(&c.net.to_le_bytes());
            buf.extend_from_slice(&c.gross.to_le_bytes());
            buf.extend_from_slice(&c.handle.to_le_bytes());
            buf.extend_from_slice(&c.context.to_le_bytes());
        }
        data.add(&buf)?;
        data.done()?;
    }
    let contexts: Vec<String> = {
        let mut v: Vec<(&u32, &String)> = ex.contexts.iter().collect();
        v.sort();
        v.into_iter().map(|(k, n)| format!("{k:#x}={n}")).collect()
    };
    s.user_defined(format!("time_origin_ns {origin}\ncontexts {}\n", contexts.join(";")).as_bytes())?;
    s.finish()?;
    // Stream 1: data writes.
    let mut s = w
        .stream(1)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("winidea data".into()),
            ..Default::default()
        })?
        .data_descriptor(&[
            field(desc_type::TIME_STAMP, ns, 8, "time_session_ns"),
            field(field_type::VALUE, 0, 8, "value"),
            field(field_type::EVENT_ID, 0, 4, "handle"),
            field(desc_type::TID, 0, 4, "context"),
        ])?;
    s.events(&name_events(&|h| matches!(h >> 28, 2 | 4)))?;
    {
        let mut data = s.data()?;
        let mut buf = Vec::with_capacity(tl.writes.len() * 24);
        for wr in &tl.writes {
            buf.extend_from_slice(&stamp(wr.time).to_le_bytes());
            buf.extend_from_slice(&wr.value.to_le_bytes());
            buf.extend_from_slice(&wr.handle.to_le_bytes());
            buf.extend_from_slice(&wr.context.to_le_bytes());
        }
        data.add(&buf)?;
        data.done()?;
    }
    s.user_defined(format!("time_origin_ns {origin}\n").as_bytes())?;
    s.finish()?;
    // Contexts are the target's threads of execution: the thread table
    // names them, so the context field is an ST_TID.
    let mut seen: Vec<u32> = tl.calls.iter().map(|c| c.context).chain(tl.writes.iter().map(|w| w.context)).collect();
    seen.extend(ex.contexts.keys());
    seen.sort_unstable();
    seen.dedup();
    let mut pt = w.process_threads()?;
    for id in seen {
        let name = match ex.contexts.get(&id) {
            Some(n) => n.clone(),
            None if id == UNKNOWN_CONTEXT => "unknown context".to_owned(),
            None if bin.is_some() => format!("core {id}"),
            None => format!("context {id:#x}"),
        };
        pt.add_thread(&Tid { associated_pid: 0, id, name: Some(name), ..Default::default() })?;
    }
    pt.done()?;
    w.close()?;
    stats.calls = tl.calls.len() as u64;
    stats.writes = tl.writes.len() as u64;
    Ok(stats)
}

/// Writes a `.BIN` timeline (for tests and tools): 24-byte entries.
pub fn write_bin(events: &[TimelineEvent], version: BinVersion) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * 24);
    for e in events {
        let ty: u32 = match e.kind {
            b'E' => 3,
            b'R' => 2,
            b'S' => 1,
            b'X' => 0,
            _ => 4,
        };
        let word = match version {
            BinVersion::V1_1 => ty | ((e.context & 0xFF) << 4),
            BinVersion::V1_0 => ty << 24,
        };
        out.extend_from_slice(&e.handle.to_le_bytes());
        out.extend_from_slice(&word.to_le_bytes());
        out.extend_from_slice(&e.value.to_le_bytes());
        out.extend_from_slice(&e.time.to_le_bytes());
    }
    out
}
