//! Files that pass open (every checksum of the directory and of the sections
//! open reads is right) but whose content is inconsistent: no command may
//! panic on them; each says what is wrong, naming the file, on one line.

use std::path::{Path, PathBuf};
use std::process::Command;

/// CRC-32 (IEEE), bit by bit: enough for a few small sections.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

fn rd(b: &[u8], at: usize, n: usize) -> u64 {
    b[at..at + n].iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

/// Patches the section of directory kind `kind` and stream `stream`
/// (`patch` gets its bytes) and recomputes its checksum, the directory's
/// and the commit slot's, so that only consistency checks can catch it.
fn forge(bytes: &mut [u8], kind: u16, stream: u32, patch: impl Fn(&mut [u8])) {
    let slot = if rd(bytes, 96, 8) > rd(bytes, 64, 8) { 96 } else { 64 };
    let dir_offset = rd(bytes, slot + 8, 8) as usize;
    let dir_len = rd(bytes, slot + 16, 4) as usize;
    let mut found = false;
    for e in (dir_offset..dir_offset + dir_len).step_by(48) {
        if rd(bytes, e, 2) as u16 == kind && rd(bytes, e + 4, 4) as u32 == stream {
            let (off, len) = (rd(bytes, e + 8, 8) as usize, rd(bytes, e + 16, 8) as usize);
            patch(&mut bytes[off..off + len]);
            let crc = crc32(&bytes[off..off + len]);
            bytes[e + 36..e + 40].copy_from_slice(&crc.to_le_bytes());
            found = true;
            break;
        }
    }
    assert!(found, "no section {kind:#x} of stream {stream}");
    let dcrc = crc32(&bytes[dir_offset..dir_offset + dir_len]);
    bytes[slot + 24..slot + 28].copy_from_slice(&dcrc.to_le_bytes());
    let scrc = crc32(&bytes[slot..slot + 28]);
    bytes[slot + 28..slot + 32].copy_from_slice(&scrc.to_le_bytes());
}

fn tbrw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

/// The shipped sample (9 modules) in this project's old layout, whose
/// checksummed sections these tests forge (`tests/data/old-layout`; an
/// append keeps a file's layout), bound, in `dir`.
fn bound_sample(dir: &Path) -> PathBuf {
    let p = dir.join("sample.tb5");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/old-layout/sample.tb5"), &p).unwrap();
    assert!(tbrw(&["bind", p.to_str().unwrap()]).status.success());
    p
}

/// Sets the stored offset of the first descriptor entry of `desc_type` in `stream`.
fn move_field(bytes: &mut [u8], stream: u32, desc_type: u16, offset: u32) {
    forge(bytes, 0x0101, stream, |s| {
        let at = s.chunks_exact(40).position(|e| rd(e, 4, 2) as u16 == desc_type).expect("the field") * 40;
        s[at..at + 4].copy_from_slice(&offset.to_le_bytes());
    });
}

/// Runs every reading command on `file`: none may panic, and those that
/// fail say so on one line naming the file. Returns report's message.
fn no_command_panics(file: &Path, stream: &str) -> String {
    let f = file.to_str().unwrap();
    let csv = file.with_extension("csv.d");
    let runs: Vec<Vec<&str>> = vec![
        vec!["info", f],
        vec!["verify", f],
        vec!["report", f, "--stream", stream],
        vec!["report", f, "--stream", stream, "--by", "event"],
        vec!["report", f, "--stream", stream, "--by", "thread", "--json"],
        vec!["report", f, "--stream", stream, "--module", "libc.so.6"],
        vec!["report", f, "--stream", stream, "--tid", "1000", "--time", "1.."],
        vec!["export", "vtune-csv", f, "-o", csv.to_str().unwrap(), "--hostname", "h", "-f"],
        vec!["bind", f, "--stream", stream],
    ];
    let mut report = String::new();
    for args in runs {
        let o = tbrw(&args);
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_ne!(o.status.code(), Some(101), "tbrw {args:?} panicked: {e}");
        assert!(o.status.code().is_some(), "tbrw {args:?} was killed: {e}");
        if !o.status.success() {
            assert_eq!(e.lines().count(), 1, "tbrw {args:?}: {e}");
            assert!(e.starts_with("tbrw: ") && e.contains(f), "tbrw {args:?}: {e}");
            if args[0] == "report" && report.is_empty() {
                report = e;
            }
        }
    }
    report
}

#[test]
fn a_bind_naming_module_200_of_9_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = bound_sample(dir.path());
    let mut b = std::fs::read(&p).unwrap();
    // The first packed data bind's module index (1 byte for 9 modules,
    // after the section's 8-byte head).
    forge(&mut b, 0x0305, 0, |s| s[8] = 200);
    std::fs::write(&p, b).unwrap();
    let e = no_command_panics(&p, "0");
    assert!(e.contains("module 200") && e.contains("has 9"), "{e}");
}

#[test]
fn a_tid_field_past_the_record_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = bound_sample(dir.path());
    let mut b = std::fs::read(&p).unwrap();
    move_field(&mut b, 1, 4, 1000); // ST_TID of the custom stream
    std::fs::write(&p, b).unwrap();
    let e = no_command_panics(&p, "1");
    assert!(!e.is_empty(), "report must refuse the file");
}

#[test]
fn an_event_field_at_offset_536870912_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = bound_sample(dir.path());
    let mut b = std::fs::read(&p).unwrap();
    move_field(&mut b, 0, 1, 536_870_912); // the legacy record, which holds the event index
    std::fs::write(&p, b).unwrap();
    let e = no_command_panics(&p, "0");
    assert!(!e.is_empty(), "report must refuse the file");
}
