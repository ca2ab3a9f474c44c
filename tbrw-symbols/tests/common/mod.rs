//! Fixtures shared by the tests and the bench: C programs built with the
//! system's `cc -g`, and their symbol addresses read with `object` directly.
#![allow(dead_code)]

pub mod perf_data;

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSegment, ObjectSymbol};

/// The fixture's source. Line numbers matter: `INNER_LINE`, `CALL_LINE`.
pub const SOURCE: &str = "/* tbrw-symbols fixture */
static inline __attribute__((always_inline)) int inner(int x) {
    return x * 3 + (x >> 2);
}

__attribute__((noinline)) int work(int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += inner(i ^ s);
    return s;
}

static __attribute__((noinline)) int helper(int n) {
    return work(n) + 1;
}

int entry(int n) { return helper(n); }
#ifdef WITH_MAIN
int main(int argc, char **argv) { (void)argv; return entry(argc) & 1; }
#endif
";

/// The line of `inner`'s body.
pub const INNER_LINE: u32 = 3;
/// The line where `work` calls `inner`.
pub const CALL_LINE: u32 = 9;

/// Whether a program runs at all (`--version`).
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Runs `program args`, panicking with its stderr when it fails.
pub fn run(program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Builds the fixture as `dir/name` with `cc -g -O1` and `flags`; `None`
/// (after a note on stderr) when `cc` is missing or cannot build that kind.
pub fn build(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    let mut args: Vec<&str> = vec!["-g", "-O1"];
    args.extend_from_slice(flags);
    compile_from(dir, "fixture.c", name, SOURCE, &args)
}

/// Builds C `source` as `dir/name` with `cc FLAGS` (a build id always;
/// libraries such as `-lm` go last); `None` (after a note on stderr) when
/// `cc` is missing or fails.
pub fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    compile_from(dir, &format!("{name}.c"), name, source, flags)
}

fn compile_from(dir: &Path, src_name: &str, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    if !have("cc") {
        eprintln!("note: no cc on this machine, skipping the test that needs {name}");
        return None;
    }
    let src = dir.join(src_name);
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let (libs, flags): (Vec<&str>, Vec<&str>) = flags.iter().partition(|f| f.starts_with("-l"));
    let mut args: Vec<&str> = vec!["-Wl,--build-id"];
    args.extend_from_slice(&flags);
    let (src_s, out_s) = (src.to_str().unwrap(), out.to_str().unwrap());
    args.extend_from_slice(&[src_s, "-o", out_s]);
    args.extend_from_slice(&libs);
    let result = Command::new("cc").args(&args).output().unwrap();
    if !result.status.success() {
        eprintln!("note: cc {args:?} failed, skipping: {}", String::from_utf8_lossy(&result.stderr));
        return None;
    }
    Some(out)
}

/// (address, size) of function `name` in `.symtab`.
pub fn symbol(path: &Path, name: &str) -> (u64, u64) {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file.symbols().find(|s| s.name() == Ok(name)).unwrap_or_else(|| panic!("{name} in {}", path.display()));
    (sym.address(), sym.size())
}

/// The PT_LOAD segments as (p_vaddr, p_offset, executable).
pub fn loads(path: &Path) -> Vec<(u64, u64, bool)> {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.segments()
        .map(|s| {
            let exec =
                matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.contains(object::elf::PF_X));
            (s.address(), s.file_range().0, exec)
        })
        .collect()
}

/// The build id, hex.
pub fn build_id(path: &Path) -> String {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.build_id().unwrap().unwrap().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the file is `ET_EXEC`.
pub fn is_exec(path: &Path) -> bool {
    let data = std::fs::read(path).unwrap();
    object::File::parse(&*data).unwrap().kind() == object::ObjectKind::Executable
}
