//! Symbols stored with a profile (`tbrw symbolize`): per ELF file, what the
//! symbolizer needs to name the functions samples hit without the file:
//! the file's label and build id as the profile recorded them (the key a
//! module finds it by), its `PT_LOAD` layout (the address translation), and
//! those functions' symbols. [`encode`] and [`decode`] are the bytes of the
//! TB5 section (docs/FORMAT.md, "Stored symbols"); no DWARF, so no lines.
//! `crate::image` makes one of an ELF image no file holds (the vDSO, read
//! from a process's memory by the collector).
//!
//! The text, one record per line, fields split by tabs (shown here as
//! `⇥`), numbers in hex:
//!
//! ```text
//! tbrw stored symbols 1
//! file⇥<build id or ->⇥exec|dyn|other⇥<offsets known 0|1>⇥<label>
//! segment⇥<p_vaddr>⇥<p_memsz>⇥<p_offset>⇥<p_filesz>⇥<p_align>⇥x|-
//! function⇥<start>⇥<end>⇥<name as in the symbol table>
//! ```
//!
//! `segment` and `function` lines belong to the `file` line above them.
//! Labels and names holding a tab or a line break are not stored.

use crate::elf::{BuildId, ElfKind, Layout, Segment};

const MAGIC: &str = "tbrw stored symbols 1";

/// One file's stored symbols.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFile {
    /// The path (or name) the profile recorded for the file.
    pub label: String,
    /// The build id the profile recorded, if any.
    pub build_id: Option<BuildId>,
    /// The file's loadable layout.
    pub layout: Layout,
    /// Function symbols, by start address.
    pub symbols: Vec<StoredSymbol>,
}

/// One function symbol: `[start, end)` in ELF virtual addresses, and its
/// name as the symbol table spells it (demangled when read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSymbol {
    /// The first address.
    pub start: u64,
    /// The address past the last.
    pub end: u64,
    /// The symbol's name.
    pub name: String,
}

fn plain(s: &str) -> bool {
    !s.contains(['\t', '\n', '\r'])
}

/// The bytes of `files`, in order.
pub fn encode(files: &[StoredFile]) -> Vec<u8> {
    let mut out = format!("{MAGIC}\n");
    for f in files.iter().filter(|f| plain(&f.label)) {
        let kind = match f.layout.kind {
            ElfKind::Executable => "exec",
            ElfKind::Dynamic => "dyn",
            ElfKind::Other => "other",
        };
        let id = f.build_id.as_ref().map_or_else(|| "-".to_owned(), BuildId::to_hex);
        out += &format!("file\t{id}\t{kind}\t{}\t{}\n", u8::from(f.layout.offsets_known), f.label);
        for s in &f.layout.segments {
            let x = if s.executable { "x" } else { "-" };
            out +=
                &format!("segment\t{:x}\t{:x}\t{:x}\t{:x}\t{:x}\t{x}\n", s.vaddr, s.memsz, s.offset, s.filesz, s.align);
        }
        for s in f.symbols.iter().filter(|s| plain(&s.name) && !s.name.is_empty()) {
            out += &format!("function\t{:x}\t{:x}\t{}\n", s.start, s.end, s.name);
        }
    }
    out.into_bytes()
}

/// The files stored in `bytes`, or what is wrong, naming the line.
pub fn decode(bytes: &[u8]) -> Result<Vec<StoredFile>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text at byte {}", e.valid_up_to()))?;
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, MAGIC)) => {}
        _ => return Err(format!("line 1: not {MAGIC:?}")),
    }
    let mut files: Vec<StoredFile> = Vec::new();
    for (i, line) in lines {
        let bad = |what: &str| format!("line {}: {what}", i + 1);
        let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad(&format!("{s:?} is not a hex number")));
        let fields: Vec<&str> = line.splitn(7, '\t').collect();
        match fields.as_slice() {
            ["file", id, kind, known, label] => {
                let kind = match *kind {
                    "exec" => ElfKind::Executable,
                    "dyn" => ElfKind::Dynamic,
                    "other" => ElfKind::Other,
                    _ => return Err(bad(&format!("unknown file kind {kind:?}"))),
                };
                let build_id = match *id {
                    "-" => None,
                    id => Some(BuildId::from_hex(id).ok_or_else(|| bad(&format!("bad build id {id:?}")))?),
                };
                let offsets_known = match *known {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad("offsets known is neither 0 nor 1")),
                };
                let layout = Layout { kind, segments: Vec::new(), offsets_known };
                files.push(StoredFile { label: (*label).to_owned(), build_id, layout, symbols: Vec::new() });
            }
            ["segment", vaddr, memsz, offset, filesz, align, x] => {
                let f = files.last_mut().ok_or_else(|| bad("a segment before any file"))?;
                let executable = match *x {
                    "x" => true,
                    "-" => false,
                    _ => return Err(bad("the segment flag is neither x nor -")),
                };
                f.layout.segments.push(Segment {
                    vaddr: hex(vaddr)?,
                    memsz: hex(memsz)?,
                    offset: hex(offset)?,
                    filesz: hex(filesz)?,
                    align: hex(align)?,
                    executable,
                });
            }
            ["function", start, end, name] => {
                let (start, end) = (hex(start)?, hex(end)?);
                if end < start || name.is_empty() {
                    return Err(bad("a function ending before it starts, or without a name"));
                }
                let f = files.last_mut().ok_or_else(|| bad("a function before any file"))?;
                f.symbols.push(StoredSymbol { start, end, name: (*name).to_owned() });
            }
            [] | [""] => {}
            _ => return Err(bad("not a file, segment or function record")),
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<StoredFile> {
        vec![
            StoredFile {
                label: "/usr/lib/lib m.so".into(),
                build_id: BuildId::from_hex("0a0b0c"),
                layout: Layout {
                    kind: ElfKind::Dynamic,
                    segments: vec![
                        Segment { vaddr: 0, memsz: 0x628, offset: 0, filesz: 0x628, align: 0x1000, executable: false },
                        Segment {
                            vaddr: 0x1000,
                            memsz: 0x1b5,
                            offset: 0x1000,
                            filesz: 0x1b5,
                            align: 0x1000,
                            executable: true,
                        },
                    ],
                    offsets_known: true,
                },
                symbols: vec![
                    StoredSymbol { start: 0x1000, end: 0x1040, name: "_ZN3foo3barEv".into() },
                    StoredSymbol { start: 0x1040, end: 0x1041, name: "operator new(unsigned long)".into() },
                ],
            },
            StoredFile {
                label: "prog".into(),
                build_id: None,
                layout: Layout { kind: ElfKind::Executable, segments: Vec::new(), offsets_known: false },
                symbols: Vec::new(),
            },
        ]
    }

    #[test]
    fn round_trips() {
        assert_eq!(decode(&encode(&sample())).unwrap(), sample());
        assert_eq!(decode(&encode(&[])).unwrap(), Vec::new());
    }

    #[test]
    fn what_cannot_be_written_is_left_out() {
        let mut files = sample();
        files[0].symbols.push(StoredSymbol { start: 1, end: 2, name: "a\tb".into() });
        files[1].label = "two\nlines".into();
        let back = decode(&encode(&files)).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0], sample()[0]);
    }

    #[test]
    fn bad_bytes_name_the_line() {
        assert_eq!(decode(b"\xff").unwrap_err(), "not UTF-8 text at byte 0");
        assert!(decode(b"something else\n").unwrap_err().starts_with("line 1:"));
        let text = format!("{MAGIC}\nfunction\t10\t20\tf\n");
        assert_eq!(decode(text.as_bytes()).unwrap_err(), "line 2: a function before any file");
        let text = format!("{MAGIC}\nfile\t-\tdyn\t1\tx\nfunction\t10\tzz\tf\n");
        assert_eq!(decode(text.as_bytes()).unwrap_err(), "line 3: \"zz\" is not a hex number");
        let text = format!("{MAGIC}\nfile\t-\tdyn\t1\tx\nfunction\t20\t10\tf\n");
        assert!(decode(text.as_bytes()).unwrap_err().starts_with("line 3: a function ending"));
        let text = format!("{MAGIC}\nfile\t-\tweird\t1\tx\n");
        assert!(decode(text.as_bytes()).unwrap_err().starts_with("line 2: unknown file kind"));
    }

    fn file() -> impl proptest::strategy::Strategy<Value = StoredFile> {
        use proptest::prelude::*;
        let segment = (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<bool>()).prop_map(
            |(vaddr, memsz, offset, filesz, align, executable)| Segment {
                vaddr,
                memsz,
                offset,
                filesz,
                align,
                executable,
            },
        );
        let symbol = (any::<u64>(), any::<u64>(), "[^\t\r\n]{1,12}").prop_map(|(a, b, name)| StoredSymbol {
            start: a.min(b),
            end: a.max(b),
            name,
        });
        (
            "[^\t\r\n]{0,12}",
            proptest::option::of(proptest::collection::vec(any::<u8>(), 1..8)),
            0..3u8,
            any::<bool>(),
            proptest::collection::vec(segment, 0..3),
            proptest::collection::vec(symbol, 0..4),
        )
            .prop_map(|(label, id, kind, offsets_known, segments, symbols)| StoredFile {
                label,
                build_id: id.map(BuildId),
                layout: Layout {
                    kind: [ElfKind::Executable, ElfKind::Dynamic, ElfKind::Other][usize::from(kind)],
                    segments,
                    offsets_known,
                },
                symbols,
            })
    }

    proptest::proptest! {
        #[test]
        fn any_files_round_trip(files in proptest::collection::vec(file(), 0..4)) {
            proptest::prop_assert_eq!(decode(&encode(&files)).unwrap(), files);
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut text = format!("{MAGIC}\n").into_bytes();
            text.extend(&bytes);
            let _ = decode(&bytes);
            let _ = decode(&text);
        }
    }
}
