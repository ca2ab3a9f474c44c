//! What sampling costs a CPU-bound program: its run time bare, under
//! `sampler -f 1000` (`--no-output`, and with a TB5 file), and under
//! `perf record -F 1000` when perf works here, as ratios to the bare time.
//! One thread, then four threads (more threads than cores shows the
//! reached frequency dropping).
//!
//! `cargo bench -p sampler --bench overhead [-- REPEATS]`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const SOURCE: &str = r#"
#include <pthread.h>
#include <stdlib.h>
volatile unsigned long sink;
static long iters;
static void *work(void *a) {
    unsigned long x = 0;
    (void)a;
    for (long i = 0; i < iters; i++) x = x * 31 + i;
    sink = x;
    return 0;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    iters = argc > 2 ? atol(argv[2]) : 400000000L;
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < n; i++) pthread_join(t[i], 0);
    return 0;
}
"#;

fn time(cmd: &mut Command, repeats: usize) -> Option<(f64, String)> {
    let mut best = f64::MAX;
    let mut err = String::new();
    for _ in 0..repeats {
        let t = Instant::now();
        let out = cmd.output().ok()?;
        if !out.status.success() {
            return None;
        }
        best = best.min(t.elapsed().as_secs_f64());
        err = String::from_utf8_lossy(&out.stderr).into_owned();
    }
    Some((best, err))
}

fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines().find_map(|l| l.split_once(key)).map_or("", |(_, v)| v.trim_start_matches(':').trim())
}

fn main() {
    let repeats: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("cpu.c");
    std::fs::write(&src, SOURCE).unwrap();
    let bin: PathBuf = dir.path().join("cpu");
    let ok = Command::new("cc").args(["-O1", "-g"]).arg(&src).arg("-o").arg(&bin).arg("-lpthread").status();
    assert!(ok.is_ok_and(|s| s.success()), "cc");
    let sampler = Path::new(env!("CARGO_BIN_EXE_sampler"));
    let tb5 = dir.path().join("run.tb5");
    let perf_data = dir.path().join("perf.data");
    let perf_ok = Command::new("perf")
        .args(["record", "-q", "-F", "1000", "-o"])
        .arg(&perf_data)
        .args(["--", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    println!("overhead of sampling a CPU-bound program (best of {repeats}; {} cpus)", num_cpus());
    for threads in ["1", "4"] {
        let iters = if threads == "1" { "400000000" } else { "150000000" };
        let Some((bare, _)) = time(Command::new(&bin).args([threads, iters]), repeats) else {
            println!("  the program failed");
            return;
        };
        println!("{threads} thread(s): bare {bare:.3} s");
        let s = time(
            Command::new(sampler).args(["-d", "--no-output", "-f", "1000", "--"]).arg(&bin).args([threads, iters]),
            repeats,
        );
        match s {
            Some((t, err)) if err.contains("reached") => println!(
                "  sampler -f 1000 --no-output {t:.3} s  x{:.3}  reached {}, target stopped {}",
                t / bare,
                line(&err, "reached frequency"),
                line(&err, "target stopped")
            ),
            _ => println!("  sampler: could not run here (ptrace refused?)"),
        }
        let _ = std::fs::remove_file(&tb5);
        let s = time(
            Command::new(sampler)
                .args(["--force", "-f", "1000", "-o"])
                .arg(&tb5)
                .arg("--")
                .arg(&bin)
                .args([threads, iters]),
            repeats,
        );
        if let Some((t, _)) = s {
            let size = std::fs::metadata(&tb5).map(|m| m.len()).unwrap_or(0);
            println!("  sampler -f 1000 -o run.tb5 {t:.3} s  x{:.3}  ({size} bytes)", t / bare);
        }
        if perf_ok {
            let p = time(
                Command::new("perf")
                    .args(["record", "-q", "-F", "1000", "-o"])
                    .arg(&perf_data)
                    .arg("--")
                    .arg(&bin)
                    .args([threads, iters]),
                repeats,
            );
            if let Some((t, _)) = p {
                println!("  perf record -F 1000        {t:.3} s  x{:.3}", t / bare);
            }
        } else {
            println!("  perf record: not usable here");
        }
    }
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
