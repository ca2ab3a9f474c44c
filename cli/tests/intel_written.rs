//! Every kind of file this project writes is in Intel's layout, and Intel's
//! 2020 library reads it (issue 39, part 2): `TBRW_open` READ = 0,
//! `TBRW_verify` = 0, and everything the guide's API gives equals what this
//! project's library gives (the dump of `tbrw-sys/tests/intel/tbrw_dump.c`
//! through each library; `tbrw-sys/tests/intel_dump.rs` does the same for
//! the Rust writer and the C API's writer).
//!
//! The kinds: each import (sampler profile, MTMC log, winIDEA export,
//! perf.data), a `bind` append, a `symbolize` append, a `convert` of this
//! project's old `\x89TB5` layout, and `tbrw record`.
//!
//! Intel's dumps of the deterministic ones are committed in
//! `tests/data/intel_written/` (`NAME.dump`), so that the comparison runs
//! without Intel's library (as in CI): our dump must equal them. With
//! `TBRW_INTEL_LIB` naming Intel's library, its dump is taken live too
//! (and must still be the committed one; `TBRW_BLESS=1` rewrites them).

#[path = "../../tests/support/c_build.rs"]
mod c_build;
#[path = "../../tests/support/intel_dump.rs"]
mod intel_dump;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use intel_dump::{assert_same, dump, intel_lib, ours};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/intel_written").join(format!("{name}.dump"))
}

/// The file at `p` (written by this project) in Intel's layout, read alike
/// by both libraries: ours verifies it and dumps what Intel's dumped (the
/// committed dump when `committed`, and Intel's library live when present).
fn check(name: &str, p: &Path, committed: bool) {
    assert_eq!(&std::fs::read(p).unwrap()[..8], b"Sample6 ", "{name}: not in Intel's layout");
    let ours = dump(&ours(), p);
    assert!(ours.starts_with("verify: 0\n"), "{name}: our library does not verify it:\n{ours}");
    if let Some(lib) = intel_lib(&format!("intel_written {name} (Intel's side)")) {
        let intel = dump(&lib, p);
        assert!(intel.starts_with("verify: 0\n"), "{name}: Intel's library does not verify it:\n{intel}");
        assert_eq!(assert_same(&intel, &ours, name), 0, "{name}: Intel's library misreads a file we wrote");
        if committed {
            let intel = portable(&intel);
            if std::env::var_os("TBRW_BLESS").is_some() {
                std::fs::create_dir_all(golden(name).parent().unwrap()).unwrap();
                std::fs::write(golden(name), &intel).unwrap();
            }
            let was = std::fs::read_to_string(golden(name)).unwrap_or_default();
            assert!(was == intel, "{name}: Intel's dump is not the committed one (TBRW_BLESS=1 rewrites it)");
        }
    }
    if committed {
        let intel = std::fs::read_to_string(golden(name))
            .unwrap_or_else(|e| panic!("{}: {e} (made with TBRW_INTEL_LIB and TBRW_BLESS=1)", golden(name).display()));
        assert_eq!(assert_same(&intel, &portable(&ours), name), 0, "{name}: our dump is not Intel's committed one");
    }
}

/// A dump as committed: the imports record their input's path in the
/// stream's command line, and this checkout's folder is `$CLI` there, so
/// that the committed dumps hold wherever the checkout is.
fn portable(dump: &str) -> String {
    dump.replace(env!("CARGO_MANIFEST_DIR"), "$CLI")
}

#[test]
fn every_import_is_a_file_intels_library_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = |n: &str| dir.path().join(n).display().to_string();
    let sampler = format!("{ROOT}/examples/data/sampler/current.prof");
    ok(&["import", "sampler", &sampler, "-o", &out("sampler.tb5"), "--volts", "5"]);
    let mtmc = format!("{ROOT}/cli/tests/data/mtmc/doc_example.log");
    ok(&["import", "mtmc", &mtmc, "-o", &out("mtmc.tb5")]);
    let winidea = format!("{ROOT}/cli/tests/data/winidea/doc_example.txt");
    ok(&["import", "winidea", &winidea, "-o", &out("winidea.tb5")]);
    let perf = format!("{ROOT}/tbrw-import/tests/data/perf/perf.data.armv7-3.4");
    ok(&["import", "perf", &perf, "-o", &out("perf.tb5")]);
    for name in ["sampler", "mtmc", "winidea", "perf"] {
        check(name, &dir.path().join(format!("{name}.tb5")), true);
    }
}

#[test]
fn bind_and_symbolize_appends_are_files_intels_library_reads() {
    let dir = tempfile::tempdir().unwrap();
    let prof = format!("{ROOT}/examples/data/sampler/current.prof");
    let bound = dir.path().join("bound.tb5");
    ok(&["import", "sampler", &prof, "-o", bound.to_str().unwrap()]);
    ok(&["bind", bound.to_str().unwrap()]);
    check("sampler-bound", &bound, true);
    let symbolized = dir.path().join("symbolized.tb5");
    ok(&["import", "sampler", &prof, "-o", symbolized.to_str().unwrap()]);
    ok(&["symbolize", symbolized.to_str().unwrap()]);
    check("sampler-symbolized", &symbolized, false);
}

#[test]
fn tbrw_record_writes_a_file_intels_library_reads() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec.tb5");
    let spin = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
    let o = tbrw(&["record", "-o", p.to_str().unwrap(), "-F", "2000", "--", "/bin/sh", "-c", spin]);
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("ptrace is refused") {
        eprintln!("SKIPPED: {}", err.trim());
        return;
    }
    assert!(o.status.success(), "tbrw record: {err}");
    check("record", &p, false);
}

fn report(file: &Path, by: &str) -> String {
    let o = tbrw(&["report", file.to_str().unwrap(), "--by", by]);
    assert!(o.status.success(), "report {}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().replace(file.to_str().unwrap(), "FILE")
}

/// `tbrw convert` of files in this project's old layout (a collector's
/// file with call stacks, perf imports with and without them): a file
/// Intel's library reads, which reports what the old one did (its stack
/// tables kept as the streams that hold them in Intel's layout).
#[test]
fn convert_rewrites_the_old_layout_as_intels() {
    let dir = tempfile::tempdir().unwrap();
    // (name, old file); Intel's dumps are committed. The collector's file states
    // sample file version 16 and an Intel 64 system: Intel's reader takes
    // its cpus from the legacy vtsa_sys_info section (64-byte cpu entries
    // for that version) and derives their `native` from the architecture
    // (docs/FORMAT.md, "The system of a file stating a version below 22").
    for (name, old) in [
        ("convert-perf", "cli/tests/data/matrix/perf.tb5"),
        ("convert-perf-stacks", "cli/tests/data/matrix/perf-stacks.tb5"),
        ("convert-collector", "cli/tests/data/matrix/collector.tb5"),
    ] {
        let old = PathBuf::from(ROOT).join(old);
        assert_ne!(&std::fs::read(&old).unwrap()[..8], b"Sample6 ", "{name}: the input is already converted");
        let new = dir.path().join(format!("{name}.tb5"));
        ok(&["convert", old.to_str().unwrap(), "-o", new.to_str().unwrap()]);
        check(name, &new, true);
        for by in ["module", "thread", "function"] {
            let (a, b) = (report(&old, by), report(&new, by));
            assert_eq!(a.replace(old.to_str().unwrap(), "FILE"), b, "{name}: report --by {by}");
        }
        // An existing output needs --force; the input is never the output.
        let o = tbrw(&["convert", old.to_str().unwrap(), "-o", new.to_str().unwrap()]);
        assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--force"), "{name}");
        let o = tbrw(&["convert", new.to_str().unwrap(), "-o", new.to_str().unwrap(), "--force"]);
        assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("is the input"), "{name}");
    }
}

/// The guide's example file (`examples/data/sample.tb5`, written by
/// `make_sample`: sample file version 16, four Intel 64 cpus) is one
/// Intel's library reads: its reader takes the cpus of such a version from
/// the legacy system section, whose cpu entries are 64 bytes there (72
/// made it crash).
#[test]
fn the_guides_example_file_is_one_intels_library_reads() {
    check("sample", &PathBuf::from(ROOT).join("examples/data/sample.tb5"), true);
}
