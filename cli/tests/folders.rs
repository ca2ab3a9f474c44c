//! The folder outputs' rule (README "Outputs", docs/PARQUET.md): a folder
//! is replaced whole (`export vtune-csv -f` leaves the new export's files
//! only, a folder holding anything else is never replaced, a link to a
//! folder stays a link), and appends made at the same time each get a run
//! of their own, whole, while DuckDB reads the dataset.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn shipped(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

#[test]
fn a_csv_export_replaces_its_folder_whole_and_nothing_else() {
    let t = tempfile::tempdir().unwrap();
    let tasks = t.path().join("tasks.tb5");
    ok(&["import", "mtmc", s(&shipped("cli/tests/data/mtmc/doc_example.log")), "-o", s(&tasks)]);
    let w = t.path().join("w.tb5");
    ok(&["import", "winidea", s(&shipped("cli/tests/data/winidea/doc_example.txt")), "-o", s(&w)]);
    let csv = t.path().join("csv");
    ok(&["export", "vtune-csv", s(&w), "-o", s(&csv), "--hostname", "h", "--clock", "qpc"]);
    assert_eq!(
        names(&csv),
        ["winidea_calls-s0-hostname-h.csv", "winidea_data-s1-TestStatic1__s_cStatic-hostname-h.csv"]
    );
    // -f: the new export's files, none of the old one's.
    let out = ok(&["export", "vtune-csv", s(&tasks), "-o", s(&csv), "--hostname", "h", "-f"]);
    let want = ["mtmc_tasks-s0-cpu12-counters-hostname-h.csv", "mtmc_tasks-s0-hostname-h.csv"];
    assert_eq!(names(&csv), want);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.lines().all(|l| Path::new(l).starts_with(&csv)), "{out}");
    // A folder holding anything else is never replaced, not even with -f.
    let mine = t.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), b"mine").unwrap();
    for force in [&[][..], &["-f"]] {
        let o = tbrw(&[&["export", "vtune-csv", s(&tasks), "-o", s(&mine), "--hostname", "h"][..], force].concat());
        assert_eq!(o.status.code(), Some(1));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("holds notes.txt, which is not an exported CSV file"), "{e}");
    }
    assert_eq!(names(&mine), ["notes.txt"]);
    // An empty folder is replaced; a link to a folder stays a link, to the new export.
    let real = t.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    ok(&["export", "vtune-csv", s(&tasks), "-o", s(&link), "--hostname", "h"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(names(&real), want);
    // Missing folders above are made, and removed again when the export fails.
    let deep = t.path().join("a/b/csv");
    let o = tbrw(&["export", "vtune-csv", s(&tasks), "-o", s(&deep)]);
    assert_eq!(o.status.code(), Some(1), "no host name: refused");
    assert!(!t.path().join("a").exists());
    ok(&["export", "vtune-csv", s(&tasks), "-o", s(&deep), "--hostname", "h"]);
    assert_eq!(names(&deep), want);
    assert_eq!(names(&t.path().join("a/b")), ["csv"]);
    std::fs::remove_dir_all(t.path().join("a")).unwrap();
    // A failed export leaves the folder as it was.
    let o = tbrw(&["export", "vtune-csv", s(&tasks), "-o", s(&csv), "-f"]);
    assert_eq!(o.status.code(), Some(1), "no host name: refused");
    assert_eq!(names(&csv), want);
    assert_eq!(names(t.path()), ["csv", "link", "mine", "real", "tasks.tb5", "w.tb5"]);
}

/// Rounds of appends of one file published at the same moment (the test
/// holds the dataset's lock while they build their runs): each gets a run id
/// of its own (`sample-2`, `sample-3`...), none fails, nothing is left
/// beside the dataset; DuckDB, reading it all the while, sees every run whole.
#[test]
fn appends_of_one_name_at_once_each_get_their_own_run() {
    let t = tempfile::tempdir().unwrap();
    let sample = shipped("examples/data/sample.tb5");
    let ds = t.path().join("ds");
    ok(&["export", "parquet", s(&sample), "-o", s(&ds)]);
    let duckdb = Command::new("python3").args(["-c", "import duckdb"]).output().is_ok_and(|o| o.status.success());
    if !duckdb {
        eprintln!("note: python3 cannot import duckdb: the dataset is not read while the appends run");
    }
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader = {
        let (done, reads, ds) = (done.clone(), reads.clone(), ds.clone());
        std::thread::spawn(move || {
            while duckdb && !done.load(std::sync::atomic::Ordering::SeqCst) {
                let o = Command::new("python3")
                    .arg(shipped("cli/tests/parquet_queries.py"))
                    .arg(&ds)
                    .arg("run_completeness")
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
                for r in &rows {
                    assert!(r[2] == r[3] && r[4] == r[5], "DuckDB saw part of a run: {r}");
                }
                reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    let mut ids = Vec::new();
    let mut rounds = 0;
    // At least 3 rounds, and more (up to 20) until DuckDB has read the dataset 5 times meanwhile.
    while rounds < 3 || (duckdb && rounds < 20 && reads.load(std::sync::atomic::Ordering::SeqCst) < 5) {
        rounds += 1;
        // The dataset's lock held while they start: all three have built
        // their run, under the same id, and publish at the same moment.
        let held = std::fs::File::open(&ds).unwrap();
        held.lock().unwrap();
        let appends: Vec<_> = (0..3)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_tbrw"))
                    .args(["export", "parquet", s(&sample), "-o", s(&ds), "--append"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(400));
        drop(held);
        for c in appends {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let out = String::from_utf8_lossy(&o.stdout);
            let id = out.split("run=").nth(1).and_then(|r| r.split(':').next()).unwrap().to_owned();
            ids.push(id);
        }
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    reader.join().unwrap();
    ids.sort_by_key(|id| id.strip_prefix("sample-").and_then(|k| k.parse::<u32>().ok()));
    let want: Vec<String> = (2..=1 + 3 * rounds).map(|k| format!("sample-{k}")).collect();
    assert_eq!(ids, want);
    let mut runs = vec!["run=sample".to_owned()];
    runs.extend(want.iter().map(|id| format!("run={id}")));
    runs.sort();
    assert_eq!(names(&ds.join("host=perfbox")), runs);
    for r in &runs {
        assert_eq!(names(&ds.join("host=perfbox").join(r)).len(), 9, "{r}: every table");
    }
    assert_eq!(names(t.path()), ["ds"]);
    if duckdb {
        eprintln!(
            "{rounds} rounds of 3 appends; DuckDB read the dataset {} times meanwhile",
            reads.load(std::sync::atomic::Ordering::SeqCst)
        );
    }
}

/// Writes that fail midway (a file size limit, `ulimit -f`, with SIGXFSZ
/// ignored so that the write returns EFBIG as on a full disk): the error
/// names the folder given and the file in it, never the hidden work folder;
/// the old output is as it was and nothing is left beside it.
#[test]
fn a_failed_write_names_the_folder_given_and_leaves_the_old_output() {
    let t = tempfile::tempdir().unwrap();
    let sample = shipped("examples/data/sample.tb5");
    let (ds, csv) = (t.path().join("ds"), t.path().join("csv"));
    let tasks = t.path().join("tasks.tb5");
    ok(&["import", "mtmc", s(&shipped("cli/tests/data/mtmc/doc_example.log")), "-o", s(&tasks)]);
    ok(&["export", "parquet", s(&tasks), "-o", s(&ds)]);
    ok(&["export", "vtune-csv", s(&tasks), "-o", s(&csv), "--hostname", "h"]);
    let before = (names(&ds), names(&ds.join("host=unknown/run=tasks")), names(&csv));
    let limited = |args: &[&str]| -> String {
        // 16 blocks of 512 bytes: the sample's CSV file and samples table are larger.
        let script = "trap '' XFSZ; ulimit -f 16; exec \"$0\" \"$@\"";
        let o = Command::new("sh").arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    for flag in ["-f", "--append"] {
        let e = limited(&["export", "parquet", s(&sample), "-o", s(&ds), flag]);
        let want = format!("tbrw: {}/host=perfbox/run=sample/samples.parquet: writing Parquet: ", ds.display());
        assert!(e.starts_with(&want) && e.contains("os error 27"), "{e}");
    }
    let e = limited(&["export", "vtune-csv", s(&sample), "-o", s(&csv), "-f"]);
    assert!(e.contains(&format!("{}: writing sample_run-s0-hostname-perfbox.csv: ", csv.display())), "{e}");
    let e = limited(&["export", "vtune-csv", s(&sample), "-o", s(&t.path().join("new"))]);
    assert!(!e.contains("tbrw-work"), "{e}");
    assert_eq!((names(&ds), names(&ds.join("host=unknown/run=tasks")), names(&csv)), before);
    assert_eq!(names(t.path()), ["csv", "ds", "tasks.tb5"]);
}
