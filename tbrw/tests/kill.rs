//! Writers killed with SIGKILL at random moments of a large create or
//! append leave no work file and the old or the new file: 20 kills of
//! each, every one followed by the checks below (an append to a file in
//! Intel's layout may leave bytes past its end that nothing names:
//! docs/FORMAT.md, "Appends in Intel's layout"). Then, deterministically, writers
//! killed at each of their crash points in turn (every write, truncation,
//! link and rename of a new file replacing an old one, of a new file, of an
//! append, of a work file as the command line's exports use it): the
//! target is the old or the new file, whole, and the folder holds nothing
//! else once the next writer of the target has run. A custom harness (no
//! libtest): the same binary is the writer, run as a child process when
//! `CHILD` is set.
//!
//! Bounded: each kill lands within [`MAX_DELAY_MS`] of the child's start,
//! so the whole run takes seconds. Not timing-dependent: wherever the kill
//! lands (before the first byte, mid-data, mid-commit, after a commit),
//! every check must hold. The seed is printed; `TBRW_KILL_SEED` repeats a run.

mod common;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use tbrw::*;

const CHILD: &str = "TBRW_KILL_TEST_CHILD";
const KILLS: u32 = 20;
const MAX_DELAY_MS: u64 = 600;
/// Records per child write: 48 bytes each, about 24 MB.
const RECORDS: u32 = 500_000;
/// Records of the file the "bind" mode binds: its bind's Intel entries
/// are written in more than one part (65,536 entries each).
const BIND_RECORDS: u32 = 150_000;

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        let (mode, path) = spec.split_once(':').expect("mode:path");
        if let Some(once) = mode.strip_prefix("once-") {
            write_once(once, Path::new(path)).unwrap();
            std::process::exit(0);
        }
        child(mode, Path::new(path));
    }
    let seed = std::env::var("TBRW_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("kill test: seed {seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let created = killed_creates(dir.path(), &mut rng);
    let appended = killed_appends(dir.path(), &mut rng);
    println!(
        "kill test: {KILLS} creates ({created} committed files seen), {KILLS} appends ({appended} left bytes named by \
         nothing): ok"
    );
    if !cfg!(debug_assertions) {
        // The library has crash points in builds with debug assertions only.
        println!("kill test: crash points skipped (a build without debug assertions has none)");
        return;
    }
    for (mode, durable) in [
        ("replace", false),
        ("replace", true),
        ("create", false),
        ("append", false),
        ("append", true),
        ("append-tb5", false),
        ("append-tb5", true),
        ("bind", false),
        ("work-file", false),
    ] {
        let names = killed_at_each_point(dir.path(), mode, durable);
        let synced = if durable { " (TBRW_DURABLE=1)" } else { "" };
        println!("kill test: {mode}{synced}: killed at each of {} crash points ({}): ok", names.len(), runs(&names));
    }
}

/// Writes in a loop until killed: new files, or appends to an existing one.
fn child(mode: &str, path: &Path) -> ! {
    let big = guide_content(RECORDS);
    let mut more = guide_content(1).streams[1..].to_vec();
    // A custom stream (legacy records belong in stream 0 only) of as many bytes as stream 0.
    let custom = more[0].data.take().unwrap();
    more[0].data = Some(custom.repeat(big.streams[0].data.as_ref().unwrap().len() / custom.len()));
    loop {
        let r = match mode {
            "create" => write_content(path, &big),
            "append" => Tb5Writer::append(path).and_then(|mut w| {
                write_streams(&mut w, &more)?;
                w.close()
            }),
            other => panic!("unknown mode {other}"),
        };
        r.unwrap();
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn spawn_and_kill(mode: &str, path: &Path, rng: &mut Rng) {
    let delay = rng.below(MAX_DELAY_MS);
    let mut c = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, format!("{mode}:{}", path.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(delay));
    if let Some(status) = c.try_wait().unwrap() {
        panic!("the {mode} writer ended by itself: {status}");
    }
    c.kill().unwrap(); // SIGKILL
    c.wait().unwrap();
}

fn listing(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    all.sort();
    all.into_iter().partition(|p| p.extension().is_some_and(|e| e == "tmp"))
}

/// Each kill: the target is absent or a whole committed file. A work file
/// can be seen only if the kill fell between naming the finished file and
/// renaming it into place: it must then be whole, and the next writer removes it.
fn killed_creates(dir: &Path, rng: &mut Rng) -> u32 {
    let p = dir.join("big.tb5");
    let mut seen = 0;
    for i in 0..KILLS {
        spawn_and_kill("create", &p, rng);
        let (work, files) = listing(dir);
        for w in &work {
            let f = Tb5File::open(w).unwrap_or_else(|e| panic!("kill {i}: unfinished work file left: {e}"));
            f.verify().unwrap();
        }
        if p.exists() {
            assert_eq!(files, std::slice::from_ref(&p), "kill {i}");
            Tb5File::open(&p).unwrap().verify().unwrap();
            seen += 1;
        } else {
            assert!(files.is_empty(), "kill {i}: {files:?}");
        }
        Tb5Writer::create(&p).unwrap().abort();
        let (work, _) = listing(dir);
        assert!(work.is_empty(), "kill {i}: the next writer left {work:?}");
    }
    std::fs::remove_file(&p).ok();
    seen
}

/// Each kill: the file reads as its last commit (the first file and the
/// whole streams of the appends done); the next writer appends after
/// whatever the killed one left past the end.
fn killed_appends(dir: &Path, rng: &mut Rng) -> u32 {
    let p = dir.join("grow.tb5");
    let mut tails = 0;
    for i in 0..KILLS {
        write_content(&p, &guide_content(10)).unwrap();
        spawn_and_kill("append", &p, rng);
        let f = Tb5File::open(&p).unwrap_or_else(|e| panic!("kill {i}: {e}"));
        f.verify().unwrap();
        let c = read_content(&f).unwrap();
        let first = expected(&guide_content(10));
        assert_eq!(c.streams[..2], first.streams[..], "kill {i}");
        assert!(c.streams[2..].iter().all(|s| s.info.comment.as_deref() == Some("custom")), "kill {i}");
        // What the commits name ends before the file's end: a killed append's bytes.
        let named = max_named_end(&std::fs::read(&p).unwrap());
        tails += u32::from(named < std::fs::metadata(&p).unwrap().len());
        drop(f);
        let mut w = Tb5Writer::append(&p).unwrap();
        write_streams(&mut w, &guide_content(1).streams[1..]).unwrap();
        w.close().unwrap();
        assert_eq!(Tb5File::open(&p).unwrap().stream_count(), c.streams.len() as u32 + 1, "kill {i}");
        let (work, files) = listing(dir);
        assert!(work.is_empty() && files == std::slice::from_ref(&p), "kill {i}: {work:?} {files:?}");
    }
    tails
}

/// The furthest byte any table of an Intel file this project wrote names
/// (its tables come last).
fn max_named_end(b: &[u8]) -> u64 {
    let rd = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut end = 816u64;
    let mut tables = vec![(16usize, 800usize)];
    while let Some((at, len)) = tables.pop() {
        for e in (at..at + len).step_by(40) {
            let (l, o, t) = (rd(e), rd(e + 8), u32::from_le_bytes(b[e + 28..e + 32].try_into().unwrap()));
            if t != 0 && t != 0xFFFE {
                end = end.max(o + l);
                if t == 0x22 || t == 0x29 {
                    tables.push((o as usize, l as usize));
                }
            }
        }
    }
    end
}

/// `names` with repeats in a row counted: `a, b ×3, c`.
fn runs(names: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in names {
        match out.last_mut() {
            Some((last, k)) if last == n => *k += 1,
            _ => out.push((n.clone(), 1)),
        }
    }
    out.iter().map(|(n, k)| if *k > 1 { format!("{n} ×{k}") } else { n.clone() }).collect::<Vec<_>>().join(", ")
}

/// The old file of the crash-point runs, and what each mode writes.
fn old_content() -> Content {
    guide_content(10)
}

fn new_content() -> Content {
    guide_content(3000)
}

/// The bytes the work-file mode writes (what an export writes).
const NEW_EXPORT: &[u8] = b"new export bytes\n";

/// One write of `mode` to `path`, to its end (unless a crash point stops it).
fn write_once(mode: &str, path: &Path) -> Result<()> {
    match mode {
        "replace" | "create" => write_content(path, &new_content()),
        "append" | "append-tb5" => {
            let mut w = Tb5Writer::append(path)?;
            write_streams(&mut w, &new_content().streams[1..])?;
            w.close()
        }
        "bind" => {
            let mut w = Tb5Writer::append(path)?;
            w.dobind(0)?;
            w.close()
        }
        "work-file" => {
            let io = |e: std::io::Error| Error::Io { path: path.to_owned(), action: "write", source: e };
            let lock = work_file::lock_target(path).map_err(io)?;
            let w = work_file::WorkFile::create_locked(lock).map_err(io)?;
            w.file().write_all(NEW_EXPORT).map_err(io)?;
            w.file().sync_all().map_err(io)?;
            w.persist().map_err(io)
        }
        other => panic!("unknown mode {other}"),
    }
}

/// Puts the target of `mode` in its state before the write: `None` for a create.
fn set_up(mode: &str, p: &Path) -> Option<Vec<u8>> {
    match mode {
        "create" => None,
        "work-file" => {
            std::fs::write(p, b"old export bytes\n").unwrap();
            Some(std::fs::read(p).unwrap())
        }
        "append-tb5" => {
            write_content_as(p, &old_content(), WriteLayout::Tb5).unwrap();
            Some(std::fs::read(p).unwrap())
        }
        "bind" => {
            write_content(p, &guide_content(BIND_RECORDS)).unwrap();
            Some(std::fs::read(p).unwrap())
        }
        _ => {
            write_content(p, &old_content()).unwrap();
            Some(std::fs::read(p).unwrap())
        }
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Runs the `mode` write once for each of its crash points, killed there
/// (`TBRW_TEST_CRASH_AT=k`), and checks what each kill leaves: the target
/// is the old or the new file, byte for byte, and the new one from some
/// point on; the only other entry ever seen is the work name holding the
/// whole new file, right after it was linked; the next writer of the
/// target leaves nothing but the target. Returns the crash points' names.
fn killed_at_each_point(dir: &Path, mode: &str, durable: bool) -> Vec<String> {
    let sub = dir.join(format!("points-{mode}-{durable}"));
    std::fs::create_dir(&sub).unwrap();
    let p = sub.join("t.tb5");
    // The new file: the same write, not killed, elsewhere (writes are deterministic).
    let reference = dir.join(format!("reference-{mode}-{durable}"));
    std::fs::create_dir(&reference).unwrap();
    let r = reference.join("t.tb5");
    set_up(mode, &r);
    write_once(mode, &r).unwrap();
    let new = std::fs::read(&r).unwrap();
    let mut names = Vec::new();
    let mut replaced_at = None;
    for k in 1.. {
        for name in names_in(&sub) {
            std::fs::remove_file(sub.join(name)).unwrap();
        }
        let old = set_up(mode, &p);
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.env(CHILD, format!("once-{mode}:{}", p.display())).env("TBRW_TEST_CRASH_AT", k.to_string());
        if durable {
            cmd.env("TBRW_DURABLE", "1");
        }
        let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().unwrap();
        if out.status.success() {
            assert_eq!(std::fs::read(&p).unwrap(), new, "{mode}: not killed, the new file");
            break;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{mode}, point {k}: {}\n{stderr}", out.status);
        let name = stderr
            .lines()
            .find_map(|l| l.strip_prefix(&format!("tbrw crash point {k}: ")))
            .unwrap_or_else(|| panic!("{mode}, point {k}: no crash point named in {stderr:?}"))
            .to_owned();
        let at = format!("{mode}, killed at point {k} ({name})");
        // The target: old or new, whole.
        let now = std::fs::read(&p).ok();
        let is_new = if mode == "append" || mode == "bind" {
            // A killed append to an Intel file may leave bytes past the old
            // end that nothing names: the file is the old one with them,
            // reading as the old one, or the new file.
            let f = Tb5File::open(&p).unwrap_or_else(|e| panic!("{at}: {e}"));
            f.verify().unwrap_or_else(|e| panic!("{at}: {e}"));
            let now = now.unwrap_or_else(|| panic!("{at}: no file"));
            let old = old.as_ref().expect("an append has an old file");
            if now != new {
                assert!(now.starts_with(old), "{at}: neither the old nor the new file");
                let want = read_content(&Tb5File::from_bytes("old", old.clone()).unwrap()).unwrap();
                assert_eq!(read_content(&f).unwrap(), want, "{at}: does not read as the old file");
            }
            now == new
        } else if mode == "append-tb5" {
            // A killed append may leave bytes past the committed end; the
            // next writer cuts them off, leaving the old or the new file.
            let f = Tb5File::open(&p).unwrap_or_else(|e| panic!("{at}: {e}"));
            f.verify().unwrap_or_else(|e| panic!("{at}: {e}"));
            Tb5Writer::append(&p).unwrap().abort();
            let cut = std::fs::read(&p).unwrap();
            assert!(cut == new || Some(&cut) == old.as_ref(), "{at}: neither the old nor the new file");
            cut == new
        } else {
            assert!(now.as_ref() == Some(&new) || now == old, "{at}: neither the old nor the new file");
            now.as_ref() == Some(&new)
        };
        match replaced_at {
            None if is_new => replaced_at = Some(k),
            Some(_) => assert!(is_new, "{at}: the old file came back"),
            None => {}
        }
        // The folder: the target, and nothing else but the work name of
        // the whole new file between its link and its rename.
        let extra: Vec<String> = names_in(&sub).into_iter().filter(|n| n != "t.tb5").collect();
        if name == "linked under a work name" {
            assert_eq!(extra.len(), 1, "{at}: {extra:?}");
            assert_eq!(std::fs::read(sub.join(&extra[0])).unwrap(), new, "{at}: the work name holds the new file");
        } else {
            assert!(extra.is_empty(), "{at}: left {extra:?}");
        }
        // The next writer of the target removes what the killed one left.
        drop(work_file::lock_target(&p).unwrap_or_else(|e| panic!("{at}: the next writer: {e}")));
        let left: Vec<String> = names_in(&sub).into_iter().filter(|n| n != "t.tb5").collect();
        assert!(left.is_empty(), "{at}: the next writer left {left:?}");
        names.push(name);
    }
    let has = |n: &str| names.iter().any(|x| x == n);
    let expected: &[&str] = match mode {
        "replace" | "work-file" => &["linked under a work name", "renamed into place"],
        "create" => &["linked into place"],
        "append" => &["intel append sections written", "intel append header written"],
        "bind" => &["intel records part written", "intel append sections written", "intel append header written"],
        _ => &["tail cut", "slot written"],
    };
    for n in expected {
        assert!(has(n), "{mode}: no crash point {n:?} in {names:?}");
    }
    if durable {
        let synced = match mode {
            "append" => "intel append header synced",
            "append-tb5" => "slot synced",
            _ => "synced",
        };
        assert!(has(synced), "{mode}: no fsync points in {names:?}");
    }
    assert!(replaced_at.is_some() || mode.starts_with("append") || mode == "bind", "{mode}: no kill left the new file");
    names
}
