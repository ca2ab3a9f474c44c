//! `TBRW_open(READ)` never fails because another process is appending
//! (issue #29): a thread of this test appends one small stream at a time
//! and, every [`APPENDS_PER_FILE`] appends, replaces the file with a new
//! one; the C program `tests/c/open_during_appends.c`, another process,
//! opens the file for reading [`OPENS`] times meanwhile and reads each
//! open's last stream. Every open must succeed.

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use c_build::{compile, Lang};
use tb5::{DescEntry, Module, StreamInfo, Tb5Writer, VersionInfo};

const OPENS: u32 = 10_000;
const APPENDS_PER_FILE: u32 = 20;

fn add_stream(w: &mut Tb5Writer, records: u64) -> tb5::Result<()> {
    let desc = [DescEntry { desc_type: tb5::desc_type::IP, data_size: 8, ..Default::default() }];
    let mut s = w.next_stream()?.info(&StreamInfo::default())?.data_descriptor(&desc)?;
    let mut d = s.data()?;
    for i in 0..records {
        d.add(&i.to_le_bytes())?;
    }
    d.done()?;
    s.finish()
}

/// The base file: two streams of 100 records.
fn write_base(p: &Path) -> tb5::Result<()> {
    let mut w = Tb5Writer::create(p)?;
    w.write_version_info(&VersionInfo { sample_file_version: 16, ..Default::default() })?;
    w.write_modules(&[Module { name: Some("m".into()), ..Default::default() }])?;
    add_stream(&mut w, 100)?;
    add_stream(&mut w, 100)?;
    w.close()
}

#[test]
fn c_readers_never_fail_during_appends() {
    let exe = compile(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/open_during_appends.c"), Lang::C);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("live.tb5");
    write_base(&p).unwrap();
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    // The reader is started before the appender: a process being spawned
    // holds this process's open files (and so their locks) until its exec,
    // which would make an append that starts meanwhile find the file busy.
    let start = Instant::now();
    let reader = std::process::Command::new(&exe)
        .arg(&p)
        .arg(OPENS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::thread::scope(|scope| {
        let appender = scope.spawn(|| -> tb5::Result<()> {
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..APPENDS_PER_FILE {
                    let mut w = Tb5Writer::append(&p)?;
                    add_stream(&mut w, 1)?;
                    w.close()?;
                    commits.fetch_add(1, Ordering::Relaxed);
                }
                write_base(&p)?;
            }
            Ok(())
        });
        let out = reader.wait_with_output().unwrap();
        let took = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        appender.join().unwrap().unwrap();
        (out, took, commits.load(Ordering::Relaxed))
    });
    let (out, took, during) = out;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stdout}{stderr}", out.status);
    println!("C readers during appends: {} in {:.2} s, {during} commits meanwhile", stdout.trim(), took.as_secs_f64());
    let field = |name: &str| -> u64 {
        let words: Vec<&str> = stdout.split_whitespace().collect();
        let i = words.iter().position(|w| *w == name).unwrap_or_else(|| panic!("no {name} in {stdout:?}"));
        words[i + 1].parse().unwrap()
    };
    assert_eq!(field("opens"), u64::from(OPENS));
    assert_eq!(field("failures"), 0, "{stdout}{stderr}");
    // The opens met the appends: the stream count changed under them.
    assert!(during >= 20 && field("counts") >= 10, "the appends did not overlap the opens: {stdout}, {during} commits");
}
