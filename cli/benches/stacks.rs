//! Call stacks at scale (issue #31): a `perf record -F 20000 -g` recording
//! of at least `TBRW_STACKS_SAMPLES` samples (default 5,000,000) imported,
//! bound and exported to Parquet, each step timed, with `tbrw report --by
//! module` on the same file as the baseline measured in the same run.
//! Prints the sizes (perf.data, TB5, TB5 bound), each step's wall and CPU
//! time (the child's rusage: on a shared machine the CPU time is the
//! figure to compare), samples per CPU second and peak anonymous memory
//! (`RssAnon`, polled every 2 ms: the heap, not the pages of the mapped
//! file).
//!
//! ```sh
//! TBRW_BENCH_DIR=/dev/shm/stacks cargo bench -p tbrw-cli --bench stacks
//! ```
//!
//! The recording is `scripts/stacks-bench/busy.c` (one thread per CPU
//! walking 64 fixed call-chain patterns of 4 to 19 frames), recorded for
//! as long as the samples asked take at 20 kHz on every CPU (a machine
//! busy with other work gives fewer; not system-wide, which would record
//! that work's stacks too), made once in `$TBRW_BENCH_DIR` (default
//! `target/stacks-bench`; it is hundreds of MB, never in git) and reused;
//! `TBRW_BENCH_PERF_DATA=FILE` takes another recording instead. Skips with
//! a note where `cc` or `perf record` fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod support;
use support::inputs::{busy_program, perf_record_busy};
use support::timed;

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// The recording: given, or made once in `dir`.
fn recording(dir: &Path, want: u64) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TBRW_BENCH_PERF_DATA") {
        return Some(PathBuf::from(p));
    }
    let data = dir.join(format!("stacks-{want}.perf.data"));
    if data.exists() {
        return Some(data);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let seconds = (want as f64 / cpus as f64 / 20_000.0 * 1.05).ceil();
    match busy_program(dir).and_then(|prog| perf_record_busy(&prog, seconds, cpus, &data)) {
        Ok(()) => Some(data),
        Err(why) => {
            eprintln!("note: skipped: {why}");
            None
        }
    }
}

fn main() {
    let want: u64 = std::env::var("TBRW_STACKS_SAMPLES").ok().and_then(|v| v.parse().ok()).unwrap_or(5_000_000);
    let dir = std::env::var_os("TBRW_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/stacks-bench"));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let Some(data) = recording(&dir, want) else { return };
    let tbrw = env!("CARGO_BIN_EXE_tbrw");
    let tb5 = dir.join("stacks.tb5");
    let bound = dir.join("stacks-bound.tb5");
    let ds = dir.join("stacks-ds");
    let import = timed(Command::new(tbrw).args(["import", "perf", "-f"]).arg(&data).arg("-o").arg(&tb5));
    std::fs::copy(&tb5, &bound).expect("copy");
    let bind = timed(Command::new(tbrw).arg("bind").arg(&bound));
    let report = timed(Command::new(tbrw).arg("report").arg(&bound).args(["--by", "module"]));
    let parquet = timed(Command::new(tbrw).args(["export", "parquet", "-f"]).arg(&bound).arg("-o").arg(&ds));
    let folded = dir.join("stacks.folded");
    let flame =
        timed(Command::new(tbrw).args(["export", "flamegraph", "-f", "--folded"]).arg(&bound).arg("-o").arg(&folded));
    let samples = tbrw::Tb5File::open(&bound)
        .and_then(|f| f.stream(0)?.data().map(|d| d.map_or(0, |d| d.len())))
        .expect("the import reads back");
    let mb = |b: u64| b as f64 / 1e6;
    let per_s = |d: Duration| samples as f64 / d.as_secs_f64() / 1e6;
    let (perf_size, tb5_size, bound_size) = (size(&data), size(&tb5), size(&bound));
    println!("recording: {} ({:.1} MB), {samples} samples", data.display(), mb(perf_size));
    println!(
        "sizes: perf.data {:.1} MB, TB5 {:.1} MB ({:.2}x), bound {:.1} MB ({:.2}x)",
        mb(perf_size),
        mb(tb5_size),
        tb5_size as f64 / perf_size as f64,
        mb(bound_size),
        bound_size as f64 / perf_size as f64
    );
    println!("step                  wall s   CPU s  M samples/s of CPU  heap peak");
    for (name, t) in [
        ("import perf", &import),
        ("bind", &bind),
        ("report --by module", &report),
        ("export parquet", &parquet),
        ("export flamegraph", &flame),
    ] {
        println!(
            "{name:<20} {:7.2} {:7.2} {:19.2} {:6} MiB",
            t.wall.as_secs_f64(),
            t.cpu.as_secs_f64(),
            per_s(t.cpu),
            t.anon_kib / 1024
        );
    }
    println!(
        "export parquet against report --by module (the baseline, same run): {:.1}x its CPU time; \
         goal: 3 M samples/s or more: {} ({:.2} M/s of CPU, {:.2} M/s of wall time)",
        parquet.cpu.as_secs_f64() / report.cpu.as_secs_f64().max(1e-3),
        if per_s(parquet.cpu) >= 3.0 { "met" } else { "NOT met" },
        per_s(parquet.cpu),
        per_s(parquet.wall)
    );
    if samples < want {
        eprintln!(
            "note: {samples} samples, fewer than the {want} asked (TBRW_STACKS_SAMPLES): a busy machine gives fewer"
        );
    }
    let _ = std::fs::remove_dir_all(&ds);
}
