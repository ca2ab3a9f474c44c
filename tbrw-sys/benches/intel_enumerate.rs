//! Enumerating a million-record stream Intel's library wrote: the same C
//! program (`tests/intel/bench_enumerate.c`, -O2, the library loaded with
//! `dlopen`) through Intel's `libamplxe_tbrw_3.19.so` and through this
//! project's release `libtbrw.so`, in the same run, alternating. Each run
//! enumerates stream 0 (1,000,000 records of 48 bytes, as VTune's records:
//! descriptor id, PC record, TSC) several times, the callback reading each
//! record's ip and TSC (putting together a record Intel's chunks split);
//! the fastest of each run counts, and the best run of each
//! library is compared (Intel's time / this library's: above 1, this
//! library is faster). Both must hand out the same bytes.
//!
//! Needs Intel's library: `TBRW_INTEL_LIB=/path/to/libamplxe_tbrw_3.19.so
//! cargo bench -p tbrw-sys --bench intel_enumerate` (skipped, with a note,
//! without it). `-- RUNS REPEATS` changes the rounds (default 5 and 5).
//!
//! On the 2-core build machine (`-- 7 20`): Intel 1.54 ms, this library
//! 1.41 ms, ratio 1.09, this library faster in each of the 7 runs.

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::{Path, PathBuf};
use std::process::Command;

fn compile(src: &str, name: &str, opt: &str) -> PathBuf {
    let exe = c_build::library().join("c-tests").join(name);
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", opt, "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE"])
        .arg(c_build::root().join("tbrw-sys/tests/intel").join(src))
        .arg("-ldl")
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "compiling {src} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// (fastest seconds, bytes, sum of the ips and TSCs) of one run.
fn run(exe: &Path, lib: &Path, file: &Path, repeats: &str, tmp: &Path) -> (f64, u64, u64) {
    let out = Command::new(exe).arg(lib).arg(file).arg(repeats).env("TMPDIR", tmp).output().unwrap();
    assert!(out.status.success(), "{} failed:\n{}", lib.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let f: Vec<&str> = text.split_whitespace().collect();
    (f[0].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap())
}

fn main() {
    let Some(intel) = std::env::var_os("TBRW_INTEL_LIB").map(PathBuf::from).filter(|p| p.is_file()) else {
        eprintln!("intel_enumerate: TBRW_INTEL_LIB does not name Intel's libamplxe_tbrw_3.19.so: skipped");
        return;
    };
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let runs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(5);
    let repeats = args.get(1).cloned().unwrap_or_else(|| "5".into());
    let ours = c_build::library().join("libtbrw.so");
    let dir = tempfile::tempdir().unwrap();
    let corpus = compile("intel_corpus.c", "bench-intel_corpus", "-O2");
    let out =
        Command::new(&corpus).arg(&intel).arg(dir.path()).arg("million").env("TMPDIR", dir.path()).output().unwrap();
    assert!(out.status.success(), "writing the million-record file failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let file = dir.path().join("million.tb7");
    let bench = compile("bench_enumerate.c", "bench-enumerate", "-O2");
    let (mut best_intel, mut best_ours) = (f64::MAX, f64::MAX);
    for r in 0..runs {
        let i = run(&bench, &intel, &file, &repeats, dir.path());
        let o = run(&bench, &ours, &file, &repeats, dir.path());
        assert_eq!((i.1, i.2), (o.1, o.2), "the two libraries handed out different bytes");
        assert_eq!(i.1, 48_000_000, "not the million records");
        println!("run {r}: Intel {:.2} ms, this library {:.2} ms", i.0 * 1e3, o.0 * 1e3);
        best_intel = best_intel.min(i.0);
        best_ours = best_ours.min(o.0);
    }
    println!(
        "enumerate 1,000,000 records (48 MB): Intel {:.2} ms, this library {:.2} ms, ratio Intel/this {:.2} ({})",
        best_intel * 1e3,
        best_ours * 1e3,
        best_intel / best_ours,
        if best_ours <= best_intel { "at least as fast" } else { "SLOWER than Intel's" }
    );
}
