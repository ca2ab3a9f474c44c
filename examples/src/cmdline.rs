//! What the example binaries share on their command lines: `--help` on
//! stdout, one-line reasons for bad arguments, the refusal to replace an
//! existing output (unless `--force`) or to write over an input, and a
//! quiet end when stdout is a closed pipe.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A program's name and usage text, for its messages.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// The binary's name, which starts every message.
    pub name: &'static str,
    /// The full `--help` text (its first line is the usage line).
    pub help: &'static str,
}

impl Program {
    /// Prints the help text on stdout and exits 0.
    pub fn help(&self) -> ! {
        let mut out = io::stdout().lock();
        let written = out.write_all(self.help.as_bytes()).and_then(|()| out.flush());
        self.exit_after_output(written, 0)
    }

    /// Reports a bad command line (the reason, then the usage line) on
    /// stderr and exits 2.
    pub fn bad_usage(&self, reason: &str) -> ! {
        eprintln!("{}: {reason}", self.name);
        eprintln!("{}", self.help.lines().next().unwrap_or_default());
        std::process::exit(2)
    }

    /// Reports a failure in one line on stderr (escaped: messages name
    /// what files hold, `tbrw::text`) and exits 1.
    pub fn fail(&self, message: impl std::fmt::Display) -> ! {
        eprintln!("{}: {}", self.name, tbrw::text::Escaped(&message.to_string()));
        std::process::exit(1)
    }

    /// Exits with `code` once the output is written, or quietly with 0 when
    /// the reader of stdout went away (`print_tb5 ... | head`): what was
    /// wanted was read.
    pub fn exit_after_output(&self, written: io::Result<()>, code: i32) -> ! {
        match written {
            Ok(()) => std::process::exit(code),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
            Err(e) => self.fail(format_args!("writing the output: {e}")),
        }
    }

    /// Prints one line on stdout (a closed stdout is not an error).
    pub fn say(&self, line: impl std::fmt::Display) {
        let mut out = io::stdout().lock();
        if let Err(e) = writeln!(out, "{line}") {
            if e.kind() != io::ErrorKind::BrokenPipe {
                self.fail(format_args!("writing the output: {e}"));
            }
        }
    }
}

/// The command line of `tbrw_reader` / `tbrw_writer`: two paths, in order,
/// and whether existing outputs may be replaced.
#[derive(Debug, PartialEq, Eq)]
pub struct InOut {
    /// The input.
    pub input: PathBuf,
    /// The output.
    pub output: PathBuf,
    /// `--force` / `-f` was given.
    pub force: bool,
}

impl InOut {
    /// Parses `IN OUT [--force|-f]` (the flag anywhere); `--help` / `-h`
    /// prints the help.
    pub fn parse(prog: &Program, args: impl IntoIterator<Item = String>) -> InOut {
        let mut force = false;
        let mut paths = Vec::new();
        let mut only_paths = false;
        for a in args {
            match a.as_str() {
                _ if only_paths => paths.push(a),
                "-h" | "--help" => prog.help(),
                "-f" | "--force" => force = true,
                "--" => only_paths = true,
                _ if a.starts_with('-') && a.len() > 1 => prog.bad_usage(&format!("unknown option '{a}'")),
                _ => paths.push(a),
            }
        }
        match <[String; 2]>::try_from(paths) {
            Ok([input, output]) => InOut { input: input.into(), output: output.into(), force },
            Err(p) if p.len() < 2 => prog.bad_usage(&format!("two paths expected, got {}", p.len())),
            Err(p) => prog.bad_usage(&format!("two paths expected, got {}: '{}' is one too many", p.len(), p[2])),
        }
    }
}

/// Checks that `output` may be written: it is none of `inputs` (never
/// allowed), and it does not exist unless `force`; what is there may be
/// replaced by a file written whole (`tbrw::work_file::plan`: a link is
/// replaced itself, never followed; a planted link, a device, a FIFO or a
/// socket is refused). The error is one line naming the path.
pub fn check_output(output: &Path, inputs: &[&Path], force: bool) -> Result<(), String> {
    for input in inputs {
        if same_file(output, input) {
            return Err(if output == *input {
                format!("{} is an input: it cannot also be the output", output.display())
            } else {
                format!("{} is the input {}: it cannot also be the output", output.display(), input.display())
            });
        }
    }
    use tbrw::work_file::{plan, Plan, Writing};
    match plan(output, Writing::Whole) {
        Ok(Plan::Replace { .. }) if !force => Err(format!("{} exists: give --force to replace it", output.display())),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("{}: {e}", output.display())),
    }
}

/// Whether two paths name the same file: the same device and inode when
/// both exist (so hard links and symbolic links count), else the same
/// resolved path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(ma), Ok(mb)) => same_inode(&ma, &mb),
        _ => resolved(a) == resolved(b),
    }
}

#[cfg(unix)]
fn same_inode(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_inode(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    // Without inodes, the resolved paths decide (same_file falls through).
    false
}

/// The path with its folder canonicalized (the file itself may not exist yet).
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (parent.canonicalize(), p.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => p.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked_against_inputs_and_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let new = dir.path().join("new");
        std::fs::write(&a, b"x").unwrap();
        assert_eq!(check_output(&new, &[&a], false), Ok(()));
        let e = check_output(&a, &[&new], false).unwrap_err();
        assert!(e.contains(&*a.to_string_lossy()) && e.contains("--force"), "{e}");
        assert_eq!(check_output(&a, &[&new], true), Ok(()));
        // The same file under another name: refused even with --force.
        let other = dir.path().join("sub/../a");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let e = check_output(&other, &[&a], true).unwrap_err();
        assert!(e.contains("is the input"), "{e}");
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::fs::hard_link(&a, &link).unwrap();
            assert!(check_output(&link, &[&a], true).is_err());
        }
        // Two outputs that do not exist yet, named differently.
        assert!(same_file(&dir.path().join("sub/../n"), &dir.path().join("n")));
        assert!(!same_file(&dir.path().join("n"), &dir.path().join("m")));
    }
}
