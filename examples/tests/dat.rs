//! tbrw_reader / tbrw_writer: the round trip, and bad input.

use std::path::PathBuf;
use std::process::Command;

use tbrw_examples::dat::{dat_to_tb5, tb5_to_dat};
use tbrw_examples::print::{print_file, Options, Records};

fn sample() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.tb5"))
}

fn printed(p: &std::path::Path) -> String {
    let mut out = Vec::new();
    print_file(p, Options { json: false, records: Records::All }, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn reader_then_writer_prints_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let dat = tmp.path().join("sample.dat");
    let data = tb5_to_dat(&sample(), &dat).unwrap();
    assert_eq!(data, tmp.path().join("sample.tb5.dat"));
    let new = tmp.path().join("samplenew.tb5");
    dat_to_tb5(&dat, &new).unwrap();
    assert_eq!(printed(&sample()), printed(&new));
    // And once more: the dump of the rewritten file is the same dump.
    std::fs::create_dir(tmp.path().join("b")).unwrap();
    let dat2b = tmp.path().join("b/again.dat");
    tb5_to_dat(&new, &dat2b).unwrap();
    let first = std::fs::read(&dat).unwrap();
    let second = std::fs::read(&dat2b).unwrap();
    // Only the data file's name differs (it follows the input's name).
    assert_eq!(first.len() + "samplenew".len() - "sample".len(), second.len());
    assert_eq!(std::fs::read(&data).unwrap(), std::fs::read(tmp.path().join("b/samplenew.tb5.dat")).unwrap());
}

#[test]
fn a_damaged_dump_is_an_error_and_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dat = tmp.path().join("s.dat");
    tb5_to_dat(&sample(), &dat).unwrap();
    let good = std::fs::read(&dat).unwrap();
    let new = tmp.path().join("new.tb5");
    for cut in [0, 7, 12, 40, good.len() / 2, good.len() - 1] {
        std::fs::write(&dat, &good[..cut]).unwrap();
        let e = dat_to_tb5(&dat, &new).unwrap_err().to_string();
        assert!(e.contains("s.dat") && e.contains("byte"), "{e}");
        assert!(!new.exists());
    }
    // A hostile count: the module count of the first MODULES record set to 2^40.
    let mut b = good.clone();
    let pos = find_tag(&b, 4);
    b[pos + 16..pos + 24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&dat, &b).unwrap();
    let e = dat_to_tb5(&dat, &new).unwrap_err().to_string();
    assert!(e.contains("cannot fit"), "{e}");
    // A missing data file.
    std::fs::write(&dat, &good).unwrap();
    std::fs::remove_file(tmp.path().join("sample.tb5.dat")).unwrap();
    let e = dat_to_tb5(&dat, &new).unwrap_err().to_string();
    assert!(e.contains("sample.tb5.dat"), "{e}");
    assert!(!new.exists());
}

/// The offset of the first record with this tag.
fn find_tag(b: &[u8], tag: u32) -> usize {
    let name_len = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    let mut at = 16 + name_len;
    loop {
        let t = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let len = u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize;
        if t == tag {
            return at;
        }
        at += 16 + len;
    }
}

#[test]
fn the_binaries_report_bad_input_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.tb5");
    // Record 42 of stream 0 gets time 0 in a stream its writer said is in
    // time order: a file that opens, which verify refuses.
    let mut b = std::fs::read(sample()).unwrap();
    let data_at = tbrw::Tb5File::open(sample()).unwrap().stream(0).unwrap().data().unwrap().unwrap().file_offset();
    let at = data_at as usize + 42 * 40 + 32;
    b[at..at + 8].fill(0);
    std::fs::write(&bad, &b).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_print_tb5")).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("print_tb5: ") && err.contains("bad.tb5") && err.contains("byte"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_print_tb5")).arg(tmp.path().join("missing.tb5")).output().unwrap();
    assert!(!out.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_tbrw_reader")).arg(&bad).arg(tmp.path().join("x.dat")).output().unwrap();
    assert!(!out.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_print_tb5")).arg(sample()).args(["--records", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_binaries_run_the_readme_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let dat = tmp.path().join("sample.dat");
    let new = tmp.path().join("samplenew.tb5");
    let ok = |c: &mut Command| assert!(c.status().unwrap().success());
    ok(Command::new(env!("CARGO_BIN_EXE_tbrw_reader")).arg(sample()).arg(&dat));
    ok(Command::new(env!("CARGO_BIN_EXE_tbrw_writer")).arg(&dat).arg(&new));
    let a = Command::new(env!("CARGO_BIN_EXE_print_tb5")).arg(sample()).output().unwrap().stdout;
    let b = Command::new(env!("CARGO_BIN_EXE_print_tb5")).arg(&new).output().unwrap().stdout;
    assert!(!a.is_empty() && a == b);
}
