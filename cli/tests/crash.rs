//! Every command that writes, killed with SIGKILL at each of its crash
//! points in turn (as `tbrw/tests/kill.rs` does for the library): the
//! folder exports at the command line's points (`TBRW_TEST_CLI_CRASH_AT`:
//! after each file written, each rename, each removal), `import -f` and the
//! viewer exports at the library's (`TBRW_TEST_CRASH_AT`: every write,
//! link and rename of the work file). After each kill the target is its
//! old state or its new one, whole, and the new one from some point on;
//! the folder holds nothing else but the killed command's work folder (or,
//! for a TB5 file, the work name of the whole new file); the next command
//! writing the target removes that. A dataset appended to holds its old
//! runs and some of the new ones, each whole, and DuckDB (through
//! `cli/tests/parquet_queries.py`, skipped with a note where it cannot be
//! imported) reads every run it sees whole. Crash points exist in builds
//! with debug assertions only (the tests' profile); the kill-point counts
//! are printed (`--nocapture`).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The command line's crash points, and the library's.
const CLI_POINTS: &str = "TBRW_TEST_CLI_CRASH_AT";
const LIB_POINTS: &str = "TBRW_TEST_CRASH_AT";

fn tbrw(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tbrw"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn ok(args: &[&str]) {
    let o = tbrw(args, &[]);
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
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

/// Every file under `p` (relative name, bytes), or `None` when nothing is
/// at `p`; a file at `p` is the one entry `""`.
fn tree(p: &Path) -> Option<BTreeMap<String, Vec<u8>>> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{rel}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{name}/"), Vec::new());
                walk(&e.path(), &format!("{name}/"), out);
            } else {
                out.insert(name, std::fs::read(e.path()).unwrap());
            }
        }
    }
    let m = std::fs::symlink_metadata(p).ok()?;
    let mut out = BTreeMap::new();
    if m.is_dir() {
        walk(p, "", &mut out);
    } else {
        out.insert(String::new(), std::fs::read(p).unwrap());
    }
    Some(out)
}

/// How one command is killed and checked.
struct Case<'a> {
    name: &'a str,
    /// The crash points' variable.
    var: &'a str,
    /// The command.
    args: Vec<String>,
    /// The target, in `dir`.
    target: PathBuf,
    /// Puts the target in its old state.
    set_up: &'a dyn Fn(),
    /// The command run after a kill, which must remove what the killed one
    /// left (it may change the target: the old or new state is read first).
    next: Vec<String>,
    /// Whether the target is a dataset appended to (some new runs, each whole).
    append: bool,
}

/// Whether DuckDB can be imported (noted once when not).
fn duckdb_here() -> bool {
    static HERE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HERE.get_or_init(|| {
        let here = Command::new("python3").args(["-c", "import duckdb"]).output().is_ok_and(|o| o.status.success());
        if !here {
            eprintln!("note: python3 cannot import duckdb: the DuckDB checks of the datasets are skipped");
        }
        here
    })
}

/// The runs DuckDB reads from `dir` in one glob of every table
/// (`run_completeness`), as run folders (`host=H/run=R/`), each checked
/// whole: its `samples` and `intervals` rows as its `runs` row records them.
fn duckdb_runs(dir: &Path, at: &str) -> Option<Vec<String>> {
    if !duckdb_here() {
        return None;
    }
    let o = Command::new("python3")
        .arg(shipped("cli/tests/parquet_queries.py"))
        .arg(dir)
        .arg("run_completeness")
        .output()
        .unwrap();
    assert!(o.status.success(), "{at}: {}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    Some(
        rows.iter()
            .map(|r| {
                assert!(!r[3].is_null(), "{at}: DuckDB sees run {r} without its runs row");
                assert_eq!(r[2], r[3], "{at}: DuckDB sees part of run {r}'s samples");
                assert_eq!(r[4], r[5], "{at}: DuckDB sees part of run {r}'s intervals");
                format!("host={}/run={}/", r[0].as_str().unwrap(), r[1].as_str().unwrap())
            })
            .collect(),
    )
}

/// The run folders (`host=H/run=R/`) of a dataset's tree.
fn run_folders(t: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    t.keys().filter(|k| k.matches('/').count() == 2 && k.ends_with('/') && k.contains("/run=")).cloned().collect()
}

/// Runs `case` killed at each of its crash points, `k` = 1, 2... until it
/// completes, with the checks of the module doc. Returns the points' names.
fn killed_at_each_point(case: &Case) -> Vec<String> {
    let dir = case.target.parent().unwrap();
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let next: Vec<&str> = case.next.iter().map(String::as_str).collect();
    let target_name = case.target.file_name().unwrap().to_str().unwrap().to_owned();
    let clear = || {
        for n in names(dir) {
            let p = dir.join(n);
            if p.is_dir() {
                std::fs::remove_dir_all(p).unwrap();
            } else {
                std::fs::remove_file(p).unwrap();
            }
        }
    };
    // The new state: the same command, not killed, at the same path (the
    // outputs record their inputs' paths, not their own).
    clear();
    (case.set_up)();
    let old = tree(&case.target);
    ok(&args);
    let new = tree(&case.target).expect("the command wrote its target");
    assert_eq!(
        names(dir),
        std::slice::from_ref(&target_name),
        "{}: a completed command leaves only its target",
        case.name
    );
    let new_runs = run_folders(&new);
    let mut points = Vec::new();
    let mut replaced_at = None;
    for k in 1.. {
        clear();
        (case.set_up)();
        let o = tbrw(&args, &[(case.var, k.to_string())]);
        if o.status.success() {
            assert_eq!(tree(&case.target).as_ref(), Some(&new), "{}: not killed, the new state", case.name);
            assert_eq!(names(dir), std::slice::from_ref(&target_name));
            break;
        }
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{}, point {k}: {}\n{stderr}", case.name, o.status);
        let point = stderr
            .lines()
            .find_map(|l| l.strip_prefix(&format!("tbrw crash point {k}: ")))
            .unwrap_or_else(|| panic!("{}, point {k}: no crash point named in {stderr:?}", case.name))
            .to_owned();
        let at = format!("{}, killed at point {k} ({point})", case.name);
        let now = tree(&case.target);
        let is_new = if case.append {
            // The old runs, and each new run whole or not at all.
            let now = now.as_ref().unwrap_or_else(|| panic!("{at}: the dataset is gone"));
            let old = old.as_ref().unwrap();
            for (name, bytes) in now {
                assert!(
                    old.get(name) == Some(bytes) || new.get(name) == Some(bytes),
                    "{at}: {name} is neither old nor new"
                );
            }
            assert!(old.keys().all(|n| now.contains_key(n)), "{at}: an old file is gone");
            for run in &new_runs {
                let files: Vec<&String> = new.keys().filter(|n| n.starts_with(run.as_str())).collect();
                let here = files.iter().filter(|n| now.contains_key(n.as_str())).count();
                assert!(here == 0 || here == files.len(), "{at}: {here} of the {} entries of {run}", files.len());
            }
            now == &new
        } else {
            assert!(now.as_ref() == Some(&new) || now == old, "{at}: neither the old nor the new state");
            now.as_ref() == Some(&new)
        };
        match replaced_at {
            None if is_new => replaced_at = Some(k),
            Some(_) => assert!(is_new, "{at}: the old state came back"),
            None => {}
        }
        // DuckDB reads the runs there, each whole, and no other.
        if let Some(now) = now.as_ref().filter(|t| t.contains_key("_tbrw_dataset.json")) {
            if let Some(mut seen) = duckdb_runs(&case.target, &at) {
                seen.sort();
                assert_eq!(seen, run_folders(now), "{at}: the runs DuckDB sees");
            }
        }
        // Beside the target: nothing, or the killed command's work (one hidden entry).
        let extra: Vec<String> = names(dir).into_iter().filter(|n| *n != target_name).collect();
        assert!(extra.len() <= 1 && extra.iter().all(|n| n.starts_with('.')), "{at}: left {extra:?}");
        // The next command writing the target removes it.
        let _ = tbrw(&next, &[]);
        let extra: Vec<String> = names(dir).into_iter().filter(|n| *n != target_name).collect();
        assert!(extra.is_empty(), "{at}: the next command left {extra:?}");
        points.push(point);
    }
    assert!(replaced_at.is_some(), "{}: no kill left the new state", case.name);
    points
}

/// `names` with repeats in a row counted: `a, b ×3, c`.
fn runs_of(names: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in names {
        match out.last_mut() {
            Some((last, k)) if last == n => *k += 1,
            _ => out.push((n.clone(), 1)),
        }
    }
    out.iter().map(|(n, k)| if *k > 1 { format!("{n} ×{k}") } else { n.clone() }).collect::<Vec<_>>().join(", ")
}

fn report(case: &str, points: &[String], expected: &[&str]) {
    for e in expected {
        assert!(points.iter().any(|p| p == e), "{case}: no crash point {e:?} in {points:?}");
    }
    println!("crash test: {case}: killed at each of {} points ({}): ok", points.len(), runs_of(points));
}

/// Inputs made once per test in `inputs`: the shipped sample, an MTMC
/// import (no host name) and a winIDEA import.
fn inputs(inputs: &Path) -> (PathBuf, PathBuf, PathBuf) {
    std::fs::create_dir_all(inputs).unwrap();
    let sample = inputs.join("sample.tb5");
    std::fs::copy(shipped("examples/data/sample.tb5"), &sample).unwrap();
    let tasks = inputs.join("tasks.tb5");
    ok(&["import", "mtmc", s(&shipped("cli/tests/data/mtmc/doc_example.log")), "-o", s(&tasks)]);
    let w = inputs.join("w.tb5");
    ok(&["import", "winidea", s(&shipped("cli/tests/data/winidea/doc_example.txt")), "-o", s(&w)]);
    (sample, tasks, w)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

#[test]
fn export_vtune_csv_killed_at_each_point_new_and_replacing() {
    if !cfg!(debug_assertions) {
        eprintln!("note: a build without debug assertions has no crash points: test skipped");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (_, tasks, w) = inputs(&t.path().join("in"));
    let dir = t.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    let csv = dir.join("csv");
    let new = strings(&["export", "vtune-csv", s(&tasks), "-o", s(&csv), "--hostname", "h"]);
    let forced: Vec<String> = new.iter().cloned().chain(["-f".to_owned()]).collect();
    // New: nothing there before.
    let points = killed_at_each_point(&Case {
        name: "export vtune-csv (new folder)",
        var: CLI_POINTS,
        args: new.clone(),
        target: csv.clone(),
        set_up: &|| {},
        next: forced.clone(),
        append: false,
    });
    report("export vtune-csv (new folder)", &points, &["work folder created", "file written", "published"]);
    // -f over an older export of other streams (other file names, which must go).
    let old_export = |_: ()| ok(&["export", "vtune-csv", s(&w), "-o", s(&csv), "--hostname", "h", "--clock", "qpc"]);
    let points = killed_at_each_point(&Case {
        name: "export vtune-csv -f",
        var: CLI_POINTS,
        args: forced.clone(),
        target: csv.clone(),
        set_up: &|| old_export(()),
        next: forced,
        append: false,
    });
    report("export vtune-csv -f", &points, &["file written", "published", "work folder removed"]);
}

#[test]
fn export_parquet_killed_at_each_point_new_force_and_append() {
    if !cfg!(debug_assertions) {
        eprintln!("note: a build without debug assertions has no crash points: test skipped");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (sample, tasks, _) = inputs(&t.path().join("in"));
    let dir = t.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    let pq = dir.join("pq");
    let both = strings(&["export", "parquet", s(&sample), s(&tasks), "-o", s(&pq)]);
    let with = |flag: &str| -> Vec<String> { both.iter().cloned().chain([flag.to_owned()]).collect() };
    // Replaced: a run of another host. Appended to: a run of the host of
    // `sample.tb5`, so that its run is renamed into that host's folder (as
    // sample-2) and the run of `tasks.tb5` (host unknown) comes with its host's.
    let other_dataset = || ok(&["export", "parquet", s(&sample), "-o", s(&pq), "--hostname", "old"]);
    let same_host = || ok(&["export", "parquet", s(&sample), "-o", s(&pq)]);
    let cases = [
        ("export parquet (new dataset)", both.clone(), &(|| {}) as &dyn Fn(), with("-f"), false),
        ("export parquet -f", with("-f"), &other_dataset as &dyn Fn(), with("-f"), false),
        // The next command is refused (the dataset exists), after removing what a killed export left.
        ("export parquet --append", with("--append"), &same_host as &dyn Fn(), both.clone(), true),
    ];
    for (name, args, set_up, next, append) in cases {
        let points =
            killed_at_each_point(&Case { name, var: CLI_POINTS, args, target: pq.clone(), set_up, next, append });
        let expected: &[&str] = if append {
            &["file written", "staged", "run published", "runs published", "work folder removed"]
        } else {
            &["file written", "staged", "published", "work folder removed"]
        };
        report(name, &points, expected);
    }
}

#[test]
fn import_and_viewer_exports_with_force_killed_at_each_point() {
    if !cfg!(debug_assertions) {
        eprintln!("note: a build without debug assertions has no crash points: test skipped");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (sample, tasks, _) = inputs(&t.path().join("in"));
    let profile = t.path().join("in/run.tb5");
    ok(&["import", "sampler", s(&shipped("examples/data/sampler/current.prof")), "-o", s(&profile)]);
    let dir = t.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    let log = shipped("cli/tests/data/mtmc/doc_example.log");
    let target = |name: &str| dir.join(name);
    let commands: Vec<(&str, Vec<String>, PathBuf)> = vec![
        ("import mtmc -f", strings(&["import", "mtmc", s(&log)]), target("t.tb5")),
        ("export firefox -f", strings(&["export", "firefox", s(&sample)]), target("p.json.gz")),
        ("export pprof -f", strings(&["export", "pprof", s(&sample)]), target("p.pb.gz")),
        ("export flamegraph -f", strings(&["export", "flamegraph", s(&sample)]), target("f.svg")),
        ("export timeline -f", strings(&["export", "timeline", s(&tasks)]), target("t.svg")),
        ("export sampler -f", strings(&["export", "sampler", s(&profile)]), target("X.tb5")),
    ];
    for (name, mut args, path) in commands {
        args.extend(["-o".to_owned(), s(&path).to_owned(), "-f".to_owned()]);
        // Each replaces a file an earlier command wrote.
        let p = path.clone();
        let set_up = move || std::fs::write(&p, b"an older output\n").unwrap();
        let points = killed_at_each_point(&Case {
            name,
            var: LIB_POINTS,
            args: args.clone(),
            target: path,
            set_up: &set_up,
            next: args,
            append: false,
        });
        report(name, &points, &["target locked", "renamed into place"]);
    }
}
