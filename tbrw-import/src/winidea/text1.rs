//! The Text1 export: section headers with `%MACRO%` columns, and the rows
//! of its INFO, CONTEXTS, HANDLE, STATISTICS and TIMELINE sections.

use std::collections::HashMap;

use super::{Pos, TimelineEvent};
use crate::error::{excerpt, ImportError, Place};
use crate::lines::LineRead;

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
    /// Column index by macro name (the first of a repeated name), so that a
    /// row with thousands of columns finds each in constant time.
    index: HashMap<String, usize>,
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
    let columns: Vec<String> = columns;
    let mut index = HashMap::with_capacity(columns.len());
    for (i, c) in columns.iter().enumerate() {
        index.entry(c.clone()).or_insert(i);
    }
    Some(Header { name: word.to_owned(), arg, context, columns, index })
}

/// Parses a Text1 export held in memory (`name` names it in errors).
pub fn parse_text1(text: &str, name: &str) -> Result<Export, ImportError> {
    parse_text1_from(text.as_bytes(), name)
}

/// The longest Text1 line accepted: a STATISTICS header of tens of
/// thousands of columns is a few hundred kilobytes; a longer line is
/// refused before it is held.
pub const MAX_LINE: usize = 16 << 20;

/// Parses a Text1 export line by line from `input`, named `name` in errors
/// (the whole file is never held in memory, nor a line over [`MAX_LINE`];
/// the timeline rows are).
pub(crate) fn parse_text1_from(input: impl std::io::BufRead, name: &str) -> Result<Export, ImportError> {
    let mut parser = Text1::default();
    let mut offset = 0u64;
    let mut input = input;
    let mut raw = Vec::new();
    for lineno in 1u64.. {
        let (found, consumed) =
            crate::lines::read_bounded(&mut input, &mut raw, MAX_LINE).map_err(|e| ImportError::io(name, e))?;
        let line_at = offset;
        offset += consumed;
        match found {
            LineRead::Eof => break,
            LineRead::TooLong => {
                return Err(ImportError::LineTooLong {
                    input: name.to_owned(),
                    line: lineno,
                    offset: line_at,
                    limit: MAX_LINE,
                    longest: "more than any winIDEA export line",
                    begins: excerpt(&String::from_utf8_lossy(&raw[..raw.len().min(200)])),
                })
            }
            LineRead::Line => {}
        }
        let line = std::str::from_utf8(&raw).map_err(|e| {
            let place = Place::LineByte { line: lineno, offset: line_at + e.valid_up_to() as u64 };
            ImportError::invalid(name, place, "not UTF-8 text")
        })?;
        let bad = |what: String| ImportError::invalid(name, Place::Line { line: lineno, column: None }, what);
        parser.line(line.trim_end_matches('\r'), lineno, &bad)?;
    }
    Ok(parser.ex)
}

/// The state of a Text1 parse: the export so far, the section under way,
/// and what its rows refer back to.
#[derive(Default)]
struct Text1 {
    ex: Export,
    header: Option<Header>,
    /// The function and variable the next line or member handle belongs to.
    current_function: Option<String>,
    current_variable: Option<String>,
    context_by_name: HashMap<String, u32>,
}

/// An error about the line being parsed.
type Bad<'a> = dyn Fn(String) -> ImportError + 'a;

/// A data row of a section, its cells matched to the header's columns.
struct Row<'a> {
    h: &'a Header,
    cells: Vec<String>,
    bad: &'a Bad<'a>,
}

impl Row<'_> {
    fn get(&self, m: &str) -> Option<&str> {
        self.h.index.get(m).map(|&i| self.cells[i].trim())
    }

    fn num_at(&self, m: &str, v: Option<&str>) -> Result<Option<i64>, ImportError> {
        match v {
            None | Some("") => Ok(None),
            Some(v) => {
                v.parse::<i64>().map(Some).map_err(|_| (self.bad)(format!("%{m}% {} is not a number", excerpt(v))))
            }
        }
    }

    fn num(&self, m: &str) -> Result<Option<i64>, ImportError> {
        self.num_at(m, self.get(m))
    }

    fn handle(&self, m: &str) -> Result<u32, ImportError> {
        let v = self.get(m).ok_or_else(|| (self.bad)(format!("no %{m}% column")))?;
        hex(v)
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| (self.bad)(format!("%{m}% {} is not a 32-bit hexadecimal handle", excerpt(v))))
    }
}

impl Text1 {
    /// One line: blank, a section header, or a row of the current section.
    fn line(&mut self, line: &str, lineno: u64, bad: &Bad<'_>) -> Result<(), ImportError> {
        if line.trim().is_empty() {
            return Ok(());
        }
        if line.starts_with('*') {
            let h = parse_header(line).ok_or_else(|| bad(format!("malformed section header {}", excerpt(line))))?;
            if h.columns.is_empty() {
                return Err(bad(format!("section header {} names no %MACRO% columns", excerpt(line))));
            }
            self.header = Some(h);
            return Ok(());
        }
        let header = self.header.take().ok_or_else(|| bad("data before the first section header".into()))?;
        let done = Row::new(&header, line, bad).and_then(|row| self.row(&row, lineno));
        self.header = Some(header);
        done
    }

    /// A row, by its section.
    fn row(&mut self, row: &Row<'_>, lineno: u64) -> Result<(), ImportError> {
        let bad = row.bad;
        match (row.h.name.as_str(), row.h.arg.as_deref()) {
            ("INFO", _) => self.ex.total_time = row.num("TOTAL_TIME")?,
            ("CONTEXTS", _) => {
                let name = row.get("NAME").unwrap_or("").to_owned();
                let hd = row.handle("HANDLE")?;
                self.context_by_name.insert(name.clone(), hd);
                self.ex.contexts.insert(hd, name);
            }
            ("HANDLE", Some(_)) => self.handle_row(row)?,
            ("STATISTICS", class) => self.statistics_row(row, class, lineno)?,
            ("TIMELINE", _) => self.timeline_row(row, lineno)?,
            ("HANDLE", None) => {
                return Err(bad("a HANDLE section needs its class: HANDLE(Functions) or HANDLE(Data)".into()))
            }
            (other, _) => return Err(bad(format!("unknown section {}", excerpt(other)))),
        }
        Ok(())
    }

    /// A HANDLE row: a function, line, variable or member's handle and name.
    fn handle_row(&mut self, row: &Row<'_>) -> Result<(), ImportError> {
        let hd = row.handle("HANDLE")?;
        let name = row.get("NAME").unwrap_or("").to_owned();
        let value = row.get("VALUE").and_then(|v| v.parse::<u64>().ok().or_else(|| hex(v)));
        let display = match hd >> 28 {
            0 => {
                self.current_function = Some(name.clone());
                name
            }
            1 => format!(
                "{}:{}: {}",
                self.current_function.as_deref().unwrap_or("?"),
                value.map_or(String::new(), |v| v.to_string()),
                name
            ),
            2 | 4 => {
                self.current_variable = Some(name.clone());
                name
            }
            3 | 5 => self.current_variable.clone().unwrap_or_default(),
            n => return Err((row.bad)(format!("handle {hd:08X} has area type {n}, not one the format defines (0-5)"))),
        };
        if !self.ex.names.contains_key(&hd) {
            self.ex.order.push(hd);
        }
        self.ex.names.entry(hd).or_insert(display);
        Ok(())
    }

    /// A STATISTICS row: a handle's figures (COUNT and the T. columns).
    fn statistics_row(&mut self, row: &Row<'_>, class: Option<&str>, lineno: u64) -> Result<(), ImportError> {
        let h = row.h;
        let hd = row.handle("HANDLE")?;
        let value = row
            .get("VALUE")
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .or_else(|| hex(v))
                    .ok_or_else(|| (row.bad)(format!("%VALUE% {} is not a number", excerpt(v))))
            })
            .transpose()?;
        let mut figures = Vec::new();
        for (i, c) in h.columns.iter().enumerate() {
            // A repeated column name counts once, as its first column.
            if (c == "COUNT" || c.starts_with("T.")) && h.index.get(c) == Some(&i) {
                if let Some(v) = row.num_at(c, Some(row.cells[i].trim()))? {
                    figures.push((c.clone(), v));
                }
            }
        }
        self.ex.stats.push(StatRow {
            class: class.unwrap_or("").to_owned(),
            context: h.context.clone(),
            handle: hd,
            value,
            figures,
            line: lineno,
        });
        Ok(())
    }

    /// A TIMELINE row: one event.
    fn timeline_row(&mut self, row: &Row<'_>, lineno: u64) -> Result<(), ImportError> {
        let bad = row.bad;
        let hd = row.handle("HANDLE")?;
        let ev = row.get("EVENT").ok_or_else(|| bad("no %EVENT% column".into()))?;
        let kind = match ev {
            "E" | "S" | "R" | "X" | "W" => ev.as_bytes()[0],
            other => return Err(bad(format!("event {} is not E, S, R, X or W", excerpt(other)))),
        };
        let value = match row.get("VALUE") {
            None | Some("") => 0,
            Some(v) => hex(v).ok_or_else(|| bad(format!("%VALUE% {} is not hexadecimal", excerpt(v))))?,
        };
        let time = row.num("TIME")?.ok_or_else(|| bad("no time".into()))?;
        let context = match row.get("CONTEXT") {
            None | Some("") => 0,
            Some(c) => match self.context_by_name.get(c) {
                Some(k) => *k,
                None => hex(c)
                    .and_then(|x| u32::try_from(x).ok())
                    .ok_or_else(|| bad(format!("unknown context {}", excerpt(c))))?,
            },
        };
        self.ex.timeline.push(TimelineEvent { handle: hd, kind, value, time, context, at: Pos::Line(lineno) });
        Ok(())
    }
}

impl<'a> Row<'a> {
    /// The row's cells, as many as the header's columns: a NAME with
    /// commas (a source line) takes the surplus.
    fn new(h: &'a Header, line: &str, bad: &'a Bad<'a>) -> Result<Row<'a>, ImportError> {
        let mut cells = split_row(line.trim_start());
        let name_col = h.index.get("NAME").copied();
        if cells.len() > h.columns.len() {
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
                excerpt(&h.columns.join(","))
            )));
        }
        Ok(Row { h, cells, bad })
    }
}
