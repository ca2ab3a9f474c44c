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
