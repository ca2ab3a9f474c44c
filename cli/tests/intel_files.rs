//! Every command on files in Intel's layout (issue 39): the Intel-written
//! fixtures of `tbrw/tests/data/intel` always, and the real VTune TB6 files
//! of `TBRW_VTUNE_FILES` when that names a folder of them (README.md in the
//! fixtures' folder says where they come from).
//!
//! The counts `tbrw report` gives per event, process, thread and module are
//! the ones Intel's library gives: each record's event is the event its
//! descriptor id names, its process, thread and module the bind Intel's
//! library hands out with it (`TBRW_bind_enumerate_data`), as
//! `tbrw-sys/tests/intel/tbrw_dump.c` prints them through that library
//! (the committed `bound.tb7.dump` for the fixture Intel bound; live, with
//! `TBRW_INTEL_LIB`, for the real files).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(ROOT).join("tbrw/tests/data/intel").join(name)
}

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let o = tbrw(args);
    assert_eq!(o.status.code(), Some(1), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn every_command_reads_the_intel_written_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["guide.tb7", "streams.tb7", "strings.tb7", "lifetimes.tb7", "bound.tb7"] {
        let f = dir.path().join(name);
        std::fs::copy(fixture(name), &f).unwrap();
        let f = f.to_str().unwrap();
        let info = ok(&["info", f]);
        assert!(info.starts_with(&format!("{f}: Intel TB7 (\"Sample7 \"), version 27\n")), "{info}");
        // Intel's own TBRW_verify: 24 without legacy sample records (docs/FORMAT.md).
        if name == "streams.tb7" || name == "strings.tb7" {
            assert!(fails(&["verify", f]).contains("requires the legacy section type 0x1"));
        } else {
            assert_eq!(ok(&["verify", f]), format!("{f}: ok\n"));
        }
        for by in ["module", "process", "thread", "event"] {
            ok(&["report", f, "--by", by, "--json"]);
        }
        ok(&["report", f, "--by", "function"]);
        let out = |n: &str| dir.path().join(format!("{name}.{n}")).to_str().unwrap().to_owned();
        ok(&["export", "pprof", f, "-o", &out("pb.gz")]);
        ok(&["export", "firefox", f, "-o", &out("json.gz")]);
        ok(&["export", "flamegraph", f, "-o", &out("svg")]);
        ok(&["export", "parquet", f, "-o", &out("parquet")]);
        // Appends to Intel's layout (a bind as Intel's bind streams, stored
        // symbols): the reports stay what they were, and verify says what it said.
        // (Rows of equal counts may change places: the stored bind's tables are the file's.)
        let report = |by: &str| {
            let mut lines: Vec<String> = ok(&["report", f, "--by", by]).lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        let before = [report("module"), report("thread")];
        let verified = tbrw(&["verify", f]).status.success();
        let o = tbrw(&["bind", f]);
        assert!(String::from_utf8_lossy(&o.stdout).contains("stream 0 bound"), "{name}: {o:?}");
        ok(&["symbolize", f]);
        assert_eq!([report("module"), report("thread")], before, "{name}: the appends changed the reports");
        assert_eq!(tbrw(&["verify", f]).status.success(), verified, "{name}");
        assert!(ok(&["info", f]).starts_with(&format!("{f}: Intel TB7")), "{name}: an append keeps the layout");
    }
    // The strings come through: a non-ASCII comment, as written.
    let strings = ok(&["info", fixture("strings.tb7").to_str().unwrap()]);
    assert!(strings.contains("\"comment à la 🚀 fusée\""), "{strings}");
}

/// Per record of stream 0, from a dump of `tbrw_dump`: its descriptor id
/// (its first 8 bytes), and its bind (module, process, thread index).
struct IntelCounts {
    event: BTreeMap<u64, u64>,
    process: BTreeMap<i64, u64>,
    thread: BTreeMap<i64, u64>,
    module: BTreeMap<i64, u64>,
}

fn counts_from_dump(dump: &str) -> IntelCounts {
    let lines: Vec<&str> = dump.lines().collect();
    let start = lines.iter().position(|l| *l == "stream 0:").expect("stream 0");
    let events: Vec<u64> = lines[start..]
        .iter()
        .take_while(|l| **l != "stream 1:")
        .filter_map(|l| l.strip_prefix("  event id=")?.split(' ').next())
        .map(|id| u64::from_str_radix(id.trim_start_matches("0x"), 16).unwrap())
        .collect();
    let data = lines[start..].iter().position(|l| l.starts_with(" data: ")).unwrap() + start;
    assert!(!lines[data].contains("digest"), "stream 0's records are printed as digests");
    let records: Vec<&str> = lines[data + 1..].iter().take_while(|l| l.starts_with("  ")).map(|l| l.trim()).collect();
    let bind = lines.iter().position(|l| *l == "stream 0 bound: yes").expect("stream 0 is bound");
    let binds: Vec<[i64; 3]> = lines[bind + 2..]
        .iter()
        .take_while(|l| l.starts_with("  ") && !l.contains("module") && !l.contains("thread"))
        .map(|l| {
            let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    assert_eq!(records.len(), binds.len(), "one bind per record");
    let mut c = IntelCounts {
        event: BTreeMap::new(),
        process: BTreeMap::new(),
        thread: BTreeMap::new(),
        module: BTreeMap::new(),
    };
    for (r, [m, p, t]) in records.iter().zip(binds) {
        // The first 8 bytes, printed in hex in file order: a little-endian u64.
        let id = (0..8).map(|i| u64::from_str_radix(&r[2 * i..2 * i + 2], 16).unwrap() << (8 * i)).sum::<u64>();
        *c.event.entry(events[id as usize]).or_default() += 1;
        *c.process.entry(p).or_default() += 1;
        *c.thread.entry(t).or_default() += 1;
        *c.module.entry(m).or_default() += 1;
    }
    c
}

/// `tbrw report --by BY --json` of stream 0 as (key, samples): the event's
/// id, or the table index of the process, thread or module (-1: unknown).
fn report(file: &Path, by: &str) -> BTreeMap<i64, u64> {
    let v: Value = serde_json::from_str(&ok(&["report", file.to_str().unwrap(), "--by", by, "--json"])).unwrap();
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = &r["key"];
            let k = match by {
                "event" => key["id"].as_i64(),
                _ => key["index"].as_i64().or(Some(-1)),
            };
            (k.unwrap(), r["samples"].as_u64().unwrap())
        })
        .collect()
}

fn assert_counts(file: &Path, intel: &IntelCounts) {
    let what = file.display();
    let ev: BTreeMap<i64, u64> = intel.event.iter().map(|(k, v)| (*k as i64, *v)).collect();
    assert_eq!(report(file, "event"), ev, "{what}: by event");
    assert_eq!(report(file, "process"), intel.process, "{what}: by process");
    assert_eq!(report(file, "thread"), intel.thread, "{what}: by thread");
    assert_eq!(report(file, "module"), intel.module, "{what}: by module");
}

#[test]
fn reports_count_what_intels_library_gives_on_the_file_it_bound() {
    let dump = std::fs::read_to_string(fixture("bound.tb7.dump")).unwrap();
    assert_counts(&fixture("bound.tb7"), &counts_from_dump(&dump));
}

#[test]
fn reports_count_what_intels_library_gives_on_real_vtune_files() {
    let (Some(lib), Some(dir)) = (std::env::var_os("TBRW_INTEL_LIB"), std::env::var_os("TBRW_VTUNE_FILES")) else {
        eprintln!("TBRW_INTEL_LIB or TBRW_VTUNE_FILES is not set: the real VTune files are not read");
        return;
    };
    let dump_c = PathBuf::from(ROOT).join("tbrw-sys/tests/intel/tbrw_dump.c");
    let work = tempfile::tempdir().unwrap();
    let exe = work.path().join("tbrw_dump");
    let cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE"])
        .arg(&dump_c)
        .arg("-ldl")
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tb6"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .tb6 file in {dir:?}");
    for f in files {
        let out = Command::new(&exe).arg(&lib).arg(&f).env("TMPDIR", work.path()).output().unwrap();
        assert!(out.status.success(), "tbrw_dump {}: {}", f.display(), String::from_utf8_lossy(&out.stderr));
        let intel = counts_from_dump(&String::from_utf8(out.stdout).unwrap());
        assert!(intel.event.values().sum::<u64>() > 1000, "{}: few samples", f.display());
        assert_counts(&f, &intel);
        eprintln!(
            "{}: {} samples, counts as Intel's library gives them",
            f.display(),
            intel.event.values().sum::<u64>()
        );
    }
}
