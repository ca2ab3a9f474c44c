//! Reading text input a line at a time with a bound on the line's length,
//! for the text importers (MTMC logs, winIDEA Text1): a line longer than
//! the bound is reported without being held, so a file of one huge line
//! costs the bound, not its size. What a line means is the importers'.

use std::io::BufRead;

/// What [`read_bounded`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A line (without its `\n`) is in the buffer.
    Line,
    /// The input ended.
    Eof,
    /// The line is longer than the bound: the buffer holds its first bytes.
    TooLong,
}

/// Reads one line into `buf` (cleared first), holding at most `max` + 1
/// bytes of it whatever its real length. Returns what was found and the
/// bytes consumed (a line that is too long is consumed up to where reading
/// stopped, not to its end).
pub fn read_bounded(r: &mut dyn BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<(LineRead, u64)> {
    buf.clear();
    let mut consumed = 0u64;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            let found = if consumed == 0 { LineRead::Eof } else { LineRead::Line };
            return Ok((found, consumed));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = max + 1 - buf.len();
        buf.extend_from_slice(&chunk[..take.min(room)]);
        let used = if done { take + 1 } else { take };
        r.consume(used);
        consumed += used as u64;
        if buf.len() > max {
            return Ok((LineRead::TooLong, consumed));
        }
        if done {
            return Ok((LineRead::Line, consumed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_the_bound_and_the_end() {
        let mut r = std::io::BufReader::with_capacity(4, &b"ab\ncdefgh\nij"[..]);
        let mut buf = Vec::new();
        assert_eq!(read_bounded(&mut r, &mut buf, 5).unwrap(), (LineRead::Line, 3));
        assert_eq!(buf, b"ab");
        assert_eq!(read_bounded(&mut r, &mut buf, 5).unwrap().0, LineRead::TooLong);
        assert_eq!(buf, b"cdefgh", "the first max + 1 bytes");
        let mut r = std::io::BufReader::new(&b"ij"[..]);
        assert_eq!(read_bounded(&mut r, &mut buf, 5).unwrap(), (LineRead::Line, 2));
        assert_eq!(buf, b"ij");
        assert_eq!(read_bounded(&mut r, &mut buf, 5).unwrap(), (LineRead::Eof, 0));
    }
}
