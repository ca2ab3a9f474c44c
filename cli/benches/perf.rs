//! `tbrw import perf` + `tbrw report --by module` against `perf report
//! --sort dso --stdio` on one recording of at least `TBRW_PERF_SAMPLES`
//! samples (default 1,000,000): a busy two-thread program recorded at a
//! high frequency (`-F 20000`) for long enough. Prints both times and the
//! ratio; skips with a note where `cc` or `perf record` fail.

use std::process::Command;
use std::time::{Duration, Instant};

const PROG: &str = r#"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
static volatile double sink;
static void *work(void *arg) { double s = 0; long n = (long)arg; for (long i = 0; i < n; i++) s += sin((double)i); sink = s; return 0; }
int main(int argc, char **argv) {
  long n = atol(argv[1]); pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, (void *)n);
  for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
  return 0; }
"#;

fn timed(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let o = cmd.output().expect("runs");
    assert!(o.status.success(), "{:?}: {}", cmd, String::from_utf8_lossy(&o.stderr));
    t.elapsed()
}

fn main() {
    let want: u64 = std::env::var("TBRW_PERF_SAMPLES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    std::fs::write(d.join("busy.c"), PROG).expect("write");
    let cc = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(d.join("busy"))
        .arg(d.join("busy.c"))
        .args(["-lm", "-lpthread"])
        .status();
    if !cc.is_ok_and(|s| s.success()) {
        eprintln!("note: skipped: cc cannot build the benchmark program");
        return;
    }
    let data = d.join("bench.data");
    // About 8.5e6 sin() of these arguments per second per thread (measured: a
    // 1.5e8 guess gave 19 M samples); 20 kHz per thread.
    let seconds = want as f64 / 2.0 / 20_000.0 * 1.1;
    let n = (seconds * 8.5e6) as u64;
    let rec = Command::new("perf")
        .args(["record", "-q", "-F", "20000", "-o"])
        .arg(&data)
        .arg(d.join("busy"))
        .arg(n.to_string())
        .output();
    if !rec.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("note: skipped: perf record failed");
        return;
    }
    let tb5 = d.join("bench.tb5");
    let tbrw = env!("CARGO_BIN_EXE_tbrw");
    let import = timed(Command::new(tbrw).args(["import", "perf"]).arg(&data).arg("-o").arg(&tb5));
    let report = timed(Command::new(tbrw).arg("report").arg(&tb5).args(["--by", "module"]));
    let perf = timed(Command::new("perf").args(["report", "--stdio", "--sort", "dso", "-i"]).arg(&data));
    let samples = tbrw::Tb5File::open(&tb5)
        .and_then(|f| f.stream(0)?.data().map(|d| d.map_or(0, |d| d.records().count())))
        .expect("the import reads back");
    let size = std::fs::metadata(&data).map(|m| m.len()).unwrap_or(0);
    let ours = import + report;
    println!(
        "perf.data {} MB, {samples} samples: tbrw import {:.2}s + report {:.2}s = {:.2}s; perf report --sort dso {:.2}s; ratio tbrw/perf {:.2}",
        size / 1_000_000,
        import.as_secs_f64(),
        report.as_secs_f64(),
        ours.as_secs_f64(),
        perf.as_secs_f64(),
        ours.as_secs_f64() / perf.as_secs_f64()
    );
    if (samples as u64) < want {
        eprintln!(
            "note: {samples} samples, fewer than the {want} asked for (a slower machine or a capped sample rate)"
        );
    }
}
