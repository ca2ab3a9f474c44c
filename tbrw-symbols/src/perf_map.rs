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
//!
//! A map sits in a world-writable folder, written by whatever runs, so it
//! is read as untrusted input ([`JitMaps`], docs/SYMBOLS.md): opened
//! without blocking (a FIFO there must not stop the report) and without
//! following a link, used only when the opened file is a regular file
//! owned by this user or root (perf's rule), and read up to a bound in
//! bytes and in lines, past which it is cut with a warning.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::elf::{ElfKind, Layout, Segment};
use crate::find::under;
use crate::frame::Unknown;
use crate::symtab::NameList;
use crate::Config;

/// The longest line read; a longer one (no JIT writes a name that long)
/// is skipped whole, so a damaged file costs this bound, not its size.
const MAX_LINE: usize = 64 * 1024;

/// How perf maps are trusted and how much of one is read
/// ([`Config::jit_maps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitMaps {
    /// Use maps whoever owns them, and follow a link at the map's path
    /// (`tbrw --trust-jit-maps`; perf's `--force`). Default: off, a map
    /// is used only when it is a regular file, not a link, owned by the
    /// effective user or by root, as perf requires.
    pub trust: bool,
    /// The most bytes read of one map. Default: [`JitMaps::MAX_BYTES`].
    pub max_bytes: u64,
    /// The most lines read of one map. Default: [`JitMaps::MAX_LINES`].
    pub max_lines: u64,
}

impl JitMaps {
    /// The default bound in bytes: 256 MiB, several times the largest maps
    /// long-running V8 and JVM processes write.
    pub const MAX_BYTES: u64 = 256 << 20;
    /// The default bound in lines: 4 Mi (4,194,304) symbols.
    pub const MAX_LINES: u64 = 4 << 20;
}

impl Default for JitMaps {
    fn default() -> JitMaps {
        JitMaps { trust: false, max_bytes: JitMaps::MAX_BYTES, max_lines: JitMaps::MAX_LINES }
    }
}

/// The bound a map reached ([`crate::Warning::PerfMapCut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapLimit {
    /// More bytes than [`JitMaps::max_bytes`].
    Bytes(u64),
    /// More lines than [`JitMaps::max_lines`].
    Lines(u64),
}

impl fmt::Display for MapLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapLimit::Bytes(n) => write!(f, "longer than {n} bytes"),
            MapLimit::Lines(n) => write!(f, "longer than {n} lines"),
        }
    }
}

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

/// One symbol of a map as read: its range and the number of its name in
/// [`PerfMap::names`] (24 bytes a line, beside the name's text).
#[derive(Clone, Copy, Debug)]
struct MapSymbol {
    start: u64,
    end: u64,
    name: u32,
}

/// A perf map as read: one symbol per start address, sorted by start,
/// and the bound it was cut at, if any.
pub(crate) struct PerfMap {
    symbols: Vec<MapSymbol>,
    /// The names, in line order.
    names: NameList,
    /// The bound the map reached (the symbols before it are kept).
    pub(crate) cut: Option<MapLimit>,
}

impl PerfMap {
    /// Number of symbols.
    pub(crate) fn len(&self) -> usize {
        self.symbols.len()
    }

    /// What a symbol table is made of: the starts, the ends and the
    /// names of the symbols that cover an address (`end > start`), the
    /// names' text moved, not copied (a map may hold 200 MiB of names).
    pub(crate) fn into_table(self) -> (Vec<u64>, Vec<u64>, NameList) {
        let kept = || self.symbols.iter().filter(|s| s.end > s.start);
        let count = kept().count();
        let mut starts = Vec::with_capacity(count);
        let mut ends = Vec::with_capacity(count);
        let mut order = Vec::with_capacity(count);
        for s in kept() {
            starts.push(s.start);
            ends.push(s.end);
            order.push(s.name);
        }
        let mut names = self.names;
        names.set_order(order);
        (starts, ends, names)
    }

    /// The symbols, by start, as stored symbols.
    #[cfg(test)]
    fn stored(&self) -> Vec<crate::stored::StoredSymbol> {
        let name = |s: &MapSymbol| self.names.pushed(s.name as usize).unwrap_or_default().to_owned();
        self.symbols.iter().map(|s| crate::stored::StoredSymbol { start: s.start, end: s.end, name: name(s) }).collect()
    }
}

/// Skips to the end of the current line (or of the input).
fn skip_line(r: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(p) => {
                r.consume(p + 1);
                return Ok(());
            }
            None => {
                let all = buf.len();
                r.consume(all);
            }
        }
    }
}

/// The symbols of a perf map read from `input`, at most `limits`'
/// bytes and lines, one per start address (the last line of an address
/// wins: JITs write code at an address again after the old code is
/// freed, and the latest is what the samples most likely hit). A size of
/// 0 covers its start address, as perf's lookup does.
pub(crate) fn parse(input: impl Read, limits: &JitMaps) -> std::io::Result<PerfMap> {
    // One byte past the bound tells a longer map from one of exactly that size.
    let cap = limits.max_bytes.saturating_add(1);
    let mut r = BufReader::with_capacity(64 * 1024, input.take(cap));
    // The bytes taken from the input so far (read less what is buffered).
    let consumed = |r: &BufReader<std::io::Take<_>>| cap - r.get_ref().limit() - r.buffer().len() as u64;
    let mut line = Vec::new();
    let mut symbols: Vec<MapSymbol> = Vec::new();
    let mut names = NameList::default();
    let (mut lines, mut cut) = (0u64, None);
    loop {
        if lines == limits.max_lines {
            if !r.fill_buf()?.is_empty() {
                cut = Some(MapLimit::Lines(limits.max_lines));
            }
            break;
        }
        line.clear();
        let n = (&mut r).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        lines += 1;
        if line.last() != Some(&b'\n') && n > MAX_LINE {
            // Too long: skipped to its end, unread.
            skip_line(&mut r)?;
        }
        if consumed(&r) > limits.max_bytes {
            // This line runs past the bound: not used.
            cut = Some(MapLimit::Bytes(limits.max_bytes));
            break;
        }
        if n > MAX_LINE {
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if let Some((start, size, name)) = parse_line(text) {
            let end = start.saturating_add(size.max(1));
            let number = u32::try_from(symbols.len()).map_err(|_| std::io::Error::other("more than 2^32 symbols"))?;
            names.push(&String::from_utf8_lossy(name));
            symbols.push(MapSymbol { start, end, name: number });
        }
    }
    // By start, the last line of each start kept: the highest name number
    // sorts first among equal starts, and `dedup` keeps the first.
    symbols.sort_unstable_by_key(|s| (s.start, std::cmp::Reverse(s.name)));
    symbols.dedup_by_key(|s| s.start);
    symbols.shrink_to_fit();
    names.shrink_to_fit();
    Ok(PerfMap { symbols, names, cut })
}

/// Opens the map at `path` as untrusted input: non-blocking (a FIFO
/// must not stop the report in `open`), not through a link unless
/// `limits.trust`, and only a regular file (the descriptor checked, not
/// the path, so nothing is swapped in between), owned by the effective
/// user or root unless `limits.trust`. `Ok(None)` when nothing is there.
fn open_untrusted(path: &Path, limits: &JitMaps) -> Result<Option<File>, Unknown> {
    let unreadable = |message: String| Unknown::Unreadable { path: path.to_path_buf(), message };
    let file = match open_options(limits).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.kind() == std::io::ErrorKind::NotADirectory => {
            return Ok(None)
        }
        Err(e) if is_link_refused(&e) && !limits.trust => {
            return Err(Unknown::LinkRefused { path: path.to_path_buf() })
        }
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let meta = file.metadata().map_err(|e| unreadable(e.to_string()))?;
    if meta.is_dir() {
        return Err(Unknown::Directory { path: path.to_path_buf() });
    }
    if !meta.is_file() {
        return Err(unreadable(format!("not a regular file ({})", file_kind(&meta))));
    }
    #[cfg(unix)]
    if !limits.trust {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let user = unsafe { libc::geteuid() };
        if !owner_trusted(meta.uid(), user) {
            return Err(Unknown::Untrusted { path: path.to_path_buf(), owner: meta.uid(), user });
        }
    }
    Ok(Some(file))
}

/// How a map is opened: for reading, without blocking, and not through a
/// link at its own name unless trusted.
fn open_options(limits: &JitMaps) -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let no_follow = if limits.trust { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | no_follow);
    }
    #[cfg(not(unix))]
    let _ = limits;
    options
}

/// Whether opening failed on a link `O_NOFOLLOW` refused.
fn is_link_refused(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    return e.raw_os_error() == Some(libc::ELOOP);
    #[cfg(not(unix))]
    return {
        let _ = e;
        false
    };
}

/// perf's rule for a map: owned by root or by the user reading it.
pub(crate) fn owner_trusted(owner: u32, euid: u32) -> bool {
    owner == 0 || owner == euid
}

/// What a file that is not a regular file is, for messages.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        } else if t.is_char_device() {
            return "a character device";
        } else if t.is_block_device() {
            return "a block device";
        } else if t.is_socket() {
            return "a socket";
        }
    }
    let _ = meta;
    "not a file"
}

/// Finds and reads the perf map `label` names: under the symfs first,
/// then the path itself, then `DIR/perf-<pid>.map` in each search path
/// (the order ELF files are found in, docs/SYMBOLS.md), as untrusted
/// input ([`JitMaps`]).
pub(crate) fn load(label: &str, config: &Config) -> Result<(PathBuf, PerfMap), Unknown> {
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
        match open_untrusted(&c, &config.jit_maps)? {
            Some(f) => {
                return match parse(f, &config.jit_maps) {
                    Ok(map) => Ok((c, map)),
                    Err(e) => Err(Unknown::Unreadable { path: c, message: e.to_string() }),
                };
            }
            None => tried.push(c),
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
        let s = parse(&text[..], &JitMaps::default()).unwrap().stored();
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
        let s = parse(&text[..], &JitMaps::default()).unwrap().stored();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name, "after");
    }

    fn limits(max_bytes: u64, max_lines: u64) -> JitMaps {
        JitMaps { trust: false, max_bytes, max_lines }
    }

    #[test]
    fn a_map_past_its_line_bound_is_cut_there() {
        let text = b"1000 10 aaa\n2000 10 bbb\n3000 10 ccc\n";
        let m = parse(&text[..], &limits(1 << 20, 2)).unwrap();
        assert_eq!((m.len(), m.cut), (2, Some(MapLimit::Lines(2))));
        // Exactly at the bound: whole, not cut.
        let m = parse(&text[..], &limits(1 << 20, 3)).unwrap();
        assert_eq!((m.len(), m.cut), (3, None));
    }

    #[test]
    fn a_map_past_its_byte_bound_is_cut_before_the_line_it_reaches() {
        let text = b"1000 10 aaa\n2000 10 bbb\n3000 10 ccc\n";
        // 24 bytes hold the first two lines; the third is not used.
        let m = parse(&text[..], &limits(30, 100)).unwrap();
        assert_eq!((m.len(), m.cut), (2, Some(MapLimit::Bytes(30))));
        let m = parse(&text[..], &limits(text.len() as u64, 100)).unwrap();
        assert_eq!((m.len(), m.cut), (3, None));
        // No line break at all (what /dev/zero gives): bounded by the bytes.
        let zeros = std::io::repeat(0).take(1 << 30);
        let m = parse(zeros, &limits(4 << 20, 100)).unwrap();
        assert_eq!((m.len(), m.cut), (0, Some(MapLimit::Bytes(4 << 20))));
    }

    #[test]
    fn maps_of_root_or_of_the_reader_are_trusted() {
        assert!(owner_trusted(0, 1000));
        assert!(owner_trusted(1000, 1000));
        assert!(!owner_trusted(65534, 1000));
        // root trusts only its own maps, as perf.
        assert!(!owner_trusted(1000, 0));
    }
}
