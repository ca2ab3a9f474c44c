//! Names as perf gives them, where two answers are possible: the kernel's
//! module (`[kernel.kallsyms]`, or `[kernel.vmlinux]` where the header's
//! build-id table names a vmlinux file, perf's
//! `machine__process_kernel_mmap_event`), and a function of several ELF
//! names at one address (perf's `choose_best_symbol`: `__hypot_finite`
//! or `__hypot` in a static binary). Each is recorded with perf and
//! compared with `perf report`. Skipped, with a note, where `cc` or
//! `perf record` fail.

mod perf_support;

use std::path::Path;

use perf_support::*;

/// Mostly in the kernel: system calls.
const SYSCALLS: &str = r#"
#include <unistd.h>
#include <fcntl.h>
int main(void) { char b[4096];
  for (int i = 0; i < 60000; i++) { int fd = open("/dev/zero", O_RDONLY); read(fd, b, sizeof b); close(fd); }
  return 0; }
"#;

/// `data` with the build-id table's kernel entry `[kernel.kallsyms]`
/// renamed `path` in place (perf pads the name to 64 bytes, so the
/// records keep their sizes), written to `out`; `false` when the table
/// has no kernel entry.
fn rename_kernel(data: &Path, path: &str, out: &Path) -> bool {
    let mut bytes = std::fs::read(data).unwrap();
    let name = b"[kernel.kallsyms]\0";
    let Some(at) = bytes.windows(name.len()).rposition(|w| w == name) else { return false };
    bytes[at..at + name.len()].fill(0);
    bytes[at..at + path.len()].copy_from_slice(path.as_bytes());
    std::fs::write(out, bytes).unwrap();
    true
}

#[test]
fn the_kernel_is_named_as_perf_names_it_from_the_build_id_table() {
    if !have_perf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "syscalls", SYSCALLS, &["-O1"]) else { return };
    let Some(data) = record(&dir.path().join("k.data"), &["-e", "cpu-clock", "-c", "100000"], &[&exe]) else {
        return;
    };
    check_counts(&data);
    let module_names = |data: &Path| {
        let (tb5, _) = import(data);
        let names = perf_event_names(data);
        tbrw_counts(&tb5, Key::Module, &names).into_values().flat_map(|m| m.into_keys()).collect::<Vec<_>>()
    };
    assert!(module_names(&data).contains(&"[kernel.kallsyms]".to_owned()));
    for (path, name) in [("/tmp/vmlinux", "[kernel.vmlinux]"), ("/boot/kimage", "kimage")] {
        let renamed = dir.path().join(format!("{name}.data"));
        if !rename_kernel(&data, path, &renamed) {
            return eprintln!("note: skipped: perf wrote no build id for the kernel");
        }
        // perf's names per module are the import's.
        check_counts(&renamed);
        assert!(module_names(&renamed).contains(&name.to_owned()), "{path}");
    }
}

/// A static binary (`-static -lm`) whose functions have several names at
/// one address: global, weak and local aliases with two leading
/// underscores, one and none, names of one length and of two. Every
/// function perf names the import names alike (perf's
/// `choose_best_symbol`: size, then non-weak, global, fewer leading
/// underscores, the longer name, the first in the table).
const ALIASES: &str = r#"
#include <math.h>
static volatile double sink;
double __hypot_impl(double x, double y) { double s = 0; for (int i = 0; i < 50; i++) s += sqrt(x * x + y * y + i); return s; }
extern double __hypot_finite(double, double) __attribute__((alias("__hypot_impl")));
extern double __hypot(double, double) __attribute__((alias("__hypot_impl")));
extern double hypot_w(double, double) __attribute__((weak, alias("__hypot_impl")));
static double __attribute__((noinline)) spin_local(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
static double spin_alias_l(long) __attribute__((alias("spin_local")));
extern double _spin(long) __attribute__((alias("spin_local")));
int main(void) { double s = 0; for (long i = 1; i < 300000L; i++) s += __hypot((double)i, 3.0);
  s += spin_alias_l(20000000L); s += hypot(s, 2.0); sink = s; return 0; }
"#;

#[test]
fn aliases_in_a_static_binary_are_chosen_as_perf_chooses() {
    if !have_perf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "aliases", ALIASES, &["-O1", "-static"]) else { return };
    let Some(data) = record(&dir.path().join("a.data"), &["-e", "cpu-clock:u", "-c", "100000"], &[&exe]) else {
        return;
    };
    let (tb5, _) = import(&data);
    let ours = tbrw_functions(&tb5);
    assert_eq!(ours, perf_functions(&data));
    let named = |f: &str| ours.keys().any(|k| k.ends_with(&format!("\t{f}")));
    assert!(named("__hypot_finite") && named("_spin"), "{ours:?}");
}
