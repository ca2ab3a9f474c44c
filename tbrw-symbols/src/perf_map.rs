//! perf's symbol files for JIT code, `/tmp/perf-<pid>.map`: what V8 and
//! node (`--perf-basic-prof`), the JVM's perf-map-agent, .NET
//! (`DOTNET_PerfMapEnabled`) and LuaJIT write for the code they generate
//! in anonymous memory. perf names such a mapping `[JIT] tid <pid>` and
//! reads this file for its symbols; so does the symbolizer, for a module
//! whose path is a perf map ([`is_perf_map`]).
//!
//! One symbol a line: `START SIZE NAME`, start and size in hexadecimal,
//! read as perf reads them (`dso__load_perf_map`: each number with
//! `strtoull(.., 16)`, so an optional `0x`, then one separator character;
//! the name is the rest of the line, spaces included). A line perf skips
//! (too short for a name) is skipped. Addresses are absolute: the map's
//! layout (`layout()`) is a fixed executable image of the whole address
//! space, so `Mapping::LoadBase { load_base: 0 }` is the identity.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::elf::{ElfKind, Layout, Segment};
use crate::find::under;
use crate::frame::Unknown;
use crate::stored::StoredSymbol;
use crate::Config;

/// The longest line read; a longer one (no JIT writes a name that long)
/// is skipped whole, so a damaged file costs this bound, not its size.
const MAX_LINE: usize = 64 * 1024;

/// Whether `label` names a perf map: a file named `perf-<digits>.map`
/// (perf's own `/tmp/perf-<pid>.map`, or a copy of one under another
/// directory).
pub fn is_perf_map(label: &str) -> bool {
    let name = label.rsplit('/').next().unwrap_or(label);
    name.strip_prefix("perf-")
        .and_then(|n| n.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The layout a perf map's symbols are placed in: addresses as they are.
pub(crate) fn layout() -> Layout {
    Layout {
        kind: ElfKind::Executable,
        segments: vec![Segment {
            vaddr: 0,
            memsz: u64::MAX,
            offset: 0,
            filesz: u64::MAX,
            align: 4096,
            executable: true,
        }],
        offsets_known: true,
    }
}

/// `strtoull(s, &end, 16)` of perf's `hex2u64`: leading white space, an
/// optional sign and `0x`, then hex digits (saturating, as `strtoull`
/// gives `ULLONG_MAX` on overflow). The value and the bytes consumed (0
/// when there is no digit, as `strtoull` leaves `end` at the start).
fn strtoull16(s: &[u8]) -> (u64, usize) {
    let mut i = s.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)).count();
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    if s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        i += 2;
    }
    let digits = s[i.min(s.len())..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return (0, 0);
    }
    let value = s[i..i + digits].iter().fold(0u64, |v, b| {
        let d = (*b as char).to_digit(16).unwrap_or(0) as u64;
        v.checked_mul(16).and_then(|v| v.checked_add(d)).unwrap_or(u64::MAX)
    });
    (if negative { value.wrapping_neg() } else { value }, i + digits)
}

/// One line (without its line break) as perf reads it: (start, size,
/// name), or `None` for a line perf skips.
fn parse_line(line: &[u8]) -> Option<(u64, u64, &[u8])> {
    let (start, used) = strtoull16(line);
    // perf steps over one separator after each number and wants at least
    // two more characters (`len + 2 >= line_len` skips the line).
    let mut at = used + 1;
    if used == 0 || at + 2 >= line.len() {
        return None;
    }
    let (size, used) = strtoull16(&line[at..]);
    at += used + 1;
    if used == 0 || at + 2 >= line.len() {
        return None;
    }
    Some((start, size, &line[at..]))
}

/// The symbols of a perf map read from `input`, one per start address
/// (the last line of an address wins: JITs write code at an address
/// again after the old code is freed, and the latest is what the
/// samples most likely hit). A size of 0 covers its start address, as
/// perf's lookup does.
pub(crate) fn parse(input: impl Read) -> std::io::Result<Vec<StoredSymbol>> {
    let mut r = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    let mut symbols: Vec<(usize, StoredSymbol)> = Vec::new();
    loop {
        line.clear();
        let n = (&mut r).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && n > MAX_LINE {
            // Too long: skip to the end of the line.
            loop {
                let buf = r.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                match buf.iter().position(|&b| b == b'\n') {
                    Some(p) => {
                        r.consume(p + 1);
                        break;
                    }
                    None => {
                        let all = buf.len();
                        r.consume(all);
                    }
                }
            }
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if let Some((start, size, name)) = parse_line(text) {
            let end = start.saturating_add(size.max(1));
            let name = String::from_utf8_lossy(name).into_owned();
            symbols.push((symbols.len(), StoredSymbol { start, end, name }));
        }
    }
    // By start, the last line of each start kept.
    symbols.sort_by(|a, b| a.1.start.cmp(&b.1.start).then(b.0.cmp(&a.0)));
    symbols.dedup_by_key(|s| s.1.start);
    Ok(symbols.into_iter().map(|(_, s)| s).collect())
}

/// Finds and reads the perf map `label` names: under the symfs first,
/// then the path itself, then `DIR/perf-<pid>.map` in each search path
/// (the order ELF files are found in, docs/SYMBOLS.md).
pub(crate) fn load(label: &str, config: &Config) -> Result<(PathBuf, Vec<StoredSymbol>), Unknown> {
    let path = Path::new(label);
    let mut candidates = Vec::new();
    if let Some(root) = &config.symfs {
        candidates.push(under(root, path));
    }
    candidates.push(path.to_path_buf());
    if let Some(name) = path.file_name() {
        for s in &config.search_paths {
            candidates.push(s.join(name));
        }
    }
    let mut tried = Vec::new();
    for c in candidates {
        match std::fs::File::open(&c) {
            Ok(f) => {
                if f.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(Unknown::Directory { path: c });
                }
                return match parse(f) {
                    Ok(symbols) => Ok((c, symbols)),
                    Err(e) => Err(Unknown::Unreadable { path: c, message: e.to_string() }),
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => tried.push(c),
            Err(e) => return Err(Unknown::Unreadable { path: c, message: e.to_string() }),
        }
    }
    Err(Unknown::NotFound { tried })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_map_names() {
        assert!(is_perf_map("/tmp/perf-4242.map"));
        assert!(is_perf_map("perf-1.map"));
        assert!(!is_perf_map("/tmp/perf-.map"));
        assert!(!is_perf_map("/tmp/perf-12a.map"));
        assert!(!is_perf_map("/usr/lib/libperf-1.so"));
    }

    #[test]
    fn lines_read_as_perf_reads_them() {
        let text = b"7f0000001000 40 LazyCompile:~add /app.js:3\n\
                     0x7f0000002000 0x10 Interpreter\n\
                     7f0000003000 0 zero sized\n\
                     7f0000001000 20 add (reoptimized)\n\
                     # a comment\n\
                     7f00 1\n\
                     zz 10 no start\n\
                     7f0000004000 8 crlf\r\n\
                     ffffffffffffffffff 8 overflow";
        let s = parse(&text[..]).unwrap();
        let got: Vec<(u64, u64, &str)> = s.iter().map(|s| (s.start, s.end, s.name.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (0x7f00_0000_1000, 0x7f00_0000_1020, "add (reoptimized)"),
                (0x7f00_0000_2000, 0x7f00_0000_2010, "Interpreter"),
                (0x7f00_0000_3000, 0x7f00_0000_3001, "zero sized"),
                (0x7f00_0000_4000, 0x7f00_0000_4008, "crlf"),
                (u64::MAX, u64::MAX, "overflow"),
            ]
        );
    }

    #[test]
    fn a_huge_line_is_skipped_not_held() {
        let mut text = vec![b'a'; MAX_LINE * 3];
        text.extend_from_slice(b"\n1000 10 after\n");
        let s = parse(&text[..]).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name, "after");
    }
}
