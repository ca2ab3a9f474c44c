//! Writer locks and early checks: every command that replaces or appends
//! to a TB5 file (`bind`, `symbolize`, the imports and exports with `-f`)
//! is refused, before any work and with `bind`'s message, while another
//! process holds the file's writer lock (an exclusive `flock`), or a reader
//! asks writers to wait (a shared one); the file is left as it was. A
//! dataset's folder lock: `--append` and `-f` wait for another writer's and
//! are refused by a reader's.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tbrw::work_file::{READER_HOLDS, WRITER_HOLDS};

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

/// Every command that writes the TB5 file `l` (replacing or appending to
/// it), with inputs made in `dir`.
fn writers_of(dir: &Path, l: &Path) -> Vec<Vec<String>> {
    let sample = shipped("examples/data/sample.tb5");
    let tasks = dir.join("tasks.tb5");
    ok(&["import", "mtmc", s(&shipped("cli/tests/data/mtmc/doc_example.log")), "-o", s(&tasks)]);
    let profile = dir.join("run.tb5");
    ok(&["import", "sampler", s(&shipped("examples/data/sampler/current.prof")), "-o", s(&profile)]);
    let (sample, tasks, profile, l) = (s(&sample), s(&tasks), s(&profile), s(l));
    let (log, prof) = (shipped("cli/tests/data/mtmc/doc_example.log"), shipped("examples/data/sampler/current.prof"));
    let v: Vec<Vec<&str>> = vec![
        vec!["bind", l],
        vec!["symbolize", l],
        vec!["import", "mtmc", s(&log), "-o", l, "-f"],
        vec!["import", "sampler", s(&prof), "-o", l, "-f"],
        vec!["export", "firefox", sample, "-o", l, "-f"],
        vec!["export", "pprof", sample, "-o", l, "-f"],
        vec!["export", "flamegraph", sample, "-o", l, "-f"],
        vec!["export", "timeline", tasks, "-o", l, "-f"],
        vec!["export", "sampler", profile, "-o", l, "-f"],
    ];
    v.into_iter().map(|a| a.into_iter().map(str::to_owned).collect()).collect()
}

#[test]
fn a_locked_tb5_file_is_refused_by_every_writer_with_binds_message() {
    let t = tempfile::tempdir().unwrap();
    let inputs = t.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let l = out.join("L.tb5");
    std::fs::copy(shipped("examples/data/sample.tb5"), &l).unwrap();
    let before = std::fs::read(&l).unwrap();
    let writers = writers_of(&inputs, &l);
    for (shared, why) in [(false, WRITER_HOLDS), (true, READER_HOLDS)] {
        // This process holds the lock: the commands are other processes.
        let holder = File::open(&l).unwrap();
        if shared {
            holder.lock_shared().unwrap();
        } else {
            holder.lock().unwrap();
        }
        let want = format!("tbrw: {}: cannot open: {why}\n", l.display());
        for args in &writers {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = tbrw(&a);
            assert_eq!(o.status.code(), Some(1), "{a:?}");
            // The one line, nothing before it: refused before any work
            // (symbolize would warn about the modules' missing files).
            assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{a:?}");
            assert_eq!(std::fs::read(&l).unwrap(), before, "{a:?} changed the file");
            assert_eq!(names(&out), ["L.tb5"], "{a:?}");
        }
        drop(holder);
    }
    // Released: every one of them writes.
    for args in &writers {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&a);
    }
}

#[test]
fn symbolize_refuses_a_file_it_cannot_write_before_any_symbol_work() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("note: running as root, which may write any file: test skipped");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("ro.tb5");
    std::fs::copy(shipped("examples/data/sample.tb5"), &f).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
    let o = tbrw(&["symbolize", s(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with(&format!("tbrw: {}: cannot open:", f.display())) && e.lines().count() == 1, "{e}");
    // A dataset in a folder that cannot be written: the folder given is named, no staging path.
    let ro = t.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    for args in [vec!["export", "parquet", s(&f), "-o"], vec!["export", "vtune-csv", s(&f), "--hostname", "h", "-o"]] {
        let pq = ro.join("pq");
        let o = tbrw(&[&args[..], &[s(&pq)]].concat());
        assert_eq!(o.status.code(), Some(1));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(&format!("{}: cannot write in folder {}", pq.display(), ro.display())), "{e}");
        assert!(!e.contains("tbrw-work") && !e.contains("partial"), "{e}");
    }
}

#[test]
fn a_datasets_lock_makes_writers_wait_and_a_readers_refuses_them() {
    let t = tempfile::tempdir().unwrap();
    let sample = shipped("examples/data/sample.tb5");
    let ds = t.path().join("ds");
    ok(&["export", "parquet", s(&sample), "-o", s(&ds)]);
    // A reader asking writers to wait (`flock -s ds ...`): refused at once.
    let reader = File::open(&ds).unwrap();
    reader.lock_shared().unwrap();
    for flag in ["--append", "-f"] {
        let o = tbrw(&["export", "parquet", s(&sample), "-o", s(&ds), flag]);
        assert_eq!(o.status.code(), Some(1), "{flag}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!("tbrw: {}: cannot open: {READER_HOLDS}\n", ds.display()),
            "{flag}"
        );
        assert_eq!(names(&ds.join("host=perfbox")), ["run=sample"]);
        assert_eq!(names(t.path()), ["ds"], "{flag}: nothing left beside");
    }
    drop(reader);
    // Another writer publishing: waited for, then the run is added.
    let writer = File::open(&ds).unwrap();
    writer.lock().unwrap();
    let hold = Duration::from_millis(1500);
    let release = std::thread::spawn(move || {
        std::thread::sleep(hold);
        drop(writer);
    });
    let start = Instant::now();
    let out = ok(&["export", "parquet", s(&sample), "-o", s(&ds), "--append"]);
    assert!(start.elapsed() >= hold, "the append did not wait for the lock");
    assert!(out.contains("run=sample-2"), "{out}");
    release.join().unwrap();
    assert_eq!(names(&ds.join("host=perfbox")), ["run=sample", "run=sample-2"]);
    assert_eq!(names(t.path()), ["ds"]);
}
