//! One line of the log, in either layout the profiler writes (v0.1 and the
//! 2023 one), checked and parsed into a [`Task`]; and the bounded line
//! reader the import uses. Sections are taken from the line one at a time
//! (never split into a vector of unknown length), and a line or a field
//! longer than its documented limit is rejected as soon as it is seen, so
//! memory stays bounded whatever the input. Imports nothing of the TB5
//! writer.

use std::io::BufRead;

use crate::error::{excerpt, ImportError, Place};
use tbrw_schema::fields::{MAX_CONSTANTS, MAX_COUNTERS};

/// The longest line the import reads, in bytes (docs/IMPORT.md): 256
/// counters at both ends, the 1023-byte user prefix and 16 constants fit
/// with room to spare.
pub const MAX_LINE: usize = 64 * 1024;
/// The longest number field, in characters (a u64 has 20 digits; a
/// constant may be a float such as `1.84467e+13`).
pub const MAX_NUMBER: usize = 32;
/// The longest user prefix string, in bytes (the profiler's buffer is 1024
/// bytes with its terminating NUL).
pub const MAX_PREFIX: usize = 1023;
/// Sections of a line at most (the 2023 layout's 16, and a stray trailing comma).
const MAX_SECTIONS: usize = 17;

pub use tbrw_schema::mtmc::{Extra, Layout, Task};

/// A problem at `line` of `input`, at the 0-based column `col`.
pub(super) fn bad(input: &str, line: u64, col: usize, what: impl std::fmt::Display) -> ImportError {
    ImportError::invalid(input, Place::Line { line, column: Some(col as u64 + 1) }, what.to_string())
}

pub use crate::lines::LineRead;

/// Reads one task line into `buf` (see [`crate::lines::read_bounded`]),
/// holding at most [`MAX_LINE`] + 1 bytes of it whatever its real length.
pub fn read_line(r: &mut dyn BufRead, buf: &mut Vec<u8>) -> std::io::Result<(LineRead, u64)> {
    crate::lines::read_bounded(r, buf, MAX_LINE)
}

/// A section of the line: its column (0-based) and text.
type Section<'a> = (usize, &'a str);

/// Parses one line of the log named `input` (`input` and `line`, the
/// line's 1-based number, are for errors).
pub fn parse_line(text: &str, input: &str, line: u64) -> Result<Task, ImportError> {
    let p = LineParse { input, line };
    if text.len() > MAX_LINE {
        return Err(p.err(0, format!("the line is longer than {MAX_LINE} bytes: {}", excerpt(text))));
    }
    let (sections, count) = p.sections(text)?;
    let (layout, events) = p.layout(text, &sections[..count])?;
    let topdown = if sections[7].1.trim().is_empty() {
        None
    } else {
        let td = p.fixed(sections[7], 6, "topdown section [7]")?;
        let td = [td[0], td[1], td[2], td[3], td[4], td[5]];
        (td != [0; 6]).then_some(td)
    };
    let bi = p.fixed(sections[8], 3, "begin information [8]")?;
    // Without events the sections after [8] move up by one ([9] is absent).
    let (begin, end_at) =
        if events { (p.subs(sections[9], MAX_COUNTERS, "begin counter reading [9]")?, 10) } else { (Vec::new(), 9) };
    let ei = p.fixed(sections[end_at], 3, "end information [10]")?;
    let (end_counters, next) = if events {
        (p.subs(sections[end_at + 1], MAX_COUNTERS, "end counter reading [11]")?, end_at + 2)
    } else {
        (Vec::new(), end_at + 1)
    };
    let extra = match layout {
        Layout::V01 => None,
        Layout::V2023 => Some(p.extra(&sections[next..next + 4])?),
    };
    let t = Task {
        tid: p.u32_of(sections[0], "task tid [0]")?,
        pthread: p.u32_of(sections[1], "task pthread id [1]")?,
        start: p.num(sections[2], "start time [2]")?,
        end: p.num(sections[3], "end time [3]")?,
        parent_tid: p.u32_of(sections[4], "parent tid [4]")?,
        parent_pthread: p.u32_of(sections[5], "parent pthread id [5]")?,
        scheduled: p.num(sections[6], "scheduled time [6]")?,
        topdown,
        begin_info: [bi[0], bi[1], bi[2]],
        begin,
        end_info: [ei[0], ei[1], ei[2]],
        end_counters,
        extra,
    };
    if t.end != 0 && t.end < t.start {
        return Err(p.err(sections[3].0, format!("the task ends ({}) before it starts ({})", t.end, t.start)));
    }
    if events && t.begin.is_empty() {
        return Err(p.err(sections[9].0, "the begin counter readings [9] are empty".into()));
    }
    if t.begin.len() != t.end_counters.len() {
        return Err(p.err(
            sections[end_at + usize::from(events)].0,
            format!("{} counter readings at the end but {} at the beginning", t.end_counters.len(), t.begin.len()),
        ));
    }
    Ok(t)
}

/// Where the line being parsed is, for its errors; and the readers of its
/// sections' values.
struct LineParse<'a> {
    input: &'a str,
    line: u64,
}

impl LineParse<'_> {
    fn err(&self, col: usize, what: String) -> ImportError {
        bad(self.input, self.line, col, what)
    }

    /// The line's comma-separated sections with their columns, and how many.
    fn sections<'t>(&self, text: &'t str) -> Result<([Section<'t>; MAX_SECTIONS], usize), ImportError> {
        let mut sections: [Section<'_>; MAX_SECTIONS] = [(0, ""); MAX_SECTIONS];
        let mut count = 0;
        let mut col = 0;
        for s in text.split(',') {
            if count == MAX_SECTIONS {
                return Err(self.err(
                    col,
                    format!(
                        "more than {MAX_SECTIONS} comma-separated sections (a task line has 12, or 16): {}",
                        excerpt(text)
                    ),
                ));
            }
            sections[count] = (col, s);
            count += 1;
            col += s.len() + 1;
        }
        Ok((sections, count))
    }

    /// The line's layout, and whether it has counter readings, from its
    /// sections. v0.1 ends every line with a comma; the 2023 layout ends
    /// with its constants (possibly none). Without PMU events [9] and [11]
    /// are absent.
    fn layout(&self, text: &str, sections: &[Section<'_>]) -> Result<(Layout, bool), ImportError> {
        let count = sections.len();
        let trailing_empty = sections[count - 1].1.trim().is_empty();
        Ok(match (count, trailing_empty) {
            (13, true) | (12, _) => (Layout::V01, true),
            (11, true) | (10, _) => (Layout::V01, false),
            (16, _) => (Layout::V2023, true),
            (14, _) => (Layout::V2023, false),
            _ => {
                return Err(self.err(
                    0,
                    format!(
                        "{count} comma-separated sections where a task line has 12 (10 without counter readings), or 16 (14) in the 2023 layout: {}",
                        excerpt(text)
                    ),
                ))
            }
        })
    }

    fn num(&self, sec: Section<'_>, what: &str) -> Result<u64, ImportError> {
        self.number(sec, what, "an unsigned integer")
    }

    fn signed(&self, sec: Section<'_>, what: &str) -> Result<i64, ImportError> {
        self.number(sec, what, "an integer")
    }

    /// The section's one number, at most [`MAX_NUMBER`] characters; `kind`
    /// names what it must be in the error.
    fn number<T: std::str::FromStr>(&self, (col, s): Section<'_>, what: &str, kind: &str) -> Result<T, ImportError> {
        let t = s.trim();
        if t.len() > MAX_NUMBER {
            return Err(
                self.err(col, format!("{what} is {} characters long, more than a number has: {}", t.len(), excerpt(t)))
            );
        }
        t.parse::<T>().map_err(|_| self.err(col, format!("{what} {} is not {kind}", excerpt(t))))
    }

    /// `_`-separated values, at most `max` of them (checked before the next is parsed).
    fn subs(&self, sec: Section<'_>, max: usize, what: &str) -> Result<Vec<u64>, ImportError> {
        let too_many = || format!("{what} has more than {max} '_'-separated values");
        self.separated(sec, max, too_many, |v| self.num(v, what))
    }

    /// The `_`-separated values of a section, each read by `value` from
    /// its own column; more than `max` is the error `too_many` says,
    /// found before the next value is read.
    fn separated<T>(
        &self,
        (col, s): Section<'_>,
        max: usize,
        too_many: impl Fn() -> String,
        value: impl Fn(Section<'_>) -> Result<T, ImportError>,
    ) -> Result<Vec<T>, ImportError> {
        let mut v = Vec::new();
        if s.trim().is_empty() {
            return Ok(v);
        }
        let mut c = col;
        for p in s.split('_') {
            if v.len() == max {
                return Err(self.err(c, too_many()));
            }
            v.push(value((c, p))?);
            c += p.len() + 1;
        }
        Ok(v)
    }

    fn u32_of(&self, sec: Section<'_>, what: &str) -> Result<u32, ImportError> {
        let v = self.num(sec, what)?;
        u32::try_from(v).map_err(|_| self.err(sec.0, format!("{what} {v} does not fit 32 bits")))
    }

    /// Exactly `n` `_`-separated values.
    fn fixed(&self, sec: Section<'_>, n: usize, what: &str) -> Result<Vec<u64>, ImportError> {
        let v = self.subs(sec, n + 1, what)?;
        if v.len() != n {
            return Err(self.err(sec.0, format!("{what} has {} '_'-separated values where {n} are expected", v.len())));
        }
        Ok(v)
    }

    /// The 2023 layout's last four sections [12]-[15]: integer prefix,
    /// user prefix, configuration index, constants.
    fn extra(&self, s: &[Section<'_>]) -> Result<Extra, ImportError> {
        let (pcol, prefix) = s[1];
        if prefix.len() > MAX_PREFIX {
            return Err(self.err(
                pcol,
                format!("the user prefix is {} bytes long, more than {MAX_PREFIX}: {}", prefix.len(), excerpt(prefix)),
            ));
        }
        let constants = self.constants(s[3])?;
        Ok(Extra {
            int_prefix: self.signed(s[0], "integer prefix [12]")?,
            prefix: prefix.to_owned(),
            config: self.signed(s[2], "configuration index [14]")?,
            constants,
        })
    }

    /// The constants [15]: `_`-separated finite numbers.
    fn constants(&self, sec: Section<'_>) -> Result<Vec<f64>, ImportError> {
        self.separated(
            sec,
            MAX_CONSTANTS,
            || format!("more than {MAX_CONSTANTS} constants [15]"),
            |(c, p)| {
                let t = p.trim();
                if t.len() > MAX_NUMBER {
                    return Err(self.err(c, format!("constant [15] is {} characters long: {}", t.len(), excerpt(t))));
                }
                t.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| self.err(c, format!("constant [15] {} is not a finite number", excerpt(t))))
            },
        )
    }
}
