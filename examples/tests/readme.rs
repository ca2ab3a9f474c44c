//! The README's example-programs section, run as written: its fenced `sh`
//! block goes through `sh -e` from the repository root, with three
//! substitutions a reader's machine makes for itself: the `cargo build`
//! lines are what this test's harness already did (the example binaries are
//! built for the test, `libtbrw` by `c_build::library`), `target/release`
//! is the folder they were built in, and `/tmp/` is a private scratch
//! folder. Then the claims the block's comments make are checked.

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::Path;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const HEADING: &str = "## The example programs";

/// The first fenced `sh` block of the section headed [`HEADING`], line by line.
fn example_block(readme: &str) -> Vec<String> {
    let start = readme.find(HEADING).expect("README has an example-programs section");
    let body = &readme[start + HEADING.len()..];
    let section = &body[..body.find("\n## ").unwrap_or(body.len())];
    let block = section.split("```sh\n").nth(1).expect("a sh block").split("\n```").next().unwrap();
    block.lines().map(str::to_owned).collect()
}

fn sh(script: &str) -> std::process::Output {
    Command::new("sh").arg("-ec").arg(script).current_dir(ROOT).output().expect("run sh")
}

#[test]
fn the_example_programs_section_runs_as_written() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = example_block(&readme);
    let built = c_build::library().to_str().unwrap().to_owned();
    let bins = Path::new(env!("CARGO_BIN_EXE_print_tb5")).parent().unwrap().to_str().unwrap().to_owned();
    assert_eq!(bins, built, "the example binaries and libtbrw are built in one folder");
    let scratch = tempfile::tempdir().unwrap();
    let tmp = format!("{}/", scratch.path().display());

    let mut script = Vec::new();
    let mut skipped = Vec::new();
    for line in &lines {
        if line.trim_start().starts_with("cargo build ") {
            skipped.push(line.clone());
            continue;
        }
        script.push(line.replace("target/release", &built).replace("/tmp/", &tmp));
    }
    assert_eq!(skipped.len(), 2, "the block builds the Rust examples and the C library: {skipped:?}");
    assert!(
        skipped.iter().any(|l| l.contains("-p tbrw-examples")) && skipped.iter().any(|l| l.contains("-p tbrw-sys"))
    );
    let script = script.join("\n");
    assert!(script.contains("$B/print_tb5") && script.contains("examples/c/$p.c"), "{script}");

    let out = sh(&script);
    assert!(
        out.status.success(),
        "the README's example block failed ({}):\n{script}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // What the block left where it said.
    for f in ["sample.dat", "sample.tb5.dat", "samplenew.tb5", "print_tb5-c", "tbrw_reader-c", "tbrw_writer-c"] {
        assert!(scratch.path().join(f).is_file(), "{f} was not written");
    }
    // "prints what the original printed" and "same text as the Rust version".
    let print = |prog: &str, file: &str| {
        let o = sh(&format!("{prog} {file}"));
        assert!(o.status.success(), "{prog} {file}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let original = print(&format!("{bins}/print_tb5"), "examples/data/sample.tb5");
    assert!(original.lines().count() > 20, "{original}");
    assert_eq!(print(&format!("{bins}/print_tb5"), &format!("{tmp}samplenew.tb5")), original);
    assert_eq!(print(&format!("{tmp}print_tb5-c"), "examples/data/sample.tb5"), original);
    // The block's first print asked for ten records.
    assert!(String::from_utf8_lossy(&out.stdout).contains("record 9"), "{}", String::from_utf8_lossy(&out.stdout));

    // A second run of the sequence stops at the first output that exists,
    // as the text under the block says, and replaces nothing.
    let before = std::fs::metadata(scratch.path().join("sample.dat")).unwrap().modified().unwrap();
    let again = sh(&script);
    assert!(!again.status.success(), "a second run replaced outputs without --force");
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(std::fs::metadata(scratch.path().join("sample.dat")).unwrap().modified().unwrap(), before);
}
