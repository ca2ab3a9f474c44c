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
#[path = "../../tests/support/intel_dump.rs"]
mod intel_dump;

use std::path::{Path, PathBuf};
use std::process::Command;

use c_build::{compile, run_valgrind, Lang};
use intel_dump::{assert_same, dump, intel_lib, ours, source};

fn intel_dir() -> PathBuf {
    c_build::root().join("tbrw/tests/data/intel")
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
        assert_eq!(tb5::Tb5File::open(&tb5).unwrap().layout(), tb5::FileLayout::IntelTb5);
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

/// The files this project's own writers write, read alike by Intel's
/// library: the guide's content written through this library's C API
/// (`tests/c/guide_write_read.c`, through the Rust engine every writer
/// uses), and the same file bound by `TBRW_dobind` afterwards (Intel's bind
/// enumerate reads our bind streams). Intel's dumps of them are committed
/// (`tests/intel/written/*.dump`): without Intel's library ours must print
/// them; with it (`TBRW_INTEL_LIB`), Intel's must too, and verify them (0).
#[test]
fn files_this_projects_writers_write_dump_alike() {
    let dir = tempfile::tempdir().unwrap();
    let guide = dir.path().join("c-api-guide.tb5");
    let exe = compile(&c_build::root().join("tbrw-sys/tests/c/guide_write_read.c"), Lang::C);
    c_build::run(&exe, &[guide.to_str().unwrap(), "300"]);
    let bound = dir.path().join("c-api-guide-bound.tb5");
    std::fs::copy(&guide, &bound).unwrap();
    tb5::bind::dobind(&bound, 0).unwrap();
    let lib = intel_lib("files_this_projects_writers_write_dump_alike (Intel's side)");
    for (name, f) in [("c-api-guide", &guide), ("c-api-guide-bound", &bound)] {
        assert_eq!(&std::fs::read(f).unwrap()[..8], b"Sample6 ", "{name}: not in Intel's layout");
        let ours = dump(&ours(), f);
        assert!(ours.starts_with("verify: 0\n"), "{name}:\n{ours}");
        let golden = source("written").join(format!("{name}.dump"));
        if let Some(lib) = &lib {
            let intel = dump(lib, f);
            assert!(intel.starts_with("verify: 0\n"), "{name}: Intel's verify:\n{intel}");
            if std::env::var_os("TBRW_BLESS").is_some() {
                std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
                std::fs::write(&golden, &intel).unwrap();
            }
            assert_eq!(assert_same(&intel, &ours, name), 0, "{name}");
        }
        let intel = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e} (made with TBRW_INTEL_LIB and TBRW_BLESS=1)", golden.display()));
        assert_eq!(assert_same(&intel, &ours, name), 0, "{name}: not what Intel's library printed");
    }
}
