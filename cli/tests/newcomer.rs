//! A newcomer's first hour: outputs never replace an input, an existing
//! output needs `--force`; plain messages for bad paths; `-` for standard
//! input in every importer; `report` groups as the stream allows; filters
//! that match nothing all fail the same way; `export vtune-csv` names every
//! missing option at once and leaves nothing behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const MTMC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mtmc/doc_example.log");
const WINIDEA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/winidea/doc_completed.txt");
const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data/sample.tb5");

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The one-line error of a failing command (exit status 1).
fn fails(args: &[&str]) -> String {
    let o = tbrw(args);
    assert_eq!(o.status.code(), Some(1), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(e.lines().count(), 1, "tbrw {args:?}: {e}");
    assert!(e.starts_with("tbrw: "), "{e}");
    e
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn imported(dir: &Path) -> (PathBuf, PathBuf) {
    let t = dir.join("tasks.tb5");
    let w = dir.join("w.tb5");
    ok(&["import", "mtmc", MTMC, "-o", s(&t)]);
    ok(&["import", "winidea", WINIDEA, "-o", s(&w)]);
    (t, w)
}

#[test]
fn no_output_replaces_an_input_and_existing_outputs_need_force() {
    let dir = tempfile::tempdir().unwrap();
    let (t, w) = imported(dir.path());
    let before = std::fs::read(&t).unwrap();
    // Every command that writes a file: once more onto the same output.
    let prof = dir.path().join("p.prof");
    std::fs::write(&prof, b"x").unwrap();
    let again: Vec<Vec<&str>> = vec![
        vec!["import", "mtmc", MTMC, "-o", s(&t)],
        vec!["import", "winidea", WINIDEA, "-o", s(&t)],
        vec!["import", "sampler", s(&prof), "-o", s(&t)],
        vec!["export", "sampler", s(&w), "-o", s(&t)],
    ];
    for args in &again {
        let e = fails(args);
        assert!(e.contains("exists: add --force (-f)"), "{args:?}: {e}");
    }
    assert_eq!(std::fs::read(&t).unwrap(), before, "nothing replaced");
    // The input as output: refused even with --force, under another name too.
    let link = dir.path().join("link.tb5");
    std::os::unix::fs::symlink(&w, &link).unwrap();
    let e = fails(&["export", "sampler", s(&w), "-o", s(&link), "--force"]);
    assert!(e.contains("is the input"), "{e}");
    let log = dir.path().join("copy.log");
    std::fs::copy(MTMC, &log).unwrap();
    assert!(fails(&["import", "mtmc", s(&log), "-o", s(&log), "-f"]).contains("is the input"));
    assert_eq!(std::fs::read(&log).unwrap(), std::fs::read(MTMC).unwrap());
    // --force replaces an output that is not an input.
    ok(&["import", "mtmc", MTMC, "-o", s(&t), "--force"]);
    // vtune-csv: a folder holding an export needs --force too.
    let csv = dir.path().join("csv");
    let args = ["export", "vtune-csv", SAMPLE, "-o", s(&csv)];
    ok(&args);
    assert!(fails(&args).contains("holds exported CSV files already: add --force (-f)"));
    ok(&[&args[..], &["-f"]].concat());
}

#[test]
fn bad_paths_get_plain_messages_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    let out = dir.path().join("o.tb5");
    let missing = dir.path().join("missing.log");
    let (slash, deep) = (format!("{d}/"), format!("{d}/no/such/x.tb5"));
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["import", "mtmc", d, "-o", s(&out)], format!("{d}: is a folder, not an MTMC task log")),
        (vec!["info", d], format!("{d}: is a folder, not a TB5 file")),
        (vec!["import", "mtmc", s(&missing), "-o", s(&out)], format!("{}: no such file or folder", s(&missing))),
        (vec!["import", "mtmc", MTMC, "-o", d], format!("{d}: is a folder: give a file name to write")),
        (vec!["import", "mtmc", MTMC, "-o", &slash], "ends with '/'".into()),
        (vec!["import", "mtmc", MTMC, "-o", &deep], "no such file or folder".into()),
        (vec!["export", "vtune-csv", SAMPLE, "-o", SAMPLE], "is a file, not a folder".into()),
        (vec!["report", SAMPLE, "--stream", "5"], "stream 5 does not exist (the file has 2 streams, 0 to 1)".into()),
        (vec!["bind", SAMPLE, "--stream", "5"], "stream 5 does not exist (the file has 2 streams".into()),
    ];
    for (args, want) in cases {
        let e = fails(&args);
        assert!(e.contains(&want), "{args:?}: {e} (wanted {want})");
        assert!(!e.contains("os error"), "{args:?}: {e}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was written");
}

#[test]
fn every_importer_reads_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    for (what, input) in [("mtmc", MTMC), ("winidea", WINIDEA)] {
        let out = dir.path().join(format!("{what}.tb5"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_tbrw"))
            .args(["import", what, "-", "-o", s(&out)])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&std::fs::read(input).unwrap()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{what}: {}", String::from_utf8_lossy(&o.stderr));
        let from_file = dir.path().join(format!("{what}-file.tb5"));
        ok(&["import", what, input, "-o", s(&from_file)]);
        assert_eq!(ok(&["report", s(&out), "--json"]).replace(s(&out), "F"), {
            ok(&["report", s(&from_file), "--json"]).replace(s(&from_file), "F")
        });
    }
}

#[test]
fn report_groups_as_the_stream_allows() {
    let dir = tempfile::tempdir().unwrap();
    let (t, w) = imported(dir.path());
    // By function where the modules' files are found here, else by module: the header says which.
    let auto = ok(&["report", SAMPLE]);
    assert!(
        auto.contains("by module (chosen automatically: ") || auto.contains("by function (chosen automatically: "),
        "{auto}"
    );
    assert!(ok(&["report", s(&t)]).contains(", 1 task, "), "MTMC: the task report");
    let calls = ok(&["report", s(&w), "--stream", "1"]);
    assert!(calls.contains("by thread") && calls.contains("context"), "{calls}");
    // A grouping the stream cannot give: the file, and what works.
    let e = fails(&["report", s(&w), "--by", "module"]);
    assert!(e.contains(s(&w)) && e.contains("what works: --by thread, --by event"), "{e}");
    let e = fails(&["report", SAMPLE, "--by", "task"]);
    assert!(e.contains("what works: --by module, --by process, --by thread, --by event"), "{e}");
}

#[test]
fn filters_that_match_nothing_fail_alike() {
    for (args, filter) in [
        (&["--pid", "4242"][..], "--pid 4242"),
        (&["--tid", "4242"], "--tid 4242"),
        (&["--module", "nosuch.so"], "--module \"nosuch.so\""),
        (&["--time", "5..1"], "--time 5..1"),
        (&["--top", "0"], "--top 0"),
    ] {
        let e = fails(&[&["report", SAMPLE][..], args].concat());
        assert!(e.contains(&format!("{SAMPLE}: stream 0: no sample matches {filter}")), "{args:?}: {e}");
    }
}

#[test]
fn vtune_csv_names_every_missing_option_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, w) = imported(dir.path());
    let out = dir.path().join("new").join("csv");
    let e = fails(&["export", "vtune-csv", s(&w), "-o", s(&out)]);
    assert!(e.contains("give --hostname H") && e.contains("and --clock C"), "{e}");
    assert!(!dir.path().join("new").exists(), "no folder left behind");
    ok(&["export", "vtune-csv", s(&w), "-o", s(&out), "--hostname", "target", "--clock", "monotonic-raw"]);
}

#[test]
fn info_escapes_names_and_gives_event_ids_in_hex() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.tb5");
    ok(&["import", "winidea", WINIDEA, "-o", s(&w)]);
    let info = ok(&["info", s(&w)]);
    // The export's `"TestStatic1.c"#StaticFunc` keeps its quotes, escaped.
    assert!(info.contains(r##""\"TestStatic1.c\"#StaticFunc""##), "{info}");
    assert!(!info.contains(r#"""TestStatic1"#), "{info}");
    // winIDEA handles are hex in the export: the id is given in hex too.
    assert!(info.contains("(0x10000004)"), "{info}");
}
