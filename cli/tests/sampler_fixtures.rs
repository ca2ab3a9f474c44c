//! The shipped example profiles (`examples/data/sampler/`): they are what
//! the generator makes, and the command lines of their README run on them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/sampler")
}

#[test]
fn the_shipped_profiles_are_what_the_generator_writes() {
    for (name, bytes) in tbrw_elf_profile::fixtures::files() {
        let shipped = std::fs::read(data().join(name)).unwrap();
        assert!(shipped == bytes, "{name} differs from the generator's: run the command in its README");
    }
}

#[test]
fn the_readme_command_lines_run_on_the_shipped_profiles() {
    let readme = std::fs::read_to_string(data().join("README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The README's paths are from the repository root; outputs go to a temporary folder.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lines: Vec<&str> = readme.lines().filter(|l| l.starts_with("tbrw ")).collect();
    assert!(lines.len() >= 6, "{lines:?}");
    for line in lines {
        let words: Vec<String> = line
            .split('#')
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|w| {
                if w.starts_with("examples/") {
                    root.join(w).display().to_string()
                } else if w.ends_with(".tb5") || w.ends_with(".prof") || w == "csv" {
                    dir.path().join(w).display().to_string()
                } else {
                    w.to_owned()
                }
            })
            .collect();
        let o = Command::new(env!("CARGO_BIN_EXE_tbrw")).args(&words).output().unwrap();
        assert!(o.status.success(), "{line}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let again = std::fs::read(dir.path().join("current-again.prof")).unwrap();
    assert!(again == std::fs::read(data().join("current.prof")).unwrap(), "the round trip changed current.prof");
    let csv = std::fs::read_dir(dir.path().join("csv")).unwrap().next().unwrap().unwrap().path();
    assert!(std::fs::read_to_string(csv).unwrap().starts_with("tsc.UTC,"));
}
