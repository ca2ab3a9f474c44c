//! Writers killed with SIGKILL at random moments of a large create or
//! append leave no work file and no grown file: 20 kills of each, every
//! one followed by the checks below. A custom harness (no libtest): the
//! same binary is the writer, run as a child process when `CHILD` is set.
//!
//! Bounded: each kill lands within [`MAX_DELAY_MS`] of the child's start,
//! so the whole run takes seconds. Not timing-dependent: wherever the kill
//! lands (before the first byte, mid-data, mid-commit, after a commit),
//! every check must hold. The seed is printed; `TBRW_KILL_SEED` repeats a run.

mod common;

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

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        let (mode, path) = spec.split_once(':').expect("mode:path");
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
    println!("kill test: {KILLS} creates ({created} committed files seen), {KILLS} appends ({appended} tails cut): ok");
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

/// Each kill: the file reads as its last commit; the next open for writing
/// cuts it to exactly its committed end.
fn killed_appends(dir: &Path, rng: &mut Rng) -> u32 {
    let p = dir.join("grow.tb5");
    let mut cut = 0;
    for i in 0..KILLS {
        write_content(&p, &guide_content(10)).unwrap();
        spawn_and_kill("append", &p, rng);
        let f = Tb5File::open(&p).unwrap_or_else(|e| panic!("kill {i}: {e}"));
        f.verify().unwrap();
        let generation = f.generation();
        drop(f);
        let before = std::fs::metadata(&p).unwrap().len();
        Tb5Writer::append(&p).unwrap().abort();
        let bytes = std::fs::read(&p).unwrap();
        let after = bytes.len() as u64;
        assert!(after <= before, "kill {i}");
        cut += u32::from(after < before);
        // Exactly the committed end: the file reads whole, and one byte less does not.
        let f = Tb5File::from_bytes("cut", bytes.clone()).unwrap();
        assert_eq!(f.generation(), generation, "kill {i}");
        f.verify().unwrap();
        // One byte short, the newest commit's directory is cut: the file
        // then reads as the commit before (if any), and verify says so.
        let short = Tb5File::from_bytes("short", bytes[..bytes.len() - 1].to_vec());
        assert!(short.map_or(true, |f| f.generation() < generation && f.verify().is_err()), "kill {i}: tail left");
        let (work, files) = listing(dir);
        assert!(work.is_empty() && files == std::slice::from_ref(&p), "kill {i}: {work:?} {files:?}");
    }
    cut
}
