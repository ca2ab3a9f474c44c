//! The `tbrw` binary: subcommands, help, exit codes, one-line errors,
//! standard input/output, and quiet stderr when it is not a terminal.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;
use tbrw_elf_profile::Magic;

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "tbrw {args:?} wrote to stderr: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(!o.status.success(), "tbrw {args:?} succeeded");
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(e.lines().count(), 1, "tbrw {args:?}: {e}");
    assert!(e.starts_with("tbrw: "), "{e}");
    e
}

fn sample_copy(dir: &Path) -> PathBuf {
    let p = dir.join("sample.tb5");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data/sample.tb5"), &p).unwrap();
    p
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["info", "--help"],
        &["verify", "--help"],
        &["bind", "--help"],
        &["report", "--help"],
        &["import", "--help"],
        &["import", "sampler", "--help"],
        &["export", "--help"],
        &["export", "vtune-csv", "--help"],
        &["export", "sampler", "--help"],
    ] {
        let out = ok(args);
        assert!(out.contains("Usage:"), "{args:?}: {out}");
    }
    assert_eq!(tbrw(&["nonsense"]).status.code(), Some(2));
}

#[test]
fn info_verify_bind_report() {
    let dir = tempfile::tempdir().unwrap();
    let f = sample_copy(dir.path());
    let fs = f.to_str().unwrap();
    assert!(ok(&["info", fs]).contains("streams: 2"));
    assert_eq!(ok(&["verify", fs]), format!("{fs}: ok\n"));
    let before = ok(&["report", fs, "--by", "module"]);
    assert!(before.contains("3000 of 3000 samples, by module"), "{before}");
    assert!(before.contains("vmlinux-6.1.0-18-amd64 (pid 0)") && before.contains("[unknown]"), "{before}");
    let bound = ok(&["bind", fs]);
    assert!(bound.contains("stream 0 bound") && bound.contains("stream 1 bound"), "{bound}");
    assert!(ok(&["info", fs]).contains(", bound"));
    assert_eq!(ok(&["report", fs, "--by", "module"]), before, "a stored bind reports what the in-memory one did");
    // Filters and groupings.
    let by_pid: serde_json::Value = serde_json::from_str(&ok(&["report", fs, "--by", "process", "--json"])).unwrap();
    assert_eq!(by_pid["by"], "process");
    assert!(
        by_pid["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["key"]["kind"] == "process" && r["key"]["pid"] == 1000 && r["key"]["name"] == "app"),
        "{by_pid}"
    );
    let db = ok(&["report", fs, "--pid", "1001", "--by", "thread"]);
    assert!(db.contains("tid 1001 (pid 1001)") && !db.contains("(pid 1000)"), "{db}");
    let libc = ok(&["report", fs, "--module", "libc.so.6", "--by", "module", "--top", "1"]);
    assert_eq!(libc.lines().count(), 3, "{libc}");
    let events = ok(&["report", fs, "--by", "event"]);
    // Samples alternate between the two events.
    assert!(events.contains("      1500  50.00%  CPU_CLK_UNHALTED.THREAD\n"), "{events}");
    assert!(events.contains("      1500  50.00%  INST_RETIRED.ANY\n"), "{events}");
    let early = ok(&["report", fs, "--time", "..0x19731ad54ade", "--by", "process"]);
    assert!(!early.contains("worker"), "the worker starts later: {early}");
    let s1 = ok(&["report", fs, "--stream", "1", "--by", "process"]);
    assert!(s1.contains("200 of 200 samples"), "{s1}");
    // Errors: one line, non-zero exit.
    assert!(fails(&["report", fs, "--module", "nosuch.so"]).contains("no sample matches --module \"nosuch.so\""));
    assert!(fails(&["report", fs, "--time", "a..b"]).contains("not a number"));
    assert!(fails(&["verify", dir.path().join("missing.tb5").to_str().unwrap()]).contains("missing.tb5"));
    // Intel's layout has no checksums: a damaged table is what is caught
    // (the file header's first entry, the global table, sent past the end).
    let mut b = std::fs::read(&f).unwrap();
    b[16 + 8..16 + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let bad = dir.path().join("bad.tb5");
    std::fs::write(&bad, b).unwrap();
    let e = fails(&["verify", bad.to_str().unwrap()]);
    assert!(e.contains("bad.tb5") && e.contains("byte"), "{e}");
}

#[test]
fn import_from_stdin_export_to_stdout_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, per_map, _) = profile(Magic::Power, 400, 21);
    let out = dir.path().join("p.tb5");
    // bzip2 on standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["import", "sampler", "-", "-o", out.to_str().unwrap(), "--pid", "4242"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bzip2(&bytes)).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "no progress bar when stderr is not a terminal");
    assert!(String::from_utf8(o.stdout).unwrap().contains("400 samples"));
    let rep: serde_json::Value = serde_json::from_str(&ok(&["report", out.to_str().unwrap(), "--json"])).unwrap();
    // The executable's three segments are three modules named prog: their rows add up to the profile's pcs in them.
    let prog: Vec<&serde_json::Value> = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["key"]["name"] == "prog" && r["key"]["pid"] == 4242)
        .collect();
    assert_eq!(prog.len(), 3, "{rep}");
    let in_prog: u64 = prog.iter().map(|r| r["samples"].as_u64().unwrap()).sum();
    assert_eq!(in_prog, per_map[..3].iter().sum::<u64>(), "{rep}");
    // Back to a profile on standard output: the same bytes.
    let o = tbrw(&["export", "sampler", out.to_str().unwrap(), "-o", "-"]);
    assert!(o.status.success());
    assert!(o.stdout == bytes);
    // A truncated profile: imported, and stderr says what was dropped.
    let cut = dir.path().join("cut.bin");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let o = tbrw(&["import", "sampler", cut.to_str().unwrap(), "-o", dir.path().join("cut.tb5").to_str().unwrap()]);
    assert!(o.status.success());
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("announces 400 samples but holds 399") && e.contains("1 dropped"), "{e}");
    // CSV export of the shipped sample.
    let f = sample_copy(dir.path());
    let csv_dir = dir.path().join("csv");
    let o = tbrw(&["export", "vtune-csv", f.to_str().unwrap(), "-o", csv_dir.to_str().unwrap()]);
    assert!(o.status.success());
    let files = String::from_utf8(o.stdout).unwrap();
    // The samples' values, and their counts per module per time bucket.
    let files: Vec<&str> = files.lines().collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let samples = files.iter().find(|f| !f.contains("-modules-")).unwrap();
    assert_eq!(check_vtune_csv(Path::new(samples)), 3000);
    assert!(files.iter().any(|f| f.ends_with("-s0-modules-hostname-perfbox.csv")), "{files:?}");
    assert!(String::from_utf8(o.stderr).unwrap().contains("stream 1 not exported"));
    // Bad input for the import: one line, nothing written.
    let bad = dir.path().join("bad.bin");
    std::fs::write(&bad, [9u8; 40]).unwrap();
    let target = dir.path().join("never.tb5");
    assert!(fails(&["import", "sampler", bad.to_str().unwrap(), "-o", target.to_str().unwrap()])
        .contains("magic number 0x9090909"));
    assert!(!target.exists());
}

/// A TB5 output is committed by a rename: `-o -` is refused by every
/// import, never written to a file named `-`.
#[test]
fn imports_refuse_standard_output_for_a_tb5_file() {
    let dir = tempfile::tempdir().unwrap();
    let perf = concat!(env!("CARGO_MANIFEST_DIR"), "/../tbrw-import/tests/data/perf/perf.data.armv7-3.4");
    let log = dir.path().join("mtmc_raw_0");
    std::fs::write(&log, "").unwrap();
    for args in [["import", "perf", perf, "-o", "-"], ["import", "mtmc", log.to_str().unwrap(), "-o", "-"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).current_dir(dir.path()).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8(o.stderr).unwrap();
        assert!(e.contains("cannot be written to standard output"), "{e}");
        assert!(!dir.path().join("-").exists(), "{args:?} wrote a file named -");
    }
}
