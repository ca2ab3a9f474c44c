//! Readers never fail because another process is appending to the file
//! (issue #29): a child process appends small streams in a loop and, every
//! [`APPENDS_PER_FILE`] appends, replaces the file with a new one (which
//! keeps the file small and puts renames in the mix); this process opens
//! the file [`OPENS`] times meanwhile and reads each open view. Every open
//! must succeed and read as one whole commit (the files are in Intel's
//! layout, this project's default: an append writes past the end and
//! rewrites the file header last, docs/FORMAT.md). A custom harness (no
//! libtest): the same binary is the appender, run as a child process when
//! `CHILD` is set.
//!
//! The opens that overlap a commit are what matter: the opens go on past
//! [`OPENS`] until they have seen [`MIN_COMMITS`] different commits (on
//! two busy cores the appender may get little time), so a run in which the
//! two never met cannot pass.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use tbrw::*;

const CHILD: &str = "TBRW_APPENDER_CHILD";
const OPENS: u32 = 10_000;
const MIN_COMMITS: usize = 50;
/// Opens stop here, enough commits seen or not (then the test fails).
const MAX_TIME: Duration = Duration::from_secs(20);
const APPENDS_PER_FILE: u32 = 20;
/// Records in the base file's streams (40 bytes each).
const BASE_RECORDS: u32 = 200;

fn main() {
    if let Ok(path) = std::env::var(CHILD) {
        appender(Path::new(&path));
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("live.tb5");
    write_content(&p, &guide_content(BASE_RECORDS)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, &p)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Wait for the first append, so that the opens below overlap the appends.
    let t = Instant::now();
    while Tb5File::open(&p).unwrap().stream_count() < 3 {
        assert!(t.elapsed() < Duration::from_secs(20), "the appender made no commit");
        std::thread::sleep(Duration::from_millis(1));
    }

    let start = Instant::now();
    let mut failures = Vec::new();
    // (inode, streams): the commits these opens saw (each append adds one stream).
    let mut commits = HashSet::new();
    let mut opens = 0u32;
    while (opens < OPENS || commits.len() < MIN_COMMITS) && start.elapsed() < MAX_TIME {
        let i = opens;
        opens += 1;
        match read_one(&p, i.is_multiple_of(16)) {
            Ok(seen) => {
                commits.insert(seen);
            }
            Err(e) => failures.push(format!("open {i}: {e}")),
        }
    }
    let took = start.elapsed();
    if let Some(status) = child.try_wait().unwrap() {
        panic!("the appender stopped by itself: {status}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    println!(
        "readers during appends: {opens} opens in {:.2} s, {} failures, {} distinct commits seen",
        took.as_secs_f64(),
        failures.len(),
        commits.len()
    );
    let first = failures[..failures.len().min(5)].join("\n");
    assert!(failures.is_empty(), "{} of {opens} opens failed; the first ones:\n{first}", failures.len());
    assert!(opens >= OPENS, "only {opens} opens in {MAX_TIME:?}");
    assert!(commits.len() >= MIN_COMMITS, "{} commits seen: the appends did not overlap the opens", commits.len());
}

/// Opens the file and reads what a reader reads: every section's view of
/// the last stream, and everything (`verify`) when `all`.
fn read_one(p: &Path, all: bool) -> std::result::Result<(u64, u64), String> {
    use std::os::unix::fs::MetadataExt;
    let f = Tb5File::open(p).map_err(|e| e.to_string())?;
    let n = f.stream_count();
    // The base file has 2 streams; each append adds one.
    let appended = u64::from(n).checked_sub(2).ok_or_else(|| format!("{n} streams"))?;
    // A file in this project's `\x89TB5` layout counts its commits; one in
    // Intel's layout (the default) has none.
    if f.layout() == FileLayout::Project && f.generation() != 1 + appended {
        return Err(format!("generation {} with {appended} appended streams", f.generation()));
    }
    let last = f.stream(n - 1).map_err(|e| e.to_string())?;
    let records = last.data().map_err(|e| e.to_string())?.map_or(0, |d| d.len());
    if appended > 0 && records != 1 {
        return Err(format!("the last appended stream has {records} records"));
    }
    if all {
        f.verify().map_err(|e| e.to_string())?;
        if read_content(&f).map_err(|e| e.to_string())?.streams.len() != n as usize {
            return Err("the content lost a stream".into());
        }
    }
    // Inode of this view: a replaced file is another inode, reopened by path.
    let ino = std::fs::metadata(p).map_or(0, |m| m.ino());
    Ok((ino, u64::from(n)))
}

/// Appends one small stream at a time, forever; replaces the file with the
/// base content every [`APPENDS_PER_FILE`] appends.
fn appender(p: &Path) -> ! {
    let base = guide_content(BASE_RECORDS);
    // The custom stream, cut to one 24-byte record.
    let one = {
        let mut s = guide_content(1).streams[1..2].to_vec();
        s[0].data.as_mut().unwrap().truncate(24);
        s
    };
    loop {
        for _ in 0..APPENDS_PER_FILE {
            let mut w = Tb5Writer::append(p).unwrap();
            write_streams(&mut w, &one).unwrap();
            w.close().unwrap();
        }
        write_content(p, &base).unwrap();
    }
}
