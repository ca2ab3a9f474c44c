//! Names from files made safe for text outputs: the one escape of control
//! characters that every text output (reports, annotate, folded stacks,
//! `tbrw info`, `print_tb5`, warnings, the sampler's summary) applies to
//! what a file, a traced program or a JIT map named (docs/FORMAT.md,
//! "Names in text outputs"). A thread named `\x1b[2J` must not clear the
//! terminal of whoever reads the report, and a function named `a\nb` must
//! not print a line of its own.
//!
//! What is escaped, and how (Rust's spellings, so that the result reads
//! as what it is):
//! - tab, line feed and carriage return: `\t`, `\n`, `\r`;
//! - every other C0 control character and DEL: `\xHH` (`\x1b` for ESC);
//! - the C1 control characters U+0080 to U+009F (a terminal reads U+009B
//!   as CSI): `\u{9b}`;
//! - the Unicode controls of text direction (U+061C, U+200E, U+200F,
//!   U+202A to U+202E, U+2066 to U+2069), which reorder what a terminal
//!   shows around them: `\u{202e}`.
//!
//! Anything else is kept, a backslash too: the escape is for reading, not
//! a reversible encoding (a Windows path keeps its backslashes); where an
//! output quotes names ([`Quoted`]), quotes and backslashes are escaped as
//! well, so the quoted text is unambiguous. Formats
//! that are not read on a terminal (JSON, pprof, the Firefox Profiler,
//! Parquet, CSV) keep the exact names.
//!
//! Imports nothing of the crate.

use std::borrow::Cow;
use std::fmt;

/// Whether `c` is escaped in text outputs.
pub fn needs_escape(c: char) -> bool {
    c.is_control() || is_direction_control(c)
}

/// The Unicode characters that change the direction text is shown in.
fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with its control characters escaped (borrowed when there is none,
/// which is nearly always).
pub fn escape(s: &str) -> Cow<'_, str> {
    if s.chars().any(needs_escape) {
        Cow::Owned(Escaped(s).to_string())
    } else {
        Cow::Borrowed(s)
    }
}

/// `s` displayed with its control characters escaped, without an
/// allocation: `format!("{}", Escaped(name))`.
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| needs_escape(c)) {
            f.write_str(&rest[..at])?;
            match c {
                '\t' => f.write_str("\\t")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                c if (c as u32) < 0x80 => write!(f, "\\x{:02x}", c as u32)?,
                c => write!(f, "\\u{{{:x}}}", c as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// `s` in double quotes, escaped, with its own quotes and backslashes
/// escaped too (`\"`, `\\`): for outputs that quote names so that where
/// one ends is never in doubt (`tbrw info`).
#[derive(Clone, Copy, Debug)]
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        let mut rest = self.0;
        while let Some(at) = rest.find(['"', '\\']) {
            Escaped(&rest[..at]).fmt(f)?;
            f.write_str(if rest.as_bytes()[at] == b'"' { "\\\"" } else { "\\\\" })?;
            rest = &rest[at + 1..];
        }
        Escaped(rest).fmt(f)?;
        f.write_str("\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_spelled_out() {
        assert_eq!(escape("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
        assert_eq!(escape("a\tb\nc\rd"), "a\\tb\\nc\\rd");
        assert_eq!(escape("\0\x7f"), "\\x00\\x7f");
        assert_eq!(escape("csi\u{9b}2J"), "csi\\u{9b}2J");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        // Kept: backslashes, quotes, other Unicode, spaces.
        assert_eq!(escape("C:\\app\\x.dll \"é\" 名前 ;"), "C:\\app\\x.dll \"é\" 名前 ;");
        assert!(matches!(escape("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn quoted_names_escape_their_quotes_too() {
        assert_eq!(Quoted("cpu-clock").to_string(), "\"cpu-clock\"");
        assert_eq!(Quoted("say \"hi\"\\\x1b").to_string(), "\"say \\\"hi\\\"\\\\\\x1b\"");
        // As Rust's `Debug` quotes printable text.
        assert_eq!(Quoted("a\"b\\c é").to_string(), format!("{:?}", "a\"b\\c é"));
    }

    #[test]
    fn the_result_has_no_character_a_terminal_acts_on() {
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        let e = escape(&all);
        assert!(!e.chars().any(needs_escape));
        assert_eq!(format!("{}", Escaped(&all)), e);
    }
}
