//! The dump test: `tests/intel/tbrw_dump.c` prints everything the guide's
//! API gives on a file, through whichever library it loads. Through this
//! project's `libtbrw.so` it must print what Intel's 2020 library prints:
//!
//! - on every Intel-written fixture (`tbrw/tests/data/intel`), against the
//!   dump Intel's library printed, committed beside it (`NAME.tb7.dump`),
//!   always; and against Intel's library live when `TBRW_INTEL_LIB` names
//!   it (which also checks the committed dumps are still what it prints);
//! - on the same fixtures rewritten with Intel's TB5 header (`"SampleF "`);
//! - on the real VTune files in `TBRW_VTUNE_FILES` (not committed: their
//!   licences are unknown), with Intel's library;
//! - on a million-record stream Intel's library writes (too large to commit).
//!
//! One difference is expected and checked to be exactly it: Intel's reader
//! misreads a stream of type 2, 3 or 8 in a file whose stream 0 holds
//! legacy sample records, taking stream 0's record count (its writer stores
//! that count there); this project reads what was written (docs/FORMAT.md,
//! "Intel's writer's count").
//!
//! Tests that need Intel's library or the VTune files skip with a note
//! when they are absent (tbrw/tests/data/intel/README.md says where to get them).

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::{Path, PathBuf};
use std::process::Command;

use c_build::{compile, library, run_valgrind, Lang};

fn intel_dir() -> PathBuf {
    c_build::root().join("tbrw/tests/data/intel")
}

fn source(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/intel").join(name)
}

/// Intel's `libamplxe_tbrw_3.19.so`, from `TBRW_INTEL_LIB`.
fn intel_lib(test: &str) -> Option<PathBuf> {
    match std::env::var_os("TBRW_INTEL_LIB").map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            eprintln!("{test}: TBRW_INTEL_LIB does not name Intel's libamplxe_tbrw_3.19.so: skipped");
            None
        }
    }
}

fn ours() -> PathBuf {
    library().join("libtbrw.so")
}

/// The fixtures Intel's library wrote.
fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(intel_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tb7"))
        .collect();
    v.sort();
    assert!(v.len() >= 5, "the Intel-written fixtures are missing from {}", intel_dir().display());
    v
}

/// What `tbrw_dump LIBRARY FILE` prints (it must succeed). Each run has a
/// temporary folder of its own: Intel's library keeps work files in
/// `$TMPDIR` under names two processes started together can share.
fn dump(lib: &Path, file: &Path) -> String {
    let exe = compile(&source("tbrw_dump.c"), Lang::CDlopen);
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(&exe).arg(lib).arg(file).env("TMPDIR", tmp.path()).output().expect("run tbrw_dump");
    assert!(
        out.status.success(),
        "tbrw_dump {} {} failed ({}):\n{}",
        lib.display(),
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the dump is text")
}

/// The lines of stream `n`'s block of a dump.
fn stream_block(lines: &[&str], n: usize) -> Option<(usize, usize)> {
    let head = format!("stream {n}:");
    let start = lines.iter().position(|l| *l == head)?;
    let end = lines[start + 1..].iter().position(|l| l.starts_with("stream ")).map_or(lines.len(), |k| start + 1 + k);
    Some((start, end))
}

/// The records a data line announces and the record lines after it.
fn data_of<'a>(block: &[&'a str]) -> Option<(u64, Vec<&'a str>)> {
    let at = block.iter().position(|l| l.starts_with(" data: "))?;
    let bytes = block[at].strip_prefix(" data: ")?.split(' ').next()?.parse().ok()?;
    let records = block[at + 1..].iter().take_while(|l| l.starts_with("  ")).copied().collect();
    Some((bytes, records))
}

/// Compares Intel's dump with ours: equal, but for Intel's misread of a
/// stream of type 2, 3 or 8 in a file whose stream 0 holds legacy sample
/// records: there Intel's records are stream 0's count of that stream's
/// records, of which ours (what was written) are the first.
fn assert_same(intel: &str, ours: &str, what: &str) -> usize {
    if intel == ours {
        return 0;
    }
    let (il, ol): (Vec<&str>, Vec<&str>) = (intel.lines().collect(), ours.lines().collect());
    let legacy0 = il.iter().any(|l| l.contains(" type=0x1 subtype=") && l.starts_with("  entry offset="));
    let records0 = stream_block(&il, 0).and_then(|(s, e)| data_of(&il[s..e])).map_or(0, |(_, r)| r.len() as u64);
    let (mut i, mut o, mut misread) = (0, 0, 0);
    while i < il.len() || o < ol.len() {
        let n = il.get(i).and_then(|l| l.strip_prefix("stream ")?.strip_suffix(':')?.parse::<usize>().ok());
        if let (Some(n), true) = (n, il.get(i) == ol.get(o)) {
            let (is, ie) = stream_block(&il, n).unwrap();
            let (os, oe) = stream_block(&ol, n).unwrap();
            if il[is..ie] != ol[os..oe] {
                let misread_type =
                    il[is..ie].iter().any(|l| [" type=2 ", " type=3 ", " type=8 "].iter().any(|t| l.contains(t)));
                let (ib, ir) = data_of(&il[is..ie]).unwrap_or_default();
                let (ob, or) = data_of(&ol[os..oe]).unwrap_or_default();
                let size = if or.is_empty() { 0 } else { ob / or.len() as u64 };
                assert!(
                    legacy0 && misread_type && size > 0 && ib == records0 * size && ir.starts_with(&or),
                    "{what}: stream {n} differs, and not as Intel's known misread:\nIntel's:\n{}\nours:\n{}",
                    il[is..ie].join("\n"),
                    ol[os..oe].join("\n")
                );
                // Everything but the records is the same.
                let strip = |b: &[&str]| {
                    b.iter()
                        .filter(|l| !l.starts_with("  ") && !l.starts_with(" data: "))
                        .map(|l| l.to_string())
                        .collect::<Vec<_>>()
                };
                assert_eq!(strip(&il[is..ie]), strip(&ol[os..oe]), "{what}: stream {n}");
                misread += 1;
            }
            i = ie;
            o = oe;
            continue;
        }
        assert_eq!(il.get(i), ol.get(o), "{what}: line {} of Intel's dump, {} of ours", i + 1, o + 1);
        i += 1;
        o += 1;
    }
    misread
}

#[test]
fn ours_prints_what_intels_library_printed_on_every_fixture() {
    let mut misread = 0;
    for f in fixtures() {
        let golden = f.with_extension("tb7.dump");
        let intel = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e} (README.md says how it is made)", golden.display()));
        misread += assert_same(&intel, &dump(&ours(), &f), &f.display().to_string());
    }
    // The guide's fixture has the one stream Intel misreads (its custom stream 1).
    assert_eq!(misread, 1);
    // Reading an Intel file through this library's C API: no memory error, no leak.
    let exe = compile(&source("tbrw_dump.c"), Lang::CDlopen);
    let guide = intel_dir().join("guide.tb7");
    run_valgrind(&exe, &[ours().to_str().unwrap(), guide.to_str().unwrap()]);
}

#[test]
fn intels_library_still_prints_the_committed_dumps() {
    let Some(lib) = intel_lib("intels_library_still_prints_the_committed_dumps") else { return };
    for f in fixtures() {
        let golden = std::fs::read_to_string(f.with_extension("tb7.dump")).unwrap();
        assert_eq!(dump(&lib, &f), golden, "{}: Intel's library prints something else now", f.display());
    }
}

/// `bytes` with Intel's TB5 header: `"SampleF "`, 20-byte file section
/// entries, 32-byte entries in the global and stream tables (the layout of
/// Intel's `SampleFileSections_s` and `__TBRW_sample_file_section`).
fn as_tb5(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let n = u32_at(&b, 12) as usize;
    let entries: Vec<[u64; 5]> = (0..n)
        .map(|i| {
            let at = 16 + 40 * i;
            [
                u64_at(&b, at),
                u64_at(&b, at + 8),
                u64_at(&b, at + 16),
                u64::from(u32_at(&b, at + 24)),
                u64::from(u32_at(&b, at + 28)),
            ]
        })
        .collect();
    b[..8].copy_from_slice(b"SampleF ");
    b[16..16 + 40 * n].fill(0);
    for (i, [len, off, count, elen, ty]) in entries.iter().enumerate() {
        let at = 16 + 20 * i;
        b[at..at + 4].copy_from_slice(&(*len as u32).to_le_bytes());
        b[at + 4..at + 8].copy_from_slice(&(*off as u32).to_le_bytes());
        b[at + 8..at + 12].copy_from_slice(&(*count as u32).to_le_bytes());
        b[at + 12..at + 14].copy_from_slice(&(u16::try_from(*elen).unwrap_or(0)).to_le_bytes());
        b[at + 14..at + 16].copy_from_slice(&(*ty as u16).to_le_bytes());
    }
    fn table(b: &mut [u8], off: usize, len: usize) {
        let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let old = b[off..off + len].to_vec();
        b[off..off + len].fill(0);
        let mut links = Vec::new();
        for i in 0..len / 40 {
            let e = &old[40 * i..40 * i + 40];
            let at = off + 32 * i;
            b[at..at + 16].copy_from_slice(&e[..16]);
            b[at + 16..at + 20].copy_from_slice(&e[16..20]);
            b[at + 20..at + 32].copy_from_slice(&e[24..36]);
            if u32_at(e, 28) == 0x29 {
                links.push((
                    u64::from_le_bytes(e[8..16].try_into().unwrap()) as usize,
                    u64::from_le_bytes(e[..8].try_into().unwrap()) as usize,
                ));
            }
        }
        for (o, l) in links {
            table(b, o, l);
        }
    }
    for [len, off, _, _, ty] in entries {
        if ty == 0x22 {
            table(&mut b, off as usize, len as usize);
        }
    }
    b
}

#[test]
fn intels_tb5_header_reads_as_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let lib = intel_lib("intels_tb5_header_reads_as_the_same_file (Intel's side)");
    for f in fixtures() {
        let tb5 = dir.path().join(f.file_name().unwrap()).with_extension("tb5");
        std::fs::write(&tb5, as_tb5(&std::fs::read(&f).unwrap())).unwrap();
        assert_eq!(tb5::Tb5File::open(&tb5).unwrap().layout(), tb5::layout::FileLayout::IntelTb5);
        let our_tb5 = dump(&ours(), &tb5);
        assert_eq!(our_tb5, dump(&ours(), &f), "{}: the TB5 header reads otherwise", f.display());
        if let Some(lib) = &lib {
            assert_same(&dump(lib, &tb5), &our_tb5, &tb5.display().to_string());
        }
    }
}

#[test]
fn the_real_vtune_files_dump_alike() {
    let Some(lib) = intel_lib("the_real_vtune_files_dump_alike") else { return };
    let Some(dir) = std::env::var_os("TBRW_VTUNE_FILES") else {
        eprintln!("the_real_vtune_files_dump_alike: TBRW_VTUNE_FILES is not set: skipped");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tb6" || e == "tb7"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .tb6 or .tb7 file in {dir:?}");
    for f in files {
        assert_same(&dump(&lib, &f), &dump(&ours(), &f), &f.display().to_string());
    }
}

/// Runs `intel_corpus LIB DIR NAMES...`.
fn write_corpus(lib: &Path, dir: &Path, names: &[&str]) {
    let exe = compile(&source("intel_corpus.c"), Lang::CDlopen);
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(&exe).arg(lib).arg(dir).args(names).env("TMPDIR", tmp.path()).output().unwrap();
    assert!(out.status.success(), "intel_corpus failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_fixtures_are_what_intels_library_writes() {
    let Some(lib) = intel_lib("the_fixtures_are_what_intels_library_writes") else { return };
    let dir = tempfile::tempdir().unwrap();
    write_corpus(&lib, dir.path(), &[]);
    for f in fixtures() {
        let again = std::fs::read(dir.path().join(f.file_name().unwrap())).unwrap();
        assert!(again == std::fs::read(&f).unwrap(), "{}: Intel's library writes other bytes now", f.display());
    }
}

#[test]
fn a_million_record_stream_dumps_alike() {
    let Some(lib) = intel_lib("a_million_record_stream_dumps_alike") else { return };
    let dir = tempfile::tempdir().unwrap();
    write_corpus(&lib, dir.path(), &["million"]);
    let f = dir.path().join("million.tb7");
    let intel = dump(&lib, &f);
    assert!(intel.contains(" data: 48000000 bytes, digest per MiB:"), "{intel}");
    assert_same(&intel, &dump(&ours(), &f), "million.tb7");
}
