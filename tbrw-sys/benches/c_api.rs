//! The C API benchmark: what a C user sees. Builds `c_api_bench.c` (at
//! -O2, against the release `libtbrw.so` the shared C harness builds) and
//! runs each phase in its own process, the library's next to a hand-written
//! C baseline on the same samples, then prints time, peak memory and the
//! ratio baseline / library (higher is better) for:
//!
//! - write: `TBRW_add_data` one record per call vs `fwrite` one per call
//!   (neither waits for the disk: the library's default durability); and,
//!   with `TBRW_DURABLE=1` (a commit syncs the file before and after its
//!   commit slot), against `fwrite` then `fsync`;
//! - enumerate: `TBRW_enumerate_data` vs `fread` of the same bytes, both
//!   summing ip + tsc;
//! - bind: `TBRW_dobind` (stored on close) + `TBRW_bind_enumerate_data` vs a
//!   sort + binary search over `TBRW_enumerate_data`; both count the samples
//!   that land in a module, and must agree. Twice: the enumerate after a
//!   reopen (the stored bind), and in the session that bound (the bind it
//!   made, stored on close), each on a copy of the unbound file. Each pair
//!   runs `BIND_RUNS` times, alternating; the row gives the medians, and
//!   the line under it every run.
//!
//! `cargo bench -p tbrw-sys --bench c_api` runs the default workloads (10 M
//! samples over 10,000 modules in 100 processes, then 1 process with 50
//! modules); `-- SAMPLES MODULES PROCESSES` runs one workload of your own.

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::{Path, PathBuf};
use std::process::Command;

fn build() -> PathBuf {
    let lib = c_build::library();
    let src = c_build::root().join("tbrw-sys/benches/c_api_bench.c");
    let exe = lib.join("c-tests/bench-c_api_bench");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-I"])
        .arg(c_build::root().join("tbrw-sys/include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(lib)
        .arg("-ltbrw")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "compiling the benchmark failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// One phase: (seconds, its count, peak RSS in KiB).
fn phase(exe: &Path, args: &[&str]) -> (f64, u64, u64) {
    phase_with(exe, args, false)
}

/// One phase, with the library's commits synced (`TBRW_DURABLE=1`) or not.
fn phase_with(exe: &Path, args: &[&str], durable: bool) -> (f64, u64, u64) {
    let mut cmd = Command::new(exe);
    cmd.args(args).env_remove("TBRW_DURABLE");
    if durable {
        cmd.env("TBRW_DURABLE", "1");
    }
    let out = cmd.output().expect("run the benchmark");
    assert!(out.status.success(), "{args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let f: Vec<&str> = text.split_whitespace().collect();
    (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
}

/// Runs of each bind phase (the machine may be shared: one run is noise).
const BIND_RUNS: usize = 5;

/// The run of median time.
fn median(mut runs: Vec<(f64, u64, u64)>) -> (f64, u64, u64) {
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs[runs.len() / 2]
}

fn workload(exe: &Path, dir: &Path, samples: u64, modules: u32, processes: u32) {
    let file = dir.join(format!("bench-{samples}-{modules}-{processes}.tb5"));
    let f = file.to_str().unwrap();
    let (n, m, p) = (samples.to_string(), modules.to_string(), processes.to_string());
    println!("\n{samples} samples, {modules} modules in {processes} processes");
    println!("{:<10} {:>12} {:>12} {:>10} {:>10} {:>7}", "", "baseline s", "library s", "base MiB", "lib MiB", "ratio");
    let row = |what: &str, base: (f64, u64, u64), lib: (f64, u64, u64)| {
        println!(
            "{what:<10} {:>12.3} {:>12.3} {:>10.1} {:>10.1} {:>7.2}",
            base.0,
            lib.0,
            base.2 as f64 / 1024.0,
            lib.2 as f64 / 1024.0,
            base.0 / lib.0
        );
    };
    // Each write makes a new file, with no dirty pages of an earlier one
    // left to write out and no earlier file to replace: freeing the pages
    // of a replaced 500 MB file, some still being written out, costs the
    // next writer as much as its own write.
    let clean = |tb5: bool| {
        if tb5 {
            let _ = std::fs::remove_file(&file);
        }
        let _ = std::fs::remove_file(format!("{f}.raw"));
        let _ = Command::new("sync").status();
    };
    clean(true);
    let wc = phase(exe, &["write-c", f, &n, &m, &p]);
    clean(true);
    let wl = phase(exe, &["write-lib", f, &n, &m, &p]);
    row("write", wc, wl);
    clean(true);
    let wd = phase_with(exe, &["write-lib", f, &n, &m, &p], true);
    clean(false);
    let ws = phase(exe, &["write-c-sync", f, &n, &m, &p]);
    row("write+sync", ws, wd);
    // Warm the page cache for both readers alike.
    phase(exe, &["read-c", f]);
    phase(exe, &["read-lib", f]);
    let rc = phase(exe, &["read-c", f]);
    let rl = phase(exe, &["read-lib", f]);
    assert_eq!(rc.1, rl.1, "fread and TBRW_enumerate_data summed different records");
    row("enumerate", rc, rl);
    let unbound = dir.join("unbound.tb5");
    std::fs::copy(&file, &unbound).unwrap();
    for (what, lib) in [("bind", "bind-lib"), ("bind 1 ses", "bind-lib-session")] {
        let (mut cs, mut ls) = (Vec::new(), Vec::new());
        for _ in 0..BIND_RUNS {
            std::fs::copy(&unbound, &file).unwrap();
            cs.push(phase(exe, &["bind-c", f]));
            ls.push(phase(exe, &[lib, f]));
        }
        // Each run too: the goal is the C loop's speed in every run.
        let each: Vec<String> = cs.iter().zip(&ls).map(|(c, l)| format!("{:.3}/{:.3}", c.0, l.0)).collect();
        let (bc, bl) = (median(cs), median(ls));
        row(what, bc, bl);
        println!("  each run, baseline/library s: {}", each.join(" "));
        assert_eq!(bc.1, bl.1, "the hand-written bind and TBRW_dobind bound different numbers of samples");
        println!("{} of {samples} samples land in a module (both binds agree)", bl.1);
    }
    let _ = std::fs::remove_file(&unbound);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(format!("{f}.raw"));
}

fn main() {
    // `cargo bench` passes `--bench`; the numbers are ours.
    let nums: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let exe = build();
    let dir = tempfile::tempdir_in(c_build::profile_dir()).unwrap();
    match nums[..] {
        [n, m, p] => workload(&exe, dir.path(), n, m as u32, p as u32),
        _ => {
            workload(&exe, dir.path(), 10_000_000, 10_000, 100);
            workload(&exe, dir.path(), 10_000_000, 50, 1);
        }
    }
}
