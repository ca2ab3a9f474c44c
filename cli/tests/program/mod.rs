//! Test support: small C programs built for a test with the system's `cc`,
//! and where their functions are in the ELF file.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSegment, ObjectSymbol};

/// Whether `tool --version` runs.
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// `dir/prog` built with `cc FLAGS` from `source`, written as
/// `dir/SOURCE_NAME` (the name the debug info then gives its lines).
/// `None`, with a note that the test's checks are skipped, where there is
/// no `cc`; a build that fails fails the test.
pub fn build_prog(dir: &Path, source_name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    if !have("cc") {
        eprintln!("note: no cc on this machine: the built program's checks are skipped");
        return None;
    }
    let src = dir.join(source_name);
    std::fs::write(&src, source).unwrap();
    let out = dir.join("prog");
    let r = Command::new("cc").args(flags).arg(&src).arg("-o").arg(&out).output().unwrap();
    assert!(r.status.success(), "cc {flags:?}: {}", String::from_utf8_lossy(&r.stderr));
    Some(out)
}

/// (address, size) of `name` in the symbol table of the ELF file `path`.
pub fn elf_symbol(path: &Path, name: &str) -> (u64, u64) {
    let data = std::fs::read(path).unwrap();
    let f = object::File::parse(&*data).unwrap();
    let s = f.symbols().find(|s| s.name() == Ok(name)).unwrap_or_else(|| panic!("{name} not in {}", path.display()));
    (s.address(), s.size())
}

/// The page-aligned `p_vaddr` of the executable segment of `path`.
pub fn exec_vaddr(path: &Path) -> u64 {
    let data = std::fs::read(path).unwrap();
    let f = object::File::parse(&*data).unwrap();
    let seg = f
        .segments()
        .find(|s| matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.contains(object::elf::PF_X)))
        .unwrap();
    seg.address() & !0xfff
}
