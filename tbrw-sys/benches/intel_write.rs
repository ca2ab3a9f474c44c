//! Writing a new file: the same C program (`tests/intel/bench_write.c`,
//! -O2, the library loaded with `dlopen`) through Intel's
//! `libamplxe_tbrw_3.19.so` and through this project's release
//! `libtbrw.so`, in the same run, alternating, both files in the same
//! temporary folder. Each run writes the global sections of the guide's
//! content and stream 0 of 1,000,000 records of 48 bytes (descriptor id,
//! the guide's PC record, TSC; as `intel_corpus.c` writes its million
//! stream), from `TBRW_open` to the end of `TBRW_close`. The medians are
//! compared (Intel's time / this library's: above 1, this library is
//! faster). Each library must open the other's file (`TBRW_open` READ = 0)
//! and hand out its 48,000,000 bytes of records.
//!
//! Needs Intel's library: `TBRW_INTEL_LIB=/path/to/libamplxe_tbrw_3.19.so
//! cargo bench -p tbrw-sys --bench intel_write` (skipped, with a note,
//! without it). `-- RUNS RECORDS` changes the rounds and the records
//! (default 7 and 1,000,000).

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::{Path, PathBuf};
use std::process::Command;

fn compile() -> PathBuf {
    let exe = c_build::library().join("c-tests").join("bench-write");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE"])
        .arg(c_build::root().join("tbrw-sys/tests/intel/bench_write.c"))
        .arg("-ldl")
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "compiling bench_write.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// The words `bench_write` printed.
fn run(exe: &Path, args: &[&std::ffi::OsStr]) -> Vec<String> {
    let out = Command::new(exe).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(str::to_owned).collect()
}

/// Seconds to write `file` through `lib`.
fn write(exe: &Path, lib: &Path, file: &Path, records: &str) -> f64 {
    let _ = std::fs::remove_file(file);
    // No dirty pages of an earlier file left for this writer to wait on.
    let _ = Command::new("sync").status();
    run(exe, &[lib.as_os_str(), file.as_os_str(), records.as_ref()])[0].parse().unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(intel) = std::env::var_os("TBRW_INTEL_LIB").map(PathBuf::from).filter(|p| p.is_file()) else {
        eprintln!("intel_write: TBRW_INTEL_LIB does not name Intel's libamplxe_tbrw_3.19.so: skipped");
        return;
    };
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let runs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(7);
    let records = args.get(1).cloned().unwrap_or_else(|| "1000000".into());
    let ours = c_build::library().join("libtbrw.so");
    let exe = compile();
    let dir = tempfile::tempdir().unwrap();
    let (by_intel, by_ours) = (dir.path().join("intel.tb7"), dir.path().join("ours.tb7"));
    let (mut ti, mut to) = (Vec::new(), Vec::new());
    for r in 0..runs {
        // Alternating which goes first.
        let (i, o) = if r % 2 == 0 {
            let i = write(&exe, &intel, &by_intel, &records);
            (i, write(&exe, &ours, &by_ours, &records))
        } else {
            let o = write(&exe, &ours, &by_ours, &records);
            (write(&exe, &intel, &by_intel, &records), o)
        };
        println!("run {r}: Intel {:.1} ms, this library {:.1} ms", i * 1e3, o * 1e3);
        ti.push(i);
        to.push(o);
    }
    let bytes = (records.parse::<u64>().unwrap() * 48).to_string();
    for reader in [&intel, &ours] {
        for file in [&by_intel, &by_ours] {
            let got = run(&exe, &[reader.as_os_str(), "check".as_ref(), file.as_os_str()]);
            assert_eq!(got, ["0", bytes.as_str()], "{} reading {}", reader.display(), file.display());
        }
    }
    println!("each library opens both files and reads their {bytes} bytes of records");
    let (i, o) = (median(ti), median(to));
    println!(
        "write {records} records: median Intel {:.1} ms, this library {:.1} ms, ratio Intel/this {:.2} ({})",
        i * 1e3,
        o * 1e3,
        i / o,
        if o <= i { "at least as fast" } else { "SLOWER than Intel's" }
    );
}
