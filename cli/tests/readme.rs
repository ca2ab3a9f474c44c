//! The README's command-line section, run as written: every line of its
//! fenced `sh` blocks, through `sh`, with `tbrw` resolved to the built
//! binary, in a scratch folder holding copies of the shipped data (so the
//! outputs the commands name land there). A line whose comment says
//! `exit N` must end with status N, every other with 0. A line marked
//! `needs-data` runs only when the shipped files it names exist.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The command lines of the fenced `sh` blocks of the section headed `heading`.
fn sh_lines(readme: &str, heading: &str) -> Vec<String> {
    let start = readme.find(heading).unwrap_or_else(|| panic!("README has no {heading:?}"));
    let body = &readme[start + heading.len()..];
    let section = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut lines = Vec::new();
    let mut in_sh = false;
    for l in section.lines() {
        match l.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            t if in_sh && !t.is_empty() && !t.starts_with('#') => lines.push(t.to_owned()),
            _ => {}
        }
    }
    lines
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The status a line's comment announces (`exit N`), else 0.
fn expected_status(line: &str) -> i32 {
    let comment = line.split_once(" #").map_or("", |(_, c)| c);
    comment
        .split_once("exit ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Shipped files a `needs-data` line names that are not there.
fn missing_data(line: &str, scratch: &Path) -> Vec<String> {
    let command = line.split_once(" #").map_or(line, |(c, _)| c);
    command
        .split_whitespace()
        .filter(|w| w.starts_with("examples/") || w.starts_with("cli/"))
        .filter(|w| !scratch.join(w).exists())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_command_line_section_runs_on_shipped_data() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = sh_lines(&readme, "## The `tbrw` command line");
    assert!(lines.len() >= 8, "too few commands found: {lines:?}");
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&Path::new(ROOT).join("examples/data"), &scratch.path().join("examples/data"));
    copy_tree(&Path::new(ROOT).join("cli/tests/data"), &scratch.path().join("cli/tests/data"));
    let bin_dir: PathBuf = Path::new(env!("CARGO_BIN_EXE_tbrw")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for line in &lines {
        assert!(line.starts_with("tbrw ") || line.starts_with("cat "), "not a tbrw command: {line}");
        if line.contains("needs-data") {
            let missing = missing_data(line, scratch.path());
            if !missing.is_empty() {
                eprintln!("skipped (no {}): {line}", missing.join(", "));
                continue;
            }
        }
        let o = Command::new("sh").arg("-c").arg(line).env("PATH", &path).current_dir(scratch.path()).output().unwrap();
        let want = expected_status(line);
        assert_eq!(
            o.status.code(),
            Some(want),
            "{line}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stdout.is_empty(), "{line} printed nothing");
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} commands ran");
    // The outputs the commands named are where a reader following them finds them.
    for f in ["tasks.tb5", "w.tb5"] {
        assert!(scratch.path().join(f).is_file(), "{f} was not written");
    }
    assert!(std::fs::read_dir(scratch.path().join("csv")).unwrap().count() > 0);
}

/// The "Many runs" section: the export, then the query through DuckDB
/// (a `needs-duckdb` line is skipped with a note when `import duckdb` fails;
/// `.ci/run` installs it). libc.so.6 leads: 872 samples of stream 0 and the
/// 200 lock waits of stream 1 (`tbrw report --stream 0/1 --by module`).
#[test]
fn the_many_runs_section_runs_on_shipped_data() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = sh_lines(&readme, "## Many runs");
    assert_eq!(lines.len(), 2, "{lines:?}");
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&Path::new(ROOT).join("examples/data"), &scratch.path().join("examples/data"));
    copy_tree(&Path::new(ROOT).join("cli/tests"), &scratch.path().join("cli/tests"));
    let bin_dir: PathBuf = Path::new(env!("CARGO_BIN_EXE_tbrw")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let duckdb = Command::new("python3").args(["-c", "import duckdb"]).output().is_ok_and(|o| o.status.success());
    for line in &lines {
        assert!(line.starts_with("tbrw ") || line.starts_with("python3 "), "{line}");
        if line.contains("needs-duckdb") && !duckdb {
            eprintln!("note: python3 cannot import duckdb: skipped: {line}");
            continue;
        }
        let o = Command::new("sh").arg("-c").arg(line).env("PATH", &path).current_dir(scratch.path()).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{line}\nstdout: {out}\nstderr: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!o.stdout.is_empty(), "{line} printed nothing");
        if line.starts_with("python3 ") {
            assert!(out.starts_with("[[\"libc.so.6\", 1072]"), "{out}");
        }
    }
    assert!(scratch.path().join("fleet/_tbrw_dataset.json").is_file());
}

/// The "Completions and man pages" section: its lines run with `HOME` a
/// scratch folder; the script and the pages land where it says, and `man`
/// (where installed) finds a page through `PATH` alone, as it says.
#[test]
fn the_completions_and_man_pages_section_runs() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = sh_lines(&readme, "## Completions and man pages");
    assert_eq!(lines.len(), 3, "{lines:?}");
    let home = tempfile::tempdir().unwrap();
    let bin_dir: PathBuf = Path::new(env!("CARGO_BIN_EXE_tbrw")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for line in &lines {
        assert!(line.starts_with("tbrw ") || line.starts_with("mkdir "), "{line}");
        let o = Command::new("sh").arg("-c").arg(line).env("PATH", &path).env("HOME", home.path()).output().unwrap();
        assert!(o.status.success(), "{line}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let script = std::fs::read_to_string(home.path().join(".local/share/bash-completion/completions/tbrw")).unwrap();
    assert!(script.contains("complete") && script.contains("tbrw"), "{script}");
    let man1 = home.path().join(".cargo/share/man/man1");
    for page in ["tbrw.1", "tbrw-report.1", "tbrw-annotate.1", "tbrw-export-flamegraph.1"] {
        assert!(man1.join(page).is_file(), "{page} missing");
    }
    // man-db maps ~/.cargo/bin on PATH to ~/.cargo/share/man.
    let cargo_bin = home.path().join(".cargo/bin");
    std::fs::create_dir_all(&cargo_bin).unwrap();
    let o = Command::new("man")
        .args(["-w", "tbrw-annotate"])
        .env("PATH", format!("{}:/usr/bin:/bin", cargo_bin.display()))
        .env_remove("MANPATH")
        .output();
    match o {
        Ok(o) if o.status.success() => {
            let found = String::from_utf8_lossy(&o.stdout);
            assert!(found.trim().ends_with(".cargo/share/man/man1/tbrw-annotate.1"), "{found}");
        }
        _ => eprintln!("note: no man-db here: where man finds the pages is not checked"),
    }
}

#[test]
fn the_readme_installs_the_command_line_first() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let first_block = &readme[..readme.find("\n## ").unwrap()];
    assert!(first_block.contains("cargo install --path cli"), "install line missing from the README's top");
    assert_eq!(expected_status("tbrw x -o y   # exit 3: why"), 3);
    assert_eq!(expected_status("tbrw x -o y   # by module"), 0);
}
